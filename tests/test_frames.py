"""obbmeta.frames on system-memory NvBufSurfaces (the CPU side of the NVMM path; tests/gpu/ runs the CUDA side
against NVIDIA's own libnvbufsurface)."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest
import torch
from surfaces import HostSurface

from obbmeta import frames

RNG = np.random.default_rng(7)


def images(n, h=24, w=40, c=4):
    return [RNG.integers(0, 256, (h, w, c), dtype=np.uint8) for _ in range(n)]


# Offsets and sizes as NVIDIA's headers give them (x86_64): DeepStream 8.0+ / 5.0-7.1.
@pytest.mark.parametrize("layout,surface,params,fields", [
    (frames.LAYOUTS[0], 72, 416, {"surfaceList": 24, "isImportedBuf": 32, "_reserved": 40}),
    (frames.LAYOUTS[1], 64, 384, {"surfaceList": 24, "_reserved": 32}),
])
def test_struct_layouts_match_nvidias_headers(layout, surface, params, fields):
    assert ctypes.sizeof(layout.surface) == surface and ctypes.sizeof(layout.params) == params
    for name, offset in fields.items():
        assert getattr(layout.surface, name).offset == offset
    p = layout.params
    assert (p.dataPtr.offset, p.planeParams.offset, p.mappedAddr.offset) == (40, 48, 280)
    assert p.paramex.offset == (368 if surface == 72 else 352)
    assert frames.PlaneParams.pitch.offset == 36 and ctypes.sizeof(frames.PlaneParams) == 232


@pytest.mark.parametrize("layout", frames.LAYOUTS, ids=lambda lay: lay.name)
@pytest.mark.parametrize("fmt,c", [("RGBA", 4), ("BGRx", 4), ("RGB", 3)])
def test_packed_frames_are_zero_copy_views_of_every_filled_surface(layout, fmt, c):
    imgs = images(3, c=c)
    s = HostSurface(imgs, fmt, layout)
    batch = frames.read_surface(s.address, s.size)
    assert batch.layout == layout.name and (batch.batch_size, batch.num_filled) == (3, 3)
    assert batch.mem_type == frames.MEM_SYSTEM and batch.format_name == fmt
    for i, surf in enumerate(batch.surfaces):
        view = surf.tensors()
        assert view.shape == (24, 40, c) and view.stride(0) == surf.pitch == s.params[i].pitch
        assert view.data_ptr() == s.params[i].dataPtr
        assert np.array_equal(view.numpy(), imgs[i])
    # writes through the view land in the surface's memory (and the reverse)
    v0 = batch.surfaces[0].tensors()
    v0[3, 5] = torch.tensor([1, 2, 3, 4][:c], dtype=torch.uint8)
    assert s.plane(0)[3, 5].tolist() == [1, 2, 3, 4][:c]
    s.plane(1)[0, 0, 0] = 77
    assert int(batch.surfaces[1].tensors()[0, 0, 0]) == 77


def test_nv12_gives_luma_and_chroma_planes():
    lumas = [RNG.integers(0, 256, (16, 20), dtype=np.uint8) for _ in range(2)]
    s = HostSurface(lumas, "NV12")
    batch = frames.read_surface(s.address, s.size)
    for i, surf in enumerate(batch.surfaces):
        y, uv = surf.tensors()
        assert y.shape == (16, 20, 1) and uv.shape == (8, 10, 2)
        assert np.array_equal(y.numpy(), s.plane(i, 0)) and np.array_equal(uv.numpy(), s.plane(i, 1))


def test_only_filled_surfaces_are_frames():
    s = HostSurface(images(4), num_filled=2)
    assert len(frames.read_surface(s.address, s.size).surfaces) == 2


@pytest.mark.parametrize("size", [0, 48, 63, 65, 71, 73, 80, 104])
def test_a_mapped_size_of_neither_layout_is_refused(size):
    s = HostSurface(images(1))
    with pytest.raises(frames.SurfaceLayoutError, match="refusing to guess"):
        frames.read_surface(s.address, size)


def test_the_wrong_layout_for_a_batch_is_caught_by_the_plausibility_checks():
    # A DeepStream 7 batch read as DeepStream 8 (and vice versa) puts surfaceList[1] at the wrong stride.
    for built, read_as in ((frames.LAYOUTS[1], 72), (frames.LAYOUTS[0], 64)):
        s = HostSurface(images(3), layout=built)
        with pytest.raises(frames.SurfaceLayoutError):
            frames.read_surface(s.address, read_as)


@pytest.mark.parametrize("field,value,match", [
    ("batchSize", 0, "batchSize"), ("numFilled", 9, "numFilled"), ("memType", 42, "memType"),
])
def test_implausible_headers_are_refused(field, value, match):
    s = HostSurface(images(2))
    setattr(s.struct, field, value)
    with pytest.raises(frames.SurfaceLayoutError, match=match):
        frames.read_surface(s.address, s.size)


@pytest.mark.parametrize("field,value,match", [
    ("width", 0, "implausible size"), ("colorFormat", 2, "colour format 2"), ("layout", 1, "block linear"),
    ("pitch", 8, "pitch"), ("dataPtr", None, "NULL"),
])
def test_implausible_frames_are_refused(field, value, match):
    s = HostSurface(images(2))
    setattr(s.params[1], field, value)
    with pytest.raises(frames.SurfaceLayoutError, match=match):
        frames.read_surface(s.address, s.size)


def test_a_view_larger_than_the_data_is_refused():
    s = HostSurface(images(1))
    s.params[0].dataSize = 100
    with pytest.raises(frames.SurfaceLayoutError, match="dataSize"):
        frames.read_surface(s.address, s.size).surfaces[0].tensors()


@pytest.mark.parametrize("mem_type", [frames.MEM_SURFACE_ARRAY, frames.MEM_HANDLE, frames.MEM_CUDA_ARRAY])
def test_memory_without_a_linear_address_is_refused(mem_type):
    s = HostSurface(images(1), mem_type=mem_type)
    with pytest.raises(frames.SurfaceLayoutError, match="no linear address"):
        frames.read_surface(s.address, s.size).surfaces[0].tensors()


@pytest.mark.parametrize("address", [0, -5, 1.5, True, "0x10"])
def test_bad_addresses_are_refused(address):
    with pytest.raises((ValueError, TypeError)):
        frames.read_surface(address, 72)


def test_map_surface_reads_a_gst_buffer_holding_the_struct():
    Gst = pytest.importorskip("obbmeta.gst._gi").Gst
    s = HostSurface(images(2))
    buf = Gst.Buffer.new_wrapped(s.as_bytes())
    with frames.map_surface(buf) as batch:
        assert batch.num_filled == 2
        assert np.array_equal(batch.surfaces[1].tensors().numpy(), s.plane(1))
    with frames.map_surface(hash(buf)) as batch:  # the pyds convention: the GstBuffer* as an int
        assert batch.surfaces[0].tensors().data_ptr() == s.params[0].dataPtr
    with pytest.raises(TypeError, match="Gst.Buffer or its address"):
        with frames.map_surface(object()):
            pass


needs_nvbufsurface = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA device and NVIDIA's libnvbufsurface (GPU machine)")


@needs_nvbufsurface
@pytest.mark.parametrize("batch", [1, 4])
@pytest.mark.parametrize("fmt", ["RGBA", "BGRx", "RGB", "NV12", "GRAY8"])
def test_views_alias_nvidias_cuda_surfaces_both_ways(fmt, batch):
    from surfaces import CudaSurface

    c = 1 if fmt in ("NV12", "GRAY8") else len(fmt) if len(fmt) == 3 else 4
    imgs = [RNG.integers(0, 256, (48, 64, c) if c > 1 else (48, 64), dtype=np.uint8) for _ in range(batch)]
    s = CudaSurface(imgs, fmt)
    parsed = frames.read_surface(s.address, s.size)
    assert parsed.num_filled == batch and parsed.mem_type == frames.MEM_CUDA_DEVICE
    for i, surf in enumerate(parsed.surfaces):
        views = surf.tensors()
        views = views if isinstance(views, tuple) else (views,)
        for k, v in enumerate(views):
            p = s.params[i]
            assert v.is_cuda and v.data_ptr() == p.dataPtr + p.planeParams.offset[k]
            assert v.stride(0) == p.planeParams.pitch[k]
            # NVIDIA wrote these pixels (NvBufSurfaceCopy from pinned memory): the view reads them
            assert np.array_equal(v.cpu().numpy(), s.plane(i, k))
            # written through the view, read back through NVIDIA's copy
            pattern = torch.randint(0, 256, v.shape, dtype=torch.uint8, device=v.device)
            v.copy_(pattern)
            torch.cuda.synchronize()
            assert np.array_equal(s.plane(i, k), pattern.cpu().numpy())
    s.memset(0x5A)
    assert all(bool((t == 0x5A).all()) for surf in parsed.surfaces
               for t in (surf.tensors() if isinstance(surf.tensors(), tuple) else (surf.tensors(),)))


def test_map_surface_refuses_an_int_that_is_no_live_gstbuffer():
    pytest.importorskip("obbmeta.gst._gi")
    s = HostSurface(images(1))
    with pytest.raises(ValueError, match="is not a live GstBuffer"):  # a NvBufSurface, not a GstBuffer
        with frames.map_surface(s.address):
            pass
