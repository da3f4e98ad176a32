"""obbmeta.nvds.messages without GStreamer: the blob is NVIDIA's NvDsCustomMsgInfo on the frame, the JSON equals
read_obbs, copies and releases balance, and bad input is refused with a clear error."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
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
    for entry, (_obj, obb) in zip(doc["objects"], nvds.read_obbs(frame)):
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
    (_, obb), *_ = nvds.read_obbs(frame)
    sig = messages.obb_signature(obb)
    assert len(sig) == 13 and sig[:4] == list(obb.xywhr[:4]) and sig[4] == pytest.approx(math.degrees(obb.xywhr[4]))
    assert [tuple(sig[5 + 2 * k: 7 + 2 * k]) for k in range(4)] == list(obb.corners)


@pytest.mark.parametrize("meta_type", [0, 4096, -1, True, 3.0])
def test_a_meta_type_outside_nvidias_range_is_refused(frame_with_boxes, meta_type):
    batch, frame = frame_with_boxes
    with pytest.raises(ValueError, match="meta_type must be an int in 1..4095"):
        messages.attach_message(batch, frame, "{}", meta_type=meta_type)


def test_the_environment_variable_overrides_the_type_and_is_checked(monkeypatch, frame_with_boxes):
    batch, frame = frame_with_boxes
    monkeypatch.setenv(messages.META_TYPE_ENV, "31")
    messages.attach_message(batch, frame, b"raw")
    assert messages.read_messages(frame, 31) == [b"raw"] and messages.read_messages(frame) == [b"raw"]
    monkeypatch.setenv(messages.META_TYPE_ENV, "x")
    with pytest.raises(ValueError, match=messages.META_TYPE_ENV):
        messages.custom_msg_blob_type()


def test_a_message_that_is_not_text_is_refused(frame_with_boxes):
    batch, frame = frame_with_boxes
    with pytest.raises(TypeError, match="message must be str or bytes"):
        messages.attach_message(batch, frame, {"a": 1})
