"""Every object of a frame with its oriented box, read back by one C call under the batch lock (obbmeta's payload
when present, else the DS 9 rotation, else rect_params):

* :func:`read_boxes` — an :class:`~obbmeta.OrientedBoxes` (torch), the objects' other fields in its ``data``;
* :func:`read_objects` — the same :class:`FrameObjects` alone (NumPy columns, torch-free: for trackers and probes);
  :func:`read_objects_batch` — one :class:`FrameObjects` of several frames (one C call) and each frame's rows;
* :func:`read_obbs` — one ``(ObjectInfo, Obb)`` pair per object.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _core, layouts
from ._inputs import reader_frame
from .batch import entry
from .layouts import SOURCES  # OBBMETA_SOURCE_* -> name (kernels/nvds_meta.h, checked at load)

if TYPE_CHECKING:
    from ..boxes import OrientedBoxes



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
    parent: int = 0  # the parent NvDsObjectMeta* (a secondary detector's objects), 0: none

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


_ROOM = [64]  # rows the last read needed: the next read starts with that much room (a hint; races are harmless)


def _read_rows(frames: list) -> tuple[Any, int, np.ndarray]:
    """The rows of ``frames`` (FrameMeta, read frame after frame in one C call): (rows, total, counts per frame)."""
    core = _core.get()
    n_frames = len(frames)
    addresses = (ctypes.c_void_p * n_frames)(*[f.address for f in frames])
    counts = np.zeros(n_frames, np.int64)
    capacity = _ROOM[0]
    read = entry(core.c, "obbmeta_nvds_read", (frames[0]._head.base_meta.batch_meta or 0) if frames else 0)
    while True:  # the C reader counts and copies under the batch lock; more objects than room: read again
        rows = (_core.ReadRow * capacity)()
        got = read(core.layout.id, addresses, n_frames, rows, capacity, counts.ctypes.data)
        if got < 0:
            raise _core.writer_error(got, "reader")
        if got <= capacity:
            _ROOM[0] = min(max(64, got), 1 << 20)
            return rows, got, counts
        capacity = got


@dataclass(frozen=True, eq=False)
class FrameObjects:
    """Every object of a frame as columns (row i is the i-th object of ``obj_meta_list``: DeepStream prepends, so
    the newest first); copies, safe to keep. Index it like an array (``objects[mask]``, ``objects[2:]``) for a subset,
    ``info(i)`` / ``obb(i)`` for one object as :class:`ObjectInfo` / :class:`Obb`.

    Attributes:
        xywhr: (N, 5) float32 oriented boxes (radians, clockwise on screen); corners: (N, 4, 2) float32.
        source: (N,) where each box came from: 0 obbmeta's payload, 1 the DS 9 ``rotation_angle``, 2 ``rect_params``
            as a 0-degree box, 3 obbmeta's payload predicted by :mod:`obbmeta.track` (:data:`SOURCES` names them).
        flags: (N,) the payload's ``OBB_*`` bits. rect, detector_bbox, tracker_bbox: (N, 4) left, top, width,
            height of ``rect_params``, ``detector_bbox_info``, ``tracker_bbox_info``.
        class_id, component_id: (N,) int32. confidence, tracker_confidence: (N,) float32.
        object_id: (N,) uint64 (:data:`~obbmeta.nvds.UNTRACKED_OBJECT_ID` when no tracker set it).
        label: (N,) ``S128`` bytes of ``obj_label``. rotation_angle: (N,) ``rect_params.rotation_angle`` in degrees
            (0 on the DS 6-8 layout). num_user_meta: (N,) objects' user metas. address: (N,) uint64
            ``NvDsObjectMeta*``, valid while the frame is.
    """
    xywhr: np.ndarray
    corners: np.ndarray
    rect: np.ndarray
    class_id: np.ndarray
    confidence: np.ndarray
    object_id: np.ndarray
    source: np.ndarray
    flags: np.ndarray
    detector_bbox: np.ndarray
    tracker_bbox: np.ndarray
    tracker_confidence: np.ndarray
    component_id: np.ndarray
    label: np.ndarray
    rotation_angle: np.ndarray
    address: np.ndarray
    num_user_meta: np.ndarray
    parent: np.ndarray

    def __len__(self) -> int:
        return len(self.address)

    def __getitem__(self, index: Any) -> "FrameObjects":
        if isinstance(index, (int, np.integer)) and not isinstance(index, bool):
            raise TypeError("objects[i] would be a single row: use objects.info(i) / objects.obb(i), or "
                            "objects[i:i + 1] for a one-object FrameObjects")
        return FrameObjects(**{f.name: getattr(self, f.name)[index] for f in fields(self)})

    @property
    def tracked(self) -> np.ndarray:
        """(N,) bool: a tracker set the object's id."""
        return self.object_id != np.uint64(layouts.UNTRACKED_OBJECT_ID)

    @property
    def labels(self) -> list[str]:
        """``label`` decoded (UTF-8, bad bytes replaced)."""
        return [b.decode("utf-8", "replace") for b in self.label.tolist()]

    def info(self, i: int) -> ObjectInfo:
        """Object ``i``'s NvDsObjectMeta fields as an :class:`ObjectInfo`."""
        return ObjectInfo(
            address=int(self.address[i]), object_id=int(self.object_id[i]), class_id=int(self.class_id[i]),
            component_id=int(self.component_id[i]), confidence=float(self.confidence[i]),
            tracker_confidence=float(self.tracker_confidence[i]),
            label=self.label[i].decode("utf-8", "replace"), rect=tuple(self.rect[i].tolist()),
            detector_bbox=tuple(self.detector_bbox[i].tolist()), rotation_angle=float(self.rotation_angle[i]),
            num_user_meta=int(self.num_user_meta[i]), tracker_bbox=tuple(self.tracker_bbox[i].tolist()),
            parent=int(self.parent[i]))

    def obb(self, i: int) -> Obb:
        """Object ``i``'s oriented box as an :class:`Obb`."""
        return Obb(xywhr=tuple(self.xywhr[i].tolist()), corners=tuple(map(tuple, self.corners[i].tolist())),
                   source=SOURCES[int(self.source[i])], flags=int(self.flags[i]))


def read_objects(frame: Any, batch: Any = None) -> FrameObjects:
    """Every object of ``frame`` with its oriented box, as :class:`FrameObjects` (NumPy, no torch). Works on any
    frame, including copies made by NVIDIA's copy functions."""
    rows, n, _ = _read_rows([reader_frame(frame, batch)])
    return _objects_of(rows, n)


def read_objects_batch(batch: Any, frames: Any = None) -> tuple[FrameObjects, np.ndarray]:
    """:func:`read_objects` of several frames of ``batch`` (default: ``batch.frames``) in one C call: one
    :class:`FrameObjects` of every frame's objects, frame after frame (each in its ``obj_meta_list`` order), and
    ``offsets`` ((n_frames + 1,) int64): frame k's objects are rows ``offsets[k]:offsets[k + 1]``."""
    from ._inputs import batch_of, frame_of

    b = batch_of(batch)
    fs = list(b.frames) if frames is None else [frame_of(f, b) for f in frames]
    for k, f in enumerate(fs):
        if f._head.base_meta.batch_meta != b.address:
            raise ValueError(f"frames[{k}] is not a frame meta of this batch")
    offsets = np.zeros(len(fs) + 1, np.int64)
    if not fs:
        return _objects_of(None, 0), offsets
    rows, n, counts = _read_rows(fs)
    np.cumsum(counts, out=offsets[1:])
    return _objects_of(rows, n), offsets


def _objects_of(rows: Any, n: int) -> FrameObjects:
    """The first ``n`` read rows as columns."""
    t = np.frombuffer(rows, dtype=_ROW_DTYPE, count=n) if n else np.zeros(0, _ROW_DTYPE)
    return FrameObjects(
        xywhr=t["xywhr"].copy(), corners=t["corners"].reshape(n, 4, 2).copy(), rect=t["rect"].copy(),
        class_id=t["class_id"].copy(), confidence=t["confidence"].copy(), object_id=t["object_id"].copy(),
        source=t["source"].copy(), flags=t["obb_flags"].copy(), detector_bbox=t["detector_bbox"].copy(),
        tracker_bbox=t["tracker_bbox"].copy(), tracker_confidence=t["tracker_confidence"].copy(),
        component_id=t["component_id"].copy(), label=_labels(t["label"]), rotation_angle=t["rotation_angle"].copy(),
        address=t["address"].copy(), num_user_meta=t["num_user_meta"].copy(), parent=t["parent"].copy())


def read_boxes(frame: Any, batch: Any = None, device: Any = "cpu") -> "OrientedBoxes":
    """Every object of ``frame`` as one :class:`~obbmeta.OrientedBoxes` on ``device``: ``xywhr``; ``scores`` =
    confidence; ``labels`` = class_id; ``track_ids`` = object_id when a tracker set any, -1 for the objects it did
    not, None when it set none; and in ``data`` every other column :class:`FrameObjects` has, as NumPy arrays on the
    host (``data["address"]``, ``data["object_id"]`` (uint64), ``data["rect"]``, ``data["label"]``, ``data["source"]``,
    ...), row for row.

    Raises OverflowError when a tracked id does not fit ``track_ids``' int64 (read ``data["object_id"]`` of
    :func:`read_objects`, uint64)."""
    import torch

    from ..boxes import OrientedBoxes

    objects = read_objects(frame, batch)
    tracked = objects.tracked
    ids = None
    if tracked.any():
        if (objects.object_id[tracked] > np.uint64(2**63 - 1)).any():
            raise OverflowError("a tracked object_id is above 2**63 - 1 and does not fit OrientedBoxes.track_ids "
                                "(int64); read FrameObjects.object_id (uint64) instead")
        ids = torch.from_numpy(np.where(tracked, objects.object_id.astype(np.int64), -1))
    data = {f.name: getattr(objects, f.name) for f in fields(objects) if f.name not in _BOX_COLUMNS}
    boxes = OrientedBoxes(torch.from_numpy(objects.xywhr), torch.from_numpy(objects.confidence),
                          torch.from_numpy(objects.class_id.astype(np.int64)), ids, data)
    return boxes.to(device)


_BOX_COLUMNS = ("xywhr", "confidence", "class_id")  # what OrientedBoxes holds itself: xywhr, scores, labels


def read_obbs(frame: Any, batch: Any = None) -> list[tuple[ObjectInfo, Obb]]:
    """Every object of ``frame`` (``obj_meta_list`` order: DeepStream prepends, so the newest first) with its
    oriented box: obbmeta's payload when present, else the DS 9 rotation, else rect_params as a 0-degree box
    (``Obb.source`` says which). Works on any frame, including copies made by NVIDIA's copy functions."""
    objects = read_objects(frame, batch)
    return [(objects.info(i), objects.obb(i)) for i in range(len(objects))]


def _labels(chars: np.ndarray) -> np.ndarray:
    """(N, 128) obj_label characters -> (N,) bytes (``S128``, the trailing NULs dropped as numpy does)."""
    return np.ascontiguousarray(chars).view(f"S{chars.shape[1]}").reshape(chars.shape[0])


# numpy reads the layout (names, formats, offsets, padding) from the ctypes struct itself: one description of a row.
_ROW_DTYPE = np.dtype(_core.ReadRow)
