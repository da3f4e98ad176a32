"""The C geometry core and the rotated crop registered as torch operators (``torch.ops.obbmeta.*``).

One operator schema per op, like torchvision (declared in obbmeta/ops/registry.py; the kernels and fake kernels of
the geometry ops and the crop are registered here): the CPU kernel calls the host build of kernels/obb_geometry.h
through ctypes on the tensors' own memory (no copies); the CUDA kernel calls kernels/obbmeta_cuda.cu, the same
header compiled by nvcc, on torch's current stream. When the CUDA kernels were not built (no nvcc at install),
CUDA tensors are served by the host code on a copy (one device-to-host copy, result returned on the device).

Precision: the operators compute in float64 when any box or score input is float64 (the C geometry is double
inside; float64 inputs are read as they are) and in float32 otherwise (float16 / bfloat16 are widened to float32,
exactly). ``box_iou_rotated`` returns that dtype. Each operator makes its inputs contiguous in that dtype itself, so
``torch.ops.obbmeta.*`` called directly gets the same answer as the Python wrappers.

Each kernel checks its own arguments (shapes, dtypes, devices, threshold: the same checks and messages as the
wrappers) and the values' range (NaN / inf / float64 overflow): the range check reads the data, so it lives in the
kernels, which torch.compile does not trace, and the wrappers stay traceable with ``fullgraph=True``. The fake
kernels run the shape checks and report exactly the real kernels' dtypes and shapes (NMS: a data-dependent size).
"""
from __future__ import annotations

import ctypes
from typing import List, Optional, Tuple

import torch

from .._cuda_lib import cuda_library, launch, sizes
from .._native import NativeLibrary, contiguous_as
from .._native import ptr as _ptr
from .._validators import int_in_range, number_in_range
from ..geometry import STATUS_OVERFLOW, geometry_library
from . import registry
from ._validate import boxes_in_range, check_finite, check_in_range, check_iou_args, check_nms_args
from .status import POOL_FIXED, pool_for, remember_pool, status_error

_p = ctypes.c_void_p
_i64 = ctypes.c_int64


def _require_host(t: torch.Tensor) -> None:
    if t.device.type != "cpu":
        raise NotImplementedError(f"obbmeta's geometry ops run on CPU and CUDA tensors, not on {t.device}")


def compute_dtype(*tensors: Optional[torch.Tensor]) -> torch.dtype:
    """float64 when any input is float64, else float32: the precision the ops compute and answer in."""
    return torch.float64 if any(t is not None and t.dtype == torch.float64 for t in tensors) else torch.float32


box_iou_rotated_op = registry.box_iou_rotated


@box_iou_rotated_op.register_kernel("cpu")
def _box_iou_rotated_cpu(boxes1: torch.Tensor, boxes2: torch.Tensor, aligned: bool) -> torch.Tensor:
    check_iou_args(boxes1, boxes2, aligned)
    _require_host(boxes1)
    dtype = compute_dtype(boxes1, boxes2)
    boxes1, boxes2 = contiguous_as(boxes1, dtype), contiguous_as(boxes2, dtype)
    check_in_range("boxes1", boxes1)
    check_in_range("boxes2", boxes2)
    n, m = boxes1.shape[0], boxes2.shape[0]
    wide = int(dtype == torch.float64)
    if aligned:
        out = torch.empty(n, dtype=dtype)
        if n:
            geometry_library().obbmeta_iou_aligned(_ptr(boxes1), _ptr(boxes2), n, _ptr(out), wide)
    else:
        out = torch.empty((n, m), dtype=dtype)
        if n and m:
            geometry_library().obbmeta_iou_matrix(_ptr(boxes1), n, _ptr(boxes2), m, _ptr(out), wide)
    return out


@box_iou_rotated_op.register_fake
def _(boxes1, boxes2, aligned):
    check_iou_args(boxes1, boxes2, aligned)
    shape = (boxes1.shape[0],) if aligned else (boxes1.shape[0], boxes2.shape[0])
    return boxes1.new_empty(shape, dtype=compute_dtype(boxes1, boxes2))


nms_rotated_op = registry.nms_rotated


@nms_rotated_op.register_kernel("cpu")
def _nms_rotated_cpu(
    boxes: torch.Tensor, scores: torch.Tensor, labels: Optional[torch.Tensor], iou_threshold: float
) -> torch.Tensor:
    iou_threshold = check_nms_args(boxes, scores, labels, iou_threshold)
    _require_host(boxes)
    dtype = compute_dtype(boxes, scores)
    boxes, scores = contiguous_as(boxes, dtype), contiguous_as(scores, dtype)
    labels = labels.to(torch.int64).contiguous() if labels is not None else None
    check_in_range("boxes", boxes)
    check_finite("scores", scores)
    n = boxes.shape[0]
    keep = torch.empty(n, dtype=torch.int64)
    wide = int(dtype == torch.float64)
    count = (geometry_library().obbmeta_nms(_ptr(boxes), _ptr(scores), wide, _ptr(labels), n, iou_threshold,
                                            _ptr(keep)) if n else 0)
    if count < 0:
        raise MemoryError(f"nms_rotated could not allocate its work buffers for {n} boxes")
    return keep[:count].clone()


@nms_rotated_op.register_fake
def _(boxes, scores, labels, iou_threshold):
    check_nms_args(boxes, scores, labels, iou_threshold)
    count = torch.library.get_ctx().new_dynamic_size()
    return boxes.new_empty((count,), dtype=torch.int64)


def _on_host(op, *args):
    """Run `op`'s CPU kernel on host copies of CUDA inputs and return the result on the input device."""
    device = args[0].device
    host = [a.cpu() if isinstance(a, torch.Tensor) else a for a in args]
    return op(*host).to(device)


@box_iou_rotated_op.register_kernel("cuda")
def _(boxes1, boxes2, aligned):
    check_iou_args(boxes1, boxes2, aligned)
    lib = cuda_library()
    if lib is None:
        return _on_host(box_iou_rotated_op, boxes1, boxes2, aligned)
    dtype = compute_dtype(boxes1, boxes2)
    boxes1, boxes2 = contiguous_as(boxes1, dtype), contiguous_as(boxes2, dtype)
    check_in_range("boxes1", boxes1)  # one host sync each, as the IoU's callers expect an error, not NaN
    check_in_range("boxes2", boxes2)
    n, m = boxes1.shape[0], boxes2.shape[0]
    out = boxes1.new_empty((n,) if aligned else (n, m))
    launch(boxes1.device, lib.obbmeta_cuda_iou, _ptr(boxes1), n, _ptr(boxes2), m, _ptr(out), int(aligned),
           int(dtype == torch.float64))
    return out


def _nms_cuda(boxes, scores, labels, iou_threshold, pool, padded=False):
    """Enqueue the CUDA NMS (no host sync). Returns (keep (N,) int64 padded with -1, status (3,) int64, and with
    `padded` the 0-d count: the kept boxes, -1 when a status flag is set). pool: entries of the sparse mask's pool."""
    lib = cuda_library()
    dtype = compute_dtype(boxes, scores)
    boxes, scores = contiguous_as(boxes, dtype), contiguous_as(scores, dtype)
    if labels is not None:
        labels = contiguous_as(labels, torch.int64)
    n, wide, grouped = boxes.shape[0], int(dtype == torch.float64), int(labels is not None)
    ws_bytes, _ = sizes(boxes.device, "obbmeta_cuda_nms_sizes", n, grouped, wide, pool)
    scratch = torch.empty(max(ws_bytes, 1), dtype=torch.uint8, device=boxes.device)
    out = torch.empty(n + 3, dtype=torch.int64, device=boxes.device)
    count = torch.empty((), dtype=torch.int64, device=boxes.device) if padded else None
    at = out.data_ptr()
    launch(boxes.device, lib.obbmeta_cuda_nms, n, _ptr(boxes), _ptr(scores), wide, _ptr(labels), iou_threshold,
           _ptr(scratch), ws_bytes, pool, at, at + 8 * n, _ptr(count))
    return out[:n], out[n:], count


def pool_bound_nms(boxes, scores, labels) -> int:
    """Pool entries that suffice for any data of these shapes."""
    wide = int(compute_dtype(boxes, scores) == torch.float64)
    return sizes(boxes.device, "obbmeta_cuda_nms_sizes", boxes.shape[0], int(labels is not None), wide, 0)[1]


@nms_rotated_op.register_kernel("cuda")
def _(boxes, scores, labels, iou_threshold):
    iou_threshold = check_nms_args(boxes, scores, labels, iou_threshold)
    if cuda_library() is None:
        return _on_host(nms_rotated_op, boxes, scores, labels, iou_threshold)
    bound = pool_bound_nms(boxes, scores, labels)
    keep, status, _ = _nms_cuda(boxes, scores, labels, iou_threshold, pool_for(boxes.device, bound))
    kept, flags, needed = status.tolist()  # the one host sync: the result's size, with the kernels' input checks
    if flags & STATUS_OVERFLOW:  # more overlapping pairs than the first pool held: once more, with what they need
        remember_pool(boxes.device, needed)
        keep, status, _ = _nms_cuda(boxes, scores, labels, iou_threshold, needed)
        kept, flags, _ = status.tolist()
    error = status_error(flags, box_values=boxes)
    if error is not None:
        raise error
    return keep[:kept]


nms_rotated_padded_op = registry.nms_rotated_padded


@nms_rotated_padded_op.register_kernel("cpu")
def _nms_rotated_padded_cpu(
    boxes: torch.Tensor, scores: torch.Tensor, labels: Optional[torch.Tensor], iou_threshold: float, pool: int
) -> Tuple[torch.Tensor, torch.Tensor]:
    """pool: entries of the CUDA kernels' sparse mask (-1: POOL_FIXED); the CPU kernel needs none."""
    iou_threshold = check_nms_args(boxes, scores, labels, iou_threshold)
    _require_host(boxes)
    n = boxes.shape[0]
    keep = torch.full((n,), -1, dtype=torch.int64)
    dtype = compute_dtype(boxes, scores)
    if n and not (bool(boxes_in_range(contiguous_as(boxes, dtype))) and bool(torch.isfinite(scores).all())):
        return keep, torch.tensor(-1, dtype=torch.int64)
    kept = nms_rotated_op(boxes, scores, labels, iou_threshold)
    keep[:kept.numel()] = kept
    return keep, torch.tensor(kept.numel(), dtype=torch.int64)


@nms_rotated_padded_op.register_fake
def _(boxes, scores, labels, iou_threshold, pool):
    check_nms_args(boxes, scores, labels, iou_threshold)
    n = boxes.shape[0]
    return boxes.new_empty((n,), dtype=torch.int64), boxes.new_empty((), dtype=torch.int64)


@nms_rotated_padded_op.register_kernel("cuda")
def _(boxes, scores, labels, iou_threshold, pool):
    iou_threshold = check_nms_args(boxes, scores, labels, iou_threshold)
    if cuda_library() is None:
        return tuple(t.to(boxes.device) for t in nms_rotated_padded_op(boxes.cpu(), scores.cpu(),
                                                                       None if labels is None else labels.cpu(),
                                                                       iou_threshold, pool))
    bound = pool_bound_nms(boxes, scores, labels)
    keep, _, count = _nms_cuda(boxes, scores, labels, iou_threshold, min(bound, POOL_FIXED if pool < 0 else pool),
                               padded=True)
    return keep, count


# ---- rotated crops (kernels/obb_crop.h; the wrapper is obbmeta/ops/crop.py) ---------------------------------------
CROP_READINGS = {"as-is": 0, "left-to-right": 1, "long-side": 2}
CROP_DTYPES = {torch.uint8: 0, torch.float16: 1, torch.bfloat16: 2, torch.float32: 3}
CROP_MAX_CHANNELS = 16
CROP_MAX_SIDE = 8192
# Why a box row is invalid (obb_crop_setup's codes).
CROP_NONFINITE, CROP_NEGATIVE_SIDE, CROP_BAD_FRAME = 1, 2, 3


class CropFrame(ctypes.Structure):
    """obb_crop_frame: one frame as the kernels read it (strides in elements)."""
    _fields_ = [("data", ctypes.c_uint64), ("stride_y", _i64), ("stride_x", _i64), ("stride_c", _i64),
                ("height", ctypes.c_int32), ("width", ctypes.c_int32), ("channels", ctypes.c_int32),
                ("reserved", ctypes.c_int32)]


class CropParams(ctypes.Structure):
    """obb_crop_params: what every crop of one call shares."""
    _fields_ = [("out_h", ctypes.c_int32), ("out_w", ctypes.c_int32), ("keep_aspect", ctypes.c_int32),
                ("reading", ctypes.c_int32), ("channels", ctypes.c_int32), ("n_frames", ctypes.c_int32),
                ("in_type", ctypes.c_int32), ("out_type", ctypes.c_int32), ("padding", ctypes.c_float),
                ("reserved", ctypes.c_int32), ("channel_index", ctypes.c_int32 * CROP_MAX_CHANNELS),
                ("fill", ctypes.c_float * CROP_MAX_CHANNELS)]


CROP = NativeLibrary(
    "_crop", "C crop core", abi=2, abi_function="obbmeta_crop_abi_version",
    functions={
        "obbmeta_crop_check": (_i64, [_p, _i64, ctypes.c_int32, _p]),
        "obbmeta_crop_widths": (None, [_p, _i64, _p, _p]),
        "obbmeta_crop": (_i64, [_p, _i64, _p, _i64, _p, _p, _p]),
    },
    structs={"obb_crop_frame": CropFrame, "obb_crop_params": CropParams},
    constants={"OBB_CROP_NONFINITE": CROP_NONFINITE, "OBB_CROP_NEGATIVE_SIDE": CROP_NEGATIVE_SIDE,
               "OBB_CROP_BAD_FRAME": CROP_BAD_FRAME, "OBB_CROP_MAX_CHANNELS": CROP_MAX_CHANNELS,
               "OBB_READ_AS_IS": CROP_READINGS["as-is"], "OBB_READ_LEFT_TO_RIGHT": CROP_READINGS["left-to-right"],
               "OBB_READ_LONG_SIDE": CROP_READINGS["long-side"], "OBB_U8": CROP_DTYPES[torch.uint8],
               "OBB_F16": CROP_DTYPES[torch.float16], "OBB_BF16": CROP_DTYPES[torch.bfloat16],
               "OBB_F32": CROP_DTYPES[torch.float32]},
    table_function="obbmeta_crop_abi_table")


def crop_library() -> ctypes.CDLL:
    """The host build of kernels/obb_crop.h (kernels/crop_cpu.c), loaded and checked on first use."""
    return CROP.load()


class CropBoxError(ValueError):
    """A row of the crop's box table that cannot be cropped; ``row`` is its index in the (K, 6) table."""

    def __init__(self, name: str, row: int, values, reason: int, n_frames: int):
        self.row, self.values, self.reason, self.n_frames = row, values, reason, n_frames
        b, _, _, w, h, _ = values
        if reason == CROP_NONFINITE:
            text = f"{name} = {values} contains NaN or inf; every box must be finite"
        elif reason == CROP_NEGATIVE_SIDE:
            text = f"{name} has a negative side (w={w:g}, h={h:g}); w and h must be >= 0"
        else:
            text = f"{name} has batch index {b:g}, not an integer in [0, {n_frames}) (the number of frames)"
        super().__init__(text)


def crop_row_error(table: torch.Tensor, row: int, n_frames: int) -> CropBoxError:
    """The error for row `row` of the (K, 6) float32 table (any device; read once, on the error path only)."""
    values = table[row].detach().cpu().contiguous()
    reason = ctypes.c_int32()
    crop_library().obbmeta_crop_check(_ptr(values), 1, n_frames, ctypes.byref(reason))
    return CropBoxError(f"boxes[{row}]", row, [float(v) for v in values.tolist()], reason.value, n_frames)


def check_crop_boxes_host(table: torch.Tensor, n_frames: int) -> None:
    """Raise CropBoxError for the first invalid row of a (K, 6) float32 contiguous CPU table."""
    reason = ctypes.c_int32()
    bad = crop_library().obbmeta_crop_check(_ptr(table), table.shape[0], n_frames, ctypes.byref(reason))
    if bad >= 0:
        raise crop_row_error(table, bad, n_frames)


def frame_dims(frame: torch.Tensor, channels_last: bool) -> Tuple[int, int, int]:
    """(channels, height, width) of one frame (the last three dims of a frame tensor)."""
    if channels_last:
        return frame.shape[-1], frame.shape[-3], frame.shape[-2]
    return frame.shape[-3], frame.shape[-2], frame.shape[-1]


def check_crop_args(frames, boxes, out_h, out_w, padding, fill, channels, channels_last, reading, out_dtype) -> None:
    """The arguments of crop_rotated_op (types, shapes, dtypes, devices, ranges; never the data): the kernels and the
    fake kernel call it."""
    if not isinstance(frames, (list, tuple)) or not frames or not all(isinstance(f, torch.Tensor) for f in frames):
        raise TypeError("frames must be a non-empty list of tensors")
    four = frames[0].dim() == 4
    if (four and len(frames) != 1) or not all(f.dim() == (4 if four else 3) for f in frames):
        raise ValueError("frames must be one (B, C, H, W) / (B, H, W, C) tensor or a list of (C, H, W) / (H, W, C) "
                         f"frames, got shapes {[tuple(f.shape) for f in frames]}")
    first = frames[0]
    if first.dtype not in CROP_DTYPES:
        raise TypeError(f"frames must be uint8, float16, bfloat16 or float32, got {first.dtype}")
    c_in = frame_dims(first, channels_last)[0]
    for i, f in enumerate(frames):
        if f.dtype != first.dtype or f.device != first.device:
            raise ValueError(f"frames[{i}] is {f.dtype} on {f.device} but frames[0] is {first.dtype} on "
                             f"{first.device}; every frame must have one dtype and device")
        c, h, w = frame_dims(f, channels_last)
        if c != c_in:
            raise ValueError(f"frames[{i}] has {c} channels but frames[0] has {c_in}; every frame needs the same")
        if c < 1 or h < 1 or w < 1 or (four and f.shape[0] < 1):
            layout = "HWC" if channels_last else "CHW"
            raise ValueError(f"frames[{i}] has an empty dimension: shape {tuple(f.shape)} ({layout})")
    if not isinstance(boxes, torch.Tensor):
        raise TypeError(f"boxes must be a (K, 6) tensor [batch_index, cx, cy, w, h, angle], got {type(boxes).__name__}")
    if boxes.dim() != 2 or boxes.shape[1] != 6:
        raise ValueError(f"boxes must have shape (K, 6) [batch_index, cx, cy, w, h, angle], got {tuple(boxes.shape)}")
    if not boxes.is_floating_point():
        raise TypeError(f"boxes must be a floating-point tensor, got {boxes.dtype}")
    if boxes.device != first.device:
        raise ValueError(f"boxes is on {boxes.device} but frames are on {first.device}; put them on one device")
    for name, side in (("out_h", out_h), ("out_w", out_w)):
        int_in_range(name, side, 1, CROP_MAX_SIDE)
    number_in_range("padding", padding, 0.0, 1e6, "a number >= 0 (a fraction of the box's shorter side)")
    if not isinstance(channels, (list, tuple)) or not 1 <= len(channels) <= CROP_MAX_CHANNELS:
        raise ValueError(f"channels must be a list of 1 to {CROP_MAX_CHANNELS} channel indices, got {channels!r}")
    for c in channels:
        int_in_range("channels", c, 0, c_in - 1, f"indices of the frames' {c_in} channels (0 .. {c_in - 1})")
    limit = 255.0 if first.dtype == torch.uint8 else float(torch.finfo(first.dtype).max)
    low = 0.0 if first.dtype == torch.uint8 else -limit
    if not isinstance(fill, (list, tuple)) or len(fill) != len(channels):
        raise ValueError(f"fill must hold one value per output channel ({len(channels)}), got {fill!r}")
    for v in fill:
        number_in_range("fill", v, low, limit, f"a number in [{low:g}, {limit:g}] (the frames' {first.dtype} range)")
    if reading not in CROP_READINGS:
        raise ValueError(f"reading must be one of {sorted(CROP_READINGS)}, got {reading!r}")
    if out_dtype not in CROP_DTYPES:
        raise TypeError(f"out_dtype must be torch.uint8, float16, bfloat16 or float32, got {out_dtype}")


def crop_params(frames, out_h, out_w, keep_aspect, padding, fill, channels, reading, out_dtype) -> CropParams:
    p = CropParams(out_h=out_h, out_w=out_w, keep_aspect=int(keep_aspect), reading=CROP_READINGS[reading],
                   channels=len(channels), n_frames=crop_frame_count(frames), in_type=CROP_DTYPES[frames[0].dtype],
                   out_type=CROP_DTYPES[out_dtype], padding=float(padding))
    for c, (index, value) in enumerate(zip(channels, fill)):
        p.channel_index[c] = int(index)
        p.fill[c] = float(value)
    return p


def crop_frame_count(frames) -> int:
    return frames[0].shape[0] if frames[0].dim() == 4 else len(frames)


def _descriptor(frame: torch.Tensor, channels_last: bool, data: int) -> CropFrame:
    (d0, d1, d2), (s0, s1, s2) = frame.shape[-3:], frame.stride()[-3:]
    if channels_last:
        return CropFrame(data, s0, s1, s2, d0, d1, d2)
    return CropFrame(data, s1, s2, s0, d1, d2, d0)


def crop_descriptors(frames, channels_last: bool) -> "tuple[ctypes.Array, int, int]":
    """(descriptor array, descriptors, batch stride in elements): one descriptor and the batch stride for a (B, ...)
    tensor whose frames are apart in memory, else one per frame. The frames are read where they are."""
    if frames[0].dim() == 4:
        batch = frames[0]
        if batch.shape[0] == 1 or batch.stride(0) > 0:
            table = (CropFrame * 1)(_descriptor(batch[0], channels_last, batch.data_ptr()))
            return table, 1, batch.stride(0) if batch.shape[0] > 1 else 0
        frames = list(batch)  # an expanded batch (stride 0): every frame is the same memory
    table = (CropFrame * len(frames))(*(_descriptor(f, channels_last, f.data_ptr()) for f in frames))
    return table, len(frames), 0


def crop_widths_host(table: torch.Tensor, params: CropParams) -> torch.Tensor:
    """The content width each row of a (K, 6) float32 contiguous CPU table gets (0 for an invalid row)."""
    widths = torch.empty(table.shape[0], dtype=torch.int64)
    if table.shape[0]:
        crop_library().obbmeta_crop_widths(_ptr(table), table.shape[0], ctypes.byref(params), _ptr(widths))
    return widths


crop_rotated_op = registry.crop_rotated


@crop_rotated_op.register_kernel("cpu")
def _crop_rotated_cpu(
    frames: List[torch.Tensor], boxes: torch.Tensor, out_h: int, out_w: int, keep_aspect: bool, padding: float,
    fill: List[float], channels: List[int], channels_last: bool, reading: str, out_dtype: torch.dtype,
    check_boxes: bool
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Upright crops (K, len(channels), out_h, out_w) and their content widths (K,) int64; see ops/crop.py."""
    check_crop_args(frames, boxes, out_h, out_w, padding, fill, channels, channels_last, reading, out_dtype)
    _require_host(boxes)
    table = boxes.to(torch.float32).contiguous()
    k = table.shape[0]
    out = torch.empty((k, len(channels), out_h, out_w), dtype=out_dtype)
    widths = torch.empty(k, dtype=torch.int64)
    if k:
        params = crop_params(frames, out_h, out_w, keep_aspect, padding, fill, channels, reading, out_dtype)
        descriptors, n_desc, batch_stride = crop_descriptors(frames, channels_last)
        bad = crop_library().obbmeta_crop(descriptors, batch_stride, _ptr(table), k, ctypes.byref(params), _ptr(out),
                                          _ptr(widths))
        if bad < -1:
            raise RuntimeError("obbmeta's crop core refused its parameters (a build that does not match the wrapper)")
        if check_boxes and bad >= 0:
            raise crop_row_error(table, bad, params.n_frames)
    return out, widths


@crop_rotated_op.register_fake
def _(frames, boxes, out_h, out_w, keep_aspect, padding, fill, channels, channels_last, reading, out_dtype,
      check_boxes):
    check_crop_args(frames, boxes, out_h, out_w, padding, fill, channels, channels_last, reading, out_dtype)
    k = boxes.shape[0]
    return (frames[0].new_empty((k, len(channels), out_h, out_w), dtype=out_dtype),
            boxes.new_empty((k,), dtype=torch.int64))


@crop_rotated_op.register_kernel("cuda")
def _(frames, boxes, out_h, out_w, keep_aspect, padding, fill, channels, channels_last, reading, out_dtype,
      check_boxes):
    check_crop_args(frames, boxes, out_h, out_w, padding, fill, channels, channels_last, reading, out_dtype)
    lib = cuda_library()
    device = boxes.device
    if lib is None:  # kernels not built: the host code on copies of the frames
        out, widths = crop_rotated_op([f.cpu() for f in frames], boxes.cpu(), out_h, out_w, keep_aspect, padding,
                                      fill, channels, channels_last, reading, out_dtype, check_boxes)
        return out.to(device), widths.to(device)
    table = boxes.to(torch.float32).contiguous()
    k = table.shape[0]
    out = torch.empty((k, len(channels), out_h, out_w), dtype=out_dtype, device=device)
    widths = torch.empty(k, dtype=torch.int64, device=device)
    if k == 0:
        return out, widths
    params = crop_params(frames, out_h, out_w, keep_aspect, padding, fill, channels, reading, out_dtype)
    descriptors, n_desc, batch_stride = crop_descriptors(frames, channels_last)
    status = torch.full((1,), -1, dtype=torch.int64, device=device) if check_boxes else None
    launch(device, lib.obbmeta_cuda_crop, descriptors, n_desc, batch_stride, _ptr(table), k, ctypes.byref(params),
           _ptr(out), _ptr(widths), _ptr(status))
    if status is not None:
        bad = int(status.item())  # the one host sync, asked for by check_boxes
        if bad >= 0:
            raise crop_row_error(table, bad, params.n_frames)
    return out, widths
