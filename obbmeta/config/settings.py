"""obbinfer's settings: one frozen, typed object whose fields say everything about themselves.

nvinfer keeps its settings in one struct that the key-file parser and the element's properties both fill. Here that
struct is :class:`InferSettings`, and every field has a :class:`Spec`: its type and range, obbinfer's default,
nvinfer's default (used when an nvinfer config file is given), the property name and nvinfer's aliases, whether it
may change while playing and whether a change loads a new model. From :data:`SPECS` come

* the GObject properties of ``obbinfer`` (``obbmeta.gst.infer``),
* the meaning of every honoured nvinfer key (:data:`KEYS`, read by :mod:`obbmeta.config.nvinfer`),
* the table of properties and keys in docs/gst.md (:func:`docs_table`; a test keeps the docs equal to it).

Values are typed once, where they enter (a property set, a config file read) — ``input_size`` is a ``(width,
height)`` tuple, class-id lists are tuples of ints — and :func:`resolve` combines them with one precedence: a
property set on the element, over the config file's ``[obbmeta]`` group, over its nvinfer keys, over the defaults
(nvinfer's when a config file is given, obbinfer's otherwise). The model code gets the resolved, immutable object.

Torch-free and gi-free: the plugin scanner and the config reader import it.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field, fields, make_dataclass, replace
from typing import Any, Callable, Mapping

from .._validators import is_int, is_number

G_MAXINT = 2**31 - 1
G_MAXUINT = 2**32 - 1
G_MAXDOUBLE = 1.7976931348623157e308
SAME = object()  # Spec.nvinfer_default: the same as the obbinfer default

# Choice tables. NvDsInferNetworkMode: FP32 0, INT8 1, FP16 2, BEST 3. NvDsInferNetworkType: Detector 0,
# Classifier 1, Segmentation 2, InstanceSegmentation 3, Other 100. NvDsInferFormat (model-color-format): RGB 0,
# BGR 1, GRAY 2. NvDsInferClusterMode: GroupRectangles 0, DBSCAN 1, NMS 2, DBSCAN + NMS 3, none 4.
PRECISIONS = ("fp32", "fp16", "bf16", "int8", "best")
NETWORK_MODES = {0: "fp32", 1: "int8", 2: "fp16", 3: "best"}
NETWORK_TYPES = {0: "detector", 1: "classifier", 2: "segmentation", 3: "instance segmentation", 100: "other"}
CLUSTER_MODES = {0: "groupRectangles", 1: "DBSCAN", 2: "NMS", 3: "DBSCAN + NMS", 4: "none"}
PROCESS_MODES = ((1, "Primary (Full Frame)", "primary"), (2, "Secondary (Objects)", "secondary"))
PRESETS = ("ultralytics", "ultralytics-rect", "mmrotate", "nvinfer")
DETECTOR_FORMATS = ("yolo-obb", "mmrotate", "boxes")
SECONDARY_FORMATS = ("classifier", "text")
OUTPUT_FORMATS = DETECTOR_FORMATS + SECONDARY_FORMATS
READINGS = ("as-is", "left-to-right", "long-side")
INPUT_ORDERS = ("nchw", "nhwc")
UNSET = -1  # the preprocessing keys' "the preset's value"


# ---------------------------------------------------------------- values from text (properties, [obbmeta] keys)

# GLib's g_ascii_isspace set, the whitespace strtol / GKeyFile skip.
_SPACE = " \t\n\v\f\r"
_INT = re.compile(r"[ \t\n\v\f\r]*[+-]?[0-9]+")
_FLOAT = re.compile(r"[ \t\n\v\f\r]*[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf(?:inity)?|nan)",
                    re.IGNORECASE)


def text_int(text: str) -> int:
    """An integer as GLib reads one (``strtol`` in base 10: ASCII digits only, an optional sign; Python's ``1_0`` or
    Unicode digits are not numbers there); text after it must be empty (the key file's own rule is in
    :mod:`obbmeta.config.nvinfer`). ValueError otherwise."""
    m = _INT.fullmatch(text.strip(_SPACE)) if isinstance(text, str) else None
    if m is None:
        raise ValueError(f"expected an integer (ASCII digits), got {text!r}")
    return int(m.group())


def text_float(text: str) -> float:
    """A finite number as ``g_ascii_strtod`` reads one (ASCII, ``.`` as the decimal point); NaN and infinities are
    refused (no setting means anything with them). ValueError otherwise."""
    m = _FLOAT.fullmatch(text.strip(_SPACE)) if isinstance(text, str) else None
    if m is None:
        raise ValueError(f"expected a number, got {text!r}")
    v = float(m.group())
    if not math.isfinite(v):
        raise ValueError(f"expected a finite number, got {text!r}")
    return v


def text_bool(text: str) -> bool:
    """GLib's booleans: ``true`` / ``1`` and ``false`` / ``0`` (case-sensitive, as GKeyFile)."""
    t = text.strip(_SPACE) if isinstance(text, str) else None
    if t in ("true", "1"):
        return True
    if t in ("false", "0"):
        return False
    raise ValueError(f"expected true, false, 1 or 0, got {text!r}")


def text_list(text: str) -> list[str]:
    """A ``;`` list (GKeyFile's separator; ``:`` and ``,`` too, as nvinfer's class-id properties read them); a
    trailing separator is allowed."""
    parts = re.split(r"[;:,]", text.strip(_SPACE))
    if parts and parts[-1].strip(_SPACE) == "":
        parts.pop()
    return [p.strip(_SPACE) for p in parts]


# ---------------------------------------------------------------- typed values

def _size(value: Any) -> tuple[int, int] | None:
    """``N`` / ``WxH`` / ``W,H`` / ``(W, H)`` -> (width, height), sides 1..16384; '' or None: the model's own."""
    from .._validators import size_pair

    if value is None or value == "" or value == ():
        return None
    return size_pair("input-size", value, 1, 16384, strings=True, kind_error=ValueError,
                     form="N, WxH or W,H (pixels, 1..16384), or empty for the model's own")


def _show_size(value: tuple[int, int] | None) -> str:
    return "" if value is None else f"{value[0]}x{value[1]}"


def _crop(value: Any) -> tuple[int, ...]:
    """``HxW`` / ``H,W`` (a fixed crop) or ``H`` (that height, the width by each box's aspect ratio) -> (h, w) / (h,);
    '' -> () (the input size)."""
    from .._validators import int_in_range, size_pair

    if value is None or value == "" or value == ():
        return ()
    form = "HxW, H,W or H (pixels, 1..4096), or empty for input-size"
    if isinstance(value, tuple):
        return (int_in_range("crop-size", value[0], 1, 4096, form),) if len(value) == 1 else \
            size_pair("crop-size", value, 1, 4096, order="hw", kind_error=ValueError, form=form)
    text = str(value).strip().lower()
    if _INT.fullmatch(text):
        return (int_in_range("crop-size", int(text), 1, 4096, form),)
    return size_pair("crop-size", text, 1, 4096, order="hw", strings=True, form=form, kind_error=ValueError)


def _show_crop(value: tuple[int, ...]) -> str:
    return "x".join(str(v) for v in value)


def _class_ids(value: Any) -> tuple[int, ...]:
    """nvinfer's class-id lists (``0;2;3`` in a config, ``0:2:3`` on the element; commas too) -> ids >= 0."""
    if value is None or value == "":
        return ()
    items = list(value) if isinstance(value, (tuple, list)) else [text_int(t) for t in text_list(str(value))]
    for v in items:
        if not is_int(v) or v < 0:
            raise ValueError(f"expected class ids >= 0 separated by ';' or ':' (e.g. 0;2;3), got {value!r}")
    return tuple(int(v) for v in items)


def _show_ids(value: tuple[int, ...]) -> str:
    return ";".join(str(v) for v in value)


def _offsets(value: Any) -> tuple[float, ...]:
    """Per-channel means (``a;b;c``; 1 to 4 values, nvinfer's limit) -> floats; '' -> () (the preset's)."""
    if value is None or value == "":
        return ()
    items = list(value) if isinstance(value, (tuple, list)) else [text_float(t) for t in text_list(str(value))]
    if not 1 <= len(items) <= 4 or not all(is_number(v) and math.isfinite(v) for v in items):
        raise ValueError(f"expected 1 to 4 finite per-channel means separated by ';' (e.g. 123.7;116.3;103.5), got "
                         f"{value!r}")
    return tuple(float(v) for v in items)


def _show_offsets(value: tuple[float, ...]) -> str:
    return ";".join(repr(v) for v in value)


def _device(value: Any) -> str:
    """``auto`` (CUDA ``gpu-id`` when torch sees a GPU, else the CPU), ``cpu``, ``cuda``, ``cuda:N``."""
    text = str(value).strip() if isinstance(value, str) else None
    if text in ("auto", "cpu", "cuda") or (text and re.fullmatch(r"cuda:[0-9]{1,4}", text)):
        return text
    raise ValueError(f"expected auto, cpu, cuda or cuda:N, got {value!r}")


def _choice(*choices: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if value not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}, got {value!r}")
        return value
    return check


def _model(value: Any) -> str:
    """A ``package.module:callable``, or a model file (TorchScript, torch.export, ONNX, an Ultralytics checkpoint):
    regular files only (a FIFO or a device is never read)."""
    text = "" if value is None else str(value)
    if text and os.path.exists(text):
        import stat

        if not stat.S_ISREG(os.stat(text).st_mode):
            raise ValueError(f"{text!r} is not a regular file (a directory, FIFO or device)")
    elif text and not is_factory(text):
        raise ValueError("expected 'package.module:callable' or a model file (TorchScript, torch.export, ONNX, an "
                         "Ultralytics checkpoint): no such file")
    return text


def is_factory(text: str) -> bool:
    """Whether a model spec names a Python factory (``package.module:callable``) rather than a file."""
    module, sep, attr = text.partition(":")
    return bool(sep) and all(p.isidentifier() for p in module.split(".")) and \
        all(p.isidentifier() for p in attr.split("."))


# ---------------------------------------------------------------- the spec of one field

@dataclass(frozen=True)
class Spec:
    """One setting: everything the property, the config reader and the docs say about it.

    ``kind`` is the GObject type (``str``, ``int``, ``uint``, ``float``, ``bool``, ``enum``, ``pointer``); ``check``
    turns a value of that type (or, for ``[obbmeta]`` keys, its text) into the typed value the field holds, raising
    ValueError with the expected form; ``show`` turns the typed value back into the property's value. ``low`` /
    ``high``: the property's range (also checked for config values). ``nvinfer``: an nvinfer property of the same
    name, type, range and default. ``path``: a file path, resolved against the config file's folder when it comes
    from one. ``is_property``: False for a config-file-only key."""
    name: str
    kind: str
    default: Any
    blurb: str
    group: str
    low: Any = None
    high: Any = None
    nvinfer_default: Any = SAME
    aliases: tuple[str, ...] = ()
    nvinfer: bool = False
    mutable: str = "playing"
    model: bool = False
    is_property: bool = True
    path: bool = False
    check: Callable[[Any], Any] | None = None
    show: Callable[[Any], Any] | None = None
    choices: tuple = ()

    @property
    def attr(self) -> str:
        return self.name.replace("-", "_")

    def default_for(self, with_config: bool) -> Any:
        return self.default if not with_config or self.nvinfer_default is SAME else self.nvinfer_default

    def value(self, value: Any) -> Any:
        """``value`` (the property's type) checked and typed; ValueError names the expected form."""
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise ValueError(f"expected true or false, got {value!r}")
        elif self.kind in ("int", "uint", "enum"):
            if not is_int(value) and not (self.kind == "enum" and hasattr(value, "real") and is_int(int(value))):
                raise ValueError(f"expected an integer, got {value!r}")
            value = int(value)
            if self.kind == "enum" and value not in [c[0] for c in self.choices]:
                raise ValueError(f"expected one of {', '.join(f'{c[0]} ({c[2]})' for c in self.choices)}, got "
                                 f"{value}")
        elif self.kind == "float":
            if not is_number(value) or not math.isfinite(value):
                raise ValueError(f"expected a finite number, got {value!r}")
            value = float(value)
        if self.low is not None and not self.low <= value <= self.high:
            raise ValueError(f"expected {self.range_text()}, got {value!r}")
        return self.check(value) if self.check is not None else value

    def from_text(self, text: str) -> Any:
        """The value of this setting written as text (an ``[obbmeta]`` entry, a command line)."""
        if self.kind == "bool":
            return self.value(text_bool(text))
        if self.kind in ("int", "uint"):
            return self.value(text_int(text))
        if self.kind == "enum":
            t = text.strip(_SPACE)
            for v, _name, nick in self.choices:
                if t in (nick, str(v)):
                    return self.value(v)
            raise ValueError(f"expected one of {', '.join(f'{c[0]} ({c[2]})' for c in self.choices)}, got {text!r}")
        if self.kind == "float":
            return self.value(text_float(text))
        if self.kind == "pointer":
            raise ValueError("a pointer is set from code, not from text")
        return self.value(text)

    def to_property(self, value: Any) -> Any:
        """The typed value as the property's value (what ``get_property`` returns)."""
        return self.show(value) if self.show is not None else value

    def range_text(self) -> str:
        if self.low is None:
            return ""
        hi = "G_MAXUINT" if self.high == G_MAXUINT else "G_MAXINT" if self.high == G_MAXINT else \
            "G_MAXDOUBLE" if self.high == G_MAXDOUBLE else f"{self.high:g}"
        return f"{'an integer' if self.kind in ('int', 'uint') else 'a number'} in {self.low:g}..{hi}"


def _spec(name: str, kind: str, default: Any, blurb: str, group: str, **kw: Any) -> Spec:
    return Spec(name, kind, default, blurb, group, **kw)


def _uint(name, default, blurb, group, high=G_MAXINT, low=0, **kw) -> Spec:
    return _spec(name, "uint", default, blurb, group, low=low, high=high, **kw)


def _unique_id(value: int) -> int:
    if value > G_MAXINT:
        raise ValueError(f"unique-id must be at most {G_MAXINT}: NvDsObjectMeta.unique_component_id is a gint")
    return value


_FORMATS = _choice(*OUTPUT_FORMATS)

#: Every setting of obbinfer, in the order of the docs table.
SPECS: dict[str, Spec] = {s.name: s for s in [
    # ---- the model
    _spec("model", "str", "", "'package.module:callable' (called with no arguments; returns a torch module or any "
          "callable), a TorchScript file, a torch.export program (.pt2), an ONNX file (.onnx) or an Ultralytics "
          "checkpoint (.pt, needs ultralytics); empty: the config's onnx-file", "model", model=True, path=True,
          check=_model),
    _spec("config-file-path", "str", "", "an nvinfer config file (key file or YAML: [property], [class-attrs-*], "
          "[obbmeta] groups); properties set on the element override it", "model", nvinfer=True, model=True,
          path=True),
    _spec("model-engine-file", "str", "", "nvinfer's TensorRT engine: obbinfer cannot deserialize one (no TensorRT) "
          "and falls back to onnx-file / model, as nvinfer does for an engine it cannot load", "model", nvinfer=True,
          model=True, path=True),
    _spec("onnx-file", "str", "", "an ONNX model (nvinfer's onnx-file), run with PyTorch through onnx2torch (the "
          "onnx extra); used when model is empty", "model", model=True, path=True),
    _spec("output-format", "str", "yolo-obb", "yolo-obb (raw or end-to-end head), mmrotate (results list) or boxes "
          "(OrientedBoxes per frame); secondary: classifier ((K, C) scores, or one per head), text ((K, T, C) CTC "
          "logits, or K strings) or a detector's format (a secondary detector)", "model", model=True,
          check=_FORMATS),
    _spec("network-type", "int", 0, "nvinfer's network-type: 0 detector, 1 classifier (output-format classifier), 3 "
          "instance segmentation (an oriented detector: boxes, no masks), 100 other (output-tensor-meta only); 2 "
          "(segmentation) is refused", "model", low=0, high=100, model=True,
          check=lambda v: v if v in (0, 1, 3, 100) else _refuse_network_type(v)),
    _spec("input-size", "str", None, "model input, N or WxH pixels (nvinfer's infer-dims); empty: what the model "
          "declares (ONNX dims, an Ultralytics checkpoint's imgsz), else 640", "model", model=True, check=_size,
          show=_show_size),
    _spec("input-order", "str", "nchw", "the model input's layout: nchw (PyTorch's) or nhwc (nvinfer's "
          "network-input-order=1)", "model", model=True, check=_choice(*INPUT_ORDERS)),
    _spec("device", "str", "auto", "where the model runs: auto (cuda:gpu-id when torch sees a GPU, else the CPU), "
          "cpu, cuda, cuda:N", "model", model=True, check=_device),
    _uint("gpu-id", 0, "the GPU of device=auto (nvinfer's gpu-id); on a machine without CUDA, device=auto runs on "
          "the CPU (one warning)", "model", high=G_MAXUINT, nvinfer=True, mutable="ready", model=True),
    _spec("precision", "str", "fp32", "fp32, fp16, bf16 (the model under torch.autocast); int8 and best (nvinfer's "
          "network-mode 1 / 3) run at fp16 on CUDA, fp32 on the CPU (no calibration without TensorRT)", "model",
          model=True, check=_choice(*PRECISIONS), aliases=("network-mode",)),
    _uint("batch-size", 1, "frames (primary) or objects (secondary) per model call (nvinfer's batch-size; 0: every "
          "frame of the buffer in one call)", "model", high=1024, nvinfer=True, mutable="ready", model=True),
    _spec("warm-up", "bool", True, "run the model once at start on the input size, so the first frame pays no "
          "first-call costs", "performance", model=True),
    _spec("cuda-graph", "bool", False, "on CUDA: model + decode captured in a CUDA graph per input shape (batch sizes "
          "bucketed to powers of two), replayed per batch with one host synchronisation", "performance", model=True),
    _spec("compile", "bool", False, "run the model through torch.compile (eager after a warning when it fails)",
          "performance", model=True),
    _spec("channels-last", "bool", False, "model and input in channels-last memory format", "performance",
          model=True),
    _uint("threads", 0, "torch's CPU threads (process-wide; 0: half the cores for a CPU model, leaving the rest to "
          "GStreamer's threads)", "performance", high=1024, model=True),
    _uint("queue-depth", 2, "batches between the streaming thread and the output thread: the streaming thread "
          "queues a batch's GPU work and takes the next buffer while the output thread waits for the results, "
          "writes the metadata and pushes (nvinfer's split); 0: each buffer is finished before the next is taken",
          "performance", high=64),
    _uint("max-batch-wait-us", 0, "> 0: frames that obbinfer elements with the same settings (separate pipelines in "
          "one process) get within this many microseconds run as one model batch", "performance", high=1_000_000,
          model=True),
    # ---- what is written
    _spec("process-mode", "enum", 1, "primary: whole frames; secondary: each object's box cropped upright for a "
          "classifier, recogniser or detector", "objects", nvinfer=True, mutable="ready", choices=PROCESS_MODES),
    _uint("unique-id", 15, "unique_component_id of what this element writes (nvinfer's unique-id / gie-unique-id)",
          "objects", high=G_MAXUINT, nvinfer=True, mutable="ready", aliases=("gie-unique-id",), check=_unique_id),
    _uint("interval", 0, "primary: batches skipped between inferences (skipped frames keep bInferDone = FALSE)",
          "objects", nvinfer=True, mutable="ready"),
    _uint("stabilize-buffer-count", 0, "the first N buffers pass through without inference (nvinfer's "
          "stabilize-buffer-count, DS 9)", "objects", is_property=False),
    _spec("conf", "float", 0.25, "score threshold (nvinfer's pre-cluster-threshold of class-attrs-all)", "objects",
          low=0.0, high=1.0, nvinfer_default=0.2),
    _spec("iou", "float", 0.45, "greedy rotated NMS threshold (exact polygon IoU, class-aware; nvinfer's "
          "nms-iou-threshold of class-attrs-all)", "objects", low=0.0, high=1.0, nvinfer_default=0.3),
    _uint("max-det", 300, "boxes kept per frame (0: no limit, nvinfer's)", "objects", high=1_000_000,
          nvinfer_default=0),
    _spec("cluster-mode", "int", 2, "nvinfer's cluster-mode: 2 (NMS) and 1 / 3 (DBSCAN) run exact rotated NMS, 4 "
          "none; 0 (groupRectangles, nvinfer's default) runs NMS at IoU 0.5 keeping 20 per class, as nvinfer's "
          "release library does", "objects", low=0, high=4, nvinfer_default=0, is_property=False),
    _uint("num-detected-classes", 0, "the model's class count (nvinfer's): checked against the labels and the model "
          "at start; 0: the labels' or the model's", "objects", is_property=False),
    _uint("osd-limit", 0, "objects per frame that keep what nvdsosd draws (border, label); the rest are written "
          "complete but invisible to it (docs/osd.md); 0: all", "objects", high=100_000),
    _spec("class-names", "str", "", "comma-separated names, or a label file (one per line); empty: labelfile-path, "
          "else the model's own names", "objects", path=True),
    _spec("labelfile-path", "str", "", "nvinfer's label file: one class per line (a classifier: one line per output, "
          "labels separated by ';')", "objects", path=True),
    _spec("filter-out-class-ids", "str", (), "detections of these class ids are not written (0;2;3)", "objects",
          nvinfer=True, mutable="ready", check=_class_ids, show=_show_ids),
    # ---- secondary mode
    _spec("operate-on-gie-id", "int", -1, "secondary: objects of this unique_component_id (-1: any)", "secondary",
          low=-1, high=G_MAXINT, aliases=("infer-on-gie-id",), mutable="ready"),
    _spec("operate-on-class-ids", "str", (), "secondary: objects of these class ids (0;2;3 or 0:2:3)", "secondary",
          aliases=("infer-on-class-ids",), check=_class_ids, show=_show_ids, mutable="ready"),
    _uint("input-object-min-width", 0, "secondary: objects narrower (rect_params) are skipped", "secondary"),
    _uint("input-object-min-height", 0, "secondary: objects lower are skipped", "secondary"),
    _uint("input-object-max-width", 0, "secondary: objects wider are skipped (0: no limit)", "secondary"),
    _uint("input-object-max-height", 0, "secondary: objects higher are skipped (0: no limit)", "secondary"),
    _spec("classifier-threshold", "float", 0.0, "secondary: a label's probability (a string's confidence) must "
          "exceed this", "secondary", low=0.0, high=G_MAXDOUBLE),
    _uint("secondary-reinfer-interval", G_MAXINT, "secondary: frames before a tracked object is inferred again (its "
          "last result is attached meanwhile; a classified object whose box grew by 20 % is inferred at once)",
          "secondary"),
    _spec("classifier-type", "str", "", "secondary: classifier_type of the NvDsClassifierMeta (nvmsgconv's key for "
          "the label)", "secondary"),
    _spec("crop-size", "str", (), "secondary: HxW of every crop, or H alone: that height with the width by the box's "
          "aspect ratio (text lines); empty: input-size", "secondary", model=True, check=_crop, show=_show_crop),
    _spec("crop-padding", "float", 0.0, "secondary: margin on every side of a crop, a fraction of the box's shorter "
          "side", "secondary", low=0.0, high=10.0, model=True),
    _spec("crop-reading", "str", "as-is", "secondary: as-is (the box's width axis), left-to-right, or long-side (text "
          "lines)", "secondary", model=True, check=_choice(*READINGS)),
    _spec("crop-fill", "float", 0.0, "secondary: pixel level outside the frame and beyond a narrow crop",
          "secondary", low=0.0, high=255.0, model=True),
    _spec("charset", "str", "", "secondary text: the recogniser's tokens (a file of one per line); empty: the "
          "model's charset", "secondary", model=True, path=True),
    # ---- preprocessing
    _spec("preprocess", "str", "ultralytics", "how frames become the model's input, as its training framework did: "
          "ultralytics, ultralytics-rect (its stride-32 rectangle), mmrotate or nvinfer (obbmeta.frames.preprocess); "
          "with an nvinfer config file: nvinfer", "preprocessing", nvinfer_default="nvinfer", model=True,
          check=_choice(*PRESETS)),
    _spec("model-color-format", "int", UNSET, "-1: the preset's; 0 RGB, 1 BGR, 2 GRAY", "preprocessing", low=-1,
          high=2, model=True),
    _spec("maintain-aspect-ratio", "int", UNSET, "-1: the preset's; 0 stretch, 1 keep (padded)", "preprocessing",
          low=-1, high=1, model=True),
    _spec("symmetric-padding", "int", UNSET, "-1: the preset's; 0 right / bottom, 1 centred", "preprocessing",
          low=-1, high=1, model=True),
    _spec("scaling-filter", "int", UNSET, "-1: the preset's; 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos "
          "(bicubic here), 5 and 6 (nvinfer's GPU default) nearest", "preprocessing", low=-1, high=6, model=True),
    _spec("net-scale-factor", "float", 0.0, "0: the preset's; input = (level - mean) * this (with an nvinfer file "
          "an explicit 0 applies neither scale nor offsets, as nvinfer)", "preprocessing", low=0.0,
          high=G_MAXDOUBLE, model=True),
    _spec("offsets", "str", (), "per-channel means subtracted before net-scale-factor (a;b;c); empty: the preset's",
          "preprocessing", model=True, check=_offsets, show=_show_offsets),
    _spec("mean-file", "str", "", "a PPM image of the input size subtracted pixel by pixel before net-scale-factor "
          "(nvinfer's mean-file; it wins over offsets)", "preprocessing", model=True, path=True),
    # ---- tensors, as nvinfer's
    _spec("output-tensor-meta", "bool", False, "attach the model's output tensors as NvDsInferTensorMeta (frame user "
          "meta in primary mode, object user meta in secondary), as nvinfer", "tensors", nvinfer=True,
          mutable="ready"),
    _spec("input-tensor-meta", "bool", False, "run the model on the tensor nvdspreprocess attached "
          "(GstNvDsPreProcessBatchMeta) instead of on the frames", "tensors", nvinfer=True, mutable="ready"),
    _spec("raw-output-file-write", "bool", False, "write every layer of every inferred batch to "
          "gstnvdsinfer_uid-NN_layer-NAME_batch-NNNNNNNNNN_batchsize-NN.bin in the current folder", "tensors",
          nvinfer=True, mutable="ready"),
    _spec("raw-output-generated-callback", "pointer", None, "a C function called with every inferred batch's "
          "layers (gst_nvinfer_raw_output_generated_callback); Python code connects to the raw-output-generated "
          "signal instead", "tensors", nvinfer=True, mutable="ready"),
    _spec("raw-output-generated-userdata", "pointer", None, "the user_data the raw-output callback gets", "tensors",
          nvinfer=True, mutable="ready"),
    _spec("output-instance-mask", "bool", False, "nvinfer's instance masks: an oriented detector writes boxes, no "
          "masks (one warning when set)", "tensors", nvinfer=True, mutable="ready"),
    _spec("clip-object-outside-roi", "bool", True, "input-tensor-meta: clip each detection to its preprocess ROI",
          "tensors", nvinfer=True, mutable="ready"),
    _spec("crop-objects-to-roi-boundary", "bool", False, "roi-top/bottom-offset clip the boxes instead of dropping "
          "them", "tensors", nvinfer=True, mutable="ready"),
    _spec("strongly-typed", "bool", False, "nvinfer's TensorRT strongly-typed network (DS 9): nothing to do for a "
          "PyTorch model", "tensors", nvinfer=True, mutable="ready"),
    _spec("dynamic-properties", "str", "", "nvinfer's TensorRT builder flags (DS 9): nothing to do for a PyTorch "
          "model", "tensors", nvinfer=True, mutable="ready"),
]}


def _refuse_network_type(value: int) -> int:
    if value == 2:
        raise ValueError("2 (semantic segmentation) is not an oriented detector's output: obbinfer runs detectors "
                         "(0, 3), classifiers (1) and, with output-tensor-meta, any model (100)")
    raise ValueError(f"expected 0 (detector), 1 (classifier), 3 (instance segmentation) or 100 (other), got {value}")


#: nvinfer's element-level names that are another name of a setting (the alias -> the setting).
ALIASES: dict[str, str] = {a: s.name for s in SPECS.values() for a in s.aliases}
NETWORK_MODE_ALIAS = "network-mode"
#: The settings whose change while playing loads a new model.
MODEL_SETTINGS = frozenset(s.name for s in SPECS.values() if s.model)


class _Resolved:
    """Derived readings of an :class:`InferSettings`."""

    with_config: bool = False

    @property
    def secondary(self) -> bool:
        return self.process_mode == 2

    def replace(self, **changes: Any) -> "InferSettings":
        return replace(self, **changes)

    def as_properties(self) -> dict[str, Any]:
        """Every property's value as ``get_property`` returns it."""
        return {s.name: s.to_property(getattr(self, s.attr)) for s in SPECS.values() if s.is_property}


#: The settings of one obbinfer, resolved: one typed field per :data:`SPECS` entry (``settings.input_size`` is a
#: (width, height) tuple or None, ``settings.operate_on_class_ids`` a tuple of ints, ...), frozen.
InferSettings = make_dataclass(
    "InferSettings", [(s.attr, Any, field(default=s.default, metadata={"spec": s})) for s in SPECS.values()]
    + [("with_config", bool, field(default=False)), ("class_attrs", tuple, field(default=())),
       ("given", frozenset, field(default=frozenset()))], bases=(_Resolved,), frozen=True)
InferSettings.__module__ = __name__
InferSettings.__doc__ = (
    "obbinfer's settings, resolved (obbmeta.config.settings.resolve). Fields: "
    + ", ".join(s.attr for s in SPECS.values())
    + "; with_config: an nvinfer file gave them; class_attrs: its [class-attrs-*] groups as (class id, ClassAttrs) "
    "pairs, -1 for class-attrs-all; given: the names of the settings a property or the file gave (the others are "
    "defaults).")


def resolve(explicit: Mapping[str, Any] | None = None, config: Any = None) -> "InferSettings":
    """The settings in force: ``explicit`` (setting name -> typed value, set on the element) over ``config``'s
    ``[obbmeta]`` values (``config.own``) over its nvinfer keys (``config.values``) over the defaults — nvinfer's
    where a config file is given (it is an nvinfer user's file), obbinfer's otherwise."""
    explicit = explicit or {}
    own = getattr(config, "own", {}) if config is not None else {}
    keyed = getattr(config, "values", {}) if config is not None else {}
    values = {}
    for s in SPECS.values():
        for source in (explicit, own, keyed):
            if s.name in source:
                values[s.attr] = source[s.name]
                break
        else:
            values[s.attr] = s.default_for(config is not None)
    attrs = tuple(sorted(getattr(config, "class_attrs", {}).items())) if config is not None else ()
    given = frozenset(explicit) | frozenset(own) | frozenset(keyed)
    return InferSettings(**values, with_config=config is not None, class_attrs=attrs, given=given)


def defaults(with_config: bool = False) -> "InferSettings":
    """The defaults: obbinfer's, or nvinfer's (``with_config``)."""
    return InferSettings(**{s.attr: s.default_for(with_config) for s in SPECS.values()}, with_config=with_config)


def spec_of(field_name: str) -> Spec:
    """The :class:`Spec` of an :class:`InferSettings` field (by attribute or property name)."""
    for f in fields(InferSettings):
        if f.name == field_name.replace("-", "_") and "spec" in f.metadata:
            return f.metadata["spec"]
    raise KeyError(field_name)


# ---------------------------------------------------------------- nvinfer's keys

@dataclass(frozen=True)
class Key:
    """One honoured nvinfer ``[property]`` key: the setting it fills, how GKeyFile reads its text (``int``,
    ``double``, ``bool``, ``string``, ``path``, ``int-list``, ``double-list``; nvinfer's own reading) and how that
    value becomes the setting's (``convert``, raising ValueError). Keys that fill one setting are read in ``rank``
    order: a lower rank wins (infer-dims over input-dims)."""
    name: str
    setting: str
    read: str
    convert: Callable[[Any], Any] = staticmethod(lambda v: v)
    rank: int = 0
    note: str = ""


def _dims3(values: list[int]) -> tuple[int, int]:
    if len(values) != 3 or min(values) < 1:
        raise ValueError(f"expected channels;height;width (3 values >= 1), got {';'.join(map(str, values))!r}")
    c, h, w = values
    if c not in (1, 3):
        raise ValueError(f"obbinfer feeds 3-channel (RGB / BGR) or 1-channel (GRAY) input, not {c} channels")
    return w, h


def _dims4(values: list[int]) -> tuple[int, int]:
    if len(values) != 4 or min(values[:3]) < 1 or values[3] not in (0, 1):
        raise ValueError(f"expected channels;height;width;order (order 0 NCHW or 1 NHWC), got "
                         f"{';'.join(map(str, values))!r}")
    return _dims3(values[:3])


def _gie_id(v: int) -> int:
    if v <= 0:
        raise ValueError(f"gie-unique-id must be > 0 (nvinfer's rule), got {v}")
    return v


def _range(lo: int, hi: int, what: str = "") -> Callable[[int], int]:
    def check(v: int) -> int:
        if not lo <= v <= hi:
            raise ValueError(f"expected {what or f'{lo}..{hi}'}, got {v}")
        return v
    return check


def _network_mode(v: int) -> str:
    if v not in NETWORK_MODES:
        raise ValueError(f"expected 0 (FP32), 1 (INT8), 2 (FP16) or 3 (BEST), got {v}")
    return NETWORK_MODES[v]


def _order(v: int) -> str:
    if v not in (0, 1):
        raise ValueError(f"expected 0 (NCHW) or 1 (NHWC), got {v}")
    return INPUT_ORDERS[v]


def _flag(v: bool) -> int:
    return int(v)


def _uint_key(v: int) -> int:
    if v < 0:
        raise ValueError(f"expected an integer >= 0, got {v}")
    return v


#: The nvinfer ``[property]`` keys obbinfer honours, each with the setting it fills.
KEYS: dict[str, Key] = {k.name: k for k in [
    Key("gie-unique-id", "unique-id", "int", _gie_id),
    Key("process-mode", "process-mode", "int", _range(1, 2, "1 (primary) or 2 (secondary)")),
    Key("interval", "interval", "int", _uint_key),
    Key("labelfile-path", "labelfile-path", "path"),
    Key("gpu-id", "gpu-id", "int", _uint_key),
    Key("batch-size", "batch-size", "int", _range(1, 1024)),
    Key("network-mode", "precision", "int", _network_mode),
    Key("network-type", "network-type", "int"),
    Key("is-classifier", "network-type", "bool", lambda v: 1 if v else 0, rank=1,
        note="legacy: used when network-type is absent"),
    Key("model-engine-file", "model-engine-file", "path"),
    Key("onnx-file", "onnx-file", "path"),
    Key("infer-dims", "input-size", "int-list", _dims3),
    Key("input-dims", "input-size", "int-list", _dims4, rank=1, note="legacy c;h;w;order: infer-dims wins"),
    Key("uff-input-dims", "input-size", "int-list", _dims4, rank=2, note="legacy c;h;w;order: infer-dims wins"),
    Key("network-input-order", "input-order", "int", _order),
    Key("uff-input-order", "input-order", "int", _order, rank=1),
    Key("model-color-format", "model-color-format", "int", _range(0, 2, "0 (RGB), 1 (BGR) or 2 (GRAY)")),
    Key("net-scale-factor", "net-scale-factor", "double"),
    Key("offsets", "offsets", "double-list", tuple),
    Key("mean-file", "mean-file", "path"),
    Key("maintain-aspect-ratio", "maintain-aspect-ratio", "bool", _flag),
    Key("symmetric-padding", "symmetric-padding", "bool", _flag),
    Key("scaling-filter", "scaling-filter", "int", _range(0, 6)),
    Key("num-detected-classes", "num-detected-classes", "int", _uint_key),
    Key("cluster-mode", "cluster-mode", "int", _range(0, 4)),
    Key("enable-dbscan", "cluster-mode", "bool", lambda v: 1 if v else 2, rank=1,
        note="legacy: true is cluster-mode=1 when cluster-mode is absent"),
    Key("operate-on-gie-id", "operate-on-gie-id", "int"),
    Key("operate-on-class-ids", "operate-on-class-ids", "int-list", tuple),
    Key("filter-out-class-ids", "filter-out-class-ids", "int-list", tuple),
    Key("input-object-min-width", "input-object-min-width", "int", _uint_key),
    Key("input-object-min-height", "input-object-min-height", "int", _uint_key),
    Key("input-object-max-width", "input-object-max-width", "int", _uint_key),
    Key("input-object-max-height", "input-object-max-height", "int", _uint_key),
    Key("classifier-threshold", "classifier-threshold", "double"),
    Key("secondary-reinfer-interval", "secondary-reinfer-interval", "int", _uint_key),
    Key("classifier-type", "classifier-type", "string"),
    Key("output-tensor-meta", "output-tensor-meta", "bool"),
    Key("input-tensor-from-meta", "input-tensor-meta", "bool"),
    Key("raw-output-file-write", "raw-output-file-write", "bool"),
    Key("output-instance-mask", "output-instance-mask", "bool"),
    Key("crop-objects-to-roi-boundary", "crop-objects-to-roi-boundary", "bool"),
    Key("stabilize-buffer-count", "stabilize-buffer-count", "int", _uint_key),
    Key("strongly-typed", "strongly-typed", "bool"),
    Key("dynamic-properties", "dynamic-properties", "string"),
]}
#: ``[class-attrs-all]`` keys that are element-wide settings (the rest are per-class attributes).
CLASS_ALL_SETTINGS = {"pre-cluster-threshold": "conf", "threshold": "conf", "nms-iou-threshold": "iou"}


# ---------------------------------------------------------------- the docs table

def docs_table() -> str:
    """The Markdown table of every setting (docs/gst.md between its markers; a test keeps them equal)."""
    keys: dict[str, list[str]] = {}
    for k in KEYS.values():
        keys.setdefault(k.setting, []).append(k.name)
    for key, setting in CLASS_ALL_SETTINGS.items():
        if key != "threshold":
            keys.setdefault(setting, []).append(f"[class-attrs-all] {key}")
    rows = ["| property | type, range | default | with an nvinfer file | nvinfer key | meaning |",
            "|---|---|---|---|---|---|"]
    for s in SPECS.values():
        kind = {"uint": "uint", "int": "int", "float": "double", "bool": "bool", "str": "string",
                "enum": "enum " + " / ".join(f"{v} {nick}" for v, _, nick in s.choices),
                "pointer": "pointer"}[s.kind]
        if s.low is not None:
            kind += f", {s.range_text().split(' in ')[-1]}"
        name = f"`{s.name}`" if s.is_property else f"({s.name})"
        if s.aliases:
            name += " / " + " / ".join(f"`{a}`" for a in s.aliases)
        if s.nvinfer:
            name += " ¹"
        default = _cell(s.to_property(s.default), s)
        nvd = _cell(s.to_property(s.nvinfer_default), s) if s.nvinfer_default is not SAME else "same"
        key = ", ".join(f"`{k}`" for k in keys.get(s.name, [])) or "—"
        blurb = s.blurb.replace("|", "\\|") + (" (config file only)" if not s.is_property else "")
        rows.append(f"| {name} | {kind} | {default} | {nvd} | {key} | {blurb} |")
    return "\n".join(rows)


def _cell(value: Any, s: Spec) -> str:
    if value is None or value == "" or value == ():
        return "—"
    if s.kind == "enum":
        return next(f"{v} ({nick})" for v, _, nick in s.choices if v == value)
    if s.kind == "bool":
        return "true" if value else "false"
    text = {G_MAXINT: "G_MAXINT", G_MAXUINT: "G_MAXUINT"}.get(value, None) if is_int(value) else None
    return f"`{text or value}`"


__all__ = ["Spec", "Key", "SPECS", "KEYS", "ALIASES", "InferSettings", "resolve", "defaults", "spec_of",
           "docs_table", "PRECISIONS", "NETWORK_MODES", "NETWORK_TYPES", "CLUSTER_MODES", "PROCESS_MODES", "PRESETS",
           "OUTPUT_FORMATS", "DETECTOR_FORMATS", "SECONDARY_FORMATS", "READINGS", "UNSET", "MODEL_SETTINGS",
           "text_int", "text_float", "text_bool", "text_list", "is_factory", "G_MAXINT", "G_MAXUINT"]
