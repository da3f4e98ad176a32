"""The facts of an oriented box on NumPy arrays, for the code that stays torch-free (tracking, scenes, pyservicemaker
probes, the message consumer); ``obbmeta.ops`` holds their torch twins and ``kernels/obb_geometry.h`` the C ones.

A box is ``[cx, cy, w, h, angle]``: centre, the side along the box's own x axis, the side along its y axis, and the
angle in radians, positive clockwise on screen (image y axis down). Its corners are ``c + R(angle) (sx w, sy h)``
for the signs of :data:`CORNER_SIGNS`: the top-left corner of the un-rotated box first, then clockwise on screen.

* :func:`corners` — (N, 4, 2) polygons; :func:`aabb` — the tight axis-aligned box around each;
* :func:`meets_frame` — whether a box shares interior with the frame (the rule obbmeta's metadata writers skip by);
* :func:`wrap_angle` — an angle into [-period/2, period/2) (pi: a rectangle; 2*pi: a heading);
* :func:`box_iou_rotated_host` — the exact rotated IoU through obbmeta's C geometry core (:data:`GEOMETRY`, the host
  build of kernels/obb_geometry.h, whose status flags :data:`STATUS_FLAGS` are those of the CUDA NMS too).

All take (N, 5) or (5,) array-likes (an empty one is no box) and compute in float64 (the IoU: float32 boxes).
"""
from __future__ import annotations

import ctypes
import math

import numpy as np

from ._native import NativeLibrary
from ._validators import finite_number, finite_rows

CORNER_SIGNS = ((-0.5, -0.5), (0.5, -0.5), (0.5, 0.5), (-0.5, 0.5))
"""(sx, sy) per corner, in obbmeta's order: the corner is ``c + R(angle) (sx w, sy h)``."""


def _boxes(xywhr) -> np.ndarray:
    b = np.asarray(xywhr, dtype=np.float64)
    if b.size == 0:
        return b.reshape(0, 5)
    if b.ndim == 1 and b.shape == (5,):
        b = b[None]
    if b.ndim != 2 or b.shape[1] != 5:
        raise ValueError(f"xywhr must be (N, 5) or (5,) [cx, cy, w, h, angle], got shape {b.shape}")
    return b


def corners(xywhr) -> np.ndarray:
    """(N, 4, 2) float64 corners of each box, in the order of :data:`CORNER_SIGNS`."""
    b = _boxes(xywhr)
    signs = np.asarray(CORNER_SIGNS)
    c, s = np.cos(b[:, 4:5]), np.sin(b[:, 4:5])
    lx, ly = b[:, 2:3] * signs[:, 0], b[:, 3:4] * signs[:, 1]
    return np.stack((b[:, 0:1] + c * lx - s * ly, b[:, 1:2] + s * lx + c * ly), axis=-1)


def aabb(xywhr) -> np.ndarray:
    """(N, 4) float64 ``[x1, y1, x2, y2]``: the tight axis-aligned box around each box's polygon."""
    b = _boxes(xywhr)
    c, s = np.abs(np.cos(b[:, 4])), np.abs(np.sin(b[:, 4]))
    ex = 0.5 * (c * b[:, 2] + s * b[:, 3])
    ey = 0.5 * (s * b[:, 2] + c * b[:, 3])
    return np.stack((b[:, 0] - ex, b[:, 1] - ey, b[:, 0] + ex, b[:, 1] + ey), axis=1)


def meets_frame(xywhr, width: float, height: float) -> np.ndarray:
    """(N,) bool: the box and the frame ``[0, width] x [0, height]`` share interior (touching counts as outside).

    A separating-axis test on the frame's axes (the tight AABB) and on the box's two axes: the rule by which
    obbmeta's C metadata writer skips a box (``nvds_meta.c``), so every writer skips the same boxes.
    """
    b = _boxes(xywhr)
    box = aabb(b)
    meets = (box[:, 2] > 0.0) & (box[:, 3] > 0.0) & (box[:, 0] < width) & (box[:, 1] < height)
    c, s = np.cos(b[:, 4]), np.sin(b[:, 4])
    frame = np.array([[0.0, 0.0], [width, 0.0], [width, height], [0.0, height]])
    for ax, ay, half in ((c, s, 0.5 * b[:, 2]), (-s, c, 0.5 * b[:, 3])):
        centre = b[:, 0] * ax + b[:, 1] * ay
        proj = frame[:, 0, None] * ax + frame[:, 1, None] * ay  # (4, N)
        meets &= (proj.max(axis=0) > centre - half) & (proj.min(axis=0) < centre + half)
    return meets


def wrap_angle(angle, period: float = math.pi):
    """``angle`` (a float or an array) mapped into [-period/2, period/2), a whole number of periods away; float64.

    ``period`` is any positive finite number (a Python or NumPy scalar; pi: a rectangle, 2*pi: a heading); anything
    else raises (TypeError: not a number; ValueError: 0, negative, NaN or inf). The result is the input's remainder
    modulo ``period``, moved down by one period when it is at least period/2: ``np.mod`` is exact for angles >= 0 and
    rounds once (by at most half an ulp of ``period``) for angles < 0, where it adds the period; it can round a value
    just below a multiple of the period up to exactly ``period``, which wraps to 0. Whether the remainder is at least
    period/2 is decided exactly, so the result never reaches the open end, also for subnormal periods, and no step
    overflows for periods up to the largest float. NaN and +-inf angles give NaN.
    """
    period = finite_number("period", period, positive=True)
    with np.errstate(invalid="ignore"):  # inf angles: NaN, as documented
        r = np.mod(np.asarray(angle, dtype=np.float64), period)  # [0, period]
    # r >= period / 2, decided without rounding: period - r is exact there (Sterbenz), and where it rounds it stays
    # above period / 2 > r. r - period is exact where it is taken.
    return np.where(r >= period - r, r - period, r)[()]


# ---------------------------------------------------------------- the C geometry core

STATUS_BOXES = 1  # a box (the decodes: a candidate's) holds NaN / inf, or float64 values beyond 1e150
STATUS_SCORES = 2  # a score is NaN / inf (the decodes: a candidate's score is inf)
STATUS_OVERFLOW = 4  # the candidate words outgrew the pool given (status[2]: how many the data needed)
STATUS_CLASSES = 8  # end-to-end heads: a class above conf is not an id (set by obbmeta.decode in Python only)
STATUS_FLAGS = (STATUS_BOXES, STATUS_SCORES, STATUS_OVERFLOW, STATUS_CLASSES)  # kernels/obb_status.h's order
# Checked against the compiled library's table when it loads (obbmeta/_native.py).
STATUS_CONSTANTS = {"OBB_STATUS_BOXES": STATUS_BOXES, "OBB_STATUS_SCORES": STATUS_SCORES,
                    "OBB_STATUS_OVERFLOW": STATUS_OVERFLOW, "OBB_STATUS_CLASSES": STATUS_CLASSES}

_p, _i64 = ctypes.c_void_p, ctypes.c_int64
GEOMETRY = NativeLibrary(
    "_geometry", "C geometry core", abi=4, abi_function="obbmeta_geometry_abi_version",
    functions={
        "obbmeta_iou_matrix": (None, [_p, _i64, _p, _i64, _p, ctypes.c_int]),
        "obbmeta_iou_aligned": (None, [_p, _p, _i64, _p, ctypes.c_int]),
        "obbmeta_nms": (_i64, [_p, _p, ctypes.c_int, _p, _i64, ctypes.c_double, _p]),
        "obbmeta_aabb_overlap_pairs": (_i64, [_p, _i64, _p, _i64, _p, _p, _i64]),
        "obbmeta_greedy_match": (_i64, [_p, _p, _p, _i64, ctypes.c_double, _p, _p, _p, _p]),
    },
    constants=STATUS_CONSTANTS, table_function="obbmeta_geometry_abi_table")


def geometry_library() -> ctypes.CDLL:
    """The host build of kernels/obb_geometry.h (kernels/geometry_cpu.c), loaded and checked on first use."""
    return GEOMETRY.load()


def box_iou_rotated_host(boxes1, boxes2, aligned: bool = False) -> np.ndarray:
    """``obbmeta.ops.box_iou_rotated`` on NumPy arrays, for per-frame callers on the CPU (trackers): the same C code
    without torch (and its operator dispatch, which costs tens of microseconds per call on small inputs).

    Args: ``boxes1`` (N, 5) and ``boxes2`` (M, 5) array-likes [cx, cy, w, h, angle]; ``aligned``: N == M and the
    (N,) IoU of each pair (i, i). Returns a float32 ``numpy.ndarray`` (N, M), or (N,) when ``aligned``.
    """
    a = finite_rows("boxes1", boxes1, 5, np.float32, "(N, 5) [cx, cy, w, h, angle]")
    b = finite_rows("boxes2", boxes2, 5, np.float32, "(N, 5) [cx, cy, w, h, angle]")
    n, m = a.shape[0], b.shape[0]
    lib = geometry_library()
    if aligned:
        if n != m:
            raise ValueError(f"aligned=True needs boxes1 and boxes2 of equal length, got {n} and {m}")
        out = np.empty(n, np.float32)
        if n:
            lib.obbmeta_iou_aligned(a.ctypes.data, b.ctypes.data, n, out.ctypes.data, 0)  # 0: float32 boxes
        return out
    out = np.empty((n, m), np.float32)
    if n and m:
        lib.obbmeta_iou_matrix(a.ctypes.data, n, b.ctypes.data, m, out.ctypes.data, 0)  # 0: float32 boxes
    return out


def aabb_overlap_pairs(aabbs1, aabbs2) -> tuple[np.ndarray, np.ndarray]:
    """The (i, j) index pairs of axis-aligned boxes ``aabbs1[i]`` and ``aabbs2[j]`` ((N, 4) and (M, 4) array-likes
    [x1, y1, x2, y2]) whose overlap has positive width and height, row-major (what ``numpy.nonzero`` gives on the
    dense (N, M) overlap mask), as two int64 arrays. A uniform grid in C (kernels/obb_match.h, the code of the
    tracker's own step): its cost grows with the pairs in shared cells, not with N x M (a tracker's 450 x 450 boxes
    in rows and columns, 516 pairs, in 0.05 ms on the 2-core dev machine, where a sweep along x took 0.14 ms and the
    dense NumPy mask before it about 2.4 ms)."""
    a = finite_rows("aabbs1", aabbs1, 4, np.float64, "(N, 4) [x1, y1, x2, y2]")
    b = finite_rows("aabbs2", aabbs2, 4, np.float64, "(N, 4) [x1, y1, x2, y2]")
    n, m = a.shape[0], b.shape[0]
    if not n or not m:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    capacity = 4 * (n + m) + 16
    while True:  # at most twice: the first count says how much room the pairs need
        ti, di = np.empty(capacity, np.int64), np.empty(capacity, np.int64)
        count = geometry_library().obbmeta_aabb_overlap_pairs(a.ctypes.data, n, b.ctypes.data, m, ti.ctypes.data,
                                                              di.ctypes.data, capacity)
        if count < 0:
            raise MemoryError("aabb_overlap_pairs: out of memory")
        if count <= capacity:
            return ti[:count], di[:count]
        capacity = count
