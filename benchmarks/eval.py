"""obbmeta.eval.evaluate on video-length sequences, CPU. Anchor, measured in the same run: the exact-IoU matrices
alone (the same box_iou_rotated calls, one per frame). Comparator when installed: the DOTA devkit's voc_eval
(dotadevkit 1.3.0, requirements/oracles.txt) on the same scene written as DOTA files (its time includes parsing
them); its APs are checked against ours (they can differ where scores tie: the devkit's sort is not stable).

    python benchmarks/eval.py [--repeats 5] [--frames 100 500]

Scene per frame: 40 objects of 5 classes (15-90 px, any angle, 5 % difficult) in 1024x1024; each found with
probability 0.85 by a jittered box, 10 % found twice, plus 15 clutter detections. Results: results/eval.json, .png.
"""
from __future__ import annotations

import contextlib
import io
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import reference  # noqa: E402
from _common import RESULTS, arguments, median_time, write_json  # noqa: E402

from obbmeta import OrientedBoxes  # noqa: E402
from obbmeta.eval import IOU_THRESHOLDS_50_95, evaluate  # noqa: E402
from obbmeta.ops import box_iou_rotated  # noqa: E402

NC, OBJECTS, CLUTTER, SIZE = 5, 40, 15, 1024


def video(frames: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    dets, gts, difficult = [], [], []
    for _ in range(frames):
        g = np.c_[rng.uniform(50, SIZE - 50, (OBJECTS, 2)), rng.uniform(15, 90, (OBJECTS, 2)),
                  rng.uniform(-np.pi, np.pi, OBJECTS)].astype(np.float32)
        g_lab = rng.integers(0, NC, OBJECTS)
        found = np.flatnonzero(rng.random(OBJECTS) < 0.85)
        found = np.concatenate([found, found[rng.random(found.size) < 0.1]])
        d = g[found].copy()
        d[:, :2] += rng.normal(0, 3, (found.size, 2))
        d[:, 2:4] *= rng.normal(1, 0.08, (found.size, 2))
        d[:, 4] += rng.normal(0, 0.08, found.size)
        clutter = np.c_[rng.uniform(0, SIZE, (CLUTTER, 2)), rng.uniform(15, 90, (CLUTTER, 2)),
                        rng.uniform(-np.pi, np.pi, CLUTTER)]
        d = np.concatenate([d, clutter]).astype(np.float32)
        scores = np.concatenate([rng.uniform(0.3, 1.0, found.size), rng.uniform(0.05, 0.7, CLUTTER)])
        labels = np.concatenate([g_lab[found], rng.integers(0, NC, CLUTTER)])
        dets.append(OrientedBoxes(torch.from_numpy(d), torch.from_numpy(scores).float(), torch.from_numpy(labels)))
        gts.append(OrientedBoxes(torch.from_numpy(g), torch.ones(OBJECTS), torch.from_numpy(g_lab)))
        difficult.append(rng.random(OBJECTS) < 0.05)
    return dets, gts, difficult


def iou_only(dets, gts):
    """The IoU calls evaluate makes: one (detections x ground truths) matrix per frame."""
    for d, g in zip(dets, gts):
        box_iou_rotated(d.xywhr, g.xywhr)


def write_dota(root: Path, dets, gts, difficult):
    """The scene as DOTA files: labelTxt-style ground truth per frame and Task1_<class>.txt detections."""
    polys = lambda b: [" ".join(f"{v:.9g}" for c in reference.corners(r) for v in c) for r in b.xywhr.numpy()]  # noqa: E731
    names = [f"f{i}" for i in range(len(gts))]
    (root / "images.txt").write_text("\n".join(names) + "\n")
    for name, g, diff in zip(names, gts, difficult):
        (root / f"{name}.txt").write_text("".join(
            f"{p} c{int(lab)} {int(df)}\n" for p, lab, df in zip(polys(g), g.labels.tolist(), diff)))
    for c in range(NC):
        lines = []
        for name, d in zip(names, dets):
            for p, s, lab in zip(polys(d), d.scores.tolist(), d.labels.tolist()):
                if lab == c:
                    lines.append(f"{name} {s!r} {p}\n")
        (root / f"Task1_c{c}.txt").write_text("".join(lines))


def devkit_eval(task1, root: Path):
    with contextlib.redirect_stdout(io.StringIO()):  # it prints its whole TP/FP arrays
        return [float(task1.voc_eval(str(root / "Task1_{:s}.txt"), str(root / "{:s}.txt"), str(root / "images.txt"),
                                     f"c{c}", ovthresh=0.5, use_07_metric=False)[2]) for c in range(NC)]


def main():
    ap = arguments(__doc__, repeats=5)
    ap.add_argument("--frames", type=int, nargs="+", default=[100, 500])
    args = ap.parse_args()
    try:
        from dotadevkit.evaluate import task1
    except ImportError:
        task1 = None
    rows = []
    for frames in args.frames:
        dets, gts, difficult = video(frames)
        row = {"frames": frames, "detections": sum(len(d) for d in dets), "ground_truths": sum(len(g) for g in gts),
               "classes": NC, "methods": {}}
        runs = {
            "iou_matrices_only": lambda: iou_only(dets, gts),
            "evaluate_voc_iou50": lambda: evaluate(dets, gts, difficult=difficult),
            "evaluate_voc_iou50_95": lambda: evaluate(dets, gts, difficult=difficult,
                                                      iou_threshold=IOU_THRESHOLDS_50_95),
            "evaluate_coco_iou50_95": lambda: evaluate(dets, gts, difficult=difficult,
                                                       iou_threshold=IOU_THRESHOLDS_50_95, matching="coco"),
        }
        for name, fn in runs.items():
            row["methods"][name] = median_time(fn, args.repeats, 1)
        res = evaluate(dets, gts, difficult=difficult)
        row["map50"] = res.map
        row["map50_95"] = evaluate(dets, gts, difficult=difficult, iou_threshold=IOU_THRESHOLDS_50_95).map50_95
        if task1 is not None:
            with tempfile.TemporaryDirectory() as tmp:
                write_dota(Path(tmp), dets, gts, difficult)
                theirs = devkit_eval(task1, Path(tmp))
                row["methods"]["dota_devkit_voc_eval_iou50"] = median_time(
                    lambda: devkit_eval(task1, Path(tmp)), max(1, args.repeats // 2), 0)
            row["dota_devkit_max_abs_ap_diff"] = max(abs(a - b) for a, b in zip(theirs, res.ap.values()))
            labels = torch.cat([d.labels for d in dets])
            scores = torch.cat([d.scores for d in dets])
            row["tied_scores_within_a_class"] = sum(
                int((labels == c).sum()) - len(torch.unique(scores[labels == c])) for c in range(NC))
        anchor = row["methods"]["iou_matrices_only"]["median_s"]
        row["ratio_to_iou_only"] = {k: v["median_s"] / anchor for k, v in row["methods"].items()}
        rows.append(row)
        print(frames, "frames:", {k: f"{v['median_s'] * 1e3:.1f} ms" for k, v in row["methods"].items()},
              "devkit AP diff:", row.get("dota_devkit_max_abs_ap_diff"))
    path = write_json("eval", {"rows": rows, "torch_threads": torch.get_num_threads()})
    plot(rows)
    print("wrote", path)


def plot(rows):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(rows[0]["methods"])
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(rows)
    for k, row in enumerate(rows):
        ax.bar(np.arange(len(names)) + k * width, [row["methods"][n]["median_s"] for n in names], width,
               label=f"{row['frames']} frames ({row['detections']} dets)")
    ax.set_xticks(np.arange(len(names)) + width * (len(rows) - 1) / 2, [n.replace("_", "\n", 2) for n in names],
                  fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("median seconds (log)")
    ax.set_title("obbmeta.eval.evaluate, CPU")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(RESULTS / "eval.png", dpi=120)


if __name__ == "__main__":
    main()
