"""Conversions between oriented boxes, their polygons and their axis-aligned bounds (any device, vectorised).

Corner order (obbmeta.geometry.CORNER_SIGNS, the same as kernels/obb_geometry.h): c + R(angle) * (sx * w, sy * h)
for (sx, sy) = (-,-), (+,-), (+,+), (-,+) halves: the top-left corner of the un-rotated box first, then clockwise.
"""
from __future__ import annotations

import math

import torch

from ..conventions import normalize_angle, to_le90
from ..geometry import CORNER_SIGNS
from ._validate import as_boxes

MAX_POLYGON_POINTS = 64
_CHUNK_ELEMENTS = 1 << 22  # candidate projections (N x pairs x K) computed at once
_SQUARE_ULPS = 8  # |w - h| within this many ulps of the largest coordinate: a square

_SX, _SY = zip(*CORNER_SIGNS)


def obb_to_polygons(boxes: torch.Tensor) -> torch.Tensor:
    """(N, 5) [cx, cy, w, h, angle] -> (N, 4, 2) corners in the documented order; float64 for float64 boxes,
    float32 otherwise."""
    return corners(as_boxes("boxes", boxes))


def corners(boxes: torch.Tensor) -> torch.Tensor:
    """The corner formula itself, in the boxes' own dtype and without checks (callers validate)."""
    cx, cy, w, h, a = boxes.unbind(-1)
    c, s = torch.cos(a)[:, None], torch.sin(a)[:, None]
    sx = boxes.new_tensor(_SX)
    sy = boxes.new_tensor(_SY)
    lx, ly = w[:, None] * sx, h[:, None] * sy
    x = cx[:, None] + c * lx - s * ly
    y = cy[:, None] + s * lx + c * ly
    return torch.stack((x, y), dim=-1)


def obb_to_aabb(boxes: torch.Tensor) -> torch.Tensor:
    """(N, 5) -> (N, 4) [x1, y1, x2, y2]: the tight axis-aligned box around each polygon (float64 for float64
    boxes, float32 otherwise)."""
    boxes = as_boxes("boxes", boxes)
    cx, cy, w, h, a = boxes.unbind(-1)
    c, s = torch.cos(a).abs(), torch.sin(a).abs()
    ex = 0.5 * (c * w + s * h)
    ey = 0.5 * (s * w + c * h)
    return torch.stack((cx - ex, cy - ey, cx + ex, cy + ey), dim=-1)


def polygons_to_obb(polygons: torch.Tensor) -> torch.Tensor:
    """Minimum-area rectangle around each point set: (N, K, 2) or (N, 2K) -> (N, 5) [cx, cy, w, h, angle].

    Typically K = 4 (DOTA-style quadrilaterals, or the output of :func:`obb_to_polygons`). Vectorised for any
    device: the minimum-area rectangle has a side parallel to a convex-hull edge, and every hull edge joins two
    of the points, so trying the K(K-1)/2 directions between pairs of points and keeping the smallest area
    finds it without a per-box loop (the other directions only give larger enclosing rectangles).

    The returned name of each rectangle is canonical:

    * w >= h and angle in [-pi/2, pi/2) (mmrotate's ``le90``): an axis-aligned box wider than tall has angle 0, one
      taller than wide angle -pi/2 (its long side is the width);
    * a square (w == h up to the points' own rounding, i.e. a few float ulps of their largest coordinate; both sides
      are then returned as the larger) has its angle in [-pi/4, pi/4): the one of its four names nearest the x
      axis, so an axis-aligned square is angle 0, as mmrotate 1.x's ``qbox2rbox`` + ``le90`` and users expect.
      (Regularising an angle-0 square with :func:`obbmeta.conventions.to_le90` gives -pi/2, as mmrotate's
      ``regularize_boxes`` does; the minimum-area rectangle has no input angle to keep, so it takes the nearest.)

    Collinear points give h = 0; coincident points give w = h = 0 and angle 0. Computed in float64; returned as
    float64 for float64 polygons, else float32 (the ranges hold in the returned precision). An empty (0, K, 2) or
    (0, 2K) input gives an empty (0, 5) result.

    Memory is bounded: polygons are processed in chunks of at most ~4 M candidate projections, and K is limited
    to 64 points (the pair search grows as K^3 per polygon; pass the convex hull of larger point sets).
    """
    if not isinstance(polygons, torch.Tensor):
        raise TypeError(f"polygons must be a torch.Tensor of shape (N, K, 2) or (N, 2K), got {type(polygons).__name__}")
    if polygons.dim() == 2 and polygons.shape[1] % 2 == 0 and polygons.shape[1] >= 4:
        polygons = polygons.reshape(polygons.shape[0], polygons.shape[1] // 2, 2)
    if polygons.dim() != 3 or polygons.shape[2] != 2 or polygons.shape[1] < 2:
        raise ValueError(f"polygons must have shape (N, K, 2) or (N, 2K) with K >= 2, got {tuple(polygons.shape)}")
    if not polygons.is_floating_point():
        raise TypeError(f"polygons must be a floating-point tensor, got {polygons.dtype}")
    if polygons.numel() and not bool(torch.isfinite(polygons).all()):
        raise ValueError("polygons contains NaN or inf")
    n, k = polygons.shape[:2]
    if k > MAX_POLYGON_POINTS:
        raise ValueError(f"polygons have {k} points each; at most {MAX_POLYGON_POINTS} are supported (the search over "
                         "point pairs grows as K^3): pass the convex hull of each point set")
    out_dtype = torch.float64 if polygons.dtype == torch.float64 else torch.float32
    if n == 0:
        return polygons.new_zeros((0, 5), dtype=out_dtype)
    chunk = max(1, _CHUNK_ELEMENTS // (k * k * (k - 1) // 2))
    if n > chunk:
        return torch.cat([polygons_to_obb(polygons[i:i + chunk]) for i in range(0, n, chunk)])
    p = polygons.to(torch.float64)
    p = p - p.mean(dim=1, keepdim=True)  # centre for precision; added back below
    i, j = torch.triu_indices(k, k, offset=1, device=p.device)
    d = p[:, j] - p[:, i]  # (N, P, 2) candidate directions
    length = torch.linalg.vector_norm(d, dim=-1, keepdim=True)
    usable = length[..., 0] > 0
    x_axis = p.new_zeros(2)
    x_axis[0] = 1.0  # a fill on the device (torch.tensor(..., device=) would copy from the host and wait for it)
    u = torch.where(usable[..., None], d / length.clamp_min(1e-300), x_axis)
    v = torch.stack((-u[..., 1], u[..., 0]), dim=-1)
    pu = torch.einsum("nkc,npc->npk", p, u)  # (N, P, K) projections on each direction
    pv = torch.einsum("nkc,npc->npk", p, v)
    umin, umax = pu.amin(-1), pu.amax(-1)
    vmin, vmax = pv.amin(-1), pv.amax(-1)
    area = (umax - umin) * (vmax - vmin)
    area = torch.where(usable, area, torch.full_like(area, math.inf))
    best = area.argmin(dim=1)  # all unusable (coincident points): index 0 with the fallback direction (1, 0)
    take = lambda t: t.gather(1, best[:, None]).squeeze(1)  # noqa: E731
    ub = u.gather(1, best[:, None, None].expand(-1, 1, 2)).squeeze(1)
    vb = torch.stack((-ub[:, 1], ub[:, 0]), dim=-1)
    mu = 0.5 * (take(umin) + take(umax))
    mv = 0.5 * (take(vmin) + take(vmax))
    centre = polygons.to(torch.float64).mean(dim=1) + mu[:, None] * ub + mv[:, None] * vb
    w = take(umax) - take(umin)
    h = take(vmax) - take(vmin)
    angle = torch.atan2(ub[:, 1], ub[:, 0])
    out = torch.stack((centre[:, 0], centre[:, 1], w, h, angle), dim=-1)
    # A square's w and h differ only by rounding, which would make le90 flip its angle by a quarter turn at random;
    # they are compared against the precision the points carry.
    eps = max(torch.finfo(polygons.dtype).eps, torch.finfo(out_dtype).eps)
    square = (w - h).abs() <= _SQUARE_ULPS * eps * polygons.detach().abs().amax(dim=(1, 2)).to(torch.float64)
    # Canonical in float64 (exact axis directions give exactly 0), then again in the returned precision so that the
    # half-open ranges hold there too.
    return _canonical(_canonical(out, square).to(out_dtype), square)


def _canonical(boxes: torch.Tensor, square: torch.Tensor) -> torch.Tensor:
    """le90 for rectangles; for squares both sides the larger and the angle in [-pi/4, pi/4)."""
    side = torch.maximum(boxes[:, 2], boxes[:, 3])
    nearest = normalize_angle(boxes[:, 4], -math.pi / 4, math.pi / 2)
    as_square = torch.stack((boxes[:, 0], boxes[:, 1], side, side, nearest), dim=-1)
    return torch.where(square[:, None], as_square, to_le90(boxes))
