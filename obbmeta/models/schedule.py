"""What the bundled models' training loops share: the learning-rate schedule and the weight average."""
from __future__ import annotations

import math

import torch


def cosine_lr(frac: float, warm: float = 0.03, start: float = 0.1) -> float:
    """The learning-rate factor at ``frac`` of training: linear warm-up from ``start`` over the first ``warm``, then
    a cosine down to 0.02 (held there past the end)."""
    if frac < warm:
        return start + (1.0 - start) * frac / warm
    return 0.02 + 0.98 * 0.5 * (1 + math.cos(math.pi * min(1.0, (frac - warm) / (1 - warm))))


@torch.no_grad()
def ema_update(ema: torch.nn.Module, model: torch.nn.Module, decay: float) -> None:
    """``ema``'s parameters moved towards ``model``'s by ``1 - decay``; its buffers (batch-norm statistics) copied."""
    for pe, pm in zip(ema.parameters(), model.parameters()):
        pe.lerp_(pm.detach(), 1 - decay)
    for be, bm in zip(ema.buffers(), model.buffers()):
        be.copy_(bm)
