"""Greedy non-maximum suppression of oriented boxes with exact polygon IoU."""
from __future__ import annotations

from typing import Optional, Tuple

import torch

from .._validators import int_in_range
from ._core import nms_rotated_op, nms_rotated_padded_op
from ._validate import check_nms_args


def nms_rotated(
    boxes: torch.Tensor, scores: torch.Tensor, iou_threshold: float, labels: Optional[torch.Tensor] = None
) -> torch.Tensor:
    """Greedy rotated NMS.

    Boxes are visited by descending score (equal scores: lower index first). A box is kept unless its exact
    IoU with an already kept box is strictly greater than ``iou_threshold``. With ``labels``, suppression
    happens only within a class (never across classes; no coordinate-offset trick, so it is exact at any
    coordinate range). This is classic greedy NMS, not Ultralytics' Fast-NMS: in a chain A-B-C where A
    suppresses B and B overlaps C but A does not, C is kept.

    Precision: when boxes or scores are float64, the boxes are compared and the scores ordered in float64 (values
    within +-1e150); otherwise in float32 (float16 / bfloat16 widen exactly). A float64 input is never cast down.

    Cost on the CPU: near-linear at constant density of bounding boxes (each box is tested only against kept boxes
    whose axis-aligned bounding boxes meet its own, found through a multi-level grid); the keep set is that of the
    plain greedy scan. Scenes where most bounding boxes overlap (e.g. many long thin boxes at 45 degrees across the
    image) stay quadratic, as any bounding-box filter is. On CUDA, boxes are sorted on the device, prepared once
    each; per label, one thread per box compares float bounds with chunks of 64 later boxes, and every (box, chunk)
    whose bounds meet becomes a 64-bit candidate word (32 bytes); each candidate pair then asks the host's own
    predicate (bounding-box, area and separating-axis tests, then the exact clipping in double), and one block per
    label group scans the words greedily. Memory: linear in N plus the candidate words, no N x N matrix. The one
    host sync reads the kept count (a second call follows only when the candidate words outgrow the first buffer;
    :func:`nms_rotated_padded` has none).

    Args:
        boxes: (N, 5) [cx, cy, w, h, angle] float tensor (radians, clockwise on screen).
        scores: (N,) float tensor on the same device.
        iou_threshold: in [0, 1].
        labels: optional (N,) integer tensor on the same device.

    Returns:
        int64 tensor of the kept indices, sorted by descending score, on the boxes' device. Boxes with
        w <= 0 or h <= 0 overlap nothing: they are kept (in score order) and suppress nothing.
    """
    # The operator converts dtype / contiguity and checks the values' range itself (on a GPU together with the
    # result size, its one host sync), so this function traces under torch.compile(fullgraph=True).
    iou_threshold = check_nms_args(boxes, scores, labels, iou_threshold)
    return nms_rotated_op(boxes, scores, labels, iou_threshold)


def nms_rotated_padded(
    boxes: torch.Tensor, scores: torch.Tensor, iou_threshold: float, labels: Optional[torch.Tensor] = None,
    overlap_words: Optional[int] = None,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """:func:`nms_rotated` with a fixed-size result and, on CUDA, no host synchronisation at all: it can be captured
    in a CUDA graph and traced by ``torch.compile(fullgraph=True)`` without a graph break.

    Returns:
        ``(keep, count)``: ``keep`` is an (N,) int64 tensor whose first ``count`` entries are :func:`nms_rotated`'s
        result and the rest -1; ``count`` is a 0-d int64 tensor, or -1 when boxes or scores hold NaN / inf (or, for
        float64 boxes, values beyond +-1e150) — the case where :func:`nms_rotated` raises ValueError — or when the
        overlaps outgrow ``overlap_words``. Both are on the boxes' device.

    ``overlap_words`` (CUDA): room for that many candidate words (a box and a chunk of 64 later boxes whose bounding
    boxes meet it; 32 bytes each; clustered detector output has a few to a few tens per box). None: 4 194 304
    (128 MiB), or the worst case for N boxes when that is less (N <= ~16 000). Data that needs more gives count -1,
    never a wrong keep.
    """
    iou_threshold = check_nms_args(boxes, scores, labels, iou_threshold)
    pool = -1 if overlap_words is None else int_in_range("overlap_words", overlap_words, 0, form="None or an int >= 0")
    return nms_rotated_padded_op(boxes, scores, labels, iou_threshold, pool)
