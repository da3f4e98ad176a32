"""What :func:`obbmeta.eval.evaluate` returns: per-class records and the mAP views over them."""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Callable, Dict, Mapping, Optional, Tuple

import numpy as np

#: The ten COCO-style IoU thresholds 0.50, 0.55, ..., 0.95 (``evaluate(..., iou_threshold=IOU_THRESHOLDS_50_95)``).
IOU_THRESHOLDS_50_95 = tuple(round(0.5 + 0.05 * i, 2) for i in range(10))


@dataclass(frozen=True, eq=False)
class ClassEval:
    """One class. Tuples hold one entry per IoU threshold, in the order of ``EvalResult.iou_thresholds``.

    Attributes:
        num_gt: ground truths that count for recall (difficult ones excluded).
        num_difficult: difficult ground truths.
        num_det: all detections of the class.
        ap: AP per threshold; NaN when ``num_gt == 0``.
        num_tp, num_fp: per threshold; ``num_det - num_tp - num_fp`` detections were ignored (matched to a
            difficult ground truth).
        precision, recall, scores: per threshold, one entry per detection that counts (ignored ones left out), in
            ranking order (descending score). ``recall`` is NaN when ``num_gt == 0``.
    """

    class_id: int
    name: Optional[str]
    num_gt: int
    num_difficult: int
    num_det: int
    ap: Tuple[float, ...]
    num_tp: Tuple[int, ...]
    num_fp: Tuple[int, ...]
    precision: Tuple[np.ndarray, ...]
    recall: Tuple[np.ndarray, ...]
    scores: Tuple[np.ndarray, ...]


class PerClass(dict):
    """A dict class id -> value over the evaluated classes that also answers for a class that was not evaluated.

    Without ``num_classes`` the evaluated classes are the labels present in detections and ground truths; any other
    class id ``c >= 0`` had nothing to score, and ``d[c]`` gives what evaluating it would have given (``num_gt`` 0,
    AP NaN, empty curves) instead of a bare KeyError; it is not added to the dict (iteration, ``len`` and JSON keep
    the evaluated classes). Ids that can be no class (negative, not an int, ``>= num_classes``) raise a KeyError
    that says so.
    """

    def __init__(self, values: Mapping, absent: Callable[[int], object], num_classes: Optional[int]):
        super().__init__(values)
        self._absent = absent
        self._num_classes = num_classes

    def __missing__(self, key):
        if isinstance(key, bool) or not isinstance(key, numbers.Integral) or key < 0:
            raise KeyError(f"class ids are ints >= 0, got {key!r}")
        if self._num_classes is not None:
            raise KeyError(f"class {key} was not evaluated: the classes are range(num_classes={self._num_classes})")
        return self._absent(int(key))


@dataclass(frozen=True, eq=False)
class EvalResult:
    """Result of :func:`obbmeta.eval.evaluate`.

    ``ap`` / ``map`` average over all the IoU thresholds that were evaluated (with one threshold: AP at it;
    with :data:`IOU_THRESHOLDS_50_95`: AP@0.5:0.95, Ultralytics' and COCO's ``map``). ``map50``, ``map75``,
    ``map50_95`` and ``ap_at(t)`` / ``map_at(t)`` read single thresholds. The curves ``precision`` and ``recall``
    are those at ``iou_thresholds[0]``; every threshold's are in ``classes[c]``.

    mAP counts exactly the classes with ``num_gt > 0`` (at least one non-difficult ground truth); it is NaN when
    there is none.

    ``classes`` and the per-class views (``ap``, ``ap_at(t)``, ``precision``, ``recall``, ``num_gt``, ``num_det``)
    are :class:`PerClass` dicts: ``res.ap[c]`` of a class id that appears in neither detections nor ground truths
    (with ``num_classes`` not given) is NaN, its ``num_gt`` 0, its ``classes[c]`` an empty :class:`ClassEval`,
    rather than a KeyError; an id outside ``range(num_classes)`` raises a KeyError that says so.
    """

    iou_thresholds: Tuple[float, ...]
    metric: str
    matching: str
    classes: Mapping[int, ClassEval]
    num_classes: Optional[int] = None
    class_names: Optional[Mapping[int, str]] = None

    def __post_init__(self):
        object.__setattr__(self, "class_names", dict(self.class_names or {}))
        object.__setattr__(self, "classes", self._per_class(self.classes, lambda e: e))

    def _absent(self, c: int) -> ClassEval:
        """What evaluating a class with no detection and no ground truth gives."""
        k = len(self.iou_thresholds)
        empty = np.zeros(0)
        return ClassEval(class_id=c, name=self.class_names.get(c), num_gt=0, num_difficult=0, num_det=0,
                         ap=(math.nan,) * k, num_tp=(0,) * k, num_fp=(0,) * k, precision=(empty,) * k,
                         recall=(empty,) * k, scores=(empty,) * k)

    def _per_class(self, values: Mapping, view: Callable[[ClassEval], object]) -> PerClass:
        return PerClass(values, lambda c: view(self._absent(c)), self.num_classes)

    # --- averaged over the evaluated thresholds ------------------------------------------------------------
    @property
    def ap(self) -> Dict[int, float]:
        """Class id -> AP averaged over the IoU thresholds (NaN for classes without ground truth)."""
        return self._per_class({c: _ap(e) for c, e in self.classes.items()}, _ap)

    @property
    def map(self) -> float:
        return _mean([v for c, v in self.ap.items() if self.classes[c].num_gt])

    # --- single thresholds ---------------------------------------------------------------------------------
    def ap_at(self, iou_threshold: float) -> Dict[int, float]:
        k = self._index(iou_threshold)
        return self._per_class({c: e.ap[k] for c, e in self.classes.items()}, lambda e: e.ap[k])

    def map_at(self, iou_threshold: float) -> float:
        k = self._index(iou_threshold)
        return _mean([e.ap[k] for e in self.classes.values() if e.num_gt])

    @property
    def map50(self) -> float:
        return self.map_at(0.5)

    @property
    def map75(self) -> float:
        return self.map_at(0.75)

    @property
    def map50_95(self) -> float:
        """mAP averaged over IoU 0.50, 0.55, ..., 0.95; all ten must have been evaluated."""
        missing = [t for t in IOU_THRESHOLDS_50_95 if self._find(t) is None]
        if missing:
            raise ValueError(
                f"map50_95 needs IoU thresholds 0.50:0.05:0.95, but {missing} were not evaluated; "
                "call evaluate(..., iou_threshold=obbmeta.eval.IOU_THRESHOLDS_50_95)"
            )
        return _mean([self.map_at(t) for t in IOU_THRESHOLDS_50_95])

    # --- per-class views at iou_thresholds[0] --------------------------------------------------------------
    @property
    def precision(self) -> Dict[int, np.ndarray]:
        return self._per_class({c: e.precision[0] for c, e in self.classes.items()}, lambda e: e.precision[0])

    @property
    def recall(self) -> Dict[int, np.ndarray]:
        return self._per_class({c: e.recall[0] for c, e in self.classes.items()}, lambda e: e.recall[0])

    @property
    def num_gt(self) -> Dict[int, int]:
        return self._per_class({c: e.num_gt for c, e in self.classes.items()}, lambda e: e.num_gt)

    @property
    def num_det(self) -> Dict[int, int]:
        return self._per_class({c: e.num_det for c, e in self.classes.items()}, lambda e: e.num_det)

    # --- output --------------------------------------------------------------------------------------------
    def to_dict(self, curves: bool = False) -> dict:
        """JSON-serialisable summary (NaN becomes None); ``curves=True`` adds precision/recall/scores lists."""
        out = {
            "metric": self.metric,
            "matching": self.matching,
            "iou_thresholds": list(self.iou_thresholds),
            "map": _json(self.map),
        }
        for key in ("map50", "map75", "map50_95"):
            try:
                out[key] = _json(getattr(self, key))
            except ValueError:
                pass
        out["classes"] = []
        for c, e in self.classes.items():
            row = {
                "id": c, "name": e.name, "num_gt": e.num_gt, "num_difficult": e.num_difficult, "num_det": e.num_det,
                "ap": _json(self.ap[c]), "ap_per_threshold": [_json(v) for v in e.ap],
                "num_tp": list(e.num_tp), "num_fp": list(e.num_fp),
            }
            if curves:
                for key in ("precision", "recall", "scores"):
                    row[key] = [[_json(v) for v in arr.tolist()] for arr in getattr(e, key)]
            out["classes"].append(row)
        return out

    def summary(self) -> str:
        """A plain-text table: one row per class, then the mAP."""
        head = f"{'class':>16} {'gt':>6} {'diff':>5} {'det':>7} {'AP':>7}"
        lines = [head]
        for c, e in self.classes.items():
            label = e.name if e.name is not None else str(c)
            ap = self.ap[c]
            lines.append(f"{label[:16]:>16} {e.num_gt:>6} {e.num_difficult:>5} {e.num_det:>7} "
                         f"{'-' if math.isnan(ap) else f'{ap:.4f}':>7}")
        if self.iou_thresholds == IOU_THRESHOLDS_50_95:
            span = "IoU 0.5:0.05:0.95"
        else:
            span = "IoU " + ", ".join(f"{t:g}" for t in self.iou_thresholds)
        lines.append(f"mAP ({self.metric}, {span}): {self.map:.4f}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"EvalResult(map={self.map:.4f}, classes={len(self.classes)}, metric={self.metric!r}, "
                f"iou_thresholds={self.iou_thresholds})")

    def _find(self, t: float) -> Optional[int]:
        for k, v in enumerate(self.iou_thresholds):
            if abs(v - float(t)) <= 1e-9:
                return k
        return None

    def _index(self, t: float) -> int:
        k = self._find(t)
        if k is None:
            raise ValueError(f"IoU threshold {t} was not evaluated; evaluated: {list(self.iou_thresholds)}")
        return k


def _ap(e: ClassEval) -> float:
    return float(np.mean(e.ap)) if e.num_gt else math.nan


def _mean(values) -> float:
    return float(np.mean(values)) if len(values) else math.nan


def _json(v: float):
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)
