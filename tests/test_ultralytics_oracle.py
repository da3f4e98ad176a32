"""Cross-checks against Ultralytics (AGPL-3.0, never a dependency: an optional oracle, skipped when it is not
installed; benchmarks/setup_comparators.sh installs it)."""
import math

import numpy as np
import pytest
import reference
import torch

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


def test_legacy_regularize_on_squares_matches_the_formula_ultralytics_used_up_to_8_3_79():
    """Ultralytics 8.3.79 and earlier kept (w, h, t) only when w > h, else (h, w, t + pi/2), then t mod pi; 8.4
    (installed here) no longer ships that form, so the fact is checked against its documented arithmetic."""
    x = data(200, seed=3)[:, :5].double()
    x[:, 3] = x[:, 2]
    expected = torch.stack((x[:, 0], x[:, 1], x[:, 2], x[:, 3], torch.remainder(x[:, 4] + math.pi / 2, math.pi)), -1)
    torch.testing.assert_close(conventions.ultralytics_regularize_legacy(x), expected, atol=1e-12, rtol=0)
