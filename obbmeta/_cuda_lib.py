"""The CUDA kernels (kernels/obbmeta_cuda.cu, built by setup.py when nvcc is available), loaded with ctypes.

``cuda_library()`` is None when they were not built; callers then run the host code on a copy of the data.
"""
from __future__ import annotations

import ctypes
from functools import lru_cache
from typing import Optional

import torch

from ._native import load_library

_p, _i64, _i32, _f64 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.c_double


@lru_cache(maxsize=None)
def cuda_library() -> Optional[ctypes.CDLL]:
    try:
        lib = load_library("_cuda")
    except (ImportError, OSError):
        return None
    lib.obbmeta_cuda_abi_version.restype = _i32
    if lib.obbmeta_cuda_abi_version() != 4:
        return None
    lib.obbmeta_cuda_error_string.argtypes = [_i32]
    lib.obbmeta_cuda_error_string.restype = ctypes.c_char_p
    lib.obbmeta_cuda_set_device.argtypes = [_i32]
    lib.obbmeta_cuda_iou.argtypes = [_p, _i64, _p, _i64, _p, _i32, _i32, _p]
    lib.obbmeta_cuda_nms_sizes.argtypes = [_i64, _i32, _i32, _i64, _p, _p]
    lib.obbmeta_cuda_nms.argtypes = [_i64, _p, _p, _i32, _p, _f64, _p, _i64, _i64, _p, _p, _p]
    lib.obbmeta_cuda_yolo_obb_sizes.argtypes = [_i64, _i64, _i64, _i32, _i32, _i64, _i64, _p, _p]
    lib.obbmeta_cuda_yolo_obb.argtypes = [_p, _i64, _i64, _i64, _i32, _i32, _f64, _f64, _p, _i64, _i64, _f64, _f64,
                                          _f64, _p, _i64, _i64, _p, _p, _p, _p, _p, _p]
    lib.obbmeta_cuda_draw_outlines.argtypes = [_p, _i32, _i32, _i32, _i64, _p, _i64, _p, _f64, _p, _p]
    lib.obbmeta_cuda_crop.argtypes = [_p, _i32, _i64, _p, _i64, _p, _p, _p, _p, _p]
    for name in ("obbmeta_cuda_set_device", "obbmeta_cuda_iou", "obbmeta_cuda_nms_sizes", "obbmeta_cuda_nms",
                 "obbmeta_cuda_yolo_obb_sizes", "obbmeta_cuda_yolo_obb", "obbmeta_cuda_draw_outlines",
                 "obbmeta_cuda_crop"):
        getattr(lib, name).restype = _i32
    return lib


def launch(device: torch.device, fn, *args) -> None:
    """Call a kernel entry point on `device` with torch's current stream appended; raise on a CUDA error."""
    lib = cuda_library()
    code = lib.obbmeta_cuda_set_device(device.index if device.index is not None else torch.cuda.current_device())
    if code == 0:
        code = fn(*args, ctypes.c_void_p(torch.cuda.current_stream(device).cuda_stream))
    if code != 0:
        raise RuntimeError(f"obbmeta CUDA kernel failed: {lib.obbmeta_cuda_error_string(code).decode()}")


def sizes(device: torch.device, entry: str, *args) -> "tuple[int, int]":
    """(workspace bytes, pool entries that suffice for any data) from the ``*_sizes`` entry point named `entry` on
    `device`. Host only (no device work, so it may run while a CUDA graph is being captured); cached, as the answer
    depends on the arguments and the device alone."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    return _sizes(index, entry, args)


@lru_cache(maxsize=256)
def _sizes(index: int, entry: str, args: tuple) -> "tuple[int, int]":
    lib = cuda_library()
    ws, bound = ctypes.c_int64(), ctypes.c_int64()
    code = lib.obbmeta_cuda_set_device(index)
    if code == 0:
        code = getattr(lib, entry)(*args, ctypes.byref(ws), ctypes.byref(bound))
    if code != 0:
        raise RuntimeError(f"obbmeta CUDA kernel sizes failed: {lib.obbmeta_cuda_error_string(code).decode()}")
    return ws.value, bound.value
