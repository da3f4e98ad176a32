"""Seeded aerial / document sequences with ground-truth track ids and noisy oriented detections (no rendering).

Tracking quality is a function of the detections, so a sequence is: per frame, the ground-truth oriented boxes
with their ids, and what a detector would report — every visible object jittered in position, size and angle,
reported in mmrotate's ``le90`` form (w >= h, angle in [-pi/2, pi/2): a real detector's flips by pi/2 and pi near
the range's edges come with it), some missed, some with low scores, plus false positives near real objects.

Scenes (``SCENES``): dense rows of thin objects at 30-60 degrees, where neighbours' axis-aligned boxes overlap
heavily (parking rows with cars arriving and leaving, moored ships, skewed text lines under a handheld camera),
and scenes that are not dense (vehicles crossing on two roads under a bridge that hides them, sparse traffic).
Cameras pan, shake and slowly rotate (a similarity transform per frame).

Used by benchmarks/tracking.py and tests/track. ``make(name, seed)`` returns a :class:`Sequence`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from obbmeta.geometry import wrap_angle

W, H = 1920, 1080


@dataclass
class Frame:
    gt_ids: np.ndarray     # (K,) int64, visible objects
    gt_xywhr: np.ndarray   # (K, 5) image pixels, angle continuous per object (no le90 flips)
    gt_labels: np.ndarray  # (K,)
    det_xywhr: np.ndarray  # (D, 5) float32, le90
    det_scores: np.ndarray  # (D,) float32
    det_labels: np.ndarray  # (D,) int64
    det_gt: np.ndarray     # (D,) ground-truth id behind each detection, -1 for a false positive


@dataclass
class Sequence:
    name: str
    dense: bool
    seed: int
    frames: list[Frame] = field(default_factory=list)
    width: int = W
    height: int = H


@dataclass
class _World:
    """Objects in world coordinates: per object, per frame, a box (NaN when absent)."""
    boxes: np.ndarray          # (N, T, 5)
    labels: np.ndarray         # (N,)
    occluders: list = field(default_factory=list)  # (x1, y1, x2, y2) image rectangles hiding objects


def _unit(deg: float) -> tuple[np.ndarray, np.ndarray]:
    a = math.radians(deg)
    return np.array([math.cos(a), math.sin(a)]), np.array([-math.sin(a), math.cos(a)])


def _static(n_frames: int, centre, w, h, angle) -> np.ndarray:
    box = np.empty((n_frames, 5))
    box[:] = [centre[0], centre[1], w, h, angle]
    return box


def _parking(rng: np.random.Generator, t: int, deg: float) -> _World:
    u, v = _unit(deg)
    boxes, labels = [], []
    base = np.array([W / 2, H / 2]) - 1.0 * 95 * u - 7.5 * 26 * v
    for row in range(3):
        for k in range(16):
            slot = base + row * 95 * u + k * 26 * v
            if rng.random() > 0.88:
                continue
            w, h = rng.uniform(42, 50), rng.uniform(18, 21)
            box = _static(t, slot, w, h, math.radians(deg))
            if rng.random() < 0.2:  # arrives from (or leaves to) the aisle within the sequence
                start = int(rng.integers(0, t - 40))
                aisle = slot + 58 * u
                steps = np.clip((np.arange(t) - start) / 35.0, 0.0, 1.0)
                path = aisle[None] + steps[:, None] * (slot - aisle)[None]
                if rng.random() < 0.5:  # leaving: the same path backwards
                    path = path[::-1]
                    box[:, :2] = path
                    box[np.arange(t) > t - 1 - start + 10, :] = np.nan  # gone some frames after reaching the aisle
                else:
                    box[:, :2] = path
                    box[np.arange(t) < start - 10, :] = np.nan
            boxes.append(box)
            labels.append(0)
    return _World(np.array(boxes), np.array(labels, np.int64))


def _ships(rng: np.random.Generator, t: int) -> _World:
    u, v = _unit(50.0)
    boxes, labels = [], []
    for pier in range(2):
        origin = np.array([W / 2, H / 2]) + (pier - 0.5) * 260 * u - 6 * 24 * v
        for k in range(12):
            berth = origin + k * 24 * v
            box = _static(t, berth, rng.uniform(80, 100), rng.uniform(18, 22), math.radians(50.0))
            if rng.random() < 0.2:  # leaves the berth backwards, then turns away
                start = int(rng.integers(0, t // 2))
                s = np.clip(np.arange(t) - start, 0, None) * rng.uniform(1.0, 2.0)
                box[:, :2] = berth[None] - s[:, None] * u[None]
                box[:, 4] += np.radians(0.4) * np.clip(np.arange(t) - start - 30, 0, None)
            boxes.append(box)
            labels.append(2)
    return _World(np.array(boxes), np.array(labels, np.int64))


def _text(rng: np.random.Generator, t: int) -> _World:
    u, v = _unit(30.0)
    boxes, labels = [], []
    margin = np.array([W / 2, H / 2]) - 230 * u - 9 * 27 * v
    for k in range(18):
        w = rng.uniform(150, 440)
        centre = margin + (w / 2) * u + k * 27 * v
        boxes.append(_static(t, centre, w, rng.uniform(16, 19), math.radians(30.0)))
        labels.append(3)
    return _World(np.array(boxes), np.array(labels, np.int64))


def _crossing(rng: np.random.Generator, t: int) -> _World:
    boxes, labels = [], []
    centre = np.array([W / 2, H / 2])
    for deg in (20.0, 95.0):
        u, v = _unit(deg)
        for direction in (1, -1):
            lane = centre + direction * 14 * v
            speed = rng.uniform(4.5, 6.0)  # one speed per lane, headways > the longest vehicle: no overlaps
            frame0 = -int(rng.integers(0, 30))
            while frame0 < t:
                truck = rng.random() < 0.2
                if truck:
                    w, h = rng.uniform(70, 90), rng.uniform(22, 26)
                else:
                    w, h = rng.uniform(40, 48), rng.uniform(17, 20)
                s = (np.arange(t) - frame0) * speed - 700.0
                box = np.empty((t, 5))
                box[:, :2] = lane[None] + direction * s[:, None] * u[None]
                box[:, 2], box[:, 3] = w, h
                box[:, 4] = math.radians(deg) + (0.0 if direction > 0 else math.pi)
                box[(s < -700) | (s > 700)] = np.nan
                boxes.append(box)
                labels.append(1 if truck else 0)
                frame0 += int(rng.integers(22, 40))
    bridge = (W / 2 + 120, 0, W / 2 + 190, H)  # a bridge over the first road, hiding what passes under it
    return _World(np.array(boxes), np.array(labels, np.int64), [bridge])


def _sparse(rng: np.random.Generator, t: int) -> _World:
    boxes, labels = [], []
    for _ in range(20):
        p = rng.uniform([300, 200], [W - 300, H - 200])
        a = rng.uniform(-math.pi, math.pi)
        speed = rng.uniform(1.0, 4.0) if rng.random() < 0.5 else 0.0
        turn = math.radians(rng.uniform(-0.5, 0.5))
        box = np.empty((t, 5))
        angle = a + turn * np.arange(t)
        step = speed * np.stack((np.cos(angle), np.sin(angle)), 1)
        box[:, :2] = p + np.cumsum(step, 0) - step[0]
        box[:, 2], box[:, 3], box[:, 4] = rng.uniform(40, 50), rng.uniform(17, 21), angle
        boxes.append(box)
        labels.append(0)
    return _World(np.array(boxes), np.array(labels, np.int64), [(W * 0.3, H * 0.2, W * 0.3 + 80, H * 0.8)])


def _camera(rng: np.random.Generator, t: int, pan, shake: float, spin_deg: float) -> tuple[np.ndarray, np.ndarray]:
    """(T, 2) translations and (T,) rotations (radians) of a camera that pans at ``pan`` px/frame, shakes around
    that path (an AR(1) offset, steps of ``shake`` px) and sways in rotation (AR(1), steps of ``spin_deg``)."""
    trans = np.zeros((t, 2))
    rot = np.zeros(t)
    offset, sway = np.zeros(2), 0.0
    for k in range(1, t):
        offset = 0.8 * offset + rng.normal(0, shake, 2)
        sway = 0.97 * sway + rng.normal(0, math.radians(spin_deg))
        trans[k] = k * np.asarray(pan, float) + offset
        rot[k] = sway
    return trans, rot


SCENES = {  # name: (dense, builder, camera pan px/frame, shake px, rotation step degrees)
    "parking_rows_45": (True, lambda r, t: _parking(r, t, 45.0), (0.8, -0.5), 0.8, 0.02),
    "parking_rows_30": (True, lambda r, t: _parking(r, t, 30.0), (-0.6, 0.4), 0.8, 0.02),
    "parking_rows_60": (True, lambda r, t: _parking(r, t, 60.0), (0.5, 0.7), 0.8, 0.02),
    "moored_ships_50": (True, _ships, (1.0, 0.3), 0.6, 0.01),
    "skewed_text_30": (True, _text, (0.0, 0.0), 3.0, 0.15),
    "crossing_vehicles": (False, _crossing, (0.5, 0.0), 0.5, 0.01),
    "sparse_traffic": (False, _sparse, (-0.7, 0.3), 0.5, 0.01),
}


def _le90(x: np.ndarray) -> np.ndarray:
    out = x.copy()
    swap = out[:, 2] < out[:, 3]
    out[swap, 2], out[swap, 3] = x[swap, 3], x[swap, 2]
    out[swap, 4] += math.pi / 2
    out[:, 4] = wrap_angle(out[:, 4])
    return out


def make(name: str, seed: int, frames: int = 150, miss: float = 0.08, false_positives: float = 0.8) -> Sequence:
    """The sequence ``name`` (a key of ``SCENES``) for ``seed``: ground truth and detections on every frame."""
    dense, build, pan, shake, spin = SCENES[name]
    rng = np.random.default_rng([seed, sorted(SCENES).index(name)])
    world = build(rng, frames)
    trans, rot = _camera(rng, frames, pan, shake, spin)
    seq = Sequence(name, dense, seed)
    centre = np.array([W / 2, H / 2])
    for k in range(frames):
        b = world.boxes[:, k]
        present = ~np.isnan(b[:, 0])
        ids = np.flatnonzero(present)
        c, s = math.cos(rot[k]), math.sin(rot[k])
        p = b[present, :2] - centre
        img = np.empty((ids.size, 5))
        img[:, 0] = c * p[:, 0] - s * p[:, 1] + centre[0] + trans[k, 0]
        img[:, 1] = s * p[:, 0] + c * p[:, 1] + centre[1] + trans[k, 1]
        img[:, 2:4] = b[present, 2:4]
        img[:, 4] = b[present, 4] + rot[k]
        visible = (img[:, 0] > 0) & (img[:, 0] < W) & (img[:, 1] > 0) & (img[:, 1] < H)
        for x1, y1, x2, y2 in world.occluders:
            visible &= ~((img[:, 0] > x1) & (img[:, 0] < x2) & (img[:, 1] > y1) & (img[:, 1] < y2))
        ids, img = ids[visible], img[visible]
        labels = world.labels[ids]
        # The detector: misses, jitter, le90 output, scores; false positives near real objects.
        hit = rng.random(ids.size) >= miss
        det = img[hit].copy()
        size = np.sqrt(det[:, 2] * det[:, 3])[:, None]
        det[:, :2] += rng.normal(0, 0.05, (det.shape[0], 2)) * size
        det[:, 2:4] *= 1.0 + rng.normal(0, 0.04, (det.shape[0], 2))
        det[:, 4] += rng.normal(0, math.radians(2.0), det.shape[0])
        scores = np.where(rng.random(det.shape[0]) < 0.1, rng.uniform(0.15, 0.45, det.shape[0]),
                          rng.uniform(0.55, 0.95, det.shape[0]))
        det_gt, det_labels = ids[hit], labels[hit]
        n_fp = int(rng.poisson(false_positives))
        if n_fp and ids.size:
            src = rng.integers(0, ids.size, n_fp)
            fp = img[src].copy()
            offset = rng.uniform(20, 60, n_fp)[:, None] * _unit(0.0)[0][None]
            fp[:, :2] += np.stack((np.cos(rng.uniform(0, 6.3, n_fp)), np.sin(rng.uniform(0, 6.3, n_fp))), 1) * offset
            fp[:, 4] += rng.uniform(-0.5, 0.5, n_fp)
            det = np.concatenate((det, fp))
            fp_scores = np.where(rng.random(n_fp) < 0.2, rng.uniform(0.5, 0.7, n_fp), rng.uniform(0.1, 0.5, n_fp))
            scores = np.concatenate((scores, fp_scores))
            det_gt = np.concatenate((det_gt, np.full(n_fp, -1)))
            det_labels = np.concatenate((det_labels, labels[src]))
        seq.frames.append(Frame(ids.astype(np.int64), img, labels, _le90(det).astype(np.float32),
                                scores.astype(np.float32), det_labels.astype(np.int64), det_gt.astype(np.int64)))
    return seq
