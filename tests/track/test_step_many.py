"""OrientedTracker.step_many and the batched update_batch: the same track ids, boxes, predictions and states as
frame after frame, on seeded multi-stream sequences (births, deaths, misses, low scores, classes, shared ids)."""
from __future__ import annotations

import numpy as np
import pytest

from obbmeta import nvds
from obbmeta.track import OrientedTracker

STREAMS, FRAMES = 5, 40


def sequence(seed: int, streams: int = STREAMS, frames: int = FRAMES):
    """Per frame, per stream: (x (D, 5), scores (D,), labels (D,)); cars that drift, leave, come back, overlap."""
    rng = np.random.default_rng(seed)
    worlds = []
    for _ in range(streams):
        n = int(rng.integers(0, 25))
        worlds.append(np.c_[rng.uniform(50, 600, (n, 2)), rng.uniform(15, 60, n), rng.uniform(8, 25, n),
                            rng.uniform(-3, 3, n)])
    out = []
    for f in range(frames):
        row = []
        for k, w in enumerate(worlds):
            moved = w.copy()
            moved[:, 0] += f * (1.5 + k)
            moved[:, :2] += rng.normal(0, 1.2, (len(w), 2))
            moved[:, 4] += rng.normal(0, 0.05, len(w))
            keep = rng.uniform(0, 1, len(w)) > 0.15  # misses
            extra = rng.integers(0, 3)  # clutter that starts tentative tracks
            x = np.r_[moved[keep], np.c_[rng.uniform(0, 600, (extra, 2)), rng.uniform(10, 40, (extra, 2)),
                                         rng.uniform(-3, 3, extra)]]
            scores = rng.choice([0.05, 0.3, 0.55, 0.7, 0.95], len(x))
            labels = rng.integers(0, 3, len(x))
            row.append((x, scores, labels))
        out.append(row)
    return out


def same(a, b):
    for name in ("det_track_ids", "det_xywhr", "pred_track_ids", "pred_xywhr", "pred_labels", "pred_scores"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("kwargs", [{}, {"association": "aabb", "buffer": 0.0}, {"min_hits": 1, "output_lost": 3},
                                    {"class_aware": False, "max_age": 2}])
@pytest.mark.parametrize("threads", [1, 3, 16])
def test_step_many_is_step_frame_after_frame(seed, kwargs, threads):
    """Whatever the threads a batch's streams are spread over: the ids are those frame after frame would give."""
    one, many = OrientedTracker(**kwargs), OrientedTracker(**kwargs, threads=threads)
    sources = [7, 2, 11, 0, 5]  # not in order: ids follow the batch's order, as frame after frame does
    for frame in sequence(seed):
        want = [one.step(x, s, lab, source_id=src) for src, (x, s, lab) in zip(sources, frame)]
        got = many.step_many([(src, x, s, lab) for src, (x, s, lab) in zip(sources, frame)])
        for a, b in zip(want, got):
            same(a, b)
        same(one.last, many.last)
    assert one._next_id == many._next_id and one.num_tracks(confirmed=False) == many.num_tracks(confirmed=False)
    for src in sources:
        a, b = one._streams[src], many._streams[src]
        np.testing.assert_array_equal(a.ids, b.ids)
        np.testing.assert_array_equal(a.kf.mean, b.kf.mean)
        np.testing.assert_array_equal(a.kf.p01, b.kf.p01)


def test_threads_must_be_a_positive_count():
    with pytest.raises(ValueError, match="threads"):
        OrientedTracker(threads=0)
    with pytest.raises(ValueError, match="threads"):
        OrientedTracker(threads=2.5)


def test_step_many_refuses_a_stream_twice_and_bad_frames_by_name():
    t = OrientedTracker()
    none = (np.zeros((0, 5)), np.zeros(0), np.zeros(0, np.int64))
    with pytest.raises(ValueError, match=r"one frame per stream, got source ids \[1, 1\]"):
        t.step_many([(1, *none), (1, *none)])
    with pytest.raises(ValueError, match="xywhr and scores must be finite"):
        t.step_many([(1, [[0, 0, 1, 1, np.nan]], [0.9], [0]), (2, *none)])
    assert t.num_tracks(confirmed=False) == 0 and not t._streams  # refused before any state changed


@pytest.mark.skipif(not nvds.available(), reason="NVIDIA's libnvds_meta is not available")
@pytest.mark.parametrize("seed", range(3))
def test_update_batch_of_a_muxed_batch_writes_what_frame_after_frame_writes(seed, monkeypatch):
    """Read back through NVIDIA's lists: object ids, rect_params and OBBs of every frame, and what was added and
    removed, equal for the batched path and update_frame on each frame."""
    seq = sequence(seed, streams=4, frames=25)
    one, many = OrientedTracker(output_lost=2), OrientedTracker(output_lost=2)
    batched = []
    streams_step = many._streams_step  # the one C call of a batch's streams
    monkeypatch.setattr(many, "_streams_step",
                        lambda params, sources, *rest: batched.append(len(sources)) or streams_step(params, sources,
                                                                                                   *rest))

    def batch_of(frame, k):
        b = nvds.BatchMeta.create(len(frame))
        for src, (x, s, lab) in enumerate(frame):
            f = b.add_frame(source_id=src, width=640, height=480, frame_num=k)
            nvds.attach_obbs(b, f, xywhr=x.astype(np.float32), scores=s.astype(np.float32), labels=lab,
                             class_names=["car", "van", "bus"])
        return b

    def seen(b):
        out = []
        for f in b.frames:
            t = nvds.read_boxes(f)
            out.append(sorted(zip(t["object_id"].tolist(), np.round(t["rect"], 3).tolist(),
                                  np.round(t.xywhr, 3).tolist(), t.scores.tolist())))
        return out

    for k, frame in enumerate(seq):
        a, b = batch_of(frame, k), batch_of(frame, k)
        ra = [one.update_frame(a, f, frame_size=(640, 480)) for f in a.frames]
        rb = many.update_batch(b, frame_size=(640, 480))
        assert [(r.tracked, r.removed, r.added) for r in ra] == [(r.tracked, r.removed, r.added) for r in rb]
        assert seen(a) == seen(b)
        a.destroy()
        b.destroy()
    assert batched == [4] * len(seq)  # every batch went through one batched step
    assert many.num_tracks() > 0
