"""From resolved settings to a running model: what ``obbinfer`` (and any other host of the settings) builds at start.

:func:`build` reads nothing but the :class:`~obbmeta.config.settings.InferSettings` (and the config they came from, for
``file:line`` in its messages), so it runs on any thread: the element calls it at start and, for a live model swap,
on a loader thread. It decides, as nvinfer would for the same file,

* which model to load: ``model``, else ``onnx-file``; a ``model-engine-file`` is a TensorRT engine obbinfer cannot
  deserialize, so it falls back to the ONNX file as nvinfer falls back when an engine does not load;
* the device (``device=auto``: ``cuda:gpu-id`` when torch sees a GPU, else the CPU, with a warning where the file or
  a property asked for a GPU), the precision (nvinfer's INT8 and BEST at the nearest one the device has), the
  preprocessing (the preset with nvinfer's keys over it), the input size (the file's ``infer-dims``, else what the
  model declares, else 640);
* the labels (a label file's problems found here, not at the first detection) and nvinfer's colours by class,

and says what it decided in ``warnings`` (posted on the bus) and ``infos`` (``GST_DEBUG=obbinfer:4``).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from ..config.settings import CLUSTER_MODES, DETECTOR_FORMATS, SECONDARY_FORMATS, UNSET
from ..frames.preprocess import CHANNEL_ORDERS, from_nvinfer_keys, preset
from .labels import LabelFileError, Labels, parse_class_names
from .params import DetectParams, run_precision

NVINFER_RED = (1.0, 0.0, 0.0, 1.0)  # nvinfer's border colour of a class without class-attrs border-color
NETWORK_TYPE_OTHER = 100


@dataclass
class Built:
    """What :func:`build` made: the detector (or secondary model), the settings it was built from, its labels and
    colours, and what it has to say."""
    detector: Any
    settings: Any
    model: str
    config_path: str
    secondary: bool = False
    labels: Labels | None = None
    palette: tuple | None = None
    raw: bool = False  # network-type 100: the model's tensors only, no objects
    warnings: list = field(default_factory=list)
    infos: list = field(default_factory=list)


def _where(config: Any, setting: str) -> str:
    """``file:line: `` of the setting in the config, or nothing."""
    if config is None or setting not in getattr(config, "lines", {}):
        return ""
    return f"{config.path}:{config.lines[setting]}: "


def choose_model(s: Any, config: Any, warnings: list, infos: list) -> str:
    """The model spec to load: ``model``, else ``onnx-file`` (a TensorRT engine cannot be deserialized without
    TensorRT: nvinfer's own fallback is the ONNX file)."""
    engine, onnx = s.model_engine_file, s.onnx_file
    if s.model:
        if engine:
            infos.append(f"{_where(config, 'model-engine-file')}model-engine-file={engine} is not used: model= is")
        return s.model
    if engine:
        if not onnx:
            raise ValueError(f"{_where(config, 'model-engine-file')}model-engine-file={engine} is a TensorRT engine, "
                             "which obbinfer cannot run (TensorRT is not part of a PyTorch pipeline), and there is "
                             "no onnx-file to build from: set onnx-file= or model= (a TorchScript / torch.export / "
                             "ONNX file, an Ultralytics checkpoint, or package.module:callable)")
        warnings.append(f"{_where(config, 'model-engine-file')}model-engine-file={engine}: obbinfer cannot "
                        f"deserialize a TensorRT engine; running onnx-file={onnx} instead, as nvinfer does when an "
                        "engine does not load")
    if onnx:
        return onnx
    raise ValueError("no model: set model= ('package.module:callable', a TorchScript / torch.export / ONNX file, or an "
                     "Ultralytics checkpoint) or onnx-file= (in the element or the config file), or, from Python, "
                     "assign element.detector = obbmeta.infer.Detector(...)")


def choose_device(s: Any, config: Any, warnings: list) -> str:
    """``device=auto``: ``cuda:gpu-id`` where torch sees a GPU, else the CPU (one warning when the file or a property
    asked for a GPU); an explicit ``cuda`` device without CUDA fails when the model is built."""
    if s.device != "auto":
        return s.device
    import torch

    if torch.cuda.is_available():
        return f"cuda:{s.gpu_id}"
    if "gpu-id" in s.given:
        warnings.append(f"{_where(config, 'gpu-id')}gpu-id={s.gpu_id} but torch sees no CUDA device: device=auto runs "
                        "the model on the CPU (set device=cuda to make a missing GPU an error)")
    return "cpu"


def preprocessing(s: Any, config: Any, warnings: list) -> Any:
    """The preset (``preprocess``; nvinfer's with a config file) with nvinfer's keys over it."""
    base = preset(s.preprocess)
    scale = s.net_scale_factor or None
    offsets = list(s.offsets) if s.offsets else None
    file_values = getattr(config, "values", {}) if config is not None else {}
    if file_values.get("net-scale-factor", None) == 0.0 and s.net_scale_factor == 0.0:
        # nvinfer installs scale and offsets only for a factor > 0: with 0, the input is the pixel levels
        warnings.append(f"{_where(config, 'net-scale-factor')}net-scale-factor=0: nvinfer then applies neither a "
                        "scale nor offsets (the model gets pixel levels); obbinfer does the same")
        scale, offsets = 1.0, [0.0]
    if s.scaling_filter == 4:
        warnings.append(f"{_where(config, 'scaling-filter')}scaling-filter=4 (Lanczos): PyTorch has no Lanczos "
                        "resize; obbinfer scales with bicubic")
    channels = CHANNEL_ORDERS[s.model_color_format] if s.model_color_format != UNSET else None
    n = 1 if (channels or base.channels) == "GRAY" else 3
    if offsets and len(offsets) not in (1, n):
        raise ValueError(f"{_where(config, 'offsets')}offsets has {len(offsets)} values but the model input has {n} "
                         "channel(s) (nvinfer refuses this too)")
    return from_nvinfer_keys(
        base, model_color_format=channels,
        maintain_aspect_ratio=None if s.maintain_aspect_ratio == UNSET else bool(s.maintain_aspect_ratio),
        symmetric_padding=None if s.symmetric_padding == UNSET else bool(s.symmetric_padding),
        scaling_filter=None if s.scaling_filter == UNSET else s.scaling_filter,
        net_scale_factor=scale, offsets=offsets, mean_file=s.mean_file or None)


def read_labels(s: Any, config: Any, warnings: list) -> list[str] | None:
    """The labels the settings name (class-names, else labelfile-path), read now: a missing or unreadable file
    fails the start, an empty one warns."""
    spec = s.class_names or s.labelfile_path
    if not spec:
        return None
    key = "class-names" if s.class_names else "labelfile-path"
    try:
        names = parse_class_names(spec)
    except (LabelFileError, OSError) as exc:
        raise ValueError(f"{_where(config, key)}{key}: {exc}") from None
    if not names and os.path.isfile(spec):
        warnings.append(f"{_where(config, key)}{key}={spec} holds no labels: objects get empty labels")
    return names


def class_palette(s: Any) -> tuple | None:
    """nvinfer's border colours by class with a config file: ``border-color`` of the class's group, else of
    class-attrs-all, else red; None (obbmeta's palette) without a file."""
    if not s.with_config:
        return None
    attrs = dict(s.class_attrs)
    base = attrs.get(-1)
    default = base.border_color if base is not None and base.border_color else NVINFER_RED
    top = max([k for k in attrs if k >= 0], default=-1)
    return tuple((attrs[c].border_color if c in attrs and attrs[c].border_color else default)
                 for c in range(top + 1)) or (default,)


def check_classes(s: Any, config: Any, names: list[str] | None, model_classes: int | None, warnings: list) -> None:
    """Labels, the file's num-detected-classes and the model's class count, compared once at start."""
    declared = s.num_detected_classes
    if declared and names is not None and len(names) != declared:
        warnings.append(f"{_where(config, 'num-detected-classes')}num-detected-classes={declared} but the labels name "
                        f"{len(names)} classes")
    if declared and model_classes and declared != model_classes:
        warnings.append(f"{_where(config, 'num-detected-classes')}num-detected-classes={declared} but the model has "
                        f"{model_classes} classes")
    if names is not None and model_classes and len(names) < model_classes:
        warnings.append(f"the labels name {len(names)} classes but the model has {model_classes}: classes "
                        f"{len(names)}..{model_classes - 1} get empty labels, as nvinfer writes them")


def build(s: Any, config: Any = None) -> Built:
    """The detector (or secondary model) for resolved settings ``s``, loaded on its device and warmed up."""
    warnings: list[str] = []
    infos: list[str] = []
    model = choose_model(s, config, warnings, infos)
    secondary = s.process_mode == 2
    output_format = s.output_format
    if s.network_type == 1 and "output-format" not in s.given:
        output_format = "classifier"
    if s.network_type == 1 and not secondary:
        raise ValueError(f"{_where(config, 'network-type')}network-type=1 (classifier) needs process-mode=2 "
                         "(secondary: a classifier of each object); obbinfer has no full-frame classifier")
    if s.network_type == 3:
        warnings.append(f"{_where(config, 'network-type')}network-type=3 (instance segmentation): obbinfer writes the "
                        "oriented detector's boxes (rect_params = their AABB, the OBB in its user meta), no masks")
    if s.output_instance_mask:
        warnings.append(f"{_where(config, 'output-instance-mask')}output-instance-mask=1: an oriented detector has no "
                        "masks; obbinfer writes its boxes")
    if s.cluster_mode in (1, 3):
        mode = f"cluster-mode={s.cluster_mode} ({CLUSTER_MODES[s.cluster_mode]})"
        warnings.append(f"{_where(config, 'cluster-mode')}{mode}: obbinfer clusters with exact rotated NMS at the "
                        "class-attrs' nms-iou-threshold")
    elif s.cluster_mode == 0 and s.network_type != NETWORK_TYPE_OTHER and not secondary:
        warnings.append(f"{_where(config, 'cluster-mode')}cluster-mode=0 (groupRectangles, nvinfer's default when the "
                        "key is absent): nvinfer's release library runs NMS at IoU 0.5 keeping 20 boxes per class "
                        "instead, overriding class-attrs' nms-iou-threshold and topk; obbinfer does the same with "
                        "rotated NMS (set cluster-mode=2 for your thresholds)")
    raw = s.network_type == NETWORK_TYPE_OTHER
    if raw and not (s.output_tensor_meta or s.raw_output_file_write):
        warnings.append(f"{_where(config, 'network-type')}network-type=100 (other): no objects are written and "
                        "output-tensor-meta is off, so the model's output reaches nothing; set output-tensor-meta=1")
    if not secondary and output_format not in DETECTOR_FORMATS:
        raise ValueError(f"output-format={output_format} and process-mode=1 do not go together: process-mode=1 takes "
                         "a detector's yolo-obb, mmrotate or boxes (classifier and text are for process-mode=2)")
    if secondary and s.interval and "interval" in s.given:
        infos.append(f"{_where(config, 'interval')}interval={s.interval} applies to primary mode only (as nvinfer); "
                     "secondary-reinfer-interval paces a secondary element")
    device = choose_device(s, config, warnings)
    if s.precision == "int8":
        warnings.append(f"{_where(config, 'precision')}network-mode=1 (INT8) needs a calibrated TensorRT engine; "
                        f"obbinfer runs the model at {run_precision('int8', device)} (the nearest precision "
                        f"{device} has)")
    if s.precision == "best":
        infos.append(f"network-mode=3 (BEST): the model runs at {run_precision('best', device)} on {device}")
    if s.strongly_typed or s.dynamic_properties:
        infos.append("strongly-typed / dynamic-properties configure a TensorRT builder: nothing to do for PyTorch")
    pre = preprocessing(s, config, warnings)
    names = None if secondary and output_format in SECONDARY_FORMATS else read_labels(s, config, warnings)
    if secondary and output_format in SECONDARY_FORMATS and not raw:
        return _build_secondary(s, config, model, output_format, device, pre, warnings, infos)
    from .detector import Detector

    t0 = time.perf_counter()
    params = DetectParams.from_settings(s)
    detector = Detector(model, input_size=s.input_size, conf=params.conf, iou=params.iou, max_det=params.max_det,
                        output_format=output_format if output_format in DETECTOR_FORMATS else "yolo-obb",
                        device=device, preprocess_mode=pre, precision=s.precision, class_filter=params.class_filter,
                        batch_size=s.batch_size, threads=s.threads or None, cuda_graph=s.cuda_graph,
                        compile=s.compile, channels_last=s.channels_last, max_batch_wait_us=s.max_batch_wait_us,
                        input_order=s.input_order, class_names=names,
                        num_classes=s.num_detected_classes or None)
    infos.append(f"model {model} loaded on {device} ({run_precision(s.precision, device)}) in "
                 f"{time.perf_counter() - t0:.3f} s")
    infos.append(describe(s, detector, params))
    if s.warm_up:
        seconds = detector.warm_up(batch=max(1, s.batch_size)) if not raw else _warm_raw(detector, s)
        infos.append(f"warm-up on {detector.input_size[0]}x{detector.input_size[1]}: {seconds:.3f} s")
    labels = Labels.of(names if names is not None else detector.labels)
    check_classes(s, config, labels.names, getattr(detector, "num_classes", None), warnings)
    if secondary:  # a secondary detector: the detector on upright crops of each parent object
        from ..secondary.detect import SecondaryDetector

        detector = SecondaryDetector(detector, padding=s.crop_padding, reading=s.crop_reading, fill=s.crop_fill)
        infos.append(f"secondary detector: parents cropped upright into {s.input_size or 'the input size'}, "
                     f"reading {s.crop_reading}, padding {s.crop_padding:g}")
    return Built(detector, s, model, s.config_file_path, secondary, labels, class_palette(s), raw, warnings, infos)


def _warm_raw(detector: Any, s: Any) -> float:
    import torch

    t0 = time.perf_counter()
    w, h = detector.input_size
    detector.run_raw([torch.full((h, w, 3), 114, dtype=torch.uint8, device=detector.device)] * max(1, s.batch_size),
                     "RGB")
    return time.perf_counter() - t0


def describe(s: Any, detector: Any, params: DetectParams) -> str:
    """The effective preprocessing and thresholds, in one line (logged once at start)."""
    p = detector.pre
    w, h = detector.input_size
    geometry = "stretch" if not p.keep_ratio else ("letterbox centred" if p.center else "letterbox right/bottom")
    mean = f"mean-file {p.mean_file}" if p.mean_file else f"mean {';'.join(f'{v:g}' for v in p.mean)}"
    cf = params.class_filter
    return (f"input {w}x{h} {p.channels} {s.input_order}, {geometry}, {p.resize}, pad {p.pad_value:g}, "
            f"input = (level - {mean}) * {';'.join(f'{v:g}' for v in p.scale)}; conf {params.conf:g}, "
            f"iou {params.iou:g}, max-det {params.max_det or 'no limit'}, cluster-mode {s.cluster_mode}"
            + (f", per-class thresholds {dict(cf.pre_threshold)}" if cf.pre_threshold else "")
            + (f", per-class iou {dict(cf.iou)}" if cf.iou else "")
            + (f", topk {cf.default_topk}" if cf.default_topk is not None else ""))


def _build_secondary(s: Any, config: Any, model: str, output_format: str, device: str, pre: Any, warnings: list,
                     infos: list) -> Built:
    """process-mode=2: a classifier or recogniser on upright crops of the objects' boxes."""
    import torch

    from ..secondary import SecondaryModel

    crop = s.crop_size
    if len(crop) == 1:
        size, height = None, crop[0]
    else:
        w, h = s.input_size or (224, 224)
        size, height = (crop if crop else (h, w)), None
    t0 = time.perf_counter()
    sec = SecondaryModel(model, output_format, device, crop_size=size or (1, 1), crop_height=height,
                         padding=s.crop_padding, reading=s.crop_reading, preprocess=pre,
                         labels=s.labelfile_path or s.class_names or None, charset=s.charset or None,
                         threshold=s.classifier_threshold, batch_size=s.batch_size, precision=s.precision,
                         fill=s.crop_fill)
    infos.append(f"secondary model {model} ({output_format}) loaded on {device} in {time.perf_counter() - t0:.3f} s")
    if s.warm_up:
        t0 = time.perf_counter()
        grey = torch.full((64, 128, 3), 114, dtype=torch.uint8, device=device)
        sec([grey], "RGB", torch.tensor([[0.0, 64.0, 32.0, 96.0, 24.0, 0.0]]))
        infos.append(f"warm-up: {time.perf_counter() - t0:.3f} s")
    return Built(sec, s, model, s.config_file_path, True, None, None, False, warnings, infos)


__all__ = ["build", "Built", "choose_model", "choose_device", "preprocessing", "read_labels", "class_palette",
           "describe"]
