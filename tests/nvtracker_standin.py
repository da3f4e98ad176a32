"""NvTrackerStandIn: a TEST STAND-IN that reproduces, on metadata only, what NVIDIA's nvtracker does to a frame's
objects. It is NOT nvtracker: no NvMultiObjectTracker, no visual features, no NvDCF; a plain axis-aligned IoU tracker
in Python, slow and simple, written so that :class:`~obbmeta.track.FollowTracker` and pipeline tests meet
nvtracker's metadata behaviour where DeepStream's plugins cannot be installed.

What it reproduces (nvtracker_proc.cpp, DeepStream 9.1: ``fillMOTFrame``, ``updateBatchMeta``, ``updateFrameMeta``,
``clipBBox``, ``removeUntrackedObjects``; the facts live in :mod:`obbmeta.nvds.nvtracker`):

* input: the frame's objects (the detections: ``object_id == UNTRACKED_OBJECT_ID``) with ``rect_params``,
  ``class_id`` and ``confidence``; ``bInferDone`` says whether detection ran. The first object of each class ever
  seen (any stream) is remembered whole: ``rect_params`` (every field, a DS 9 ``rotation_angle`` too),
  ``text_params``, its display text, ``unique_component_id`` and ``obj_label``;
* the low-level library reports confirmed tracks only: a detection whose track is still in probation stays
  ``UNTRACKED_OBJECT_ID`` and is removed with its user metas (the OBB payload) at the end of the frame;
* ``frame_num`` is overwritten with the frame number the library reports: the frame's own (``frame_numbers=
  "stream"``) or, as with ``useBatchNumForFrameId``, a count of batches, the same for every frame of a batch
  (``"batch"``);
* matched objects keep their NvDsObjectMeta (and so their user metas): ``object_id``, ``rect_params`` = the tracker
  box clipped by clipBBox, ``tracker_bbox_info`` (unclipped), ``tracker_confidence``; a box that clipBBox refuses
  (it starts at or past the right / bottom edge) removes the object, with its user metas;
* objects it makes itself (every confirmed track on a frame without detection; lost tracks with
  ``output_shadow``) are new object metas: first the remembered class's ``rect_params`` and ``text_params`` copied
  whole, its display text duplicated, its ``unique_component_id`` and ``obj_label``; then ``detector_bbox_info``
  zeroed, ``confidence = -0.1``, class, id, the clipped box in ``rect_params`` (left, top, width, height only) and
  ``tracker_bbox_info``; no user meta;
* on every object it reports: font "Serif" 10, white on black, the label at (left, top - 20), and with
  ``display_tracking_id`` (nvtracker's default) the display text rebuilt as "<text> <object_id>" in 128 bytes.

Its tracker box is a blend of its constant-velocity prediction and the detection (``blend``), so that
``rect_params`` differs from the detector's box the way a filtering tracker's does.

A test double, so it lives with the tests (``from nvtracker_standin import NvTrackerStandIn``, tests/ on the path;
the benchmarks add it), not in the package; it writes raw object metas the way nvtracker does, through
obbmeta.nvds's private ctypes structs and NVIDIA's functions.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

import numpy as np

from obbmeta.boxes import OrientedBoxes
from obbmeta.geometry import box_iou_rotated_host
from obbmeta.nvds import _core, layouts
from obbmeta.nvds.layouts import UNTRACKED_OBJECT_ID
from obbmeta.nvds.nvtracker import DISPLAY_TEXT_SIZE, LABEL_RISE, TRACKER_MADE_CONFIDENCE, clip_bbox
from obbmeta.nvds.reader import read_boxes

# nvtracker points font_name at a string literal of its own library; this one lives as long as the module.
_SERIF = ctypes.create_string_buffer(b"Serif")
FRAME_NUMBERS = ("stream", "batch")


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


def _iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of (x1, y1, x2, y2) boxes: obbmeta's box IoU (the one implementation) on the boxes as zero-angle OBBs."""
    def upright(x: np.ndarray) -> np.ndarray:
        return np.c_[(x[:, :2] + x[:, 2:4]) / 2, x[:, 2:4] - x[:, :2], np.zeros(len(x))]

    return box_iou_rotated_host(upright(a), upright(b)).astype(np.float64)


def _unsigned(v: float) -> int:
    """A C float -> unsigned int conversion as x86-64 compilers emit it (truncation, then the low 32 bits): negative
    label positions wrap, and nvdsosd, reading them back as int, clamps them to 0."""
    return int(v) & 0xFFFFFFFF


class NvTrackerStandIn:
    """A test stand-in for nvtracker's behaviour on metadata (see the module docstring: it is not nvtracker).

    Args:
        iou_threshold: least AABB IoU between the predicted track box and a detection's ``rect_params``.
        probation: matched frames before a track's objects get an id (nvtracker's ``probationAge``-like).
        max_shadow_age: detection frames a confirmed track survives unmatched.
        output_shadow: also report lost tracks (shadow tracking output) as new objects.
        blend: weight of the detection in the tracker box (1: the detection's box).
        first_id: the first track id given.
        display_tracking_id: append the id to every reported object's display text (nvtracker's default).
        frame_numbers: what is written into ``frame_num``: ``"stream"`` (the frame's own number) or ``"batch"``
            (a count of batches, ``useBatchNumForFrameId``).
    """

    def __init__(self, *, iou_threshold: float = 0.3, probation: int = 2, max_shadow_age: int = 10,
                 output_shadow: bool = False, blend: float = 0.7, first_id: int = 1000,
                 display_tracking_id: bool = True, frame_numbers: str = "stream"):
        self.iou_threshold = iou_threshold
        self.probation = probation
        self.max_shadow_age = max_shadow_age
        self.output_shadow = output_shadow
        self.blend = blend
        self.display_tracking_id = display_tracking_id
        if frame_numbers not in FRAME_NUMBERS:
            raise ValueError(f"frame_numbers must be one of {', '.join(FRAME_NUMBERS)}, got {frame_numbers!r}")
        self.frame_numbers = frame_numbers
        self._next_id = first_id
        self._tracks: dict[int, list[_Track]] = {}
        self._class_info: dict[int, dict] = {}  # nvtracker's m_ClassInfoMap: one per tracker, all streams
        self._batches = 0

    def update(self, batch: Any) -> None:
        """Every frame of ``batch`` (an ``obbmeta.nvds.BatchMeta``), as one batch."""
        number = self._batches
        self._batches += 1
        for frame in batch.frames:
            self._frame(batch, frame, number)

    def update_frame(self, batch: Any, frame: Any) -> None:
        """One frame, as a batch of its own."""
        number = self._batches
        self._batches += 1
        self._frame(batch, frame, number)

    def _frame(self, batch: Any, frame: Any, batch_number: int) -> None:
        core = _core.get()
        obj_t = core.layout.object_meta
        size = frame.size
        width, height = float(size[0]), float(size[1])
        tracks = self._tracks.setdefault(int(frame.source_id), [])
        for t in tracks:
            t.box = t.box + t.velocity
            t.since += 1
        with batch.locked():
            a = read_boxes(frame)
            for k, cls in enumerate(a.labels.tolist()):  # fillMOTFrame: the first object of each class
                if cls not in self._class_info:
                    self._class_info[cls] = self._remember(obj_t.from_address(int(a["address"][k])))
            reported: list[tuple[_Track, int | None]] = []  # what the low-level library reports
            if frame.infer_done:
                reported = self._associate(tracks, a, frame)
            else:
                reported = [(t, None) for t in tracks if t.confirmed and (t.misses == 0 or self.output_shadow)]
            if self.frame_numbers == "batch":
                layouts.FrameMetaHead.from_address(frame.address).frame_num = batch_number
            for t, address in reported:
                self._report(batch, frame, t, address, obj_t, core, width, height)
            # removeUntrackedObjects
            left = read_boxes(frame)
            for o in left["address"][left["object_id"] == np.uint64(UNTRACKED_OBJECT_ID)].tolist():
                core.libs.meta.nvds_remove_obj_meta_from_frame(frame.address, int(o))

    def _associate(self, tracks: list[_Track], a: OrientedBoxes, frame: Any) -> list[tuple[_Track, int | None]]:
        new = np.flatnonzero(a["object_id"] == np.uint64(UNTRACKED_OBJECT_ID))
        rect = a["rect"][new].astype(np.float64)
        dets = np.column_stack((rect[:, 0], rect[:, 1], rect[:, 0] + rect[:, 2], rect[:, 1] + rect[:, 3]))
        classes = a.labels[new]
        matched_t, matched_d = set(), set()
        reported: list[tuple[_Track, int | None]] = []
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
                t = tracks[ti]
                self._match(t, dets[di], float(a.scores[new[di]]))
                if t.confirmed:
                    reported.append((t, int(a["address"][new[di]])))
        for ti, t in enumerate(tracks):
            if ti not in matched_t:
                t.misses += 1
                if t.confirmed and self.output_shadow and t.misses <= self.max_shadow_age:
                    reported.append((t, None))
        tracks[:] = [t for ti, t in enumerate(tracks)
                     if ti in matched_t or (t.confirmed and t.misses <= self.max_shadow_age)]
        for di in range(new.size):
            if di not in matched_d:
                k = int(new[di])
                t = _Track(self._next_id, dets[di].copy(), np.zeros(4), int(a.labels[k]),
                           float(a.scores[k]), confirmed=self.probation <= 1)
                self._next_id += 1
                tracks.append(t)
                if t.confirmed:
                    reported.append((t, int(a["address"][k])))
        return reported

    @staticmethod
    def _remember(o: Any) -> dict:
        rect, text = o.rect_params, o.text_params
        shown = ctypes.string_at(text.display_text) if text.display_text else b""
        return {"rect": type(rect).from_buffer_copy(rect), "text": type(text).from_buffer_copy(text),
                "display_text": shown, "component_id": int(o.unique_component_id), "label": bytes(o.obj_label)}

    def _match(self, t: _Track, det: np.ndarray, score: float) -> None:
        box = (1.0 - self.blend) * t.box + self.blend * det
        last = t.last if t.last is not None else box
        t.velocity = 0.5 * t.velocity + 0.5 * (box - last) / max(t.since, 1)
        t.box, t.last, t.since = box, box.copy(), 0
        t.hits += 1
        t.misses = 0
        t.score = score
        t.confirmed = t.confirmed or t.hits >= self.probation

    def _report(self, batch: Any, frame: Any, t: _Track, address: int | None, obj_t: Any, core: Any,
                width: float, height: float) -> None:
        """updateFrameMeta for one reported track: onto its detection's object, or onto a new one."""
        x1, y1, x2, y2 = t.box.tolist()
        clipped = clip_bbox(x1, y1, x2 - x1, y2 - y1, width, height)
        meta, glib = core.libs.meta, core.libs.glib
        if address is not None:
            o = obj_t.from_address(address)
            o.object_id = t.id
            if clipped is None:
                meta.nvds_remove_obj_meta_from_frame(frame.address, address)
                return
        else:
            if clipped is None:
                return
            address = meta.nvds_acquire_obj_meta_from_pool(batch.address)
            o = obj_t.from_address(address)
            info = self._class_info.get(t.class_id)
            if info is not None:
                o.rect_params = info["rect"]
                o.text_params = info["text"]
                o.text_params.display_text = self._heap_string(glib, info["display_text"])
                o.unique_component_id = info["component_id"]
                o.obj_label = info["label"][:127]
            d = o.detector_bbox_info
            d.left = d.top = d.width = d.height = 0.0
            o.confidence = TRACKER_MADE_CONFIDENCE
            o.class_id = t.class_id
            o.object_id = t.id
            meta.nvds_add_obj_meta_to_frame(frame.address, address, None)
        r = o.rect_params
        r.left, r.top, r.width, r.height = clipped
        tb = o.tracker_bbox_info
        tb.left, tb.top, tb.width, tb.height = x1, y1, x2 - x1, y2 - y1
        o.tracker_confidence = t.score
        self._label(o, t.id, glib)

    def _label(self, o: Any, object_id: int, glib: Any) -> None:
        text = o.text_params
        text.font_params.font_name = ctypes.addressof(_SERIF)
        text.font_params.font_size = 10
        c = text.font_params.font_color
        c.red = c.green = c.blue = c.alpha = 1.0
        text.set_bg_clr = 1
        bg = text.text_bg_clr
        bg.red = bg.green = bg.blue = 0.0
        bg.alpha = 1.0
        if self.display_tracking_id:
            old = ctypes.string_at(text.display_text) if text.display_text else b"(null)"  # glibc's "%s" of NULL
            if len(old) + 1 > DISPLAY_TEXT_SIZE:
                # nvtracker's second snprintf would get a negative size (offset past its 128-byte buffer)
                raise RuntimeError(f"nvtracker would write past its {DISPLAY_TEXT_SIZE}-byte display-text buffer: "
                                   f"display_text of {len(old)} bytes")
            shown = (old + b" ")[:DISPLAY_TEXT_SIZE - 1]
            shown += str(object_id).encode()[:DISPLAY_TEXT_SIZE - 1 - len(shown)]
            if text.display_text:
                glib.g_free(text.display_text)
            text.display_text = self._heap_string(glib, shown)
        text.x_offset = _unsigned(o.rect_params.left)
        text.y_offset = _unsigned(o.rect_params.top - LABEL_RISE)

    @staticmethod
    def _heap_string(glib: Any, value: bytes) -> int:
        """A g_malloc'd copy of ``value`` (DeepStream frees display_text with g_free)."""
        text = glib.g_malloc(len(value) + 1)
        ctypes.memmove(text, value + b"\0", len(value) + 1)
        return text
