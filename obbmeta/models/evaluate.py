"""Run a demo model over generated frames and score it with :func:`obbmeta.eval.evaluate` (mAP at IoU 0.5)."""
from __future__ import annotations

import math
from typing import List, Sequence

import torch

from .. import decode
from ..boxes import OrientedBoxes
from ..eval import evaluate
from .preprocess import letterbox_frames

# Low enough to trace the whole precision-recall curve for AP; a display would use 0.25 or more.
EVAL_CONF = 0.01
NMS_IOU = 0.5


@torch.no_grad()
def predict(model, images: Sequence, conf: float = EVAL_CONF, iou: float = NMS_IOU, batch: int = 16,
            device=None) -> List[OrientedBoxes]:
    """Detections (in frame pixels, on the CPU) for a list of (H, W, 3) uint8 RGB frames of one size."""
    device = torch.device(device) if device is not None else next(model.parameters()).device
    out = []
    for i in range(0, len(images), batch):
        x, lb = letterbox_frames([torch.as_tensor(im) for im in images[i:i + batch]], model.input_size)
        raw = model(x.to(device))
        out += [d.to("cpu") for d in decode.yolo_obb(raw.float(), conf=conf, iou=iou, letterbox=lb)]
    return out


def score(model, frames, conf: float = EVAL_CONF, iou: float = NMS_IOU, device=None) -> dict:
    """mAP50 (VOC all-point area AP, :func:`obbmeta.eval.evaluate`) of ``model`` on scene frames, with per-class
    AP (None for a class without ground truth) and counts."""
    dets = predict(model, [f.image for f in frames], conf=conf, iou=iou, device=device)
    truths = [f.boxes for f in frames]
    names = list(frames[0].class_names)
    res = evaluate(dets, truths, iou_threshold=0.5, metric="area", num_classes=len(names))
    return {
        "map50": float(res.map),
        "evaluator": "obbmeta.eval.evaluate(iou_threshold=0.5, metric='area')",
        "ap50": {names[c]: (None if math.isnan(v) else float(v)) for c, v in sorted(res.ap.items())},
        "frames": len(frames),
        "ground_truths": int(sum(len(t) for t in truths)),
        "detections": int(sum(len(d) for d in dets)),
        "conf": conf,
        "nms_iou": iou,
    }

