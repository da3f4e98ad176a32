"""The angle of an oriented box over time: which of its equivalent descriptions continues a track.

An oriented box has several equal descriptions: (w, h, a), (w, h, a + pi) and (h, w, a + pi/2) are the same
rectangle, so a detector may report any of them from one frame to the next (and does, near its angle range's
edges). A track must not see that as a rotation: every measurement is re-expressed as the description whose angle
is nearest the track's, which leaves a residual within +-pi/4. A model that predicts a heading (the bow of a ship,
the front of a car: 2*pi-periodic, the width axis pointing forward) keeps w and h and only unwraps by 2*pi.
"""
from __future__ import annotations

import numpy as np

from ..geometry import wrap_angle
from ._core import address, library

__all__ = ["align_to", "wrap_angle"]


def align_to(xywhr: np.ndarray, reference: np.ndarray, heading: bool = False) -> np.ndarray:
    """Each box of ``xywhr`` (N, 5) re-described with the angle nearest ``reference`` (N,) radians.

    Boxes (``heading=False``): the angle moves by a multiple k of pi/2, w and h swapped when k is odd, so
    ``|angle - reference| <= pi/4``. Headings (``heading=True``): the angle moves by a multiple of 2*pi, w and h
    stay, so ``|angle - reference| <= pi``. The rectangle (and the heading) is unchanged. Returns a new float64 array.
    One C call (kernels/track_cpu.c): the tracker's step aligns its measurements with the same code.
    """
    out = np.array(xywhr, dtype=np.float64, copy=True, order="C")
    if out.size == 0:
        return out.reshape(0, 5)
    if out.ndim != 2 or out.shape[1] != 5:
        raise ValueError(f"xywhr must be (N, 5) [cx, cy, w, h, angle], got shape {out.shape}")
    n = out.shape[0]
    try:
        ref = np.ascontiguousarray(np.broadcast_to(np.asarray(reference, dtype=np.float64), (n,)))
    except ValueError:
        raise ValueError(f"reference must be one angle per box ({n},) or one angle, got shape "
                         f"{np.shape(reference)}") from None
    library().obbmeta_align_to(address(out), address(ref), n, int(bool(heading)))  # kernels/track_cpu.c
    return out
