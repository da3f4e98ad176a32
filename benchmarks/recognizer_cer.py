"""The document demo's text recogniser on held-out video frames: CER with upright rotated crops vs nvinfer-style
axis-aligned crops, overall and by how far each line is tilted from horizontal.

Frames: held-out document videos (seeds from ``HELDOUT_SEED``, never used in training) at ``--size`` with text
``--scale``: the demo's own video (``obbmeta demo --scene document`` renders seed ``HELDOUT_SEED``, 30 frames; its
page happens to lie nearly level) and ``--videos`` more, ``--frames`` frames each (every 10th), for pages at other
angles.
Lines: every ground-truth line wholly inside its frame (a line cut by the frame edge cannot be read whole; the
JSON also gives the CER over every line whose centre is in the frame). Crops, both 32 rows high with the width by
the cropped box's aspect ratio, cut by ``obbmeta.ops.crop_rotated`` through ``obbmeta.secondary.SecondaryModel``
(what ``obbinfer process-mode=2`` runs), batched by width and padded with 114:

* rotated: the ground-truth box along its long side (``obbmeta.conventions.to_le90``; its angle is only known
  modulo pi, so about a third of the crops are upside down and the model's orientation head turns them), grown by
  8 % of the line height per side, cropped upright (bilinear, OpenCV's warpAffine convention);
* aabb: the axis-aligned box around that padded rectangle (what nvinfer's secondary mode crops from
  ``rect_params``), cropped as it is at its own aspect ratio (no distortion: the most it can give).

Tilt buckets: the long side's angle from horizontal, folded into [0, 90] degrees. Also the bundled document
detector's mAP50 on the same frames (letterboxed to its 256 input, as the demo's pipeline would run it at
``--input-size {size / scale}``), to show the detector still finds the lines at this scale.

Usage: python benchmarks/recognizer_cer.py [--size 512 --scale 2 --videos 40 --frames 3] [--weights FILE] [--quick]
  -> benchmarks/results/recognizer_cer.{json,png}
"""
from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, arguments, write_json  # noqa: E402

from obbmeta.conventions import to_le90  # noqa: E402
from obbmeta.eval.text import error_counts  # noqa: E402
from obbmeta.models import load_demo_model, load_recognizer, load_text_recognizer  # noqa: E402
from obbmeta.models.data import HELDOUT_SEED  # noqa: E402
from obbmeta.models.train_recognizer import aabb_boxes, pad_boxes  # noqa: E402
from obbmeta.scenes.document import DocumentScene  # noqa: E402
from obbmeta.secondary import SecondaryModel  # noqa: E402

BUCKETS = ((0.0, 5.0), (5.0, 15.0), (15.0, 45.0), (45.0, 90.01))
PAD = 0.08


def bucket_name(lo, hi):
    return f"{lo:g}-{min(hi, 90):g}" if hi <= 90 else f">{lo:g}"


def _score(preds, refs, tilts):
    edits, chars = error_counts(preds, refs)
    out = {"lines": len(refs), "characters": chars, "edits": edits, "cer": round(edits / max(chars, 1), 5),
           "exact_lines": round(sum(p == r for p, r in zip(preds, refs)) / max(len(refs), 1), 4)}
    out["by_tilt"] = {}
    for lo, hi in BUCKETS:
        sel = [i for i, t in enumerate(tilts) if lo <= t < hi]
        if not sel:
            out["by_tilt"][bucket_name(lo, hi)] = None
            continue
        e, c = error_counts([preds[i] for i in sel], [refs[i] for i in sel])
        out["by_tilt"][bucket_name(lo, hi)] = {"lines": len(sel), "characters": c, "cer": round(e / max(c, 1), 5)}
    sel = [i for i, t in enumerate(tilts) if t >= 15.0]
    if sel:
        e, c = error_counts([preds[i] for i in sel], [refs[i] for i in sel])
        out["tilted_over_15"] = {"lines": len(sel), "characters": c, "cer": round(e / max(c, 1), 5)}
    return out


def measure(model, frames):
    """Per crop mode: strings for every wholly visible line, with its reference and tilt. Both modes crop with
    obbmeta.ops.crop_rotated through obbmeta.secondary.SecondaryModel (what obbinfer process-mode=2 runs): rotated,
    the ground-truth box along its long side with 8 % of the line height around; aabb, the axis-aligned box of that
    padded rectangle, read as it is, its width by its own aspect ratio (undistorted)."""
    rotated = SecondaryModel(model, "text", crop_height=32, padding=PAD, reading="long-side", fill=114.0)
    aabb = SecondaryModel(model, "text", crop_height=32, padding=0.0, reading="as-is", fill=114.0)
    rows = {"rotated": [], "aabb": []}
    cut = {"rotated": [], "aabb": []}  # lines whose centre is inside but which reach out of the frame
    for f in frames:
        if not len(f.boxes):
            continue
        w, h = f.size
        poly = f.boxes.polygons()
        inside = ((poly[..., 0] >= 0) & (poly[..., 0] <= w) & (poly[..., 1] >= 0) & (poly[..., 1] <= h)).all(1)
        boxes = to_le90(f.boxes.xywhr)
        tilts = torch.rad2deg(boxes[:, 4].abs()).tolist()
        image = torch.from_numpy(f.image)
        index = torch.zeros(len(boxes), 1)
        for mode, sec, b in (("rotated", rotated, boxes), ("aabb", aabb, aabb_boxes(pad_boxes(boxes, PAD)))):
            results = sec([image], "RGB", torch.cat([index, b.float()], 1))
            strings = [r[0].label if r else "" for r in results]
            for i, text in enumerate(f.texts):
                (rows if inside[i] else cut)[mode].append((strings[i], text, tilts[i]))
    return rows, cut


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [bucket_name(lo, hi) for lo, hi in BUCKETS]
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for k, (mode, colour) in enumerate((("rotated", "tab:blue"), ("aabb", "tab:orange"))):
        vals = [(results[mode]["by_tilt"][n] or {}).get("cer", float("nan")) * 100 for n in names]
        xs = [i + (k - 0.5) * 0.38 for i in range(len(names))]
        ax.bar(xs, vals, 0.38, label=f"{mode} crops (overall {results[mode]['cer'] * 100:.1f} %)", color=colour)
        for x, v in zip(xs, vals):
            if not math.isnan(v):
                ax.text(x, v + 1, f"{v:.1f}", ha="center", fontsize=7)
    counts = [(results["rotated"]["by_tilt"][n] or {}).get("lines", 0) for n in names]
    ax.set_xticks(range(len(names)), [f"{n}°\n({c} lines)" for n, c in zip(names, counts)])
    ax.set_ylabel("CER %")
    ax.set_title("Recogniser CER by line tilt: upright rotated crops vs axis-aligned crops", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    ap = arguments(__doc__, quick=True)
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--scale", type=float, default=2.0)
    ap.add_argument("--videos", type=int, default=40, help="held-out videos besides the demo's")
    ap.add_argument("--frames", type=int, default=3, help="frames per video besides the demo's (30 frames)")
    ap.add_argument("--weights", type=Path, default=None, help="recogniser weights (default: the bundled ones)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--name", default="recognizer_cer", help="results/<name>.json and .png")
    args = ap.parse_args()
    demo_frames = 30
    if args.quick:
        args.videos, args.frames, demo_frames = 1, 3, 3
    torch.manual_seed(0)
    model = load_recognizer(args.weights, args.device) if args.weights else load_text_recognizer(args.device)
    t0 = time.perf_counter()
    seeds = [HELDOUT_SEED] + [HELDOUT_SEED + 60_000 + v for v in range(args.videos)]
    frames = []
    for k, seed in enumerate(seeds):
        scene = DocumentScene(seed, args.size, scale=args.scale)
        times = range(demo_frames) if k == 0 else range(0, 10 * args.frames, 10)  # others: every 10th frame
        frames += [scene.render(t) for t in times]
    gen_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    rows, cut = measure(model, frames[:demo_frames])
    n_demo = {m: len(rows[m]) for m in rows}
    more, more_cut = measure(model, frames[demo_frames:])
    for m in rows:
        rows[m] += more[m]
        cut[m] += more_cut[m]
    read_s = time.perf_counter() - t0
    results = {}
    for mode in ("rotated", "aabb"):
        preds, refs, tilts = (list(c) for c in zip(*rows[mode]))
        results[mode] = _score(preds, refs, tilts)
        demo = rows[mode][:n_demo[mode]]
        e, c = error_counts([r[0] for r in demo], [r[1] for r in demo])
        results[mode]["demo_video_only"] = {"lines": len(demo), "characters": c, "cer": round(e / max(c, 1), 5)}
        everything = rows[mode] + cut[mode]
        e, c = error_counts([r[0] for r in everything], [r[1] for r in everything])
        results[mode]["cer_with_lines_cut_by_the_frame_edge"] = {"lines": len(everything), "cer": round(e / c, 5)}
        results[mode]["examples"] = [{"truth": r[1], "read": r[0], "tilt_deg": round(r[2], 1)}
                                     for r in rows[mode][:: max(1, len(rows[mode]) // 12)][:12]]
    over = {m: (results[m].get("tilted_over_15") or {}).get("cer") for m in results}
    ratio = over["rotated"] / over["aabb"] if over["rotated"] is not None and over["aabb"] else None
    detector = None
    try:
        from obbmeta.models.evaluate import score

        detector = score(load_demo_model("document"), frames)
        detector = {k: detector[k] for k in ("map50", "ap50", "frames", "ground_truths")}
    except Exception as exc:  # e.g. the C core is not built: the CER figures stand alone
        detector = {"error": f"{type(exc).__name__}: {exc}"}
    goals = {"overall_rotated_cer_at_most_0.05": results["rotated"]["cer"] <= 0.05,
             "rotated_over_15deg_at_most_a_third_of_aabb": ratio is not None and ratio <= 1 / 3}
    path = write_json(args.name, {
        "what": "text recogniser CER on held-out document video frames: upright rotated crops vs axis-aligned crops "
                "of the ground-truth boxes, by tilt",
        "weights": str(args.weights) if args.weights else "bundled obbmeta/models/weights/recognizer.pt",
        "frames": {"videos": len(seeds), "seeds": seeds, "demo_video_frames": demo_frames,
                   "frames_per_other_video": args.frames, "size": args.size, "scale": args.scale,
                   "first_video_is_the_demo_video": True},
        "crops": {"op": "obbmeta.ops.crop_rotated via obbmeta.secondary.SecondaryModel", "height": 32,
                  "width": "the box's aspect ratio kept, the batch's widest rounded up to a multiple of 4, <= 1024",
                  "pad_per_side": f"{PAD} x line height", "batched": "32 crops by width, padded with 114"},
        "results": results, "rotated_over_aabb_cer_tilted_over_15": None if ratio is None else round(ratio, 4),
        "goals": goals, "document_detector_on_these_frames": detector,
        "seconds": {"generate": round(gen_s, 1), "read_both_modes": round(read_s, 1)},
        "load_average_at_end": os.getloadavg(), "quick": args.quick})
    plot(results, RESULTS / f"{args.name}.png")
    print(f"rotated CER {results['rotated']['cer']:.4f}, aabb CER {results['aabb']['cer']:.4f}; tilted > 15°: "
          f"{over['rotated']} vs {over['aabb']} (ratio {ratio}); goals {goals}; detector {detector.get('map50')}")
    print(path)


if __name__ == "__main__":
    main()
