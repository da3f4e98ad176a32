"""How frames become a model's input: resize, pad, channel order and normalisation, per training framework.

A model sees at inference the pixels it was trained on only if its frames are prepared the way its framework
prepared them. :class:`Preprocess` says how, field by field, and :data:`PRESETS` names the frameworks:

``ultralytics`` (default)
    Ultralytics' ``LetterBox``: scale ``r = min(W_in / w, H_in / h)`` (``scaleup=False``: never above 1), resized size
    ``round(w * r) x round(h * r)``, OpenCV ``INTER_LINEAR`` on uint8 (bilinear, no antialiasing, whole levels), the
    rest padded with 114, centred with Ultralytics' rounding (``round(d / 2 - 0.1)`` left / top), RGB, ``/ 255``.
``ultralytics-rect``
    the same with ``stride=32``: Ultralytics' minimal rectangle, what ``model.predict`` feeds a PyTorch model
    (``rect=True``: 1280x720 at 640 -> 640x384), for batches of one frame size.
``mmrotate``
    mmcv's ``Resize(scale, keep_ratio=True)`` (``scale`` = input-size's (long, short) sides, ``int(w * s + 0.5)``),
    OpenCV bilinear, padded bottom-right with 0 to a multiple of 32, RGB, ``(x - mean) / std`` with mmdet's ImageNet
    mean (123.675, 116.28, 103.53) and std (58.395, 57.12, 57.375).
``nvinfer``
    nvinfer's defaults: stretched to the input size (``maintain-aspect-ratio=0``; with 1 the resized size is
    truncated and padding is right / bottom, or split when ``symmetric-padding=1``), black padding, nearest
    scaling (``scaling-filter=0``), RGB, ``net-scale-factor * (x - offsets)`` with 1 and 0.

The inverse (:class:`~obbmeta.Letterbox`) uses the sizes the resize really produced, per axis, so boxes map back to
the frame exactly, whatever rounding the framework did. A stretched frame maps an oriented box to a parallelogram:
see :meth:`obbmeta.Letterbox.to_source` for the box that is returned then.

On the CPU, with OpenCV installed, the ``ultralytics`` and ``mmrotate`` presets resize with ``cv2.resize`` itself,
so the model input equals the framework's byte for byte; elsewhere (CUDA tensors, no OpenCV) a bilinear resize
rounded to whole levels agrees with it within one level.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import Any, Iterator, Sequence

from .._validators import int_in_range, is_number
from .letterbox import Letterbox
from .pixels import MATRICES, MAX_SIDE

RESIZES = ("bilinear", "bilinear-antialias", "nearest", "bicubic", "area")
CHANNEL_ORDERS = ("RGB", "BGR", "GRAY")
SIZE_RULES = ("fit", "long-short")
# nvinfer's scaling-filter (NvBufSurfTransform_Inter): 0 nearest, 1 bilinear, 2 cubic (GPU), 3 super sampling
# (GPU), 4 Lanczos (GPU; PyTorch has none: bicubic, the nearest kernel it has), 5 nicest (VIC only: the GPU ignores
# it and uses its default), 6 default (nearest on the GPU).
SCALING_FILTERS = {0: "nearest", 1: "bilinear", 2: "bicubic", 3: "area", 4: "bicubic", 5: "nearest", 6: "nearest"}
MAX_FRAME_SIDE = MAX_SIDE  # larger frames are refused up front (obbmeta.frames.pixels' bound: one home for it)
# Luma weights for a GRAY model input: BT.601's (Kr, 1 - Kr - Kb, Kb), what OpenCV's RGB2GRAY and NPP use.
_KR, _KB = MATRICES["BT.601"]
GRAY_WEIGHTS = (_KR, 1.0 - _KR - _KB, _KB)


@dataclass(frozen=True)
class Preprocess:
    """How frames are prepared for the model (see the module docstring for the presets).

    Args:
        resize: ``bilinear`` (no antialiasing, as OpenCV and NPP), ``bilinear-antialias`` (torch's antialiased
            filter when shrinking), ``nearest``, ``bicubic``, ``area``.
        keep_ratio: uniform scale and padding (False: stretch to the input size).
        center: split the padding (False: all of it right / bottom).
        pad_value: the padding's pixel level, 0-255, before normalisation.
        quantize: round resized pixels to whole levels (what resizing a uint8 image does).
        stride: > 0: shrink the padded canvas to the smallest multiple of ``stride`` holding the frame (Ultralytics'
            ``auto``), for batches whose frames share one size.
        scaleup: allow scales above 1 (False: small frames are padded, not enlarged).
        size_rule: ``fit`` (``min(W_in / w, H_in / h)``) or ``long-short`` (mmcv: the input size's long and short
            sides bound the frame's long and short sides).
        rounding: how the resized size is rounded: ``round`` (Ultralytics), ``half-up`` (mmcv's ``int(x + 0.5)``),
            ``floor`` (nvinfer).
        pad_rounding: ``ultralytics`` (``round(d / 2 - 0.1)``) or ``floor`` (``d // 2``) for the left / top pad.
        divisor: > 0: pad the canvas bottom-right to a multiple of it instead of to the input size (mmdet).
        channels: ``RGB``, ``BGR`` or ``GRAY`` (one channel, BT.601 luma).
        scale, mean: ``input = (level - mean[c]) * scale[c]``; one number or one per channel.
        mean_file: nvinfer's ``mean-file``: a PPM image of the input size whose pixel ``(y, x)`` byte ``k`` is
            subtracted from input channel ``k`` at ``(y, x)`` (padding included) instead of ``mean``, as nvinfer
            does: ``input = (level - mean_image[k, y, x]) * scale[k]``.
    """
    resize: str = "bilinear"
    keep_ratio: bool = True
    center: bool = True
    pad_value: float = 114.0
    quantize: bool = True
    stride: int = 0
    scaleup: bool = True
    size_rule: str = "fit"
    rounding: str = "round"
    pad_rounding: str = "ultralytics"
    divisor: int = 0
    channels: str = "RGB"
    scale: Any = 1 / 255
    mean: Any = 0.0
    mean_file: str = ""

    def __post_init__(self):
        for name, choices in (("resize", RESIZES), ("channels", CHANNEL_ORDERS), ("size_rule", SIZE_RULES),
                              ("rounding", ("round", "half-up", "floor")),
                              ("pad_rounding", ("ultralytics", "floor"))):
            if getattr(self, name) not in choices:
                raise ValueError(f"Preprocess.{name} must be one of {', '.join(choices)}, got "
                                 f"{getattr(self, name)!r}")
        for name in ("keep_ratio", "center", "quantize", "scaleup"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"Preprocess.{name} must be a bool, got {getattr(self, name)!r}")
        for name in ("stride", "divisor"):
            int_in_range(f"Preprocess.{name}", getattr(self, name), 0, 4096, form="an int in 0..4096")
        if not is_number(self.pad_value) or not 0 <= self.pad_value <= 255:
            raise ValueError(f"Preprocess.pad_value must be a pixel level in [0, 255], got {self.pad_value!r}")
        n = 1 if self.channels == "GRAY" else 3
        object.__setattr__(self, "scale", _per_channel("scale", self.scale, n, nonzero=True))
        object.__setattr__(self, "mean", _per_channel("mean", self.mean, n))
        if not isinstance(self.mean_file, str):
            raise TypeError(f"Preprocess.mean_file must be a path (str), got {self.mean_file!r}")

    @property
    def num_channels(self) -> int:
        return 1 if self.channels == "GRAY" else 3

    def with_(self, **changes: Any) -> "Preprocess":
        """A copy with some fields changed (checked again)."""
        return replace(self, **changes)

    # ---------------------------------------------------------------- geometry

    def plan(self, source_size: tuple[int, int], input_size: tuple[int, int],
             canvas: tuple[int, int] | None = None) -> tuple[Letterbox, tuple[int, int]]:
        """Where a ``source_size`` (w, h) frame goes in an ``input_size`` (W, H) input: its :class:`Letterbox`
        (the real per-axis scale and the pads) and the resized size (w', h'), each at least 1 pixel. The scale
        comes from the input size, the padding from ``canvas`` (the batch's input, see :meth:`canvas_size`;
        default: the input size)."""
        (w, h), (iw, ih) = source_size, input_size
        if self.keep_ratio:
            if self.size_rule == "fit":
                r = min(iw / w, ih / h)
            else:
                r = min(max(iw, ih) / max(w, h), min(iw, ih) / min(w, h))
            if not self.scaleup:
                r = min(r, 1.0)
            nw, nh = self._round(w * r), self._round(h * r)
        else:
            nw, nh = iw, ih
        nw, nh = max(1, min(nw, iw)), max(1, min(nh, ih))  # a side that rounds to 0 keeps one pixel
        cw, ch = canvas or (iw, ih)
        if self.center:
            dw, dh = cw - nw, ch - nh
            if self.pad_rounding == "ultralytics":
                px, py = round(dw / 2 - 0.1), round(dh / 2 - 0.1)
            else:
                px, py = dw // 2, dh // 2
        else:
            px = py = 0
        return Letterbox(nw / w, float(px), float(py), scale_y=nh / h), (nw, nh)

    def _round(self, x: float) -> int:
        if self.rounding == "round":
            return int(round(x))
        if self.rounding == "half-up":
            return int(x + 0.5)
        return int(math.floor(x + 1e-9))

    def canvas_size(self, sizes: Sequence[tuple[int, int]], input_size: tuple[int, int]) -> tuple[int, int]:
        """The (W, H) of the batch's input for frames of these (w, h) sizes."""
        iw, ih = input_size
        if self.divisor:
            cw = ch = 0
            for s in sizes:
                _, (nw, nh) = self.plan(s, input_size)
                cw, ch = max(cw, nw), max(ch, nh)
            d = self.divisor
            return -(-cw // d) * d, -(-ch // d) * d
        if self.stride and len(set(sizes)) == 1:
            _, (nw, nh) = self.plan(sizes[0], input_size)
            d = self.stride
            # Ultralytics keeps (input - resized) mod stride of padding: the smallest stride multiple it fits in.
            return nw + (iw - nw) % d, nh + (ih - nh) % d
        return iw, ih

    # ---------------------------------------------------------------- pixels

    def apply(self, images: Sequence[Any], input_size: tuple[int, int], out: Any = None) -> tuple[Any, list]:
        """(3, H_i, W_i) float RGB images in [0, 1] (one device) -> the (B, C, H, W) float32 model input and each
        image's :class:`Letterbox`. Frames of one size are resized in one call. ``out``: a float32 tensor of that
        shape to fill instead of allocating one (see :meth:`input_shape`)."""
        import torch

        if not images:
            raise ValueError("preprocessing needs at least one image")
        sizes = [(int(im.shape[2]), int(im.shape[1])) for im in images]
        out, (cw, ch) = self._canvas(sizes, input_size, images[0].device, out)
        groups: dict[tuple[int, int], list[int]] = {}
        for i, s in enumerate(sizes):
            groups.setdefault(s, []).append(i)
        letterboxes: list = [None] * len(images)
        for (w, h), idx in groups.items():
            lb, (nw, nh) = self.plan((w, h), input_size, (cw, ch))
            x = self._resize(torch.stack([images[i] for i in idx]), (nw, nh))
            x = self.normalise(x)
            _place(out, idx, x, int(lb.pad_x), int(lb.pad_y))
            for i in idx:
                letterboxes[i] = lb
        return self._subtract_mean_image(out), letterboxes

    def _canvas(self, sizes: list, input_size: tuple[int, int], device: Any, out: Any) -> tuple[Any, tuple]:
        """The batch's float32 canvas (``out`` checked, or a new one) filled with the normalised pad value, and its
        (width, height)."""
        import torch

        cw, ch = self.canvas_size(sizes, input_size)
        shape = (len(sizes), self.num_channels, ch, cw)
        if out is None:
            out = torch.empty(shape, dtype=torch.float32, device=device)
        elif tuple(out.shape) != shape or out.device != device or out.dtype != torch.float32:
            raise ValueError(f"out must be a float32 {shape} tensor on {device}, got {tuple(out.shape)} {out.dtype} "
                             f"on {out.device}")
        # each channel's value in double, then one rounding to float32; one fill for every channel
        pad = tuple((self.pad_value - m) / (1 / k) for m, k in zip(self._means, self.scale))
        out.copy_(channel_constant(pad, torch.float32, out.device).expand(shape))
        return out, (cw, ch)

    @property
    def _means(self) -> tuple[float, ...]:
        """The constant means (none with a mean image: it is subtracted from the whole canvas at the end)."""
        return (0.0,) * self.num_channels if self.mean_file else self.mean

    def _subtract_mean_image(self, out: Any) -> Any:
        """``out -= mean_image * scale`` per channel, over the whole canvas (nvinfer subtracts the mean image after
        padding: the pad becomes ``scale * (0 - mean)``)."""
        import torch

        if not self.mean_file:
            return out
        c, h, w = out.shape[1], out.shape[2], out.shape[3]
        image = mean_image(self.mean_file, c, (w, h)).to(out.device)
        scale = channel_constant(tuple(self.scale), torch.float64, out.device)[0]
        out -= (image.double() * scale).float()
        return out

    def apply_frames(self, frames: Sequence[Any], formats: Sequence[str], input_size: tuple[int, int],
                     out: Any = None) -> tuple[Any, list]:
        """Frames as the pipeline holds them (tensors or plane tuples in their pixel formats, one device) -> what
        :meth:`apply` gives. 8-bit packed RGB frames (NVMM RGBA views) that a bilinear resize shrinks are read in
        place by one resampling kernel per frame size (:func:`obbmeta.ops.crop_rotated` of the whole frame: the
        sample positions of ``cv2.resize``'s INTER_LINEAR, rounded to whole levels when ``quantize``), then
        normalised and placed in two tensor operations for the batch, with no per-frame RGB copy; on the CPU with
        OpenCV installed (its ``cv2.resize`` is exact) and for other formats, filters or enlargements the frames go
        through :func:`obbmeta.frames.pixels.to_rgb` and :meth:`apply`."""
        from .pixels import to_rgb

        if not frames:
            raise ValueError("preprocessing needs at least one frame")
        if not self._all_direct(frames, formats, input_size):
            return self.apply([to_rgb(f, fmt) for f, fmt in zip(frames, formats)], input_size, out)
        import torch

        from ..ops import crop_rotated
        from .pixels import lookup

        sizes = [(int(f.shape[1]), int(f.shape[0])) for f in frames]
        out, (cw, ch) = self._canvas(sizes, input_size, frames[0].device, out)
        groups: dict[tuple, list[int]] = {}
        for i, (s, fmt) in enumerate(zip(sizes, formats)):
            groups.setdefault((s, lookup(fmt).rgb_order), []).append(i)
        letterboxes: list = [None] * len(frames)
        for ((w, h), order), idx in groups.items():
            lb, (nw, nh) = self.plan((w, h), input_size, (cw, ch))
            # the whole-frame boxes, made once per (frames, size, device): valid by construction, so unchecked
            table = _whole_frames(len(idx), w, h, out.device)
            levels = crop_rotated([frames[i] for i in idx], table, (nh, nw), channels=list(order), layout="HWC",
                                  out_dtype=torch.uint8 if self.quantize else torch.float32, check_boxes=False)
            self._normalise_into(out, idx, levels, int(lb.pad_x), int(lb.pad_y))
            for i in idx:
                letterboxes[i] = lb
        return self._subtract_mean_image(out), letterboxes

    def _all_direct(self, frames: Sequence[Any], formats: Sequence[str], input_size: tuple[int, int]) -> bool:
        """:meth:`_direct` of every frame, asked once per :func:`~obbmeta.frames.pixels.frame_kind`."""
        from .pixels import frame_kind

        seen = set()
        for f, fmt in zip(frames, formats):
            key = frame_kind(f, fmt)
            if key is None:
                return False
            if key not in seen:
                if not self._direct(f, fmt, input_size):
                    return False
                seen.add(key)
        return True

    def _direct(self, frame: Any, fmt: str, input_size: tuple[int, int]) -> bool:
        """Whether ``frame`` takes :meth:`apply_frames`' in-place resampling path."""
        import torch

        from .pixels import lookup

        f = lookup(fmt)
        if not (isinstance(frame, torch.Tensor) and frame.dtype == torch.uint8 and frame.dim() == 3 and
                f.drawable and self.resize == "bilinear"):
            return False
        if frame.device.type == "cpu" and self.quantize and _has_cv2():
            return False  # OpenCV's own resize is exact there
        _, (nw, nh) = self.plan((int(frame.shape[1]), int(frame.shape[0])), input_size)
        return nw <= frame.shape[1] and nh <= frame.shape[0]  # shrinking: no sample reaches past the frame's edge

    def input_shape(self, sizes: Sequence[tuple[int, int]], input_size: tuple[int, int]) -> tuple[int, int, int, int]:
        """The (B, C, H, W) shape :meth:`apply` gives frames of these (w, h) sizes."""
        cw, ch = self.canvas_size(sizes, input_size)
        return (len(sizes), self.num_channels, ch, cw)

    def _resize(self, x: Any, size: tuple[int, int]) -> Any:
        """(n, 3, h, w) float [0, 1] -> (n, 3, h', w') in pixel levels 0-255."""
        import torch
        import torch.nn.functional as F

        nw, nh = size
        if (nw, nh) == (x.shape[3], x.shape[2]):
            return torch.round_(x * 255) if self.quantize else x * 255
        if self.resize == "bilinear" and self.quantize and x.device.type == "cpu":
            via_cv2 = _cv2_resize(x, size)
            if via_cv2 is not None:
                return via_cv2
        if self.resize == "area":
            y = F.interpolate(x, size=(nh, nw), mode="area")
        elif self.resize == "nearest":
            y = F.interpolate(x, size=(nh, nw), mode="nearest")
        else:
            mode = "bicubic" if self.resize == "bicubic" else "bilinear"
            shrink = nw < x.shape[3] or nh < x.shape[2]
            y = F.interpolate(x, size=(nh, nw), mode=mode, align_corners=False,
                              antialias=self.resize == "bilinear-antialias" and shrink)
        y = y.mul_(255)
        if self.quantize:
            y = torch.round_(y).clamp_(0, 255)
        return y

    def _normalise_into(self, out: Any, idx: list[int], levels: Any, px: int, py: int) -> None:
        """:meth:`normalise` of (n, 3, h, w) levels written straight into the canvas rows ``idx`` at (px, py): for
        RGB / BGR two operations a run of rows (the subtraction writes the canvas, the division follows in place),
        the same float32 arithmetic as normalise then a copy, without the intermediate batch."""
        import torch

        if self.channels == "GRAY":
            _place(out, idx, self.normalise(levels.float()), px, py)
            return
        if self.channels == "BGR":
            levels = levels.flip(1)
        mean, std = self._mean_std(torch.float32, levels.device)
        h, w = int(levels.shape[2]), int(levels.shape[3])
        for k, start, stop in _runs(idx):
            target = out[start:stop, :, py:py + h, px:px + w]
            torch.sub(levels[k:k + stop - start], mean, out=target)
            target.div_(std)

    def normalise(self, levels: Any) -> Any:
        """(n, 3, h, w) RGB levels 0-255 -> (n, C, h, w) model input."""
        import torch

        if self.channels == "BGR":
            levels = levels.flip(1)
        elif self.channels == "GRAY":
            levels = (levels * channel_constant(GRAY_WEIGHTS, levels.dtype, levels.device)).sum(1, keepdim=True)
            if self.quantize:
                levels = torch.round_(levels)
        mean, std = self._mean_std(levels.dtype, levels.device)
        return (levels - mean) / std

    def _mean_std(self, dtype: Any, device: Any) -> tuple[Any, Any]:
        """The (1, C, 1, 1) constants of ``input = (level - mean) / std``, std being 1 / scale: divide by it (255, a
        std) as the frameworks do: x / 255 and x * (1 / 255) differ in the last bit."""
        return (channel_constant(tuple(self._means), dtype, device),
                channel_constant(tuple(1 / k for k in self.scale), dtype, device))


@functools.lru_cache(maxsize=64)
def _whole_frames(n: int, w: int, h: int, device: Any) -> Any:
    """The (n, 6) crop table [k, w / 2, h / 2, w, h, 0] of n whole w x h frames on ``device``, made once and never
    written (as :func:`channel_constant`: made per batch, its copy from pageable memory would wait for the stream)."""
    import torch

    return torch.tensor([[k, w / 2, h / 2, w, h, 0.0] for k in range(n)], dtype=torch.float32).to(device)


def _runs(idx: list[int]) -> Iterator[tuple[int, int, int]]:
    """(first position in idx, first index, stop index) of each run of consecutive indices."""
    k = 0
    while k < len(idx):
        stop = k + 1
        while stop < len(idx) and idx[stop] == idx[stop - 1] + 1:
            stop += 1
        yield k, idx[k], idx[stop - 1] + 1
        k = stop


def _place(out: Any, idx: list[int], x: Any, px: int, py: int) -> None:
    """``out[idx, :, py:py + h, px:px + w] = x`` as slice copies, one per run of consecutive indices: a list index
    is copied to the device from pageable memory, which waits for the stream (a host sync per batch)."""
    h, w = int(x.shape[2]), int(x.shape[3])
    for k, start, stop in _runs(idx):
        out[start:stop, :, py:py + h, px:px + w] = x[k:k + stop - start]


@functools.lru_cache(maxsize=64)
def channel_constant(values: tuple, dtype: Any, device: Any) -> Any:
    """``values`` as a (1, C, 1, 1) tensor of ``dtype`` on ``device``, made once per (values, dtype, device) and
    never written: ``torch.tensor(..., device="cuda")`` copies from pageable memory and then waits for the current
    stream, so made per batch it held the streaming thread until the previous batch's model had run."""
    import torch

    return torch.tensor(values, dtype=dtype).view(1, -1, 1, 1).to(device)


def read_ppm(path: str, channels: int) -> tuple[int, int, bytes]:
    """(width, height, bytes) of nvinfer's mean file as nvinfer reads it: the header ``P6`` (or ``P3``) ``W H MAX``
    as whitespace-separated words, one byte skipped, then W * H * channels bytes in file order (HWC)."""
    with open(path, "rb") as f:
        data = f.read()
    words, pos = [], 0
    while len(words) < 4:
        while pos < len(data) and data[pos:pos + 1].isspace():
            pos += 1
        start = pos
        while pos < len(data) and not data[pos:pos + 1].isspace():
            pos += 1
        if start == pos:
            raise ValueError(f"mean-file {path!r}: the PPM header (P6 width height max) is cut short")
        words.append(data[start:pos].decode("ascii", "replace"))
    if words[0] not in ("P6", "P3") or not all(w.isdigit() for w in words[1:]):
        raise ValueError(f"mean-file {path!r}: expected a PPM header 'P6 width height max', got {' '.join(words)!r}")
    w, h = int(words[1]), int(words[2])
    body = data[pos + 1:pos + 1 + w * h * channels]
    if len(body) != w * h * channels:
        raise ValueError(f"mean-file {path!r}: {w}x{h} with {channels} channel(s) needs {w * h * channels} bytes, "
                         f"the file holds {len(body)}")
    return w, h, body


@functools.lru_cache(maxsize=8)
def _mean_image(path: str, mtime: int, channels: int) -> Any:
    import torch

    w, h, body = read_ppm(path, channels)
    return torch.frombuffer(bytearray(body), dtype=torch.uint8).view(h, w, channels).permute(2, 0, 1).float()


def mean_image(path: str, channels: int, size: tuple[int, int]) -> Any:
    """nvinfer's mean image as a (C, H, W) float tensor of levels; its size must be the input's ``size`` (w, h)."""
    import os

    image = _mean_image(path, os.stat(path).st_mtime_ns, channels)
    if (image.shape[2], image.shape[1]) != tuple(size):
        raise ValueError(f"mean-file {path!r} is {image.shape[2]}x{image.shape[1]} but the model input is "
                         f"{size[0]}x{size[1]} (nvinfer requires the network size too)")
    return image


def _per_channel(name: str, value: Any, n: int, nonzero: bool = False) -> tuple[float, ...]:
    values = (value,) * n if is_number(value) else tuple(value) if isinstance(value, (tuple, list)) else None
    if values is None or len(values) not in (1, n) or not all(is_number(v) and math.isfinite(v) for v in values):
        raise ValueError(f"Preprocess.{name} must be a finite number or {n} of them, got {value!r}")
    if len(values) == 1:
        values = values * n
    if nonzero and any(v == 0 for v in values):
        raise ValueError(f"Preprocess.{name} must not be 0, got {value!r}")
    return tuple(float(v) for v in values)


@functools.lru_cache(maxsize=1)
def _cv2() -> Any:
    """OpenCV, or None where it is not installed (looked up once: the preprocessing of every batch asks)."""
    try:
        import cv2
    except ImportError:
        return None
    return cv2


def _has_cv2() -> bool:
    return _cv2() is not None


def _cv2_resize(x: Any, size: tuple[int, int]) -> Any:
    """OpenCV's INTER_LINEAR on the uint8 frames (what Ultralytics and mmcv run), or None without OpenCV."""
    cv2 = _cv2()
    if cv2 is None:
        return None
    import numpy as np
    import torch

    frames = x.mul(255).round_().clamp_(0, 255).to(torch.uint8).permute(0, 2, 3, 1).numpy()
    resized = np.stack([cv2.resize(np.ascontiguousarray(f), size, interpolation=cv2.INTER_LINEAR)
                        for f in frames])
    return torch.from_numpy(resized).permute(0, 3, 1, 2).float()


MMDET_MEAN = (123.675, 116.28, 103.53)
MMDET_STD = (58.395, 57.12, 57.375)

PRESETS: dict[str, Preprocess] = {
    "ultralytics": Preprocess(),
    "ultralytics-rect": Preprocess(stride=32),
    "mmrotate": Preprocess(center=False, pad_value=0.0, size_rule="long-short", rounding="half-up", divisor=32,
                           scale=tuple(1 / s for s in MMDET_STD), mean=MMDET_MEAN),
    "nvinfer": Preprocess(resize="nearest", keep_ratio=False, center=False, pad_value=0.0, quantize=True,
                          rounding="floor", pad_rounding="floor", scale=1.0, mean=0.0),
}


def preset(name: str) -> Preprocess:
    """The :class:`Preprocess` of a framework: ``ultralytics``, ``ultralytics-rect``, ``mmrotate`` or ``nvinfer``."""
    if isinstance(name, Preprocess):
        return name
    if name not in PRESETS:
        raise ValueError(f"preprocess must be one of {', '.join(PRESETS)} or a Preprocess, got {name!r}")
    return PRESETS[name]


def from_nvinfer_keys(base: Preprocess, *, model_color_format: str | None = None,
                      maintain_aspect_ratio: bool | None = None, symmetric_padding: bool | None = None,
                      scaling_filter: int | None = None, net_scale_factor: float | None = None,
                      offsets: Sequence[float] | None = None, mean_file: str | None = None) -> Preprocess:
    """``base`` with nvinfer's preprocessing keys applied (None: keep ``base``'s)."""
    changes: dict[str, Any] = {}
    if mean_file:
        changes["mean_file"] = mean_file
    if model_color_format is not None:
        changes["channels"] = model_color_format
    if maintain_aspect_ratio is not None:
        changes["keep_ratio"] = maintain_aspect_ratio
    if symmetric_padding is not None:
        changes["center"] = symmetric_padding
    if scaling_filter is not None:
        if scaling_filter not in SCALING_FILTERS:
            raise ValueError(f"scaling-filter must be 0..6 (NvBufSurfTransform_Inter), got {scaling_filter}")
        changes["resize"] = SCALING_FILTERS[scaling_filter]
    if net_scale_factor is not None:
        changes["scale"] = net_scale_factor
    if offsets is not None:
        changes["mean"] = tuple(offsets)
    channels = changes.get("channels", base.channels)
    n = 1 if channels == "GRAY" else 3
    for name in ("scale", "mean"):  # a colour change re-fits the per-channel values to the new channel count
        if name not in changes and len(getattr(base, name)) != n:
            changes[name] = getattr(base, name)[0]
    return base.with_(**changes)


__all__ = ["Preprocess", "PRESETS", "preset", "from_nvinfer_keys", "RESIZES", "SCALING_FILTERS", "MAX_FRAME_SIDE",
           "MMDET_MEAN", "MMDET_STD", "read_ppm", "mean_image"]
