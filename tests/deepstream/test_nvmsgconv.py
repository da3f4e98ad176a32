"""NVIDIA's real message converter on the metas obbmeta writes: what nvmsgconv puts in its payloads, and what
obbmeta.publish.messages reads back from them (directly and through a real redis-server).

The library is the install's ``lib/libnvds_msgconv.so`` (the converter behind the ``nvmsgconv`` element;
``$OBBMETA_DEEPSTREAM_ROOT``, tests/deepstream/install.py); without it these tests are skipped. The batches are
NVIDIA's real NvDsBatchMeta written by obbmeta; the converter is called through its C API exactly as the element's
``gst_nvmsgconv_transform_ip_video_audio`` (``gst-nvmsgconv/gstnvmsgconv.cpp``, v9.1.0) calls it:

- ``msg2p-newapi=1``, full schema: one ``nvds_msg2p_generate_new`` per object of ``obj_meta_list`` with
  ``NvDsMsg2pMetaInfo {objMeta, frameMeta, "video"}``; minimal schema: one per frame with ``objMeta = NULL``;
- ``msg2p-newapi=0``, full schema: one ``nvds_msg2p_generate`` per ``NVDS_EVENT_MSG_META`` user meta of
  ``frame_user_meta_list``; minimal schema: one call with all of them as an ``NvDsEvent`` array.
"""
from __future__ import annotations

import ctypes
import json
import math
from ctypes import POINTER, Structure, c_char_p, c_int, c_uint, c_void_p

import numpy as np
import pytest
import readback
from nvds import raw

from obbmeta import nvds
from obbmeta.nvds import messages
from obbmeta.publish import messages as consumer

from . import brokers, install

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
    lib = ctypes.CDLL(str(install.library("libnvds_msgconv.so")))
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
    for payload, (info, _) in zip(payloads, readback.pairs(frame)):
        assert payload["customMessage"] == [text]  # the blob's text, byte for byte
        doc = json.loads(payload["customMessage"][0])
        assert doc == messages.obb_message(frame)
        assert [e["obb"]["corners"] for e in doc["objects"]] == [
            [list(c) for c in o.corners] for _, o in readback.pairs(frame)]
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
    assert payload["id"] == str(frame.frame_number) and payload["sensorId"] == "cam-0"
    # "<object_id>|left|top|right|bottom|<label>" per object: the AABB only, 6 significant digits
    assert len(payload["objects"]) == 2
    for line, (info, _) in zip(payload["objects"], readback.pairs(frame)):
        track, left, top, right, bottom, label = line.split("|")
        left_, top_, width, height = info.rect
        assert (int(track), label) == (info.object_id, info.label)
        assert [float(v) for v in (left, top, right, bottom)] == pytest.approx(
            [left_, top_, left_ + width, top_ + height], rel=1e-5)


# ---------------------------------------------------------------- msg2p-newapi=0 (NvDsEventMsgMeta)

def full_schema_events(msgconv, ctx, frame) -> list[dict]:
    """One nvds_msg2p_generate per event meta of the frame, in frame_user_meta_list order (as the element)."""
    payloads = []
    for meta in event_metas(frame.address):
        event = Event(eventType=messages.EVENT_TYPES["moving"], metadata=meta)
        payloads.append(take(msgconv, ctx, msgconv.nvds_msg2p_generate(ctx, ctypes.byref(event), 1)))
    return payloads


def test_event_path_full_schema_puts_obb_signature_in_each_objects_signature(msgconv, converter, frame_with_boxes):
    batch, frame = frame_with_boxes
    messages.attach_obb_events(batch, frame, sensor="cam-7", timestamp="2026-01-02T03:04:05.678Z")
    ctx = converter(NVDS_PAYLOAD_DEEPSTREAM)
    payloads = full_schema_events(msgconv, ctx, frame)
    assert len(payloads) == 2
    # frame_user_meta_list is prepended to, so the events come newest first: reversed, they follow read_obbs
    for k, (payload, (info, obb)) in enumerate(zip(reversed(payloads), readback.pairs(frame))):
        obj = payload["object"]
        sig = obj["signature"]
        # exact: json-glib writes doubles round-trip. The box, then source, frame, class, index, count, confidence
        assert len(sig) == 19 and sig[:13] == messages.obb_signature(obb)
        assert sig[13:] == [frame.source_id, frame.frame_number, info.class_id, k, 2, info.confidence]
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
    assert payload["id"] == str(frame.frame_number) and set(payload) == {"version", "id", "@timestamp", "sensorId",
                                                                      "objects"}
    # "<trackingId>|left|top|right|bottom|<label>|#||||||<confidence>": the AABB, label and confidence only
    for line, (info, _) in zip(reversed(payload["objects"]), readback.pairs(frame)):
        fields = line.split("|")
        assert len(fields) == 14 and fields[6:13] == ["#"] + [""] * 6
        left, top, width, height = info.rect
        assert (int(fields[0]), fields[5]) == (info.object_id, info.label)
        assert [float(v) for v in fields[1:5] + fields[13:]] == pytest.approx(
            [left, top, left + width, top + height, info.confidence], rel=1e-5)


# ---------------------------------------------------------------- obbmeta.publish.messages on NVIDIA's payloads

def generate_payloads(msgconv, converter, frame, *, newapi_: bool, minimal: bool) -> list[bytes]:
    """The payload bytes the nvmsgconv element would hand nvmsgbroker for this frame, as NVIDIA's library made
    them (newapi: one per object, or one per frame for the minimal schema; events: one per event meta)."""
    ctx = converter(NVDS_PAYLOAD_DEEPSTREAM_MINIMAL if minimal else NVDS_PAYLOAD_DEEPSTREAM)
    calls = []
    if newapi_:
        for obj in [None] if minimal else raw.objects_of(frame.address):
            info = Msg2pMetaInfo(objMeta=obj, frameMeta=frame.address, mediaType=b"video", datamap=None)
            calls.append(lambda info=info: msgconv.nvds_msg2p_generate_new(ctx, ctypes.byref(info)))
    else:
        for meta in event_metas(frame.address):
            event = Event(eventType=messages.EVENT_TYPES["moving"], metadata=meta)
            calls.append(lambda event=event: msgconv.nvds_msg2p_generate(ctx, ctypes.byref(event), 1))
    out = []
    for call in calls:
        payload = call()
        assert payload and payload.contents.payload
        out.append(ctypes.string_at(payload.contents.payload, payload.contents.payloadSize))
        msgconv.nvds_msg2p_release(ctx, payload)
    return out


def strict_json(data: bytes):
    """JSON as the standard reads it: UTF-8, no NaN / Infinity literals (Python's json would accept those)."""
    def refuse(name):
        raise ValueError(f"{name} in the payload")
    return json.loads(data.decode("utf-8"), parse_constant=refuse)


def assert_record_is_the_frame(record, frame, *, exact_bbox: bool = True):
    objects = readback.pairs(frame)
    assert (record.source_id, record.frame_num, len(record.objects)) == (frame.source_id, frame.frame_number,
                                                                         len(objects))
    for got, (info, obb) in zip(record.objects, objects):
        assert got.object_id == (info.object_id if info.tracked else None)
        assert (got.class_id, got.label) == (info.class_id, info.label)
        assert got.confidence == info.confidence
        # the box as float32, exactly what the metadata holds (the event path sends degrees: back to radians)
        assert np.array_equal(np.float32(got.xywhr), np.float32(obb.xywhr))
        assert np.array_equal(np.float32(got.corners), np.float32(obb.corners))
        if exact_bbox:
            assert got.bbox == tuple(info.rect)
        else:  # nvmsgconv's integer bbox: rect_params truncated
            left, top, width, height = info.rect
            assert got.bbox == (int(left), int(top), int(left + width) - int(left), int(top + height) - int(top))


@pytest.mark.parametrize("minimal", [False, True])
def test_the_consumer_reads_nvmsgconvs_newapi_payloads_back_into_the_frame(msgconv, converter, frame_with_boxes,
                                                                           minimal):
    batch, frame = frame_with_boxes
    messages.attach_obb_message(batch, frame)
    payloads = generate_payloads(msgconv, converter, frame, newapi_=True, minimal=minimal)
    assert len(payloads) == (1 if minimal else 2)
    frames = consumer.collect_frames(payloads)
    assert len(frames) == 1  # the full schema repeats the frame's blob in each object's payload: one frame
    (record,) = frames
    assert record.path == "blob" and record.sensor == "cam-0" and record.complete
    assert record.timestamp == strict_json(payloads[0])["@timestamp"]
    assert_record_is_the_frame(record, frame)
    assert record.object_ids == [12, 34]
    boxes = record.boxes()
    assert boxes.xywhr.shape == (2, 5) and boxes.labels.tolist() == record.class_ids


def test_the_consumer_joins_nvmsgconvs_event_payloads_into_the_frame(msgconv, converter, frame_with_boxes):
    batch, frame = frame_with_boxes
    messages.attach_obb_events(batch, frame, timestamp="2026-01-02T03:04:05.678Z")
    payloads = generate_payloads(msgconv, converter, frame, newapi_=False, minimal=False)
    collector = consumer.FrameCollector()
    assert collector.add(payloads[0]) == []  # one of the frame's two objects: not complete yet
    (record,) = collector.add(payloads[1])
    assert record.path == "event" and record.complete and record.sensor == "cam-0"
    assert record.timestamp == "2026-01-02T03:04:05.678Z"
    assert_record_is_the_frame(record, frame, exact_bbox=False)  # back in read_obbs order, though sent reversed
    assert collector.flush() == []


def test_the_minimal_event_schema_carries_nothing_the_consumer_can_read(msgconv, converter, frame_with_boxes):
    batch, frame = frame_with_boxes
    messages.attach_obb_events(batch, frame)
    ctx = converter(NVDS_PAYLOAD_DEEPSTREAM_MINIMAL)
    metas = event_metas(frame.address)
    events = (Event * len(metas))(*(Event(messages.EVENT_TYPES["moving"], m) for m in metas))
    payload = take(msgconv, ctx, msgconv.nvds_msg2p_generate(ctx, events, len(metas)))
    with pytest.raises(consumer.MessageError, match="minimal event schema carries no rotated box"):
        consumer.parse_payload(payload)


def obj_field(frame, k: int, name: str) -> int:
    """The address of a field of the frame's k-th object (obj_meta_list order), in the layout of this library."""
    obj = raw.objects_of(frame.address)[k]
    big = raw.pool_element_size(raw.ptr(frame.address + raw.BASE_BATCH), "obj_pool") == raw.OBJ_SIZE
    return obj + (raw.OBJ if big else raw.OBJ_DS8)[name]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_confidence_that_is_not_finite_reaches_the_consumer_as_none_on_both_paths(msgconv, converter,
                                                                                   frame_with_boxes, bad):
    batch, frame = frame_with_boxes
    ctypes.c_float.from_address(obj_field(frame, 0, "confidence")).value = bad  # what a broken model upstream does
    text = messages.attach_obb_message(batch, frame)
    messages.attach_obb_events(batch, frame)
    assert json.loads(text)["objects"][0]["confidence"] is None
    for newapi_, minimal in ((True, False), (True, True), (False, False)):
        payloads = generate_payloads(msgconv, converter, frame, newapi_=newapi_, minimal=minimal)
        if newapi_ and not minimal:
            # NVIDIA's own part of the full newapi schema, "<label>": {"confidence": ...}, is written by json-glib
            # as nan / inf: not JSON (dsmeta_payload.cpp). obbmeta's consumer reads those numbers as null
            with pytest.raises(ValueError):
                strict_json(payloads[0])
            assert '"confidence" : null' in consumer._json_glib_non_finite_as_null(payloads[0].decode())
        else:
            for p in payloads:
                strict_json(p)
        (record,) = consumer.collect_frames(payloads)
        assert record.complete and record.confidences[0] is None
        assert record.confidences[1] == readback.pairs(frame)[1][0].confidence
    # the event signature leaves the confidence out (18 numbers) rather than send json-glib's "nan"
    sigs = sorted(len(strict_json(p)["object"]["signature"]) for p in
                  generate_payloads(msgconv, converter, frame, newapi_=False, minimal=False))
    assert sigs == [18, 19]


def test_label_bytes_that_are_not_utf8(msgconv, converter, frame_with_boxes):
    batch, frame = frame_with_boxes
    label = b"ship\xff\xfe"
    ctypes.memmove(obj_field(frame, 0, "obj_label"), label + b"\0", len(label) + 1)
    text = messages.attach_obb_message(batch, frame)
    messages.attach_obb_events(batch, frame)
    entry = json.loads(text)["objects"][0]
    assert entry["label"] == "ship\ufffd\ufffd" and entry["label_base64"] == "c2hpcP/+"
    # the blob keeps the exact bytes through NVIDIA's converter (minimal schema: nvmsgconv's own entries are text)
    (blob_payload,) = generate_payloads(msgconv, converter, frame, newapi_=True, minimal=True)
    # nvmsgconv copies obj_label's bytes into its own object strings as they are: that payload is not UTF-8
    assert b"|ship\xff\xfe" in blob_payload
    with pytest.raises(UnicodeDecodeError):
        blob_payload.decode("utf-8")
    (record,) = consumer.parse_payload(blob_payload)
    assert json.loads(blob_payload.decode("utf-8", "replace"))["customMessage"] == [text]
    assert record.objects[0].label_bytes == label and record.objects[0].label == "ship\ufffd\ufffd"
    # the event path carries the label as nvmsgconv's key: the replaced text, valid UTF-8
    (event_record,) = consumer.collect_frames(generate_payloads(msgconv, converter, frame, newapi_=False,
                                                                minimal=False))
    assert event_record.objects[0].label == "ship\ufffd\ufffd"
    assert event_record.objects[0].label_bytes == "ship\ufffd\ufffd".encode()


@pytest.fixture
def redis_server():
    server = brokers.start_redis()
    yield server
    server.close()


def test_nvmsgconvs_payloads_through_a_real_redis_stream_as_the_redis_adaptor_writes_them(
        msgconv, converter, frame_with_boxes, redis_server):
    import io

    import redis

    from examples.consume_redis import consume

    batch, frame = frame_with_boxes
    messages.attach_obb_message(batch, frame)
    messages.attach_obb_events(batch, frame)
    payloads = (generate_payloads(msgconv, converter, frame, newapi_=True, minimal=False)
                + generate_payloads(msgconv, converter, frame, newapi_=False, minimal=False))
    client = redis.Redis.from_url(redis_server.url)
    for p in payloads:  # NVIDIA's adaptor: XADD <topic> * <payloadkey, default "metadata"> <payload>
        client.xadd("obbmeta", {"metadata": p})
    stored = [fields[b"metadata"] for _, fields in client.xrange("obbmeta")]
    assert stored == payloads  # byte for byte
    out = io.StringIO()
    assert consume(client, "obbmeta", from_start=True, idle_s=0.2, out=out) == 2
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert (first["path"], second["path"]) == ("blob", "event")
    for record in consumer.collect_frames(stored):
        assert_record_is_the_frame(record, frame, exact_bbox=record.path == "blob")


# ---------------------------------------------------------------- the nvmsgconv element

NVDS_PAYLOAD_META = 8  # NvDsMetaType: the element's NvDsPayload user meta on the frame


def element_payloads(frame) -> list[bytes]:
    """The payloads the nvmsgconv element attached to a frame meta (NVDS_PAYLOAD_META user metas holding an
    NvDsPayload), in frame_user_meta_list order."""
    out = []
    for um in raw.glist(raw.ptr(frame.address + raw.FRAME["frame_user_meta_list"])):
        if raw.u32(um + raw.BASE_TYPE) == NVDS_PAYLOAD_META:
            payload = Payload.from_address(raw.ptr(um + raw.USER["user_meta_data"]))
            out.append(ctypes.string_at(payload.payload, payload.payloadSize))
    return out


@pytest.mark.parametrize("payload, newapi_, schema", [("blob", 1, 0), ("blob", 1, 1), ("event", 0, 0)])
def test_the_nvmsgconv_element_publishes_what_the_consumer_reads_back_as_each_frame(ds_gst, tmp_path, payload,
                                                                                    newapi_, schema):
    from pipelines import buffer_probe, run

    from .pipelines_ds import NAMES

    install.require_element(ds_gst, "nvmsgconv", "libnvdsgst_msgconv.so")
    config = tmp_path / "msgconv.txt"
    config.write_text(CONFIG)
    p = ds_gst.parse_launch(
        "videotestsrc num-buffers=20 pattern=ball ! video/x-raw,format=RGBA,width=160,height=120 "
        f"! obbinfer model=obb_toy_models:toy input-size=96 class-names={NAMES} ! obbmessage payload={payload} "
        f"! nvmsgconv config={config} msg2p-newapi={newapi_} payload-type={schema} frame-interval=1 "
        "! fakesink name=out")
    checked = []

    def check(buf):
        (frame,) = nvds.BatchMeta.from_gst_buffer(buf).frames
        payloads = element_payloads(frame)
        if not readback.pairs(frame):
            return  # no objects: the full schema sends nothing, the event path has no event
        records = consumer.collect_frames(payloads)
        assert len(records) == 1
        assert_record_is_the_frame(records[0], frame, exact_bbox=payload == "blob")
        checked.append(len(payloads))

    errors = buffer_probe(p.get_by_name("out"), "sink", check)
    outcome = run(p, timeout_s=60)
    assert outcome.eos and not errors, (outcome, errors[:1])
    assert checked  # the toy detector found the ball
