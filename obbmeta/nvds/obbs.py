"""attach_obbs: oriented boxes into a real NvDsBatchMeta, one call into C per batch (``obbmeta.nvds.reader`` reads
them back).

Per object ``attach_obbs`` writes what nvinfer writes for a detection, plus the OBB as object user meta:

* ``rect_params``: the tight axis-aligned box around the polygon, clipped to the frame (what nvtracker reads);
  in DS 9 rotation mode instead the un-rotated box with ``rotation_angle`` in degrees (nvdsosd draws it rotated;
  nvtracker then tracks the un-rotated box, the trade-off documented in docs/nvds.md);
* ``detector_bbox_info``: the same tight box, unclipped; ``object_id = UNTRACKED_OBJECT_ID``; ``class_id``,
  ``confidence``, ``unique_component_id``; ``obj_label`` (<= 127 bytes, cut on a UTF-8 boundary);
  ``text_params.display_text`` (g_malloc'd; DeepStream frees it); border width and a per-class colour;
* one user meta of type ``nvds_get_user_meta_type("OBBMETA.OBB.V1")`` with the ``obbmeta_obb_v1`` payload and
  C copy / release functions; and ``frame_meta->bInferDone = TRUE``.

A tracker writing objects of its own (no detection behind them) passes ``mark_infer_done=False`` (bInferDone left
as it is) and ``detector_bbox=False`` (``detector_bbox_info`` zeroed, as nvtracker leaves it), and finds the new
objects in :attr:`AttachResult.addresses`.

Objects whose polygon lies fully outside the frame are not written; they are counted in the result.

What nvdsosd reads of these objects (docs/osd.md): ``rect_params`` (inside the frame, border width at most
:data:`MAX_BORDER_WIDTH`, no background), ``text_params`` (display text <= 127 bytes with a font name) and nothing
else. ``osd_limit`` keeps those fields on at most that many objects per frame, the rest written invisible to it.
"""
from __future__ import annotations

import ctypes
import sys
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from .._validators import flag, int_in_range
from ..palette import PALETTE_RGBA
from . import _core
from ._inputs import address_of, batch_of, frame_of, frame_size_of, to_host_once, to_numpy
from ._tables import DEFAULT_PALETTE_TABLE, label_table, palette_table
from .batch import BatchMeta, FrameMeta, entry

# Bits of the payload's flags (obbmeta_obb_v1.flags): kernels/nvds_meta.h, mirrored and checked in layouts.
from .layouts import OBB_PREDICTED, OBB_RECT_CLIPPED, OBB_RECT_ROTATED, OBB_TRACKED  # noqa: F401  (re-exported)

DEFAULT_COMPONENT_ID = 1
DEFAULT_BORDER_WIDTH = 3
# nvll_osd's MAX_BORDER_WIDTH: nvdsosd refuses wider rect borders and lines ("Unsupported border width") and the
# pipeline stops.
MAX_BORDER_WIDTH = 32
# nvdsosd draws what it collects in chunks of this many rects / texts / lines (gst-nvdsosd's MAX_OSD_ELEMS).
NVDSOSD_CHUNK = 1024
# WriteParams.osd_limit is an int64 (kernels/nvds_meta.h).
MAX_OSD_LIMIT = 2**63 - 1




@dataclass(frozen=True)
class AttachResult:
    """What ``attach_obbs`` did: ``written + filtered == number of boxes``; nothing is dropped silently."""
    written: int
    filtered: int
    written_mask: np.ndarray  # (N,) bool, in input order
    per_frame: tuple[int, ...] = ()  # objects written per frame (batch form)
    # (N,) uint64, in input order: the NvDsObjectMeta* written for each box (what read_boxes(frame)['address']
    # lists), 0 where the box was filtered
    addresses: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))

    @property
    def filtered_indices(self) -> np.ndarray:
        """Indices (input order) of the boxes not written because they lie fully outside their frame."""
        return np.flatnonzero(~self.written_mask)


# ---------------------------------------------------------------- input normalisation

def _prepare(boxes: Any, xywhr: Any, scores: Any, labels: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if boxes is not None:
        if xywhr is not None or scores is not None or labels is not None:
            raise TypeError("pass either boxes (OrientedBoxes) or xywhr=/scores=/labels=, not both")
        if not all(hasattr(boxes, a) for a in ("xywhr", "scores", "labels")):
            raise TypeError("boxes must be an OrientedBoxes (with .xywhr, .scores, .labels); for plain arrays use "
                            "xywhr=(N,5), scores=(N,), labels=(N,)")
        xywhr, scores, labels = boxes.xywhr, boxes.scores, boxes.labels
    xywhr, scores, labels = to_host_once(xywhr, scores, labels)
    if xywhr is None:
        raise TypeError("no boxes given: pass an OrientedBoxes or xywhr=(N,5) float32")
    x = to_numpy(xywhr, "xywhr")
    if x.ndim != 2 or x.shape[1] != 5:
        raise ValueError(f"xywhr must have shape (N, 5) = cx, cy, w, h, angle (radians); got {tuple(x.shape)}")
    if x.dtype.kind != "f":
        raise TypeError(f"xywhr must be a floating-point array (float32), got dtype {x.dtype}")
    n = x.shape[0]
    x = _float32("xywhr", x)
    s = np.ones(n, dtype=np.float32) if scores is None else _vector(
        scores, "scores", n, "f", np.float32, "a floating-point array (float32)")
    lab = np.zeros(n, dtype=np.int64) if labels is None else _vector(
        labels, "labels", n, "iu", np.int64, "an integer array (int64 class ids)")
    return x, s, lab


def _vector(value: Any, name: str, n: int, kinds: str, dtype: Any, form: str) -> np.ndarray:
    """A length-n vector of one of the numpy dtype `kinds`, as a contiguous `dtype` array."""
    v = to_numpy(value, name)
    if v.shape != (n,):
        raise ValueError(f"{name} must have shape (N,) = ({n},) to match xywhr; got {tuple(v.shape)}")
    if v.dtype.kind not in kinds:
        raise TypeError(f"{name} must be {form}, got dtype {v.dtype}")
    if dtype is np.float32:
        return _float32(name, v)
    if v.dtype.kind == "u" and v.size and v.max() > np.iinfo(np.int64).max:  # would wrap to a negative id
        i = int(np.argmax(v))
        raise ValueError(f"{name}[{i}] = {int(v[i])}: class ids must be in 0..2**31-1")
    return np.ascontiguousarray(v, dtype=dtype)


def _float32(name: str, a: np.ndarray) -> np.ndarray:
    """``a`` as contiguous float32 (DeepStream's fields are floats); a finite value beyond float32 is an error, not a
    silent inf."""
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.ascontiguousarray(a, dtype=np.float32)
    if a.dtype != np.float32 and out.size:
        with np.errstate(invalid="ignore"):
            over = np.isfinite(a) & ~np.isfinite(out)
        if over.any():
            i = int(np.argwhere(over)[0][0])
            raise ValueError(f"{name}[{i}] = {a[i].tolist()} does not fit float32, which DeepStream's metadata fields "
                             "are")
    return out


def _component_ids(component_id: Any, n: int) -> tuple[int, np.ndarray | None]:
    """``component_id`` as (one value for every object, None) or (0, (N,) int32 values, one per box)."""
    form = "an int in 0..2**31-1, or an (N,) integer array of them (one per box)"
    if not hasattr(component_id, "__len__") or isinstance(component_id, (str, bytes)):
        return int_in_range("component_id", component_id, 0, 2**31 - 1, form), None
    v = to_numpy(component_id, "component_id")
    if v.shape != (n,):
        raise ValueError(f"component_id must be {form}; as an array it must have shape (N,) = ({n},) to match xywhr, "
                         f"got {tuple(v.shape)}")
    if v.size and v.dtype.kind not in "iu":
        raise TypeError(f"component_id must be {form}, got dtype {v.dtype}")
    if v.size and (v.min() < 0 or v.max() > 2**31 - 1):
        i = int(np.argmax((v < 0) | (v > 2**31 - 1)))
        raise ValueError(f"component_id[{i}] = {int(v[i])}: component ids must be in 0..2**31-1")
    return 0, np.ascontiguousarray(v, dtype=np.int32)


def _explain(code: int, bad: int, x: np.ndarray, s: np.ndarray, lab: np.ndarray, n_names: int | None) -> Exception:
    """The C writer's error `code` for entry `bad`, said with what the inputs show about that entry."""
    error = _core.WriterError
    if code == error.INVALID_BOX and bad >= 0:
        row = x[bad]
        if not np.isfinite(row).all():
            return _core.writer_error(code, "writer", "xywhr", bad, row.tolist(),
                                      "is not finite (NaN or inf); boxes must be finite")
        if not np.isfinite(s[bad]):
            return _core.writer_error(code, "writer", "scores", bad, float(s[bad]), "is not finite")
        if row[2] > 0 and row[3] > 0:
            return _core.writer_error(code, "writer", "xywhr", bad, row.tolist(),
                                      ": its bounding box leaves the float32 range, which rect_params / "
                                      "detector_bbox_info (floats) cannot hold")
        return _core.writer_error(code, "writer", "xywhr", bad, row.tolist(),
                                  "has w <= 0 or h <= 0; widths and heights must be > 0")
    if code == error.LABEL and bad >= 0:
        if lab[bad] < 0 or lab[bad] > 2**31 - 1:
            return _core.writer_error(code, "writer", "labels", bad, int(lab[bad]),
                                      ": class ids must be in 0..2**31-1")
        return _core.writer_error(code, "writer", "labels", bad, int(lab[bad]),
                                  f"has no entry in class_names (len {n_names})")
    return _core.writer_error(code, "writer", "rotation_angle" if code == error.LAYOUT else None)


# ---------------------------------------------------------------- attach

def _attach(batch: BatchMeta, frames: list[FrameMeta], sizes: list[tuple[float, float]], counts: list[int],
            x: np.ndarray, s: np.ndarray, lab: np.ndarray, class_names: Sequence[str] | None, component_id: Any,
            border_width: int, palette: Sequence[Sequence[float]], rotation_angle: bool, display_text: bool,
            osd_limit: int | None = None, mark_infer_done: bool = True, detector_bbox: bool = True,
            parents: Any = None, regions: Any = None) -> AttachResult:
    component_id, component_ids = _component_ids(component_id, x.shape[0])
    flag("mark_infer_done", mark_infer_done)
    flag("detector_bbox", detector_bbox)
    int_in_range("border_width", border_width, 0, MAX_BORDER_WIDTH,
                 f"an int in 0..{MAX_BORDER_WIDTH} (pixels; nvdsosd refuses wider borders and stops the pipeline)")
    # The C field is int64: a larger value would wrap (2**64 + 1 to 1) or turn negative.
    limit = -1 if osd_limit is None else int_in_range(
        "osd_limit", osd_limit, 0, MAX_OSD_LIMIT,
        form="None or an int in 0..2**63-1 (objects per frame that keep what nvdsosd draws)")
    core = batch._core
    if rotation_angle and not core.layout.has_rotation_angle:
        raise _core.writer_error(_core.WriterError.LAYOUT, "writer", "rotation_angle", layout=core.layout)
    n = x.shape[0]
    params = _core.WriteParams()
    params.xywhr, params.scores, params.labels, params.n = address_of(x), address_of(s), address_of(lab), n
    n_names = None
    if class_names is not None:
        if isinstance(class_names, (str, bytes)):
            raise TypeError("class_names must be a sequence of str (one per class id), not a single string")
        table, n_names, _keep = label_table(tuple(class_names))
        params.label_text, params.num_labels = table, n_names
    if palette is not PALETTE_RGBA and (isinstance(palette, (str, bytes)) or
                                   any(isinstance(c, (str, bytes)) or not hasattr(c, "__len__") for c in palette)):
        raise TypeError(f"palette must be a sequence of (r, g, b, a) colours in 0..1, got {palette!r}")
    pal, n_colors = (DEFAULT_PALETTE_TABLE if palette is PALETTE_RGBA
                     else palette_table(tuple(tuple(c) for c in palette)))
    params.palette, params.num_colors = pal, n_colors
    params.component_id, params.border_width = component_id, border_width
    if component_ids is not None:
        params.component_ids = address_of(component_ids)
    params.flags = ((_core.WRITE_ROTATION if rotation_angle else 0) | (_core.WRITE_TEXT if display_text else 0)
                    | (_core.WRITE_OSD_LIMIT if limit >= 0 else 0)
                    | (0 if mark_infer_done else _core.WRITE_KEEP_INFER_DONE)
                    | (0 if detector_bbox else _core.WRITE_NO_DETECTOR_BBOX))
    params.osd_limit = max(limit, 0)
    keep_alive = []
    if parents is not None:
        par = np.ascontiguousarray(np.broadcast_to(np.asarray(parents, dtype=np.uint64), (x.shape[0],)))
        keep_alive.append(par)
        params.parents = address_of(par)
    if regions is not None:
        reg = np.ascontiguousarray(regions, dtype=np.float64)
        if reg.shape != (len(frames), 4):
            raise ValueError(f"regions must be one (x1, y1, x2, y2) per frame, shape ({len(frames)}, 4), got "
                             f"{reg.shape}")
        bad = [i for i, (r, (w, h)) in enumerate(zip(reg.tolist(), sizes))
               if not (0 <= r[0] < r[2] <= w and 0 <= r[1] < r[3] <= h)]
        if bad:
            raise ValueError(f"regions[{bad[0]}] = {reg[bad[0]].tolist()} must lie inside its frame "
                             f"{sizes[bad[0]]} with x1 < x2 and y1 < y2")
        keep_alive.append(reg)
        params.regions = address_of(reg)

    # Raw addresses and one struct: numpy's .ctypes.data_as and each extra ctypes argument cost about as much as
    # writing a few objects.
    nf = len(frames)
    mask = np.empty(n, dtype=np.bool_)  # the C side writes 0 / 1 bytes: a valid bool array
    addresses = np.empty(n, dtype=np.uint64)
    params.written_mask, params.addresses = address_of(mask), address_of(addresses)
    if nf == 1:
        params.frame = frames[0].address
        params.frame_width, params.frame_height = sizes[0]
        offsets = (0, n)
    else:
        offsets = [0]
        for c in counts:
            offsets.append(offsets[-1] + c)
        keep = ((ctypes.c_void_p * nf)(*[f.address for f in frames]), (ctypes.c_int64 * (nf + 1))(*offsets),
                (ctypes.c_double * (2 * nf))(*[v for wh in sizes for v in wh]))
        params.frames, params.offsets, params.frame_sizes = (ctypes.addressof(a) for a in keep)
        params.num_frames = nf
    written = entry(core.c, "obbmeta_nvds_attach", batch.address)(core.layout.id, batch.address,
                                                                    ctypes.addressof(params))
    if written < 0:
        raise _explain(written, params.bad_index, x, s, lab, n_names)
    written_mask = mask
    if nf == 1:  # the common case, without a pass over the mask
        per_frame: tuple[int, ...] = (int(written),)
    else:
        per_frame = tuple(int(np.count_nonzero(mask[offsets[i]:offsets[i + 1]])) for i in range(nf))
    return AttachResult(int(written), int(params.n_filtered), written_mask, per_frame, addresses)


def attach_obbs(batch: Any, frame: Any, boxes: Any = None, class_names: Sequence[str] | None = None,
                component_id: Any = DEFAULT_COMPONENT_ID, *, xywhr: Any = None, scores: Any = None,
                labels: Any = None, frame_size: tuple[float, float] | None = None,
                border_width: int = DEFAULT_BORDER_WIDTH, palette: Sequence[Sequence[float]] = PALETTE_RGBA,
                rotation_angle: bool = False, display_text: bool = True, osd_limit: int | None = None,
                mark_infer_done: bool = True, detector_bbox: bool = True, parents: Any = None,
                region: Any = None) -> AttachResult:
    """Write oriented boxes into ``frame`` of ``batch`` as NvDsObjectMeta + OBB user meta, in one C call.

    Args:
        batch: a :class:`BatchMeta` or an ``NvDsBatchMeta*`` int (from pyds / gst-python:
            ``BatchMeta.from_gst_buffer(hash(gst_buffer))``).
        frame: a :class:`FrameMeta` of that batch, or an ``NvDsFrameMeta*`` int (a frame of another batch is
            refused: its objects would be released into the wrong pools).
        boxes: an ``OrientedBoxes`` (``.xywhr`` (N,5) float32 cx, cy, w, h, angle in radians clockwise on screen;
            ``.scores`` (N,); ``.labels`` (N,) int64), CPU or CUDA; or pass ``xywhr=``/``scores=``/``labels=``.
            Coordinates are pixels of the batched surface (nvstreammux output).
        class_names: ``class_names[label]`` becomes ``obj_label`` (cut to 127 bytes); None: the class id.
        component_id: ``unique_component_id`` of every object (what nvinfer's ``gie-unique-id`` would be), or an
            (N,) integer array of them, one per box.
        frame_size: (width, height) for clipping; default: the frame meta's pipeline/source size.
        rotation_angle: DS 9 only: rect_params = the un-rotated box + ``rotation_angle`` degrees (nvdsosd draws
            the OBB; nvtracker then tracks the un-rotated box). Default: rect_params = tight clipped AABB.
        border_width: the border nvdsosd draws, 0..32 pixels (its limit; 0: none).
        display_text: set ``text_params.display_text`` to the label (nvdsosd draws text only when it is set).
        osd_limit: None, or the number of objects of the frame (the first written: decoders give boxes by
            descending score) that keep their border and label; the others are written without what nvdsosd draws
            (border 0 px and transparent, no display text) and are otherwise complete objects (box, OBB payload,
            label). Bounds what nvdsosd draws per frame (docs/osd.md). An int in 0..2**63-1 (the C field is int64;
            a larger value raises ValueError rather than wrap).
        mark_infer_done: set the frame's ``bInferDone`` (nvtracker reads it as "detection ran on this frame");
            False leaves it as it is, for objects a tracker writes on a frame without detection.
        detector_bbox: write the tight box into ``detector_bbox_info``; False writes zeros there, as nvtracker
            leaves it on the objects it makes itself.
        parents: the ``NvDsObjectMeta*`` each object is a child of (one address for all, or (N,); 0: none), as
            a secondary detector's objects are their parent's.
        region: (x1, y1, x2, y2) inside the frame: objects outside it are not written (counted as filtered) and
            ``rect_params`` is clipped to it instead of to the frame (nvinfer's clip-object-outside-roi).

    Returns: :class:`AttachResult` (``written``, ``filtered``, ``written_mask``, ``addresses``).
    """
    b = batch_of(batch)
    f = frame_of(frame, b)
    x, s, lab = _prepare(boxes, xywhr, scores, labels)
    return _attach(b, [f], [frame_size_of(f, frame_size)], [x.shape[0]], x, s, lab, class_names, component_id,
                   border_width, palette, rotation_angle, display_text, osd_limit, mark_infer_done, detector_bbox,
                   parents, None if region is None else [region])


def _join_boxes(detections: Sequence[Any]) -> tuple | None:
    """Every frame's boxes as one (xywhr, scores, labels) host array set and the per-frame counts, when every entry
    is an OrientedBoxes whose tensors can be concatenated (one device, one dtype each): three concatenations and one
    preparation instead of one per frame. None when that does not apply or the joined input is refused, so the
    per-frame path prepares again and its error names the frame."""
    torch = sys.modules.get("torch")
    if torch is None or len(detections) < 2 or not all(
            all(isinstance(getattr(d, a, None), torch.Tensor) for a in ("xywhr", "scores", "labels"))
            for d in detections):
        return None
    try:
        x, s, lab = (torch.cat([getattr(d, a) for d in detections]) for a in ("xywhr", "scores", "labels"))
        x, s, lab = _prepare(None, *to_host_once(x, s, lab))
    except (TypeError, ValueError, RuntimeError):
        return None
    return x, s, lab, [int(d.xywhr.shape[0]) for d in detections]


def attach_obbs_batch(batch: Any, detections: Sequence[Any], frames: Sequence[Any] | None = None,
                      class_names: Sequence[str] | None = None, component_id: Any = DEFAULT_COMPONENT_ID, *,
                      frame_sizes: Sequence[tuple[float, float]] | None = None,
                      border_width: int = DEFAULT_BORDER_WIDTH, palette: Sequence[Sequence[float]] = PALETTE_RGBA,
                      rotation_angle: bool = False, display_text: bool = True, osd_limit: int | None = None,
                      mark_infer_done: bool = True, detector_bbox: bool = True, parents: Any = None,
                      regions: Any = None) -> AttachResult:
    """All frames of a batch in one C call: ``detections[i]`` (an OrientedBoxes, or an (xywhr, scores, labels)
    tuple) goes to ``frames[i]`` (default: ``batch.frames``, i.e. ``frame_meta_list`` order; a frame may be named
    more than once, e.g. for several regions of it). ``written_mask``, ``addresses``, a per-box ``component_id``
    array and ``parents`` are over the concatenation of all detections; ``regions`` has one (x1, y1, x2, y2) per
    entry of ``frames``; ``per_frame`` counts what each entry got. The other arguments as for :func:`attach_obbs`;
    at batch B without a tiler, an ``osd_limit`` of 1024 // B keeps everything nvdsosd draws in one of its chunks
    (docs/osd.md)."""
    b = batch_of(batch)
    fs = b.frames if frames is None else [frame_of(f, b) for f in frames]
    if len(detections) != len(fs):
        raise ValueError(f"detections has {len(detections)} entries but there are {len(fs)} frames")
    if frame_sizes is not None and len(frame_sizes) != len(fs):
        raise ValueError(f"frame_sizes has {len(frame_sizes)} entries but there are {len(fs)} frames")
    sizes = [frame_size_of(f, None if frame_sizes is None else frame_sizes[i]) for i, f in enumerate(fs)]
    joined = _join_boxes(detections)
    if joined is not None:  # one OrientedBoxes per frame (a decoder's output): concatenated, prepared once
        x, s, lab, counts = joined
        return _attach(b, fs, sizes, counts, x, s, lab, class_names, component_id, border_width, palette,
                       rotation_angle, display_text, osd_limit, mark_infer_done, detector_bbox, parents, regions)
    # Unpack every frame's (xywhr, scores, labels) first, so that GPU tensors of all frames come to the host with
    # one synchronisation for the whole batch.
    triples = []
    for i, det in enumerate(detections):
        if isinstance(det, tuple):
            if len(det) not in (1, 3):
                raise ValueError(f"detections[{i}] must be (xywhr,) or (xywhr, scores, labels); got {len(det)} items")
            triples.append(tuple(det) if len(det) == 3 else (det[0], None, None))
        elif all(hasattr(det, a) for a in ("xywhr", "scores", "labels")):
            triples.append((det.xywhr, det.scores, det.labels))
        else:
            raise TypeError(f"detections[{i}] must be an OrientedBoxes or an (xywhr, scores, labels) tuple, got "
                            f"{type(det).__name__}")
    flat = to_host_once(*[v for t in triples for v in t])
    xs, ss, ls, counts = [], [], [], []
    for i in range(len(triples)):
        try:
            x, s, lab = _prepare(None, *flat[3 * i: 3 * i + 3])
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"detections[{i}]: {exc}") from None
        xs.append(x), ss.append(s), ls.append(lab), counts.append(x.shape[0])
    x = np.concatenate(xs) if xs else np.zeros((0, 5), np.float32)
    s = np.concatenate(ss) if ss else np.zeros(0, np.float32)
    lab = np.concatenate(ls) if ls else np.zeros(0, np.int64)
    return _attach(b, fs, sizes, counts, x, s, lab, class_names, component_id, border_width, palette,
                   rotation_angle, display_text, osd_limit, mark_infer_done, detector_bbox, parents, regions)

