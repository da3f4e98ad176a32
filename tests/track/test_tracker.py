"""OrientedTracker on arrays and OrientedBoxes: ids, lifecycle, angle continuity, frames without detection, errors,
and (with motmetrics) fewer identity switches than AABB association on a dense scene."""
import math

import numpy as np
import pytest
import torch

from obbmeta import OrientedBoxes
from obbmeta.track import OrientedTracker

ROW = np.array([[100.0 + 26 * k * 0.707, 200.0 + 26 * k * 0.707, 46.0, 20.0, -math.pi / 4] for k in range(6)])


def frame(rows, scores=0.9, labels=0):
    rows = np.asarray(rows, np.float32).reshape(-1, 5)
    return OrientedBoxes(torch.from_numpy(rows), torch.full((len(rows),), float(scores)),
                         torch.full((len(rows),), labels, dtype=torch.int64))


def test_ids_stay_with_their_objects_and_the_first_frame_confirms():
    tracker = OrientedTracker()
    first = tracker.update(frame(ROW))
    assert first.track_ids.tolist() == [1, 2, 3, 4, 5, 6]
    for k in range(1, 10):
        out = tracker.update(frame(ROW + [k, 0.5 * k, 0, 0, 0]))
        assert out.track_ids.tolist() == [1, 2, 3, 4, 5, 6]


def test_a_new_object_is_reported_only_after_min_hits_frames():
    tracker = OrientedTracker(min_hits=3)
    tracker.update(frame(ROW[:2]))
    seen = [len(tracker.update(frame(ROW[:3]))) for _ in range(3)]
    assert seen == [2, 2, 3]


def test_flips_by_pi_and_swaps_in_the_detections_never_reach_the_output_angle():
    tracker = OrientedTracker()
    angles = []
    for k in range(12):
        det = ROW.copy()
        if k % 2:
            det[:, 4] += math.pi
        if k % 3 == 2:
            det[:, [2, 3]] = det[:, [3, 2]]
            det[:, 4] += math.pi / 2
        out = tracker.update(frame(det))
        assert out.track_ids.tolist() == [1, 2, 3, 4, 5, 6]
        angles.append(out.xywhr[:, 4].numpy())
        assert (out.xywhr[:, 2] > out.xywhr[:, 3]).all()
    assert np.abs(np.diff(np.array(angles), axis=0)).max() < 1e-3


def test_a_lost_track_comes_back_with_its_id_within_max_age_and_not_after():
    tracker = OrientedTracker(max_age=3)
    for _ in range(3):
        tracker.update(frame(ROW[:1]))
    for _ in range(3):
        assert len(tracker.update(frame(ROW[:0]))) == 0
    assert tracker.update(frame(ROW[:1])).track_ids.tolist() == [1]
    for _ in range(4):
        tracker.update(frame(ROW[:0]))
    tracker.update(frame(ROW[:1]))
    assert tracker.update(frame(ROW[:1])).track_ids.tolist() == [2]


def test_frames_without_detection_predict_every_track_and_do_not_age_it():
    tracker = OrientedTracker(max_age=1)
    for k in range(15):
        tracker.update(frame(ROW + [3 * k, 0, 0, 0, 0]))
    for _ in range(15, 21):
        out = tracker.update(None)
        assert out.track_ids.tolist() == [1, 2, 3, 4, 5, 6]
    np.testing.assert_allclose(out.xywhr[:, 0].numpy(), ROW[:, 0] + 60, atol=3.0)
    assert tracker.update(frame(ROW + [63, 0, 0, 0, 0])).track_ids.tolist() == [1, 2, 3, 4, 5, 6]


def test_output_lost_reports_missed_tracks_at_their_prediction_after_the_tracked_ones():
    tracker = OrientedTracker(output_lost=2)
    tracker.update(frame(ROW[:3]))
    out = tracker.update(frame(ROW[:2]))
    assert out.track_ids.tolist() == [1, 2, 3]
    assert tracker.last.pred_track_ids.tolist() == [3]


def test_low_score_detections_only_continue_tracks_and_classes_stay_apart():
    tracker = OrientedTracker()
    assert len(tracker.update(frame(ROW[:2], scores=0.3), source_id=1)) == 0
    assert tracker.num_tracks(1, confirmed=False) == 0
    tracker.update(frame(ROW[:2]))
    assert tracker.update(frame(ROW[:2], scores=0.3)).track_ids.tolist() == [1, 2]
    assert len(tracker.update(frame(ROW[:2], labels=1))) == 0  # not class 0's tracks: two new tentative ones
    assert tracker.num_tracks(0, confirmed=False) == 4


def test_streams_are_tracked_apart_and_ids_are_unique_across_them():
    tracker = OrientedTracker()
    a = tracker.update(frame(ROW[:2]), source_id=0)
    b = tracker.update(frame(ROW[:2]), source_id=1)
    assert a.track_ids.tolist() == [1, 2] and b.track_ids.tolist() == [3, 4]
    tracker.reset(0)
    assert tracker.num_tracks(0) == 0 and tracker.num_tracks(1) == 2


@pytest.mark.parametrize("kwargs, match", [
    (dict(association="obb"), "association must be one of"),
    (dict(match_iou=1.5), "match_iou must be a number in"),
    (dict(min_hits=0), "min_hits must be an int >= 1"),
    (dict(high_score=0.9, new_track_score=0.5), "low_score <= high_score <= new_track_score"),
    (dict(buffer=-1), "buffer must be a number"),
])
def test_bad_settings_are_refused_by_name(kwargs, match):
    with pytest.raises(ValueError, match=match):
        OrientedTracker(**kwargs)


def test_bad_detections_are_refused_before_any_state_changes():
    tracker = OrientedTracker()
    with pytest.raises(ValueError, match="finite"):
        tracker.step([[0, 0, 10, 10, np.nan]], [0.9], [0])
    with pytest.raises(ValueError, match="w > 0 and h > 0"):
        tracker.step([[0, 0, 0, 10, 0]], [0.9], [0])
    with pytest.raises(ValueError, match=r"shape \(1,\)"):
        tracker.step([[0, 0, 10, 10, 0]], [0.9, 0.8], [0])
    assert tracker.num_tracks(confirmed=False) == 0


def mot(seq, **kwargs):
    mm = pytest.importorskip("motmetrics")
    from obbmeta.ops import box_iou_rotated_host

    tracker = OrientedTracker(**kwargs)
    acc = mm.MOTAccumulator(auto_id=True)
    for fr in seq.frames:
        step = tracker.step(fr.det_xywhr, fr.det_scores, fr.det_labels)
        keep = step.det_track_ids >= 0
        iou = box_iou_rotated_host(fr.gt_xywhr, step.det_xywhr[keep])
        acc.update(fr.gt_ids.tolist(), step.det_track_ids[keep].tolist(), np.where(iou >= 0.5, 1 - iou, np.nan))
    return mm.metrics.create().compute(acc, metrics=["mota", "num_switches"])


def test_rotated_association_switches_identities_less_than_aabb_in_dense_rows():
    import tracking_scenes

    seq = tracking_scenes.make("moored_ships_50", seed=0, frames=120)
    rotated, aabb = mot(seq), mot(seq, association="aabb", buffer=0.0)
    assert int(rotated.num_switches.iloc[0]) * 2 <= int(aabb.num_switches.iloc[0])
    assert int(aabb.num_switches.iloc[0]) > 0
    assert float(rotated.mota.iloc[0]) >= float(aabb.mota.iloc[0]) - 0.005
