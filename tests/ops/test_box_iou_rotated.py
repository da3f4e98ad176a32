import math

import numpy as np
import pytest
import reference
import torch
from devices import needs_cuda
from hypothesis import given
from hypothesis import strategies as st

from obbmeta._cuda_lib import cuda_library
from obbmeta.ops import box_iou_rotated

coord = st.floats(-1e4, 1e4, allow_nan=False, width=32)
side = st.floats(1.0, 2000.0, allow_nan=False, width=32)
angle = st.floats(-6.25, 6.25, allow_nan=False, width=32)


@st.composite
def overlapping_pairs(draw):
    """Two boxes near each other (independent random boxes almost never overlap)."""
    cx, cy = draw(coord), draw(coord)
    w1, h1, w2, h2 = draw(side), draw(side), draw(side), draw(side)
    reach = 0.5 * (math.hypot(w1, h1) + math.hypot(w2, h2))
    dx = draw(st.floats(-1, 1)) * reach
    dy = draw(st.floats(-1, 1)) * reach
    return [cx, cy, w1, h1, draw(angle)], [cx + dx, cy + dy, w2, h2, draw(angle)]


def t(*rows):
    return torch.tensor(rows, dtype=torch.float32)


@given(overlapping_pairs())
def test_iou_matches_shapely_within_1e_4(pair):
    a, b = t(pair[0]), t(pair[1])
    expected = reference.iou(a[0].double().numpy(), b[0].double().numpy())
    assert abs(box_iou_rotated(a, b).item() - expected) <= 1e-4


@given(overlapping_pairs())
def test_iou_is_symmetric_and_in_unit_interval(pair):
    a, b = t(pair[0]), t(pair[1])
    ab, ba = box_iou_rotated(a, b).item(), box_iou_rotated(b, a).item()
    assert 0.0 <= ab <= 1.0
    assert abs(ab - ba) <= 1e-6


@given(st.lists(overlapping_pairs(), min_size=1, max_size=6))
def test_aligned_is_the_diagonal_of_the_matrix(pairs):
    a = t(*[p[0] for p in pairs])
    b = t(*[p[1] for p in pairs])
    assert torch.equal(box_iou_rotated(a, b, aligned=True), torch.diagonal(box_iou_rotated(a, b)))


def test_matrix_shape_and_values_against_shapely():
    rng = np.random.default_rng(0)
    a = np.c_[rng.uniform(0, 100, (7, 2)), rng.uniform(5, 60, (7, 2)), rng.uniform(-3, 3, 7)].astype(np.float32)
    b = np.c_[rng.uniform(0, 100, (5, 2)), rng.uniform(5, 60, (5, 2)), rng.uniform(-3, 3, 5)].astype(np.float32)
    got = box_iou_rotated(torch.from_numpy(a), torch.from_numpy(b))
    assert got.shape == (7, 5) and got.dtype == torch.float32
    np.testing.assert_allclose(got.numpy(), reference.iou_matrix(a, b), atol=1e-5)


@pytest.mark.parametrize("xy", [0.0, 1e3, 1e5, -1e5])
@given(w=side, h=side, a=angle)
def test_identical_boxes_give_one_even_far_from_the_origin(xy, w, h, a):
    box = t([xy, -xy, w, h, a])
    assert abs(box_iou_rotated(box, box).item() - 1.0) <= 1e-6


@pytest.mark.parametrize(
    "first, second, expected",
    [
        ([50, 50, 40, 10, 0.3], [50, 50, 40, 10, 0.3 + math.pi], 1.0),  # same box rotated by pi
        ([50, 50, 40, 10, 0.0], [50, 50, 10, 40, math.pi / 2], 1.0),  # w/h swap + 90 degrees
        ([50, 50, 40, 10, 0.0], [50, 50, 10, 40, -math.pi / 2], 1.0),
        ([0, 0, 20, 20, 0.0], [0, 0, 20, 20, math.pi / 4], math.sqrt(0.5)),
        ([0, 0, 100, 100, 0.3], [5, -3, 10, 20, 1.1], 200 / 10000),  # nested: small inside big
        ([0, 0, 10, 10, 0.0], [10, 0, 10, 10, 0.0], 0.0),  # touching edges
        ([0, 0, 10, 10, 0.0], [10, 10, 10, 10, 0.0], 0.0),  # touching corners
        ([0, 0, 40, 10, 0.0], [20, 0, 40, 10, 0.0], 1 / 3),  # shifted by w/2
        ([0, 0, 60, 6, 0.0], [0, 0, 60, 6, math.pi / 2], 36 / (720 - 36)),  # thin cross
    ],
)
def test_classic_hand_cases(first, second, expected):
    assert box_iou_rotated(t(first), t(second)).item() == pytest.approx(expected, abs=1e-6)
    assert reference.iou(first, second) == pytest.approx(expected, abs=1e-9)  # the hand value is right


def test_detectron2_issue_2167_large_thin_boxes_differing_in_4th_digit():
    a = t([1000.0, 800.0, 2174.0, 214.0, 0.2])
    b = t([1000.3, 800.2, 2174.3, 214.02, 0.20004])
    assert box_iou_rotated(a, b).item() > 0.99


def test_2000x200_boxes_differing_in_4th_significant_digit():
    a = t([5123.0, 3456.0, 2000.0, 200.0, 1.234])
    b = t([5123.4, 3456.3, 2000.4, 200.04, 1.2343])
    assert box_iou_rotated(a, b).item() > 0.99


def test_detectron2_issue_2154_float_vs_decimal_precision_gives_one():
    a = t([565.0, 565.0, 10.0, 8.3, 0.0])
    b = t([565.0, 565.0, 10.0, 8.300000190734863, 0.0])
    assert box_iou_rotated(a, b).item() == pytest.approx(1.0, abs=1e-6)


def test_detectron2_precision_case():
    assert box_iou_rotated(t([565, 565, 10, 10, 0]), t([565, 565, 10, 8.3, 0])).item() == pytest.approx(0.83, abs=1e-5)


def test_disjoint_thin_near_parallel_boxes_give_zero():
    # detectron2 #4961 reported 0.3688 for disjoint thin near-parallel boxes.
    a = t([100.0, 100.0, 300.0, 2.0, 0.001])
    b = t([100.0, 104.0, 300.0, 2.0, 0.0012])
    assert box_iou_rotated(a, b).item() == pytest.approx(reference.iou(a[0].numpy(), b[0].numpy()), abs=1e-6)
    assert box_iou_rotated(a, b).item() == 0.0


def test_huge_coordinates_never_nan_or_negative():
    a = t([1e17, 1e18, 1e3, 1e3, 0.3])
    b = t([1e17, 1e18, 1e3, 1e3, 0.5])
    v = box_iou_rotated(a, b).item()
    assert 0.0 <= v <= 1.0 and not math.isnan(v)


@pytest.mark.parametrize("bad", [[0, 0, 0.0, 10, 0], [0, 0, 10, 0.0, 0], [0, 0, -5, 10, 0], [0, 0, 7.9e-7, 1971, 0.1]])
def test_degenerate_boxes_have_iou_zero_or_tiny_but_valid(bad):
    good = t([0, 0, 10, 10, 0])
    v = box_iou_rotated(t(bad), good).item()
    assert 0.0 <= v <= 1e-6  # mmcv #2952 returned -12128368 for the w=7.9e-7 box
    if bad[2] <= 0 or bad[3] <= 0:
        assert v == 0.0
        assert box_iou_rotated(t(bad), t(bad)).item() == 0.0  # documented: even with itself


def test_empty_inputs():
    e = torch.zeros((0, 5))
    assert box_iou_rotated(e, t([0, 0, 1, 1, 0])).shape == (0, 1)
    assert box_iou_rotated(t([0, 0, 1, 1, 0]), e).shape == (1, 0)
    assert box_iou_rotated(e, e, aligned=True).shape == (0,)


def test_accepts_float64_and_noncontiguous_inputs_and_answers_in_float64():
    a = torch.tensor([[0, 0, 10, 10, 0, 9], [3, 0, 10, 10, 0, 9]], dtype=torch.float64)[:, :5]
    assert box_iou_rotated(a, a).dtype == torch.float64
    assert box_iou_rotated(a, a)[0, 1].item() == pytest.approx(70 / 130, abs=1e-12)


def test_float16_boxes_are_computed_and_answered_in_float32():
    a = torch.tensor([[0, 0, 10, 10, 0], [3, 0, 10, 10, 0]], dtype=torch.float16)
    assert box_iou_rotated(a, a).dtype == torch.float32


@pytest.mark.parametrize(
    "args, error, match",
    [
        ((torch.zeros(3, 4), torch.zeros(1, 5)), ValueError, r"boxes1 must have shape \(N, 5\)"),
        ((torch.zeros(1, 5), torch.zeros(5)), ValueError, r"boxes2 must have shape \(N, 5\)"),
        ((torch.zeros(1, 5, dtype=torch.int64), torch.zeros(1, 5)), TypeError, "boxes1 must be a floating-point"),
        (([[0, 0, 1, 1, 0]], torch.zeros(1, 5)), TypeError, "boxes1 must be a torch.Tensor"),
        ((torch.tensor([[0, 0, float("nan"), 1, 0]]), torch.zeros(1, 5)), ValueError, "boxes1 contains NaN or inf"),
        ((torch.zeros(1, 5), torch.tensor([[0, 0, 1, float("inf"), 0]])), ValueError, "boxes2 contains NaN or inf"),
    ],
)
def test_bad_inputs_raise_clear_errors(args, error, match):
    with pytest.raises(error, match=match):
        box_iou_rotated(*args)


def test_aligned_length_mismatch_is_an_error():
    with pytest.raises(ValueError, match="equal length"):
        box_iou_rotated(torch.zeros(2, 5), torch.zeros(3, 5), aligned=True)


def test_registered_as_a_torch_operator():
    a = t([0, 0, 10, 10, 0])
    assert torch.ops.obbmeta.box_iou_rotated(a, a, False).item() == pytest.approx(1.0)


def test_host_entry_matches_shapely_matrix_and_aligned():
    from obbmeta.ops import box_iou_rotated_host

    rng = np.random.default_rng(1)
    a = np.c_[rng.uniform(0, 100, (7, 2)), rng.uniform(5, 60, (7, 2)), rng.uniform(-3, 3, 7)].astype(np.float32)
    b = np.c_[rng.uniform(0, 100, (7, 2)), rng.uniform(5, 60, (7, 2)), rng.uniform(-3, 3, 7)].astype(np.float32)
    got = box_iou_rotated_host(a, b)
    assert got.shape == (7, 7) and got.dtype == np.float32
    np.testing.assert_allclose(got, reference.iou_matrix(a, b), atol=1e-5)
    np.testing.assert_array_equal(box_iou_rotated_host(a, b, aligned=True), np.diagonal(got))
    assert box_iou_rotated_host(a[:0], b).shape == (0, 7)


@pytest.mark.parametrize("args, match", [
    ((np.zeros((2, 4)), np.zeros((2, 5))), r"boxes1 must have shape \(N, 5\)"),
    ((np.zeros((2, 5)), np.full((2, 5), np.nan)), "boxes2 contains NaN"),
])
def test_host_entry_names_the_bad_argument(args, match):
    from obbmeta.ops import box_iou_rotated_host

    with pytest.raises(ValueError, match=match):
        box_iou_rotated_host(*args)


@needs_cuda
def test_cuda_kernels_are_built_and_used():
    assert cuda_library() is not None


@needs_cuda
def test_cuda_matrix_and_aligned_match_the_host():
    boxes, _, _ = reference.clustered_scene(700, 1, extent=500.0)
    b = torch.from_numpy(boxes)
    host = box_iou_rotated(b, b)
    gpu = box_iou_rotated(b.cuda(), b.cuda())
    assert gpu.device.type == "cuda"
    torch.testing.assert_close(gpu.cpu(), host, atol=1e-6, rtol=0)
    torch.testing.assert_close(box_iou_rotated(b.cuda(), b.flip(0).cuda(), aligned=True).cpu(),
                               box_iou_rotated(b, b.flip(0), aligned=True), atol=1e-6, rtol=0)
