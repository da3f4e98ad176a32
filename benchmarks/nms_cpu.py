"""CPU rotated NMS: obbmeta vs its previous (quadratic) implementation, a shapely greedy reference, and, when they
are importable, mmcv's CPU nms_rotated and Ultralytics' Fast-NMS.

The previous implementation is compiled in the same run from git (the greedy scan over all later boxes, commit
04bc04b: kernels/geometry_cpu.c + kernels/obb_geometry.h) with the same flags as setup.py, so the speed-up is a
ratio measured in one run on one core (C call against C call: `obbmeta_c_call` is today's C function called the
same raw way; `obbmeta` is the whole nms_rotated call with its checks), and its keep set is compared. Scenes:
clustered boxes on a fixed 2000 x 2000 canvas (density grows with N, the earlier benchmark's scene), clustered boxes
at constant density (the canvas grows with sqrt(N)), and uniform random boxes. The process is pinned to one CPU core.
Results: benchmarks/results/nms_cpu.json and .png.

    python benchmarks/nms_cpu.py [--sizes ...] [--repeats 5] [--previous-max 100000]
"""
from __future__ import annotations

import ctypes
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "tests"))
import reference  # noqa: E402  (the shapely greedy NMS the tests use)
from _common import arguments, median_time, pin_to_one_core, plot_lines, write_json  # noqa: E402

from obbmeta.ops import nms_rotated  # noqa: E402

IOU = 0.5
PREVIOUS_COMMIT = "04bc04b"  # the last commit with the quadratic CPU NMS


def random_scene(n: int, seed: int):
    """Uniform random boxes (the kind of scene mmcv was timed on), 1000 x 1000 px, sides 10-100 px."""
    rng = np.random.default_rng(seed)
    boxes = np.c_[rng.uniform(0, 1000, (n, 2)), rng.uniform(10, 100, (n, 2)), rng.uniform(-np.pi, np.pi, n)]
    return boxes.astype(np.float32), rng.uniform(0, 1, n).astype(np.float32)


def scene(kind: str, n: int):
    if kind == "clustered":  # fixed canvas: density grows with n
        return reference.clustered_scene(n, seed=n)[:2]
    if kind == "clustered_constant_density":  # ~1000 boxes per 2000 x 2000 px at every n
        return reference.clustered_scene(n, seed=n, extent=2000.0 * (n / 1000) ** 0.5)[:2]
    return random_scene(n, seed=n)


def previous_implementation():
    """The quadratic greedy scan of commit PREVIOUS_COMMIT, built from git with setup.py's C flags (or None)."""
    folder = Path(tempfile.mkdtemp(prefix="obbmeta-nms-previous-"))
    try:
        for name in ("geometry_cpu.c", "obb_geometry.h"):
            text = subprocess.run(["git", "show", f"{PREVIOUS_COMMIT}:kernels/{name}"], cwd=ROOT, check=True,
                                  capture_output=True, text=True).stdout
            (folder / name).write_text(text)
        lib = folder / "previous_geometry.so"
        subprocess.run(["gcc", "-O3", "-std=c11", "-fvisibility=hidden", "-shared", "-fPIC", f"-I{folder}",
                        str(folder / "geometry_cpu.c"), "-o", str(lib), "-lm"], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"[skip] previous implementation: {exc}", file=sys.stderr)
        return None
    c = ctypes.CDLL(str(lib))
    c.obbmeta_nms.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_double,
                              ctypes.c_void_p]
    c.obbmeta_nms.restype = ctypes.c_int64

    def run(b: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        keep = torch.empty(len(b), dtype=torch.int64)
        count = c.obbmeta_nms(b.data_ptr(), s.data_ptr(), None, len(b), IOU, keep.data_ptr())
        return keep[:count]

    return run


def current_c_call():
    """Today's C function called the way the previous one is (raw ctypes, no Python checks): the like-for-like
    anchor for the speed-up, next to the full nms_rotated call."""
    from obbmeta.ops._core import geometry_library

    c = geometry_library()

    def run(b: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        keep = torch.empty(len(b), dtype=torch.int64)
        count = c.obbmeta_nms(b.data_ptr(), s.data_ptr(), 0, None, len(b), IOU, keep.data_ptr())
        return keep[:count]

    return run


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
    ap = arguments(__doc__, repeats=5)
    ap.add_argument("--sizes", type=int, nargs="+", default=[300, 1000, 2000, 3000, 10000, 100000])
    ap.add_argument("--density-sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--reference-max", type=int, default=3000, help="largest N for the slow shapely reference")
    ap.add_argument("--previous-max", type=int, default=100000, help="largest N for the previous implementation")
    args = ap.parse_args()

    pinned = pin_to_one_core()
    torch.set_num_threads(1)
    previous = previous_implementation()
    current = current_c_call()
    others = comparators()
    scenes = ([("clustered", n) for n in args.sizes] + [("clustered_constant_density", n) for n in args.density_sizes]
              + [("random", 2000)])
    rows = []
    for kind, n in scenes:
        b, s = scene(kind, n)
        bt, st = torch.from_numpy(b), torch.from_numpy(s)
        ours = nms_rotated(bt, st, IOU)
        row = {"scene": kind, "n": n, "iou_threshold": IOU, "kept": int(ours.numel()), "methods": {}}
        row["methods"]["obbmeta"] = median_time(lambda: nms_rotated(bt, st, IOU), args.repeats)
        c_call = median_time(lambda: current(bt, st), args.repeats)
        c_call["same_keep_as_obbmeta"] = current(bt, st).tolist() == ours.tolist()
        row["methods"]["obbmeta_c_call"] = c_call
        if previous is not None and n <= args.previous_max:
            if n > 10000:  # tens of seconds: one timed call, whose result is the keep set compared
                t0 = time.perf_counter()
                keep = previous(bt, st)
                t = time.perf_counter() - t0
                timing = {"median_s": t, "min_s": t, "max_s": t, "repeats": 1}
            else:
                timing = median_time(lambda: previous(bt, st), args.repeats)
                keep = previous(bt, st)
            timing["same_keep_as_obbmeta"] = keep.tolist() == ours.tolist()
            row["methods"]["obbmeta_previous_quadratic"] = timing
        if n <= args.reference_max:
            t0 = time.perf_counter()
            ref = reference.greedy_nms(b, s, IOU)
            row["methods"]["shapely_greedy"] = {"median_s": time.perf_counter() - t0, "repeats": 1,
                                                "same_keep_as_obbmeta": ref == ours.tolist()}
        for name, fn in others.items():
            if n > 10000:
                continue
            slow = name == "mmcv_cpu" and n > 3000
            timing = median_time(lambda: fn(bt, st), 1 if slow else args.repeats, warmup=0 if slow else 1)
            keep = fn(bt, st)
            timing["same_keep_as_obbmeta"] = keep.tolist() == ours.tolist()
            timing["kept"] = int(keep.numel())
            row["methods"][name] = timing
        anchor = row["methods"]["obbmeta"]["median_s"]
        for m in row["methods"].values():
            m["times_slower_than_obbmeta"] = m["median_s"] / anchor
        if "obbmeta_previous_quadratic" in row["methods"]:  # C call against C call
            row["previous_over_current_c_call"] = (row["methods"]["obbmeta_previous_quadratic"]["median_s"]
                                                   / row["methods"]["obbmeta_c_call"]["median_s"])
        rows.append(row)
        print(kind, n, row["kept"], {k: f"{v['median_s'] * 1e3:.2f} ms" + ("" if v.get("same_keep_as_obbmeta", True)
                                                                           else " DIFFERENT KEEP SET")
                                     for k, v in row["methods"].items()}, flush=True)

    path = write_json("nms_cpu", {
        "iou_threshold": IOU, "unit": "seconds (median of repeats)", "pinned_to": pinned, "rows": rows,
        "previous_implementation":
            f"git {PREVIOUS_COMMIT}: kernels/geometry_cpu.c built with gcc -O3 (setup.py's flags)",
        "note": "CPU figures: compare ratios within one run, not absolute times. clustered: 2000 x 2000 px canvas "
                "for every N; clustered_constant_density: canvas 2000 * sqrt(N / 1000) px."})
    plot(rows)
    print(f"wrote {path}")


def plot(rows):
    plot_lines([dict(r, n=r["n"], methods={f"{k} ({r['scene'].replace('clustered_', '')})": v
                                           for k, v in r["methods"].items()})
                for r in rows if r["scene"].startswith("clustered")],
               "nms_cpu", f"Rotated NMS on the CPU, IoU {IOU}, one core — same machine, same run",
               "boxes (clustered; constant_density: canvas grows with sqrt(N))", "ms (median)")


if __name__ == "__main__":
    main()
