"""The C geometry core registered as torch operators (``torch.ops.obbmeta.*``).

One operator schema per op, like torchvision: the CPU kernel calls the host build of kernels/obb_geometry.h
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
from functools import lru_cache
from typing import Optional, Tuple

import torch

from .._cuda_lib import cuda_library, launch, sizes
from .._native import load_library
from .._native import ptr as _ptr
from ._validate import boxes_in_range, check_finite, check_in_range, check_iou_args, check_nms_args, range_error

_p = ctypes.c_void_p
_i64 = ctypes.c_int64


@lru_cache(maxsize=None)
def _lib() -> ctypes.CDLL:
    lib = load_library("_geometry")
    lib.obbmeta_geometry_abi_version.restype = ctypes.c_int
    if lib.obbmeta_geometry_abi_version() != 2:
        raise ImportError("obbmeta's compiled geometry core is out of date; rebuild it with `pip install -e .`")
    lib.obbmeta_iou_matrix.argtypes = [_p, _i64, _p, _i64, _p, ctypes.c_int]
    lib.obbmeta_iou_matrix.restype = None
    lib.obbmeta_iou_aligned.argtypes = [_p, _p, _i64, _p, ctypes.c_int]
    lib.obbmeta_iou_aligned.restype = None
    lib.obbmeta_nms.argtypes = [_p, _p, ctypes.c_int, _p, _i64, ctypes.c_double, _p]
    lib.obbmeta_nms.restype = _i64
    return lib


def _require_host(t: torch.Tensor) -> None:
    if t.device.type != "cpu":
        raise NotImplementedError(f"obbmeta's geometry ops run on CPU and CUDA tensors, not on {t.device}")


def compute_dtype(*tensors: Optional[torch.Tensor]) -> torch.dtype:
    """float64 when any input is float64, else float32: the precision the ops compute and answer in."""
    return torch.float64 if any(t is not None and t.dtype == torch.float64 for t in tensors) else torch.float32


def _as(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return t.to(dtype).contiguous()


@torch.library.custom_op("obbmeta::box_iou_rotated", mutates_args=())
def box_iou_rotated_op(boxes1: torch.Tensor, boxes2: torch.Tensor, aligned: bool) -> torch.Tensor:
    check_iou_args(boxes1, boxes2, aligned)
    _require_host(boxes1)
    dtype = compute_dtype(boxes1, boxes2)
    boxes1, boxes2 = _as(boxes1, dtype), _as(boxes2, dtype)
    check_in_range("boxes1", boxes1)
    check_in_range("boxes2", boxes2)
    n, m = boxes1.shape[0], boxes2.shape[0]
    wide = int(dtype == torch.float64)
    if aligned:
        out = torch.empty(n, dtype=dtype)
        if n:
            _lib().obbmeta_iou_aligned(_ptr(boxes1), _ptr(boxes2), n, _ptr(out), wide)
    else:
        out = torch.empty((n, m), dtype=dtype)
        if n and m:
            _lib().obbmeta_iou_matrix(_ptr(boxes1), n, _ptr(boxes2), m, _ptr(out), wide)
    return out


@box_iou_rotated_op.register_fake
def _(boxes1, boxes2, aligned):
    check_iou_args(boxes1, boxes2, aligned)
    shape = (boxes1.shape[0],) if aligned else (boxes1.shape[0], boxes2.shape[0])
    return boxes1.new_empty(shape, dtype=compute_dtype(boxes1, boxes2))


@torch.library.custom_op("obbmeta::nms_rotated", mutates_args=())
def nms_rotated_op(
    boxes: torch.Tensor, scores: torch.Tensor, labels: Optional[torch.Tensor], iou_threshold: float
) -> torch.Tensor:
    iou_threshold = check_nms_args(boxes, scores, labels, iou_threshold)
    _require_host(boxes)
    dtype = compute_dtype(boxes, scores)
    boxes, scores = _as(boxes, dtype), _as(scores, dtype)
    labels = labels.to(torch.int64).contiguous() if labels is not None else None
    check_in_range("boxes", boxes)
    check_finite("scores", scores)
    n = boxes.shape[0]
    keep = torch.empty(n, dtype=torch.int64)
    wide = int(dtype == torch.float64)
    count = _lib().obbmeta_nms(_ptr(boxes), _ptr(scores), wide, _ptr(labels), n, iou_threshold, _ptr(keep)) if n else 0
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
    boxes1, boxes2 = _as(boxes1, dtype), _as(boxes2, dtype)
    check_in_range("boxes1", boxes1)  # one host sync each, as the IoU's callers expect an error, not NaN
    check_in_range("boxes2", boxes2)
    n, m = boxes1.shape[0], boxes2.shape[0]
    out = boxes1.new_empty((n,) if aligned else (n, m))
    launch(boxes1.device, lib.obbmeta_cuda_iou, _ptr(boxes1), n, _ptr(boxes2), m, _ptr(out), int(aligned),
           int(dtype == torch.float64))
    return out


# Status flags written by the CUDA kernels (kernels/obbmeta_nms.cuh): status = [kept, flags, pool entries needed].
STATUS_BOXES, STATUS_SCORES, STATUS_OVERFLOW = 1, 2, 4
# The kernels store the suppression mask sparsely: one 64-bit word per box and chunk of 64 later boxes whose bounding
# boxes meet it somewhere (a "candidate word"), 32 bytes each, in a pool whose size is given. The sized entry points
# try a pool of POOL_FIRST entries (or what the data of earlier calls on that device needed, or the worst case when
# smaller); when the data needs more, the call runs once more with exactly that. The fixed-size entry points take
# POOL_FIXED by default (128 MiB) and report data that needs more in their status instead of losing boxes.
POOL_FIRST = 1 << 21
POOL_FIXED = 1 << 22
_pool_seen: dict = {}


def pool_for(device: torch.device, bound: int) -> int:
    return min(bound, max(POOL_FIRST, _pool_seen.get(device, 0)))


def remember_pool(device: torch.device, entries: int) -> None:
    _pool_seen[device] = max(entries, _pool_seen.get(device, 0))


def status_error(flags: int, boxes_name: str, boxes: torch.Tensor, scores_name: str = "scores") -> Optional[Exception]:
    """The exception the sized entry points raise for a kernel's status flags (None when the data was fine)."""
    if flags & STATUS_BOXES:
        return range_error(boxes_name, boxes)
    if flags & STATUS_SCORES:
        return ValueError(f"{scores_name} contains NaN or inf")
    if flags & STATUS_OVERFLOW:  # only after the exactly sized retry: more than a pool can index
        return RuntimeError("the overlapping pairs need more than 2**31 - 1 candidate words; split the boxes "
                            "(e.g. by label or image) into smaller calls")
    return None


def _nms_cuda(boxes, scores, labels, iou_threshold, pool):
    """Enqueue the CUDA NMS (no host sync). Returns (keep (N,) int64 padded with -1, status (3,) int64). pool: entries
    of the sparse mask's pool."""
    lib = cuda_library()
    dtype = compute_dtype(boxes, scores)
    boxes, scores = _as(boxes, dtype), _as(scores, dtype)
    labels = labels.to(torch.int64).contiguous() if labels is not None else None
    n, wide, grouped = boxes.shape[0], int(dtype == torch.float64), int(labels is not None)
    ws_bytes, _ = sizes(boxes.device, "obbmeta_cuda_nms_sizes", n, grouped, wide, pool)
    scratch = torch.empty(max(ws_bytes, 1), dtype=torch.uint8, device=boxes.device)
    out = torch.empty(n + 3, dtype=torch.int64, device=boxes.device)
    keep, status = out[:n], out[n:]
    launch(boxes.device, lib.obbmeta_cuda_nms, n, _ptr(boxes), _ptr(scores), wide, _ptr(labels), iou_threshold,
           _ptr(scratch), ws_bytes, pool, _ptr(keep), _ptr(status))
    return keep, status


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
    keep, status = _nms_cuda(boxes, scores, labels, iou_threshold, pool_for(boxes.device, bound))
    kept, flags, needed = status.tolist()  # the one host sync: the result's size, with the kernels' input checks
    if flags & STATUS_OVERFLOW:  # more overlapping pairs than the first pool held: once more, with what they need
        remember_pool(boxes.device, needed)
        keep, status = _nms_cuda(boxes, scores, labels, iou_threshold, needed)
        kept, flags, _ = status.tolist()
    error = status_error(flags, "boxes", boxes)
    if error is not None:
        raise error
    return keep[:kept]


@torch.library.custom_op("obbmeta::nms_rotated_padded", mutates_args=())
def nms_rotated_padded_op(
    boxes: torch.Tensor, scores: torch.Tensor, labels: Optional[torch.Tensor], iou_threshold: float, pool: int
) -> Tuple[torch.Tensor, torch.Tensor]:
    """pool: entries of the CUDA kernels' sparse mask (-1: POOL_FIXED); the CPU kernel needs none."""
    iou_threshold = check_nms_args(boxes, scores, labels, iou_threshold)
    _require_host(boxes)
    n = boxes.shape[0]
    keep = torch.full((n,), -1, dtype=torch.int64)
    dtype = compute_dtype(boxes, scores)
    if n and not (bool(boxes_in_range(_as(boxes, dtype))) and bool(torch.isfinite(scores).all())):
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
    keep, status = _nms_cuda(boxes, scores, labels, iou_threshold, min(bound, POOL_FIXED if pool < 0 else pool))
    count = torch.where(status[1] == 0, status[0], torch.full_like(status[0], -1))
    return keep, count
