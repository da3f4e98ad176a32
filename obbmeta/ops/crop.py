"""Upright crops of oriented boxes from a batch of frames (bilinear, CPU and CUDA, frames read in place)."""
from __future__ import annotations

import math
import numbers
from typing import Optional, Sequence, Tuple, Union

import torch

from .._validators import flag, int_in_range, is_int, number_in_range, size_pair
from ._core import (
    CROP_DTYPES,
    CROP_MAX_SIDE,
    CROP_READINGS,
    CropBoxError,
    check_crop_boxes_host,
    crop_frame_count,
    crop_params,
    crop_rotated_op,
    crop_widths_host,
    frame_dims,
)

CHANNEL_COUNTS = (1, 2, 3, 4)  # what a channel axis of an image looks like, for telling CHW from HWC


def crop_rotated(
    frames,
    boxes,
    size: Optional[Union[int, Tuple[int, int]]] = None,
    *,
    height: Optional[int] = None,
    max_width: Optional[int] = None,
    padding: float = 0.0,
    fill: Union[float, Sequence[float]] = 0.0,
    channels: Optional[Sequence[int]] = None,
    layout: Optional[str] = None,
    out_dtype: Optional[torch.dtype] = None,
    reading: str = "as-is",
    check_boxes: bool = True,
    return_widths: bool = False,
):
    """Crop each oriented box upright out of its frame: ``(K, C, h, w)`` crops, bilinear, in one kernel call.

    The crop's x axis runs along the box's width axis ``(cos a, sin a)`` (angle in radians, positive clockwise on
    screen, obbmeta's one convention) and its rows run down along ``(-sin a, cos a)``: row 0 is the box edge from
    corner 0 to corner 1 of ``obb_to_polygons`` (the top edge of the un-rotated box), which is "up". Output pixel
    ``(i, j)`` samples the image at ``c + ((i + 0.5) W / w - W / 2) u + ((j + 0.5) H / h - H / 2) v`` (W x H the
    padded box), pixel ``(x, y)`` of a frame covering ``[x, x + 1) x [y, y + 1)``; that is OpenCV's ``warpAffine``
    with the inverse map and INTER_LINEAR in its pixel-centre convention, and roi_align's ``aligned=True`` with one
    sample per bin. No antialiasing: a crop much smaller than its box skips pixels, as warpAffine does. The four
    taps of a sample that fall outside the frame take ``fill`` (BORDER_CONSTANT), so crops fade into the fill from
    the centres of the frame's edge pixels to half a pixel beyond its edge. NaN / inf pixels propagate to the samples
    that touch them.

    Args:
        frames: a ``(B, C, H, W)`` or ``(B, H, W, C)`` tensor, one ``(C, H, W)`` / ``(H, W, C)`` frame, or a list of
            such 3-D frames of possibly different sizes (e.g. the zero-copy NVMM views of :mod:`obbmeta.frames`,
            ``(H, W, 4)`` uint8 with pitched rows). uint8, float16, bfloat16 or float32; any strides: frames are
            read in place, never copied. All frames share one dtype, device and channel count.
        boxes: a list with one :class:`~obbmeta.OrientedBoxes` or ``(N_i, 5)`` [cx, cy, w, h, angle] tensor per
            frame; a ``(K, 6)`` [batch_index, cx, cy, w, h, angle] table (as mmcv's ``roi_align_rotated``; the
            batch index an integer value); or, for a single frame, one OrientedBoxes / ``(N, 5)`` tensor. In the
            frames' pixels. CPU boxes with CUDA frames are checked on the host and uploaded without a sync.
            Crops come in the order of the table (list: frame by frame).
        size: ``(h, w)`` of every crop (an int: square).
        height: instead of ``size``: crops of ``height`` rows whose content width keeps the (padded) box's aspect
            ratio, ``round(height * W / H)`` (half up) clamped to ``[1, max_width]`` (a box of zero height:
            ``max_width``, of zero area: 1). The batch is ``max_width`` wide
            (default: the widest crop's width, which reads the boxes on the host: one sync for CUDA boxes); each
            crop is left-aligned and the columns right of its width are ``fill``. A box wider than that is
            squeezed to ``max_width``.
        max_width: the common width with ``height`` (at most 8192).
        padding: a margin of ``padding x min(w, h)`` added on every side of the box before cropping (>= 0), so a
            text line gets the same margin above, below and at its ends.
        fill: the value of pixels outside the frame, in the frames' units (uint8: 0..255); one number or one per
            output channel.
        channels: the frames' channel indices to crop, in output order (default: all), e.g. ``(0, 1, 2)`` for
            RGBA -> RGB or ``(2, 1, 0)`` for BGRx -> RGB: no frame conversion happens.
        layout: ``"CHW"`` or ``"HWC"`` (per frame). Default: a frame whose last dim is 1-4 and first is not is HWC,
            the reverse CHW; anything else asks for ``layout``.
        out_dtype: uint8, float16, bfloat16 or float32 (default: the frames' dtype). Values are the frames' units,
            not normalised; uint8 results round half to even and saturate.
        reading: which of the rectangle's names sets the crop's x axis (the same box is (w, h, a), (w, h, a + pi)
            and (h, w, a + pi/2)):

            - ``"as-is"``: the box's own width axis, as given. A w < h box gives a crop whose x runs along its
              short side.
            - ``"left-to-right"``: the width axis turned by pi when it points left on screen (cos a < 0), so the
              crop is upright whichever of the two opposite angles the detector gave; a vertical axis
              (|cos a| <= 1e-6) points up (the crop reads bottom to top).
            - ``"long-side"``: x along the longer side (a box with h > w is read as (h, w, a + pi/2)), then left to
              right: what a text-line recogniser wants whatever the detector's convention.
        check_boxes: raise :class:`ValueError` naming the box for a NaN / inf value, a negative side or a batch
            index that is not an integer in ``[0, B)``. CPU boxes are checked on the host for free; CUDA boxes
            cost one device sync. ``False``: no check; such a box's crop is all ``fill`` and its width 0.
        return_widths: also return the ``(K,)`` int64 content widths (``w`` for fixed sizes, 0 for an unchecked
            invalid box).

    Returns:
        ``(K, C, h, w)`` crops on the frames' device (C = ``len(channels)``), or ``(crops, widths)``.

    On CUDA one kernel launch does the batch (up to 64 frames per launch in a list) on torch's current stream,
    with no host sync (unless ``check_boxes`` reads CUDA boxes or ``height`` without ``max_width`` needs the widths):
    the frames must stay valid and unchanged until the kernel has run (reading any result on the host waits for it).
    Conventions, pictures and checks: docs/crop.md.
    """
    frame_list, channels_last = _frames(frames, layout)
    first = frame_list[0]
    n_frames = crop_frame_count(frame_list)
    c_in = frame_dims(first, channels_last)[0]
    table, locate = _table(boxes, n_frames, first.device)
    out_h, out_w, keep_aspect = _size(size, height, max_width)
    channels = list(range(c_in)) if channels is None else _channel_list(channels)
    fill = _fill(fill, len(channels))
    out_dtype = first.dtype if out_dtype is None else out_dtype
    flag("check_boxes", check_boxes)
    flag("return_widths", return_widths)
    if not isinstance(reading, str) or reading not in CROP_READINGS:
        raise ValueError(f"reading must be one of {sorted(CROP_READINGS)}, got {reading!r}")
    if out_dtype not in CROP_DTYPES:
        raise TypeError(f"out_dtype must be torch.uint8, float16, bfloat16 or float32, got {out_dtype}")
    padding = number_in_range("padding", _number("padding", padding), 0.0, 1e6,
                              "a number >= 0 (a fraction of the box's shorter side)")
    try:
        host = table.to(torch.float32).contiguous() if table.device.type == "cpu" else None
        if out_w is None:  # the widest crop sets the batch's width, computed on the host as the kernels do
            if host is None:
                host = table.detach().to("cpu", torch.float32).contiguous()  # the one sync of this mode
            if check_boxes:
                check_crop_boxes_host(host, n_frames)
                check_boxes = False
            params = crop_params(frame_list, out_h, CROP_MAX_SIDE, True, padding, fill, channels, reading, out_dtype)
            out_w = max(1, int(crop_widths_host(host, params).max())) if host.shape[0] else 1
        if table.device != first.device and host is not None:  # CPU boxes, CUDA frames: check here, upload, no sync
            if check_boxes:
                check_crop_boxes_host(host, n_frames)
                check_boxes = False
            table = host.pin_memory().to(first.device, non_blocking=True) if first.is_cuda else host.to(first.device)
        crops, widths = crop_rotated_op(frame_list, table, out_h, out_w, keep_aspect, padding, fill, channels,
                                        channels_last, reading, out_dtype, check_boxes)
    except CropBoxError as exc:
        if locate is None:
            raise
        raise CropBoxError(locate(exc.row), exc.row, exc.values, exc.reason, exc.n_frames) from None
    return (crops, widths) if return_widths else crops


def _frames(frames, layout) -> Tuple[list, bool]:
    """The frames as the op's list (one 4-D tensor, or 3-D frames) and whether they are channel-last."""
    if isinstance(frames, torch.Tensor):
        if frames.dim() not in (3, 4):
            raise ValueError("frames must be a (B, C, H, W) / (B, H, W, C) tensor, one (C, H, W) / (H, W, C) frame or "
                             f"a list of such frames, got a tensor of shape {tuple(frames.shape)}")
        frame_list = [frames]
    elif isinstance(frames, (list, tuple)) and frames and all(isinstance(f, torch.Tensor) for f in frames):
        bad = [tuple(f.shape) for f in frames if f.dim() != 3]
        if bad:
            raise ValueError(f"a list of frames must hold (C, H, W) or (H, W, C) tensors, got shapes {bad}")
        frame_list = list(frames)
    else:
        raise TypeError("frames must be a tensor or a non-empty list of (C, H, W) / (H, W, C) tensors, got "
                        f"{type(frames).__name__}")
    if frame_list[0].dtype not in CROP_DTYPES:
        raise TypeError(f"frames must be uint8, float16, bfloat16 or float32, got {frame_list[0].dtype}")
    if layout is not None:
        if layout not in ("CHW", "HWC"):
            raise ValueError(f"layout must be 'CHW', 'HWC' or None (inferred), got {layout!r}")
        return frame_list, layout == "HWC"
    guesses = {_guess_layout(f.shape[-3:]) for f in frame_list}
    if len(guesses) != 1 or None in guesses:
        shapes = sorted({tuple(f.shape[-3:]) for f in frame_list})
        raise ValueError(f"cannot tell whether frames of shape {shapes} are (C, H, W) or (H, W, C); pass "
                         "layout='CHW' or layout='HWC'")
    return frame_list, guesses.pop() == "HWC"


def _guess_layout(dims) -> Optional[str]:
    first, last = dims[0] in CHANNEL_COUNTS, dims[2] in CHANNEL_COUNTS
    return "HWC" if last and not first else ("CHW" if first and not last else None)


def _table(boxes, n_frames: int, device: torch.device):
    """The (K, 6) table and, for per-frame boxes, a function naming table row r as the caller passed it."""
    if isinstance(boxes, (list, tuple)):
        if len(boxes) != n_frames:
            raise ValueError(f"boxes must hold one entry per frame ({n_frames}), got {len(boxes)}")
        parts = [_xywhr(f"boxes[{i}]", b) for i, b in enumerate(boxes)]
        counts = [p.shape[0] for p in parts]
        places = parts[0].device
        if any(p.device != places for p in parts):
            devices = sorted({str(p.device) for p in parts})
            raise ValueError(f"boxes are on several devices ({devices}); put them on one")
        starts = [sum(counts[:i]) for i in range(len(counts))]

        def locate(row: int) -> str:
            frame = max(i for i, s in enumerate(starts) if s <= row and counts[i] > 0)
            return f"boxes[{frame}][{row - starts[frame]}]"

        index = torch.repeat_interleave(torch.arange(n_frames, dtype=torch.float32), torch.tensor(counts))
        if places.type == "cuda":
            index = index.pin_memory().to(places, non_blocking=True)
        xywhr = torch.cat([p.to(torch.float32) for p in parts])
        return torch.cat([index[:, None], xywhr], dim=1), locate
    if isinstance(boxes, torch.Tensor) and boxes.dim() == 2 and boxes.shape[1] == 6:
        if not boxes.is_floating_point():
            raise TypeError(f"boxes must be a floating-point tensor, got {boxes.dtype}")
        return boxes, None
    if (isinstance(boxes, torch.Tensor) and boxes.dim() == 2 and boxes.shape[1] == 5) or hasattr(boxes, "xywhr"):
        if n_frames != 1:
            raise ValueError(f"boxes of shape (N, 5) need a single frame, got {n_frames} frames; pass a list with one "
                             "entry per frame or a (K, 6) [batch_index, cx, cy, w, h, angle] table")
        xywhr = _xywhr("boxes", boxes).to(torch.float32)
        return torch.cat([xywhr.new_zeros(xywhr.shape[0], 1), xywhr], dim=1), None
    shape = f" of shape {tuple(boxes.shape)}" if isinstance(boxes, torch.Tensor) else ""
    raise ValueError("boxes must be a list of OrientedBoxes / (N, 5) tensors (one per frame) or a (K, 6) "
                     f"[batch_index, cx, cy, w, h, angle] tensor, got {type(boxes).__name__}{shape}")


def _xywhr(name: str, boxes) -> torch.Tensor:
    xywhr = boxes.xywhr if hasattr(boxes, "xywhr") and not isinstance(boxes, torch.Tensor) else boxes
    if not isinstance(xywhr, torch.Tensor) or xywhr.dim() != 2 or xywhr.shape[1] != 5:
        got = f"shape {tuple(xywhr.shape)}" if isinstance(xywhr, torch.Tensor) else type(xywhr).__name__
        raise ValueError(f"{name} must be OrientedBoxes or an (N, 5) [cx, cy, w, h, angle] tensor, got {got}")
    if not xywhr.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got {xywhr.dtype}")
    return xywhr


def _size(size, height, max_width) -> Tuple[int, Optional[int], bool]:
    """(out_h, out_w or None for 'the widest crop', keep_aspect)."""
    side = f"an int in [1, {CROP_MAX_SIDE}]"
    if (size is None) == (height is None):
        raise ValueError("give either size=(h, w) or height= (with an optional max_width), not both or neither")
    if size is not None:
        if max_width is not None:
            raise ValueError("max_width goes with height=, not with a fixed size=(h, w)")
        h, w = size_pair("size", size, 1, CROP_MAX_SIDE, order="hw",
                         form=f"(h, w) or an int, with sides in 1..{CROP_MAX_SIDE}")
        return h, w, False
    out_h = int_in_range("height", height, 1, CROP_MAX_SIDE, side, numpy_ints=True)
    out_w = None if max_width is None else int_in_range("max_width", max_width, 1, CROP_MAX_SIDE, side,
                                                        numpy_ints=True)
    return out_h, out_w, True


def _channel_list(channels) -> list:
    if isinstance(channels, (str, bytes)) or not isinstance(channels, Sequence):
        raise TypeError(f"channels must be a sequence of channel indices such as (0, 1, 2), got {channels!r}")
    for i, c in enumerate(channels):
        # bools would pass the op's int[] schema as 0 / 1, and floats fail in the dispatcher: refused here by name.
        if not is_int(c, numpy_ints=True):
            raise TypeError(f"channels[{i}] must be an int channel index (not a bool or a float), got {c!r}")
    return [int(c) for c in channels]


def _fill(fill, n: int) -> list:
    values = [fill] * n if isinstance(fill, numbers.Real) and not isinstance(fill, bool) else fill
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or len(values) != n:
        raise ValueError(f"fill must be a number or {n} numbers (one per output channel), got {fill!r}")
    return [_number("fill", v) for v in values]


def _number(name: str, value) -> float:
    if not isinstance(value, numbers.Real) or isinstance(value, bool) or not math.isfinite(float(value)):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


__all__ = ["crop_rotated"]
