"""Training targets and loss for :class:`obbmeta.models.detector.OBBDetector`.

Assignment (static, per image): a stride-8 cell is a candidate for a ground-truth box when its centre lies within
1.5 cells of the box centre and inside the box grown by half a cell on each side; the cell nearest to the centre
is always a candidate. A cell claimed by several boxes goes to the one whose centre is nearest.

Box loss: each box is treated as a 2-D Gaussian (mean = centre, covariance = R diag(w^2, h^2) R^T / 12, the
second moments of a uniform rectangle) and compared by the Hellinger distance derived from the Bhattacharyya
distance between the two Gaussians (the idea behind ProbIoU, Llerena et al. 2021). A Gaussian does not change when
the angle turns by pi or when w and h swap with a quarter turn, so the loss has no discontinuity at the angle
range's ends. It cannot see the angle of a square (its Gaussian is round), so a second term, sin^2(2 (a - a_gt))
computed from the predicted angle vector, sets the angle modulo pi/2 — which is all a square has.
"""
from __future__ import annotations

from typing import Dict, Tuple

import torch
import torch.nn.functional as F

from .detector import BOX_CHANNELS, STRIDE, cell_centres, decode_boxes


def gaussian(boxes: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(..., 5) boxes -> centre (..., 2) and covariance entries sxx, syy, sxy (...,)."""
    w2, h2 = boxes[..., 2].square() / 12.0, boxes[..., 3].square() / 12.0
    cos2, sin2 = torch.cos(2 * boxes[..., 4]), torch.sin(2 * boxes[..., 4])
    mean, half_diff = (w2 + h2) / 2, (w2 - h2) / 2
    return boxes[..., :2], mean + half_diff * cos2, mean - half_diff * cos2, half_diff * sin2


def bhattacharyya(pred: torch.Tensor, target: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Bhattacharyya distance between the Gaussians of two sets of (..., 5) boxes (elementwise)."""
    m1, a1, b1, c1 = gaussian(pred)
    m2, a2, b2, c2 = gaussian(target)
    a, b, c = (a1 + a2) / 2, (b1 + b2) / 2, (c1 + c2) / 2
    det = (a * b - c * c).clamp(min=eps)
    dx, dy = m1[..., 0] - m2[..., 0], m1[..., 1] - m2[..., 1]
    mahalanobis = (b * dx * dx - 2 * c * dx * dy + a * dy * dy) / det
    det1 = (a1 * b1 - c1 * c1).clamp(min=eps)
    det2 = (a2 * b2 - c2 * c2).clamp(min=eps)
    return mahalanobis / 8 + 0.5 * torch.log(det / torch.sqrt(det1 * det2))


def hellinger(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """sqrt(1 - BC) in [0, 1]: 0 for the same Gaussian (1 - ProbIoU)."""
    coefficient = torch.exp(-bhattacharyya(pred, target).clamp(max=50.0))
    return torch.sqrt((1 - coefficient).clamp(min=0) + 1e-7)


@torch.no_grad()
def assign(gt_boxes: torch.Tensor, gt_valid: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """(B, G, 5) boxes, (B, G) valid mask -> (B, N) index of the box each cell learns, -1 for background."""
    gx, gy = cell_centres(height, width, gt_boxes.device)
    dx = gx[None, None] - gt_boxes[..., 0:1]  # (B, G, N)
    dy = gy[None, None] - gt_boxes[..., 1:2]
    dist = torch.sqrt(dx * dx + dy * dy)
    cos, sin = torch.cos(gt_boxes[..., 4:5]), torch.sin(gt_boxes[..., 4:5])
    u, v = dx * cos + dy * sin, -dx * sin + dy * cos
    inside = (u.abs() <= gt_boxes[..., 2:3] / 2 + STRIDE / 2) & (v.abs() <= gt_boxes[..., 3:4] / 2 + STRIDE / 2)
    cand = inside & (dist <= 1.5 * STRIDE)
    nearest = dist.argmin(dim=2, keepdim=True)
    cand.scatter_(2, nearest, True)
    cand &= gt_valid[..., None]
    best, index = torch.where(cand, dist, torch.full_like(dist, float("inf"))).min(dim=1)  # (B, N)
    return torch.where(torch.isfinite(best), index, torch.full_like(index, -1))


def detection_loss(raw: torch.Tensor, height: int, width: int, gt_boxes: torch.Tensor,
                   gt_labels: torch.Tensor, gt_valid: torch.Tensor, angle_weight: float = 1.0,
                   box_weight: float = 5.0, centre_weight: float = 1.0) -> Tuple[torch.Tensor, Dict[str, torch.Tensor]]:
    """Total loss and its parts (detached tensors, so logging costs no sync until read) for raw predictions
    (B, N, 6 + nc) against padded ground truth: boxes (B, G, 5), labels (B, G) int64, valid (B, G) bool."""
    raw = raw.float()
    index = assign(gt_boxes, gt_valid, height, width)
    positive = index >= 0
    num_pos = positive.sum().clamp(min=1).float()
    logits = raw[..., BOX_CHANNELS:]
    target = torch.zeros_like(logits)
    b_idx, n_idx = positive.nonzero(as_tuple=True)
    g_idx = index[b_idx, n_idx]
    labels = gt_labels[b_idx, g_idx]
    target[b_idx, n_idx, labels] = 1.0
    cls_loss = F.binary_cross_entropy_with_logits(logits, target, reduction="sum") / num_pos
    if b_idx.numel():
        gx, gy = cell_centres(height, width, raw.device)
        sel = raw[b_idx, n_idx]
        pred = decode_boxes(sel, gx[n_idx], gy[n_idx])
        truth = gt_boxes[b_idx, g_idx]
        box_loss = hellinger(pred, truth).mean()
        centre_loss = ((pred[:, :2] - truth[:, :2]).abs() / STRIDE).sum(1).mean()
        vec = F.normalize(sel[:, 4:6], dim=1, eps=1e-6)
        cos2d = vec[:, 0] * torch.cos(2 * truth[:, 4]) + vec[:, 1] * torch.sin(2 * truth[:, 4])
        angle_loss = (1 - cos2d * cos2d).mean()
    else:
        box_loss = centre_loss = angle_loss = raw.sum() * 0
    total = cls_loss + box_weight * box_loss + centre_weight * centre_loss + angle_weight * angle_loss
    parts = {"cls": cls_loss.detach(), "box": box_loss.detach(), "centre": centre_loss.detach(),
             "angle": angle_loss.detach(), "positives": num_pos.detach()}
    return total, parts
