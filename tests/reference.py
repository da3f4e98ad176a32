"""Slow, obviously-correct references built on shapely (exact polygon arithmetic), independent of obbmeta."""
from __future__ import annotations

import math

import numpy as np
from shapely import affinity
from shapely.geometry import Polygon
from shapely.geometry import box as shapely_box


def rect(cx, cy, w, h, angle) -> Polygon:
    """The rectangle of one [cx, cy, w, h, angle] row: radians, clockwise on screen (y down).

    In image coordinates that is the standard rotation matrix [[cos, -sin], [sin, cos]], which is what shapely's
    rotate applies for a positive angle."""
    cx, cy, w, h, angle = (float(v) for v in (cx, cy, w, h, angle))
    p = shapely_box(-w / 2, -h / 2, w / 2, h / 2)
    p = affinity.rotate(p, angle, origin=(0, 0), use_radians=True)
    return affinity.translate(p, cx, cy)


def iou(a, b) -> float:
    pa, pb = rect(*a), rect(*b)
    if pa.area <= 0 or pb.area <= 0:
        return 0.0
    inter = pa.intersection(pb).area
    return inter / (pa.area + pb.area - inter)


def iou_matrix(boxes1, boxes2) -> np.ndarray:
    return np.array([[iou(a, b) for b in boxes2] for a in boxes1], dtype=np.float64).reshape(len(boxes1), len(boxes2))


def greedy_nms(boxes, scores, threshold, labels=None) -> list:
    """Textbook greedy NMS: by descending score (ties: lower index first), drop IoU > threshold."""
    boxes = np.asarray(boxes, dtype=np.float64)
    order = sorted(range(len(boxes)), key=lambda i: (-float(scores[i]), i))
    polys = [rect(*b) for b in boxes]
    keep = []
    for i in order:
        ok = True
        for k in keep:
            if labels is not None and int(labels[k]) != int(labels[i]):
                continue
            if polys[i].area <= 0 or polys[k].area <= 0:
                continue
            inter = polys[i].intersection(polys[k]).area
            if inter / (polys[i].area + polys[k].area - inter) > threshold:
                ok = False
                break
        if ok:
            keep.append(i)
    return keep


def clustered_scene(n: int, seed: int, extent: float = 2000.0, spread: float = 30.0):
    """n boxes in clusters of ~8 jittered copies (what a detector emits before NMS)."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0, extent, size=(max(1, n // 8), 2))
    which = rng.integers(0, len(centres), size=n)
    xy = centres[which] + rng.normal(0, spread * 0.2, size=(n, 2))
    base_wh = rng.uniform(10, 80, size=(len(centres), 2))
    wh = base_wh[which] * rng.uniform(0.85, 1.15, size=(n, 2))
    base_a = rng.uniform(-np.pi, np.pi, size=len(centres))
    a = base_a[which] + rng.normal(0, 0.1, size=n)
    boxes = np.concatenate([xy, wh, a[:, None]], axis=1).astype(np.float32)
    scores = rng.uniform(0.05, 1.0, size=n).astype(np.float32)
    labels = rng.integers(0, 3, size=n)
    return boxes, scores, labels


def corners(b) -> list:
    """The 4 corners of [cx, cy, w, h, angle] in float64: c + R(a)(sx w/2, sy h/2), starting at (-,-), clockwise
    on screen (the documented order), written out by hand rather than taken from obbmeta."""
    cx, cy, w, h, a = (float(v) for v in b)
    c, s = math.cos(a), math.sin(a)
    return [(cx + c * sx * w / 2 - s * sy * h / 2, cy + s * sx * w / 2 + c * sy * h / 2)
            for sx, sy in ((-1, -1), (1, -1), (1, 1), (-1, 1))]


def aabb(b) -> tuple:
    """(x1, y1, x2, y2) around :func:`corners`."""
    pts = corners(b)
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    return min(xs), min(ys), max(xs), max(ys)
