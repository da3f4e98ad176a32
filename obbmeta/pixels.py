"""Pixel formats: which formats obbmeta reads, and each one converted to the model's RGB.

Importing this module does not import torch (the GStreamer elements read the tables when the plugin is scanned).
"""
from __future__ import annotations

from typing import Any

# Pixel formats of packed frames -> the indices of R, G, B in the channel axis.
PACKED = {"RGBA": (0, 1, 2), "RGBx": (0, 1, 2), "RGB": (0, 1, 2), "BGRA": (2, 1, 0), "BGRx": (2, 1, 0),
          "BGR": (2, 1, 0), "ARGB": (1, 2, 3), "xRGB": (1, 2, 3), "ABGR": (3, 2, 1), "xBGR": (3, 2, 1)}
CHANNELS = {name: 3 if len(name) == 3 else 4 for name in PACKED}
PLANAR = ("NV12", "NV12_ER", "GRAY8")
PIXEL_FORMATS = tuple(PACKED) + PLANAR


def to_rgb(frame: Any, pixel_format: str) -> Any:
    """One frame as a (3, H, W) float32 RGB tensor in [0, 1], on the frame's device.

    ``frame``: (H, W, C) uint8 for packed formats; for planar formats the tuple of its planes as
    :meth:`obbmeta.frames.FrameSurface.tensors` gives them: NV12 ``(luma (H, W[, 1]), chroma (H/2, W/2, 2))``
    (BT.601 limited range; ``NV12_ER`` full range), GRAY8 ``(luma,)`` or the luma tensor itself. Rows may be pitched.
    """
    import torch

    if pixel_format in PACKED:
        if not isinstance(frame, torch.Tensor) or frame.dim() != 3 or frame.shape[2] != CHANNELS[pixel_format]:
            raise ValueError(f"a {pixel_format} frame must be an (H, W, {CHANNELS[pixel_format]}) uint8 tensor, got "
                             f"{tuple(frame.shape) if isinstance(frame, torch.Tensor) else type(frame).__name__}")
        return frame[..., list(PACKED[pixel_format])].permute(2, 0, 1).float().div_(255)
    if pixel_format not in PLANAR:
        raise ValueError(f"pixel format must be one of {', '.join(PIXEL_FORMATS)}, got {pixel_format!r}")
    planes = frame if isinstance(frame, (tuple, list)) else (frame,)
    y = planes[0][..., 0] if planes[0].dim() == 3 else planes[0]
    if pixel_format == "GRAY8":
        return y.float().div_(255).expand(3, *y.shape).clone()
    if len(planes) < 2:
        raise ValueError("an NV12 frame needs its chroma plane: pass (luma, chroma)")
    uv = planes[1]
    h, w = y.shape
    chroma = uv.float().permute(2, 0, 1).repeat_interleave(2, 1).repeat_interleave(2, 2)[:, :h, :w] - 128
    if pixel_format == "NV12":  # BT.601 limited range ("studio swing", what decoders emit by default)
        luma = (y.float() - 16) * (255 / 219)
        k = (1.596, 0.392, 0.813, 2.017)
    else:  # full range
        luma = y.float()
        k = (1.402, 0.344, 0.714, 1.772)
    u, v = chroma[0], chroma[1]
    rgb = torch.stack([luma + k[0] * v, luma - k[1] * u - k[2] * v, luma + k[3] * u])
    return rgb.clamp_(0, 255).div_(255)


__all__ = ["PACKED", "CHANNELS", "PLANAR", "PIXEL_FORMATS", "to_rgb"]
