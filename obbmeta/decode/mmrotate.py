"""mmrotate outputs (0.x per-class arrays, 1.x DetDataSample / InstanceData)."""
from __future__ import annotations

from typing import List, Optional

import torch

from .._validators import int_in_range, threshold
from ..boxes import OrientedBoxes
from ..frames.letterbox import Letterbox
from ..ops import nms_rotated


def mmrotate(results, score_thr: float = 0.0, iou: Optional[float] = None, max_det: Optional[int] = None,
             letterbox: Optional[Letterbox] = None) -> List[OrientedBoxes]:
    """Convert mmrotate results for a batch of images into one :class:`OrientedBoxes` each.

    Args:
        results: a list with one entry per image: an mmrotate 1.x ``DetDataSample`` / ``InstanceData``, or the
            mmrotate 0.x per-class list of (n, 6) ``[cx, cy, w, h, angle, score]`` arrays. A single image's
            result (a DetDataSample, or a 0.x per-class list of arrays) is also accepted.
        score_thr: drop boxes with score <= score_thr.
        iou: optionally run class-aware greedy rotated NMS again (mmrotate already ran its own).
        max_det: keep at most this many boxes per image, by score.
        letterbox: the :class:`~obbmeta.Letterbox` the model's input was made with, to map the boxes back to the
            source frame (``(input - pad) / scale``); None keeps them as they are.

    Coordinates: the boxes stay in the pixels the results are in; only ``letterbox`` moves them. mmrotate's own
    inference (``inference_detector``, a test pipeline with ``rescale=True``) already gives source-image pixels:
    pass no letterbox. A model called on a letterboxed input tensor — what ``obbinfer`` and
    :class:`obbmeta.infer.Detector` do with ``output-format=mmrotate`` — gives model-input pixels: pass that
    letterbox (the Detector undoes it itself). Angles are in obbmeta's direction (clockwise on screen) already.
    """
    if letterbox is not None and not isinstance(letterbox, Letterbox):
        raise TypeError(f"letterbox must be None or an obbmeta.Letterbox, got {type(letterbox).__name__}")
    score_thr = threshold("score_thr", score_thr)
    if max_det is not None:
        int_in_range("max_det", max_det, 0, form="None or an int >= 0")
    if iou is not None:
        iou = threshold("iou", iou)
    if _is_single(results):
        results = [results]
    out = []
    for r in results:
        boxes = OrientedBoxes.from_mmrotate(r, score_thr=score_thr)
        if iou is not None and len(boxes):
            boxes = boxes[nms_rotated(boxes.xywhr, boxes.scores, iou, labels=boxes.labels)]
        else:
            boxes = boxes[torch.argsort(boxes.scores, descending=True, stable=True)]
        if max_det is not None:
            boxes = boxes[:max_det]
        out.append(boxes if letterbox is None else boxes.rescale(letterbox))
    return out


def _is_single(results) -> bool:
    if hasattr(results, "pred_instances") or hasattr(results, "bboxes"):
        return True
    # A 0.x single-image result is a list of 2-d arrays; a batch is a list of lists / samples.
    return isinstance(results, (list, tuple)) and len(results) > 0 and hasattr(results[0], "shape")
