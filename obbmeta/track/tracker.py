"""OrientedTracker: a SORT / ByteTrack-style multi-object tracker for oriented boxes.

Per frame: every track's (cx, cy, w, h, angle) is predicted by a constant-velocity Kalman filter
(:mod:`obbmeta.track.kalman`); detections are matched to predictions greedily by IoU in three stages, as in
ByteTrack: confident detections with all confirmed tracks (also those lost for up to ``max_age`` frames), then the
low-score detections with the confirmed tracks that were seen on the previous detection frame, then the remaining
confident detections with tentative tracks. Matched tracks are updated with the detection re-described to continue
the track's angle (:func:`obbmeta.track.angles.align_to`); unmatched confident detections start tentative tracks,
confirmed after ``min_hits`` matched frames. The overlap is the exact rotated IoU, or (``association="aabb"``, for
comparison) the IoU of the boxes' tight axis-aligned boxes, which is what an axis-aligned tracker sees.

Frames without detection (``detection_done=False``: nvinfer's ``interval``) only advance the prediction; they do
not count as misses, like nvtracker.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from .._validators import int_in_range, is_int, number_in_range
from ..nvds.nvtracker import TRACKER_MADE_CONFIDENCE
from .angles import align_to
from .association import ASSOCIATIONS, candidate_ious, greedy_match
from .kalman import KalmanBank

if TYPE_CHECKING:  # torch is imported by the OrientedBoxes paths only: obbmeta.track itself is torch-free
    from ..boxes import OrientedBoxes

MIN_SIDE = 1e-2  # filtered widths / heights never go below this (pixels): boxes stay valid


@dataclass(frozen=True)
class MotionNoise:
    """Standard deviations of the constant-velocity model, per frame. Position and size terms are fractions of a
    box's size sqrt(w * h) (ByteTrack uses the same fractions of the height); angle terms are radians."""
    position: float = 1.0 / 20.0      # measurement and process noise of cx, cy, w, h
    velocity: float = 1.0 / 160.0     # process noise of their velocities
    angle: float = 0.05               # measurement noise of the angle (about 3 degrees)
    angle_process: float = 0.02       # process noise of the angle
    angle_velocity: float = 0.002     # process noise of the angular velocity

    def __post_init__(self):
        for name in ("position", "velocity", "angle", "angle_process", "angle_velocity"):
            number_in_range(f"MotionNoise.{name}", getattr(self, name), 0.0, sys.float_info.max,
                            "a positive finite number", low_open=True)

    def stds(self, wh: np.ndarray, dims: slice = slice(0, 5)) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(process value std, process velocity std, measurement std), each (T, 5)[:, dims], for boxes of
        widths / heights ``wh`` (T, 2)."""
        size = np.sqrt(np.maximum(wh[:, 0] * wh[:, 1], 1.0))[:, None]
        ones = np.ones((1, 4))
        value = np.concatenate((self.position * size * ones, np.full_like(size, self.angle_process)), axis=1)
        velocity = np.concatenate((self.velocity * size * ones, np.full_like(size, self.angle_velocity)), axis=1)
        measure = np.concatenate((self.position * size * ones, np.full_like(size, self.angle)), axis=1)
        return value[:, dims], velocity[:, dims], measure[:, dims]


@dataclass
class TrackStep:
    """What one frame did, as NumPy arrays. Detections: ``det_track_ids`` (D,) int64, the confirmed track of each
    input detection or -1 (tentative, unmatched or below ``low_score``); ``det_xywhr`` (D, 5) the filtered box of
    its track (the detection itself where untracked). Predictions: confirmed tracks without a detection on this
    frame that are reported (``output_lost``; every reported track on a frame without detection):
    ``pred_track_ids`` (P,), ``pred_xywhr`` (P, 5), ``pred_labels`` (P,), ``pred_scores`` (P,) (the track's last
    detection score)."""
    det_track_ids: np.ndarray
    det_xywhr: np.ndarray
    pred_track_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    pred_xywhr: np.ndarray = field(default_factory=lambda: np.zeros((0, 5), np.float32))
    pred_labels: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    pred_scores: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))


class _Tracks:
    """The tracks of one stream, as parallel arrays (row = track)."""

    def __init__(self):
        self.ids = np.zeros(0, np.int64)
        self.labels = np.zeros(0, np.int64)
        self.confirmed = np.zeros(0, bool)
        self.hits = np.zeros(0, np.int64)
        self.lost = np.zeros(0, np.int64)  # detection frames since the last match
        self.score = np.zeros(0, np.float32)
        self.kf = KalmanBank(5)
        self.detection_frames = 0

    def __len__(self) -> int:
        return self.ids.shape[0]

    def boxes(self) -> np.ndarray:
        b = self.kf.mean.copy()
        b[:, 2:4] = np.maximum(b[:, 2:4], MIN_SIDE)
        return b

    def keep(self, index) -> None:
        for name in ("ids", "labels", "confirmed", "hits", "lost", "score"):
            setattr(self, name, getattr(self, name)[index])
        self.kf.keep(index)


def _check_fraction(name: str, value: Any) -> float:
    return number_in_range(name, value, 0.0, 1.0)


def _check_count(name: str, value: Any, low: int) -> int:
    return int_in_range(name, value, low)


class OrientedTracker:
    """Multi-object tracker for oriented boxes (one state per ``source_id``; track ids unique across streams).

    >>> tracker = OrientedTracker()                        # rotated-IoU association
    >>> for dets in detections_per_frame:                  # doctest: +SKIP
    ...     tracked = tracker.update(dets)                 # OrientedBoxes with .track_ids
    >>> tracker.update_frame(batch, frame_meta)            # doctest: +SKIP  (NvDsBatchMeta: writes object_id)

    Args:
        association: ``"rotated"`` (exact IoU of the oriented boxes) or ``"aabb"`` (IoU of their axis-aligned
            boxes, what nvtracker's IOU association sees; for comparison).
        match_iou: least IoU for confident detections with confirmed tracks (ByteTrack: 0.2).
        low_match_iou: least IoU for low-score detections with confirmed tracks (ByteTrack: 0.5).
        tentative_match_iou: least IoU for confident detections with tentative tracks (ByteTrack: 0.3).
        high_score: detections with a score >= this are confident; ``low_score`` <= score < ``high_score`` are
            used only to continue tracks; lower ones are ignored.
        new_track_score: least score of a detection that starts a track.
        min_hits: matched frames that confirm a track (on a stream's first detection frame tracks are confirmed
            at once, as in ByteTrack).
        max_age: detection frames a confirmed track survives without a match (then its id is never used again).
        class_aware: match only detections and tracks of one class.
        heading: the angle is a 2*pi heading (w along the heading): never flipped by pi or swapped with h.
        output_lost: also report confirmed tracks missed for up to this many detection frames, at their predicted
            box (0: only tracks matched on this frame, like nvtracker without shadow-track output).
        noise: :class:`MotionNoise`.
    """

    def __init__(self, association: str = "rotated", *, match_iou: float = 0.2, low_match_iou: float = 0.5,
                 tentative_match_iou: float = 0.3, high_score: float = 0.5, low_score: float = 0.1,
                 new_track_score: float = 0.6, min_hits: int = 2, max_age: int = 30, class_aware: bool = True,
                 heading: bool = False, output_lost: int = 0, buffer: float = 0.15,
                 noise: MotionNoise = MotionNoise()):
        if association not in ASSOCIATIONS:
            raise ValueError(f"association must be one of {ASSOCIATIONS}, got {association!r}")
        if not isinstance(noise, MotionNoise):
            raise TypeError(f"noise must be an obbmeta.track.MotionNoise, got {type(noise).__name__}")
        self.association = association
        self.match_iou = _check_fraction("match_iou", match_iou)
        self.low_match_iou = _check_fraction("low_match_iou", low_match_iou)
        self.tentative_match_iou = _check_fraction("tentative_match_iou", tentative_match_iou)
        self.high_score = float(high_score)
        self.low_score = float(low_score)
        self.new_track_score = float(new_track_score)
        if not (self.low_score <= self.high_score <= self.new_track_score) or not all(
                math.isfinite(v) for v in (self.low_score, self.high_score, self.new_track_score)):
            raise ValueError("scores must satisfy low_score <= high_score <= new_track_score, got "
                             f"{low_score}, {high_score}, {new_track_score}")
        self.min_hits = _check_count("min_hits", min_hits, 1)
        self.max_age = _check_count("max_age", max_age, 0)
        self.output_lost = _check_count("output_lost", output_lost, 0)
        self.buffer = number_in_range("buffer", buffer, 0.0, 2.0)
        self.class_aware = bool(class_aware)
        self.heading = bool(heading)
        self.noise = noise
        self._streams: dict[int, _Tracks] = {}
        self._next_id = 1
        self.last: TrackStep | None = None
        self._labels: dict[int, dict[int, tuple[bytes, int]]] = {}  # per source: class -> (label, component id)

    # ---------------------------------------------------------------- state
    def reset(self, source_id: int | None = None) -> None:
        """Forget every track (of one stream, or of all); ids already given are never reused."""
        if source_id is None:
            self._streams.clear()
            self._labels.clear()
        else:
            self._streams.pop(source_id, None)
            self._labels.pop(source_id, None)

    def num_tracks(self, source_id: int | None = None, confirmed: bool = True) -> int:
        """Live tracks (confirmed only, or all) of one stream or of all."""
        streams = self._streams.values() if source_id is None else [self._streams.get(source_id, _Tracks())]
        return sum(int(s.confirmed.sum()) if confirmed else len(s) for s in streams)

    # ---------------------------------------------------------------- the step, on arrays
    @staticmethod
    def _inputs(xywhr: Any, scores: Any, labels: Any, source_id: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One frame's detections as (x (D, 5) float64, scores (D,) float64, labels (D,) int64), or the error."""
        x = np.asarray(xywhr, dtype=np.float64).reshape(-1, 5)
        d = x.shape[0]
        s = np.asarray(scores, dtype=np.float64).reshape(-1)
        lab = np.asarray(labels).reshape(-1)
        if s.shape != (d,) or lab.shape != (d,):
            raise ValueError(f"scores and labels must have shape ({d},) to match xywhr, got {s.shape} and {lab.shape}")
        if lab.dtype.kind not in "iu":
            raise TypeError(f"labels must be integer class ids, got dtype {lab.dtype}")
        if not (np.isfinite(x).all() and np.isfinite(s).all()):
            raise ValueError("xywhr and scores must be finite")
        if d and not ((x[:, 2] > 0).all() and (x[:, 3] > 0).all()):
            raise ValueError("every detection must have w > 0 and h > 0")
        if not is_int(source_id):
            raise TypeError(f"source_id must be an int, got {type(source_id).__name__}")
        return x, s, lab.astype(np.int64)

    def step(self, xywhr: Any, scores: Any, labels: Any, *, source_id: int = 0,
             detection_done: bool = True) -> TrackStep:
        """One frame on NumPy arrays (``xywhr`` (D, 5), ``scores`` (D,), ``labels`` (D,)); see :class:`TrackStep`."""
        x, s, lab = self._inputs(xywhr, scores, labels, source_id)
        if detection_done:
            return self._detection_step([(source_id, x, s, lab)])[0]
        st = self._streams.setdefault(source_id, _Tracks())
        if len(st):  # a frame without detection: the prediction moves on, nothing counts as a miss
            q_value, q_velocity, _ = self.noise.stds(np.maximum(st.kf.mean[:, 2:4], MIN_SIDE))
            st.kf.predict(q_value, q_velocity)
        self.last = self._predictions(st, np.full(x.shape[0], -1, np.int64), x.astype(np.float32),
                                      lost_max=self.output_lost)
        return self.last

    def step_many(self, frames: Sequence[tuple[int, Any, Any, Any]]) -> list[TrackStep]:
        """:meth:`step` of several streams' detection frames at once: ``frames`` is a sequence of ``(source_id,
        xywhr, scores, labels)``, one per stream (a source twice is a ValueError). The same results, track ids and
        states as calling :meth:`step` on each in order (tested), in one pass over all their tracks: the per-call
        cost of NumPy is paid once for the batch, not once per frame (16 streams of a DeepStream batch)."""
        inputs = [(src, *self._inputs(x, sc, lab, src)) for src, x, sc, lab in frames]
        sources = [src for src, *_ in inputs]
        if len(set(sources)) != len(sources):
            raise ValueError(f"step_many takes one frame per stream, got source ids {sources}")
        return self._detection_step(inputs) if inputs else []

    def _detection_step(self, inputs: list) -> list[TrackStep]:
        """The detection step of checked frames ``(source_id, x, scores, labels)`` of distinct streams: every
        stream's tracks in one set of arrays, stream after stream (one stream: its own arrays), candidates only
        within a stream, greedy matching over all (pairs of two streams never share a track or a detection)."""
        streams = [self._streams.setdefault(src, _Tracks()) for src, *_ in inputs]
        g = len(streams)
        t_counts = np.array([len(st) for st in streams], np.int64)
        d_counts = np.array([x.shape[0] for _, x, _, _ in inputs], np.int64)
        t_off, d_off = np.concatenate(([0], np.cumsum(t_counts))), np.concatenate(([0], np.cumsum(d_counts)))
        if g == 1:
            m = streams[0]
            _, x, s, lab = inputs[0]
        else:
            m = _Tracks()
            for name in ("ids", "labels", "confirmed", "hits", "lost", "score"):
                setattr(m, name, np.concatenate([getattr(st, name) for st in streams]))
            for name in KalmanBank.__slots__:
                setattr(m.kf, name, np.concatenate([getattr(st.kf, name) for st in streams]))
            x = np.concatenate([x for _, x, _, _ in inputs])
            s = np.concatenate([sc for _, _, sc, _ in inputs])
            lab = np.concatenate([la for _, _, _, la in inputs])
        t_group = np.repeat(np.arange(g), t_counts)
        d_group = np.repeat(np.arange(g), d_counts)
        first_g = np.array([st.detection_frames == 0 for st in streams])
        n = self.noise
        if len(m):
            q_value, q_velocity, _ = n.stds(np.maximum(m.kf.mean[:, 2:4], MIN_SIDE))
            m.kf.predict(q_value, q_velocity)
        det_ids = np.full(x.shape[0], -1, np.int64)
        det_boxes = x.astype(np.float32)
        t = len(m)
        pred = m.boxes()
        ti, di, iou = _grouped_candidates(pred, x, t_off, d_off, self.association,
                                          m.labels if self.class_aware else None, lab if self.class_aware else None,
                                          self.buffer)
        high = s >= self.high_score
        low = (s >= self.low_score) & ~high
        det_free = high.copy()
        m1 = greedy_match(ti, di, iou, self.match_iou, m.confirmed.copy(), det_free)
        m2 = greedy_match(ti, di, iou, self.low_match_iou, m.confirmed & (m.lost == 0) & ~_mask(t, m1[0]),
                          low.copy())
        m3 = greedy_match(ti, di, iou, self.tentative_match_iou, ~m.confirmed, det_free)
        mt = np.concatenate((m1[0], m2[0], m3[0]))
        md = np.concatenate((m1[1], m2[1], m3[1]))
        if mt.size:
            z = align_to(x[md], m.kf.mean[mt, 4], self.heading)
            _, _, r = n.stds(np.maximum(z[:, 2:4], MIN_SIDE))
            m.kf.update(mt, z, r)
            m.hits[mt] += 1
            m.lost[mt] = 0
            m.score[mt] = s[md]
            m.confirmed[mt] |= m.hits[mt] >= self.min_hits
        matched = _mask(t, mt)
        m.lost[~matched] += 1
        ok = m.confirmed[mt]
        det_ids[md[ok]] = m.ids[mt[ok]]
        det_boxes[md[ok]] = m.boxes()[mt[ok]].astype(np.float32)
        kept = (matched | m.confirmed) & (m.lost <= self.max_age)
        m.keep(kept)
        t_group = t_group[kept]
        new = det_free & (s >= self.new_track_score)
        if new.any():
            k = int(new.sum())
            ids = np.arange(self._next_id, self._next_id + k, dtype=np.int64)  # in frame order, as step would
            self._next_id += k
            z = x[new]
            _, q_velocity, r = n.stds(z[:, 2:4])
            m.kf.append(z, 2.0 * r, 10.0 * q_velocity)
            confirm = first_g[d_group[new]] | (self.min_hits <= 1)
            m.ids = np.concatenate((m.ids, ids))
            m.labels = np.concatenate((m.labels, lab[new]))
            m.confirmed = np.concatenate((m.confirmed, confirm))
            m.hits = np.concatenate((m.hits, np.ones(k, np.int64)))
            m.lost = np.concatenate((m.lost, np.zeros(k, np.int64)))
            m.score = np.concatenate((m.score, s[new].astype(np.float32)))
            t_group = np.concatenate((t_group, d_group[new]))
            det_ids[np.flatnonzero(new)[confirm]] = ids[confirm]
        if g > 1:
            order = np.argsort(t_group, kind="stable")  # per stream: its kept tracks, then its new ones
            m.keep(order)
            bounds = np.searchsorted(t_group[order], np.arange(g + 1))
            for k, st in enumerate(streams):
                rows = slice(int(bounds[k]), int(bounds[k + 1]))
                for name in ("ids", "labels", "confirmed", "hits", "lost", "score"):
                    setattr(st, name, getattr(m, name)[rows].copy())
                for name in KalmanBank.__slots__:
                    setattr(st.kf, name, getattr(m.kf, name)[rows].copy())
        steps = []
        for k, st in enumerate(streams):
            st.detection_frames += 1
            dets = slice(int(d_off[k]), int(d_off[k + 1]))
            steps.append(self._predictions(st, det_ids[dets].copy(), det_boxes[dets].copy(),
                                           lost_max=self.output_lost, skip_matched=True))
        self.last = steps[-1]
        return steps

    def _predictions(self, st: _Tracks, det_ids: np.ndarray, det_boxes: np.ndarray, lost_max: int,
                     skip_matched: bool = False) -> TrackStep:
        sel = st.confirmed & (st.lost <= lost_max)
        if skip_matched:
            sel &= st.lost >= 1
        return TrackStep(det_ids, det_boxes, st.ids[sel].copy(), st.boxes()[sel].astype(np.float32),
                         st.labels[sel].copy(), st.score[sel].copy())

    # ---------------------------------------------------------------- OrientedBoxes in, OrientedBoxes out
    def update(self, boxes: OrientedBoxes | None, *, source_id: int = 0, detection_done: bool = True
               ) -> OrientedBoxes:
        """Track one frame of ``boxes`` (None or ``detection_done=False``: a frame without detection).

        Returns the tracked detections, in input order, with ``track_ids`` and each track's filtered box (the angle
        continues the track's: no jump by pi or swap of w and h between frames), followed by the reported tracks
        without a detection on this frame at their predicted box (``output_lost``; on a frame without detection
        every confirmed track seen on the last detection frame). ``tracker.last`` has the whole
        :class:`TrackStep`. CUDA input gives CUDA output (the tracking itself runs on the CPU).
        """
        import torch

        from ..boxes import OrientedBoxes

        if boxes is None or not detection_done:
            device = boxes.device if boxes is not None else torch.device("cpu")
            step = self.step(np.zeros((0, 5)), np.zeros(0), np.zeros(0, np.int64), source_id=source_id,
                             detection_done=False)
            return _boxes(step, None, None, device)
        if not isinstance(boxes, OrientedBoxes):
            raise TypeError(f"boxes must be OrientedBoxes or None, got {type(boxes).__name__}")
        x, s, lab = boxes.numpy()
        step = self.step(x, s, lab, source_id=source_id)
        return _boxes(step, s, lab, boxes.device)

    # ---------------------------------------------------------------- NvDsBatchMeta
    def update_batch(self, batch: Any, frames: Any = None, *, remove_untracked: bool = True,
                     frame_size: tuple[float, float] | None = None) -> list["FrameTracking"]:
        """:meth:`update_frame` for every frame of ``batch`` (``batch.frames`` order). A batch of detection frames of
        distinct streams (what nvstreammux makes) is tracked in one :meth:`step_many`: the same results as frame
        after frame, at a fraction of the cost."""
        from .. import nvds

        b = batch if isinstance(batch, nvds.BatchMeta) else nvds.BatchMeta.from_address(batch)
        fs = [f if isinstance(f, nvds.FrameMeta) else nvds.FrameMeta(f, b)
              for f in (b.frames if frames is None else frames)]
        sources = [int(f.source_id) for f in fs]
        if len(fs) < 2 or len(set(sources)) != len(fs) or not all(f.infer_done for f in fs):
            return [self.update_frame(b, f, remove_untracked=remove_untracked, frame_size=frame_size) for f in fs]
        with b.locked():
            reads = [nvds.read_objects(f) for f in fs]
            caches = [self._remember_labels(src, a) for src, a in zip(sources, reads)]
            steps = self.step_many([(src, a.xywhr, a.confidence, a.class_id) for src, a in zip(sources, reads)])
            return [self._write_frame(b, f, a, st, cache, True, remove_untracked, frame_size)
                    for f, a, st, cache in zip(fs, reads, steps, caches)]

    def _remember_labels(self, source: int, objects: Any) -> dict:
        cache = self._labels.setdefault(source, {})
        for cls, label, comp in zip(objects.class_id.tolist(), objects.label.tolist(),
                                    objects.component_id.tolist()):
            cache[cls] = (label, comp)
        return cache

    def update_frame(self, batch: Any, frame: Any, *, remove_untracked: bool = True,
                     frame_size: tuple[float, float] | None = None) -> "FrameTracking":
        """Track the objects of one ``NvDsFrameMeta`` in place, as nvtracker would (see docs/track.md).

        On a frame with ``bInferDone`` every object is a detection (its OBB from obbmeta's payload, or the DS 9
        rotation, or rect_params). Tracked objects get ``object_id``, ``rect_params`` = the clipped AABB of the
        track's filtered box, ``tracker_bbox_info`` (unclipped), ``tracker_confidence`` = the detection score, and
        the filtered box as OBB payload (flag ``OBB_TRACKED``). The other objects are removed
        (``remove_untracked=False`` keeps them with ``UNTRACKED_OBJECT_ID``). Reported tracks without a detection
        (``output_lost``; all confirmed tracks on a frame without ``bInferDone``) are added as new objects at
        their predicted box: ``confidence`` -0.1 (nvtracker's mark of objects it made), the OBB payload flagged
        ``OBB_PREDICTED``, the class label and component id of the track's last detection. ``bInferDone`` is
        left as it was.
        """
        from .. import nvds

        b = batch if isinstance(batch, nvds.BatchMeta) else nvds.BatchMeta.from_address(batch)
        f = frame if isinstance(frame, nvds.FrameMeta) else nvds.FrameMeta(frame, b)
        source = int(f.source_id)
        with b.locked():  # recursive: the reads, writes and removals below see one consistent frame
            a = nvds.read_objects(f)
            cache = self._remember_labels(source, a)
            detection = bool(f.infer_done)
            if detection:
                step = self.step(a.xywhr, a.confidence, a.class_id, source_id=source)
            else:
                step = self.step(np.zeros((0, 5)), np.zeros(0), np.zeros(0, np.int64), source_id=source,
                                 detection_done=False)
            return self._write_frame(b, f, a, step, cache, detection, remove_untracked, frame_size)

    @staticmethod
    def _write_frame(b: Any, f: Any, a: Any, step: TrackStep, cache: dict, detection: bool, remove_untracked: bool,
                     frame_size: Any) -> "FrameTracking":
        """One frame's step written back as nvtracker writes it (see :meth:`update_frame`)."""
        from .. import nvds

        tracked = step.det_track_ids >= 0
        if tracked.any():
            nvds.update_objects(b, f, a.address[tracked], step.det_xywhr[tracked], obb_flags=nvds.OBB_TRACKED,
                                object_ids=step.det_track_ids[tracked].astype(np.uint64), rect=True,
                                tracker_confidence=a.confidence[tracked], frame_size=frame_size)
        removed = 0
        if detection and remove_untracked and (~tracked).any():
            removed = nvds.remove_objects(b, f, a.address[~tracked])
        added = _add_predicted(b, f, step, cache, frame_size)
        return FrameTracking(int(tracked.sum()), removed, added, step)


@dataclass(frozen=True)
class FrameTracking:
    """What :meth:`OrientedTracker.update_frame` did to one frame: objects ``tracked`` (object_id written),
    ``removed`` (untracked detections), ``added`` (tracks without a detection, at their predicted box), and the
    :class:`TrackStep`."""
    tracked: int
    removed: int
    added: int
    step: TrackStep


def _add_predicted(batch: Any, frame: Any, step: TrackStep, cache: dict, frame_size) -> int:
    """New object metas for the reported tracks without a detection: the predicted box as OBB payload
    (OBB_PREDICTED), decorated with the class's last label / component id, like nvtracker's own objects (bInferDone
    left as it is, detector_bbox_info zeroed)."""
    from .. import nvds

    rows = np.flatnonzero(step.pred_labels >= 0)  # attach_obbs writes class ids >= 0 only
    if not rows.size:
        return 0
    names = [cache.get(k, (str(k).encode(), 1))[0].decode("utf-8", "replace")
             for k in range(int(step.pred_labels[rows].max()) + 1)]
    comps = np.array([max(cache.get(int(k), (b"", 1))[1], 0) for k in step.pred_labels[rows]], np.int64)
    res = nvds.attach_obbs(batch, frame, xywhr=step.pred_xywhr[rows],
                           scores=np.full(rows.size, TRACKER_MADE_CONFIDENCE, np.float32),
                           labels=step.pred_labels[rows], class_names=names, component_id=comps,
                           frame_size=frame_size, mark_infer_done=False, detector_bbox=False)
    if not res.written:
        return 0
    written = rows[res.written_mask]
    nvds.update_objects(batch, frame, res.addresses[res.written_mask], step.pred_xywhr[written],
                        obb_flags=nvds.OBB_PREDICTED, object_ids=step.pred_track_ids[written].astype(np.uint64),
                        rect=True, tracker_confidence=step.pred_scores[written], frame_size=frame_size)
    return res.written


def _grouped_candidates(tracks: np.ndarray, detections: np.ndarray, t_off: np.ndarray, d_off: np.ndarray,
                        method: str, track_labels, detection_labels, buffer: float) -> tuple:
    """:func:`candidate_ious` of each stream's tracks with its own detections (stream k: rows ``t_off[k]:t_off[k+1]``
    and ``d_off[k]:d_off[k+1]``), as indices into all of them; the pairs of one stream come in one block."""
    parts = []
    for k in range(len(t_off) - 1):
        t0, t1, d0, d1 = int(t_off[k]), int(t_off[k + 1]), int(d_off[k]), int(d_off[k + 1])
        if t1 == t0 or d1 == d0:
            continue
        ti, di, iou = candidate_ious(tracks[t0:t1], detections[d0:d1], method,
                                     None if track_labels is None else track_labels[t0:t1],
                                     None if detection_labels is None else detection_labels[d0:d1], buffer)
        parts.append((ti + t0, di + d0, iou))
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    return tuple(np.concatenate(c) for c in zip(*parts))


def _mask(n: int, index: np.ndarray) -> np.ndarray:
    m = np.zeros(n, bool)
    m[index] = True
    return m


def _boxes(step: TrackStep, scores, labels, device) -> OrientedBoxes:
    import torch

    from ..boxes import OrientedBoxes

    tracked = step.det_track_ids >= 0
    parts_x = [step.det_xywhr[tracked], step.pred_xywhr]
    parts_s = [scores[tracked] if scores is not None else np.zeros(0, np.float32), step.pred_scores]
    parts_l = [labels[tracked] if labels is not None else np.zeros(0, np.int64), step.pred_labels]
    parts_i = [step.det_track_ids[tracked], step.pred_track_ids]
    out = OrientedBoxes(torch.from_numpy(np.concatenate(parts_x).astype(np.float32)),
                        torch.from_numpy(np.concatenate(parts_s).astype(np.float32)),
                        torch.from_numpy(np.concatenate(parts_l).astype(np.int64)),
                        torch.from_numpy(np.concatenate(parts_i).astype(np.int64)))
    return out if device.type == "cpu" else out.to(device)
