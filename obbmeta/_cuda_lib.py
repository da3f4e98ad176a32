"""The CUDA kernels (kernels/obbmeta_cuda.cu, built by setup.py when nvcc is available), loaded with ctypes.

``cuda_library()`` is None when they were not built; callers then run the host code on a copy of the data. A build
that is there but does not match this Python code (another ABI version, e.g. after a ``git pull`` without a
rebuild) is not used either, but never silently: the first call warns once with a :class:`StaleLibraryWarning`
naming the file and the fix, and ``obbmeta doctor`` reports it as a problem.
"""
from __future__ import annotations

import ctypes
import warnings
from functools import lru_cache
from typing import Optional

import torch

from ._native import NativeLibrary, StaleLibraryWarning

_p, _i64, _i32, _f64 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.c_double

_FUNCTIONS = {
    "obbmeta_cuda_error_string": (ctypes.c_char_p, [_i32]),
    "obbmeta_cuda_set_device": (_i32, [_i32]),
    "obbmeta_cuda_iou": (_i32, [_p, _i64, _p, _i64, _p, _i32, _i32, _p]),
    "obbmeta_cuda_nms_sizes": (_i32, [_i64, _i32, _i32, _i64, _p, _p]),
    "obbmeta_cuda_nms": (_i32, [_i64, _p, _p, _i32, _p, _f64, _p, _i64, _i64, _p, _p, _p, _p]),
    "obbmeta_cuda_yolo_obb_sizes": (_i32, [_i64, _i64, _i64, _i32, _i32, _i64, _i64, _p, _p]),
    "obbmeta_cuda_yolo_obb": (_i32, [_p, _i64, _i64, _i64, _i32, _i32, _f64, _f64, _p, _p, _p, _i64, _i64, _f64,
                                     _f64, _f64, _p, _i64, _i64, _p, _p, _p, _p, _p, _p, _p]),
    "obbmeta_cuda_draw_outlines_batch": (_i32, [_p, _p, _p, _p, _p, _i32, _i32, _p, _p, _i64, _p, _f64, _p]),
    "obbmeta_cuda_crop": (_i32, [_p, _i32, _i64, _p, _i64, _p, _p, _p, _p, _p]),
}
CUDA = NativeLibrary(
    "_cuda", "CUDA kernels", abi=8, abi_function="obbmeta_cuda_abi_version", functions=_FUNCTIONS,
    # Every entry point only queues work on the stream it is given (no synchronisation, no allocation) or answers
    # from the host, so none can wait on another thread: all keep the interpreter lock (NativeLibrary.held). A
    # launch that released it would wait up to Python's switch interval to get it back while another element's
    # thread runs Python (obboverlay's 16 draws of a batch: 32 such waits).
    held=tuple(name for name in _FUNCTIONS if name != "obbmeta_cuda_error_string"))


def cuda_problem() -> Optional[str]:
    """Why the CUDA kernels that are there cannot be used (stale or not loadable), or None: they load, or they were
    not built (see ``obbmeta doctor`` for the build record)."""
    if CUDA.path() is None:
        return None
    state, why = CUDA.status()
    return None if state == "loaded" else why


@lru_cache(maxsize=None)
def cuda_library() -> Optional[ctypes.CDLL]:
    """The loaded CUDA kernels, or None (not built, or not usable: then warned once) for the host fallback."""
    if CUDA.path() is None:
        return None
    try:
        return CUDA.load()
    except (ImportError, OSError) as exc:
        warnings.warn(StaleLibraryWarning(f"obbmeta's CUDA kernels are not used, CUDA tensors run the host code on "
                                          f"a copy: {exc}"), stacklevel=2)
        return None


def _on_device(lib, index: int | None, call) -> int:
    """``call(index)`` (an entry point's code) with the thread's current device set to ``index`` (None: the current
    one), and what it was before afterwards: a kernel on cuda:1 must not move the caller's later
    ``torch.empty(..., device="cuda")`` there. Set also when it is the current one already: that binds this library's
    runtime to the device. The code of cudaSetDevice when that fails. (A plain function, not a context manager: it
    runs once per op call.)"""
    previous = torch.cuda.current_device()
    index = previous if index is None else index
    code = lib.obbmeta_cuda_set_device_held(index)
    try:
        return call(index) if code == 0 else code
    finally:
        if index != previous:
            lib.obbmeta_cuda_set_device_held(previous)


_RAW_STREAM = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def _raw_stream(index: int) -> int:
    """torch's current stream on device `index` as a cudaStream_t (an int): torch's own accessor when it has one (what
    code torch.compile generates calls; a tenth of the cost of building a torch.cuda.Stream), else the Stream's."""
    return _RAW_STREAM(index) if _RAW_STREAM is not None else torch.cuda.current_stream(index).cuda_stream


def launch(device: torch.device, fn, *args) -> None:
    """Call a kernel entry point on `device` with torch's current stream appended, keeping the interpreter lock (its
    ``_held`` form); raise on a CUDA error."""
    lib = cuda_library()
    fn = getattr(lib, fn.__name__ + "_held")
    code = _on_device(lib, device.index, lambda index: fn(*args, _raw_stream(index)))
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
    code = _on_device(lib, index, lambda _: getattr(lib, entry + "_held")(*args, ctypes.byref(ws), ctypes.byref(bound)))
    if code != 0:
        raise RuntimeError(f"obbmeta CUDA kernel sizes failed: {lib.obbmeta_cuda_error_string(code).decode()}")
    return ws.value, bound.value
