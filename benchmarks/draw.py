"""Rotated-box outline drawing: obbmeta.osd.draw_obbs on CUDA (absolute times) and on the CPU (as a ratio).

    python benchmarks/draw.py [--repeats 50]

Frames: 1920x1080 and 3840x2160 RGBA uint8; 100 and 1000 boxes (20-200 px, any angle), thickness 2. GPU times
are CUDA-synchronised wall times per call (median, Python included) and, separately, the stream time between
CUDA events around each call. A device-to-device copy
of the same frame, timed in the same run, is the anchor. Results: benchmarks/results/draw.json and .png.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, arguments, cuda_event_time, cuda_sync, median_time, write_json  # noqa: E402

from obbmeta import OrientedBoxes  # noqa: E402
from obbmeta.osd import draw_obbs  # noqa: E402


def scene(n, width, height, seed=0):
    rng = np.random.default_rng(seed)
    b = np.c_[rng.uniform(0, width, n), rng.uniform(0, height, n), rng.uniform(20, 200, (n, 2)),
              rng.uniform(-3.2, 3.2, n)]
    return OrientedBoxes(b.astype(np.float32), np.ones(n, np.float32), rng.integers(0, 20, n))


def main():
    ap = arguments(__doc__, repeats=50)
    args = ap.parse_args()
    cuda = torch.cuda.is_available()
    rows = []
    for width, height in [(1920, 1080), (3840, 2160)]:
        for n in (100, 1000):
            boxes = scene(n, width, height)
            row = {"frame": f"{width}x{height} RGBA", "boxes": n, "thickness": 2, "methods": {}}
            frame = torch.zeros(height, width, 4, dtype=torch.uint8)
            row["methods"]["cpu"] = median_time(lambda: draw_obbs(frame, boxes, thickness=2), 5, 1)
            if cuda:
                gframe, gboxes = frame.cuda(), boxes.to("cuda")
                sync = cuda_sync()
                row["methods"]["cuda"] = median_time(lambda: draw_obbs(gframe, gboxes, thickness=2), args.repeats, 5,
                                                     sync)
                row["methods"]["cuda_stream_time"] = cuda_event_time(lambda: draw_obbs(gframe, gboxes, thickness=2),
                                                                     args.repeats)
                other = torch.empty_like(gframe)
                row["methods"]["cuda_frame_copy_anchor"] = median_time(lambda: other.copy_(gframe), args.repeats, 5,
                                                                       sync)
                row["same_pixels_cpu_cuda"] = bool(torch.equal(gframe.cpu(), frame))
                row["cpu_over_cuda"] = row["methods"]["cpu"]["median_s"] / row["methods"]["cuda"]["median_s"]
            rows.append(row)
            print(row["frame"], n, {k: f"{v['median_s'] * 1e3:.4f} ms" for k, v in row["methods"].items()}, flush=True)
    path = write_json("draw", {"unit": "seconds (median of repeats)", "rows": rows,
                               "note": "absolute times count on the GPU only; CPU figures are for ratios"})
    if cuda:
        plot(rows)
    print(f"wrote {path}")


def plot(rows):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{r['frame'].split()[0]}\n{r['boxes']} boxes" for r in rows]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.bar(x - 0.2, [r["methods"]["cuda"]["median_s"] * 1e3 for r in rows], 0.4, label="draw_obbs (CUDA)")
    ax.bar(x + 0.2, [r["methods"]["cuda_frame_copy_anchor"]["median_s"] * 1e3 for r in rows], 0.4,
           label="frame copy (anchor)")
    ax.axhline(0.2, color="gray", linestyle="--", linewidth=1, label="goal: 0.2 ms")
    ax.set_xticks(x, labels)
    ax.set_ylabel("ms per call (median)")
    ax.set_title("Rotated-box outlines on the GPU, thickness 2")
    ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / "draw.png", dpi=120)


if __name__ == "__main__":
    main()
