"""What both YOLO-OBB decoders (:func:`~obbmeta.decode.yolo_obb`, :func:`~obbmeta.decode.yolo_obb_padded`) share: the
head's format (told by one function), the argument checks, the class filter and the per-image raw decode on the
host. Neither decoder module reaches into the other for these.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Mapping, Optional, Sequence

import torch

from .._validators import int_in_range, threshold
from ..boxes import OrientedBoxes
from ..frames.letterbox import Letterbox
from ..geometry import STATUS_BOXES, STATUS_CLASSES, STATUS_SCORES
from ..ops import nms_rotated
from ..ops.status import status_error

RAW = "raw"
END_TO_END = "e2e"


def detect_format(shape: Sequence[int]) -> str:
    """``"raw"`` for (B, 4+nc+1, N), ``"e2e"`` for (B, K, 7); raises when the shape cannot tell."""
    if len(shape) != 3:
        raise ValueError(f"output must have shape (B, 4+nc+1, N) or (B, K, 7), got {tuple(shape)}")
    _, c, last = shape
    if last == 7 and c != 7:
        return END_TO_END
    if c >= 6 and last != 7:
        return RAW
    if c == 7 and last == 7:
        raise ValueError("output of shape (B, 7, 7) is ambiguous: pass format='raw' or format='e2e'")
    raise ValueError(f"output must have shape (B, 4+nc+1, N) with nc >= 1 or (B, K, 7), got {tuple(shape)}")


def check_head(output, conf, iou, max_det, classes, letterbox, max_nms, format) -> tuple:
    """Both decoders' argument checks: (format, conf, iou, classes as a list or None), or the error naming the
    argument. The format is ``format`` when given, else :func:`detect_format` of the shape."""
    if not isinstance(output, torch.Tensor):
        raise TypeError(f"output must be a torch.Tensor, got {type(output).__name__}")
    if not output.is_floating_point():
        raise TypeError(f"output must be a floating-point tensor, got {output.dtype}")
    fmt = format if format is not None else detect_format(tuple(output.shape))
    if fmt not in (RAW, END_TO_END):
        raise ValueError(f"format must be 'raw', 'e2e' or None, got {format!r}")
    if output.dim() != 3:
        raise ValueError(f"output must have shape (B, 4+nc+1, N) or (B, K, 7), got {tuple(output.shape)}")
    if fmt == RAW and output.shape[1] < 6:
        raise ValueError(f"raw output must have 4 + nc + 1 >= 6 channels in dim 1, got {tuple(output.shape)}")
    if fmt == END_TO_END and output.shape[2] != 7:
        raise ValueError(f"e2e output must have shape (B, K, 7), got {tuple(output.shape)}")
    conf = threshold("conf", conf)
    iou = threshold("iou", iou)
    int_in_range("max_det", max_det, 0)
    int_in_range("max_nms", max_nms, 1, form="an int >= 1 (candidates per image that go through NMS)")
    if classes is not None:
        classes = class_list(classes)
    if letterbox is not None and not isinstance(letterbox, Letterbox):
        raise TypeError(f"letterbox must be an obbmeta.Letterbox, got {type(letterbox).__name__}")
    return fmt, conf, iou, classes


def check_class_conf(class_conf) -> Optional[tuple]:
    """``class_conf`` (None, or a mapping of class id -> score threshold in [0, 1]: nvinfer's per-class
    ``pre-cluster-threshold``) as a sorted tuple of (class, threshold) pairs, or None when empty; the error names it."""
    return _class_pairs("class_conf", class_conf, "score threshold")


def check_class_iou(class_iou, agnostic: bool) -> Optional[tuple]:
    """``class_iou`` (None, or a mapping of class id -> NMS IoU threshold in [0, 1]: nvinfer's per-class
    ``nms-iou-threshold``) as a sorted tuple of (class, threshold) pairs, or None when empty; the error names it.
    Per-class thresholds need class-aware NMS, so ``agnostic`` refuses them."""
    pairs = _class_pairs("class_iou", class_iou, "IoU threshold")
    if pairs and agnostic:
        raise ValueError("class_iou (per-class IoU thresholds) needs class-aware NMS: pass agnostic=False")
    return pairs


def _class_pairs(name: str, mapping, what: str) -> Optional[tuple]:
    if mapping is None:
        return None
    if not isinstance(mapping, Mapping):
        raise TypeError(f"{name} must be None or a mapping of int class id -> {what} in [0, 1], got "
                        f"{type(mapping).__name__}")
    pairs = []
    for c, t in mapping.items():
        if not isinstance(c, int) or isinstance(c, bool) or c < 0:
            raise ValueError(f"{name}'s keys must be class ids (ints >= 0), got {c!r}")
        pairs.append((c, threshold(f"{name}[{c}]", t)))
    return tuple(sorted(pairs)) or None


def conf_table(class_conf: Optional[tuple], conf: float, nc: int, device: torch.device) -> Optional[torch.Tensor]:
    """The per-class score thresholds as the decode operator takes them: an (nc,) float32 tensor on ``device``,
    ``conf`` for the classes not in ``class_conf`` (ids >= nc left out), or None without them. float32: the kernels
    and :func:`apply_class_conf` compare scores in float32."""
    return None if not class_conf else _class_table(class_conf, float(conf), int(nc), device, torch.float32)


def iou_table(class_iou: Optional[tuple], iou: float, nc: int, device: torch.device) -> Optional[torch.Tensor]:
    """The per-class NMS thresholds as the decode operator takes them: an (nc,) float64 tensor on ``device``, ``iou``
    for the classes not in ``class_iou`` (ids >= nc are no class of the head and are left out), or None without
    per-class thresholds."""
    return None if not class_iou else _class_table(class_iou, float(iou), int(nc), device, torch.float64)


@lru_cache(maxsize=64)
def _class_table(pairs: tuple, default: float, n: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """(n,) thresholds: ``default``, with the (class, threshold) pairs below n in their slots. Cached, and made on the
    device without a host copy, so a CUDA graph's eager warm-up makes it before the capture and replays read it."""
    table = torch.full((n,), default, dtype=dtype, device=device)
    for c, t in pairs:
        if c < n:
            table[c] = t
    return table


def apply_class_conf(output: torch.Tensor, table: torch.Tensor, multi_label: bool) -> tuple:
    """A raw head (B, 4+nc+1, N) with per-class score thresholds ``table`` ((nc,) float32) as the host decodes take
    it: (a float32 copy, the conf that then passes exactly what the thresholds keep). nvinfer's YOLO parsers' rule:
    an anchor's best class first, then the anchor kept only when that score is above its own class's threshold (every
    score of an anchor that misses is -inf); with ``multi_label`` each (anchor, class) score above its class's
    threshold is kept, the others are -inf. A NaN score stays NaN (its anchor is no candidate, as without
    thresholds). What the CUDA kernels do."""
    out = output.float().clone()
    scores = out[:, 4:-1]
    if multi_label:
        miss = ~(scores > table.view(1, -1, 1)) & ~scores.isnan()
    else:
        best, label = scores.max(dim=1)  # (B, N): the class decode_raw labels the anchor with
        miss = (best <= table[label]).unsqueeze(1).expand_as(scores)
    out[:, 4:-1] = scores.masked_fill(miss, -float("inf"))
    return out, float(table.min())


def apply_class_conf_e2e(output: torch.Tensor, class_conf: tuple, conf: float) -> tuple:
    """An end-to-end head (B, K, 7) with per-class score thresholds: (a copy whose rows at or below their class's
    threshold have conf -inf, the conf that then passes exactly the rows above their own). No host sync."""
    n = class_conf[-1][0] + 2  # a slot per class up to the highest given, then one for every class above it (conf)
    thr = _class_table(class_conf, float(conf), n, output.device, torch.float32)
    out = output.float().clone()
    labels = out[..., 5].nan_to_num(nan=-1.0).round().clamp(0, n - 1).to(torch.int64)
    keep = (out[..., 4] > thr[labels]) | out[..., 4].isnan()
    out[..., 4] = torch.where(keep, out[..., 4], torch.full_like(out[..., 4], -float("inf")))
    return out, min([conf, *(t for _, t in class_conf)])


def suppress(xywhr: torch.Tensor, scores: torch.Tensor, iou: float, groups: Optional[torch.Tensor],
             labels: torch.Tensor, class_iou: Optional[tuple]) -> torch.Tensor:
    """Greedy rotated NMS within ``groups`` (None: all boxes one group) at ``iou``, or with ``class_iou`` at each
    label's own threshold: one NMS per distinct threshold over the labels that have it (groups never span labels
    then, so this is per-class NMS exactly), merged by descending score, equal scores lower index first — the order
    :func:`~obbmeta.ops.nms_rotated` gives."""
    if not class_iou:
        return nms_rotated(xywhr, scores, iou, labels=groups)
    own = dict(class_iou)
    apart = tuple(c for c, v in own.items() if v != iou)  # the classes not at the default threshold
    parts = []
    for t in sorted(set(own.values()) | {iou}):
        if t != iou:
            pick = class_filter(labels, tuple(c for c in apart if own[c] == t))
        else:  # every other label, those with no threshold of their own included
            pick = ~class_filter(labels, apart) if apart else torch.ones_like(labels, dtype=torch.bool)
        index = pick.nonzero().squeeze(1)
        if index.numel():
            parts.append(index[nms_rotated(xywhr[index], scores[index], t,
                                           labels=None if groups is None else groups[index])])
    if not parts:
        return torch.zeros(0, dtype=torch.int64, device=xywhr.device)
    keep = torch.cat(parts).sort().values  # by index, then stably by descending score: ties lower index first
    return keep[torch.sort(scores[keep], descending=True, stable=True).indices]


def class_list(classes) -> list:
    """``classes`` as a list of int class ids, or TypeError naming it."""
    if isinstance(classes, (str, bytes)) or not hasattr(classes, "__iter__"):
        raise TypeError(f"classes must be None or a sequence of int class ids, got {classes!r}")
    out = list(classes.tolist() if hasattr(classes, "tolist") else classes)
    if not all(isinstance(c, int) and not isinstance(c, bool) for c in out):
        raise TypeError(f"classes must be None or a sequence of int class ids, got {classes!r}")
    return out


def class_filter(labels: torch.Tensor, classes) -> torch.Tensor:
    """A mask over ``labels``: True where the label is one of ``classes``."""
    return (labels[..., None] == class_ids(tuple(classes), labels.device)).any(dim=-1)


@lru_cache(maxsize=64)
def class_ids(classes: tuple, device: torch.device) -> torch.Tensor:
    """The wanted class ids as an int64 tensor on ``device`` (cached: made once per filter and device, so a captured
    CUDA graph never copies them, and a decode per image does not upload them again)."""
    return torch.tensor(classes, dtype=torch.int64).to(device)


def decode_raw(x, conf, iou, max_det, classes, multi_label, agnostic, max_nms, class_iou=None) -> OrientedBoxes:
    """One image of a raw head, x: (4+nc+1, N) as the head emits it -> its detections by descending score
    (``class_iou``: :func:`check_class_iou`'s pairs, each class suppressed at its own threshold)."""
    # The full-size reduction is a max over classes without indices (on the CPU ~50x cheaper than max-with-indices
    # over the transposed (N, nc) view); the labels come from the few candidates above conf, in anchor order.
    if multi_label:
        t = x.T
        i, j = (t[:, 4:-1].float() > conf).nonzero(as_tuple=True)
        anchors, scores, labels = i, t[i, 4 + j].float(), j
    else:
        cls_scores = x[4:-1].float()
        anchors = (cls_scores.amax(dim=0) > conf).nonzero().squeeze(1)
        scores, labels = cls_scores[:, anchors].max(dim=0)
    xywhr = x[(0, 1, 2, 3, -1), :][:, anchors].T.float()
    if classes is not None:
        keep = class_filter(labels, classes)
        xywhr, scores, labels = xywhr[keep], scores[keep], labels[keep]
    if scores.numel() > max_nms:
        top = scores.topk(max_nms).indices.sort().values  # keep candidate order: NMS ties go to the lower index
        xywhr, scores, labels = xywhr[top], scores[top], labels[top]
    keep = suppress(xywhr.contiguous(), scores, iou, None if agnostic else labels, labels, class_iou)[:max_det]
    return OrientedBoxes(xywhr[keep], scores[keep], labels[keep])


E2E_CLASS_LIMIT = 2 ** 31  # class ids above this are not ids (and round badly in float32)
# What the decodes' status errors (ops.status.status_error) call the values a flag is about. A candidate is an anchor
# of a raw head, or a row of an end-to-end head, above conf; end-to-end heads are named by their columns.
CANDIDATE_NAMES = {"boxes": "output (a candidate box)", "scores": "output (a candidate score)",
                   "classes": "output (a candidate's class, column 5 of an end-to-end head)"}
E2E_NAMES = {"boxes": "output (the box of a row above conf: columns 0-3 and 6 of an end-to-end head (B, K, 7) = cx, "
                      "cy, w, h, conf, cls, angle)",
             "scores": "output (the score of a row above conf, column 4)",
             "classes": "output (the class of a row above conf, column 5)"}


def e2e_flags(x: torch.Tensor, conf: float) -> torch.Tensor:
    """Status flags (a 0-d int64 tensor, no host sync) of an end-to-end head's rows above ``conf``: 1 (STATUS_BOXES)
    when one holds a NaN / inf coordinate, side or angle, 2 when a score is inf, 8 when a class is NaN, inf, negative
    or >= 2**31 (it would become an arbitrary int64 label)."""
    x = x.float()
    above = x[..., 4] > conf
    geometry = torch.cat((x[..., :4], x[..., 6:7]), dim=-1)
    bad_box = (above & ~torch.isfinite(geometry).all(dim=-1)).any()
    bad_score = (above & torch.isinf(x[..., 4])).any()
    cls = x[..., 5]
    bad_class = (above & ~(torch.isfinite(cls) & (cls > -0.5) & (cls < E2E_CLASS_LIMIT))).any()
    return bad_box.long() * STATUS_BOXES + bad_score.long() * STATUS_SCORES + bad_class.long() * STATUS_CLASSES


def e2e_error(flags: int) -> ValueError:
    """The error for an end-to-end head's non-zero ``e2e_flags`` (the first problem named)."""
    return status_error(flags, **E2E_NAMES)


def most_per_image(shape: Sequence[int], fmt: str, multi_label: bool, max_nms: int) -> int:
    """The most detections one image of a head of ``shape`` can give (before ``max_det``): its rows for an
    end-to-end head; for a raw one the candidates that reach NMS, at most ``max_nms``."""
    _, c, n = shape
    if fmt == END_TO_END:
        return int(c)
    return int(min(max_nms, n * (c - 5) if multi_label else n))
