"""Run a demo model over generated frames and score it with :func:`obbmeta.eval.evaluate` (mAP at IoU 0.5)."""
from __future__ import annotations

from typing import List, Sequence

import torch

from .. import decode
from ..boxes import OrientedBoxes
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
    AP and counts."""
    dets = predict(model, [f.image for f in frames], conf=conf, iou=iou, device=device)
    truths = [f.boxes for f in frames]
    names = frames[0].class_names
    try:
        from ..eval import evaluate
    except ImportError:  # TEMPORARY until the eval branch is merged
        mean, ap = _quick_map(dets, truths, len(names))
        evaluator = "quick (temporary)"
    else:
        res = evaluate(dets, truths, iou_threshold=0.5, metric="area")
        mean, ap = float(res.map), res.ap
        evaluator = "obbmeta.eval.evaluate(iou_threshold=0.5, metric='area')"
    return {
        "map50": float(mean),
        "evaluator": evaluator,
        "ap50": {names[c]: float(v) for c, v in sorted(ap.items())},
        "frames": len(frames),
        "ground_truths": int(sum(len(t) for t in truths)),
        "detections": int(sum(len(d) for d in dets)),
        "conf": conf,
        "nms_iou": iou,
    }


def _quick_map(dets, truths, nc):  # TEMPORARY: VOC all-point AP, greedy matching by score
    import numpy as np
    from ..ops import box_iou_rotated
    ap = {}
    for c in range(nc):
        recs, n_gt = [], 0
        for d, t in zip(dets, truths):
            dm, tm = d.labels == c, t.labels == c
            db, ds, tb = d.xywhr[dm], d.scores[dm], t.xywhr[tm]
            n_gt += len(tb)
            order = ds.argsort(descending=True)
            db, ds = db[order], ds[order]
            used = torch.zeros(len(tb), dtype=torch.bool)
            iou = box_iou_rotated(db, tb) if len(db) and len(tb) else torch.zeros(len(db), len(tb))
            for i in range(len(db)):
                ok = False
                if len(tb):
                    cand = iou[i].clone()
                    j = int(cand.argmax())
                    if cand[j] >= 0.5 and not used[j]:
                        used[j] = True
                        ok = True
                recs.append((float(ds[i]), ok))
        if n_gt == 0:
            continue
        recs.sort(key=lambda r: -r[0])
        tp = np.cumsum([r[1] for r in recs]) if recs else np.zeros(0)
        fp = np.cumsum([not r[1] for r in recs]) if recs else np.zeros(0)
        rec = tp / n_gt
        prec = tp / np.maximum(tp + fp, 1e-9)
        mrec = np.concatenate([[0], rec, [1]])
        mpre = np.concatenate([[0], prec, [0]])
        for i in range(len(mpre) - 2, -1, -1):
            mpre[i] = max(mpre[i], mpre[i + 1])
        idx = np.where(mrec[1:] != mrec[:-1])[0]
        ap[c] = float(np.sum((mrec[idx + 1] - mrec[idx]) * mpre[idx + 1]))
    return (float(np.mean(list(ap.values()))) if ap else float("nan")), ap
