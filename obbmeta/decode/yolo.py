"""Ultralytics YOLO-OBB outputs (YOLOv8/11-OBB raw head, YOLO26-OBB, exports with embedded NMS)."""
from __future__ import annotations

from typing import List, Optional, Sequence

import torch

from .._validators import int_in_range, threshold
from ..boxes import OrientedBoxes
from ..letterbox import Letterbox
from ..ops import nms_rotated

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


def yolo_obb(
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
    format: Optional[str] = None,
) -> List[OrientedBoxes]:
    """Decode a YOLO-OBB output tensor into one :class:`OrientedBoxes` per image.

    Two layouts, told apart by shape (or forced with ``format``):

    * ``"raw"`` (B, 4+nc+1, N): ``[cx, cy, w, h, score_0 .. score_{nc-1}, angle]`` per anchor, scores already
      sigmoided (YOLOv8/11-OBB, YOLO26-OBB exported with ``nms=None``). Boxes with a class score > ``conf``
      are kept (every such class with ``multi_label``, else the best one), the ``max_nms`` best go through
      greedy rotated NMS with exact IoU (class-aware unless ``agnostic``), then the ``max_det`` best remain.
    * ``"e2e"`` (B, K, 7): ``[cx, cy, w, h, conf, cls, angle]``, zero-padded (exports with ``nms=True`` and
      YOLO26's NMS-free head). Only the ``conf``/``classes`` filter and ``max_det`` apply.

    Boxes are in model-input pixels; with ``letterbox`` they are mapped back to the source frame. Angles are
    passed through as the model emits them (see :mod:`obbmeta.conventions` to regularise).

    Unlike Ultralytics, suppression is greedy NMS on exact polygon IoU rather than Fast-NMS on ProbIoU, so a
    chain A-B-C keeps C, and boxes ProbIoU calls overlapping while they only touch are both kept.
    """
    fmt, conf, iou, classes = _checked(output, conf, iou, max_det, classes, letterbox, max_nms, format)
    if fmt == RAW:
        if output.shape[1] < 6:
            raise ValueError(f"raw output must have 4 + nc + 1 >= 6 channels in dim 1, got {tuple(output.shape)}")
        if output.is_cuda and fused_available(output, multi_label, agnostic):
            # One fused pass on the device (filter, top-k, NMS per image and class, letterbox inverse) and one read of
            # the per-image counts.
            from .yolo_padded import decode_fused

            return decode_fused(output, conf, iou, max_det, classes, multi_label, agnostic, max_nms, letterbox)
        if output.is_cuda or output.shape[0] > 1:  # a constant number of host syncs / op calls per batch
            results = _decode_raw_batched(output, conf, iou, max_det, classes, multi_label, agnostic, max_nms,
                                          letterbox)
            letterbox = None  # applied once to the whole batch's boxes
        else:
            results = [_decode_raw(x, conf, iou, max_det, classes, multi_label, agnostic, max_nms) for x in output]
    else:
        if output.shape[2] != 7:
            raise ValueError(f"e2e output must have shape (B, K, 7), got {tuple(output.shape)}")
        results = [_decode_e2e(x, conf, max_det, classes) for x in output]
    if letterbox is not None:
        results = [r.rescale(letterbox) for r in results]
    return results


def _checked(output, conf, iou, max_det, classes, letterbox, max_nms, format):
    """yolo_obb's argument checks: (format, conf, iou, classes as a list or None), or the error naming the argument."""
    if not isinstance(output, torch.Tensor):
        raise TypeError(f"output must be a torch.Tensor, got {type(output).__name__}")
    if not output.is_floating_point():
        raise TypeError(f"output must be a floating-point tensor, got {output.dtype}")
    fmt = format if format is not None else detect_format(tuple(output.shape))
    if fmt not in (RAW, END_TO_END):
        raise ValueError(f"format must be 'raw', 'e2e' or None, got {format!r}")
    if output.dim() != 3:
        raise ValueError(f"output must have shape (B, 4+nc+1, N) or (B, K, 7), got {tuple(output.shape)}")
    conf = threshold("conf", conf)
    iou = threshold("iou", iou)
    int_in_range("max_det", max_det, 0)
    int_in_range("max_nms", max_nms, 1, form="an int >= 1 (candidates per image that go through NMS)")
    if classes is not None:
        classes = _class_list(classes)
    if letterbox is not None and not isinstance(letterbox, Letterbox):
        raise TypeError(f"letterbox must be an obbmeta.Letterbox, got {type(letterbox).__name__}")
    return fmt, conf, iou, classes


def fused_available(output: torch.Tensor, multi_label: bool, agnostic: bool) -> bool:
    """Whether the fused CUDA decode takes this raw head: the CUDA kernels are built and the (image, class) groups
    fit its 31-bit sort key (B * nc below about 2^31, e.g. any B <= 65535 with nc <= 15)."""
    from .._cuda_lib import cuda_library

    b, c, n = output.shape
    nc = c - 5
    label_bits = 0 if agnostic else int(nc).bit_length()
    per_image = n * nc if multi_label else n
    return (cuda_library() is not None and int(b).bit_length() + label_bits <= 31 and b * per_image < 2**31
            and b >= 1)


def _class_list(classes) -> list:
    """``classes`` as a list of int class ids, or TypeError naming it."""
    if isinstance(classes, (str, bytes)) or not hasattr(classes, "__iter__"):
        raise TypeError(f"classes must be None or a sequence of int class ids, got {classes!r}")
    out = list(classes.tolist() if hasattr(classes, "tolist") else classes)
    if not all(isinstance(c, int) and not isinstance(c, bool) for c in out):
        raise TypeError(f"classes must be None or a sequence of int class ids, got {classes!r}")
    return out


def _class_filter(labels: torch.Tensor, classes) -> torch.Tensor:
    wanted = torch.as_tensor(list(classes), dtype=torch.int64, device=labels.device)
    return (labels[:, None] == wanted[None]).any(dim=1)


def _decode_raw(x, conf, iou, max_det, classes, multi_label, agnostic, max_nms) -> OrientedBoxes:
    # x: (4+nc+1, N), one image as the head emits it. The full-size reduction is a max over classes without indices
    # (on the CPU ~50x cheaper than max-with-indices over the transposed (N, nc) view); the labels come from the few
    # candidates above conf. Candidates keep anchor order, as before.
    if multi_label:
        t = x.T
        i, j = (t[:, 4:-1].float() > conf).nonzero(as_tuple=True)
        anchors, scores, labels = i, t[i, 4 + j].float(), j
    else:
        cls_scores = x[4:-1].float()
        anchors = (cls_scores.amax(dim=0) > conf).nonzero().squeeze(1)  # amax: ~20x cheaper than max with indices
        scores, labels = cls_scores[:, anchors].max(dim=0)
    xywhr = x[(0, 1, 2, 3, -1), :][:, anchors].T.float()
    if classes is not None:
        keep = _class_filter(labels, classes)
        xywhr, scores, labels = xywhr[keep], scores[keep], labels[keep]
    if scores.numel() > max_nms:
        top = scores.topk(max_nms).indices.sort().values  # keep candidate order: NMS ties go to the lower index
        xywhr, scores, labels = xywhr[top], scores[top], labels[top]
    keep = nms_rotated(xywhr.contiguous(), scores, iou, labels=None if agnostic else labels)[:max_det]
    return OrientedBoxes(xywhr[keep], scores[keep], labels[keep])


# Above this many candidates in a batch, NMS runs per image: one batched call's suppression mask is M^2 / 8 bytes.
BATCHED_NMS_MAX = 65536


def _decode_raw_batched(output, conf, iou, max_det, classes, multi_label, agnostic, max_nms, letterbox=None
                        ) -> List[OrientedBoxes]:
    """The same result as ``_decode_raw`` per image, for the whole batch at once: candidates are compacted with one
    nonzero, suppressed by one NMS call whose groups are (image, class) — (image) when agnostic — and split by
    image with one read of the per-image counts. Three host syncs per batch instead of a few per image."""
    b, c, n = output.shape
    nc = c - 5
    x = output.float().transpose(1, 2)  # (B, N, 4 + nc + 1)
    box, cls_scores, angle = x[..., :4], x[..., 4:-1], x[..., -1:]
    if not multi_label and classes is None:
        # Fewer candidates above conf than max_nms in the whole batch (the usual case): no top-k is needed, and the
        # labels come from the candidates alone (a max with indices over every anchor costs ~50x an amax on a CPU).
        img, cand = (output[:, 4:-1].float().amax(dim=1) > conf).nonzero(as_tuple=True)  # host sync 1
        if img.numel() <= max_nms:
            kept_scores, kept_labels = cls_scores[img, cand].max(dim=1)
            return _suppress(box, angle, img, cand, kept_scores, kept_labels, b, nc, iou, max_det, agnostic, letterbox)
    if multi_label:  # candidate j of an image is (anchor j // nc, class j % nc), as nonzero orders them
        scores = cls_scores.reshape(b, n * nc)
        labels = torch.arange(nc, device=output.device).repeat(n).expand(b, -1)
    else:
        scores, labels = cls_scores.max(dim=2)
    if classes is not None:
        scores = torch.where(_class_filter(labels.reshape(-1), classes).reshape(labels.shape), scores,
                             torch.full_like(scores, -1.0))
    per_image = scores.shape[1]
    top_scores, top_idx = scores.topk(min(max_nms, per_image), dim=1)
    img, slot = (top_scores > conf).nonzero(as_tuple=True)  # host sync 1
    cand = top_idx[img, slot]
    order = torch.argsort(img * per_image + cand)  # candidate order within each image, as on the per-image path
    img, cand = img[order], cand[order]
    anchor = cand // nc if multi_label else cand
    return _suppress(box, angle, img, anchor, scores[img, cand], labels[img, cand], b, nc, iou, max_det, agnostic,
                     letterbox)


def _suppress(box, angle, img, anchor, kept_scores, kept_labels, b, nc, iou, max_det, agnostic, letterbox=None
              ) -> List[OrientedBoxes]:
    """Candidates (image, anchor) in (image, anchor) order -> class-aware greedy NMS per image -> max_det each;
    with ``letterbox`` the kept boxes are mapped to source pixels in one op for the batch."""
    xywhr = torch.cat((box[img, anchor], angle[img, anchor]), dim=1)
    group = img if agnostic else img * nc + kept_labels
    if img.numel() <= BATCHED_NMS_MAX:
        keep = nms_rotated(xywhr, kept_scores, iou, labels=group)  # host sync 2
    else:
        bounds = torch.bincount(img, minlength=b).cumsum(0).tolist()
        keep = torch.cat([start + nms_rotated(xywhr[start:end], kept_scores[start:end], iou, labels=group[start:end])
                          for start, end in zip([0] + bounds[:-1], bounds)])
    keep = keep[torch.sort(img[keep], stable=True).indices]  # by image, each still by descending score
    counts = torch.bincount(img[keep], minlength=b)
    rank = torch.arange(keep.numel(), device=keep.device) - (counts.cumsum(0) - counts)[img[keep]]
    keep = keep[rank < max_det]
    parts = keep.split(counts.clamp(max=max_det).tolist())  # host sync 3
    if letterbox is not None:
        xywhr = letterbox.to_source(xywhr)
    return [OrientedBoxes(xywhr[p], kept_scores[p], kept_labels[p]) for p in parts]


def _decode_e2e(x, conf, max_det, classes) -> OrientedBoxes:
    # x: (K, 7) = cx, cy, w, h, conf, cls, angle
    x = x.float()
    keep = x[:, 4] > conf
    if classes is not None:
        keep &= _class_filter(x[:, 5].round().to(torch.int64), classes)
    x = x[keep][:max_det]
    xywhr = torch.cat((x[:, :4], x[:, 6:7]), dim=1)
    return OrientedBoxes(xywhr, x[:, 4], x[:, 5].round().to(torch.int64))
