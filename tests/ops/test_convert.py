import math

import numpy as np
import pytest
import reference
import torch
from hypothesis import given
from hypothesis import strategies as st
from shapely.geometry import MultiPoint, Polygon

from obbmeta.ops import obb_to_aabb, obb_to_polygons, polygons_to_obb

coord = st.floats(-1e4, 1e4, allow_nan=False, width=32)
side = st.floats(1.0, 2000.0, allow_nan=False, width=32)
angle = st.floats(-6.25, 6.25, allow_nan=False, width=32)
box = st.tuples(coord, coord, side, side, angle)


def t(rows):
    return torch.tensor(rows, dtype=torch.float32)


def float32_slack(b) -> float:
    """Area two float32 renderings of one rectangle may differ by: perimeter x a few float32 ulps of its
    largest coordinate (the outputs are float32; shapely's reference is float64)."""
    cx, cy, w, h, _ = b
    ulp = 4 * float(np.finfo(np.float32).eps) * (abs(cx) + abs(cy) + w + h)
    return 2 * (w + h) * ulp + 1e-6


@given(box)
def test_polygon_is_the_shapely_rectangle(b):
    poly = obb_to_polygons(t([b]))[0].double().numpy()
    ref = reference.rect(*b)
    ours = Polygon(poly)
    assert ours.is_valid
    assert ours.symmetric_difference(ref).area <= float32_slack(b)


@given(box)
def test_corner_order_starts_top_left_of_unrotated_box_and_runs_clockwise_on_screen(b):
    poly = obb_to_polygons(t([b]))[0].double().numpy()
    cx, cy, w, h, a = b
    first = np.array([cx, cy]) + np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]]) @ [-w / 2, -h / 2]
    np.testing.assert_allclose(poly[0], first, atol=8 * float(np.finfo(np.float32).eps) * (abs(cx) + abs(cy) + w + h))
    # Clockwise on screen (y down) = positive signed area in the shoelace sum with y down.
    x, y = poly[:, 0] - cx, poly[:, 1] - cy
    twice = np.sum(x * np.roll(y, -1) - np.roll(x, -1) * y)
    assert twice > 0


@given(box)
def test_aabb_is_shapely_bounds(b):
    x1, y1, x2, y2 = obb_to_aabb(t([b]))[0].double().tolist()
    rx1, ry1, rx2, ry2 = reference.rect(*b).bounds
    tol = 1e-6 * max(abs(v) for v in (rx1, ry1, rx2, ry2)) + 1e-3
    assert abs(x1 - rx1) <= tol and abs(y1 - ry1) <= tol and abs(x2 - rx2) <= tol and abs(y2 - ry2) <= tol


@given(box)
def test_polygons_to_obb_round_trips_the_same_rectangle(b):
    again = polygons_to_obb(obb_to_polygons(t([b])))[0].double().tolist()
    ref = reference.rect(*b)
    got = reference.rect(*again)
    assert got.symmetric_difference(ref).area <= 2 * float32_slack(b)
    half_pi = float(np.float32(math.pi / 2))
    assert again[2] >= again[3] and -half_pi <= again[4] < half_pi  # canonical le90, in float32


@given(st.lists(st.tuples(st.floats(-500, 500, width=32), st.floats(-500, 500, width=32)), min_size=4, max_size=4))
def test_polygons_to_obb_is_shapelys_minimum_rotated_rectangle(points):
    pts = np.array(points, dtype=np.float32)
    hull = MultiPoint([tuple(p) for p in pts.astype(np.float64)]).convex_hull
    if hull.area < 1.0:  # collinear / coincident: covered by a dedicated test
        return
    ref = hull.minimum_rotated_rectangle
    got = polygons_to_obb(torch.from_numpy(pts)[None])[0].double().tolist()
    rect = reference.rect(*got)
    assert rect.area == pytest.approx(ref.area, rel=1e-4, abs=1e-2)
    assert rect.buffer(1e-3 * max(1.0, math.sqrt(ref.area))).contains(hull)  # it encloses every point


def test_polygons_to_obb_accepts_flat_dota_rows():
    got = polygons_to_obb(t([[0, 0, 4, 0, 4, 2, 0, 2]]))
    np.testing.assert_allclose(got.numpy(), [[2, 1, 4, 2, 0]], atol=1e-6)


def test_polygons_to_obb_degenerate_point_sets():
    got = polygons_to_obb(t([[[1, 1], [1, 1], [1, 1], [1, 1]], [[0, 0], [1, 1], [2, 2], [3, 3]]]))
    # w == h == 0 is a square: angle 0, the name nearest the x axis
    assert got[0].tolist() == [1, 1, 0, 0, 0]
    assert got[1, 3].item() == pytest.approx(0.0, abs=1e-5)
    assert got[1, 2].item() == pytest.approx(3 * math.sqrt(2), abs=1e-5)
    assert got[1, 4].item() == pytest.approx(math.pi / 4, abs=1e-6)


def test_empty_inputs():
    assert obb_to_polygons(torch.zeros(0, 5)).shape == (0, 4, 2)
    assert obb_to_aabb(torch.zeros(0, 5)).shape == (0, 4)
    assert polygons_to_obb(torch.zeros(0, 4, 2)).shape == (0, 5)


@pytest.mark.parametrize(
    "value, error, match",
    [
        (torch.zeros(2, 3, 3), ValueError, r"polygons must have shape \(N, K, 2\) or \(N, 2K\)"),
        (torch.zeros(2, 7), ValueError, "polygons must have shape"),
        (torch.zeros(2, 4, 2, dtype=torch.int32), TypeError, "floating-point"),
        (torch.tensor([[[0.0, float("nan")]] * 4]), ValueError, "NaN"),
        (np.zeros((1, 4, 2)), TypeError, "torch.Tensor"),
    ],
)
def test_polygons_to_obb_bad_inputs(value, error, match):
    with pytest.raises(error, match=match):
        polygons_to_obb(value)


def axis_aligned_polygon(x, y, w, h, start, clockwise):
    corners = [(x, y), (x + w, y), (x + w, y + h), (x, y + h)]
    corners = corners[start:] + corners[:start]
    return corners if clockwise else corners[::-1]


def mmrotate1_qbox2rbox_le90(pts: np.ndarray) -> list:
    """mmrotate 1.x's polygon -> rotated box: ``qbox2rbox`` (OpenCV's minAreaRect, degrees -> radians) then
    ``RotatedBoxes.regularize_boxes('le90')`` (width the longer side unless w > h fails, angle mod pi from -pi/2)."""
    cv2 = pytest.importorskip("cv2")
    (x, y), (w, h), deg = cv2.minAreaRect(pts.astype(np.float32))
    a = math.radians(deg)
    if not w > h:
        w, h, a = h, w, a + math.pi / 2
    return [x, y, w, h, (a + math.pi / 2) % math.pi - math.pi / 2]


@given(st.integers(-2000, 2000), st.integers(-2000, 2000), st.integers(1, 500), st.integers(0, 3), st.booleans())
def test_an_axis_aligned_square_given_as_a_polygon_has_angle_zero(x, y, side, start, clockwise):
    pts = np.array(axis_aligned_polygon(x, y, side, side, start, clockwise), np.float64)
    got = polygons_to_obb(torch.from_numpy(pts).float()[None])[0].tolist()
    assert got == [x + side / 2, y + side / 2, side, side, 0.0]
    ref = mmrotate1_qbox2rbox_le90(pts)  # what mmrotate 1.x gives for the same polygon
    assert got == pytest.approx(ref, abs=1e-3)


@given(st.integers(-2000, 2000), st.integers(-2000, 2000), st.integers(1, 500), st.integers(1, 500),
       st.integers(0, 3), st.booleans())
def test_an_axis_aligned_rectangle_has_angle_zero_or_its_long_side_vertical(x, y, w, h, start, clockwise):
    pts = np.array(axis_aligned_polygon(x, y, w, h, start, clockwise), np.float64)
    got = polygons_to_obb(torch.from_numpy(pts).float()[None])[0].tolist()
    minx, miny, maxx, maxy = Polygon(pts).bounds  # shapely's reference extent
    assert got[:4] == [(minx + maxx) / 2, (miny + maxy) / 2, max(w, h), min(w, h)]
    # le90 puts the long side on the width: vertical (angle -pi/2) only when the box is taller than wide
    assert got[4] == (float(np.float32(-math.pi / 2)) if h > w else 0.0)
    assert got == pytest.approx(mmrotate1_qbox2rbox_le90(pts), abs=1e-3)


@given(coord, coord, side, st.floats(-20.0, 20.0, allow_nan=False))
def test_a_rotated_square_takes_the_name_nearest_the_x_axis(cx, cy, s, a):
    # corners in float64 (no rounding beyond the float32 the polygon is handed in)
    c, sn = math.cos(a), math.sin(a)
    pts = np.array([[cx + c * u * s / 2 - sn * v * s / 2, cy + sn * u * s / 2 + c * v * s / 2]
                    for u, v in ((-1, -1), (1, -1), (1, 1), (-1, 1))])
    got = polygons_to_obb(torch.from_numpy(pts).float()[None])[0].tolist()
    quarter = float(np.float32(math.pi / 4))
    assert got[2] == got[3] and -quarter <= got[4] < quarter
    # the same rectangle as shapely's minimum rotated rectangle of the points
    ref = MultiPoint([tuple(p) for p in pts.astype(np.float32).astype(np.float64)]).minimum_rotated_rectangle
    assert reference.rect(*got).symmetric_difference(ref).area <= 2 * float32_slack((cx, cy, s, s, a))
    # and its angle is the square's own modulo a quarter turn (OpenCV >= 4.5.1 writes it in (0, 90] degrees)
    turn = (got[4] - a) / (math.pi / 2)
    assert abs(turn - round(turn)) <= 1e-3 * (1 + (abs(cx) + abs(cy)) / s)


def test_squares_in_float64_and_float16_polygons_are_squares_too():
    sq = [[0.0, 0.0, 4.0, 0.0, 4.0, 4.0, 0.0, 4.0]]
    for dtype in (torch.float64, torch.float16):
        got = polygons_to_obb(torch.tensor(sq, dtype=dtype))[0].tolist()
        assert got == [2.0, 2.0, 4.0, 4.0, 0.0], dtype
