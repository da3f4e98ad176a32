"""Exact IoU of oriented boxes (polygon intersection, not a Gaussian approximation)."""
from __future__ import annotations

import torch

from ..geometry import box_iou_rotated_host  # the NumPy form lives with the other torch-free box facts
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


__all__ = ["box_iou_rotated", "box_iou_rotated_host"]
