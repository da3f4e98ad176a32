"""Ultralytics YOLO-OBB outputs (YOLOv8/11-OBB raw head, YOLO26-OBB, exports with embedded NMS)."""
from __future__ import annotations

from typing import List, Mapping, Optional, Sequence

import torch

from ..boxes import OrientedBoxes
from ..frames.letterbox import Letterbox
from ._head import (
    RAW,
    apply_class_conf,
    apply_class_conf_e2e,
    check_class_conf,
    check_class_iou,
    check_head,
    class_filter,
    conf_table,
    decode_raw,
    e2e_error,
    e2e_flags,
    suppress,
)
from .yolo_padded import decode_fused, fused_available


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
    class_iou: Optional[Mapping[int, float]] = None,
    class_conf: Optional[Mapping[int, float]] = None,
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

    ``class_iou`` (raw heads, class-aware NMS): {class id: IoU threshold} for the classes suppressed at a threshold
    of their own (nvinfer's per-class ``nms-iou-threshold``); the other classes take ``iou``, ids beyond the head's
    classes are ignored. Everything else (the filter, the one top-``max_nms`` cut, ``max_det``) is as without it.

    ``class_conf`` (either layout): {class id: score threshold} for the classes kept only above a threshold of their
    own (nvinfer's per-class ``pre-cluster-threshold``); the other classes take ``conf``. As nvinfer's YOLO parsers
    apply it: a raw anchor's best class first, then the anchor kept when that score is above its class's threshold
    (with ``multi_label`` every class score above its own class's threshold); an end-to-end row is kept when its
    score is above its class's threshold.
    """
    fmt, conf, iou, classes = check_head(output, conf, iou, max_det, classes, letterbox, max_nms, format)
    class_iou = check_class_iou(class_iou, agnostic)
    class_conf = check_class_conf(class_conf)
    if fmt == RAW:
        if output.is_cuda and fused_available(output, multi_label, agnostic):
            # One fused pass on the device (filter, top-k, NMS per image and class, letterbox inverse) and one read of
            # the per-image counts.
            return decode_fused(output, conf, iou, max_det, classes, multi_label, agnostic, max_nms, letterbox,
                                class_iou, class_conf)
        if class_conf:
            output, conf = apply_class_conf(output, conf_table(class_conf, conf, output.shape[1] - 5, output.device),
                                            multi_label)
        if output.is_cuda or output.shape[0] > 1:  # a constant number of host syncs / op calls per batch
            results = _decode_raw_batched(output, conf, iou, max_det, classes, multi_label, agnostic, max_nms,
                                          letterbox, class_iou)
            letterbox = None  # applied once to the whole batch's boxes
        else:
            results = [decode_raw(x, conf, iou, max_det, classes, multi_label, agnostic, max_nms, class_iou)
                       for x in output]
    else:
        if class_conf:
            output, conf = apply_class_conf_e2e(output, class_conf, conf)
        flags = int(e2e_flags(output, conf))
        if flags:
            raise e2e_error(flags)
        results = [_decode_e2e(x, conf, max_det, classes) for x in output]
    if letterbox is not None:
        results = [r.rescale(letterbox) for r in results]
    return results


# Above this many candidates in a batch, NMS runs per image: one batched call's suppression mask is M^2 / 8 bytes.
BATCHED_NMS_MAX = 65536


def _decode_raw_batched(output, conf, iou, max_det, classes, multi_label, agnostic, max_nms, letterbox=None,
                        class_iou=None) -> List[OrientedBoxes]:
    """The same result as ``decode_raw`` per image, for the whole batch at once: candidates are compacted with one
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
            return _suppress(box, angle, img, cand, kept_scores, kept_labels, b, nc, iou, max_det, agnostic, letterbox,
                             class_iou)
    if multi_label:  # candidate j of an image is (anchor j // nc, class j % nc), as nonzero orders them
        scores = cls_scores.reshape(b, n * nc)
        labels = torch.arange(nc, device=output.device).repeat(n).expand(b, -1)
    else:
        scores, labels = cls_scores.max(dim=2)
    if classes is not None:
        scores = torch.where(class_filter(labels.reshape(-1), classes).reshape(labels.shape), scores,
                             torch.full_like(scores, -1.0))
    per_image = scores.shape[1]
    top_scores, top_idx = scores.topk(min(max_nms, per_image), dim=1)
    img, slot = (top_scores > conf).nonzero(as_tuple=True)  # host sync 1
    cand = top_idx[img, slot]
    order = torch.argsort(img * per_image + cand)  # candidate order within each image, as on the per-image path
    img, cand = img[order], cand[order]
    anchor = cand // nc if multi_label else cand
    return _suppress(box, angle, img, anchor, scores[img, cand], labels[img, cand], b, nc, iou, max_det, agnostic,
                     letterbox, class_iou)


def _suppress(box, angle, img, anchor, kept_scores, kept_labels, b, nc, iou, max_det, agnostic, letterbox=None,
              class_iou=None) -> List[OrientedBoxes]:
    """Candidates (image, anchor) in (image, anchor) order -> class-aware greedy NMS per image -> max_det each;
    with ``letterbox`` the kept boxes are mapped to source pixels in one op for the batch."""
    xywhr = torch.cat((box[img, anchor], angle[img, anchor]), dim=1)
    group = img if agnostic else img * nc + kept_labels
    if img.numel() <= BATCHED_NMS_MAX:
        keep = suppress(xywhr, kept_scores, iou, group, kept_labels, class_iou)  # host sync 2 (one per threshold)
    else:
        bounds = torch.bincount(img, minlength=b).cumsum(0).tolist()
        keep = torch.cat([start + suppress(xywhr[start:end], kept_scores[start:end], iou, group[start:end],
                                           kept_labels[start:end], class_iou)
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
        keep &= class_filter(x[:, 5].round().to(torch.int64), classes)
    x = x[keep][:max_det]
    xywhr = torch.cat((x[:, :4], x[:, 6:7]), dim=1)
    return OrientedBoxes(xywhr, x[:, 4], x[:, 5].round().to(torch.int64))
