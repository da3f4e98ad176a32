"""Changing objects already in frames, the way a tracker does: ``update_objects`` (object_id, rect_params +
tracker_bbox_info, confidences, a DS 9 rotation_angle, the OBB payload, in one C call per frame;
``update_objects_batch``: a batch's frames in one call) and ``remove_objects`` / ``remove_objects_batch``.

:mod:`obbmeta.track` writes its results with these; they are plain functions so that any probe or element can.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .._validators import is_int
from . import _core
from ._inputs import address_of, batch_of, frame_of, frame_size_of, to_host_once, to_numpy
from .batch import entry
from .obbs import OBB_PREDICTED, OBB_TRACKED


@dataclass(frozen=True)
class UpdateResult:
    """What ``update_objects`` did: ``updated`` objects, of which ``added_payloads`` had no OBB payload before."""
    updated: int
    added_payloads: int


def _objects(objects: Any) -> np.ndarray:
    o = to_numpy(objects, "objects")
    if o.ndim != 1:
        raise ValueError(f"objects must be a 1-d array of NvDsObjectMeta* addresses, got shape {tuple(o.shape)}")
    if o.size and o.dtype.kind not in "iu":
        raise TypeError(f"objects must be integer addresses (uint64, e.g. read_boxes(...)['address']), "
                        f"got dtype {o.dtype}")
    if o.size and o.dtype.kind == "i" and (o <= 0).any():
        raise ValueError("objects holds a NULL or negative address")
    return np.ascontiguousarray(o, dtype=np.uint64)


def _column(value: Any, name: str, n: int, kinds: str, dtype: Any, form: str) -> np.ndarray:
    v = to_numpy(value, name)
    if v.ndim == 0:
        v = np.full(n, v)
    if v.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},) to match objects (or be one value); got {tuple(v.shape)}")
    if v.dtype.kind not in kinds:
        raise TypeError(f"{name} must be {form}, got dtype {v.dtype}")
    return np.ascontiguousarray(v, dtype=dtype)


UINT64_MAX = 2**64 - 1
_OBJECT_IDS_FORM = "integer track ids in 0..2**64-1 (uint64; UNTRACKED_OBJECT_ID = 2**64-1 marks an untracked object)"


def _object_ids(value: Any, n: int) -> np.ndarray:
    """(n,) uint64 track ids. The range is checked before the conversion, which would wrap -1 to 2**64-1
    (UNTRACKED_OBJECT_ID); a list is read as Python ints, since NumPy turns [0, 2**64-1] into float64."""
    name = "object_ids"
    if not isinstance(value, np.ndarray) and not (hasattr(value, "detach") and hasattr(value, "cpu")):
        items = np.asarray(value, dtype=object)
        flat = items.ravel().tolist()
        if not all(is_int(v, numpy_ints=True) for v in flat):
            bad = next(v for v in flat if not is_int(v, numpy_ints=True))
            raise TypeError(f"{name} must be {_OBJECT_IDS_FORM}, got {bad!r}")
        out_of_range = [int(v) for v in flat if not 0 <= v <= UINT64_MAX]
        if out_of_range:
            raise ValueError(f"{name} must be {_OBJECT_IDS_FORM}, got {out_of_range[0]}")
        value = np.array([int(v) for v in flat], dtype=np.uint64).reshape(items.shape)
    ids = _column(value, name, n, "iu", None, _OBJECT_IDS_FORM)  # dtype None: kept, checked below
    if ids.dtype.kind == "i" and ids.size and ids.min() < 0:
        raise ValueError(f"{name} must be {_OBJECT_IDS_FORM}, got {int(ids.min())}")
    return np.ascontiguousarray(ids, dtype=np.uint64)


def update_objects(batch: Any, frame: Any, objects: Any, xywhr: Any = None, *, obb_flags: Any = OBB_TRACKED,
                   object_ids: Any = None, rect: bool = False, confidence: Any = None,
                   tracker_confidence: Any = None, rotation_angle: Any = None,
                   frame_size: tuple[float, float] | None = None) -> UpdateResult:
    """Write track results onto objects of ``frame`` in one C call, under the batch lock.

    Args:
        batch, frame: as for :func:`~obbmeta.nvds.attach_obbs`.
        objects: (N,) ``NvDsObjectMeta*`` addresses of objects in ``frame`` (``read_boxes(frame)["address"]``),
            each once. An address that is not an object of this frame is refused before anything is written.
        xywhr: (N, 5) boxes (cx, cy, w, h, angle in radians clockwise on screen): written as each object's OBB
            payload, replacing obbmeta's payload in place or adding one (with obbmeta's C copy / release functions)
            to an object that has none. None: payloads untouched.
        obb_flags: ``OBB_PREDICTED`` (no detector OBB of the object on this frame: read back with source
            ``"predicted"``) or ``OBB_TRACKED`` (a detector OBB moved or smoothed along the track), one value or
            (N,). Only these two bits are taken; the rect bits are kept true of rect_params.
        object_ids: (N,) track ids in 0..2**64-1 written to ``object_id`` (uint64), or one value; None leaves them.
            Negative ids and ids above 2**64-1 raise ValueError (they would wrap, -1 to UNTRACKED_OBJECT_ID).
        rect: True: ``rect_params`` = the tight AABB of ``xywhr`` clipped to the frame (DS 9: ``rotation_angle``
            0) and ``tracker_bbox_info`` = the same box unclipped, as nvtracker writes its own box.
        confidence, tracker_confidence: (N,) float32 or one value; None leaves them.
        rotation_angle: (N,) degrees or one value for ``rect_params.rotation_angle`` (DeepStream 9 layout; NaN leaves
            an object's angle; applied after ``rect=True``, which sets 0). On the DeepStream 6 - 8 layout, which has
            no rotation_angle, only NaN is accepted (nothing to write); any other value is a ValueError.
        frame_size: (width, height) for ``rect=True``; default: the frame meta's size.

    Returns: :class:`UpdateResult`.
    """
    b = batch_of(batch)
    f = frame_of(frame, b)
    objs = _objects(objects)
    return _update(b, [f], np.array([0, objs.shape[0]], np.int64), objs, xywhr, obb_flags, object_ids, rect,
                   confidence, tracker_confidence, rotation_angle, frame_size, None)


def update_objects_batch(batch: Any, frames: Sequence[Any], offsets: Any, objects: Any, xywhr: Any = None, *,
                         obb_flags: Any = OBB_TRACKED, object_ids: Any = None, rect: bool = False,
                         confidence: Any = None, tracker_confidence: Any = None, rotation_angle: Any = None,
                         frame_size: tuple[float, float] | None = None) -> UpdateResult:
    """:func:`update_objects` for several frames of ``batch`` in one C call (one hold of the batch lock): rows
    ``offsets[k]:offsets[k + 1]`` of ``objects`` (and of every per-object argument) are objects of ``frames[k]``,
    the form :func:`~obbmeta.nvds.read_boxes_batch` reads. ``offsets``: (len(frames) + 1,) non-decreasing
    integers from 0 to N. ``frame_size``: one (width, height) for every frame, or None: each frame meta's own size.
    Nothing is written when any entry is refused; the error names the row and its frame."""
    b = batch_of(batch)
    fs = [frame_of(f, b) for f in frames]
    objs = _objects(objects)
    off = to_numpy(offsets, "offsets")
    if off.shape != (len(fs) + 1,) or (off.size and off.dtype.kind not in "iu"):
        raise ValueError(f"offsets must be ({len(fs) + 1},) integers (one more than frames), got shape "
                         f"{tuple(off.shape)} and dtype {off.dtype}")
    off = np.ascontiguousarray(off, dtype=np.int64)
    if off[0] != 0 or off[-1] != objs.shape[0] or (np.diff(off) < 0).any():
        raise ValueError(f"offsets must rise from 0 to the {objs.shape[0]} objects, got {off.tolist()}")
    return _update(b, fs, off, objs, xywhr, obb_flags, object_ids, rect, confidence, tracker_confidence,
                   rotation_angle, frame_size, "frames")


def _update(b: Any, fs: list, offsets: np.ndarray, objs: np.ndarray, xywhr: Any, obb_flags: Any, object_ids: Any,
            rect: bool, confidence: Any, tracker_confidence: Any, rotation_angle: Any, frame_size: Any,
            name: str | None) -> UpdateResult:
    """The one C update of ``objs[offsets[k]:offsets[k + 1]]`` on ``fs[k]``; errors name the frame (``name[k]``)
    when ``name``."""
    n = objs.shape[0]
    xywhr, confidence, tracker_confidence, rotation_angle = to_host_once(xywhr, confidence, tracker_confidence,
                                                                         rotation_angle)
    params = _core.UpdateParams()
    keep = [objs, offsets]
    params.objects, params.n = address_of(objs), n
    flags = 0
    if rect and xywhr is None:
        raise ValueError("rect=True needs xywhr (rect_params is the AABB of the given boxes)")
    if xywhr is not None:
        x = to_numpy(xywhr, "xywhr")
        if x.shape != (n, 5):
            raise ValueError(f"xywhr must have shape ({n}, 5) = cx, cy, w, h, angle to match objects; got "
                             f"{tuple(x.shape)}")
        if x.dtype.kind != "f":
            raise TypeError(f"xywhr must be a floating-point array (float32), got dtype {x.dtype}")
        x = np.ascontiguousarray(x, dtype=np.float32)
        fl = _column(obb_flags, "obb_flags", n, "iu", np.uint32, "OBB_PREDICTED / OBB_TRACKED bits")
        if (fl & ~np.uint32(OBB_PREDICTED | OBB_TRACKED)).any():
            raise ValueError("obb_flags may hold only OBB_PREDICTED (4) and OBB_TRACKED (8)")
        keep += [x, fl]
        params.xywhr, params.obb_flags = address_of(x), address_of(fl)
        flags |= _core.UPDATE_OBB
    if object_ids is not None:
        ids = _object_ids(object_ids, n)
        keep.append(ids)
        params.object_ids = address_of(ids)
        flags |= _core.UPDATE_OBJECT_ID
    sizes = None
    if rect:
        one = None if frame_size is None else frame_size_of(None, frame_size)  # checked once (the frame is unused)
        sizes = np.array([one if one is not None else frame_size_of(f, None) for f in fs], np.float64).reshape(-1, 2)
        keep.append(sizes)
        flags |= _core.UPDATE_RECT
    for arg, value, bit, field in (("confidence", confidence, _core.UPDATE_CONFIDENCE, "confidence"),
                                   ("tracker_confidence", tracker_confidence, _core.UPDATE_TRACKER_CONFIDENCE,
                                    "tracker_confidence")):
        if value is not None:
            v = _column(value, arg, n, "f", np.float32, "floating-point (float32)")
            if not np.isfinite(v).all():
                raise ValueError(f"{arg} must be finite")
            keep.append(v)
            setattr(params, field, address_of(v))
            flags |= bit
    core = b._core
    if rotation_angle is not None:
        v = _column(rotation_angle, "rotation_angle", n, "iuf", np.float32, "degrees (NaN: leave)")
        if np.isinf(v).any():
            raise ValueError("rotation_angle must be finite degrees, or NaN to leave an object's angle")
        if core.layout.has_rotation_angle:
            keep.append(v)
            params.rotation_angle = address_of(v)
            flags |= _core.UPDATE_ROTATION
        elif not np.isnan(v).all():
            raise ValueError("rotation_angle needs the DeepStream 9 layout (NvOSD_RectParams.rotation_angle); the "
                             f"loaded library has {core.layout.name} (only NaN, which leaves the angle, is accepted)")
    params.flags = flags
    frames = (ctypes.c_void_p * len(fs))(*[f.address for f in fs])
    rc = entry(core.c, "obbmeta_nvds_update_objects", b.address)(
        core.layout.id, b.address, frames, address_of(offsets), len(fs),
        address_of(sizes) if sizes is not None else None, ctypes.addressof(params))
    if rc < 0:
        i = int(params.bad_index)
        if rc == _core.WriterError.INVALID_BOX:
            raise _core.writer_error(rc, "object update", "xywhr", i, np.asarray(xywhr)[i].tolist() if i >= 0 else None)
        where = "this frame"
        if name is not None and i >= 0:
            where = f"its frame ({name}[{int(np.searchsorted(offsets, i, side='right')) - 1}])"
        detail = {_core.WriterError.FOREIGN_FRAME: f"is not an object meta of {where}",
                  _core.WriterError.ARGUMENT: "is listed twice"}.get(rc)
        raise _core.writer_error(rc, "object update", "objects", i, f"0x{int(objs[i]):x}" if i >= 0 else None, detail)
    del keep
    return UpdateResult(n, int(params.added))


def remove_objects(batch: Any, frame: Any, objects: Any) -> int:
    """Remove objects from ``frame`` with NVIDIA's ``nvds_remove_obj_meta_from_frame`` (which releases each one
    and its user metas back to the pools), as nvtracker removes the objects it does not track; objects of the frame
    whose parent was removed get no parent (NULL, not a pointer into the pool). Addresses that are not objects of
    the frame, or an address twice, are refused before anything is removed. One C call under the batch lock
    (kernels/nvds_meta_track.inc), without the interpreter lock (NVIDIA's removal of an object walks the batch's
    live objects: milliseconds for a tracker's batch). Returns the number removed."""
    b = batch_of(batch)
    return _remove(b, [frame_of(frame, b)], [_objects(objects)], None)


def remove_objects_batch(batch: Any, removals: Sequence[tuple[Any, Any]]) -> tuple[int, ...]:
    """:func:`remove_objects` for several frames of ``batch`` in one C call: ``removals`` is a sequence of
    ``(frame, objects)``. Nothing is removed when any entry is refused (the error names it). Returns the number
    removed from each entry."""
    b = batch_of(batch)
    frames, arrays = [], []
    for k, item in enumerate(removals):
        if not isinstance(item, tuple) or len(item) != 2:
            raise TypeError(f"removals[{k}] must be a (frame, objects) tuple, got {type(item).__name__}")
        try:
            frames.append(frame_of(item[0], b))
            arrays.append(_objects(item[1]))
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"removals[{k}]: {exc}") from None
    _remove(b, frames, arrays, "removals")
    return tuple(int(a.size) for a in arrays)


def _remove(b: Any, frames: list, arrays: list, name: str | None) -> int:
    """One removal call over ``arrays[k]`` of ``frames[k]``; errors name the entry (``name[k]``) when ``name``."""
    keep = [(k, f, a) for k, (f, a) in enumerate(zip(frames, arrays)) if a.size]  # k: the caller's entry
    if not keep:
        return 0
    objs = keep[0][2] if len(keep) == 1 else np.concatenate([a for _, _, a in keep])
    offsets = np.zeros(len(keep) + 1, np.int64)
    np.cumsum([a.size for _, _, a in keep], out=offsets[1:])
    addresses = (ctypes.c_void_p * len(keep))(*[f.address for _, f, _ in keep])
    bad = ctypes.c_int64(-1)
    got = b._core.c.obbmeta_nvds_remove_objects(b._core.layout.id, b.address, addresses, address_of(offsets),
                                                len(keep), address_of(objs), ctypes.byref(bad))
    if got < 0 and bad.value >= 0:
        entry_k = keep[int(np.searchsorted(offsets, bad.value, side="right")) - 1][0]
        where = "" if name is None else f"{name}[{entry_k}]: "
        if got == _core.WriterError.ARGUMENT:
            raise ValueError(f"{where}objects lists an address twice" + ("" if name is None else " (in this call)"))
        if got == _core.WriterError.FOREIGN_FRAME:
            raise ValueError(f"{where}objects holds 0x{int(objs[bad.value]):x}, which is not an object meta of this "
                             "frame")
    if got < 0:
        raise _core.writer_error(got, "object remover")
    return int(got)
