"""Every object of a frame with its oriented box, read back by one C call under the batch lock (obbmeta's payload
when present, else the DS 9 rotation, else rect_params), as the one box type, :class:`~obbmeta.OrientedBoxes`:

* :func:`read_boxes` — a frame's objects, NumPy-backed (torch-free: for trackers and probes) or on a torch device;
* :func:`read_boxes_batch` — several frames of a batch in one C call, and each frame's rows.

``xywhr`` is the oriented box, ``scores`` the confidence, ``labels`` the class_id and ``track_ids`` the object_id
(-1: untracked); every other field of the object is a column of the boxes' ``data`` (:data:`DATA_COLUMNS`).
"""
from __future__ import annotations

import ctypes
import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _core, layouts
from ._inputs import reader_frame
from .batch import entry

if TYPE_CHECKING:
    from ..boxes import OrientedBoxes

DATA_COLUMNS = {
    "corners": "(N, 4, 2) float32 corners of the oriented box (top-left of the un-rotated box first, clockwise)",
    "rect": "(N, 4) float32 rect_params left, top, width, height",
    "object_id": "(N,) uint64 object_id (UNTRACKED_OBJECT_ID when no tracker set it)",
    "source": "(N,) where the box came from: 0 obbmeta's payload, 1 the DS 9 rotation_angle, 2 rect_params as a "
              "0-degree box, 3 obbmeta's payload predicted by obbmeta.track (layouts.SOURCES names them)",
    "flags": "(N,) the payload's OBB_* bits",
    "detector_bbox": "(N, 4) float32 detector_bbox_info left, top, width, height",
    "tracker_bbox": "(N, 4) float32 tracker_bbox_info left, top, width, height (unclipped)",
    "tracker_confidence": "(N,) float32",
    "component_id": "(N,) int32 unique_component_id",
    "label": "(N,) S128 obj_label bytes (up to the NUL)",
    "rotation_angle": "(N,) float32 rect_params.rotation_angle in degrees (0 on the DS 6-8 layout)",
    "address": "(N,) uint64 NvDsObjectMeta*, valid while the frame is",
    "num_user_meta": "(N,) the object's user metas",
    "parent": "(N,) uint64 the parent NvDsObjectMeta* (a secondary detector's objects), 0: none",
}
"""The ``data`` columns of what the readers return, by name (copies, safe to keep)."""

_ROWS = threading.local()  # each thread's row buffer, kept between reads (the columns are copied out of it)


def _read_rows(frames: list) -> tuple[Any, int, np.ndarray]:
    """The rows of ``frames`` (FrameMeta, read frame after frame in one C call): (rows, total, counts per frame).
    ``rows`` is this thread's buffer, valid until its next read: the caller copies what it keeps."""
    core = _core.get()
    n_frames = len(frames)
    addresses = (ctypes.c_void_p * n_frames)(*[f.address for f in frames])
    counts = np.zeros(n_frames, np.int64)
    rows = getattr(_ROWS, "rows", None)
    if rows is None:
        rows = _ROWS.rows = (_core.ReadRow * 64)()
    read = entry(core.c, "obbmeta_nvds_read", (frames[0]._head.base_meta.batch_meta or 0) if frames else 0)
    while True:  # the C reader counts and copies under the batch lock; more objects than room: read again
        got = read(core.layout.id, addresses, n_frames, rows, len(rows), counts.ctypes.data)
        if got < 0:
            raise _core.writer_error(got, "reader")
        if got <= len(rows):
            return rows, got, counts
        # room for this read and some more (a hint for the next; a buffer beyond 2**20 rows is not kept)
        rows = (_core.ReadRow * (got + got // 4))()
        if len(rows) <= 1 << 20:
            _ROWS.rows = rows


def read_boxes(frame: Any, batch: Any = None, device: Any = None) -> "OrientedBoxes":
    """Every object of ``frame`` (``obj_meta_list`` order: DeepStream prepends, so the newest first) as one
    :class:`~obbmeta.OrientedBoxes`: ``xywhr`` the oriented box (obbmeta's payload when present, else the DS 9
    rotation, else rect_params as a 0-degree box: ``data["source"]`` says which); ``scores`` = confidence;
    ``labels`` = class_id; ``track_ids`` = object_id read as int64 when a tracker set any (-1, the int64 reading of
    :data:`~obbmeta.nvds.UNTRACKED_OBJECT_ID`, for the objects it did not; an id above 2**63 - 1 reads negative:
    ``data["object_id"]`` keeps the uint64), None when it set none; every other field in ``data``
    (:data:`DATA_COLUMNS`), row for row.

    NumPy-backed (no torch import) unless ``device`` names a torch device, where the boxes go (``data`` stays on
    the host). Works on any frame, including copies made by NVIDIA's copy functions."""
    rows, n, _ = _read_rows([reader_frame(frame, batch)])
    boxes = _boxes_of(rows, n)
    return boxes if device is None else boxes.to(device)


def read_boxes_batch(batch: Any, frames: Any = None, device: Any = None) -> tuple["OrientedBoxes", np.ndarray]:
    """:func:`read_boxes` of several frames of ``batch`` (default: ``batch.frames``) in one C call: one
    :class:`~obbmeta.OrientedBoxes` of every frame's objects, frame after frame (each in its ``obj_meta_list``
    order), and ``offsets`` ((n_frames + 1,) int64): frame k's objects are rows ``offsets[k]:offsets[k + 1]``."""
    from ._inputs import batch_of, frame_of

    b = batch_of(batch)
    fs = list(b.frames) if frames is None else [frame_of(f, b) for f in frames]
    for k, f in enumerate(fs):
        if f._head.base_meta.batch_meta != b.address:
            raise ValueError(f"frames[{k}] is not a frame meta of this batch")
    offsets = np.zeros(len(fs) + 1, np.int64)
    if not fs:
        boxes = _boxes_of(None, 0)
    else:
        rows, n, counts = _read_rows(fs)
        np.cumsum(counts, out=offsets[1:])
        boxes = _boxes_of(rows, n)
    return (boxes if device is None else boxes.to(device)), offsets


def is_tracked(boxes: "OrientedBoxes") -> np.ndarray:
    """(N,) bool: a tracker set the object's id (``data["object_id"]`` of read boxes is not UNTRACKED_OBJECT_ID)."""
    return np.asarray(boxes.data["object_id"]) != np.uint64(layouts.UNTRACKED_OBJECT_ID)


def _boxes_of(rows: Any, n: int) -> "OrientedBoxes":
    """The first ``n`` read rows as NumPy-backed OrientedBoxes (the columns have the documented dtypes already).

    The columns come out of the row buffer in one C call that keeps the interpreter lock: NumPy's copy of a field of
    a structured array releases it past 500 elements, and each release costs the thread up to Python's switch
    interval whenever another thread runs Python (17 such copies a read; benchmarks/gil_handoffs.py)."""
    from ..boxes import OrientedBoxes

    # every column (and object_id once more, read as int64: UNTRACKED_OBJECT_ID reads as -1) in one allocation, one
    # after the other, each 8-byte aligned: the C call is given where each starts (one allocation and no per-column
    # pointer: a one-row read costs 15 us instead of 22; a column kept alone keeps the block, ~300 bytes a row)
    block = np.empty(n * _BLOCK_ROW, np.uint8)
    if n:
        starts = (_STARTS * n + block.ctypes.data).astype(np.uint64)
        got = _core.get().c.obbmeta_nvds_columns_held(ctypes.addressof(rows), n, _ROW_DTYPE.itemsize, len(starts),
                                                      _OFFSETS_AT, _WIDTHS_AT, starts.ctypes.data)
        if got:
            raise _core.writer_error(got, "reader")
    c = {name: np.ndarray((n, *shape), dtype, block, start * n) for (name, dtype, shape), start in _PLACES}
    ids = np.ndarray(n, np.int64, block, _ID_START * n)
    untracked = c["object_id"] == np.uint64(layouts.UNTRACKED_OBJECT_ID)
    data = dict(
        corners=c["corners"].reshape(n, 4, 2), rect=c["rect"], object_id=c["object_id"], source=c["source"],
        flags=c["obb_flags"], detector_bbox=c["detector_bbox"], tracker_bbox=c["tracker_bbox"],
        tracker_confidence=c["tracker_confidence"], component_id=c["component_id"],
        label=c["label"].view(f"S{layouts.MAX_LABEL_SIZE}").reshape(n), rotation_angle=c["rotation_angle"],
        address=c["address"], num_user_meta=c["num_user_meta"], parent=c["parent"])
    return OrientedBoxes._checked_elsewhere(c["xywhr"], c["confidence"], c["class_id"].astype(np.int64),
                                            None if untracked.all() else ids, data)


def label_strings(boxes: "OrientedBoxes") -> list[str]:
    """``data["label"]`` of read boxes decoded (UTF-8, bad bytes replaced)."""
    return [b.decode("utf-8", "replace") for b in np.asarray(boxes.data["label"]).tolist()]


# numpy reads the layout (names, formats, offsets, padding) from the ctypes struct itself: one description of a row.
_ROW_DTYPE = np.dtype(_core.ReadRow)
# Each field as a column: (name, dtype, shape of one row's value; label: 128 S1 characters). Then object_id once more.
_COLUMNS = tuple((name, _ROW_DTYPE.fields[name][0].base, _ROW_DTYPE.fields[name][0].shape) for name in _ROW_DTYPE.names)
_OFFSETS = np.array([_ROW_DTYPE.fields[name][1] for name in _ROW_DTYPE.names] + [_ROW_DTYPE.fields["object_id"][1]],
                    np.int64)
_WIDTHS = np.array([_ROW_DTYPE.fields[name][0].itemsize for name in _ROW_DTYPE.names] + [8], np.int64)
_OFFSETS_AT, _WIDTHS_AT = _OFFSETS.ctypes.data, _WIDTHS.ctypes.data  # module constants: their buffers stay put
# where each column starts in a read's block, in bytes per row (x n): widths rounded up to 8 keep every column aligned
_PADDED = (_WIDTHS + 7) // 8 * 8
_STARTS = np.concatenate([[0], np.cumsum(_PADDED)[:-1]]).astype(np.int64)
_BLOCK_ROW = int(_PADDED.sum())
_PLACES = tuple(zip(_COLUMNS, _STARTS.tolist()))
_ID_START = int(_STARTS[-1])
