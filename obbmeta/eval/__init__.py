"""DOTA-style evaluation of oriented detections: per-class AP and mAP on the exact polygon IoU.

>>> from obbmeta.eval import evaluate, IOU_THRESHOLDS_50_95
>>> res = evaluate(detections, ground_truths, class_names=NAMES)            # doctest: +SKIP
>>> res.map, res.ap[0]                                                        # doctest: +SKIP
>>> evaluate(detections, ground_truths, iou_threshold=IOU_THRESHOLDS_50_95).map50_95   # doctest: +SKIP

The rules (ranking, matching, difficult ground truths, the two AP metrics) are in :mod:`obbmeta.eval.dota`.
"""
from .dota import MATCHINGS, MAX_NUM_CLASSES, METRICS, average_precision, evaluate
from .result import IOU_THRESHOLDS_50_95, ClassEval, EvalResult
from .text import character_error_rate, edit_distance

__all__ = ["evaluate", "EvalResult", "ClassEval", "average_precision", "IOU_THRESHOLDS_50_95", "METRICS",
           "MATCHINGS", "MAX_NUM_CLASSES", "character_error_rate", "edit_distance"]
