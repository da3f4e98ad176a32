"""Upright crops of rotated boxes: obbmeta.ops.crop_rotated against a per-object cv2.warpAffine loop, a batched
torch grid_sample (affine_grid), and mmcv's roi_align_rotated when mmcv is importable.

    python benchmarks/crop.py [--device cuda|cpu] [--sizes 10 100 1000 10000] [--repeats 30] [--quick]

Scene: 16 frames of 1920x1080 RGBA uint8, channel-last with rows pitched to 2048 pixels (8192 bytes), as the zero-copy
NVMM views of obbmeta.frames are (CUDA tensors on CUDA); K boxes spread over the frames (centres anywhere in the
frame, w 16-400 px, h 8-64 px, any angle); every method makes K crops of 32x128 of the RGB channels.

- obbmeta: ``crop_rotated(frames, table, (32, 128), channels=(0, 1, 2))`` with the (K, 6) table on the frames'
  device, uint8 and float32 output; on CUDA also with the table on the host (the secondary element's case: boxes
  read from the frame metadata, checked on the host, uploaded without a sync), and with ``check_boxes`` on a CUDA
  table (one sync).
- cv2 loop: one ``cv2.warpAffine`` (INTER_LINEAR, WARP_INVERSE_MAP, BORDER_CONSTANT) per object into a preallocated
  (K, 32, 128, 4) uint8 array, on host frames (a GPU pipeline would first download the frames: not timed, in the
  loop's favour); the inverse maps are built in the loop, as a user would.
- grid_sample: theta per box, ``affine_grid`` (align_corners=False), the grids of each frame's boxes stacked into
  one (16, n_max * 32, 128, 2) grid, one ``grid_sample`` (bilinear, zeros), gathered back to (K, 3, 32, 128):
  "grid_sample" on frames already converted to float NCHW, "grid_sample + frame conversion" including the
  conversion of the 16 uint8 RGBA frames to (16, 3, 1080, 1920) float32 that grid_sample needs.
- mmcv roi_align_rotated (sampling_ratio=1, aligned=True, clockwise=True) on the converted frames, when importable.

Times: CUDA: wall time per call with a CUDA sync around each call (Python included, median of ``--repeats``), and
for obbmeta the stream time between CUDA events. CPU: CPU time of this process pinned to one core with one thread
(the development machine's 2 cores are shared, so wall time would measure the neighbours); CPU figures are for ratios.
Agreement with obbmeta is reported per size: cv2 (uint8, levels), grid_sample (float32, fill 0) and mmcv.
Results: benchmarks/results/crop.json / crop.png (CUDA), crop_cpu.json / crop_cpu.png (CPU).
"""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, arguments, budget_time, cuda_event_time, median_time, pin_to_one_core, write_json  # noqa: E402

from obbmeta.ops import crop_rotated  # noqa: E402

FRAMES, HEIGHT, WIDTH, PITCH = 16, 1080, 1920, 2048
OUT_H, OUT_W = 32, 128
GOAL_S = 0.3e-3  # issue 20: 1 000 crops of 32x128 from 16 1080p frames on the H200, median


def scene(k: int, seed: int = 0):
    """(host frames as pitched HWC uint8 views, (K, 6) float32 table, slot of each box within its frame)."""
    rng = np.random.default_rng(seed)
    frames = []
    for _ in range(FRAMES):
        storage = torch.from_numpy(rng.integers(0, 256, (HEIGHT, PITCH, 4), dtype=np.uint8))
        frames.append(storage[:, :WIDTH])
    table = np.c_[rng.integers(0, FRAMES, k), rng.uniform(0, WIDTH, k), rng.uniform(0, HEIGHT, k),
                  rng.uniform(16, 400, k), rng.uniform(8, 64, k), rng.uniform(-math.pi, math.pi, k)].astype(np.float32)
    slots = np.zeros(k, np.int64)
    seen = np.zeros(FRAMES, np.int64)
    for i, b in enumerate(table[:, 0].astype(np.int64)):
        slots[i], seen[b] = seen[b], seen[b] + 1
    return frames, torch.from_numpy(table), torch.from_numpy(slots), int(seen.max())


def cv2_loop(cv2, frames_np, table_np, out):
    """One warpAffine per object: the inverse map from crop pixel centres to frame pixel centres."""
    flags = cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP
    for k, (b, cx, cy, w, h, a) in enumerate(table_np):
        c, s = math.cos(a), math.sin(a)
        sx, sy = w / OUT_W, h / OUT_H
        s0, t0 = 0.5 * sx - 0.5 * w, 0.5 * sy - 0.5 * h
        m = np.array([[sx * c, -sy * s, cx - 0.5 + s0 * c - t0 * s], [sx * s, sy * c, cy - 0.5 + s0 * s + t0 * c]])
        cv2.warpAffine(frames_np[int(b)], m, (OUT_W, OUT_H), dst=out[k], flags=flags,
                       borderMode=cv2.BORDER_CONSTANT, borderValue=(0, 0, 0, 0))
    return out


def to_nchw_float(frames):
    return torch.stack([f[..., :3] for f in frames]).permute(0, 3, 1, 2).float()


def grid_sample_crops(frames_f, table, slots, n_max):
    """Batched grid_sample: (K, 3, 32, 128) float32 crops of (16, 3, H, W) float frames."""
    b = table[:, 0].long()
    cx, cy, w, h, a = table[:, 1:].unbind(1)
    c, s = torch.cos(a), torch.sin(a)
    hf, wf = frames_f.shape[-2:]
    theta = torch.stack([torch.stack([w * c / wf, -h * s / wf, 2 * cx / wf - 1], 1),
                         torch.stack([w * s / hf, h * c / hf, 2 * cy / hf - 1], 1)], 1)
    grid = F.affine_grid(theta, [table.shape[0], 1, OUT_H, OUT_W], align_corners=False)
    stacked = grid.new_zeros(frames_f.shape[0], n_max, OUT_H, OUT_W, 2)
    stacked[b, slots] = grid
    out = F.grid_sample(frames_f, stacked.view(frames_f.shape[0], n_max * OUT_H, OUT_W, 2), mode="bilinear",
                        padding_mode="zeros", align_corners=False)
    return out.view(frames_f.shape[0], 3, n_max, OUT_H, OUT_W).permute(0, 2, 1, 3, 4)[b, slots]


def mmcv_roi_align_rotated():
    try:
        from mmcv.ops import roi_align_rotated
    except Exception as exc:  # ImportError, or a build without its compiled ops
        print(f"mmcv roi_align_rotated: not measured ({type(exc).__name__}: {exc})")
        return None
    return lambda frames_f, table: roi_align_rotated(frames_f, table, (OUT_H, OUT_W), 1.0, 1, True, True)


def cpu_time(fn, repeats: int) -> dict:
    """CPU seconds of this process per call (median; one warm-up call)."""
    fn()

    def measure():
        t0 = time.process_time()
        fn()
        return time.process_time() - t0

    return budget_time(measure, budget_s=20.0, min_repeats=min(3, repeats), max_repeats=repeats)


def levels(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.float() - b.float()).abs().max()) if a.numel() else 0.0


def main():
    ap = arguments(__doc__, quick=True, repeats=30)
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000, 10000])
    args = ap.parse_args()
    cuda = args.device == "cuda"
    repeats = 5 if args.quick else args.repeats
    pinned = "not pinned (CUDA timings)"
    if not cuda:
        pinned = pin_to_one_core()
        torch.set_num_threads(1)
    try:
        import cv2

        cv2.setNumThreads(1)
    except ImportError:
        cv2 = None
        print("cv2: not measured (opencv-python-headless is not installed)")
    mmcv = mmcv_roi_align_rotated()
    rows = []
    for k in args.sizes:
        frames, table, slots, n_max = scene(k)
        dev = torch.device(args.device)
        dframes = frames
        if cuda:  # pitched on the device too: the views the kernels read are NVMM-like
            dframes = [torch.empty(HEIGHT, PITCH, 4, dtype=torch.uint8, device=dev)[:, :WIDTH].copy_(f) for f in frames]
        dtable, dslots = table.to(dev), slots.to(dev)
        sync = torch.cuda.synchronize if cuda else None

        def timed(fn, n=repeats):
            return median_time(fn, n, 3, sync) if cuda else cpu_time(fn, n)

        row = {"n": k, "frames": f"{FRAMES} x {WIDTH}x{HEIGHT} RGBA uint8, rows pitched to {PITCH} px",
               "crop": f"{OUT_H}x{OUT_W} RGB", "methods": {}, "agreement": {}}
        m = row["methods"]
        u8 = lambda: crop_rotated(dframes, dtable, (OUT_H, OUT_W), channels=(0, 1, 2))  # noqa: E731
        f32 = lambda: crop_rotated(dframes, dtable, (OUT_H, OUT_W), channels=(0, 1, 2),  # noqa: E731
                                   out_dtype=torch.float32)
        m["obbmeta uint8"] = timed(u8)
        m["obbmeta float32"] = timed(f32)
        if cuda:
            m["obbmeta uint8, host table"] = timed(lambda: crop_rotated(dframes, table, (OUT_H, OUT_W),
                                                                         channels=(0, 1, 2)))
            m["obbmeta uint8, check_boxes=False"] = timed(lambda: crop_rotated(dframes, dtable, (OUT_H, OUT_W),
                                                                                channels=(0, 1, 2), check_boxes=False))
            m["obbmeta uint8 stream time"] = cuda_event_time(
                lambda: crop_rotated(dframes, dtable, (OUT_H, OUT_W), channels=(0, 1, 2), check_boxes=False), repeats)
        ours_u8, ours_f32 = u8(), f32()
        if cv2 is not None:
            frames_np = [f.numpy() for f in frames]
            table_np = table.numpy()
            out = np.empty((k, OUT_H, OUT_W, 4), np.uint8)
            loop = lambda: cv2_loop(cv2, frames_np, table_np, out)  # noqa: E731
            m["cv2.warpAffine loop (host)"] = cpu_time(loop, max(3, repeats // 3)) if not cuda else median_time(
                loop, max(3, repeats // 3), 1)
            want = torch.from_numpy(cv2_loop(cv2, frames_np, table_np, out)[..., :3]).permute(0, 3, 1, 2)
            row["agreement"]["cv2 max levels (uint8)"] = levels(ours_u8.cpu(), want)
        frames_f = to_nchw_float(dframes)
        m["grid_sample"] = timed(lambda: grid_sample_crops(frames_f, dtable, dslots, n_max))
        m["grid_sample + frame conversion"] = timed(
            lambda: grid_sample_crops(to_nchw_float(dframes), dtable, dslots, n_max), max(3, repeats // 3))
        row["agreement"]["grid_sample max difference (float32, 0-255)"] = levels(
            ours_f32, grid_sample_crops(frames_f, dtable, dslots, n_max))
        if mmcv is not None:
            m["mmcv roi_align_rotated"] = timed(lambda: mmcv(frames_f, dtable))
            theirs = mmcv(frames_f, dtable)
            row["agreement"]["mmcv max difference (float32, 0-255)"] = levels(ours_f32, theirs)
            row["agreement"]["mmcv share of values more than 1 apart"] = float(
                ((ours_f32 - theirs).abs() > 1).float().mean())
        frames_f = None  # 400 MB: free before the next size
        if cuda:
            loop_s = m.get("cv2.warpAffine loop (host)", {}).get("median_s")
            row["obbmeta_faster_than_loop"] = loop_s is None or m["obbmeta uint8"]["median_s"] < loop_s
        rows.append(row)
        print(k, {name: f"{v['median_s'] * 1e3:.3f} ms" for name, v in m.items()}, row["agreement"], flush=True)
    name = "crop" if cuda else "crop_cpu"
    payload = {"unit": "seconds per call (median)", "device": args.device, "timing": (
        "CUDA-synchronised wall time per call, Python included; stream time between CUDA events" if cuda else
        "CPU time of this process (one thread, " + pinned + ")"), "rows": rows,
        "note": "CPU figures are for ratios within this run; absolute times count on the GPU"}
    if cuda:
        head = next((r for r in rows if r["n"] == 1000), None)
        forms = ("obbmeta uint8", "obbmeta uint8, host table", "obbmeta uint8, check_boxes=False", "obbmeta float32")
        met = None if head is None else {f: head["methods"][f]["median_s"] <= GOAL_S for f in forms}
        payload["goal"] = {"what": "1 000 crops of 32x128 from 16 1080p frames, median wall time", "seconds": GOAL_S,
                           "met": met}
    path = write_json(name, payload)
    plot(rows, name, cuda, args.device)
    print(f"wrote {path}")


def plot(rows, name: str, cuda: bool, device: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for method in sorted({m for r in rows for m in r["methods"]}):
        pts = [(r["n"], r["methods"][method]["median_s"] * 1e3) for r in rows if method in r["methods"]]
        ax.plot(*zip(*pts), marker="o", label=method)
    if cuda:
        ax.axhline(GOAL_S * 1e3, color="gray", linestyle="--", linewidth=1, label="goal at 1 000: 0.3 ms")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"crops of {OUT_H}x{OUT_W} from {FRAMES} 1080p RGBA frames")
    ax.set_ylabel("ms per call (median)" + ("" if cuda else ", CPU time, one core"))
    ax.set_title(f"Upright rotated crops ({device})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(RESULTS / f"{name}.png", dpi=120)


if __name__ == "__main__":
    main()
