"""``obbinfer``: an oriented detector written in PyTorch as a pipeline element, in place of nvinfer.

Per buffer: the frames of the batch (system memory: one; after nvstreammux / nvvideoconvert in ``memory:NVMM``:
every filled surface, as zero-copy CUDA views) go through the model in one call (or in ``batch-size`` chunks), are
decoded and suppressed on the model's device (:class:`obbmeta.infer.Detector`) and written with
``attach_obbs_batch`` into the frame metas (``frame_meta->batch_id`` picks the surface), as nvinfer writes
detections: tight AABB in ``rect_params``, ``object_id = UNTRACKED_OBJECT_ID``, ``bInferDone``, plus the OBB user
meta. With no NvDsBatchMeta on the buffer it makes one as nvstreammux would.

nvinfer's names and configuration: ``config-file-path`` reads an nvinfer config (:mod:`obbmeta.nvinfer_config`);
properties set on the element override the file; nvinfer's property names are aliases (``gie-unique-id``,
``infer-on-gie-id``, ``infer-on-class-ids``, ``gpu-id``, ``network-mode``). Life cycle as nvinfer's: the model is
loaded and warmed up at READY -> PAUSED (a bad model fails the state change); setting ``model``,
``config-file-path`` or another property that defines the model while playing loads the new one off the streaming
thread and swaps it in at a batch boundary (``model-updated`` signal and an ``obbinfer-model-updated`` element
message); a replacement that fails keeps the old model and posts a warning. ``GST_DEBUG=obbinfer:5`` logs the
device, load and warm-up times and each batch's latency by phase (no extra synchronisation: the batch's one copy of
its results to the host already waits for the device); level 6 splits the detector's share into letterbox, model +
decode and copy on CUDA (synchronising between them). torch is imported when the element starts, not when
GStreamer scans the plugin.
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Any

from .. import nvinfer_config
from .._validators import int_in_range, size_pair
from ..nvinfer_config import COLOR_FORMATS, ConfigError, read_nvinfer_config
from ._element import ObbmetaElement, batch_meta_for, describe_failure, one_of
from ._frames import mapped_frames
from ._gi import GObject, Gst

PRESETS = ("ultralytics", "ultralytics-rect", "mmrotate", "nvinfer")
PRECISIONS = ("fp32", "fp16", "bf16")
# Properties that define the loaded model: a change while playing builds a new detector and swaps it in.
MODEL_PROPERTIES = frozenset({
    "model", "config-file-path", "input-size", "output-format", "device", "preprocess", "model-color-format",
    "maintain-aspect-ratio", "symmetric-padding", "scaling-filter", "net-scale-factor", "offsets", "precision",
    "batch-size", "warm-up", "cuda-graph", "compile", "channels-last", "threads", "max-batch-wait-us", "crop-size",
    "crop-padding", "crop-reading", "crop-fill", "charset", "classifier-threshold"})
# Every other property (conf, iou, max-det, osd-limit, labels, ids, interval, ...) is read at every batch.
UNSET = -1


REINFER_AREA_GROWTH = 0.2   # nvinfer's REINFER_AREA_THRESHOLD: an object whose box grew this much is inferred again
HISTORY_MAX_AGE = 150       # nvinfer's CLEANUP_ACCESS_CRITERIA: frames after which an unseen object is forgotten


@dataclass
class _History:
    """What a secondary element last did for a tracked object (nvinfer's GstNvInferObjectHistory)."""
    frame_num: int      # frame it was last inferred on
    area: float         # its rect_params area then
    seen: int           # frame it was last seen on
    result: Any         # the labels attached then (None: nothing passed the threshold)


def _check_model(value: Any) -> str:
    text = "" if value is None else str(value)
    if text and os.path.exists(text):
        import stat

        if not stat.S_ISREG(os.stat(text).st_mode):
            raise ValueError(f"{text!r} is not a regular file (a directory, FIFO or device)")
    elif text:
        module, sep, attr = text.partition(":")
        if not (sep and module and attr):
            raise ValueError("expected 'package.module:callable', a TorchScript file or a torch.export file "
                             "(no such file)")
    return text


def _check_input_size(value: Any) -> str:
    from ..infer import parse_input_size

    w, h = parse_input_size(value)
    return f"{w}x{h}"


def _check_class_names(value: Any) -> str:
    from ..infer import parse_class_names

    parse_class_names(value or None)
    return value or ""


def _check_label_file(value: Any) -> str:
    from ..infer import read_label_file

    if value:
        read_label_file(value)
    return value or ""


def _check_output_format(value: Any) -> str:
    from ..infer import OUTPUT_FORMATS
    from ..secondary import OUTPUT_FORMATS as SECONDARY_FORMATS

    return one_of(*OUTPUT_FORMATS, *SECONDARY_FORMATS)(value)


def _check_crop_size(value: Any) -> str:
    """``HxW`` / ``H,W`` (a fixed crop) or ``H`` (that height, the width following each box), as ``HxW`` / ``H``."""
    text = (value or "").strip().lower()
    if not text:
        return text
    form = "HxW, H,W or H (pixels, 1..4096)"
    if text.isdigit():
        return str(int_in_range("crop-size", int(text), 1, 4096, form))
    h, w = size_pair("crop-size", text, 1, 4096, order="hw", strings=True, form=form, kind_error=ValueError)
    return f"{h}x{w}"


def _check_device(value: Any) -> str:
    from ..infer import parse_device

    return parse_device(value)


def _check_class_ids(value: Any) -> str:
    """nvinfer's class-id lists: ``0;2;3`` (config), ``0:2:3`` (element property); commas too."""
    text = (value or "").strip()
    if not text:
        return ""
    parts = [p.strip() for p in text.replace(":", ";").replace(",", ";").split(";") if p.strip()]
    try:
        ids = [int(p) for p in parts]
    except ValueError:
        raise ValueError(f"expected class ids separated by ';' or ':' (e.g. 0;2;3), got {value!r}") from None
    if any(i < 0 for i in ids):
        raise ValueError(f"class ids must be >= 0, got {value!r}")
    return ";".join(str(i) for i in ids)


def _check_offsets(value: Any) -> str:
    text = (value or "").strip()
    if not text:
        return ""
    try:
        vals = [float(p) for p in text.split(";") if p.strip()]
    except ValueError:
        raise ValueError(f"expected per-channel means separated by ';' (e.g. 123.7;116.3;103.5), got {value!r}") \
            from None
    if len(vals) not in (1, 3):
        raise ValueError(f"expected 1 or 3 values, got {value!r}")
    return ";".join(repr(v) for v in vals)


def _check_config(value: Any) -> str:
    text = value or ""
    if text:
        read_nvinfer_config(text, _OBBMETA_KEYS)
    return text


def _ids(text: str) -> list[int]:
    return [int(p) for p in text.split(";") if p] if text else []


_SPECS = {
    "model": (str, "model", "'package.module:callable' (called with no arguments; returns a torch module or any "
              "callable), a TorchScript file, or a torch.export file (.pt2)", ""),
    "config-file-path": (str, "config file path", "an nvinfer config file ([property], [class-attrs-*], [obbmeta] "
                         "groups); properties set on the element override it", ""),
    "input-size": (str, "input size", "model input: N (square) or WxH pixels (nvinfer's infer-dims)", "640"),
    "conf": (float, "confidence", "score threshold (nvinfer's pre-cluster-threshold of class-attrs-all)", 0.0, 1.0,
             0.25),
    "iou": (float, "IoU", "greedy rotated NMS threshold (exact polygon IoU, class-aware; nvinfer's "
            "nms-iou-threshold)", 0.0, 1.0, 0.45),
    "max-det": (int, "max detections", "boxes kept per frame", 1, 100000, 300),
    "osd-limit": (int, "OSD limit", "objects per frame that keep what nvdsosd draws (border, label); the rest are "
                  "written complete but invisible to it (docs/osd.md: nvdsosd's large batches); 0: all", 0, 100000, 0),
    "class-names": (str, "class names", "comma-separated names, or a label file (one per line); empty: "
                    "labelfile-path, else the model's own names", ""),
    "labelfile-path": (str, "label file", "nvinfer's label file: one class per line", ""),
    "unique-id": (int, "unique id", "unique_component_id of the objects (nvinfer's unique-id / gie-unique-id)", 0,
                  2**31 - 1, 1),
    "gie-unique-id": (int, "gie unique id", "alias of unique-id (nvinfer config name)", 0, 2**31 - 1, 1),
    "device": (str, "device", "where the model runs: auto (CUDA gpu-id when torch sees a GPU, else the CPU), cpu, "
               "cuda, cuda:N", "auto"),
    "gpu-id": (int, "GPU id", "alias: device=cuda:N (nvinfer's gpu-id)", 0, 1023, 0),
    "interval": (int, "interval", "batches to skip between inferences (as nvinfer's interval)", 0, 2**31 - 1,
                 0),
    "output-format": (str, "output format", "yolo-obb (raw or end-to-end head), mmrotate (results list) or boxes "
                      "(OrientedBoxes per frame); secondary: classifier ((K, C) scores, or one per head) or text "
                      "((K, T, C) CTC logits, or K strings)", "yolo-obb"),
    "batch-size": (int, "batch size", "frames per model call (0: every frame of the buffer in one call)", 0, 1024,
                   0),
    "process-mode": (int, "process mode", "1: primary (whole frames); 2: secondary (each object's box cropped upright "
                     "for a classifier or text recogniser, results in NvDsClassifierMeta)", 1, 2, 1),
    "input-object-min-width": (int, "input object min width", "secondary: objects narrower (rect_params) are skipped",
                               0, 2**31 - 1, 0),
    "input-object-min-height": (int, "input object min height", "secondary: objects lower are skipped", 0,
                                2**31 - 1, 0),
    "input-object-max-width": (int, "input object max width", "secondary: objects wider are skipped (0: no limit)",
                               0, 2**31 - 1, 0),
    "input-object-max-height": (int, "input object max height", "secondary: objects higher are skipped (0: no limit)",
                                0, 2**31 - 1, 0),
    "classifier-threshold": (float, "classifier threshold", "secondary: a label's probability (a string's "
                             "confidence) must exceed this", 0.0, 1.0, 0.0),
    "secondary-reinfer-interval": (int, "secondary reinfer interval", "secondary: frames before a tracked object is "
                                   "inferred again (its last result is attached meanwhile; an object whose box grew "
                                   "by 20 % is inferred at once)", 0, 2**31 - 1, 2**31 - 1),
    "classifier-type": (str, "classifier type", "secondary: classifier_type of the NvDsClassifierMeta (nvmsgconv's "
                        "key for the label)", ""),
    "crop-size": (str, "crop size", "secondary: HxW of every crop, or H alone: that height with the width by the "
                  "box's aspect ratio (text lines); empty: input-size", ""),
    "crop-padding": (float, "crop padding", "secondary: margin on every side of a crop, a fraction of the box's "
                     "shorter side", 0.0, 10.0, 0.0),
    "crop-reading": (str, "crop reading", "secondary: as-is (the box's width axis), left-to-right, or long-side "
                     "(text lines)", "as-is"),
    "crop-fill": (float, "crop fill", "secondary: pixel level outside the frame and beyond a narrow crop", 0.0, 255.0,
                  0.0),
    "charset": (str, "charset", "secondary text: the recogniser's tokens (a file of one per line); empty: the "
                "model's charset", ""),
    "operate-on-gie-id": (int, "operate on gie id", "secondary mode: objects of this unique_component_id (-1: any)",
                          -1, 2**31 - 1, -1),
    "infer-on-gie-id": (int, "infer on gie id", "alias of operate-on-gie-id (nvinfer's element name)", -1,
                        2**31 - 1, -1),
    "operate-on-class-ids": (str, "operate on class ids", "secondary mode: objects of these class ids (0;2;3)", ""),
    "infer-on-class-ids": (str, "infer on class ids", "alias of operate-on-class-ids (nvinfer's element name, "
                           "0:2:3)", ""),
    "filter-out-class-ids": (str, "filter out class ids", "detections of these class ids are not written (0;2;3)",
                             ""),
    "preprocess": (str, "preprocess", "how frames become the model's input, as its training framework did: "
                   "ultralytics, ultralytics-rect (its stride-32 rectangle), mmrotate or nvinfer (obbmeta.preprocess)",
                   "ultralytics"),
    "model-color-format": (int, "model color format", "-1: the preprocess default; 0 RGB, 1 BGR, 2 GRAY", -1, 2, -1),
    "maintain-aspect-ratio": (int, "maintain aspect ratio", "-1: the preprocess default; 0 stretch, 1 keep", -1, 1,
                              -1),
    "symmetric-padding": (int, "symmetric padding", "-1: the preprocess default; 0 right / bottom, 1 centred", -1, 1,
                          -1),
    "scaling-filter": (int, "scaling filter", "-1: the preprocess default; 0 nearest, 1 bilinear, 2 bicubic, 3 area",
                       -1, 6, -1),
    "net-scale-factor": (float, "net scale factor", "0: the preprocess default; input = (level - offsets) * this",
                         0.0, 1e6, 0.0),
    "offsets": (str, "offsets", "per-channel means subtracted before net-scale-factor (a;b;c); empty: the "
                "preprocess default", ""),
    "precision": (str, "precision", "fp32, fp16 or bf16 (the model under torch.autocast)", "fp32"),
    "network-mode": (int, "network mode", "alias of precision in nvinfer's numbers: 0 FP32, 2 FP16", 0, 3, 0),
    "warm-up": (bool, "warm up", "run the model once at start on the input size, so the first frame pays no "
                "first-call costs", True),
    "cuda-graph": (bool, "CUDA graph", "on CUDA: model + decode captured in a CUDA graph per input shape (batch "
                   "sizes bucketed to powers of two), replayed per batch with one host synchronisation", False),
    "compile": (bool, "compile", "run the model through torch.compile (eager after a warning when it fails)", False),
    "channels-last": (bool, "channels last", "model and input in channels-last memory format", False),
    "threads": (int, "threads", "torch's CPU threads (process-wide; 0: half the cores for a CPU model, leaving the "
                "rest to GStreamer's threads)", 0, 1024, 0),
    "max-batch-wait-us": (int, "max batch wait", "> 0: frames that obbinfer elements with the same settings (separate "
                          "pipelines in one process) get within this many microseconds run as one model batch", 0,
                          1_000_000, 0),
}
_CONFIG_CHECKS = {
    "model": _check_model, "input-size": _check_input_size, "class-names": _check_class_names,
    "labelfile-path": _check_label_file, "output-format": _check_output_format, "device": _check_device,
    "operate-on-class-ids": _check_class_ids, "filter-out-class-ids": _check_class_ids,
    "preprocess": one_of(*PRESETS), "precision": one_of(*PRECISIONS), "offsets": _check_offsets,
    "crop-size": _check_crop_size, "crop-reading": one_of("as-is", "left-to-right", "long-side"),
}


def _typed(name: str) -> Any:
    """The check that turns an [obbmeta] value (text) into the property's value."""
    spec = _SPECS[name]
    if name in _CONFIG_CHECKS:
        return _CONFIG_CHECKS[name]
    if spec[0] is bool:
        return lambda t: nvinfer_config.parse_bool(str(t))
    if spec[0] in (int, float):
        def in_range(t, kind=spec[0], lo=spec[3], hi=spec[4]):
            v = kind(t)
            if not lo <= v <= hi:
                raise ValueError(f"expected {'an integer' if kind is int else 'a number'} in [{lo}, {hi}], got {t!r}")
            return v
        return in_range
    return lambda t: t


_OBBMETA_KEYS = {name: _typed(name) for name in _SPECS if name not in ("config-file-path",)}


@dataclass
class _Loaded:
    """A detector and the settings it was built from."""
    detector: Any
    config: Any
    model: str
    config_path: str
    secondary: bool = False  # built for process-mode=2 (a SecondaryModel): the mode in force until the next start


class ObbInfer(ObbmetaElement):
    element_name = "obbinfer"
    gtype_name = "GstObbInfer"
    long_name = "obbmeta oriented-box inference"
    klass = "Filter/Analyzer/Video"
    description = ("Runs a PyTorch oriented-box detector on every frame of the batch and writes NvDsObjectMeta (the "
                   "tight axis-aligned box) plus an OBB user meta (angle, polygon): nvinfer for oriented detectors")
    debug_description = "obbmeta oriented-box inference (nvinfer for PyTorch oriented detectors)"
    __gsignals__ = {"model-updated": (GObject.SignalFlags.RUN_LAST, None, (int, str))}
    _aliases = {"gie-unique-id": "unique-id", "infer-on-gie-id": "operate-on-gie-id",
                "infer-on-class-ids": "operate-on-class-ids", "gpu-id": "device", "network-mode": "precision"}
    _ready_only = frozenset({"process-mode"})
    property_specs = _SPECS
    _checks = {**_CONFIG_CHECKS, "config-file-path": _check_config}

    def __init__(self):
        super().__init__()
        self.loaded: _Loaded | None = None
        self._pending: _Loaded | None = None
        self._generation = 0
        self._swap_lock = threading.Lock()
        self._history: dict[int, dict[int, _History]] = {}  # secondary: per source, per tracked object
        self._assigned = False
        self._label_cache: tuple = (None, None)
        self.batches = 0   # buffers seen (for interval)
        self.frames = 0    # frame_num of the batch metas this element creates
        self.inferred = 0  # batches that went through the model
        self.timings: list | None = None  # a list: each inferred batch appends its phase times (benchmarks)

    @property
    def detector(self) -> Any:
        """The detector in force (None before start)."""
        return self.loaded.detector if self.loaded is not None else None

    @detector.setter
    def detector(self, detector: Any) -> None:
        """Use this :class:`obbmeta.infer.Detector` (from Python) instead of building one from the properties."""
        self.loaded = None if detector is None else _Loaded(detector, None, "(assigned)", "",
                                                            secondary=self._props["process-mode"] == 2)
        self._assigned = detector is not None

    # ---------------------------------------------------------------- properties

    def prop(self, name: str) -> Any:
        """The value in force: set on the element, else from the loaded config file, else the default."""
        loaded = self.loaded
        return self._value(name, loaded.config.properties if loaded is not None and loaded.config else {})

    def _value(self, name: str, config_properties: dict) -> Any:
        if name not in self._explicit and name in config_properties:
            return config_properties[name]
        return self._props[name]

    def get_alias(self, name: str) -> Any:
        if name == "gpu-id":
            device = self.prop("device")
            return int(device.split(":")[1]) if device.startswith("cuda:") else 0
        if name == "network-mode":
            return 2 if self.prop("precision") in ("fp16", "bf16") else 0
        return super().get_alias(name)

    def set_alias(self, name: str, value: Any) -> tuple[str, Any]:
        if name == "gpu-id":
            return "device", nvinfer_config.parse_gpu_id(str(value))
        if name == "network-mode":
            return "precision", nvinfer_config.parse_network_mode(str(value))
        return super().set_alias(name, value)

    def property_changed(self, name: str) -> None:
        if self.running and name in MODEL_PROPERTIES and not self._assigned:
            self._rebuild(name)

    # ---------------------------------------------------------------- building the detector

    def _read_config(self) -> Any:
        path = self._props["config-file-path"]
        if not path:
            return None
        config = read_nvinfer_config(path, _OBBMETA_KEYS)
        for text in config.warnings:
            self.warn(text)
        for alias in [k for k in config.properties if k in self._aliases]:  # [obbmeta] gpu-id=1, gie-unique-id=3
            try:
                name, value = self.set_alias(alias, config.properties.pop(alias))
            except ValueError as exc:
                raise ConfigError(f"{path}:{config.lines.get(alias, 0)}: {alias}: {exc}") from None
            config.properties.setdefault(name, value)
            config.lines.setdefault(name, config.lines.get(alias, 0))
        base = config.class_attrs.get(-1)
        if base is not None:  # class-attrs-all's thresholds are the element's conf and iou
            if base.pre_cluster_threshold is not None:
                config.properties.setdefault("conf", base.pre_cluster_threshold)
            if base.nms_iou_threshold is not None:
                config.properties.setdefault("iou", base.nms_iou_threshold)
        return config

    def _build(self) -> _Loaded:
        """A detector from the properties in force (config file applied under the explicit ones), loaded on its
        device and warmed up. Runs on any thread; touches no element state but what it returns."""
        from .. import preprocess
        from ..infer import ClassFilter, Detector

        config = self._read_config()
        with self._prop_lock:
            settings = {name: self._value(name, config.properties if config else {}) for name in self._props}
        if not settings["model"]:
            raise ValueError("no model: set model='package.module:callable' or a TorchScript / torch.export file "
                             "(in the element or in the config's [obbmeta] group), or, from Python, assign "
                             "element.detector = obbmeta.infer.Detector(...)")
        secondary = settings["process-mode"] == 2
        if config and config.properties.get("network-type") == "classifier":
            if not secondary:
                raise ValueError(f"{config.path}: network-type=1 (classifier) needs process-mode=2 (secondary)")
            if "output-format" not in self._explicit and "output-format" not in config.properties:
                settings["output-format"] = "classifier"
        from ..secondary import OUTPUT_FORMATS as SECONDARY_FORMATS

        if secondary != (settings["output-format"] in SECONDARY_FORMATS):
            raise ValueError(f"output-format={settings['output-format']} and process-mode={settings['process-mode']} "
                             "do not go together: process-mode=2 (secondary) takes output-format classifier or text, "
                             "process-mode=1 a detector's yolo-obb, mmrotate or boxes")
        device = settings["device"]
        if device == "auto":
            import torch

            device = "cuda:0" if torch.cuda.is_available() else "cpu"
        pre = preprocess.from_nvinfer_keys(
            preprocess.preset(settings["preprocess"]),
            model_color_format=COLOR_FORMATS.get(settings["model-color-format"]),
            maintain_aspect_ratio=None if settings["maintain-aspect-ratio"] == UNSET
            else bool(settings["maintain-aspect-ratio"]),
            symmetric_padding=None if settings["symmetric-padding"] == UNSET else bool(settings["symmetric-padding"]),
            scaling_filter=None if settings["scaling-filter"] == UNSET else settings["scaling-filter"],
            net_scale_factor=settings["net-scale-factor"] or None,
            offsets=[float(v) for v in settings["offsets"].split(";")] if settings["offsets"] else None)
        if secondary:
            return self._build_secondary(settings, config, device, pre)
        class_filter = ClassFilter.from_config(config, _ids(settings["filter-out-class-ids"]))
        t0 = time.perf_counter()
        detector = Detector(settings["model"], input_size=settings["input-size"], conf=settings["conf"],
                            iou=settings["iou"],
                            max_det=settings["max-det"], output_format=settings["output-format"], device=device,
                            preprocess_mode=pre, precision=settings["precision"], class_filter=class_filter,
                            batch_size=settings["batch-size"], threads=settings["threads"] or None,
                            cuda_graph=settings["cuda-graph"], compile=settings["compile"],
                            channels_last=settings["channels-last"],
                            max_batch_wait_us=settings["max-batch-wait-us"])
        self.debug_category.info(self, "model %s loaded on %s (%s, preprocess %s) in %.3f s", settings["model"],
                                 device, settings["precision"], settings["preprocess"], time.perf_counter() - t0)
        if settings["warm-up"]:
            seconds = detector.warm_up(batch=max(1, settings["batch-size"]))
            self.debug_category.info(self, "warm-up on %s: %.3f s", detector.input_size, seconds)
        self._check_classes(detector, config)
        return _Loaded(detector, config, settings["model"], settings["config-file-path"])

    def _build_secondary(self, settings: dict, config: Any, device: str, pre: Any) -> _Loaded:
        """process-mode=2: a classifier or recogniser on upright crops of the objects' boxes."""
        import torch

        from ..infer import parse_input_size
        from ..secondary import SecondaryModel

        crop = settings["crop-size"]
        parts = crop.split("x") if crop else []
        if len(parts) == 1:
            size, height = None, int(parts[0])
        else:
            w, h = parse_input_size(settings["input-size"])
            size, height = ((int(parts[0]), int(parts[1])) if parts else (h, w)), None
        t0 = time.perf_counter()
        sec = SecondaryModel(settings["model"], settings["output-format"], device, crop_size=size or (1, 1),
                             crop_height=height, padding=settings["crop-padding"], reading=settings["crop-reading"],
                             preprocess=pre, labels=settings["labelfile-path"] or settings["class-names"] or None,
                             charset=settings["charset"] or None, threshold=settings["classifier-threshold"],
                             batch_size=settings["batch-size"], precision=settings["precision"],
                             fill=settings["crop-fill"])
        self.debug_category.info(self, "secondary model %s (%s) loaded on %s in %.3f s", settings["model"],
                                 settings["output-format"], device, time.perf_counter() - t0)
        if settings["warm-up"]:
            t0 = time.perf_counter()
            grey = torch.full((64, 128, 3), 114, dtype=torch.uint8, device=device)
            sec([grey], "RGB", torch.tensor([[0.0, 64.0, 32.0, 96.0, 24.0, 0.0]]))
            self.debug_category.info(self, "warm-up: %.3f s", time.perf_counter() - t0)
        return _Loaded(sec, config, settings["model"], settings["config-file-path"], secondary=True)

    def _check_classes(self, detector: Any, config: Any) -> None:
        expected = config.properties.get("num-detected-classes") if config else None
        labels = self._labels(detector)
        if expected is not None and labels is not None and len(labels) != expected:
            self.warn(f"{config.path}: num-detected-classes={expected} but the labels name {len(labels)} classes")

    def _cached_labels(self, detector: Any) -> list[str] | None:
        key = (self.prop("class-names"), self.prop("labelfile-path"), id(detector))
        if self._label_cache[0] != key:
            self._label_cache = (key, self._labels(detector))
        return self._label_cache[1]

    def _labels(self, detector: Any) -> list[str] | None:
        from ..infer import parse_class_names

        if self.loaded is not None and self.loaded.secondary:
            return None  # a secondary element's labels are its classifier's (SecondaryModel.labels_for)
        names = self.prop("class-names")
        if names:
            return parse_class_names(names)
        label_file = self.prop("labelfile-path")
        if label_file:
            return parse_class_names(label_file)
        return detector.labels

    def start(self) -> None:
        self.batches = self.frames = self.inferred = 0
        self._pending = None
        if self._assigned and self.loaded is not None:
            return
        with self._swap_lock:
            self._generation += 1
        self.loaded = self._build()

    def reset(self) -> None:
        self._history.clear()  # a stream ended or was flushed: its objects' ids start again

    def stop(self) -> None:
        with self._swap_lock:
            self._generation += 1  # a replacement still loading is dropped when it finishes
            self._pending = None

    def _rebuild(self, reason: str) -> None:
        with self._swap_lock:
            self._generation += 1
            generation = self._generation
        self.debug_category.info(self, "%s changed while running: loading a new model in the background", reason)
        threading.Thread(target=self._build_pending, args=(generation, reason), daemon=True,
                         name=f"{self.get_name()}-model-load").start()

    def _build_pending(self, generation: int, reason: str) -> None:
        try:
            loaded = self._build()
        except BaseException as exc:  # noqa: BLE001 - the old model keeps running; say why the new one did not
            self.warn(f"the new model ({reason} changed) could not be loaded, the previous one keeps running: "
                      f"{describe_failure(exc)}")
            self.emit("model-updated", 1, self._props["config-file-path"] or self._props["model"])
            return
        with self._swap_lock:
            if generation == self._generation and self.running:
                self._pending = loaded

    def _swap_if_ready(self) -> None:
        with self._swap_lock:
            pending, self._pending = self._pending, None
        if pending is None:
            return
        self.loaded = pending
        self.debug_category.info(self, "model swapped at batch %d: %s", self.batches, pending.model)
        s = Gst.Structure.new_empty("obbinfer-model-updated")
        s.set_value("batch", self.batches)
        s.set_value("model", pending.model)
        s.set_value("config-file-path", pending.config_path)
        self.post_message(Gst.Message.new_element(self, s))
        self.emit("model-updated", 0, pending.config_path or pending.model)

    # ---------------------------------------------------------------- buffers

    def _secondary(self, batch: Any, frames: list, views: list, sec: Any, t0: float, batch_index: int,
                   timing: bool) -> None:
        """process-mode=2: the objects nvinfer's secondary mode would take (operate-on-gie-id / class ids, input
        object sizes, the reinfer interval of tracked objects) cropped upright and classified / read; results in
        NvDsClassifierMeta; tracked objects not due again get their last result, as nvinfer attaches its cache."""
        from .. import nvds
        from ..nvds.classifier import Label

        gie = self.prop("operate-on-gie-id")
        classes = set(_ids(self.prop("operate-on-class-ids")))
        lo_w, lo_h = self.prop("input-object-min-width"), self.prop("input-object-min-height")
        hi_w, hi_h = self.prop("input-object-max-width"), self.prop("input-object-max-height")
        interval = self.prop("secondary-reinfer-interval")
        rows, targets, keys, cached = [], [], [], []
        for f in frames:
            history = self._history.setdefault(f.source_id, {})
            frame_num = f.frame_number
            for info, obb in nvds.read_obbs(f):
                w, h = info.rect[2], info.rect[3]
                if (gie >= 0 and info.component_id != gie) or (classes and info.class_id not in classes) or \
                        w < lo_w or h < lo_h or (hi_w and w > hi_w) or (hi_h and h > hi_h):
                    continue
                key = info.object_id if info.tracked else None
                past = history.get(key) if key is not None else None
                if past is not None:
                    past.seen = frame_num
                    grew = w * h > past.area * (1 + REINFER_AREA_GROWTH)
                    if not grew and frame_num - past.frame_num <= interval:
                        cached.append((info.address, past.result))
                        continue
                rows.append([float(f.batch_id), *obb.xywhr])
                targets.append(info.address)
                keys.append((f.source_id, key, frame_num, w * h))
            for k in [k for k, v in history.items() if frame_num - v.seen > HISTORY_MAX_AGE]:
                del history[k]
        t1 = time.perf_counter()
        formats = [v.format for v in views]
        results = sec([v.model_input for v in views], formats, rows) if rows else []
        t2 = time.perf_counter()
        labels = [None if r is None else [Label(x.class_id, x.prob, x.label, x.label_id) for x in r] for r in results]
        for (source, key, frame_num, area), result in zip(keys, labels):
            if key is not None:
                self._history[source][key] = _History(frame_num, area, frame_num, result)
        objects = targets + [a for a, _ in cached]
        written = None
        if objects:
            written = nvds.attach_classifications(batch, objects, results=labels + [r for _, r in cached],
                                                  component_id=self.prop("unique-id"),
                                                  classifier_type=self.prop("classifier-type") or None)
        t3 = time.perf_counter()
        if self.timings is not None:
            self.timings.append({"frames": len(frames), "objects": len(rows), "map": t1 - t0, "infer": t2 - t1,
                                 "write": t3 - t2})
        if timing:
            self.debug_category.debug(
                self, "batch %d: %d objects inferred, %d from the cache, %d classified; select %.3f ms, crop + model "
                "%.3f ms, write %.3f ms", batch_index, len(rows), len(cached), written.classified if written else 0,
                (t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3)

    def process(self, buf: Gst.Buffer) -> Gst.FlowReturn:
        from .. import nvds

        self._swap_if_ready()
        loaded = self.loaded
        detector = loaded.detector
        video = self.video
        skip = self.batches % (self.prop("interval") + 1) != 0
        batch_index = self.batches
        self.batches += 1
        timing = self.debug_category.enabled(Gst.DebugLevel.DEBUG)
        t0 = time.perf_counter()
        with mapped_frames(buf, video, write=False) as views:
            if not views:
                return Gst.FlowReturn.OK  # an empty batch (numFilled = 0) passes through
            batch = batch_meta_for(buf, len(views), video.width, video.height, self.frames)
            self.frames += 1
            if skip:
                return Gst.FlowReturn.OK
            frames = batch.frames
            chosen = []
            for f in frames:
                if not 0 <= f.batch_id < len(views):
                    raise ValueError(f"frame meta batch_id {f.batch_id} has no surface (the buffer holds "
                                     f"{len(views)})")
                chosen.append(views[f.batch_id])
            if not chosen:
                return Gst.FlowReturn.OK
            if loaded.secondary:
                self._secondary(batch, frames, views, detector, t0, batch_index, timing)
                self.inferred += 1
                return Gst.FlowReturn.OK
            detector.conf, detector.iou, detector.max_det = self.prop("conf"), self.prop("iou"), self.prop("max-det")
            drop = frozenset(_ids(self.prop("filter-out-class-ids")))
            if drop != detector.class_filter.drop:
                from dataclasses import replace

                detector.class_filter = replace(detector.class_filter, drop=drop)
            t1 = time.perf_counter()
            filtered = detector.filtered
            formats = [v.format for v in chosen]  # sources of one batch may differ (NV12 / NV12_709)
            # level 6: the detector's phases, the device synced between
            if self.debug_category.enabled(Gst.DebugLevel.LOG):
                from ..infer import profile_phases

                with profile_phases() as phases:
                    dets = detector([v.model_input for v in chosen], formats, on_host=True)
                for p in phases:
                    self.debug_category.log(self, "batch %d detector phases: %s", batch_index,
                                            ", ".join(f"{k} {v * 1e3:.3f} ms" for k, v in p.items()))
            else:
                dets = detector([v.model_input for v in chosen], formats, on_host=True)
            t2 = time.perf_counter()
            result = nvds.attach_obbs_batch(batch, dets, frames=frames, class_names=self._cached_labels(detector),
                                            component_id=self.prop("unique-id"),
                                            frame_sizes=[(v.width, v.height) for v in chosen],
                                            osd_limit=self.prop("osd-limit") or None)
            t3 = time.perf_counter()
        self.inferred += 1
        if self.timings is not None:
            self.timings.append({"frames": len(chosen), "map": t1 - t0, "infer": t2 - t1, "write": t3 - t2})
        if timing:
            self.debug_category.debug(
                self, "batch %d: %d frames, %d objects written (%d outside the frames), %d filtered by class "
                "attributes; map %.3f ms, model + decode %.3f ms, write %.3f ms", batch_index, len(chosen),
                result.written, result.filtered, detector.filtered - filtered, (t1 - t0) * 1e3, (t2 - t1) * 1e3,
                (t3 - t2) * 1e3)
        return Gst.FlowReturn.OK
