"""Secondary results (a class with its probability, or a recognised string) as NVIDIA's classifier metadata,
written where nvinfer's secondary mode (``process-mode=2``) writes them, so that nvdsosd, nvmsgconv and pyds code
reading SGIE results reads these; and read back from any object, whoever wrote them.

Per object with at least one label, :func:`attach_classifications` writes, in one C call for every object of the
batch and under the batch lock (what gst-nvinfer's ``attach_metadata_classifier`` does, DeepStream 9.1):

* one ``NvDsClassifierMeta`` from the batch's pool (``nvds_acquire_classifier_meta_from_pool``) with
  ``unique_component_id`` = the secondary element's gie id and ``classifier_type`` (nvmsgconv's JSON key for the
  label), added with ``nvds_add_classifier_meta_to_object`` (which prepends to ``classifier_meta_list``);
* per label one ``NvDsLabelInfo`` (``nvds_acquire_label_info_meta_from_pool``,
  ``nvds_add_label_info_meta_to_classifier``, which prepends and counts ``num_labels``): ``label_id`` (which
  output of the classifier), ``result_class_id``, ``result_prob``, ``num_classes``, ``result_label`` (at most 127
  bytes, cut on a UTF-8 character boundary, NUL-terminated) and, for a longer label, the whole string in
  ``pResult_label`` (g_malloc'd: NVIDIA's release of the label g_frees it, NVIDIA's copy g_strdups it);
* ``text_params.display_text`` += ``" "`` + the labels joined by spaces (what nvdsosd draws; an object without
  text gets nvinfer's: above the rect's top-left corner, Serif 11, white on black), unless ``display_text=False``;
* ``bInferDone`` on the frames of all given objects.

Objects given without any label get nothing (nvinfer attaches no classifier meta when nothing passed its
threshold). Differences from nvinfer, on purpose: labels without a string are written too (nvinfer writes nothing
for a classifier without a labels file), and strings longer than 127 bytes keep their whole text in
``pResult_label`` (nvinfer cuts them). NVIDIA's copy (``nvds_batch_meta_copy_func``, i.e. every tee / buffer copy)
keeps every label field but reverses both lists and, in DeepStream 9.1, leaves ``classifier_type`` NULL in the
copy; :func:`read_classifications` therefore sorts what it reads.
"""
from __future__ import annotations

import ctypes
import math
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Sequence

import numpy as np

from .. import _pointers
from .._validators import int_in_range, is_int, is_number
from . import _core, layouts
from ._inputs import address_of, batch_of, to_host_once, to_numpy
from ._tables import cut_bytes
from .batch import FrameMeta
from .reader import read_boxes

# nvinfer's gie-unique-id of the first secondary in NVIDIA's samples (the primary is 1).
DEFAULT_COMPONENT_ID = 2
# result_class_id of a recognised string: what NVIDIA's licence-plate parser (deepstream_lpr_app) sets, and what
# code written for it checks (label_id 0, result_class_id 1).
TEXT_CLASS_ID = 1
# classifier_type strings are handed to DeepStream as pointers it never frees and copies by pointer, so each one
# lives as long as the process; a bound keeps a per-call string (an f-string with a counter) from growing memory.
MAX_CLASSIFIER_TYPES = 1024
UINT32_MAX = 2**32 - 1


@dataclass(frozen=True)
class Label:
    """One ``NvDsLabelInfo``: ``class_id`` (``result_class_id``), ``prob`` (``result_prob``), ``label`` (the whole
    string: ``pResult_label`` when set, else ``result_label``), ``label_id`` (which output of the classifier;
    when writing, None means the label's position in its object's list) and ``num_classes``."""
    class_id: int = 0
    prob: float = 1.0
    label: str = ""
    label_id: int | None = None
    num_classes: int = 0


@dataclass(frozen=True)
class Classification:
    """One ``NvDsClassifierMeta`` as read: ``component_id`` (``unique_component_id``), ``classifier_type`` (None when
    NULL), its ``labels`` sorted by ``label_id``, ``num_labels`` as the struct counts them, and ``address`` (the
    ``NvDsClassifierMeta*``, valid while the object is)."""
    component_id: int
    classifier_type: str | None
    labels: tuple[Label, ...]
    num_labels: int
    address: int


@dataclass(frozen=True)
class ClassificationResult:
    """What :func:`attach_classifications` wrote: ``classified`` NvDsClassifierMeta (one per object with a label),
    ``labels`` NvDsLabelInfo, of which ``long_labels`` carry ``pResult_label``; ``skipped`` objects had no label
    (nothing written for them). ``classified + skipped`` is the number of objects given."""
    classified: int
    labels: int
    long_labels: int
    skipped: int


# ---------------------------------------------------------------- objects

def _read_addresses(boxes: Any, name: str) -> np.ndarray:
    """``data["address"]`` of boxes read back by :func:`~obbmeta.nvds.read_boxes` (uint64)."""
    if "address" not in boxes.data:
        raise ValueError(f"{name} is an OrientedBoxes without data['address']: give boxes read back by "
                         "obbmeta.nvds.read_boxes (or their data['address'])")
    return np.ascontiguousarray(boxes.data["address"], dtype=np.uint64)


def _object_address(obj: Any, name: str) -> int:
    """The NvDsObjectMeta* of an int address or a one-row OrientedBoxes read back, checked to point to an object
    meta."""
    from ..boxes import OrientedBoxes

    if isinstance(obj, OrientedBoxes):
        found = _read_addresses(obj, name)
        if found.shape != (1,):
            raise ValueError(f"{name} must be one object: OrientedBoxes of {len(obj)} rows given (index one: "
                             "boxes[i])")
        address = int(found[0])
    elif is_int(obj):
        address = _pointers.pointer(name, obj)
    else:
        raise TypeError(f"{name} must be an NvDsObjectMeta* int or one object read back by obbmeta.nvds.read_boxes "
                        f"(boxes[i]), got {type(obj).__name__}")
    base = _pointers.struct_at(name, address, layouts.BaseMeta)
    if base.meta_type != layouts.NVDS_OBJ_META or not base.batch_meta:
        raise ValueError(f"{name} = 0x{address:x} does not point to an NvDsObjectMeta of a batch (base_meta.meta_type "
                         f"{base.meta_type}, not NVDS_OBJ_META, or no batch_meta)")
    return address


def _objects(objects_or_frame: Any, batch: Any) -> np.ndarray:
    """(K,) uint64 NvDsObjectMeta* addresses: a frame's objects in obj_meta_list order (read_boxes' order), boxes
    read back, one object, or a sequence / array of objects."""
    from ..boxes import OrientedBoxes

    target = objects_or_frame
    if type(target) is np.ndarray and target.dtype == np.uint64 and target.ndim == 1 and target.flags.c_contiguous:
        return target  # read_boxes' addresses as they come: nothing to convert
    if isinstance(target, OrientedBoxes):
        return _read_addresses(target, "objects_or_frame")
    if is_int(target):
        base = _pointers.struct_at("objects_or_frame", _pointers.pointer("objects_or_frame", target),
                                   layouts.BaseMeta)
        if base.meta_type == layouts.NVDS_FRAME_META:
            target = FrameMeta(int(target), batch)
        elif base.meta_type == layouts.NVDS_OBJ_META:
            return np.array([int(target)], dtype=np.uint64)
        else:
            raise ValueError(f"objects_or_frame = 0x{int(target):x} points to neither an NvDsFrameMeta nor an "
                             f"NvDsObjectMeta (base_meta.meta_type {base.meta_type})")
    if isinstance(target, FrameMeta):
        return np.ascontiguousarray(read_boxes(target).data["address"], dtype=np.uint64)
    if isinstance(target, (str, bytes)) or target is None:
        raise TypeError("objects_or_frame must be a FrameMeta, an NvDsFrameMeta* / NvDsObjectMeta* int, "
                        "OrientedBoxes read back by read_boxes, or a sequence / 1-d array of object addresses")
    if isinstance(target, (list, tuple)):
        return np.array([_object_address(o, f"objects_or_frame[{i}]") for i, o in enumerate(target)],
                        dtype=np.uint64).reshape(-1)
    o = to_numpy(target, "objects_or_frame")
    if o.ndim != 1 or (o.size and o.dtype.kind not in "iu"):
        raise ValueError(f"objects_or_frame as an array must be 1-d NvDsObjectMeta* addresses (uint64, e.g. "
                         f"read_boxes(frame)['address']), got shape {tuple(o.shape)} dtype {o.dtype}")
    if o.size and o.dtype.kind == "i" and (o <= 0).any():
        raise ValueError("objects_or_frame holds a NULL or negative address")
    return np.ascontiguousarray(o, dtype=np.uint64)


# ---------------------------------------------------------------- labels as flat arrays

class _Labels:
    """Every label of the call, flat: per object a count, per label its fields and its text's place in a blob."""

    def __init__(self, n_objects: int):
        self.counts = np.zeros(n_objects, dtype=np.int64)
        self.label_ids: Any = []
        self.class_ids: Any = []
        self.probs: Any = []
        self.num_classes: Any = []
        self.texts: list[bytes] = []
        self.cuts: list[int] = []

    def add(self, obj: int, label_id: int, class_id: int, prob: float, num_classes: int, text: str,
            name: str) -> None:
        raw = _encode(text, name)
        self.counts[obj] += 1
        self.label_ids.append(label_id)
        self.class_ids.append(class_id)
        self.probs.append(prob)
        self.num_classes.append(num_classes)
        self.texts.append(raw)
        self.cuts.append(len(cut_bytes(raw)))

    def arrays(self) -> dict[str, np.ndarray]:
        lengths = np.array([len(t) for t in self.texts], dtype=np.int64)
        starts = _starts(lengths)
        return dict(counts=self.counts, label_ids=np.array(self.label_ids, np.uint32),
                    class_ids=np.array(self.class_ids, np.uint32), probs=np.array(self.probs, np.float32),
                    num_classes=np.array(self.num_classes, np.uint32), text=b"".join(self.texts) + b"\0",
                    text_start=starts, text_len=lengths, cut_len=np.array(self.cuts, np.int32))


def _starts(lengths: np.ndarray) -> np.ndarray:
    """Where each of the concatenated texts of these lengths starts (int64)."""
    return np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64) if lengths.size else lengths


def _encode(text: Any, name: str) -> bytes:
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a str, got {type(text).__name__}")
    if "\x00" in text:
        raise ValueError(f"{name} = {text!r} contains a NUL character (result_label is a C string)")
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"{name} = {text!r} cannot be encoded as UTF-8: {exc.reason}") from None


def _uint32(value: Any, name: str, form: str) -> int:
    return int_in_range(name, value, 0, UINT32_MAX, form, numpy_ints=True)


def _prob(value: Any, name: str) -> float:
    if not is_number(value, numpy_numbers=True) or not math.isfinite(float(value)):
        raise ValueError(f"{name} must be a finite number (result_prob), got {value!r}")
    with np.errstate(over="ignore"):
        p = float(np.float32(value))
    if not math.isfinite(p):
        raise ValueError(f"{name} = {value!r} does not fit float32 (result_prob)")
    return p


def _one_label(entry: Any, name: str) -> Label:
    """A results entry item -> Label (str: a recognised text; (class_id, prob[, label]); Label)."""
    if isinstance(entry, Label):
        return entry
    if isinstance(entry, str):
        return Label(TEXT_CLASS_ID, 1.0, entry)
    if isinstance(entry, tuple) and len(entry) in (2, 3) and is_int(entry[0], numpy_ints=True):
        return Label(entry[0], entry[1], entry[2] if len(entry) == 3 else "")
    raise TypeError(f"{name} must be None, a str (recognised text), a Label, a (class_id, prob[, label]) tuple, or a "
                    f"list of those; got {entry!r}")


def _from_results(results: Any, n: int) -> _Labels:
    if isinstance(results, (str, bytes)) or not isinstance(results, Sequence):
        raise TypeError(f"results must be a sequence with one entry per object, got {type(results).__name__}")
    if len(results) != n:
        raise ValueError(f"results has {len(results)} entries but there are {n} objects")
    out = _Labels(n)
    for i, entry in enumerate(results):
        if entry is None:
            continue
        items = entry if isinstance(entry, list) else [entry]
        for k, item in enumerate(items):
            name = f"results[{i}]" if item is entry else f"results[{i}][{k}]"
            lab = _one_label(item, name)
            label_id = k if lab.label_id is None else lab.label_id
            out.add(i, _uint32(label_id, f"{name}.label_id", "an int in 0..2**32-1"),
                    _uint32(lab.class_id, f"{name}.class_id", "an int in 0..2**32-1 (result_class_id)"),
                    _prob(lab.prob, f"{name}.prob"),
                    _uint32(lab.num_classes, f"{name}.num_classes", "an int in 0..2**32-1"), lab.label,
                    f"{name}.label")
    return out


def _from_texts(texts: Any, probs: Any, n: int) -> _Labels:
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Sequence):
        raise TypeError(f"texts must be a sequence of str (or None), one per object, got {type(texts).__name__}")
    if len(texts) != n:
        raise ValueError(f"texts has {len(texts)} entries but there are {n} objects")
    p = _prob_array(probs, (n,), "probs", "(K,) to match texts")
    out = _Labels(n)
    for i, text in enumerate(texts):
        if text is not None:
            out.add(i, 0, TEXT_CLASS_ID, float(p[i]), 0, text, f"texts[{i}]")
    return out


def _prob_array(probs: Any, shape: tuple[int, ...], name: str, form: str) -> np.ndarray:
    if probs is None:
        return np.ones(shape, dtype=np.float32)
    a = to_numpy(probs, name)
    if a.shape != shape:
        raise ValueError(f"{name} must have shape {shape} {form}; got {tuple(a.shape)}")
    if a.size and a.dtype.kind not in "fiu":
        raise TypeError(f"{name} must be a floating-point array, got dtype {a.dtype}")
    with np.errstate(over="ignore", invalid="ignore"):
        p = np.ascontiguousarray(a, dtype=np.float32)
    bad = ~np.isfinite(p)
    if bad.any():
        idx = tuple(int(v) for v in np.argwhere(bad)[0])
        raise ValueError(f"{name}{list(idx)} = {a[idx]!r} is not finite or does not fit float32 (result_prob)")
    return p


_NO_TEXT = ctypes.create_string_buffer(1)  # the text of labels without a string (never written to)


@lru_cache(maxsize=64)
def _name_table(heads: tuple[tuple[str, ...], ...]) -> dict[str, np.ndarray]:
    """Class names of every head as one blob with per-name start, length and result_label cut, and each head's
    first row."""
    texts, cuts = [], []
    for h, names in enumerate(heads):
        for c, name in enumerate(names):
            raw = _encode(name, f"class_names[{h}][{c}]" if len(heads) > 1 else f"class_names[{c}]")
            texts.append(raw)
            cuts.append(len(cut_bytes(raw)))
    lengths = np.array([len(t) for t in texts], dtype=np.int64)
    starts = _starts(lengths)
    first = np.concatenate([[0], np.cumsum([len(n) for n in heads])[:-1]]).astype(np.int64)
    blob = b"".join(texts) + b"\0"
    return dict(text=ctypes.create_string_buffer(blob, len(blob)), start=starts, length=lengths,
                cut=np.array(cuts, np.int32), first=first, sizes=np.array([len(n) for n in heads], np.int64))


def _heads(class_names: Any, n_heads: int) -> tuple[tuple[str, ...], ...]:
    if isinstance(class_names, (str, bytes)) or not isinstance(class_names, Sequence):
        raise TypeError("class_names must be a sequence of str (one head) or one sequence of str per head")
    if all(isinstance(v, str) for v in class_names):
        if n_heads != 1:
            raise ValueError(f"class_ids has {n_heads} heads (columns): class_names must then hold one sequence of "
                             "names per head")
        return (tuple(class_names),)
    if len(class_names) != n_heads:
        raise ValueError(f"class_names has {len(class_names)} heads but class_ids has {n_heads} columns")
    out = []
    for h, names in enumerate(class_names):
        if isinstance(names, (str, bytes)) or not isinstance(names, Sequence):
            raise TypeError(f"class_names[{h}] must be a sequence of str")
        for c, v in enumerate(names):
            if not isinstance(v, str):
                raise TypeError(f"class_names[{h}][{c}] must be a str, got {type(v).__name__}")
        out.append(tuple(names))
    return tuple(out)


def _from_class_ids(class_ids: Any, probs: Any, class_names: Any, n: int) -> dict[str, np.ndarray]:
    """(K,) / (K, H) class ids (-1: no label from that head) -> flat label arrays, vectorised (a handful of NumPy
    calls whatever K: one call per batch stays cheap for a few objects too)."""
    (class_ids, probs) = to_host_once(class_ids, probs)
    ci = to_numpy(class_ids, "class_ids")
    if ci.ndim not in (1, 2) or ci.shape[0] != n:
        raise ValueError(f"class_ids must have shape ({n},) or ({n}, H) (one column per classifier output) to match "
                         f"the objects; got {tuple(ci.shape)}")
    if ci.size and ci.dtype.kind not in "iu":
        raise TypeError(f"class_ids must be an integer array (-1: no label), got dtype {ci.dtype}")
    p = _prob_array(probs, tuple(ci.shape), "probs", "to match class_ids")
    one_d = ci.ndim == 1
    ci2 = ci.reshape(n, 1) if one_d else ci
    n_heads = ci2.shape[1]

    def where(row: int, head: int) -> str:
        return f"[{row}]" if one_d else f"[{row}, {head}]"

    lo = hi = 0
    if ci2.size:
        lo, hi = int(ci2.min()), int(ci2.max())  # before int64: a uint64 beyond 2**63 would wrap
    if lo < -1 or hi > UINT32_MAX:
        bad = (ci2.astype(object) > UINT32_MAX) | (ci2.astype(object) < -1)
        r, h = (int(v) for v in np.argwhere(bad)[0])
        raise ValueError(f"class_ids{where(r, h)} = {int(ci2[r, h])}: class ids must be in 0..2**32-1, or -1 for no "
                         "label")
    ci2 = ci2.astype(np.int64, copy=False)
    p2 = p.reshape(ci2.shape)
    if lo >= 0:  # every output of every object gave a label
        rows = np.repeat(np.arange(n, dtype=np.int64), n_heads)
        heads = np.tile(np.arange(n_heads, dtype=np.int64), n)
        cls, prob, counts = ci2.reshape(-1), p2.reshape(-1), np.full(n, n_heads, dtype=np.int64)
    else:
        valid = ci2 >= 0
        rows, heads = np.nonzero(valid)  # row-major: object by object, output by output
        cls, prob, counts = ci2[rows, heads], p2[rows, heads], valid.sum(axis=1)
    if class_names is None:
        m = cls.size
        text, start, length, cut = _NO_TEXT, np.zeros(m, np.int64), np.zeros(m, np.int64), np.zeros(m, np.int32)
    else:
        table = _name_table(_heads(class_names, n_heads))
        sizes = table["sizes"]
        if cls.size and (hi >= sizes.min()):
            out_of_range = cls >= sizes[heads]
            if out_of_range.any():
                k = int(np.argmax(out_of_range))
                head = "" if n_heads == 1 else f"[{heads[k]}]"
                raise ValueError(f"class_ids{where(int(rows[k]), int(heads[k]))} = {int(cls[k])} has no entry in "
                                 f"class_names{head} (len {int(sizes[heads[k]])})")
        row = cls if n_heads == 1 else table["first"][heads] + cls
        text, start, length, cut = table["text"], table["start"][row], table["length"][row], table["cut"][row]
    return dict(counts=counts.astype(np.int64, copy=False), label_ids=heads.astype(np.uint32),
                class_ids=cls.astype(np.uint32), probs=np.ascontiguousarray(prob, np.float32),
                num_classes=np.zeros(cls.size, np.uint32), text=text, text_start=start, text_len=length,
                cut_len=cut)


# ---------------------------------------------------------------- classifier_type

_types_lock = threading.Lock()
_TYPES: dict[str, ctypes.Array] = {}


def _classifier_type_address(value: Any) -> int | None:
    """The address of a process-lifetime copy of ``value`` (None for None)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"classifier_type must be a str (nvmsgconv's key for the label, e.g. 'vehicletype') or "
                        f"None, got {type(value).__name__}")
    buf = _TYPES.get(value)
    if buf is not None:
        return ctypes.addressof(buf)
    raw = _encode(value, "classifier_type")
    with _types_lock:
        buf = _TYPES.get(value)
        if buf is None:
            if len(_TYPES) >= MAX_CLASSIFIER_TYPES:
                raise ValueError(f"more than {MAX_CLASSIFIER_TYPES} distinct classifier_type strings: each lives as "
                                 "long as the process (DeepStream copies the pointer and never frees it); use one "
                                 "fixed string per classifier")
            buf = ctypes.create_string_buffer(raw)
            _TYPES[value] = buf
        return ctypes.addressof(buf)


# ---------------------------------------------------------------- attach

def attach_classifications(batch: Any, objects_or_frame: Any, results: Any = None,
                           component_id: int = DEFAULT_COMPONENT_ID, classifier_type: str | None = None, *,
                           class_ids: Any = None, probs: Any = None, class_names: Sequence[Any] | None = None,
                           texts: Sequence[str | None] | None = None,
                           display_text: bool = True) -> ClassificationResult:
    """Write secondary results into the objects' ``NvDsClassifierMeta`` / ``NvDsLabelInfo``, in one C call.

    Args:
        batch: a :class:`BatchMeta` or an ``NvDsBatchMeta*`` int.
        objects_or_frame: the K objects: a :class:`FrameMeta` (all its objects, in ``read_boxes`` order), an
            ``NvDsFrameMeta*`` / ``NvDsObjectMeta*`` int, :class:`~obbmeta.OrientedBoxes` read back by
            ``read_boxes`` / ``read_boxes_batch`` (their ``data["address"]``: a subset, several frames), a
            sequence of ints or a 1-d uint64 array of addresses, of objects in frames of ``batch``, each once.
        results: one entry per object: None (no result), a str (a recognised text: ``label_id`` 0,
            ``result_class_id`` :data:`TEXT_CLASS_ID`, ``prob`` 1), a :class:`Label`, a ``(class_id, prob[,
            label])`` tuple, or a list of those (several outputs; ``label_id`` defaults to the position).
        component_id: ``unique_component_id`` (the secondary element's ``gie-unique-id``).
        classifier_type: ``classifier_type`` (nvinfer's ``classifier-type``; nvmsgconv's JSON key), or None.
        class_ids: instead of ``results``, (K,) or (K, H) integer class ids, one column per classifier output
            (``label_id`` = the column), -1 where an output gave no label; with ``probs`` (same shape, default 1)
            and ``class_names`` (one sequence of names, or one per output) for ``result_label``.
        texts: instead of ``results``, K recognised strings (None: nothing read), with ``probs`` (K,).
        display_text: append the labels to ``text_params.display_text`` as nvinfer does (for nvdsosd).

    Returns: :class:`ClassificationResult`.
    """
    core = _core.get_classifier()
    b = batch_of(batch)
    int_in_range("component_id", component_id, 0, 2**31 - 1, "an int in 0..2**31-1 (the gie-unique-id)")
    type_address = _classifier_type_address(classifier_type)
    objs = _objects(objects_or_frame, b)
    n = objs.shape[0]
    given = [name for name, v in (("results", results), ("class_ids", class_ids), ("texts", texts)) if v is not None]
    if len(given) != 1:
        raise TypeError("pass exactly one of results=, class_ids= or texts=" + (f" (got {', '.join(given)})"
                                                                               if given else ""))
    if results is not None or texts is not None:
        if class_names is not None:
            raise TypeError("class_names goes with class_ids=; with results= / texts= the labels carry their text")
        if results is not None and probs is not None:
            raise TypeError("probs goes with class_ids= or texts=; with results= each label carries its prob")
        flat = (_from_results(results, n) if results is not None else _from_texts(texts, probs, n)).arrays()
    else:
        flat = _from_class_ids(class_ids, probs, class_names, n)
    return _write(core.c, core.layout.id, b.address, objs, flat, component_id, type_address, display_text)


def _write(c: ctypes.CDLL, layout_id: int, batch: int, objs: np.ndarray, flat: dict, component_id: int,
           type_address: int | None, display_text: bool) -> ClassificationResult:
    """The C call for prepared labels (``flat``: counts per object and flat label columns)."""
    offsets = np.concatenate([[0], np.cumsum(flat["counts"])]).astype(np.int64)
    text = flat["text"]
    text_buf = ctypes.create_string_buffer(text, len(text)) if isinstance(text, bytes) else text
    p = _core.ClassifyParams()
    columns = {k: np.ascontiguousarray(flat[k]) for k in ("label_ids", "class_ids", "probs", "num_classes",
                                                          "text_start", "text_len", "cut_len")}
    keep = [objs, offsets, text_buf, columns]  # alive until the C call returns
    p.objects, p.n, p.label_offsets = address_of(objs), objs.shape[0], address_of(offsets)
    for field, column in columns.items():
        setattr(p, field, address_of(column))
    p.text = ctypes.addressof(text_buf)
    p.num_labels = int(offsets[-1])
    p.component_id, p.classifier_type = component_id, type_address
    p.flags = _core.CLASSIFY_TEXT if display_text else 0
    rc = c.obbmeta_nvds_classify(layout_id, batch, ctypes.addressof(p))
    del keep
    if rc < 0:
        i = int(p.bad_index)
        detail = None  # ARGUMENT also names an object whose labels are malformed: only a repeat is said as such
        if rc == _core.WriterError.ARGUMENT and i >= 0 and int(objs[i]) in set(objs[:i].tolist()):
            detail = "is listed twice"
        elif rc == _core.WriterError.FOREIGN_FRAME:
            detail = "is not an object meta in a frame of this batch (objects go back to their own batch's pools)"
        raise _core.writer_error(rc, "classifier writer", "objects_or_frame", i,
                                 f"0x{int(objs[i]):x}" if i >= 0 else None, detail)
    n = objs.shape[0]
    return ClassificationResult(int(p.classifier_metas), int(p.labels), int(p.long_labels),
                                n - int(p.classifier_metas))


# ---------------------------------------------------------------- read

def _string(address: int | None) -> str | None:
    return None if not address else ctypes.string_at(address).decode("utf-8", "replace")


def read_classifications(obj: Any) -> list[Classification]:
    """Every ``NvDsClassifierMeta`` of one object, whoever wrote it (nvinfer, nvinferserver, obbmeta, a probe):
    sorted by ``component_id`` with each one's labels sorted by ``label_id`` (NVIDIA's copy reverses both lists,
    so their order says nothing). ``obj``: an ``NvDsObjectMeta*`` int or one object read back by
    :func:`~obbmeta.nvds.read_boxes` (``boxes[i]``). Read under the lock of the object's batch."""
    core = _core.get_classifier()
    address = _object_address(obj, "obj")
    batch = layouts.BaseMeta.from_address(address).batch_meta
    head = ctypes.POINTER(layouts.GList).from_address(
        address + core.layout.object_meta.classifier_meta_list.offset)
    meta = core.libs.meta
    out = []
    meta.nvds_acquire_meta_lock(batch)
    try:
        node = head
        while node:
            cm = layouts.ClassifierMeta.from_address(node.contents.data)
            labels = []
            lnode = cm.label_info_list
            while lnode:
                li = layouts.LabelInfo.from_address(lnode.contents.data)
                text = _string(li.pResult_label)
                if text is None:
                    text = li.result_label.decode("utf-8", "replace")  # c_char array: up to the NUL, at most 128
                labels.append(Label(int(li.result_class_id), float(li.result_prob), text, int(li.label_id),
                                    int(li.num_classes)))
                lnode = lnode.contents.next
            labels.sort(key=lambda lab: lab.label_id)
            out.append(Classification(int(cm.unique_component_id), _string(cm.classifier_type), tuple(labels),
                                      int(cm.num_labels), int(node.contents.data)))
            node = node.contents.next
    finally:
        meta.nvds_release_meta_lock(batch)
    out.sort(key=lambda c: c.component_id)
    return out
