"""obbmeta for pyservicemaker (DeepStream Service Maker for Python): the only module that imports pyservicemaker.

pyservicemaker hands a probe only its own wrappers (no NvDsBatchMeta address), so everything here goes through
pyservicemaker's public API, the calls each version really has (docs/servicemaker.md has the table):

* :func:`write_obbs` — from a user callback: each oriented box as an object meta (``acquire_object_meta`` +
  ``frame_meta.append``; rect_params = the tight AABB clipped to the frame, ``object_id`` = UNTRACKED, class,
  confidence, label) and, with ``draw=True``, its 4 edges as display-meta lines (``acquire_display_meta`` +
  ``add_line``, 16 per display meta). 8.0 and 9.x; the angle itself rides only in the lines (8.0 cannot create user
  meta; 9.x's ``set_user_data_json`` is not used, see the docs).
* :class:`ObbDetectorOperator` — a ``BatchMetadataOperator`` that calls ``detect(frame_meta)`` for every frame and
  writes what it returns with :func:`write_obbs`.
* :class:`ObbOverlayOperator` — a ``BatchMetadataOperator`` that draws as lines every object whose rect_params
  carries a DS 9 ``rotation_angle`` (nvinfer's OBB output, or ``obbinfer``/``attach_obbs`` in rotation mode).
* For ``obbinfer`` / ``obboverlay`` / ``obbmessage`` inside a ``pyservicemaker.Pipeline`` (the full OBB user meta,
  any version): ``Pipeline.add("obbinfer", "infer", {...})`` after ``obbmeta.gst.register()`` or with
  ``GST_PLUGIN_PATH``: see :func:`add_obbinfer` and docs/servicemaker.md.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

from . import geometry
from ._validators import frame_size as check_frame_size
from .nvds import cut_label
from .nvds.layouts import MAX_ELEMENTS_IN_DISPLAY_META, UNTRACKED_OBJECT_ID
from .palette import class_color_rgba


def _psm() -> Any:
    try:
        import pyservicemaker
    except ImportError as exc:
        raise ImportError("pyservicemaker (DeepStream Service Maker for Python, DeepStream 7.1+) is not installed; "
                          "it ships with DeepStream under /opt/nvidia/deepstream/deepstream/service-maker") from exc
    return pyservicemaker


def _rows(boxes: Any) -> list[tuple[float, float, float, float, float, float, int]]:
    """(cx, cy, w, h, angle, score, label) per box from an OrientedBoxes (CPU or CUDA)."""
    if not all(hasattr(boxes, a) for a in ("xywhr", "scores", "labels")):
        raise TypeError(f"boxes must be an OrientedBoxes (.xywhr, .scores, .labels), got {type(boxes).__name__}")
    x = boxes.xywhr.detach().cpu().tolist() if hasattr(boxes.xywhr, "detach") else list(boxes.xywhr)
    s = boxes.scores.detach().cpu().tolist() if hasattr(boxes.scores, "detach") else list(boxes.scores)
    lab = boxes.labels.detach().cpu().tolist() if hasattr(boxes.labels, "detach") else list(boxes.labels)
    return [(*map(float, r), float(sc), int(lb)) for r, sc, lb in zip(x, s, lab)]


def _frame_size(frame_meta: Any, frame_size: Any) -> tuple[float, float]:
    if frame_size is not None:
        w, h = check_frame_size("frame_size", frame_size)
    else:
        w, h = float(frame_meta.pipeline_width or frame_meta.source_width), \
            float(frame_meta.pipeline_height or frame_meta.source_height)
    if not (w > 0 and h > 0):
        raise ValueError("the frame meta has no pipeline/source size; pass frame_size=(width, height)")
    return w, h


class _Lines:
    """Display-meta lines, a new display meta every 16 (pyservicemaker drops the 17th silently)."""

    def __init__(self, batch_meta: Any, frame_meta: Any, osd: Any):
        self.batch_meta, self.frame_meta, self.osd, self.meta, self.count, self.metas = \
            batch_meta, frame_meta, osd, None, 0, 0

    def add(self, p: tuple[float, float], q: tuple[float, float], color: Sequence[float], width: int,
            w: float, h: float) -> None:
        if self.meta is None or self.count == MAX_ELEMENTS_IN_DISPLAY_META:
            self.meta = self.batch_meta.acquire_display_meta()
            self.frame_meta.append(self.meta)
            self.count, self.metas = 0, self.metas + 1
        line = self.osd.Line()
        pix = lambda v, lim: int(min(max(round(v), 0), lim - 1))  # noqa: E731 - NvOSD coordinates are unsigned
        line.x1, line.y1, line.x2, line.y2 = pix(p[0], w), pix(p[1], h), pix(q[0], w), pix(q[1], h)
        line.width = int(width)
        line.color = self.osd.Color(*color)
        self.meta.add_line(line)
        self.count += 1


def write_obbs(batch_meta: Any, frame_meta: Any, boxes: Any, class_names: Sequence[str] | None = None, *,
               component_id: int = 1, draw: bool = True, line_width: int = 2,
               frame_size: tuple[float, float] | None = None) -> int:
    """Write ``boxes`` (an OrientedBoxes in pipeline pixels) into ``frame_meta`` with pyservicemaker's API; returns
    the number of objects written (boxes that share no interior with the frame are skipped and not counted: the rule of
    :func:`obbmeta.geometry.meets_frame`, which the C writer of ``attach_obbs`` applies too)."""
    osd = _psm().osd
    w, h = _frame_size(frame_meta, frame_size)
    lines = _Lines(batch_meta, frame_meta, osd) if draw else None
    rows = _rows(boxes)
    xywhr = [r[:5] for r in rows]
    corners = geometry.corners(xywhr).tolist()
    meets = geometry.meets_frame(xywhr, w, h).tolist()  # the C writer's skip rule
    written = 0
    for (*_, score, label), pts, inside in zip(rows, corners, meets):
        if not inside:
            continue
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        left, top, right, bottom = max(min(xs), 0.0), max(min(ys), 0.0), min(max(xs), w), min(max(ys), h)
        color = class_color_rgba(label)
        obj = batch_meta.acquire_object_meta()
        obj.class_id, obj.confidence, obj.unique_component_id = label, score, component_id
        obj.object_id = UNTRACKED_OBJECT_ID  # the pool leaves 0; nvtracker treats 0 as a tracked id
        r = obj.rect_params
        r.left, r.top, r.width, r.height = left, top, right - left, bottom - top
        r.border_width = 0 if draw else line_width
        r.border_color = osd.Color(*color)
        if class_names is not None:
            name = class_names[label] if 0 <= label < len(class_names) else str(label)
            obj.label = cut_label(name).decode("utf-8")  # 127 bytes: the label setter writes one past 128 (docs)
        frame_meta.append(obj)
        if lines is not None:
            for k in range(4):
                lines.add(pts[k], pts[(k + 1) % 4], color, line_width, w, h)
        written += 1
    return written


def _operator_base() -> type:
    return _psm().BatchMetadataOperator


def ObbDetectorOperator(detect: Callable[[Any], Any], class_names: Sequence[str] | None = None, **kwargs: Any):
    """A ``BatchMetadataOperator`` (use with ``Probe(name, op)``) that calls ``detect(frame_meta)`` for every
    frame and writes the OrientedBoxes it returns (None: nothing) with :func:`write_obbs` (``kwargs`` go there).
    Built lazily because its base class comes from pyservicemaker."""

    class _ObbDetectorOperator(_operator_base()):
        def __init__(self):
            super().__init__()
            self.detect, self.class_names, self.kwargs, self.written = detect, class_names, kwargs, 0

        def handle_metadata(self, batch_meta: Any) -> None:
            for frame_meta in batch_meta.frame_items:  # items alias one wrapper: used inside the loop only
                boxes = self.detect(frame_meta)
                if boxes is not None:
                    self.written += write_obbs(batch_meta, frame_meta, boxes, self.class_names, **self.kwargs)

    return _ObbDetectorOperator()


def ObbOverlayOperator(line_width: int = 2, frame_size: tuple[float, float] | None = None):
    """A ``BatchMetadataOperator`` drawing as display-meta lines every object whose ``rect_params.rotation_angle``
    (DS 9.x, degrees, around the rect's centre) is non-zero; objects without rotation are left as they are. On
    DeepStream 8.0 (no rotation_angle) it draws nothing: put ``obboverlay`` in the pipeline instead."""

    class _ObbOverlayOperator(_operator_base()):
        def __init__(self):
            super().__init__()
            self.drawn = 0

        def handle_metadata(self, batch_meta: Any) -> None:
            osd = _psm().osd
            for frame_meta in batch_meta.frame_items:
                w, h = _frame_size(frame_meta, frame_size)
                lines = _Lines(batch_meta, frame_meta, osd)
                boxes = []
                for obj in frame_meta.object_items:
                    r = obj.rect_params
                    angle = float(getattr(r, "rotation_angle", 0.0) or 0.0)
                    if angle:
                        boxes.append((r.left + r.width / 2, r.top + r.height / 2, r.width, r.height,
                                      math.radians(angle), obj.class_id))
                polygons = geometry.corners([b[:5] for b in boxes]).tolist()
                for (*_, label), pts in zip(boxes, polygons):  # drawn after the object loop: no nested acquisition
                    color = class_color_rgba(label)
                    for k in range(4):
                        lines.add(pts[k], pts[(k + 1) % 4], color, line_width, w, h)
                    self.drawn += 1

    return _ObbOverlayOperator()


def add_obbinfer(pipeline: Any, name: str, properties: dict) -> Any:
    """``pipeline.add("obbinfer", name, properties)`` after registering obbmeta's elements in this process (so no
    GST_PLUGIN_PATH is needed); returns the pipeline for chaining like pyservicemaker's own ``add``."""
    from . import gst

    gst.register()
    return pipeline.add("obbinfer", name, properties)
