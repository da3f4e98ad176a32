"""Exact IoU of oriented boxes (polygon intersection, not a Gaussian approximation)."""
from __future__ import annotations

import torch

from ._core import box_iou_rotated_op
from ._validate import check_iou_args


def box_iou_rotated(boxes1: torch.Tensor, boxes2: torch.Tensor, aligned: bool = False) -> torch.Tensor:
    """Exact intersection-over-union of oriented boxes.

    Args:
        boxes1: (N, 5) [cx, cy, w, h, angle] (radians, clockwise on screen).
        boxes2: (M, 5), same format and device.
        aligned: if True, N must equal M and the result is the (N,) IoU of each pair (i, i).

    Returns:
        (N, M) matrix, or (N,) when ``aligned``, every value in [0, 1] (never NaN). A box with w <= 0 or h <= 0
        has IoU 0 with everything, itself included. NaN/inf inputs raise ValueError.

    Precision: computed in double inside; the inputs are read in their own precision when either is float64 (the
    result is then float64; values must lie within +-1e150), else as float32 (float16 / bfloat16 widen exactly;
    the result is float32). Boxes that float32 cannot tell apart are never merged by a silent cast.
    """
    # The operator converts dtype / contiguity and checks the values' range itself (see ops/_core.py), so this
    # function traces under torch.compile(fullgraph=True).
    check_iou_args(boxes1, boxes2, aligned)
    return box_iou_rotated_op(boxes1, boxes2, bool(aligned))


def box_iou_rotated_host(boxes1, boxes2, aligned: bool = False):
    """:func:`box_iou_rotated` on NumPy arrays, for per-frame callers on the CPU (trackers): the same C code
    without torch's operator dispatch, which costs tens of microseconds per call on small inputs.

    Args: ``boxes1`` (N, 5) and ``boxes2`` (M, 5) array-likes [cx, cy, w, h, angle]; ``aligned`` as for
    :func:`box_iou_rotated`. Returns a float32 ``numpy.ndarray`` (N, M), or (N,) when ``aligned``.
    """
    import numpy as np

    from ._core import geometry_library

    arrays = []
    for name, b in (("boxes1", boxes1), ("boxes2", boxes2)):
        a = np.ascontiguousarray(b, dtype=np.float32)
        if a.ndim != 2 or a.shape[1] != 5:
            raise ValueError(f"{name} must have shape (N, 5) [cx, cy, w, h, angle], got {a.shape}")
        if not np.isfinite(a).all():
            raise ValueError(f"{name} contains NaN or inf; every box must be finite")
        arrays.append(a)
    a, b = arrays
    n, m = a.shape[0], b.shape[0]
    lib = geometry_library()
    if aligned:
        if n != m:
            raise ValueError(f"aligned=True needs boxes1 and boxes2 of equal length, got {n} and {m}")
        out = np.empty(n, np.float32)
        if n:
            lib.obbmeta_iou_aligned(a.ctypes.data, b.ctypes.data, n, out.ctypes.data, 0)  # 0: float32 boxes
        return out
    out = np.empty((n, m), np.float32)
    if n and m:
        lib.obbmeta_iou_matrix(a.ctypes.data, n, b.ctypes.data, m, out.ctypes.data, 0)  # 0: float32 boxes
    return out
