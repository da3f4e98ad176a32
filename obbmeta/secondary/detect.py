"""Secondary detectors on rotated crops: an oriented detector inside each object, its boxes mapped back to the frame.

nvinfer's secondary detector (NVIDIA's licence-plate sample: cars -> plates) crops each parent's axis-aligned
``rect_params``; for a rotated parent (a ship, a text block, a parking row) that crop is tilted and mostly
background. Here each parent's oriented box is cropped upright (:func:`obbmeta.ops.crop_rotated`, one kernel for
the batch, frames read in place) into the detector's input size as its preprocessing says — stretched, or the box
kept in proportion with the rest of the input filled with the preset's pad value, right / bottom or centred — the
detector runs on the batch of crops, and its boxes go back to frame pixels through the crop's own map: crop pixel
``(x, y)`` is frame point ``c + (x W / w_in - W / 2) u + (y H / h_in - H / 2) v`` with ``u = (cos a, sin a)``,
``v = (-sin a, cos a)``, ``W x H`` the cropped region, so a child's angle in the frame is its angle in the crop plus
the parent's (after the crop's reading: ``as-is``, ``left-to-right`` or ``long-side``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import torch

from ..boxes import OrientedBoxes
from ..frames.letterbox import Letterbox, source_boxes
from ..frames.pixels import lookup, to_rgb
from ..ops import crop_rotated


@dataclass(frozen=True)
class CropRegion:
    """Where one crop came from: the region's centre, size (W x H frame pixels) and angle (the crop's x axis), after
    the reading; the part of the input the parent box fills (x0, y0, x1, y1 input pixels)."""
    cx: float
    cy: float
    w: float
    h: float
    angle: float
    box: tuple[float, float, float, float]


def read_box(w: float, h: float, a: float, reading: str) -> tuple[float, float, float]:
    """The (w, h, angle) a crop reads the box as: ``as-is``; ``left-to-right`` turns a width axis pointing left on
    screen by pi (a vertical one points up); ``long-side`` puts x along the longer side first (crop_rotated's
    rule)."""
    if reading == "long-side" and h > w:
        w, h, a = h, w, a + math.pi / 2
    if reading in ("left-to-right", "long-side"):
        c = math.cos(a)
        if c < -1e-6 or (abs(c) <= 1e-6 and math.sin(a) > 0):
            a += math.pi
    return w, h, a


def regions(boxes: torch.Tensor, input_size: tuple[int, int], keep_ratio: bool, center: bool, padding: float,
            reading: str) -> list[CropRegion]:
    """The crop region of each ``(K, 5)`` parent box for an input of ``input_size`` (w, h): stretched to it, or the
    box scaled uniformly to fit and the region grown around it to the input's shape (centred, or the box at the
    top-left), as a letterbox would place it."""
    iw, ih = input_size
    out = []
    for cx, cy, w, h, a in boxes.double().tolist():
        pad = padding * min(w, h)
        w, h = w + 2 * pad, h + 2 * pad
        w, h, a = read_box(w, h, a, reading)
        w, h = max(w, 1e-3), max(h, 1e-3)
        if not keep_ratio:
            out.append(CropRegion(cx, cy, w, h, a, (0.0, 0.0, float(iw), float(ih))))
            continue
        s = min(iw / w, ih / h)
        rw, rh = iw / s, ih / s
        nw, nh = w * s, h * s
        if center:
            x0, y0, rcx, rcy = (iw - nw) / 2, (ih - nh) / 2, cx, cy
        else:  # the box at the region's top-left: the region's centre moves along the box's axes
            ca, sa = math.cos(a), math.sin(a)
            dx, dy = (rw - w) / 2, (rh - h) / 2
            x0, y0, rcx, rcy = 0.0, 0.0, cx + dx * ca - dy * sa, cy + dx * sa + dy * ca
        out.append(CropRegion(rcx, rcy, rw, rh, a, (x0, y0, x0 + nw, y0 + nh)))
    return out


def to_frame(boxes: OrientedBoxes, region: CropRegion, input_size: tuple[int, int]) -> OrientedBoxes:
    """Boxes in a crop's input pixels -> frame pixels (the crop map above; a stretched crop maps a rotated child to a
    parallelogram, returned as :meth:`obbmeta.Letterbox.to_source` describes)."""
    return to_frames([boxes], [region], input_size)[0]


def to_frames(boxes: Sequence[OrientedBoxes], regions: Sequence[CropRegion], input_size: tuple[int, int]
              ) -> list[OrientedBoxes]:
    """:func:`to_frame` of each crop's boxes with its region, on the CPU: one copy from the device for all of them
    (not one per parent) and one vectorised map, row for row what :func:`to_frame` of each gives."""
    if not boxes:
        return []
    iw, ih = input_size
    counts = [len(b) for b in boxes]
    # one letterbox per crop: input pixels -> region-centred coordinates (Letterbox checks its scales)
    lbs = [Letterbox(iw / r.w, iw / 2, ih / 2, ih / r.h) for r in regions]
    xywhr = torch.cat([b.xywhr for b in boxes]).to("cpu")
    scores = torch.cat([b.scores for b in boxes]).to("cpu")
    labels = torch.cat([b.labels for b in boxes]).to("cpu")
    row = torch.repeat_interleave(torch.arange(len(boxes)), torch.tensor(counts, dtype=torch.int64))
    per_crop = torch.tensor([[lb.scale, lb.scale if lb.scale_y is None else lb.scale_y, r.cx, r.cy,
                              math.cos(r.angle), math.sin(r.angle), r.angle] for lb, r in zip(lbs, regions)],
                            dtype=torch.float64).reshape(-1, 7)[row]
    sx, sy, rcx, rcy, c, s, angle = per_crop.unbind(-1)
    x = source_boxes(xywhr, sx, iw / 2, ih / 2, sy).double()
    cx = rcx + c * x[:, 0] - s * x[:, 1]
    cy = rcy + s * x[:, 0] + c * x[:, 1]
    out = torch.stack((cx, cy, x[:, 2], x[:, 3], x[:, 4] + angle), dim=1).to(xywhr.dtype)
    return [OrientedBoxes._checked_elsewhere(b, sc, lab)
            for b, sc, lab in zip(out.split(counts), scores.split(counts), labels.split(counts))]


class SecondaryDetector:
    """An oriented detector (any :class:`obbmeta.infer.Detector`) on upright crops of parent boxes.

    Args:
        detector: the detector; its ``input_size`` is the crop size and its preprocessing's ``keep_ratio`` /
            ``center`` / ``pad_value`` / normalisation how a crop fills it.
        padding: a margin of ``padding x min(w, h)`` on every side of each parent box.
        reading: ``as-is``, ``left-to-right`` or ``long-side``: which way up a crop is (:func:`read_box`).
        fill: the pixel level outside the frame.
    """

    def __init__(self, detector: Any, *, padding: float = 0.0, reading: str = "as-is", fill: float = 0.0):
        self.detector = detector
        self.padding, self.reading, self.fill = float(padding), reading, float(fill)

    @property
    def device(self) -> str:
        return self.detector.device

    def crops(self, frames: Sequence[Any], pixel_format: Any, table: torch.Tensor
              ) -> tuple[torch.Tensor, list[CropRegion]]:
        """(K, C, H_in, W_in) model input of the ``(K, 6)`` [frame index, cx, cy, w, h, angle] parents, and each
        crop's region."""
        d = self.detector
        pre = d.pre
        formats = [pixel_format] * len(frames) if isinstance(pixel_format, str) else list(pixel_format)
        device = d._run_device(frames)
        iw, ih = d.input_size
        regs = regions(table[:, 1:], (iw, ih), pre.keep_ratio, pre.center, self.padding, self.reading)
        rows = torch.tensor([[float(table[k, 0]), r.cx, r.cy, r.w, r.h, r.angle] for k, r in enumerate(regs)],
                            dtype=torch.float32)
        if len(set(formats)) == 1 and lookup(formats[0]).drawable:
            sources = [f.to(device, non_blocking=True) for f in frames]
            channels, scale, fill = list(lookup(formats[0]).rgb_order), 1.0, self.fill
        else:
            sources = [to_rgb(tuple(p.to(device) for p in f) if isinstance(f, (tuple, list)) else f.to(device), fmt)
                       for f, fmt in zip(frames, formats)]
            channels, scale, fill = None, 255.0, self.fill / 255
        levels = crop_rotated(sources, rows, (ih, iw), channels=channels, fill=fill, reading="as-is",
                              out_dtype=torch.float32, layout="HWC" if channels is not None else "CHW")
        if scale != 1.0:
            levels = levels * scale
        if pre.keep_ratio:  # outside the box: the preset's pad value, as a letterbox pads
            xs = torch.arange(iw, device=levels.device, dtype=torch.float32) + 0.5
            ys = torch.arange(ih, device=levels.device, dtype=torch.float32) + 0.5
            b = torch.tensor([r.box for r in regs], dtype=torch.float32)
            # queued after the crops, not waited for: a plain copy to the device would synchronise the stream
            b = b.pin_memory().to(levels.device, non_blocking=True) if levels.is_cuda else b
            inside = ((xs[None, None, :] >= b[:, 0, None, None]) & (xs[None, None, :] < b[:, 2, None, None]) &
                      (ys[None, :, None] >= b[:, 1, None, None]) & (ys[None, :, None] < b[:, 3, None, None]))
            levels = torch.where(inside[:, None], levels, torch.full_like(levels, pre.pad_value))
        if pre.quantize:
            levels = levels.round()
        return pre.normalise(levels), regs

    @torch.inference_mode()
    def run_raw(self, frames: Sequence[Any], pixel_format: Any, table: Any) -> list:
        """The model's tensors on the crops of the ``(K, 6)`` table, per model call, without decoding (nvinfer's
        network-type=100 in secondary mode: an embedding or other output per object)."""
        from ..infer import RawOutputs
        from ..infer.detector import output_layers

        table = torch.as_tensor(table, dtype=torch.float32).reshape(-1, 6)
        step = self.detector.batch_size or max(table.shape[0], 1)
        out = []
        for start in range(0, table.shape[0], step):
            x, _ = self.crops(frames, pixel_format, table[start:start + step])
            out.append(RawOutputs(x, output_layers(self.detector.forward(x))))
        return out

    @torch.inference_mode()
    def __call__(self, frames: Sequence[Any], pixel_format: Any, table: Any, params: Any = None,
                 outputs: list | None = None) -> list[OrientedBoxes]:
        """The children of each parent of the ``(K, 6)`` [frame index, cx, cy, w, h, angle] table, in frame pixels,
        on the CPU (one :class:`OrientedBoxes` per parent). ``outputs`` gets the model's tensors per call."""
        table = torch.as_tensor(table, dtype=torch.float32).reshape(-1, 6)
        k = table.shape[0]
        if k == 0:
            return []
        d = self.detector
        p = params if params is not None else d.params
        step = d.batch_size or k
        iw, ih = d.input_size
        # every model call of the batch queued first (on CUDA the fixed-size decode, in a CUDA graph with
        # cuda_graph: nothing waits for the device), then their boxes taken and mapped back at once
        pending, regs = [], []
        for start in range(0, k, step):
            x, part_regs = self.crops(frames, pixel_format, table[start:start + step])
            pending.append(d.submit_prepared(x, p, outputs))
            regs += part_regs
        return to_frames([b for q in pending for b in q.result()], regs, (iw, ih))


__all__ = ["SecondaryDetector", "CropRegion", "read_box", "regions", "to_frame", "to_frames"]
