"""Angle conventions at the boundary, each converted by a named function.

Inside obbmeta there is one convention: ``xywhr`` = (cx, cy, w, h, angle) with the angle in radians and
positive = clockwise on screen (image y axis down; the width axis is (cos a, sin a)). That is the direction of
mmcv (``clockwise=True``), mmrotate, Ultralytics and OpenCV; DeepStream 9 uses it in degrees; detectron2 uses
degrees counter-clockwise.

The same rectangle has many names: (w, h, a) = (w, h, a + pi) = (h, w, a + pi/2). The ``to_*`` regularisers
below pick one name per convention without changing the rectangle; the ``from_*`` / ``to_*`` pairs for
DeepStream 9, detectron2 and OpenCV change units and direction. All accept (N, 5) tensors (any float dtype,
any device) and return new tensors.

Squares (w == h) follow the peers value for value: mmrotate 1.x ``regularize_boxes('le90' / 'le135')`` and
Ultralytics' ``regularize_rboxes`` up to 8.3.79 keep (w, h, a) only when w > h, so a square gets its sides
"swapped" and a quarter turn added; ``to_le90``, ``to_le135`` and ``ultralytics_regularize_legacy`` do the same.
The one place obbmeta differs on purpose: where the peers' remainder rounds up to the end of the half-open range
(an angle a hair below its start), obbmeta returns the start, the same rectangle inside the documented range.
:func:`obbmeta.ops.polygons_to_obb` has no input angle to regularise: it returns rectangles in ``le90`` form and
squares with the angle nearest the x axis, in [-pi/4, pi/4) (an axis-aligned square is angle 0).

=====================================  ==========================================================
function                               result
=====================================  ==========================================================
``to_le90``                            w >= h, angle in [-pi/2, pi/2)   (mmrotate ``le90``)
``to_le135``                           w >= h, angle in [-pi/4, 3pi/4)  (mmrotate ``le135``; Ultralytics
                                       training labels)
``to_mmrotate_oc``                     angle in (0, pi/2]               (mmrotate 0.x ``oc``; OpenCV >= 4.5.1)
``to_mmrotate1_oc``                    angle in [-pi/2, 0)              (mmrotate 1.x ``oc`` preset)
``ultralytics_regularize``             Ultralytics >= 8.3.80 ``regularize_rboxes``: angle in [0, pi/2), w may be < h
``ultralytics_regularize_legacy``      Ultralytics <= 8.3.79 ``regularize_rboxes``: w >= h, angle in [0, pi)
``to_deepstream9`` / ``from_…``        (left, top, width, height) of the un-rotated box + degrees
``to_detectron2`` / ``from_…``         (cx, cy, w, h, degrees counter-clockwise)
``to_opencv`` / ``from_opencv``        (cx, cy, w, h, degrees) with OpenCV >= 4.5.1's range (0, 90]
=====================================  ==========================================================
"""
from __future__ import annotations

import math

import torch

from ._validators import box_tensor

__all__ = [
    "normalize_angle",
    "to_le90",
    "to_le135",
    "to_mmrotate_oc",
    "to_mmrotate1_oc",
    "ultralytics_regularize",
    "ultralytics_regularize_legacy",
    "to_deepstream9",
    "from_deepstream9",
    "to_detectron2",
    "from_detectron2",
    "to_opencv",
    "from_opencv",
    "REGULARIZERS",
]

PI = math.pi
HALF_PI = math.pi / 2


_check = box_tensor


def normalize_angle(angle: torch.Tensor, start: float, period: float = PI) -> torch.Tensor:
    """Wrap angles into [start, start + period)."""
    wrapped = torch.remainder(angle - start, period) + start
    # remainder can round up to exactly `period` for tiny negative inputs; fold that back to `start`.
    return torch.where(wrapped >= start + period, wrapped - period, wrapped)


def _quarter_turns(xywhr: torch.Tensor, start: float) -> torch.Tensor:
    """Express each box with its angle in [start, start + pi/2), swapping w and h for odd quarter turns."""
    cx, cy, w, h, a = xywhr.unbind(-1)
    q = torch.floor((a - start) / HALF_PI)
    a = a - q * HALF_PI
    # Rounding can leave a just outside the range; each fix-up is one more quarter turn, so it flips the swap too.
    over = a >= start + HALF_PI
    a, q = torch.where(over, a - HALF_PI, a), torch.where(over, q + 1, q)
    under = a < start
    a, q = torch.where(under, a + HALF_PI, a), torch.where(under, q - 1, q)
    odd = torch.remainder(q, 2) == 1
    return torch.stack((cx, cy, torch.where(odd, h, w), torch.where(odd, w, h), a), dim=-1)


def _long_side_first(xywhr: torch.Tensor, start: float) -> torch.Tensor:
    cx, cy, w, h, a = xywhr.unbind(-1)
    # Keep (w, h, a) only when w > h, as mmrotate 1.x and Ultralytics <= 8.3.79 do: a square (w == h) also turns.
    swap = ~(w > h)
    a = torch.where(swap, a + HALF_PI, a)
    return torch.stack((cx, cy, torch.maximum(w, h), torch.minimum(w, h), normalize_angle(a, start)), dim=-1)


def to_le90(xywhr: torch.Tensor) -> torch.Tensor:
    """w >= h and angle in [-pi/2, pi/2) (mmrotate ``le90``); a square (w == h) gets a + pi/2, as in mmrotate."""
    return _long_side_first(_check("xywhr", xywhr), -HALF_PI)


def to_le135(xywhr: torch.Tensor) -> torch.Tensor:
    """w >= h and angle in [-pi/4, 3pi/4) (mmrotate ``le135``; Ultralytics' training-label range); a square
    (w == h) gets a + pi/2, as in mmrotate."""
    return _long_side_first(_check("xywhr", xywhr), -PI / 4)


def to_mmrotate_oc(xywhr: torch.Tensor) -> torch.Tensor:
    """Angle in (0, pi/2], w and h swapped as needed (mmrotate 0.x ``oc``, OpenCV >= 4.5.1 ``minAreaRect``)."""
    boxes = _quarter_turns(_check("xywhr", xywhr), 0.0)
    cx, cy, w, h, a = boxes.unbind(-1)
    zero = a <= 0.0  # the half-open end: 0 is written as pi/2 with the sides swapped
    return torch.stack(
        (cx, cy, torch.where(zero, h, w), torch.where(zero, w, h), torch.where(zero, a + HALF_PI, a)), dim=-1
    )


def to_mmrotate1_oc(xywhr: torch.Tensor) -> torch.Tensor:
    """Angle in [-pi/2, 0) (mmrotate 1.x ``RotatedBoxes.regularize_boxes('oc')``)."""
    return _quarter_turns(_check("xywhr", xywhr), -HALF_PI)


def ultralytics_regularize(xywhr: torch.Tensor) -> torch.Tensor:
    """Ultralytics ``regularize_rboxes`` from 8.3.80 on (also 8.4): swap w/h where (a mod pi) >= pi/2, then
    a mod pi/2 in [0, pi/2). It never compares w and h, so squares need no tie rule."""
    # Same arithmetic as Ultralytics' (t mod pi >= pi/2 <=> an odd number of quarter turns), with the swap and
    # the angle taken from one computation so rounding cannot split them.
    return _quarter_turns(_check("xywhr", xywhr), 0.0)


def ultralytics_regularize_legacy(xywhr: torch.Tensor) -> torch.Tensor:
    """Ultralytics ``regularize_rboxes`` up to 8.3.79: w >= h and angle in [0, pi); a square (w == h) gets a + pi/2."""
    return _long_side_first(_check("xywhr", xywhr), 0.0)


def to_deepstream9(xywhr: torch.Tensor) -> torch.Tensor:
    """(N, 5) -> (N, 5) [left, top, width, height, rotation_angle_degrees] as DeepStream 9 writes
    ``NvOSD_RectParams``: the un-rotated box centred on the OBB centre (not the AABB), angle in degrees,
    same direction."""
    cx, cy, w, h, a = _check("xywhr", xywhr).unbind(-1)
    return torch.stack((cx - 0.5 * w, cy - 0.5 * h, w, h, torch.rad2deg(a)), dim=-1)


def from_deepstream9(rect: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`to_deepstream9`: [left, top, width, height, degrees] -> xywhr."""
    left, top, w, h, deg = _check("rect", rect).unbind(-1)
    return torch.stack((left + 0.5 * w, top + 0.5 * h, w, h, torch.deg2rad(deg)), dim=-1)


def to_detectron2(xywhr: torch.Tensor) -> torch.Tensor:
    """detectron2 ``RotatedBoxes``: (cx, cy, w, h, degrees counter-clockwise)."""
    cx, cy, w, h, a = _check("xywhr", xywhr).unbind(-1)
    return torch.stack((cx, cy, w, h, -torch.rad2deg(a)), dim=-1)


def from_detectron2(boxes: torch.Tensor) -> torch.Tensor:
    """detectron2 (cx, cy, w, h, degrees counter-clockwise) -> xywhr."""
    cx, cy, w, h, deg = _check("boxes", boxes).unbind(-1)
    return torch.stack((cx, cy, w, h, -torch.deg2rad(deg)), dim=-1)


def to_opencv(xywhr: torch.Tensor) -> torch.Tensor:
    """OpenCV ``RotatedRect`` as (cx, cy, w, h, degrees) with the angle in (0, 90] like ``cv2.minAreaRect``
    (OpenCV >= 4.5.1). ``((cx, cy), (w, h), deg)`` of a row is what ``cv2.boxPoints`` takes."""
    cx, cy, w, h, a = to_mmrotate_oc(xywhr).unbind(-1)
    return torch.stack((cx, cy, w, h, torch.rad2deg(a)), dim=-1)


def from_opencv(rects: torch.Tensor) -> torch.Tensor:
    """(cx, cy, w, h, degrees) rows from OpenCV ``RotatedRect`` / ``minAreaRect`` (any OpenCV version) -> xywhr."""
    cx, cy, w, h, deg = _check("rects", rects).unbind(-1)
    return torch.stack((cx, cy, w, h, torch.deg2rad(deg)), dim=-1)


REGULARIZERS = {
    "le90": to_le90,
    "le135": to_le135,
    "oc": to_mmrotate_oc,
    "oc_mmrotate1": to_mmrotate1_oc,
    "ultralytics": ultralytics_regularize,
    "ultralytics_legacy": ultralytics_regularize_legacy,
}
