"""What the CUDA NMS core reports back: its status flags, the exception for each, and the size of its overlap pool.

The CUDA NMS and the fused YOLO-OBB decode (kernels/obbmeta_nms_core.cuh) write a status word beside their results,
``[kept, flags, candidate words needed]``, instead of synchronising with the host; the padded results carry the flags
(``PaddedDetections.status``; ``nms_rotated_padded``'s count of -1), and the CPU padded NMS and decode set the same
flags from Python. The flag values live in kernels/obb_status.h and ``obbmeta.geometry.STATUS_*``, checked against the
host library's copy when it loads.

The kernels store the suppression mask sparsely: one 64-bit word per box and chunk of 64 later boxes whose bounding
boxes meet it somewhere (a "candidate word"), 32 bytes each, in a pool whose size is given. The sized entry points
try a pool of :data:`POOL_FIRST` entries (or what the data of earlier calls on that device needed, or the worst case
when smaller); when the data needs more, the call runs once more with exactly that. The fixed-size entry points take
:data:`POOL_FIXED` by default (128 MiB) and report data that needs more in their status instead of losing boxes.
"""
from __future__ import annotations

from typing import Optional

import torch

from ..geometry import STATUS_BOXES, STATUS_CLASSES, STATUS_FLAGS, STATUS_OVERFLOW, STATUS_SCORES
from ._validate import range_error

POOL_FIRST = 1 << 21
POOL_FIXED = 1 << 22
_pool_seen: dict = {}

# The advice of an overflow that a larger pool cannot cure: the NMS ops' own.
SPLIT_THE_BOXES = "split the boxes (e.g. by label or image) into smaller calls"


def pool_for(device: torch.device, bound: int) -> int:
    """The pool a sized entry point tries first on `device`: POOL_FIRST, or what earlier calls there needed, or the
    worst case `bound` when that is smaller."""
    return min(bound, max(POOL_FIRST, _pool_seen.get(device, 0)))


def remember_pool(device: torch.device, entries: int) -> None:
    """Record that data on `device` needed `entries` candidate words (the next pool_for starts there)."""
    _pool_seen[device] = max(entries, _pool_seen.get(device, 0))


def status_error(flags: int, *, advice: str = SPLIT_THE_BOXES, boxes: str = "boxes", scores: str = "scores",
                 classes: str = "labels", box_values: Optional[torch.Tensor] = None,
                 name: str = "status") -> Optional[Exception]:
    """The exception for a status word's flags, the first problem named (None for 0).

    ``boxes`` / ``scores`` / ``classes`` name what the flags are about as the caller knows it (an argument, or the
    candidates of a head), ``advice`` says what to do when the overlaps outgrow the largest pool (split the boxes,
    or pass a larger ``overlap_words``), ``box_values`` (the boxes themselves, NMS) tells NaN / inf from float64
    values beyond 1e150, and ``name`` is what a status with bits no decoder sets is reported as."""
    if flags & STATUS_BOXES:
        if box_values is not None:
            return range_error(boxes, box_values)
        return ValueError(f"{boxes} contains NaN or inf; every box must be finite")
    if flags & STATUS_SCORES:
        return ValueError(f"{scores} contains NaN or inf")
    if flags & STATUS_CLASSES:
        return ValueError(f"{classes} is NaN, inf, negative or >= 2**31; class ids must be whole numbers in "
                          "[0, 2**31)")
    if flags & STATUS_OVERFLOW:
        return RuntimeError(f"the overlapping boxes need more candidate words than the pool held (a pool holds at "
                            f"most 2**31 - 1); {advice}")
    if flags:
        known = ", ".join(str(f) for f in STATUS_FLAGS[:-1]) + f" and {STATUS_FLAGS[-1]}"
        return ValueError(f"{name} = {flags} is not a status the decoders set (0, or the flags {known})")
    return None


