"""align_to: a box re-described to continue a track's angle is the same rectangle (shapely), never more than
pi/4 (boxes) or pi (headings) from the reference."""
import math

import numpy as np
import reference
from hypothesis import given
from hypothesis import strategies as st

from obbmeta.track import align_to, wrap_angle

side = st.floats(1.0, 500.0)
angle = st.floats(-20.0, 20.0)


@given(side, side, angle, angle)
def test_a_box_is_re_described_as_the_same_rectangle_nearest_the_reference(w, h, a, ref):
    box = np.array([[100.0, 50.0, w, h, a]])
    out = align_to(box, np.array([ref]))
    assert abs(out[0, 4] - ref) <= math.pi / 4 + 1e-9
    assert reference.rect(*box[0]).symmetric_difference(reference.rect(*out[0])).area <= 1e-6 * w * h


@given(side, side, angle, angle)
def test_a_heading_keeps_w_and_h_and_only_unwraps_by_two_pi(w, h, a, ref):
    out = align_to(np.array([[0.0, 0.0, w, h, a]]), np.array([ref]), heading=True)
    assert (out[0, 2], out[0, 3]) == (w, h)
    assert abs(out[0, 4] - ref) <= math.pi + 1e-9
    turns = (out[0, 4] - a) / (2 * math.pi)
    assert abs(turns - round(turns)) < 1e-9


def test_a_flip_by_pi_or_a_swap_by_pi_over_2_is_undone():
    track = np.array([0.8])
    flipped = np.array([[0, 0, 40, 15, 0.8 + math.pi], [0, 0, 15, 40, 0.8 - math.pi / 2]])
    np.testing.assert_allclose(align_to(flipped, np.repeat(track, 2)), [[0, 0, 40, 15, 0.8]] * 2, atol=1e-12)


def test_wrap_angle_lands_in_the_half_open_period():
    a = np.array([-math.pi / 2, math.pi / 2, 3.0, -3.0, 7.0])
    w = wrap_angle(a)
    assert ((w >= -math.pi / 2) & (w < math.pi / 2)).all()
    np.testing.assert_allclose(np.mod(w - a, math.pi) % math.pi, 0, atol=1e-12)
