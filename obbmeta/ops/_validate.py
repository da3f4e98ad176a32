"""The ops' own checks (argument sets of each operator, the values' range); the generic checks live in
obbmeta._validators."""
from __future__ import annotations

import torch

from .._validators import box_tensor, threshold, vector_tensor

# float64 boxes must stay within this magnitude: the exact IoU multiplies sides and offsets (w * h, dx * dx), which
# overflow a double beyond about 1e154. float32 boxes only need to be finite (their products always fit a double).
FLOAT64_BOX_LIMIT = 1e150


def working_dtype(t: torch.Tensor) -> torch.dtype:
    """The precision obbmeta computes in for a floating tensor: float64 stays float64, other floats are float32."""
    return torch.float64 if t.dtype == torch.float64 else torch.float32


def boxes_in_range(boxes: torch.Tensor) -> torch.Tensor:
    """0-d bool tensor (no host sync): every value finite and, for float64, within FLOAT64_BOX_LIMIT."""
    limit = FLOAT64_BOX_LIMIT if boxes.dtype == torch.float64 else torch.finfo(boxes.dtype).max
    return (boxes.abs() <= limit).all()  # NaN fails the comparison


def range_error(name: str, boxes: torch.Tensor) -> ValueError:
    if not bool(torch.isfinite(boxes).all()):
        return ValueError(f"{name} contains NaN or inf; every box must be finite")
    return ValueError(f"{name} has values beyond +-{FLOAT64_BOX_LIMIT:g} (float64): the exact IoU of such boxes would "
                      "overflow a double; rescale the coordinates")


def check_in_range(name: str, boxes: torch.Tensor) -> None:
    """Raise unless every value of `boxes` is finite (and, for float64, within FLOAT64_BOX_LIMIT). Reads one bool
    from the device: the operators' kernels call it, where torch.compile does not trace."""
    if boxes.numel() and not bool(boxes_in_range(boxes)):
        raise range_error(name, boxes)


def check_finite(name: str, values: torch.Tensor) -> None:
    """Raise unless every value of the vector `values` is finite (one bool read from the device; kernels only)."""
    if values.numel() and not bool(torch.isfinite(values).all()):
        raise ValueError(f"{name} contains NaN or inf")


def as_boxes(name: str, boxes, *, check_finite: bool = True) -> torch.Tensor:
    """Validate an (N, 5) [cx, cy, w, h, angle] tensor and return it contiguous, float64 if it was float64, else
    float32 (float16 / bfloat16 widen exactly)."""
    boxes = box_tensor(name, boxes)
    boxes = boxes.to(working_dtype(boxes)).contiguous()
    if check_finite:
        check_in_range(name, boxes)
    return boxes


def check_iou_args(boxes1, boxes2, aligned: bool) -> None:
    """The arguments of box_iou_rotated: two (N, 5) / (M, 5) floating tensors on one device, N == M when aligned.
    Shapes and dtypes only: the wrapper, the kernels and the fake kernel all call it."""
    box_tensor("boxes1", boxes1)
    box_tensor("boxes2", boxes2)
    if boxes1.device != boxes2.device:
        raise ValueError(f"boxes1 is on {boxes1.device} but boxes2 is on {boxes2.device}; put them on one device")
    if aligned and boxes1.shape[0] != boxes2.shape[0]:
        raise ValueError(
            f"aligned=True needs boxes1 and boxes2 of equal length, got {boxes1.shape[0]} and {boxes2.shape[0]}"
        )


def check_nms_args(boxes, scores, labels, iou_threshold) -> float:
    """The arguments of nms_rotated (shapes, dtypes, devices, threshold); returns the threshold as a float. Like
    check_iou_args, called by the wrapper, the kernels and the fake kernel."""
    box_tensor("boxes", boxes)
    n = boxes.shape[0]
    vector_tensor("scores", scores, n, boxes.device, floating=True)
    if labels is not None:
        vector_tensor("labels", labels, n, boxes.device, floating=False)
    return threshold("iou_threshold", iou_threshold)
