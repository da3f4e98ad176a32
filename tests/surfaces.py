"""NvBufSurfaces for the tests of obbmeta.frames and of the elements' NVMM path: built by hand in system memory in
either C layout (CPU tests), or allocated by NVIDIA's own NvBufSurfaceCreate in CUDA memory (GPU machine).

A frame is given in the tensor form obbmeta.frames.pixels documents for its format: one array for packed formats, the
tuple of plane arrays for planar ones ((H, W, 1) / (H, W) luma, (H/2, W/2, 2) NV12 chroma, uint16 for 16-bit samples).
For NV12 a bare (H, W) luma array is accepted too (its chroma is made from it). The tests check what a view reads
against the numpy pixels written here, and the layouts' sizes and offsets against the numbers in NVIDIA's headers
(tests/test_frames.py)."""
from __future__ import annotations

import ctypes

import numpy as np

from obbmeta import frames
from obbmeta.frames import pixels

ROW_ALIGN = 512  # NVIDIA's allocator pads rows (seen: 64 RGBA pixels -> pitch 512)


def frame_planes(image, fmt: pixels.PixelFormat) -> list[np.ndarray]:
    """The planes of one frame as (rows, cols, comps) arrays."""
    if isinstance(image, tuple):
        planes = list(image)
    elif fmt.caps == "NV12" and image.ndim == 2:  # luma only: chroma made from it
        planes = [image, np.stack([image[::2, ::2], 255 - image[::2, ::2]], -1).astype(np.uint8)]
    else:
        planes = [image]
    return [p if p.ndim == 3 else p[..., None] for p in planes]


def plane_params(fmt: pixels.PixelFormat, k: int, array: np.ndarray, width: int) -> tuple[int, int]:
    """(planeParams width, bytesPerPix) as obbmeta's table reads them (packed 4:2:2: pixels, 2 bytes)."""
    spec = fmt.planes[k]
    if fmt.packing == "planes":
        return array.shape[1], spec.comps * spec.depth
    return width, 2


class HostSurface:
    """A batch of frames in system memory described by a real-layout NvBufSurface (kept alive by this object)."""

    def __init__(self, images: list, fmt: str = "RGBA", layout: frames.SurfaceLayout = frames.LAYOUTS[0],
                 num_filled: int | None = None, mem_type: int = frames.MEM_SYSTEM, pitch_align: int = ROW_ALIGN):
        self.layout = layout
        self.format = pixels.FORMATS[fmt]
        self.pixels: list[np.ndarray] = []
        params = (layout.params * max(len(images), 1))()
        for i, img in enumerate(images):
            p = params[i]
            planes = frame_planes(img, self.format)
            h = planes[0].shape[0]
            w = planes[0].shape[1] * self.format.planes[0].sub_x
            raw = [pl.view(np.uint8).reshape(pl.shape[0], -1) for pl in planes]
            pitches = [-(-r.shape[1] // pitch_align) * pitch_align for r in raw]
            sizes = [pitch * r.shape[0] for r, pitch in zip(raw, pitches)]
            store = np.zeros(sum(sizes) + 64, dtype=np.uint8)  # 64: room to forge a plane a little beyond
            offset = 0
            pp = p.planeParams
            pp.num_planes = len(planes)
            for k, (r, pitch, size) in enumerate(zip(raw, pitches, sizes)):
                store[offset:offset + size].reshape(r.shape[0], pitch)[:, : r.shape[1]] = r
                pp.width[k], pp.bytesPerPix[k] = plane_params(self.format, k, planes[k], w)
                pp.height[k], pp.pitch[k], pp.offset[k], pp.psize[k] = r.shape[0], pitch, offset, size
                offset += size
            p.width, p.height, p.pitch = w, h, pitches[0]
            p.colorFormat = self.format.nvbuf_id
            p.layout = frames.LAYOUT_PITCH
            p.dataSize = offset
            p.dataPtr = store.ctypes.data
            self.pixels.append(store)
        self.params = params
        s = layout.surface()
        s.gpuId, s.batchSize = 0, len(images)
        s.numFilled = len(images) if num_filled is None else num_filled
        s.memType = mem_type
        s.surfaceList = ctypes.cast(params, ctypes.POINTER(layout.params))
        self.struct = s

    @property
    def address(self) -> int:
        return ctypes.addressof(self.struct)

    @property
    def size(self) -> int:
        return ctypes.sizeof(self.struct)

    def as_bytes(self) -> bytes:
        return ctypes.string_at(self.address, self.size)

    def plane(self, index: int, k: int = 0) -> np.ndarray:
        """Plane k of frame `index` in this object's own memory, in its tensor form (for checks)."""
        pp = self.params[index].planeParams
        spec = self.format.planes[k]
        cols = spec.shape(self.params[index].width, 1)[1]
        raw = self.pixels[index][pp.offset[k]: pp.offset[k] + pp.psize[k]].reshape(pp.height[k], pp.pitch[k])
        rows = raw[:, : cols * spec.comps * spec.depth]
        return rows.view(np.uint16 if spec.depth == 2 else np.uint8).reshape(pp.height[k], cols, spec.comps)


def nvbufsurface_library():
    """NVIDIA's libnvbufsurface.so beside the libnvds_meta obbmeta loaded, or None where it cannot load (it needs a
    CUDA driver: the GPU machine only)."""
    from pathlib import Path

    from obbmeta.nvds import _core

    try:
        folder = Path(_core.get().libs.meta_path).parent
        lib = ctypes.CDLL(str(folder / "libnvbufsurface.so"))
    except (ImportError, OSError):
        return None
    lib.NvBufSurfaceCreate.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint32, ctypes.c_void_p]
    for name in ("NvBufSurfaceDestroy",):
        getattr(lib, name).argtypes = [ctypes.c_void_p]
    lib.NvBufSurfaceCopy.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.NvBufSurfaceMemSet.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_uint8]
    return lib


class CudaSurface:
    """The same batch as HostSurface, but allocated by NVIDIA's NvBufSurfaceCreate in CUDA device memory (layout of
    the loaded library: DeepStream 8.0+ for the 9.x wheel). Pixels go in and come back out only through NVIDIA's API
    (NvBufSurfaceCopy to / from a pinned staging batch read with numpy, at the pitches and offsets NVIDIA chose), so
    checks never trust obbmeta's views."""

    layout = frames.LAYOUTS[0]

    def __init__(self, images: list, fmt: str = "RGBA", mem_type: int = frames.MEM_CUDA_DEVICE):
        self.lib = lib = nvbufsurface_library()
        if lib is None:
            raise RuntimeError("NVIDIA's libnvbufsurface.so could not be loaded")
        self.format = pixels.FORMATS[fmt]
        planes = [frame_planes(img, self.format) for img in images]
        h, w = planes[0][0].shape[0], planes[0][0].shape[1] * self.format.planes[0].sub_x
        params = self.layout.create_params()
        params.gpuId, params.width, params.height = 0, w, h
        params.colorFormat, params.layout = self.format.nvbuf_id, frames.LAYOUT_PITCH
        self.dev, self.staging = ctypes.c_void_p(), ctypes.c_void_p()
        for out, mem in ((self.dev, mem_type), (self.staging, frames.MEM_CUDA_PINNED)):
            params.memType = mem
            rc = lib.NvBufSurfaceCreate(ctypes.byref(out), len(images), ctypes.byref(params))
            if rc != 0:
                raise RuntimeError(f"NvBufSurfaceCreate({fmt}, memType {mem}) returned {rc}")
            self.layout.surface.from_address(out.value).numFilled = len(images)
        self.struct = self.layout.surface.from_address(self.dev.value)
        for i, frame in enumerate(planes):
            for k, plane in enumerate(frame):
                self.plane(i, k, copy=False)[...] = plane
        assert lib.NvBufSurfaceCopy(self.staging, self.dev) == 0

    @property
    def params(self):
        return self.struct.surfaceList

    @property
    def address(self) -> int:
        return self.dev.value

    @property
    def size(self) -> int:
        return ctypes.sizeof(self.layout.surface)

    def as_bytes(self) -> bytes:
        return ctypes.string_at(self.address, self.size)

    def plane(self, index: int, k: int = 0, copy: bool = True) -> np.ndarray:
        """Plane k of frame `index` as NVIDIA's copy brings it to pinned memory, in its tensor form (copy=False: the
        staging memory itself, to fill before the copy to the device)."""
        if copy:
            assert self.lib.NvBufSurfaceCopy(self.dev, self.staging) == 0
        p = self.layout.surface.from_address(self.staging.value).surfaceList[index]
        pp = p.planeParams
        spec = self.format.planes[k]
        rows, pitch, cols = pp.height[k], pp.pitch[k], spec.shape(p.width, 1)[1]
        raw = (ctypes.c_uint8 * (pitch * rows)).from_address(p.dataPtr + pp.offset[k])
        view = np.frombuffer(raw, np.uint8).reshape(rows, pitch)[:, : cols * spec.comps * spec.depth]
        view = view.view(np.uint16 if spec.depth == 2 else np.uint8).reshape(rows, cols, spec.comps)
        return view.copy() if copy else view

    def memset(self, value: int) -> None:
        assert self.lib.NvBufSurfaceMemSet(self.dev, -1, -1, value) == 0

    def __del__(self):
        for s in (getattr(self, "dev", None), getattr(self, "staging", None)):
            if s is not None and s.value:
                self.lib.NvBufSurfaceDestroy(s)


def batched_buffers(surface, frames: int, count: int, width: int, height: int) -> list:
    """``count`` Gst buffers wrapping ``surface``'s NvBufSurface, as nvstreammux makes them: buffer k at k / 30 s with
    a batch meta of ``frames`` frames (frame i from source i, frame_num k, width x height). ``surface`` must outlive
    them."""
    from obbmeta import nvds
    from obbmeta.gst import Gst

    out = []
    for k in range(count):
        buf = Gst.Buffer.new_wrapped(surface.as_bytes())
        buf.pts = k * Gst.SECOND // 30
        meta = nvds.BatchMeta.create(frames)
        for i in range(frames):
            meta.add_frame(source_id=i, width=width, height=height, frame_num=k)
        meta.attach_to_gst_buffer(buf)
        out.append(buf)
    return out
