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



@given(scenes(), st.lists(st.integers(0, 2**63 - 1), min_size=3, max_size=3, unique=True), MATCHINGS)
def test_any_int64_class_ids_score_as_small_ones(scene, ids, matching):
    # Classes are scored over the labels present: relabelling 0, 1, 2 as any three distinct int64 ids (2**40,
    # 2**63 - 1, ...) changes no class's result, and nothing is allocated by the size of an id.
    detections, ground_truths = scene
    small = evaluate(*to_boxes(detections, ground_truths)[:2], difficult=to_boxes(detections, ground_truths)[2],
                     matching=matching)
    relabelled = ([[(box, score, ids[label]) for box, score, label in image] for image in detections],
                  [[(box, ids[label], hard) for box, label, hard in image] for image in ground_truths])
    dets, gts, difficult = to_boxes(*relabelled)
    big = evaluate(dets, gts, difficult=difficult, matching=matching)
    assert sorted(big.classes) == sorted(ids[c] for c in small.classes)
    for c, e in small.classes.items():
        f = big.classes[ids[c]]
        assert (f.num_gt, f.num_difficult, f.num_det, f.num_tp, f.num_fp) == \
            (e.num_gt, e.num_difficult, e.num_det, e.num_tp, e.num_fp)
        np.testing.assert_array_equal(f.ap, e.ap)
    assert (math.isnan(big.map) and math.isnan(small.map)) or big.map == small.map
