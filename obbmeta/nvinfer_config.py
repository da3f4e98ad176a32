"""nvinfer's configuration files, read for a PyTorch oriented detector.

An nvinfer config is a GLib key file: ``[group]`` lines, ``key=value`` lines, ``#`` comment lines, lists separated by
``;``. obbmeta reads it with its own small parser (GLib's ``GKeyFile`` reports no line numbers, and a user whose file
is wrong should be told where) that follows GKeyFile's rules: keys are case-sensitive, whitespace around ``=`` is
dropped, a later duplicate key wins, ``\\s \\n \\t \\\\`` are escapes.

Groups and what they mean here (docs/gst.md has the table of every nvinfer key, honoured or ignored and why):

* ``[property]``: nvinfer's element-level keys; each honoured key becomes the obbinfer property of the same meaning,
  as a value of that property's type (``gie-unique-id`` -> ``unique-id``, ``infer-dims=3;384;640`` ->
  ``input-size="640x384"``, ``gpu-id=1`` -> ``device="cuda:1"``, ``network-mode=2`` -> ``precision="fp16"``, ...).
  TensorRT-only
  keys (engine files, calibration, plugins) are ignored with a warning that names them.
* ``[class-attrs-all]`` and ``[class-attrs-N]``: per-class detection parameters, as nvinfer applies them.
* ``[obbmeta]``: obbmeta's own keys, any obbinfer property by its name (``model``, ``output-format``, ...).

Paths in the file (``labelfile-path``, ``model``) are relative to the file's folder, as nvinfer resolves them.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, fields, replace
from typing import Any, Callable

from .preprocess import CHANNEL_ORDERS

PROPERTY_GROUP = "property"
OBBMETA_GROUP = "obbmeta"
CLASS_ATTRS_ALL = "class-attrs-all"
CLASS_ATTRS_PREFIX = "class-attrs-"

# NvDsInferNetworkMode (nvdsinfer_context.h): FP32 0, INT8 1, FP16 2, BEST 3.
NETWORK_MODES = {0: "fp32", 2: "fp16"}
# NvDsInferFormat for model-color-format: RGB 0, BGR 1, GRAY 2, the channel orders obbmeta.preprocess takes.
COLOR_FORMATS = dict(enumerate(CHANNEL_ORDERS))
# NvDsInferClusterMode: 0 GroupRectangles, 1 DBSCAN, 2 NMS, 3 DBSCAN + NMS, 4 none.
CLUSTER_NMS, CLUSTER_NONE = 2, 4


class ConfigError(ValueError):
    """A config file that cannot be used: the message starts with ``file:line: key:``."""


@dataclass(frozen=True)
class ClassAttrs:
    """One ``[class-attrs-*]`` group (None: not given there). Sizes and offsets are in frame pixels, tested on the
    axis-aligned box of the detection after it is mapped to the frame, as nvinfer tests its boxes."""
    pre_cluster_threshold: float | None = None
    post_cluster_threshold: float | None = None
    nms_iou_threshold: float | None = None
    topk: int | None = None
    detected_min_w: float | None = None
    detected_min_h: float | None = None
    detected_max_w: float | None = None
    detected_max_h: float | None = None
    roi_top_offset: float | None = None
    roi_bottom_offset: float | None = None

    def over(self, base: "ClassAttrs") -> "ClassAttrs":
        """These attributes, with ``base``'s where these are not given (a class group over class-attrs-all)."""
        return replace(base, **{f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name)
                                is not None})


@dataclass(frozen=True)
class InferConfig:
    """A parsed config: ``properties`` maps obbinfer property names to values (paths made absolute);
    ``class_attrs`` maps class ids to their group (``-1``: class-attrs-all); ``warnings`` are the ignored or unknown
    keys, each ``file:line: ...``; ``lines`` says where each property came from."""
    path: str
    properties: dict[str, Any] = field(default_factory=dict)
    class_attrs: dict[int, ClassAttrs] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    lines: dict[str, int] = field(default_factory=dict)

    def attrs_for(self, class_id: int) -> ClassAttrs:
        """The attributes that apply to ``class_id``: its own group over class-attrs-all."""
        base = self.class_attrs.get(-1, ClassAttrs())
        own = self.class_attrs.get(class_id)
        return own.over(base) if own is not None else base


# ---------------------------------------------------------------- value parsers (each raises ValueError)

def _int(text: str) -> int:
    try:
        return int(text, 10)
    except ValueError:
        raise ValueError(f"expected an integer, got {text!r}") from None


def _uint(text: str) -> int:
    v = _int(text)
    if v < 0:
        raise ValueError(f"expected an integer >= 0, got {text!r}")
    return v


def _float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise ValueError(f"expected a number, got {text!r}") from None
    if not math.isfinite(v):
        raise ValueError(f"expected a finite number, got {text!r}")
    return v


def parse_bool(text: str) -> bool:
    """A GKeyFile boolean as nvinfer writes them: ``1`` / ``true`` -> True, ``0`` / ``false`` -> False (any case);
    anything else raises ValueError."""
    low = text.lower()
    if low in ("1", "true"):
        return True
    if low in ("0", "false"):
        return False
    raise ValueError(f"expected 0 or 1 (or true / false), got {text!r}")


def _list(text: str) -> list[str]:
    items = [t.strip() for t in text.split(";")]
    if items and items[-1] == "":
        items.pop()  # GKeyFile lists may end with the separator
    return items


def _float_list(text: str) -> list[float]:
    return [_float(t) for t in _list(text)]


def _class_ids(text: str) -> str:
    ids = [_uint(t) for t in _list(text)]
    return ";".join(str(i) for i in ids)


def _unit_interval(text: str) -> float:
    v = _float(text)
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"expected a number in [0, 1], got {text!r}")
    return v


def parse_network_mode(text: str) -> str:
    """nvinfer's ``network-mode`` number as obbinfer's ``precision``: 0 -> ``fp32``, 2 -> ``fp16``, 3 (BEST) ->
    ``fp16``; 1 (INT8, a calibrated TensorRT engine) and any other value raise ValueError."""
    v = _int(text)
    if v == 1:
        raise ValueError("1 (INT8) needs a calibrated TensorRT engine; obbinfer runs PyTorch models in 0 (FP32) or 2 "
                         "(FP16)")
    if v == 3:
        return "fp16"  # BEST: the fastest precision the model runs in; for a PyTorch model that is fp16
    if v not in NETWORK_MODES:
        raise ValueError(f"expected 0 (FP32) or 2 (FP16), got {text!r}")
    return NETWORK_MODES[v]


def _color_format(text: str) -> int:
    v = _int(text)
    if v not in COLOR_FORMATS:
        raise ValueError(f"expected 0 (RGB), 1 (BGR) or 2 (GRAY), got {text!r}")
    return v


def _flag(text: str) -> int:
    return int(parse_bool(text))


def _infer_dims(text: str) -> str:
    dims = [_uint(t) for t in _list(text)]
    if len(dims) != 3 or min(dims) < 1:
        raise ValueError(f"expected channels;height;width, got {text!r}")
    c, h, w = dims
    if c not in (1, 3):
        raise ValueError(f"obbinfer feeds 3-channel (RGB / BGR) or 1-channel (GRAY) input, not {c} channels")
    return f"{w}x{h}"


def _process_mode(text: str) -> int:
    v = _int(text)
    if v not in (1, 2):
        raise ValueError(f"expected 1 (primary: whole frames) or 2 (secondary: objects), got {text!r}")
    return v


def _network_type(text: str) -> str:
    v = _int(text)
    if v not in (0, 1):
        raise ValueError(f"obbinfer runs detectors (0) and classifiers (1), not network-type {text}")
    return "detector" if v == 0 else "classifier"


def parse_gpu_id(text: str) -> str:
    """nvinfer's ``gpu-id`` as obbinfer's ``device``: ``N`` -> ``cuda:N``; a negative or non-integer value raises
    ValueError."""
    return f"cuda:{_uint(text)}"


def _cluster_mode(text: str) -> int:
    v = _int(text)
    if v not in range(5):
        raise ValueError(f"expected 0..4, got {text!r}")
    return v


def _text(text: str) -> str:
    return text


_PATH = object()  # marker: a path, made absolute against the config file's folder

# [property] key -> (obbinfer property, parser). A parser may be _PATH.
PROPERTY_KEYS: dict[str, tuple[str, Any]] = {
    "gie-unique-id": ("unique-id", _uint),
    "batch-size": ("batch-size", _uint),
    "labelfile-path": ("labelfile-path", _PATH),
    "interval": ("interval", _uint),
    "process-mode": ("process-mode", _process_mode),
    "operate-on-gie-id": ("operate-on-gie-id", _int),
    "operate-on-class-ids": ("operate-on-class-ids", _class_ids),
    "filter-out-class-ids": ("filter-out-class-ids", _class_ids),
    "model-color-format": ("model-color-format", _color_format),
    "maintain-aspect-ratio": ("maintain-aspect-ratio", _flag),
    "symmetric-padding": ("symmetric-padding", _flag),
    "scaling-filter": ("scaling-filter", _uint),
    "net-scale-factor": ("net-scale-factor", _float),
    "offsets": ("offsets", lambda t: ";".join(repr(v) for v in _float_list(t))),
    "infer-dims": ("input-size", _infer_dims),
    "network-mode": ("precision", parse_network_mode),
    "gpu-id": ("device", parse_gpu_id),
    "network-type": ("network-type", _network_type),
    "input-object-min-width": ("input-object-min-width", _uint),
    "input-object-min-height": ("input-object-min-height", _uint),
    "input-object-max-width": ("input-object-max-width", _uint),
    "input-object-max-height": ("input-object-max-height", _uint),
    "classifier-threshold": ("classifier-threshold", _unit_interval),
    "secondary-reinfer-interval": ("secondary-reinfer-interval", _uint),
    "classifier-type": ("classifier-type", _text),
    "num-detected-classes": ("num-detected-classes", _uint),
    "cluster-mode": ("cluster-mode", _cluster_mode),
}
# Keys of a TensorRT engine or of nvinfer's C++ plugin interfaces: they configure nothing a PyTorch model has.
IGNORED_KEYS: dict[str, str] = {
    **{k: "a TensorRT / Caffe / UFF / ONNX / TAO model file: obbinfer's model is [obbmeta] model="
       for k in ("model-engine-file", "model-file", "proto-file", "uff-file", "onnx-file", "tlt-encoded-model",
                 "tlt-model-key", "uff-input-blob-name", "uff-input-order", "input-dims", "uff-input-dims",
                 "custom-network-config", "mean-file")},
    **{k: "a TensorRT build setting" for k in ("int8-calib-file", "workspace-size", "force-implicit-batch-dim",
                                               "layer-device-precision", "output-io-formats", "enable-dla",
                                               "use-dla-core", "strongly-typed", "warmup-engine")},
    **{k: "nvinfer's C++ parser plugin interface: obbinfer decodes with output-format="
       for k in ("custom-lib-path", "parse-bbox-func-name", "parse-bbox-instance-mask-func-name",
                 "parse-segmentation-func-name", "engine-create-func-name", "parse-classifier-func-name",
                 "output-blob-names", "parse-func", "is-classifier")},
    **{k: "nvinfer's tensor output / dump options" for k in (
        "output-tensor-meta", "tensor-meta-pool-size", "disable-output-host-copy", "dump-input-tensor",
        "dump-output-tensor", "overwrite-input-tensor", "overwrite-output-tensor", "ip-tensor-file",
        "op-tensor-files", "raw-output-file-write", "output-instance-mask", "segmentation-threshold",
        "segmentation-output-order", "auto-inc-mem", "max-gpu-mem-per", "stabilize-buffer-count",
        "dynamic-properties", "input-tensor-from-meta", "crop-objects-to-roi-boundary")},
    "scaling-compute-hw": "obbinfer scales on the frames' device (the model's, for NVMM frames)",
    "network-input-order": "obbinfer feeds NCHW tensors, the PyTorch layout",
    "classifier-async-mode": "secondary results are attached in the same batch",
    "enable-dbscan": "obbmeta clusters with rotated NMS (cluster-mode=2) or not at all (4)",
}
CLASS_KEYS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "threshold": ("pre_cluster_threshold", _unit_interval),  # nvinfer's legacy name for pre-cluster-threshold
    "pre-cluster-threshold": ("pre_cluster_threshold", _unit_interval),
    "post-cluster-threshold": ("post_cluster_threshold", _unit_interval),
    "nms-iou-threshold": ("nms_iou_threshold", _unit_interval),
    "topk": ("topk", _int),
    "detected-min-w": ("detected_min_w", _float),
    "detected-min-h": ("detected_min_h", _float),
    "detected-max-w": ("detected_max_w", _float),
    "detected-max-h": ("detected_max_h", _float),
    "roi-top-offset": ("roi_top_offset", _float),
    "roi-bottom-offset": ("roi_bottom_offset", _float),
}
IGNORED_CLASS_KEYS = {
    **{k: "a DBSCAN / group-rectangles clustering parameter (obbmeta clusters with rotated NMS)"
       for k in ("eps", "group-threshold", "minBoxes", "dbscan-min-score")},
    "border-color": "obbmeta colours objects by class from its palette",
    "bg-color": "obbmeta colours objects by class from its palette",
}


# ---------------------------------------------------------------- the key file

def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            out.append({"s": " ", "n": "\n", "t": "\t", "r": "\r", "\\": "\\"}.get(nxt, "\\" + nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def read_key_file(path: str) -> list[tuple[str, int, list[tuple[str, str, int]]]]:
    """The groups of a GLib-style key file in file order: ``(group, line, [(key, value, line), ...])``.

    Raises :class:`ConfigError` (``file:line: ...``) for a line that is neither a group, an entry nor a comment, and
    FileNotFoundError when there is no such file."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"config-file-path {path!r} is not a file")
    with open(path, encoding="utf-8", errors="strict") as f:
        try:
            text = f.read()
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{path}: not UTF-8 text ({exc})") from None
    groups: list[tuple[str, int, list[tuple[str, str, int]]]] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            if not line.endswith("]") or len(line) < 3:
                raise ConfigError(f"{path}:{number}: a group line must look like [name], got {raw.strip()!r}")
            groups.append((line[1:-1].strip(), number, []))
            continue
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"{path}:{number}: expected key=value, got {raw.strip()!r}")
        if not groups:
            raise ConfigError(f"{path}:{number}: {key}: the entry comes before any [group]")
        groups[-1][2].append((key, _unescape(value.strip()), number))
    return groups


def read_nvinfer_config(path: str | os.PathLike, element_properties: dict[str, Callable[[Any], Any]] | None = None
                        ) -> InferConfig:
    """Parse an nvinfer-style config file.

    ``element_properties``: the obbinfer property names that ``[obbmeta]`` may set, each with a check that turns the
    file's text into the property's value (raising ValueError / TypeError for a bad one); None accepts any key there
    as text. Raises :class:`ConfigError` naming file, line and key for a malformed value, an unknown group or an
    unknown ``[obbmeta]`` key; unknown ``[property]`` / class keys only warn (nvinfer does the same).
    """
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    props: dict[str, Any] = {}
    lines: dict[str, int] = {}
    attrs: dict[int, dict[str, Any]] = {}
    warnings: list[str] = []

    def where(number: int, key: str) -> str:
        return f"{path}:{number}: {key}"

    def resolve(value: str) -> str:
        return value if os.path.isabs(value) else os.path.normpath(os.path.join(folder, value))

    def known(key: str, number: int, group: str, keys: dict, ignored: dict):
        """The key's (name, parse), or None after a warning for a key ignored by design or unknown."""
        if key in ignored:
            warnings.append(f"{where(number, key)}: ignored ({ignored[key]})")
            return None
        if key not in keys:
            warnings.append(f"{where(number, key)}: unknown key in [{group}], ignored")
            return None
        return keys[key]

    def property_entry(key: str, value: str, number: int) -> None:
        entry = known(key, number, "property", PROPERTY_KEYS, IGNORED_KEYS)
        if entry is None:
            return
        name, parse = entry
        try:
            props[name] = resolve(value) if parse is _PATH else parse(value)
        except ValueError as exc:
            raise ConfigError(f"{where(number, key)}: {exc}") from None
        lines[name] = number

    def obbmeta_entry(key: str, value: str, number: int) -> None:
        if element_properties is not None and key not in element_properties:
            raise ConfigError(f"{where(number, key)}: [obbmeta] takes obbinfer's property names "
                              f"({', '.join(sorted(element_properties))})")
        if key in ("model", "labelfile-path") and value and (value.startswith(".") or os.sep in value) \
                and ":" not in value:
            value = resolve(value)
        check = element_properties.get(key) if element_properties else None
        try:
            props[key] = check(value) if check else value
        except (TypeError, ValueError, OSError) as exc:
            raise ConfigError(f"{where(number, key)}: {exc}") from None
        lines[key] = number

    def class_entry(group: str, class_id: int, key: str, value: str, number: int) -> None:
        entry = known(key, number, group, CLASS_KEYS, IGNORED_CLASS_KEYS)
        if entry is None:
            return
        name, parse = entry
        try:
            attrs.setdefault(class_id, {})[name] = parse(value)
        except ValueError as exc:
            raise ConfigError(f"{where(number, key)}: {exc}") from None

    for group, group_line, entries in read_key_file(path):
        if group == PROPERTY_GROUP:
            for entry in entries:
                property_entry(*entry)
        elif group == OBBMETA_GROUP:
            for entry in entries:
                obbmeta_entry(*entry)
        elif group == CLASS_ATTRS_ALL or group.startswith(CLASS_ATTRS_PREFIX):
            suffix = group[len(CLASS_ATTRS_PREFIX):]
            if group != CLASS_ATTRS_ALL and not suffix.isdigit():
                raise ConfigError(f"{path}:{group_line}: [{group}]: expected [class-attrs-all] or [class-attrs-N] "
                                  "with N a class id")
            class_id = -1 if group == CLASS_ATTRS_ALL else int(suffix)
            attrs.setdefault(class_id, {})
            for entry in entries:
                class_entry(group, class_id, *entry)
        else:
            raise ConfigError(f"{path}:{group_line}: unknown group [{group}] (expected [property], "
                              "[class-attrs-all], [class-attrs-N] or [obbmeta])")
    cluster = props.pop("cluster-mode", CLUSTER_NMS)
    cluster_line = lines.pop("cluster-mode", 0)
    if cluster not in (CLUSTER_NMS, CLUSTER_NONE):
        warnings.append(f"{where(cluster_line, 'cluster-mode')}: {cluster} is not NMS; obbmeta clusters with "
                        "rotated NMS (2)")
    class_attrs = {k: ClassAttrs(**v) for k, v in attrs.items()}
    if cluster == CLUSTER_NONE:  # no clustering: keep every candidate (a strict IoU > 1 never holds)
        class_attrs = {k: replace(v, nms_iou_threshold=1.0) for k, v in class_attrs.items()}
        if -1 not in class_attrs:
            class_attrs[-1] = ClassAttrs(nms_iou_threshold=1.0)
    return InferConfig(path, props, class_attrs, tuple(warnings), lines)


__all__ = ["ConfigError", "ClassAttrs", "InferConfig", "read_key_file", "read_nvinfer_config", "PROPERTY_KEYS",
           "IGNORED_KEYS", "CLASS_KEYS", "IGNORED_CLASS_KEYS", "NETWORK_MODES", "COLOR_FORMATS",
           "parse_bool", "parse_gpu_id", "parse_network_mode"]
