"""OrientedTracker's step written with NumPy: the oracle of the C step (kernels/track_cpu.c). This is the tracker
as it was before its step moved to C (every rule as tracker.py's docstring states it), kept here, outside the
package, so that the C code is checked against an independent implementation of the same rules: Kalman filters
per dimension, ByteTrack's three greedy stages over the candidate pairs, updates with aligned angles, new tracks.
The building blocks it shares with the package are themselves checked elsewhere: the exact IoU against shapely
(tests/ops), the pairs of overlapping AABBs against brute force and greedy matching against a plain-Python rule
(tests/track/test_association.py)."""
from __future__ import annotations

import math

import numpy as np

from obbmeta.geometry import aabb, aabb_overlap_pairs, box_iou_rotated_host, wrap_angle
from obbmeta.track.association import greedy_match

MIN_SIDE = 1e-2
HALF_PI, TWO_PI = 0.5 * math.pi, 2.0 * math.pi


def stds(noise, wh):
    size = np.sqrt(np.maximum(wh[:, 0] * wh[:, 1], 1.0))[:, None]
    ones = np.ones((1, 4))
    value = np.concatenate((noise.position * size * ones, np.full_like(size, noise.angle_process)), axis=1)
    velocity = np.concatenate((noise.velocity * size * ones, np.full_like(size, noise.angle_velocity)), axis=1)
    measure = np.concatenate((noise.position * size * ones, np.full_like(size, noise.angle)), axis=1)
    return value, velocity, measure


def align_to(x, ref, heading):
    out = np.array(x, dtype=np.float64, copy=True)
    if heading:
        out[:, 4] = ref + wrap_angle(out[:, 4] - ref, TWO_PI)
        return out
    k = np.rint((out[:, 4] - ref) / HALF_PI)
    out[:, 4] -= k * HALF_PI
    odd = np.mod(k, 2.0) == 1.0
    out[odd, 2], out[odd, 3] = out[odd, 3], out[odd, 2].copy()
    return out


def buffered(x, buffer):
    if not buffer:
        return x
    out = np.array(x, dtype=np.float64, copy=True)
    out[:, 2:4] += (2.0 * buffer * np.sqrt(out[:, 2] * out[:, 3]))[:, None]
    return out


def candidates(tracks, dets, aabb_iou, tl, dl, buffer):
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
    if not len(tracks) or not len(dets):
        return empty
    tracks, dets = buffered(tracks, buffer), buffered(dets, buffer)
    ta, da = aabb(tracks), aabb(dets)
    ti, di = aabb_overlap_pairs(ta, da)
    if tl is not None:
        same = tl[ti] == dl[di]
        ti, di = ti[same], di[same]
    if not ti.size:
        return empty
    if aabb_iou:
        iw = np.minimum(ta[ti, 2], da[di, 2]) - np.maximum(ta[ti, 0], da[di, 0])
        ih = np.minimum(ta[ti, 3], da[di, 3]) - np.maximum(ta[ti, 1], da[di, 1])
        inter = iw * ih
        area_t = (ta[ti, 2] - ta[ti, 0]) * (ta[ti, 3] - ta[ti, 1])
        area_d = (da[di, 2] - da[di, 0]) * (da[di, 3] - da[di, 1])
        iou = inter / np.maximum(area_t + area_d - inter, 1e-12)
    else:
        iou = box_iou_rotated_host(tracks[ti], dets[di], aligned=True).astype(np.float64)
    keep = iou > 0
    return ti[keep], di[keep], iou[keep]


class Stream:
    """One stream's tracks as parallel arrays; the Kalman state as (T, 5) value, velocity and 2x2 covariances."""

    FIELDS = ("ids", "labels", "confirmed", "hits", "lost", "score", "mean", "velocity", "p00", "p01", "p11")

    def __init__(self):
        self.ids, self.labels, self.hits, self.lost = (np.zeros(0, np.int64) for _ in range(4))
        self.confirmed, self.score = np.zeros(0, bool), np.zeros(0, np.float32)
        self.mean, self.velocity, self.p00, self.p01, self.p11 = (np.zeros((0, 5)) for _ in range(5))
        self.frames = 0

    def __len__(self):
        return self.ids.shape[0]

    def keep(self, index):
        for name in self.FIELDS:
            setattr(self, name, getattr(self, name)[index])

    def boxes(self):
        b = self.mean.copy()
        b[:, 2:4] = np.maximum(b[:, 2:4], MIN_SIDE)
        return b

    def predict(self, noise):
        q_value, q_velocity, _ = stds(noise, np.maximum(self.mean[:, 2:4], MIN_SIDE))
        p00, p01, p11 = self.p00, self.p01, self.p11
        self.mean = self.mean + self.velocity
        self.p00 = p00 + 2.0 * p01 + p11 + np.square(q_value)
        self.p01 = p01 + p11
        self.p11 = p11 + np.square(q_velocity)

    def update(self, rows, z, r):
        p00, p01, p11 = self.p00[rows], self.p01[rows], self.p11[rows]
        residual = z - self.mean[rows]
        s = p00 + np.square(r)
        k0, k1 = p00 / s, p01 / s
        self.mean[rows] = self.mean[rows] + k0 * residual
        self.velocity[rows] = self.velocity[rows] + k1 * residual
        self.p00[rows] = (1.0 - k0) * p00
        self.p01[rows] = (1.0 - k0) * p01
        self.p11[rows] = p11 - k1 * p01


class ReferenceTracker:
    """The rules of OrientedTracker on NumPy, one stream per source id; ``step`` returns (det_ids, det_boxes,
    pred_ids, pred_boxes, pred_labels, pred_scores) as TrackStep has them."""

    def __init__(self, tracker):
        self.t = tracker  # an OrientedTracker: only its settings are read
        self.streams = {}
        self.next_id = 1

    def step(self, x, s, lab, source_id=0, detection_done=True):
        t, st = self.t, self.streams.setdefault(source_id, Stream())
        x = np.asarray(x, np.float64).reshape(-1, 5)
        s = np.asarray(s, np.float64)
        lab = np.asarray(lab, np.int64)
        if len(st):
            st.predict(t.noise)
        det_ids, det_boxes = np.full(len(x), -1, np.int64), x.astype(np.float32)
        if not detection_done:
            return (det_ids, det_boxes, *self._report(st, lost_max=t.output_lost, skip_matched=False))
        n = len(st)
        ti, di, iou = candidates(st.boxes(), x, t.association == "aabb", st.labels if t.class_aware else None,
                                 lab if t.class_aware else None, t.buffer)
        high = s >= t.high_score
        low = (s >= t.low_score) & ~high
        det_free = high.copy()
        m1 = greedy_match(ti, di, iou, t.match_iou, st.confirmed.copy(), det_free)
        in_m1 = np.zeros(n, bool)
        in_m1[m1[0]] = True
        m2 = greedy_match(ti, di, iou, t.low_match_iou, st.confirmed & (st.lost == 0) & ~in_m1, low.copy())
        m3 = greedy_match(ti, di, iou, t.tentative_match_iou, ~st.confirmed, det_free)
        mt = np.concatenate((m1[0], m2[0], m3[0]))
        md = np.concatenate((m1[1], m2[1], m3[1]))
        if mt.size:
            z = align_to(x[md], st.mean[mt, 4], t.heading)
            _, _, r = stds(t.noise, np.maximum(z[:, 2:4], MIN_SIDE))
            st.update(mt, z, r)
            st.hits[mt] += 1
            st.lost[mt] = 0
            st.score[mt] = s[md]
            st.confirmed[mt] |= st.hits[mt] >= t.min_hits
        matched = np.zeros(n, bool)
        matched[mt] = True
        st.lost[~matched] += 1
        ok = st.confirmed[mt]
        det_ids[md[ok]] = st.ids[mt[ok]]
        det_boxes[md[ok]] = st.boxes()[mt[ok]].astype(np.float32)
        st.keep((matched | st.confirmed) & (st.lost <= t.max_age))
        new = det_free & (s >= t.new_track_score)
        if new.any():
            k = int(new.sum())
            ids = np.arange(self.next_id, self.next_id + k, dtype=np.int64)
            self.next_id += k
            z = x[new]
            _, q_velocity, r = stds(t.noise, z[:, 2:4])
            confirm = np.full(k, st.frames == 0 or t.min_hits <= 1)
            for name, value in (("ids", ids), ("labels", lab[new]), ("confirmed", confirm),
                                ("hits", np.ones(k, np.int64)), ("lost", np.zeros(k, np.int64)),
                                ("score", s[new].astype(np.float32)), ("mean", z), ("velocity", np.zeros_like(z)),
                                ("p00", np.square(2.0 * r)), ("p01", np.zeros_like(z)),
                                ("p11", np.square(10.0 * q_velocity))):
                setattr(st, name, np.concatenate((getattr(st, name), value)))
            det_ids[np.flatnonzero(new)[confirm]] = ids[confirm]
        st.frames += 1
        return (det_ids, det_boxes, *self._report(st, lost_max=t.output_lost, skip_matched=True))

    @staticmethod
    def _report(st, lost_max, skip_matched):
        sel = st.confirmed & (st.lost <= lost_max)
        if skip_matched:
            sel &= st.lost >= 1
        return st.ids[sel], st.boxes()[sel].astype(np.float32), st.labels[sel], st.score[sel]
