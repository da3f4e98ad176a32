"""Which detection continues which track: IoU between predicted track boxes and detections, then greedy matching.

Two overlap measures, so that they can be compared on the same tracker:

* ``"rotated"``: the exact IoU of the oriented boxes (obbmeta's C geometry,
  :func:`obbmeta.geometry.box_iou_rotated_host`);
* ``"aabb"``: the IoU of their tight axis-aligned boxes, which is what an axis-aligned tracker such as nvtracker's
  IOU tracker sees of oriented objects (it is given ``rect_params``, the tight AABB).

For thin objects at 45 degrees side by side (parking rows, moored ships, skewed text lines) the AABBs of neighbours
overlap heavily while the rotated boxes do not: that is where the two measures disagree.

Only pairs whose AABBs overlap (and, when asked, of one class) are scored: the rest have IoU 0 under both measures,
and skipping them keeps a frame of 100 x 100 boxes to a few hundred exact IoUs.
"""
from __future__ import annotations

import numpy as np

from .._deprecation import renamed
from ..geometry import aabb, box_iou_rotated_host

ASSOCIATIONS = ("rotated", "aabb")


def buffered(xywhr: np.ndarray, buffer: float) -> np.ndarray:
    """Boxes with both sides lengthened by ``2 * buffer * sqrt(w * h)`` around the same centre and angle.

    Buffering the matching space is C-BIoU's remedy for irregular motion (Yang et al., WACV 2023), which grows each
    side in proportion to itself; here the margin is the same on both sides and scales with the box's size (like
    the motion noise), because the exact IoU of a thin box (a text line 400 x 18 px) collapses under a few pixels of
    camera shake or a degree of angle noise across its width, while a margin proportional to its 18 px would not
    help and one proportional to its 400 px would reach the neighbouring lines."""
    if not buffer:
        return xywhr
    out = np.array(xywhr, dtype=np.float64, copy=True)
    out[:, 2:4] += (2.0 * buffer * np.sqrt(out[:, 2] * out[:, 3]))[:, None]
    return out


def candidate_ious(tracks: np.ndarray, detections: np.ndarray, method: str, track_labels: np.ndarray | None = None,
                   detection_labels: np.ndarray | None = None, buffer: float = 0.0
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """IoU of every (track, detection) pair with overlapping AABBs (and equal labels when both label arrays are
    given), of the boxes enlarged by ``buffer`` (:func:`buffered`). Returns (track index, detection index, IoU)
    arrays, IoU > 0."""
    if method not in ASSOCIATIONS:
        raise ValueError(f"association must be one of {ASSOCIATIONS}, got {method!r}")
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
    if not len(tracks) or not len(detections):
        return empty
    tracks, detections = buffered(tracks, buffer), buffered(detections, buffer)
    ta, da = aabb(tracks), aabb(detections)
    iw = np.minimum(ta[:, None, 2], da[None, :, 2]) - np.maximum(ta[:, None, 0], da[None, :, 0])
    ih = np.minimum(ta[:, None, 3], da[None, :, 3]) - np.maximum(ta[:, None, 1], da[None, :, 1])
    meets = (iw > 0) & (ih > 0)
    if track_labels is not None and detection_labels is not None:
        meets &= track_labels[:, None] == detection_labels[None, :]
    ti, di = np.nonzero(meets)
    if not ti.size:
        return empty
    if method == "aabb":
        inter = iw[ti, di] * ih[ti, di]
        area_t = (ta[ti, 2] - ta[ti, 0]) * (ta[ti, 3] - ta[ti, 1])
        area_d = (da[di, 2] - da[di, 0]) * (da[di, 3] - da[di, 1])
        iou = inter / np.maximum(area_t + area_d - inter, 1e-12)
    else:
        iou = box_iou_rotated_host(tracks[ti], detections[di], aligned=True).astype(np.float64)
    keep = iou > 0
    return ti[keep], di[keep], iou[keep]


def greedy_match(ti: np.ndarray, di: np.ndarray, iou: np.ndarray, threshold: float,
                 track_free: np.ndarray | None = None, detection_free: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Greedy one-to-one matching by descending IoU (ties: lower track, then lower detection index first), pairs
    with IoU >= ``threshold`` only, among free tracks / detections (boolean masks, updated in place when given).
    Returns matched (track, detection) indices.
    """
    ok = iou >= threshold
    if track_free is not None:
        ok &= track_free[ti]
    if detection_free is not None:
        ok &= detection_free[di]
    ti, di, iou = ti[ok], di[ok], iou[ok]
    if not ti.size:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.lexsort((di, ti, -iou))
    used_t: set[int] = set()
    used_d: set[int] = set()
    mt, md = [], []
    for t, d in zip(ti[order].tolist(), di[order].tolist()):
        if t in used_t or d in used_d:
            continue
        used_t.add(t)
        used_d.add(d)
        mt.append(t)
        md.append(d)
    mt_a, md_a = np.asarray(mt, np.int64), np.asarray(md, np.int64)
    if track_free is not None:
        track_free[mt_a] = False
    if detection_free is not None:
        detection_free[md_a] = False
    return mt_a, md_a


__getattr__ = renamed(__name__, {"aabb_of": ("obbmeta.geometry.aabb", lambda: aabb)})
