"""read_obbs / read_obbs_arrays: every object of a frame with its oriented box, read back by one C call under the
batch lock (obbmeta's payload when present, else the DS 9 rotation, else rect_params)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _core, layouts
from ._inputs import reader_frame

SOURCES = {0: "user_meta", 1: "rotation_angle", 2: "aabb", 3: "predicted"}


@dataclass(frozen=True)
class ObjectInfo:
    """The NvDsObjectMeta fields of one object, as read (copies; safe to keep)."""
    address: int
    object_id: int
    class_id: int
    component_id: int
    confidence: float
    tracker_confidence: float
    label: str
    rect: tuple[float, float, float, float]          # rect_params left, top, width, height
    detector_bbox: tuple[float, float, float, float]  # detector_bbox_info left, top, width, height
    rotation_angle: float                             # degrees (DS 9 layout), else 0
    num_user_meta: int
    tracker_bbox: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)  # tracker_bbox_info (unclipped)

    @property
    def tracked(self) -> bool:
        return self.object_id != layouts.UNTRACKED_OBJECT_ID


@dataclass(frozen=True)
class Obb:
    """The oriented box of one object: cx, cy, w, h, angle (radians, clockwise on screen) and its 4 corners.

    ``source`` says where it came from: ``"user_meta"`` (obbmeta's payload), ``"predicted"`` (obbmeta's payload
    that :mod:`obbmeta.track` predicted from the object's track, flag ``OBB_PREDICTED``: no detector OBB on this
    frame), ``"rotation_angle"`` (DS 9 rect_params rotation, e.g. written by nvinfer) or ``"aabb"`` (last resort:
    rect_params as a 0-degree box).
    """
    xywhr: tuple[float, float, float, float, float]
    corners: tuple[tuple[float, float], ...]
    source: str
    flags: int

    @property
    def exact(self) -> bool:
        return self.source == "user_meta"


def _read_rows(frame: Any, batch: Any = None) -> tuple[Any, int]:
    f = reader_frame(frame, batch)
    core = _core.get()
    capacity = 64
    while True:  # the C reader counts and copies under the batch lock; more objects than room: read again
        rows = (_core.ReadRow * capacity)()
        got = core.c.obbmeta_nvds_read(core.layout.id, f.address, rows, capacity)
        if got < 0:
            raise RuntimeError(f"obbmeta's C reader failed: {_core.error_reason(got)}")
        if got <= capacity:
            return rows, got
        capacity = got


def read_obbs(frame: Any, batch: Any = None) -> list[tuple[ObjectInfo, Obb]]:
    """Every object of ``frame`` (``obj_meta_list`` order: DeepStream prepends, so the newest first) with its
    oriented box: obbmeta's payload when present, else the DS 9 rotation, else rect_params as a 0-degree box
    (``Obb.source`` says which). Works on any frame, including copies made by NVIDIA's copy functions."""
    rows, n = _read_rows(frame, batch)
    out = []
    for r in rows[:n]:
        info = ObjectInfo(
            address=int(r.address), object_id=int(r.object_id), class_id=int(r.class_id),
            component_id=int(r.component_id), confidence=float(r.confidence),
            tracker_confidence=float(r.tracker_confidence),
            label=r.label.decode("utf-8", "replace"), rect=tuple(r.rect), detector_bbox=tuple(r.detector_bbox),
            rotation_angle=float(r.rotation_angle), num_user_meta=int(r.num_user_meta),
            tracker_bbox=tuple(r.tracker_bbox))
        c = list(r.corners)
        obb = Obb(xywhr=tuple(r.xywhr), corners=tuple((c[2 * k], c[2 * k + 1]) for k in range(4)),
                  source=SOURCES[int(r.source)], flags=int(r.obb_flags))
        out.append((info, obb))
    return out


def read_obbs_arrays(frame: Any, batch: Any = None) -> dict[str, np.ndarray]:
    """Like :func:`read_obbs` but as arrays (N rows, ``obj_meta_list`` order): ``xywhr`` (N,5), ``corners``
    (N,4,2), ``rect`` (N,4), ``class_id``, ``confidence``, ``object_id`` (uint64), ``source`` (0 user meta,
    1 rotation_angle, 2 aabb, 3 predicted), ``flags`` (the payload's ``OBB_*`` bits), ``detector_bbox`` and
    ``tracker_bbox`` (N,4) left, top, width, height, ``tracker_confidence``, ``component_id``, ``label`` (bytes,
    ``obj_label``), ``rotation_angle`` (``rect_params.rotation_angle``, degrees; 0 on the DS 6-8 layout),
    ``address`` (uint64 ``NvDsObjectMeta*``, valid while the frame is)."""
    rows, n = _read_rows(frame, batch)
    table = np.frombuffer(rows, dtype=_ROW_DTYPE, count=n)
    return {"xywhr": table["xywhr"].copy(), "corners": table["corners"].reshape(n, 4, 2).copy(),
            "rect": table["rect"].copy(), "class_id": table["class_id"].copy(),
            "confidence": table["confidence"].copy(), "object_id": table["object_id"].copy(),
            "source": table["source"].copy(), "flags": table["obb_flags"].copy(),
            "detector_bbox": table["detector_bbox"].copy(), "tracker_bbox": table["tracker_bbox"].copy(),
            "tracker_confidence": table["tracker_confidence"].copy(), "component_id": table["component_id"].copy(),
            "label": _labels(table["label"]), "rotation_angle": table["rotation_angle"].copy(),
            "address": table["address"].copy()}


def _labels(chars: np.ndarray) -> np.ndarray:
    """(N, 128) obj_label characters -> (N,) bytes (``S128``, the trailing NULs dropped as numpy does)."""
    return np.ascontiguousarray(chars).view(f"S{chars.shape[1]}").reshape(chars.shape[0])


# numpy reads the layout (names, formats, offsets, padding) from the ctypes struct itself: one description of a row.
_ROW_DTYPE = np.dtype(_core.ReadRow)
