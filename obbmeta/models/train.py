"""Train a demo detector on generated frames for a fixed wall-clock budget, then score it on held-out scenes.

    python -m obbmeta.models.train --scene aerial --minutes 8 --out DIR

CPU workers generate scenes (seeds below ``HELDOUT_SEED``) into a replay buffer on the training device; each step
draws a random batch from it and applies a random symmetry of the square (exact for the boxes), so the trainer is
never starved by the generators. The learning rate follows the elapsed fraction of the budget (warm-up, cosine).
An exponential moving average of the weights is what gets saved: ``DIR/<scene>.pt`` (fp16 state dict with its
class names and input size, loadable with ``torch.load(weights_only=True)``) and ``DIR/<scene>_train_log.json``
(loss per epoch of ``--epoch-steps`` steps, throughput, hardware, and the held-out score), both rewritten every
``--save-every`` seconds so an interrupted run still leaves weights behind.
"""
from __future__ import annotations

import argparse
import copy
import json
import math
import os
import platform
import queue
import sys
import threading
import time
from pathlib import Path

import torch

from .. import scenes
from .data import HELDOUT_SEED, ReplayBuffer, SceneStream, collate, heldout_frames, random_dihedral
from .detector import OBBDetector
from .loss import detection_loss
from .schedule import cosine_lr, ema_update
from .weights import save_weights


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m obbmeta.models.train", description=__doc__.split("\n\n")[0])
    p.add_argument("--scene", choices=scenes.SCENES, required=True)
    p.add_argument("--minutes", type=float, default=8.0, help="training wall-clock budget (evaluation comes after)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--size", type=int, default=256, help="frame and input size")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    p.add_argument("--buffer", type=int, default=8192, help="replay buffer capacity in frames")
    p.add_argument("--max-boxes", type=int, default=256)
    p.add_argument("--frames-per-scene", type=int, default=0, help="0: 2 for aerial, 4 for document scenes")
    p.add_argument("--seed", type=int, default=0, help="first training scene seed (must stay below HELDOUT_SEED)")
    p.add_argument("--widths", type=int, nargs=5, default=(16, 32, 64, 96, 128))
    p.add_argument("--init", type=Path, default=None, help="start from these weights (fine-tuning)")
    p.add_argument("--ema", type=float, default=0.999)
    p.add_argument("--epoch-steps", type=int, default=500)
    p.add_argument("--log-every", type=float, default=15.0, help="seconds")
    p.add_argument("--save-every", type=float, default=60.0, help="seconds")
    p.add_argument("--eval-frames", type=int, default=200)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    return p.parse_args(argv)


def _hardware(device) -> dict:
    info = {"python": platform.python_version(), "torch": torch.__version__, "cpu_cores": os.cpu_count(),
            "device": str(device)}
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
    return info


def _worker_init(_):
    torch.set_num_threads(1)


def _feed(loader, q: queue.Queue, stop: threading.Event):
    for batch in loader:
        while not stop.is_set():
            try:
                q.put(batch, timeout=0.5)
                break
            except queue.Full:
                continue
        if stop.is_set():
            return


def train(args) -> dict:
    device = torch.device(args.device)
    torch.manual_seed(args.seed)
    if args.seed + 10 ** 7 > HELDOUT_SEED:
        raise ValueError(f"--seed must leave room below the held-out seeds ({HELDOUT_SEED})")
    args.out.mkdir(parents=True, exist_ok=True)
    # The generator workers fork before anything touches CUDA.
    frames_per_scene = args.frames_per_scene or (4 if args.scene == "document" else 2)
    stream = SceneStream(args.scene, args.size, args.seed, frames_per_scene)
    loader = torch.utils.data.DataLoader(stream, batch_size=16, collate_fn=collate, num_workers=args.workers,
                                         worker_init_fn=_worker_init, prefetch_factor=4 if args.workers else None)
    q: queue.Queue = queue.Queue(maxsize=64)
    stop = threading.Event()
    feeder = threading.Thread(target=_feed, args=(loader, q, stop), daemon=True)
    feeder.start()
    names = scenes.class_names(args.scene)
    model = OBBDetector(len(names), names, args.size, tuple(args.widths))
    if args.init is not None:
        from .weights import load_weights

        model.load_state_dict(load_weights(args.init, device="cpu").state_dict())
    model.to(device).train()
    buffer = ReplayBuffer(args.buffer, args.size, args.max_boxes, device)
    if device.type == "cuda":
        model = model.to(memory_format=torch.channels_last)
        torch.backends.cudnn.benchmark = True
    ema = copy.deepcopy(model).eval()
    for p in ema.parameters():
        p.requires_grad_(False)
    decay, no_decay = [], []
    for _n, p in model.named_parameters():
        (no_decay if p.dim() == 1 else decay).append(p)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.99))


    def drain(block=False):
        while True:
            try:
                item = q.get(timeout=5.0) if block else q.get_nowait()
            except queue.Empty:
                return
            buffer.push(*item)
            block = False

    log = {"scene": args.scene, "class_names": list(names), "input_size": args.size,
           # where this run wrote is no fact of the training, and would name a folder of that machine
           "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if k != "out"},
           "hardware": _hardware(device), "parameters": sum(p.numel() for p in model.parameters()),
           "seeds": {"train_from": args.seed, "heldout_from": HELDOUT_SEED}, "epochs": []}
    weights_path = args.out / f"{args.scene}.pt"
    log_path = args.out / f"{args.scene}_train_log.json"

    def save(final=False):
        save_weights(ema, weights_path, scene=args.scene)
        log_path.write_text(json.dumps(log, indent=1) + "\n")

    t_wait = time.perf_counter()
    while buffer.filled < min(2 * args.batch, args.buffer):
        drain(block=True)
    primed_s = time.perf_counter() - t_wait
    print(f"[{args.scene}] buffer primed with {buffer.filled} frames in {primed_s:.1f}s", flush=True)
    budget = args.minutes * 60.0
    t0 = time.perf_counter()
    last_log = last_save = t0
    step = 0
    sums = None
    n_sum = 0
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if device.type == "cuda" else torch.autocast(
        "cpu", enabled=False)
    while True:
        now = time.perf_counter()
        elapsed = now - t0
        if elapsed >= budget:
            break
        drain()
        lr = args.lr * cosine_lr(elapsed / budget)
        for g in opt.param_groups:
            g["lr"] = lr
        images, boxes, labels, valid = buffer.sample(args.batch)
        images, boxes = random_dihedral(images, boxes, rotations_only=args.scene == "document")
        x = images.permute(0, 3, 1, 2).float().div_(255.0)
        if device.type == "cuda":
            x = x.contiguous(memory_format=torch.channels_last)
        with autocast:
            raw = model.raw(x)
        loss, parts = detection_loss(raw, args.size, args.size, boxes, labels, valid)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        opt.step()
        step += 1
        d = args.ema * (1 - math.exp(-step / 500.0))
        ema_update(ema, model, d)
        parts = dict(parts, total=loss.detach())
        sums = {k: v.clone() for k, v in parts.items()} if sums is None else {k: sums[k] + v for k, v in parts.items()}
        n_sum += 1
        if step % args.epoch_steps == 0:
            epoch = {"epoch": len(log["epochs"]) + 1, "step": step, "time_s": round(time.perf_counter() - t0, 1),
                     "lr": lr, "frames_generated": buffer.pushed,
                     **{f"loss_{k}" if k != "positives" else "positives_per_batch": round(float(v) / n_sum, 5)
                        for k, v in sums.items()}}
            log["epochs"].append(epoch)
            sums, n_sum = None, 0
        if now - last_log >= args.log_every:
            last = log["epochs"][-1] if log["epochs"] else {}
            print(f"[{args.scene}] {elapsed:6.0f}s step {step} lr {lr:.2e} loss {float(loss.detach()):.3f} "
                  f"(epoch avg {last.get('loss_total', float('nan')):.3f} cls {last.get('loss_cls', float('nan')):.3f}"
                  f" box {last.get('loss_box', float('nan')):.3f} angle {last.get('loss_angle', float('nan')):.3f}) "
                  f"{step * args.batch / elapsed:.0f} img/s, generated {buffer.pushed} "
                  f"({buffer.pushed / elapsed:.0f}/s)", flush=True)
            last_log = now
        if now - last_save >= args.save_every:
            save()
            last_save = now
    stop.set()
    train_s = time.perf_counter() - t0
    log["training"] = {"seconds": round(train_s, 1), "steps": step, "batch": args.batch,
                       "images_seen": step * args.batch, "frames_generated": buffer.pushed,
                       "truncated_frames": buffer.truncated}
    save()
    print(f"[{args.scene}] trained {step} steps in {train_s:.0f}s; saved {weights_path}", flush=True)
    if args.eval_frames:
        log["heldout"] = heldout_score(ema, args.scene, args.eval_frames, args.size, device)
        print(f"[{args.scene}] held-out mAP50 {log['heldout']['map50']:.4f} {log['heldout']['ap50']}", flush=True)
        save()
    return log


def heldout_score(model, scene: str, count: int, size: int, device) -> dict:
    from .evaluate import score

    t = time.perf_counter()
    frames = heldout_frames(scene, count, size)
    try:
        result = score(model.eval(), frames, device=device)
    except Exception as exc:  # e.g. the C core is not built on this machine: keep the weights and the log
        return {"error": f"not scored: {type(exc).__name__}: {exc}", "frames": count}
    result["seeds"] = f"{HELDOUT_SEED}..{HELDOUT_SEED + count - 1}, frame 0, {size}x{size}"
    result["seconds"] = round(time.perf_counter() - t, 1)
    return result


def main(argv=None) -> int:
    train(parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
