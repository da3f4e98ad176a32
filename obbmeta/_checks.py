"""The one check of an (N, 5) box tensor's form, shared by every module that takes boxes."""
from __future__ import annotations

import torch


def box_tensor(name: str, boxes) -> torch.Tensor:
    """Raise unless `boxes` is an (N, 5) floating-point tensor; return it unchanged."""
    if not isinstance(boxes, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape (N, 5) [cx, cy, w, h, angle], "
                        f"got {type(boxes).__name__}")
    if boxes.dim() != 2 or boxes.shape[1] != 5:
        raise ValueError(f"{name} must have shape (N, 5) [cx, cy, w, h, angle], got {tuple(boxes.shape)}")
    if not boxes.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor (float16/32/64), got {boxes.dtype}")
    return boxes
