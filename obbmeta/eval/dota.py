"""DOTA / PASCAL VOC average precision for oriented boxes, on the exact polygon IoU of :mod:`obbmeta.ops`.

How a detection is scored, per class and per IoU threshold ``t``:

1. The detections of the class in all images are ranked by descending score; ties keep input order (image order,
   then order within the image): a stable sort, where the DOTA devkit and mmrotate use an unstable one.
2. Each detection is compared with the ground truths of its own image and class (``box_iou_rotated``, exact).
   ``matching="voc"`` (DOTA devkit, VOC devkit, mmrotate): it takes the ground truth it overlaps most (IoU ties:
   the earlier ground truth); if that IoU >= t it is a true positive, unless that ground truth is difficult (the
   detection is ignored: neither TP nor FP) or was already taken by a higher-ranked detection (false positive).
   ``matching="coco"``: it takes the not-yet-taken, non-difficult ground truth with the highest IoU >= t (true
   positive); failing that, a difficult one with IoU >= t (ignored; difficult ground truths are never used up);
   failing that, it is a false positive. The two differ only when a detection overlaps two ground truths.
   The comparison is ``IoU >= t`` (VOC, COCO, mmrotate); the DOTA devkit's ``>`` differs only at exact equality.
3. Recall = TP / (non-difficult ground truths), precision = TP / (TP + FP), cumulated down the ranking; ignored
   detections are left out of the curve (keeping them, as the devkit does, repeats a point and changes no AP).
4. AP: ``metric="area"`` is the area under the monotone precision envelope (VOC 2010+); ``metric="voc07"`` is the
   mean over recall r in {0, 0.1, ..., 1} of the highest precision at recall >= r (0 where none).
"""
from __future__ import annotations

import math
from typing import Mapping, Optional, Sequence, Union

import numpy as np
import torch

from .._validators import int_in_range, is_number
from ..boxes import OrientedBoxes
from ..ops import box_iou_rotated
from .result import ClassEval, EvalResult

METRICS = ("area", "voc07")
MATCHINGS = ("voc", "coco")

# The 11 recall points are exactly k/10. The Python devkits (DOTA, py-faster-rcnn, mmdet/mmrotate) use
# np.arange(0, 1.1, 0.1), whose 0.3, 0.6 and 0.7 are one ulp above the decimal: when a recall equals 3/10, 3/5
# or 7/10 exactly they skip that point and can report less.
_VOC07_RECALLS = np.arange(11) / 10.0

_FP, _TP, _IGNORED = 0, 1, 2
# Above this many detection x ground-truth pairs in one image, IoU is computed per class instead of all at once.
_MAX_PAIRS = 1 << 20
#: The most classes ``evaluate(num_classes=...)`` (or ``len(class_names)``) may ask for: the result holds one
#: ClassEval per class in range(num_classes), so a count like 10**9 is refused rather than attempted. Labels
#: themselves are not bounded: without num_classes the classes scored are the labels present, whatever their value.
MAX_NUM_CLASSES = 1 << 16


def average_precision(recall, precision, metric: str = "area") -> float:
    """AP of one precision/recall curve (points in ranking order, as in :class:`ClassEval`).

    ``metric="area"``: the area under the monotone envelope ``p(r) = max precision at recall >= r``, summed where
    recall changes (VOC 2010+, DOTA devkit's ``use_07_metric=False``). ``metric="voc07"``: the mean of that
    envelope at r = 0, 0.1, ..., 1 (0 beyond the last recall). An empty curve gives 0.
    """
    _check_choice("metric", metric, METRICS)
    recall = np.asarray(recall, dtype=np.float64)
    precision = np.asarray(precision, dtype=np.float64)
    if recall.ndim != 1 or recall.shape != precision.shape:
        raise ValueError(
            f"recall and precision must be 1-D arrays of one length, got shapes {recall.shape} and {precision.shape}"
        )
    if metric == "voc07":
        # envelope[i] = max precision at points i..end; the first point with recall >= r gives p(r).
        envelope = np.maximum.accumulate(precision[::-1])[::-1]
        total = 0.0
        for r in _VOC07_RECALLS:
            i = np.flatnonzero(recall >= r)
            total += envelope[i[0]] if i.size else 0.0
        return float(total / 11.0)
    mrec = np.concatenate(([0.0], recall, [1.0]))
    mpre = np.concatenate(([0.0], precision, [0.0]))
    mpre = np.maximum.accumulate(mpre[::-1])[::-1]
    step = np.flatnonzero(mrec[1:] != mrec[:-1])
    return float(np.sum((mrec[step + 1] - mrec[step]) * mpre[step + 1]))


def evaluate(
    detections: Sequence[OrientedBoxes],
    ground_truths: Sequence[OrientedBoxes],
    *,
    iou_threshold: Union[float, Sequence[float]] = 0.5,
    metric: str = "area",
    difficult: Optional[Sequence] = None,
    num_classes: Optional[int] = None,
    class_names: Optional[Union[Sequence[str], Mapping[int, str]]] = None,
    matching: str = "voc",
) -> EvalResult:
    """Per-class AP and mAP of oriented detections (DOTA / VOC protocol; see the module docstring for the rules).

    Args:
        detections: one :class:`~obbmeta.OrientedBoxes` per image (CPU or CUDA; copied to the host once per image,
            the evaluation runs on the CPU).
        ground_truths: one ``OrientedBoxes`` per image, same length; their scores are ignored.
        iou_threshold: a number in (0, 1], or a sequence of them, e.g. :data:`obbmeta.eval.IOU_THRESHOLDS_50_95` for
            AP@0.5:0.95 (all thresholds are scored in one pass; ``EvalResult.map50_95`` then reads it).
        metric: ``"area"`` (all-point AP, VOC 2010+) or ``"voc07"`` (11-point AP). The DOTA devkit's server
            numbers and mmrotate's DOTA metric use ``"voc07"``.
        difficult: None, or one boolean array-like per image with one flag per ground truth: difficult ground
            truths are not counted in recall and detections matched to them are ignored.
        num_classes: classes are 0..num_classes-1 (labels outside raise ValueError), at most
            :data:`MAX_NUM_CLASSES` (65536; the result holds one entry per class). Default: ``len(class_names)``
            when given (the same bound), else the labels present in the ground truths and detections: then any
            int64 label >= 0 is a class id, and the work and memory follow the classes present, not their values.
        class_names: names for the report, a sequence indexed by class id or a mapping id -> name.
        matching: ``"voc"`` (default, DOTA devkit / mmrotate) or ``"coco"`` (best still-unmatched ground truth).

    Returns:
        :class:`EvalResult`. ``res.ap[c]`` is class c's AP averaged over the IoU thresholds (NaN when the class
        has no non-difficult ground truth); ``res.map`` averages it over the classes that have at least one
        non-difficult ground truth (classes with only detections, or only difficult ground truths, are left out,
        as in mmrotate); NaN when no class has any.
    """
    thresholds = _thresholds(iou_threshold)
    _check_choice("metric", metric, METRICS)
    _check_choice("matching", matching, MATCHINGS)
    dets = _image_list("detections", detections)
    gts = _image_list("ground_truths", ground_truths)
    if len(dets) != len(gts):
        raise ValueError(
            f"detections and ground_truths must have one entry per image each, got {len(dets)} and {len(gts)}"
        )
    flags = _difficult_flags(difficult, gts)
    names = _class_names(class_names)
    limit = f"num_classes={num_classes}"
    if num_classes is None and isinstance(class_names, Sequence):
        num_classes = len(class_names)
        limit = f"len(class_names)={num_classes}"
    if num_classes is not None:
        what = "len(class_names)" if limit.startswith("len") else "num_classes"
        form = "a positive int <= 65536 (MAX_NUM_CLASSES: the result holds one entry per class)"
        num_classes = int_in_range(what, num_classes, 1, MAX_NUM_CLASSES, form=form, numpy_ints=True)

    det_arrays = [_host_arrays(f"detections[{i}]", b, scores=True) for i, b in enumerate(dets)]
    gt_arrays = [_host_arrays(f"ground_truths[{i}]", b, scores=False) for i, b in enumerate(gts)]
    for kind, arrays in (("detections", det_arrays), ("ground_truths", gt_arrays)):
        for i, (_, _, labels) in enumerate(arrays):
            if labels.size and labels.min() < 0:
                raise ValueError(f"{kind}[{i}].labels must be class ids >= 0, got {int(labels.min())}")
            if num_classes is not None and labels.size and labels.max() >= num_classes:
                raise ValueError(
                    f"{kind}[{i}].labels must be < {limit}, got {int(labels.max())}"
                )

    thr = np.asarray(thresholds)
    scores = np.concatenate([d[1] for d in det_arrays]) if det_arrays else np.zeros(0)
    labels = np.concatenate([d[2] for d in det_arrays]) if det_arrays else np.zeros(0, np.int64)
    gt_labels = np.concatenate([g[2] for g in gt_arrays]) if gt_arrays else np.zeros(0, np.int64)
    gt_difficult = np.concatenate(flags) if flags else np.zeros(0, bool)
    # One stable global ranking: class, then descending score, then input order (image, index in the image).
    order = np.lexsort((np.arange(len(scores)), -scores, labels))

    # Matching never crosses images: each image's IoU blocks are scored alone.
    if matching == "voc":
        best_iou = np.full(len(scores), -1.0)  # the IoU with the best same-class ground truth (-1: none)
        best_gt = np.zeros(len(scores), np.int64)  # its index among all images' ground truths
        det_start = gt_start = 0
        for (d_xywhr, _, d_labels), (g_xywhr, _, g_labels) in zip(det_arrays, gt_arrays):
            for d_idx, g_idx, iou in _iou_blocks(d_xywhr, d_labels, g_xywhr, g_labels):
                j = iou.argmax(axis=1)  # ties: the earlier ground truth
                best_iou[det_start + d_idx] = iou[np.arange(len(j)), j]
                best_gt[det_start + d_idx] = gt_start + g_idx[j]
            det_start += len(d_labels)
            gt_start += len(g_labels)
        ranked_outcome = _outcome_voc(best_iou[order], best_gt[order], gt_difficult, thr)
    else:
        outcome = np.full((len(scores), len(thr)), _FP, np.int8)
        det_start = 0
        for (d_xywhr, d_scores, d_labels), (g_xywhr, _, g_labels), g_diff in zip(det_arrays, gt_arrays, flags):
            for d_idx, g_idx, iou in _iou_blocks(d_xywhr, d_labels, g_xywhr, g_labels):
                rank = np.argsort(-d_scores[d_idx], kind="stable")  # this image's share of the global ranking
                outcome[det_start + d_idx[rank]] = _outcome_coco(iou[rank], g_diff[g_idx], thr)
            det_start += len(d_labels)
        ranked_outcome = outcome[order]

    if num_classes is not None:
        class_ids = list(range(num_classes))
    else:
        class_ids = sorted(set(labels.tolist()) | set(gt_labels.tolist()))
    ranked_labels, ranked_scores = labels[order], scores[order]
    # Counted over the labels present (not np.bincount, whose length is the largest label: 2**40 asks for 8 TiB).
    num_gt = _counts(gt_labels[~gt_difficult])
    num_difficult = _counts(gt_labels[gt_difficult])
    classes = {}
    for c in class_ids:
        lo, hi = np.searchsorted(ranked_labels, [c, c + 1]) if c < _INT64_MAX else (
            np.searchsorted(ranked_labels, c), len(ranked_labels))  # c + 1 would not fit in int64
        classes[c] = _class_eval(c, names.get(c), num_gt.get(c, 0), num_difficult.get(c, 0),
                                 ranked_outcome[lo:hi], ranked_scores[lo:hi], thresholds, metric)
    return EvalResult(iou_thresholds=thresholds, metric=metric, matching=matching, classes=classes,
                      num_classes=num_classes, class_names=names)


_INT64_MAX = int(np.iinfo(np.int64).max)


def _counts(labels) -> dict:
    """Class id -> how many times it occurs in ``labels``, for the ids present only."""
    ids, counts = np.unique(labels, return_counts=True)
    return dict(zip(ids.tolist(), counts.tolist()))


def _iou_blocks(d_xywhr, d_labels, g_xywhr, g_labels):
    """Yield (det indices, gt indices, float64 IoU) covering every same-class pair of one image; pairs of different
    classes inside a block have IoU -1. One call for the whole image while it is small (per-call overhead
    dominates there), one per class when the image's matrix would exceed _MAX_PAIRS."""
    if not len(d_labels) or not len(g_labels):
        return
    if len(d_labels) * len(g_labels) <= _MAX_PAIRS:
        iou = box_iou_rotated(d_xywhr, g_xywhr).numpy().astype(np.float64)
        iou[d_labels[:, None] != g_labels[None, :]] = -1.0
        yield np.arange(len(d_labels)), np.arange(len(g_labels)), iou
        return
    for c in np.intersect1d(d_labels, g_labels):
        d_idx, g_idx = np.flatnonzero(d_labels == c), np.flatnonzero(g_labels == c)
        yield d_idx, g_idx, box_iou_rotated(d_xywhr[d_idx], g_xywhr[g_idx]).numpy().astype(np.float64)


def _outcome_voc(best_iou, best_gt, gt_difficult, thr) -> np.ndarray:
    """Ranked detections, each with the IoU and index of its best ground truth -> (n, T) outcomes: the first
    detection to reach a ground truth at IoU >= t takes it, later ones are FP; reaching a difficult one: ignored."""
    out = np.full((len(best_iou), len(thr)), _FP, np.int8)
    difficult = np.zeros(len(best_iou), bool)
    has_gt = best_iou >= 0
    difficult[has_gt] = gt_difficult[best_gt[has_gt]]
    for k, t in enumerate(thr):
        hit = best_iou >= t  # float32 IoU compared in float64
        out[hit & difficult, k] = _IGNORED
        cand = np.flatnonzero(hit & ~difficult)
        _, first = np.unique(best_gt[cand], return_index=True)  # the highest-ranked claimant of each ground truth
        out[cand[first], k] = _TP
    return out


def _outcome_coco(iou, diff, thr) -> np.ndarray:
    """One image's ranked detections (rows) -> (n, T) outcomes: each takes the best untaken non-difficult ground
    truth with IoU >= t, else is ignored if a difficult one reaches t, else is FP; all thresholds at once."""
    n_thr = len(thr)
    taken = np.zeros((n_thr, iou.shape[1]), bool)
    out = np.full((len(iou), n_thr), _FP, np.int8)
    rows = np.arange(n_thr)
    for d in np.flatnonzero(iou.max(axis=1) >= thr.min()):  # the others reach nothing: FP at every threshold
        reach = iou[d][None, :] >= thr[:, None]  # (T, G)
        free = reach & ~diff & ~taken
        j = np.where(free, iou[d], -1.0).argmax(axis=1)  # ties: the earlier ground truth
        hit = free[rows, j]
        taken[rows[hit], j[hit]] = True
        out[d, hit] = _TP
        out[d, ~hit & (reach & diff).any(axis=1)] = _IGNORED
    return out


def _class_eval(c, name, num_gt, num_difficult, outcome, scores, thresholds, metric) -> ClassEval:
    aps, tps, fps, precisions, recalls, kept_scores = [], [], [], [], [], []
    for k in range(len(thresholds)):
        keep = outcome[:, k] != _IGNORED
        is_tp = outcome[keep, k] == _TP
        tp = np.cumsum(is_tp)
        fp = np.cumsum(~is_tp)
        precision = tp / np.maximum(tp + fp, 1)
        if num_gt:
            recall = tp / num_gt
            ap = average_precision(recall, precision, metric)
        else:
            recall, ap = np.full(tp.shape, np.nan), math.nan
        aps.append(ap)
        tps.append(int(tp[-1]) if tp.size else 0)
        fps.append(int(fp[-1]) if fp.size else 0)
        precisions.append(precision)
        recalls.append(recall)
        kept_scores.append(scores[keep])
    return ClassEval(
        class_id=int(c), name=name, num_gt=num_gt, num_difficult=num_difficult, num_det=len(scores),
        ap=tuple(aps), num_tp=tuple(tps), num_fp=tuple(fps),
        precision=tuple(precisions), recall=tuple(recalls), scores=tuple(kept_scores),
    )


# --- argument checks ---------------------------------------------------------------------------------------------
def _check_choice(name, value, choices):
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")


def _thresholds(value) -> tuple:
    values = [value] if is_number(value, numpy_numbers=True) else value
    if isinstance(values, np.ndarray) or hasattr(values, "numel"):  # a NumPy array or a tensor of thresholds
        values = np.asarray(values.detach().cpu() if hasattr(values, "detach") else values)
        values = values.ravel().tolist() if values.dtype.kind in "iuf" else [values]
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or \
            not all(is_number(v, numpy_numbers=True) for v in values):
        raise TypeError(f"iou_threshold must be a number in (0, 1] or a sequence of them, got {value!r}")
    values = [float(v) for v in values]
    if not values:
        raise ValueError("iou_threshold must not be an empty sequence")
    for v in values:
        if not 0.0 < v <= 1.0:
            raise ValueError(f"iou_threshold values must be in (0, 1], got {v}")
    if len(set(values)) != len(values):
        raise ValueError(f"iou_threshold values must be distinct, got {values}")
    return tuple(values)


def _image_list(name, value) -> list:
    if isinstance(value, OrientedBoxes) or not isinstance(value, Sequence) or isinstance(value, str):
        raise TypeError(
            f"{name} must be a sequence of OrientedBoxes, one per image (wrap a single image as [boxes]), "
            f"got {type(value).__name__}"
        )
    for i, item in enumerate(value):
        if not isinstance(item, OrientedBoxes):
            raise TypeError(f"{name}[{i}] must be OrientedBoxes, got {type(item).__name__}")
    return list(value)


def _host_arrays(name, boxes: OrientedBoxes, *, scores: bool):
    """(xywhr float32 CPU tensor, scores float64, labels int64) of one image (either backing), checked for NaN/inf."""
    host = boxes.numpy()
    if not np.isfinite(host.xywhr).all():  # numpy: far less per-call overhead than torch on small arrays
        raise ValueError(f"{name}.xywhr contains NaN or inf; every box must be finite")
    s = host.scores.astype(np.float64)
    if scores and s.size and not np.isfinite(s).all():
        raise ValueError(f"{name}.scores contains NaN or inf; scores rank the detections and must be finite")
    return torch.from_numpy(np.ascontiguousarray(host.xywhr)), s, host.labels


def _difficult_flags(difficult, gts) -> list:
    if difficult is None:
        return [np.zeros(len(g), bool) for g in gts]
    if isinstance(difficult, (str, bytes)) or not isinstance(difficult, Sequence) or len(difficult) != len(gts):
        raise ValueError(
            f"difficult must be None or a sequence of {len(gts)} boolean arrays (one per image, one flag per "
            f"ground truth), got {type(difficult).__name__}"
            + (f" of length {len(difficult)}" if isinstance(difficult, Sequence) else "")
        )
    flags = []
    for i, (d, g) in enumerate(zip(difficult, gts)):
        a = d.detach().cpu().numpy() if isinstance(d, torch.Tensor) else np.asarray(d)
        if a.size == 0:
            a = a.reshape(0)
        if a.shape != (len(g),) or not (a.dtype == bool or np.isin(a, (0, 1)).all()):
            raise ValueError(
                f"difficult[{i}] must hold {len(g)} booleans (one per ground truth of image {i}), "
                f"got shape {a.shape} dtype {a.dtype}"
            )
        flags.append(a.astype(bool))
    return flags


def _class_names(class_names) -> dict:
    if class_names is None:
        return {}
    if isinstance(class_names, Mapping):
        return {int(k): str(v) for k, v in class_names.items()}
    if isinstance(class_names, str) or not isinstance(class_names, Sequence):
        raise TypeError(
            f"class_names must be a sequence of names indexed by class id or a mapping id -> name, "
            f"got {type(class_names).__name__}"
        )
    return {i: str(n) for i, n in enumerate(class_names)}
