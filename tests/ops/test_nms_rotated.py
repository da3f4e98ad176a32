import math

import numpy as np
import pytest
import reference
import torch
from devices import DEVICES, needs_cuda
from hypothesis import given
from hypothesis import strategies as st

from obbmeta.ops import box_iou_rotated, nms_rotated


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


@pytest.mark.parametrize("device", DEVICES)
def test_degenerate_boxes_are_kept_and_suppress_nothing(device):
    boxes = t([[0, 0, 0, 0, 0], [0, 0, 10, 10, 0], [0, 0, -1, 10, 0]]).to(device)
    assert nms_rotated(boxes, torch.tensor([0.9, 0.8, 0.7], device=device), 0.0).tolist() == [0, 1, 2]
    b = t([[0.0, 0, 0, 0, 0], [0, 0, 10, 10, 0], [0, 0, 10, 10, 0]]).to(device)
    assert nms_rotated(b, torch.tensor([0.9, 0.8, 0.7], device=device), 0.5).tolist() == [0, 1]


def test_threshold_one_keeps_everything_and_zero_keeps_only_disjoint():
    boxes = t([[0, 0, 10, 10, 0], [1, 0, 10, 10, 0], [100, 0, 10, 10, 0]])
    scores = torch.tensor([0.9, 0.8, 0.7])
    assert nms_rotated(boxes, scores, 1.0).tolist() == [0, 1, 2]
    assert nms_rotated(boxes, scores, 0.0).tolist() == [0, 2]


@pytest.mark.parametrize("device", DEVICES)
def test_empty_input_gives_empty_int64(device):
    keep = nms_rotated(torch.zeros((0, 5), device=device), torch.zeros(0, device=device), 0.5)
    assert keep.dtype == torch.int64 and keep.shape == (0,) and keep.device.type == device


@pytest.mark.parametrize("device", DEVICES)
def test_keep_set_matches_shapely_and_ties_keep_the_lower_index(device):
    boxes, scores, _ = reference.clustered_scene(400, 9)
    scores = np.round(scores, 1)  # many ties
    keep = nms_rotated(torch.from_numpy(boxes).to(device), torch.from_numpy(scores).to(device), 0.3)
    assert keep.device.type == device and keep.cpu().tolist() == reference.greedy_nms(boxes, scores, 0.3)


@pytest.mark.parametrize("device", DEVICES)
def test_nan_boxes_or_scores_raise_the_same_errors_on_every_device(device):
    b = torch.tensor([[0.0, 0, 10, 10, 0], [0, 0, float("nan"), 10, 0]], device=device)
    with pytest.raises(ValueError, match="boxes contains NaN or inf"):
        nms_rotated(b, torch.tensor([0.9, 0.8], device=device), 0.5)
    with pytest.raises(ValueError, match="scores contains NaN"):
        nms_rotated(b[:1], torch.tensor([float("nan")], device=device), 0.5)


@needs_cuda
@pytest.mark.parametrize("n", [1, 63, 64, 65, 1000, 4097, 20000])
@pytest.mark.parametrize("class_aware", [False, True])
def test_cuda_keep_set_equals_the_host(n, class_aware):
    boxes, scores, labels = reference.clustered_scene(n, n)
    b, s, lab = torch.from_numpy(boxes), torch.from_numpy(scores), torch.from_numpy(labels)
    host = nms_rotated(b, s, 0.5, labels=lab if class_aware else None)
    gpu = nms_rotated(b.cuda(), s.cuda(), 0.5, labels=lab.cuda() if class_aware else None)
    assert gpu.device.type == "cuda" and gpu.dtype == torch.int64
    assert gpu.cpu().tolist() == host.tolist()


def test_large_scene_matches_reference():
    boxes, scores, _ = reference.clustered_scene(1500, 123)
    keep = nms_rotated(torch.from_numpy(boxes), torch.from_numpy(scores), 0.5)
    assert keep.tolist() == reference.greedy_nms(boxes, scores, 0.5)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(boxes=torch.zeros(3, 5), scores=torch.zeros(2), iou_threshold=0.5),
         ValueError, r"scores must have shape \(3,\)"),
        (dict(boxes=torch.zeros(3, 5), scores=torch.zeros(3, dtype=torch.int64), iou_threshold=0.5),
         TypeError, "scores must be a floating-point"),
        (dict(boxes=torch.zeros(2, 5), scores=torch.tensor([0.1, float("nan")]), iou_threshold=0.5),
         ValueError, "scores contains NaN"),
        (dict(boxes=torch.zeros(2, 5), scores=torch.zeros(2), iou_threshold=1.5),
         ValueError, r"iou_threshold must be in \[0, 1\]"),
        (dict(boxes=torch.zeros(2, 5), scores=torch.zeros(2), iou_threshold=float("nan")), ValueError, "iou_threshold"),
        (dict(boxes=torch.zeros(2, 5), scores=torch.zeros(2), iou_threshold="x"),
         TypeError, "iou_threshold must be a number"),
        (dict(boxes=torch.zeros(2, 5), scores=torch.zeros(2), iou_threshold=0.5, labels=torch.zeros(2)),
         TypeError, "labels must be an integer"),
        (dict(boxes=torch.zeros(2, 5), scores=torch.zeros(2), iou_threshold=0.5,
              labels=torch.zeros(3, dtype=torch.int64)),
         ValueError, r"labels must have shape \(2,\)"),
        (dict(boxes=torch.zeros(2, 6), scores=torch.zeros(2), iou_threshold=0.5),
         ValueError, r"boxes must have shape \(N, 5\)"),
        (dict(boxes=torch.tensor([[0.0, 0, 1, 1, float("inf")]]), scores=torch.zeros(1), iou_threshold=0.5),
         ValueError, "boxes contains NaN or inf"),
    ],
)
def test_bad_inputs_raise_clear_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        nms_rotated(**kwargs)


def test_scores_on_another_device_is_an_error():
    with pytest.raises(ValueError, match="scores is on meta"):
        nms_rotated(torch.zeros(2, 5), torch.zeros(2, device="meta"), 0.5)


# The CPU NMS bins kept boxes in a multi-level grid (kernels/geometry_cpu.c); these scenes stress its edges: sizes over
# many levels, far and spread coordinates (clamped cell indices), boxes that touch on cell boundaries.

@pytest.mark.parametrize("seed", range(3))
def test_keep_set_equals_reference_when_box_sizes_span_many_grid_levels(seed):
    rng = np.random.default_rng(seed)
    n = 300
    sides = np.exp(rng.uniform(np.log(0.01), np.log(3000), (n, 2)))
    boxes = np.c_[rng.uniform(0, 3000, (n, 2)), sides, rng.uniform(-np.pi, np.pi, n)].astype(np.float32)
    scores = rng.uniform(0, 1, n).astype(np.float32)
    labels = rng.integers(0, 2, n)
    for lab in (None, labels):
        keep = nms_rotated(torch.from_numpy(boxes), torch.from_numpy(scores), 0.2,
                           labels=None if lab is None else torch.from_numpy(lab))
        assert keep.tolist() == reference.greedy_nms(boxes, scores, 0.2, labels=lab)


def test_keep_set_equals_reference_for_clusters_far_apart_and_far_from_the_origin():
    parts = []
    for k, origin in enumerate([(-3e6, 5e6), (0.0, 0.0), (2e7, -1e7), (2e7 + 500, -1e7)]):
        b, s, _ = reference.clustered_scene(60, k, extent=400.0)
        b = b.astype(np.float64)
        b[:, :2] += origin
        parts.append((b, s))
    boxes = np.concatenate([p[0] for p in parts])
    scores = np.concatenate([p[1] for p in parts]).astype(np.float64)
    keep = nms_rotated(torch.from_numpy(boxes), torch.from_numpy(scores), 0.3)
    assert keep.tolist() == reference.greedy_nms(boxes, scores, 0.3)


def test_boxes_touching_along_a_row_of_cells_suppress_nothing_and_overlapping_ones_do():
    x = np.arange(200, dtype=np.float64) * 10.0
    touching = np.c_[x, np.zeros(200), np.full(200, 10.0), np.full(200, 10.0), np.zeros(200)]
    scores = torch.linspace(1, 0, 200, dtype=torch.float64)
    assert nms_rotated(torch.from_numpy(touching), scores, 0.0).tolist() == list(range(200))
    overlapping = touching.copy()
    overlapping[:, 2] = 10.001
    assert nms_rotated(torch.from_numpy(overlapping), scores, 0.0).tolist() == list(range(0, 200, 2))


def test_one_huge_box_among_many_small_ones():
    boxes, scores, _ = reference.clustered_scene(300, 4, extent=600.0)
    boxes = np.r_[boxes, [[300, 300, 5000, 4000, 0.3]]].astype(np.float32)
    for top in (0.0, 1.1):  # the huge box first (it suppresses nothing at IoU 0.5) or last
        s = np.r_[scores, [top]].astype(np.float32)
        keep = nms_rotated(torch.from_numpy(boxes), torch.from_numpy(s), 0.01)
        assert keep.tolist() == reference.greedy_nms(boxes, s, 0.01)


def greedy_over_the_iou_matrix(boxes, scores, threshold, labels=None):
    """Plain greedy NMS over obbmeta's own IoU matrix: the same IoU values, no grid (a check of the binning)."""
    iou = box_iou_rotated(boxes, boxes).numpy()
    keep = []
    for r in sorted(range(len(boxes)), key=lambda i: (-float(scores[i]), i)):
        if not any(iou[k, r] > threshold and (labels is None or labels[k] == labels[r]) for k in keep):
            keep.append(r)
    return keep


@pytest.mark.parametrize("seed", range(2))
def test_keep_set_equals_plain_greedy_over_the_iou_matrix_on_2000_boxes_of_mixed_sizes(seed):
    rng = np.random.default_rng(seed)
    n = 2000
    small, _, _ = reference.clustered_scene(n // 2, seed, extent=1500.0)
    big = np.c_[rng.uniform(0, 1500, (n // 2, 2)), np.exp(rng.uniform(0, np.log(600), (n // 2, 2))),
                rng.uniform(-4, 4, n // 2)].astype(np.float32)
    boxes = torch.from_numpy(np.r_[small, big])
    scores = torch.from_numpy(np.round(rng.uniform(0, 1, n), 2).astype(np.float32))  # many ties
    labels = torch.from_numpy(rng.integers(0, 3, n))
    for thr in (0.0, 0.3, 0.7):
        assert nms_rotated(boxes, scores, thr).tolist() == greedy_over_the_iou_matrix(boxes, scores, thr)
    assert nms_rotated(boxes, scores, 0.3, labels=labels).tolist() == greedy_over_the_iou_matrix(
        boxes, scores, 0.3, labels.tolist())
