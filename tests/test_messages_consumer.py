"""obbmeta.publish.messages, the consumer side: payloads made by obbmeta's writers on NVIDIA's real libnvds_meta,
wrapped as nvmsgconv wraps them, published to a real redis-server as NVIDIA's Redis adaptor writes them, and read back
(by the library and by examples/consume_redis.py); the schema checker against the jsonschema package on the schema
file."""
from __future__ import annotations

import base64
import ctypes
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import readback
from hypothesis import given
from hypothesis import strategies as st

from obbmeta.nvds import layouts
from obbmeta.publish import messages

ROOT = Path(__file__).resolve().parents[1]
jsonschema = pytest.importorskip("jsonschema")


def nvds_or_skip():
    from obbmeta import nvds

    if not nvds.available():
        pytest.skip(f"NVIDIA's libnvds_meta is not available:\n{nvds.describe()}")
    return nvds


@pytest.fixture
def frame():
    """A real NvDsBatchMeta frame with three rotated boxes from attach_obbs; two get tracking ids as nvtracker
    would give them."""
    nvds = nvds_or_skip()
    batch = nvds.BatchMeta.create(1)
    f = batch.add_frame(source_id=3, width=640, height=480, frame_num=41)
    nvds.attach_obbs(batch, f, xywhr=np.array([[100, 100, 40, 20, 0.5], [300, 200, 30, 30, -2.0],
                                               [500, 400, 80, 10, 3.0]], np.float32),
                     scores=np.array([0.91, 0.55, 0.3], np.float32), labels=np.array([1, 0, 2]),
                     class_names=["plane", "船", "tank"])
    from nvds import raw  # the tests' own offsets (object_id is at 56 in every layout)

    for obj, track in zip(raw.objects_of(f.address), (12, 34)):
        ctypes.c_uint64.from_address(obj + raw.OBJ["object_id"]).value = track
    yield batch, f
    batch.destroy()


def nvmsgconv_minimal_payload(frame, blobs: list[str], sensor: str = "cam-0") -> bytes:
    """The envelope nvmsgconv's minimal newapi schema puts around the frame's custom messages (members and order of
    dsmeta_payload.cpp: version, id, @timestamp, sensorId, objects, customMessage), pretty-printed as json-glib does;
    its "objects" strings are nvmsgconv's own AABB lines."""

    lines = []
    for info, _ in readback.pairs(frame):
        left, top, width, height = info.rect
        lines.append(f"{info.object_id}|{left:g}|{top:g}|{left + width:g}|{top + height:g}|{info.label}")
    doc = {"version": "4.0", "id": str(frame.frame_number), "@timestamp": "2026-12-01T10:00:00.000Z",
           "sensorId": sensor, "objects": lines, "customMessage": blobs}
    return json.dumps(doc, indent=2, separators=(",", " : "), ensure_ascii=False).encode("utf-8")


def nvmsgconv_event_payloads(frame, sensor: str = "cam-0") -> list[bytes]:
    """One full-schema event payload per NVDS_EVENT_MSG_META of the frame, in frame_user_meta_list order (as the
    element walks it), with the members eventmsg_payload.cpp writes for NVDS_OBJECT_TYPE_UNKNOWN objects: the
    event meta's trackingId, objectId ("<label>": {}), integer bbox and objSignature as read from NVIDIA's list."""
    from obbmeta.nvds import messages as writer

    out = []
    for ev in writer.read_events(frame):
        left, top, width, height = ev.bbox
        obj = {"id": str(ev.tracking_id), "speed": 0.0, "direction": 0.0, "orientation": 0.0}
        if ev.object_id:
            obj[ev.object_id] = {}
        obj["bbox"] = {"topleftx": int(left), "toplefty": int(top), "bottomrightx": int(left + width),
                       "bottomrighty": int(top + height)}
        obj["signature"] = list(ev.signature)
        obj["location"] = {"lat": 0.0, "lon": 0.0, "alt": 0.0}
        obj["coordinate"] = {"x": 0.0, "y": 0.0, "z": 0.0}
        doc = {"messageid": "6f2ad3c1-0000-4000-8000-000000000000", "mdsversion": "1.0", "@timestamp": ev.timestamp,
               "place": {"id": "harbour"}, "sensor": {"id": sensor, "type": "Camera"},
               "analyticsModule": {"id": "obb"}, "object": obj, "event": {"id": "e", "type": "moving"},
               "videoPath": ""}
        out.append(json.dumps(doc, indent=2, separators=(",", " : "), ensure_ascii=False).encode("utf-8"))
    return out


def assert_record_is_the_frame(record, frame, *, event: bool = False):

    objects = readback.pairs(frame)
    assert (record.source_id, record.frame_num, len(record.objects)) == (3, 41, len(objects))
    for got, (info, obb) in zip(record.objects, objects):
        assert got.object_id == (info.object_id if info.tracked else None)
        assert (got.class_id, got.label, got.confidence) == (info.class_id, info.label, info.confidence)
        assert np.array_equal(np.float32(got.xywhr), np.float32(obb.xywhr))  # the float32 the metadata holds
        assert np.array_equal(np.float32(got.corners), np.float32(obb.corners))
        if not event:
            assert got.bbox == tuple(info.rect) and got.obb_source == "user_meta"
    boxes = record.boxes()
    assert boxes.xywhr.dtype.is_floating_point and boxes.labels.tolist() == [i.class_id for i, _ in objects]
    assert np.array_equal(boxes.xywhr.numpy(), np.float32([o.xywhr for _, o in objects]))
    assert np.array_equal(boxes.scores.numpy(), np.float32([i.confidence for i, _ in objects]))


# ---------------------------------------------------------------- the blob path

def test_a_blob_wrapped_as_nvmsgconv_wraps_it_reads_back_as_the_frame(frame):
    from obbmeta.nvds import messages as writer

    batch, f = frame
    text = writer.attach_obb_message(batch, f)
    (record,) = messages.parse_payload(nvmsgconv_minimal_payload(f, [text]))
    assert record.path == "blob" and record.sensor == "cam-0" and record.timestamp == "2026-12-01T10:00:00.000Z"
    assert (record.batch_id, record.pts) == (0, f.buffer_pts) and record.complete
    assert_record_is_the_frame(record, f)
    assert record.object_ids[:2] == [12, 34] and record.object_ids[2] is None


def test_other_writers_custom_messages_are_left_out_and_a_payload_without_obbmetas_is_an_error(frame):
    from obbmeta.nvds import messages as writer

    batch, f = frame
    text = writer.obb_message_json(f)
    (record,) = messages.parse_payload(nvmsgconv_minimal_payload(f, ["plain text", '{"schema": "other"}', text]))
    assert_record_is_the_frame(record, f)
    with pytest.raises(messages.MessageError, match=r"customMessage: holds no obbmeta message \(none of its 2"):
        messages.parse_payload(nvmsgconv_minimal_payload(f, ["plain text", '{"schema": "other"}']))


def test_the_full_schema_repeats_the_blob_in_every_objects_payload_and_the_collector_keeps_one(frame):
    from obbmeta.nvds import messages as writer

    batch, f = frame
    text = writer.obb_message_json(f)
    payloads = [nvmsgconv_minimal_payload(f, [text])] * 3  # what msg2p-newapi=1 payload-type=0 sends for 3 objects
    collector = messages.FrameCollector()
    got = [r for p in payloads for r in collector.add(p)]
    assert len(got) == 1 and collector.flush() == []
    assert_record_is_the_frame(got[0], f)


def test_the_collector_parses_each_repeated_blob_once_and_forgets_it_with_its_frame(frame, monkeypatch):
    """The copies are skipped unparsed while their frame is remembered; once the frame is forgotten (remember=1 and
    another frame came), a copy is a frame again, exactly as without the shortcut."""
    from obbmeta.nvds import messages as writer

    batch, f = frame
    text = writer.obb_message_json(f)
    other = json.loads(text)
    other["frame"]["frame_num"] += 1
    parsed = []
    real = messages.parse_blob
    monkeypatch.setattr(messages, "parse_blob", lambda *a, **k: parsed.append(1) or real(*a, **k))
    collector = messages.FrameCollector(remember=1)
    first = [r for _ in range(5) for r in collector.add(nvmsgconv_minimal_payload(f, [text]))]
    assert len(first) == 1 and len(parsed) == 1
    assert len(collector.add(nvmsgconv_minimal_payload(f, [json.dumps(other)]))) == 1
    again = collector.add(nvmsgconv_minimal_payload(f, [text]))
    assert len(again) == 1 and again[0].frame_num == first[0].frame_num and len(parsed) == 3


@pytest.mark.parametrize("payload, match", [
    (b"\x00not json", "the payload is not JSON"),
    ('{"schema": "obbmeta.obb-message/1", "frame": {"source_id": NaN}}', "NaN is not JSON"),
    ("[1, 2]", "must be a JSON object"),
    ('{"version": "4.0", "objects": ["1|2|3|4|5|car"]}', "carries no obbmeta message"),
    ('{"customMessage": "x"}', "customMessage: must be an array of strings"),
])
def test_payloads_that_are_not_obbmetas_are_refused_with_the_reason(payload, match):
    with pytest.raises(messages.MessageError, match=match):
        messages.parse_payload(payload)


def test_a_blob_that_breaks_the_schema_is_refused_naming_the_member(frame):
    from obbmeta.nvds import messages as writer

    _, f = frame
    doc = writer.obb_message(f)
    doc["objects"][1]["obb"]["corners"] = doc["objects"][1]["obb"]["corners"][:3]
    with pytest.raises(messages.MessageError, match=r"customMessage\[0\]: objects\[1\]\.obb\.corners"):
        messages.parse_payload(nvmsgconv_minimal_payload(f, [json.dumps(doc)]))


def test_json_glibs_non_finite_numbers_are_read_as_null():
    # nvmsgconv's own members hold what json-glib writes for a NaN / inf double (not JSON): read as null
    text = '{"schema" : "x", "a" : nan.0, "b" : [-inf.0, inf, -nan], "s" : "nan.0 \\" inf"}'
    assert messages._load(text, "t") == {"schema": "x", "a": None, "b": [None, None, None], "s": 'nan.0 " inf'}


def test_a_null_confidence_becomes_a_nan_score_and_label_base64_the_exact_bytes(frame):
    from obbmeta.nvds import messages as writer

    _, f = frame
    doc = writer.obb_message(f)
    doc["objects"][0]["confidence"] = None
    doc["objects"][0]["label"], doc["objects"][0]["label_base64"] = "pl\ufffd", base64.b64encode(b"pl\xff").decode()
    record = messages.parse_blob(json.dumps(doc))
    assert record.confidences[0] is None and math.isnan(float(record.boxes().scores[0]))
    assert record.objects[0].label_bytes == b"pl\xff" and record.to_dict()["objects"][0]["label_base64"] == "cGz/"
    doc["objects"][0]["label_base64"] = "cGz"
    with pytest.raises(messages.MessageError, match="label_base64: must be base64 text"):
        messages.parse_blob(doc)


# ---------------------------------------------------------------- the event path

def test_event_payloads_join_into_the_frame_in_its_object_order(frame):
    from obbmeta.nvds import messages as writer

    batch, f = frame
    writer.attach_obb_events(batch, f, timestamp="2026-01-02T03:04:05.678Z")
    payloads = nvmsgconv_event_payloads(f)  # newest first, as the element sends them
    collector = messages.FrameCollector()
    assert collector.add(payloads[0]) == [] and collector.add(payloads[0]) == []  # a repeat changes nothing
    assert collector.add(payloads[1]) == []
    (record,) = collector.add(payloads[2])
    assert record.path == "event" and record.complete and record.timestamp == "2026-01-02T03:04:05.678Z"
    assert record.sensor == "cam-0" and record.batch_id is None
    assert_record_is_the_frame(record, f, event=True)


def test_an_event_frame_missing_objects_is_flushed_as_incomplete(frame):
    from obbmeta.nvds import messages as writer

    batch, f = frame
    writer.attach_obb_events(batch, f)
    payloads = nvmsgconv_event_payloads(f)
    (record,) = messages.collect_frames(payloads[:2])
    assert not record.complete and len(record.objects) == 2
    collector = messages.FrameCollector(pending=1)
    collector.add(payloads[0])
    other = json.loads(payloads[1])
    other["object"]["signature"][14] = 42.0  # the next frame's object: more than `pending` unfinished frames
    (dropped,) = collector.add(json.dumps(other))
    assert not dropped.complete and dropped.frame_num == 41


@pytest.mark.parametrize("change, match", [
    (lambda sig: sig[:13], "must be obbmeta's event signature, 18 or 19 numbers"),
    (lambda sig: sig[:5] + [0.0] + sig[6:], "its corners are not those of its box"),
    (lambda sig: sig[:16] + [5.0] + sig[17:], "object_index must be an integer in 0..2"),
    (lambda sig: sig[:14] + [1.5] + sig[15:], "frame_num must be an integer"),
])
def test_a_signature_that_is_not_obbmetas_is_refused(frame, change, match):
    from obbmeta.nvds import messages as writer

    batch, f = frame
    writer.attach_obb_events(batch, f)
    doc = json.loads(nvmsgconv_event_payloads(f)[0])
    doc["object"]["signature"] = change(doc["object"]["signature"])
    with pytest.raises(messages.MessageError, match=match):
        messages.parse_payload(doc)


# ---------------------------------------------------------------- the JSON Schema and obbmeta's own checker

def test_the_schema_file_is_a_valid_2020_12_schema_and_every_blob_obbmeta_writes_follows_it(frame):
    from obbmeta.nvds import messages as writer

    schema = messages.load_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["properties"]["schema"]["const"] == messages.SCHEMA == writer.SCHEMA
    _, f = frame
    doc = json.loads(writer.obb_message_json(f))
    jsonschema.validate(doc, schema, cls=jsonschema.Draft202012Validator)
    messages.check_schema(doc, schema)
    assert set(schema["$defs"]["object"]["properties"]["obb_source"]["enum"]) == set(layouts.SOURCES.values())


def verdict_of_jsonschema(doc) -> bool:
    return jsonschema.Draft202012Validator(messages.load_schema()).is_valid(doc)


def verdict_of_obbmeta(doc) -> bool:
    try:
        messages.check_schema(doc, messages.load_schema())
    except messages.MessageError:
        return False
    return True


NUMBERS = st.one_of(st.integers(-2**65, 2**65), st.floats(allow_nan=False, allow_infinity=False))
JUNK = st.one_of(st.none(), st.booleans(), NUMBERS, st.floats(0.5, 1e6).map(lambda v: v + 0.25), st.text(max_size=3),
                 st.just([]), st.just({}), st.lists(NUMBERS, max_size=3), st.integers(-2**64, -1),
                 st.integers(2**64, 2**66), st.just("x" * 128), st.just("%%"))


def ints(low, high):
    return st.one_of(st.integers(low, high), st.sampled_from([low, high]), st.integers(low, high).map(float))


def objects_valid():
    pair = st.lists(NUMBERS, min_size=2, max_size=2)
    return st.fixed_dictionaries(
        {"id": st.one_of(st.none(), ints(0, 2**64 - 2)), "class_id": ints(-2**31, 2**31 - 1),
         "label": st.text(max_size=127), "confidence": st.one_of(st.none(), NUMBERS),
         "bbox": st.fixed_dictionaries({k: NUMBERS for k in ("left", "top", "width", "height")}),
         "obb": st.fixed_dictionaries({**{k: NUMBERS for k in ("cx", "cy", "w", "h", "angle_deg", "angle_rad")},
                                       "corners": st.lists(pair, min_size=4, max_size=4)}),
         "obb_source": st.sampled_from(sorted(layouts.SOURCES.values()))},
        optional={"label_base64": st.binary(max_size=127).map(lambda b: base64.b64encode(b).decode()),
                  "classifications": st.just([{"label": "x"}])})


VALID = st.fixed_dictionaries({
    "schema": st.just(messages.SCHEMA),
    "frame": st.fixed_dictionaries({"source_id": ints(0, 2**32 - 1), "frame_num": ints(-2**31, 2**31 - 1),
                                    "batch_id": ints(0, 2**32 - 1), "pts": ints(0, 2**64 - 1)}),
    "objects": st.lists(objects_valid(), max_size=3)}, optional={"extra": JUNK})


def paths(doc, prefix=()):
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for k, v in enumerate(doc):
            yield from paths(v, prefix + (k,))


@st.composite
def documents(draw):
    """A valid blob, or one with exactly one member replaced by junk or removed."""
    doc = draw(VALID)
    if draw(st.booleans()):
        return doc
    where = draw(st.sampled_from(list(paths(doc))))
    if not where:
        return draw(JUNK)
    parent = doc
    for k in where[:-1]:
        parent = parent[k]
    if isinstance(parent, dict) and draw(st.booleans()):
        del parent[where[-1]]
    else:
        parent[where[-1]] = draw(JUNK)
    return doc


DOCUMENT = documents()


@given(DOCUMENT)
def test_obbmetas_schema_checker_agrees_with_jsonschema_on_the_schema_file(doc):
    assert verdict_of_obbmeta(doc) == verdict_of_jsonschema(doc)


@given(JUNK)
def test_obbmetas_schema_checker_agrees_with_jsonschema_on_junk(doc):
    assert verdict_of_obbmeta(doc) == verdict_of_jsonschema(doc)


def test_without_jsonschema_the_consumer_checks_with_its_own_checker(frame, monkeypatch):
    from obbmeta.nvds import messages as writer

    _, f = frame
    doc = writer.obb_message(f)
    doc["frame"]["pts"] = -1
    monkeypatch.setitem(sys.modules, "jsonschema", None)  # import jsonschema -> ImportError
    with pytest.raises(messages.MessageError, match=r"^frame\.pts: must be >= 0, got -1$"):
        messages.validate_message(doc)


def test_the_checker_refuses_a_schema_keyword_it_does_not_implement():
    with pytest.raises(ValueError, match=r"does not implement JSON Schema keyword\(s\) \['oneOf'\]"):
        messages.check_schema(1, {"oneOf": [{"type": "integer"}]})


def test_the_consumer_imports_without_torch_or_deepstream():
    code = ("import sys, obbmeta.publish.messages as m; m.load_schema(); "
            "assert 'torch' not in sys.modules and 'obbmeta.nvds' not in sys.modules, sorted(sys.modules)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr


@pytest.mark.slow
def test_the_wheel_ships_the_schema(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", str(ROOT),
                    "-w", str(tmp_path)], check=True, capture_output=True, env=dict(os.environ, OBBMETA_CUDA="0"))
    import zipfile

    with zipfile.ZipFile(next(tmp_path.glob("*.whl"))) as whl:
        assert json.loads(whl.read("obbmeta/publish/schemas/obb-message-1.json")) == messages.load_schema()


# ---------------------------------------------------------------- a real redis-server, as NVIDIA's adaptor writes

@pytest.fixture
def redis_server():
    sys.path.insert(0, str(ROOT / "tests"))
    from deepstream import brokers

    try:
        server = brokers.start_redis()
    except pytest.skip.Exception:
        if os.environ.get("CI"):  # CI installs redis-server (scripts/setup-env.sh): this test must run there
            raise AssertionError("CI must run the Redis round trip: redis-server or the redis client is missing") \
                from None
        raise
    yield server
    server.close()
    assert server.proc is None


def test_published_payloads_round_trip_through_a_real_redis_stream(frame, redis_server):
    import redis

    from obbmeta.nvds import messages as writer

    batch, f = frame
    writer.attach_obb_message(batch, f)
    writer.attach_obb_events(batch, f)
    (blob,) = writer.read_messages(f)  # the bytes nvmsgconv copies into customMessage: NvDsCustomMsgInfo's message
    blob_payload = nvmsgconv_minimal_payload(f, [blob.decode("utf-8")])
    event_payloads = nvmsgconv_event_payloads(f)
    client = redis.Redis.from_url(redis_server.url)
    # NVIDIA's adaptor: XADD <topic> * <payloadkey> <payload> (default payloadkey "metadata"); with
    # DEEPSTREAM_ENABLE_SENSOR_ID_EXTRACTION=1: XADD <topic> * key <sensor> value <payload> headers {}
    client.xadd("obbmeta", {"metadata": blob_payload})
    for p in event_payloads:
        client.xadd("obbmeta", {"key": "cam-0", "value": p, "headers": "{}"})
    stored = [fields.get(b"metadata", fields.get(b"value")) for _, fields in client.xrange("obbmeta")]
    assert stored == [blob_payload] + event_payloads
    published = json.loads(stored[0])["customMessage"][0].encode("utf-8")
    assert published == blob  # the blob, byte for byte, as obbmeta's writer left it in NVIDIA's frame meta

    blob_record, event_record = messages.collect_frames(stored)
    assert_record_is_the_frame(blob_record, f)
    assert_record_is_the_frame(event_record, f, event=True)
    assert blob_record.object_ids == event_record.object_ids == [12, 34, None]

    run = subprocess.run([sys.executable, str(ROOT / "examples" / "consume_redis.py"), "--url", redis_server.url,
                          "--stream", "obbmeta", "--from-start", "--idle", "0.3"], capture_output=True, text=True,
                         timeout=60, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    assert [line["path"] for line in lines] == ["blob", "event"] and run.stderr == ""
    for line in lines:
        assert [o["id"] for o in line["objects"]] == [12, 34, None]
        assert [o["label"] for o in line["objects"]] == blob_record.labels
        assert np.array_equal(np.float32([o["xywhr"] for o in line["objects"]]), blob_record.boxes().xywhr.numpy())


def test_consume_redis_reports_entries_without_obbmetas_message_and_goes_on(frame, redis_server):
    import redis

    from obbmeta.nvds import messages as writer

    batch, f = frame
    client = redis.Redis.from_url(redis_server.url)
    client.xadd("s", {"metadata": b'{"version": "4.0", "objects": []}'})
    client.xadd("s", {"other": b"x"})
    client.xadd("s", {"metadata": nvmsgconv_minimal_payload(f, [writer.obb_message_json(f)])})
    run = subprocess.run([sys.executable, str(ROOT / "examples" / "consume_redis.py"), "--url", redis_server.url,
                          "--stream", "s", "--from-start", "--idle", "0.3", "--count", "1"], capture_output=True,
                         text=True, timeout=60, cwd=ROOT)
    assert run.returncode == 0 and len(run.stdout.splitlines()) == 1
    assert "carries no obbmeta message" in run.stderr and "no payload field (metadata / value)" in run.stderr


# ---------------------------------------------------------------- examples/consume_mqtt.py

def test_consume_mqtt_prints_frames_from_payloads_and_reports_the_rest(frame):
    import io

    sys.path.insert(0, str(ROOT / "examples"))
    import consume_mqtt

    from obbmeta.nvds import messages as writer

    batch, f = frame
    out, err = io.StringIO(), io.StringIO()
    printer = consume_mqtt.Printer(out=out, err=err, count=1)
    printer.payload("t", b"not json")
    printer.payload("t", nvmsgconv_minimal_payload(f, [writer.obb_message_json(f)]))
    assert printer.done.is_set() and printer.printed == 1 and "message on t: the payload is not JSON" in err.getvalue()
    assert json.loads(out.getvalue())["frame_num"] == 41


def test_consume_mqtt_without_paho_says_what_to_install():
    code = ("import sys, runpy; sys.modules['paho'] = None; sys.argv = ['consume_mqtt.py', '--topic', 't']; "
            f"runpy.run_path({str(ROOT / 'examples' / 'consume_mqtt.py')!r}, run_name='__main__')")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "needs paho-mqtt 2.x: pip install paho-mqtt" in run.stderr


# ---------------------------------------------------------------- hostile payloads, numbers, the collector's repeats

def blob_doc(frame_num: int = 7, cx: float = 100.0) -> dict:
    """A valid obbmeta blob of one object (with a secondary result), written by hand: no DeepStream needed."""
    from obbmeta import geometry

    box = (cx, 50.0, 40.0, 20.0, 0.3)
    return {"schema": messages.SCHEMA,
            "frame": {"source_id": 3, "frame_num": frame_num, "batch_id": 0, "pts": 1000 * frame_num + 5},
            "objects": [{"id": 5, "class_id": 1, "label": "ship", "confidence": 0.5,
                         "bbox": {"left": cx - 23.0, "top": 34.0, "width": 45.0, "height": 32.0},
                         "obb": {"cx": cx, "cy": 50.0, "w": 40.0, "h": 20.0, "angle_deg": math.degrees(0.3),
                                 "angle_rad": 0.3, "corners": geometry.corners(box)[0].tolist()},
                         "obb_source": "user_meta",
                         "classifications": [{"component_id": 2, "classifier_type": "color", "labels": [
                             {"label_id": 0, "class_id": 1, "prob": 0.75, "label": "red"}]}]}]}


def envelope(*texts: str, sensor: str = "cam-0") -> str:
    """nvmsgconv's minimal newapi envelope around custom message texts."""
    return json.dumps({"version": "4.0", "id": "7", "@timestamp": "2026-12-01T10:00:00.000Z", "sensorId": sensor,
                       "objects": [], "customMessage": list(texts)})


def event_doc() -> dict:
    """A full-schema event payload of obbmeta's event signature (one object of a one-object frame)."""
    from obbmeta import geometry

    box = (100.0, 50.0, 40.0, 20.0, 0.3)
    sig = [*box[:4], math.degrees(box[4]), *geometry.corners(box)[0].ravel().tolist(), 3, 41, 1, 0, 1, 0.9]
    return {"@timestamp": "2026-01-02T03:04:05.678Z", "sensor": {"id": "cam-0"},
            "object": {"id": "12", "ship": {}, "bbox": {"topleftx": 77, "toplefty": 34, "bottomrightx": 123,
                                                        "bottomrighty": 66}, "signature": sig}}


def with_literal(doc: dict, where: tuple, literal: str) -> str:
    """``doc`` as JSON text with the member at ``where`` written as ``literal`` (any JSON text, or not JSON)."""
    doc = json.loads(json.dumps(doc))
    parent = doc
    for k in where[:-1]:
        parent = parent[k]
    parent[where[-1]] = "@@literal@@"
    return json.dumps(doc).replace('"@@literal@@"', literal)


def outcome(payload):
    """parse_payload's records, or its MessageError; any other exception fails the test."""
    try:
        return messages.parse_payload(payload)
    except messages.MessageError as exc:
        return exc


NESTED_PLACES = [None, ("frame", "source_id"), ("objects", 0, "obb", "cx"), ("extra",),
                 ("objects", 0, "classifications", 0, "labels", 0, "note")]


@given(depth=st.one_of(st.integers(1, 200_000), st.sampled_from([63, 64, 65, 900, 990, 1000, 100_000])),
       opener=st.sampled_from(["[", '{"a":']), closed=st.booleans(), where=st.sampled_from(NESTED_PLACES),
       wrapped=st.booleans(), event=st.booleans())
def test_deeply_nested_json_is_a_message_error_never_a_recursion_error(depth, opener, closed, where, wrapped,
                                                                        event):
    nested = opener * depth + ("0" + ("]" if opener == "[" else "}") * depth if closed else "")
    if where is None:
        text = nested
    elif event:
        text = with_literal(event_doc(), ("object", "bbox", "topleftx") if where[0] == "frame" else ("extra",),
                            nested)
    else:
        text = with_literal(blob_doc(), where, nested)
    got = outcome(envelope(text) if wrapped else text)
    if depth > 64:
        assert isinstance(got, messages.MessageError)
        if closed:
            assert "nested deeper than 64 arrays / objects" in str(got)
    for payload in (text.encode("utf-8"), envelope(text)):  # the collector, on bytes too
        try:
            messages.FrameCollector().add(payload)
        except messages.MessageError:
            pass


def test_nesting_up_to_max_depth_is_read_and_deeper_is_refused_naming_it():
    deepest = messages.MAX_DEPTH
    assert deepest == 64
    ok = with_literal(blob_doc(), ("extra",), "[" * (deepest - 1) + "]" * (deepest - 1))  # the blob is a level
    assert messages.parse_payload(ok)[0].frame_num == 7
    deep = with_literal(blob_doc(), ("extra",), "[" * deepest + "]" * deepest)
    with pytest.raises(messages.MessageError, match=r"^the payload is nested deeper than 64 arrays / objects"):
        messages.parse_payload(deep)
    with pytest.raises(messages.MessageError, match=r"^customMessage: holds no obbmeta message .*\[0\] the message "
                                                    r"is nested deeper than 64"):
        messages.parse_payload(envelope(deep))
    with pytest.raises(messages.MessageError, match="nested deeper than 64"):
        messages.parse_payload(json.loads(deep))  # a parsed dict too


def test_a_lone_surrogate_escape_is_refused_and_a_pair_is_read():
    pair = with_literal(blob_doc(), ("objects", 0, "label"), '"ship \\ud83d\\udea2"')
    assert messages.parse_payload(pair)[0].labels == ["ship \U0001f6a2"]
    lone = with_literal(blob_doc(), ("objects", 0, "label"), '"ship \\ud83d"')
    with pytest.raises(messages.MessageError, match=r"^the payload holds a lone UTF-16 surrogate '\\ud83d'"):
        messages.parse_payload(lone)
    with pytest.raises(messages.MessageError, match=r"\[0\] the message holds a lone UTF-16 surrogate"):
        messages.parse_payload(envelope(lone))
    with pytest.raises(messages.MessageError, match="the payload holds a lone UTF-16 surrogate"):
        messages.parse_payload(envelope(json.dumps(blob_doc()), sensor="cam-\udc00"))
    raw = json.dumps(blob_doc(), ensure_ascii=False).replace("ship", "ship\udc80")  # a str decoded surrogateescape
    with pytest.raises(messages.MessageError, match=r"^the payload holds a lone UTF-16 surrogate '\\udc80'"):
        messages.parse_payload(raw)


INTEGER_MEMBERS = {("frame", "source_id"): (0, 2**32 - 1), ("frame", "frame_num"): (-2**31, 2**31 - 1),
                   ("frame", "batch_id"): (0, 2**32 - 1), ("frame", "pts"): (0, 2**64 - 1),
                   ("objects", 0, "id"): (0, 2**64 - 2), ("objects", 0, "class_id"): (-2**31, 2**31 - 1),
                   ("objects", 0, "classifications", 0, "component_id"): (None, None),
                   ("objects", 0, "classifications", 0, "labels", 0, "class_id"): (0, None)}
FLOAT_MEMBERS = ([("objects", 0, "bbox", k) for k in ("left", "top", "width", "height")]
                 + [("objects", 0, "obb", k) for k in ("cx", "cy", "w", "h", "angle_deg", "angle_rad")]
                 + [("objects", 0, "obb", "corners", i, j) for i in range(4) for j in range(2)])
NULLABLE_MEMBERS = [("objects", 0, "confidence"), ("objects", 0, "classifications", 0, "labels", 0, "prob")]
SIGN = st.sampled_from(["", "-"])
HUGE_INTS = st.tuples(SIGN, st.one_of(st.text("0123456789", min_size=15, max_size=6000).map("1".__add__),
                                      st.integers(4290, 4310).map(lambda n: "9" * n))).map("".join)
HUGE_EXPONENTS = st.tuples(SIGN, st.sampled_from(["1", "2.5", "9.75", "0.5"]), st.sampled_from(["e", "E", "e+", "E-"]),
                           st.integers(300, 100_000).map(str)).map("".join)
CONSTANTS = st.sampled_from(["NaN", "Infinity", "-Infinity"])
LITERALS = st.one_of(HUGE_INTS, HUGE_EXPONENTS, CONSTANTS)


def number_of(literal: str) -> float | int:
    """What a JSON number literal is to obbmeta: an int when it has no fraction or exponent and Python converts its
    digits (sys.get_int_max_str_digits()), else the nearest double (inf beyond the range)."""
    if literal.lstrip("-").isdigit() and len(literal.lstrip("-")) <= sys.get_int_max_str_digits():
        return int(literal)
    return float(literal)


def is_finite_double(value) -> bool:
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


@given(where=st.sampled_from(sorted(INTEGER_MEMBERS, key=str) + FLOAT_MEMBERS + NULLABLE_MEMBERS),
       literal=LITERALS, wrapped=st.booleans())
def test_huge_and_non_finite_numbers_give_the_documented_result_in_every_member_of_a_blob(where, literal,
                                                                                            wrapped):
    text = with_literal(blob_doc(), where, literal)
    got = outcome(envelope(text) if wrapped else text)
    if literal in ("NaN", "Infinity", "-Infinity"):  # not JSON (obbmeta and nvmsgconv write none)
        assert isinstance(got, messages.MessageError) and f"{literal} is not JSON" in str(got)
        return
    value, member = number_of(literal), messages._path(where)
    if where in INTEGER_MEMBERS:
        low, high = INTEGER_MEMBERS[where]
        # an integer keeps its digits (up to Python's limit; beyond it, inf); a float with no fraction is one too
        valid = ((isinstance(value, int) or math.isfinite(value) and value.is_integer())
                 and (low is None or low <= value) and (high is None or value <= high))
    else:
        valid = where in NULLABLE_MEMBERS or is_finite_double(value)
    if not valid:
        assert isinstance(got, messages.MessageError) and member in str(got), (member, str(got)[:300])
        return
    assert not isinstance(got, Exception), str(got)[:300]
    obj = got[0].objects[0]
    if where == ("objects", 0, "confidence"):
        assert obj.confidence == (float(value) if is_finite_double(value) else None)
    elif where[-1] == "prob":
        assert obj.classifications[0]["labels"][0]["prob"] == (float(value) if is_finite_double(value) else None)
    elif where[:2] == ("objects", 0) and where[2] in ("bbox", "obb") and where[-1] != "angle_deg":
        assert float(value) in obj.bbox + obj.xywhr + tuple(v for xy in obj.corners for v in xy)
    elif where[0] == "frame":
        assert getattr(got[0], where[1]) == value
    json.dumps(got[0].to_dict(), allow_nan=False)  # what the consumer examples print: JSON


@given(position=st.integers(0, 18), bbox=st.sampled_from([None, "topleftx", "bottomrighty"]), literal=LITERALS)
def test_huge_and_non_finite_numbers_in_an_event_signature_give_the_documented_result(position, bbox, literal):
    where = ("object", "bbox", bbox) if bbox else ("object", "signature", position)
    got = outcome(with_literal(event_doc(), where, literal))
    if literal in ("NaN", "Infinity", "-Infinity"):
        assert isinstance(got, messages.MessageError) and f"{literal} is not JSON" in str(got)
        return
    value = number_of(literal)
    if where[1] == "signature" and position == 18:  # the confidence: None when it is not a finite double
        assert got[0].confidences == [float(value) if is_finite_double(value) else None]
    elif not is_finite_double(value):
        assert isinstance(got, messages.MessageError) and f"object.{where[1]}" in str(got), str(got)[:300]
    elif isinstance(got, messages.MessageError):
        assert f"object.{where[1]}" in str(got)
    if not isinstance(got, Exception):
        json.dumps(got[0].to_dict(), allow_nan=False)


@given(st.one_of(st.text(), st.sampled_from(["\u00b2", "\u0661\u0662", "1" * 5000, "18446744073709551616", "007"])))
def test_an_event_tracking_id_must_be_decimal_digits_within_64_bits(track):
    doc = event_doc()
    doc["object"]["id"] = track
    got = outcome(doc)
    if track.isascii() and track.isdigit() and len(track) <= 20 and int(track) <= messages.UNTRACKED_OBJECT_ID:
        assert got[0].object_ids == [None if int(track) == messages.UNTRACKED_OBJECT_ID else int(track)]
    else:
        assert isinstance(got, messages.MessageError) and "object.id: must be the tracking id" in str(got)


def test_a_1e400_confidence_is_none_and_a_1e400_centre_is_refused_naming_it():
    doc = with_literal(blob_doc(), ("objects", 0, "confidence"), "1e400")
    assert messages.parse_payload(doc)[0].confidences == [None]
    with pytest.raises(messages.MessageError, match=r"^objects\[0\]\.obb\.cx: must be a finite number"):
        messages.parse_payload(with_literal(blob_doc(), ("objects", 0, "obb", "cx"), "1e400"))
    with pytest.raises(messages.MessageError, match=r"^objects\[0\]\.obb\.cx: must be a finite number"):
        messages.parse_payload(with_literal(blob_doc(), ("objects", 0, "obb", "cx"), "1" * 400))
    with pytest.raises(messages.MessageError, match=r"^frame\.source_id: "):
        messages.parse_payload(with_literal(blob_doc(), ("frame", "source_id"), "1" * 5000))


def test_a_message_error_stays_short_when_a_member_is_huge():
    for where in (("frame", "source_id"), ("objects", 0, "obb_source"), ("objects", 0, "label_base64")):
        with pytest.raises(messages.MessageError, match=r"\.\.\. \(\d+ characters\)$") as caught:
            messages.parse_payload(envelope(with_literal(blob_doc(), where, json.dumps("A" * 1_000_001))))
        assert str(caught.value).startswith(f"customMessage[0]: {messages._path(where)}: ")
        assert len(str(caught.value)) < 1100


def blob_text(frame_num: int, variant: int) -> str:
    """The blob of frame ``frame_num`` (same sensor, source, pts and batch id), its object where ``variant`` says."""
    return json.dumps(blob_doc(frame_num, cx=100.0 + 50 * variant), separators=(",", ":"))


def test_a_restarted_pipelines_frame_with_the_same_identity_and_other_objects_is_delivered():
    first, restarted = blob_text(7, 0), blob_text(7, 1)  # same (sensor, source, frame_num, pts, batch_id)
    collector = messages.FrameCollector()
    got = [r for text in (first, first, restarted, restarted, first) for r in collector.add(envelope(text))]
    assert [r.objects[0].xywhr[0] for r in got] == [100.0, 150.0]  # each exact repeat dropped, the restart kept
    # a second obbmessage after a secondary stage: two blobs of one frame in one payload, both delivered
    doc = blob_doc(8)
    plain = json.dumps({**doc, "objects": [{k: v for k, v in o.items() if k != "classifications"}
                                           for o in doc["objects"]]})
    both = messages.FrameCollector().add(envelope(plain, json.dumps(doc)))
    assert [len(r.objects[0].classifications) for r in both] == [0, 1]


@given(st.lists(st.tuples(st.sampled_from(["cam-0", "cam-1"]), st.integers(0, 3), st.integers(0, 2)),
                max_size=30))
def test_the_collector_drops_exact_repeats_only(stream):
    collector = messages.FrameCollector()
    got = [r for sensor, f, v in stream for r in collector.add(envelope(blob_text(f, v), sensor=sensor))]
    want = [messages.parse_payload(envelope(blob_text(f, v), sensor=sensor))[0] for sensor, f, v in
            dict.fromkeys(stream)]
    assert got == want
    # a blob published on its own (no envelope) too: as text and bytes (the same blob), or as parsed dicts
    for forms in ((str, str.encode), (json.loads,)):
        collector = messages.FrameCollector()
        got = [r for _, f, v in stream for form in forms for r in collector.add(form(blob_text(f, v)))]
        assert got == [messages.parse_payload(blob_text(f, v))[0] for f, v in dict.fromkeys(fv[1:] for fv in stream)]


def test_the_collector_keeps_a_bounded_number_of_digests_and_no_payload_text():
    collector = messages.FrameCollector(remember=16)
    for k in range(10_000):
        assert len(collector.add(envelope(blob_text(k, 0)))) == 1
        assert len(collector._seen.keys) <= 16
    assert all(isinstance(d, bytes) and len(d) == 16 for d in collector._seen.keys)
    import tracemalloc

    big = "x" * 1_000_000
    collector = messages.FrameCollector()
    collector.add(envelope(json.dumps({**blob_doc(10**6), "extra": big})))  # warm the caches up
    tracemalloc.start()
    try:
        for k in range(20):
            assert len(collector.add(envelope(json.dumps({**blob_doc(k), "extra": big})))) == 1
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held < 1_000_000, held  # 20 payloads of 1 MB went through; 20 digests of 16 bytes stay


class FakeRedis:
    """XREAD replies of one batch of entries, then nothing (idle)."""

    def __init__(self, entries):
        self.replies = [[(b"s", entries)]]

    def xread(self, streams, count, block):
        return self.replies.pop(0) if self.replies else []


def test_consume_redis_reports_hostile_entries_and_goes_on_with_the_next():
    import io

    sys.path.insert(0, str(ROOT / "examples"))
    import consume_redis

    good = envelope(json.dumps(blob_doc())).encode()
    hostile = [b"[" * 100_000, envelope("[" * 100_000), with_literal(blob_doc(), ("extra",), "[" * 990 + "]" * 990),
               with_literal(blob_doc(), ("objects", 0, "obb", "cx"), "1e400"),
               with_literal(blob_doc(), ("frame", "source_id"), "1" * 5000),
               with_literal(blob_doc(), ("frame", "pts"), "1" * 400), with_literal(blob_doc(), ("frame", "pts"), "NaN"),
               with_literal(blob_doc(), ("objects", 0, "label"), '"\\udc00"'),
               with_literal(event_doc(), ("object", "id"), '"\u00b2"'), b"\xff{"]
    entries = [(f"{k}-0".encode(), {b"metadata": p}) for k, p in enumerate(hostile + [good])]
    out, err = io.StringIO(), io.StringIO()
    assert consume_redis.consume(FakeRedis(entries), "s", from_start=True, idle_s=0.01, out=out, err=err) == 1
    assert json.loads(out.getvalue())["frame_num"] == 7
    lines = err.getvalue().splitlines()
    assert [line.split(": ")[0] for line in lines] == [f"entry {f'{k}-0'.encode()!r}" for k in range(len(hostile))]
