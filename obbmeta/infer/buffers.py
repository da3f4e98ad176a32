"""Buffers reused between calls, each held by one call at a time (threads sharing a detector never write each
other's)."""
from __future__ import annotations

import threading
from typing import Any

import torch


class Canvases:
    """Buffers reused between calls (a fresh 16x3x640x640 float tensor costs more in allocation and page faults
    than filling it; a pinned host buffer costs a cudaHostAlloc), each held by one call at a time, so threads sharing
    a detector never write each other's. Per (device, dtype, trailing shape) one buffer per concurrent caller, sized
    to the largest batch seen."""

    def __init__(self, pinned: bool = False) -> None:
        self._lock = threading.Lock()
        self._free: dict[tuple, list[torch.Tensor]] = {}
        self._pinned = pinned

    def _key(self, shape: tuple, device: Any, dtype: torch.dtype) -> tuple:
        return ("pinned" if self._pinned else str(device), dtype) + tuple(shape[1:])

    def take(self, shape: tuple, device: Any, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        key = self._key(shape, device, dtype)
        with self._lock:
            if len(self._free) > 8 and key not in self._free:
                self._free.clear()  # frame / input sizes changed: drop the buffers of the old ones
            free = self._free.setdefault(key, [])
            for k, t in enumerate(free):
                if t.shape[0] >= shape[0]:
                    return free.pop(k)[:shape[0]]
            if free:
                free.pop()  # a smaller one is replaced by one of this batch size
        with torch.inference_mode(False):  # a normal tensor, also fillable outside inference mode
            if self._pinned:
                return torch.empty(shape, dtype=dtype, pin_memory=True)
            return torch.empty(shape, dtype=dtype, device=device)

    def give(self, buf: torch.Tensor) -> None:
        base = buf._base if buf._base is not None else buf
        key = self._key(tuple(base.shape), base.device, base.dtype)
        with self._lock:
            free = self._free.setdefault(key, [])
            free.append(base)
            free.sort(key=lambda t: -t.shape[0])
            del free[4:]  # at most four concurrent callers' buffers kept per shape


__all__ = ["Canvases"]
