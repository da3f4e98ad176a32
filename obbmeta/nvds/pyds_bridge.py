"""Both ways between obbmeta and pyds (deepstream_python_apps, DeepStream <= 8.0): addresses are the bridge.

pyds hands out pybind11 wrappers; ``pyds.get_ptr(obj)`` gives their C address and ``pyds.NvDsObjectMeta.cast(int)``
(likewise ``NvDsFrameMeta`` / ``NvDsBatchMeta`` / ``NvDsUserMeta``) wraps an address, both present in pyds 1.2.0 -
1.2.2 (checked against the ``pyds-stubs==1.2.2`` signatures in tests/nvds/test_pyds_bridge.py). In a pyds probe::

    batch = pyds_bridge.batch_from_pyds(pyds.gst_buffer_get_nvds_batch_meta(hash(buf)))
    for frame in batch.frames:                       # or pyds_bridge.frame_from_pyds(pyds_frame_meta, batch)
        boxes = nvds.read_boxes(frame)               # OrientedBoxes, NumPy-backed
        for address in boxes["address"].tolist():
            obj = pyds_bridge.to_pyds(address)       # the same NvDsObjectMeta as pyds.NvDsObjectMeta
    pyds_bridge.obb_of_object(pyds_obj_meta)          # the OBB of one pyds object: one-row OrientedBoxes (or None)
    pyds_bridge.obb_of_user_meta(pyds_user_meta)      # the OBB of one entry of obj_user_meta_list (or None)

pyds is imported only when a pyds object has to be unwrapped or made.
"""
from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Any

import numpy as np

from .._validators import is_int
from . import _core, layouts
from .batch import BatchMeta, FrameMeta
from .obbs import OBB_PREDICTED

if TYPE_CHECKING:
    from ..boxes import OrientedBoxes


def _pyds() -> Any:
    try:
        import pyds
    except ImportError as exc:
        raise ImportError("pyds (NVIDIA deepstream_python_apps bindings) is not installed; it ships with DeepStream "
                          "7.1 / 8.0 (not 9.x), see docs/servicemaker.md") from exc
    return pyds


def address(obj: Any) -> int:
    """The C address of a pyds metadata object (``pyds.get_ptr``), or ``obj`` itself when it is an int."""
    if is_int(obj):
        value = obj
    elif isinstance(obj, (BatchMeta, FrameMeta)):
        value = obj.address
    else:
        value = int(_pyds().get_ptr(obj))
    if value <= 0:
        raise ValueError(f"expected a pyds metadata object or a positive address, got {obj!r}")
    return value


def batch_from_pyds(batch_meta: Any) -> BatchMeta:
    """obbmeta's :class:`BatchMeta` over pyds' ``NvDsBatchMeta`` (not owned: the buffer keeps it)."""
    return BatchMeta.from_address(address(batch_meta))


def frame_from_pyds(frame_meta: Any, batch: Any) -> FrameMeta:
    """obbmeta's :class:`FrameMeta` over pyds' ``NvDsFrameMeta`` of ``batch`` (obbmeta or pyds batch meta)."""
    b = batch if isinstance(batch, BatchMeta) else batch_from_pyds(batch)
    return FrameMeta(address(frame_meta), b)


def to_pyds(obj: Any, kind: str = "NvDsObjectMeta") -> Any:
    """The pyds wrapper of an obbmeta object or address: ``pyds.<kind>.cast(address)``; ``kind`` is
    ``NvDsObjectMeta`` (default; for an address, e.g. of ``read_boxes(frame)["address"]``), ``NvDsFrameMeta``,
    ``NvDsBatchMeta`` or ``NvDsUserMeta``."""
    if kind not in ("NvDsObjectMeta", "NvDsFrameMeta", "NvDsBatchMeta", "NvDsUserMeta"):
        raise ValueError(f"kind must be NvDsObjectMeta, NvDsFrameMeta, NvDsBatchMeta or NvDsUserMeta, got {kind!r}")
    return getattr(_pyds(), kind).cast(address(obj))


def _payload_at(user_meta: int, obb_type: int):
    """obbmeta's payload held by the ``NvDsUserMeta`` at ``user_meta``, or None when it holds another."""
    um = layouts.UserMeta.from_address(user_meta)
    if um.base_meta.meta_type != obb_type or not um.user_meta_data:
        return None
    p = layouts.ObbPayloadV1.from_address(um.user_meta_data)
    if p.version < 1 or p.struct_size < ctypes.sizeof(layouts.ObbPayloadV1):
        return None
    return p


def _payload_boxes(p: Any, score: float, label: int, address: int) -> "OrientedBoxes":
    """One payload as a one-row NumPy-backed OrientedBoxes, its ``data`` the read boxes' columns a payload has."""
    from ..boxes import OrientedBoxes

    source = layouts.SOURCE_PREDICTED if p.flags & OBB_PREDICTED else layouts.SOURCE_USER_META
    return OrientedBoxes(np.array([[p.cx, p.cy, p.w, p.h, p.angle]], np.float32), np.array([score], np.float32),
                         np.array([label], np.int64),
                         data={"corners": np.array(list(p.corners), np.float32).reshape(1, 4, 2),
                               "source": np.array([source], np.int32), "flags": np.array([p.flags], np.uint32),
                               "address": np.array([address], np.uint64)})


def obb_of_user_meta(user_meta: Any) -> "OrientedBoxes | None":
    """The OBB held by one ``NvDsUserMeta`` (pyds object or address) as a one-row :class:`~obbmeta.OrientedBoxes`,
    or None when it is not obbmeta's. A user meta carries neither a score nor a class: ``scores`` is NaN and
    ``labels`` -1 (:func:`obb_of_object` reads both off the object); ``data`` has ``corners``, ``source``,
    ``flags`` and ``address`` (0: the object is not known here), as :func:`~obbmeta.nvds.read_boxes` names them."""
    core = _core.get()
    p = _payload_at(address(user_meta), core.obb_meta_type)
    return None if p is None else _payload_boxes(p, float("nan"), -1, 0)


def obb_of_object(obj_meta: Any) -> "OrientedBoxes | None":
    """The OBB user meta of one ``NvDsObjectMeta`` (pyds object or address) as a one-row
    :class:`~obbmeta.OrientedBoxes` (``scores`` = its confidence, ``labels`` = its class_id; ``data`` has
    ``corners``, ``source``, ``flags`` and ``address``, as :func:`~obbmeta.nvds.read_boxes` names them), or None
    when obbmeta wrote none on it."""
    core = _core.get()
    base = address(obj_meta)
    head = ctypes.POINTER(layouts.GList).from_address(base + core.layout.object_meta.obj_user_meta_list.offset)
    batch = layouts.BaseMeta.from_address(base).batch_meta  # set by the pools on every element
    if not batch:
        raise ValueError(f"0x{base:x} is not an NvDsObjectMeta from a batch's pool (its base_meta.batch_meta is NULL)")
    with BatchMeta.from_address(batch).locked():
        node = head
        while node:
            p = _payload_at(node.contents.data, core.obb_meta_type)
            if p is not None:
                obj = core.layout.object_meta.from_address(base)
                return _payload_boxes(p, obj.confidence, obj.class_id, base)
            node = node.contents.next
    return None
