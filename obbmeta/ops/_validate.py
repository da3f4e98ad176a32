"""Argument checks shared by the ops: each error names the argument and the expected form."""
from __future__ import annotations

import math

import torch

from .._checks import box_tensor

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


def check_vector(name: str, values, n: int, device: torch.device, *, floating: bool) -> None:
    """Raise unless `values` is a length-n vector (floating: scores; else integer: labels) on `device`. Reads
    only shapes and dtypes, so it runs on fake tensors too."""
    kind = "a floating-point" if floating else "an integer"
    if not isinstance(values, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape ({n},), got {type(values).__name__}")
    if values.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},) to match the boxes, got {tuple(values.shape)}")
    if values.device != device:
        raise ValueError(f"{name} is on {values.device} but the boxes are on {device}; put them on one device")
    if floating != values.is_floating_point() or values.dtype == torch.bool:
        raise TypeError(f"{name} must be {kind} tensor, got {values.dtype}")


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
    check_vector("scores", scores, n, boxes.device, floating=True)
    if labels is not None:
        check_vector("labels", labels, n, boxes.device, floating=False)
    return as_threshold("iou_threshold", iou_threshold)


def as_threshold(name: str, value) -> float:
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a number in [0, 1], got {value!r}")
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise TypeError(f"{name} must be a number in [0, 1] (a float, or a tensor of one element), got a tensor "
                            f"of shape {tuple(value.shape)}")
        value = value.item()
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number in [0, 1], got {value!r}") from None
    if not (0.0 <= value <= 1.0) or math.isnan(value):
        raise ValueError(f"{name} must be in [0, 1], got {value}")
    return value
