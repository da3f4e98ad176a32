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
import os
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from .._validators import int_in_range, is_int, number_in_range
from ..nvds.nvtracker import TRACKER_MADE_CONFIDENCE
from ._core import (
    Detections,
    TrackParams,
    TrackReport,
    Tracks,
    address,
    motion_noise,
    rows_f64,
    track_step,
    track_step_rows,
)
from .association import ASSOCIATIONS
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
        widths / heights ``wh`` (T, 2). One C call (kernels/track_cpu.c: the tracker's step uses the same noise)."""
        size = rows_f64(wh, 2)
        n = size.shape[0]
        out = np.empty((3, n, 5))
        if n:
            params = TrackParams(position=self.position, velocity=self.velocity, angle=self.angle,
                                 angle_process=self.angle_process, angle_velocity=self.angle_velocity)
            motion_noise(params, size, out)
        return out[0][:, dims], out[1][:, dims], out[2][:, dims]


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
    """The tracks of one stream, as parallel arrays (row = track), the state the C step reads and writes."""

    def __init__(self, capacity: int = 0):
        ints = np.zeros((4, capacity), np.int64)
        self.ids, self.labels, self.hits, self.lost = ints  # lost: detection frames since the last match
        self.confirmed = np.zeros(capacity, bool)
        self.score = np.zeros(capacity, np.float32)
        self.kf = KalmanBank(5)
        filters = np.zeros((5, capacity, 5))
        for name, a in zip(KalmanBank.__slots__, filters):
            setattr(self.kf, name, a)
        self.detection_frames = 0

    def __len__(self) -> int:
        return self.ids.shape[0]

    FIELDS = ("ids", "labels", "hits", "lost", "confirmed", "score")  # obb_tracks' order, before the filters

    def struct(self) -> Tracks:
        """The ``obb_tracks`` view of these arrays (kept alive by self)."""
        return Tracks(*(address(getattr(self, name)) for name in self.FIELDS),
                      *(address(getattr(self.kf, name)) for name in KalmanBank.__slots__), len(self))

    def truncate(self, n: int) -> None:
        """Keep the first ``n`` rows (views: the arrays stay C-contiguous)."""
        for name in self.FIELDS:
            setattr(self, name, getattr(self, name)[:n])
        for name in KalmanBank.__slots__:
            setattr(self.kf, name, getattr(self.kf, name)[:n])

    def words(self) -> np.ndarray:
        """The ``obb_tracks`` struct as its 12 words (the 11 array pointers, then n)."""
        words = getattr(self, "_words", None)
        if words is None or words[11] != len(self):
            words = np.array([a.ctypes.data for a in (*(getattr(self, name) for name in self.FIELDS),
                                                      *(getattr(self.kf, name) for name in KalmanBank.__slots__))]
                             + [len(self)], np.uint64)
        return words

    @classmethod
    def of_block(cls, block: "_TrackBlock", start: int, n: int, detection_frames: int,
                 words: np.ndarray) -> "_Tracks":
        """A stream's ``n`` tracks at column ``start`` of a batch's output block (views into it; ``words``: their
        ``obb_tracks`` words, as the block gave them to C)."""
        t = cls.__new__(cls)
        t._words = words
        t.ids, t.labels, t.hits, t.lost = block.ints[:, start:start + n]
        t.confirmed = block.confirmed[start:start + n]
        t.score = block.score[start:start + n]
        t.kf = KalmanBank(5)
        for name, a in zip(KalmanBank.__slots__, block.filters[:, start:start + n]):
            setattr(t.kf, name, a)
        t.detection_frames = detection_frames
        return t


class _TrackBlock:
    """Room for the output tracks of a batch's streams, one column range per stream (``columns`` in all): the arrays
    of ``_Tracks`` side by side, so every stream's ``obb_tracks`` words come from one address each by arithmetic."""

    def __init__(self, columns: int):
        self.ints = np.empty((4, columns), np.int64)  # ids, labels, hits, lost
        self.confirmed = np.empty(columns, bool)
        self.score = np.empty(columns, np.float32)
        self.filters = np.empty((5, columns, 5))  # KalmanBank's arrays, (columns, 5) each

    def words(self, starts: np.ndarray, capacity: np.ndarray) -> np.ndarray:
        """(k, 12) ``obb_tracks`` words of the streams whose columns start at ``starts`` with room ``capacity``."""
        c = self.ints.shape[1]
        s = starts.astype(np.uint64)
        out = np.empty((len(starts), 12), np.uint64)
        base = np.uint64(self.ints.ctypes.data)
        for r in range(4):
            out[:, r] = base + np.uint64(r * c * 8) + s * np.uint64(8)
        out[:, 4] = np.uint64(self.confirmed.ctypes.data) + s
        out[:, 5] = np.uint64(self.score.ctypes.data) + s * np.uint64(4)
        base = np.uint64(self.filters.ctypes.data)
        for q in range(5):
            out[:, 6 + q] = base + np.uint64(q * c * 40) + s * np.uint64(40)
        out[:, 11] = capacity.astype(np.uint64)
        return out


class _StepJob:
    """One stream's frame prepared for the C step: its tracks in, room for its tracks out (``tracks`` + detections
    rows) and for its report, and the ``obb_*`` structs over them (the arrays are kept alive here)."""

    def __init__(self, st: _Tracks, x: np.ndarray, s: np.ndarray, lab: np.ndarray, detection: bool):
        d = x.shape[0]
        self.out = _Tracks(len(st) + d)
        self.out.detection_frames = st.detection_frames + int(detection)
        self.first = st.detection_frames == 0
        self.det_ids, self.det_boxes = np.empty(d, np.int64), np.empty((d, 5), np.float32)
        self.pred_ids, self.pred_labels = np.empty((2, len(self.out)), np.int64)
        self.pred_boxes = np.empty((len(self.out), 5), np.float32)
        self.pred_scores = np.empty(len(self.out), np.float32)
        self.arrays = (x, s, np.ascontiguousarray(lab, np.int64), st)
        self.dets = Detections(address(x), address(s), address(self.arrays[2]), d)
        self.report = TrackReport(*(address(a) for a in (self.det_ids, self.det_boxes, self.pred_ids,
                                                         self.pred_labels, self.pred_boxes, self.pred_scores)), 0)
        self.tracks_in, self.tracks_out = st.struct(), self.out.struct()


def _cpus() -> int:
    """The CPUs this process may run on (its affinity where the OS says, else the machine's)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


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
        threads: how many threads :meth:`step_many` (and ``update_batch``) spread a batch's streams over (the C
            step releases the interpreter lock); None: one per CPU this process may use, at most 8. The results do
            not depend on it.
    """

    def __init__(self, association: str = "rotated", *, match_iou: float = 0.2, low_match_iou: float = 0.5,
                 tentative_match_iou: float = 0.3, high_score: float = 0.5, low_score: float = 0.1,
                 new_track_score: float = 0.6, min_hits: int = 2, max_age: int = 30, class_aware: bool = True,
                 heading: bool = False, output_lost: int = 0, buffer: float = 0.15,
                 noise: MotionNoise = MotionNoise(), threads: int | None = None):
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
        self.threads = min(8, _cpus()) if threads is None else _check_count("threads", threads, 1)
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
        x = np.ascontiguousarray(np.asarray(xywhr, dtype=np.float64).reshape(-1, 5))
        d = x.shape[0]
        s = np.ascontiguousarray(np.asarray(scores, dtype=np.float64).reshape(-1))
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
        self.last = self._stream_step(self._params(), source_id, x, s, lab, detection_done)
        return self.last

    def step_many(self, frames: Sequence[tuple[int, Any, Any, Any]]) -> list[TrackStep]:
        """:meth:`step` of several streams' detection frames at once: ``frames`` is a sequence of ``(source_id,
        xywhr, scores, labels)``, one per stream (a source twice is a ValueError); the same results, track ids and
        states as calling :meth:`step` on each in order. Every input is checked before any stream moves on."""
        inputs = [(src, *self._inputs(x, sc, lab, src)) for src, x, sc, lab in frames]
        sources = [src for src, *_ in inputs]
        if len(set(sources)) != len(sources):
            raise ValueError(f"step_many takes one frame per stream, got source ids {sources}")
        if not inputs:
            return []
        offsets = np.zeros(len(inputs) + 1, np.int64)
        np.cumsum([x.shape[0] for _, x, _, _ in inputs], out=offsets[1:])
        steps = self._streams_step(self._params(), sources, np.concatenate([x for _, x, _, _ in inputs]),
                                   np.concatenate([s for _, _, s, _ in inputs]),
                                   np.concatenate([lab for _, _, _, lab in inputs]), offsets)
        self.last = steps[-1]
        return steps

    def _params(self) -> TrackParams:
        n = self.noise
        return TrackParams(self.match_iou, self.low_match_iou, self.tentative_match_iou, self.high_score,
                           self.low_score, self.new_track_score, self.buffer, n.position, n.velocity, n.angle,
                           n.angle_process, n.angle_velocity, self.min_hits, self.max_age, self.output_lost,
                           int(self.association == "aabb"), int(self.class_aware), int(self.heading))

    def _stream_step(self, params: TrackParams, source: int, x: np.ndarray, s: np.ndarray, lab: np.ndarray,
                     detection: bool) -> TrackStep:
        """One checked frame of one stream: one C call (kernels/track_cpu.c, obbmeta_track_step; the class
        docstring says what it does). The interpreter lock is released while it runs."""
        job = _StepJob(self._streams.setdefault(source, _Tracks()), x, s, lab, detection)
        self._next_id = track_step(params, job.tracks_in, job.dets, detection, job.first, self._next_id,
                                   job.tracks_out, job.report)
        return self._finish(source, job)

    def _streams_step(self, params: TrackParams, sources: list, x: np.ndarray, s: np.ndarray, lab: np.ndarray,
                      offsets: np.ndarray) -> list[TrackStep]:
        """The detection frames of distinct streams ``sources`` in one C call (obbmeta_track_step_many) on up to
        :attr:`threads` threads: stream k's checked detections are rows ``offsets[k]:offsets[k + 1]`` of ``x`` (D, 5)
        float64, ``s`` (D,) float64, ``lab`` (D,) int64. The same as :meth:`_stream_step` on each in order, new ids
        included. Every struct is built for the whole batch by array arithmetic over a few blocks (no object per
        stream and field), and each stream's new tracks are views into one block."""
        k = len(sources)
        states = [self._streams.setdefault(src, _Tracks()) for src in sources]
        counts = np.diff(offsets)
        capacity = np.array([len(st) for st in states], np.int64) + counts
        starts = np.zeros(k, np.int64)
        np.cumsum(capacity[:-1], out=starts[1:])
        columns = int(capacity.sum())
        block = _TrackBlock(columns)
        tracks_out = block.words(starts, capacity)
        tracks_in = np.stack([st.words() for st in states])
        x, s, lab = (np.ascontiguousarray(a) for a in (x, s, lab))
        o = offsets[:-1].astype(np.uint64)
        dets = np.empty((k, 4), np.uint64)
        dets[:, 0] = np.uint64(x.ctypes.data) + o * np.uint64(40)
        dets[:, 1] = np.uint64(s.ctypes.data) + o * np.uint64(8)
        dets[:, 2] = np.uint64(lab.ctypes.data) + o * np.uint64(8)
        dets[:, 3] = counts.astype(np.uint64)
        d = x.shape[0]
        det_ids, det_boxes = np.empty(d, np.int64), np.empty((d, 5), np.float32)
        pred_ids, pred_labels = np.empty((2, columns), np.int64)
        pred_boxes, pred_scores = np.empty((columns, 5), np.float32), np.empty(columns, np.float32)
        c = starts.astype(np.uint64)
        reports = np.empty((k, 7), np.uint64)
        reports[:, 0] = np.uint64(det_ids.ctypes.data) + o * np.uint64(8)
        reports[:, 1] = np.uint64(det_boxes.ctypes.data) + o * np.uint64(20)
        reports[:, 2] = np.uint64(pred_ids.ctypes.data) + c * np.uint64(8)
        reports[:, 3] = np.uint64(pred_labels.ctypes.data) + c * np.uint64(8)
        reports[:, 4] = np.uint64(pred_boxes.ctypes.data) + c * np.uint64(20)
        reports[:, 5] = np.uint64(pred_scores.ctypes.data) + c * np.uint64(4)
        reports[:, 6] = 0
        first = np.array([st.detection_frames == 0 for st in states], np.uint8)
        self._next_id = track_step_rows(params, tracks_in, dets, first, self.threads, self._next_id, tracks_out,
                                        reports)
        kept, n_pred = tracks_out[:, 11].astype(np.int64), reports[:, 6].astype(np.int64)
        steps = []
        for j, (src, st) in enumerate(zip(sources, states)):
            self._streams[src] = _Tracks.of_block(block, int(starts[j]), int(kept[j]), st.detection_frames + 1,
                                                  tracks_out[j])
            a, b, p0, p1 = int(offsets[j]), int(offsets[j + 1]), int(starts[j]), int(starts[j] + n_pred[j])
            steps.append(TrackStep(det_ids[a:b], det_boxes[a:b], pred_ids[p0:p1], pred_boxes[p0:p1],
                                   pred_labels[p0:p1], pred_scores[p0:p1]))
        return steps

    def _finish(self, source: int, job: "_StepJob") -> TrackStep:
        out = job.out
        out.truncate(job.tracks_out.n)
        self._streams[source] = out
        k = job.report.n_pred
        return TrackStep(job.det_ids, job.det_boxes, job.pred_ids[:k].copy(), job.pred_boxes[:k].copy(),
                         job.pred_labels[:k].copy(), job.pred_scores[:k].copy())

    # ---------------------------------------------------------------- OrientedBoxes in, OrientedBoxes out
    def update(self, boxes: OrientedBoxes | None, *, source_id: int = 0, detection_done: bool = True
               ) -> OrientedBoxes:
        """Track one frame of ``boxes`` (None or ``detection_done=False``: a frame without detection).

        Returns the tracked detections, in input order, with ``track_ids`` and each track's filtered box (the angle
        continues the track's: no jump by pi or swap of w and h between frames), followed by the reported tracks
        without a detection on this frame at their predicted box (``output_lost``; on a frame without detection
        every confirmed track seen on the last detection frame). ``tracker.last`` has the whole
        :class:`TrackStep`. The output has the input's backing (CUDA in, CUDA out; NumPy in, NumPy out; the
        tracking itself runs on the CPU).
        """
        from ..boxes import OrientedBoxes

        if boxes is None or not detection_done:  # None gives CPU tensors, as a decoder's empty output would be
            device = boxes.device if boxes is not None else "cpu"
            step = self.step(np.zeros((0, 5)), np.zeros(0), np.zeros(0, np.int64), source_id=source_id,
                             detection_done=False)
            return _boxes(step, None, None, device)
        if not isinstance(boxes, OrientedBoxes):
            raise TypeError(f"boxes must be OrientedBoxes or None, got {type(boxes).__name__}")
        host = boxes.numpy()
        step = self.step(host.xywhr, host.scores, host.labels, source_id=source_id)
        return _boxes(step, host.scores, host.labels, boxes.device)

    # ---------------------------------------------------------------- NvDsBatchMeta
    def update_batch(self, batch: Any, frames: Any = None, *, remove_untracked: bool = True,
                     frame_size: tuple[float, float] | None = None) -> list["FrameTracking"]:
        """:meth:`update_frame` for every frame of ``batch`` (``batch.frames`` order). A batch of detection frames of
        distinct streams (what nvstreammux makes) is read in one C call, tracked in one C step (:meth:`step_many`'s) and
        written back in one update and one removal call: the same results as frame after frame, at a fraction of
        the cost."""
        from .. import nvds

        b = batch if isinstance(batch, nvds.BatchMeta) else nvds.BatchMeta.from_address(batch)
        fs = [f if isinstance(f, nvds.FrameMeta) else nvds.FrameMeta(f, b)
              for f in (b.frames if frames is None else frames)]
        sources = [int(f.source_id) for f in fs]
        if len(fs) < 2 or len(set(sources)) != len(fs) or not all(f.infer_done for f in fs):
            return [self.update_frame(b, f, remove_untracked=remove_untracked, frame_size=frame_size) for f in fs]
        with b.locked():
            objs, offsets = nvds.read_boxes_batch(b, fs)
            caches = self._remember_labels(sources, objs, offsets)
            x, sc, lab = self._inputs(objs.xywhr, objs.scores, objs.labels, 0)
            steps = self._streams_step(self._params(), sources, x, sc, lab, offsets)
            self.last = steps[-1]
            return self._write(b, fs, objs, offsets, steps, caches, [True] * len(fs), remove_untracked, frame_size)

    def _remember_labels(self, sources: list, objects: Any, offsets: np.ndarray) -> list[dict]:
        """Each class's label and component id as last seen on each stream (its last object of the class on the
        stream's frame, rows ``offsets[k]:offsets[k + 1]`` of ``objects``, boxes read back); the streams' caches."""
        caches = [self._labels.setdefault(src, {}) for src in sources]
        classes = objects.labels
        if classes.size:
            frame = np.repeat(np.arange(len(sources), dtype=np.int64), np.diff(offsets))
            key = frame * (1 << 33) + (classes + (1 << 32))  # (frame, class) in one int64, classes may be negative
            kinds, first = np.unique(key[::-1], return_index=True)  # first from the end: each pair's last object
            last = classes.size - 1 - first
            for k, cls, label, comp in zip(frame[last].tolist(), classes[last].tolist(),
                                           objects.data["label"][last].tolist(),
                                           objects.data["component_id"][last].tolist()):
                caches[k][cls] = (label, comp)
        return caches

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
            objs, offsets = nvds.read_boxes_batch(b, [f])
            caches = self._remember_labels([source], objs, offsets)
            detection = bool(f.infer_done)
            if detection:  # the batch's step with one stream (the same as step(), tested)
                x, sc, lab = self._inputs(objs.xywhr, objs.scores, objs.labels, source)
                step = self.last = self._streams_step(self._params(), [source], x, sc, lab, offsets)[0]
            else:
                step = self.step(np.zeros((0, 5)), np.zeros(0), np.zeros(0, np.int64), source_id=source,
                                 detection_done=False)
            return self._write(b, [f], objs, offsets, [step], caches, [detection], remove_untracked, frame_size)[0]

    @staticmethod
    def _write(b: Any, fs: list, objs: Any, offsets: np.ndarray, steps: list, caches: list, detection: list,
               remove: bool, frame_size: Any) -> list["FrameTracking"]:
        """The frames' steps written back as nvtracker writes them (see :meth:`update_frame`): the tracked
        detections of every frame in one update call, the untracked ones of detection frames removed in one call
        (``remove``; all or nothing, so each is counted as removed), then each frame's reported tracks without a
        detection added at their predicted box."""
        from .. import nvds

        per_frame = np.diff(offsets)
        rows = per_frame.tolist()  # a frame without detection tracked none of its objects
        ids = [st.det_track_ids if det else np.full(n, -1, np.int64) for st, det, n in zip(steps, detection, rows)]
        boxes = [st.det_xywhr if det else np.zeros((n, 5), np.float32) for st, det, n in zip(steps, detection, rows)]
        ids, boxes = (np.concatenate(a) if len(a) > 1 else a[0] for a in (ids, boxes))
        tracked = ids >= 0
        running = np.zeros(tracked.size + 1, np.int64)
        np.cumsum(tracked, out=running[1:])
        kept = running[offsets]  # rows of the tracked objects per frame
        if kept[-1]:
            nvds.update_objects_batch(b, fs, kept, objs.data["address"][tracked], boxes[tracked],
                                      obb_flags=nvds.OBB_TRACKED, object_ids=ids[tracked].astype(np.uint64), rect=True,
                                      tracker_confidence=objs.scores[tracked], frame_size=frame_size)
        n_tracked = np.diff(kept)
        n_untracked = per_frame - n_tracked
        removed = [int(n) if (remove and det) else 0 for n, det in zip(n_untracked.tolist(), detection)]
        if any(removed):
            untracked = ~tracked
            nvds.remove_objects_batch(b, [(f, objs.data["address"][offsets[k]:offsets[k + 1]][
                untracked[offsets[k]:offsets[k + 1]]]) for k, f in enumerate(fs) if removed[k]])
        return [FrameTracking(int(n), r, _add_predicted(b, f, st, cache, frame_size), st)
                for f, n, r, st, cache in zip(fs, n_tracked.tolist(), removed, steps, caches)]


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


def _boxes(step: TrackStep, scores, labels, device) -> OrientedBoxes:
    """The tracked boxes of ``step`` on ``device`` (None: NumPy-backed, as the boxes given were)."""
    from ..boxes import OrientedBoxes

    tracked = step.det_track_ids >= 0
    parts_x = [step.det_xywhr[tracked], step.pred_xywhr]
    parts_s = [scores[tracked] if scores is not None else np.zeros(0, np.float32), step.pred_scores]
    parts_l = [labels[tracked] if labels is not None else np.zeros(0, np.int64), step.pred_labels]
    parts_i = [step.det_track_ids[tracked], step.pred_track_ids]
    out = OrientedBoxes(np.concatenate(parts_x).astype(np.float32), np.concatenate(parts_s).astype(np.float32),
                        np.concatenate(parts_l).astype(np.int64), np.concatenate(parts_i).astype(np.int64))
    return out if device is None else out.to(device)
