"""GPU rotated NMS: obbmeta against its peers in one process, on the same boxes (tests/reference.clustered_scene,
IoU 0.5, class-agnostic unless named otherwise).

    source benchmarks/gpu_peers.sh      # on the GPU machine, with .peers carried (benchmarks/prepare_peers.sh)
    python benchmarks/nms_cuda.py [--sizes 1000 3000 10000 30000] [--repeats 50]

Methods (wall time per call with a device sync before and after, median of repeats):
  obbmeta_cuda            nms_rotated: the sized result, its one host sync included
  obbmeta_cuda_padded     nms_rotated_padded: fixed-size result, no host sync inside (the sync is the timer's)
  obbmeta_cuda_graph      nms_rotated_padded captured once in a CUDA graph, replayed (no host work but the launch)
  obbmeta_cuda_class_aware, obbmeta_cpu (one core; for ratios only)
  mmcv_cuda               mmcv 2.2.0's CUDA nms_rotated (its host-side scan included), keep set compared to ours
  ultralytics_fast_nms    Ultralytics 8.4.190's rotated NMS (Fast-NMS on ProbIoU: another algorithm, timed only)
  torchvision_aabb_anchor torchvision's axis-aligned nms on the boxes' bounding boxes (a speed anchor)
Peak device memory of one call (through torch's allocator) is recorded per method.
Results: benchmarks/results/nms_cuda.json and .png.
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import peers  # noqa: E402
import reference  # noqa: E402
from _common import arguments, cuda_sync, graph_of, median_time, plot_lines, write_json  # noqa: E402

from obbmeta.ops import nms_rotated, nms_rotated_padded, obb_to_aabb  # noqa: E402

IOU = 0.5
GOALS_MS = {1000: 0.10, 3000: 0.25, 10000: 1.0, 30000: 5.0}  # issue 12, for obbmeta on the H200



def main():
    ap = arguments(__doc__, repeats=50)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 3000, 10000, 30000])
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("needs a CUDA device")
    mmcv, ultra, tv = peers.mmcv_nms_rotated(), peers.ultralytics_nms_rotated(), peers.torchvision_nms()
    sync = cuda_sync()
    rows = []
    for n in args.sizes:
        b, s, lab = (torch.from_numpy(a) for a in reference.clustered_scene(n, seed=n))
        bc, sc, lc = b.cuda(), s.cuda(), lab.cuda()
        keep = nms_rotated(bc, sc, IOU).cpu().tolist()
        replay, (g_keep, g_count) = graph_of(lambda: nms_rotated_padded(bc, sc, IOU))
        replay()
        row = {"n": n, "kept": len(keep), "goal_ms": GOALS_MS.get(n),
               "same_keep_as_cpu": keep == nms_rotated(b, s, IOU).tolist(),
               "same_keep_as_cpu_class_aware":
                   nms_rotated(bc, sc, IOU, labels=lc).cpu().tolist() == nms_rotated(b, s, IOU, labels=lab).tolist(),
               "graph_replay_equals_eager": g_keep[:int(g_count)].cpu().tolist() == keep,
               "methods": {}, "peak_memory_bytes": {}}
        methods = {
            "obbmeta_cuda": lambda: nms_rotated(bc, sc, IOU),
            "obbmeta_cuda_padded": lambda: nms_rotated_padded(bc, sc, IOU),
            "obbmeta_cuda_graph": replay,
            "obbmeta_cuda_class_aware": lambda: nms_rotated(bc, sc, IOU, labels=lc),
        }
        if mmcv is not None:
            row["same_keep_as_mmcv"] = mmcv(bc, sc, IOU).cpu().tolist() == keep
            methods["mmcv_cuda"] = lambda: mmcv(bc, sc, IOU)
        if ultra is not None:
            row["ultralytics_kept"] = int(ultra(bc, sc, IOU).numel())
            methods["ultralytics_fast_nms"] = lambda: ultra(bc, sc, IOU)
        if tv is not None:
            aabb = obb_to_aabb(bc)
            methods["torchvision_aabb_anchor"] = lambda: tv(aabb, sc, IOU)
        for name, fn in methods.items():
            slow = name == "ultralytics_fast_nms" and n >= 10000
            row["methods"][name] = median_time(fn, 5 if slow else args.repeats, 2, sync)
            if name != "obbmeta_cuda_graph":
                row["peak_memory_bytes"][name] = peers.peak_memory(fn)
        row["methods"]["obbmeta_cpu"] = median_time(lambda: nms_rotated(b, s, IOU), 3, 1)
        rows.append(row)
        print(n, {k: f"{v['median_s'] * 1e3:.3f} ms" for k, v in row["methods"].items()},
              {k: v for k, v in row.items() if k.startswith("same") or k.startswith("graph")}, flush=True)
    path = write_json("nms_cuda", {
        "iou_threshold": IOU, "unit": "seconds per call (median of repeats, device synced around each)",
        "versions": {"torch": torch.__version__, **peers.versions()}, "rows": rows,
        "note": "clustered rotated boxes (tests/reference.clustered_scene(n, seed=n)); mmcv is compared "
                "class-agnostic; Ultralytics is Fast-NMS on ProbIoU (a different answer, timed only); torchvision "
                "runs axis-aligned NMS on the boxes' AABBs as a speed anchor, not as an equivalent"})
    plot(rows)
    print(f"wrote {path}")


def plot(rows):
    plot_lines(rows, "nms_cuda", f"Rotated NMS on the GPU, IoU {IOU}", "boxes (clustered scene)",
               "ms per call (median)")


if __name__ == "__main__":
    main()
