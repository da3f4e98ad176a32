"""Ultralytics YOLO-OBB outputs (YOLOv8/11-OBB raw head, YOLO26-OBB, exports with embedded NMS)."""
from __future__ import annotations

from typing import List, Optional, Sequence

import torch

from ..boxes import OrientedBoxes
from ..letterbox import Letterbox
from ..ops import nms_rotated
from ..ops._validate import as_threshold

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
    if not isinstance(output, torch.Tensor):
        raise TypeError(f"output must be a torch.Tensor, got {type(output).__name__}")
    if not output.is_floating_point():
        raise TypeError(f"output must be a floating-point tensor, got {output.dtype}")
    fmt = format if format is not None else detect_format(tuple(output.shape))
    if fmt not in (RAW, END_TO_END):
        raise ValueError(f"format must be 'raw', 'e2e' or None, got {format!r}")
    if output.dim() != 3:
        raise ValueError(f"output must have shape (B, 4+nc+1, N) or (B, K, 7), got {tuple(output.shape)}")
    conf = as_threshold("conf", conf)
    iou = as_threshold("iou", iou)
    if not isinstance(max_det, int) or max_det < 0:
        raise ValueError(f"max_det must be an int >= 0, got {max_det!r}")
    if letterbox is not None and not isinstance(letterbox, Letterbox):
        raise TypeError(f"letterbox must be an obbmeta.Letterbox, got {type(letterbox).__name__}")
    if fmt == RAW:
        if output.shape[1] < 6:
            raise ValueError(f"raw output must have 4 + nc + 1 >= 6 channels in dim 1, got {tuple(output.shape)}")
        results = [_decode_raw(x.T, conf, iou, max_det, classes, multi_label, agnostic, max_nms) for x in output]
    else:
        if output.shape[2] != 7:
            raise ValueError(f"e2e output must have shape (B, K, 7), got {tuple(output.shape)}")
        results = [_decode_e2e(x, conf, max_det, classes) for x in output]
    if letterbox is not None:
        results = [r.rescale(letterbox) for r in results]
    return results


def _class_filter(labels: torch.Tensor, classes) -> torch.Tensor:
    wanted = torch.as_tensor(list(classes), dtype=torch.int64, device=labels.device)
    return (labels[:, None] == wanted[None]).any(dim=1)


def _decode_raw(x, conf, iou, max_det, classes, multi_label, agnostic, max_nms) -> OrientedBoxes:
    # x: (N, 4+nc+1)
    box, cls_scores, angle = x[:, :4].float(), x[:, 4:-1].float(), x[:, -1:].float()
    xywhr = torch.cat((box, angle), dim=1)
    if multi_label:
        i, j = (cls_scores > conf).nonzero(as_tuple=True)
        xywhr, scores, labels = xywhr[i], cls_scores[i, j], j
    else:
        scores, labels = cls_scores.max(dim=1)
        keep = scores > conf
        xywhr, scores, labels = xywhr[keep], scores[keep], labels[keep]
    if classes is not None:
        keep = _class_filter(labels, classes)
        xywhr, scores, labels = xywhr[keep], scores[keep], labels[keep]
    if scores.numel() > max_nms:
        top = scores.topk(max_nms).indices
        xywhr, scores, labels = xywhr[top], scores[top], labels[top]
    keep = nms_rotated(xywhr, scores, iou, labels=None if agnostic else labels)[:max_det]
    return OrientedBoxes(xywhr[keep], scores[keep], labels[keep])


def _decode_e2e(x, conf, max_det, classes) -> OrientedBoxes:
    # x: (K, 7) = cx, cy, w, h, conf, cls, angle
    x = x.float()
    keep = x[:, 4] > conf
    if classes is not None:
        keep &= _class_filter(x[:, 5].round().to(torch.int64), classes)
    x = x[keep][:max_det]
    xywhr = torch.cat((x[:, :4], x[:, 6:7]), dim=1)
    return OrientedBoxes(xywhr, x[:, 4], x[:, 5].round().to(torch.int64))
