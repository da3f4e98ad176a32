"""Oriented-box operators: exact rotated IoU, greedy rotated NMS, polygon / AABB conversions, upright crops.

All take and return torch tensors (``box_iou_rotated_host``: NumPy arrays, for per-frame CPU callers); boxes are
(N, 5) [cx, cy, w, h, angle] with the angle in radians, positive clockwise on screen (image y axis down). See
``kernels/obb_geometry.h`` for the shared C geometry, and :mod:`obbmeta.ops.status` for the status flags of the CUDA
NMS and decode and the exceptions they stand for.
"""
from .convert import obb_to_aabb, obb_to_polygons, polygons_to_obb
from .crop import crop_rotated
from .iou import box_iou_rotated, box_iou_rotated_host
from .nms import nms_rotated, nms_rotated_padded

__all__ = ["box_iou_rotated", "box_iou_rotated_host", "nms_rotated", "nms_rotated_padded", "obb_to_polygons",
           "polygons_to_obb", "obb_to_aabb", "crop_rotated", "native_libraries", "cuda_kernels"]


def native_libraries() -> tuple:
    """The compiled libraries behind the ops besides the shared geometry core (``obbmeta doctor`` reports them)."""
    from . import _core

    return (_core.CROP,)


def cuda_kernels() -> tuple:
    """The state of the CUDA kernels behind the ops' and the decode's CUDA paths (``obbmeta doctor`` reports it):
    ``("loaded", "")``, ``("stale", why)`` when they are there but cannot be used (CUDA tensors then take the host
    code on a copy, warned once), or ``("missing", "")`` when they were not built."""
    from .._cuda_lib import cuda_library, cuda_problem

    problem = cuda_problem()
    if problem is not None:
        return "stale", problem
    return ("loaded", "") if cuda_library() is not None else ("missing", "")
