"""obbmeta.track on real NvDsBatchMeta: the nvtracker stand-in behaves as nvtracker is documented to, FollowTracker
gives every tracked object an OBB that follows the tracker's box, OrientedTracker.update_frame writes what
nvtracker writes. Everything read back through NVIDIA's library (read_obbs) and the tests' own offsets."""
import math

import numpy as np
import pytest
import readback
from nvds import raw
from nvtracker_standin import NvTrackerStandIn

from obbmeta import nvds
from obbmeta.track import FollowTracker, OrientedTracker

if not nvds.available():
    pytest.skip("NVIDIA's libnvds_meta is not available", allow_module_level=True)

W, H = 1920, 1080
CARS = np.array([[400.0 + 60 * k, 300.0 + 40 * k, 46.0, 20.0, 0.6] for k in range(4)], np.float32)


def frame_with(k, boxes=None, labels=None):
    batch = nvds.BatchMeta.create(1)
    frame = batch.add_frame(source_id=0, width=W, height=H, frame_num=k)
    if boxes is not None:
        nvds.attach_obbs(batch, frame, xywhr=np.asarray(boxes, np.float32),
                         scores=np.full(len(boxes), 0.9, np.float32),
                         labels=np.zeros(len(boxes), np.int64) if labels is None else labels,
                         class_names=["car", "ship"], component_id=3)
    return batch, frame


def by_id(frame):
    return {info.object_id: (info, obb) for info, obb in readback.pairs(frame)}


def test_standin_keeps_matched_metas_rewrites_rect_and_adds_bare_objects_on_skipped_frames():
    standin = NvTrackerStandIn()
    for k in range(2):
        batch, frame = frame_with(k, CARS + [5 * k, 0, 0, 0, 0])
        before = {info.address for info, _ in readback.pairs(frame)}
        standin.update_frame(batch, frame)
        after = readback.pairs(frame)
        if k == 0:  # tentative tracks: their objects are removed, as nvtracker removes untracked objects
            assert after == []
        else:
            assert {info.address for info, _ in after} == before  # the same metas, user meta kept
            for info, obb in after:
                assert info.tracked and obb.source == "user_meta" and info.tracker_bbox[2] > 0
                assert info.rect != pytest.approx(info.detector_bbox, abs=1e-3)  # the tracker's box, not the detector's
        batch.destroy()
    batch, frame = frame_with(2)  # nvinfer skipped this frame: bInferDone stays 0
    standin.update_frame(batch, frame)
    made = readback.pairs(frame)
    assert len(made) == 4
    for info, obb in made:
        assert info.tracked and info.confidence == pytest.approx(-0.1) and info.num_user_meta == 0
        assert obb.source == "aabb" and info.detector_bbox == (0, 0, 0, 0) and info.label == "car"
        assert info.component_id == 3
    batch.destroy()


def run_follow(detect_every=3, frames=12, flip=True, **kw):
    standin, follow = NvTrackerStandIn(probation=1), FollowTracker(**kw)
    seen = []
    for k in range(frames):
        det = None
        if k % detect_every == 0:
            det = CARS + [4 * k, 2 * k, 0, 0, 0]
            if flip and (k // detect_every) % 2:
                det[:, 4] -= math.pi  # a detector reporting the other description of the same boxes
                det[:, [2, 3]] = det[:, [3, 2]]
                det[:, 4] += math.pi / 2
        batch, frame = frame_with(k, det)
        standin.update_frame(batch, frame)
        result = follow.update_frame(batch, frame)
        seen.append((k, det is not None, result, by_id(frame)))
        batch.destroy()
    return follow, seen


def test_every_tracked_object_has_an_obb_on_every_frame_predicted_where_no_detection_was():
    _, seen = run_follow()
    for _k, detected, result, objs in seen:
        assert len(objs) == 4 and result.objects == 4
        for _info, obb in objs.values():
            assert obb.source == ("user_meta" if detected else "predicted")
            assert obb.flags & (nvds.OBB_TRACKED if detected else nvds.OBB_PREDICTED)


def test_the_obb_is_centred_on_the_trackers_box_and_the_angle_never_jumps():
    _, seen = run_follow()
    last = {}
    for _k, _detected, _, objs in seen:
        for oid, (info, obb) in objs.items():
            t = info.tracker_bbox
            assert obb.xywhr[:2] == pytest.approx((t[0] + t[2] / 2, t[1] + t[3] / 2), abs=1e-3)
            if oid in last:
                assert abs(obb.xywhr[4] - last[oid]) < 0.1  # detections flip by pi/2 with w/h swapped every 3 frames
            last[oid] = obb.xywhr[4]
            assert obb.xywhr[2] > obb.xywhr[3]


def test_a_heading_is_unwrapped_by_two_pi_only():
    follow, seen = run_follow(flip=False, heading=True)
    angles = {oid: obb.xywhr[4] for oid, (_, obb) in seen[-1][3].items()}
    assert all(abs(a - 0.6) < 0.05 for a in angles.values())


def test_track_state_is_dropped_after_forget_after_frames():
    follow, seen = run_follow(frames=4, forget_after=2)
    assert len(follow) == 4
    batch, frame = frame_with(10)
    r = [follow.update_frame(batch, frame) for _ in range(2)]
    assert len(follow) == 0 and sum(x.forgotten for x in r) == 4
    batch.destroy()
    follow.reset()


def test_oriented_tracker_on_metadata_writes_ids_removes_untracked_and_adds_predictions():
    tracker = OrientedTracker(min_hits=2)
    batch, frame = frame_with(0, CARS)
    res = tracker.update_frame(batch, frame)
    assert res.tracked == 4 and res.removed == 0
    objs = by_id(frame)
    assert sorted(objs) == [1, 2, 3, 4]
    for info, obb in objs.values():
        assert obb.flags & nvds.OBB_TRACKED and info.tracker_confidence == pytest.approx(0.9)
        x1, y1 = info.tracker_bbox[:2]
        assert info.rect[:2] == pytest.approx((max(x1, 0), max(y1, 0)), abs=1e-3)
    batch.destroy()
    batch, frame = frame_with(1, np.concatenate([CARS, [[1500, 900, 40, 18, 0.2]]]))
    res = tracker.update_frame(batch, frame)
    assert (res.tracked, res.removed) == (4, 1)  # the new object is tentative: removed, like nvtracker does
    batch.destroy()
    batch, frame = frame_with(2)
    res = tracker.update_frame(batch, frame)
    assert res.added == 4 and not frame.infer_done
    for _oid, (info, obb) in by_id(frame).items():
        assert obb.source == "predicted" and info.confidence == pytest.approx(-0.1)
        assert info.label == "car" and info.component_id == 3 and info.detector_bbox == (0, 0, 0, 0)
    live = nvds.live_payloads()
    batch.destroy()
    assert nvds.live_payloads() == live - 4


def test_predicted_objects_of_two_detectors_carry_each_ones_component_id_and_leave_binferdone():
    """Tracks of classes last seen from two detectors (component ids 3 and 8) reported on a frame without detection:
    every new object has its class's component id, a zeroed detector_bbox_info and the predicted box of its own
    track; bInferDone stays 0. Read back with the tests' own offsets on NVIDIA's lists."""
    tracker = OrientedTracker(min_hits=1)
    for k in range(2):
        batch, frame = frame_with(k)
        nvds.attach_obbs(batch, frame, xywhr=CARS[:2] + [8.0 * k, 0, 0, 0, 0], labels=np.zeros(2, np.int64),
                         class_names=["car", "ship"], component_id=3)
        nvds.attach_obbs(batch, frame, xywhr=CARS[2:] + [8.0 * k, 0, 0, 0, 0], labels=np.ones(2, np.int64),
                         class_names=["car", "ship"], component_id=8)
        tracker.update_frame(batch, frame)
        batch.destroy()
    batch, frame = frame_with(2)
    res = tracker.update_frame(batch, frame)
    assert res.added == 4 and raw.i32(frame.address + raw.FRAME["bInferDone"]) == 0
    step = res.step
    predicted = {int(t): step.pred_xywhr[i] for i, t in enumerate(step.pred_track_ids)}
    objs = raw.objects_of(frame.address)
    assert len(objs) == 4
    for o in objs:
        cls = raw.i32(o + raw.OBJ["class_id"])
        assert raw.i32(o + raw.OBJ["unique_component_id"]) == (3 if cls == 0 else 8)
        assert [raw.f32(o + raw.OBJ[f"det_{k}"]) for k in ("left", "top", "width", "height")] == [0, 0, 0, 0]
        assert raw.f32(o + raw.OBJ["confidence"]) == pytest.approx(-0.1)
        (um,) = raw.user_metas_of(o)
        payload = raw.ptr(um + raw.USER["user_meta_data"])
        xywhr = [raw.f32(payload + raw.PAYLOAD[k]) for k in ("cx", "cy", "w", "h", "angle")]
        assert xywhr == pytest.approx(predicted[raw.u64(o + raw.OBJ["object_id"])].tolist(), abs=1e-4)
    batch.destroy()
