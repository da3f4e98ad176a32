"""Cross-checks against Ultralytics (AGPL-3.0, never a dependency: an optional oracle, skipped when it is not
installed; benchmarks/setup_comparators.sh installs it)."""
import math

import numpy as np
import pytest
import torch

import reference
from obbmeta import OrientedBoxes, conventions

results = pytest.importorskip("ultralytics.engine.results", reason="ultralytics is not installed")


def data(n=50, seed=0):
    rng = np.random.default_rng(seed)
    return torch.tensor(np.c_[rng.uniform(0, 640, (n, 2)), rng.uniform(2, 200, (n, 2)), rng.uniform(-4, 4, n),
                              rng.uniform(0, 1, n), rng.integers(0, 15, n)], dtype=torch.float32)


def test_from_ultralytics_reads_results_obb_and_its_data():
    d = data()
    obb = results.OBB(d, orig_shape=(480, 640))
    res = results.Results(np.zeros((480, 640, 3), np.uint8), path="x.jpg", names={i: str(i) for i in range(15)}, obb=d)
    for src in (obb, res, obb.data):
        boxes = OrientedBoxes.from_ultralytics(src)
        assert torch.equal(boxes.xywhr, obb.xywhr) and torch.equal(boxes.scores, obb.conf)
        assert boxes.labels.tolist() == obb.cls.long().tolist()


def test_ultralytics_corners_are_the_same_rectangles_as_ours():
    d = data(seed=1)
    theirs = results.OBB(d, orig_shape=(480, 640)).xyxyxyxy.double().numpy()
    ours = OrientedBoxes.from_ultralytics(d).polygons().double().numpy()
    from shapely.geometry import Polygon

    for a, b, box in zip(theirs, ours, d.tolist()):
        assert Polygon(a).symmetric_difference(Polygon(b)).area <= 1e-3 * box[2] * box[3]
        assert reference.rect(*box[:5]).symmetric_difference(Polygon(b)).area <= 1e-3 * box[2] * box[3]


def test_regularize_matches_ultralytics_regularize_rboxes():
    ops = pytest.importorskip("ultralytics.utils.ops")
    x = data(500, seed=2)[:, :5].double()
    x = x[(torch.remainder(x[:, 4], math.pi / 2) > 1e-9)]  # away from the range ends, where rounding may differ
    theirs = ops.regularize_rboxes(x.clone())
    torch.testing.assert_close(conventions.ultralytics_regularize(x), theirs, atol=1e-9, rtol=0)
