"""CPU rotated NMS: obbmeta vs a shapely greedy reference, mmcv's CPU nms_rotated and Ultralytics' Fast-NMS.

Each comparator runs only when importable (see benchmarks/README.md for the environment that has them all).
Every method's keep set is compared with obbmeta's. Results: benchmarks/results/nms_cpu.json and .png.

    python benchmarks/nms_cpu.py [--sizes 300 1000 2000 3000 10000] [--repeats 5]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _common import median_time, plot_lines, write_json  # noqa: E402
import reference  # noqa: E402  (the shapely greedy NMS the tests use)

from obbmeta.ops import nms_rotated  # noqa: E402

IOU = 0.5


def random_scene(n: int, seed: int):
    """Uniform random boxes (the kind of scene mmcv was timed on), 1000 x 1000 px, sides 10-100 px."""
    rng = np.random.default_rng(seed)
    boxes = np.c_[rng.uniform(0, 1000, (n, 2)), rng.uniform(10, 100, (n, 2)), rng.uniform(-np.pi, np.pi, n)]
    return boxes.astype(np.float32), rng.uniform(0, 1, n).astype(np.float32)


def comparators():
    methods = {}
    try:
        from mmcv.ops import nms_rotated as mmcv_nms

        def run_mmcv(b, s):
            return mmcv_nms(b, s, IOU)[1]

        methods["mmcv_cpu"] = run_mmcv
    except Exception as exc:  # ImportError, or mmcv without compiled ops
        print(f"[skip] mmcv: {exc}", file=sys.stderr)
    try:
        from ultralytics.utils.metrics import batch_probiou
        from ultralytics.utils.nms import TorchNMS

        def run_ultra(b, s):
            return TorchNMS.fast_nms(b, s, IOU, iou_func=batch_probiou)

        methods["ultralytics_fast_nms_probiou"] = run_ultra
    except Exception as exc:
        print(f"[skip] ultralytics: {exc}", file=sys.stderr)
    return methods


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=[300, 1000, 2000, 3000, 10000])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--reference-max", type=int, default=3000, help="largest N for the slow shapely reference")
    args = ap.parse_args()

    others = comparators()
    scenes = [("clustered", n) for n in args.sizes] + [("random", 2000)]
    rows = []
    for kind, n in scenes:
        b, s = reference.clustered_scene(n, seed=n)[:2] if kind == "clustered" else random_scene(n, seed=n)
        bt, st = torch.from_numpy(b), torch.from_numpy(s)
        ours = nms_rotated(bt, st, IOU)
        row = {"scene": kind, "n": n, "iou_threshold": IOU, "kept": int(ours.numel()), "methods": {}}
        row["methods"]["obbmeta"] = median_time(lambda: nms_rotated(bt, st, IOU), args.repeats)
        if n <= args.reference_max:
            t0 = time.perf_counter()
            ref = reference.greedy_nms(b, s, IOU)
            row["methods"]["shapely_greedy"] = {"median_s": time.perf_counter() - t0, "repeats": 1,
                                                "same_keep_as_obbmeta": ref == ours.tolist()}
        for name, fn in others.items():
            slow = name == "mmcv_cpu" and n > 3000
            timing = median_time(lambda: fn(bt, st), 1 if slow else args.repeats, warmup=0 if slow else 1)
            keep = fn(bt, st)
            timing["same_keep_as_obbmeta"] = keep.tolist() == ours.tolist()
            timing["kept"] = int(keep.numel())
            row["methods"][name] = timing
        anchor = row["methods"]["obbmeta"]["median_s"]
        for name, m in row["methods"].items():
            m["times_slower_than_obbmeta"] = m["median_s"] / anchor
        rows.append(row)
        print(kind, n, {k: f"{v['median_s'] * 1e3:.2f} ms" for k, v in row["methods"].items()}, flush=True)

    path = write_json("nms_cpu", {"iou_threshold": IOU, "unit": "seconds (median of repeats)", "rows": rows,
                                  "note": "CPU figures: compare ratios within one run, not absolute times."})
    plot(rows)
    print(f"wrote {path}")


def plot(rows):
    plot_lines([r for r in rows if r["scene"] == "clustered"], "nms_cpu", f"Rotated NMS on the CPU, IoU {IOU} — same machine, same run", "boxes (clustered scene)", "ms (median)")


if __name__ == "__main__":
    main()
