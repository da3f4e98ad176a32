"""Train the harbour demo's secondary detector: containers on upright crops of ships, on the 2-core CPU.

    python -m obbmeta.models.train_containers --out DIR

Data (:func:`make_crops`): generated harbour scenes (:mod:`obbmeta.scenes.harbour`, seeds below ``HELDOUT_SEED``) at
512x512, scale 2, two frames per scene. Each frame's parents are what the demo's primary stage would find — the
bundled aerial detector's ships (input 256, conf 0.25), those matched to a true ship at rotated IoU >= 0.3 carrying
that ship's containers, the others none — plus every true ship with its box jittered (centre, size, angle), so the
model sees both the detector's boxes and a spread around the truth. Every parent is cropped exactly as
``obbinfer process-mode=2 input-size=256x64 crop-reading=long-side crop-padding=0.05 crop-fill=114`` crops it
(:meth:`obbmeta.secondary.SecondaryDetector.crops`, the Ultralytics preset: the box kept in proportion, centred,
pad 114), and each container of its ship whose centre is in the frame and in the crop is a target in the crop's
input pixels (the crop map inverted). Training: :class:`~obbmeta.models.OBBDetector` (one class, ``container``) with
:func:`~obbmeta.models.loss.detection_loss`, random horizontal / vertical flips of the crops (exact for the boxes),
brightness / contrast / noise jitter, AdamW with warm-up and cosine decay, an EMA of the weights saved as
``DIR/container.pt`` with ``DIR/container_train_log.json``. Seeded: the same arguments give the same crops, batches
and (on the CPU) weights.
"""
from __future__ import annotations

import argparse
import copy
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch

from ..scenes import HELDOUT_SEED
from .containers import (
    CLASS_NAMES,
    FILL,
    INPUT_SIZE,
    PADDING,
    PRIMARY_INPUT,
    READING,
    SCENE_SCALE,
    SCENE_SIZE,
    SHIP,
    secondary,
    to_crop,
)
from .schedule import cosine_lr, ema_update


def _jitter(rng: np.random.Generator, box) -> list:
    cx, cy, w, h, a = box
    du, dv = rng.normal(0, 0.03) * w, rng.normal(0, 0.08) * h
    c, s = math.cos(a), math.sin(a)
    return [cx + du * c - dv * s, cy + du * s + dv * c, w * rng.uniform(0.93, 1.07), h * rng.uniform(0.88, 1.15),
            a + rng.normal(0, math.radians(2.5))]


def make_crops(seeds, frames_per_scene: int = 2, threads: int = 1) -> dict:
    """Crops (K, 64, 256, 3) uint8 and their targets (a list of (n, 5) float tensors) from the scenes of ``seeds``."""
    from ..ops import box_iou_rotated
    from ..scenes.harbour import CONTAINER, HarbourScene
    from . import load_demo_model
    from .evaluate import predict

    torch.set_num_threads(threads)
    primary = load_demo_model("aerial")
    primary.input_size = PRIMARY_INPUT
    sec = secondary()
    torch.set_num_threads(threads)
    crops, targets, kinds = [], [], []
    for seed in seeds:
        scene = HarbourScene(int(seed), SCENE_SIZE, SCENE_SCALE)
        rng = np.random.default_rng([int(seed), 0xC0])
        times = [0] + [int(t) for t in rng.integers(1, 60, frames_per_scene - 1)]
        for t in times:
            f = scene.render(t)
            labels, ids = f.boxes.labels, torch.from_numpy(f.track_ids)
            parents = torch.from_numpy(f.parents)
            ships = (labels == SHIP).nonzero().flatten().tolist()
            det = predict(primary, [f.image], conf=0.25, iou=0.5)[0]
            det = det.xywhr[det.labels == SHIP]
            rows, owners, kind = [], [], []
            if len(det):
                iou = box_iou_rotated(det, f.boxes.xywhr[ships]) if ships else torch.zeros(len(det), 0)
                for k in range(len(det)):
                    j = int(iou[k].argmax()) if ships else -1
                    rows.append(det[k].tolist())
                    owners.append(int(ids[ships[j]]) if j >= 0 and iou[k, j] >= 0.3 else -1)
                    kind.append(0)
            for j in ships:
                rows.append(_jitter(rng, f.boxes.xywhr[j].tolist()))
                owners.append(int(ids[j]))
                kind.append(1)
            if not rows:
                continue
            table = torch.tensor([[0.0, *r] for r in rows])
            frame = torch.from_numpy(f.image)
            x, regions = sec.crops([frame], "RGB", table)
            img = (x * 255).round().clamp(0, 255).to(torch.uint8).permute(0, 2, 3, 1)
            is_container = labels == CONTAINER
            for k, (owner, region) in enumerate(zip(owners, regions)):
                mine = is_container & (parents == owner) if owner > 0 else torch.zeros_like(is_container)
                boxes = to_crop(f.boxes.xywhr[mine], region)
                inside = (boxes[:, 0] >= 0) & (boxes[:, 0] < INPUT_SIZE[0]) & (boxes[:, 1] >= 0) & \
                    (boxes[:, 1] < INPUT_SIZE[1])
                crops.append(img[k].clone())
                targets.append(boxes[inside])
                kinds.append(kind[k])
    empty = torch.zeros(0, INPUT_SIZE[1], INPUT_SIZE[0], 3, dtype=torch.uint8)
    return {"crops": torch.stack(crops) if crops else empty, "targets": targets, "kinds": kinds}


def _make_part(args):
    seeds, fps = args
    return make_crops(seeds, fps, threads=1)


def dataset(first_seed: int, scenes: int, frames_per_scene: int, workers: int) -> dict:
    seeds = list(range(first_seed, first_seed + scenes))
    parts = [seeds[k::workers] for k in range(workers)]
    if workers > 1:
        import multiprocessing as mp

        with mp.get_context("fork").Pool(workers) as pool:
            out = pool.map(_make_part, [(p, frames_per_scene) for p in parts])
    else:
        out = [make_crops(seeds, frames_per_scene, threads=torch.get_num_threads())]
    return {"crops": torch.cat([o["crops"] for o in out]), "targets": [t for o in out for t in o["targets"]],
            "kinds": [k for o in out for k in o["kinds"]]}


def batch(data: dict, idx: torch.Tensor, gen: torch.Generator, augment: bool = True):
    """Images (B, 3, 64, 256) float in [0, 1], boxes (B, G, 5), labels (B, G), valid (B, G) for crops ``idx``."""
    iw, ih = INPUT_SIZE
    x = data["crops"][idx].permute(0, 3, 1, 2).float().div_(255.0)
    tg = [data["targets"][int(i)].clone() for i in idx]
    if augment:
        flip = torch.rand(len(idx), 2, generator=gen) < 0.5
        for k in range(len(idx)):
            if flip[k, 0]:
                x[k] = x[k].flip(2)
                tg[k][:, 0] = iw - tg[k][:, 0]
                tg[k][:, 4] = -tg[k][:, 4]
            if flip[k, 1]:
                x[k] = x[k].flip(1)
                tg[k][:, 1] = ih - tg[k][:, 1]
                tg[k][:, 4] = -tg[k][:, 4]
        b = len(idx)
        contrast = 1 + 0.25 * (torch.rand(b, 1, 1, 1, generator=gen) * 2 - 1)
        bright = 0.06 * (torch.rand(b, 1, 1, 1, generator=gen) * 2 - 1)
        tint = 0.03 * (torch.rand(b, 3, 1, 1, generator=gen) * 2 - 1)
        noise = torch.randn(x.shape, generator=gen) * (0.03 * torch.rand(b, 1, 1, 1, generator=gen))
        mean = x.mean(dim=(1, 2, 3), keepdim=True)
        x = ((x - mean) * contrast + mean + bright + tint + noise).clamp_(0, 1)
    g = max(1, max(len(t) for t in tg))
    boxes = torch.zeros(len(idx), g, 5)
    valid = torch.zeros(len(idx), g, dtype=torch.bool)
    for k, t in enumerate(tg):
        boxes[k, :len(t)] = t
        valid[k, :len(t)] = True
    return x, boxes, torch.zeros(len(idx), g, dtype=torch.int64), valid


@torch.no_grad()
def score_crops(model, data: dict, conf: float = 0.01) -> dict:
    """mAP50 (:func:`obbmeta.eval.evaluate`) of ``model`` on crops with their targets, in crop pixels."""
    from .. import decode
    from ..boxes import OrientedBoxes
    from ..eval import evaluate

    dets, truth = [], []
    model.eval()
    for i in range(0, len(data["crops"]), 64):
        x = data["crops"][i:i + 64].permute(0, 3, 1, 2).float().div_(255.0)
        dets += decode.yolo_obb(model(x), conf=conf, iou=0.5)
    for t in data["targets"]:
        truth.append(OrientedBoxes(t, torch.ones(len(t)), torch.zeros(len(t), dtype=torch.int64)))
    res = evaluate(dets, truth, iou_threshold=0.5, metric="area", num_classes=1)
    return {"map50": round(float(res.map), 4), "crops": len(truth), "containers": int(sum(len(t) for t in truth))}


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m obbmeta.models.train_containers", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--scenes", type=int, default=700, help="training scenes (seeds --seed ...)")
    p.add_argument("--frames-per-scene", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=6000)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--widths", type=int, nargs=5, default=(16, 24, 48, 64, 96))
    p.add_argument("--ema", type=float, default=0.998)
    p.add_argument("--workers", type=int, default=2, help="processes making the crops")
    p.add_argument("--threads", type=int, default=2, help="torch threads while training")
    p.add_argument("--eval-scenes", type=int, default=40, help="held-out scenes scored at the end (and every "
                   "--eval-every steps)")
    p.add_argument("--eval-every", type=int, default=1000)
    p.add_argument("--max-minutes", type=float, default=0.0, help="stop training after this long (0: no limit)")
    p.add_argument("--log-every", type=int, default=100)
    return p.parse_args(argv)


def train(args) -> dict:
    from .detector import OBBDetector
    from .loss import detection_loss
    from .weights import save_weights

    torch.manual_seed(args.seed)
    if args.seed + args.scenes > HELDOUT_SEED:
        raise ValueError(f"training scenes must stay below the held-out seeds ({HELDOUT_SEED})")
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    data = dataset(args.seed, args.scenes, args.frames_per_scene, args.workers)
    heldout = dataset(HELDOUT_SEED + 500, args.eval_scenes, 1, args.workers) if args.eval_scenes else None
    data_s = time.perf_counter() - t0
    n = len(data["crops"])
    print(f"[containers] {n} crops with {sum(len(t) for t in data['targets'])} containers from {args.scenes} scenes "
          f"in {data_s:.0f}s" + (f"; held out: {len(heldout['crops'])} crops" if heldout else ""), flush=True)
    torch.set_num_threads(args.threads)
    model = OBBDetector(1, CLASS_NAMES, INPUT_SIZE[0], tuple(args.widths)).train()
    ema = copy.deepcopy(model).eval()
    for p in ema.parameters():
        p.requires_grad_(False)
    decay = [p for p in model.parameters() if p.dim() > 1]
    no_decay = [p for p in model.parameters() if p.dim() <= 1]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.99))
    gen = torch.Generator().manual_seed(args.seed)
    log = {"model": "container", "class_names": list(CLASS_NAMES), "input_size": list(INPUT_SIZE),
           "crop": {"padding": PADDING, "reading": READING, "fill": FILL, "preprocess": "ultralytics"},
           "scene": {"name": "harbour", "size": SCENE_SIZE, "scale": SCENE_SCALE, "primary_input": PRIMARY_INPUT},
           "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if k != "out"},
           "hardware": {"python": platform.python_version(), "torch": torch.__version__,
                        "cpu_cores": os.cpu_count(), "device": "cpu"},
           "parameters": sum(p.numel() for p in model.parameters()),
           "data": {"crops": n, "containers": int(sum(len(t) for t in data["targets"])),
                    "detector_parents": int(sum(1 for k in data["kinds"] if k == 0)), "seconds": round(data_s, 1),
                    "seeds": f"{args.seed}..{args.seed + args.scenes - 1}"},
           "steps": []}
    weights_path, log_path = args.out / "container.pt", args.out / "container_train_log.json"
    t1 = time.perf_counter()
    sums, k_sum, step = None, 0, 0
    for step in range(1, args.steps + 1):
        elapsed = time.perf_counter() - t1
        if args.max_minutes and elapsed > 60 * args.max_minutes:
            log["stopped_early"] = f"--max-minutes {args.max_minutes} reached after {step - 1} steps"
            step -= 1
            break
        lr = args.lr * cosine_lr((step - 1) / args.steps)
        for g in opt.param_groups:
            g["lr"] = lr
        idx = torch.randint(0, n, (args.batch,), generator=gen)
        x, boxes, labels, valid = batch(data, idx, gen)
        loss, parts = detection_loss(model.raw(x), INPUT_SIZE[1], INPUT_SIZE[0], boxes, labels, valid)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        opt.step()
        d = args.ema * (1 - math.exp(-step / 300.0))
        ema_update(ema, model, d)
        parts = dict(parts, total=loss.detach())
        sums = dict(parts) if sums is None else {k: sums[k] + v for k, v in parts.items()}
        k_sum += 1
        if step % args.log_every == 0 or step == args.steps:
            row = {"step": step, "time_s": round(time.perf_counter() - t1, 1), "lr": lr,
                   **{f"loss_{k}": round(float(v) / k_sum, 5) for k, v in sums.items() if k != "positives"}}
            if heldout is not None and (step % args.eval_every == 0 or step == args.steps):
                row["heldout_map50"] = score_crops(ema, heldout)["map50"]
            log["steps"].append(row)
            print(f"[containers] step {step} {row}", flush=True)
            sums, k_sum = None, 0
            save_weights(ema, weights_path, scene="harbour")
            log_path.write_text(json.dumps(log, indent=1) + "\n")
    log["training"] = {"steps": step, "batch": args.batch, "seconds": round(time.perf_counter() - t1, 1)}
    if heldout is not None:
        log["heldout"] = dict(score_crops(ema, heldout), seeds=f"{HELDOUT_SEED + 500}.."
                              f"{HELDOUT_SEED + 500 + args.eval_scenes - 1}, frame 0, the parents as in training")
    save_weights(ema, weights_path, scene="harbour")
    log_path.write_text(json.dumps(log, indent=1) + "\n")
    print(f"[containers] done: {log.get('heldout')}; saved {weights_path}", flush=True)
    return log


def main(argv=None) -> int:
    train(parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
