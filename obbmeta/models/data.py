"""Training data for the demo models: generated scene frames, batched with padded ground truth, a GPU replay
buffer that lets the trainer run faster than the CPU generators, and exact dihedral augmentation.

Seeds: training scenes use seeds below ``HELDOUT_SEED``; evaluation uses seeds from ``HELDOUT_SEED`` up, so no
evaluation frame was ever seen in training.
"""
from __future__ import annotations

import math
from typing import Iterator, List, Tuple

import numpy as np
import torch

from .. import scenes
from ..scenes import HELDOUT_SEED


class SceneStream(torch.utils.data.IterableDataset):
    """Endless frames of one scene kind: scene seeds ``seed, seed + k, ...`` split over DataLoader workers, each
    scene rendered at ``frames_per_scene`` times (t = 0 and random later times, which moves traffic and the
    document camera) to share the cost of building it."""

    def __init__(self, scene: str, size: int = 256, seed: int = 0, frames_per_scene: int = 2, max_time: int = 60):
        if scene not in scenes.SCENES:
            raise ValueError(f"scene must be one of {scenes.SCENES}, got {scene!r}")
        self.scene, self.size, self.seed = scene, size, seed
        self.frames_per_scene, self.max_time = frames_per_scene, max_time

    def __iter__(self) -> Iterator[Tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
        info = torch.utils.data.get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        seed = self.seed + worker
        cls = scenes.scene_class(self.scene)
        while True:
            if seed >= HELDOUT_SEED:
                raise RuntimeError("training ran into the held-out seed range")
            scene = cls(seed, self.size)
            rng = np.random.default_rng([seed, 7])
            times = [0] + [int(t) for t in rng.integers(1, self.max_time, self.frames_per_scene - 1)]
            for t in times:
                frame = scene.render(t)
                yield torch.from_numpy(frame.image), frame.boxes.xywhr, frame.boxes.labels
            seed += workers


def collate(items) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Frames -> images (B, H, W, 3) uint8, boxes (B, G, 5), labels (B, G) int64, counts (B,) int64."""
    images = torch.stack([it[0] for it in items])
    counts = torch.tensor([len(it[1]) for it in items], dtype=torch.int64)
    g = max(int(counts.max()), 1)
    boxes = torch.zeros(len(items), g, 5)
    labels = torch.zeros(len(items), g, dtype=torch.int64)
    for i, (_, b, lab) in enumerate(items):
        boxes[i, :len(b)] = b
        labels[i, :len(lab)] = lab
    return images, boxes, labels, counts


class ReplayBuffer:
    """A ring of the most recent ``capacity`` frames on one device; ``sample`` draws a random batch from it.

    Frames with more than ``max_boxes`` boxes keep their first ``max_boxes`` (counted in ``truncated``)."""

    def __init__(self, capacity: int, size: int, max_boxes: int, device):
        self.images = torch.zeros(capacity, size, size, 3, dtype=torch.uint8, device=device)
        self.boxes = torch.zeros(capacity, max_boxes, 5, device=device)
        self.labels = torch.zeros(capacity, max_boxes, dtype=torch.int64, device=device)
        self.counts = torch.zeros(capacity, dtype=torch.int64, device=device)
        self.capacity, self.max_boxes, self.device = capacity, max_boxes, device
        self.filled = 0
        self.next = 0
        self.pushed = 0
        self.truncated = 0

    def push(self, images, boxes, labels, counts) -> None:
        n = images.shape[0]
        g = min(boxes.shape[1], self.max_boxes)
        self.truncated += int((counts > self.max_boxes).sum())
        idx = (torch.arange(n) + self.next) % self.capacity
        idx_d = idx.to(self.device)
        self.images[idx_d] = images.to(self.device, non_blocking=True)
        self.boxes[idx_d] = 0
        self.boxes[idx_d, :g] = boxes[:, :g].to(self.device, non_blocking=True)
        self.labels[idx_d, :g] = labels[:, :g].to(self.device, non_blocking=True)
        self.counts[idx_d] = counts.clamp(max=self.max_boxes).to(self.device, non_blocking=True)
        self.next = (self.next + n) % self.capacity
        self.filled = min(self.filled + n, self.capacity)
        self.pushed += n

    def sample(self, batch: int, generator=None):
        idx = torch.randint(0, self.filled, (batch,), device=self.device, generator=generator)
        counts = self.counts[idx]
        g = max(int(counts.max()), 1)  # one sync: trims the padding to this batch's most crowded frame
        valid = torch.arange(g, device=self.device)[None] < counts[:, None]
        return self.images[idx], self.boxes[idx, :g], self.labels[idx, :g], valid


def dihedral(images: torch.Tensor, boxes: torch.Tensor, transpose: bool, flip_x: bool, flip_y: bool):
    """Apply one of the 8 symmetries of the square to (B, H, W, C) images (H == W) and their (B, G, 5) boxes.

    Exact for oriented boxes: mirroring x or y maps angle a to -a; swapping x and y maps it to pi/2 - a."""
    size = images.shape[1]
    boxes = boxes.clone()
    if transpose:
        images = images.transpose(1, 2)
        boxes[..., [0, 1]] = boxes[..., [1, 0]]
        boxes[..., 4] = math.pi / 2 - boxes[..., 4]
    if flip_x:
        images = images.flip(2)
        boxes[..., 0] = size - boxes[..., 0]
        boxes[..., 4] = -boxes[..., 4]
    if flip_y:
        images = images.flip(1)
        boxes[..., 1] = size - boxes[..., 1]
        boxes[..., 4] = -boxes[..., 4]
    return images, boxes


def random_dihedral(images, boxes, rotations_only: bool, generator=None):
    """A random symmetry per batch: any of the 8, or only the 4 rotations (no mirror images: text stays readable)."""
    t, fx, fy = (bool(b) for b in torch.randint(0, 2, (3,), generator=generator))
    if rotations_only and (t + fx + fy) % 2:  # an odd number of mirrorings is a mirror image
        fy = not fy
    return dihedral(images, boxes, t, fx, fy)


def heldout_frames(scene: str, count: int, size: int = 256, start: int = 0) -> List[scenes.SceneFrame]:
    """``count`` frames of held-out scenes (seeds ``HELDOUT_SEED + start`` on, frame 0 of each)."""
    return [scenes.frame(scene, HELDOUT_SEED + start + i, size) for i in range(count)]
