"""obbmeta.frames on system-memory NvBufSurfaces of every colour format (the CPU side of the NVMM path), forged
surfaces that must raise instead of crashing, and the CUDA side against NVIDIA's own libnvbufsurface (GPU machine:
tests/gpu/nvmm.sh)."""
from __future__ import annotations

import ctypes
import mmap

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from pixel_refs import frame_and_reference, levels
from surfaces import HostSurface

from obbmeta import frames
from obbmeta.frames import pixels

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


def test_an_empty_batch_has_no_surfaces():
    s = HostSurface(images(4), num_filled=0)
    batch = frames.read_surface(s.address, s.size)
    assert (batch.batch_size, batch.num_filled, batch.surfaces) == (4, 0, ())


# Every colour format the table reads, from a real-layout surface (ids as NVIDIA's header numbers them).
NVBUF_FORMATS = sorted(pixels.BY_NVBUF_ID.values(), key=lambda f: f.nvbuf_id)


@pytest.mark.parametrize("layout", frames.LAYOUTS, ids=lambda lay: lay.name)
@pytest.mark.parametrize("fmt", NVBUF_FORMATS, ids=lambda f: f"{f.nvbuf_id}-{f.name}")
def test_every_colour_format_is_read_from_a_surface_into_the_reference_rgb(fmt, layout):
    h, w = 7, 10  # odd height: chroma planes of 4:2:0 have ceil(7 / 2) rows
    made = [frame_and_reference(fmt.name, h, w, RNG) for _ in range(2)]
    s = HostSurface([planes for planes, _ in made], fmt.name, layout, pitch_align=64)
    batch = frames.read_surface(s.address, s.size)
    for i, (surf, (_, ref)) in enumerate(zip(batch.surfaces, made)):
        assert (surf.color_format, surf.format_name, surf.width, surf.height) == (fmt.nvbuf_id, fmt.name, w, h)
        views = surf.tensors()
        views = (views,) if fmt.packed else views
        for k, view in enumerate(views):
            assert view.stride(0) * view.element_size() == s.params[i].planeParams.pitch[k]
            assert np.array_equal(view.numpy(), s.plane(i, k))
        assert levels(pixels.to_rgb(surf.tensors(), surf.format_name), ref) <= 0.5


def nv12_surface():
    return HostSurface([RNG.integers(0, 256, (16, 20), dtype=np.uint8)], "NV12")


@pytest.mark.parametrize("plane,field,value,match", [
    (1, "height", 0, r"plane 1 \(UV of NV12 20x16\) is 10x0; it must be 10 wide and 8 high"),
    (1, "width", 3, "is 3x8; it must be 10 wide"),
    (0, "width", 28, r"plane 0 \(Y of NV12 20x16\) is 28x16; it must be 20 wide"),
    (1, "bytesPerPix", 3, "bytesPerPix 3, the format has 2"),
    (1, "pitch", 12, "pitch 12 is less than its 20-byte rows"),
    (1, "offset", 0, "planes 0 and 1 of NV12 overlap"),
    (1, "offset", 10 ** 6, "needs 1003604 bytes, dataSize is"),
])
def test_forged_plane_parameters_are_refused(plane, field, value, match):
    s = nv12_surface()
    getattr(s.params[0].planeParams, field)[plane] = value
    with pytest.raises(frames.SurfaceLayoutError, match=match):
        frames.read_surface(s.address, s.size)


def test_a_plane_count_that_is_not_the_formats_is_refused():
    s = nv12_surface()
    s.params[0].planeParams.num_planes = 1
    with pytest.raises(frames.SurfaceLayoutError, match=r"NV12 has 2 plane\(s\), planeParams says 1"):
        frames.read_surface(s.address, s.size)


def test_16_bit_planes_need_even_pitches():
    planes, _ = frame_and_reference("NV12_10LE", 8, 10, RNG)
    s = HostSurface([planes], "NV12_10LE", pitch_align=64)
    s.params[0].planeParams.pitch[1] = 41
    with pytest.raises(frames.SurfaceLayoutError, match="pitch 41 .* not multiples of its 2-byte samples"):
        frames.read_surface(s.address, s.size)


@pytest.mark.parametrize("pointer", [0x10, 0xFFFF800000000000, 2 ** 63 + 8])
def test_a_forged_surface_list_raises_instead_of_crashing(pointer):
    s = HostSurface(images(2))
    s.struct.surfaceList = ctypes.cast(ctypes.c_void_p(pointer), type(s.struct.surfaceList))
    with pytest.raises(frames.SurfaceLayoutError, match="does not point to readable memory"):
        frames.read_surface(s.address, s.size)


def test_a_forged_surface_address_raises_instead_of_crashing():
    with pytest.raises(frames.SurfaceLayoutError, match="does not point to readable memory"):
        frames.read_surface(0x10, 72)


def unmapped_address() -> int:
    """The start of a gap between two mappings of this process (read from /proc/self/maps)."""
    spans = [tuple(int(x, 16) for x in line.split()[0].split("-")) for line in open("/proc/self/maps")]
    return next(hi for (_, hi), (lo, _) in zip(spans, spans[1:]) if lo - hi >= 1 << 20)


@pytest.mark.parametrize("pointer", [0x10, "gap", 2 ** 62])
def test_a_forged_data_pointer_raises_instead_of_crashing(pointer):
    s = HostSurface(images(2))
    s.params[1].dataPtr = unmapped_address() if pointer == "gap" else pointer
    with pytest.raises(frames.SurfaceLayoutError, match=r"surfaceList\[1\] plane 0: its .* bytes at .* are not memory "
                       "this process has mapped readable"):
        frames.read_surface(s.address, s.size)


class GuardedPages:
    """Two anonymous pages; the second made inaccessible, the first read-only if asked (libc mprotect)."""

    def __init__(self, first_readonly: bool = False):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        self.page = mmap.PAGESIZE
        self.map = mmap.mmap(-1, 2 * self.page)
        self.address = ctypes.addressof(ctypes.c_char.from_buffer(self.map))
        assert libc.mprotect(self.address + self.page, self.page, 0) == 0  # PROT_NONE
        if first_readonly:
            assert libc.mprotect(self.address, self.page, 1) == 0  # PROT_READ


def test_planes_reaching_into_inaccessible_memory_are_refused():
    pages = GuardedPages()
    s = HostSurface([RNG.integers(0, 256, (40, 40, 4), dtype=np.uint8)], pitch_align=160)  # 6400 bytes > a page
    s.params[0].dataPtr = pages.address
    with pytest.raises(frames.SurfaceLayoutError, match="not memory this process has mapped readable"):
        frames.read_surface(s.address, s.size)


def test_frames_to_be_written_must_be_writable_memory():
    pages = GuardedPages(first_readonly=True)
    s = HostSurface([RNG.integers(0, 256, (8, 8, 4), dtype=np.uint8)], pitch_align=32)  # 256 bytes: in the page
    s.params[0].dataPtr = pages.address
    assert frames.read_surface(s.address, s.size).surfaces[0].tensors().shape == (8, 8, 4)  # readable
    with pytest.raises(frames.SurfaceLayoutError, match="not memory this process has mapped writable"):
        frames.read_surface(s.address, s.size, write=True)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a torch without CUDA")
def test_cuda_memory_on_a_torch_without_cuda_is_refused():
    s = HostSurface(images(1), mem_type=frames.MEM_CUDA_DEVICE)
    surface = frames.read_surface(s.address, s.size).surfaces[0]
    with pytest.raises(frames.SurfaceLayoutError, match="is CUDA memory .* but this torch .* sees no CUDA device"):
        surface.tensors()


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
    ("width", 0, "surface width must be an int in 1..16384"), ("width", 60000, "got 60000"),
    ("colorFormat", 30, r"colour format 30 \(NVBUF_COLOR_FORMAT_NV12_12LE\) is not read by obbmeta: 12-bit"),
    ("colorFormat", 500, "colour format 500 is no NvBufSurfaceColorFormat"), ("layout", 1, "block linear"),
    ("pitch", 8, "pitch 8 differs from plane 0's pitch 512"), ("dataPtr", None, "NULL"),
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
    pytest.importorskip("gi")
    from obbmeta.gst import Gst

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


def cuda_surface(name, frames_, mem_type=frames.MEM_CUDA_DEVICE):
    """NVIDIA's NvBufSurfaceCreate of ``name``; the test is skipped, naming the format, where NVIDIA cannot
    allocate it in CUDA memory."""
    from surfaces import CudaSurface

    try:
        return CudaSurface(frames_, name, mem_type)
    except RuntimeError as exc:
        pytest.skip(f"NVIDIA's NvBufSurfaceCreate does not make {name} surfaces here: {exc}")
    except ValueError as exc:  # seen for YUV422 (46) on the H200: a chroma plane of 0 rows in NVIDIA's planeParams
        pytest.skip(f"NVIDIA's NvBufSurfaceCreate lays out {name} planes obbmeta's table does not describe: {exc}")


@needs_nvbufsurface
@pytest.mark.parametrize("batch", [1, 4])
@pytest.mark.parametrize("fmt", NVBUF_FORMATS, ids=lambda f: f"{f.nvbuf_id}-{f.name}")
def test_views_alias_nvidias_cuda_surfaces_both_ways(fmt, batch):
    made = [frame_and_reference(fmt.name, 48, 64, RNG) for _ in range(batch)]
    s = cuda_surface(fmt.name, [planes for planes, _ in made])
    parsed = frames.read_surface(s.address, s.size)  # NVIDIA's own planeParams pass obbmeta's checks
    assert parsed.num_filled == batch and parsed.mem_type == frames.MEM_CUDA_DEVICE
    for i, (surf, (_, ref)) in enumerate(zip(parsed.surfaces, made)):
        assert surf.format_name == fmt.name
        # NVIDIA wrote these pixels (NvBufSurfaceCopy from pinned memory): obbmeta's RGB is the reference's
        assert levels(pixels.to_rgb(surf.tensors(), fmt.name), ref) <= 0.5
        views = surf.tensors()
        views = views if isinstance(views, tuple) else (views,)
        for k, v in enumerate(views):
            p = s.params[i]
            assert v.is_cuda and v.data_ptr() == p.dataPtr + p.planeParams.offset[k]
            assert v.stride(0) * v.element_size() == p.planeParams.pitch[k]
            assert np.array_equal(v.cpu().numpy(), s.plane(i, k))
            # written through the view, read back through NVIDIA's copy
            top = 2 ** 16 if v.dtype == torch.uint16 else 256
            pattern = torch.randint(0, top, v.shape, dtype=torch.int32, device=v.device).to(v.dtype)
            v.copy_(pattern)
            torch.cuda.synchronize()
            assert np.array_equal(s.plane(i, k), pattern.cpu().numpy())
    s.memset(0x5A)
    for surf in parsed.surfaces:
        views = surf.tensors()
        for t in views if isinstance(views, tuple) else (views,):
            assert bool((t.view(torch.uint8) == 0x5A).all())


@needs_nvbufsurface
def test_a_host_pointer_in_a_cuda_surface_is_refused():
    s = HostSurface(images(1), mem_type=frames.MEM_CUDA_DEVICE)  # dataPtr: numpy's host memory
    with pytest.raises(frames.SurfaceLayoutError, match="is not CUDA device memory"):
        frames.read_surface(s.address, s.size).surfaces[0].tensors()


@needs_nvbufsurface
def test_a_cuda_plane_beyond_its_allocation_is_refused():
    lib = frames._cuda_driver()
    lib.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
    lib.cuMemFree_v2.argtypes = [ctypes.c_uint64]
    s = HostSurface([RNG.integers(0, 256, (64, 64, 4), dtype=np.uint8)], mem_type=frames.MEM_CUDA_DEVICE)
    ptr = ctypes.c_uint64()
    with torch.cuda.device(0):
        assert lib.cuMemAlloc_v2(ctypes.byref(ptr), 4096) == 0  # a quarter of the 64 x 64 RGBA frame
    try:
        s.params[0].dataPtr = ptr.value
        with pytest.raises(frames.SurfaceLayoutError, match="are not inside one CUDA allocation"):
            frames.read_surface(s.address, s.size).surfaces[0].tensors()
    finally:
        with torch.cuda.device(0):
            lib.cuMemFree_v2(ptr.value)


@needs_nvbufsurface
def test_a_cuda_surface_on_a_gpu_torch_does_not_see_is_refused():
    memory = torch.zeros(64 * 64 * 4, dtype=torch.uint8, device="cuda:0")
    s = HostSurface([RNG.integers(0, 256, (8, 8, 4), dtype=np.uint8)], mem_type=frames.MEM_CUDA_DEVICE)
    s.params[0].dataPtr = memory.data_ptr()
    assert frames.read_surface(s.address, s.size).surfaces[0].tensors().data_ptr() == memory.data_ptr()
    s.struct.gpuId = torch.cuda.device_count()
    with pytest.raises(frames.SurfaceLayoutError, match="gpuId is .* torch sees"):
        frames.read_surface(s.address, s.size).surfaces[0].tensors()
    if torch.cuda.device_count() > 1:
        s.struct.gpuId = 1
        with pytest.raises(frames.SurfaceLayoutError, match="is memory of GPU 0, the surface says gpuId 1"):
            frames.read_surface(s.address, s.size).surfaces[0].tensors()


def test_map_surface_refuses_an_int_that_is_no_live_gstbuffer():
    pytest.importorskip("gi")
    s = HostSurface(images(1))
    with pytest.raises(ValueError, match="is not a live GstBuffer"):  # a NvBufSurface, not a GstBuffer
        with frames.map_surface(s.address):
            pass


@needs_nvbufsurface
def test_cuda_surfaces_are_read_from_a_thread_without_a_cuda_context():
    """A GStreamer streaming thread has no current CUDA context: the pointer checks must not need one."""
    import threading

    s = cuda_surface("RGBA", images(2))
    out = []

    def read():
        try:
            parsed = frames.read_surface(s.address, s.size)
            out.append([surf.tensors().shape for surf in parsed.surfaces])
        except Exception as exc:  # noqa: BLE001 - surfaced below
            out.append(exc)

    t = threading.Thread(target=read)
    t.start()
    t.join()
    assert out and not isinstance(out[0], Exception), out


@pytest.mark.parametrize("fmt", ["UYVP", "UYVP_709_ER"])
def test_an_odd_width_uyvp_surface_is_refused_as_packed_422_not_read_one_pixel_wider(fmt):
    # Three five-byte pixel pairs hold 6 pixels: a 5-wide surface must not become a 6-wide frame.
    s = HostSurface([np.zeros((4, 3, 5), np.uint8)], fmt)
    s.params[0].width = s.params[0].planeParams.width[0] = 5
    with pytest.raises(frames.SurfaceLayoutError,
                       match=r"surfaceList\[0\]: frame must have an even width \(format UYVP is packed 4:2:2\), got 5"):
        frames.read_surface(s.address, s.size)


def _covered_reference(lines, ranges, write):
    """Every line parsed, then each range walked over the spans in order (the form before the binary search)."""
    spans = []
    for line in lines:
        addresses, perms = line.split(b" ", 2)[:2]
        lo, hi = (int(v, 16) for v in addresses.split(b"-"))
        spans.append((lo, hi, perms[:1] == b"r" and (not write or perms[1:2] == b"w")))
    out = []
    for address, size in ranges:
        pos, end = address, address + size
        ok = size >= 0 and 0 < address < (1 << 63) - max(size, 0)
        for lo, hi, usable in spans if ok and size else ():
            if hi <= pos:
                continue
            if lo > pos or not usable:
                ok = False
                break
            pos = hi
            if pos >= end:
                break
        out.append(ok and pos >= end)
    return out


_MAPS = (b"00400000-00452000 r-xp 00000000 08:02 173521 /usr/bin/dbus-daemon\n"
         b"00651000-00652000 r--p 00051000 08:02 173521 /usr/bin/dbus-daemon\n"
         b"00652000-00655000 rw-p 00052000 08:02 173521 /usr/bin/dbus-daemon\n"
         b"00e03000-00e24000 rw-p 00000000 00:00 0 [heap]\n"
         b"00e24000-011f7000 rw-p 00000000 00:00 0 [heap]\n"
         b"35b1800000-35b1820000 ---p 00000000 08:02 135522 /usr/lib64/ld-2.15.so\n"
         b"35b1820000-35b1821000 rw-p 00020000 08:02 135522 /usr/lib64/ld-2.15.so\n"
         b"7fff2c9d2000-7fff2c9f3000 rw-p 00000000 00:00 0 [stack]\n"
         b"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]\n").splitlines()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(_MAPS) - 1), st.integers(-0x3000, 0x3000),
                          st.integers(-1, 0x400000)), min_size=1, max_size=6), st.booleans(), st.booleans())
def test_a_mapped_range_is_found_by_the_search_as_by_a_walk_over_every_line(picks, write, real):
    """Ranges starting near a mapping's start or end (adjacent mappings, holes, unreadable and read-only ones, sizes
    from -1 to several mappings), on a fixed maps text and on this process's own: the binary search answers as
    walking every line does."""
    from obbmeta import _pointers

    lines = _MAPS
    if real:
        with open("/proc/self/maps", "rb") as f:
            lines = f.read().splitlines()
    ranges = []
    for k, offset, size in picks:
        lo, hi = (int(v, 16) for v in lines[k % len(lines)].split(b" ", 1)[0].split(b"-"))
        ranges.append(((lo if offset < 0x1800 else hi) + offset - (0 if offset < 0x1800 else 0x1800), size))
    assert _pointers.covered(lines, ranges, write) == _covered_reference(lines, ranges, write)


def _each_frame(s, n):
    """The per-frame form: every surfaceList entry through frames._frame (the oracle of the shared verdict)."""
    where = f"NvBufSurface ({frames.LAYOUTS[0].name} layout)"
    return tuple(frames._frame(s.params[i], i, int(s.struct.memType), int(s.struct.gpuId), where) for i in range(n))


def _outcome(fn):
    try:
        return fn()
    except frames.SurfaceLayoutError as exc:
        return f"SurfaceLayoutError: {exc}"


_PERTURB = [("width", 11), ("height", 8), ("pitch", 4096), ("colorFormat", 6), ("layout", 1), ("dataSize", 10),
            ("dataPtr", 0), ("dataPtr", "+1"), ("dataPtr", "+2"), ("planes.width", 5), ("planes.pitch", 128),
            ("planes.offset", 64), ("planes.bytesPerPix", 1), ("planes.num_planes", 3), (None, None)]


@pytest.mark.parametrize("fmt", ["RGBA", "NV12", "GRAY16_LE", "BGRA64_LE"])
@pytest.mark.parametrize("field,value", _PERTURB, ids=lambda v: str(v))
@pytest.mark.parametrize("which", [1, 2])
def test_a_batch_of_like_frames_is_read_as_each_frame_alone_would_be(fmt, field, value, which):
    """read_surface gives the frames that share frame 0's fields frame 0's verdict and checks only their dataPtr:
    with any one field of one frame changed (or none), the frames or the error are those of checking every frame
    alone (frames._frame), frame by frame."""
    h, w = 7, 10
    s = HostSurface([frame_and_reference(fmt, h, w, RNG)[0] for _ in range(3)], fmt, pitch_align=64)
    p = s.params[which]
    if field == "dataPtr":
        p.dataPtr = 0 if value == 0 else p.dataPtr + int(value)
    elif field and field.startswith("planes."):
        name = field.split(".")[1]
        if name == "num_planes":
            p.planeParams.num_planes = value
        else:
            getattr(p.planeParams, name)[0] = value
    elif field:
        setattr(p, field, value)
    expect = _outcome(lambda: _each_frame(s, 3))
    got = _outcome(lambda: frames.read_surface(s.address, s.size).surfaces)
    if isinstance(expect, str) or isinstance(got, str):
        assert got == expect
    else:
        assert got == expect and [f.data_ptr for f in got] == [s.params[i].dataPtr for i in range(3)]


def test_tensor_at_views_host_memory_in_place_and_refuses_what_is_not_mapped():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = frames.tensor_at(a.ctypes.data, (2, 3, 4), "float32", "the tensor")
    assert t.device.type == "cpu" and t.dtype == torch.float32 and t.tolist() == a.tolist()
    a[1, 2, 3] = -7.0  # a view, not a copy
    assert float(t[1, 2, 3]) == -7.0
    h = frames.tensor_at(a.ctypes.data, (6, 4), "float16", "the tensor")  # other dtypes: the same bytes
    assert h.dtype == torch.float16 and h.shape == (6, 4)
    with pytest.raises(frames.SurfaceLayoutError, match="the tensor has no buffer"):
        frames.tensor_at(0, (2,), "float32", "the tensor")
    with pytest.raises(frames.SurfaceLayoutError, match="the tensor: its 8 bytes at 0x10 are neither CUDA memory"):
        frames.tensor_at(0x10, (2,), "float32", "the tensor")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_tensor_at_views_cuda_memory_on_its_gpu():
    x = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4)
    t = frames.tensor_at(x.data_ptr(), (3, 4), "float32", "the tensor")
    assert t.device == x.device and t.data_ptr() == x.data_ptr() and torch.equal(t, x)
