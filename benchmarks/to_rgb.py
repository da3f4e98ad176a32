"""obbmeta.frames.pixels.to_rgb: one frame of a DeepStream format to the model's (3, H, W) float RGB, on CUDA (absolute
times) and on the CPU (as a ratio).

    python benchmarks/to_rgb.py [--repeats 50] [--quick]

Frames: 1280x720 and 1920x1080, pitched planes (rows padded to 512 bytes, as NVIDIA's allocator pads them) in the
formats a decoder -> nvstreammux -> obbinfer pipeline hands over (NV12_709, YUV420_709, P010 NV12_10LE_709) and a
few others (UYVY, RGBA, BGRx, GRAY8). GPU times are CUDA-synchronised wall times per call (median, Python included)
and the stream time between CUDA events around each call; the anchor is a device-to-device copy of the (3, H, W)
float32 output, which every conversion must at least write. Results: benchmarks/results/to_rgb.json and .png.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, arguments, cuda_event_time, cuda_sync, median_time, write_json  # noqa: E402

from obbmeta.frames import pixels  # noqa: E402

FORMATS = ("NV12_709", "YUV420_709", "NV12_10LE_709", "UYVY", "RGBA", "BGRx", "GRAY8")
SIZES = ((1280, 720), (1920, 1080))
ROW_ALIGN = 512


def frame(name: str, width: int, height: int, device: str):
    """A random frame of ``name`` whose planes are views of row-padded storage."""
    fmt = pixels.FORMATS[name]
    rng = np.random.default_rng(0)
    planes = []
    for spec, (rows, cols, comps) in zip(fmt.planes, fmt.shapes(width, height)):
        dtype = torch.uint16 if spec.depth == 2 else torch.uint8
        pitch = -(-cols * comps * spec.depth // ROW_ALIGN) * ROW_ALIGN // spec.depth
        store = torch.from_numpy(rng.integers(0, 256, (rows, pitch), dtype=np.uint8)).to(dtype).to(device)
        planes.append(store[:, : cols * comps].view(rows, cols, comps))
    return planes[0] if fmt.packed else tuple(planes)


def main():
    ap = arguments(__doc__, quick=True, repeats=50)
    args = ap.parse_args()
    repeats = 5 if args.quick else args.repeats
    cuda = torch.cuda.is_available()
    rows = []
    for width, height in SIZES:
        for name in FORMATS:
            row = {"format": name, "frame": f"{width}x{height}", "methods": {}}
            cpu = frame(name, width, height, "cpu")
            row["methods"]["cpu"] = median_time(lambda: pixels.to_rgb(cpu, name), 3 if args.quick else 10, 1)
            if cuda:
                gpu = frame(name, width, height, "cuda")
                sync = cuda_sync()
                row["methods"]["cuda"] = median_time(lambda: pixels.to_rgb(gpu, name), repeats, 5, sync)
                row["methods"]["cuda_stream_time"] = cuda_event_time(lambda: pixels.to_rgb(gpu, name), repeats)
                out = torch.empty(3, height, width, device="cuda")
                other = torch.empty_like(out)
                row["methods"]["cuda_output_copy_anchor"] = median_time(lambda: other.copy_(out), repeats, 5, sync)
                row["same_rgb_cpu_cuda_levels"] = float((pixels.to_rgb(gpu, name).cpu()
                                                         - pixels.to_rgb(cpu, name)).abs().max()) * 255
                row["cpu_over_cuda"] = row["methods"]["cpu"]["median_s"] / row["methods"]["cuda"]["median_s"]
            rows.append(row)
            print(row["frame"], name, {k: f"{v['median_s'] * 1e3:.3f} ms" for k, v in row["methods"].items()},
                  flush=True)
    path = write_json("to_rgb", {"unit": "seconds (median of repeats)", "rows": rows,
                                 "note": "absolute times count on the GPU only; CPU figures are for ratios"
                                 + ("" if cuda else " (this run had no GPU: CPU only)")})
    if cuda:
        plot(rows)
    print(f"wrote {path}")


def plot(rows):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(SIZES), figsize=(11, 4.5), sharey=True)
    for ax, (width, height) in zip(axes, SIZES):
        mine = [r for r in rows if r["frame"] == f"{width}x{height}"]
        x = np.arange(len(mine))
        ax.bar(x - 0.2, [r["methods"]["cuda_stream_time"]["median_s"] * 1e3 for r in mine], 0.4,
               label="to_rgb (CUDA stream time)")
        ax.bar(x + 0.2, [r["methods"]["cuda_output_copy_anchor"]["median_s"] * 1e3 for r in mine], 0.4,
               label="copy of the float output (anchor)")
        ax.set_xticks(x, [r["format"] for r in mine], rotation=30)
        ax.set_title(f"{width}x{height}")
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].set_ylabel("ms per frame (median)")
    axes[0].legend()
    fig.suptitle("One frame to the model's float RGB on the GPU")
    fig.tight_layout()
    fig.savefig(RESULTS / "to_rgb.png", dpi=120)


if __name__ == "__main__":
    main()
