"""What the metadata writers and readers take as input, normalised once for all of them: arrays (NumPy or torch,
without importing torch), GPU tensors brought to the host with one synchronisation, batches and frames given as
wrappers or as raw addresses, and the frame size used for clipping. Package-internal: obbs, display and objects
share it."""
from __future__ import annotations

import ctypes
import sys
from typing import Any

import numpy as np

from .._validators import frame_size, is_int
from .batch import BatchMeta, FrameMeta


def to_numpy(value: Any, name: str) -> np.ndarray:
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # torch.Tensor, without importing torch
        value = value.detach().cpu().numpy()
    elif not isinstance(value, np.ndarray):
        try:
            value = np.asarray(value)
        except Exception as exc:  # noqa: BLE001
            raise TypeError(f"{name} must be a torch.Tensor or numpy array, got {type(value).__name__}") from exc
    return value


def to_host_once(*values: Any) -> tuple[Any, ...]:
    """GPU tensors come to the host with asynchronous copies and a single synchronisation (not one per tensor)."""
    devices = set()
    for v in values:
        if v is None or type(v) is np.ndarray or not hasattr(v, "detach"):
            continue
        if v.device.type != "cpu":
            devices.add(v.device)
    if not devices:
        return values
    torch = sys.modules["torch"]  # a non-CPU tensor exists, so torch is imported
    out = tuple(v.detach().to("cpu", non_blocking=True)
                if v is not None and type(v) is not np.ndarray and hasattr(v, "detach") and v.device.type != "cpu"
                else v for v in values)
    for device in devices:
        if device.type == "cuda":
            torch.cuda.current_stream(device).synchronize()
    return out


def address_of(a: np.ndarray) -> int:
    """Data address of a contiguous array (a third of the cost of ``a.ctypes.data``; read-only arrays fall back)."""
    if not a.size:
        return 0
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(a))
    except (TypeError, ValueError):
        return a.ctypes.data


def batch_of(batch: Any) -> BatchMeta:
    if isinstance(batch, BatchMeta):
        return batch
    if is_int(batch):
        return BatchMeta.from_address(batch)
    raise TypeError(f"batch must be an obbmeta.nvds.BatchMeta or an NvDsBatchMeta* int, got {type(batch).__name__}")


def frame_of(frame: Any, batch: BatchMeta) -> FrameMeta:
    if isinstance(frame, FrameMeta):
        return frame
    if is_int(frame):
        return FrameMeta(frame, batch)
    raise TypeError(f"frame must be an obbmeta.nvds.FrameMeta or an NvDsFrameMeta* int, got {type(frame).__name__}")


# NvOSD pixel coordinates (text offsets, line end points) are unsigned 32-bit: a frame can be at most 2**32 wide.
MAX_FRAME_SIDE = 2**32


def frame_size_of(frame: FrameMeta, size: Any) -> tuple[float, float]:
    """``size`` (the caller's ``frame_size=``) checked, or the frame meta's own size when it is None."""
    if size is None:
        size = frame.size
        if size is None:
            raise ValueError("the frame meta has neither pipeline_width/height nor source_frame_width/height set; "
                             "pass frame_size=(width, height) of the batched surface")
        return float(size[0]), float(size[1])
    return frame_size("frame_size", size, MAX_FRAME_SIDE, "2**32 (NvOSD pixel coordinates are unsigned 32-bit)")


def reader_frame(frame: Any, batch: Any = None) -> FrameMeta:
    """The frame a reader was given: a FrameMeta, or an NvDsFrameMeta* int (checked: a frame of ``batch``, or
    without a batch, readable memory holding a frame meta)."""
    if isinstance(frame, FrameMeta):
        return frame
    if is_int(frame):
        return FrameMeta(frame, batch_of(batch) if batch is not None else None)
    raise TypeError(f"frame must be an obbmeta.nvds.FrameMeta or an NvDsFrameMeta* int, got {type(frame).__name__}")
