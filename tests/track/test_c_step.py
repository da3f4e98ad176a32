"""The tracker's C step (kernels/track_cpu.c) against its NumPy oracle (tests/track/reference_tracker.py) on seeded
multi-stream sequences and on hypothesis' scenes, under every setting that changes a rule: track ids, the boxes
and predictions each frame reports, and every track's state after each frame. The arithmetic is written in NumPy's
order, so results agree to the last bit but for the AABBs' cosines (libm against NumPy: an ulp): equal ids,
states within 1e-9 relative."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_tracker import ReferenceTracker
from test_step_many import sequence

from obbmeta.track import MotionNoise, OrientedTracker

SETTINGS = [
    {},
    {"association": "aabb"},
    {"class_aware": False, "buffer": 0.0},
    {"heading": True, "output_lost": 3},
    {"min_hits": 1, "max_age": 2, "output_lost": 1},
    {"min_hits": 3, "match_iou": 0.4, "low_match_iou": 0.3, "tentative_match_iou": 0.5, "buffer": 0.4},
    {"high_score": 0.3, "low_score": 0.3, "new_track_score": 0.3,
     "noise": MotionNoise(position=0.2, velocity=0.05, angle=0.3, angle_process=0.1, angle_velocity=0.01)},
]


def _same_state(tracker, ref):
    assert sorted(tracker._streams) == sorted(ref.streams)
    for src, mine in tracker._streams.items():
        theirs = ref.streams[src]
        for name in ("ids", "labels", "hits", "lost", "confirmed", "score"):
            np.testing.assert_array_equal(getattr(mine, name), getattr(theirs, name), err_msg=name)
        for name in ("mean", "velocity", "p00", "p01", "p11"):
            np.testing.assert_allclose(getattr(mine.kf, name), getattr(theirs, name), rtol=1e-9, atol=1e-9,
                                       err_msg=name)
        assert mine.detection_frames == theirs.frames
    assert tracker._next_id == ref.next_id


def _same_step(got, want):
    det_ids, det_boxes, pred_ids, pred_boxes, pred_labels, pred_scores = want
    np.testing.assert_array_equal(got.det_track_ids, det_ids)
    np.testing.assert_allclose(got.det_xywhr, det_boxes, rtol=1e-6, atol=1e-4)
    np.testing.assert_array_equal(got.pred_track_ids, pred_ids)
    np.testing.assert_allclose(got.pred_xywhr, pred_boxes, rtol=1e-6, atol=1e-4)
    np.testing.assert_array_equal(got.pred_labels, pred_labels)
    np.testing.assert_array_equal(got.pred_scores, pred_scores)


@pytest.mark.parametrize("options", SETTINGS, ids=lambda o: ",".join(o) or "defaults")
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_c_step_follows_the_numpy_rules_frame_after_frame(options, seed):
    tracker = OrientedTracker(**options)
    ref = ReferenceTracker(tracker)
    for f, row in enumerate(sequence(seed)):
        for src, (x, s, lab) in enumerate(row):
            detection = f % 7 != 3 or src % 2  # frames without detection (nvinfer's interval) in between
            got = tracker.step(x, s, lab, source_id=src, detection_done=bool(detection))
            _same_step(got, ref.step(x, s, lab, source_id=src, detection_done=bool(detection)))
        _same_state(tracker, ref)


box = st.tuples(st.floats(0, 300), st.floats(0, 300), st.floats(1, 80), st.floats(1, 80), st.floats(-7, 7))
frame = st.lists(st.tuples(box, st.sampled_from([0.05, 0.2, 0.5, 0.65, 0.9]), st.integers(0, 2)), max_size=12)


@settings(max_examples=150, deadline=None)
@given(st.lists(frame, min_size=1, max_size=6), st.sampled_from(SETTINGS))
def test_the_c_step_follows_the_numpy_rules_on_any_scene(frames, options):
    """Frames that jump anywhere: tracks born, matched across pi / pi/2 flips, missed and dropped."""
    tracker = OrientedTracker(**options)
    ref = ReferenceTracker(tracker)
    for detections in frames:
        x = np.array([b for b, _, _ in detections], np.float64).reshape(-1, 5)
        s = np.array([p for _, p, _ in detections], np.float64)
        lab = np.array([c for _, _, c in detections], np.int64)
        _same_step(tracker.step(x, s, lab), ref.step(x, s, lab))
        _same_state(tracker, ref)
        x2 = x + np.array([1.5, -1.0, 0.5, 0.0, 0.02])  # the same objects a frame later
        _same_step(tracker.step(x2, s, lab), ref.step(x2, s, lab))
        _same_state(tracker, ref)
