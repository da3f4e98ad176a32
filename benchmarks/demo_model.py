"""The demo detectors on the CPU: held-out accuracy (obbmeta.eval), inference speed, and scene-generation speed.

Accuracy: mAP at IoU 0.5 (VOC all-point area AP, ``obbmeta.eval.evaluate``) of the bundled weights on held-out
scenes — frame 0 of 200 scenes (seeds from ``HELDOUT_SEED``, never used in training) and all 30 frames of one
held-out video per scene (the demo's input) — at 256x256, decoded with ``obbmeta.decode.yolo_obb`` (conf 0.01 to
trace the whole precision-recall curve, greedy rotated NMS at IoU 0.5).

Speed (``_common.median_time``, median of repeats, torch on this machine's cores): the model's forward pass on one
256x256 frame (batch 1 and 4), and one frame end to end (letterbox + forward + decode at conf 0.25); the scene
generators: building a new scene with its first frame, and rendering a further frame of a video, at 256 and 640.

Usage: python benchmarks/demo_model.py [--quick]  -> benchmarks/results/demo_model.{json,png}
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, arguments, median_time, write_json  # noqa: E402

from obbmeta import decode, scenes  # noqa: E402
from obbmeta.models import letterbox_frames, load_demo_model  # noqa: E402
from obbmeta.models.data import HELDOUT_SEED, heldout_frames  # noqa: E402
from obbmeta.models.evaluate import EVAL_CONF, NMS_IOU, predict, score  # noqa: E402

SIZE = 256
VIDEO_SEED = HELDOUT_SEED + 50_000


def accuracy(scene: str, model, n_frames: int):
    frames = heldout_frames(scene, n_frames, SIZE)
    out = {"frames": score(model, frames), "video": score(model, list(scenes.video(scene, VIDEO_SEED, 30, SIZE)))}
    out["frames"]["seeds"] = f"{HELDOUT_SEED}..{HELDOUT_SEED + n_frames - 1}, frame 0 of each"
    out["video"]["seeds"] = f"{VIDEO_SEED}, frames 0..29"
    return out, frames


def speed(model, frames, repeats: int) -> dict:
    one = torch.from_numpy(frames[0].image)
    x1, lb = letterbox_frames(one, SIZE)
    x4, _ = letterbox_frames([torch.from_numpy(f.image) for f in frames[:4]], SIZE)

    def end_to_end():
        x, lb = letterbox_frames(one, SIZE)
        decode.yolo_obb(model(x), conf=0.25, iou=NMS_IOU, letterbox=lb)

    with torch.inference_mode():
        fwd1 = median_time(lambda: model(x1), repeats, warmup=3)
        fwd4 = median_time(lambda: model(x4), max(3, repeats // 4), warmup=1)
        e2e = median_time(end_to_end, repeats, warmup=2)
    return {"forward_batch1": fwd1, "forward_batch4": fwd4, "end_to_end_batch1": e2e,
            "fps_forward_batch1": round(1 / fwd1["median_s"], 1), "fps_forward_batch4": round(4 / fwd4["median_s"], 1),
            "fps_end_to_end_batch1": round(1 / e2e["median_s"], 1)}


def generator_speed(scene: str, repeats: int) -> dict:
    cls = scenes.scene_class(scene)
    out = {}
    for size in (256, 640):
        seeds = iter(range(HELDOUT_SEED + 90_000, HELDOUT_SEED + 100_000))
        build = median_time(lambda: cls(next(seeds), size).render(0), repeats, warmup=1)
        sc = cls(HELDOUT_SEED + 3, size)
        ts = iter(range(1, 10_000))
        render = median_time(lambda: sc.render(next(ts)), repeats, warmup=1)
        out[str(size)] = {"new_scene_and_first_frame": build, "next_video_frame": render}
    return out


def picture(rows, path):
    from PIL import Image

    from obbmeta.osd import draw_obbs

    tiles = []
    for model, frames in rows:
        dets = predict(model, [f.image for f in frames], conf=0.3, iou=NMS_IOU)
        tile = []
        for f, d in zip(frames, dets):
            im = torch.from_numpy(f.image.copy())
            draw_obbs(im, d, thickness=1)
            tile.append(im.numpy())
        tiles.append(np.concatenate(tile, 1))
    Image.fromarray(np.concatenate(tiles, 0)).save(path)


def main():
    ap = arguments(__doc__, quick=True)
    args = ap.parse_args()
    n_frames, repeats = (20, 5) if args.quick else (200, 30)
    torch.manual_seed(0)
    results, shown = {}, []
    for scene in ("aerial", "document"):
        model = load_demo_model(scene)
        acc, frames = accuracy(scene, model, n_frames)
        results[scene] = {"class_names": model.class_names, "input_size": model.input_size,
                          "parameters": sum(p.numel() for p in model.parameters()), "heldout": acc,
                          "cpu_inference": speed(model, frames, repeats),
                          "generator": generator_speed(scene, max(5, repeats // 2))}
        shown.append((model, frames[:4]))
        print(scene, results[scene]["heldout"], results[scene]["cpu_inference"]["fps_forward_batch1"], flush=True)
    picture(shown, RESULTS / "demo_model.png")
    path = write_json("demo_model", {
        "what": "bundled demo detectors: held-out mAP50 (obbmeta.eval), CPU inference and scene-generation times",
        "size": SIZE, "eval": {"conf": EVAL_CONF, "nms_iou": NMS_IOU, "metric": "VOC all-point (area) AP at IoU 0.5"},
        "load_average_at_end": os.getloadavg(), "quick": args.quick, "results": results})
    print(path)


if __name__ == "__main__":
    main()
