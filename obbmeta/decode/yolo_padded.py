"""YOLO-OBB decode with fixed-size results: on CUDA one fused pass and no host synchronisation.

:func:`yolo_obb_padded` returns (B, max_det, ...) tables and per-image counts on the head's device, so a whole
post-processing step (model, decode, NMS, letterbox inverse) can be captured in a CUDA graph or traced by
``torch.compile(fullgraph=True)``; :meth:`PaddedDetections.unpad` turns them into :func:`~obbmeta.decode.yolo_obb`'s
list of :class:`OrientedBoxes` with one device-to-host read. On the CPU the same operator runs yolo_obb's own code
and pads it, so both devices give the same detections, with two documented differences: at the top-``max_nms`` cut
CUDA sends equal scores to the lower anchor (the CPU's ``topk`` leaves that order open), and CUDA undoes the
letterbox in double (boxes agree to float32 rounding).

On CUDA (kernels/obbmeta_decode.cuh): one kernel reads the head once (best class or every class above ``conf``, the
class filter, a sort key per candidate); a radix sort orders candidates by (image, class, descending score) — with
a per-image top-``max_nms`` first when an image could have more candidates than that; the rotated NMS core
(kernels/obbmeta_nms_core.cuh) suppresses within each (image, class) group; a last kernel ranks each image's kept
boxes by descending score, keeps ``max_det`` and applies the letterbox inverse while writing them. Its status flags
and their errors are :mod:`obbmeta.ops.status`'s.
"""
from __future__ import annotations

import sys
from functools import lru_cache
from typing import List, Mapping, NamedTuple, Optional, Sequence, Tuple

import torch

from .._cuda_lib import cuda_library, launch, sizes
from .._native import contiguous_as
from .._native import ptr as _ptr
from .._validators import int_in_range, number_in_range, threshold
from ..boxes import OrientedBoxes
from ..frames.letterbox import Letterbox
from ..geometry import STATUS_BOXES, STATUS_OVERFLOW, STATUS_SCORES
from ..ops import registry
from ..ops import status as ops_status
from ..ops.status import POOL_FIXED, pool_for, remember_pool
from ._head import (
    CANDIDATE_NAMES,
    END_TO_END,
    apply_class_conf,
    apply_class_conf_e2e,
    check_class_conf,
    check_class_iou,
    check_head,
    class_filter,
    conf_table,
    decode_raw,
    e2e_flags,
    iou_table,
    most_per_image,
)

# The padded tables hold B * max_det rows (32 bytes each: box, score, label): beyond this many rows in all (512 MiB)
# a max_det is refused up front instead of being allocated (a max_det of 10**9 would ask for 32 GB).
MAX_TABLE_ROWS = 2**24
ROW_BYTES = 5 * 4 + 4 + 8

# What to do about overlaps that outgrew the pool: yolo_obb_padded's pool is overlap_words; yolo_obb sizes its own
# (exactly, on a second run), so only a pool beyond 2**31 - 1 entries stops it.
LARGER_POOL = "pass a larger overlap_words (at that limit: decode fewer images per call)"
FEWER_IMAGES = "decode fewer images per call"


class PaddedDetections(NamedTuple):
    """Fixed-size decode results on the head's device.

    ``boxes`` (B, max_det, 5) float32 [cx, cy, w, h, angle], ``scores`` (B, max_det) float32, ``labels`` (B, max_det)
    int64: row ``i < counts[b]`` of image ``b`` is its i-th detection by descending score, later rows are 0.
    ``counts`` (B,) int64: detections per image, all -1 when ``status`` is not 0. ``status`` 0-d int64: 0, or the flags
    of :mod:`obbmeta.ops.status` — 1: a candidate box holds NaN / inf, 2: a candidate score is inf (yolo_obb raises
    ValueError for both), 4: the overlaps outgrew ``overlap_words``, 8 (end-to-end heads): a class above conf is not
    an id (NaN, inf, negative).
    """

    boxes: torch.Tensor
    scores: torch.Tensor
    labels: torch.Tensor
    counts: torch.Tensor
    status: torch.Tensor

    def unpad(self) -> List[OrientedBoxes]:
        """One :class:`OrientedBoxes` per image (views of these tables), after one device-to-host read of the
        counts; raises ValueError / RuntimeError for a non-zero status, and ValueError when the tables do not fit
        one another (shapes) or a count does not fit the tables (status 0 with a count outside 0..max_det)."""
        self._check_shapes()
        *counts, status = self.counts_and_status().tolist()
        return self._split(counts, status)

    def counts_and_status(self) -> torch.Tensor:
        """The counts and then the status as one (B + 1,) int64 tensor on the tables' device: what one read (or one
        copy to the host) takes."""
        return torch.cat((self.counts.to(torch.int64), self.status.reshape(1).to(torch.int64)))

    def _check_shapes(self) -> None:
        for name in self._fields:
            if not isinstance(getattr(self, name), torch.Tensor):
                raise TypeError(f"PaddedDetections.{name} must be a torch.Tensor, got "
                                f"{type(getattr(self, name)).__name__}")
        boxes = self.boxes
        if boxes.dim() != 3 or boxes.shape[2] != 5:
            raise ValueError(f"PaddedDetections.boxes must have shape (B, max_det, 5), got {tuple(boxes.shape)}")
        b, rows = boxes.shape[:2]
        for name in ("scores", "labels"):
            t = getattr(self, name)
            if tuple(t.shape) != (b, rows):
                raise ValueError(f"PaddedDetections.{name} must have shape (B, max_det) = ({b}, {rows}) to match "
                                 f"boxes {tuple(boxes.shape)}, got {tuple(t.shape)}")
        if tuple(self.counts.shape) != (b,):
            raise ValueError(f"PaddedDetections.counts must have shape (B,) = ({b},) to match boxes "
                             f"{tuple(boxes.shape)}, got {tuple(self.counts.shape)}")
        if self.status.numel() != 1:
            raise ValueError(f"PaddedDetections.status must hold one value (0-d), got shape {tuple(self.status.shape)}")
        for name in ("counts", "status"):
            t = getattr(self, name)
            if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
                raise TypeError(f"PaddedDetections.{name} must be an integer tensor (int64), got {t.dtype}")

    def _split(self, counts: List[int], status: int, trusted: bool = False,
               advice: str = LARGER_POOL) -> List[OrientedBoxes]:
        if status:
            raise padded_status_error(status, advice)
        if not trusted:
            rows = self.boxes.shape[1]
            for i, c in enumerate(counts):
                if c < 0:
                    raise ValueError(f"PaddedDetections.counts[{i}] = {c} with status 0: counts are -1 only with a "
                                     f"non-zero status, else in 0..max_det = 0..{rows}")
                if c > rows:
                    raise ValueError(f"PaddedDetections.counts[{i}] = {c} but the tables hold max_det = {rows} rows "
                                     "per image")
        # trusted: the tables come straight from the kernels (float32 / int64 by construction), so views of them need
        # no re-checking; a PaddedDetections built by a caller is checked as any OrientedBoxes is.
        make = OrientedBoxes._checked_elsewhere if trusted else OrientedBoxes
        tables = (self.boxes, self.scores, self.labels)
        if all(t.is_contiguous() for t in tables):
            # One split_with_sizes a table gives every image's rows (each image's rows, then its padding): a slice
            # costs a dispatcher call a table and image, 48 calls and about 0.2 ms at batch 16 on the H200 host.
            rows = self.boxes.shape[1]
            sizes = [part for c in counts for part in (c, rows - c)]
            return [make(x, s, lab) for x, s, lab in zip(*(t.view(-1, *t.shape[2:]).split_with_sizes(sizes)[::2]
                                                           for t in tables))]
        return [make(x[:c], s[:c], lab[:c]) for x, s, lab, c in
                zip(self.boxes.unbind(0), self.scores.unbind(0), self.labels.unbind(0), counts)]


def check_table_rows(batch: int, max_det: int, most: int | None = None) -> None:
    """Refuse (B, max_det) tables beyond :data:`MAX_TABLE_ROWS` rows before anything is allocated."""
    rows = batch * max_det
    if rows > MAX_TABLE_ROWS:
        hint = "" if most is None else f"; an image of this head gives at most {most} detections"
        raise ValueError(f"max_det = {max_det} asks for padded tables of {batch} x {max_det} rows "
                         f"({rows * ROW_BYTES / 2**30:.1f} GiB); yolo_obb_padded holds at most {MAX_TABLE_ROWS} rows "
                         f"in all ({MAX_TABLE_ROWS * ROW_BYTES // 2**20} MiB): lower max_det or the batch{hint}")


def fused_available(output: torch.Tensor, multi_label: bool, agnostic: bool) -> bool:
    """Whether the fused CUDA decode takes this raw head: the CUDA kernels are built and the (image, class) groups
    fit its 31-bit sort key (B * nc below about 2^31, e.g. any B <= 65535 with nc <= 15)."""
    b, c, n = output.shape
    nc = c - 5
    label_bits = 0 if agnostic else int(nc).bit_length()
    per_image = n * nc if multi_label else n
    return (cuda_library() is not None and int(b).bit_length() + label_bits <= 31 and b * per_image < 2**31
            and b >= 1)


def yolo_obb_padded(
    output: torch.Tensor,
    conf: float = 0.25,
    iou: float = 0.7,
    max_det: int = 300,
    classes: Optional[Sequence[int]] = None,
    multi_label: bool = False,
    letterbox: Optional[Letterbox] = None,
    *,
    agnostic: bool = False,
    max_nms: int = 30000,
    overlap_words: Optional[int] = None,
    format: Optional[str] = None,
    class_iou: Optional[Mapping[int, float]] = None,
    class_conf: Optional[Mapping[int, float]] = None,
) -> PaddedDetections:
    """:func:`~obbmeta.decode.yolo_obb` with fixed-size results and, on CUDA, no host synchronisation
    (CUDA-graph capturable for fixed shapes; runs on the current stream).

    The head's format is told apart by shape exactly as yolo_obb does (or forced with ``format``). A raw head
    (B, 4+nc+1, N) gets the same filter, top-``max_nms``, greedy rotated NMS (per class unless ``agnostic``),
    ``max_det`` and letterbox inverse as yolo_obb, with two documented tie rules: a class-score tie goes to the lower
    class, and at the top-``max_nms`` cut equal scores go to the lower anchor. An end-to-end head (B, K, 7) gets
    yolo_obb's ``conf`` / ``classes`` filter and its first ``max_det`` rows, in row order, with plain tensor ops on
    either device (``status`` always 0; ``iou``, ``class_iou``, ``multi_label``, ``agnostic``, ``max_nms`` and
    ``overlap_words`` do not apply to it). ``class_iou``: per-class NMS thresholds as :func:`~obbmeta.decode.yolo_obb`
    takes them, served by the same fused pass (an (nc,) table the kernels read per class group); ``class_conf``:
    per-class score thresholds as yolo_obb takes them (either layout; on a raw head an (nc,) table the kernels read
    per class score, no copy of the head).

    The tables hold B * ``max_det`` rows (32 bytes each); more than :data:`MAX_TABLE_ROWS` (2**24) is refused with a
    ValueError before anything is allocated. Memory on CUDA besides them: linear in B * N, plus room for
    ``overlap_words`` candidate words (a candidate and a chunk of 64 later candidates of its class whose bounding boxes
    meet it; 32 bytes each). None: 4 194 304 (128 MiB), or the worst case for these shapes when that is less. Data
    that needs more sets ``status`` to 4 (counts -1) instead of losing detections.
    """
    fmt, conf, iou, classes = check_head(output, conf, iou, max_det, classes, letterbox, max_nms, format)
    class_iou = check_class_iou(class_iou, agnostic)
    class_conf = check_class_conf(class_conf)
    check_table_rows(output.shape[0], max_det, most_per_image(output.shape, fmt, multi_label, max_nms))
    if fmt == END_TO_END:
        if class_conf:
            output, conf = apply_class_conf_e2e(output, class_conf, conf)
        return _e2e_padded(output, conf, max_det, classes, letterbox)
    pool = -1 if overlap_words is None else int_in_range("overlap_words", overlap_words, 0, form="None or an int >= 0")
    if output.is_cuda and not fused_available(output, multi_label, agnostic):
        raise ValueError(f"yolo_obb_padded needs B * nc to fit 31 bits of its sort key and the CUDA kernels built; "
                         f"got output of shape {tuple(output.shape)} (use yolo_obb)")
    lb = _kernel_letterbox(letterbox)
    allowed = _allowed(classes, output.shape[1] - 5, output.device)
    table = iou_table(class_iou, iou, output.shape[1] - 5, output.device)
    confs = conf_table(class_conf, conf, output.shape[1] - 5, output.device)
    result = PaddedDetections(*yolo_obb_padded_op(output, conf, iou, max_det, allowed, multi_label, agnostic, max_nms,
                                                  lb.scale, lb.pad_x, lb.pad_y, pool, table, confs)[:5])
    if letterbox is None or lb is letterbox:
        return result
    # A letterbox scaled differently per axis: the kernels undo one scale only, so the kept rows are mapped here (no
    # host sync: the rows past each image's count stay 0).
    valid = torch.arange(result.boxes.shape[1], device=result.boxes.device) < result.counts.unsqueeze(1)
    boxes = torch.where(valid.unsqueeze(-1), letterbox.to_source(result.boxes), result.boxes)
    return result._replace(boxes=boxes)


def _kernel_letterbox(letterbox: Optional[Letterbox]) -> Letterbox:
    """The letterbox the fused kernels undo themselves: a uniform one, or none (identity) when the two axes were
    scaled differently (Letterbox.fit's real per-axis scales, nvinfer's stretch), which is then undone afterwards."""
    return letterbox if letterbox is not None and letterbox.is_uniform else Letterbox(1.0)


def _e2e_padded(output, conf, max_det, classes, letterbox) -> PaddedDetections:
    """An end-to-end head (B, K, 7) = cx, cy, w, h, conf, cls, angle into the tables, as yolo_obb decodes it (the rows
    above ``conf`` of the wanted classes, the first ``max_det`` in row order), without a host sync: each kept row goes
    to its rank among the kept rows of its image; the others go to a spare row that is cut off."""
    x = output.float()
    b, k, _ = x.shape
    labels = x[..., 5].round().to(torch.int64)
    keep = x[..., 4] > conf
    if classes is not None:
        keep &= class_filter(labels, classes)
    rank = keep.to(torch.int64).cumsum(dim=1) - 1
    take = keep & (rank < max_det)
    slot = torch.where(take, rank, torch.full_like(rank, max_det))
    img = torch.arange(b, device=x.device).unsqueeze(1).expand(b, k)
    xywhr = torch.cat((x[..., :4], x[..., 6:7]), dim=-1)
    if letterbox is not None:
        xywhr = letterbox.to_source(xywhr)
    boxes = x.new_zeros((b, max_det + 1, 5))
    scores = x.new_zeros((b, max_det + 1))
    table_labels = torch.zeros((b, max_det + 1), dtype=torch.int64, device=x.device)
    boxes.index_put_((img, slot), xywhr)
    scores.index_put_((img, slot), x[..., 4])
    table_labels.index_put_((img, slot), labels)
    spare_cut = slice(0, max_det)
    status = e2e_flags(x, conf)
    counts = torch.where(status == 0, take.sum(dim=1), torch.full((b,), -1, dtype=torch.int64, device=x.device))
    return PaddedDetections(boxes[:, spare_cut].contiguous(), scores[:, spare_cut].contiguous(),
                            table_labels[:, spare_cut].contiguous(), counts, status)


def _allowed(classes, nc: int, device: torch.device) -> Optional[torch.Tensor]:
    """The class filter as an (nc,) int32 0/1 tensor on `device` (cached: made once per filter and device)."""
    return None if classes is None else _allowed_cached(tuple(classes), nc, device)


@lru_cache(maxsize=64)
def _allowed_cached(classes: tuple, nc: int, device: torch.device) -> torch.Tensor:
    mask = torch.zeros(nc, dtype=torch.int32)
    for c in classes:
        if 0 <= c < nc:
            mask[c] = 1
    return mask.to(device)


def _check_op_args(output: torch.Tensor, conf: float, iou: float, max_det: int, allowed: Optional[torch.Tensor],
                   agnostic: bool, max_nms: int, scale: float, pad_x: float, pad_y: float,
                   class_iou: Optional[torch.Tensor], class_conf: Optional[torch.Tensor] = None) -> None:
    """What both kernels of ``obbmeta::yolo_obb_padded`` check (the wrapper checks the same first, so a call through
    it never meets these): the head, the thresholds, the sizes, the letterbox numbers, the class filter and the
    per-class tables' forms (their values are the wrapper's to check: reading them would sync a CUDA kernel)."""
    if not output.is_floating_point() or output.dim() != 3 or output.shape[1] < 6:
        raise ValueError(f"output must be a floating-point (B, 4+nc+1, N) head with nc >= 1, got {output.dtype} "
                         f"{tuple(output.shape)}")
    threshold("conf", conf)
    threshold("iou", iou)
    int_in_range("max_det", max_det, 0)
    int_in_range("max_nms", max_nms, 1, form="an int >= 1 (candidates per image that go through NMS)")
    number_in_range("scale", scale, 0.0, sys.float_info.max, "a positive finite number", low_open=True)
    for name, v in (("pad_x", pad_x), ("pad_y", pad_y)):
        number_in_range(name, v, -sys.float_info.max, sys.float_info.max, "a finite number")
    _check_allowed(output, allowed)
    _check_table(output, "class_iou", class_iou, torch.float64, "an IoU threshold per class")
    if class_iou is not None and agnostic:
        raise ValueError("class_iou (per-class IoU thresholds) needs class-aware NMS: agnostic must be False")
    _check_table(output, "class_conf", class_conf, torch.float32, "a score threshold per class")


def _check_table(output: torch.Tensor, name: str, table: Optional[torch.Tensor], dtype: torch.dtype, what: str
                 ) -> None:
    """A per-class table of the decode operator: None, or an (nc,) ``dtype`` tensor on the head's device."""
    nc = output.shape[1] - 5
    if table is not None and (table.dtype != dtype or table.shape != (nc,) or table.device != output.device):
        raise ValueError(f"{name} must be None or an ({nc},) {str(dtype).removeprefix('torch.')} tensor on "
                         f"{output.device} ({what}), got {tuple(table.shape)} {table.dtype} on {table.device}")


def _check_allowed(output: torch.Tensor, allowed: Optional[torch.Tensor]) -> None:
    """The operator's class filter: None, or an (nc,) int32 0/1 tensor on the head's device (the kernels read it as
    int32 there)."""
    nc = output.shape[1] - 5
    if allowed is not None and (allowed.dtype != torch.int32 or allowed.shape != (nc,)
                                or allowed.device != output.device):
        raise ValueError(f"allowed must be None or an ({nc},) int32 tensor on {output.device}, got "
                         f"{tuple(allowed.shape)} {allowed.dtype} on {allowed.device}")


def padded_status_error(status: int, advice: str = LARGER_POOL) -> Exception:
    """The exception for a non-zero status of the padded decodes (what ``unpad`` raises)."""
    return ops_status.status_error(status, advice=advice, name="PaddedDetections.status", **CANDIDATE_NAMES)


def decode_fused(output, conf, iou, max_det, classes, multi_label, agnostic, max_nms, letterbox, class_iou=None,
                 class_conf=None) -> List[OrientedBoxes]:
    """yolo_obb's CUDA path (arguments already checked): the fused decode with an overlap pool sized from what earlier
    calls needed, then one read of the counts with the status; once more, exactly sized, when this data needed
    more. class_iou / class_conf: :func:`check_class_iou` / :func:`check_class_conf`'s pairs."""
    lb = _kernel_letterbox(letterbox)
    allowed = _allowed(classes, output.shape[1] - 5, output.device)
    table = iou_table(class_iou, iou, output.shape[1] - 5, output.device)
    confs = conf_table(class_conf, conf, output.shape[1] - 5, output.device)
    k = _sizes_args(output, multi_label, agnostic, max_nms)[-1]
    rows = min(max_det, k)  # a list comes back, so the tables need no more rows than an image can fill
    pool = pool_for(output.device, _pool_bound(output, multi_label, agnostic, max_nms)) if k >= 1 else 0
    for _ in range(2):
        *tables, needed = yolo_obb_padded_op(output, conf, iou, rows, allowed, multi_label, agnostic, max_nms,
                                             lb.scale, lb.pad_x, lb.pad_y, pool, table, confs)
        result = PaddedDetections(*tables)
        *counts, status, needed = torch.cat((result.counts, result.status.view(1), needed.view(1))).tolist()
        if not status & STATUS_OVERFLOW:
            break
        remember_pool(output.device, needed)
        pool = needed
    boxes = result._split(counts, status, trusted=True, advice=FEWER_IMAGES)
    return boxes if lb is letterbox or letterbox is None else [r.rescale(letterbox) for r in boxes]


def _sizes_args(output, multi_label, agnostic, max_nms) -> tuple:
    b, c, n = output.shape
    return b, c, n, int(multi_label), int(agnostic), min(max_nms, n * (c - 5) if multi_label else n)


def _pool_bound(output, multi_label, agnostic, max_nms) -> int:
    return sizes(output.device, "obbmeta_cuda_yolo_obb_sizes", *_sizes_args(output, multi_label, agnostic, max_nms),
                 0)[1]


yolo_obb_padded_op = registry.yolo_obb_padded


@yolo_obb_padded_op.register_kernel("cpu")
def _yolo_obb_padded_cpu(
    output: torch.Tensor, conf: float, iou: float, max_det: int, allowed: Optional[torch.Tensor], multi_label: bool,
    agnostic: bool, max_nms: int, scale: float, pad_x: float, pad_y: float, overlap_words: int,
    class_iou: Optional[torch.Tensor] = None, class_conf: Optional[torch.Tensor] = None,
) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Boxes, scores, labels, counts and status (:class:`PaddedDetections`' fields), then the overlap-pool entries the
    data needed (0-d int64; what yolo_obb sizes its second run by). ``class_iou``: None, or an (nc,) float64 table of
    per-class NMS thresholds (``iou`` is then unused); ``class_conf``: None, or an (nc,) float32 table of per-class
    score thresholds (``conf`` is then unused; an anchor's best class must score above its class's threshold). The CPU
    kernel: yolo_obb's per-image code, padded (overlap_words only sizes the CUDA kernels' pool; it needs none and
    answers 0)."""
    _check_op_args(output, conf, iou, max_det, allowed, agnostic, max_nms, scale, pad_x, pad_y, class_iou, class_conf)
    b = output.shape[0]
    check_table_rows(b, max_det)
    boxes, scores = torch.zeros(b, max_det, 5), torch.zeros(b, max_det)
    labels, counts = torch.zeros(b, max_det, dtype=torch.int64), torch.zeros(b, dtype=torch.int64)
    classes = None if allowed is None else allowed.nonzero().flatten().tolist()
    per_class = None if class_iou is None else check_class_iou(dict(enumerate(class_iou.tolist())), agnostic)
    if class_conf is not None:
        output, conf = apply_class_conf(output, class_conf, multi_label)
    lb = Letterbox(scale, pad_x, pad_y)
    try:
        dets = [decode_raw(x, conf, iou, max_det, classes, multi_label, agnostic, max_nms, per_class).rescale(lb)
                for x in output]
    except ValueError as exc:  # non-finite candidates (nms_rotated's checks): the flags the CUDA kernels set
        flag = STATUS_SCORES if str(exc).startswith("scores") else STATUS_BOXES
        return (boxes, scores, labels, torch.full((b,), -1, dtype=torch.int64), torch.tensor(flag, dtype=torch.int64),
                torch.tensor(0, dtype=torch.int64))
    for i, d in enumerate(dets):
        boxes[i, :len(d)], scores[i, :len(d)], labels[i, :len(d)] = d.xywhr, d.scores, d.labels
        counts[i] = len(d)
    return boxes, scores, labels, counts, torch.tensor(0, dtype=torch.int64), torch.tensor(0, dtype=torch.int64)


@yolo_obb_padded_op.register_fake
def _(output, conf, iou, max_det, allowed, multi_label, agnostic, max_nms, scale, pad_x, pad_y, overlap_words,
      class_iou=None, class_conf=None):
    b = output.shape[0]
    return (output.new_empty((b, max_det, 5), dtype=torch.float32), output.new_empty((b, max_det), dtype=torch.float32),
            output.new_empty((b, max_det), dtype=torch.int64), output.new_empty((b,), dtype=torch.int64),
            output.new_empty((), dtype=torch.int64), output.new_empty((), dtype=torch.int64))


@yolo_obb_padded_op.register_kernel("cuda")
def _(output, conf, iou, max_det, allowed, multi_label, agnostic, max_nms, scale, pad_x, pad_y, overlap_words,
      class_iou=None, class_conf=None):
    _check_op_args(output, conf, iou, max_det, allowed, agnostic, max_nms, scale, pad_x, pad_y, class_iou, class_conf)
    check_table_rows(output.shape[0], max_det)
    if _sizes_args(output, multi_label, agnostic, max_nms)[-1] < 1:  # no anchors: nothing to launch
        return _decode_cuda(output, conf, iou, max_det, allowed, multi_label, agnostic, max_nms, scale, pad_x, pad_y,
                            0, class_iou, class_conf)
    bound = _pool_bound(output, multi_label, agnostic, max_nms)
    pool = min(bound, POOL_FIXED if overlap_words < 0 else overlap_words)
    return _decode_cuda(output, conf, iou, max_det, allowed, multi_label, agnostic, max_nms, scale, pad_x, pad_y,
                        pool, class_iou, class_conf)


def _decode_cuda(output, conf, iou, max_det, allowed, multi_label, agnostic, max_nms, scale, pad_x, pad_y, pool,
                 class_iou, class_conf):
    """Enqueue the fused decode (no host sync): boxes, scores, labels, counts, status flags, and the overlap pool
    entries the data needed (0-d). pool: entries of the sparse suppression mask's pool; class_iou: None or the (nc,)
    float64 per-class thresholds; class_conf: None or the (nc,) float32 per-class score thresholds."""
    lib = cuda_library()
    if lib is None:
        raise RuntimeError("obbmeta's CUDA kernels are not built (see `obbmeta doctor`)")
    head = contiguous_as(output, torch.float32)
    b, c, n, multi, agn, k = _sizes_args(head, multi_label, agnostic, max_nms)
    if k < 1:  # a head without anchors: empty tables, nothing to launch
        z = torch.zeros(b, dtype=torch.int64, device=head.device)
        return (torch.zeros((b, max_det, 5), device=head.device), torch.zeros((b, max_det), device=head.device),
                torch.zeros((b, max_det), dtype=torch.int64, device=head.device), z, z.new_zeros(()), z.new_zeros(()))
    ws_bytes, _ = sizes(head.device, "obbmeta_cuda_yolo_obb_sizes", b, c, n, multi, agn, k, pool)
    scratch = torch.empty(max(ws_bytes, 1), dtype=torch.uint8, device=head.device)
    boxes = torch.empty((b, max_det, 5), dtype=torch.float32, device=head.device)
    scores = torch.empty((b, max_det), dtype=torch.float32, device=head.device)
    labels = torch.empty((b, max_det), dtype=torch.int64, device=head.device)
    counts = torch.empty(b, dtype=torch.int64, device=head.device)
    # (the operator's outputs may not alias one another: each starts its own storage; the kernels write the counts
    # as -1 themselves when a flag is set)
    flags = torch.empty((), dtype=torch.int64, device=head.device)
    needed = torch.empty((), dtype=torch.int64, device=head.device)
    launch(head.device, lib.obbmeta_cuda_yolo_obb, _ptr(head), b, c, n, multi, agn, conf, iou, _ptr(allowed),
           _ptr(class_iou), _ptr(class_conf), k, max_det, scale, pad_x, pad_y, _ptr(scratch), ws_bytes, pool,
           _ptr(boxes), _ptr(scores), _ptr(labels), _ptr(counts), _ptr(flags), _ptr(needed))
    return boxes, scores, labels, counts, flags, needed


__all__ = ["PaddedDetections", "yolo_obb_padded", "MAX_TABLE_ROWS"]

