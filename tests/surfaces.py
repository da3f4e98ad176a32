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
