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
``from_hbb``                           axis-aligned [x1, y1, x2, y2] -> xywhr as mmrotate 0.x ``hbb2obb``
                                       (``le90``: a square keeps angle 0)
``to_deepstream9`` / ``from_…``        (left, top, width, height) of the un-rotated box + degrees
``to_detectron2`` / ``from_…``         (cx, cy, w, h, degrees counter-clockwise)
``to_opencv`` / ``from_opencv``        (cx, cy, w, h, degrees) with OpenCV >= 4.5.1's range (0, 90]
=====================================  ==========================================================
"""
from __future__ import annotations

import math

import torch

from ._validators import box_tensor, finite_number

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
    "from_hbb",
    "HBB_VERSIONS",
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
    """Wrap angles into [start, start + period), a whole number of periods away (up to rounding in the tensor's
    dtype, in which the bounds are compared).

    ``start`` is any finite number and ``period`` any positive finite number (Python or NumPy scalars); anything
    else raises TypeError (not a number) or ValueError (NaN, inf; a period <= 0). NaN and +-inf angles give NaN.
    """
    start = finite_number("start", start)
    period = finite_number("period", period, positive=True)
    wrapped = torch.remainder(angle - start, period) + start
    # remainder can round up to exactly `period` for tiny negative inputs; fold that back to `start`. Folding rounds
    # too and can land a hair below `start` (start 1e-30, angle 0): that is `start` itself, up to that rounding.
    return torch.where(wrapped >= start + period, wrapped - period, wrapped).clamp(min=start)


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


HBB_VERSIONS = ("le90", "le135", "oc")


def from_hbb(hbb: torch.Tensor, version: str = "le90") -> torch.Tensor:
    """Axis-aligned boxes (N, 4) [x1, y1, x2, y2] -> (N, 5) xywhr named as mmrotate 0.x ``hbb2obb(hbboxes, version)``
    names them:

    * ``"le90"``: (w, h, 0) when w >= h, else (h, w, -pi/2); ``"le135"``: the same with +pi/2;
    * ``"oc"``: (h, w, pi/2), mmrotate 0.x's (0, pi/2] range.

    An axis-aligned square is (s, s, 0) in ``le90`` and ``le135``, as in mmrotate 0.x ``hbb2obb`` and 1.x
    ``hbox2rbox``. (:func:`to_le90` of an angle-0 square gives -pi/2 instead: it follows ``regularize_boxes``,
    which turns every square by a quarter.) Any float dtype and device; a box with x2 < x1, y2 < y1 or NaN raises
    ValueError naming it (one host read of the comparison).
    """
    if not isinstance(hbb, torch.Tensor):
        raise TypeError(f"hbb must be a torch.Tensor of shape (N, 4) [x1, y1, x2, y2], got {type(hbb).__name__}")
    if hbb.dim() != 2 or hbb.shape[1] != 4:
        raise ValueError(f"hbb must have shape (N, 4) [x1, y1, x2, y2], got {tuple(hbb.shape)}")
    if not hbb.is_floating_point():
        raise TypeError(f"hbb must be a floating-point tensor (float16/32/64), got {hbb.dtype}")
    if version not in HBB_VERSIONS:
        raise ValueError(f"version must be one of {', '.join(map(repr, HBB_VERSIONS))}, got {version!r}")
    x1, y1, x2, y2 = hbb.unbind(-1)
    bad = torch.nonzero(~((x2 >= x1) & (y2 >= y1))).flatten()  # NaN fails both comparisons
    if bad.numel():
        i = int(bad[0])
        raise ValueError(f"hbb[{i}] = {hbb[i].tolist()} must have x1 <= x2 and y1 <= y2 (finite corners)")
    x, y, w, h = (x1 + x2) * 0.5, (y1 + y2) * 0.5, x2 - x1, y2 - y1
    zero = torch.zeros_like(x)
    if version == "oc":
        return torch.stack((x, y, h, w, zero + HALF_PI), dim=-1)
    turn = HALF_PI if version == "le135" else -HALF_PI
    keep = (w >= h)[:, None]
    return torch.where(keep, torch.stack((x, y, w, h, zero), dim=-1), torch.stack((x, y, h, w, zero + turn), dim=-1))


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
