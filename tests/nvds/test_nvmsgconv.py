"""NVIDIA's real message converter on the metas obbmeta writes: what nvmsgconv puts in its payloads.

The library is NVIDIA's ``libnvds_msgconv.so`` (the converter behind the ``nvmsgconv`` element), built from NVIDIA's
DeepStream sources by ``tests/nvds/msgconv/build.sh`` into ``.msgconv/`` (or named by ``$OBBMETA_MSGCONV_LIB``);
it is in no installable wheel, so without it this module is skipped. The batches are NVIDIA's real NvDsBatchMeta
(libnvds_meta from the wheel) written by obbmeta; the converter is called through its C API exactly as the
element's ``gst_nvmsgconv_transform_ip_video_audio`` (``gst-nvmsgconv/gstnvmsgconv.cpp``, v9.1.0) calls it:

- ``msg2p-newapi=1``, full schema: one ``nvds_msg2p_generate_new`` per object of ``obj_meta_list`` with
  ``NvDsMsg2pMetaInfo {objMeta, frameMeta, "video"}``; minimal schema: one per frame with ``objMeta = NULL``;
- ``msg2p-newapi=0``, full schema: one ``nvds_msg2p_generate`` per ``NVDS_EVENT_MSG_META`` user meta of
  ``frame_user_meta_list``; minimal schema: one call with all of them as an ``NvDsEvent`` array.
"""
from __future__ import annotations

import ctypes
import json
import math
import os
from ctypes import POINTER, Structure, c_char_p, c_int, c_uint, c_void_p
from pathlib import Path

import numpy as np
import pytest

from obbmeta import nvds
from obbmeta.nvds import messages

from . import raw

ROOT = Path(__file__).resolve().parents[2]
LIB_ENV = "OBBMETA_MSGCONV_LIB"
LIB_PATH = Path(os.environ.get(LIB_ENV) or ROOT / ".msgconv" / "libnvds_msgconv.so")
if not LIB_PATH.is_file():
    pytest.skip(f"NVIDIA's libnvds_msgconv.so is not built ({LIB_PATH} is absent): it is in no wheel; build it "
                "from NVIDIA's DeepStream sources with tests/nvds/msgconv/build.sh, or set "
                f"${LIB_ENV}", allow_module_level=True)

# NvDsPayloadType (includes/nvdsmeta_schema.h): NVDS_PAYLOAD_DEEPSTREAM, NVDS_PAYLOAD_DEEPSTREAM_MINIMAL, ...
NVDS_PAYLOAD_DEEPSTREAM, NVDS_PAYLOAD_DEEPSTREAM_MINIMAL = 0, 1
NVDS_EVENT_MSG_META = 9  # NvDsMetaType (includes/nvdsmeta.h)


class Msg2pCtx(Structure):
    """NvDsMsg2pCtx (src/utils/nvmsgconv/nvmsgconv.h): {NvDsPayloadType payloadType; gpointer privData;}."""
    _fields_ = [("payloadType", c_int), ("privData", c_void_p)]


class Msg2pMetaInfo(Structure):
    """NvDsMsg2pMetaInfo (nvmsgconv.h): {void *objMeta; void *frameMeta; gchar *mediaType; void *datamap;}."""
    _fields_ = [("objMeta", c_void_p), ("frameMeta", c_void_p), ("mediaType", c_char_p), ("datamap", c_void_p)]


class Payload(Structure):
    """NvDsPayload (includes/nvdsmeta_schema.h): {gpointer payload; guint payloadSize; guint componentId;}."""
    _fields_ = [("payload", c_void_p), ("payloadSize", c_uint), ("componentId", c_uint)]


class Event(Structure):
    """NvDsEvent (nvdsmeta_schema.h): {NvDsEventType eventType; NvDsEventMsgMeta *metadata;}."""
    _fields_ = [("eventType", c_int), ("metadata", c_void_p)]


@pytest.fixture(scope="module")
def msgconv():
    """NVIDIA's library with the prototypes of nvmsgconv.h."""
    lib = ctypes.CDLL(str(LIB_PATH))
    lib.nvds_msg2p_ctx_create.argtypes, lib.nvds_msg2p_ctx_create.restype = [c_char_p, c_int], POINTER(Msg2pCtx)
    lib.nvds_msg2p_ctx_destroy.argtypes, lib.nvds_msg2p_ctx_destroy.restype = [POINTER(Msg2pCtx)], None
    lib.nvds_msg2p_generate.argtypes = [POINTER(Msg2pCtx), POINTER(Event), c_uint]
    lib.nvds_msg2p_generate.restype = POINTER(Payload)
    lib.nvds_msg2p_generate_new.argtypes = [POINTER(Msg2pCtx), c_void_p]
    lib.nvds_msg2p_generate_new.restype = POINTER(Payload)
    lib.nvds_msg2p_release.argtypes, lib.nvds_msg2p_release.restype = [POINTER(Msg2pCtx), POINTER(Payload)], None
    return lib


# The static part of the full schema (place / sensor / analytics of source 0), in the key-value form of NVIDIA's
# deepstream-test4 msgconv config. The full schema needs a config file (nvds_msg2p_ctx_create refuses NULL), and
# the minimal newapi path looks the sensor up in it (with NULL it dereferences a NULL context).
CONFIG = """\
[sensor0]
enable=1
type=Camera
id=cam-0
location=45.0;-75.0;48.0
description=obbmeta test camera
coordinate=1.0;2.0;3.0

[place0]
enable=1
id=harbour
type=port
name=quay
location=30.0;-40.0;100.0
coordinate=1.0;2.0;3.0
place-sub-field1=a
place-sub-field2=b
place-sub-field3=c

[analytics0]
enable=1
id=obb
description=oriented boxes
source=obbmeta
version=1.0
"""


@pytest.fixture
def converter(msgconv, tmp_path):
    """converter(payload_type) -> an NvDsMsg2pCtx* on the config above; destroyed at the end of the test."""
    config = tmp_path / "msgconv.txt"
    config.write_text(CONFIG)
    made = []

    def make(payload_type: int):
        ctx = msgconv.nvds_msg2p_ctx_create(str(config).encode(), payload_type)
        assert ctx, "nvds_msg2p_ctx_create returned NULL"
        made.append(ctx)
        return ctx

    yield make
    for ctx in made:
        msgconv.nvds_msg2p_ctx_destroy(ctx)


def take(msgconv, ctx, payload) -> dict:
    """The payload's JSON, then NVIDIA's nvds_msg2p_release frees it."""
    assert payload and payload.contents.payload, "nvmsgconv generated no payload"
    text = ctypes.string_at(payload.contents.payload, payload.contents.payloadSize).decode("utf-8")
    msgconv.nvds_msg2p_release(ctx, payload)
    return json.loads(text)


def newapi(msgconv, ctx, frame: int, obj: int | None) -> dict:
    info = Msg2pMetaInfo(objMeta=obj, frameMeta=frame, mediaType=b"video", datamap=None)
    return take(msgconv, ctx, msgconv.nvds_msg2p_generate_new(ctx, ctypes.byref(info)))


def event_metas(frame: int) -> list[int]:
    """user_meta_data of every NVDS_EVENT_MSG_META of the frame, in frame_user_meta_list order (as the element)."""
    metas = raw.glist(raw.ptr(frame + raw.FRAME["frame_user_meta_list"]))
    return [raw.ptr(um + raw.USER["user_meta_data"]) for um in metas
            if raw.u32(um + raw.BASE_TYPE) == NVDS_EVENT_MSG_META]


@pytest.fixture
def frame_with_boxes(make_batch):
    """Two rotated boxes written by attach_obbs, then given tracking ids as nvtracker would."""
    batch = make_batch(width=640, height=480)
    frame = batch.frames[0]
    nvds.attach_obbs(batch, frame, xywhr=np.array([[100, 100, 40, 20, 0.5], [300, 200, 30, 30, -2.0]], np.float32),
                     scores=np.array([0.91, 0.55], np.float32), labels=np.array([1, 0]), class_names=["plane", "船"])
    for obj, track in zip(raw.objects_of(frame.address), (12, 34)):
        ctypes.c_uint64.from_address(obj + raw.OBJ["object_id"]).value = track
    return batch, frame


def integer_bbox(rect) -> dict:
    """nvmsgconv's bbox: rect_params (left, top, width, height) stored with json_object_set_int_member, i.e.
    truncated to integers as C converts float to gint64."""
    left, top, width, height = rect
    return {"topleftx": int(left), "toplefty": int(top), "bottomrightx": int(left + width),
            "bottomrighty": int(top + height)}


# ---------------------------------------------------------------- msg2p-newapi=1 (frame and object metas + blob)

def test_newapi_full_schema_sends_obbmetas_json_in_custommessage_of_every_objects_payload(
        msgconv, converter, frame_with_boxes):
    batch, frame = frame_with_boxes
    text = messages.attach_obb_message(batch, frame)
    ctx = converter(NVDS_PAYLOAD_DEEPSTREAM)
    objects = raw.objects_of(frame.address)
    payloads = [newapi(msgconv, ctx, frame.address, obj) for obj in objects]
    assert len(payloads) == 2  # one message per object: the frame's blob rides along in each
    for payload, (info, _) in zip(payloads, nvds.read_obbs(frame)):
        assert payload["customMessage"] == [text]  # the blob's text, byte for byte
        doc = json.loads(payload["customMessage"][0])
        assert doc == messages.obb_message(frame)
        assert [e["obb"]["corners"] for e in doc["objects"]] == [
            [list(c) for c in o.corners] for _, o in nvds.read_obbs(frame)]
        # nvmsgconv's own part of the message: tracking id, label, confidence, integer AABB; no angle
        obj = payload["object"]
        assert obj["id"] == str(info.object_id) and obj["bbox"] == integer_bbox(info.rect)
        assert obj[info.label] == {"confidence": pytest.approx(info.confidence)}
        assert obj["orientation"] == 0 and "signature" not in obj
        assert payload["sensor"]["id"] == "cam-0" and payload["place"]["id"] == "harbour"


def test_newapi_full_schema_without_a_blob_carries_no_rotated_box(msgconv, converter, frame_with_boxes):
    _, frame = frame_with_boxes
    ctx = converter(NVDS_PAYLOAD_DEEPSTREAM)
    for obj in raw.objects_of(frame.address):
        payload = newapi(msgconv, ctx, frame.address, obj)
        assert "customMessage" not in payload and "signature" not in payload["object"]


def test_newapi_minimal_schema_sends_the_json_once_per_frame_beside_nvidias_aabb_strings(
        msgconv, converter, frame_with_boxes):
    batch, frame = frame_with_boxes
    text = messages.attach_obb_message(batch, frame)
    ctx = converter(NVDS_PAYLOAD_DEEPSTREAM_MINIMAL)
    payload = newapi(msgconv, ctx, frame.address, None)
    assert payload["customMessage"] == [text] and json.loads(text) == messages.obb_message(frame)
    assert payload["id"] == str(frame.frame_num) and payload["sensorId"] == "cam-0"
    # "<object_id>|left|top|right|bottom|<label>" per object: the AABB only, 6 significant digits
    assert len(payload["objects"]) == 2
    for line, (info, _) in zip(payload["objects"], nvds.read_obbs(frame)):
        track, left, top, right, bottom, label = line.split("|")
        left_, top_, width, height = info.rect
        assert (int(track), label) == (info.object_id, info.label)
        assert [float(v) for v in (left, top, right, bottom)] == pytest.approx(
            [left_, top_, left_ + width, top_ + height], rel=1e-5)


# ---------------------------------------------------------------- msg2p-newapi=0 (NvDsEventMsgMeta)

def test_event_path_full_schema_puts_obb_signature_in_each_objects_signature(msgconv, converter, frame_with_boxes):
    batch, frame = frame_with_boxes
    messages.attach_obb_events(batch, frame, sensor="cam-7", timestamp="2026-01-02T03:04:05.678Z")
    ctx = converter(NVDS_PAYLOAD_DEEPSTREAM)
    metas = event_metas(frame.address)
    assert len(metas) == 2
    payloads = []
    for meta in metas:
        event = Event(eventType=messages.EVENT_TYPES["moving"], metadata=meta)
        payloads.append(take(msgconv, ctx, msgconv.nvds_msg2p_generate(ctx, ctypes.byref(event), 1)))
    # frame_user_meta_list is prepended to, so the events come newest first: reversed, they follow read_obbs
    for payload, (info, obb) in zip(reversed(payloads), nvds.read_obbs(frame)):
        obj = payload["object"]
        sig = obj["signature"]
        assert len(sig) == 13 and sig == messages.obb_signature(obb)  # exact: json-glib writes doubles round-trip
        assert sig[4] == pytest.approx(math.degrees(obb.xywhr[4]))
        assert obj["id"] == str(info.object_id) and obj["bbox"] == integer_bbox(info.rect)
        assert obj[info.label] == {}  # NVDS_OBJECT_TYPE_UNKNOWN + objectId: "<label>": {} (no vehicle claimed)
        assert payload["@timestamp"] == "2026-01-02T03:04:05.678Z" and payload["event"]["type"] == "moving"
        assert payload["sensor"]["id"] == "cam-0"  # the config's sensor<sensorId>; sensorStr is not used here
        assert "customMessage" not in payload


def test_event_path_minimal_schema_carries_no_rotated_box(msgconv, converter, frame_with_boxes):
    batch, frame = frame_with_boxes
    messages.attach_obb_events(batch, frame, sensor="cam-7", timestamp="2026-01-02T03:04:05.678Z")
    ctx = converter(NVDS_PAYLOAD_DEEPSTREAM_MINIMAL)
    metas = event_metas(frame.address)
    events = (Event * len(metas))(*(Event(messages.EVENT_TYPES["moving"], m) for m in metas))
    payload = take(msgconv, ctx, msgconv.nvds_msg2p_generate(ctx, events, len(metas)))
    assert payload["sensorId"] == "cam-7" and payload["@timestamp"] == "2026-01-02T03:04:05.678Z"
    assert payload["id"] == str(frame.frame_num) and set(payload) == {"version", "id", "@timestamp", "sensorId",
                                                                      "objects"}
    # "<trackingId>|left|top|right|bottom|<label>|#||||||<confidence>": the AABB, label and confidence only
    for line, (info, _) in zip(reversed(payload["objects"]), nvds.read_obbs(frame)):
        fields = line.split("|")
        assert len(fields) == 14 and fields[6:13] == ["#"] + [""] * 6
        left, top, width, height = info.rect
        assert (int(fields[0]), fields[5]) == (info.object_id, info.label)
        assert [float(v) for v in fields[1:5] + fields[13:]] == pytest.approx(
            [left, top, left + width, top + height, info.confidence], rel=1e-5)
