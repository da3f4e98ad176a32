"""Which detection continues which track: IoU between predicted track boxes and detections, then greedy matching.

Two overlap measures, so that they can be compared on the same tracker:

* ``"rotated"``: the exact IoU of the oriented boxes (obbmeta's C geometry,
  :func:`obbmeta.geometry.box_iou_rotated_host`);
* ``"aabb"``: the IoU of their tight axis-aligned boxes, which is what an axis-aligned tracker such as nvtracker's
  IOU tracker sees of oriented objects (it is given ``rect_params``, the tight AABB).

For thin objects at 45 degrees side by side (parking rows, moored ships, skewed text lines) the AABBs of neighbours
overlap heavily while the rotated boxes do not: that is where the two measures disagree.

Only pairs whose AABBs overlap (and, when asked, of one class) are scored: the rest have IoU 0 under both measures,
and skipping them keeps a frame of 100 x 100 boxes to a few hundred exact IoUs. The pairs come from a uniform grid in
C (kernels/obb_match.h, also :func:`obbmeta.geometry.aabb_overlap_pairs`), not a dense (tracks x detections) mask: a
frame of 500 aerial vehicles costs what its overlapping pairs cost. Both functions here are the C code the tracker's
step runs (kernels/track_cpu.c).
"""
from __future__ import annotations

import numpy as np

from .._validators import finite_rows, number_in_range
from ..geometry import geometry_library
from ._core import address, library

ASSOCIATIONS = ("rotated", "aabb")


def candidate_ious(tracks: np.ndarray, detections: np.ndarray, method: str, track_labels: np.ndarray | None = None,
                   detection_labels: np.ndarray | None = None, buffer: float = 0.0
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """IoU of every (track, detection) pair with overlapping AABBs (and equal labels when both label arrays are
    given), of the boxes enlarged by ``buffer``: both sides of each box lengthened by ``2 * buffer * sqrt(w * h)``
    around the same centre and angle. Returns (track index, detection index, IoU) arrays, IoU > 0, row-major.

    Buffering the matching space is C-BIoU's remedy for irregular motion (Yang et al., WACV 2023), which grows each
    side in proportion to itself; here the margin is the same on both sides and scales with the box's size (like
    the motion noise), because the exact IoU of a thin box (a text line 400 x 18 px) collapses under a few pixels of
    camera shake or a degree of angle noise across its width, while a margin proportional to its 18 px would not
    help and one proportional to its 400 px would reach the neighbouring lines.

    One C call (kernels/track_cpu.c), the code of the tracker's own step: the rotated IoU is that of the boxes'
    float32 values (:func:`obbmeta.geometry.box_iou_rotated_host`)."""
    if method not in ASSOCIATIONS:
        raise ValueError(f"association must be one of {ASSOCIATIONS}, got {method!r}")
    t, d = _boxes("tracks", tracks), _boxes("detections", detections)
    buffer = number_in_range("buffer", buffer, 0.0, 2.0)
    labels = [None, None]
    if track_labels is not None and detection_labels is not None:
        for k, (name, given, n) in enumerate((("track_labels", track_labels, t.shape[0]),
                                              ("detection_labels", detection_labels, d.shape[0]))):
            a = np.asarray(given)
            if a.shape != (n,) or a.dtype.kind not in "iu":
                raise ValueError(f"{name} must be ({n},) integer class ids, got {a.dtype} {a.shape}")
            labels[k] = np.ascontiguousarray(a, np.int64)
    n, m = t.shape[0], d.shape[0]
    capacity = 4 * (n + m) + 16
    while True:  # at most twice: the first count says how much room the pairs need
        ti, di, iou = np.empty(capacity, np.int64), np.empty(capacity, np.int64), np.empty(capacity)
        count = library().obbmeta_candidate_ious(address(t), address(labels[0]), n, address(d), address(labels[1]),
                                                 m, int(method == "aabb"), buffer, address(ti), address(di),
                                                 address(iou), capacity)
        if count < 0:
            raise MemoryError("candidate_ious: out of memory")
        if count <= capacity:
            return ti[:count], di[:count], iou[:count]
        capacity = count


def _boxes(name: str, value) -> np.ndarray:
    """(N, 5) float64 finite boxes; an empty input of any shape is no box (candidate_ious takes empty frames)."""
    a = np.asarray(value, dtype=np.float64)
    return a.reshape(0, 5) if a.size == 0 else finite_rows(name, a, 5, np.float64, "(N, 5) [cx, cy, w, h, angle]")


def greedy_match(ti: np.ndarray, di: np.ndarray, iou: np.ndarray, threshold: float,
                 track_free: np.ndarray | None = None, detection_free: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Greedy one-to-one matching by descending IoU (ties: lower track, then lower detection index first), pairs
    with IoU >= ``threshold`` only, among free tracks / detections (boolean masks, updated in place when given).
    Returns matched (track, detection) indices, in the order taken. One C call (kernels/geometry_cpu.c)."""
    ti = np.ascontiguousarray(ti, dtype=np.int64)
    di = np.ascontiguousarray(di, dtype=np.int64)
    iou = np.ascontiguousarray(iou, dtype=np.float64)
    if not (ti.shape == di.shape == iou.shape) or ti.ndim != 1:
        raise ValueError(f"ti, di and iou must be 1-D of one length, got {ti.shape}, {di.shape} and {iou.shape}")
    if np.isnan(iou).any():
        raise ValueError("iou contains NaN")
    n_t = int(ti.max()) + 1 if ti.size else 0
    n_d = int(di.max()) + 1 if di.size else 0
    if ti.size and (ti.min() < 0 or di.min() < 0):
        raise ValueError("ti and di must be non-negative indices")
    masks = []
    for name, given, n in (("track_free", track_free, n_t), ("detection_free", detection_free, n_d)):
        if given is None:
            masks.append((None, np.ones(n, np.bool_)))
            continue
        if not isinstance(given, np.ndarray) or given.dtype != np.bool_ or given.ndim != 1 or len(given) < n:
            raise ValueError(f"{name} must be a 1-D boolean array covering every index in the pairs "
                             f"(at least {n}), got {getattr(given, 'dtype', type(given).__name__)} "
                             f"{getattr(given, 'shape', '')}")
        work = given if given.flags.c_contiguous else np.ascontiguousarray(given)
        masks.append((given, work))
    (t_given, t_free), (d_given, d_free) = masks
    mt, md = np.empty(ti.size, np.int64), np.empty(ti.size, np.int64)
    count = geometry_library().obbmeta_greedy_match(ti.ctypes.data, di.ctypes.data, iou.ctypes.data, ti.size,
                                                    float(threshold), t_free.ctypes.data, d_free.ctypes.data,
                                                    mt.ctypes.data, md.ctypes.data) if ti.size else 0
    if count < 0:
        raise MemoryError("greedy_match: out of memory")
    for given, work in ((t_given, t_free), (d_given, d_free)):
        if given is not None and work is not given:
            given[:] = work
    return mt[:count], md[:count]

