"""evaluate() agrees with a plain-Python shapely evaluation (eval_reference.py) on random scenes."""
import math
from unittest import mock

import eval_reference
import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from scenes import assume_unambiguous, scenes, to_boxes

from obbmeta.eval import IOU_THRESHOLDS_50_95, dota, evaluate

THRESHOLDS = st.sampled_from([(0.5,), IOU_THRESHOLDS_50_95, (0.3, 0.7)])
METRICS = st.sampled_from(["area", "voc07"])
MATCHINGS = st.sampled_from(["voc", "coco"])


def assert_same(res, expected):
    assert sorted(res.classes) == sorted(expected)
    for c, row in expected.items():
        e = res.classes[c]
        assert (e.num_gt, e.num_det) == (row["num_gt"], row["num_det"])
        for k in range(len(res.iou_thresholds)):
            np.testing.assert_allclose(e.precision[k], row["precision"][k], rtol=0, atol=1e-12)
            np.testing.assert_allclose(e.recall[k], row["recall"][k], rtol=0, atol=1e-12)
            if math.isnan(row["ap"][k]):
                assert math.isnan(e.ap[k])
            else:
                assert abs(e.ap[k] - row["ap"][k]) <= 1e-12
    with_gt = [np.mean(row["ap"]) for row in expected.values() if row["num_gt"]]
    assert (math.isnan(res.map) and not with_gt) or abs(res.map - np.mean(with_gt)) <= 1e-12


def check(scene, thresholds, metric, matching):
    detections, ground_truths = scene
    assume_unambiguous(detections, ground_truths, thresholds)
    dets, gts, difficult = to_boxes(detections, ground_truths)
    res = evaluate(dets, gts, difficult=difficult, iou_threshold=thresholds, metric=metric, matching=matching)
    assert_same(res, eval_reference.evaluate(detections, ground_truths, thresholds, metric, matching))


@given(scenes(), THRESHOLDS, METRICS, MATCHINGS)
def test_matches_the_shapely_reference(scene, thresholds, metric, matching):
    check(scene, thresholds, metric, matching)


@given(scenes(max_images=2), THRESHOLDS, METRICS, MATCHINGS)
def test_large_images_scored_class_by_class_match_the_shapely_reference(scene, thresholds, metric, matching):
    # Past dota._MAX_PAIRS detection x ground-truth pairs an image's IoU is computed per class; 0 forces that path.
    with mock.patch.object(dota, "_MAX_PAIRS", 0):
        check(scene, thresholds, metric, matching)
