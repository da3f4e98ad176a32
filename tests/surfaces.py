"""System-memory NvBufSurfaces built by hand in either C layout, for the CPU tests of obbmeta.frames and of the
elements' NVMM path (on the GPU machine the same tests use NVIDIA's own NvBufSurfaceCreate). The struct definitions
used to build them are obbmeta.frames' own; the tests check what a view reads against the numpy pixels written
here, and the layouts' sizes and offsets against the numbers in NVIDIA's headers (tests/test_frames.py)."""
from __future__ import annotations

import ctypes

import numpy as np

from obbmeta import frames

ROW_ALIGN = 512  # NVIDIA's allocator pads rows (seen: 64 RGBA pixels -> pitch 512)


class HostSurface:
    """A batch of frames in system memory described by a real-layout NvBufSurface (kept alive by this object)."""

    def __init__(self, images: list[np.ndarray], fmt: str = "RGBA", layout: frames.Layout = frames.LAYOUTS[0],
                 num_filled: int | None = None, mem_type: int = frames.MEM_SYSTEM, pitch_align: int = ROW_ALIGN):
        self.layout = layout
        self.pixels: list[np.ndarray] = []
        params = (layout.params * len(images))()
        for i, img in enumerate(images):
            p = params[i]
            h, w = img.shape[:2]
            if fmt == "NV12":  # img is (H, W) luma; chroma is made from it
                y = img
                uv = np.stack([y[::2, ::2], 255 - y[::2, ::2]], -1).astype(np.uint8)
                planes = [(y[..., None], 1), (uv, 2)]
            else:
                planes = [(img if img.ndim == 3 else img[..., None], img.shape[2] if img.ndim == 3 else 1)]
            pitches = [-(-pl.shape[1] * bpp // pitch_align) * pitch_align for pl, bpp in planes]
            sizes = [pitch * pl.shape[0] for (pl, _), pitch in zip(planes, pitches)]
            store = np.zeros(sum(sizes), dtype=np.uint8)
            offset = 0
            pp = p.planeParams
            pp.num_planes = len(planes)
            for k, ((pl, bpp), pitch, size) in enumerate(zip(planes, pitches, sizes)):
                rows = store[offset:offset + size].reshape(pl.shape[0], pitch)
                rows[:, : pl.shape[1] * bpp] = pl.reshape(pl.shape[0], -1)
                pp.width[k], pp.height[k], pp.pitch[k] = pl.shape[1], pl.shape[0], pitch
                pp.offset[k], pp.psize[k], pp.bytesPerPix[k] = offset, size, bpp
                offset += size
            p.width, p.height, p.pitch = w, h, pitches[0]
            p.colorFormat = frames.FORMAT_IDS[fmt]
            p.layout = frames.LAYOUT_PITCH
            p.dataSize = store.nbytes
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
        """(rows, cols, bpp) view of plane k of frame `index` in this object's own memory (for checks)."""
        pp = self.params[index].planeParams
        raw = self.pixels[index][pp.offset[k]: pp.offset[k] + pp.psize[k]].reshape(pp.height[k], pp.pitch[k])
        return raw[:, : pp.width[k] * pp.bytesPerPix[k]].reshape(pp.height[k], pp.width[k], pp.bytesPerPix[k])


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
    (NvBufSurfaceCopy to / from a pinned staging batch read with numpy), so checks never trust obbmeta's views."""

    layout = frames.LAYOUTS[0]

    def __init__(self, images: list[np.ndarray], fmt: str = "RGBA", mem_type: int = frames.MEM_CUDA_DEVICE):
        self.lib = lib = nvbufsurface_library()
        if lib is None:
            raise RuntimeError("NVIDIA's libnvbufsurface.so could not be loaded")
        h, w = images[0].shape[:2]
        params = self.layout.create_params()
        params.gpuId, params.width, params.height = 0, w, h
        params.colorFormat, params.layout = frames.FORMAT_IDS[fmt], frames.LAYOUT_PITCH
        self.dev, self.staging = ctypes.c_void_p(), ctypes.c_void_p()
        for out, mem in ((self.dev, mem_type), (self.staging, frames.MEM_CUDA_PINNED)):
            params.memType = mem
            rc = lib.NvBufSurfaceCreate(ctypes.byref(out), len(images), ctypes.byref(params))
            if rc != 0:
                raise RuntimeError(f"NvBufSurfaceCreate({fmt}, memType {mem}) returned {rc}")
            self.layout.surface.from_address(out.value).numFilled = len(images)
        self.struct = self.layout.surface.from_address(self.dev.value)
        self.fmt = fmt
        for i, img in enumerate(images):
            if fmt == "NV12":
                self.plane(i, 0, copy=False)[...] = img[..., None]
                self.plane(i, 1, copy=False)[...] = np.stack([img[::2, ::2], 255 - img[::2, ::2]], -1)
            else:
                self.plane(i, 0, copy=False)[...] = img if img.ndim == 3 else img[..., None]
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
        """Plane k of frame `index` as NVIDIA's copy brings it to pinned memory (copy=False: the staging memory
        itself, to fill before the copy to the device)."""
        if copy:
            assert self.lib.NvBufSurfaceCopy(self.dev, self.staging) == 0
        p = self.layout.surface.from_address(self.staging.value).surfaceList[index]
        pp = p.planeParams
        rows, cols, bpp, pitch = pp.height[k], pp.width[k], pp.bytesPerPix[k], pp.pitch[k]
        raw = (ctypes.c_uint8 * (pitch * rows)).from_address(p.dataPtr + pp.offset[k])
        view = np.frombuffer(raw, np.uint8).reshape(rows, pitch)[:, : cols * bpp].reshape(rows, cols, bpp)
        return view.copy() if copy else view

    def memset(self, value: int) -> None:
        assert self.lib.NvBufSurfaceMemSet(self.dev, -1, -1, value) == 0

    def __del__(self):
        for s in (getattr(self, "dev", None), getattr(self, "staging", None)):
            if s is not None and s.value:
                self.lib.NvBufSurfaceDestroy(s)
