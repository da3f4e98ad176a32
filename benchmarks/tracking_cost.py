"""Per-frame cost of obbmeta.track for 100 objects on one CPU core.

Scene: 100 cars (40-50 x 18-21 px) parked in 5 rows of 20 at 45 degrees, detections jittered every frame (position
1.5 px, size 4 %, angle 2 degrees), the camera panning 1 px/frame; the trackers run 30 frames before timing (steady
state: 100 confirmed tracks). Timed per frame, median over ``FRAMES`` frames, each case repeated:

* ``OrientedTracker.step`` (NumPy arrays in and out), rotated association (the default) and AABB association;
* ``OrientedTracker.update`` (``OrientedBoxes`` in and out, CPU tensors);
* ``OrientedTracker.update_frame`` on a real NvDsBatchMeta (read the frame, track, write object_id / rect_params /
  tracker_bbox_info / OBB payloads in one C call); the frame is written by ``attach_obbs`` outside the timer;
* ``FollowTracker.update_frame`` after ``NvTrackerStandIn`` (stand-in outside the timer; 100 tracked objects);
* anchor, same run: ``nvds.attach_obbs`` of the same 100 boxes into a fresh frame (the cost of writing a frame's
  detections, benchmarks/meta_write.py).

The process is pinned to one core. Usage: python benchmarks/tracking_cost.py [--quick]
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
from _common import arguments, write_json  # noqa: E402

from obbmeta import OrientedBoxes, nvds  # noqa: E402
from obbmeta.testing import NvTrackerStandIn  # noqa: E402
from obbmeta.track import FollowTracker, OrientedTracker  # noqa: E402

W, H = 1920, 1080
N = 100


def scene(frames: int, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    a = math.radians(45.0)
    u, v = np.array([math.cos(a), math.sin(a)]), np.array([-math.sin(a), math.cos(a)])
    base = np.array([W / 2, H / 2]) - 2 * 95 * u - 9.5 * 26 * v
    gt = np.array([[*(base + r * 95 * u + k * 26 * v), rng.uniform(40, 50), rng.uniform(18, 21), a]
                   for r in range(5) for k in range(20)])
    out = []
    for f in range(frames):
        d = gt.copy()
        d[:, 0] += f * 1.0
        d[:, :2] += rng.normal(0, 1.5, (N, 2))
        d[:, 2:4] *= 1 + rng.normal(0, 0.04, (N, 2))
        d[:, 4] += rng.normal(0, math.radians(2.0), N)
        out.append((d.astype(np.float32), rng.uniform(0.6, 0.95, N).astype(np.float32), np.zeros(N, np.int64)))
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


def case_update(frames, warmup):
    tracker = OrientedTracker()
    boxes = [OrientedBoxes(torch.from_numpy(x), torch.from_numpy(s), torch.from_numpy(lab)) for x, s, lab in frames]
    return per_frame(lambda k, fr: timed(lambda: tracker.update(boxes[k])), frames, warmup)


def _frame_with(k, fr):
    batch = nvds.BatchMeta.create(1)
    frame = batch.add_frame(source_id=0, width=W, height=H, frame_num=k)
    nvds.attach_obbs(batch, frame, xywhr=fr[0], scores=fr[1], labels=fr[2])
    return batch, frame


def case_update_frame(frames, warmup):
    tracker = OrientedTracker()

    def run(k, fr):
        batch, frame = _frame_with(k, fr)
        t = timed(lambda: tracker.update_frame(batch, frame))
        batch.destroy()
        return t
    return per_frame(run, frames, warmup)


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
    args = parser.parse_args()
    try:
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    except (AttributeError, OSError):
        pass
    torch.set_num_threads(1)
    warmup, timed_frames, repeats = 30, (50 if args.quick else 300), (1 if args.quick else 3)
    frames = scene(warmup + timed_frames)
    cases = {"step_rotated": lambda: case_step(frames, warmup, "rotated"),
             "step_aabb": lambda: case_step(frames, warmup, "aabb"),
             "update_orientedboxes": lambda: case_update(frames, warmup),
             "update_frame_nvds": lambda: case_update_frame(frames, warmup),
             "follow_update_frame_nvds": lambda: case_follow(frames, warmup)[0],
             "anchor_attach_obbs_100": lambda: case_anchor(frames, warmup)}
    results = {}
    for name, fn in cases.items():
        runs = [summary(fn()) for _ in range(repeats)]
        results[name] = {"median_ms": statistics.median(r["median_ms"] for r in runs), "runs": runs}
        print(f"{name:28} {results[name]['median_ms']:.3f} ms/frame", flush=True)
    anchor = results["anchor_attach_obbs_100"]["median_ms"]
    for r in results.values():
        r["x_anchor"] = round(r["median_ms"] / anchor, 2)
    _, tracked = case_follow(frames[:warmup + 5], warmup)
    payload = {"objects_per_frame": N, "tracked_objects_after_standin": tracked, "warmup_frames": warmup,
               "timed_frames": timed_frames, "repeats": repeats, "pinned_to_one_core": True, "cases": results}
    if not args.quick:
        print(write_json("tracking_cost", payload))


if __name__ == "__main__":
    main()
