"""nvinfer's configuration files, read as nvinfer reads them, for a PyTorch oriented detector.

Two forms, as nvinfer: a GLib key file (``[group]`` lines, ``key=value`` lines, ``#`` comment lines) and, for a path
ending in ``.yml`` / ``.yaml``, YAML with the same groups as top-level maps (PyYAML, the ``yaml`` extra). The key
file is read with GKeyFile's own rules (tested against GLib's ``GKeyFile``), with line numbers GKeyFile does not
give: lines end at ``\\n`` only (``\\r\\n`` too; a form feed or U+2028 is part of a line), a byte-order mark or a
line that is no group, entry or comment is an error, leading whitespace of a line and of a value is dropped,
trailing whitespace of a value is kept, keys are case-sensitive, a later duplicate wins and groups of one name
merge. Values are read as nvinfer reads each key: integers as ``strtol`` (ASCII digits; text after the number that
starts with a space is ignored, so ``network-mode=2  # FP16`` is 2 — with a warning), numbers as
``g_ascii_strtod`` (the whole value), booleans ``true`` / ``false`` / ``1`` / ``0``, strings with GKeyFile's
escapes, lists separated by ``;``. An inline comment that nvinfer would read as part of a value (a path, a number,
a group line) is refused with a hint.

Groups:

* ``[property]``: nvinfer's keys (:data:`obbmeta.config.settings.KEYS`), each turned into the setting it fills, checked
  against the same range as the property (``file:line: key: what was expected``); keys of TensorRT, of nvinfer's
  C++ parser interface and other keys with nothing to do for a PyTorch model are listed in :data:`IGNORED_KEYS`
  and reported once each (info for the parser's keys, a warning for the rest); unknown keys warn.
* ``[class-attrs-all]`` and ``[class-attrs-N]``: per-class detection parameters, as nvinfer applies them
  (``class-attrs-all``'s thresholds are the ``conf`` and ``iou`` settings).
* ``[obbmeta]``: obbmeta's own keys, any obbinfer property by its name.
* any other group is skipped with a warning.

Paths in every group are relative to the folder of the file's real path (a symlinked config resolves against its
target's folder), as nvinfer resolves them.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, fields, replace
from typing import Any, Mapping

from .settings import ALIASES, CLASS_ALL_SETTINGS, KEYS, NETWORK_MODE_ALIAS, NETWORK_MODES, SPECS, is_factory

PROPERTY_GROUP = "property"
OBBMETA_GROUP = "obbmeta"
CLASS_ATTRS_ALL = "class-attrs-all"
CLASS_ATTRS_PREFIX = "class-attrs-"
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
_SPACE = " \t\n\v\f\r"  # GLib's g_ascii_isspace
BOM = "\ufeff"


class ConfigError(ValueError):
    """A config file that cannot be used: the message starts with ``file:line: key:``."""


@dataclass(frozen=True)
class ClassAttrs:
    """One ``[class-attrs-*]`` group (None: not given there), nvinfer's per-class detection parameters. Sizes and
    offsets are in frame pixels, tested on the axis-aligned box of the detection after it is mapped to the frame,
    as nvinfer tests its boxes; ``border_color`` / ``bg_color`` are RGBA in 0..1."""
    pre_cluster_threshold: float | None = None
    post_cluster_threshold: float | None = None
    nms_iou_threshold: float | None = None
    topk: int | None = None
    detected_min_w: int | None = None
    detected_min_h: int | None = None
    detected_max_w: int | None = None
    detected_max_h: int | None = None
    roi_top_offset: int | None = None
    roi_bottom_offset: int | None = None
    border_color: tuple[float, float, float, float] | None = None
    bg_color: tuple[float, float, float, float] | None = None

    def over(self, base: "ClassAttrs") -> "ClassAttrs":
        """These attributes, with ``base``'s where these are not given (a class group over class-attrs-all)."""
        return replace(base, **{f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name)
                                is not None})


@dataclass(frozen=True)
class InferConfig:
    """A parsed config. ``values``: setting name -> typed value from nvinfer's keys; ``own``: the same from the
    ``[obbmeta]`` group; ``class_attrs``: class id -> its group (``-1``: class-attrs-all); ``warnings`` / ``infos``:
    what was ignored, each ``file:line: ...``; ``lines``: where each setting came from."""
    path: str
    values: Mapping[str, Any] = field(default_factory=dict)
    own: Mapping[str, Any] = field(default_factory=dict)
    class_attrs: Mapping[int, ClassAttrs] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    infos: tuple[str, ...] = ()
    lines: Mapping[str, int] = field(default_factory=dict)
    form: str = "keyfile"

    def attrs_for(self, class_id: int) -> ClassAttrs:
        """The attributes that apply to ``class_id``: its own group over class-attrs-all."""
        base = self.class_attrs.get(-1, ClassAttrs())
        own = self.class_attrs.get(class_id)
        return own.over(base) if own is not None else base

    @property
    def properties(self) -> dict[str, Any]:
        """Every setting the file gives, ``[obbmeta]`` over nvinfer's keys."""
        return {**self.values, **self.own}


# Keys with nothing to configure in a PyTorch model, and why (said once each when a file has them).
_ENGINE = "a TensorRT engine build setting: obbinfer runs the model with PyTorch"
_PARSER = "nvinfer's C++ parser interface: obbinfer decodes the model's output itself (output-format)"
_FORMATS = ("a model format obbinfer cannot run (Caffe, UFF, Darknet, encrypted TAO): the model is model= or "
            "onnx-file=")
IGNORED_KEYS: dict[str, str] = {
    **{k: _ENGINE for k in ("int8-calib-file", "workspace-size", "force-implicit-batch-dim", "layer-device-precision",
                            "output-io-formats", "enable-dla", "use-dla-core", "warmup-engine", "auto-inc-mem",
                            "max-gpu-mem-per", "tensor-meta-pool-size", "disable-output-host-copy")},
    **{k: _PARSER for k in ("custom-lib-path", "parse-bbox-func-name", "parse-bbox-instance-mask-func-name",
                            "parse-segmentation-func-name", "engine-create-func-name", "parse-classifier-func-name",
                            "output-blob-names", "parse-func")},
    **{k: _FORMATS for k in ("model-file", "proto-file", "uff-file", "tlt-encoded-model", "custom-network-config",
                             "uff-input-blob-name", "tlt-model-key")},
    **{k: "nvinfer's tensor dump options for debugging" for k in (
        "dump-input-tensor", "dump-output-tensor", "overwrite-input-tensor", "overwrite-output-tensor",
        "ip-tensor-file", "op-tensor-files")},
    **{k: "semantic segmentation output (network-type=2 is refused)" for k in (
        "segmentation-threshold", "segmentation-output-order")},
    "scaling-compute-hw": "obbinfer scales on the model's device (CUDA for NVMM frames)",
    "classifier-async-mode": "secondary results are attached to the same buffer",
}
# Said at info level: they configure a TensorRT engine or nvinfer's C++ side and are in nearly every real config.
# classifier-async-mode warns: results come at another time than the file asks for.
INFO_KEYS = frozenset(k for k in IGNORED_KEYS if k != "classifier-async-mode")
CLASS_KEYS: dict[str, tuple[str, str]] = {
    "threshold": ("pre_cluster_threshold", "double"),  # nvinfer's legacy name for pre-cluster-threshold
    "pre-cluster-threshold": ("pre_cluster_threshold", "double"),
    "post-cluster-threshold": ("post_cluster_threshold", "double"),
    "nms-iou-threshold": ("nms_iou_threshold", "double"),
    "topk": ("topk", "int"),
    "detected-min-w": ("detected_min_w", "int"),
    "detected-min-h": ("detected_min_h", "int"),
    "detected-max-w": ("detected_max_w", "int"),
    "detected-max-h": ("detected_max_h", "int"),
    "roi-top-offset": ("roi_top_offset", "int"),
    "roi-bottom-offset": ("roi_bottom_offset", "int"),
    "border-color": ("border_color", "double-list"),
    "bg-color": ("bg_color", "double-list"),
}
IGNORED_CLASS_KEYS = {k: "a DBSCAN / groupRectangles parameter (obbmeta clusters with rotated NMS)"
                      for k in ("eps", "group-threshold", "minBoxes", "dbscan-min-score")}


# ---------------------------------------------------------------- GKeyFile's value rules

def _where(path: str, line: int, key: str) -> str:
    return f"{path}:{line}: {key}"


def _unescape(text: str) -> str:
    """GKeyFile's string escapes (``\\s \\n \\t \\r \\\\``; another escape is an error, as in GLib)."""
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            if i + 1 >= len(text):
                raise ValueError(f"the value {text!r} ends in a lone backslash")
            nxt = text[i + 1]
            if nxt not in "sntr\\":
                raise ValueError(f"the value {text!r} holds the escape \\{nxt}, which GKeyFile refuses "
                                 "(\\s \\n \\t \\r \\\\ only)")
            out.append({"s": " ", "n": "\n", "t": "\t", "r": "\r", "\\": "\\"}[nxt])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


_INT = re.compile(r"[ \t\n\v\f\r]*[+-]?[0-9]+")
_DOUBLE = re.compile(r"[ \t\n\v\f\r]*[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|0[xX](?:[0-9a-fA-F]+\.?"
                     r"[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?|inf(?:inity)?|nan)", re.IGNORECASE)
_COMMENT = re.compile(r"[ \t]#")


def _comment_hint(text: str) -> str:
    return (f" — {text!r} holds an inline comment, which the key-file format does not have (nvinfer reads it as "
            "part of the value): put comments on lines of their own" if _COMMENT.search(text) else "")


def keyfile_int(text: str) -> tuple[int, str]:
    """``g_key_file_get_integer``: the integer and the ignored text after it (which must start with whitespace)."""
    m = _INT.match(text)
    rest = text[m.end():] if m else ""
    if m is None or (rest and rest[0] not in _SPACE):
        raise ValueError(f"expected an integer (ASCII digits), got {text!r}{_comment_hint(text)}")
    v = int(m.group())
    if not INT_MIN <= v <= INT_MAX:
        raise ValueError(f"{text.strip()} is outside the range of a 32-bit integer (GKeyFile's)")
    return v, rest.strip(_SPACE)


def keyfile_double(text: str) -> float:
    """``g_key_file_get_double``: the whole value must be a number (no trailing space); NaN and infinities are
    refused (no nvinfer key means anything with them)."""
    m = _DOUBLE.match(text)
    if m is None or m.end() != len(text):
        extra = " (GKeyFile reads no trailing whitespace after a number)" if m and not text[m.end():].strip() else ""
        raise ValueError(f"expected a number, got {text!r}{extra}{_comment_hint(text)}")
    v = float.fromhex(m.group()) if "x" in m.group().lower() else float(m.group())
    if v != v or v in (float("inf"), float("-inf")):
        raise ValueError(f"expected a finite number, got {text!r}")
    return v


def keyfile_bool(text: str) -> bool:
    """``g_key_file_get_boolean``: ``true`` / ``1`` / ``false`` / ``0`` (case-sensitive), trailing spaces allowed."""
    t = text.rstrip(_SPACE)
    if t in ("true", "1"):
        return True
    if t in ("false", "0"):
        return False
    raise ValueError(f"expected true, false, 1 or 0 (case-sensitive, as GKeyFile), got {text!r}{_comment_hint(text)}")


def keyfile_list(text: str) -> list[str]:
    """``g_key_file_get_string_list``: ``;``-separated (``\\;`` escapes one), a trailing ``;`` allowed."""
    items, cur, i = [], [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] == ";":
            cur.append(";")
            i += 2
            continue
        if ch == ";":
            items.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    if cur or not items:
        items.append("".join(cur))
    return [_unescape(t) for t in items] if text else []


class _Reader:
    """Reads one value the way nvinfer reads its key (``kind``), from a key file (``yaml=False``: GKeyFile's rules)
    or a YAML scalar (YAML has done the unescaping and comment removal already)."""

    def __init__(self, path: str, folder: str, yaml: bool, warnings: list[str]):
        self.path, self.folder, self.yaml, self.warnings = path, folder, yaml, warnings

    def read(self, kind: str, text: str, line: int, key: str) -> Any:
        if kind == "int":
            v, rest = keyfile_int(text) if not self.yaml else (self._yaml_int(text), "")
            if rest:
                self.warnings.append(f"{_where(self.path, line, key)}: {text!r}: the text after {v} is ignored, as "
                                     "GKeyFile ignores it after an integer; the key-file format has no inline "
                                     "comments")
            return v
        if kind == "double":
            return keyfile_double(text.strip(_SPACE) if self.yaml else text)
        if kind == "bool":
            return keyfile_bool(text.lower() if self.yaml else text)
        if kind in ("string", "path"):
            value = text if self.yaml else _unescape(text)
            return self.resolve(value, line, key) if kind == "path" else value
        if kind in ("int-list", "double-list"):
            items = [t for t in (text.split(";") if self.yaml else keyfile_list(text))]
            if items and items[-1].strip(_SPACE) == "":
                items.pop()
            if kind == "int-list":
                out = []
                for t in items:
                    v, rest = keyfile_int(t.lstrip(_SPACE))
                    if rest:
                        self.warnings.append(f"{_where(self.path, line, key)}: {text!r}: the text after {v} is "
                                             "ignored, as GKeyFile ignores it after an integer")
                    out.append(v)
                return out
            return [keyfile_double(t.lstrip(_SPACE)) for t in items]
        raise AssertionError(kind)

    def _yaml_int(self, text: str) -> int:
        t = text.strip(_SPACE)
        if not _INT.fullmatch(t):
            raise ValueError(f"expected an integer (ASCII digits), got {text!r}")
        return int(t)

    def resolve(self, value: str, line: int, key: str) -> str:
        """A path relative to the config's real folder (nvinfer's rule); a value that exists only without its
        trailing whitespace (which GKeyFile keeps) or before an inline comment is refused with that hint."""
        if not value:
            return value
        full = value if os.path.isabs(value) else os.path.join(self.folder, value)
        full = os.path.realpath(full)
        if not os.path.exists(full):
            stripped = re.split(r"[ \t]#", value, maxsplit=1)[0].rstrip(_SPACE)
            if stripped != value:
                alt = os.path.realpath(stripped if os.path.isabs(stripped) else os.path.join(self.folder, stripped))
                if os.path.exists(alt):
                    why = ("an inline comment, which the key-file format does not have"
                           if _COMMENT.search(value) else "trailing whitespace, which GKeyFile keeps")
                    raise ConfigError(f"{_where(self.path, line, key)}: {value!r} holds {why} (nvinfer would look "
                                      f"for a file of that name); write {stripped!r}")
        return full


# ---------------------------------------------------------------- the key file

def read_key_file(path: str) -> list[tuple[str, int, list[tuple[str, str, int]]]]:
    """The groups of a GLib key file in file order, ``(group, line, [(key, raw value, line), ...])`` (a group
    named twice appears twice; values as GKeyFile stores them, before any type's reading).

    Raises :class:`ConfigError` (``file:line: ...``) where ``GKeyFile`` refuses the file (a byte-order mark, a
    line that is no group, entry or comment, an entry before any group, an invalid group or key name, text that is
    not UTF-8), and FileNotFoundError when there is no such file."""
    text = _read_text(path)
    if text.startswith(BOM):
        raise ConfigError(f"{path}:1: the file starts with a UTF-8 byte-order mark, which GKeyFile (nvinfer) refuses; "
                          "save it without one")
    groups: list[tuple[str, int, list[tuple[str, str, int]]]] = []
    for number, raw in enumerate(text.split("\n"), 1):
        if raw.endswith("\r"):
            raw = raw[:-1]
        line = raw.lstrip(_SPACE)
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            close = line.find("]")
            after = line[close + 1:] if close >= 0 else ""
            if close < 0 or after.strip(" \t"):
                hint = (" (the key-file format has no inline comments: put the comment on a line of its own)"
                        if after.lstrip(" \t").startswith("#") else "")
                raise ConfigError(f"{path}:{number}: a group line must be [name] alone, got {raw.strip()!r}{hint}")
            name = line[1:close]
            if not name or "[" in name or any(ord(c) < 32 for c in name):
                raise ConfigError(f"{path}:{number}: invalid group name {name!r}")
            groups.append((name, number, []))
            continue
        eq = line.find("=")
        if eq <= 0:
            raise ConfigError(f"{path}:{number}: expected key=value, a [group] or a # comment, got {raw.strip()!r}")
        key = line[:eq].rstrip(" \t")
        localized = re.fullmatch(r"[^\[\]]+\[[^\[\]]+\]", key) is not None  # key[locale]: GKeyFile's translations
        if not key or (("[" in key or "]" in key) and not localized):
            raise ConfigError(f"{path}:{number}: invalid key name {key!r}")
        if not groups:
            raise ConfigError(f"{path}:{number}: {key}: the entry comes before any [group]")
        if localized:
            continue  # a translation of a key: nvinfer reads none
        groups[-1][2].append((key, line[eq + 1:].lstrip(_SPACE), number))
    return groups


def _read_text(path: str) -> str:
    if not os.path.isfile(path):
        raise FileNotFoundError(f"config-file-path {path!r} is not a file")
    with open(path, "rb") as f:
        data = f.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise ConfigError(f"{path}:{line}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def read_yaml_file(path: str) -> list[tuple[str, int, list[tuple[str, str, int]]]]:
    """nvinfer's YAML form as the same groups as :func:`read_key_file` (scalars as their text; a sequence is joined
    with ``;``, the form nvinfer's YAML reader takes for lists)."""
    try:
        import yaml
    except ImportError:
        raise ImportError(f"{path}: reading nvinfer's YAML configs needs PyYAML: pip install 'obbmeta[yaml]' (or "
                          "pyyaml)") from None
    text = _read_text(path)
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else path
        raise ConfigError(f"{where}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    if root is None:
        raise ConfigError(f"{path}:1: the YAML file is empty (expected a property: map)")
    if not isinstance(root, yaml.MappingNode):
        raise ConfigError(f"{path}:{root.start_mark.line + 1}: expected a map of groups (property:, class-attrs-all:, "
                          "...), got a YAML " + type(root).__name__.replace("Node", "").lower())
    groups = []
    for key_node, value_node in root.value:
        name, line = str(key_node.value), key_node.start_mark.line + 1
        entries = []
        if isinstance(value_node, yaml.MappingNode):
            for k, v in value_node.value:
                entries.append((str(k.value), _yaml_text(path, k.value, v), k.start_mark.line + 1))
        elif not (isinstance(value_node, yaml.ScalarNode) and value_node.value in ("", "~", "null")):
            if name in (PROPERTY_GROUP, OBBMETA_GROUP) or name.startswith(CLASS_ATTRS_PREFIX):
                raise ConfigError(f"{path}:{line}: {name}: expected a map of keys")
        groups.append((name, line, entries))
    return groups


def _yaml_text(path: str, key: str, node: Any) -> str:
    import yaml

    if isinstance(node, yaml.ScalarNode):
        return node.value
    if isinstance(node, yaml.SequenceNode) and all(isinstance(n, yaml.ScalarNode) for n in node.value):
        return ";".join(n.value for n in node.value)
    raise ConfigError(f"{path}:{node.start_mark.line + 1}: {key}: expected a value or a list of values, got a map")


# ---------------------------------------------------------------- the whole file

def read_nvinfer_config(path: str | os.PathLike) -> InferConfig:
    """Parse an nvinfer config file (key file, or YAML for ``.yml`` / ``.yaml``) into typed settings.

    Raises :class:`ConfigError` naming file, line and key for a malformed or out-of-range value, an unknown
    ``[obbmeta]`` key, a ``[class-attrs-N]`` with N not a class id (or at least ``num-detected-classes``), or a
    file GKeyFile / YAML refuses; unknown ``[property]`` / class keys and unknown groups only warn (nvinfer does the
    same for keys, and skips other groups)."""
    path = os.fspath(path)
    real = os.path.realpath(path)
    folder = os.path.dirname(real)
    is_yaml = path.endswith((".yml", ".yaml"))
    groups = read_yaml_file(path) if is_yaml else read_key_file(path)
    warnings: list[str] = []
    infos: list[str] = []
    reader = _Reader(path, folder, is_yaml, warnings)
    values: dict[str, Any] = {}
    own: dict[str, Any] = {}
    lines: dict[str, int] = {}
    ranks: dict[str, int] = {}
    attrs: dict[int, dict[str, Any]] = {}
    class_lines: dict[int, int] = {}
    seen: dict[tuple[str, str], tuple[str, int]] = {}

    def duplicate(group: str, key: str, value: str, number: int) -> None:
        before = seen.get((group, key))
        if before is not None and before[0] != value:
            warnings.append(f"{_where(path, number, key)}: given again (line {before[1]}: {before[0]!r}); the last "
                            "one is used, as nvinfer does")
        seen[(group, key)] = (value, number)

    def setting(name: str, raw: Any, number: int, key: str, rank: int, into: dict) -> None:
        spec = SPECS[name]
        try:
            value = spec.value(raw)
        except ValueError as exc:
            raise ConfigError(f"{_where(path, number, key)}: {exc}") from None
        if into is values and name in ranks and ranks[name] < rank:
            warnings.append(f"{_where(path, number, key)}: ignored: {_key_of(name, ranks[name])} gives "
                            f"{name} (as nvinfer, the newer key wins)")
            return
        into[name] = value
        lines[name] = number
        if into is values:
            ranks[name] = rank

    def property_entry(key: str, text: str, number: int) -> None:
        duplicate(PROPERTY_GROUP, key, text, number)
        k = KEYS.get(key)
        if k is None:
            if key in IGNORED_KEYS:
                (infos if key in INFO_KEYS else warnings).append(f"{_where(path, number, key)}: ignored "
                                                                 f"({IGNORED_KEYS[key]})")
            else:
                warnings.append(f"{_where(path, number, key)}: unknown key in [property], ignored (nvinfer ignores "
                                "it too)")
            return
        try:
            raw = k.convert(reader.read(k.read, text, number, key))
        except ValueError as exc:
            raise ConfigError(f"{_where(path, number, key)}: {exc}") from None
        setting(k.setting, raw, number, key, k.rank, values)

    def obbmeta_entry(key: str, text: str, number: int) -> None:
        duplicate(OBBMETA_GROUP, key, text, number)
        name = ALIASES.get(key, key)
        spec = SPECS.get(name)
        if spec is None or name == "config-file-path":
            raise ConfigError(f"{_where(path, number, key)}: [obbmeta] takes obbinfer's property names "
                              f"({', '.join(n for n in SPECS if n != 'config-file-path')})")
        try:
            if key == NETWORK_MODE_ALIAS:
                mode, _ = keyfile_int(text) if not is_yaml else (reader._yaml_int(text), "")
                if mode not in NETWORK_MODES:
                    raise ValueError(f"expected 0 (FP32), 1 (INT8), 2 (FP16) or 3 (BEST), got {text!r}")
                text = NETWORK_MODES[mode]
            value = text if is_yaml else _unescape(text)
            if spec.path and value and _is_path(name, value, folder):
                value = reader.resolve(value, number, key)
            own[name] = spec.from_text(value)
        except (TypeError, ValueError, OSError) as exc:
            if isinstance(exc, ConfigError):
                raise
            raise ConfigError(f"{_where(path, number, key)}: {exc}") from None
        lines.setdefault(name, number)

    def class_entry(group: str, class_id: int, key: str, text: str, number: int) -> None:
        duplicate(group, key, text, number)
        if key in IGNORED_CLASS_KEYS:
            infos.append(f"{_where(path, number, key)}: ignored ({IGNORED_CLASS_KEYS[key]})")
            return
        if key not in CLASS_KEYS:
            warnings.append(f"{_where(path, number, key)}: unknown key in [{group}], ignored")
            return
        name, kind = CLASS_KEYS[key]
        try:
            v = reader.read(kind, text, number, key)
            v = _class_value(name, v)
        except ValueError as exc:
            raise ConfigError(f"{_where(path, number, key)}: {exc}") from None
        attrs.setdefault(class_id, {})[name] = v
        if class_id == -1 and key in CLASS_ALL_SETTINGS:
            # a threshold above 1 passes no score (NVIDIA's samples switch classes off with 1.4): conf 1.0 with its
            # strict > says the same within conf's range
            setting(CLASS_ALL_SETTINGS[key], min(v, 1.0) if name == "pre_cluster_threshold" else v, number, key, 0,
                    values)

    has_group = False
    for group, group_line, entries in groups:
        if group == PROPERTY_GROUP:
            has_group = True
            for entry in entries:
                property_entry(*entry)
        elif group == OBBMETA_GROUP:
            has_group = True
            for entry in entries:
                obbmeta_entry(*entry)
        elif group == CLASS_ATTRS_ALL or group.startswith(CLASS_ATTRS_PREFIX):
            class_id = -1 if group == CLASS_ATTRS_ALL else _class_group(path, group_line, group, warnings)
            attrs.setdefault(class_id, {})
            class_lines.setdefault(class_id, group_line)
            for entry in entries:
                class_entry(group, class_id, *entry)
        else:
            warnings.append(f"{path}:{group_line}: [{group}]: unknown group, skipped (nvinfer reads [property], "
                            "[class-attrs-all], [class-attrs-N]; obbinfer also [obbmeta])")
    if not has_group:
        raise ConfigError(f"{path}: no [property] group (nvinfer's) and no [obbmeta] group: nothing to configure")
    declared = values.get("num-detected-classes", 0)
    for class_id, line in class_lines.items():
        if declared and class_id >= declared:
            raise ConfigError(f"{path}:{line}: [class-attrs-{class_id}]: class {class_id} but num-detected-classes="
                              f"{declared} (nvinfer refuses the file too)")
    class_attrs = {k: ClassAttrs(**v) for k, v in attrs.items()}
    return InferConfig(path, values, own, class_attrs, tuple(warnings), tuple(infos), lines,
                       "yaml" if is_yaml else "keyfile")


def _is_path(name: str, value: str, folder: str) -> bool:
    """Whether an ``[obbmeta]`` value of a path setting names a file: a model that is no ``module:callable``; class
    names or a charset that look like a path (a ``/``, a leading ``.``, a label file's extension) or name a file
    beside the config (``car`` alone is one class name)."""
    if name == "model":
        return not is_factory(value)
    if name in ("class-names", "charset"):
        return "," not in value and (os.sep in value or value.startswith(".") or
                                     os.path.splitext(value)[1].lower() in (".txt", ".names", ".labels", ".csv") or
                                     os.path.isfile(os.path.join(folder, value)))
    return True


def _key_of(setting: str, rank: int) -> str:
    return next((k.name for k in KEYS.values() if k.setting == setting and k.rank == rank), setting)


def _class_group(path: str, line: int, group: str, warnings: list[str]) -> int:
    """nvinfer reads the class id of ``[class-attrs-N]`` with ``strtoull``: ASCII digits, text after them ignored."""
    suffix = group[len(CLASS_ATTRS_PREFIX):]
    m = re.match(r"[0-9]+", suffix)
    if m is None:
        raise ConfigError(f"{path}:{line}: [{group}]: expected [class-attrs-all] or [class-attrs-N] with N a class "
                          "id (ASCII digits)")
    if m.end() != len(suffix):
        warnings.append(f"{path}:{line}: [{group}]: read as [class-attrs-{int(m.group())}] (nvinfer ignores the text "
                        "after the number)")
    if int(m.group()) > INT_MAX:
        raise ConfigError(f"{path}:{line}: [{group}]: class id {m.group()} is out of range")
    return int(m.group())


def _class_value(name: str, v: Any) -> Any:
    if name in ("border_color", "bg_color"):
        if len(v) != 4 or not all(0.0 <= c <= 1.0 for c in v):
            raise ValueError(f"expected r;g;b;a with each in 0..1, got {';'.join(map(str, v))!r}")
        return tuple(v)
    if name == "nms_iou_threshold" and not 0.0 <= v <= 1.0:
        raise ValueError(f"expected a number in 0..1, got {v}")
    if v < 0:
        raise ValueError(f"expected a value >= 0 (nvinfer's rule), got {v}")
    return v


# ---------------------------------------------------------------- the docs tables

DOCS_START = "<!-- settings tables: python -m obbmeta.config.nvinfer --docs -->"
DOCS_END = "<!-- end of settings tables -->"


def docs_tables() -> str:
    """The settings table (:func:`obbmeta.config.settings.docs_table`) and the table of the nvinfer keys obbinfer reads
    but has nothing to do with, as docs/gst.md shows them between :data:`DOCS_START` and :data:`DOCS_END`."""
    from .settings import docs_table

    reasons: dict[str, list[str]] = {}
    for key, why in IGNORED_KEYS.items():
        reasons.setdefault(why, []).append(key)
    for key, why in IGNORED_CLASS_KEYS.items():
        reasons.setdefault(why, []).append(f"[class-attrs] {key}")
    rows = ["| nvinfer keys obbinfer reads and ignores | why | said as |", "|---|---|---|"]
    for why, keys in reasons.items():
        level = "info" if all(k in INFO_KEYS or k.startswith("[class-attrs]") for k in keys) else "warning"
        rows.append(f"| {', '.join(f'`{k}`' for k in keys)} | {why} | {level} |")
    classes = ["| `[class-attrs-*]` key | nvinfer's default | meaning |", "|---|---|---|"]
    defaults = {"pre_cluster_threshold": "0.2 (`conf`)", "post_cluster_threshold": "0", "nms_iou_threshold":
                "0.3 (`iou`)", "topk": "-1 (no limit)", "detected_min_w": "0", "detected_min_h": "0",
                "detected_max_w": "0 (no limit)", "detected_max_h": "0 (no limit)", "roi_top_offset": "0",
                "roi_bottom_offset": "0", "border_color": "1;0;0;1 (red)", "bg_color": "none"}
    meaning = {"pre_cluster_threshold": "an anchor whose best class is this one is dropped before NMS when it scores "
                                        "at or below it, as nvinfer's YOLO parsers do (a table the fused decode "
                                        "reads: no copy of the head)",
               "post_cluster_threshold": "kept after NMS only when the score is above it",
               "nms_iou_threshold": "rotated NMS threshold of the class (the same fused decode as the other classes)",
               "topk": "boxes kept per class after NMS", "detected_min_w": "AABB width below it: dropped",
               "detected_min_h": "AABB height below it: dropped", "detected_max_w": "AABB width above it: dropped",
               "detected_max_h": "AABB height above it: dropped",
               "roi_top_offset": "boxes reaching above it are dropped (clipped with crop-objects-to-roi-boundary)",
               "roi_bottom_offset": "the same from the bottom of the frame",
               "border_color": "the class's border colour (nvdsosd)",
               "bg_color": "read; obbinfer writes no background colour"}
    for key, (name, _) in CLASS_KEYS.items():
        if key != "threshold":
            classes.append(f"| `{key}` | {defaults[name]} | {meaning[name]} |")
    return "\n\n".join([docs_table(), "\n".join(classes), "\n".join(rows)])


def write_docs(path: str) -> bool:
    """Rewrite the tables in ``path`` (docs/gst.md) between the markers; True when the file changed."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    head, start, rest = text.partition(DOCS_START)
    _, end, tail = rest.partition(DOCS_END)
    if not start or not end:
        raise ValueError(f"{path} has no {DOCS_START} ... {DOCS_END} block")
    new = f"{head}{DOCS_START}\n{docs_tables()}\n{DOCS_END}{tail}"
    if new != text:
        with open(path, "w", encoding="utf-8") as f:
            f.write(new)
    return new != text


if __name__ == "__main__":  # python -m obbmeta.config.nvinfer --docs [docs/gst.md]
    import sys

    if sys.argv[1:2] != ["--docs"]:
        sys.exit("usage: python -m obbmeta.config.nvinfer --docs [docs/gst.md]")
    here = os.path.dirname(__file__)
    target = sys.argv[2] if len(sys.argv) > 2 else os.path.normpath(os.path.join(here, "..", "..", "docs", "gst.md"))
    print(("rewrote " if write_docs(target) else "unchanged: ") + target)


__all__ = ["ConfigError", "ClassAttrs", "InferConfig", "read_key_file", "read_yaml_file", "read_nvinfer_config",
           "IGNORED_KEYS", "INFO_KEYS", "CLASS_KEYS", "IGNORED_CLASS_KEYS", "keyfile_int", "keyfile_double",
           "keyfile_bool", "keyfile_list"]
