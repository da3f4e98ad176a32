"""Train the document demo's text recogniser on upright crops of generated text lines, then score it on held-out
frames.

    python -m obbmeta.models.train_recognizer --device cuda --workers 15 --max-minutes 2.5 --out DIR

Data: ``--frames`` document frames are rendered first (DataLoader workers; scene seeds from ``--seed``, each scene
at ``--frames-per-scene`` times of its video, frame size ``--size``, text scale drawn per scene from ``--scales``)
and kept on the training device as one uint8 tensor with a table of their wholly visible text lines (box turned so
that its x axis runs the way the line reads, string). Each step takes ``--batch`` lines (``--lines-per-frame`` from
each of ``batch / lines-per-frame`` random frames) and augments them on the device: box jitter as a detector's boxes
differ from the truth (centre by up to 15 % of the line height along the line and 12 % across, angle by up to 3°,
length -3..+4 %, height -8..+12 %), padding per side of -3..15 % of the line height (in 30 % of the crops also up to
5 % of the length per end), an upright crop with ``affine_grid`` + ``grid_sample`` (bilinear, ``align_corners=False``;
out-of-frame pixels a random fill) at height 32 and a width by aspect ratio stretched by up to 1.3x either way, then
Gaussian blur (sigma up to 1.3 px in 60 %), contrast, brightness and colour changes, 20 % grey, and noise (sigma up to
0.06). A quarter of the crops are turned by 180° (the box's angle + pi) and teach only the orientation head. Crops
are sorted by width into ``--chunks`` groups, each padded to its widest (plus up to 25 %, random fill; the crop at
the left or the right end at random, so the padding never tells which way up a crop is), so the model also learns
to read padding as blank.

Loss: CTC (blank 0, over every column, padding included) on the upright crops + 0.2 x BCE of the orientation head
on all; on CUDA the convolutions run in bf16 autocast, the LSTM and the losses in float32. AdamW with warm-up and
cosine decay over ``--steps``; the saved weights are an exponential moving average.
Seeded: the same arguments give the same frames, batches and (on the CPU) weights; CUDA kernels (CTC backward, cuDNN
LSTM) are not bit-reproducible.

Writes ``DIR/recognizer.pt`` (fp16, ``obbmeta.models.load_recognizer``) and ``DIR/recognizer_train_log.json``
(arguments, hardware, loss and held-out CER per evaluation, timings). Held-out frames use seeds from
``obbmeta.models.data.HELDOUT_SEED`` on; training seeds stay below them.
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
from typing import List, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F

from ..conventions import to_le90
from ..decode.ctc import ctc_greedy, encode
from ..eval.text import error_counts
from ..ops import obb_to_aabb
from .data import HELDOUT_SEED
from .recognizer import CHARSET, INPUT_HEIGHT, MAX_WIDTH, TextRecognizer, crop_width, save_recognizer
from .schedule import cosine_lr, ema_update

ORIENTATION_WEIGHT = 0.2


# ----------------------------------------------------------------------------------------------------- geometry
def upright_boxes(xywhr: torch.Tensor, reading_angles: torch.Tensor) -> torch.Tensor:
    """(N, 5) boxes re-expressed so that their x axis (corner 0 -> corner 1) runs the way each line reads: of the four
    descriptions (w, h, a), (h, w, a + pi/2), (w, h, a + pi), (h, w, a - pi/2) of the same rectangle, the one whose
    angle is nearest the reading angle."""
    xywhr = torch.as_tensor(xywhr, dtype=torch.float32)
    r = torch.as_tensor(reading_angles, dtype=torch.float32, device=xywhr.device)
    k = torch.round(torch.remainder(r - xywhr[:, 4], 2 * math.pi) / (math.pi / 2)).to(torch.int64) % 4
    odd = (k % 2 == 1)
    out = xywhr.clone()
    out[odd, 2], out[odd, 3] = xywhr[odd, 3], xywhr[odd, 2]
    out[:, 4] = torch.remainder(xywhr[:, 4] + k * (math.pi / 2) + math.pi, 2 * math.pi) - math.pi
    return out


def crop_lines(frames: torch.Tensor, frame_index: torch.Tensor, boxes: torch.Tensor, widths: torch.Tensor,
               out_width: int, height: int = INPUT_HEIGHT, fill=0.0, starts=None) -> torch.Tensor:
    """Upright crops of oriented boxes: (K, 3, height, out_width) float.

    Args:
        frames: (B, 3, H, W) float frames.
        frame_index: (K,) int64, the frame of each box.
        boxes: (K, 5) cx, cy, w, h, angle (pixels, radians clockwise on screen); the crop's x axis runs from the
            box's corner 0 to corner 1 (along w), its y axis from corner 1 to corner 2.
        widths: (K,) int64, the columns (<= out_width) the box spans; the other columns are ``fill``.
        fill: the value of pixels outside the frame and outside the box's columns: a float or a (K,) tensor.
        starts: (K,) int64, the first column of each box (default 0: boxes on the left, padding on the right).

    Pixel centres sit at +0.5 (``grid_sample`` with ``align_corners=False``), bilinear sampling.
    """
    k = boxes.shape[0]
    dev = frames.device
    b, _, fh, fw = frames.shape
    if k == 0:
        return frames.new_zeros(0, 3, height, out_width)
    boxes = boxes.to(dev, torch.float32)
    cx, cy, w, h, a = boxes.unbind(1)
    widths = widths.to(dev)
    starts = torch.zeros_like(widths) if starts is None else starts.to(dev)
    ratio = out_width / widths.to(torch.float32)  # the box spans widths[i] of the out_width columns
    ca, sa = torch.cos(a), torch.sin(a)
    # Output normalised (xn, yn) -> box-local u = (xn * ratio + ratio - 1 - 2 start / width) * w / 2, v = yn * h / 2
    # -> frame pixels (cx + u cos a - v sin a, cy + u sin a + v cos a) -> frame normalised (2 X / W - 1, 2 Y / H - 1).
    hu = w * ratio / 2
    u0 = (ratio - 1 - 2 * starts / widths.to(torch.float32)) * w / 2
    hv = h / 2
    theta = torch.stack([
        torch.stack([2 * hu * ca / fw, -2 * hv * sa / fw, (2 * (cx + u0 * ca)) / fw - 1], 1),
        torch.stack([2 * hu * sa / fh, 2 * hv * ca / fh, (2 * (cy + u0 * sa)) / fh - 1], 1),
    ], 1)
    grid = F.affine_grid(theta, [k, 3, height, out_width], align_corners=False)  # (K, h, w, 2)
    # Each crop samples its own frame: frames stacked as depth, z at that frame's centre (weight exactly 1 there).
    z = ((2 * frame_index.to(dev, torch.float32) + 1) / b - 1)[:, None, None, None].expand(k, height, out_width, 1)
    grid3 = torch.cat([grid, z], -1)[None]  # (1, K, h, w, 3)
    vol = torch.cat([frames, torch.ones_like(frames[:, :1])], 1).transpose(0, 1)[None]  # (1, 4, B, H, W)
    out = F.grid_sample(vol, grid3, mode="bilinear", padding_mode="zeros", align_corners=False)[0]
    out = out.transpose(0, 1)  # (K, 4, h, w); channel 3 = how much of each pixel is inside the frame
    fill = torch.as_tensor(fill, dtype=out.dtype, device=dev).reshape(-1, 1, 1, 1)
    rgb = out[:, :3] + (1 - out[:, 3:]) * fill
    j = torch.arange(out_width, device=dev)[None, :]
    cols = (j >= starts[:, None]) & (j < (starts + widths)[:, None])
    return torch.where(cols[:, None, None, :], rgb, fill.expand(k, 1, 1, 1))


def aabb_boxes(boxes: torch.Tensor) -> torch.Tensor:
    """(K, 5) axis-aligned boxes (angle 0) around the rectangles of ``boxes``: what nvinfer's secondary mode crops."""
    x1, y1, x2, y2 = obb_to_aabb(boxes).unbind(1)
    return torch.stack([(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1, torch.zeros_like(x1)], 1)


# ----------------------------------------------------------------------------------------------------- data
class SceneLines(torch.utils.data.Dataset):
    """Item i: frames of document scene ``seed + i`` at ``frames_per_scene`` times, each as (image uint8 (H, W, 3),
    upright boxes (n, 5) float32, texts) for the lines that lie wholly inside the frame."""

    def __init__(self, seed: int, count: int, size: int, frames_per_scene: int, scales: Tuple[float, float],
                 max_time: int = 60):
        self.seed, self.count, self.size = seed, count, size
        self.frames_per_scene, self.scales, self.max_time = frames_per_scene, scales, max_time

    def __len__(self):
        return self.count

    def __getitem__(self, i):
        from ..scenes.document import DocumentScene

        seed = self.seed + i
        rng = np.random.default_rng([seed, 0x7E47])
        scene = DocumentScene(seed, self.size, scale=float(rng.uniform(*self.scales)))
        times = [0] + [int(t) for t in rng.integers(1, self.max_time, self.frames_per_scene - 1)]
        return [frame_lines(scene.render(t)) for t in times]


def frame_lines(frame) -> Tuple[np.ndarray, np.ndarray, List[str]]:
    """(image, upright boxes (n, 5), texts) of a document frame's lines that lie wholly inside it (a line cut by the
    frame edge cannot be read whole)."""
    boxes = upright_boxes(frame.boxes.xywhr, torch.from_numpy(frame.reading_angles))
    keep = frame.boxes.inside(*frame.size).nonzero().flatten().tolist()
    return frame.image, boxes[keep].numpy(), [frame.texts[i] for i in keep]


class LineBank:
    """Frames on one device and their lines: images (N, H, W, 3) uint8, boxes (N, L, 5), targets (N, L, S) int64,
    lengths (N, L), counts (N,)."""

    def __init__(self, items, device, charset: str, max_lines: int = 256, max_chars: int = 96):
        items = [it for it in items if len(it[2])]
        n = len(items)
        h, w = items[0][0].shape[:2]
        self.images = torch.zeros(n, h, w, 3, dtype=torch.uint8)
        self.boxes = torch.zeros(n, max_lines, 5)
        self.targets = torch.zeros(n, max_lines, max_chars, dtype=torch.int64)
        self.lengths = torch.zeros(n, max_lines, dtype=torch.int64)
        self.counts = torch.zeros(n, dtype=torch.int64)
        for i, (image, boxes, texts) in enumerate(items):
            sel = [j for j, t in enumerate(texts) if len(t) <= max_chars][:max_lines]
            self.images[i] = torch.from_numpy(image)
            if sel:
                tg, ln = encode([texts[j] for j in sel], charset)
                self.boxes[i, :len(sel)] = torch.from_numpy(boxes[sel])
                self.targets[i, :len(sel), :tg.shape[1]] = tg
                self.lengths[i, :len(sel)] = ln
            self.counts[i] = len(sel)
        keep = self.counts > 0
        for name in ("images", "boxes", "targets", "lengths", "counts"):
            setattr(self, name, getattr(self, name)[keep].to(device))
        self.lines = int(self.counts.sum())


def render(dataset, workers: int) -> list:
    """Every item of ``dataset`` rendered by ``workers`` processes, in order (deterministic)."""
    loader = torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=workers, collate_fn=_as_is,
                                         worker_init_fn=_one_thread if workers else None,
                                         prefetch_factor=4 if workers else None)
    return [frame for item in loader for frame in item]


def _as_is(item):
    return item


def _one_thread(_):
    torch.set_num_threads(1)


# ----------------------------------------------------------------------------------------------------- augmentation
def _blur(x: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
    """Per-crop Gaussian blur (K, C, H, W) with sigma (K,) in pixels (0: none), separable, 7 taps."""
    k, c, h, w = x.shape
    t = torch.arange(-3, 4, device=x.device, dtype=x.dtype)
    g = torch.exp(-0.5 * (t[None] / sigma.clamp(min=1e-3)[:, None]) ** 2)
    g = g / g.sum(1, keepdim=True)
    g = g.repeat_interleave(c, 0)  # (K*C, 7)
    y = x.reshape(1, k * c, h, w)
    y = F.conv2d(F.pad(y, (3, 3, 0, 0), mode="replicate"), g[:, None, None, :], groups=k * c)
    y = F.conv2d(F.pad(y, (0, 0, 3, 3), mode="replicate"), g[:, None, :, None], groups=k * c)
    return y.reshape(k, c, h, w)


def sample_batch(bank: LineBank, batch: int, lines_per_frame: int, gen: torch.Generator, chunks: int,
                 max_width: int = MAX_WIDTH):
    """One training batch: a list of ``chunks`` (crops (k, 3, 32, W), targets, target lengths, turned (k,) bool)."""
    dev = bank.images.device
    nf = max(1, batch // lines_per_frame)

    def rand(*shape):
        return torch.rand(*shape, generator=gen, device=dev)

    fidx = torch.randint(0, bank.images.shape[0], (nf,), generator=gen, device=dev)
    pick = (rand(nf, lines_per_frame) * bank.counts[fidx, None]).long()  # lines with replacement
    frame_of = torch.arange(nf, device=dev).repeat_interleave(lines_per_frame)
    f_flat, l_flat = fidx.repeat_interleave(lines_per_frame), pick.flatten()
    boxes = bank.boxes[f_flat, l_flat].clone()
    targets, lengths = bank.targets[f_flat, l_flat], bank.lengths[f_flat, l_flat]
    k = boxes.shape[0]
    lh = boxes[:, 3]
    # Box jitter, as a detector's boxes differ from the truth: centre, angle, length and height.
    ca, sa = torch.cos(boxes[:, 4]), torch.sin(boxes[:, 4])
    du = (rand(k) * 2 - 1) * 0.15 * lh
    dv = (rand(k) * 2 - 1) * 0.12 * lh
    boxes[:, 0] += du * ca - dv * sa
    boxes[:, 1] += du * sa + dv * ca
    boxes[:, 4] += torch.deg2rad((rand(k) * 2 - 1) * 3.0)
    w = boxes[:, 2] * (0.97 + 0.07 * rand(k))
    h = lh * (0.92 + 0.2 * rand(k))
    # Padding per side: a fraction of the line height (sometimes also of its length); slightly negative = tight.
    top, bottom = (-0.03 + 0.18 * rand(k)) * h, (-0.03 + 0.18 * rand(k)) * h
    left, right = (-0.02 + 0.17 * rand(k)) * h, (-0.02 + 0.17 * rand(k)) * h
    long_pad = (rand(k) < 0.3) * 0.05 * rand(k) * w
    left, right = left + long_pad, right + long_pad
    shift_u, shift_v = (right - left) / 2, (bottom - top) / 2
    ca, sa = torch.cos(boxes[:, 4]), torch.sin(boxes[:, 4])
    boxes[:, 0] += shift_u * ca - shift_v * sa
    boxes[:, 1] += shift_u * sa + shift_v * ca
    boxes[:, 2] = w + left + right
    boxes[:, 3] = h + top + bottom
    stretch = torch.exp((rand(k) * 2 - 1) * math.log(1.3))
    widths = crop_width(boxes[:, 2] * stretch, boxes[:, 3], max_width=max_width).to(dev)
    fill = torch.where(rand(k) < 0.5, rand(k), torch.where(rand(k) < 0.5, torch.zeros(k, device=dev),
                                                           torch.full((k,), 114 / 255, device=dev)))
    # A quarter turned by 180 degrees (the box's angle + pi), for the orientation head; the crop sits at either end
    # of its padded row, so padding says nothing about which way up it is (the model compares x with x turned).
    turned = rand(k) < 0.25
    boxes[:, 4] += turned * math.pi
    at_right = rand(k) < 0.5
    frames = bank.images[fidx].permute(0, 3, 1, 2).float().div_(255.0)
    order = torch.argsort(widths)
    out = []
    for part in torch.tensor_split(order, chunks):
        if not len(part):
            continue
        wmax = int(widths[part].max())
        wout = min(max_width, int(math.ceil(wmax * (1 + 0.25 * float(rand(1))) / 4) * 4))
        wp = widths[part].clamp(max=wout)
        x = crop_lines(frames, frame_of[part], boxes[part], wp, wout, fill=fill[part],
                       starts=torch.where(at_right[part], wout - wp, torch.zeros_like(wp)))
        out.append((_photometric(x, gen), targets[part], lengths[part], turned[part]))
    return out


def _photometric(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    k = x.shape[0]
    dev = x.device

    def rand(*shape):
        return torch.rand(*shape, generator=gen, device=dev)

    sigma = torch.where(rand(k) < 0.6, rand(k) * 1.3, torch.zeros(k, device=dev))
    x = _blur(x, sigma)
    contrast = 0.6 + 0.6 * rand(k, 1, 1, 1)
    mean = x.mean((1, 2, 3), keepdim=True)
    x = (x - mean) * contrast + mean + (rand(k, 1, 1, 1) - 0.5) * 0.3
    x = x * (0.85 + 0.3 * rand(k, 3, 1, 1))
    gray = rand(k, 1, 1, 1) < 0.2
    x = torch.where(gray, x.mean(1, keepdim=True).expand_as(x), x)
    noise = torch.randn(x.shape, generator=gen, device=dev) * (rand(k, 1, 1, 1) * 0.06)
    return (x + noise).clamp_(0, 1)


# ----------------------------------------------------------------------------------------------------- scoring
@torch.no_grad()
def read_lines(model: TextRecognizer, frames: torch.Tensor, frame_index: torch.Tensor, boxes: torch.Tensor,
               widths: torch.Tensor, batch: int = 64) -> Tuple[List[str], torch.Tensor, torch.Tensor]:
    """``(strings, confidences, turned)`` of ``model`` on crops of ``boxes`` (crops sorted by width and batched, each
    batch padded on the right to its widest crop with 114/255); ``turned``: the crops the model read turned by 180°."""
    order = torch.argsort(widths.cpu()).tolist()
    strings: List[str] = [""] * len(order)
    conf = torch.zeros(len(order))
    turned = torch.zeros(len(order), dtype=torch.bool)
    dev = next(model.parameters()).device
    for i in range(0, len(order), batch):
        part = torch.tensor(order[i:i + batch])
        wout = int(widths[part].max())
        x = crop_lines(frames, frame_index[part], boxes[part], widths[part], wout, fill=114 / 255)
        logits, t = model.read(x.to(dev))
        s, c = ctc_greedy(logits, model.charset)
        for j, idx in enumerate(part.tolist()):
            strings[idx] = s[j]
        conf[part], turned[part] = c, t.cpu()
    return strings, conf, turned


def heldout_cer(model: TextRecognizer, frames: Sequence, pad: float = 0.08) -> dict:
    """CER of ``model`` on the wholly visible lines of ``frames`` (scene frames), cropped from their ground-truth
    boxes as a detector would give them (angle modulo pi: the model turns upside-down crops itself), each side
    padded by ``pad`` x the line height."""
    preds, refs = [], []
    for f in frames:
        _, _, texts = frame_lines(f)
        if not texts:
            continue
        image = torch.from_numpy(f.image).permute(2, 0, 1)[None].float().div(255.0)
        boxes = pad_boxes(to_le90(_visible_boxes(f)), pad)
        widths = crop_width(boxes[:, 2], boxes[:, 3])
        s, _, _ = read_lines(model, image.to(next(model.parameters()).device),
                             torch.zeros(len(boxes), dtype=torch.int64), boxes, widths)
        preds += s
        refs += texts
    edits, chars = error_counts(preds, refs)
    return {"lines": len(refs), "characters": chars, "edits": edits, "cer": round(edits / max(chars, 1), 5),
            "exact_lines": round(sum(p == r for p, r in zip(preds, refs)) / max(len(refs), 1), 4),
            "examples": [[r, p] for p, r in list(zip(preds, refs))[:5]]}


def _visible_boxes(frame) -> torch.Tensor:
    return frame.boxes.xywhr[frame.boxes.inside(*frame.size)]


def pad_boxes(boxes: torch.Tensor, pad: float) -> torch.Tensor:
    """Boxes (K, 5) grown on every side by ``pad`` x their height (h, the short side of a text line's box)."""
    out = boxes.clone()
    out[:, 2] += 2 * pad * boxes[:, 3]
    out[:, 3] += 2 * pad * boxes[:, 3]
    return out


def heldout_frames(count: int, size: int, scale: float, start: int = 0, frames_per_scene: int = 1) -> list:
    """Frames of held-out document scenes (seeds ``HELDOUT_SEED + start`` on) at ``scale``."""
    from ..scenes.document import DocumentScene

    out = []
    for i in range(count):
        scene = DocumentScene(HELDOUT_SEED + start + i, size, scale=scale)
        out += [scene.render(t) for t in range(0, 10 * frames_per_scene, 10)]
    return out


# ----------------------------------------------------------------------------------------------------- training
def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m obbmeta.models.train_recognizer",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="folder for recognizer.pt and recognizer_train_log.json")
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--max-minutes", type=float, default=0.0,
                   help="stop training after this many minutes even if --steps are not done (0: no limit); the log "
                        "says so, and the run is then not reproducible step for step")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--chunks", type=int, default=4, help="width groups per batch (less padding)")
    p.add_argument("--lines-per-frame", type=int, default=8)
    p.add_argument("--frames", type=int, default=6000, help="frames to render for training")
    p.add_argument("--frames-per-scene", type=int, default=4)
    p.add_argument("--size", type=int, default=512, help="training frame size")
    p.add_argument("--scales", type=float, nargs=2, default=(1.0, 2.6), help="text scale range, drawn per scene")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--weight-decay", type=float, default=1e-4)
    p.add_argument("--ema", type=float, default=0.998)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    p.add_argument("--threads", type=int, default=0, help="torch threads for training (0: torch's default)")
    p.add_argument("--eval-every", type=int, default=1000, help="steps between held-out scores")
    p.add_argument("--eval-scenes", type=int, default=24, help="held-out scenes scored (2 frames each)")
    p.add_argument("--eval-size", type=int, default=512)
    p.add_argument("--eval-scale", type=float, default=2.0)
    p.add_argument("--log-every", type=int, default=50)
    p.add_argument("--widths", type=int, nargs=4, default=(16, 32, 64, 96))
    p.add_argument("--hidden", type=int, default=96)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    return p.parse_args(argv)


def _hardware(device) -> dict:
    info = {"python": platform.python_version(), "torch": torch.__version__, "cpu_cores": os.cpu_count(),
            "device": str(device), "threads": torch.get_num_threads()}
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
    return info


def train(args) -> dict:
    device = torch.device(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    n_scenes = -(-args.frames // args.frames_per_scene)
    if args.seed + n_scenes > HELDOUT_SEED:
        raise ValueError(f"--seed must leave room below the held-out seeds ({HELDOUT_SEED})")
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    # The workers fork before anything touches CUDA.
    items = render(SceneLines(args.seed, n_scenes, args.size, args.frames_per_scene, tuple(args.scales)),
                   args.workers)
    eval_frames = heldout_frames(args.eval_scenes, args.eval_size, args.eval_scale, frames_per_scene=2)
    render_s = time.perf_counter() - t0
    bank = LineBank(items, device, CHARSET)
    del items
    print(f"[recognizer] rendered {bank.images.shape[0]} frames with {bank.lines} lines in {render_s:.0f}s",
          flush=True)
    model = TextRecognizer(CHARSET, tuple(args.widths), args.hidden).to(device).train()
    ema = copy.deepcopy(model).eval()
    for p in ema.parameters():
        p.requires_grad_(False)
    decay = [p for p in model.parameters() if p.dim() > 1]
    no_decay = [p for p in model.parameters() if p.dim() <= 1]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.99))
    gen = torch.Generator(device=device).manual_seed(args.seed)
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if device.type == "cuda" else torch.autocast(
        "cpu", enabled=False)
    log = {"args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
           "hardware": _hardware(device), "parameters": sum(p.numel() for p in model.parameters()),
           "charset": CHARSET, "data": {"frames": int(bank.images.shape[0]), "lines": bank.lines,
                                        "scene_seeds": f"{args.seed}..{args.seed + n_scenes - 1}",
                                        "render_seconds": round(render_s, 1)},
           "heldout": {"seeds": f"{HELDOUT_SEED}..{HELDOUT_SEED + args.eval_scenes - 1}, frames 0 and 10",
                       "size": args.eval_size, "scale": args.eval_scale, "crops": "ground-truth boxes, padded "
                       "8% of the height per side, angle modulo pi"},
           "evals": [], "steps": []}
    weights_path, log_path = args.out / "recognizer.pt", args.out / "recognizer_train_log.json"
    t_train = time.perf_counter()
    sums = {"ctc": 0.0, "orientation": 0.0, "orientation_acc": 0.0}
    n_sum = 0
    stopped_early = False
    step = 0
    for step in range(1, args.steps + 1):
        if args.max_minutes and time.perf_counter() - t_train > 60 * args.max_minutes:
            stopped_early = True
            step -= 1
            break
        lr = args.lr * cosine_lr((step - 1) / args.steps, warm=0.05, start=0.05)
        for g in opt.param_groups:
            g["lr"] = lr
        parts = sample_batch(bank, args.batch, args.lines_per_frame, gen, args.chunks)
        loss_ctc = loss_orient = acc = 0.0
        total = sum(len(p[0]) for p in parts)
        chars = max(1, sum(int(p[2][~p[3]].sum()) for p in parts))  # target characters of the upright crops
        opt.zero_grad(set_to_none=True)
        for x, targets, lengths, turned in parts:
            keep = ~turned
            with autocast:  # the convolutions in bf16 on CUDA; the LSTM and both heads in float32
                cols = model.columns(x).float()
            logit_up = model.upright_logit(cols)
            logits = model.sequence_logits(cols[keep])
            logp = logits.float().log_softmax(-1).transpose(0, 1)  # (T, k, C)
            t_len = torch.full((logp.shape[1],), logp.shape[0], dtype=torch.int64, device=device)
            # Summed here and divided by the batch's characters: ctc_loss's "mean" over the whole batch.
            lc = F.ctc_loss(logp, targets[keep], t_len, lengths[keep], blank=0, reduction="sum",
                            zero_infinity=True) / chars if logp.shape[1] else logp.sum() * 0
            lo = F.binary_cross_entropy_with_logits(logit_up.float(), keep.float(), reduction="sum") / total
            (lc + ORIENTATION_WEIGHT * lo).backward()
            loss_ctc += float(lc.detach())
            loss_orient += float(lo.detach())
            acc += float(((logit_up > 0) == keep).sum()) / total
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
        d = args.ema * (1 - math.exp(-step / 200.0))
        ema_update(ema, model, d)
        sums["ctc"] += loss_ctc
        sums["orientation"] += loss_orient
        sums["orientation_acc"] += acc
        n_sum += 1
        if step % args.log_every == 0 or step == args.steps:
            row = {"step": step, "time_s": round(time.perf_counter() - t_train, 1), "lr": round(lr, 6),
                   **{f"loss_{k}" if k != "orientation_acc" else k: round(v / n_sum, 4) for k, v in sums.items()}}
            log["steps"].append(row)
            sums = dict.fromkeys(sums, 0.0)
            n_sum = 0
            elapsed = time.perf_counter() - t_train
            print(f"[recognizer] step {step} {elapsed:.0f}s lr {lr:.1e} ctc {row['loss_ctc']:.3f} orient "
                  f"{row['loss_orientation']:.3f} (acc {row['orientation_acc']:.3f}) "
                  f"{step * args.batch / elapsed:.0f} crops/s", flush=True)
        if step % args.eval_every == 0 or step == args.steps:
            ev = heldout_cer(ema, eval_frames)
            ev.update(step=step, time_s=round(time.perf_counter() - t_train, 1))
            log["evals"].append(ev)
            print(f"[recognizer] step {step} held-out CER {ev['cer']:.4f} over {ev['lines']} lines "
                  f"({ev['exact_lines']:.3f} exact) e.g. {ev['examples'][:2]}", flush=True)
            _save(ema, weights_path, log, log_path, args, step)
    if stopped_early:
        ev = heldout_cer(ema, eval_frames)
        ev.update(step=step, time_s=round(time.perf_counter() - t_train, 1))
        log["evals"].append(ev)
    log["training"] = {"seconds": round(time.perf_counter() - t_train, 1), "steps": step,
                       "stopped_by_max_minutes": stopped_early, "crops_seen": step * args.batch,
                       "total_seconds": round(time.perf_counter() - t0, 1)}
    _save(ema, weights_path, log, log_path, args, step)
    print(f"[recognizer] saved {weights_path} and {log_path} ({log['training']['total_seconds']:.0f}s in all)",
          flush=True)
    return log


def _save(model, weights_path, log, log_path, args, step):
    save_recognizer(model, weights_path, trained_steps=step, seed=args.seed)
    log_path.write_text(json.dumps(log, indent=1) + "\n")


def main(argv=None) -> int:
    train(parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
