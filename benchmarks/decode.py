"""YOLO-OBB decode end to end (filter -> top-k -> rotated NMS per image and class -> letterbox inverse) on the GPU:
obbmeta against Ultralytics' own post-processing and an axis-aligned anchor, in one process, on the same heads.

    source benchmarks/gpu_peers.sh      # on the GPU machine, with .peers carried (benchmarks/prepare_peers.sh)
    python benchmarks/decode.py [--repeats 30]

Input: the raw head of a 1024x1024 DOTA-style model, (B, 4 + 15 + 1, 21504): per image 40 objects, each seen by 20
jittered anchors above conf 0.25 (800 candidates for NMS), on a background of anchors below it; and a stress head
(uniformly random class scores: ~21 500 candidates per image, B = 16).
Methods (wall time per batch, device synced around each call, median of repeats):
  obbmeta_cuda         yolo_obb: the fused decode, one device-to-host read of the counts, a list of OrientedBoxes
  obbmeta_cuda_padded  yolo_obb_padded: (B, max_det, ...) tables on the device, no host sync inside
  obbmeta_cuda_graph   yolo_obb_padded captured in a CUDA graph, replayed
  ultralytics          non_max_suppression(rotated=True) + scale_boxes per image (Ultralytics 8.4.190)
  axis_aligned_anchor  the same filter, then torchvision's batched_nms on the candidates' bounding boxes
  obbmeta_cpu          one CPU core, for ratios only
Results: results/decode.json and .png.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import peers  # noqa: E402
import reference  # noqa: E402
from _common import RESULTS, arguments, cuda_sync, graph_of, median_time, write_json  # noqa: E402

from obbmeta import Letterbox  # noqa: E402
from obbmeta.decode import yolo_obb, yolo_obb_padded  # noqa: E402
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


def stress_head(batch: int = 16, seed: int = 7) -> torch.Tensor:
    """Uniformly random boxes and class scores: nearly every anchor has a class above conf 0.25."""
    rng = np.random.default_rng(seed)
    out = np.empty((batch, 4 + NC + 1, ANCHORS), np.float32)
    out[:, 0:2] = rng.uniform(0, SIZE, (batch, 2, ANCHORS))
    out[:, 2:4] = rng.uniform(8, 80, (batch, 2, ANCHORS))
    out[:, 4:4 + NC] = rng.uniform(0, 1, (batch, NC, ANCHORS))
    out[:, -1] = rng.uniform(-np.pi, np.pi, (batch, ANCHORS))
    return torch.from_numpy(out)


def axis_aligned_anchor(out, conf, iou):
    from torchvision.ops import batched_nms

    x = out.transpose(1, 2)
    scores, labels = x[..., 4:-1].max(-1)
    img, anchor = (scores > conf).nonzero(as_tuple=True)
    xywhr = torch.cat((x[img, anchor, :4], x[img, anchor, -1:]), 1)
    keep = batched_nms(obb_to_aabb(xywhr), scores[img, anchor], img * NC + labels[img, anchor], iou)
    return keep, torch.bincount(img[keep], minlength=out.shape[0]).tolist()


GOALS_MS = {1: 0.15, 16: 0.5, "stress": 10.0}  # issue 12, obbmeta on the H200



def main():
    ap = arguments(__doc__, repeats=30)
    args = ap.parse_args()
    cuda = torch.cuda.is_available()
    lb = Letterbox.fit((3840, 2160), (SIZE, SIZE))
    ultra = peers.ultralytics_decode() if cuda else None
    sync = cuda_sync()
    rows = []
    for batch in (1, 4, 16, "stress"):
        out = stress_head() if batch == "stress" else head_output(batch)
        b = out.shape[0]
        row = {"batch": batch, "images": b, "anchors": ANCHORS, "classes": NC, "goal_ms": GOALS_MS.get(batch),
               "methods": {}, "peak_memory_bytes": {}}
        dets = yolo_obb(out, conf=0.25, iou=0.5, letterbox=lb)
        row["kept_per_image"] = [len(d) for d in dets]
        row["candidates_per_image"] = (out[:, 4:-1].amax(1) > 0.25).sum(1).tolist()
        cpu_repeats = 1 if batch == "stress" else 3
        row["methods"]["obbmeta_cpu"] = median_time(lambda: yolo_obb(out, conf=0.25, iou=0.5, letterbox=lb),
                                                    cpu_repeats, 0 if batch == "stress" else 1)
        if cuda:
            g = out.cuda()
            gd = yolo_obb(g, conf=0.25, iou=0.5, letterbox=lb)
            row["same_boxes_cpu_cuda"] = all(
                torch.equal(x.labels, y.labels.cpu()) and torch.equal(x.scores, y.scores.cpu())
                and torch.allclose(x.xywhr, y.xywhr.cpu(), rtol=0, atol=1e-2) for x, y in zip(dets, gd))
            replay, padded = graph_of(lambda: yolo_obb_padded(g, conf=0.25, iou=0.5, letterbox=lb))
            replay()
            row["graph_replay_equals_eager"] = all(
                torch.equal(x.labels, y.labels) and torch.equal(x.xywhr, y.xywhr) for x, y in zip(padded.unpad(), gd))
            methods = {"obbmeta_cuda": lambda: yolo_obb(g, conf=0.25, iou=0.5, letterbox=lb),
                       "obbmeta_cuda_padded": lambda: yolo_obb_padded(g, conf=0.25, iou=0.5, letterbox=lb),
                       "obbmeta_cuda_graph": replay}
            if ultra is not None:
                methods["ultralytics"] = lambda: ultra(g, 0.25, 0.5, 300, (SIZE, SIZE), (2160, 3840))
                row["ultralytics_kept_per_image"] = [len(d) for d in methods["ultralytics"]()]
            try:
                axis_aligned_anchor(g[:1], 0.25, 0.5)
                methods["axis_aligned_anchor"] = lambda: axis_aligned_anchor(g, 0.25, 0.5)
            except ImportError as exc:
                print(f"[skip] torchvision: {exc}", file=sys.stderr)
            for name, fn in methods.items():
                slow = batch == "stress" and name in ("ultralytics", "axis_aligned_anchor")
                row["methods"][name] = median_time(fn, 5 if slow else args.repeats, 2, sync)
                if name != "obbmeta_cuda_graph":
                    row["peak_memory_bytes"][name] = peers.peak_memory(fn)
        rows.append(row)
        print(batch, row["kept_per_image"][:2], {k: f"{v['median_s'] * 1e3:.3f} ms" for k, v in row["methods"].items()},
              {k: v for k, v in row.items() if k.startswith("same") or k.startswith("graph")}, flush=True)
    path = write_json("decode", {
        "unit": "seconds per batch (median of repeats, device synced around each call)", "rows": rows,
        "versions": {"torch": torch.__version__, **peers.versions()},
        "note": "CPU figures are for ratios; obbmeta_cuda includes its one host read, _padded none, _graph is a "
                "CUDA-graph replay; Ultralytics is its own decode (Fast-NMS on ProbIoU), timed, not compared"})
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
    ax.set_xticks(x, [f"batch {r['batch']}" if r["batch"] != "stress" else "stress (B=16)" for r in rows])
    ax.set_yscale("log")
    ax.set_ylabel("ms per batch (median)")
    ax.set_title(f"YOLO-OBB decode, {ANCHORS} anchors x {NC} classes per image")
    ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / "decode.png", dpi=120)


if __name__ == "__main__":
    main()
