"""NVMM frames as PyTorch tensors, zero-copy: a mapped ``memory:NVMM`` Gst.Buffer is NVIDIA's ``NvBufSurface`` (one
batched buffer of ``numFilled`` frames after nvstreammux), and each frame's pixels become a tensor view of the
surface's own memory (a CUDA tensor for device memory, a CPU tensor for system / pinned memory).

::

    with obbmeta.frames.map_surface(hash(gst_buffer)) as surface:     # a Gst.Buffer, or its address (pyds)
        for s in surface.surfaces:                                    # surfaceList[0 .. numFilled-1]
            rgba = s.tensors()                                        # (H, W, 4) uint8 view, rows pitched
            luma, chroma = s.tensors()                                # NV12: (H, W, 1) and (H/2, W/2, 2)

The views alias the buffer's memory: they are valid while the buffer is mapped (inside the ``with``) and alive;
``.clone()`` what you keep. ``frame_meta.batch_id`` indexes ``surfaces``.

Two C layouts exist (facts from NVIDIA's headers, written here in our own words): DeepStream 5.0-7.1
(``sizeof(NvBufSurface)`` 64, ``NvBufSurfaceParams`` 384 bytes) and DeepStream 8.0 and later (72 and 416: 8.0 added
``isImportedBuf``, ``cudaBuffer`` and two mapped-address pointers). Nothing inside the struct names its version, so
the layout is chosen by the mapped size (a producer wraps exactly ``sizeof(NvBufSurface)``) and every field read is
checked for plausibility; a buffer that matches neither layout is refused rather than guessed at. No GStreamer
Python bindings are needed (the map goes through ``libgstreamer-1.0`` with ctypes); torch is imported when a view
is made.
"""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterator

from ._pointers import gst_buffer_address

MAX_PLANES = 4
MAX_BATCH = 4096          # plausibility bound for batchSize (nvstreammux batches are far smaller)
MAX_SIDE = 1 << 16        # plausibility bound for a surface side in pixels

# NvBufSurfaceMemType (append-only enum; CUDA_ARRAY only in DeepStream 9).
MEM_DEFAULT, MEM_CUDA_PINNED, MEM_CUDA_DEVICE, MEM_CUDA_UNIFIED = 0, 1, 2, 3
MEM_SURFACE_ARRAY, MEM_HANDLE, MEM_SYSTEM, MEM_CUDA_ARRAY = 4, 5, 6, 7
MEM_TYPES = {0: "default", 1: "cuda-pinned", 2: "cuda-device", 3: "cuda-unified", 4: "surface-array",
             5: "handle", 6: "system", 7: "cuda-array"}
# Memory a CUDA tensor can view (DEFAULT is CUDA device memory on dGPU) / a CPU tensor can view.
CUDA_MEMORY = (MEM_DEFAULT, MEM_CUDA_DEVICE, MEM_CUDA_UNIFIED)
HOST_MEMORY = (MEM_CUDA_PINNED, MEM_SYSTEM)

LAYOUT_PITCH, LAYOUT_BLOCK_LINEAR = 0, 1

# NvBufSurfaceColorFormat values (the same in every DeepStream release) -> GStreamer format name, channels.
COLOR_FORMATS = {1: ("GRAY8", 1), 6: ("NV12", 1), 7: ("NV12_ER", 1), 19: ("RGBA", 4), 20: ("BGRA", 4),
                 21: ("ARGB", 4), 22: ("ABGR", 4), 23: ("RGBx", 4), 24: ("BGRx", 4), 25: ("xRGB", 4),
                 26: ("xBGR", 4), 27: ("RGB", 3), 28: ("BGR", 3)}
FORMAT_IDS = {name: k for k, (name, _) in COLOR_FORMATS.items()}


class SurfaceLayoutError(ValueError):
    """The mapped bytes are not an NvBufSurface of a known layout, or hold implausible values."""


# ---------------------------------------------------------------- C layouts

class PlaneParams(ctypes.Structure):
    """``NvBufSurfacePlaneParams`` (the same in every release, 232 bytes)."""
    _fields_ = [("num_planes", ctypes.c_uint32), ("width", ctypes.c_uint32 * MAX_PLANES),
                ("height", ctypes.c_uint32 * MAX_PLANES), ("pitch", ctypes.c_uint32 * MAX_PLANES),
                ("offset", ctypes.c_uint32 * MAX_PLANES), ("psize", ctypes.c_uint32 * MAX_PLANES),
                ("bytesPerPix", ctypes.c_uint32 * MAX_PLANES), ("_reserved", ctypes.c_void_p * 16)]


# Everything up to planeParams is shared by both layouts; they differ from mappedAddr on.
_PARAMS_HEAD = [("width", ctypes.c_uint32), ("height", ctypes.c_uint32), ("pitch", ctypes.c_uint32),
                ("colorFormat", ctypes.c_int32), ("layout", ctypes.c_int32), ("bufferDesc", ctypes.c_uint64),
                ("dataSize", ctypes.c_uint32), ("dataPtr", ctypes.c_void_p), ("planeParams", PlaneParams)]
_SURFACE_HEAD = [("gpuId", ctypes.c_uint32), ("batchSize", ctypes.c_uint32), ("numFilled", ctypes.c_uint32),
                 ("isContiguous", ctypes.c_bool), ("memType", ctypes.c_int32)]


class MappedAddr7(ctypes.Structure):
    _fields_ = [("addr", ctypes.c_void_p * MAX_PLANES), ("eglImage", ctypes.c_void_p),
                ("_reserved", ctypes.c_void_p * 4)]


class MappedAddr8(ctypes.Structure):
    _fields_ = [("addr", ctypes.c_void_p * MAX_PLANES), ("eglImage", ctypes.c_void_p), ("nvmmPtr", ctypes.c_void_p),
                ("cudaPtr", ctypes.c_void_p), ("_reserved", ctypes.c_void_p * 4)]


class SurfaceParams7(ctypes.Structure):
    """``NvBufSurfaceParams``, DeepStream 5.0-7.1 (384 bytes)."""
    _fields_ = _PARAMS_HEAD + [("mappedAddr", MappedAddr7), ("paramex", ctypes.c_void_p),
                               ("_reserved", ctypes.c_void_p * 3)]


class SurfaceParams8(ctypes.Structure):
    """``NvBufSurfaceParams``, DeepStream 8.0 and later (416 bytes)."""
    _fields_ = _PARAMS_HEAD + [("mappedAddr", MappedAddr8), ("paramex", ctypes.c_void_p),
                               ("cudaBuffer", ctypes.c_void_p), ("_reserved", ctypes.c_void_p * 4)]


class Surface7(ctypes.Structure):
    """``NvBufSurface``, DeepStream 5.0-7.1 (64 bytes)."""
    _fields_ = _SURFACE_HEAD + [("surfaceList", ctypes.POINTER(SurfaceParams7)), ("_reserved", ctypes.c_void_p * 4)]


class Surface8(ctypes.Structure):
    """``NvBufSurface``, DeepStream 8.0 and later (72 bytes)."""
    _fields_ = _SURFACE_HEAD + [("surfaceList", ctypes.POINTER(SurfaceParams8)), ("isImportedBuf", ctypes.c_bool),
                                ("_reserved", ctypes.c_void_p * 4)]


class CreateParams7(ctypes.Structure):
    """``NvBufSurfaceCreateParams``, DeepStream 5.0-7.1 (32 bytes)."""
    _fields_ = [("gpuId", ctypes.c_uint32), ("width", ctypes.c_uint32), ("height", ctypes.c_uint32),
                ("size", ctypes.c_uint32), ("isContiguous", ctypes.c_bool), ("colorFormat", ctypes.c_int32),
                ("layout", ctypes.c_int32), ("memType", ctypes.c_int32)]


class CreateParams8(ctypes.Structure):
    """``NvBufSurfaceCreateParams``, DeepStream 8.0 and later (64 bytes)."""
    _fields_ = CreateParams7._fields_ + [("_reserved", ctypes.c_void_p * 4)]


@dataclass(frozen=True)
class Layout:
    name: str
    surface: type
    params: type
    create_params: type


LAYOUTS = (Layout("DeepStream 8.0+", Surface8, SurfaceParams8, CreateParams8),
           Layout("DeepStream 5.0-7.1", Surface7, SurfaceParams7, CreateParams7))
LAYOUT_BY_SIZE = {ctypes.sizeof(lay.surface): lay for lay in LAYOUTS}
assert sorted(LAYOUT_BY_SIZE) == [64, 72] and ctypes.sizeof(SurfaceParams7) == 384 \
    and ctypes.sizeof(SurfaceParams8) == 416 and ctypes.sizeof(CreateParams8) == 64


# ---------------------------------------------------------------- parsed surfaces

@dataclass(frozen=True)
class Plane:
    width: int
    height: int
    pitch: int
    offset: int
    bytes_per_pixel: int


@dataclass(frozen=True)
class FrameSurface:
    """One frame of a batched surface (``surfaceList[index]``), with its pixels reachable as tensor views."""
    index: int
    width: int
    height: int
    pitch: int
    color_format: int
    format_name: str
    data_ptr: int
    data_size: int
    planes: tuple[Plane, ...]
    mem_type: int
    gpu_id: int

    @property
    def is_cuda(self) -> bool:
        return self.mem_type in CUDA_MEMORY

    def tensors(self) -> Any:
        """Zero-copy views: (H, W, C) uint8 for packed RGB formats; ``(luma (H, W, 1), chroma (H/2, W/2, 2))`` for
        NV12; ``(luma,)`` for GRAY8. Rows keep the surface's pitch (``stride(0) == pitch``)."""
        if self.format_name in ("NV12", "NV12_ER"):
            y, uv = self.planes[0], self.planes[1]
            return (self._view(y.offset, y.height, y.width, 1, y.pitch),
                    self._view(uv.offset, uv.height, uv.width, 2, uv.pitch))
        if self.format_name == "GRAY8":
            p = self.planes[0]
            return (self._view(p.offset, p.height, p.width, 1, p.pitch),)
        channels = COLOR_FORMATS[self.color_format][1]
        return self._view(self.planes[0].offset, self.height, self.width, channels, self.pitch)

    def _view(self, offset: int, rows: int, cols: int, channels: int, pitch: int) -> Any:
        nbytes = pitch * (rows - 1) + cols * channels
        if offset + nbytes > self.data_size:
            raise SurfaceLayoutError(f"surface {self.index}: a {rows}x{cols}x{channels} plane at offset {offset} "
                                     f"with pitch {pitch} needs {offset + nbytes} bytes, dataSize is {self.data_size}")
        return _tensor_view(self.data_ptr + offset, (rows, cols, channels), (pitch, channels, 1), nbytes,
                            self.mem_type, self.gpu_id)


@dataclass(frozen=True)
class BatchedSurface:
    """A parsed ``NvBufSurface``: ``surfaces`` are the ``numFilled`` frames, in ``surfaceList`` order."""
    address: int
    layout: str
    gpu_id: int
    batch_size: int
    num_filled: int
    mem_type: int
    surfaces: tuple[FrameSurface, ...]

    @property
    def format_name(self) -> str:
        names = {s.format_name for s in self.surfaces}
        return names.pop() if len(names) == 1 else ",".join(sorted(names)) if names else ""


def read_surface(address: int, size: int) -> BatchedSurface:
    """Parse the ``NvBufSurface`` at ``address``; ``size`` is the mapped size (``GstMapInfo.size``), which picks the
    layout. Raises :class:`SurfaceLayoutError` for an unknown size or implausible contents."""
    if not isinstance(address, int) or isinstance(address, bool) or address <= 0:
        raise ValueError(f"address must be a positive int (an NvBufSurface*), got {address!r}")
    layout = LAYOUT_BY_SIZE.get(size)
    if layout is None:
        raise SurfaceLayoutError(f"a mapped NVMM buffer of {size} bytes is no NvBufSurface obbmeta knows (64 bytes: "
                                 "DeepStream 5.0-7.1, 72 bytes: DeepStream 8.0+); refusing to guess")
    s = layout.surface.from_address(address)
    where = f"NvBufSurface ({layout.name} layout)"
    if not 0 < s.batchSize <= MAX_BATCH or s.numFilled > s.batchSize:
        raise SurfaceLayoutError(f"{where}: implausible batchSize {s.batchSize} / numFilled {s.numFilled}")
    if s.memType not in MEM_TYPES:
        raise SurfaceLayoutError(f"{where}: unknown memType {s.memType}")
    if s.numFilled and not s.surfaceList:
        raise SurfaceLayoutError(f"{where}: surfaceList is NULL")
    frames = tuple(_frame(s.surfaceList[i], i, s.memType, s.gpuId, where) for i in range(s.numFilled))
    return BatchedSurface(address, layout.name, int(s.gpuId), int(s.batchSize), int(s.numFilled), int(s.memType),
                          frames)


def _frame(p: Any, index: int, mem_type: int, gpu_id: int, where: str) -> FrameSurface:
    where = f"{where} surfaceList[{index}]"
    if not (0 < p.width <= MAX_SIDE and 0 < p.height <= MAX_SIDE):
        raise SurfaceLayoutError(f"{where}: implausible size {p.width}x{p.height}")
    if p.colorFormat not in COLOR_FORMATS:
        raise SurfaceLayoutError(f"{where}: colour format {p.colorFormat} is not one obbmeta reads (supported: "
                                 + ", ".join(n for n, _ in COLOR_FORMATS.values()) + "); convert with nvvideoconvert")
    if p.layout != LAYOUT_PITCH:
        raise SurfaceLayoutError(f"{where}: layout {p.layout} (block linear) cannot be viewed as a tensor; use "
                                 "pitch-linear surfaces (nvvideoconvert's default on dGPU)")
    name, channels = COLOR_FORMATS[p.colorFormat]
    pp = p.planeParams
    want_planes = 2 if name.startswith("NV12") else 1
    if not want_planes <= pp.num_planes <= MAX_PLANES:
        raise SurfaceLayoutError(f"{where}: {name} needs {want_planes} planes, planeParams says {pp.num_planes}")
    planes = tuple(Plane(pp.width[k], pp.height[k], pp.pitch[k], pp.offset[k], pp.bytesPerPix[k])
                   for k in range(pp.num_planes))
    if p.pitch < p.width * channels or planes[0].pitch != p.pitch:
        raise SurfaceLayoutError(f"{where}: pitch {p.pitch} (plane 0: {planes[0].pitch}) is too small for "
                                 f"{p.width} {name} pixels")
    if not p.dataPtr:
        raise SurfaceLayoutError(f"{where}: dataPtr is NULL")
    return FrameSurface(index, int(p.width), int(p.height), int(p.pitch), int(p.colorFormat), name, int(p.dataPtr),
                        int(p.dataSize), planes, int(mem_type), int(gpu_id))


# ---------------------------------------------------------------- tensor views

class _CudaArray:
    """Just enough of ``__cuda_array_interface__`` (v3) for ``torch.as_tensor`` to alias device memory."""

    def __init__(self, ptr: int, shape: tuple, strides: tuple):
        self.__cuda_array_interface__ = {"shape": shape, "strides": strides, "typestr": "|u1", "data": (ptr, False),
                                         "version": 3}


def _tensor_view(ptr: int, shape: tuple, strides: tuple, nbytes: int, mem_type: int, gpu_id: int) -> Any:
    import torch

    if mem_type in CUDA_MEMORY:
        return torch.as_tensor(_CudaArray(ptr, shape, strides), device=f"cuda:{gpu_id}")
    if mem_type in HOST_MEMORY:
        flat = torch.frombuffer((ctypes.c_uint8 * nbytes).from_address(ptr), dtype=torch.uint8)
        return flat.as_strided(shape, strides)
    raise SurfaceLayoutError(f"memType {MEM_TYPES.get(mem_type, mem_type)} (Jetson surface arrays / handles, CUDA "
                             "arrays) has no linear address to view; convert to CUDA device memory with nvvideoconvert")


# ---------------------------------------------------------------- mapping a GstBuffer

class _GstMapInfo(ctypes.Structure):
    _fields_ = [("memory", ctypes.c_void_p), ("flags", ctypes.c_int), ("data", ctypes.c_void_p),
                ("size", ctypes.c_size_t), ("maxsize", ctypes.c_size_t), ("user_data", ctypes.c_void_p * 4),
                ("_gst_reserved", ctypes.c_void_p * 4)]


GST_MAP_READ, GST_MAP_WRITE = 1, 2


@lru_cache(maxsize=1)
def _gst() -> ctypes.CDLL:
    name = ctypes.util.find_library("gstreamer-1.0") or "libgstreamer-1.0.so.0"
    try:
        lib = ctypes.CDLL(name)
    except OSError as exc:
        raise ImportError(f"obbmeta.frames maps Gst.Buffers through libgstreamer-1.0, which could not be loaded: "
                          f"{exc}") from exc
    lib.gst_buffer_map.argtypes = [ctypes.c_void_p, ctypes.POINTER(_GstMapInfo), ctypes.c_int]
    lib.gst_buffer_map.restype = ctypes.c_int
    lib.gst_buffer_unmap.argtypes = [ctypes.c_void_p, ctypes.POINTER(_GstMapInfo)]
    lib.gst_buffer_unmap.restype = None
    return lib


@contextlib.contextmanager
def map_buffer(buf: Any, write: bool = False) -> Iterator[tuple[int, int]]:
    """``gst_buffer_map`` for the duration of the block: yields ``(data address, size)``."""
    lib = _gst()
    info = _GstMapInfo()
    address = gst_buffer_address(buf)
    if not lib.gst_buffer_map(address, ctypes.byref(info), GST_MAP_READ | (GST_MAP_WRITE if write else 0)):
        raise RuntimeError("gst_buffer_map failed" + (" (is the buffer writable?)" if write else ""))
    try:
        yield int(info.data or 0), int(info.size)
    finally:
        lib.gst_buffer_unmap(address, ctypes.byref(info))


@contextlib.contextmanager
def map_surface(buf: Any, write: bool = False) -> Iterator[BatchedSurface]:
    """Map a ``memory:NVMM`` Gst.Buffer (or its ``GstBuffer*``) and yield its parsed :class:`BatchedSurface`; the
    tensor views of its frames are valid inside the block. ``write`` maps for writing too (drawing into frames)."""
    with map_buffer(buf, write) as (address, size):
        if not address:
            raise SurfaceLayoutError("the buffer mapped to no memory")
        yield read_surface(address, size)

