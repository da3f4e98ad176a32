"""NvTrackerStandIn: a TEST STAND-IN that reproduces, on metadata only, what NVIDIA's nvtracker documents doing to
a frame's objects. It is NOT nvtracker: no NvMultiObjectTracker, no visual features, no NvDCF; a plain
axis-aligned IoU tracker in Python, slow and simple, written so that :class:`~obbmeta.track.FollowTracker` and
pipeline tests can meet nvtracker's metadata behaviour where DeepStream's plugins cannot be installed.

What it reproduces (facts read from nvtracker's documentation and its DeepStream 9.1 open sources):

* input: the frame's objects with ``object_id == UNTRACKED_OBJECT_ID``, their ``rect_params``, ``class_id`` and
  ``confidence``; ``bInferDone`` says whether detection ran on the frame;
* matched objects keep their NvDsObjectMeta (and so their user metas); the tracker writes ``object_id``,
  overwrites ``rect_params`` with its own box clipped to the frame, fills ``tracker_bbox_info`` (unclipped) and
  ``tracker_confidence``;
* objects it makes itself (every confirmed track on a frame without detection; lost tracks with
  ``output_shadow``) are new object metas with ``confidence = -0.1``, ``detector_bbox_info`` zeroed, no user
  meta, and the class's cached ``obj_label``, ``text_params`` and ``unique_component_id``;
* after the frame, objects still ``UNTRACKED_OBJECT_ID`` (unmatched or not yet confirmed detections) are removed.

Its tracker box is a blend of its constant-velocity prediction and the detection (``blend``), so that
``rect_params`` differs from the detector's box the way a filtering tracker's does.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Any

import numpy as np

TRACKER_MADE_CONFIDENCE = -0.1


@dataclass
class _Track:
    id: int
    box: np.ndarray       # x1, y1, x2, y2, unclipped
    velocity: np.ndarray  # of the box corners, per frame
    class_id: int
    score: float
    hits: int = 1
    misses: int = 0
    since: int = 0        # frames since the last match
    last: np.ndarray | None = None  # the box at the last match
    confirmed: bool = False
    decor: dict = field(default_factory=dict)


def _iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    iw = np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0])
    ih = np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1])
    inter = np.clip(iw, 0, None) * np.clip(ih, 0, None)
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    return inter / np.maximum(area_a[:, None] + area_b[None, :] - inter, 1e-12)


class NvTrackerStandIn:
    """A test stand-in for nvtracker's behaviour on metadata (see the module docstring: it is not nvtracker).

    Args:
        iou_threshold: least AABB IoU between the predicted track box and a detection's ``rect_params``.
        probation: matched frames before a track's objects get an id (nvtracker's ``probationAge``-like).
        max_shadow_age: detection frames a confirmed track survives unmatched.
        output_shadow: also report lost tracks (shadow tracking output) as new objects.
        blend: weight of the detection in the tracker box (1: the detection's box).
        first_id: the first track id given.
    """

    def __init__(self, *, iou_threshold: float = 0.3, probation: int = 2, max_shadow_age: int = 10,
                 output_shadow: bool = False, blend: float = 0.7, first_id: int = 1000):
        self.iou_threshold = iou_threshold
        self.probation = probation
        self.max_shadow_age = max_shadow_age
        self.output_shadow = output_shadow
        self.blend = blend
        self._next_id = first_id
        self._tracks: dict[int, list[_Track]] = {}

    def update(self, batch: Any) -> None:
        """Every frame of ``batch`` (an ``obbmeta.nvds.BatchMeta``)."""
        for frame in batch.frames:
            self.update_frame(batch, frame)

    def update_frame(self, batch: Any, frame: Any) -> None:
        from .. import nvds
        from ..nvds import _core

        core = _core.get()
        obj_t = core.layout.object_meta
        meta = core.libs.meta
        size = frame.size
        width, height = float(size[0]), float(size[1])
        tracks = self._tracks.setdefault(int(frame.source_id), [])
        for t in tracks:
            t.box = t.box + t.velocity
            t.since += 1
        with batch.locked():
            if not frame.infer_done:
                for t in tracks:
                    if t.confirmed and (t.misses == 0 or self.output_shadow):
                        self._add_object(batch, frame, t, obj_t, meta, width, height)
                return
            a = nvds.read_obbs_arrays(frame)
            new = np.flatnonzero(a["object_id"] == np.uint64(nvds.UNTRACKED_OBJECT_ID))
            rect = a["rect"][new].astype(np.float64)
            dets = np.column_stack((rect[:, 0], rect[:, 1], rect[:, 0] + rect[:, 2], rect[:, 1] + rect[:, 3]))
            classes = a["class_id"][new]
            matched_t, matched_d = set(), set()
            if tracks and new.size:
                iou = _iou(np.array([t.box for t in tracks]), dets)
                iou[np.array([t.class_id for t in tracks])[:, None] != classes[None, :]] = 0.0
                for flat in np.argsort(-iou, axis=None, kind="stable"):
                    ti, di = divmod(int(flat), new.size)
                    if iou[ti, di] < self.iou_threshold:
                        break
                    if ti in matched_t or di in matched_d:
                        continue
                    matched_t.add(ti)
                    matched_d.add(di)
                    self._match(tracks[ti], dets[di], int(new[di]), a, obj_t, width, height)
            for ti, t in enumerate(tracks):
                if ti not in matched_t:
                    t.misses += 1
                    if t.confirmed and self.output_shadow and t.misses <= self.max_shadow_age:
                        self._add_object(batch, frame, t, obj_t, meta, width, height)
            self._tracks[int(frame.source_id)] = tracks = [
                t for ti, t in enumerate(tracks)
                if ti in matched_t or (t.confirmed and t.misses <= self.max_shadow_age)]
            for di in range(new.size):
                if di not in matched_d:
                    k = int(new[di])
                    tracks.append(_Track(self._next_id, dets[di].copy(), np.zeros(4), int(a["class_id"][k]),
                                         float(a["confidence"][k]), confirmed=self.probation <= 1,
                                         decor=self._decor(a, k)))
                    self._next_id += 1
                    if tracks[-1].confirmed:
                        self._write(obj_t.from_address(int(a["address"][k])), tracks[-1], width, height)
            # nvtracker's removeUntrackedObjects()
            left = nvds.read_obbs_arrays(frame)
            gone = left["address"][left["object_id"] == np.uint64(nvds.UNTRACKED_OBJECT_ID)]
            for o in gone.tolist():
                meta.nvds_remove_obj_meta_from_frame(frame.address, int(o))

    @staticmethod
    def _decor(a: dict, k: int) -> dict:
        return {"label": bytes(a["label"][k]), "component_id": int(a["component_id"][k])}

    def _match(self, t: _Track, det: np.ndarray, k: int, a: dict, obj_t: Any, width: float, height: float) -> None:
        box = (1.0 - self.blend) * t.box + self.blend * det
        last = t.last if t.last is not None else box
        t.velocity = 0.5 * t.velocity + 0.5 * (box - last) / max(t.since, 1)
        t.box, t.last, t.since = box, box.copy(), 0
        t.hits += 1
        t.misses = 0
        t.score = float(a["confidence"][k])
        t.decor = self._decor(a, k)
        t.confirmed = t.confirmed or t.hits >= self.probation
        if t.confirmed:
            self._write(obj_t.from_address(int(a["address"][k])), t, width, height)

    @staticmethod
    def _write(o: Any, t: _Track, width: float, height: float) -> None:
        x1, y1, x2, y2 = t.box.tolist()
        cx1, cy1 = min(max(x1, 0.0), width), min(max(y1, 0.0), height)
        cx2, cy2 = min(max(x2, 0.0), width), min(max(y2, 0.0), height)
        o.object_id = t.id
        r = o.rect_params
        r.left, r.top, r.width, r.height = cx1, cy1, cx2 - cx1, cy2 - cy1
        tb = o.tracker_bbox_info
        tb.left, tb.top, tb.width, tb.height = x1, y1, x2 - x1, y2 - y1
        o.tracker_confidence = t.score

    def _add_object(self, batch: Any, frame: Any, t: _Track, obj_t: Any, meta: Any, width: float,
                    height: float) -> None:
        from ..nvds import _core

        address = meta.nvds_acquire_obj_meta_from_pool(batch.address)
        o = obj_t.from_address(address)
        o.class_id = t.class_id
        o.unique_component_id = t.decor.get("component_id", 0)
        o.confidence = TRACKER_MADE_CONFIDENCE
        label = t.decor.get("label", b"")[:127]
        o.obj_label = label
        glib = _core.get().libs.glib
        text = glib.g_malloc(len(label) + 1)  # DeepStream frees display_text with g_free
        ctypes.memmove(text, label + b"\0", len(label) + 1)
        o.text_params.display_text = text
        o.rect_params.border_width = 3
        self._write(o, t, width, height)
        meta.nvds_add_obj_meta_to_frame(frame.address, address, None)
