"""FollowTracker: an OBB for every object nvtracker reports, on every frame, moving with the tracker's box.

After nvtracker an object's OBB is only as good as the detector frame it came from (docs/track.md; the facts:
:mod:`obbmeta.track._nvtracker`):

* objects nvtracker matched to a detection keep their NvDsObjectMeta, so obbmeta's payload is there, but it is the
  detector's box while ``rect_params`` is now the tracker's;
* objects nvtracker made itself (frames skipped by nvinfer's ``interval``, shadow tracking) are new metas without
  user meta, ``confidence = -0.1``, and a copy of the ``rect_params`` of the first object of their class nvtracker
  saw, a DS 9 ``rotation_angle`` included: another object's angle;
* detections of tracks still in probation are removed, their payload with them; ``frame_num`` is nvtracker's.

Call :meth:`FollowTracker.update` in a probe after nvtracker. Per ``(source_id, object_id)`` (never ``frame_num``:
each stream's frames are counted here) it keeps a filtered (w, h, angle) (constant-velocity Kalman filters,
:mod:`obbmeta.track.kalman`, with every measurement re-described to continue the track's angle,
:mod:`obbmeta.track.angles`). Each tracked object then gets, as its OBB payload:

* detector's OBB present: the detector's box moved by the shift between ``detector_bbox_info`` and the tracker's
  box (``tracker_bbox_info``, else ``rect_params``), with the filtered w, h and angle (flag ``OBB_TRACKED``);
* otherwise: the track's predicted w, h and angle centred on the tracker's box (flag ``OBB_PREDICTED``, read back
  with source ``"predicted"``);
* an object nvtracker made whose track has no OBB yet: none (read back with source ``"aabb"``); its copied
  rotation is never trusted;
* an object of another detector whose track never had an OBB keeps its own DS 9 rotation if it has one, else gets
  its tracker box as a 0-degree box (both ``OBB_PREDICTED``).

On the DS 9 layout an object nvtracker made gets ``rect_params.rotation_angle`` = its predicted angle when its
track's detections carried one (obbmeta's rotation mode), else 0, so nvdsosd never draws it at the copied angle.
A track's state is dropped when its id has not been seen for ``forget_after`` frames of its stream.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._validators import frame_size as check_frame_size
from .._validators import int_in_range
from ..nvds.nvtracker import made_by_tracker
from .angles import align_to
from .kalman import KalmanBank
from .tracker import MIN_SIDE, MotionNoise

if TYPE_CHECKING:
    from ..boxes import OrientedBoxes

_SHAPE = slice(2, 5)  # (w, h, angle) of MotionNoise's (cx, cy, w, h, angle)


@dataclass(frozen=True)
class FollowResult:
    """One frame: ``objects`` with a track id, of which ``measured`` had the detector's OBB, ``predicted`` got
    their track's, ``fallback`` (another detector's objects) had no OBB in their track yet (DS 9 rotation or
    0-degree tracker box), ``unknown`` were made by nvtracker for a track without an OBB yet (left without one);
    ``forgotten`` tracks dropped on this frame."""
    source_id: int
    objects: int
    measured: int
    predicted: int
    fallback: int
    forgotten: int
    unknown: int = 0


def _centre(box: np.ndarray) -> np.ndarray:
    return box[:, :2] + 0.5 * box[:, 2:4]


def _clip_box(box: np.ndarray, width: float, height: float) -> np.ndarray:
    x1 = np.clip(box[:, 0], 0.0, width)
    y1 = np.clip(box[:, 1], 0.0, height)
    x2 = np.clip(box[:, 0] + box[:, 2], 0.0, width)
    y2 = np.clip(box[:, 1] + box[:, 3], 0.0, height)
    return np.stack((x1, y1, x2 - x1, y2 - y1), axis=1)


class FollowTracker:
    """Keeps the OBBs of tracked objects after nvtracker (see the module docstring and docs/track.md).

    >>> follow = FollowTracker()
    >>> def probe_after_nvtracker(buffer):                 # doctest: +SKIP
    ...     follow.update_batch(nvds.BatchMeta.from_gst_buffer(buffer))

    Args:
        heading: the model's angle is a 2*pi heading (never flipped by pi, w and h never swapped).
        forget_after: frames of a stream after which an id not seen is forgotten (nvtracker does not announce the
            end of a track; make it at least its shadow-tracking age).
        noise: :class:`MotionNoise` (its size and angle terms smooth w, h and the angle).
        write: False computes without writing payloads (``last_boxes`` has the result).
    """

    def __init__(self, *, heading: bool = False, forget_after: int = 30, noise: MotionNoise = MotionNoise(),
                 write: bool = True):
        int_in_range("forget_after", forget_after, 1)
        if not isinstance(noise, MotionNoise):
            raise TypeError(f"noise must be an obbmeta.track.MotionNoise, got {type(noise).__name__}")
        self.heading = bool(heading)
        self.forget_after = forget_after
        self.noise = noise
        self.write = bool(write)
        self._rows: dict[tuple[int, int], int] = {}
        self._source = np.zeros(0, np.int64)
        self._object_id = np.zeros(0, np.uint64)
        self._seen = np.zeros(0, np.int64)
        self._rotated = np.zeros(0, bool)  # the track's detections had a DS 9 rotation_angle (rotation mode)
        self._kf = KalmanBank(3)
        self._frames: dict[int, int] = {}
        self.last_boxes: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        """Tracks with state (all streams)."""
        return len(self._rows)

    def reset(self, source_id: int | None = None) -> None:
        """Forget every track (of one stream, e.g. at its end of stream, or of all)."""
        keep = np.zeros(len(self._source), bool) if source_id is None else self._source != source_id
        self._keep(keep)
        if source_id is None:
            self._frames.clear()
        else:
            self._frames.pop(source_id, None)

    def _keep(self, keep: np.ndarray) -> None:
        self._source, self._object_id, self._seen = self._source[keep], self._object_id[keep], self._seen[keep]
        self._rotated = self._rotated[keep]
        self._kf.keep(keep)
        self._rows = {(int(s), int(o)): i for i, (s, o) in enumerate(zip(self._source.tolist(),
                                                                          self._object_id.tolist()))}

    def update_batch(self, batch: Any, frames: Any = None, **kwargs: Any) -> list[FollowResult]:
        """:meth:`update_frame` for every frame of ``batch`` (an ``obbmeta.nvds.BatchMeta`` or an ``NvDsBatchMeta*``
        int; ``batch.frames`` order), as :meth:`OrientedTracker.update_batch`."""
        from .. import nvds

        b = batch if isinstance(batch, nvds.BatchMeta) else nvds.BatchMeta.from_address(batch)
        return [self.update_frame(b, f, **kwargs) for f in (b.frames if frames is None else frames)]

    def update_frame(self, batch: Any, frame: Any, frame_size: tuple[float, float] | None = None) -> FollowResult:
        """One ``NvDsFrameMeta``: every object with a track id gets its OBB payload (see the class docstring)."""
        from .. import nvds

        b = batch if isinstance(batch, nvds.BatchMeta) else nvds.BatchMeta.from_address(batch)
        f = frame if isinstance(frame, nvds.FrameMeta) else nvds.FrameMeta(frame, b)
        src = int(f.source_id)
        count = self._frames.get(src, 0) + 1
        self._frames[src] = count
        with b.locked():
            a = nvds.read_boxes(f)
            idx = np.flatnonzero(nvds.is_tracked(a))
            boxes, flags, measured, fallback, unknown, angle = self._follow(a, idx, src, count, f, frame_size)
            if self.write and idx.size:
                give = ~unknown
                if give.any():
                    nvds.update_objects(b, f, a["address"][idx][give], boxes[give], obb_flags=flags[give])
                self._set_rotation(b, f, a["address"][idx], a["rotation_angle"][idx], angle)
        forgotten = self._forget(src, count)
        self.last_boxes = {"object_id": a["object_id"][idx], "xywhr": boxes, "flags": flags}
        return FollowResult(src, int(idx.size), int(measured.sum()), int((~measured & ~fallback & ~unknown).sum()),
                            int(fallback.sum()), forgotten, int(unknown.sum()))

    @staticmethod
    def _set_rotation(batch: Any, frame: Any, addresses: np.ndarray, current: np.ndarray, wanted: np.ndarray) -> None:
        """rect_params.rotation_angle = ``wanted`` (degrees; NaN: leave it) where it differs: only objects nvtracker
        made, whose angle it copied from another object (DS 9 layout; nothing on a layout without the field)."""
        from .. import nvds

        if not batch.layout.has_rotation_angle:
            return
        change = ~np.isnan(wanted) & (current != wanted.astype(np.float32))
        if change.any():
            nvds.update_objects(batch, frame, addresses[change], rotation_angle=wanted[change])

    def _follow(self, a: OrientedBoxes, idx: np.ndarray, src: int, count: int, frame: Any, frame_size) -> tuple:
        from .. import nvds

        n = idx.size
        # The tracker's box: unclipped tracker_bbox_info when the tracker fills it, else rect_params.
        trk, rect, det = a["tracker_bbox"][idx].astype(np.float64), a["rect"][idx].astype(np.float64), \
            a["detector_bbox"][idx].astype(np.float64)
        has_trk = (trk[:, 2] > 0) & (trk[:, 3] > 0)
        box = np.where(has_trk[:, None], trk, rect)
        centre = _centre(box)
        source, flags_in = a["source"][idx], a["flags"][idx]
        measured = source == 0  # obbmeta's payload, not one predicted by obbmeta
        made = made_by_tracker(a.scores[idx], det, source)  # nvtracker's own object: its rotation is a copy
        z = a.xywhr[idx].astype(np.float64)
        # Move the detector's box by the tracker's shift, unless obbmeta already did (a second call).
        has_det = (det[:, 2] > 0) & (det[:, 3] > 0)
        move = measured & has_det & ((flags_in & nvds.OBB_TRACKED) == 0)
        if move.any():
            ref = det.copy()
            if not has_trk[move].all():  # rect_params is clipped: compare it with the clipped detector box
                w, h = self._frame_size(frame, frame_size)
                ref = np.where(has_trk[:, None], det, _clip_box(det, w, h))
            z[move, :2] += (centre - _centre(ref))[move]

        rows = np.array([self._rows.get((src, o), -1) for o in a["object_id"][idx].tolist()], np.int64)
        mine = np.flatnonzero(self._source == src)
        if mine.size:
            q_value, q_velocity, _ = self.noise.stds(np.maximum(self._kf.mean[mine, :2], MIN_SIDE), _SHAPE)
            self._kf.predict(q_value, q_velocity, rows=mine)
        old = measured & (rows >= 0)
        if old.any():
            r = rows[old]
            zz = align_to(z[old], self._kf.mean[r, 2], self.heading)
            _, _, r_std = self.noise.stds(np.maximum(zz[:, 2:4], MIN_SIDE), _SHAPE)
            self._kf.update(r, zz[:, 2:5], r_std)
        new = measured & (rows < 0)
        if new.any():
            k = int(new.sum())
            _, q_velocity, r_std = self.noise.stds(np.maximum(z[new, 2:4], MIN_SIDE), _SHAPE)
            self._kf.append(z[new, 2:5], 2.0 * r_std, 10.0 * q_velocity)
            rows[new] = np.arange(len(self._source), len(self._source) + k)
            self._source = np.concatenate((self._source, np.full(k, src, np.int64)))
            self._object_id = np.concatenate((self._object_id, a["object_id"][idx][new]))
            self._seen = np.concatenate((self._seen, np.zeros(k, np.int64)))
            self._rotated = np.concatenate((self._rotated, np.zeros(k, bool)))
            for o, r in zip(a["object_id"][idx][new].tolist(), rows[new].tolist()):
                self._rows[(src, o)] = r
        known = rows >= 0
        self._seen[rows[known]] = count
        self._rotated[rows[measured]] = (flags_in[measured] & nvds.OBB_RECT_ROTATED) != 0

        out = np.empty((n, 5), np.float64)
        out[:, :2] = np.where(move[:, None], z[:, :2], centre)
        shape = self._kf.mean[rows[known]]
        out[known, 2:4] = np.maximum(shape[:, :2], MIN_SIDE)
        out[known, 4] = shape[:, 2]
        # No OBB in this track yet. An object nvtracker made: none (its rotation_angle is another object's). Another
        # detector's object: its own DS 9 rotation, else the tracker box as a 0-degree box.
        unknown = ~known & made
        fallback = ~known & ~made
        rot = fallback & (source == 1)
        out[rot] = z[rot]
        plain = (fallback & ~rot) | unknown
        out[plain, 2:4] = np.maximum(box[plain, 2:4], MIN_SIDE)
        out[plain, 4] = 0.0
        flags = np.where(measured, nvds.OBB_TRACKED, nvds.OBB_PREDICTED).astype(np.uint32)
        flags[unknown] = 0
        # The rotation_angle an object nvtracker made should carry: its track's angle in rotation mode, else none.
        angle = np.full(n, np.nan)
        angle[made] = 0.0
        turn = made & known
        turn[turn] = self._rotated[rows[turn]]
        angle[turn] = np.degrees(out[turn, 4])
        return out.astype(np.float32), flags, measured, fallback, unknown, angle

    def _forget(self, src: int, count: int) -> int:
        stale = (self._source == src) & (self._seen <= count - self.forget_after)
        k = int(stale.sum())
        if k:
            self._keep(~stale)
        return k

    @staticmethod
    def _frame_size(frame: Any, frame_size) -> tuple[float, float]:
        if frame_size is not None:
            return check_frame_size("frame_size", frame_size)
        size = frame.size
        if size is None:
            raise ValueError("the frame meta has no size; pass frame_size=(width, height) of the batched surface")
        return float(size[0]), float(size[1])
