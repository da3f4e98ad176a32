"""Message payloads for nvmsgconv / nvmsgbroker that carry the rotated box.

Two paths lead out of a DeepStream pipeline (docs/messages.md says which carries what):

* **Custom message blob** (``nvmsgconv msg2p-newapi=1``): per frame, one user meta of type
  ``NVDS_CUSTOM_MSG_BLOB`` on ``frame_user_meta_list`` holding an ``NvDsCustomMsgInfo {message, size}``; nvmsgconv
  copies the message into its payload's ``"customMessage"`` array. :func:`attach_obb_message` writes it (the JSON of
  :func:`obb_message`), with C copy / release functions (kernels/nvds_message.c), so tee / queue copies and buffer
  release handle it.
* **Event messages** (``NvDsEventMsgMeta``, the older path, ``msg2p-newapi=0``): per object, one user meta of type
  ``NVDS_EVENT_MSG_META`` on the frame, as NVIDIA's deepstream-test4 builds it. nvmsgconv's full schema lets one free
  array of numbers through, ``objSignature`` (``"signature"`` in the payload's object): :func:`attach_obb_events`
  puts the 13 numbers of :func:`obb_signature` there, with C copy / release functions that own every pointer.

:func:`obb_message` / :func:`obb_message_json` return the same JSON for users who publish messages themselves.
"""
from __future__ import annotations

import ctypes
import functools
import json
import math
import os
import re
import threading
from ctypes import POINTER, Structure, c_char_p, c_double, c_float, c_int32, c_uint32, c_uint64, c_void_p
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .._validators import int_in_range
from . import _library, layouts
from .batch import FrameMeta

SCHEMA = "obbmeta.obb-message/1"

# NvDsMetaType is a positional enum and NVDS_CUSTOM_MSG_BLOB moved: DeepStream 8.0 inserted NVDS_OBJ_3D_META before
# it. Counted in NVIDIA's nvdsmeta.h: 28 in 7.0 (hiennguyen9874/deepstream-sources @1eadf62, nvds_version.h 7.0.0),
# 29 in 8.0 (levipereira/deepstream_8.0_plugins includes/, and pyds-stubs 1.2.2 values around it) and in the
# v9.0.0 / v9.1.0 tags of NVIDIA/DeepStream. 7.1 is 28 or 29: no public copy of its header was found (its API
# reference pages could not be read past their first lines), so in a DeepStream install the installed header is
# counted (custom_msg_blob_type), and $OBBMETA_CUSTOM_MSG_BLOB_TYPE or meta_type= override everything.
NVDS_CUSTOM_MSG_BLOB_BY_VERSION = {"7.0": 28, "8.0": 29, "9.0": 29, "9.1": 29}
NVDS_CUSTOM_MSG_BLOB = 29
META_TYPE_ENV = "OBBMETA_CUSTOM_MSG_BLOB_TYPE"
INSTALLED_HEADER = Path("/opt/nvidia/deepstream/deepstream/sources/includes/nvdsmeta.h")


def meta_type_from_header(text: str, name: str = "NVDS_CUSTOM_MSG_BLOB") -> int | None:
    """The value of ``name`` in the ``NvDsMetaType`` enum of an ``nvdsmeta.h`` text (members counted as the C
    compiler does: explicit ``= n`` or the previous value + 1), or None when the enum or the member is missing."""
    code = re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.S)  # comments may hold commas and braces
    match = re.search(r"typedef\s+enum\s*\{(.*?)\}\s*NvDsMetaType\s*;", code, re.S)
    if match is None:
        return None
    value = -1
    for member in (m.strip() for m in match.group(1).split(",")):
        if not member:
            continue
        ident, _, explicit = (part.strip() for part in member.partition("="))
        if explicit:
            try:
                value = int(explicit, 0)
            except ValueError:
                value = None  # an expression (NVDS_GST_CUSTOM_META + 4096 + 1): nothing after it matters here
        else:
            value = None if value is None else value + 1
        if ident == name:
            return value
    return None


@functools.lru_cache(maxsize=None)
def _installed_header_type(path: Path) -> int | None:
    try:
        return meta_type_from_header(path.read_text(errors="replace"))
    except OSError:
        return None


def custom_msg_blob_type() -> int:
    """The NvDsMetaType used for message blobs: ``$OBBMETA_CUSTOM_MSG_BLOB_TYPE`` when set; else
    ``NVDS_CUSTOM_MSG_BLOB`` counted in a DeepStream install's ``sources/includes/nvdsmeta.h`` when there is one;
    else 29 (DeepStream 8.0 - 9.x)."""
    value = os.environ.get(META_TYPE_ENV)
    if value is None:
        return _installed_header_type(INSTALLED_HEADER) or NVDS_CUSTOM_MSG_BLOB
    try:
        return check_meta_type(int(value))
    except ValueError as exc:
        raise ValueError(f"${META_TYPE_ENV} must be an int in 1..4095 (an NvDsMetaType), got {value!r}") from exc


def check_meta_type(value: Any) -> int:
    """An NvDsMetaType for message blobs: an int in 1..4095 (ValueError otherwise)."""
    return int_in_range("meta_type", value, 1, 4095, "an int in 1..4095 (NVIDIA's NvDsMetaType range)")


# ---------------------------------------------------------------- the JSON

def _object_entry(info: Any, obb: Any) -> dict:
    cx, cy, w, h, angle = (float(v) for v in obb.xywhr)
    return {
        "id": int(info.object_id) if info.tracked else None,
        "class_id": int(info.class_id),
        "label": info.label,
        "confidence": float(info.confidence),
        "bbox": dict(zip(("left", "top", "width", "height"), (float(v) for v in info.rect))),
        "obb": {"cx": cx, "cy": cy, "w": w, "h": h, "angle_deg": math.degrees(angle), "angle_rad": angle,
                "corners": [[float(x), float(y)] for x, y in obb.corners]},
        "obb_source": obb.source,
    }


def obb_message(frame: Any, batch: Any = None) -> dict:
    """The message of one frame as a dict (the schema of docs/messages.md): frame identity and every object in
    ``obj_meta_list`` order with id (tracking id, or None before a tracker), class, confidence, AABB
    (``rect_params``, pixels of the batched surface) and the rotated box (cx, cy, w, h, angle in degrees and
    radians, 4 corners) as :func:`obbmeta.nvds.read_obbs` returns them."""
    from .reader import read_obbs

    f = frame if isinstance(frame, FrameMeta) else None
    objects = [_object_entry(info, obb) for info, obb in read_obbs(frame, batch)]
    head = layouts.FrameMetaHead.from_address(f.address if f is not None else int(frame))
    return {"schema": SCHEMA,
            "frame": {"source_id": int(head.source_id), "frame_num": int(head.frame_num),
                      "batch_id": int(head.batch_id), "pts": int(head.buf_pts)},
            "objects": objects}


def obb_message_json(frame: Any, batch: Any = None) -> str:
    """:func:`obb_message` as compact JSON text (UTF-8 labels kept as they are)."""
    return json.dumps(obb_message(frame, batch), ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def obb_signature(obb: Any) -> list[float]:
    """The 13 numbers obbmeta puts in ``NvDsEventMsgMeta.objSignature`` (the event-message path):
    ``cx, cy, w, h, angle_deg, x0, y0, x1, y1, x2, y2, x3, y3`` (corners as in :class:`obbmeta.nvds.Obb`)."""
    cx, cy, w, h, angle = (float(v) for v in obb.xywhr)
    return [cx, cy, w, h, math.degrees(angle)] + [float(v) for xy in obb.corners for v in xy]


# ---------------------------------------------------------------- the C blob writer

class _Api(Structure):
    _fields_ = [(name, c_void_p) for name in ("acquire_user_meta", "add_user_meta_to_frame", "acquire_meta_lock",
                                              "release_meta_lock", "g_malloc", "g_free")]


class CustomMsgInfo(Structure):
    """``NvDsCustomMsgInfo`` (nvdsmeta_schema.h): message pointer and its size in bytes."""
    _fields_ = [("message", c_void_p), ("size", c_uint32)]


_lock = threading.Lock()
_lib: ctypes.CDLL | None = None


def _c() -> ctypes.CDLL:
    global _lib
    with _lock:
        if _lib is not None:
            return _lib
        from .. import _native
        from . import _core

        core = _core.get()  # the same NVIDIA library and glib the OBB writer uses
        lib = _native.load_library("nvds._nvdsmessage")
        lib.obbmeta_msg_init.argtypes, lib.obbmeta_msg_init.restype = [POINTER(_Api)], c_int32
        lib.obbmeta_msg_live_blobs.argtypes, lib.obbmeta_msg_live_blobs.restype = [], ctypes.c_int64
        lib.obbmeta_msg_attach.argtypes = [c_void_p, c_void_p, ctypes.c_char_p, c_uint32, c_int32]
        lib.obbmeta_msg_attach.restype = c_void_p
        lib.obbmeta_msg_live_events.argtypes, lib.obbmeta_msg_live_events.restype = [], ctypes.c_int64
        lib.obbmeta_msg_attach_events.argtypes = [c_void_p, c_void_p, POINTER(_EventIn), c_int32, c_char_p,
                                                  c_char_p]
        lib.obbmeta_msg_attach_events.restype = c_int32
        m, g = core.libs.meta, core.libs.glib
        m.nvds_add_user_meta_to_frame.argtypes, m.nvds_add_user_meta_to_frame.restype = [c_void_p, c_void_p], None
        addr = lambda lib_, name: ctypes.cast(getattr(lib_, name), c_void_p).value  # noqa: E731
        api = _Api(addr(m, "nvds_acquire_user_meta_from_pool"), addr(m, "nvds_add_user_meta_to_frame"),
                   addr(m, "nvds_acquire_meta_lock"), addr(m, "nvds_release_meta_lock"), addr(g, "g_malloc"),
                   addr(g, "g_free"))
        if lib.obbmeta_msg_init(ctypes.byref(api)) != 0:
            raise RuntimeError("obbmeta's message-blob writer could not be initialised")
        _lib = lib
        return lib


def live_blobs() -> int:
    """Message blobs written or copied and not yet released by DeepStream (a leak check)."""
    return int(_c().obbmeta_msg_live_blobs())


def attach_message(batch: Any, frame: Any, message: str | bytes, meta_type: int | None = None) -> int:
    """Attach ``message`` to ``frame`` as an ``NVDS_CUSTOM_MSG_BLOB`` user meta (``NvDsCustomMsgInfo``, a g_malloc'd
    copy, released by DeepStream). Returns the ``NvDsUserMeta*``."""
    from ._inputs import batch_of, frame_of

    b = batch_of(batch)
    f = frame_of(frame, b)
    if isinstance(message, str):
        message = message.encode("utf-8")
    if not isinstance(message, bytes):
        raise TypeError(f"message must be str or bytes, got {type(message).__name__}")
    if len(message) >= 2**32:
        raise ValueError(f"message must be shorter than 4 GiB (NvDsCustomMsgInfo.size is a guint), got {len(message)}")
    kind = custom_msg_blob_type() if meta_type is None else check_meta_type(meta_type)
    address = _c().obbmeta_msg_attach(b.address, f.address, message, len(message), kind)
    if not address:
        raise RuntimeError("obbmeta's message-blob writer failed (nvds_acquire_user_meta_from_pool returned NULL?)")
    return int(address)


def attach_obb_message(batch: Any, frame: Any, meta_type: int | None = None) -> str:
    """Write :func:`obb_message_json` of ``frame`` as its message blob; returns the JSON written."""
    text = obb_message_json(frame, batch)
    attach_message(batch, frame, text, meta_type)
    return text


def read_messages(frame: Any, meta_type: int | None = None) -> list[bytes]:
    """The message blobs of ``frame`` (``frame_user_meta_list`` order), as nvmsgconv reads them:
    ``string(message, size)`` of every user meta of ``meta_type`` (default :func:`custom_msg_blob_type`)."""
    _library.load()
    kind = custom_msg_blob_type() if meta_type is None else check_meta_type(meta_type)
    address = frame.address if isinstance(frame, FrameMeta) else int(frame)
    head = layouts.FrameMetaHead.from_address(address)
    out = []
    node = head.frame_user_meta_list
    while node:
        um = layouts.UserMeta.from_address(node.contents.data)
        if um.base_meta.meta_type == kind and um.user_meta_data:
            info = CustomMsgInfo.from_address(um.user_meta_data)
            out.append(ctypes.string_at(info.message, info.size) if info.size else b"")
        node = node.contents.next
    return out


# ---------------------------------------------------------------- event messages (NvDsEventMsgMeta)

NVDS_EVENT_MSG_META = layouts.NVDS_EVENT_MSG_META
# NvDsEventType (nvdsmeta_schema.h, unchanged 4.0 - 9.1): the full schema writes the name as "event": {"type": ...}.
EVENT_TYPES = {"entry": 0, "exit": 1, "moving": 2, "stopped": 3, "empty": 4, "parked": 5, "reset": 6}
# NvDsObjectType: UNKNOWN makes the full schema write the object as {"<objectId>": {}} rather than as a vehicle
# (0, what a zeroed event meta says), and the minimal / protobuf schemas use objectId as the type.
NVDS_OBJECT_TYPE_UNKNOWN = 0x102


class _EventIn(Structure):
    """One object's event for the C writer (``obbmsg_event_in`` in kernels/nvds_message.c)."""
    _fields_ = [("bbox", c_float * 4), ("confidence", c_double), ("tracking_id", c_uint64),
                ("event_type", c_int32), ("obj_type", c_int32), ("obj_class_id", c_int32), ("sensor_id", c_int32),
                ("component_id", c_int32), ("frame_id", c_int32), ("object_id", c_char_p), ("sig_size", c_uint32),
                ("signature", POINTER(c_double))]


@dataclass(frozen=True)
class EventMessage:
    """The ``NvDsEventMsgMeta`` fields obbmeta writes, as read back from a frame's user meta (copies)."""
    event_type: int
    object_type: int
    bbox: tuple[float, float, float, float]  # left, top, width, height (NvDsRect stores top, left, width, height)
    signature: tuple[float, ...]
    class_id: int
    sensor_id: int
    component_id: int
    frame_id: int
    confidence: float
    tracking_id: int
    timestamp: str | None
    object_id: str | None
    sensor: str | None


def rfc3339_now() -> str:
    """The current UTC time as nvmsgconv's samples write ``ts``: ``2026-11-30T16:02:03.123Z``."""
    now = datetime.now(timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def _c_text(name: str, value: Any) -> bytes | None:
    if value is None:
        return None
    if not isinstance(value, str) or "\0" in value:
        raise TypeError(f"{name} must be None or a str without NUL characters, got {value!r}")
    return value.encode("utf-8")


def attach_obb_events(batch: Any, frame: Any, *, event_type: str = "moving", sensor: str | None = None,
                      timestamp: str | None = None) -> int:
    """Attach to ``frame`` one ``NVDS_EVENT_MSG_META`` user meta per object (nvmsgconv ``msg2p-newapi=0``), filled
    as NVIDIA's deepstream-test4 fills it, with the rotated box in ``objSignature``. Returns the number attached.

    Per object (:func:`obbmeta.nvds.read_obbs` order): ``bbox`` = ``rect_params`` (pixels of the batched surface),
    ``objSignature`` = :func:`obb_signature` (13 doubles), ``objClassId``, ``confidence``, ``trackingId`` =
    ``object_id`` (``UNTRACKED_OBJECT_ID`` before a tracker), ``componentId`` = the object's
    ``unique_component_id`` (nvmsgconv's ``comp-id`` filter), ``objectId`` = the label (None when empty),
    ``objType`` = ``NVDS_OBJECT_TYPE_UNKNOWN``, ``type`` = ``EVENT_TYPES[event_type]``, ``frameId`` = frame number,
    ``sensorId`` = source id, ``sensorStr`` = ``sensor``, ``ts`` = ``timestamp`` or :func:`rfc3339_now`. Every
    pointer is a g_malloc'd copy owned by the meta; copies (tee / queue) and release are done in C."""
    from ._inputs import batch_of, frame_of
    from .reader import read_obbs

    if event_type not in EVENT_TYPES:
        raise ValueError(f"event_type must be one of {', '.join(EVENT_TYPES)}, got {event_type!r}")
    sensor_c = _c_text("sensor", sensor)
    ts_c = _c_text("timestamp", rfc3339_now() if timestamp is None else timestamp)
    b = batch_of(batch)
    f = frame_of(frame, b)
    objects = read_obbs(f, b)
    head = layouts.FrameMetaHead.from_address(f.address)
    items = (_EventIn * max(len(objects), 1))()
    keep = []  # the signature arrays and label bytes live until the C call has copied them
    for item, (info, obb) in zip(items, objects):
        left, top, width, height = info.rect
        signature = (c_double * 13)(*obb_signature(obb))
        label = info.label.encode("utf-8") or None
        keep.append((signature, label))
        item.bbox[:] = (top, left, width, height)
        item.confidence, item.tracking_id = info.confidence, info.object_id
        item.event_type, item.obj_type = EVENT_TYPES[event_type], NVDS_OBJECT_TYPE_UNKNOWN
        item.obj_class_id, item.component_id = info.class_id, info.component_id
        item.sensor_id, item.frame_id = head.source_id, head.frame_num
        item.object_id, item.sig_size = label, 13
        item.signature = ctypes.cast(signature, POINTER(c_double))
    done = _c().obbmeta_msg_attach_events(b.address, f.address, items, len(objects), ts_c, sensor_c)
    if done != len(objects):
        raise RuntimeError(f"obbmeta's event writer attached {done} of {len(objects)} event metas "
                           "(nvds_acquire_user_meta_from_pool returned NULL?)")
    return done


def read_events(frame: Any) -> list[EventMessage]:
    """The ``NVDS_EVENT_MSG_META`` user metas of ``frame`` (``frame_user_meta_list`` order), read as nvmsgconv reads
    them: the head of every ``NvDsEventMsgMeta``, whoever wrote it."""
    _library.load()
    address = frame.address if isinstance(frame, FrameMeta) else int(frame)
    head = layouts.FrameMetaHead.from_address(address)
    text = lambda raw: raw.decode("utf-8", "replace") if raw is not None else None  # noqa: E731
    out = []
    node = head.frame_user_meta_list
    while node:
        um = layouts.UserMeta.from_address(node.contents.data)
        if um.base_meta.meta_type == NVDS_EVENT_MSG_META and um.user_meta_data:
            ev = layouts.EventMsgMetaHead.from_address(um.user_meta_data)
            top, left, width, height = ev.bbox
            sig = ev.objSignature
            signature = tuple(sig.signature[k] for k in range(sig.size)) if sig.signature else ()
            out.append(EventMessage(int(ev.type), int(ev.objType), (left, top, width, height), signature,
                                    int(ev.objClassId), int(ev.sensorId), int(ev.componentId), int(ev.frameId),
                                    float(ev.confidence), int(ev.trackingId), text(ev.ts), text(ev.objectId),
                                    text(ev.sensorStr)))
        node = node.contents.next
    return out


def live_events() -> int:
    """Event metas obbmeta wrote or copied and DeepStream has not yet released (a leak check)."""
    return int(_c().obbmeta_msg_live_events())
