"""obbmeta.geometry against shapely (exact polygons), and against the C writer's own skip rule and the torch ops."""
import math
from fractions import Fraction

import numpy as np
import pytest
import readback
import reference
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from shapely import affinity
from shapely.geometry import Point
from shapely.geometry import box as shapely_box

from obbmeta import geometry, nvds, ops

coord = st.floats(-300, 900, allow_nan=False)
side = st.floats(0.5, 400, allow_nan=False)
angle = st.floats(-7, 7, allow_nan=False)
box = st.tuples(coord, coord, side, side, angle)


@settings(max_examples=200, deadline=None)
@given(box)
def test_corners_are_the_rotated_corners_of_the_unrotated_box_in_the_documented_order(b):
    cx, cy, w, h, a = b
    got = geometry.corners(b)[0]
    for (sx, sy), (x, y) in zip(((-1, -1), (1, -1), (1, 1), (-1, 1)), got):  # top-left first, then clockwise
        p = affinity.translate(affinity.rotate(Point(sx * w / 2, sy * h / 2), a, origin=(0, 0), use_radians=True),
                               cx, cy)
        assert (x, y) == pytest.approx((p.x, p.y), abs=1e-9)


@settings(max_examples=200, deadline=None)
@given(st.lists(box, min_size=1, max_size=6))
def test_aabb_is_the_bounds_of_the_exact_polygon(bs):
    want = [reference.rect(*b).bounds for b in bs]
    np.testing.assert_allclose(geometry.aabb(bs), want, atol=1e-9)


@settings(max_examples=300, deadline=None)
@given(st.lists(box, min_size=1, max_size=6), st.floats(16, 800), st.floats(16, 800))
def test_meets_frame_is_a_shared_interior_of_box_and_frame(bs, fw, fh):
    frame = shapely_box(0, 0, fw, fh)
    overlap = [reference.rect(*b).intersection(frame).area for b in bs]
    assume(all(a == 0 or a > 1e-6 for a in overlap))  # a sliver at float rounding decides nothing
    assert geometry.meets_frame(bs, fw, fh).tolist() == [a > 0 for a in overlap]


def test_meets_frame_skips_a_box_whose_aabb_touches_the_frame_but_whose_polygon_does_not():
    b = [-10.0, -10.0, 80.0, 4.0, -math.pi / 4]  # a thin bar along x + y = -20, off the top-left corner
    assert geometry.aabb(b)[0, 2] > 0 and geometry.aabb(b)[0, 3] > 0
    assert reference.rect(*b).intersection(shapely_box(0, 0, 640, 480)).area == 0
    assert not geometry.meets_frame(b, 640, 480)[0]


@pytest.mark.skipif(not nvds.available(), reason="NVIDIA's libnvds_meta is not available")
def test_the_c_writer_skips_exactly_the_boxes_meets_frame_rejects():
    rng = np.random.default_rng(7)
    xywhr = np.c_[rng.uniform(-120, 760, (400, 2)), rng.uniform(2, 150, (400, 2)), rng.uniform(-4, 4, 400)]
    xywhr = xywhr.astype(np.float32)
    batch = nvds.BatchMeta.create(1)
    frame = batch.add_frame(source_id=0, frame_num=0)
    result = nvds.attach_obbs(batch, frame, xywhr=xywhr, scores=np.ones(400, np.float32),
                              labels=np.zeros(400, np.int32), frame_size=(640.0, 480.0))
    assert result.written_mask.tolist() == geometry.meets_frame(xywhr.astype(np.float64), 640, 480).tolist()
    assert len(readback.pairs(frame)) == result.written  # what NVIDIA's list holds


def test_corners_and_aabb_equal_the_torch_ops():
    rng = np.random.default_rng(3)
    b = np.c_[rng.uniform(0, 500, (50, 2)), rng.uniform(1, 80, (50, 2)), rng.uniform(-4, 4, 50)]
    t = torch.from_numpy(b)
    np.testing.assert_allclose(geometry.corners(b), ops.obb_to_polygons(t).numpy(), atol=1e-9)
    np.testing.assert_allclose(geometry.aabb(b), ops.obb_to_aabb(t).numpy(), atol=1e-9)


@given(st.floats(-1e4, 1e4, allow_nan=False), st.sampled_from([math.pi, 2 * math.pi]))
def test_wrap_angle_lands_in_the_half_open_range_by_whole_periods(a, period):
    w = float(geometry.wrap_angle(a, period))
    assert -period / 2 <= w < period / 2
    turns = (a - w) / period
    assert turns == pytest.approx(round(turns), abs=1e-9 * max(1.0, abs(a)))


@pytest.mark.parametrize("period", [math.pi, 2 * math.pi])
def test_wrap_angle_never_reaches_the_open_end_just_below_the_closed_one(period):
    below = np.nextafter(-period / 2, -np.inf) - np.arange(8) * 1e-17
    assert (geometry.wrap_angle(below, period) < period / 2).all()


finite = st.floats(allow_nan=False, allow_infinity=False)
positive_period = st.floats(min_value=0.0, exclude_min=True, allow_infinity=False)


@given(finite, positive_period)
def test_wrap_angle_holds_its_contract_for_every_finite_angle_and_positive_period(a, period):
    # [-period/2, period/2) compared exactly (doubling a float is exact, halving a subnormal is not), and a - w a
    # whole number of periods up to one rounding of the period (NumPy's mod adds the period once for a < 0).
    w = float(geometry.wrap_angle(a, period))
    assert -period <= 2.0 * w < period
    turns = (Fraction(a) - Fraction(w)) / Fraction(period)
    assert abs(turns - round(turns)) <= Fraction(1, 2**52)


@pytest.mark.parametrize("a, period, expected", [(1.0, math.pi, 1.0), (4.0, math.pi, 4.0 - math.pi),
                                                 (-1e-20, math.pi, 0.0), (0.0, 5e-324, 0.0),
                                                 (3.0, 1e308, 3.0), (-1e308, 1.5e308, 5e307)])
def test_wrap_angle_values_at_the_edges(a, period, expected):
    assert float(geometry.wrap_angle(a, period)) == expected


@pytest.mark.parametrize("period", [-math.pi, 0.0, -0.0, math.nan, math.inf, -math.inf, np.float64(-1.0)])
def test_wrap_angle_refuses_a_period_that_is_not_positive_and_finite(period):
    with pytest.raises(ValueError, match="period must be a positive finite number"):
        geometry.wrap_angle(1.0, period)


@pytest.mark.parametrize("period", [True, "pi", None, [math.pi], np.array([math.pi, 1.0])])
def test_wrap_angle_refuses_a_period_that_is_not_a_number(period):
    with pytest.raises(TypeError, match="period must be a positive finite number"):
        geometry.wrap_angle(1.0, period)


def test_wrap_angle_of_a_non_finite_angle_is_nan():
    assert np.isnan(geometry.wrap_angle(np.array([np.nan, np.inf, -np.inf]))).all()


@pytest.mark.parametrize("bad", [np.zeros((3, 4)), np.ones((2, 5, 1)), [1.0, 2.0]])
def test_a_wrong_shape_is_refused_by_name(bad):
    with pytest.raises(ValueError, match=r"xywhr must be \(N, 5\)"):
        geometry.corners(bad)


aabb_strategy = st.tuples(st.integers(-20, 60), st.integers(-20, 60), st.integers(0, 30), st.integers(0, 30)).map(
    lambda t: (t[0] / 2, t[1] / 2, (t[0] + t[2]) / 2, (t[1] + t[3]) / 2))  # half-pixel grid: many shared edges


@settings(max_examples=300, deadline=None)
@given(st.lists(aabb_strategy, max_size=25), st.lists(aabb_strategy, max_size=25))
def test_aabb_overlap_pairs_are_the_pairs_whose_shapely_intersection_has_area(a, b):
    want = [(i, j) for i, p in enumerate(a) for j, q in enumerate(b)
            if p[2] > p[0] and p[3] > p[1] and q[2] > q[0] and q[3] > q[1]
            and shapely_box(*p).intersection(shapely_box(*q)).area > 0]  # touching edges and corners do not count
    ti, di = geometry.aabb_overlap_pairs(np.array(a, float).reshape(-1, 4), np.array(b, float).reshape(-1, 4))
    assert ti.dtype == di.dtype == np.int64
    assert list(zip(ti.tolist(), di.tolist())) == want  # row-major, as numpy.nonzero of the dense mask


def test_aabb_overlap_pairs_grows_past_its_first_guess_and_refuses_bad_input():
    same = np.tile([[0.0, 0.0, 10.0, 10.0]], (60, 1))  # 3 600 pairs > the first capacity (4 * 120 + 16)
    ti, di = geometry.aabb_overlap_pairs(same, same)
    assert len(ti) == 3600 and (ti == np.repeat(np.arange(60), 60)).all() and (di == np.tile(np.arange(60), 60)).all()
    with pytest.raises(ValueError, match=r"aabbs2 must have shape \(N, 4\)"):
        geometry.aabb_overlap_pairs(same, np.zeros((3, 5)))
    with pytest.raises(ValueError, match="aabbs1 contains NaN or inf"):
        geometry.aabb_overlap_pairs(np.array([[0, 0, np.inf, 1.0]]), same)
