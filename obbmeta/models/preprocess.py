"""The demo models' input contract: RGB frames letterboxed to a square, float in [0, 1], pad value 114/255."""
from __future__ import annotations

from typing import Tuple

import numpy as np
import torch

from .._validators import is_int
from ..frames.letterbox import Letterbox
from ..infer import letterbox_batch


def letterbox_frames(frames, input_size: int = 256) -> Tuple[torch.Tensor, Letterbox]:
    """Frames of one size -> ((B, 3, S, S) float32 RGB in [0, 1], the :class:`obbmeta.Letterbox` used).

    ``frames``: a (B, H, W, 3) or (H, W, 3) uint8 array/tensor (RGB), or a list of (H, W, 3) ones of one size.
    The frame is scaled by ``min(S / W, S / H)`` (bilinear, antialiased when shrinking), placed centred as
    :meth:`obbmeta.Letterbox.fit` says, and the rest filled with 114/255. Pass the returned letterbox to
    :func:`obbmeta.decode.yolo_obb` to get boxes in frame pixels. The result stays on the frames' device.
    """
    if isinstance(frames, (list, tuple)):
        frames = [torch.as_tensor(np.asarray(f)) if not isinstance(f, torch.Tensor) else f for f in frames]
        if not frames or any(f.shape != frames[0].shape for f in frames):
            raise ValueError("frames must be a non-empty list of (H, W, 3) images of one size")
        frames = torch.stack(frames)
    elif not isinstance(frames, torch.Tensor):
        frames = torch.as_tensor(np.asarray(frames))
    if frames.dim() == 3:
        frames = frames[None]
    if frames.dim() != 4 or frames.shape[3] != 3 or frames.dtype != torch.uint8:
        raise ValueError(f"frames must be uint8 RGB of shape (B, H, W, 3) or (H, W, 3), got {tuple(frames.shape)} "
                         f"{frames.dtype}")
    if not is_int(input_size) or input_size < 32 or input_size % 32:
        raise ValueError(f"input_size must be a multiple of 32, got {input_size!r}")
    # The letterbox itself is obbinfer's (obbmeta.infer), so the demo and the element prepare frames identically.
    out, letterboxes = letterbox_batch(list(frames.permute(0, 3, 1, 2).float().div_(255.0)), (input_size, input_size))
    return out, letterboxes[0]
