import math

import numpy as np
import pytest
import reference
import torch
from hypothesis import given
from hypothesis import strategies as st
from shapely.geometry import Point, Polygon

from obbmeta import conventions as cv

coord = st.floats(-1e3, 1e3, allow_nan=False, width=32)
side = st.floats(1.0, 500.0, allow_nan=False, width=32)
angle = st.floats(-12.5, 12.5, allow_nan=False, width=32)
box = st.tuples(coord, coord, side, side, angle)

HALF_PI = math.pi / 2


def same_rectangle(a, b, tol=1e-3):
    pa, pb = reference.rect(*a), reference.rect(*b)
    return pa.symmetric_difference(pb).area <= tol * pa.area


def t(b):
    return torch.tensor([b], dtype=torch.float64)


# (converter, check of the canonical range on one output row)
RANGES = {
    "le90": (cv.to_le90, lambda w, h, a: w >= h and -HALF_PI <= a < HALF_PI),
    "le135": (cv.to_le135, lambda w, h, a: w >= h and -math.pi / 4 <= a < 3 * math.pi / 4),
    "oc": (cv.to_mmrotate_oc, lambda w, h, a: 0 < a <= HALF_PI),
    "oc_mmrotate1": (cv.to_mmrotate1_oc, lambda w, h, a: -HALF_PI <= a < 0),
    "ultralytics": (cv.ultralytics_regularize, lambda w, h, a: 0 <= a < HALF_PI),
    "ultralytics_legacy": (cv.ultralytics_regularize_legacy, lambda w, h, a: w >= h and 0 <= a < math.pi),
}


@pytest.mark.parametrize("name", sorted(RANGES))
@given(b=box)
def test_regularizer_keeps_the_rectangle_and_lands_in_its_range(name, b):
    convert, in_range = RANGES[name]
    out = convert(t(b))[0].tolist()
    assert same_rectangle(b, out)
    assert in_range(out[2], out[3], out[4]), out
    assert out[:2] == list(t(b)[0, :2].tolist())  # centre untouched


@pytest.mark.parametrize("name", sorted(RANGES))
@given(b=box)
def test_regularizer_is_idempotent_except_on_squares_under_the_long_side_rule(name, b):
    convert, _ = RANGES[name]
    once = convert(t(b))
    if b[2] == b[3] and name in ("le90", "le135", "ultralytics_legacy"):
        return  # like mmrotate / Ultralytics <= 8.3.79, every call turns a square by a quarter (tested below)
    assert torch.allclose(convert(once), once, atol=1e-9)


# Squares (w == h): mmrotate 1.x regularize_boxes('le90' / 'le135') and Ultralytics regularize_rboxes up to 8.3.79
# keep (w, h, a) only when w > h; for w <= h they swap the sides and add pi/2, then wrap the angle into the range.
@pytest.mark.parametrize("name, a, expected", [
    ("le90", 0.3, 0.3 + HALF_PI - math.pi), ("le90", 0.0, -HALF_PI), ("le90", -1.0, -1.0 + HALF_PI),
    ("le135", 0.3, 0.3 + HALF_PI), ("le135", 1.0, 1.0 + HALF_PI - math.pi), ("le135", -0.5, -0.5 + HALF_PI),
    ("ultralytics_legacy", 0.3, 0.3 + HALF_PI), ("ultralytics_legacy", 2.0, 2.0 + HALF_PI - math.pi),
    ("ultralytics_legacy", 0.0, HALF_PI),
])
def test_squares_turn_a_quarter_like_the_peers(name, a, expected):
    convert, _ = RANGES[name]
    out = convert(t([3.0, 4.0, 10.0, 10.0, a]))[0].tolist()
    assert out[:4] == [3.0, 4.0, 10.0, 10.0]
    assert out[4] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("name", ["le90", "le135", "ultralytics_legacy"])
def test_a_strictly_longer_width_keeps_its_angle_and_a_longer_height_swaps(name):
    convert, _ = RANGES[name]
    assert convert(t([0.0, 0.0, 10.0, 9.999, 0.5]))[0].tolist() == [0.0, 0.0, 10.0, 9.999, 0.5]
    out = convert(t([0.0, 0.0, 9.999, 10.0, 0.5]))[0].tolist()
    assert out[2:4] == [10.0, 9.999] and out[4] == pytest.approx(0.5 + HALF_PI if name != "le90" else 0.5 - HALF_PI)


@pytest.mark.parametrize("name", ["ultralytics", "oc", "oc_mmrotate1"])
def test_angle_range_regularizers_do_not_compare_sides_so_squares_stay_put_inside_their_range(name):
    convert, in_range = RANGES[name]
    a = {"ultralytics": 0.3, "oc": 0.3, "oc_mmrotate1": -0.3}[name]
    assert convert(t([0.0, 0.0, 10.0, 10.0, a]))[0].tolist() == [0.0, 0.0, 10.0, 10.0, a]


def test_registry_lists_every_regularizer():
    assert set(cv.REGULARIZERS) == set(RANGES)


def test_ultralytics_8_4_regularize_matches_the_documented_example():
    # Ultralytics 8.4.190: angle -0.7 with (w=40, h=10) -> (w=10, h=40, angle=0.871), w may be < h.
    out = cv.ultralytics_regularize(t([0, 0, 40, 10, -0.7]))[0]
    assert out[2].item() == 10 and out[3].item() == 40
    assert out[4].item() == pytest.approx(-0.7 + math.pi / 2, abs=1e-9)


def test_mmrotate_oc_writes_axis_aligned_boxes_at_90_degrees():
    out = cv.to_mmrotate_oc(t([0, 0, 40, 10, 0.0]))[0].tolist()
    assert out[2:] == pytest.approx([10, 40, HALF_PI])


@given(b=box)
def test_deepstream9_round_trip_and_unrotated_box(b):
    ds = cv.to_deepstream9(t(b))[0].tolist()
    left, top, w, h, deg = ds
    # left/top/width/height are the un-rotated box centred on the OBB centre (not the AABB).
    assert left + w / 2 == pytest.approx(b[0], abs=1e-6) and top + h / 2 == pytest.approx(b[1], abs=1e-6)
    assert deg == pytest.approx(math.degrees(b[4]), abs=1e-9)
    assert torch.allclose(cv.from_deepstream9(torch.tensor([ds], dtype=torch.float64)), t(b), atol=1e-9)


@given(b=box)
def test_detectron2_is_counter_clockwise_degrees(b):
    d2 = cv.to_detectron2(t(b))[0].tolist()
    # detectron2's first vertex: (xc + sin*h/2 + cos*w/2, yc + cos*h/2 - sin*w/2) with its angle in degrees CCW.
    th = math.radians(d2[4])
    xc, yc, w, h = d2[:4]
    v = (xc + math.sin(th) * h / 2 + math.cos(th) * w / 2, yc + math.cos(th) * h / 2 - math.sin(th) * w / 2)
    ours = reference.rect(*b)
    assert ours.exterior.distance(Point(v)) <= 1e-6 * (1 + abs(xc) + abs(yc))
    assert torch.allclose(cv.from_detectron2(torch.tensor([d2], dtype=torch.float64)), t(b), atol=1e-9)


@given(b=box)
def test_opencv_range_and_round_trip(b):
    rect = cv.to_opencv(t(b))[0].tolist()
    assert 0 < rect[4] <= 90
    assert same_rectangle(b, cv.from_opencv(torch.tensor([rect], dtype=torch.float64))[0].tolist())


def test_opencv_box_points_agree_with_the_rectangle_when_cv2_is_installed():
    cv2 = pytest.importorskip("cv2")
    rng = np.random.default_rng(3)
    for _ in range(50):
        b = [*rng.uniform(-200, 200, 2), *rng.uniform(1, 80, 2), rng.uniform(-4, 4)]
        cx, cy, w, h, deg = cv.to_opencv(t(b))[0].tolist()
        pts = cv2.boxPoints(((cx, cy), (w, h), deg))
        assert reference.rect(*b).symmetric_difference(Polygon(pts)).area < 1e-3 * w * h
        (mx, my), (mw, mh), mdeg = cv2.minAreaRect(pts.astype(np.float32))
        back = cv.from_opencv(torch.tensor([[mx, my, mw, mh, mdeg]], dtype=torch.float64))[0]
        assert same_rectangle(b, back.tolist())


def test_converters_reject_wrong_shapes():
    with pytest.raises(ValueError, match=r"xywhr must have shape \(N, 5\)"):
        cv.to_le90(torch.zeros(3, 4))
    with pytest.raises(TypeError, match="floating-point"):
        cv.to_le90(torch.zeros(3, 5, dtype=torch.int64))
    with pytest.raises(TypeError, match="torch.Tensor"):
        cv.to_deepstream9([[0, 0, 1, 1, 0]])


@pytest.mark.parametrize("name", sorted(RANGES))
@pytest.mark.parametrize(
    "a", [-1e-34, 1e-34, -1e-17, HALF_PI - 1e-17, -HALF_PI, math.pi, -math.pi / 4, 3 * math.pi / 4])
def test_regularizers_at_range_edges_keep_the_rectangle(name, a):
    # Found by hypothesis: a tiny negative angle rounded onto the range end while the w/h swap was not undone.
    convert, in_range = RANGES[name]
    out = convert(t([0.0, 0.0, 1.0, 2.0, a]))[0].tolist()
    assert same_rectangle([0.0, 0.0, 1.0, 2.0, a], out)
    assert in_range(out[2], out[3], out[4]), out


@given(st.floats(-1e6, 1e6), st.floats(-10.0, 10.0), st.floats(1e-3, 10.0))
def test_normalize_angle_lands_in_start_plus_one_period_by_whole_periods(a, start, period):
    w = float(cv.normalize_angle(torch.tensor([a], dtype=torch.float64), start, period)[0])
    assert start <= w < start + period
    turns = (a - w) / period
    assert abs(turns - round(turns)) <= 1e-15 * max(1.0, abs(a), abs(start)) / period + 1e-15


@pytest.mark.parametrize("start, period, error, match", [
    (0.0, 0.0, ValueError, "period must be a positive finite number"),
    (0.0, -math.pi, ValueError, "period must be a positive finite number"),
    (0.0, math.nan, ValueError, "period must be a positive finite number"),
    (0.0, math.inf, ValueError, "period must be a positive finite number"),
    (0.0, "pi", TypeError, "period must be a positive finite number"),
    (math.inf, math.pi, ValueError, "start must be a finite number"),
    (math.nan, math.pi, ValueError, "start must be a finite number"),
    (None, math.pi, TypeError, "start must be a finite number"),
    (True, math.pi, TypeError, "start must be a finite number"),
])
def test_normalize_angle_refuses_a_bad_start_or_period_by_name(start, period, error, match):
    with pytest.raises(error, match=match):
        cv.normalize_angle(torch.tensor([1.0]), start, period)


def mmrotate0_hbb2obb(hbb, version):
    """mmrotate 0.x ``hbb2obb(hbboxes, version)`` (mmrotate/core/bbox/transforms.py), one (x1, y1, x2, y2) row:
    ``oc`` writes (h, w, pi/2); ``le135`` / ``le90`` keep (w, h, 0) when w >= h, else (h, w, +pi/2 / -pi/2)."""
    x1, y1, x2, y2 = hbb
    x, y, w, h = (x1 + x2) * 0.5, (y1 + y2) * 0.5, x2 - x1, y2 - y1
    if version == "oc":
        return [x, y, h, w, HALF_PI]
    return [x, y, w, h, 0.0] if w >= h else [x, y, h, w, HALF_PI if version == "le135" else -HALF_PI]


hbb = st.tuples(coord, coord, side, side).map(lambda r: (r[0], r[1], r[0] + r[2], r[1] + r[3]))


@pytest.mark.parametrize("version", ["le90", "le135", "oc"])
@given(b=hbb)
def test_from_hbb_is_mmrotates_hbb2obb(version, b):
    got = cv.from_hbb(torch.tensor([b], dtype=torch.float64), version)[0].tolist()
    assert got == mmrotate0_hbb2obb(b, version)
    assert same_rectangle(got, [(b[0] + b[2]) / 2, (b[1] + b[3]) / 2, b[2] - b[0], b[3] - b[1], 0.0])


@pytest.mark.parametrize("version, angle", [("le90", 0.0), ("le135", 0.0), ("oc", HALF_PI)])
def test_an_axis_aligned_square_hbb_keeps_angle_zero_as_in_mmrotate(version, angle):
    # mmrotate 0.x hbb2obb (w >= h keeps the box) and 1.x hbox2rbox: angle 0, not to_le90's quarter turn to -pi/2
    got = cv.from_hbb(torch.tensor([[10.0, 20.0, 50.0, 60.0]]), version)[0].tolist()
    assert got == [30.0, 40.0, 40.0, 40.0, pytest.approx(angle)]
    assert cv.to_le90(t([30.0, 40.0, 40.0, 40.0, 0.0]))[0, 4].item() == -HALF_PI  # regularize_boxes' square rule


@pytest.mark.parametrize("hbb, version, error, match", [
    (torch.zeros(2, 5), "le90", ValueError, r"hbb must have shape \(N, 4\) \[x1, y1, x2, y2\]"),
    (torch.zeros(4), "le90", ValueError, r"hbb must have shape \(N, 4\)"),
    (torch.zeros(1, 4, dtype=torch.int64), "le90", TypeError, "hbb must be a floating-point tensor"),
    ([[0.0, 0.0, 1.0, 1.0]], "le90", TypeError, "hbb must be a torch.Tensor"),
    (torch.tensor([[5.0, 0.0, 1.0, 1.0]]), "le90", ValueError, r"hbb\[0\] = \[5.0, 0.0, 1.0, 1.0\] must have x1 <= x2"),
    (torch.tensor([[0.0, 0.0, 1.0, 1.0], [0.0, float("nan"), 1.0, 1.0]]), "le90", ValueError, r"hbb\[1\]"),
    (torch.zeros(1, 4), "le45", ValueError, "version must be one of 'le90', 'le135', 'oc', got 'le45'"),
])
def test_from_hbb_refuses_bad_boxes_and_versions_by_name(hbb, version, error, match):
    with pytest.raises(error, match=match):
        cv.from_hbb(hbb, version)


def test_from_hbb_of_no_boxes_is_empty():
    assert cv.from_hbb(torch.zeros(0, 4)).shape == (0, 5)
