"""The angle of an oriented box over time: which of its equivalent descriptions continues a track.

An oriented box has several equal descriptions: (w, h, a), (w, h, a + pi) and (h, w, a + pi/2) are the same
rectangle, so a detector may report any of them from one frame to the next (and does, near its angle range's
edges). A track must not see that as a rotation: every measurement is re-expressed as the description whose angle
is nearest the track's, which leaves a residual within +-pi/4. A model that predicts a heading (the bow of a ship,
the front of a car: 2*pi-periodic, the width axis pointing forward) keeps w and h and only unwraps by 2*pi.
"""
from __future__ import annotations

import math

import numpy as np

from ..geometry import wrap_angle

HALF_PI = 0.5 * math.pi
TWO_PI = 2.0 * math.pi
__all__ = ["align_to", "wrap_angle"]


def align_to(xywhr: np.ndarray, reference: np.ndarray, heading: bool = False) -> np.ndarray:
    """Each box of ``xywhr`` (N, 5) re-described with the angle nearest ``reference`` (N,) radians.

    Boxes (``heading=False``): the angle moves by a multiple k of pi/2, w and h swapped when k is odd, so
    ``|angle - reference| <= pi/4``. Headings (``heading=True``): the angle moves by a multiple of 2*pi, w and h
    stay, so ``|angle - reference| <= pi``. The rectangle (and the heading) is unchanged. Returns a new float64 array.
    """
    out = np.array(xywhr, dtype=np.float64, copy=True)
    if out.size == 0:
        return out.reshape(0, 5)
    ref = np.asarray(reference, dtype=np.float64)
    if heading:
        out[:, 4] = ref + wrap_angle(out[:, 4] - ref, TWO_PI)
        return out
    k = np.rint((out[:, 4] - ref) / HALF_PI)
    out[:, 4] -= k * HALF_PI
    odd = np.mod(k, 2.0) == 1.0
    if odd.any():
        out[odd, 2], out[odd, 3] = out[odd, 3], out[odd, 2].copy()
    return out

