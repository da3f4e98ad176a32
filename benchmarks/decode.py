"""YOLO-OBB decode end to end (filter -> rotated NMS -> letterbox inverse): obbmeta.decode.yolo_obb on CUDA and on
the CPU, with an axis-aligned anchor measured in the same run (the same filtering, then torchvision's batched_nms on
the candidates' AABBs — what a pipeline without rotated NMS would do).

    python benchmarks/decode.py [--repeats 20]

Input: the raw head output of a 1024x1024 DOTA-style model, (B, 4 + 15 + 1, 21504): per image 40 objects, each
seen by 20 jittered anchors above conf 0.25 (800 candidates for NMS), on a background of anchors below it.
Results: results/decode.json and .png.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import reference  # noqa: E402
from _common import RESULTS, arguments, cuda_sync, median_time, write_json  # noqa: E402

from obbmeta import Letterbox  # noqa: E402
from obbmeta.decode import yolo_obb  # noqa: E402
from obbmeta.ops import obb_to_aabb  # noqa: E402

NC, ANCHORS, SIZE = 15, 21504, 1024


def head_output(batch: int, seed: int = 0, objects: int = 40, proposals: int = 20) -> torch.Tensor:
    """Per image: `objects` objects, each seen by `proposals` jittered anchors scoring above conf (what NMS must
    reduce to one box each), on a background of anchors scoring below it."""
    rng = np.random.default_rng(seed)
    out = np.zeros((batch, 4 + NC + 1, ANCHORS), np.float32)
    for b in range(batch):
        background, _, _ = reference.clustered_scene(ANCHORS, seed + b, extent=SIZE)
        out[b, :4], out[b, -1] = background[:, :4].T, background[:, 4]
        out[b, 4:4 + NC] = rng.uniform(0, 0.2, (NC, ANCHORS))
        hot = rng.choice(ANCHORS, objects * proposals, replace=False)
        centre = np.c_[rng.uniform(50, SIZE - 50, (objects, 2)), rng.uniform(15, 90, (objects, 2)),
                       rng.uniform(-np.pi, np.pi, objects)]
        jitter = np.c_[rng.normal(0, 1.5, (objects * proposals, 2)), rng.normal(1, 0.04, (objects * proposals, 2)),
                       rng.normal(0, 0.04, objects * proposals)]
        boxes = np.repeat(centre, proposals, axis=0)
        boxes[:, :2] += jitter[:, :2]
        boxes[:, 2:4] *= jitter[:, 2:4]
        boxes[:, 4] += jitter[:, 4]
        out[b, :4][:, hot], out[b, -1, hot] = boxes[:, :4].T, boxes[:, 4]
        cls = np.repeat(rng.integers(0, NC, objects), proposals)
        out[b, 4 + cls, hot] = rng.uniform(0.3, 1.0, hot.size)  # (class, anchor) pairs
    return torch.from_numpy(out)


def axis_aligned_anchor(out, conf, iou):
    from torchvision.ops import batched_nms

    x = out.transpose(1, 2)
    scores, labels = x[..., 4:-1].max(-1)
    img, anchor = (scores > conf).nonzero(as_tuple=True)
    xywhr = torch.cat((x[img, anchor, :4], x[img, anchor, -1:]), 1)
    keep = batched_nms(obb_to_aabb(xywhr), scores[img, anchor], img * NC + labels[img, anchor], iou)
    return keep, torch.bincount(img[keep], minlength=out.shape[0]).tolist()


def main():
    ap = arguments(__doc__, repeats=20)
    args = ap.parse_args()
    cuda = torch.cuda.is_available()
    lb = Letterbox.fit((3840, 2160), (SIZE, SIZE))
    rows = []
    for batch in (1, 4, 16):
        out = head_output(batch)
        row = {"batch": batch, "anchors": ANCHORS, "classes": NC, "methods": {}}
        dets = yolo_obb(out, conf=0.25, iou=0.5, letterbox=lb)
        row["kept_per_image"] = [len(d) for d in dets]
        row["methods"]["obbmeta_cpu"] = median_time(lambda: yolo_obb(out, conf=0.25, iou=0.5, letterbox=lb), 3, 1)
        if cuda:
            g = out.cuda()
            sync = cuda_sync()
            gd = yolo_obb(g, conf=0.25, iou=0.5, letterbox=lb)
            row["same_boxes_cpu_cuda"] = all(
                torch.equal(a.labels, b.labels.cpu()) and torch.equal(a.scores, b.scores.cpu())
                and torch.allclose(a.xywhr, b.xywhr.cpu(), rtol=0, atol=1e-3) for a, b in zip(dets, gd))
            row["methods"]["obbmeta_cuda"] = median_time(lambda: yolo_obb(g, conf=0.25, iou=0.5, letterbox=lb),
                                                         args.repeats, 3, sync)
            try:
                row["methods"]["axis_aligned_anchor_cuda"] = median_time(lambda: axis_aligned_anchor(g, 0.25, 0.5),
                                                                         args.repeats, 3, sync)
            except ImportError as exc:
                print(f"[skip] torchvision: {exc}", file=sys.stderr)
        rows.append(row)
        print(batch, row["kept_per_image"][:2], {k: f"{v['median_s'] * 1e3:.3f} ms" for k, v in row["methods"].items()},
              flush=True)
    path = write_json("decode", {"unit": "seconds per batch (median of repeats)", "rows": rows,
                                 "note": "CPU figures are for ratios; GPU times include the decode's host syncs"})
    plot(rows)
    print(f"wrote {path}")


def plot(rows):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = sorted({m for r in rows for m in r["methods"]})
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    width = 0.8 / len(methods)
    for i, m in enumerate(methods):
        ax.bar(x + (i - (len(methods) - 1) / 2) * width, [r["methods"].get(m, {}).get("median_s", np.nan) * 1e3
                                                          for r in rows], width, label=m)
    ax.set_xticks(x, [f"batch {r['batch']}" for r in rows])
    ax.set_yscale("log")
    ax.set_ylabel("ms per batch (median)")
    ax.set_title(f"YOLO-OBB decode, {ANCHORS} anchors x {NC} classes per image")
    ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / "decode.png", dpi=120)


if __name__ == "__main__":
    main()
