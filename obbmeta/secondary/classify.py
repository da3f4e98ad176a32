"""Secondary inference on oriented objects: each object's box cropped upright, a classifier or a text recogniser on
the batch of crops, one result per object (the weight of ``obbinfer process-mode=2``, usable from any probe).

nvinfer's secondary mode crops an object's axis-aligned ``rect_params``; for a rotated text line or ship that crop
is mostly background and the content is slanted. Here the crop is the oriented box turned upright
(:func:`obbmeta.ops.crop_rotated`, read in place from the frames, NVMM views included), so the second model sees
what it was trained on::

    sec = SecondaryModel("obbmeta.models:text_recognizer", output_format="text", crop_height=32, padding=0.08)
    results = sec(frames, "RGBA", boxes)        # boxes: (K, 6) [frame index, cx, cy, w, h, angle] -> K results

Output formats:

* ``"classifier"``: the model returns ``(K, C)`` scores (logits or probabilities; a row that is not already a
  probability distribution is softmaxed) or a list / tuple of such heads, one per attribute (``label_id`` 0, 1, ...);
  per head the best class whose probability exceeds ``threshold`` is the label (nvinfer's classifier-threshold).
* ``"text"``: the model returns ``(K, T, C)`` CTC logits decoded greedily with its ``charset`` (blank 0;
  :func:`obbmeta.decode.ctc_greedy`), or a list of K strings; a string whose confidence is below ``threshold`` is
  no result.

Each result is a list of :class:`obbmeta.nvds.classifier.Label` (a recognised string: ``label_id`` 0,
``class_id`` 1, as NVIDIA's licence-plate sample writes it), or None, for
:func:`obbmeta.nvds.attach_classifications`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import torch

from .._validators import int_in_range, number_in_range, size_pair
from ..decode import ctc_greedy
from ..frames.pixels import lookup, to_rgb
from ..frames.preprocess import preset
from ..infer import ModelRunner, model_class_names, parse_class_names, parse_device, read_label_file
from ..ops import crop_rotated

OUTPUT_FORMATS = ("classifier", "text")
READINGS = ("as-is", "left-to-right", "long-side")
TEXT_CLASS_ID = 1  # what NVIDIA's licence-plate parser sets for a recognised string


@dataclass(frozen=True)
class Result:
    """What the model said of one object: ``class_id`` / ``prob`` / ``label`` per output (``label_id``)."""
    label_id: int
    class_id: int
    prob: float
    label: str


class SecondaryModel:
    """A classifier or recogniser on upright crops of oriented boxes.

    Args:
        model: anything :func:`obbmeta.infer.load_model` takes; shared with other users of the same spec.
        output_format: ``"classifier"`` or ``"text"``.
        device: where the model runs (``"auto"``: the frames' device).
        crop_size: ``(h, w)`` of every crop (classifiers), or None with ``crop_height``: crops of that height and
            width by aspect ratio, up to ``max_width`` (text lines; the batch's width is its widest crop, rounded up
            to ``width_multiple``).
        padding: margin on every side, as a fraction of the box's shorter side.
        reading: ``as-is``, ``left-to-right`` or ``long-side`` (:func:`obbmeta.ops.crop_rotated`).
        preprocess: the normalisation of the crops (channel order, mean, scale) as in :mod:`obbmeta.frames.preprocess`.
        labels: classifier labels: a label file (nvinfer's: one line per output, labels separated by ``;``), a list
            per output, or one list; None: the model's own ``class_names`` / ``names``, else the class ids.
        charset: text: the tokens of classes 1.. (a str, a list, or a file with one per line); None: the model's
            ``charset``.
        threshold: a label's probability (classifier) or a string's confidence (text) must exceed it.
        batch_size: crops per model call (0: all at once); crops of width by aspect ratio are batched by width, so a
            short line is not padded to the longest one's width.
        fill: the pixel level (0-255) of the crop outside the frame and beyond a narrow crop's content.
        precision: ``fp32`` / ``fp16`` / ``bf16`` (autocast).
    """

    def __init__(self, model: Any, output_format: str = "classifier", device: str = "auto", *,
                 crop_size: Any = (224, 224), crop_height: int | None = None, max_width: int = 1024,
                 width_multiple: int = 4, padding: float = 0.0, reading: str = "as-is", preprocess: Any = "ultralytics",
                 labels: Any = None, charset: Any = None, threshold: float = 0.0, batch_size: int = 0,
                 precision: str = "fp32", fill: float = 0.0):
        if output_format not in OUTPUT_FORMATS:
            raise ValueError(f"output_format must be one of {', '.join(OUTPUT_FORMATS)}, got {output_format!r}")
        if reading not in READINGS:
            raise ValueError(f"reading must be one of {', '.join(READINGS)}, got {reading!r}")
        if crop_height is None:
            h, w = size_pair("crop_size", crop_size, 1, 4096, order="hw", strings=True)
            self.crop_size: tuple[int, int] | None = (h, w)
        else:
            self.crop_size = None
            int_in_range("crop_height", crop_height, 1, 4096, form="an int in 1..4096")
        for name, v, lo, hi in (("max_width", max_width, 1, 16384), ("width_multiple", width_multiple, 1, 64),
                                ("batch_size", batch_size, 0, 1 << 20)):
            int_in_range(name, v, lo, hi, form=f"an int in {lo}..{hi}")
        number_in_range("padding", padding, 0.0, 10.0, "a number in [0, 10] (a fraction of the box's shorter side)")
        number_in_range("threshold", threshold, 0.0, 1.0)
        self.output_format, self.reading, self.padding = output_format, reading, float(padding)
        self.crop_height, self.max_width, self.width_multiple = crop_height, max_width, width_multiple
        self.threshold, self.batch_size = float(threshold), batch_size
        number_in_range("fill", fill, 0.0, 255.0, "a pixel level in [0, 255]")
        self.fill = float(fill)
        self.pre = preset(preprocess)
        # The model is loaded (and shared) exactly as a detector's model.
        self._device = parse_device(device)
        if self._device.startswith("cuda") and not torch.cuda.is_available():
            raise ValueError(f"device={self._device!r} but torch sees no CUDA device; use 'cpu' or 'auto'")
        self.runner = ModelRunner(model, precision=precision)
        if self._device != "auto":
            self.runner.model_on(self._device)
        self._labels = _labels(labels)
        self._charset = _charset(charset)

    @property
    def device(self) -> str:
        return self._device

    def model_on(self, device: Any) -> Any:
        return self.runner.model_on(device)

    def _run_device(self, frames: Sequence[Any]) -> torch.device:
        if self._device != "auto":
            return torch.device(self._device)
        first = frames[0][0] if isinstance(frames[0], (tuple, list)) else frames[0]
        return first.device

    def labels_for(self, head: int, class_id: int, model: Any) -> str:
        return _label(self._label_table(model), head, class_id)

    def _label_table(self, model: Any) -> list | None:
        """The label rows per head: the given labels, else the model's own class names (one head), else None."""
        if self._labels is not None:
            return self._labels
        names = model_class_names(model)
        return [names] if names else None

    # ---------------------------------------------------------------- crops

    def crops(self, frames: Sequence[Any], pixel_format: Any, boxes: torch.Tensor) -> torch.Tensor:
        """(K, C, h, w) model input: the boxes of the ``(K, 6)`` table cropped upright from ``frames`` (views as
        :class:`obbmeta.infer.Detector` takes them), normalised as ``preprocess`` says."""
        formats = [pixel_format] * len(frames) if isinstance(pixel_format, str) else list(pixel_format)
        device = self._run_device(frames)
        sources, channels = [], None
        # 8-bit packed RGB (NVMM RGBA views): read in place, the channels picked by the crop
        if len(set(formats)) == 1 and lookup(formats[0]).drawable:
            channels = list(lookup(formats[0]).rgb_order)
            sources = [f.to(device, non_blocking=True) for f in frames]
            scale, fill, layout = 1.0, self.fill, "HWC"  # named: a frame 1-4 rows high looks like CHW otherwise
        else:  # YUV / planar / deep formats: the frame as RGB first (a whole-frame conversion)
            for f, fmt in zip(frames, formats):
                planes = tuple(p.to(device, non_blocking=True) for p in f) if isinstance(f, (tuple, list)) else \
                    f.to(device, non_blocking=True)
                sources.append(to_rgb(planes, fmt))
            scale, fill, layout = 255.0, self.fill / 255, "CHW"
        boxes = boxes.to(torch.float32)
        if self.crop_size is not None:
            crops = crop_rotated(sources, boxes, self.crop_size, padding=self.padding, channels=channels, fill=fill,
                                 reading=self.reading, out_dtype=torch.float32, layout=layout)
        else:
            width = self._batch_width(boxes)
            crops = crop_rotated(sources, boxes, height=self.crop_height, max_width=width, padding=self.padding,
                                 channels=channels, fill=fill, reading=self.reading, out_dtype=torch.float32,
                                 layout=layout)
            if crops.shape[3] != width:  # the widest crop sets the width: round it up to the model's multiple
                crops = torch.nn.functional.pad(crops, (0, width - crops.shape[3]), value=fill)
        levels = crops if scale == 1.0 else crops * scale
        return self.pre.normalise(levels)

    def _widths(self, boxes: torch.Tensor) -> torch.Tensor:
        """Each box's content width in a crop of ``crop_height`` rows (the aspect ratio of its padded box)."""
        w, h = boxes[:, 3].double().cpu(), boxes[:, 4].double().cpu()
        pad = self.padding * torch.minimum(w, h)
        w, h = w + 2 * pad, h + 2 * pad
        if self.reading == "long-side":
            w, h = torch.maximum(w, h), torch.minimum(w, h)
        ratio = torch.where(h > 0, w / h.clamp(min=1e-9), torch.full_like(w, float(self.max_width)))
        return ratio * self.crop_height

    def _batch_width(self, boxes: torch.Tensor) -> int:
        if boxes.numel() == 0:
            return self.width_multiple
        widest = int(math.floor(float(self._widths(boxes).max()) + 0.5))
        m = self.width_multiple
        return int(min(max(-(-max(widest, 1) // m) * m, m), self.max_width // m * m or m))

    # ---------------------------------------------------------------- the call

    @torch.inference_mode()
    def __call__(self, frames: Sequence[Any], pixel_format: Any, boxes: Any, outputs: list | None = None
                 ) -> list[list[Result] | None]:
        """One result per box of the ``(K, 6)`` [frame index, cx, cy, w, h, angle] table (frame pixels): a list of
        :class:`Result` (one per output) or None when no output passed the threshold. ``outputs`` gets, per model
        call, ``(the boxes' indices, RawOutputs)``."""
        boxes = torch.as_tensor(boxes, dtype=torch.float32)
        if boxes.dim() != 2 or boxes.shape[1] != 6:
            raise ValueError(f"boxes must be a (K, 6) [frame index, cx, cy, w, h, angle] table, got "
                             f"{tuple(boxes.shape)}")
        k = boxes.shape[0]
        if k == 0:
            return []
        step = self.batch_size or (k if self.crop_size is not None else 32)
        order = list(range(k)) if self.crop_size is not None else \
            torch.argsort(self._widths(boxes), stable=True).tolist()
        out: list[list[Result] | None] = [None] * k
        for start in range(0, k, step):
            part = order[start:start + step]
            x = self.crops(frames, pixel_format, boxes[part])
            model = self.model_on(x.device)
            y = self.runner(x)
            if outputs is not None:
                from ..infer import RawOutputs
                from ..infer.detector import output_layers

                outputs.append((part, RawOutputs(x, output_layers(y))))
            for i, r in zip(part, self._decode(y, model, x.shape[0])):
                out[i] = r
        return out

    def _decode(self, output: Any, model: Any, k: int) -> list[list[Result] | None]:
        if self.output_format == "text":
            return self._decode_text(output, model, k)
        heads = list(output) if isinstance(output, (list, tuple)) else [output]
        per_head = []
        for h, scores in enumerate(heads):
            if not isinstance(scores, torch.Tensor) or scores.dim() != 2 or scores.shape[0] != k:
                raise ValueError(f"output-format classifier expects (K, C) scores per head with K = {k} crops; head "
                                 f"{h} is {tuple(scores.shape) if isinstance(scores, torch.Tensor) else scores!r}")
            p = scores.float()
            bad = ~torch.isfinite(p).all(dim=1)
            if bool(bad.any()):  # the same rule as a detector's: a model giving NaN / inf stops with why
                raise ValueError(f"output-format classifier: head {h} gave scores that are not finite (NaN or inf) "
                                 f"for {int(bad.sum())} of {k} crops (first: crop {int(bad.nonzero()[0])})")
            if not _is_distribution(p):
                p = torch.softmax(p, dim=1)
            prob, cls = p.max(dim=1)
            per_head.append((prob.cpu().tolist(), cls.cpu().tolist()))
        table = self._label_table(model)  # once per batch, not per object
        results: list[list[Result] | None] = []
        for i in range(k):
            row = [Result(h, int(cls[i]), float(prob[i]), _label(table, h, int(cls[i])))
                   for h, (prob, cls) in enumerate(per_head) if prob[i] > self.threshold]
            results.append(row or None)
        return results

    def _decode_text(self, output: Any, model: Any, k: int) -> list[list[Result] | None]:
        if isinstance(output, (list, tuple)) and all(isinstance(s, str) for s in output):
            texts, conf = list(output), [1.0] * len(output)
        else:
            if not isinstance(output, torch.Tensor) or output.dim() != 3:
                got = tuple(output.shape) if isinstance(output, torch.Tensor) else type(output).__name__
                raise ValueError(f"output-format text expects (K, T, C) CTC logits or a list of K strings, got {got}")
            bad = ~torch.isfinite(output.float()).flatten(1).all(dim=1)
            if bool(bad.any()):
                raise ValueError(f"output-format text: the recogniser gave logits that are not finite (NaN or inf) for "
                                 f"{int(bad.sum())} of {k} crops (first: crop {int(bad.nonzero()[0])})")
            charset = self._charset or getattr(model, "charset", None)
            if charset is None:
                raise ValueError("output-format text needs a charset: the model's .charset, or set charset (a label "
                                 "file of one token per line)")
            texts, confidence = ctc_greedy(output.float(), charset)
            conf = confidence.tolist()
        if len(texts) != k:
            raise ValueError(f"the model read {len(texts)} strings for {k} crops")
        return [[Result(0, TEXT_CLASS_ID, float(c), t)] if t and c > self.threshold else None
                for t, c in zip(texts, conf)]


def _is_distribution(p: torch.Tensor) -> bool:
    return bool(((p >= 0) & (p <= 1)).all()) and bool(torch.allclose(p.sum(1), torch.ones(p.shape[0],
                                                                                       device=p.device), atol=1e-3))


def _labels(labels: Any) -> list[list[str]] | None:
    if labels is None or labels == "":
        return None
    if isinstance(labels, str):
        if "," in labels and "/" not in labels:
            return [parse_class_names(labels)]
        return [[name.strip() for name in line] for line in read_label_file(labels)]
    labels = list(labels)
    if labels and all(isinstance(n, str) for n in labels):
        return [labels]
    return [list(row) for row in labels]


def _label(table: list | None, head: int, class_id: int) -> str:
    """The label of ``class_id`` of ``head`` in the rows of ``table`` (one row serves every head), else the id."""
    if table:
        row = table[head] if head < len(table) else (table[0] if len(table) == 1 else None)
        if row is not None and 0 <= class_id < len(row):
            return row[class_id]
    return str(class_id)


def _charset(charset: Any) -> Any:
    if charset is None or charset == "":
        return None
    if isinstance(charset, str) and ("/" in charset or charset.endswith(".txt")):
        from ..decode import read_charset

        return read_charset(charset)
    return charset


__all__ = ["SecondaryModel", "Result", "OUTPUT_FORMATS", "READINGS", "TEXT_CLASS_ID"]
