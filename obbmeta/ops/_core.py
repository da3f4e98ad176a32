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
from typing import Optional

import torch

from .._cuda_lib import cuda_library, launch
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


NMS_BLOCK = 64  # bits per mask word in kernels/obbmeta_cuda.cu


@nms_rotated_op.register_kernel("cuda")
def _(boxes, scores, labels, iou_threshold):
    iou_threshold = check_nms_args(boxes, scores, labels, iou_threshold)
    lib = cuda_library()
    if lib is None:
        return _on_host(nms_rotated_op, boxes, scores, labels, iou_threshold)
    dtype = compute_dtype(boxes, scores)
    boxes, scores = _as(boxes, dtype), _as(scores, dtype)
    labels = labels.to(torch.int64) if labels is not None else None
    n = boxes.shape[0]
    if n == 0:
        return torch.empty(0, dtype=torch.int64, device=boxes.device)
    # Stable sort: equal scores keep the lower index first, as on the host.
    order = torch.sort(scores, descending=True, stable=True).indices
    sorted_boxes = boxes.index_select(0, order).contiguous()
    sorted_labels = labels.index_select(0, order).contiguous() if labels is not None else None
    col_blocks = (n + NMS_BLOCK - 1) // NMS_BLOCK
    mask = torch.empty(n * col_blocks, dtype=torch.int64, device=boxes.device)
    removed = torch.zeros(col_blocks, dtype=torch.int64, device=boxes.device)
    keep = torch.empty(n, dtype=torch.int64, device=boxes.device)
    count = torch.empty(1, dtype=torch.int64, device=boxes.device)
    launch(boxes.device, lib.obbmeta_cuda_nms, n, _ptr(sorted_boxes), int(dtype == torch.float64),
           _ptr(sorted_labels), iou_threshold, _ptr(order), _ptr(mask), _ptr(removed), _ptr(keep), _ptr(count))
    # The one host sync: the number of kept boxes (which decides the result's size), read together with the
    # NaN/inf check of the inputs that nms_rotated leaves to this point on a GPU.
    kept, boxes_ok, scores_ok = torch.cat(
        (count, boxes_in_range(boxes).view(1).long(), torch.isfinite(scores).all().view(1).long())).tolist()
    if not boxes_ok:
        raise range_error("boxes", boxes)
    if not scores_ok:
        raise ValueError("scores contains NaN or inf")
    return keep[:kept]
