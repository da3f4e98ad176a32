"""A small anchor-free oriented detector in plain PyTorch, with the raw YOLO-OBB output layout.

Architecture: a residual CNN backbone down to stride 32 (with a pooled wide-context block there), a top-down neck
that merges strides 32 and 16 into the stride-8 map, and one decoupled head per stride-8 cell predicting

* the box centre as an offset from the cell centre (within +-2 cells),
* width and height as ``stride * exp(.)``,
* the angle as a 2-vector ``(cos 2a, sin 2a)`` (unnormalised): doubling the angle makes a and a + pi — the same
  rectangle — one prediction, and ``a = atan2(y, x) / 2`` in (-pi/2, pi/2] needs no range clamp,
* one sigmoid score per class.

``forward`` returns (B, 4 + nc + 1, N) with rows [cx, cy, w, h (input pixels), scores x nc, angle (radians,
clockwise on screen)], N = (H/8) * (W/8) cells in row-major order — the layout of an Ultralytics OBB head, so
:func:`obbmeta.decode.yolo_obb` decodes it. ``raw(x)`` gives the undecoded per-cell predictions for training.
"""
from __future__ import annotations

import math
from typing import Sequence, Tuple

import torch
import torch.nn.functional as F
from torch import nn

STRIDE = 8
# Per-cell raw channels before the class logits: centre offset (2), log size (2), angle vector (2).
BOX_CHANNELS = 6


class ConvBNAct(nn.Sequential):
    def __init__(self, cin: int, cout: int, k: int = 3, stride: int = 1):
        super().__init__(nn.Conv2d(cin, cout, k, stride, k // 2, bias=False), nn.BatchNorm2d(cout),
                         nn.SiLU(inplace=True))


class Residual(nn.Module):
    """x + conv3x3(conv3x3(x)), channels kept."""

    def __init__(self, c: int):
        super().__init__()
        self.body = nn.Sequential(ConvBNAct(c, c), ConvBNAct(c, c))

    def forward(self, x):
        return x + self.body(x)


def _stage(cin: int, cout: int, blocks: int) -> nn.Sequential:
    return nn.Sequential(ConvBNAct(cin, cout, 3, 2), *[Residual(cout) for _ in range(blocks)])


class ContextPool(nn.Module):
    """Max pools of growing size, concatenated and mixed: a wide receptive field at stride 32 for long text lines."""

    def __init__(self, c: int):
        super().__init__()
        self.reduce = ConvBNAct(c, c // 2, 1)
        self.mix = ConvBNAct(c // 2 * 4, c, 1)

    def forward(self, x):
        x = self.reduce(x)
        p1 = F.max_pool2d(x, 5, 1, 2)
        p2 = F.max_pool2d(p1, 5, 1, 2)
        p3 = F.max_pool2d(p2, 5, 1, 2)
        return self.mix(torch.cat([x, p1, p2, p3], 1))


class OBBDetector(nn.Module):
    """Oriented detector: (B, 3, H, W) float RGB in [0, 1] (H, W multiples of 32) -> (B, 4 + nc + 1, N).

    Args:
        num_classes: number of classes.
        class_names: their names (stored on the module as ``class_names``).
        input_size: the (square) input size it was trained for, stored as ``input_size``; any multiple of 32
            works, the stride-8 grid follows the input.
        widths: channels at strides 2, 4, 8, 16, 32.
    """

    def __init__(self, num_classes: int, class_names: Sequence[str] = (), input_size: int = 256,
                 widths: Tuple[int, int, int, int, int] = (16, 32, 64, 96, 128)):
        super().__init__()
        if num_classes < 1:
            raise ValueError(f"num_classes must be >= 1, got {num_classes}")
        self.num_classes = num_classes
        self.class_names = list(class_names) or [str(i) for i in range(num_classes)]
        if len(self.class_names) != num_classes:
            raise ValueError(f"class_names has {len(self.class_names)} names for {num_classes} classes")
        self.input_size = int(input_size)
        self.stride = STRIDE
        self.widths = tuple(int(w) for w in widths)
        c1, c2, c3, c4, c5 = self.widths
        self.stem = ConvBNAct(3, c1, 3, 2)
        self.s4 = _stage(c1, c2, 1)
        self.s8 = _stage(c2, c3, 2)
        self.s16 = _stage(c3, c4, 2)
        self.s32 = nn.Sequential(_stage(c4, c5, 2), ContextPool(c5))
        self.lat32 = ConvBNAct(c5, c4, 1)
        self.merge16 = nn.Sequential(ConvBNAct(2 * c4, c4, 1), Residual(c4))
        self.lat16 = ConvBNAct(c4, c3, 1)
        self.merge8 = nn.Sequential(ConvBNAct(2 * c3, c3, 1), Residual(c3))
        self.box_head = nn.Sequential(ConvBNAct(c3, c3), ConvBNAct(c3, c3), nn.Conv2d(c3, BOX_CHANNELS, 1))
        self.cls_head = nn.Sequential(ConvBNAct(c3, c3), ConvBNAct(c3, c3), nn.Conv2d(c3, num_classes, 1))
        self._init_biases()

    def _init_biases(self):
        box, cls = self.box_head[-1], self.cls_head[-1]
        nn.init.zeros_(box.bias)
        with torch.no_grad():
            box.bias[2:4] = math.log(2.0)  # boxes start about two cells wide
            box.bias[4] = 1.0  # angle vector starts at (1, 0): angle 0
        nn.init.constant_(cls.bias, -math.log((1 - 0.01) / 0.01))  # a 1% prior keeps early losses sane

    def features(self, x: torch.Tensor) -> torch.Tensor:
        c8 = self.s8(self.s4(self.stem(x)))
        c16 = self.s16(c8)
        c32 = self.s32(c16)
        p16 = self.merge16(torch.cat([c16, F.interpolate(self.lat32(c32), size=c16.shape[-2:], mode="nearest")], 1))
        return self.merge8(torch.cat([c8, F.interpolate(self.lat16(p16), size=c8.shape[-2:], mode="nearest")], 1))

    def raw(self, x: torch.Tensor) -> torch.Tensor:
        """(B, N, 6 + nc) undecoded per-cell predictions: offset (2), log size (2), angle vector (2), class logits."""
        _check_input(x)
        p = self.features(x)
        out = torch.cat([self.box_head(p), self.cls_head(p)], 1)
        return out.flatten(2).transpose(1, 2)

    def decode(self, raw: torch.Tensor, height: int, width: int) -> torch.Tensor:
        """(B, N, 6 + nc) raw -> (B, N, 5) float boxes [cx, cy, w, h, angle] in input pixels."""
        gx, gy = cell_centres(height, width, raw.device)
        return decode_boxes(raw, gx, gy)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raw = self.raw(x)
        boxes = self.decode(raw, x.shape[-2], x.shape[-1])
        scores = torch.sigmoid(raw[..., BOX_CHANNELS:].float())
        return torch.cat([boxes[..., :4], scores, boxes[..., 4:]], -1).transpose(1, 2)


def decode_boxes(raw: torch.Tensor, gx: torch.Tensor, gy: torch.Tensor) -> torch.Tensor:
    """Raw predictions (..., 6 + nc) of the cells centred at (gx, gy) -> (..., 5) [cx, cy, w, h, angle] (float32)."""
    raw = raw.float()
    offset = (torch.sigmoid(raw[..., 0:2]) * 4.0 - 2.0) * STRIDE
    wh = torch.exp(raw[..., 2:4].clamp(-4.0, 6.0)) * STRIDE
    angle = 0.5 * torch.atan2(raw[..., 5], raw[..., 4])
    return torch.stack([gx + offset[..., 0], gy + offset[..., 1], wh[..., 0], wh[..., 1], angle], -1)


def cell_centres(height: int, width: int, device=None):
    """(N,) x and y of the stride-8 cell centres in input pixels, row-major (the order of the output's N)."""
    ys = (torch.arange(height // STRIDE, device=device, dtype=torch.float32) + 0.5) * STRIDE
    xs = (torch.arange(width // STRIDE, device=device, dtype=torch.float32) + 0.5) * STRIDE
    gy, gx = torch.meshgrid(ys, xs, indexing="ij")
    return gx.reshape(-1), gy.reshape(-1)


def _check_input(x):
    if not isinstance(x, torch.Tensor) or x.dim() != 4 or x.shape[1] != 3:
        shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"input must be a (B, 3, H, W) float tensor of RGB in [0, 1], got {shape}")
    if not x.is_floating_point():
        raise TypeError(f"input must be a floating-point tensor of RGB in [0, 1], got {x.dtype}")
    if x.shape[2] % 32 or x.shape[3] % 32:
        raise ValueError(f"input height and width must be multiples of 32, got {tuple(x.shape[2:])}")
