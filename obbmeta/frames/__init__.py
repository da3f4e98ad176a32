"""Frames in, the first stage of the data path: NVMM buffers as tensors (this module), their pixel formats
(:mod:`obbmeta.frames.pixels`), the letterbox that maps a frame to a model's input and back
(:mod:`obbmeta.frames.letterbox`) and nvinfer's preprocessing on frames (:mod:`obbmeta.frames.preprocess`).

NVMM frames as PyTorch tensors, zero-copy: a mapped ``memory:NVMM`` Gst.Buffer is NVIDIA's ``NvBufSurface`` (one
batched buffer of ``numFilled`` frames after nvstreammux), and each frame's pixels become tensor views of the
surface's own memory (CUDA tensors for device memory, CPU tensors for system / pinned memory).

::

    with obbmeta.frames.map_surface(hash(gst_buffer)) as surface:     # a Gst.Buffer, or its address (pyds)
        for s in surface.surfaces:                                    # surfaceList[0 .. numFilled-1]
            s.format_name                                             # "RGBA", "NV12_709", "YUV420", ...
            rgba = s.tensors()                                        # packed: (H, W, 4) uint8 view, rows pitched
            luma, chroma = s.tensors()                                # NV12: (H, W, 1) and (H/2, W/2, 2)
            rgb = obbmeta.frames.pixels.to_rgb(s.tensors(), s.format_name)   # any format -> (3, H, W) float RGB

Every ``NvBufSurfaceColorFormat`` of :mod:`obbmeta.frames.pixels`' table is read (its planes, as that table lays them
out); the others are refused naming the format and the reason. The views alias the buffer's memory: they are valid
while the buffer is mapped (inside the ``with``) and alive; ``.clone()`` what you keep. ``frame_meta.batch_id``
indexes ``surfaces``; a batch with ``numFilled`` 0 has no surfaces.

Two C layouts exist (facts from NVIDIA's headers, written here in our own words): DeepStream 5.0-7.1
(``sizeof(NvBufSurface)`` 64, ``NvBufSurfaceParams`` 384 bytes) and DeepStream 8.0 and later (72 and 416: 8.0 added
``isImportedBuf``, ``cudaBuffer`` and two mapped-address pointers). Nothing inside the struct names its version, so
the layout is chosen by the mapped size (a producer wraps exactly ``sizeof(NvBufSurface)``) and every field read is
checked: the structs are copied through :mod:`obbmeta._pointers` (a forged ``surfaceList`` raises instead of
crashing), sizes must be plausible, every plane must fit its format and ``dataSize`` without overlapping another,
system-memory planes must lie in memory this process has mapped, and CUDA planes inside one CUDA allocation on the
surface's ``gpuId`` (asked of the CUDA driver before a tensor is made). A buffer that matches neither layout is
refused rather than guessed at. No GStreamer Python bindings are needed (the map goes through ``libgstreamer-1.0``
with ctypes); torch is imported when a view is made.
"""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterator

from .. import _pointers
from .._pointers import gst_buffer_address
from . import pixels

MAX_PLANES = 4
MAX_BATCH = 4096          # plausibility bound for batchSize (nvstreammux batches are far smaller)

# NvBufSurfaceMemType (append-only enum; CUDA_ARRAY only in DeepStream 9).
MEM_DEFAULT, MEM_CUDA_PINNED, MEM_CUDA_DEVICE, MEM_CUDA_UNIFIED = 0, 1, 2, 3
MEM_SURFACE_ARRAY, MEM_HANDLE, MEM_SYSTEM, MEM_CUDA_ARRAY = 4, 5, 6, 7
MEM_TYPES = {0: "default", 1: "cuda-pinned", 2: "cuda-device", 3: "cuda-unified", 4: "surface-array",
             5: "handle", 6: "system", 7: "cuda-array"}
# Memory a CUDA tensor can view (DEFAULT is CUDA device memory on dGPU) / a CPU tensor can view.
CUDA_MEMORY = (MEM_DEFAULT, MEM_CUDA_DEVICE, MEM_CUDA_UNIFIED)
HOST_MEMORY = (MEM_CUDA_PINNED, MEM_SYSTEM)

LAYOUT_PITCH, LAYOUT_BLOCK_LINEAR = 0, 1


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
class SurfaceLayout:
    """One layout of NvBufSurface and its parameter structs (DeepStream 8.0+ or 5.0-7.1)."""
    name: str
    surface: type
    params: type
    create_params: type


LAYOUTS = (SurfaceLayout("DeepStream 8.0+", Surface8, SurfaceParams8, CreateParams8),
           SurfaceLayout("DeepStream 5.0-7.1", Surface7, SurfaceParams7, CreateParams7))
LAYOUT_BY_SIZE = {ctypes.sizeof(lay.surface): lay for lay in LAYOUTS}
assert sorted(LAYOUT_BY_SIZE) == [64, 72] and ctypes.sizeof(SurfaceParams7) == 384 \
    and ctypes.sizeof(SurfaceParams8) == 416 and ctypes.sizeof(CreateParams8) == 64


# ---------------------------------------------------------------- parsed surfaces

@dataclass(frozen=True)
class SurfacePlane:
    """One plane as the surface's ``planeParams`` describe it (``width`` in the plane's own samples)."""
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
    planes: tuple[SurfacePlane, ...]
    mem_type: int
    gpu_id: int

    @property
    def pixel_format(self) -> pixels.PixelFormat:
        """The frame's entry of :data:`obbmeta.frames.pixels.FORMATS`."""
        return pixels.FORMATS[self.format_name]

    @property
    def is_cuda(self) -> bool:
        return self.mem_type in CUDA_MEMORY

    def tensors(self) -> Any:
        """Zero-copy views in the form :func:`obbmeta.frames.pixels.to_rgb` takes: one (H, W, C) tensor for packed
        formats (RGBA (H, W, 4), UYVY (H, W, 2), ...), the tuple of planes for planar ones (NV12 ``(luma (H, W, 1),
        chroma (H/2, W/2, 2))``, I420 three planes, GRAY8 ``(luma,)``); uint16 for 16-bit samples. Rows keep the
        surface's pitch (``stride(0) == pitch`` in bytes / sample size)."""
        fmt = self.pixel_format
        views = tuple(self._view(k, spec) for k, spec in enumerate(fmt.planes))
        return views[0] if fmt.packed else views

    def _view(self, k: int, spec: pixels.Plane) -> Any:
        plane = self.planes[k]
        cols = _plane_cols(self.pixel_format, spec, plane, self.width)
        group = spec.comps * spec.depth
        nbytes = plane.pitch * (plane.height - 1) + cols * group
        view = _tensor_view(self.data_ptr + plane.offset, (plane.height, cols, group), (plane.pitch, group, 1),
                            nbytes, self.mem_type, self.gpu_id, f"surface {self.index} plane {k}")
        if spec.depth == 2:  # 16-bit samples (little-endian, as the formats define them)
            import torch

            view = view.view(torch.uint16)
        return view


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


def read_surface(address: int, size: int, write: bool = False) -> BatchedSurface:
    """Parse the ``NvBufSurface`` at ``address``; ``size`` is the mapped size (``GstMapInfo.size``), which picks the
    layout; ``write``: the frames will be written (system-memory planes must then be writable). Raises
    :class:`SurfaceLayoutError` for an unknown size, unreadable memory or implausible contents."""
    if not isinstance(address, int) or isinstance(address, bool) or address <= 0:
        raise ValueError(f"address must be a positive int (an NvBufSurface*), got {address!r}")
    layout = LAYOUT_BY_SIZE.get(size)
    if layout is None:
        raise SurfaceLayoutError(f"a mapped NVMM buffer of {size} bytes is no NvBufSurface obbmeta knows (64 bytes: "
                                 "DeepStream 5.0-7.1, 72 bytes: DeepStream 8.0+); refusing to guess")
    where = f"NvBufSurface ({layout.name} layout)"
    s = _copy(where, address, layout.surface)
    if not 0 < s.batchSize <= MAX_BATCH or s.numFilled > s.batchSize:
        raise SurfaceLayoutError(f"{where}: implausible batchSize {s.batchSize} / numFilled {s.numFilled}")
    if s.memType not in MEM_TYPES:
        raise SurfaceLayoutError(f"{where}: unknown memType {s.memType}")
    frames: tuple[FrameSurface, ...] = ()
    if s.numFilled:
        if not s.surfaceList:
            raise SurfaceLayoutError(f"{where}: surfaceList is NULL")
        table = _copy(f"{where} surfaceList", ctypes.cast(s.surfaceList, ctypes.c_void_p).value,
                      layout.params * s.numFilled)
        frames = _frames(table, int(s.numFilled), int(s.memType), int(s.gpuId), where, layout.params)
    if s.memType in HOST_MEMORY:
        _check_host_planes(frames, write, where)
    return BatchedSurface(address, layout.name, int(s.gpuId), int(s.batchSize), int(s.numFilled), int(s.memType),
                          frames)


def _copy(where: str, address: int, ctype: type) -> Any:
    try:
        return _pointers.struct_at(where, address, ctype)
    except ValueError as exc:
        raise SurfaceLayoutError(str(exc)) from None


def _plane_cols(fmt: pixels.PixelFormat, spec: pixels.Plane, plane: SurfacePlane, width: int) -> int:
    """Columns of the plane's view: planeParams' width for whole samples; for packed 4:2:2 (where producers report
    pixels or pixel pairs) what the frame width needs."""
    return plane.width if fmt.packing == "planes" else spec.shape(width, 1)[1]


# What _frame reads of a surfaceList entry besides dataPtr (and of its planeParams): frames equal in these are one
# verdict.
_FRAME_FIELDS = ("width", "height", "pitch", "colorFormat", "layout", "dataSize")
_PLANE_FIELDS = ("num_planes", "width", "height", "pitch", "offset", "bytesPerPix")


@lru_cache(maxsize=None)
def _read_mask(params: type) -> tuple[Any, int]:
    """(the bytes of a surfaceList entry that _frame reads besides dataPtr, as a uint8 mask; dataPtr's offset)."""
    import numpy as np

    mask = np.zeros(ctypes.sizeof(params), np.uint8)
    for name in _FRAME_FIELDS:
        field = getattr(params, name)
        mask[field.offset:field.offset + field.size] = 0xFF
    base = params.planeParams.offset
    for name in _PLANE_FIELDS:
        field = getattr(PlaneParams, name)
        mask[base + field.offset:base + field.offset + field.size] = 0xFF
    return mask, params.dataPtr.offset


def _frames(table: Any, n: int, mem_type: int, gpu_id: int, where: str, params: type) -> tuple[FrameSurface, ...]:
    """Every entry of surfaceList through :func:`_frame`'s checks. A batch's frames mostly share one format and size
    (nvstreammux's do): an entry whose bytes that _frame reads equal frame 0's, but for dataPtr, gets frame 0's
    verdict and planes, and only its own dataPtr is checked (not NULL, aligned to the samples); any other entry is
    checked whole, with its own error. (One comparison of the raw entries instead of each frame's checks again.)"""
    first = _frame(table[0], 0, mem_type, gpu_id, where)
    if n == 1:
        return (first,)
    import numpy as np

    mask, at = _read_mask(params)
    raw = np.frombuffer(table, np.uint8, count=n * mask.size).reshape(n, mask.size)
    pointers = raw[:, at:at + 8].copy().view(np.uint64).reshape(n)
    same = ~((raw ^ raw[0]) & mask).any(axis=1) & (pointers != 0)
    for spec, plane in zip(first.pixel_format.planes, first.planes):
        if spec.depth > 1:
            same &= (pointers + np.uint64(plane.offset)) % np.uint64(spec.depth) == 0
    pointers, same = pointers.tolist(), same.tolist()
    return (first, *(FrameSurface(i, first.width, first.height, first.pitch, first.color_format, first.format_name,
                                  pointers[i], first.data_size, first.planes, mem_type, gpu_id) if same[i] else
                     _frame(table[i], i, mem_type, gpu_id, where) for i in range(1, n)))


def _frame(p: Any, index: int, mem_type: int, gpu_id: int, where: str) -> FrameSurface:
    where = f"{where} surfaceList[{index}]"
    try:
        fmt = pixels.from_nvbuf(int(p.colorFormat))
        pixels.check_size(int(p.width), int(p.height), "surface")
        fmt.shapes(int(p.width), int(p.height))  # an odd-width UYVP frame has no planes (whole pixel pairs)
    except ValueError as exc:
        raise SurfaceLayoutError(f"{where}: {exc}") from None
    if p.layout != LAYOUT_PITCH:
        raise SurfaceLayoutError(f"{where}: layout {p.layout} (block linear) cannot be viewed as a tensor; use "
                                 "pitch-linear surfaces (nvvideoconvert's default on dGPU)")
    if not p.dataPtr:
        raise SurfaceLayoutError(f"{where}: dataPtr is NULL")
    pp = p.planeParams
    if pp.num_planes != len(fmt.planes):
        raise SurfaceLayoutError(f"{where}: {fmt.name} has {len(fmt.planes)} plane(s), planeParams says "
                                 f"{pp.num_planes}")
    w, h = int(p.width), int(p.height)
    planes, spans = [], []
    for k, spec in enumerate(fmt.planes):
        plane = SurfacePlane(int(pp.width[k]), int(pp.height[k]), int(pp.pitch[k]), int(pp.offset[k]),
                             int(pp.bytesPerPix[k]))
        name = f"{where}: plane {k} ({spec.channels} of {fmt.name} {w}x{h})"
        rows = {h} if k == 0 else {h // spec.sub_y, -(-h // spec.sub_y)} - {0}
        if fmt.packing == "planes":
            cols = {w} if k == 0 else {w // spec.sub_x, -(-w // spec.sub_x)} - {0}
        else:
            cols = {w, -(-w // 2)}
        if plane.height not in rows or plane.width not in cols:
            raise SurfaceLayoutError(f"{name} is {plane.width}x{plane.height}; it must be "
                                     f"{' or '.join(map(str, sorted(cols)))} wide and "
                                     f"{' or '.join(map(str, sorted(rows)))} high")
        group = spec.comps * spec.depth
        if fmt.packing == "planes" and plane.bytes_per_pixel != group:
            raise SurfaceLayoutError(f"{name} has bytesPerPix {plane.bytes_per_pixel}, the format has {group}")
        row_bytes = _plane_cols(fmt, spec, plane, w) * group
        if plane.pitch < row_bytes:
            raise SurfaceLayoutError(f"{name}: pitch {plane.pitch} is less than its {row_bytes}-byte rows")
        if spec.depth > 1 and (plane.pitch % spec.depth or (p.dataPtr + plane.offset) % spec.depth):
            raise SurfaceLayoutError(f"{name}: pitch {plane.pitch} / address 0x{p.dataPtr + plane.offset:x} are not "
                                     f"multiples of its {spec.depth}-byte samples")
        end = plane.offset + plane.pitch * (plane.height - 1) + row_bytes
        if end > p.dataSize:
            raise SurfaceLayoutError(f"{name} at offset {plane.offset} with pitch {plane.pitch} needs {end} bytes, "
                                     f"dataSize is {p.dataSize}")
        planes.append(plane)
        spans.append((plane.offset, end, k))
    spans.sort()
    for (_, end, a), (start, _, b) in zip(spans, spans[1:]):
        if start < end:
            raise SurfaceLayoutError(f"{where}: planes {min(a, b)} and {max(a, b)} of {fmt.name} overlap")
    if p.pitch != planes[0].pitch:
        raise SurfaceLayoutError(f"{where}: pitch {p.pitch} differs from plane 0's pitch {planes[0].pitch}")
    return FrameSurface(index, w, h, int(p.pitch), int(p.colorFormat), fmt.name, int(p.dataPtr), int(p.dataSize),
                        tuple(planes), int(mem_type), int(gpu_id))


def _check_host_planes(frames: tuple[FrameSurface, ...], write: bool, where: str) -> None:
    """System / pinned memory: every plane's bytes must be memory this process has mapped (readable, and writable
    when the frames will be written), or reading them would crash the process."""
    ranges, names = [], []
    for s in frames:
        for k, (spec, plane) in enumerate(zip(s.pixel_format.planes, s.planes)):
            cols = _plane_cols(s.pixel_format, spec, plane, s.width)
            nbytes = plane.pitch * (plane.height - 1) + cols * spec.comps * spec.depth
            ranges.append((s.data_ptr + plane.offset, nbytes))
            names.append(f"{where} surfaceList[{s.index}] plane {k}")
    ok = _pointers.usable(ranges, write)
    for (address, nbytes), name, good in zip(ranges, names, ok):
        if not good:
            access = "writable" if write else "readable"
            raise SurfaceLayoutError(f"{name}: its {nbytes} bytes at 0x{address:x} are not memory this process has "
                                     f"mapped {access} (memType {MEM_TYPES[frames[0].mem_type]} says they are)")


# ---------------------------------------------------------------- tensor views

class _CudaArray:
    """Just enough of ``__cuda_array_interface__`` (v3) for ``torch.as_tensor`` to alias device memory. (Never
    marked read-only: torch refuses such an interface; the views are read-only by contract.)"""

    def __init__(self, ptr: int, shape: tuple, strides: tuple | None, typestr: str = "|u1"):
        self.__cuda_array_interface__ = {"shape": shape, "strides": strides, "typestr": typestr, "data": (ptr, False),
                                         "version": 3}


def tensor_at(address: int, shape: tuple, dtype: str, what: str) -> Any:
    """A zero-copy tensor view of a C-contiguous array of ``shape`` and NumPy ``dtype`` (``"float32"``, ...) at
    ``address``, memory another library allocated (an NvDsPreProcessTensor's buffer, say): CUDA device or managed
    memory (asked of the CUDA driver; the whole range inside one allocation) gives a CUDA tensor on its GPU, memory
    this process has mapped readable a CPU tensor; any other address raises :class:`SurfaceLayoutError` naming
    ``what``. Valid while the owner keeps the memory."""
    import numpy as np
    import torch

    dt = np.dtype(dtype)
    shape = tuple(int(v) for v in shape)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    if not address:
        raise SurfaceLayoutError(f"{what} has no buffer (NULL)")
    ordinal = _cuda_ordinal(address)
    if ordinal is not None:
        if not torch.cuda.is_available() or ordinal >= torch.cuda.device_count():
            raise SurfaceLayoutError(f"{what} is memory of GPU {ordinal}, which this torch ({torch.__version__}) does "
                                     "not see")
        _check_cuda_range(address, nbytes, ordinal, what)
        return torch.as_tensor(_CudaArray(address, shape, None, dt.str), device=f"cuda:{ordinal}")
    if not _pointers.usable([(address, nbytes)])[0]:
        raise SurfaceLayoutError(f"{what}: its {nbytes} bytes at 0x{address:x} are neither CUDA memory nor memory "
                                 "this process has mapped")
    flat = torch.frombuffer((ctypes.c_uint8 * nbytes).from_address(address), dtype=torch.uint8)
    return flat.view(getattr(torch, dt.name)).reshape(shape)


def _tensor_view(ptr: int, shape: tuple, strides: tuple, nbytes: int, mem_type: int, gpu_id: int, what: str) -> Any:
    import torch

    if mem_type in CUDA_MEMORY:
        if not torch.cuda.is_available():
            raise SurfaceLayoutError(f"{what} is CUDA memory (memType {MEM_TYPES[mem_type]}), but this torch "
                                     f"({torch.__version__}) sees no CUDA device: install a CUDA build of torch, or "
                                     "convert to system memory (nvvideoconvert ! video/x-raw)")
        if gpu_id >= torch.cuda.device_count():
            raise SurfaceLayoutError(f"{what}: the surface's gpuId is {gpu_id}, torch sees "
                                     f"{torch.cuda.device_count()} CUDA device(s)")
        base, size = _check_cuda_range(ptr, nbytes, gpu_id, what)
        return _allocation(base, size, gpu_id).as_strided(shape, strides, ptr - base)
    if mem_type in HOST_MEMORY:  # checked to be mapped memory by read_surface
        flat = torch.frombuffer((ctypes.c_uint8 * nbytes).from_address(ptr), dtype=torch.uint8)
        return flat.as_strided(shape, strides)
    raise SurfaceLayoutError(f"memType {MEM_TYPES.get(mem_type, mem_type)} (Jetson surface arrays / handles, CUDA "
                             "arrays) has no linear address to view; convert to CUDA device memory with nvvideoconvert")


@lru_cache(maxsize=256)
def _allocation(base: int, size: int, gpu_id: int) -> Any:
    """A uint8 tensor over the whole CUDA allocation ``[base, base + size)`` of GPU ``gpu_id``, made once per
    allocation: a frame's view is then an ``as_strided`` of it (a buffer pool hands the same surfaces round, so 16
    views a batch cost 16 ``as_strided`` calls, not 16 ``__cuda_array_interface__`` parses). It owns nothing; a
    view is made only after :func:`_check_cuda_range` found the range inside this live allocation, so a cached
    tensor of an allocation since freed is never used (another allocation at that address with that size is
    the same range)."""
    import torch

    return torch.as_tensor(_CudaArray(base, (size,), None), device=f"cuda:{gpu_id}")


# CUDA driver API values (cuda.h): CUpointer_attribute MEMORY_TYPE 2, IS_MANAGED 8, DEVICE_ORDINAL 9,
# RANGE_START_ADDR 11, RANGE_SIZE 12; CUmemorytype DEVICE 2, UNIFIED 4.
_CU_ATTRIBUTES = (2, 8, 9, 11, 12)
_CU_DEVICE_MEMORY = (2, 4)


@lru_cache(maxsize=1)
def _cuda_driver() -> ctypes.CDLL | None:
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    lib.cuInit.argtypes = [ctypes.c_uint]
    lib.cuPointerGetAttributes.argtypes = [ctypes.c_uint, ctypes.POINTER(ctypes.c_int),
                                           ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint64]
    for fn in (lib.cuInit, lib.cuPointerGetAttributes):
        fn.restype = ctypes.c_int
    return lib if lib.cuInit(0) == 0 else None


_QUERY = threading.local()  # each thread's argument arrays for cuPointerGetAttributes, made once


def _pointer_attributes(lib: ctypes.CDLL, ptr: int) -> tuple[int, int, int, int, int, int]:
    """(result, memory type, managed, device ordinal, allocation base, allocation size) of ``ptr``: one
    ``cuPointerGetAttributes`` call, which, unlike ``cuMemGetAddressRange``, needs no current context (a GStreamer
    streaming thread has none)."""
    n = len(_CU_ATTRIBUTES)
    query = getattr(_QUERY, "arrays", None)
    if query is None:
        values = (ctypes.c_uint64 * n)()
        query = _QUERY.arrays = (values, (ctypes.c_int * n)(*_CU_ATTRIBUTES),
                                 (ctypes.c_void_p * n)(*(ctypes.addressof(values) + 8 * i for i in range(n))))
    values, attrs, data = query
    ctypes.memset(values, 0, 8 * n)
    rc = lib.cuPointerGetAttributes(n, attrs, data, ptr)
    mem_type, managed, ordinal, base, size = values
    return rc, mem_type & 0xFFFFFFFF, managed & 0xFFFFFFFF, ordinal & 0xFFFFFFFF, base, size


def _cuda_ordinal(ptr: int) -> int | None:
    """The GPU whose device (or managed) memory ``ptr`` points into, or None (host memory, no CUDA driver)."""
    lib = _cuda_driver()
    if lib is None:
        return None
    rc, mem_type, managed, ordinal, _, _ = _pointer_attributes(lib, ptr)
    return ordinal if rc == 0 and (mem_type in _CU_DEVICE_MEMORY or managed) else None


def _check_cuda_range(ptr: int, nbytes: int, gpu_id: int, what: str) -> tuple[int, int]:
    """[ptr, ptr + nbytes) must be CUDA device (or managed) memory of GPU ``gpu_id``, inside one allocation: a
    forged pointer handed to a kernel would corrupt the CUDA context for the whole process. Returns the
    allocation's (base, size)."""
    lib = _cuda_driver()
    if lib is None:
        raise SurfaceLayoutError(f"{what} is CUDA memory, but the CUDA driver (libcuda.so.1) could not be loaded to "
                                 "check its pointer")
    rc, mem_type, managed, ordinal, base, size = _pointer_attributes(lib, ptr)
    if rc != 0 or not (mem_type in _CU_DEVICE_MEMORY or managed):
        raise SurfaceLayoutError(f"{what}: dataPtr 0x{ptr:x} is not CUDA device memory (driver: result {rc}, memory "
                                 f"type {mem_type})")
    if ordinal != gpu_id:
        raise SurfaceLayoutError(f"{what}: dataPtr 0x{ptr:x} is memory of GPU {ordinal}, the surface says gpuId "
                                 f"{gpu_id}")
    if not base <= ptr or ptr + nbytes > base + size:
        raise SurfaceLayoutError(f"{what}: its {nbytes} bytes at 0x{ptr:x} are not inside one CUDA allocation "
                                 f"(allocation 0x{base:x} + {size})")
    return base, size


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
        yield read_surface(address, size, write)

