"""Per-frame cost of obbmeta.track for 100 and 500 objects on one CPU core.

Scenes: 100 cars (40-50 x 18-21 px) parked in 5 rows of 20 at 45 degrees; 500 cars (the density of the aerial
scenes of pipeline_streams.py, 350-570 objects per 1080p frame) on a 25 x 20 grid over the frame, each at 45
degrees. Detections jittered every frame (position 1.5 px, size 4 %, angle 2 degrees), the camera panning 1
px/frame; the trackers run 30 frames before timing (steady state: every car a confirmed track). Timed per frame,
median over ``FRAMES`` frames, each case repeated:

* ``OrientedTracker.step`` (NumPy arrays in and out), rotated association (the default) and AABB association;
  beside it, in the same run, ``step_numpy_reference``: the same rules written with NumPy
  (tests/track/reference_tracker.py: the tracker's step before it moved to C, now the oracle of its tests);
* ``OrientedTracker.update`` (``OrientedBoxes`` in and out, CPU tensors);
* ``OrientedTracker.update_frame`` on a real NvDsBatchMeta (read the frame, track, write object_id / rect_params /
  tracker_bbox_info / OBB payloads in one C call); the frame is written by ``attach_obbs`` outside the timer;
* ``FollowTracker.update_frame`` after ``NvTrackerStandIn`` (stand-in outside the timer; 100 tracked objects);
* per batch of 16 streams (a DeepStream batch, each stream its own scene, written in one ``attach_obbs_batch`` as
  obbinfer writes it): ``OrientedTracker.update_batch`` (one read, step, update and removal call for the batch)
  against ``update_frame`` frame after frame (the same results, tested), 10 warm-up batches, ``FRAMES / 5`` timed;
  and ``update_batch`` with a third of the detections below ``high_score``, removed every frame;
* anchor, same run: ``nvds.attach_obbs`` of the same boxes into a fresh frame (the cost of writing a frame's
  detections, benchmarks/meta_write.py);
* per batch of 16 streams written in one call: ``remove_objects_batch`` of the detections below 0.5 (what the tracker
  drops: each frame's last written, its newest) against as many removed at random from the same kind of batch (the
  anchor).

The process is pinned to one core. Usage: python benchmarks/tracking_cost.py [--quick] [--objects 100,500]
-> benchmarks/results/tracking_cost.json
"""
from __future__ import annotations

import math
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _common import arguments, write_json  # noqa: E402
from nvtracker_standin import NvTrackerStandIn  # noqa: E402  (a test double: tests/)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "track"))
from reference_tracker import ReferenceTracker  # noqa: E402  (the C step's NumPy oracle: tests/track/)

from obbmeta import OrientedBoxes, nvds  # noqa: E402
from obbmeta.track import FollowTracker, OrientedTracker  # noqa: E402

W, H = 1920, 1080
N = 100


def scene(frames: int, seed: int = 0, n: int = N) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """100: five dense rows of 20 at 45 degrees; any other n: a (n / 20) x 20 grid over the frame."""
    rng = np.random.default_rng(seed)
    a = math.radians(45.0)
    u, v = np.array([math.cos(a), math.sin(a)]), np.array([-math.sin(a), math.cos(a)])
    if n == 100:
        base = np.array([W / 2, H / 2]) - 2 * 95 * u - 9.5 * 26 * v
        centres = [base + r * 95 * u + k * 26 * v for r in range(5) for k in range(20)]
    else:
        cols = n // 20
        centres = [np.array([(c + 0.5) * (W - 60) / cols, (r + 0.5) * (H - 40) / 20]) for r in range(20)
                   for c in range(cols)]
    gt = np.array([[*xy, rng.uniform(40, 50), rng.uniform(18, 21), a] for xy in centres])
    k = len(gt)
    out = []
    for f in range(frames):
        d = gt.copy()
        d[:, 0] += f * 1.0
        d[:, :2] += rng.normal(0, 1.5, (k, 2))
        d[:, 2:4] *= 1 + rng.normal(0, 0.04, (k, 2))
        d[:, 4] += rng.normal(0, math.radians(2.0), k)
        out.append((d.astype(np.float32), rng.uniform(0.6, 0.95, k).astype(np.float32), np.zeros(k, np.int64)))
    return out


def per_frame(run_frame, frames, warmup: int) -> list[float]:
    """Median-able list of per-frame seconds of run_frame(k, frame) after `warmup` untimed frames."""
    times = []
    for k, fr in enumerate(frames):
        t = run_frame(k, fr)
        if k >= warmup:
            times.append(t)
    return times


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def case_step(frames, warmup, association):
    tracker = OrientedTracker(association, **({"buffer": 0.0} if association == "aabb" else {}))
    return per_frame(lambda k, fr: timed(lambda: tracker.step(*fr)), frames, warmup)


def case_reference_step(frames, warmup):
    reference = ReferenceTracker(OrientedTracker())
    return per_frame(lambda k, fr: timed(lambda: reference.step(*fr)), frames, warmup)


def case_update(frames, warmup):
    tracker = OrientedTracker()
    boxes = [OrientedBoxes(torch.from_numpy(x), torch.from_numpy(s), torch.from_numpy(lab)) for x, s, lab in frames]
    return per_frame(lambda k, fr: timed(lambda: tracker.update(boxes[k])), frames, warmup)


def _frame_with(k, fr):
    batch = nvds.BatchMeta.create(1)
    frame = batch.add_frame(source_id=0, width=W, height=H, frame_num=k)
    nvds.attach_obbs(batch, frame, xywhr=fr[0], scores=fr[1], labels=fr[2])
    return batch, frame


def batch_of(frames: list, frame_num: int):
    """A real NvDsBatchMeta with one frame per stream, ``frames[k]`` = stream k's (xywhr, scores, labels), written
    by one ``attach_obbs_batch`` call as obbinfer writes a muxed 1080p batch."""
    batch = nvds.BatchMeta.create(len(frames))
    fs = [batch.add_frame(source_id=k, width=W, height=H, frame_num=frame_num) for k in range(len(frames))]
    nvds.attach_obbs_batch(batch, frames, frames=fs)
    return batch


def case_removal(n: int, streams: int, batches: int, chosen: str) -> list[float]:
    """Per batch: ``remove_objects_batch`` of the detections below 0.5 (``chosen="least_confident"``: what a tracker
    drops) or of as many chosen at random (``"random"``, the anchor) from a batch of ``streams`` frames of ``n``
    detections (scores uniform in 0.3 - 0.95, by descending score as a detector gives them), written in one call."""
    rng = np.random.default_rng(1)
    times = []
    for f in range(batches):
        frames = []
        for k in range(streams):
            x, _, lab = scene(1, seed=k, n=n)[0]
            s = np.sort(rng.uniform(0.3, 0.95, len(x)).astype(np.float32))[::-1].copy()
            frames.append((x, s, lab))
        batch = batch_of(frames, f)
        objs, offsets = nvds.read_boxes_batch(batch)
        drop = objs.scores < 0.5
        if chosen == "random":
            drop = rng.permutation(drop)
        gone = [(fr, objs["address"][offsets[k]:offsets[k + 1]][drop[offsets[k]:offsets[k + 1]]])
                for k, fr in enumerate(batch.frames)]
        times.append(timed(lambda: nvds.remove_objects_batch(batch, gone)))
        batch.destroy()
    return times


def case_update_frame(frames, warmup):
    tracker = OrientedTracker()

    def run(k, fr):
        batch, frame = _frame_with(k, fr)
        t = timed(lambda: tracker.update_frame(batch, frame))
        batch.destroy()
        return t
    return per_frame(run, frames, warmup)


def case_batch(n: int, streams: int, warmup: int, timed_frames: int, batched: bool,
               low: bool = False) -> list[float]:
    """Per batch: ``update_batch`` of a batch of ``streams`` frames (one per stream, each its own scene seed), the
    batched step (``step_many``) or frame after frame (``update_frame``); frames written outside the timer.
    ``low``: scores uniform in 0.3 - 0.95 (by descending score, as a detector gives them), so about a third of each
    frame's detections are below ``high_score`` and removed every frame, as in the aerial chain."""
    scenes = [scene(warmup + timed_frames, seed=k, n=n) for k in range(streams)]
    if low:
        rng = np.random.default_rng(2)
        for frames in scenes:
            for _, s, _ in frames:
                s[:] = np.sort(rng.uniform(0.3, 0.95, len(s)))[::-1]
    tracker = OrientedTracker()
    times = []
    for f in range(warmup + timed_frames):
        batch = batch_of([scenes[k][f] for k in range(streams)], f)
        if batched:
            t = timed(lambda: tracker.update_batch(batch))
        else:
            t = timed(lambda: [tracker.update_frame(batch, fr) for fr in batch.frames])
        batch.destroy()
        if f >= warmup:
            times.append(t)
    return times


def case_follow(frames, warmup):
    standin, follow = NvTrackerStandIn(probation=1), FollowTracker()
    counts = []

    def run(k, fr):
        batch, frame = _frame_with(k, fr)
        standin.update_frame(batch, frame)
        t = timed(lambda: counts.append(follow.update_frame(batch, frame).objects))
        batch.destroy()
        return t
    times = per_frame(run, frames, warmup)
    return times, statistics.median(counts[warmup:])


def case_anchor(frames, warmup):
    def run(k, fr):
        batch = nvds.BatchMeta.create(1)
        frame = batch.add_frame(source_id=0, width=W, height=H, frame_num=k)
        t = timed(lambda: nvds.attach_obbs(batch, frame, xywhr=fr[0], scores=fr[1], labels=fr[2]))
        batch.destroy()
        return t
    return per_frame(run, frames, warmup)


def summary(times: list[float]) -> dict:
    return {"median_ms": round(statistics.median(times) * 1e3, 4),
            "p90_ms": round(float(np.percentile(times, 90)) * 1e3, 4),
            "frames": len(times)}


def main() -> None:
    parser = arguments(__doc__, quick=True)
    parser.add_argument("--objects", default="100,500", help="comma-separated objects per frame")
    args = parser.parse_args()
    try:
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    except (AttributeError, OSError):
        pass
    torch.set_num_threads(1)
    warmup, timed_frames, repeats = 30, (50 if args.quick else 300), (1 if args.quick else 3)
    by_objects = []
    for n in (int(x) for x in args.objects.split(",")):
        by_objects.append(measure(n, warmup, timed_frames, repeats))
    batches = {}
    for n in (int(x) for x in args.objects.split(",")):
        for name, batched, low in (("update_batch_16_streams", True, False), ("update_frame_16_streams", False, False),
                                   ("update_batch_16_streams_a_third_removed", True, True)):
            runs = [summary(case_batch(n, 16, 10, timed_frames // 5, batched, low)) for _ in range(repeats)]
            batches.setdefault(str(n), {})[name] = {"median_ms_per_batch": statistics.median(
                r["median_ms"] for r in runs), "runs": runs}
            print(f"{n:4} objects  {name:28} {batches[str(n)][name]['median_ms_per_batch']:.3f} ms/batch", flush=True)
    removal = {}
    for n in (int(x) for x in args.objects.split(",")):
        for chosen in ("least_confident", "random"):
            runs = [summary(case_removal(n, 16, timed_frames // 10, chosen)) for _ in range(repeats)]
            removal.setdefault(str(n), {})[chosen] = {"median_ms_per_batch": statistics.median(
                r["median_ms"] for r in runs), "runs": runs}
            print(f"{n:4} objects  removal {chosen:20} {removal[str(n)][chosen]['median_ms_per_batch']:.3f} ms/batch",
                  flush=True)
    payload = {"warmup_frames": warmup, "timed_frames": timed_frames, "repeats": repeats, "pinned_to_one_core": True,
               "by_objects": by_objects, "batches_of_16_streams": batches, "removal_of_16_streams": removal}
    if not args.quick:
        print(write_json("tracking_cost", payload))


def measure(n: int, warmup: int, timed_frames: int, repeats: int) -> dict:
    frames = scene(warmup + timed_frames, n=n)
    cases = {"step_rotated": lambda: case_step(frames, warmup, "rotated"),
             "step_aabb": lambda: case_step(frames, warmup, "aabb"),
             "step_numpy_reference": lambda: case_reference_step(frames, warmup),
             "update_orientedboxes": lambda: case_update(frames, warmup),
             "update_frame_nvds": lambda: case_update_frame(frames, warmup),
             "follow_update_frame_nvds": lambda: case_follow(frames, warmup)[0],
             "anchor_attach_obbs": lambda: case_anchor(frames, warmup)}
    results = {}
    for name, fn in cases.items():
        runs = [summary(fn()) for _ in range(repeats)]
        results[name] = {"median_ms": statistics.median(r["median_ms"] for r in runs), "runs": runs}
        print(f"{n:4} objects  {name:28} {results[name]['median_ms']:.3f} ms/frame", flush=True)
    anchor = results["anchor_attach_obbs"]["median_ms"]
    for r in results.values():
        r["x_anchor"] = round(r["median_ms"] / anchor, 2)
    _, tracked = case_follow(frames[:warmup + 5], warmup)
    return {"objects_per_frame": n, "tracked_objects_after_standin": tracked, "cases": results}


if __name__ == "__main__":
    main()
