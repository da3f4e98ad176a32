"""GPU rotated NMS: obbmeta's CUDA kernel vs torchvision's axis-aligned NMS (the anchor, same run, same boxes).

    python benchmarks/nms_cuda.py [--sizes 1000 3000 10000 30000] [--repeats 20]

Times are CUDA-synchronised wall times per call (median of repeats), including the one host sync obbmeta does
to size its result. Results: benchmarks/results/nms_cuda.json and .png.
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import reference  # noqa: E402
from _common import arguments, cuda_sync, median_time, plot_lines, write_json  # noqa: E402

from obbmeta.ops import nms_rotated, obb_to_aabb  # noqa: E402

IOU = 0.5


def main():
    ap = arguments(__doc__, repeats=20)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 3000, 10000, 30000])
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("needs a CUDA device")
    try:
        from torchvision.ops import nms as tv_nms
    except Exception as exc:  # noqa: BLE001
        tv_nms = None
        print(f"[skip] torchvision: {exc}", file=sys.stderr)
    sync = cuda_sync()
    rows = []
    for n in args.sizes:
        b, s, lab = (torch.from_numpy(a) for a in reference.clustered_scene(n, seed=n))
        bc, sc, lc = b.cuda(), s.cuda(), lab.cuda()
        keep = nms_rotated(bc, sc, IOU)
        keep_aware = nms_rotated(bc, sc, IOU, labels=lc)
        row = {"n": n, "kept": int(keep.numel()),
               "same_keep_as_cpu": keep.cpu().tolist() == nms_rotated(b, s, IOU).tolist(),
               "same_keep_as_cpu_class_aware": keep_aware.cpu().tolist() == nms_rotated(b, s, IOU, labels=lab).tolist(),
               "methods": {}}
        row["methods"]["obbmeta_cuda"] = median_time(lambda: nms_rotated(bc, sc, IOU), args.repeats, 3, sync)
        row["methods"]["obbmeta_cuda_class_aware"] = median_time(lambda: nms_rotated(bc, sc, IOU, labels=lc),
                                                                 args.repeats, 3, sync)
        row["methods"]["obbmeta_cpu"] = median_time(lambda: nms_rotated(b, s, IOU), 3, 1)
        if tv_nms is not None:
            aabb = obb_to_aabb(bc)
            row["methods"]["torchvision_axis_aligned_anchor"] = median_time(lambda: tv_nms(aabb, sc, IOU),
                                                                            args.repeats, 3, sync)
        rows.append(row)
        print(n, {k: f"{v['median_s'] * 1e3:.3f} ms" for k, v in row["methods"].items()}, flush=True)
    path = write_json("nms_cuda", {"iou_threshold": IOU, "unit": "seconds (median of repeats)", "rows": rows,
                                   "note": "clustered rotated boxes; torchvision runs axis-aligned NMS on the AABBs "
                                           "of the same boxes as a speed anchor, not as an equivalent"})
    plot(rows)
    print(f"wrote {path}")


def plot(rows):
    plot_lines(rows, "nms_cuda", f"Rotated NMS on the GPU, IoU {IOU}", "boxes (clustered scene)",
               "ms per call (median)")


if __name__ == "__main__":
    main()
