import math

import numpy as np
import pytest
import torch
from hypothesis import given, strategies as st

import reference
from obbmeta.ops import nms_rotated


def t(rows):
    return torch.tensor(rows, dtype=torch.float32)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("threshold", [0.1, 0.5, 0.7])
def test_keep_set_equals_greedy_shapely_reference_on_clustered_scenes(seed, threshold):
    boxes, scores, _ = reference.clustered_scene(200, seed)
    keep = nms_rotated(torch.from_numpy(boxes), torch.from_numpy(scores), threshold)
    assert keep.tolist() == reference.greedy_nms(boxes, scores, threshold)


@pytest.mark.parametrize("seed", range(4))
def test_class_aware_keep_set_equals_reference(seed):
    boxes, scores, labels = reference.clustered_scene(200, seed + 10)
    keep = nms_rotated(torch.from_numpy(boxes), torch.from_numpy(scores), 0.3, labels=torch.from_numpy(labels))
    assert keep.tolist() == reference.greedy_nms(boxes, scores, 0.3, labels=labels)


@given(st.integers(0, 2**31 - 1), st.integers(1, 60), st.sampled_from([0.0, 0.2, 0.5, 0.9]))
def test_property_greedy_equivalence_on_random_scenes(seed, n, threshold):
    boxes, scores, labels = reference.clustered_scene(n, seed, extent=300.0)
    scores = np.round(scores, 1)  # many ties: order must be by lower index
    keep = nms_rotated(torch.from_numpy(boxes), torch.from_numpy(scores), threshold, labels=torch.from_numpy(labels))
    assert keep.tolist() == reference.greedy_nms(boxes, scores, threshold, labels=labels)


def test_chain_keeps_a_and_c_where_fast_nms_keeps_a_only():
    # A overlaps B (IoU 1/3 > 0.3), B overlaps C, A does not overlap C.
    boxes = t([[0, 0, 40, 10, 0], [20, 0, 40, 10, 0], [40, 0, 40, 10, 0]])
    scores = torch.tensor([0.9, 0.8, 0.7])
    assert nms_rotated(boxes, scores, 0.3).tolist() == [0, 2]


def test_same_box_rotated_by_pi_and_90_degree_swap_are_duplicates():
    boxes = t([[50, 50, 40, 10, 0.2], [50, 50, 40, 10, 0.2 + math.pi], [50, 50, 10, 40, 0.2 + math.pi / 2]])
    assert nms_rotated(boxes, torch.tensor([0.5, 0.9, 0.7]), 0.5).tolist() == [1]


def test_suppression_is_strictly_greater_than_threshold():
    boxes = t([[3, 4, 40, 10, 0.5], [3, 4, 40, 10, 0.5]])  # IoU exactly 1
    scores = torch.tensor([0.9, 0.8])
    assert nms_rotated(boxes, scores, 1.0).tolist() == [0, 1]
    assert nms_rotated(boxes, scores, 0.999).tolist() == [0]


def test_boxes_touching_along_an_edge_or_a_corner_do_not_suppress_each_other():
    boxes = t([[0, 0, 10, 10, 0], [10, 0, 10, 10, 0], [10, 10, 10, 10, 0], [0, -10, 10, 10, 0]])
    assert nms_rotated(boxes, torch.tensor([0.9, 0.8, 0.7, 0.6]), 0.0).tolist() == [0, 1, 2, 3]


def test_equal_scores_keep_the_lower_index():
    boxes = t([[0, 0, 10, 10, 0]] * 3)
    assert nms_rotated(boxes, torch.tensor([0.5, 0.5, 0.5]), 0.5).tolist() == [0]
    assert nms_rotated(boxes, torch.tensor([0.4, 0.5, 0.5]), 0.5).tolist() == [1]


def test_nested_boxes_depend_on_threshold():
    boxes = t([[0, 0, 100, 100, 0.3], [0, 0, 90, 90, 0.3]])  # IoU 0.81
    scores = torch.tensor([0.9, 0.8])
    assert nms_rotated(boxes, scores, 0.8).tolist() == [0]
    assert nms_rotated(boxes, scores, 0.82).tolist() == [0, 1]


def test_labels_never_suppress_across_classes_even_at_huge_coordinates():
    # The coordinate-offset trick (idx * (max + 1)) loses precision here; obbmeta compares labels instead.
    boxes = t([[1e7, 1e7, 30, 10, 0.1], [1e7, 1e7, 30, 10, 0.1], [1e7 + 1, 1e7, 30, 10, 0.1]])
    scores = torch.tensor([0.9, 0.8, 0.7])
    assert nms_rotated(boxes, scores, 0.5, labels=torch.tensor([0, 1, 0])).tolist() == [0, 1]
    assert nms_rotated(boxes, scores, 0.5).tolist() == [0]


def test_degenerate_boxes_are_kept_and_suppress_nothing():
    boxes = t([[0, 0, 0, 0, 0], [0, 0, 10, 10, 0], [0, 0, -1, 10, 0]])
    assert nms_rotated(boxes, torch.tensor([0.9, 0.8, 0.7]), 0.0).tolist() == [0, 1, 2]


def test_threshold_one_keeps_everything_and_zero_keeps_only_disjoint():
    boxes = t([[0, 0, 10, 10, 0], [1, 0, 10, 10, 0], [100, 0, 10, 10, 0]])
    scores = torch.tensor([0.9, 0.8, 0.7])
    assert nms_rotated(boxes, scores, 1.0).tolist() == [0, 1, 2]
    assert nms_rotated(boxes, scores, 0.0).tolist() == [0, 2]


def test_empty_input_gives_empty_int64():
    keep = nms_rotated(torch.zeros((0, 5)), torch.zeros(0), 0.5)
    assert keep.dtype == torch.int64 and keep.shape == (0,)


def test_large_scene_matches_reference():
    boxes, scores, _ = reference.clustered_scene(1500, 123)
    keep = nms_rotated(torch.from_numpy(boxes), torch.from_numpy(scores), 0.5)
    assert keep.tolist() == reference.greedy_nms(boxes, scores, 0.5)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(boxes=torch.zeros(3, 5), scores=torch.zeros(2), iou_threshold=0.5), ValueError, r"scores must have shape \(3,\)"),
        (dict(boxes=torch.zeros(3, 5), scores=torch.zeros(3, dtype=torch.int64), iou_threshold=0.5), TypeError, "scores must be a floating-point"),
        (dict(boxes=torch.zeros(2, 5), scores=torch.tensor([0.1, float("nan")]), iou_threshold=0.5), ValueError, "scores contains NaN"),
        (dict(boxes=torch.zeros(2, 5), scores=torch.zeros(2), iou_threshold=1.5), ValueError, r"iou_threshold must be in \[0, 1\]"),
        (dict(boxes=torch.zeros(2, 5), scores=torch.zeros(2), iou_threshold=float("nan")), ValueError, "iou_threshold"),
        (dict(boxes=torch.zeros(2, 5), scores=torch.zeros(2), iou_threshold="x"), TypeError, "iou_threshold must be a number"),
        (dict(boxes=torch.zeros(2, 5), scores=torch.zeros(2), iou_threshold=0.5, labels=torch.zeros(2)), TypeError, "labels must be an integer"),
        (dict(boxes=torch.zeros(2, 5), scores=torch.zeros(2), iou_threshold=0.5, labels=torch.zeros(3, dtype=torch.int64)), ValueError, r"labels must have shape \(2,\)"),
        (dict(boxes=torch.zeros(2, 6), scores=torch.zeros(2), iou_threshold=0.5), ValueError, r"boxes must have shape \(N, 5\)"),
        (dict(boxes=torch.tensor([[0.0, 0, 1, 1, float("inf")]]), scores=torch.zeros(1), iou_threshold=0.5), ValueError, "boxes contains NaN or inf"),
    ],
)
def test_bad_inputs_raise_clear_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        nms_rotated(**kwargs)


def test_scores_on_another_device_is_an_error():
    with pytest.raises(ValueError, match="scores is on meta"):
        nms_rotated(torch.zeros(2, 5), torch.zeros(2, device="meta"), 0.5)
