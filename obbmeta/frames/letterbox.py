"""The letterbox transform between a source frame and a detector's input (uniform scale + padding)."""
from __future__ import annotations

import math
from dataclasses import dataclass

from .._validators import frame_size, is_number

MIN_SCALE, MAX_SCALE = 1e-6, 1e6
MAX_PAD = 1e9


@dataclass(frozen=True)
class Letterbox:
    """``input = source * scale + (pad_x, pad_y)`` in pixels, with ``scale_y`` for y when it differs.

    A resize to whole pixels rarely keeps the aspect ratio exactly (1366x768 shrunk into 640x640 becomes 640x360:
    0.46852 across, 0.46875 down), so the inverse uses the scale each axis really got: ``scale`` (x) and ``scale_y``
    (None: the same as ``scale``). A uniform scale keeps rectangles rectangular and angles as they are; under two
    scales a rotated rectangle becomes a parallelogram, and :meth:`to_source` returns the rectangle whose width edge
    is the image of the box's width edge (direction and length exact) and whose height is the parallelogram's
    height across that edge (its area is exact). For the sub-0.1 % differences rounding causes this is within
    1e-3 px of the exact image; for a stretched frame (nvinfer's ``maintain-aspect-ratio=0``) it is the faithful
    rectangle of the skewed shape.

    Scales must lie in [1e-6, 1e6] and the pads within +-1e9 pixels: beyond that, mapping float32 boxes back
    (``(input - pad) / scale``) overflows to inf or loses every digit, so such a letterbox is refused.
    """

    scale: float
    pad_x: float = 0.0
    pad_y: float = 0.0
    scale_y: float | None = None

    def __post_init__(self):
        for name in ("scale", "pad_x", "pad_y") + (("scale_y",) if self.scale_y is not None else ()):
            value = getattr(self, name)
            if not is_number(value) or not math.isfinite(value):
                raise ValueError(f"Letterbox.{name} must be a finite number, got {value!r}")
        for name in ("scale", "scale_y"):
            value = getattr(self, name)
            if value is not None and not MIN_SCALE <= value <= MAX_SCALE:
                raise ValueError(f"Letterbox.{name} must be in [{MIN_SCALE:g}, {MAX_SCALE:g}], got {value}")
        for name in ("pad_x", "pad_y"):
            if abs(getattr(self, name)) > MAX_PAD:
                raise ValueError(f"Letterbox.{name} must be within +-{MAX_PAD:g} pixels, got {getattr(self, name)}")
        if self.scale_y is not None and float(self.scale_y) == float(self.scale):
            object.__setattr__(self, "scale_y", None)  # one spelling of a uniform letterbox (equal, hashable)

    @property
    def is_uniform(self) -> bool:
        """Both axes scaled alike (what the fused decodes undo on the device)."""
        return self.scale_y is None

    def to_source(self, xywhr):
        """A (..., 5) tensor [cx, cy, w, h, angle] in model-input pixels -> a new one in source-frame pixels:
        centres ``(input - pad) / scale`` per axis; sides ``/ scale`` and the angle unchanged when the scale is
        uniform, else the rectangle the class docstring describes."""
        return source_boxes(xywhr, self.scale, self.pad_x, self.pad_y, self.scale_y)

    @classmethod
    def fit(cls, source_size, input_size, center: bool = True) -> "Letterbox":
        """The letterbox Ultralytics' ``LetterBox`` (auto=False) applies: scale = min(input/source), the
        resized image rounded to whole pixels, the rest padded (split evenly when ``center``, left / top by
        ``round(pad / 2 - 0.1)``). The returned scales are the resized size over the source size, per axis (what
        the resize really did; Ultralytics' own ``scale_boxes`` divides by the unrounded ratio instead, up to
        ~0.75 px apart at 1366x768).

        Args:
            source_size: (width, height) of the source frame.
            input_size: (width, height) of the model input.
        """
        (sw, sh), (iw, ih) = frame_size("source_size", source_size), frame_size("input_size", input_size)
        scale = min(iw / sw, ih / sh)
        new_w, new_h = max(1, round(sw * scale)), max(1, round(sh * scale))
        pad_x, pad_y = (iw - new_w), (ih - new_h)
        if center:
            # Ultralytics rounds the left/top pad as round(pad/2 - 0.1).
            pad_x, pad_y = round(pad_x / 2 - 0.1), round(pad_y / 2 - 0.1)
        else:
            pad_x, pad_y = 0, 0
        return cls(new_w / sw, float(pad_x), float(pad_y), scale_y=new_h / sh)


def rows_to_source(xywhr, letterboxes, counts):
    """:meth:`Letterbox.to_source` of several frames' boxes at once: ``xywhr`` (sum(counts), 5) holds frame k's
    ``counts[k]`` boxes in frame order, each frame under ``letterboxes[k]``. The same values as mapping frame by
    frame (see :func:`source_boxes`), in a handful of tensor operations instead of a handful per frame."""
    import numpy as np
    import torch

    if len(letterboxes) != len(counts):
        raise ValueError(f"letterboxes has {len(letterboxes)} entries but counts has {len(counts)}")
    per_frame = np.array([[lb.scale, lb.pad_x, lb.pad_y, lb.scale if lb.scale_y is None else lb.scale_y]
                          for lb in letterboxes], dtype=np.float64).reshape(-1, 4)
    # one row per box (NumPy's repeat: a fraction of torch's repeat_interleave + gather on the host)
    table = torch.from_numpy(np.repeat(per_frame, counts, axis=0)).to(xywhr.device)
    sx, px, py, sy = table.unbind(-1)
    # pads in the boxes' dtype, as a float pad is taken by the arithmetic (source_boxes' rounding rule)
    px, py = px.to(xywhr.dtype), py.to(xywhr.dtype)
    uniform = all(lb.scale_y is None for lb in letterboxes)
    return source_boxes(xywhr, sx, px, py, None if uniform else sy)


def source_boxes(xywhr, scale, pad_x=0.0, pad_y=0.0, scale_y=None):
    """:meth:`Letterbox.to_source` of (..., 5) boxes, with one letterbox for all (floats) or one per box: ``scale``
    and ``scale_y`` float64 tensors broadcasting against ``xywhr[..., 0]`` (pads: floats, or per-box tensors in
    ``xywhr``'s dtype, which the arithmetic rounds a float pad to). A box whose two scales
    are equal maps as under a uniform letterbox, as :class:`Letterbox` spells one. The arithmetic is the same either
    way (the per-box scales are rounded to ``xywhr``'s dtype as a float would be), so per-box results equal the
    per-letterbox ones."""
    import torch

    def same_dtype(v):
        return v.to(xywhr.dtype) if isinstance(v, torch.Tensor) else v

    cx, cy, w, h, a = xywhr.unbind(-1)
    sx = same_dtype(scale)
    uniform = ((cx - pad_x) / sx, (cy - pad_y) / sx, w / sx, h / sx, a)
    if scale_y is None:
        return torch.stack(uniform, dim=-1)
    sy = same_dtype(scale_y)
    c, s = torch.cos(a), torch.sin(a)
    # The width edge's direction (cos a, sin a) maps to (cos a / sx, sin a / sy).
    ex, ey = c / sx, s / sy
    stretch = torch.sqrt(ex * ex + ey * ey)
    new_w = w * stretch
    new_h = h / (same_dtype(scale * scale_y) * stretch)  # the mapped area w * h / (sx * sy), across the new width edge
    mapped = ((cx - pad_x) / sx, (cy - pad_y) / sy, new_w, new_h, torch.atan2(ey, ex))
    if not isinstance(scale, torch.Tensor) and not isinstance(scale_y, torch.Tensor):
        return torch.stack(mapped, dim=-1)
    equal = torch.as_tensor(scale == scale_y)
    return torch.stack([torch.where(equal, u, m) for u, m in zip(uniform, mapped)], dim=-1)
