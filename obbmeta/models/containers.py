"""The harbour demo's container detector at run time: its crop (the settings the demo's ``process-mode=2`` element
uses and the model was trained on) and the map from frame boxes into a crop's input pixels.

``secondary(model)`` is the :class:`~obbmeta.secondary.SecondaryDetector` the element builds (CPU), for computing
crops or children outside a pipeline; ``to_crop`` inverts :func:`obbmeta.secondary.detect.to_frame`.
"""
from __future__ import annotations

import math

import torch

CLASS_NAMES = ("container",)
INPUT_SIZE = (256, 64)  # (width, height) of a crop: ships are 4-6 times as long as wide
PADDING = 0.05
READING = "long-side"
FILL = 114.0
SCENE_SIZE, SCENE_SCALE = 512, 2.0
PRIMARY_INPUT = 256
SHIP = 1


def secondary(model=None, conf: float = 0.25, iou: float = 0.5):
    """The :class:`~obbmeta.secondary.SecondaryDetector` the demo's ``process-mode=2`` element builds (CPU)."""
    from ..infer import Detector
    from ..secondary import SecondaryDetector
    from .detector import OBBDetector

    threads = torch.get_num_threads()
    model = model if model is not None else OBBDetector(1, CLASS_NAMES, INPUT_SIZE[0], (8, 8, 8, 8, 8)).eval()
    det = Detector(model, input_size=INPUT_SIZE, conf=conf, iou=iou, device="cpu", preprocess_mode="ultralytics",
                   share_model=False, threads=threads)
    return SecondaryDetector(det, padding=PADDING, reading=READING, fill=FILL)


def to_crop(boxes: torch.Tensor, region, input_size=INPUT_SIZE) -> torch.Tensor:
    """(N, 5) frame boxes -> the crop's input pixels (the inverse of :func:`obbmeta.secondary.detect.to_frame`)."""
    iw, ih = input_size
    b = boxes.double()
    c, s = math.cos(region.angle), math.sin(region.angle)
    dx, dy = b[:, 0] - region.cx, b[:, 1] - region.cy
    lu, lv = dx * c + dy * s, -dx * s + dy * c
    sx, sy = iw / region.w, ih / region.h
    out = torch.stack([(lu + region.w / 2) * sx, (lv + region.h / 2) * sy, b[:, 2] * sx, b[:, 3] * sy,
                       b[:, 4] - region.angle], 1)
    out[:, 4] = torch.remainder(out[:, 4] + math.pi / 2, math.pi) - math.pi / 2
    return out.float()
