"""Cross-checks against mmrotate 1.x (onedl-mmrotate) when it is installed; skipped otherwise."""
import math

import numpy as np
import pytest
import torch

from obbmeta import OrientedBoxes, conventions

bbox = pytest.importorskip("mmrotate.structures.bbox", reason="mmrotate 1.x is not installed")


def boxes(n=400, seed=0):
    rng = np.random.default_rng(seed)
    x = torch.tensor(np.c_[rng.uniform(0, 500, (n, 2)), rng.uniform(2, 100, (n, 2)), rng.uniform(-7, 7, n)])
    # away from the quarter-turn range ends, where either side may round to the other end
    phase = torch.remainder(x[:, 4], math.pi / 4)
    return x[(phase > 1e-6) & (phase < math.pi / 4 - 1e-6)]


@pytest.mark.parametrize("pattern, ours", [("le90", conventions.to_le90), ("le135", conventions.to_le135),
                                           ("oc", conventions.to_mmrotate1_oc)])
def test_regularize_boxes_matches_mmrotate(pattern, ours):
    x = boxes()
    theirs = bbox.RotatedBoxes(x.clone()).regularize_boxes(pattern)
    torch.testing.assert_close(ours(x), theirs, atol=1e-9, rtol=0)


def test_rbox2qbox_gives_our_corners():
    x = boxes(seed=1).float()
    theirs = bbox.rbox2qbox(x).reshape(-1, 4, 2)
    ours = OrientedBoxes(x, torch.ones(len(x)), torch.zeros(len(x), dtype=torch.int64)).polygons()
    # the same four corners, compared as point sets (the two libraries may start at different corners)
    for a, b in zip(theirs, ours):
        d = torch.cdist(a.double(), b.double())
        assert float(d.min(dim=1).values.max()) < 1e-3


def test_from_mmrotate_reads_a_real_det_data_sample():
    from mmdet.structures import DetDataSample
    from mmengine.structures import InstanceData

    x = boxes(20, seed=2).float()
    inst = InstanceData(bboxes=bbox.RotatedBoxes(x), scores=torch.linspace(1, 0.05, len(x)),
                        labels=torch.arange(len(x)) % 3)
    sample = DetDataSample(pred_instances=inst)
    got = OrientedBoxes.from_mmrotate(sample, score_thr=0.5)
    keep = inst.scores > 0.5
    assert torch.equal(got.xywhr, x[keep]) and torch.equal(got.labels, inst.labels[keep])


@pytest.mark.parametrize("pattern, ours", [("le90", conventions.to_le90), ("le135", conventions.to_le135)])
def test_squares_match_mmrotate_value_for_value(pattern, ours):
    x = boxes(seed=3)
    x[:, 3] = x[:, 2]  # w == h: mmrotate swaps and adds pi/2
    theirs = bbox.RotatedBoxes(x.clone()).regularize_boxes(pattern)
    torch.testing.assert_close(ours(x), theirs, atol=1e-9, rtol=0)


def test_an_axis_aligned_square_hbox_is_angle_zero_as_mmrotate_makes_it():
    # mmrotate 1.x hbox2rbox (and 0.x hbb2obb with le90 / le135) keep an axis-aligned square at angle 0, w == h.
    square = torch.tensor([[10.0, 20.0, 50.0, 60.0]], dtype=torch.float64)
    torch.testing.assert_close(conventions.from_hbb(square, "le90"), bbox.hbox2rbox(square), atol=0, rtol=0)
    torch.testing.assert_close(conventions.from_hbb(square, "le135"), bbox.hbox2rbox(square), atol=0, rtol=0)


def test_hboxes_in_le90_match_mmrotate_hbox2rbox_then_le90_for_rectangles():
    rng = np.random.default_rng(4)
    xy = rng.uniform(0, 500, (200, 2))
    wh = rng.uniform(2, 100, (200, 2))
    hbb = torch.tensor(np.c_[xy, xy + wh])
    theirs = bbox.RotatedBoxes(bbox.hbox2rbox(hbb)).regularize_boxes("le90")  # w != h here: the rectangle rule
    torch.testing.assert_close(conventions.from_hbb(hbb, "le90"), theirs, atol=1e-9, rtol=0)
