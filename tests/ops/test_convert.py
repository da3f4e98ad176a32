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
    # w == h == 0 is a square for the le90 rule: the quarter turn mmrotate gives squares, wrapped to -pi/2
    np.testing.assert_allclose(got[0].numpy(), [1, 1, 0, 0, -math.pi / 2], atol=1e-6)
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


def test_an_axis_aligned_square_comes_out_as_mmrotate_le90_writes_it():
    got = polygons_to_obb(t([[0, 0, 4, 0, 4, 4, 0, 4]]))[0].tolist()
    assert got[:4] == pytest.approx([2, 2, 4, 4]) and got[4] == pytest.approx(-math.pi / 2)
