"""A PyTorch oriented detector on video frames: load the model, letterbox the frames, one model call per batch,
decode + rotated NMS on the model's device, boxes back in frame pixels.

This is the weight behind the ``obbinfer`` GStreamer element, as plain Python any probe, pyservicemaker operator or
script can use::

    det = Detector("mypkg.models:build_obb_model", input_size=640, conf=0.25, iou=0.45)
    boxes = det([frame_a, frame_b], "RGBA")          # (H, W, 4) uint8 tensors, CPU or CUDA -> list[OrientedBoxes]

The model contract (the Ultralytics one): input ``(B, 3, H_in, W_in)`` float32 RGB in [0, 1], each frame scaled
uniformly to fit and centred on a grey (114/255) canvas; output per ``output_format``:

* ``"yolo-obb"``: the YOLO-OBB head, raw ``(B, 4+nc+1, N)`` or end-to-end ``(B, K, 7)`` (told apart by shape);
* ``"mmrotate"``: a list of mmrotate results (1.x ``DetDataSample`` / ``InstanceData``, 0.x per-class arrays);
* ``"boxes"``: a list of :class:`~obbmeta.OrientedBoxes` (or one, for a batch of one).

In every format the boxes are in model-input pixels; the letterbox is undone here.
"""
from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch
import torch.nn.functional as F

from . import decode
from .boxes import OrientedBoxes
from .letterbox import Letterbox
from .pixels import to_rgb

OUTPUT_FORMATS = ("yolo-obb", "mmrotate", "boxes")
PAD_VALUE = 114 / 255



class ModelLoadError(RuntimeError):
    """The ``model`` spec could not be turned into a callable model."""


def load_model(spec: Any, device: str | torch.device = "cpu") -> Callable:
    """A callable model from ``spec``, in eval mode on ``device`` where it is a module.

    ``spec`` is one of:

    * ``"package.module:factory"``: ``factory()`` is called with no arguments and must return a ``torch.nn.Module``
      or any callable (``"package.module:attr.sub"`` reaches nested attributes);
    * the path of a TorchScript file (``torch.jit.save``; loaded with ``map_location=device``);
    * the path of a ``torch.export`` program (``torch.export.save``, usually ``.pt2``); it runs where it was exported
      unless its module moves with ``.to(device)``;
    * a module or callable already (returned as is, modules moved and put in eval mode).
    """
    device = torch.device(device)
    if callable(spec) and not isinstance(spec, str):
        return _ready(spec, device)
    if not isinstance(spec, (str, os.PathLike)) or not str(spec):
        raise ModelLoadError(f"model must be 'module:callable', a TorchScript / torch.export file path, or a "
                             f"callable; got {spec!r}")
    text = os.fspath(spec)
    if os.path.exists(text):
        return _ready(_load_file(text, device), device)
    module_name, sep, attr = text.partition(":")
    if not sep or not module_name or not attr:
        raise ModelLoadError(f"model {text!r} is neither an existing file nor of the form 'module:callable'")
    try:
        obj = importlib.import_module(module_name)
    except ImportError as exc:
        raise ModelLoadError(f"model {text!r}: cannot import module {module_name!r}: {exc}") from exc
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ModelLoadError(f"model {text!r}: {module_name!r} has no attribute {attr!r}") from None
    if not callable(obj):
        raise ModelLoadError(f"model {text!r}: {attr!r} is not callable")
    try:
        model = obj()
    except Exception as exc:  # noqa: BLE001 - the user's factory; say which one failed
        raise ModelLoadError(f"model {text!r}: calling {attr}() failed: {exc!r}") from exc
    if not callable(model):
        raise ModelLoadError(f"model {text!r}: {attr}() returned {type(model).__name__}, which is not callable")
    return _ready(model, device)


def _load_file(path: str, device: torch.device) -> Any:
    errors = []
    loaders = [("torch.export", lambda: torch.export.load(path).module()),
               ("TorchScript", lambda: torch.jit.load(path, map_location=device))]
    if not path.endswith(".pt2"):
        loaders.reverse()
    for name, load in loaders:
        try:
            return load()
        except Exception as exc:  # noqa: BLE001 - try the other format, then report both
            errors.append(f"as {name}: {exc}")
    raise ModelLoadError(f"model file {path!r} could not be loaded " + "; ".join(errors))


def _ready(model: Any, device: torch.device) -> Any:
    if isinstance(model, torch.nn.Module):
        try:
            model = model.to(device)
        except Exception as exc:  # noqa: BLE001 - e.g. an exported program bound to the device it was exported on
            if any(t.device != device for t in (*model.parameters(), *model.buffers())):
                raise ModelLoadError(f"the model cannot be moved to {device}: {exc}") from exc
        try:
            model.eval()
        except NotImplementedError:  # torch.export modules have no train/eval switch: exported as they are
            pass
    return model


def parse_input_size(value: Any) -> tuple[int, int]:
    """``640``, ``"640"``, ``"640x384"`` (width x height) or ``(640, 384)`` -> (width, height)."""
    try:
        if isinstance(value, str):
            parts = value.lower().replace(",", "x").split("x")
            w, h = (int(parts[0]), int(parts[0])) if len(parts) == 1 else (int(parts[0]), int(parts[1]))
            if len(parts) > 2:
                raise ValueError
        elif isinstance(value, int) and not isinstance(value, bool):
            w = h = value
        else:
            w, h = (int(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f"input_size must be N, 'N', 'WxH' or (W, H) with positive ints, got {value!r}") from None
    if not (0 < w <= 16384 and 0 < h <= 16384):
        raise ValueError(f"input_size must be in 1..16384 pixels per side, got {value!r}")
    return w, h


def parse_class_names(value: Any) -> list[str] | None:
    """A comma-separated list, a file with one name per line, or a sequence of str; '' or None -> None."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        if os.path.isfile(value):
            with open(value, encoding="utf-8") as f:
                names = [line.strip() for line in f]
            while names and not names[-1]:
                names.pop()
        else:
            names = [n.strip() for n in value.split(",")]
    else:
        names = list(value)
    for i, n in enumerate(names):
        if not isinstance(n, str) or not n:
            raise ValueError(f"class_names[{i}] must be a non-empty str, got {n!r}")
    return names


# ---------------------------------------------------------------- pre-processing

def letterbox_batch(images: Sequence[torch.Tensor], input_size: tuple[int, int], out: torch.Tensor | None = None
                    ) -> tuple[torch.Tensor, list[Letterbox]]:
    """(3, H_i, W_i) float images -> one (B, 3, H_in, W_in) batch (uniform scale, centred, grey padding) and each
    image's :class:`Letterbox`. Frames of one size (the usual batch after nvstreammux) are resized in one call.
    ``out``: a float32 (B, 3, H_in, W_in) tensor on the images' device to fill instead of allocating one."""
    iw, ih = input_size
    if not images:
        raise ValueError("letterbox_batch needs at least one image")
    shape = (len(images), 3, ih, iw)
    if out is None:
        out = images[0].new_full(shape, PAD_VALUE)
    else:
        if tuple(out.shape) != shape or out.device != images[0].device or out.dtype != torch.float32:
            raise ValueError(f"out must be a float32 {shape} tensor on {images[0].device}, got {tuple(out.shape)} "
                             f"{out.dtype} on {out.device}")
        out.fill_(PAD_VALUE)
    groups: dict[tuple[int, int], list[int]] = {}
    for i, img in enumerate(images):
        groups.setdefault((img.shape[2], img.shape[1]), []).append(i)
    lbs: dict[int, Letterbox] = {}
    for (w, h), idx in groups.items():
        lb = Letterbox.fit((w, h), (iw, ih))
        nw, nh = round(w * lb.scale), round(h * lb.scale)
        x = torch.stack([images[i] for i in idx])
        if (nw, nh) != (w, h):
            x = F.interpolate(x, size=(nh, nw), mode="bilinear", align_corners=False, antialias=lb.scale < 1)
        px, py = int(lb.pad_x), int(lb.pad_y)
        out[idx, :, py:py + nh, px:px + nw] = x
        for i in idx:
            lbs[i] = lb
    return out, [lbs[i] for i in range(len(images))]


# ---------------------------------------------------------------- the detector

@dataclass
class Detector:
    """A model plus everything around it: frames -> model -> decode/NMS -> :class:`OrientedBoxes` in frame pixels.

    Args:
        model: anything :func:`load_model` takes (a ``module:callable`` string, a TorchScript / export file, a
            module or callable).
        input_size: model input (width, height), or one int for a square.
        conf, iou, max_det: score threshold, rotated-NMS IoU threshold (greedy, exact polygon IoU, class-aware),
            boxes kept per frame (``yolo-obb``; ``mmrotate`` and ``boxes`` use them as score filter, optional
            second NMS and cap).
        output_format: ``"yolo-obb"``, ``"mmrotate"`` or ``"boxes"`` (see the module docstring).
        device: where the model runs: ``"cpu"``, ``"cuda"``, ``"cuda:N"``; ``"auto"``: the frames' device.
    """
    model: Any
    input_size: Any = 640
    conf: float = 0.25
    iou: float = 0.45
    max_det: int = 300
    output_format: str = "yolo-obb"
    device: str = "auto"

    def __post_init__(self):
        self.input_size = parse_input_size(self.input_size)
        for name in ("conf", "iou"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0.0 <= v <= 1.0:
                raise ValueError(f"{name} must be a number in [0, 1], got {v!r}")
        if not isinstance(self.max_det, int) or isinstance(self.max_det, bool) or self.max_det < 1:
            raise ValueError(f"max_det must be an int >= 1, got {self.max_det!r}")
        if self.output_format not in OUTPUT_FORMATS:
            raise ValueError(f"output_format must be one of {', '.join(OUTPUT_FORMATS)}, got {self.output_format!r}")
        self.device = parse_device(self.device)
        if self.device.startswith("cuda") and not torch.cuda.is_available():
            raise ValueError(f"device={self.device!r} but torch sees no CUDA device (torch {torch.__version__}); "
                             "use 'cpu' or 'auto'")
        self._models: dict[str, Any] = {}
        self._canvases: dict[tuple[int, str], torch.Tensor] = {}
        if self.device != "auto":
            self._models[self.device] = load_model(self.model, self.device)

    def model_on(self, device: torch.device | str) -> Any:
        """The model loaded for ``device`` (loaded once per device)."""
        key = str(torch.device(device))
        if key not in self._models:
            self._models[key] = load_model(self.model, key)
        return self._models[key]

    def preprocess(self, frames: Sequence[Any], pixel_format: str) -> tuple[torch.Tensor, list[Letterbox]]:
        """Frames (tensors or plane tuples as :func:`obbmeta.pixels.to_rgb` takes them) -> the model's input batch
        on the model's device and the letterbox of each frame."""
        device = self._run_device(frames)
        images = []
        for f in frames:
            planes = tuple(p.to(device, non_blocking=True) for p in f) if isinstance(f, tuple) else \
                f.to(device, non_blocking=True)
            images.append(to_rgb(planes, pixel_format))
        # One input tensor per (batch size, device), refilled every batch: a fresh 16x3x640x640 float tensor costs
        # more in allocation and page faults than the letterbox itself. Safe because a batch's work (model, decode,
        # attach) is finished, synchronised, before the next batch is prepared.
        key = (len(images), str(device))
        canvas = self._canvases.get(key)
        if canvas is None:
            canvas = self._canvases[key] = torch.empty(len(images), 3, self.input_size[1], self.input_size[0],
                                                       device=device)
        return letterbox_batch(images, self.input_size, out=canvas)

    def _run_device(self, frames: Sequence[Any]) -> torch.device:
        if self.device != "auto":
            return torch.device(self.device)
        first = frames[0][0] if isinstance(frames[0], tuple) else frames[0]
        return first.device

    @torch.inference_mode()
    def __call__(self, frames: Sequence[Any], pixel_format: str = "RGB") -> list[OrientedBoxes]:
        """Detections of each frame, in that frame's pixels, on the model's device."""
        if not frames:
            return []
        x, letterboxes = self.preprocess(frames, pixel_format)
        output = self.model_on(x.device)(x)
        return self.decode(output, letterboxes)

    def decode(self, output: Any, letterboxes: Sequence[Letterbox]) -> list[OrientedBoxes]:
        """The model's output for a batch -> one :class:`OrientedBoxes` per frame, in frame pixels."""
        n = len(letterboxes)
        if self.output_format == "yolo-obb":
            if isinstance(output, (tuple, list)) and output and isinstance(output[0], torch.Tensor):
                output = output[0]  # Ultralytics-style (predictions, extras)
            if not isinstance(output, torch.Tensor):
                raise TypeError(f"output-format yolo-obb expects a tensor (B, 4+nc+1, N) or (B, K, 7); the model "
                                f"returned {type(output).__name__}")
            # one letterbox for the batch (frames of one size): undone once for all frames inside the decode
            same = all(lb == letterboxes[0] for lb in letterboxes)
            dets = decode.yolo_obb(output, conf=self.conf, iou=self.iou, max_det=self.max_det,
                                   letterbox=letterboxes[0] if same else None)
            if same:
                return self._check_count(dets, n)
        elif self.output_format == "mmrotate":
            dets = decode.mmrotate(output, score_thr=self.conf, iou=self.iou, max_det=self.max_det)
        else:
            dets = [output] if isinstance(output, OrientedBoxes) else list(output)
            for i, d in enumerate(dets):
                if not isinstance(d, OrientedBoxes):
                    raise TypeError(f"output-format boxes expects OrientedBoxes per frame; item {i} is "
                                    f"{type(d).__name__}")
            dets = [_filter(d, self.conf, self.max_det) for d in dets]
        return [d.rescale(lb) for d, lb in zip(self._check_count(dets, n), letterboxes)]

    @staticmethod
    def _check_count(dets: list, n: int) -> list:
        if len(dets) != n:
            raise ValueError(f"the model returned detections for {len(dets)} frames, but {n} frames went in")
        return dets


def _filter(boxes: OrientedBoxes, conf: float, max_det: int) -> OrientedBoxes:
    boxes = boxes[boxes.scores > conf]
    return boxes[torch.argsort(boxes.scores, descending=True, stable=True)[:max_det]]


def parse_device(value: Any) -> str:
    """``"auto"``, ``"cpu"``, ``"cuda"`` or ``"cuda:N"`` (checked, not required to exist until used)."""
    if isinstance(value, torch.device):
        value = str(value)
    if not isinstance(value, str):  # torch.device(3) would silently mean cuda:3
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {value!r}")
    if value == "auto":
        return value
    try:
        d = torch.device(value)
    except (RuntimeError, TypeError):
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {value!r}") from None
    if d.type not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {value!r}")
    return str(d)
