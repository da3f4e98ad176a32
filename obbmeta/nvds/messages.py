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
  puts :func:`event_signature` there (the rotated box, the frame's identity, the object's index), with C copy /
  release functions that own every pointer.

:func:`obb_message` / :func:`obb_message_json` return the same JSON for users who publish messages themselves;
:mod:`obbmeta.publish.messages` reads both back on the other side of a broker.
"""
from __future__ import annotations

import base64
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

from .._native import NativeLibrary
from .._validators import is_int
from ..publish import messages as _wire
from . import _library, layouts
from .batch import FrameMeta

# The blob's schema name and the event signature's layout: one definition, beside the reader on the other side
SCHEMA = _wire.SCHEMA

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
NVDS_START_USER_META = layouts.NVDS_START_USER_META
NVDS_FORCE32_META = 0x7FFFFFFF
# The NvDsMetaType members DeepStream reserves below NVDS_START_USER_META, as the 8.0 - 9.1 headers number them
# (facts of nvdsmeta.h, for error messages): a blob written with one of these types is read by whoever owns the
# type as its own struct (an NvDsCustomMsgInfo read as an NvDsEventMsgMeta segfaults nvmsgconv).
RESERVED_META_TYPES = dict(enumerate((
    "NVDS_BATCH_META", "NVDS_FRAME_META", "NVDS_OBJ_META", "NVDS_DISPLAY_META", "NVDS_CLASSIFIER_META",
    "NVDS_LABEL_INFO_META", "NVDS_USER_META", "NVDS_PAYLOAD_META", "NVDS_EVENT_MSG_META", "NVDS_OPTICAL_FLOW_META",
    "NVDS_LATENCY_MEASUREMENT_META", "NVDSINFER_TENSOR_OUTPUT_META", "NVDSINFER_SEGMENTATION_META",
    "NVDS_CROP_IMAGE_META", "NVDS_TRACKER_PAST_FRAME_META", "NVDS_TRACKER_BATCH_REID_META",
    "NVDS_TRACKER_OBJ_REID_META", "NVDS_TRACKER_TERMINATED_LIST_META", "NVDS_TRACKER_SHADOW_LIST_META",
    "NVDS_OBJ_VISIBILITY", "NVDS_OBJ_IMAGE_FOOT_LOCATION", "NVDS_OBJ_WORLD_FOOT_LOCATION",
    "NVDS_OBJ_IMAGE_CONVEX_HULL", "NVDS_OBJ_3D_META", "NVDS_AUDIO_BATCH_META", "NVDS_AUDIO_FRAME_META",
    "NVDS_PREPROCESS_FRAME_META", "NVDS_PREPROCESS_BATCH_META", "NVDS_CUSTOM_MSG_BLOB", "NVDS_ROI_META",
    "NVDS_CUSTOM_MSG_SPARSE4D", "NVDS_FRAME_META_NVDSANALYTICS", "NVDS_OBJ_META_NVDSANALYTICS"), start=1))
RESERVED_META_TYPES[4095] = "NVDS_RESERVED_META"


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
    """The NvDsMetaType used for message blobs: ``$OBBMETA_CUSTOM_MSG_BLOB_TYPE`` when set (28 or 29, the values
    ``NVDS_CUSTOM_MSG_BLOB`` has had, or a user meta type >= ``NVDS_START_USER_META``); else ``NVDS_CUSTOM_MSG_BLOB``
    counted in a DeepStream install's ``sources/includes/nvdsmeta.h`` when there is one; else 29 (DeepStream 8.0 -
    9.x)."""
    value = os.environ.get(META_TYPE_ENV)
    if value is None:
        return _installed_header_type(INSTALLED_HEADER) or NVDS_CUSTOM_MSG_BLOB
    known = sorted(set(NVDS_CUSTOM_MSG_BLOB_BY_VERSION.values()))
    try:
        kind = int(value)
    except ValueError:
        kind = None
    if kind is None or not (kind in known or NVDS_START_USER_META <= kind <= NVDS_FORCE32_META):
        blobs = " or ".join(map(str, known))
        raise ValueError(f"${META_TYPE_ENV} must be NVDS_CUSTOM_MSG_BLOB of your DeepStream ({blobs}) or a user meta "
                         f"type in {NVDS_START_USER_META}..{NVDS_FORCE32_META} "
                         f"(NVDS_START_USER_META and above), got {value!r}{_reserved_name(kind)}")
    return kind


def _reserved_name(kind: Any) -> str:
    if not isinstance(kind, int) or isinstance(kind, bool):
        return ""
    if kind in RESERVED_META_TYPES:
        return f" ({kind} is {RESERVED_META_TYPES[kind]} in DeepStream 8.0 - 9.1, reserved by DeepStream)"
    if 4096 <= kind < NVDS_START_USER_META:
        return f" ({kind} is in NVDS_GST_CUSTOM_META's range 4096..{NVDS_START_USER_META - 1}, reserved by DeepStream)"
    if 0 < kind < NVDS_START_USER_META:
        return f" ({kind} is below NVDS_START_USER_META, reserved by DeepStream)"
    return ""


def check_meta_type(value: Any) -> int:
    """An NvDsMetaType for message blobs: :func:`custom_msg_blob_type` (what nvmsgconv reads) or a user meta type in
    ``NVDS_START_USER_META`` (8193) .. 0x7FFFFFFF, for a reader of your own. Every other value is a type DeepStream
    reserves (9 is ``NVDS_EVENT_MSG_META``: nvmsgconv would read the blob as an event and crash): ValueError."""
    blob = custom_msg_blob_type()
    if is_int(value) and (value == blob or NVDS_START_USER_META <= value <= NVDS_FORCE32_META):
        return int(value)
    raise ValueError(f"meta_type must be NVDS_CUSTOM_MSG_BLOB ({blob} here) or a user meta type in "
                     f"{NVDS_START_USER_META}..{NVDS_FORCE32_META} (NVDS_START_USER_META and above), got "
                     f"{value!r}{_reserved_name(value)}")


# ---------------------------------------------------------------- the JSON

@dataclass(frozen=True)
class _Object:
    """One object as the message writers see it (a row of read_boxes, the label as its raw bytes)."""
    index: int
    object_id: int
    class_id: int
    component_id: int
    confidence: float
    label: bytes  # obj_label up to its NUL, as stored
    rect: tuple[float, float, float, float]
    xywhr: tuple[float, float, float, float, float]
    corners: tuple[tuple[float, float], ...]
    source: str
    address: int = 0
    parent: int = 0  # NvDsObjectMeta.parent (a secondary detector's child), 0: none

    @property
    def tracked(self) -> bool:
        return self.object_id != layouts.UNTRACKED_OBJECT_ID

    def describe(self) -> str:
        label = self.label.decode("utf-8", "replace")
        track = f"object_id {self.object_id}" if self.tracked else "untracked"
        return f"object {self.index} (class_id {self.class_id}, label {label!r}, {track})"


def _objects(frame: Any, batch: Any) -> list[_Object]:
    """The frame's objects in obj_meta_list order; a rotated box or rect_params that is not finite (only another
    writer can leave one: obbmeta's own writer refuses them) is a ValueError naming the object, since JSON has no
    NaN or inf and nvmsgconv's json-glib would write an unreadable ``nan``."""
    from .layouts import SOURCES
    from .reader import read_boxes

    t = read_boxes(frame, batch)
    d = t.data
    out = []
    for k in range(len(t)):
        obj = _Object(
            index=k, object_id=int(d["object_id"][k]), class_id=int(t.labels[k]),
            component_id=int(d["component_id"][k]), confidence=float(t.scores[k]),
            label=bytes(d["label"][k]).split(b"\0", 1)[0], rect=tuple(float(v) for v in d["rect"][k]),
            xywhr=tuple(float(v) for v in t.xywhr[k]),
            corners=tuple((float(x), float(y)) for x, y in d["corners"][k]), source=SOURCES[int(d["source"][k])],
            address=int(d["address"][k]), parent=int(d["parent"][k]))
        numbers = obj.rect + obj.xywhr + tuple(v for xy in obj.corners for v in xy)
        if not all(math.isfinite(v) for v in numbers):
            raise ValueError(f"{obj.describe()} of frame (source_id {frame_head(frame).source_id}, frame_num "
                             f"{frame_head(frame).frame_num}) has a box that is not finite: rect_params "
                             f"{list(obj.rect)}, rotated box {list(obj.xywhr)} ({obj.source}); a message cannot carry "
                             "NaN or inf (fix the element that wrote it)")
        out.append(obj)
    return out


def frame_head(frame: Any) -> layouts.FrameMetaHead:
    """The NvDsFrameMeta head of a :class:`~obbmeta.nvds.FrameMeta` or an address."""
    return layouts.FrameMetaHead.from_address(frame.address if isinstance(frame, FrameMeta) else int(frame))


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _object_entry(obj: _Object, parents: dict[int, _Object]) -> dict:
    cx, cy, w, h, angle = obj.xywhr
    try:
        label, exact = obj.label.decode("utf-8"), True
    except UnicodeDecodeError:
        label, exact = obj.label.decode("utf-8", "replace"), False
    entry = {
        "id": obj.object_id if obj.tracked else None,
        "class_id": obj.class_id,
        "label": label,
        "confidence": _finite_or_none(obj.confidence),  # a NaN / inf score upstream: null, the object stays
        "bbox": dict(zip(("left", "top", "width", "height"), obj.rect)),
        "obb": {"cx": cx, "cy": cy, "w": w, "h": h, "angle_deg": math.degrees(angle), "angle_rad": angle,
                "corners": [[x, y] for x, y in obj.corners]},
        "obb_source": obj.source,
    }
    if not exact:  # obj_label bytes that are not UTF-8: "label" shows them with U+FFFD, these are the bytes
        entry["label_base64"] = base64.b64encode(obj.label).decode("ascii")
    parent = parents.get(obj.parent) if obj.parent else None
    if parent is not None:  # a secondary detector's child: its parent object, by index here and by tracking id
        entry["parent"] = parent.index
        entry["parent_id"] = parent.object_id if parent.tracked else None
    classified = _classifications(obj.address) if obj.address else []
    if classified:  # what secondary stages (obbinfer process-mode=2, nvinfer SGIEs) wrote on the object
        entry["classifications"] = classified
    return entry


def _classifications(address: int) -> list[dict]:
    from .classifier import read_classifications

    return [{"component_id": c.component_id, "classifier_type": c.classifier_type,
             "labels": [{"label_id": lab.label_id, "class_id": lab.class_id, "prob": _finite_or_none(lab.prob),
                         "label": lab.label} for lab in c.labels]}
            for c in read_classifications(address)]


def obb_message(frame: Any, batch: Any = None) -> dict:
    """The message of one frame as a dict (schema ``obbmeta/publish/schemas/obb-message-1.json``, docs/messages.md):
    frame identity and every object in ``obj_meta_list`` order with id (tracking id, or None before a tracker), class,
    label, confidence (None when not finite), AABB (``rect_params``, pixels of the batched surface) and the rotated
    box (cx, cy, w, h, angle in degrees and radians, 4 corners) as :func:`obbmeta.nvds.read_boxes` reads them.
    ``label_base64`` holds the exact ``obj_label`` bytes when they are not UTF-8. An object whose ``parent`` is an
    object of the same frame (a secondary detector's child) has ``parent``, the index of that object in
    ``objects``, and ``parent_id``, its tracking id (None before a tracker); a parent pointer to anything else is
    left out. A box that is not finite is a ValueError naming the object."""
    found = _objects(frame, batch)
    by_address = {obj.address: obj for obj in found if obj.address}
    objects = [_object_entry(obj, by_address) for obj in found]
    head = frame_head(frame)
    return {"schema": SCHEMA,
            "frame": {"source_id": int(head.source_id), "frame_num": int(head.frame_num),
                      "batch_id": int(head.batch_id), "pts": int(head.buf_pts)},
            "objects": objects}


def obb_message_json(frame: Any, batch: Any = None) -> str:
    """:func:`obb_message` as compact JSON text (UTF-8 labels kept as they are)."""
    return json.dumps(obb_message(frame, batch), ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def obb_signature(obb: Any) -> list[float]:
    """The rotated box as the first 13 numbers of obbmeta's event signature:
    ``cx, cy, w, h, angle_deg, x0, y0, x1, y1, x2, y2, x3, y3`` (the corners as :func:`obbmeta.nvds.read_boxes`
    reads them). ``obb``: one object read back (``read_boxes(frame)[i]``: its ``xywhr`` and ``data["corners"]``)."""
    from ..boxes import OrientedBoxes

    if isinstance(obb, OrientedBoxes):
        if len(obb) != 1 or "corners" not in obb.data:
            raise ValueError(f"obb must be one object read back by obbmeta.nvds.read_boxes (boxes[i], with "
                             f"data['corners']), got {obb!r}")
        xywhr, corners = obb.xywhr[0].tolist(), obb.data["corners"][0].tolist()
    else:
        xywhr, corners = obb.xywhr, obb.corners
    cx, cy, w, h, angle = (float(v) for v in xywhr)
    return [cx, cy, w, h, math.degrees(angle)] + [float(v) for xy in corners for v in xy]


SIGNATURE_FIELDS = _wire.SIGNATURE_FIELDS


def event_signature(obb: Any, *, source_id: int, frame_num: int, class_id: int, object_index: int,
                    object_count: int, confidence: float) -> list[float]:
    """What obbmeta puts in ``NvDsEventMsgMeta.objSignature`` (nvmsgconv's full schema writes it as the object's
    ``"signature"``, the one free array of numbers it serialises): :func:`obb_signature` (13 numbers), then
    ``source_id, frame_num, class_id, object_index, object_count`` (the frame's identity and the object's place
    among its ``object_count`` objects, which the payload has nowhere else), then ``confidence`` when it is finite
    (absent for NaN / inf: the signature is 18 numbers then, 19 otherwise). Every number is exact as a double."""
    fields = {"source_id": source_id, "frame_num": frame_num, "class_id": class_id, "object_index": object_index,
              "object_count": object_count}
    out = obb_signature(obb) + [float(fields[name]) for name in SIGNATURE_FIELDS]
    return out + [float(confidence)] if math.isfinite(confidence) else out


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
    if _lib is not None:  # set once, never unset: no lock needed to read it
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        from . import _core

        core = _core.get()  # the same NVIDIA library and glib the OBB writer uses
        lib = NVDS_MESSAGE.load()
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
    head = frame_head(frame)
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


NVDS_MESSAGE = NativeLibrary(
    "nvds._nvdsmessage", "C DeepStream message writer", abi=1, abi_function="obbmeta_msg_abi_version",
    functions={
        "obbmeta_msg_init": (c_int32, [POINTER(_Api)]),
        "obbmeta_msg_live_blobs": (ctypes.c_int64, []),
        "obbmeta_msg_attach": (c_void_p, [c_void_p, c_void_p, c_char_p, c_uint32, c_int32]),
        "obbmeta_msg_live_events": (ctypes.c_int64, []),
        "obbmeta_msg_event_block_size": (c_int32, []),
        "obbmeta_msg_attach_events": (c_int32, [c_void_p, c_void_p, POINTER(_EventIn), c_int32, c_char_p, c_char_p]),
    },
    structs={"obbmsg_api": _Api, "obbmsg_custom_msg_info": CustomMsgInfo, "obbmsg_event_in": _EventIn},
    constants={"OBBMETA_NVDS_EVENT_MSG_META": layouts.NVDS_EVENT_MSG_META},
    table_function="obbmeta_msg_abi_table")


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

    Per object (:func:`obbmeta.nvds.read_boxes` order): ``bbox`` = ``rect_params`` (pixels of the batched surface),
    ``objSignature`` = :func:`event_signature` (the rotated box, the frame's identity, the object's index and count,
    the confidence when finite), ``objClassId``, ``confidence`` (as stored, NaN included: nvmsgconv's full schema does
    not write it for these objects, its minimal schema prints it as text), ``trackingId`` = ``object_id``
    (``UNTRACKED_OBJECT_ID`` before a tracker), ``componentId`` = the object's ``unique_component_id`` (nvmsgconv's
    ``comp-id`` filter), ``objectId`` = the label (None when empty; bytes that are not UTF-8 replaced by U+FFFD, so
    nvmsgconv's JSON stays valid), ``objType`` = ``NVDS_OBJECT_TYPE_UNKNOWN``, ``type`` = ``EVENT_TYPES[event_type]``,
    ``frameId`` = frame number, ``sensorId`` = source id, ``sensorStr`` = ``sensor``, ``ts`` = ``timestamp`` or
    :func:`rfc3339_now`. Every pointer is a g_malloc'd copy owned by the meta; copies (tee / queue) and release are
    done in C. A box that is not finite is a ValueError naming the object, before anything is attached."""
    from ._inputs import batch_of, frame_of

    if event_type not in EVENT_TYPES:
        raise ValueError(f"event_type must be one of {', '.join(EVENT_TYPES)}, got {event_type!r}")
    sensor_c = _c_text("sensor", sensor)
    ts_c = _c_text("timestamp", rfc3339_now() if timestamp is None else timestamp)
    b = batch_of(batch)
    f = frame_of(frame, b)
    objects = _objects(f, b)
    head = frame_head(f)
    items = (_EventIn * max(len(objects), 1))()
    keep = []  # the signature arrays and label bytes live until the C call has copied them
    for item, obj in zip(items, objects):
        left, top, width, height = obj.rect
        numbers = event_signature(obj, source_id=head.source_id, frame_num=head.frame_num, class_id=obj.class_id,
                                  object_index=obj.index, object_count=len(objects), confidence=obj.confidence)
        signature = (c_double * len(numbers))(*numbers)
        label = obj.label.decode("utf-8", "replace").encode("utf-8") or None
        keep.append((signature, label))
        item.bbox[:] = (top, left, width, height)
        item.confidence, item.tracking_id = obj.confidence, obj.object_id
        item.event_type, item.obj_type = EVENT_TYPES[event_type], NVDS_OBJECT_TYPE_UNKNOWN
        item.obj_class_id, item.component_id = obj.class_id, obj.component_id
        item.sensor_id, item.frame_id = head.source_id, head.frame_num
        item.object_id, item.sig_size = label, len(numbers)
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
    head = frame_head(frame)
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
