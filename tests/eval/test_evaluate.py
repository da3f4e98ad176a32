"""evaluate() on hand-made scenes whose AP is worked out by hand in each test."""
import json
import math

import numpy as np
import pytest
import torch

from obbmeta import OrientedBoxes
from obbmeta.eval import IOU_THRESHOLDS_50_95, EvalResult, evaluate
from obbmeta.ops import box_iou_rotated

FAR = [900.0, 900.0, 10.0, 10.0, 0.0]  # overlaps nothing in these scenes


def gts(*rows, labels=None):
    labels = [0] * len(rows) if labels is None else labels
    return OrientedBoxes(torch.tensor(rows, dtype=torch.float32).reshape(-1, 5), torch.ones(len(rows)),
                         torch.tensor(labels, dtype=torch.int64))


def dets(*rows, scores, labels=None):
    labels = [0] * len(rows) if labels is None else labels
    return OrientedBoxes(torch.tensor(rows, dtype=torch.float32).reshape(-1, 5), torch.tensor(scores),
                         torch.tensor(labels, dtype=torch.int64))


A = [50.0, 50.0, 40.0, 12.0, 0.4]
B = [200.0, 80.0, 30.0, 30.0, -1.0]
C = [120.0, 300.0, 60.0, 8.0, 2.5]
D = [400.0, 400.0, 22.0, 14.0, 0.1]
E = [300.0, 150.0, 18.0, 50.0, 1.2]


@pytest.mark.parametrize("metric", ["area", "voc07"])
def test_perfect_detections_give_ap_one_for_every_class(metric):
    g = [gts(A, B, labels=[0, 1]), gts(C, labels=[2])]
    d = [dets(A, B, scores=[0.9, 0.8], labels=[0, 1]), dets(C, scores=[0.7], labels=[2])]
    res = evaluate(d, g, metric=metric)
    assert res.ap == {0: 1.0, 1: 1.0, 2: 1.0}
    assert res.map == 1.0
    assert isinstance(res, EvalResult)


def test_false_positive_ranked_first_halves_the_ap():
    # ranking: FP, TP -> precision [0, 1/2], recall [0, 1]; the envelope is 1/2 everywhere.
    res = evaluate([dets(FAR, A, scores=[0.9, 0.8])], [gts(A)])
    np.testing.assert_allclose(res.precision[0], [0.0, 0.5])
    np.testing.assert_allclose(res.recall[0], [0.0, 1.0])
    assert res.ap[0] == pytest.approx(0.5)
    assert evaluate([dets(FAR, A, scores=[0.9, 0.8])], [gts(A)], metric="voc07").ap[0] == pytest.approx(0.5)


def test_false_positive_ranked_last_costs_nothing():
    res = evaluate([dets(A, FAR, scores=[0.9, 0.1])], [gts(A)])
    assert res.ap[0] == 1.0
    assert res.classes[0].num_fp == (1,)


def test_missed_ground_truth_caps_recall():
    # 2 ground truths, 1 found: precision [1], recall [1/2]. Area: 1/2. 11-point: r = 0, .1, ..., .5 -> 6/11.
    g, d = [gts(A, B)], [dets(A, scores=[0.9])]
    assert evaluate(d, g).ap[0] == pytest.approx(0.5)
    assert evaluate(d, g, metric="voc07").ap[0] == pytest.approx(6 / 11)


def test_textbook_curve_eleven_point_versus_all_point():
    # 5 ground truths; ranking TP FP TP FP FP TP FP (two never found).
    # precision 1, 1/2, 2/3, 1/2, 2/5, 1/2, 3/7; recall .2 .2 .4 .4 .4 .6 .6.
    # area: .2*1 + .2*(2/3) + .2*(1/2) = 13/30.
    # 11-point: r=0,.1,.2 -> 1; r=.3,.4 -> 2/3; r=.5,.6 -> 1/2; r=.7...1 -> 0; (3 + 4/3 + 1)/11 = 16/33.
    g = [gts(A, B, C, D, E)]
    far = [[900.0 + 30 * i, 900.0, 10.0, 10.0, 0.0] for i in range(4)]
    d = [dets(A, far[0], B, far[1], far[2], C, far[3], scores=[0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3])]
    area, voc07 = evaluate(d, g), evaluate(d, g, metric="voc07")
    np.testing.assert_allclose(area.precision[0], [1, 1 / 2, 2 / 3, 1 / 2, 2 / 5, 1 / 2, 3 / 7])
    np.testing.assert_allclose(area.recall[0], [0.2, 0.2, 0.4, 0.4, 0.4, 0.6, 0.6])
    assert area.ap[0] == pytest.approx(13 / 30, abs=1e-12)
    assert voc07.ap[0] == pytest.approx(16 / 33, abs=1e-12)


def test_detection_on_a_difficult_ground_truth_is_neither_tp_nor_fp():
    # B is difficult: the detection on it (ranked first) is ignored and B does not count in recall.
    res = evaluate([dets(B, A, scores=[0.9, 0.8])], [gts(A, B)], difficult=[[False, True]])
    e = res.classes[0]
    assert (e.num_gt, e.num_difficult, e.num_det, e.num_tp, e.num_fp) == (1, 1, 2, (1,), (0,))
    np.testing.assert_allclose(e.precision[0], [1.0])
    assert res.ap[0] == 1.0


def test_missed_difficult_ground_truth_does_not_lower_recall():
    res = evaluate([dets(A, scores=[0.9])], [gts(A, B)], difficult=[np.array([False, True])])
    assert res.ap[0] == 1.0


@pytest.mark.parametrize("matching", ["voc", "coco"])
def test_several_detections_on_one_difficult_ground_truth_are_all_ignored(matching):
    res = evaluate([dets(B, B, A, scores=[0.9, 0.85, 0.8])], [gts(A, B)], difficult=[torch.tensor([False, True])],
                   matching=matching)
    assert res.classes[0].num_tp == (1,) and res.classes[0].num_fp == (0,)
    assert res.ap[0] == 1.0


def test_class_with_only_difficult_ground_truth_is_left_out_of_the_map():
    res = evaluate([dets(A, C, scores=[0.9, 0.8], labels=[0, 1])], [gts(A, C, labels=[0, 1])],
                   difficult=[[False, True]])
    assert res.num_gt == {0: 1, 1: 0}
    assert math.isnan(res.ap[1])
    assert res.map == 1.0


@pytest.mark.parametrize("matching", ["voc", "coco"])
def test_second_detection_of_a_matched_ground_truth_is_a_false_positive(matching):
    # Duplicate (same box): precision [1, 1/2], recall [1, 1]; AP 1, one FP.
    res = evaluate([dets(A, A, scores=[0.9, 0.8])], [gts(A)], matching=matching)
    assert res.classes[0].num_tp == (1,) and res.classes[0].num_fp == (1,)
    np.testing.assert_allclose(res.precision[0], [1.0, 0.5])
    assert res.ap[0] == 1.0


def test_duplicate_ranked_above_the_only_true_positive_of_another_object_lowers_ap():
    # A found twice (2nd is FP), then B: precision [1, 1/2, 2/3], recall [.5, .5, 1] -> .5*1 + .5*(2/3) = 5/6.
    res = evaluate([dets(A, A, B, scores=[0.9, 0.8, 0.7])], [gts(A, B)])
    assert res.ap[0] == pytest.approx(5 / 6)


def test_iou_exactly_at_the_threshold_counts_as_a_match():
    # 30x10 boxes shifted by 10 along x: intersection 200, union 400, IoU exactly 0.5.
    gt, det = [0.0, 0.0, 30.0, 10.0, 0.0], [10.0, 0.0, 30.0, 10.0, 0.0]
    assert box_iou_rotated(torch.tensor([det]), torch.tensor([gt])).item() == 0.5
    assert evaluate([dets(det, scores=[0.9])], [gts(gt)], iou_threshold=0.5).ap[0] == 1.0
    assert evaluate([dets(det, scores=[0.9])], [gts(gt)], iou_threshold=0.5000001).ap[0] == 0.0


def test_voc_and_coco_matching_differ_when_a_detection_overlaps_two_ground_truths():
    # g1, g2 overlap (IoU 2/3). d1 = g1. d2 overlaps g1 most (IoU 19/21) and g2 enough (17/23).
    g1, g2 = [0.0, 0.0, 20.0, 10.0, 0.0], [4.0, 0.0, 20.0, 10.0, 0.0]
    d1, d2 = g1, [1.0, 0.0, 20.0, 10.0, 0.0]
    g, d = [gts(g1, g2)], [dets(d1, d2, scores=[0.9, 0.8])]
    voc = evaluate(d, g, matching="voc")  # d2's best ground truth g1 is taken: false positive
    assert voc.classes[0].num_tp == (1,) and voc.ap[0] == pytest.approx(0.5)
    coco = evaluate(d, g, matching="coco")  # d2 takes g2, the best one still free
    assert coco.classes[0].num_tp == (2,) and coco.ap[0] == 1.0


def test_voc_matching_ignores_a_detection_whose_best_ground_truth_is_difficult():
    # d overlaps difficult g1 most and g2 enough: VOC ignores it; COCO gives it g2.
    g1, g2 = [0.0, 0.0, 20.0, 10.0, 0.0], [4.0, 0.0, 20.0, 10.0, 0.0]
    g, d = [gts(g1, g2)], [dets([1.0, 0.0, 20.0, 10.0, 0.0], scores=[0.9])]
    voc = evaluate(d, g, difficult=[[True, False]], matching="voc")
    assert (voc.classes[0].num_tp, voc.classes[0].num_fp, voc.ap[0]) == ((0,), (0,), 0.0)
    coco = evaluate(d, g, difficult=[[True, False]], matching="coco")
    assert coco.classes[0].num_tp == (1,) and coco.ap[0] == 1.0


def test_detections_are_ranked_across_images_not_per_image():
    # Image 0's FP (0.9) outranks image 1's TP (0.8): precision [0, 1/2] -> AP 1/2.
    res = evaluate([dets(FAR, scores=[0.9]), dets(A, scores=[0.8])], [gts(), gts(A)])
    assert res.ap[0] == pytest.approx(0.5)


def test_equal_scores_keep_input_order_image_then_index():
    # Same score: the earlier detection ranks first. FP first -> 1/2; TP first -> 1.
    assert evaluate([dets(FAR, A, scores=[0.5, 0.5])], [gts(A)]).ap[0] == pytest.approx(0.5)
    assert evaluate([dets(A, FAR, scores=[0.5, 0.5])], [gts(A)]).ap[0] == 1.0
    assert evaluate([dets(FAR, scores=[0.5]), dets(A, scores=[0.5])], [gts(), gts(A)]).ap[0] == pytest.approx(0.5)


@pytest.mark.parametrize("matching", ["voc", "coco"])
def test_equal_scores_in_one_image_the_earlier_detection_takes_the_ground_truth(matching):
    # Both reach A (IoU 7/9: A moved 5 along its 40-wide axis, and IoU 1); the first in input order is the TP,
    # so the curve is precision [1, 1/2], not [0, 1/2].
    shifted = [A[0] + 5.0 * math.cos(A[4]), A[1] + 5.0 * math.sin(A[4]), *A[2:]]
    res = evaluate([dets(shifted, A, scores=[0.5, 0.5])], [gts(A)], matching=matching)
    np.testing.assert_allclose(res.precision[0], [1.0, 0.5])
    assert res.ap[0] == 1.0


def test_detection_never_matches_another_image_or_another_class():
    other_image = evaluate([dets(A, scores=[0.9]), dets(scores=[])], [gts(), gts(A)])
    assert other_image.ap[0] == 0.0
    other_class = evaluate([dets(A, scores=[0.9], labels=[1])], [gts(A, labels=[0])])
    assert other_class.ap[0] == 0.0 and math.isnan(other_class.ap[1])


def test_empty_images_change_nothing_and_unmatched_ground_truth_gives_zero():
    base = evaluate([dets(A, FAR, scores=[0.9, 0.8])], [gts(A)])
    padded = evaluate([dets(scores=[]), dets(A, FAR, scores=[0.9, 0.8]), dets(scores=[])], [gts(), gts(A), gts()])
    assert padded.ap == base.ap
    np.testing.assert_array_equal(padded.precision[0], base.precision[0])
    nothing_found = evaluate([dets(scores=[])], [gts(A)])
    assert nothing_found.ap[0] == 0.0 and nothing_found.precision[0].size == 0


def test_no_images_or_only_empty_images_give_no_classes_and_nan_map():
    for res in (evaluate([], []), evaluate([dets(scores=[])], [gts()])):
        assert res.classes == {} and math.isnan(res.map)


def test_class_with_detections_but_no_ground_truth_has_nan_ap_and_is_left_out():
    res = evaluate([dets(A, B, scores=[0.9, 0.8], labels=[0, 2])], [gts(A)])
    assert math.isnan(res.ap[2]) and res.num_gt[2] == 0 and res.num_det[2] == 1
    np.testing.assert_array_equal(res.precision[2], [0.0])
    assert np.isnan(res.recall[2]).all()
    assert res.map == 1.0


@pytest.mark.parametrize("matching", ["voc", "coco"])
def test_detections_without_any_ground_truth_are_all_false_positives(matching):
    res = evaluate([dets(A, B, scores=[0.9, 0.8]), dets(C, scores=[0.7])], [gts(), gts()], matching=matching)
    assert res.classes[0].num_fp == (3,) and math.isnan(res.map)


def test_num_classes_and_class_names_fix_the_class_list():
    res = evaluate([dets(A, scores=[0.9])], [gts(A)], class_names=["car", "ship", "plane"])
    assert list(res.classes) == [0, 1, 2]
    assert [e.name for e in res.classes.values()] == ["car", "ship", "plane"]
    assert res.map == 1.0  # classes 1 and 2 have no ground truth
    assert list(evaluate([dets(A, scores=[0.9])], [gts(A)], num_classes=4).classes) == [0, 1, 2, 3]


def test_several_thresholds_in_one_pass():
    gt, det = [0.0, 0.0, 90.0, 10.0, 0.0], [9.0, 0.0, 90.0, 10.0, 0.0]  # intersection 810, union 990: IoU 9/11
    res = evaluate([dets(det, scores=[0.9])], [gts(gt)], iou_threshold=IOU_THRESHOLDS_50_95)
    # TP at 0.50 ... 0.80 (7 thresholds), FP at 0.85, 0.90, 0.95.
    assert res.classes[0].ap == (1.0,) * 7 + (0.0,) * 3
    assert res.map50 == 1.0 and res.map75 == 1.0
    assert res.map50_95 == pytest.approx(0.7) and res.map == pytest.approx(0.7)
    assert res.ap_at(0.9) == {0: 0.0} and res.map_at(0.8) == 1.0


def test_single_threshold_result_refuses_map50_95_and_other_thresholds():
    res = evaluate([dets(A, scores=[0.9])], [gts(A)], iou_threshold=0.7)
    assert res.map == 1.0 and res.map_at(0.7) == 1.0
    with pytest.raises(ValueError, match="IOU_THRESHOLDS_50_95"):
        _ = res.map50_95
    with pytest.raises(ValueError, match="0.5 was not evaluated"):
        _ = res.map50


def test_to_dict_is_strict_json_with_none_for_nan():
    res = evaluate([dets(A, B, scores=[0.9, 0.8], labels=[0, 1])], [gts(A)], iou_threshold=IOU_THRESHOLDS_50_95)
    d = json.loads(json.dumps(res.to_dict(curves=True), allow_nan=False))
    assert d["map"] == 1.0 and d["map50_95"] == 1.0 and d["metric"] == "area" and d["matching"] == "voc"
    assert d["classes"][1]["ap"] is None and d["classes"][1]["recall"][0] == [None]
    assert d["classes"][0]["precision"][0] == [1.0]
    assert "precision" not in res.to_dict()["classes"][0]


def test_summary_names_every_class_and_the_map():
    text = evaluate([dets(A, scores=[0.9])], [gts(A)], class_names=["car", "ship"]).summary()
    assert "car" in text and "ship" in text and "mAP (area, IoU 0.5): 1.0000" in text


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs CUDA"))])
def test_cuda_and_cpu_inputs_give_the_same_result(device):
    g = [gts(A, B, C, labels=[0, 0, 1])]
    d = [dets(A, FAR, C, scores=[0.9, 0.95, 0.5], labels=[0, 0, 1])]
    ref = evaluate(d, g)
    res = evaluate([x.to(device) for x in d], [x.to(device) for x in g], difficult=[torch.zeros(3, dtype=torch.bool,
                                                                                              device=device)])
    assert res.ap == ref.ap


# --- bad input -------------------------------------------------------------------------------------------------
def test_a_bare_oriented_boxes_is_refused_with_a_hint():
    with pytest.raises(TypeError, match=r"wrap a single image as \[boxes\]"):
        evaluate(dets(A, scores=[0.9]), [gts(A)])
    with pytest.raises(TypeError, match=r"ground_truths\[0\] must be OrientedBoxes"):
        evaluate([dets(A, scores=[0.9])], [torch.zeros(1, 5)])


def test_mismatched_image_counts_are_refused():
    with pytest.raises(ValueError, match="one entry per image"):
        evaluate([dets(A, scores=[0.9])], [gts(A), gts()])


@pytest.mark.parametrize("difficult, match", [
    ([[True]], r"difficult\[0\] must hold 2 booleans"),
    ([[0, 2]], r"difficult\[0\] must hold 2 booleans"),
    ([[True, False], [True]], "sequence of 1 boolean arrays"),
    (np.zeros(2, bool), "sequence of 1 boolean arrays"),
])
def test_bad_difficult_flags_are_refused(difficult, match):
    with pytest.raises(ValueError, match=match):
        evaluate([dets(A, scores=[0.9])], [gts(A, B)], difficult=difficult)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"iou_threshold": 0.0}, ValueError, r"in \(0, 1\]"),
    ({"iou_threshold": 1.5}, ValueError, r"in \(0, 1\]"),
    ({"iou_threshold": []}, ValueError, "empty"),
    ({"iou_threshold": (0.5, 0.5)}, ValueError, "distinct"),
    ({"iou_threshold": "0.5"}, TypeError, "iou_threshold"),
    ({"metric": "coco"}, ValueError, "metric must be one of 'area', 'voc07'"),
    ({"matching": "hungarian"}, ValueError, "matching must be one of 'voc', 'coco'"),
    ({"num_classes": 0}, ValueError, "num_classes must be a positive int"),
    ({"num_classes": 1}, ValueError, r"detections\[0\].labels must be < num_classes=1"),
    ({"class_names": "car"}, TypeError, "class_names"),
    ({"class_names": ["car"]}, ValueError, r"detections\[0\].labels must be < len\(class_names\)=1"),
])
def test_bad_options_are_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        evaluate([dets(A, B, scores=[0.9, 0.8], labels=[0, 1])], [gts(A)], **kwargs)


def test_non_finite_scores_and_boxes_are_refused():
    with pytest.raises(ValueError, match=r"detections\[0\].scores contains NaN"):
        evaluate([dets(A, scores=[float("nan")])], [gts(A)])
    with pytest.raises(ValueError, match=r"ground_truths\[0\].xywhr contains NaN"):
        evaluate([dets(A, scores=[0.9])], [gts([0.0, float("nan"), 1.0, 1.0, 0.0])])


def test_negative_labels_are_refused():
    with pytest.raises(ValueError, match=r"ground_truths\[0\].labels must be class ids >= 0"):
        evaluate([dets(A, scores=[0.9])], [gts(A, labels=[-1])])


def test_a_class_absent_from_detections_and_ground_truths_answers_as_an_empty_class():
    # classes 0 and 2 appear; 1 and 7 appear nowhere: asking about them is an answer (nothing to score), not a KeyError
    res = evaluate([dets(A, C, scores=[0.9, 0.8], labels=[0, 2])], [gts(A, C, labels=[0, 2])],
                   class_names={0: "plane", 1: "ship", 2: "car"})
    assert sorted(res.classes) == [0, 2] and len(res.ap) == 2  # the evaluated classes only
    for c in (1, 7):
        e = res.classes[c]
        assert (e.class_id, e.num_gt, e.num_det, e.num_tp, e.num_fp) == (c, 0, 0, (0,), (0,))
        assert math.isnan(e.ap[0]) and e.precision[0].size == e.recall[0].size == 0
        assert math.isnan(res.ap[c]) and math.isnan(res.ap_at(0.5)[c])
        assert res.num_gt[c] == 0 and res.num_det[c] == 0 and res.precision[c].size == 0 and res.recall[c].size == 0
    assert res.classes[1].name == "ship" and res.classes[7].name is None
    assert res.map == 1.0 and 1 not in res.classes and json.loads(json.dumps(res.ap)) == {"0": 1.0, "2": 1.0}


@pytest.mark.parametrize("key, match", [(-1, "class ids are ints >= 0, got -1"), ("ship", "got 'ship'"),
                                        (1.0, "got 1.0"), (True, "got True")])
def test_a_key_that_can_be_no_class_says_so(key, match):
    res = evaluate([dets(A, scores=[0.9])], [gts(A)])
    for view in (res.classes, res.ap, res.num_gt):
        with pytest.raises(KeyError, match=match):
            view[key]


def test_a_class_outside_num_classes_says_what_was_evaluated():
    res = evaluate([dets(A, scores=[0.9])], [gts(A)], num_classes=3)
    assert math.isnan(res.ap[2]) and res.classes[2].num_gt == 0  # evaluated: in range(3), nothing there
    with pytest.raises(KeyError, match=r"class 3 was not evaluated: the classes are range\(num_classes=3\)"):
        res.classes[3]
    with pytest.raises(KeyError, match=r"range\(num_classes=3\)"):
        res.ap_at(0.5)[5]


def test_a_class_count_beyond_the_bound_is_refused_before_allocating():
    # evaluate() returns one ClassEval per class in range(num_classes): a billion of them is refused, not attempted
    from obbmeta.eval.dota import MAX_NUM_CLASSES
    assert MAX_NUM_CLASSES == 65536
    assert list(evaluate([dets(A, scores=[0.9])], [gts(A)], num_classes=MAX_NUM_CLASSES).classes)[-1] == 65535
    for n in (MAX_NUM_CLASSES + 1, 10**9, 2**63):
        with pytest.raises(ValueError, match=r"num_classes must be a positive int <= 65536"):
            evaluate([dets(A, scores=[0.9])], [gts(A)], num_classes=n)
    with pytest.raises(ValueError, match=r"len\(class_names\) must be a positive int <= 65536"):
        evaluate([dets(A, scores=[0.9])], [gts(A)], class_names=["x"] * (MAX_NUM_CLASSES + 1))


def test_huge_label_values_are_scored_over_the_classes_present():
    # Without num_classes the classes are the labels present: 2**40 or 2**63 - 1 is one class id, nothing is sized by it
    big = [2**40, 2**63 - 1]
    res = evaluate([dets(A, B, scores=[0.9, 0.8], labels=big)], [gts(A, C, labels=big)])
    assert sorted(res.classes) == big
    assert res.ap[2**40] == 1.0 and res.ap[2**63 - 1] == 0.0 and res.num_gt[2**63 - 1] == 1
    assert res.map == 0.5


def test_a_label_at_or_beyond_num_classes_is_refused_by_name():
    with pytest.raises(ValueError, match=r"ground_truths\[0\].labels must be < num_classes=3, got 1099511627776"):
        evaluate([dets(A, scores=[0.9])], [gts(A, labels=[2**40])], num_classes=3)
