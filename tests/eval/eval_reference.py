"""A slow, obviously-correct DOTA/VOC evaluation: shapely polygons, plain Python loops, nothing from obbmeta.eval.

Scenes are plain lists: per image, ground truths ``[(box, label, difficult)]`` and detections
``[(box, score, label)]`` with ``box = (cx, cy, w, h, angle)`` (radians, clockwise on screen).
"""
from __future__ import annotations

import math

import reference  # tests/reference.py: shapely rectangles


def ranked(detections, c):
    """Detections of class c over all images: (score, image, index, box), by descending score, ties in input order."""
    rows = [(score, i, k, box) for i, image in enumerate(detections) for k, (box, score, label) in enumerate(image)
            if label == c]
    return sorted(rows, key=lambda r: (-r[0], r[1], r[2]))


def outcomes(detections, ground_truths, c, t, matching):
    """True (TP), False (FP) or None (ignored) for each ranked detection of class c at IoU threshold t."""
    taken = set()
    result = []
    for _, i, _, box in ranked(detections, c):
        cands = [(j, reference.iou(box, g), diff) for j, (g, label, diff) in enumerate(ground_truths[i]) if label == c]
        if matching == "voc":
            best_j, best_iou = None, -1.0
            for j, v, _ in cands:
                if v > best_iou:  # strict: the earlier ground truth wins a tie
                    best_j, best_iou = j, v
            if best_j is None or best_iou < t:
                result.append(False)
            elif ground_truths[i][best_j][2]:
                result.append(None)
            elif (i, best_j) in taken:
                result.append(False)
            else:
                taken.add((i, best_j))
                result.append(True)
        else:  # "coco": best free non-difficult ground truth, else a difficult one, else FP
            best_j, best_iou = None, -1.0
            for j, v, diff in cands:
                if v >= t and not diff and (i, j) not in taken and v > best_iou:
                    best_j, best_iou = j, v
            if best_j is not None:
                taken.add((i, best_j))
                result.append(True)
            elif any(v >= t and diff for _, v, diff in cands):
                result.append(None)
            else:
                result.append(False)
    return result


def curve(flags, num_gt):
    tp = fp = 0
    precision, recall = [], []
    for f in flags:
        if f is None:
            continue
        tp += f
        fp += not f
        precision.append(tp / (tp + fp))
        recall.append(tp / num_gt if num_gt else math.nan)
    return precision, recall


def average_precision(precision, recall, metric):
    if metric == "voc07":
        total = 0.0
        for k in range(11):
            r = k / 10
            total += max([p for p, q in zip(precision, recall) if q >= r], default=0.0)
        return total / 11
    ap, previous = 0.0, 0.0
    for i, r in enumerate(recall):
        if r > previous:
            ap += (r - previous) * max(precision[i:])
            previous = r
    return ap


def evaluate(detections, ground_truths, thresholds, metric, matching):
    """{class: {"num_gt", "num_det", "ap": [per threshold], "precision": [...], "recall": [...]}}."""
    classes = sorted({label for image in detections for _, _, label in image}
                     | {label for image in ground_truths for _, label, _ in image})
    out = {}
    for c in classes:
        num_gt = sum(1 for image in ground_truths for _, label, diff in image if label == c and not diff)
        row = {"num_gt": num_gt, "num_det": len(ranked(detections, c)), "ap": [], "precision": [], "recall": []}
        for t in thresholds:
            precision, recall = curve(outcomes(detections, ground_truths, c, t, matching), num_gt)
            row["ap"].append(average_precision(precision, recall, metric) if num_gt else math.nan)
            row["precision"].append(precision)
            row["recall"].append(recall)
        out[c] = row
    return out
