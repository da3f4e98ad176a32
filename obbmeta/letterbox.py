"""The letterbox transform between a source frame and a detector's input (uniform scale + padding)."""
from __future__ import annotations

import math
from dataclasses import dataclass

from ._validators import is_number

MIN_SCALE, MAX_SCALE = 1e-6, 1e6
MAX_PAD = 1e9


@dataclass(frozen=True)
class Letterbox:
    """``input = source * scale + (pad_x, pad_y)`` in pixels.

    A uniform scale keeps rectangles rectangular and angles unchanged, which is why only that is supported;
    stretch-resizing (different x and y scales) would turn an oriented box into a parallelogram.

    ``scale`` must lie in [1e-6, 1e6] and the pads within +-1e9 pixels: beyond that, mapping float32 boxes back
    (``(input - pad) / scale``) overflows to inf or loses every digit, so such a letterbox is refused.
    """

    scale: float
    pad_x: float = 0.0
    pad_y: float = 0.0

    def __post_init__(self):
        for name in ("scale", "pad_x", "pad_y"):
            value = getattr(self, name)
            if not is_number(value) or not math.isfinite(value):
                raise ValueError(f"Letterbox.{name} must be a finite number, got {value!r}")
        if not MIN_SCALE <= self.scale <= MAX_SCALE:
            raise ValueError(f"Letterbox.scale must be in [{MIN_SCALE:g}, {MAX_SCALE:g}], got {self.scale}")
        for name in ("pad_x", "pad_y"):
            if abs(getattr(self, name)) > MAX_PAD:
                raise ValueError(f"Letterbox.{name} must be within +-{MAX_PAD:g} pixels, got {getattr(self, name)}")

    def to_source(self, xywhr):
        """A (..., 5) tensor [cx, cy, w, h, angle] in model-input pixels -> a new one in source-frame pixels:
        centres ``(input - pad) / scale``, sides ``/ scale``; a uniform scale leaves the angle as it is."""
        import torch

        cx, cy, w, h, a = xywhr.unbind(-1)
        s = self.scale
        return torch.stack(((cx - self.pad_x) / s, (cy - self.pad_y) / s, w / s, h / s, a), dim=-1)

    @classmethod
    def fit(cls, source_size, input_size, center: bool = True) -> "Letterbox":
        """The letterbox Ultralytics' ``LetterBox`` (auto=False) applies: scale = min(input/source), the
        resized image rounded to whole pixels, the rest padded (split evenly when ``center``).

        Args:
            source_size: (width, height) of the source frame.
            input_size: (width, height) of the model input.
        """
        (sw, sh), (iw, ih) = _size("source_size", source_size), _size("input_size", input_size)
        scale = min(iw / sw, ih / sh)
        new_w, new_h = round(sw * scale), round(sh * scale)
        pad_x, pad_y = (iw - new_w), (ih - new_h)
        if center:
            # Ultralytics rounds the left/top pad as round(pad/2 - 0.1).
            pad_x, pad_y = round(pad_x / 2 - 0.1), round(pad_y / 2 - 0.1)
        else:
            pad_x, pad_y = 0, 0
        return cls(float(scale), float(pad_x), float(pad_y))


def _size(name, size):
    try:
        w, h = size
        w, h = float(w), float(h)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a (width, height) pair, got {size!r}") from None
    if not (w > 0 and h > 0 and math.isfinite(w) and math.isfinite(h)):
        raise ValueError(f"{name} must be positive and finite, got {size!r}")
    return w, h
