"""Small vectorised raster helpers for the scene generators (NumPy, float32 images in [0, 1]).

Pixel (column j, row i) covers [j, j+1) x [i, i+1) and is sampled at its centre (j + 0.5, i + 0.5), the same
convention as :func:`obbmeta.osd.draw_obbs`. Shapes are drawn with a coverage of ``clip(0.5 - d, 0, 1)`` where
``d`` is a signed distance (negative inside) that never underestimates the true distance outside the shape, so a
shape's pixels stay within 0.5 px of it — which is what keeps every drawn object inside its ground-truth box.
"""
from __future__ import annotations

import math
from typing import Tuple

import numpy as np


def value_noise(rng: np.random.Generator, height: int, width: int, cell: float, octaves: int = 3) -> np.ndarray:
    """(height, width) float32 smooth noise in [0, 1]: random values on a grid of ``cell`` px, bilinearly
    interpolated, summed over ``octaves`` halvings of the cell with halving weights."""
    out = np.zeros((height, width), np.float32)
    total = 0.0
    weight = 1.0
    for _ in range(octaves):
        gh, gw = int(math.ceil(height / cell)) + 2, int(math.ceil(width / cell)) + 2
        grid = rng.random((gh, gw), dtype=np.float32)
        ys = (np.arange(height, dtype=np.float32) + 0.5) / cell
        xs = (np.arange(width, dtype=np.float32) + 0.5) / cell
        y0, x0 = ys.astype(np.int64), xs.astype(np.int64)
        fy, fx = (ys - y0)[:, None], (xs - x0)[None, :]
        fy, fx = fy * fy * (3 - 2 * fy), fx * fx * (3 - 2 * fx)  # smoothstep: no grid-aligned creases
        along_x = grid[:, x0] * (1 - fx) + grid[:, x0 + 1] * fx  # separable: rows of the grid first, (gh, W)
        out += weight * (along_x[y0] * (1 - fy) + along_x[y0 + 1] * fy)
        total += weight
        weight *= 0.5
        cell = max(cell / 2.0, 1.0)
    return out / total


def pixel_centres(height: int, width: int) -> Tuple[np.ndarray, np.ndarray]:
    """(x, y) float32 grids of pixel centres, shapes (1, W) and (H, 1) (broadcast together)."""
    return (np.arange(width, dtype=np.float32) + 0.5)[None, :], (np.arange(height, dtype=np.float32) + 0.5)[:, None]


def local_coords(x, y, cx, cy, angle):
    """Coordinates of points (x, y) along a box's width axis (cos a, sin a) and height axis (-sin a, cos a)."""
    c, s = math.cos(angle), math.sin(angle)
    dx, dy = x - cx, y - cy
    return dx * c + dy * s, -dx * s + dy * c


def box_sdf(u, v, half_w, half_h):
    """Signed distance to an axis-aligned box |u| <= half_w, |v| <= half_h (exact)."""
    qu, qv = np.abs(u) - half_w, np.abs(v) - half_h
    outside = np.sqrt(np.maximum(qu, 0) ** 2 + np.maximum(qv, 0) ** 2)
    return outside + np.minimum(np.maximum(qu, qv), 0)


def rounded_box_sdf(u, v, half_w, half_h, radius):
    """Signed distance to a box with rounded corners (inside the plain box of the same half sides)."""
    radius = min(radius, half_w, half_h)
    return box_sdf(u, v, half_w - radius, half_h - radius) - radius


def coverage(sdf) -> np.ndarray:
    """Anti-aliased coverage in [0, 1] from a signed distance in pixels."""
    return np.clip(0.5 - sdf, 0.0, 1.0).astype(np.float32)


def window(height: int, width: int, cx: float, cy: float, radius: float):
    """Row and column slices of the pixels within ``radius`` (+1) of (cx, cy), clipped to the image; None if empty."""
    x0, x1 = max(int(math.floor(cx - radius)) - 1, 0), min(int(math.ceil(cx + radius)) + 1, width)
    y0, y1 = max(int(math.floor(cy - radius)) - 1, 0), min(int(math.ceil(cy + radius)) + 1, height)
    if x0 >= x1 or y0 >= y1:
        return None
    return slice(y0, y1), slice(x0, x1)


def blend(image: np.ndarray, rows: slice, cols: slice, alpha: np.ndarray, color) -> None:
    """image[rows, cols] = image * (1 - alpha) + color * alpha, in place; ``color`` is (3,) or (h, w, 3)."""
    region = image[rows, cols]
    a = alpha[..., None]
    region += a * (np.asarray(color, np.float32) - region)


def to_uint8(image: np.ndarray) -> np.ndarray:
    return (np.clip(image, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
