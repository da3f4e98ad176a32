"""obbmessage in real pipelines: every frame's NVDS_CUSTOM_MSG_BLOB parses as the documented JSON and equals what
read_obbs returns, also on the copies a writable branch of a tee makes; every blob is released at the end."""
from __future__ import annotations

import json
import math

import obb_toy_models
import pytest
import readback
from pipelines import buffer_probe, run

from obbmeta import nvds
from obbmeta.gst import Gst
from obbmeta.nvds import messages

W, H = 160, 120
NAMES = ",".join(obb_toy_models.CLASS_NAMES)


def check_frame_blob(frame):
    """The frame's one blob, parsed, against read_obbs of the same frame; returns the number of objects."""
    (raw,) = messages.read_messages(frame)
    doc = json.loads(raw.decode("utf-8"))
    assert doc["schema"] == messages.SCHEMA
    assert doc["frame"] == {"source_id": frame.source_id, "frame_num": frame.frame_number, "batch_id": frame.batch_id,
                            "pts": frame.buffer_pts}
    objects = readback.pairs(frame)
    got, want = [], []
    for entry in doc["objects"]:
        o = entry["obb"]
        assert o["angle_deg"] == pytest.approx(math.degrees(o["angle_rad"]), abs=1e-9)
        assert entry["obb_source"] == "user_meta"
        got.append((entry["id"], entry["class_id"], entry["label"], entry["confidence"],
                    tuple(entry["bbox"][k] for k in ("left", "top", "width", "height")),
                    (o["cx"], o["cy"], o["w"], o["h"], o["angle_rad"]), tuple(tuple(c) for c in o["corners"])))
    for info, obb in objects:
        want.append((info.object_id if info.tracked else None, info.class_id, info.label, info.confidence,
                     tuple(info.rect), tuple(obb.xywhr), tuple(obb.corners)))
    # the blob lists obj_meta_list as it was when obbmessage ran; NVIDIA's batch copy reverses that list
    assert sorted(got, key=repr) == sorted(want, key=repr)
    return len(objects)


def test_every_frames_blob_equals_read_obbs_on_the_original_and_on_tee_copies_and_all_are_released():
    before = messages.live_blobs()
    p = Gst.parse_launch(
        f"videotestsrc num-buffers=120 pattern=ball ! video/x-raw,format=RGBA,width={W},height={H} "
        f"! obbinfer model=obb_toy_models:toy input-size=96 class-names={NAMES} ! obbmessage "
        "! tee name=t t. ! queue ! fakesink name=shared "
        # mode=draw writes, so GStreamer copies a buffer that is shared: with no queue before it, the draw branch runs
        # inside tee's push, while tee still holds its own reference, so every buffer it sees is shared (behind a
        # queue the other branch may have let go already, and then no copy is needed)
        "t. ! obboverlay mode=draw ! fakesink name=copied")
    seen = {"shared": [], "copied": []}

    def on(name):
        def fn(buf):
            (frame,) = nvds.BatchMeta.from_gst_buffer(buf).frames
            seen[name].append((buf.pts, check_frame_blob(frame), nvds.BatchMeta.from_gst_buffer(buf).address))
        return fn

    # two lists: buffer_probe returns the list its probe appends to, so no concatenation before the run
    errors = [buffer_probe(p.get_by_name(name), "sink", on(name)) for name in seen]
    outcome = run(p)
    assert outcome.eos and outcome.stopped and not any(errors), (outcome, [e[:1] for e in errors])
    assert len(seen["shared"]) == len(seen["copied"]) == 120
    assert sum(n for _, n, _ in seen["shared"]) > 120  # the toy model finds objects
    # the draw branch really worked on copies (its own batch metas), which carry the same blobs. Compared frame by
    # frame: a copy is made while its original is alive, so their metas cannot share an address (across frames the
    # allocator may reuse a freed one)
    shared_at = {pts: a for pts, _, a in seen["shared"]}
    assert all(a != shared_at[pts] for pts, _, a in seen["copied"])
    assert [n for _, n, _ in seen["copied"]] == [n for _, n, _ in seen["shared"]]
    del p
    assert messages.live_blobs() == before


def test_skip_empty_attaches_no_blob_to_frames_without_objects():
    p = Gst.parse_launch(
        f"videotestsrc num-buffers=5 pattern=black ! video/x-raw,format=RGBA,width={W},height={H} "
        "! obbinfer model=obb_toy_models:toy input-size=96 conf=1.0 ! obbmessage skip-empty=true ! fakesink name=out")
    counts = []
    errors = buffer_probe(p.get_by_name("out"), "sink", lambda b: counts.append(
        [(f.num_obj_meta, len(messages.read_messages(f))) for f in nvds.BatchMeta.from_gst_buffer(b).frames]))
    assert run(p).eos and not errors
    assert counts == [[(0, 0)]] * 5


def test_a_bad_meta_type_environment_variable_stops_the_pipeline_with_the_reason(monkeypatch):
    monkeypatch.setenv(messages.META_TYPE_ENV, "vehicle")
    p = Gst.parse_launch(f"videotestsrc num-buffers=3 ! video/x-raw,format=RGBA,width={W},height={H} "
                         "! obbmessage name=msg ! fakesink")
    outcome = run(p)
    assert not outcome.eos and outcome.error.startswith("msg:") and messages.META_TYPE_ENV in outcome.error


def test_the_meta_type_property_chooses_the_blob_type():
    p = Gst.parse_launch(f"videotestsrc num-buffers=2 ! video/x-raw,format=RGBA,width={W},height={H} "
                         "! obbinfer model=obb_toy_models:toy input-size=96 ! obbmessage meta-type=8200 "
                         "! fakesink name=out")
    got = []
    errors = buffer_probe(p.get_by_name("out"), "sink", lambda b: got.append(
        [(len(messages.read_messages(f, 8200)), len(messages.read_messages(f))) for f in
         nvds.BatchMeta.from_gst_buffer(b).frames]))
    assert run(p).eos and not errors
    assert got == [[(1, 0)]] * 2


@pytest.mark.parametrize("meta_type, named", [(9, "9 is NVDS_EVENT_MSG_META"), (4000, "below NVDS_START_USER_META"),
                                              (8192, "NVDS_GST_CUSTOM_META")])
def test_a_meta_type_deepstream_reserves_stops_the_pipeline_naming_it(meta_type, named):
    p = Gst.parse_launch(f"videotestsrc num-buffers=3 ! video/x-raw,format=RGBA,width={W},height={H} "
                         "! obbinfer model=obb_toy_models:toy input-size=96 "
                         f"! obbmessage name=msg meta-type={meta_type} "
                         "! fakesink")
    outcome = run(p, timeout_s=30)
    assert not outcome.eos and outcome.error.startswith("msg:")
    assert f"meta-type={meta_type} refused" in outcome.error and named in outcome.error


def check_frame_events(frame):
    """The frame's event metas against read_obbs of the same frame (as multisets); returns the number of objects."""
    events = messages.read_events(frame)
    objects = readback.pairs(frame)
    n = len(objects)
    # signature: the box, source, frame, class, the object's index when written, the count, the confidence. A copy
    # made by NVIDIA's batch copy lists the objects in reverse, so the indices are compared as a set
    got = sorted((e.class_id, e.object_id, e.bbox, e.signature[:16] + e.signature[17:], e.frame_id) for e in events)
    want = sorted((info.class_id, info.label or None, tuple(info.rect),
                   tuple(messages.obb_signature(obb) + [frame.source_id, frame.frame_number, info.class_id, n,
                                                        info.confidence]), frame.frame_number) for info, obb in objects)
    assert got == want
    assert sorted(e.signature[16] for e in events) == list(range(n))
    return len(objects)


@pytest.mark.parametrize("payload, blobs", [("event", 0), ("both", 1)])
def test_payload_event_puts_one_event_meta_per_object_on_originals_and_tee_copies(payload, blobs):
    before = messages.live_events(), messages.live_blobs()
    p = Gst.parse_launch(
        f"videotestsrc num-buffers=40 pattern=ball ! video/x-raw,format=RGBA,width={W},height={H} "
        f"! obbinfer model=obb_toy_models:toy input-size=96 class-names={NAMES} ! obbmessage payload={payload} "
        "! tee name=t t. ! queue ! fakesink name=shared "
        "t. ! obboverlay mode=draw ! fakesink name=copied")  # no queue: every buffer is still shared, so copied
    seen = {"shared": [], "copied": []}

    def on(name):
        def fn(buf):
            (frame,) = nvds.BatchMeta.from_gst_buffer(buf).frames
            assert len(messages.read_messages(frame)) == blobs
            seen[name].append(check_frame_events(frame))
        return fn

    errors = [buffer_probe(p.get_by_name(name), "sink", on(name)) for name in seen]
    outcome = run(p)
    assert outcome.eos and not any(errors), (outcome, [e[:1] for e in errors])
    assert len(seen["shared"]) == len(seen["copied"]) == 40 and seen["shared"] == seen["copied"]
    assert sum(seen["shared"]) > 40
    del p
    assert (messages.live_events(), messages.live_blobs()) == before


def test_a_bad_payload_is_refused():
    p = Gst.parse_launch(f"videotestsrc num-buffers=3 ! video/x-raw,format=RGBA,width={W},height={H} "
                         "! obbmessage name=msg payload=kafka ! fakesink")
    outcome = run(p, timeout_s=30)
    assert outcome.error and "payload='kafka' refused" in outcome.error
