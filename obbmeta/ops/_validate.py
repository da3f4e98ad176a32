"""Argument checks shared by the ops: each error names the argument and the expected form."""
from __future__ import annotations

import math

import torch

from .._checks import box_tensor


def as_boxes(name: str, boxes, *, check_finite: bool = True) -> torch.Tensor:
    """Validate an (N, 5) [cx, cy, w, h, angle] tensor and return it as contiguous float32."""
    boxes = box_tensor(name, boxes).to(torch.float32).contiguous()
    if check_finite and boxes.numel() and not bool(torch.isfinite(boxes).all()):
        raise ValueError(f"{name} contains NaN or inf; every box must be finite")
    return boxes


def as_vector(name: str, values, n: int, device: torch.device, *, floating: bool, check_finite: bool = True) -> torch.Tensor:
    """Validate a length-n vector (scores when floating, labels otherwise) on `device`."""
    kind = "a floating-point" if floating else "an integer"
    if not isinstance(values, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape ({n},), got {type(values).__name__}")
    if values.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},) to match the boxes, got {tuple(values.shape)}")
    if values.device != device:
        raise ValueError(f"{name} is on {values.device} but the boxes are on {device}; put them on one device")
    if floating != values.is_floating_point() or values.dtype == torch.bool:
        raise TypeError(f"{name} must be {kind} tensor, got {values.dtype}")
    if floating:
        values = values.to(torch.float32).contiguous()
        if check_finite and n and not bool(torch.isfinite(values).all()):
            raise ValueError(f"{name} contains NaN or inf")
        return values
    return values.to(torch.int64).contiguous()


def as_threshold(name: str, value) -> float:
    if isinstance(value, torch.Tensor):
        value = value.item()
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number in [0, 1], got {value!r}") from None
    if not (0.0 <= value <= 1.0) or math.isnan(value):
        raise ValueError(f"{name} must be in [0, 1], got {value}")
    return value
