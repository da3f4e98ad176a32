"""Random evaluation scenes for hypothesis: overlapping ground truths, jittered detections, background clutter."""
from __future__ import annotations

import numpy as np
import reference
import torch
from hypothesis import assume
from hypothesis import strategies as st

from obbmeta import OrientedBoxes


def f32(v) -> float:
    return float(np.float32(v))


@st.composite
def box_near(draw, extent):
    return tuple(f32(v) for v in (draw(st.floats(0, extent)), draw(st.floats(0, extent)),
                                  draw(st.floats(4, 60)), draw(st.floats(4, 60)), draw(st.floats(-3.2, 3.2))))


@st.composite
def jittered(draw, box):
    """`box` moved, resized and turned a little or a lot (IoU with it anywhere from 0 to 1)."""
    cx, cy, w, h, a = box
    j = draw(st.sampled_from([0.1, 0.4]))
    return tuple(f32(v) for v in (cx + draw(st.floats(-j, j)) * w, cy + draw(st.floats(-j, j)) * h,
                                  w * draw(st.floats(1 - j, 1 + j)), h * draw(st.floats(1 - j, 1 + j)),
                                  a + draw(st.floats(-j, j))))


@st.composite
def scenes(draw, max_images=3, max_gt=6, max_det=10, num_classes=3):
    """(detections, ground_truths) as plain lists (see eval_reference)."""
    ground_truths, detections = [], []
    for _ in range(draw(st.integers(1, max_images))):
        extent = draw(st.sampled_from([40.0, 300.0]))  # crowded (overlapping ground truths) or sparse
        gts = []
        for _ in range(draw(st.integers(0, max_gt))):
            # A new object, or one overlapping an earlier one (where the matching rules differ).
            box = draw(jittered(gts[draw(st.integers(0, len(gts) - 1))][0])) if gts and draw(st.booleans()) \
                else draw(box_near(extent))
            gts.append((box, draw(st.integers(0, num_classes - 1)), draw(st.booleans())))
        dets = []
        for _ in range(draw(st.integers(0, max_det))):
            score = f32(draw(st.floats(0, 1)))
            if gts and draw(st.integers(0, 3)):
                box, label, _ = gts[draw(st.integers(0, len(gts) - 1))]
                label = label if draw(st.integers(0, 5)) else draw(st.integers(0, num_classes - 1))
                dets.append((draw(jittered(box)), score, label))
            else:
                dets.append((draw(box_near(extent)), score, draw(st.integers(0, num_classes - 1))))
        ground_truths.append(gts)
        detections.append(dets)
    return detections, ground_truths


def assume_unambiguous(detections, ground_truths, thresholds, tol=1e-4):
    """Skip scenes whose outcome hangs on float32 vs float64 IoU: an IoU within tol of a threshold, or two ground
    truths (not identical boxes) within tol of each other for one detection, which could swap their order."""
    for dets, gts in zip(detections, ground_truths):
        for box, _, label in dets:
            ious = [(reference.iou(box, g), g) for g, gl, _ in gts if gl == label]
            for v, _ in ious:
                assume(all(abs(v - t) > tol for t in thresholds))
            for x in range(len(ious)):
                for y in range(x + 1, len(ious)):
                    if max(ious[x][0], ious[y][0]) >= min(thresholds) - tol and ious[x][1] != ious[y][1]:
                        assume(abs(ious[x][0] - ious[y][0]) > tol)


def to_boxes(detections, ground_truths):
    """The same scene as obbmeta inputs: (detections, ground_truths, difficult)."""
    def make(rows, box, score, label):
        return OrientedBoxes(torch.tensor([box(r) for r in rows], dtype=torch.float32).reshape(-1, 5),
                             torch.tensor([score(r) for r in rows], dtype=torch.float32),
                             torch.tensor([label(r) for r in rows], dtype=torch.int64))

    dets = [make(d, lambda r: r[0], lambda r: r[1], lambda r: r[2]) for d in detections]
    gts = [make(g, lambda r: r[0], lambda r: 1.0, lambda r: r[1]) for g in ground_truths]
    difficult = [np.array([r[2] for r in g], dtype=bool) for g in ground_truths]
    return dets, gts, difficult
