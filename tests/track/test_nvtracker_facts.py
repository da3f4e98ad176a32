"""What NVIDIA's nvtracker (DeepStream 9.1, nvtracker_proc.cpp) does to obbmeta's objects, one fact per test pair:
the stand-in reproduces it (checked field by field through NVIDIA's own lists with the tests' own offsets,
tests/nvds/raw.py), and FollowTracker handles it. Facts: detections of tracks in probation are removed with their
OBB payload; objects it makes on skipped frames have confidence -0.1 and no user meta; they copy the whole
rect_params (rotation_angle too), text_params, label and component id of the first object of their class it ever
saw; it overwrites frame_num."""
import math

import numpy as np
import pytest
import readback
from nvds import raw
from nvtracker_standin import NvTrackerStandIn

from obbmeta import nvds
from obbmeta.track import FollowTracker

if not nvds.available():
    pytest.skip("NVIDIA's libnvds_meta is not available", allow_module_level=True)

from obbmeta.nvds import _core  # noqa: E402

DS9 = pytest.mark.skipif(not _core.get().layout.has_rotation_angle, reason="rotation_angle is DS 9 only")

W, H = 1920, 1080
CARS = np.array([[400.0 + 90 * k, 300.0 + 60 * k, 46.0, 20.0, 0.6] for k in range(3)], np.float32)
NAMES = ["car", "ship"]
RED, BLUE = (1.0, 0.0, 0.0, 1.0), (0.0, 0.0, 1.0, 1.0)


def frames(batch_size=1, numbers=None):
    batch = nvds.BatchMeta.create(batch_size)
    numbers = numbers or [0] * batch_size
    return batch, [batch.add_frame(source_id=s, width=W, height=H, frame_num=numbers[s]) for s in range(batch_size)]


def detect(batch, frame, boxes, *, labels=None, rotation=False, palette=None, component_id=3, border_width=3):
    kw = {} if palette is None else {"palette": [palette]}
    labels = np.zeros(len(boxes), np.int64) if labels is None else np.asarray(labels, np.int64)
    return nvds.attach_obbs(batch, frame, xywhr=np.asarray(boxes, np.float32),
                            scores=np.full(len(boxes), 0.9, np.float32), labels=labels, class_names=NAMES,
                            component_id=component_id, rotation_angle=rotation, border_width=border_width, **kw)


def by_id(frame):
    return {info.object_id: (info, obb) for info, obb in readback.pairs(frame)}


def f32(obj, field):
    return raw.f32(obj + raw.OBJ[field])


def colour(obj, field):
    return tuple(raw.f64(obj + raw.OBJ[field] + 8 * i) for i in range(4))


# ---------------------------------------------------------------- probation: detections removed, OBB with them

def test_standin_removes_detections_of_tracks_in_probation_with_their_obb_payload():
    standin = NvTrackerStandIn(probation=3)
    for k in range(3):
        batch, (frame,) = frames()
        detect(batch, frame, CARS + [3 * k, 0, 0, 0, 0])
        live = nvds.live_payloads()
        standin.update_frame(batch, frame)
        objs = raw.objects_of(frame.address)
        if k < 2:  # tentative: nvtracker's removeUntrackedObjects returns them and their user metas to the pools
            assert objs == [] and nvds.live_payloads() == live - 3
            assert raw.pool_counts(batch.address, "obj_pool")[0] == 0
        else:
            assert len(objs) == 3 and nvds.live_payloads() == live
            assert all(raw.u64(o + raw.OBJ["object_id"]) != raw.UNTRACKED for o in objs)
        batch.destroy()


def test_follow_starts_a_track_at_its_first_reported_detection_with_the_detectors_obb():
    standin, follow = NvTrackerStandIn(probation=3), FollowTracker()
    for k in range(4):
        batch, (frame,) = frames()
        det = CARS + [3 * k, 0, 0, 0, 0]
        detect(batch, frame, det)
        standin.update_frame(batch, frame)
        result = follow.update_frame(batch, frame)
        if k < 2:  # nothing reached FollowTracker: no state, nothing written
            assert result.objects == 0 and len(follow) == 0
        elif k == 2:  # the first frame a track is reported: its OBB is the detector's, moved onto the tracker's box
            assert (result.objects, result.measured) == (3, 3) and len(follow) == 3
            for info, obb in readback.pairs(frame):
                t = info.tracker_bbox
                d = det[np.argmin(np.abs(det[:, 0] - (t[0] + t[2] / 2)))]
                assert obb.source == "user_meta" and obb.flags & nvds.OBB_TRACKED
                assert obb.xywhr[2:] == pytest.approx(tuple(d[2:]), abs=1e-4)
                assert obb.xywhr[:2] == pytest.approx((t[0] + t[2] / 2, t[1] + t[3] / 2), abs=1e-3)
        batch.destroy()


# ---------------------------------------------------------------- objects nvtracker makes on skipped frames

def test_standin_makes_objects_on_skipped_frames_with_confidence_minus_0_1_and_no_user_meta():
    standin = NvTrackerStandIn(probation=1)
    batch, (frame,) = frames()
    detect(batch, frame, CARS)
    standin.update_frame(batch, frame)
    batch.destroy()
    batch, (frame,) = frames()  # nvinfer skipped it: bInferDone 0, no objects
    standin.update_frame(batch, frame)
    objs = raw.objects_of(frame.address)
    assert len(objs) == 3
    for o in objs:
        assert f32(o, "confidence") == pytest.approx(-0.1) and raw.user_metas_of(o) == []
        assert (f32(o, "det_left"), f32(o, "det_top"), f32(o, "det_width"), f32(o, "det_height")) == (0, 0, 0, 0)
        assert raw.u64(o + raw.OBJ["object_id"]) in (1000, 1001, 1002)
        assert raw.cstr(raw.ptr(o + raw.OBJ["font_name"])) == b"Serif"
        shown = raw.cstr(raw.ptr(o + raw.OBJ["display_text"]))
        assert shown == b"car %d" % raw.u64(o + raw.OBJ["object_id"])  # display-tracking-id
    batch.destroy()


def test_follow_gives_objects_nvtracker_made_their_tracks_predicted_obb():
    standin, follow = NvTrackerStandIn(probation=1), FollowTracker()
    for k in range(4):
        batch, (frame,) = frames()
        if k % 2 == 0:
            detect(batch, frame, CARS + [4 * k, 0, 0, 0, 0])
        standin.update_frame(batch, frame)
        result = follow.update_frame(batch, frame)
        for info, obb in readback.pairs(frame):
            if k % 2:
                assert info.confidence == pytest.approx(-0.1)
                assert obb.source == "predicted" and obb.flags & nvds.OBB_PREDICTED
                assert obb.xywhr[4] == pytest.approx(0.6, abs=1e-3) and obb.xywhr[2] == pytest.approx(46, abs=0.5)
        assert result.predicted == (3 if k % 2 else 0) and result.unknown == 0
        batch.destroy()


def test_follow_leaves_objects_nvtracker_made_without_an_obb_when_their_track_has_none():
    standin = NvTrackerStandIn(probation=1)
    batch, (frame,) = frames()
    detect(batch, frame, CARS)
    standin.update_frame(batch, frame)  # the detection frame happened before FollowTracker was there
    batch.destroy()
    follow = FollowTracker()
    batch, (frame,) = frames()
    standin.update_frame(batch, frame)
    result = follow.update_frame(batch, frame)
    assert (result.objects, result.unknown, result.predicted, result.fallback) == (3, 3, 0, 0)
    assert len(follow) == 0 and (follow.last_boxes["flags"] == 0).all()
    for info, obb in readback.pairs(frame):  # no invented angle: the tracker's box, said to be only that
        assert obb.source == "aabb" and info.num_user_meta == 0 and obb.xywhr[4] == 0.0
    batch.destroy()


# ---------------------------------------------------------------- the first object of a class, copied whole

def first_then_other(rotation):
    """Stream 0 shows car A (the first car nvtracker ever sees: red border, 3 px, component 3, angle 0.3); stream 1
    shows car B (blue, 5 px, component 5, angle -0.9) on two detection frames, then a frame nvinfer skipped."""
    standin = NvTrackerStandIn(probation=1)
    a = np.array([[300.0, 300.0, 60.0, 24.0, 0.3]], np.float32)
    b = np.array([[1200.0, 700.0, 80.0, 30.0, -0.9]], np.float32)
    follow = FollowTracker()
    batch, (f0, f1) = frames(2)
    detect(batch, f0, a, rotation=rotation, palette=RED, component_id=3, border_width=3)
    detect(batch, f1, b, rotation=rotation, palette=BLUE, component_id=5, border_width=5)
    standin.update(batch)
    follow.update_batch(batch)
    batch.destroy()
    batch, (f0, f1) = frames(2)
    detect(batch, f0, a, rotation=rotation, palette=RED, component_id=3, border_width=3)
    detect(batch, f1, b + [2, 0, 0, 0, 0], rotation=rotation, palette=BLUE, component_id=5, border_width=5)
    standin.update(batch)
    follow.update_batch(batch)
    batch.destroy()
    batch, (f0, f1) = frames(2)  # skipped by nvinfer
    return standin, follow, batch, f1


@DS9
def test_standin_copies_the_first_objects_whole_rect_params_onto_the_objects_it_makes():
    standin, _, batch, f1 = first_then_other(rotation=True)
    standin.update(batch)
    (o,) = raw.objects_of(f1.address)
    assert f32(o, "rotation_angle") == pytest.approx(math.degrees(0.3), abs=1e-4)  # car A's angle on car B
    assert raw.u32(o + raw.OBJ["border_width"]) == 3 and colour(o, "border_color") == RED
    assert raw.i32(o + raw.OBJ["unique_component_id"]) == 3
    assert f32(o, "trk_left") > 1000  # at car B's own box though: its track's
    batch.destroy()


@DS9
def test_follow_never_trusts_a_copied_rotation_angle_and_sets_the_tracks_own():
    standin, follow, batch, f1 = first_then_other(rotation=True)
    standin.update(batch)
    (info, obb), = readback.pairs(f1)
    assert obb.source == "rotation_angle" and obb.xywhr[4] == pytest.approx(0.3, abs=1e-4)  # the trap, unfollowed
    follow.update_batch(batch)
    (o,) = raw.objects_of(f1.address)
    (info, obb), = readback.pairs(f1)
    assert obb.source == "predicted" and obb.xywhr[4] == pytest.approx(-0.9, abs=1e-3)  # car B's own track
    # rotation mode: rect_params is drawn rotated by nvdsosd, now at car B's angle
    assert f32(o, "rotation_angle") == pytest.approx(math.degrees(obb.xywhr[4]), abs=1e-3)
    batch.destroy()


@DS9
def test_follow_clears_a_copied_rotation_angle_when_the_track_has_no_obb():
    standin, _, batch, f1 = first_then_other(rotation=True)
    standin.update(batch)
    follow = FollowTracker()  # knows neither track
    (result0, result1) = follow.update_batch(batch)
    assert result1.unknown == 1
    (o,) = raw.objects_of(f1.address)
    (info, obb), = readback.pairs(f1)
    assert f32(o, "rotation_angle") == 0.0 and obb.source == "aabb" and obb.xywhr[4] == 0.0
    batch.destroy()


def test_follow_leaves_rect_params_axis_aligned_when_the_detections_were():
    standin, follow, batch, f1 = first_then_other(rotation=False)
    standin.update(batch)
    follow.update_batch(batch)
    (o,) = raw.objects_of(f1.address)
    (info, obb), = readback.pairs(f1)
    assert obb.source == "predicted" and obb.xywhr[4] == pytest.approx(-0.9, abs=1e-3)
    if _core.get().layout.has_rotation_angle:
        assert f32(o, "rotation_angle") == 0.0
    assert colour(o, "border_color") == RED  # nvtracker's copy stays: only the angle is ever rewritten
    batch.destroy()


# ---------------------------------------------------------------- frame_num

def test_standin_overwrites_frame_num_with_the_batch_number_when_asked():
    for numbers, expect in (("stream", [100, 7, 55]), ("batch", [4, 4, 4])):
        standin = NvTrackerStandIn(frame_numbers=numbers)
        for _ in range(4):
            batch, _ = frames(3)
            standin.update(batch)
            batch.destroy()
        batch, fs = frames(3, [100, 7, 55])
        standin.update(batch)
        assert [raw.i32(f.address + raw.FRAME["frame_num"]) for f in fs] == expect
        batch.destroy()


def run_streams(frame_numbers, first_numbers):
    """Three streams batched, detection on every other batch; every object's OBB, per batch and stream."""
    standin, follow = NvTrackerStandIn(probation=1, frame_numbers=frame_numbers), FollowTracker(forget_after=3)
    seen = []
    for k in range(10):
        numbers = [n + (k if n >= 0 else 0) for n in first_numbers]
        batch, fs = frames(3, [max(n, 0) for n in numbers])
        if k % 2 == 0:  # detection ran; from batch 6 on it finds nothing, so the tracks end
            for s, f in enumerate(fs):
                detect(batch, f, CARS[:0] if k >= 6 else CARS + [4 * k + 200 * s, 50 * s, 0, 0, -0.2 * s])
        standin.update(batch)
        results = follow.update_batch(batch)
        seen.append(([(r.objects, r.measured, r.predicted, r.forgotten) for r in results],
                     [sorted((i.object_id, o.source, tuple(np.round(o.xywhr, 4))) for i, o in readback.pairs(f))
                      for f in fs]))
        batch.destroy()
    return seen


def test_follow_keys_nothing_on_frame_num():
    """The same detections give the same OBBs whether frame_num is each stream's own, nvtracker's batch count
    (the same for every frame of a batch) or never set at all (0 on every frame)."""
    own = run_streams("stream", [0, 500, 9000])
    assert own == run_streams("batch", [0, 500, 9000])
    assert own == run_streams("stream", [-1, -1, -1])
    assert sum(f for per_frame, _ in own for (_, _, _, f) in per_frame) == 9  # forgotten by its own count
