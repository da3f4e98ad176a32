"""obbmeta.nvds.messages without GStreamer: the blob is NVIDIA's NvDsCustomMsgInfo on the frame, the JSON equals
read_obbs, copies and releases balance, and bad input is refused with a clear error."""
from __future__ import annotations

import base64
import ctypes
import json
import math
import re

import numpy as np
import pytest
import readback
from shapely.geometry import Polygon

from obbmeta import nvds
from obbmeta.nvds import layouts, messages


@pytest.fixture
def frame_with_boxes(make_batch):
    batch = make_batch(width=640, height=480)
    nvds.attach_obbs(batch, batch.frames[0], xywhr=np.array([[100, 100, 40, 20, 0.5], [300, 200, 30, 30, -2.0]],
                                                            np.float32), labels=np.array([1, 0]),
                     class_names=["plane", "船"])
    return batch, batch.frames[0]


def test_the_blob_is_a_custom_msg_blob_user_meta_whose_text_is_the_frames_json(frame_with_boxes):
    batch, frame = frame_with_boxes
    text = messages.attach_obb_message(batch, frame)
    node = frame._head.frame_user_meta_list
    um = layouts.UserMeta.from_address(node.contents.data)
    assert um.base_meta.meta_type == messages.NVDS_CUSTOM_MSG_BLOB == 29
    info = messages.CustomMsgInfo.from_address(um.user_meta_data)
    assert info.size == len(text.encode("utf-8"))  # size counts bytes, not characters ("船")
    doc = json.loads(text)
    assert doc == messages.obb_message(frame) and doc["objects"][0]["label"] in ("plane", "船")
    for entry, (_obj, obb) in zip(doc["objects"], readback.pairs(frame)):
        corners = entry["obb"]["corners"]
        assert Polygon(corners).area == pytest.approx(entry["obb"]["w"] * entry["obb"]["h"], rel=1e-4)
        assert entry["obb"]["angle_deg"] == pytest.approx(math.degrees(obb.xywhr[4]))
        assert entry["id"] is None  # untracked until nvtracker sets object_id


def test_copies_and_release_balance(frame_with_boxes):
    batch, frame = frame_with_boxes
    before = messages.live_blobs()
    messages.attach_obb_message(batch, frame)
    copy = batch.copy()
    assert messages.read_messages(copy.frames[0]) == messages.read_messages(frame)
    assert messages.live_blobs() == before + 2
    copy.destroy()
    assert messages.live_blobs() == before + 1


def test_obb_signature_is_centre_size_degrees_then_the_corners(frame_with_boxes):
    _, frame = frame_with_boxes
    (_, obb), *_ = readback.pairs(frame)
    sig = messages.obb_signature(obb)
    assert len(sig) == 13 and sig[:4] == list(obb.xywhr[:4]) and sig[4] == pytest.approx(math.degrees(obb.xywhr[4]))
    assert [tuple(sig[5 + 2 * k: 7 + 2 * k]) for k in range(4)] == list(obb.corners)


@pytest.mark.parametrize("meta_type, named", [
    (9, "9 is NVDS_EVENT_MSG_META"),        # nvmsgconv would read the blob as an NvDsEventMsgMeta and crash
    (8, "8 is NVDS_PAYLOAD_META"), (3, "3 is NVDS_OBJ_META"), (28, "28 is NVDS_PREPROCESS_BATCH_META"),
    (30, "30 is NVDS_ROI_META"), (33, "33 is NVDS_OBJ_META_NVDSANALYTICS"), (4095, "NVDS_RESERVED_META"),
    (4096, "NVDS_GST_CUSTOM_META's range"), (8192, "NVDS_GST_CUSTOM_META's range"), (100, "below NVDS_START_USER_META"),
    (0, "got 0"), (-1, "got -1"), (2**31, "got 2147483648"), (True, "got True"), (29.0, "got 29.0"), ("29", "got '29'"),
])
def test_every_meta_type_deepstream_reserves_is_refused_naming_it(frame_with_boxes, meta_type, named):
    batch, frame = frame_with_boxes
    with pytest.raises(ValueError, match=r"meta_type must be NVDS_CUSTOM_MSG_BLOB \(29 here\) or a user meta type "
                                         r"in 8193\.\.2147483647") as err:
        messages.attach_message(batch, frame, "{}", meta_type=meta_type)
    assert named in str(err.value)
    assert not frame._head.frame_user_meta_list  # nothing attached


@pytest.mark.parametrize("meta_type", [29, 8193, 2**31 - 1])
def test_the_blob_type_and_user_meta_types_are_accepted(frame_with_boxes, meta_type):
    batch, frame = frame_with_boxes
    messages.attach_message(batch, frame, b"m", meta_type=meta_type)
    assert messages.read_messages(frame, meta_type) == [b"m"]


def test_the_environment_variable_overrides_the_type_and_is_checked(monkeypatch, frame_with_boxes):
    batch, frame = frame_with_boxes
    monkeypatch.setenv(messages.META_TYPE_ENV, "28")  # DeepStream 7.0's NVDS_CUSTOM_MSG_BLOB
    messages.attach_message(batch, frame, b"raw")
    assert messages.read_messages(frame, 28) == [b"raw"] and messages.read_messages(frame) == [b"raw"]
    with pytest.raises(ValueError, match=r"NVDS_CUSTOM_MSG_BLOB \(28 here\)"):
        messages.attach_message(batch, frame, b"raw", meta_type=29)  # 29 is not the blob type of that install
    monkeypatch.setenv(messages.META_TYPE_ENV, "8200")
    assert messages.custom_msg_blob_type() == 8200
    for bad, named in (("x", "got 'x'"), ("9", "9 is NVDS_EVENT_MSG_META"), ("31", "31 is NVDS_CUSTOM_MSG_SPARSE4D")):
        monkeypatch.setenv(messages.META_TYPE_ENV, bad)
        with pytest.raises(ValueError, match=messages.META_TYPE_ENV) as err:
            messages.custom_msg_blob_type()
        assert named in str(err.value) and "28 or 29" in str(err.value)


def test_a_message_that_is_not_text_is_refused(frame_with_boxes):
    batch, frame = frame_with_boxes
    with pytest.raises(TypeError, match="message must be str or bytes"):
        messages.attach_message(batch, frame, {"a": 1})


# ---------------------------------------------------------------- event messages (NvDsEventMsgMeta, msg2p-newapi=0)

# Offsets of NvDsEventMsgMeta members, measured with offsetof() on NVIDIA's v9.1.0 nvdsmeta_schema.h (the members
# before sensorStr are the same in the 7.1, 8.0 and 9.0 field lists). Read raw here, independently of obbmeta's
# ctypes mirror, at the address NVIDIA's frame_user_meta_list holds.
EVENT_OFFSETS = {"type": 0, "objType": 4, "bbox": 8, "objSignature": 72, "objClassId": 88, "sensorId": 92,
                 "componentId": 104, "frameId": 108, "confidence": 112, "trackingId": 120, "ts": 128,
                 "objectId": 136, "sensorStr": 144}


def raw_events(frame):
    """Every NVDS_EVENT_MSG_META (9) user meta of the frame, fields read at NVIDIA's offsets."""
    out = []
    node = frame._head.frame_user_meta_list
    while node:
        um = layouts.UserMeta.from_address(node.contents.data)
        if um.base_meta.meta_type == 9:
            a = um.user_meta_data
            at = lambda t, name, k=0, a=a: t.from_address(a + EVENT_OFFSETS[name] + k).value  # noqa: E731
            top, left, width, height = (at(ctypes.c_float, "bbox", 4 * k) for k in range(4))
            sig_ptr, sig_n = at(ctypes.c_void_p, "objSignature"), at(ctypes.c_uint, "objSignature", 8)
            out.append({"type": at(ctypes.c_int, "type"), "objType": at(ctypes.c_int, "objType"),
                        "bbox": (left, top, width, height),
                        "signature": list((ctypes.c_double * sig_n).from_address(sig_ptr)),
                        "class_id": at(ctypes.c_int, "objClassId"), "sensor_id": at(ctypes.c_int, "sensorId"),
                        "component_id": at(ctypes.c_int, "componentId"), "frame_id": at(ctypes.c_int, "frameId"),
                        "confidence": at(ctypes.c_double, "confidence"),
                        "tracking_id": at(ctypes.c_uint64, "trackingId"),
                        "ts": at(ctypes.c_char_p, "ts"), "objectId": at(ctypes.c_char_p, "objectId"),
                        "sensorStr": at(ctypes.c_char_p, "sensorStr")})
        node = node.contents.next
    return out


def test_every_object_gets_an_event_msg_meta_with_the_rotated_box_in_objsignature(frame_with_boxes):
    batch, frame = frame_with_boxes
    assert messages.attach_obb_events(batch, frame, sensor="cam-7", timestamp="2026-01-02T03:04:05.678Z") == 2
    got = raw_events(frame)
    assert len(got) == 2
    for k, ((info, obb), ev) in enumerate(zip(readback.pairs(frame), reversed(got))):  # the list is prepended to
        sig = ev["signature"]
        assert len(sig) == 19 and sig[:13] == pytest.approx(messages.obb_signature(obb), abs=0)
        # source_id, frame_num, class_id, the object's index and the frame's object count, the confidence
        assert sig[13:] == [frame.source_id, frame.frame_number, info.class_id, k, 2, info.confidence]
        corners = [sig[5 + 2 * k: 7 + 2 * k] for k in range(4)]
        assert Polygon(corners).area == pytest.approx(sig[2] * sig[3], rel=1e-4)
        assert ev["bbox"] == pytest.approx(info.rect, abs=0)  # rect_params, pixels of the batched surface
        assert (ev["class_id"], ev["component_id"], ev["tracking_id"]) == (info.class_id, info.component_id,
                                                                           nvds.UNTRACKED_OBJECT_ID)
        assert ev["confidence"] == pytest.approx(info.confidence)
        assert ev["objectId"].decode("utf-8") == info.label
        assert ev["objType"] == 0x102 and ev["type"] == messages.EVENT_TYPES["moving"] == 2
        assert (ev["frame_id"], ev["sensor_id"]) == (frame.frame_number, frame.source_id)
        assert ev["ts"] == b"2026-01-02T03:04:05.678Z" and ev["sensorStr"] == b"cam-7"


def test_read_events_reads_what_nvidias_offsets_hold(frame_with_boxes):
    batch, frame = frame_with_boxes
    messages.attach_obb_events(batch, frame)
    for ev, raw in zip(messages.read_events(frame), raw_events(frame)):
        assert (ev.bbox, list(ev.signature), ev.class_id, ev.tracking_id, ev.object_id, ev.sensor) == (
            raw["bbox"], raw["signature"], raw["class_id"], raw["tracking_id"], raw["objectId"].decode(), None)
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", ev.timestamp)  # RFC 3339, UTC, ms


def test_an_event_meta_block_is_larger_than_every_known_nvdseventmsgmeta():
    # sizeof(NvDsEventMsgMeta): 14040 in v9.1.0, 14032 in 8.0 / v9.0.0; nvmsgconv reads members obbmeta leaves zero
    assert messages._c().obbmeta_msg_event_block_size() >= 14040


def test_event_copies_own_their_pointers_and_release_balances(frame_with_boxes):
    batch, frame = frame_with_boxes
    before = messages.live_events()
    messages.attach_obb_events(batch, frame, sensor="s")
    copy = batch.copy()
    original, copied = raw_events(frame), raw_events(copy.frames[0])
    assert sorted(map(repr, copied)) == sorted(map(repr, original))
    assert messages.live_events() == before + 4
    copy.destroy()
    assert messages.live_events() == before + 2 and raw_events(frame) == original  # the original is intact


def test_a_frame_without_objects_gets_no_event(make_batch):
    batch = make_batch()
    assert messages.attach_obb_events(batch, batch.frames[0]) == 0 and raw_events(batch.frames[0]) == []


@pytest.mark.parametrize("kwargs, error, match", [
    ({"event_type": "arrived"}, ValueError, "event_type must be one of entry, exit, moving"),
    ({"sensor": 3}, TypeError, "sensor must be None or a str"),
    ({"timestamp": "a\0b"}, TypeError, "timestamp must be None or a str without NUL"),
])
def test_bad_event_arguments_are_refused_before_anything_is_attached(frame_with_boxes, kwargs, error, match):
    batch, frame = frame_with_boxes
    with pytest.raises(error, match=match):
        messages.attach_obb_events(batch, frame, **kwargs)
    assert raw_events(frame) == []


# ---------------------------------------------------------------- NVDS_CUSTOM_MSG_BLOB by version

# The NvDsMetaType members before NVDS_CUSTOM_MSG_BLOB, as NVIDIA's nvdsmeta.h lists them (facts, not the header):
# 8.0 inserted NVDS_OBJ_3D_META after NVDS_OBJ_IMAGE_CONVEX_HULL.
DS70_MEMBERS = ["NVDS_BATCH_META = 1", "NVDS_FRAME_META", "NVDS_OBJ_META", "NVDS_DISPLAY_META", "NVDS_CLASSIFIER_META",
                "NVDS_LABEL_INFO_META", "NVDS_USER_META", "NVDS_PAYLOAD_META", "NVDS_EVENT_MSG_META",
                "NVDS_OPTICAL_FLOW_META", "NVDS_LATENCY_MEASUREMENT_META", "NVDSINFER_TENSOR_OUTPUT_META",
                "NVDSINFER_SEGMENTATION_META", "NVDS_CROP_IMAGE_META", "NVDS_TRACKER_PAST_FRAME_META",
                "NVDS_TRACKER_BATCH_REID_META", "NVDS_TRACKER_OBJ_REID_META", "NVDS_TRACKER_TERMINATED_LIST_META",
                "NVDS_TRACKER_SHADOW_LIST_META", "NVDS_OBJ_VISIBILITY", "NVDS_OBJ_IMAGE_FOOT_LOCATION",
                "NVDS_OBJ_WORLD_FOOT_LOCATION", "NVDS_OBJ_IMAGE_CONVEX_HULL", "NVDS_AUDIO_BATCH_META",
                "NVDS_AUDIO_FRAME_META", "NVDS_PREPROCESS_FRAME_META", "NVDS_PREPROCESS_BATCH_META",
                "NVDS_CUSTOM_MSG_BLOB"]
DS80_MEMBERS = DS70_MEMBERS[:23] + ["NVDS_OBJ_3D_META"] + DS70_MEMBERS[23:] + ["NVDS_ROI_META"]


def header(members):
    body = ",\n".join(f"  /** {m.split()[0].lower()}, a comment with, commas */\n  {m}" for m in members)
    return ("#include <glib.h>\n// typedef enum { NOT_THIS } NvDsMetaType;\n"
            f"typedef enum {{\n  NVDS_INVALID_META=-1,\n{body},\n  NVDS_RESERVED_META = 4095,\n"
            "  NVDS_GST_CUSTOM_META = 4096,\n  NVDS_START_USER_META = NVDS_GST_CUSTOM_META + 4096 + 1,\n"
            "  NVDS_FORCE32_META = 0x7FFFFFFF\n} NvDsMetaType;\n")


@pytest.mark.parametrize("members, version", [(DS70_MEMBERS, "7.0"), (DS80_MEMBERS, "8.0")])
def test_the_blob_type_is_counted_in_an_nvdsmeta_header_as_the_compiler_counts(members, version):
    text = header(members)
    assert messages.meta_type_from_header(text) == messages.NVDS_CUSTOM_MSG_BLOB_BY_VERSION[version]
    assert messages.meta_type_from_header(text, "NVDS_EVENT_MSG_META") == 9
    assert messages.meta_type_from_header(text, "NVDS_FORCE32_META") == 0x7FFFFFFF
    assert messages.meta_type_from_header("typedef enum { A } Other;") is None
    without = [m for m in members if m != "NVDS_CUSTOM_MSG_BLOB"]
    assert messages.meta_type_from_header(header(without)) is None  # a header without the member


def test_an_installed_header_chooses_the_type_unless_the_environment_variable_is_set(monkeypatch, tmp_path):
    installed = tmp_path / "nvdsmeta.h"
    installed.write_text(header(DS70_MEMBERS))
    monkeypatch.setattr(messages, "INSTALLED_HEADER", installed)
    monkeypatch.delenv(messages.META_TYPE_ENV, raising=False)
    assert messages.custom_msg_blob_type() == 28
    monkeypatch.setenv(messages.META_TYPE_ENV, "29")
    assert messages.custom_msg_blob_type() == 29
    monkeypatch.delenv(messages.META_TYPE_ENV)
    monkeypatch.setattr(messages, "INSTALLED_HEADER", tmp_path / "absent.h")
    assert messages.custom_msg_blob_type() == messages.NVDS_CUSTOM_MSG_BLOB == 29


# ---------------------------------------------------------------- what another writer upstream may leave

def object_field(frame, k: int, name: str) -> int:
    """The address of a member of the frame's k-th object (obj_meta_list order), at the offsets of raw.py for the
    layout of the loaded library."""
    from . import raw

    obj = raw.objects_of(frame.address)[k]
    big = raw.pool_element_size(raw.ptr(frame.address + raw.BASE_BATCH), "obj_pool") == raw.OBJ_SIZE
    return obj + (raw.OBJ if big else raw.OBJ_DS8)[name]


def strict(text: str):
    def refuse(name):
        raise ValueError(name)
    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_confidence_that_is_not_finite_is_null_in_the_blob_and_left_out_of_the_event_signature(
        frame_with_boxes, bad):
    batch, frame = frame_with_boxes
    ctypes.c_float.from_address(object_field(frame, 1, "confidence")).value = bad
    doc = strict(messages.attach_obb_message(batch, frame))
    assert [o["confidence"] for o in doc["objects"]] == [readback.pairs(frame)[0][0].confidence, None]
    assert len(doc["objects"]) == 2  # the object stays, with its box
    messages.attach_obb_events(batch, frame)
    events = list(reversed(messages.read_events(frame)))
    assert [len(e.signature) for e in events] == [19, 18]
    assert events[1].signature[13:] == (frame.source_id, frame.frame_number, events[1].class_id, 1, 2)
    assert events[1].confidence == bad or (math.isnan(bad) and math.isnan(events[1].confidence))


@pytest.mark.parametrize("member, value", [("rect_left", math.nan), ("rect_width", math.inf)])
def test_a_box_that_is_not_finite_is_refused_naming_the_object_before_anything_is_attached(
        frame_with_boxes, member, value):
    batch, frame = frame_with_boxes
    (info, _), _ = readback.pairs(frame)
    ctypes.c_float.from_address(object_field(frame, 0, member)).value = value
    for write in (messages.attach_obb_message, messages.attach_obb_events):
        with pytest.raises(ValueError, match=rf"object 0 \(class_id {info.class_id}, label '{info.label}', "
                                             r"untracked\) of frame \(source_id 0, frame_num 0\) has a box that is "
                                             r"not finite: rect_params \[.*(nan|inf)"):
            write(batch, frame)
    assert not frame._head.frame_user_meta_list


def test_label_bytes_that_are_not_utf8_are_kept_in_label_base64_and_replaced_in_the_event(frame_with_boxes):
    batch, frame = frame_with_boxes
    label = "plané".encode("latin-1") + b"\x80"  # ISO-8859-1 bytes: not UTF-8
    ctypes.memmove(object_field(frame, 0, "obj_label"), label + b"\0", len(label) + 1)
    entry = strict(messages.attach_obb_message(batch, frame))["objects"][0]
    assert entry["label"] == label.decode("utf-8", "replace") == "plan\ufffd"  # U+FFFD for the broken sequence
    assert base64.b64decode(entry["label_base64"]) == label
    assert "label_base64" not in strict(messages.obb_message_json(frame))["objects"][1]  # UTF-8 "船": as it is
    messages.attach_obb_events(batch, frame)
    assert messages.read_events(frame)[-1].object_id == "plan\ufffd"


def test_the_blob_has_the_documented_members_only(frame_with_boxes):
    _, frame = frame_with_boxes
    doc = messages.obb_message(frame)
    assert set(doc) == {"schema", "frame", "objects"}
    assert set(doc["objects"][0]) == {"id", "class_id", "label", "confidence", "bbox", "obb", "obb_source"}


def test_a_childs_entry_names_its_parent_by_index_and_tracking_id(make_batch):
    """A secondary detector's children (NvDsObjectMeta.parent set, as obbinfer process-mode=2 writes them): each
    child's entry has its parent's index in the frame's objects and its object_id once a tracker set one; the
    consumer reads both back."""
    batch = make_batch(width=640, height=480)
    f = batch.frames[0]
    ships = nvds.attach_obbs(batch, f, xywhr=np.array([[100, 100, 80, 30, 0.3], [400, 300, 90, 40, -0.6]],
                                                      np.float32), labels=np.array([1, 1]))
    nvds.attach_obbs(batch, f, xywhr=np.array([[95, 98, 10, 8, 0.3], [410, 300, 12, 8, -0.6], [50, 50, 6, 6, 0.0]],
                                              np.float32), labels=np.array([0, 0, 0]),
                     parents=[int(ships.addresses[1]), int(ships.addresses[0]), 0])
    from . import raw

    doc = messages.obb_message(f)
    rows = raw.objects_of(f.address)  # NVIDIA's obj_meta_list order, the tests' own offsets
    index = {a: k for k, a in enumerate(rows)}
    want = [index.get(raw.u64(a + raw.OBJ["parent"])) for a in rows]
    assert [e.get("parent") for e in doc["objects"]] == want and sorted(k for k in want if k is not None) == [
        k for k, a in enumerate(rows) if raw.i32(a + raw.OBJ["class_id"]) == 1]  # the two ships
    assert all(e["parent_id"] is None for e in doc["objects"] if "parent" in e)  # no tracker yet
    nvds.update_objects(batch, f, np.asarray(ships.addresses, np.uint64), object_ids=np.array([7, 8]))
    doc = messages.obb_message(f)
    ids = {k: e["id"] for k, e in enumerate(doc["objects"])}
    assert [e["parent_id"] for e in doc["objects"] if "parent" in e] == [ids[e["parent"]] for e in doc["objects"]
                                                                        if "parent" in e]
    assert {e["parent_id"] for e in doc["objects"] if "parent" in e} == {7, 8}
    from obbmeta.publish.messages import parse_blob, validate_message

    validate_message(doc)
    record = parse_blob(messages.obb_message_json(f))
    assert [(o.parent, o.parent_id) for o in record.objects] == [
        (e.get("parent"), e.get("parent_id")) for e in doc["objects"]]
    child = next(k for k, p in enumerate(want) if p is not None)
    assert record.to_dict()["objects"][child]["parent"] == want[child]


def test_a_parent_that_is_not_an_index_of_the_frame_is_refused(frame_with_boxes):
    from obbmeta.publish.messages import MessageError, parse_blob

    _, frame = frame_with_boxes
    doc = messages.obb_message(frame)
    doc["objects"][1].update(parent=2, parent_id=None)
    with pytest.raises(MessageError, match=r"objects\[1\]\.parent: parent 2 is not an index of this frame's 2"):
        parse_blob(doc)
    doc["objects"][1] = {k: v for k, v in doc["objects"][1].items() if k != "parent_id"}
    doc["objects"][1]["parent"] = 0
    with pytest.raises(MessageError, match=r"objects\[1\]: parent and parent_id come together"):
        parse_blob(doc)
