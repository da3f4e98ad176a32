"""Tracking quality of oriented objects: association by AABB IoU vs obbmeta's rotated association, and what
FollowTracker gives every object after an nvtracker stand-in.

1. MOT metrics (``motmetrics``, MOTA / IDF1 / ID switches; ground truth matched to tracker output by the exact
   rotated IoU >= 0.5, the same for both methods) on the seeded sequences of ``tracking_scenes.py`` (5 seeds per
   scene, 150 frames each, metrics over all seeds). Both methods are the same ``OrientedTracker`` (ByteTrack-style
   stages, the same Kalman filter, thresholds and detections); only the overlap used for matching differs:

   * ``aabb_iou``: IoU of the tight axis-aligned boxes, no buffer — what nvtracker's IOU association sees of
     oriented objects (it is given ``rect_params``);
   * ``obbmeta``: exact rotated IoU of the boxes with the size-scaled buffer (``OrientedTracker`` defaults).

   An ablation in the same run: rotated IoU without buffer, and AABB IoU with the same buffer.
2. Follow the tracker: detections written into real NvDsBatchMeta frames with ``attach_obbs`` on every third frame
   (nvinfer ``interval=2``), ``NvTrackerStandIn`` (a stand-in for nvtracker's metadata behaviour, not nvtracker),
   then ``FollowTracker``; read back with ``read_boxes``: does every tracked object have an OBB, the IoU with ground
   truth on the skipped frames (FollowTracker's predicted OBB vs the tracker box as a 0-degree box, which is what
   read_boxes gives without it, vs the track's last detector OBB left where it was), and the largest angle change
   between consecutive frames of a track (FollowTracker vs the detector's raw angles).

Usage: python benchmarks/tracking.py [--quick | --plot-only]  -> benchmarks/results/tracking.{json,png}
"""
from __future__ import annotations

import json
import sys
import time
import warnings
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import tracking_scenes as scenes  # noqa: E402
from _common import RESULTS, arguments, write_json  # noqa: E402
from nvtracker_standin import NvTrackerStandIn  # noqa: E402  (a test double: tests/)

from obbmeta import nvds  # noqa: E402
from obbmeta.nvds.layouts import SOURCE_PREDICTED, SOURCE_USER_META  # noqa: E402
from obbmeta.ops import box_iou_rotated_host  # noqa: E402
from obbmeta.track import FollowTracker, OrientedTracker  # noqa: E402

METHODS = {"aabb_iou": dict(association="aabb", buffer=0.0), "obbmeta": dict(association="rotated")}
ABLATION = {"rotated_no_buffer": dict(association="rotated", buffer=0.0),
            "aabb_with_buffer": dict(association="aabb", buffer=OrientedTracker().buffer)}
MATCH_IOU = 0.5  # ground truth <-> output for the metrics


def accumulate(seq: scenes.Sequence, **tracker_kwargs):
    import motmetrics as mm

    tracker = OrientedTracker(**tracker_kwargs)
    acc = mm.MOTAccumulator(auto_id=True)
    for fr in seq.frames:
        step = tracker.step(fr.det_xywhr, fr.det_scores, fr.det_labels)
        out = step.det_track_ids >= 0
        hyp, boxes = step.det_track_ids[out], step.det_xywhr[out]
        dist = np.full((fr.gt_ids.size, hyp.size), np.nan)
        if fr.gt_ids.size and hyp.size:
            iou = box_iou_rotated_host(fr.gt_xywhr, boxes)
            dist = np.where(iou >= MATCH_IOU, 1.0 - iou, np.nan)
        acc.update(fr.gt_ids.tolist(), hyp.tolist(), dist)
    return acc


def mot_rows(seeds: list[int], frames: int) -> tuple[list[dict], list[dict]]:
    import motmetrics as mm

    mh = mm.metrics.create()
    rows, ablation = [], []
    for name, (dense, *_rest) in scenes.SCENES.items():
        seqs = [scenes.make(name, s, frames=frames) for s in seeds]
        for table, methods in ((rows, METHODS), (ablation, ABLATION)):
            for method, kwargs in methods.items():
                t0 = time.perf_counter()
                accs = [accumulate(q, **kwargs) for q in seqs]
                summary = mh.compute_many(accs, metrics=["mota", "idf1", "num_switches", "num_false_positives",
                                                         "num_misses", "num_objects"], generate_overall=True)
                o = summary.loc["OVERALL"]
                table.append({"scene": name, "dense": dense, "method": method, "mota": round(float(o.mota), 4),
                              "idf1": round(float(o.idf1), 4), "id_switches": int(o.num_switches),
                              "false_positives": int(o.num_false_positives), "misses": int(o.num_misses),
                              "gt_boxes": int(o.num_objects), "seconds": round(time.perf_counter() - t0, 2)})
                print(f"{name:18} {method:18} MOTA {o.mota:.3f} IDF1 {o.idf1:.3f} IDSW {int(o.num_switches)}",
                      flush=True)
    return rows, ablation


def follow_scene(name: str, seed: int, frames: int, interval: int) -> dict:
    """Detections on every (interval + 1)-th frame -> attach_obbs -> NvTrackerStandIn -> FollowTracker."""
    seq = scenes.make(name, seed, frames=frames)
    standin, follow = NvTrackerStandIn(), FollowTracker()
    votes: dict[int, Counter] = defaultdict(Counter)
    last_detector: dict[int, np.ndarray] = {}
    objects = with_obb = 0
    ious = {"follow": [], "aabb_0deg": [], "stale_detector_obb": []}
    angles_out: dict[int, list] = defaultdict(list)
    angles_det: dict[int, list] = defaultdict(list)
    skipped_frames = 0
    for k, fr in enumerate(seq.frames):
        detect = k % (interval + 1) == 0
        batch = nvds.BatchMeta.create(1)
        frame = batch.add_frame(source_id=0, width=seq.width, height=seq.height, frame_num=k)
        address_to_det = {}
        if detect:
            res = nvds.attach_obbs(batch, frame, xywhr=fr.det_xywhr, scores=fr.det_scores, labels=fr.det_labels)
            for d in np.flatnonzero(res.written_mask).tolist():  # the object written for each detection
                address_to_det[int(res.addresses[d])] = d
        else:
            skipped_frames += 1
        standin.update_frame(batch, frame)
        before = nvds.read_boxes(frame)  # what read_boxes gives before following
        raw = dict(zip(before["address"].tolist(), before.xywhr.tolist()))
        follow.update_frame(batch, frame)
        gt = {int(i): b for i, b in zip(fr.gt_ids.tolist(), fr.gt_xywhr)}
        after = nvds.read_boxes(frame)
        for address, tid, xywhr, source, tracked in zip(after["address"].tolist(), after["object_id"].tolist(),
                                                        after.xywhr.tolist(), after["source"].tolist(),
                                                        nvds.is_tracked(after).tolist()):
            if not tracked:
                continue
            objects += 1
            with_obb += source in (SOURCE_USER_META, SOURCE_PREDICTED)
            angles_out[tid].append((k, xywhr[4]))
            if detect and address in address_to_det:
                d = address_to_det[address]
                if fr.det_gt[d] >= 0:
                    votes[tid][int(fr.det_gt[d])] += 1
                last_detector[tid] = fr.det_xywhr[d]
                angles_det[tid].append((k, float(fr.det_xywhr[d, 4])))
            if not detect and votes[tid]:
                g = votes[tid].most_common(1)[0][0]
                if g in gt:
                    target = gt[g][None]
                    ious["follow"].append(float(box_iou_rotated_host(np.array([xywhr]), target)[0, 0]))
                    ious["aabb_0deg"].append(float(box_iou_rotated_host(np.array([raw[address]]), target)[0, 0]))
                    ious["stale_detector_obb"].append(float(box_iou_rotated_host(last_detector[tid][None],
                                                                                 target)[0, 0]))
        batch.destroy()

    def max_jump(series: dict) -> float:
        worst = 0.0
        for pts in series.values():
            for (_, a), (_, b) in zip(pts, pts[1:]):
                worst = max(worst, abs(b - a))
        return worst

    return {"scene": name, "seed": seed, "frames": frames, "interval": interval, "skipped_frames": skipped_frames,
            "tracked_objects": objects, "tracked_objects_with_obb": with_obb,
            "skipped_frame_iou_with_gt": {k: {"n": len(v), "mean": round(float(np.mean(v)), 4),
                                              "median": round(float(np.median(v)), 4)} for k, v in ious.items()},
            "max_angle_change_between_frames_rad": {
                "follow_tracker_output": round(max_jump(angles_out), 4),
                "detector_le90_consecutive_detection_frames": round(max_jump(angles_det), 4)}}


def plot(payload: dict) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = payload["rows"]
    names = list(dict.fromkeys(r["scene"] for r in rows))
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.5))
    for ax, key, title in zip(axes, ("id_switches", "mota", "idf1"), ("ID switches (lower is better)", "MOTA",
                                                                         "IDF1")):
        for j, method in enumerate(METHODS):
            vals = [next(r[key] for r in rows if r["scene"] == n and r["method"] == method) for n in names]
            ax.bar(np.arange(len(names)) + (j - 0.5) * 0.38, vals, 0.38, label=method)
        ax.set_xticks(np.arange(len(names)))
        ax.set_xticklabels([n + (" *" if next(r["dense"] for r in rows if r["scene"] == n) else "") for n in names],
                           rotation=35, ha="right", fontsize=8)
        ax.set_title(title)
        if key != "id_switches":
            ax.set_ylim(0.5, 1.0)
    axes[0].legend()
    fig.suptitle(f"Same detections, same tracker, {len(payload['seeds'])} seeds x {payload['frames']} frames per "
                 "scene; * dense")
    fig.tight_layout()
    path = RESULTS / "tracking.png"
    fig.savefig(path, dpi=110)
    return path


def main() -> None:
    parser = arguments(__doc__, plot_only=True)
    parser.add_argument("--quick", action="store_true", help="2 seeds x 60 frames (a smoke run, not for figures)")
    args = parser.parse_args()
    if args.plot_only:
        print(plot(json.loads((RESULTS / "tracking.json").read_text())))
        return
    warnings.filterwarnings("ignore", category=FutureWarning)  # pandas notes inside motmetrics 1.4.0
    seeds, frames = ([0, 1], 60) if args.quick else ([0, 1, 2, 3, 4], 150)
    rows, ablation = mot_rows(seeds, frames)
    follow = [follow_scene(n, 0, frames, 2) for n in ("parking_rows_45", "skewed_text_30", "crossing_vehicles",
                                                       "sparse_traffic")]
    for f in follow:
        print(json.dumps(f))
    import motmetrics

    payload = {"seeds": seeds, "frames": frames, "match_iou_for_metrics": MATCH_IOU,
               "metrics_library": f"motmetrics {motmetrics.__version__}",
               "tracker_defaults": {k: v for k, v in vars(OrientedTracker()).items()
                                    if isinstance(v, (int, float, str, bool))},
               "rows": rows, "ablation": ablation, "follow": follow}
    if not args.quick:
        print(write_json("tracking", payload))
        print(plot(json.loads((RESULTS / "tracking.json").read_text())))


if __name__ == "__main__":
    main()
