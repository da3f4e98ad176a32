"""The other end of the wire: what nvmsgconv published, read back into per-frame records with their rotated boxes.

A consumer machine has no DeepStream: this module is plain Python and NumPy (torch only inside
:meth:`FrameRecord.boxes`).
It reads the payloads ``nvmsgconv`` hands to ``nvmsgbroker`` (Kafka, MQTT, Redis, AMQP), in the two forms that carry
obbmeta's rotated box (docs/messages.md):

* ``msg2p-newapi=1`` (full or minimal schema): the payload's ``"customMessage"`` array holds obbmeta's message blob,
  the JSON of schema ``obbmeta/publish/schemas/obb-message-1.json`` (one frame: identity and every object);
* ``msg2p-newapi=0``, full schema: one payload per object whose ``"object"."signature"`` is obbmeta's event
  signature (the rotated box, the frame's identity, the object's index among the frame's objects, the confidence).

:func:`parse_payload` turns one payload into records (one frame for a blob, one object of a frame for an event);
:class:`FrameCollector` turns a stream of payloads into whole frames (it drops the copies of a blob that the full
schema repeats in every object's message, and joins a frame's event messages). :func:`validate_message` checks a
blob against the JSON Schema, with the ``jsonschema`` package when it is installed and with an interpreter of the
schema's own keywords otherwise.

Example, a payload read from a broker::

    from obbmeta import messages
    collector = messages.FrameCollector()
    for frame in collector.add(payload_bytes):
        print(frame.source_id, frame.frame_num, frame.object_ids, frame.labels)
        boxes = frame.boxes()          # OrientedBoxes: xywhr (radians), scores, labels = class ids
"""
from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import json
import math
import re
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from .. import geometry
from .._validators import int_in_range

SCHEMA = "obbmeta.obb-message/1"
SCHEMA_PATH = Path(__file__).resolve().parent / "schemas" / "obb-message-1.json"
UNTRACKED_OBJECT_ID = 0xFFFFFFFFFFFFFFFF

# obbmeta's event signature (obbmeta.nvds.messages.event_signature): 13 numbers of the rotated box, then these five,
# then the confidence when it was finite.
SIGNATURE_BOX = 13
SIGNATURE_FIELDS = ("source_id", "frame_num", "class_id", "object_index", "object_count")
SIGNATURE_SIZES = (SIGNATURE_BOX + len(SIGNATURE_FIELDS), SIGNATURE_BOX + len(SIGNATURE_FIELDS) + 1)
# Members of nvmsgconv's full-schema "object" that are not the label key ("<label>": {} for obbmeta's events).
_EVENT_OBJECT_MEMBERS = {"id", "speed", "direction", "orientation", "bbox", "signature", "location", "coordinate",
                         "maskoutline", "pose", "embedding", "single_view_3d_tracking"}
# How deep a payload may nest arrays and objects (obbmeta's blob nests 7 deep, nvmsgconv's payloads less): deeper
# is a MessageError, before anything recurses into it (the parser, repr in messages, json.dumps in the examples).
MAX_DEPTH = 64


class MessageError(ValueError):
    """A payload that is not what obbmeta's writers and nvmsgconv publish; the text names the member (``path``). A
    text of more than 1000 characters (a hostile member's value shown in it) is cut there, with its length."""

    def __init__(self, message: str, path: str = ""):
        if len(message) > 1000:
            message = f"{message[:1000]}... ({len(message)} characters)"
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path


@dataclass(frozen=True)
class ObjectRecord:
    """One object of a frame, as published.

    ``object_id``: the tracking id, None before a tracker. ``confidence``: None when the pipeline's value was NaN or
    infinite (the writers write null, or leave it out of the signature), also for a number no double holds
    (``1e400``, a 400-digit integer). ``label_bytes``: ``obj_label`` exactly when the blob carried it (``label``
    shows bytes that are not UTF-8 as U+FFFD); on the event path the label as nvmsgconv wrote it. ``bbox``:
    ``rect_params`` left, top, width, height (integers on the event path: nvmsgconv truncates them). ``xywhr``: cx,
    cy, w, h, angle in radians, clockwise on screen. ``obb_source``: where obbmeta's reader found the box (None on
    the event path). ``classifications``: the object's secondary results (component_id, classifier_type, labels
    with label_id, class_id, prob, label), as the blob carries them (a ``prob`` no finite double holds as None);
    empty on the event path. ``parent``: a secondary detector's child's parent, its index in the frame's
    ``objects`` (``parent_id`` its tracking id, None while untracked); None for other objects and on the event
    path (nvmsgconv's schema has no parent)."""
    object_id: int | None
    class_id: int
    label: str
    label_bytes: bytes
    confidence: float | None
    bbox: tuple[float, float, float, float]
    xywhr: tuple[float, float, float, float, float]
    corners: tuple[tuple[float, float], ...]
    obb_source: str | None = None
    classifications: tuple[dict, ...] = ()  # secondary results as the blob carries them (blob path only)
    parent: int | None = None  # a secondary detector's child: its parent's index in the frame's objects (blob path)
    parent_id: int | None = None  # and the parent's tracking id, None while untracked


@dataclass(frozen=True)
class FrameRecord:
    """One video frame's objects as published: ``path`` is ``"blob"`` (customMessage) or ``"event"`` (signatures).

    ``sensor`` and ``timestamp`` come from nvmsgconv's envelope (``sensor.id`` / ``sensorId`` from its config,
    ``@timestamp``) when there is one; ``batch_id`` and ``pts`` travel only in the blob. ``complete`` is False for an
    event-path frame some of whose object messages never arrived (:meth:`FrameCollector.flush`)."""
    path: str
    source_id: int
    frame_num: int
    objects: tuple[ObjectRecord, ...]
    sensor: str | None = None
    timestamp: str | None = None
    batch_id: int | None = None
    pts: int | None = None
    complete: bool = True

    @property
    def object_ids(self) -> list[int | None]:
        return [o.object_id for o in self.objects]

    @property
    def class_ids(self) -> list[int]:
        return [o.class_id for o in self.objects]

    @property
    def labels(self) -> list[str]:
        return [o.label for o in self.objects]

    @property
    def confidences(self) -> list[float | None]:
        return [o.confidence for o in self.objects]

    def to_dict(self) -> dict:
        """Plain JSON-ready data (what the consumer examples print, one line per frame)."""
        objects = []
        for o in self.objects:
            entry = {"id": o.object_id, "class_id": o.class_id, "label": o.label, "confidence": o.confidence,
                     "bbox": list(o.bbox), "xywhr": list(o.xywhr), "corners": [list(c) for c in o.corners],
                     "obb_source": o.obb_source}
            if o.label_bytes != o.label.encode("utf-8"):
                entry["label_base64"] = base64.b64encode(o.label_bytes).decode("ascii")
            if o.classifications:
                entry["classifications"] = list(o.classifications)
            if o.parent is not None:
                entry["parent"], entry["parent_id"] = o.parent, o.parent_id
            objects.append(entry)
        return {"path": self.path, "sensor": self.sensor, "source_id": self.source_id, "frame_num": self.frame_num,
                "timestamp": self.timestamp, "batch_id": self.batch_id, "pts": self.pts, "complete": self.complete,
                "objects": objects}

    def boxes(self, device: Any = "cpu") -> Any:
        """The objects as :class:`obbmeta.OrientedBoxes`: ``xywhr`` float32 (radians), ``scores`` float32 (NaN
        where the confidence was null), ``labels`` = the class ids (int64)."""
        import torch

        from ..boxes import OrientedBoxes

        xywhr = torch.tensor([o.xywhr for o in self.objects], dtype=torch.float32).reshape(-1, 5)
        scores = torch.tensor([math.nan if o.confidence is None else o.confidence for o in self.objects],
                              dtype=torch.float32)
        labels = torch.tensor(self.class_ids, dtype=torch.int64)
        return OrientedBoxes(xywhr, scores, labels).to(device)


# ---------------------------------------------------------------- validation against the JSON Schema

@functools.lru_cache(maxsize=None)
def load_schema() -> dict:
    """The JSON Schema of obbmeta's message blob (``obbmeta/publish/schemas/obb-message-1.json``, packaged)."""
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def validate_message(doc: Any) -> None:
    """Check a parsed blob against :func:`load_schema`; MessageError naming the first bad member otherwise. Uses the
    ``jsonschema`` package when it is importable, else :func:`check_schema` (the same verdicts; tested)."""
    try:
        import jsonschema
    except ImportError:
        check_schema(doc, load_schema())
        return
    validator = jsonschema.Draft202012Validator(load_schema())
    error = jsonschema.exceptions.best_match(validator.iter_errors(doc))
    if error is not None:
        raise MessageError(error.message, _path(error.absolute_path) or "message")


def _path(parts: Iterable[Any]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


_ANNOTATIONS = {"$schema", "$id", "title", "description", "$defs"}


def check_schema(doc: Any, schema: dict) -> None:
    """Validate ``doc`` against ``schema`` using only the JSON Schema (2020-12) keywords obbmeta's schema file uses:
    ``type const enum required properties items prefixItems minItems maxItems minimum maximum maxLength pattern
    $ref`` (local ``#/$defs/...``). A keyword outside that set is a ValueError (the file grew beyond this checker),
    a document that fails is a MessageError naming the member."""
    _check(doc, schema, schema, "")


def _json_type(value: Any) -> set[str]:
    if value is None:
        return {"null"}
    if isinstance(value, bool):
        return {"boolean"}
    if isinstance(value, int):
        return {"integer", "number"}
    if isinstance(value, float):
        # JSON Schema: a number with a zero fractional part is an integer (1.0 is one)
        return {"integer", "number"} if value.is_integer() else {"number"}
    if isinstance(value, str):
        return {"string"}
    if isinstance(value, list):
        return {"array"}
    if isinstance(value, dict):
        return {"object"}
    return set()


def _json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _check(value: Any, schema: dict, root: dict, path: str) -> None:
    where = path or "message"
    unknown = set(schema) - _ANNOTATIONS - set(_KEYWORDS)
    if unknown:
        raise ValueError(f"obbmeta's schema checker does not implement JSON Schema keyword(s) {sorted(unknown)}")
    if "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/$defs/"):
            raise ValueError(f"obbmeta's schema checker only follows local #/$defs/ references, got {ref!r}")
        _check(value, root["$defs"][ref[len("#/$defs/"):]], root, path)
    for keyword in _KEYWORDS:
        if keyword in schema and keyword != "$ref":
            _KEYWORDS[keyword](value, schema, root, path, where)


def _k_type(value, schema, root, path, where):
    kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    if not _json_type(value) & set(kinds):
        raise MessageError(f"must be {' or '.join(kinds)}, got {value!r}", where)


def _k_const(value, schema, root, path, where):
    if not _json_equal(value, schema["const"]):
        raise MessageError(f"must be {schema['const']!r}, got {value!r}", where)


def _k_enum(value, schema, root, path, where):
    if not any(_json_equal(value, e) for e in schema["enum"]):
        raise MessageError(f"must be one of {schema['enum']}, got {value!r}", where)


def _k_required(value, schema, root, path, where):
    if isinstance(value, dict):
        missing = [k for k in schema["required"] if k not in value]
        if missing:
            raise MessageError(f"misses member(s) {missing}", where)


def _k_properties(value, schema, root, path, where):
    if isinstance(value, dict):
        for key, sub in schema["properties"].items():
            if key in value:
                _check(value[key], sub, root, f"{path}.{key}" if path else key)


def _k_prefix_items(value, schema, root, path, where):
    if isinstance(value, list):
        for k, (item, sub) in enumerate(zip(value, schema["prefixItems"])):
            _check(item, sub, root, f"{path}[{k}]")


def _k_items(value, schema, root, path, where):
    if isinstance(value, list):
        for k in range(len(schema.get("prefixItems", ())), len(value)):
            _check(value[k], schema["items"], root, f"{path}[{k}]")


def _k_min_items(value, schema, root, path, where):
    if isinstance(value, list) and len(value) < schema["minItems"]:
        raise MessageError(f"must have at least {schema['minItems']} items, got {len(value)}", where)


def _k_max_items(value, schema, root, path, where):
    if isinstance(value, list) and len(value) > schema["maxItems"]:
        raise MessageError(f"must have at most {schema['maxItems']} items, got {len(value)}", where)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _k_minimum(value, schema, root, path, where):
    if _is_number(value) and value < schema["minimum"]:
        raise MessageError(f"must be >= {schema['minimum']}, got {value!r}", where)


def _k_maximum(value, schema, root, path, where):
    if _is_number(value) and value > schema["maximum"]:
        raise MessageError(f"must be <= {schema['maximum']}, got {value!r}", where)


def _k_max_length(value, schema, root, path, where):
    if isinstance(value, str) and len(value) > schema["maxLength"]:
        raise MessageError(f"must be at most {schema['maxLength']} characters, got {len(value)}", where)


def _k_pattern(value, schema, root, path, where):
    if isinstance(value, str) and re.search(schema["pattern"], value) is None:
        raise MessageError(f"must match {schema['pattern']!r}, got {value!r}", where)


_KEYWORDS = {"$ref": None, "type": _k_type, "const": _k_const, "enum": _k_enum, "required": _k_required,
             "properties": _k_properties, "prefixItems": _k_prefix_items, "items": _k_items,
             "minItems": _k_min_items, "maxItems": _k_max_items, "minimum": _k_minimum, "maximum": _k_maximum,
             "maxLength": _k_max_length, "pattern": _k_pattern}


# ---------------------------------------------------------------- parsing

def _refuse_constant(name: str) -> None:
    raise MessageError(f"{name} is not JSON (obbmeta and nvmsgconv write no NaN or Infinity)")


def _json_int(digits: str) -> int | float:
    try:
        return int(digits)
    except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits()): beyond every integer
        return float(digits)  # member's range and every double, read as -inf or inf


_SURROGATE = re.compile(r"[\ud800-\udfff]")  # in a str, always a lone one (json.loads joins an escaped pair)


def _check_depth(doc: Any, what: str) -> None:
    """MessageError when ``doc`` nests arrays / objects deeper than :data:`MAX_DEPTH` (level by level, no
    recursion)."""
    level = [doc] if isinstance(doc, (dict, list)) else []
    for _ in range(MAX_DEPTH):
        level = [v for c in level for v in (c.values() if isinstance(c, dict) else c) if isinstance(v, (dict, list))]
    if level:
        raise MessageError(f"{what} is nested deeper than {MAX_DEPTH} arrays / objects")


def _decode(text: str, what: str) -> Any:
    """``text`` parsed: json.JSONDecodeError when it is not JSON; MessageError for JSON obbmeta does not read (NaN or
    Infinity, nested deeper than :data:`MAX_DEPTH`, a lone surrogate); an integer of more digits than Python converts
    is read as -inf or inf. Nothing else escapes (no RecursionError, MemoryError or bare ValueError)."""
    try:
        doc = json.loads(text, parse_constant=_refuse_constant, parse_int=_json_int)
    except RecursionError:
        raise MessageError(f"{what} is nested deeper than {MAX_DEPTH} arrays / objects") from None
    except MemoryError:
        raise MessageError(f"{what} is too large to parse ({len(text)} characters)") from None
    _check_depth(doc, what)
    if "\\ud" in text or "\\uD" in text:  # a surrogate escape: the pairs are text, a lone one is not
        try:
            json.dumps(doc, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise MessageError(f"{what} holds a lone UTF-16 surrogate {exc.object[exc.start:exc.end]!r}, which is "
                               "not Unicode text") from None
    return doc


def _load(text: str | bytes | bytearray | dict, what: str) -> Any:
    if isinstance(text, dict):
        _check_depth(text, what)
        return text
    if isinstance(text, (bytes, bytearray)):
        # nvmsgconv copies an obj_label's bytes into its own members as they are, so a label that is not UTF-8 makes
        # its payload not UTF-8 either: read with those bytes as U+FFFD (obbmeta's blob is UTF-8 and keeps the
        # exact label in label_base64)
        text = bytes(text).decode("utf-8", "replace")
    elif isinstance(text, str) and not text.isascii() and (lone := _SURROGATE.search(text)):  # surrogateescape
        raise MessageError(f"{what} holds a lone UTF-16 surrogate {lone[0]!r}, which is not Unicode text")
    if not isinstance(text, str):
        raise TypeError(f"{what} must be str, bytes or a parsed dict, got {type(text).__name__}")
    try:
        return _decode(text, what)
    except json.JSONDecodeError as exc:
        repaired = _json_glib_non_finite_as_null(text)
        if repaired is not None:
            try:
                return _decode(repaired, what)
            except json.JSONDecodeError:
                pass
        raise MessageError(f"{what} is not JSON: {exc}") from None


_NON_FINITE = re.compile(r"-?(?:nan|inf)(?:\.0)?(?![A-Za-z0-9_.])")


def _json_glib_non_finite_as_null(text: str) -> str | None:
    """``text`` with json-glib's non-finite numbers (``nan``, ``-nan``, ``inf``, ``-inf``, also with the ``.0`` it
    appends to numbers without a point: what it writes for a NaN / inf double, e.g. nvmsgconv's object confidence,
    and not JSON) outside strings replaced by ``null``; None when there are none."""
    if _NON_FINITE.search(text) is None:  # none anywhere: spare text that is not JSON the scan
        return None
    out, k, changed, n = [], 0, False, len(text)
    while k < n:
        c = text[k]
        if c == '"':  # copy a string literal as it is, escapes included
            end = k + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append(text[k:end + 1])
            k = end + 1
            continue
        m = _NON_FINITE.match(text, k) if c in "-ni" else None
        if m is not None and (not out or out[-1][-1:] not in "0123456789.eE"):
            out.append("null")
            k, changed = m.end(), True
            continue
        out.append(c)
        k += 1
    return "".join(out) if changed else None


def _label_bytes(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise MessageError(f"must be base64 text, got {text!r} ({exc})", "label_base64") from None


def _float(value: int | float) -> float:
    """A JSON number as a double: -inf or inf for an integer beyond the double range."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _finite_or_none(value: int | float | None) -> float | None:
    number = math.nan if value is None else _float(value)
    return number if math.isfinite(number) else None


def _finite(value: int | float, where: str) -> float:
    number = _float(value)
    if not math.isfinite(number):
        raise MessageError(f"must be a finite number (one a double holds), got {number}", where)
    return number


def parse_blob(message: str | bytes | dict, *, sensor: str | None = None, timestamp: str | None = None
               ) -> FrameRecord:
    """One obbmeta message blob (schema ``obbmeta.obb-message/1``: text, bytes or the parsed dict) as a
    :class:`FrameRecord`; MessageError naming the member when it does not follow the schema.

    Numbers as the writer writes them: a box number (``bbox``, ``obb``, its corners) that is not a finite double
    (``1e400``, a 400-digit integer) is a MessageError naming it, the writer refuses such a box; a ``confidence`` or
    a classification's ``prob`` that is not one is None, as the writer writes a NaN or infinite one (null); an
    integer member out of its range is a MessageError (an integer of more digits than Python converts, 4300, reads
    as -inf or inf). ``NaN`` and ``Infinity`` are not JSON: a MessageError."""
    doc = _load(message, "the message")
    validate_message(doc)
    frame = doc["frame"]
    objects = []
    for n, entry in enumerate(doc["objects"]):
        obb, bbox = entry["obb"], entry["bbox"]
        at = f"objects[{n}]"
        if ("parent" in entry) != ("parent_id" in entry):
            raise MessageError("parent and parent_id come together (a secondary detector's child)", at)
        if "parent" in entry and not entry["parent"] < len(doc["objects"]):
            raise MessageError(f"parent {entry['parent']} is not an index of this frame's "
                               f"{len(doc['objects'])} objects", f"{at}.parent")
        _finite(obb["angle_deg"], f"{at}.obb.angle_deg")  # not kept (angle_rad is), checked all the same
        label = entry["label"]
        exact = _label_bytes(entry["label_base64"]) if "label_base64" in entry else None
        objects.append(ObjectRecord(
            object_id=None if entry["id"] is None else int(entry["id"]), class_id=int(entry["class_id"]),
            label=label, label_bytes=label.encode("utf-8") if exact is None else exact,
            confidence=_finite_or_none(entry["confidence"]),
            bbox=tuple(_finite(bbox[k], f"{at}.bbox.{k}") for k in ("left", "top", "width", "height")),
            xywhr=tuple(_finite(obb[k], f"{at}.obb.{k}") for k in ("cx", "cy", "w", "h", "angle_rad")),
            corners=tuple((_finite(x, f"{at}.obb.corners[{j}][0]"), _finite(y, f"{at}.obb.corners[{j}][1]"))
                          for j, (x, y) in enumerate(obb["corners"])), obb_source=entry["obb_source"],
            classifications=tuple({**c, "labels": [{**lab, "prob": _finite_or_none(lab["prob"])}
                                                   for lab in c["labels"]]}
                                  for c in entry.get("classifications", ())),
            parent=int(entry["parent"]) if "parent" in entry else None,
            parent_id=None if entry.get("parent_id") is None else int(entry["parent_id"])))
    return FrameRecord(path="blob", source_id=int(frame["source_id"]), frame_num=int(frame["frame_num"]),
                       objects=tuple(objects), sensor=sensor, timestamp=timestamp, batch_id=int(frame["batch_id"]),
                       pts=int(frame["pts"]))


def _sensor_of(doc: dict) -> str | None:
    sensor = doc.get("sensor")
    if isinstance(sensor, dict) and isinstance(sensor.get("id"), str):
        return sensor["id"]  # full schema: the config's sensor<N> group
    return doc["sensorId"] if isinstance(doc.get("sensorId"), str) else None  # minimal schema


def _integral(value: float, name: str, low: int, high: int) -> int:
    if not (value.is_integer() and low <= value <= high):
        raise MessageError(f"{name} must be an integer in {low}..{high}, got {value!r}", "object.signature")
    return int(value)


def parse_event(payload: str | bytes | dict) -> FrameRecord:
    """One nvmsgconv full-schema event payload (``msg2p-newapi=0``, ``payload-type=0``) written from obbmeta's
    event meta, as a :class:`FrameRecord` holding that one object (``complete`` when the frame had only it); its
    ``"object"."signature"`` must be obbmeta's (:data:`SIGNATURE_SIZES` numbers whose corners belong to its box)."""
    doc = _load(payload, "the payload")
    obj = doc.get("object") if isinstance(doc, dict) else None
    if not isinstance(obj, dict) or "signature" not in obj:
        raise MessageError("is not an nvmsgconv full-schema event payload with an object signature", "payload")
    sig = obj["signature"]
    if not (isinstance(sig, list) and len(sig) in SIGNATURE_SIZES and all(_is_number(v) for v in sig)):
        raise MessageError(f"must be obbmeta's event signature, {' or '.join(map(str, SIGNATURE_SIZES))} numbers, got "
                           f"{sig!r}", "object.signature")
    sig = [_float(v) for v in sig]
    if not all(math.isfinite(v) for v in sig[:SIGNATURE_BOX]):
        raise MessageError(f"must hold finite numbers (ones a double holds) for the box, got {sig[:SIGNATURE_BOX]}",
                           "object.signature")
    cx, cy, w, h, angle_deg = sig[:5]
    corners = [(sig[5 + 2 * k], sig[6 + 2 * k]) for k in range(4)]
    angle = math.radians(angle_deg)
    tolerance = 1e-3 + 1e-5 * (abs(cx) + abs(cy) + abs(w) + abs(h))  # float32 box and corners, written apart
    if not all(abs(a - b) <= tolerance for xy, want in zip(corners, geometry.corners((cx, cy, w, h, angle))[0].tolist())
               for a, b in zip(xy, want)):
        raise MessageError("is not obbmeta's event signature: its corners are not those of its box "
                           f"(cx, cy, w, h, angle_deg = {sig[:5]})", "object.signature")
    named = dict(zip(SIGNATURE_FIELDS, sig[SIGNATURE_BOX:]))  # the writer's order, by name
    source_id = _integral(named["source_id"], "source_id", 0, 2**32 - 1)
    frame_num = _integral(named["frame_num"], "frame_num", -2**31, 2**31 - 1)
    class_id = _integral(named["class_id"], "class_id", -2**31, 2**31 - 1)
    count = _integral(named["object_count"], "object_count", 1, 2**31 - 1)
    index = _integral(named["object_index"], "object_index", 0, count - 1)
    confidence = _finite_or_none(sig[SIGNATURE_SIZES[0]]) if len(sig) == SIGNATURE_SIZES[1] else None
    track = obj.get("id")
    if not (isinstance(track, str) and re.fullmatch("[0-9]{1,20}", track) and int(track) <= UNTRACKED_OBJECT_ID):
        raise MessageError(f"must be the tracking id as decimal text, got {track!r}", "object.id")
    labels = [k for k, v in obj.items() if k not in _EVENT_OBJECT_MEMBERS and v == {}]
    if len(labels) > 1:
        raise MessageError(f"has more than one label member ({labels})", "object")
    label = labels[0] if labels else ""
    bbox = obj.get("bbox")
    keys = ("topleftx", "toplefty", "bottomrightx", "bottomrighty")
    if not (isinstance(bbox, dict) and all(_is_number(bbox.get(k)) for k in keys)):
        raise MessageError(f"must hold the numbers {keys}, got {bbox!r}", "object.bbox")
    left, top, right, bottom = (_float(bbox[k]) for k in keys)
    if not all(math.isfinite(v) for v in (left, top, right, bottom)):
        raise MessageError(f"must hold finite numbers (ones a double holds), got {[left, top, right, bottom]}",
                           "object.bbox")
    record = ObjectRecord(
        object_id=None if int(track) == UNTRACKED_OBJECT_ID else int(track), class_id=class_id, label=label,
        label_bytes=label.encode("utf-8"), confidence=confidence, bbox=(left, top, right - left, bottom - top),
        xywhr=(cx, cy, w, h, angle), corners=tuple(corners))
    ts = doc.get("@timestamp")
    return _EventPart(path="event", source_id=source_id, frame_num=frame_num, objects=(record,),
                      sensor=_sensor_of(doc), timestamp=ts if isinstance(ts, str) else None, complete=count == 1,
                      object_index=index, object_count=count)


@dataclass(frozen=True)
class _EventPart(FrameRecord):
    """An event payload's one object with its place in the frame (for :class:`FrameCollector`)."""
    object_index: int = 0
    object_count: int = 1


def parse_payload(payload: str | bytes | dict) -> list[FrameRecord]:
    """The records in one payload as nvmsgconv publishes it (or an obbmeta blob published on its own):

    * a payload with ``"customMessage"`` (``msg2p-newapi=1``): one :class:`FrameRecord` per obbmeta blob in it
      (custom messages of other schemas are other writers' and are left out), with nvmsgconv's sensor id and
      timestamp; under the full schema every object's payload repeats the frame's blob (:class:`FrameCollector`
      keeps one);
    * an obbmeta blob itself (``"schema": "obbmeta.obb-message/1"``): its frame;
    * a full-schema event payload (``msg2p-newapi=0``): one record holding its one object (:func:`parse_event`).

    MessageError for text that is not JSON, a blob that breaks the schema, and a payload with no obbmeta message at
    all (nvmsgconv's minimal event schema, for one, carries no rotated box); for a hostile one too (nested deeper
    than :data:`MAX_DEPTH`, a lone surrogate, ``NaN``, a box number no double holds: :func:`parse_blob`), never
    another exception (RecursionError, OverflowError, a bare ValueError) for text or bytes."""
    return [record for record, _ in _parse_payload(payload)]


def _digest(sensor: str | None, text: str | bytes) -> bytes:
    """16 bytes that tell a blob's (sensor, text) from every other's (blake2b)."""
    data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    return hashlib.blake2b(repr(sensor).encode("utf-8", "surrogatepass") + b"\0" + data, digest_size=16).digest()


def _parse_payload(payload: str | bytes | dict, repeats: "_Recent | None" = None) -> list:
    """parse_payload's records, each with the :func:`_digest` of its blob's sensor and text (None for an event);
    with ``repeats``, a blob whose digest is in it is skipped unparsed (a copy the full schema repeats, which gives
    the very record parsed before)."""
    doc = _load(payload, "the payload")
    if not isinstance(doc, dict):
        raise MessageError(f"must be a JSON object, got {type(doc).__name__}", "payload")
    if "customMessage" in doc:
        messages = doc["customMessage"]
        if not isinstance(messages, list) or not all(isinstance(m, str) for m in messages):
            raise MessageError("must be an array of strings (nvmsgconv's custom messages)", "customMessage")
        sensor, ts = _sensor_of(doc), doc.get("@timestamp")
        out, repeated, unread = [], False, ""
        for k, text in enumerate(messages):
            digest = _digest(sensor, text)
            if repeats is not None and digest in repeats:
                repeated = True
                continue
            try:
                inner = _decode(text, "the message")
            except (json.JSONDecodeError, MessageError) as exc:  # another writer's custom message: not JSON (that
                # obbmeta reads) is not obbmeta's; the first one's reason goes with "holds no obbmeta message"
                unread = unread or f"; [{k}] " + (f"the message is not JSON: {exc}"
                                                  if isinstance(exc, json.JSONDecodeError) else str(exc))
                continue
            if isinstance(inner, dict) and inner.get("schema") == SCHEMA:
                try:
                    record = parse_blob(inner, sensor=sensor, timestamp=ts if isinstance(ts, str) else None)
                except MessageError as exc:
                    raise MessageError(str(exc), f"customMessage[{k}]") from None
                out.append((record, digest))
        if out or repeated:
            return out
        raise MessageError(f"holds no obbmeta message (none of its {len(messages)} custom messages has schema "
                           f"{SCHEMA!r}{unread})", "customMessage")
    if doc.get("schema") == SCHEMA:
        digest = _digest(None, bytes(payload) if isinstance(payload, (bytes, bytearray)) else
                         payload if isinstance(payload, str) else repr(payload))
        if repeats is not None and digest in repeats:
            return []
        return [(parse_blob(doc), digest)]
    if isinstance(doc.get("object"), dict) and "signature" in doc["object"]:
        return [(parse_event(doc), None)]
    raise MessageError("carries no obbmeta message: no customMessage (nvmsgconv msg2p-newapi=1 with obbmessage "
                       "payload=blob), no obbmeta blob and no object signature (msg2p-newapi=0 with payload-type=0 "
                       "and obbmessage payload=event; the minimal event schema carries no rotated box)", "payload")


class _Recent:
    """The last ``n`` keys added, oldest first (a dict as a bounded ordered set)."""

    def __init__(self, n: int):
        self.n, self.keys = n, {}

    def __contains__(self, key) -> bool:
        return key in self.keys

    def add(self, key) -> bool:
        """Add ``key``; False when it was already there."""
        if key in self.keys:
            return False
        self.keys[key] = None
        if len(self.keys) > self.n:
            del self.keys[next(iter(self.keys))]
        return True


class FrameCollector:
    """Whole frames from a stream of payloads, in arrival order.

    :meth:`add` returns the frames a payload completes: a blob's frame at once, and its exact repeats dropped (the
    copies the full schema repeats in every object's payload, a broker's redelivery: the same sensor and the same
    blob text, hence the same source, frame number, pts, batch id and objects, as one of the last ``remember`` blobs
    delivered; a copy is dropped unparsed). A blob of the same frame with other content (a restarted pipeline, a
    second ``obbmessage`` after a secondary stage) is not a repeat: it is delivered as a frame of its own, as blob
    frames are never merged. The collector remembers those blobs as ``remember`` digests of 16 bytes (blake2b of
    sensor and text; about 100 bytes each with Python's dict, 100 kB for the default 1024), never their text.
    An event frame is returned once all ``object_count`` of its objects arrived (in the frame's object order; a
    repeated object is dropped). More than ``pending`` unfinished event frames: the oldest is returned with
    ``complete=False``. :meth:`flush` returns every unfinished frame (``complete=False``)."""

    def __init__(self, remember: int = 1024, pending: int = 256):
        int_in_range("remember", remember, 1)
        int_in_range("pending", pending, 1)
        self._seen = _Recent(remember)  # the digests of the last `remember` blobs delivered
        self._pending: OrderedDict = OrderedDict()
        self._limit = pending

    def add(self, payload: str | bytes | dict) -> list[FrameRecord]:
        out = []
        for record, digest in _parse_payload(payload, self._seen):
            if isinstance(record, _EventPart):
                out.extend(self._add_event(record))
            elif self._seen.add(digest):  # False: the same blob twice in this payload
                out.append(record)
        return out

    def _add_event(self, part: _EventPart) -> list[FrameRecord]:
        key = (part.sensor, part.source_id, part.frame_num)
        entry = self._pending.get(key)
        if entry is not None and entry["count"] != part.object_count:
            # the same sensor, source and frame number with another object count: a new frame (a restarted
            # stream); the old one is done as it is
            out = [self._finish(key, complete=False)]
            entry = None
        else:
            out = []
        if entry is None:
            entry = self._pending[key] = {"count": part.object_count, "objects": {}, "first": part}
        entry["objects"].setdefault(part.object_index, part.objects[0])
        if len(entry["objects"]) == entry["count"]:
            out.append(self._finish(key, complete=True))
        while len(self._pending) > self._limit:
            out.append(self._finish(next(iter(self._pending)), complete=False))
        return out

    def _finish(self, key: tuple, complete: bool) -> FrameRecord:
        entry = self._pending.pop(key)
        first = entry["first"]
        objects = tuple(entry["objects"][k] for k in sorted(entry["objects"]))
        return FrameRecord(path="event", source_id=first.source_id, frame_num=first.frame_num, objects=objects,
                           sensor=first.sensor, timestamp=first.timestamp, complete=complete)

    def flush(self) -> list[FrameRecord]:
        return [self._finish(key, complete=False) for key in list(self._pending)]


def collect_frames(payloads: Iterable[str | bytes | dict]) -> list[FrameRecord]:
    """Every frame in ``payloads`` (:class:`FrameCollector`; unfinished event frames last, ``complete=False``)."""
    collector = FrameCollector()
    out = []
    for payload in payloads:
        out.extend(collector.add(payload))
    return out + collector.flush()
