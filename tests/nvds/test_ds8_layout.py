"""The C writer's DeepStream 6.x - 8.0 paths, executed for real without a DeepStream 8 library.

Only the DS 9.1 libnvds_meta is installable here, so the C functions for the layout without
``NvOSD_RectParams.rotation_angle`` (fill / read / lines / overlay for OBBMETA_LAYOUT_DS6_8) would otherwise never
run. The C core reaches NVIDIA's and glib's functions only through its function table (``obbmeta_nvds_api``), so
these tests build a fake DeepStream 8 metadata world in ctypes memory and hand the C core a table of Python
callbacks:

* a batch head whose pools report DS 8 element sizes (object 544, display 6912, user 48, frame as the real one);
* acquire functions that hand out zeroed elements of exactly those sizes, followed by a canary (a write past the
  DS 8 size shows up), with base_meta set as NVIDIA's pools set it (batch, meta type, pool release function);
* add functions that prepend to glib lists (real glib's g_list_prepend) and count as NVIDIA's do; a display-meta
  remove that unlinks, zeroes and returns the element; lock functions that count depth; g_malloc / g_free that are
  real glib's, wrapped to account for every allocation.

Every written field is then read back through the tests' own hand-computed DS 8 offsets (tests/nvds/raw.py,
``*_DS8``), every other byte of every element is checked to be still zero, and the C reader for the DS 6 - 8 layout
is compared with what was written. The real function table is re-installed after each test (fixture finaliser).
"""
from __future__ import annotations

import ctypes
import dataclasses
import math
from ctypes import CFUNCTYPE, c_char_p, c_double, c_int32, c_int64, c_size_t, c_void_p

import numpy as np
import pytest
import readback
import reference
from shapely.geometry import LineString
from shapely.geometry import box as shapely_box

from obbmeta.nvds import _core, layouts

from . import raw

DS6_8 = 1  # OBBMETA_LAYOUT_DS6_8 (kernels/nvds_meta.h)
DS9 = 2
W, H = 1920, 1080
OBJ, DISP = raw.OBJ_DS8, raw.DISPLAY_DS8
GUARD, CANARY = 256, 0xA5  # > 7040 - 6912: a DS 9 display meta written into a DS 8 element hits the canary
FAKE_OBB_TYPE = 4096 + 4096 + 1 + 4242  # what the fake nvds_get_user_meta_type hands out
MARK = int.from_bytes(b"OBBMOVL1", "big")
ERR_LAYOUT, ERR_POOL = -2, -4
WRITE_TEXT = 2
OVERLAY_LABEL, OVERLAY_HIDE_AABB, OVERLAY_NATIVE, OVERLAY_REMOVE_ONLY = 1, 2, 4, 8
PALETTE = [(1.0, 0.0, 0.0, 1.0), (0.0, 0.5, 0.25, 0.75), (0.125, 0.25, 1.0, 0.5)]
POOL_RELEASE_OFFSET = 48  # NvDsMetaPool.release_func (meta_type, 4 guints, 2 list pointers, copy_func before it)

vp = c_void_p
ACQUIRE = CFUNCTYPE(vp, vp)
ADD_OBJ = CFUNCTYPE(None, vp, vp, vp)
ADD2 = CFUNCTYPE(None, vp, vp)
LOCK = CFUNCTYPE(None, vp)
META_TYPE = CFUNCTYPE(c_int32, c_char_p)
MALLOC = CFUNCTYPE(vp, c_size_t)
FREE = CFUNCTYPE(None, vp)
RELEASE = CFUNCTYPE(None, vp, vp)


def _glib() -> ctypes.CDLL:
    g = ctypes.CDLL(_core.get().libs.glib._name)  # our own handle on the same loaded glib
    for name, args, res in (("g_list_prepend", [vp, vp], vp), ("g_list_remove", [vp, vp], vp),
                            ("g_list_free", [vp], None), ("g_malloc", [c_size_t], vp), ("g_free", [vp], None)):
        fn = getattr(g, name)
        fn.argtypes, fn.restype = args, res
    return g


def _real_frame_size() -> int:
    """NvDsFrameMeta's element size as NVIDIA's real library reports it."""
    lib = raw.load_nvds_meta()
    batch = lib.nvds_create_batch_meta(1)
    try:
        return raw.pool_element_size(batch, "frame_pool")
    finally:
        lib.nvds_destroy_batch_meta(batch)


def _set(ctype, addr: int, value) -> None:
    ctype.from_address(addr).value = value


class FakeDs8:
    """A DeepStream 8 metadata world in ctypes memory, and the obbmeta_nvds_api table that drives it."""

    def __init__(self, glib: ctypes.CDLL, frame_size: int, obj_size: int = raw.OBJ_SIZE_DS8,
                 display_size: int = raw.DISPLAY_SIZE_DS8):
        self.g = glib
        self.blocks: dict[int, ctypes.Array] = {}
        self.sizes: dict[int, int] = {}
        self.kind: dict[int, str] = {}
        self.errors: list[str] = []
        self.depth = 0
        self.lock_calls = 0
        self.descriptors: list[bytes] = []
        self.live_malloc: dict[int, int] = {}
        self.mallocs = 0
        self.acquired = {"obj": 0, "user": 0, "display": 0}
        self.removed: list[int] = []
        self.frames: list[int] = []
        self.frame_size = frame_size
        self._noop_release = RELEASE(lambda data, user: None)
        release_addr = ctypes.cast(self._noop_release, vp).value
        self.batch = self._block(1024, "batch")
        _set(vp, self.batch + raw.BASE_BATCH, self.batch)
        _set(c_int32, self.batch + raw.BASE_TYPE, raw.NVDS_BATCH_META)
        for pool, meta_type, size in (("frame_pool", raw.NVDS_FRAME_META, frame_size),
                                      ("obj_pool", raw.NVDS_OBJ_META, obj_size), ("classifier_pool", 5, 64),
                                      ("display_pool", raw.NVDS_DISPLAY_META, display_size),
                                      ("user_pool", raw.NVDS_USER_META, 48), ("label_pool", 6, 200)):
            p = self._block(64, "pool")
            _set(c_int32, p + raw.POOL["meta_type"], meta_type)
            _set(ctypes.c_uint32, p + raw.POOL["max_elements"], 8)
            _set(ctypes.c_uint32, p + raw.POOL["element_size"], size)
            _set(ctypes.c_uint32, p + raw.POOL["num_empty"], 8)
            if pool != "user_pool":  # NVIDIA's user-meta pool has no release function of its own
                _set(vp, p + POOL_RELEASE_OFFSET, release_addr)
            _set(vp, self.batch + raw.BATCH[pool], p)
        self.obj_size, self.display_size = obj_size, display_size
        self.callbacks = dict(
            acquire_obj_meta=ACQUIRE(self._acquire_obj), add_obj_meta_to_frame=ADD_OBJ(self._add_obj),
            acquire_user_meta=ACQUIRE(self._acquire_user), add_user_meta_to_obj=ADD2(self._add_user),
            acquire_meta_lock=LOCK(self._lock), release_meta_lock=LOCK(self._unlock),
            get_user_meta_type=META_TYPE(self._meta_type), g_malloc=MALLOC(self._malloc), g_free=FREE(self._free),
            acquire_display_meta=ACQUIRE(self._acquire_display),
            add_display_meta_to_frame=ADD2(self._add_display),
            remove_display_meta_from_frame=ADD2(self._remove_display),
            remove_obj_meta_from_frame=ADD2(self._remove_obj))
        self.api = _core.ApiTable(**{k: ctypes.cast(v, vp).value for k, v in self.callbacks.items()})

    # ---- memory
    def _block(self, size: int, kind: str) -> int:
        buf = ctypes.create_string_buffer(size + GUARD)
        addr = ctypes.addressof(buf)
        ctypes.memset(addr + size, CANARY, GUARD)
        self.blocks[addr], self.sizes[addr], self.kind[addr] = buf, size, kind
        return addr

    def _element(self, pool: str, kind: str) -> int:
        """A zeroed element of the pool's size, base_meta as NVIDIA's pools fill it."""
        p = raw.ptr(self.batch + raw.BATCH[pool])
        e = self._block(raw.u32(p + raw.POOL["element_size"]), kind)
        _set(vp, e + raw.BASE_BATCH, self.batch)
        _set(c_int32, e + raw.BASE_TYPE, raw.i32(p + raw.POOL["meta_type"]))
        _set(vp, e + raw.BASE_RELEASE, raw.ptr(p + POOL_RELEASE_OFFSET) or None)
        _set(ctypes.c_uint32, p + raw.POOL["num_full"], raw.u32(p + raw.POOL["num_full"]) + 1)
        return e

    def canaries_intact(self) -> list[int]:
        """Addresses of blocks whose guard bytes after the element were overwritten."""
        return [a for a, size in self.sizes.items() if ctypes.string_at(a + size, GUARD) != bytes([CANARY]) * GUARD]

    def add_frame(self, width: int = W, height: int = H) -> int:
        f = self._element("frame_pool", "frame")
        for key, value in (("source_frame_width", width), ("source_frame_height", height),
                           ("pipeline_width", width), ("pipeline_height", height)):
            _set(ctypes.c_uint32, f + raw.FRAME[key], value)
        _set(ctypes.c_uint32, f + raw.FRAME["batch_id"], len(self.frames))
        head = self.batch + raw.BATCH["frame_meta_list"]
        _set(vp, head, self.g.g_list_prepend(raw.ptr(head) or None, f))
        _set(ctypes.c_uint32, self.batch + raw.BATCH["num_frames_in_batch"], len(self.frames) + 1)
        self.frames.append(f)
        return f

    def add_plain_object(self, frame: int, rect: tuple, class_id: int = 0) -> int:
        """An object as nvinfer writes it (rect_params only, no user meta), at the DS 8 offsets."""
        self.depth += 1
        o = self._acquire_obj(self.batch)
        for k, v in zip(("rect_left", "rect_top", "rect_width", "rect_height"), rect):
            _set(ctypes.c_float, o + OBJ[k], v)
        _set(c_int32, o + OBJ["class_id"], class_id)
        _set(ctypes.c_uint32, o + OBJ["border_width"], 3)
        self._add_obj(frame, o, None)
        self.depth -= 1
        return o

    # ---- the callbacks (an exception here would be swallowed by ctypes: record it instead)
    def _check(self, what: str, batch: int | None = None) -> None:
        if self.depth <= 0:
            self.errors.append(f"{what} called without the batch lock")
        if batch is not None and batch != self.batch:
            self.errors.append(f"{what} called with batch {batch:#x}, not {self.batch:#x}")

    def _acquire_obj(self, batch):
        self._check("acquire_obj_meta", batch)
        self.acquired["obj"] += 1
        return self._element("obj_pool", "obj")

    def _acquire_user(self, batch):
        self._check("acquire_user_meta", batch)
        self.acquired["user"] += 1
        return self._element("user_pool", "user")

    def _acquire_display(self, batch):
        self._check("acquire_display_meta", batch)
        self.acquired["display"] += 1
        return self._element("display_pool", "display")

    def _add_obj(self, frame, obj, parent):
        self._check("add_obj_meta_to_frame")
        if self.kind.get(frame) != "frame" or self.kind.get(obj) != "obj":
            self.errors.append("add_obj_meta_to_frame: not (frame, object)")
            return
        _set(vp, obj + OBJ["parent"], parent)
        head = frame + raw.FRAME["obj_meta_list"]
        _set(vp, head, self.g.g_list_prepend(raw.ptr(head) or None, obj))
        _set(ctypes.c_uint32, frame + raw.FRAME["num_obj_meta"], raw.u32(frame + raw.FRAME["num_obj_meta"]) + 1)

    def _add_user(self, obj, user):
        self._check("add_user_meta_to_obj")
        if self.kind.get(obj) != "obj" or self.kind.get(user) != "user":
            self.errors.append("add_user_meta_to_obj: not (object, user meta)")
            return
        head = obj + OBJ["obj_user_meta_list"]
        _set(vp, head, self.g.g_list_prepend(raw.ptr(head) or None, user))

    def _add_display(self, frame, display):
        self._check("add_display_meta_to_frame")
        if self.kind.get(frame) != "frame" or self.kind.get(display) != "display":
            self.errors.append("add_display_meta_to_frame: not (frame, display meta)")
            return
        head = frame + raw.FRAME["display_meta_list"]
        _set(vp, head, self.g.g_list_prepend(raw.ptr(head) or None, display))

    def _unlink(self, name, frame, meta, list_name):
        """NVIDIA's removal ``name``: unlink ``meta`` from the frame's ``list_name`` and mark it released; False
        (an error noted) when it is not in that list."""
        self._check(name)
        head = frame + raw.FRAME[list_name]
        if meta not in raw.glist(raw.ptr(head)):
            self.errors.append(f"{name}: not in the frame's list")
            return False
        _set(vp, head, self.g.g_list_remove(raw.ptr(head), meta))
        self.kind[meta] = "released"
        self.removed.append(meta)
        return True

    def _remove_display(self, frame, display):
        """Unlink, zero after base_meta (NVIDIA's release_display_meta) and return to the pool."""
        if self._unlink("remove_display_meta_from_frame", frame, display, "display_meta_list"):
            ctypes.memset(display + 40, 0, self.sizes[display] - 40)

    def _remove_obj(self, frame, obj):
        """Unlink the object from its frame and mark it released (NVIDIA returns it to the pool)."""
        self._unlink("remove_obj_meta_from_frame", frame, obj, "obj_meta_list")

    def _lock(self, batch):
        if batch != self.batch:
            self.errors.append(f"acquire_meta_lock on {batch:#x}")
        self.depth += 1
        self.lock_calls += 1

    def _unlock(self, batch):
        if batch != self.batch:
            self.errors.append(f"release_meta_lock on {batch:#x}")
        self.depth -= 1
        if self.depth < 0:
            self.errors.append("release_meta_lock without acquire")

    def _meta_type(self, descriptor):
        self.descriptors.append(descriptor)
        return FAKE_OBB_TYPE

    def _malloc(self, n):
        p = self.g.g_malloc(n)
        self.live_malloc[p] = n
        self.mallocs += 1
        return p

    def _free(self, p):
        if p and self.live_malloc.pop(p, None) is None:
            self.errors.append(f"g_free({p:#x}) of a pointer this world's g_malloc did not hand out")
        self.g.g_free(p)

    # ---- walking (the tests' own offsets)
    def objects(self, frame: int) -> list[int]:
        """obj_meta_list in insertion order (the add function prepends)."""
        return raw.glist(raw.ptr(frame + raw.FRAME["obj_meta_list"]))[::-1]

    def displays(self, frame: int) -> list[int]:
        return raw.glist(raw.ptr(frame + raw.FRAME["display_meta_list"]))[::-1]

    def close(self) -> None:
        """What NVIDIA's release of the batch does for what we hand out: each user meta's release_func, each
        object's display_text g_free'd; then every glib list node freed."""
        for f in self.frames:
            for o in raw.glist(raw.ptr(f + raw.FRAME["obj_meta_list"])):
                head = o + OBJ["obj_user_meta_list"]
                for um in raw.glist(raw.ptr(head)):
                    release = raw.ptr(um + raw.BASE_RELEASE)
                    if release:
                        RELEASE(release)(um, None)
                self.g.g_list_free(raw.ptr(head) or None)
                _set(vp, head, None)
                text = raw.ptr(o + OBJ["display_text"])
                if text:
                    self._free(text)
                    _set(vp, o + OBJ["display_text"], None)
            for key in ("obj_meta_list", "display_meta_list"):
                self.g.g_list_free(raw.ptr(f + raw.FRAME[key]) or None)
                _set(vp, f + raw.FRAME[key], None)
        self.g.g_list_free(raw.ptr(self.batch + raw.BATCH["frame_meta_list"]) or None)
        _set(vp, self.batch + raw.BATCH["frame_meta_list"], None)


@pytest.fixture(scope="module")
def glib():
    return _glib()


@pytest.fixture(scope="module")
def frame_size():
    return _real_frame_size()


@pytest.fixture
def world(glib, frame_size):
    """A fake DS 8 world installed as the C core's function table; the real table is re-installed afterwards
    and the process is left as it was (payload count, user meta type, allocations)."""
    core = _core.get()
    c = core.c
    live_before = c.obbmeta_nvds_live_payloads()
    w = FakeDs8(glib, frame_size)
    assert c.obbmeta_nvds_init(ctypes.byref(w.api)) == FAKE_OBB_TYPE
    try:
        yield w
        assert w.errors == []
        assert w.depth == 0
        assert w.canaries_intact() == []
    finally:
        try:
            w.close()
        finally:
            assert c.obbmeta_nvds_init(ctypes.byref(core.api)) == core.obb_meta_type
    assert w.errors == [], "while releasing"
    assert w.live_malloc == {}, "every g_malloc of the C writer was g_free'd by the release path"
    assert c.obbmeta_nvds_live_payloads() == live_before
    assert c.obbmeta_nvds_obb_meta_type() == core.obb_meta_type


# ---------------------------------------------------------------- references (float64, independent of obbmeta)

corners_ref, aabb_ref = reference.corners, reference.aabb


def px(v: float, limit: float) -> int:
    return int(min(max(math.floor(v + 0.5), 0), limit - 1))


def clipped_edges(b, fw=W, fh=H):
    area = shapely_box(0, 0, fw, fh)
    p = corners_ref(b)
    out = []
    for k in range(4):
        inside = LineString([p[k], p[(k + 1) % 4]]).intersection(area)
        if inside.is_empty or inside.length == 0:
            continue
        (x1, y1), (x2, y2) = inside.coords[0], inside.coords[-1]
        out.append((px(x1, fw), px(y1, fh), px(x2, fw), px(y2, fh)))
    return out


def stray_bytes(addr: int, size: int, allowed: list[tuple[int, int]]) -> list[int]:
    """Offsets of non-zero bytes of [addr, addr + size) outside the allowed (offset, length) ranges."""
    data = ctypes.string_at(addr, size)
    ok = bytearray(size)
    for off, n in allowed:
        ok[off:off + n] = b"\1" * n
    return [i for i in range(size) if data[i] and not ok[i]]


def colour(addr: int) -> tuple:
    return tuple(raw.f64(addr + 8 * i) for i in range(4))


def obj_rect(o, prefix="rect"):
    return tuple(raw.f32(o + OBJ[f"{prefix}_{k}"]) for k in ("left", "top", "width", "height"))


# ---------------------------------------------------------------- calling the C entry points directly

class Call:
    """Parameter structs kept alive with their arrays, as obbmeta/nvds/obbs.py builds them."""

    def __init__(self, rows, scores=None, labels=None, names=None, flags=WRITE_TEXT, component_id=7,
                 border_width=5, palette=PALETTE):
        self.x = np.ascontiguousarray(np.asarray(rows, np.float32).reshape(-1, 5))
        n = len(self.x)
        self.s = np.ascontiguousarray(np.asarray(scores if scores is not None else [0.5] * n, np.float32))
        self.lab = np.ascontiguousarray(np.asarray(labels if labels is not None else [0] * n, np.int64))
        self.mask = np.full(n, 7, np.uint8)
        self.pal = (c_double * (4 * len(palette)))(*[v for c in palette for v in c])
        p = _core.WriteParams()
        p.xywhr, p.scores, p.labels, p.n = self.x.ctypes.data, self.s.ctypes.data, self.lab.ctypes.data, n
        if names is not None:
            self.names = (c_char_p * len(names))(*[s.encode() for s in names])
            p.label_text, p.num_labels = self.names, len(names)
        p.palette, p.num_colors = ctypes.cast(self.pal, ctypes.POINTER(c_double)), len(palette)
        p.component_id, p.border_width, p.flags = component_id, border_width, flags
        p.written_mask = self.mask.ctypes.data
        self.p = p

    def single(self, frame, fw=W, fh=H):
        self.p.frame, self.p.frame_width, self.p.frame_height = frame, fw, fh
        return self

    def batch_form(self, frames, counts, sizes):
        offs = [0]
        for k in counts:
            offs.append(offs[-1] + k)
        self.keep = ((c_void_p * len(frames))(*frames), (c_int64 * len(offs))(*offs),
                     (c_double * (2 * len(sizes)))(*[v for s in sizes for v in s]))
        self.p.frames, self.p.offsets, self.p.frame_sizes = (ctypes.addressof(a) for a in self.keep)
        self.p.num_frames = len(frames)
        return self

    def attach(self, w: FakeDs8, layout=DS6_8) -> int:
        return _core.get().c.obbmeta_nvds_attach(layout, w.batch, ctypes.addressof(self.p))


def read_rows(frame: int, layout=DS6_8):
    c = _core.get().c
    frames, counts = (ctypes.c_void_p * 1)(frame), (ctypes.c_int64 * 1)()
    n = c.obbmeta_nvds_read(layout, frames, 1, None, 0, counts)
    rows = (_core.ReadRow * max(n, 1))()
    assert c.obbmeta_nvds_read(layout, frames, 1, rows, n, counts) == n == counts[0]
    return list(rows[:n])


def overlay(w: FakeDs8, frame: int, flags=OVERLAY_LABEL, width=4, palette=PALETTE, fw=W, fh=H):
    pal = (c_double * (4 * len(palette)))(*[v for c in palette for v in c])
    p = _core.OverlayParams()
    p.palette, p.num_colors, p.line_width, p.flags = ctypes.addressof(pal), len(palette), width, flags
    p.frame_width, p.frame_height = fw, fh
    code = _core.get().c.obbmeta_nvds_overlay(DS6_8, w.batch, frame, ctypes.addressof(p))
    return code, p


def obb_user_metas(o):
    return [u for u in raw.user_metas_of_ds8(o) if raw.i32(u + raw.BASE_TYPE) == FAKE_OBB_TYPE]


# ---------------------------------------------------------------- the offsets themselves

def test_the_ds8_offsets_are_the_ds9_ones_without_rotation_angle():
    """The DS 8 tables in raw.py against the DS 9 ones (8 bytes fewer after rect_params; 16 x 8 fewer after the
    display meta's rect array) and against what the C compiler reports for obbmeta's own DS 6-8 structs."""
    for key, off in raw.OBJ_DS8.items():
        moved = off >= raw.OBJ["rect_left"] + raw.RECT_SIZE_DS8
        assert off == raw.OBJ[key] - (8 if moved else 0), key
    assert raw.OBJ_SIZE_DS8 == raw.OBJ_SIZE - 8 == 544
    assert raw.DISPLAY_DS8["text_params"] == raw.DISPLAY["text_params"] - 16 * 8
    assert raw.DISPLAY_DS8["line_params"] == raw.DISPLAY["line_params"] - 16 * 8
    assert raw.DISPLAY_DS8["misc_osd_data"] == raw.DISPLAY["misc_osd_data"] - 16 * 8
    assert raw.DISPLAY_SIZE_DS8 == raw.DISPLAY_SIZE - 128 == 6912
    out = (c_int64 * 28)()
    assert _core.get().c.obbmeta_nvds_layout_info(DS6_8, out, 28) == 0
    o = raw.OBJ_DS8
    assert list(out[:17]) == [544, o["parent"], o["unique_component_id"], o["class_id"], o["object_id"],
                              o["det_left"], o["confidence"], o["rect_left"], o["border_width"], o["border_color"],
                              o["mask_data"], o["display_text"], o["obj_label"], o["classifier_meta_list"],
                              o["obj_user_meta_list"], o["misc_obj_info"], -1]
    d = raw.DISPLAY_DS8
    assert list(out[20:28]) == [6912, d["num_lines"], d["line_params"], raw.LINE_SIZE, d["num_rects"],
                                d["rect_params"], raw.RECT_SIZE_DS8, d["misc_osd_data"]]


# ---------------------------------------------------------------- attach (obbmeta_fill_ds6_8)

def test_init_asks_for_the_obb_user_meta_type_by_its_descriptor(world):
    assert world.descriptors == [b"OBBMETA.OBB.V1"]
    assert _core.get().c.obbmeta_nvds_obb_meta_type() == FAKE_OBB_TYPE


def test_attach_writes_every_field_at_the_ds8_offsets(world):
    f = world.add_frame()
    rows = [[400, 300, 120, 40, 0.3],      # inside
            [1000, 600, 50, 200, -1.2],    # inside, class 4 -> palette[1]
            [10, 1075, 60, 30, 0.5],       # partly outside: clipped
            [-100, 500, 50, 50, 0.0],      # fully outside: not written
            [1500, 5, 30, 8, 0.1]]         # crosses the top edge: clipped, label offset clamped to 0
    names = ["plane", "ship", "vehicle", "x", "y" * 200]
    call = Call(rows, scores=[0.9, 0.6, 0.3, 0.2, 0.1], labels=[0, 4, 2, 1, 4], names=names).single(f)
    assert call.attach(world) == 4
    assert call.p.n_filtered == 1 and call.p.bad_index == -1
    assert call.mask.tolist() == [1, 1, 1, 0, 1]
    assert world.lock_calls == 1 and world.acquired == {"obj": 4, "user": 4, "display": 0}
    assert raw.u32(f + raw.FRAME["num_obj_meta"]) == 4
    assert raw.i32(f + raw.FRAME["bInferDone"]) == 1
    objs = world.objects(f)
    assert len(objs) == 4
    c = _core.get().c
    copy_fn = ctypes.cast(c.obbmeta_obb_meta_copy, vp).value
    release_fn = ctypes.cast(c.obbmeta_obb_meta_release, vp).value
    written = [0, 1, 2, 4]
    for o, i in zip(objs, written):
        b, cls = rows[i], [0, 4, 2, 1, 4][i]
        x1, y1, x2, y2 = aabb_ref(b)
        cx1, cy1, cx2, cy2 = max(x1, 0), max(y1, 0), min(x2, W), min(y2, H)
        assert obj_rect(o) == pytest.approx((cx1, cy1, cx2 - cx1, cy2 - cy1), abs=1e-3)
        assert obj_rect(o, "det") == pytest.approx((x1, y1, x2 - x1, y2 - y1), abs=1e-3)
        assert raw.u64(o + OBJ["object_id"]) == raw.UNTRACKED
        assert raw.ptr(o + OBJ["parent"]) == 0
        assert raw.i32(o + OBJ["class_id"]) == cls
        assert raw.i32(o + OBJ["unique_component_id"]) == 7
        assert raw.f32(o + OBJ["confidence"]) == pytest.approx([0.9, 0.6, 0.3, 0.2, 0.1][i])
        label = names[cls].encode()[:127]
        assert raw.cstr(o + OBJ["obj_label"]) == label
        assert raw.u32(o + OBJ["border_width"]) == 5
        assert colour(o + OBJ["border_color"]) == PALETTE[cls % 3]
        assert raw.u32(o + OBJ["has_bg_color"]) == 0
        assert raw.i32(o + OBJ["has_color_info"]) == 0 and raw.i32(o + OBJ["color_id"]) == 0
        # text_params: a g_malloc'd copy of the label, white Serif 10 on opaque black, 10 px above the rect
        text = raw.ptr(o + OBJ["display_text"])
        assert text in world.live_malloc and raw.cstr(text) == label
        left, top = obj_rect(o)[:2]
        assert raw.u32(o + OBJ["text_x"]) == px(left, W)
        assert raw.u32(o + OBJ["text_y"]) == px(top - 10, H)
        assert raw.cstr(raw.ptr(o + OBJ["font_name"])) == b"Serif"
        assert raw.u32(o + OBJ["font_size"]) == 10
        assert colour(o + OBJ["font_color"]) == (1.0, 1.0, 1.0, 1.0)
        assert raw.i32(o + OBJ["set_bg_clr"]) == 1
        assert colour(o + OBJ["text_bg_clr"]) == (0.0, 0.0, 0.0, 1.0)
        # the user meta and its payload
        (um,) = raw.user_metas_of_ds8(o)
        assert raw.i32(um + raw.BASE_TYPE) == FAKE_OBB_TYPE
        assert raw.ptr(um + raw.BASE_BATCH) == world.batch
        assert raw.ptr(um + raw.BASE_COPY) == copy_fn and raw.ptr(um + raw.BASE_RELEASE) == release_fn
        assert raw.ptr(um + 16) == 0  # uContext
        pl = raw.ptr(um + raw.USER["user_meta_data"])
        assert world.live_malloc.get(pl) == raw.PAYLOAD_SIZE
        assert raw.u32(pl + raw.PAYLOAD["version"]) == 1 and raw.u32(pl + raw.PAYLOAD["struct_size"]) == 64
        assert [raw.f32(pl + raw.PAYLOAD[k]) for k in ("cx", "cy", "w", "h", "angle")] == pytest.approx(b)
        corners = [raw.f32(pl + raw.PAYLOAD["corners"] + 4 * k) for k in range(8)]
        assert corners == pytest.approx([v for pt in corners_ref(b) for v in pt], abs=1e-3)
        clipped = (cx1, cy1, cx2, cy2) != (x1, y1, x2, y2)
        assert clipped == (i in (2, 4))  # the reference's own view: boxes 2 and 4 cross the frame's edge
        assert raw.u32(pl + raw.PAYLOAD["flags"]) == (1 if clipped else 0)  # OBBMETA_OBB_RECT_CLIPPED
        # base_meta untouched, and not one byte outside the fields the writer sets (a DS 9 struct written into
        # this element would put rotation_angle on mask_params.data at 208 and move everything after it)
        assert raw.ptr(o + raw.BASE_BATCH) == world.batch and raw.i32(o + raw.BASE_TYPE) == raw.NVDS_OBJ_META
        allowed = [(0, 40), (48, 32), (96, 4), (104, 24), (128, 32), (232, 104), (336, 128), (472, 8)]
        assert stray_bytes(o, raw.OBJ_SIZE_DS8, allowed) == []
        assert stray_bytes(um, raw.USER_SIZE, [(0, 48)]) == []
    # the long name: 127 bytes and a NUL
    assert ctypes.string_at(objs[3] + OBJ["obj_label"], 128) == b"y" * 127 + b"\0"
    assert raw.u32(objs[3] + OBJ["text_y"]) == 0


def test_attach_without_text_or_names_writes_the_decimal_class_id_and_no_text(world):
    f = world.add_frame(640, 480)
    call = Call([[100, 100, 10, 10, 0.0], [200, 200, 10, 20, 0.2]], labels=[0, 1234567], flags=0,
                palette=[(0.5, 0.5, 0.5, 1.0)]).single(f, 640, 480)
    assert call.attach(world) == 2
    objs = world.objects(f)
    assert [raw.cstr(o + OBJ["obj_label"]) for o in objs] == [b"0", b"1234567"]
    for o in objs:
        assert colour(o + OBJ["border_color"]) == (0.5, 0.5, 0.5, 1.0)
        assert ctypes.string_at(o + OBJ["display_text"], 104) == bytes(104)  # text_params untouched
        assert stray_bytes(o, raw.OBJ_SIZE_DS8, [(0, 40), (48, 32), (96, 4), (104, 24), (128, 32), (336, 128),
                                                 (472, 8)]) == []
    assert len(world.live_malloc) == 2  # the two payloads, nothing else


def test_the_batch_form_writes_each_frame_on_ds8(world):
    frames = [world.add_frame(640, 480), world.add_frame(320, 240)]
    rows = [[10, 10, 5, 5, 0], [600, 400, 8, 8, 0], [100, 100, 5, 5, 0], [900, 10, 5, 5, 0]]
    call = Call(rows, labels=[0, 1, 2, 0]).batch_form(frames, [2, 2], [(640, 480), (320, 240)])
    assert call.attach(world) == 3
    assert call.mask.tolist() == [1, 1, 1, 0] and world.lock_calls == 1
    assert [raw.u32(f + raw.FRAME["num_obj_meta"]) for f in frames] == [2, 1]
    assert [raw.i32(o + OBJ["class_id"]) for o in world.objects(frames[0])] == [0, 1]
    (o,) = world.objects(frames[1])
    assert obj_rect(o) == pytest.approx((97.5, 97.5, 5, 5))
    assert raw.u32(o + OBJ["text_x"]) == 98  # clamped against the second frame's own size


def test_rotation_mode_is_refused_on_ds8_before_anything_is_acquired(world):
    f = world.add_frame()
    call = Call([[100, 100, 10, 10, 0.3]], flags=1).single(f)  # OBBMETA_WRITE_ROTATION
    assert call.attach(world) == ERR_LAYOUT
    assert world.acquired == {"obj": 0, "user": 0, "display": 0} and world.lock_calls == 0
    assert world.objects(f) == []


def test_the_ds9_path_refuses_ds8_pools(world):
    """A DS 9 layout against this batch (544-byte objects) must not write 552-byte objects into it."""
    f = world.add_frame()
    assert Call([[100, 100, 10, 10, 0.3]]).single(f).attach(world, layout=DS9) == ERR_POOL
    n = ctypes.c_int64(0)
    seg = (ctypes.c_float * 4)(1, 1, 5, 5)
    rgba = (c_double * 4)(1, 1, 1, 1)
    assert _core.get().c.obbmeta_nvds_add_lines(DS9, world.batch, f, ctypes.addressof(seg), 1,
                                                ctypes.addressof(rgba), 1, 2, W, H, ctypes.byref(n)) == ERR_POOL
    assert world.acquired == {"obj": 0, "user": 0, "display": 0}


def test_the_ds8_path_refuses_ds9_pools(glib, frame_size):
    core = _core.get()
    w = FakeDs8(glib, frame_size, obj_size=raw.OBJ_SIZE, display_size=raw.DISPLAY_SIZE)
    assert core.c.obbmeta_nvds_init(ctypes.byref(w.api)) == FAKE_OBB_TYPE
    try:
        f = w.add_frame()
        assert Call([[100, 100, 10, 10, 0.3]]).single(f).attach(w) == ERR_POOL
        code, _ = overlay(w, f)
        assert code == ERR_POOL
        assert w.acquired == {"obj": 0, "user": 0, "display": 0} and w.errors == []
    finally:
        w.close()
        assert core.c.obbmeta_nvds_init(ctypes.byref(core.api)) == core.obb_meta_type


# ---------------------------------------------------------------- read (obbmeta_read_ds6_8)

def test_the_ds8_reader_returns_what_was_written(world):
    f = world.add_frame()
    rows = [[400, 300, 120, 40, 0.3], [10, 1075, 60, 30, 0.5]]
    call = Call(rows, scores=[0.9, 0.4], labels=[1, 2], names=["a", "bb", "ccc"]).single(f)
    assert call.attach(world) == 2
    plain = world.add_plain_object(f, (50.0, 60.0, 30.0, 20.0), class_id=9)  # nvinfer-style, no OBB
    # a foreign user meta in front of ours: counted, skipped
    first = world.objects(f)[0]
    world.depth += 1
    foreign = world._acquire_user(world.batch)
    world._add_user(first, foreign)
    world.depth -= 1
    got = read_rows(f)
    assert [r.address for r in got] == raw.glist(raw.ptr(f + raw.FRAME["obj_meta_list"]))
    by_addr = {r.address: r for r in got}
    for o, b in zip(world.objects(f)[:2], rows):
        r = by_addr[o]
        assert r.object_id == raw.u64(o + OBJ["object_id"]) == raw.UNTRACKED
        assert r.class_id == raw.i32(o + OBJ["class_id"])
        assert r.component_id == raw.i32(o + OBJ["unique_component_id"]) == 7
        assert r.confidence == raw.f32(o + OBJ["confidence"])
        assert r.tracker_confidence == 0.0
        assert tuple(r.rect) == obj_rect(o)
        assert tuple(r.detector_bbox) == obj_rect(o, "det")
        assert r.rotation_angle == 0.0
        assert r.label == raw.cstr(o + OBJ["obj_label"])
        assert r.source == 0  # OBBMETA_SOURCE_USER_META
        pl = raw.ptr(obb_user_metas(o)[0] + raw.USER["user_meta_data"])
        assert list(r.xywhr) == [raw.f32(pl + raw.PAYLOAD[k]) for k in ("cx", "cy", "w", "h", "angle")]
        assert list(r.xywhr) == pytest.approx(b)
        assert list(r.corners) == [raw.f32(pl + raw.PAYLOAD["corners"] + 4 * k) for k in range(8)]
        assert r.obb_flags == raw.u32(pl + raw.PAYLOAD["flags"])
        assert r.num_user_meta == (2 if o == first else 1)
    r = by_addr[plain]
    assert (r.source, r.class_id, r.num_user_meta, r.obb_flags) == (2, 9, 0, 0)  # OBBMETA_SOURCE_AABB
    assert list(r.xywhr) == [65.0, 70.0, 30.0, 20.0, 0.0]
    assert list(r.corners) == pytest.approx([50, 60, 80, 60, 80, 80, 50, 80])
    assert world.lock_calls == 3  # attach + two reads (count, then copy): the reader locks the frame's own batch


# ---------------------------------------------------------------- lines (obbmeta_lines_ds6_8)

def test_display_lines_land_at_the_ds8_offsets_16_per_display_meta(world):
    f = world.add_frame()
    rng = np.random.default_rng(8)
    seg = np.column_stack([rng.uniform(-200, W + 200, 40), rng.uniform(-200, H + 200, 40),
                           rng.uniform(0, W, 40), rng.uniform(0, H, 40)]).astype(np.float32)
    seg[5] = [-50, -50, -10, -10]  # fully outside: skipped
    rgba = np.ascontiguousarray(rng.uniform(0, 1, (40, 4)))
    n = ctypes.c_int64(0)
    written = _core.get().c.obbmeta_nvds_add_lines(DS6_8, world.batch, f, seg.ctypes.data, 40, rgba.ctypes.data,
                                                   40, 6, float(W), float(H), ctypes.byref(n))
    area = shapely_box(0, 0, W, H)
    want = []
    for k, (x1, y1, x2, y2) in enumerate(seg.astype(np.float64)):
        inside = LineString([(x1, y1), (x2, y2)]).intersection(area)
        if inside.is_empty or inside.length == 0:
            continue
        (a, b), (c, d) = inside.coords[0], inside.coords[-1]
        want.append((px(a, W), px(b, H), px(c, W), px(d, H), 6, tuple(rgba[k])))
    assert written == len(want) == 39
    displays = world.displays(f)
    assert n.value == len(displays) == math.ceil(39 / 16) == world.acquired["display"]
    assert [raw.u32(d + DISP["num_lines"]) for d in displays] == [16, 16, 7]
    got = [line for d in displays for line in raw.lines_of_ds8(d)]
    assert [g[:5] for g in got] == [w_[:5] for w_ in want]
    assert [g[5] for g in got] == [w_[5] for w_ in want]
    for d in displays:
        k = raw.u32(d + DISP["num_lines"])
        assert raw.i32(d + raw.BASE_TYPE) == raw.NVDS_DISPLAY_META
        assert stray_bytes(d, raw.DISPLAY_SIZE_DS8, [(0, 40), (DISP["num_lines"], 4),
                                                     (DISP["line_params"], k * raw.LINE_SIZE)]) == []


# ---------------------------------------------------------------- overlay (obbmeta_overlay_ds6_8)

BOXES = [[300 + 150 * k, 200 + 70 * k, 90, 30, 0.2 + 0.25 * k] for k in range(9)] + [[5, 540, 80, 40, 0.7]]


def test_the_overlay_draws_each_obb_as_marked_ds8_lines(world):
    f = world.add_frame()
    labels = [k % 5 for k in range(len(BOXES))]
    assert Call(BOXES, labels=labels, names=[str(k) for k in range(5)]).single(f).attach(world) == 10
    plain = world.add_plain_object(f, (10.0, 10.0, 20.0, 20.0))
    objs = world.objects(f)[:10]
    code, p = overlay(world, f, flags=OVERLAY_LABEL | OVERLAY_HIDE_AABB, width=4)
    assert code == 0
    want = [e + (4, PALETTE[c % 3]) for b, c in zip(BOXES, labels) for e in clipped_edges(b)]
    assert (p.objects, p.drawn, p.skipped, p.outside) == (11, 10, 1, 0)
    assert (p.lines, p.rects, p.removed, p.labels, p.hidden) == (len(want), 0, 0, 10, 10)
    displays = world.displays(f)
    assert p.display_metas == len(displays) == math.ceil(len(want) / 16)
    got = [line for d in displays for line in raw.lines_of_ds8(d)]
    # the C overlay walks obj_meta_list (newest first): compare as multisets of (line, colour)
    assert sorted(got) == sorted(want)
    for d in displays:
        k = raw.u32(d + DISP["num_lines"])
        assert 1 <= k <= 16
        assert raw.u64(d + DISP["misc_osd_data"] + 8 * 3) == MARK
        assert [raw.u64(d + DISP["misc_osd_data"] + 8 * i) for i in range(3)] == [0, 0, 0]
        assert stray_bytes(d, raw.DISPLAY_SIZE_DS8, [(0, 40), (DISP["num_lines"], 4),
                                                     (DISP["line_params"], k * raw.LINE_SIZE),
                                                     (DISP["misc_osd_data"] + 24, 8)]) == []
    for o, _b in zip(objs, BOXES):
        assert raw.u32(o + OBJ["border_width"]) == 0  # hidden
        assert obj_rect(o)[2] > 0  # the box itself stays
        pl = raw.ptr(obb_user_metas(o)[0] + raw.USER["user_meta_data"])
        cs = [(raw.f32(pl + raw.PAYLOAD["corners"] + 8 * k), raw.f32(pl + raw.PAYLOAD["corners"] + 8 * k + 4))
              for k in range(4)]
        top = min(cs, key=lambda c: (c[1], c[0]))
        assert (raw.u32(o + OBJ["text_x"]), raw.u32(o + OBJ["text_y"])) == (px(top[0], W), px(top[1] - 10, H))
    # the object without an OBB is skipped: neither hidden nor given a label position
    assert raw.u32(plain + OBJ["border_width"]) == 3
    assert (raw.u32(plain + OBJ["text_x"]), raw.u32(plain + OBJ["text_y"])) == (0, 0)


def test_a_second_overlay_replaces_ours_and_leaves_other_display_metas(world):
    f = world.add_frame()
    assert Call(BOXES, labels=[1] * len(BOXES)).single(f).attach(world) == 10
    world.depth += 1
    foreign = world._acquire_display(world.batch)
    world._add_display(f, foreign)
    world.depth -= 1
    _set(ctypes.c_uint32, foreign + DISP["num_lines"], 1)
    _set(ctypes.c_uint32, foreign + DISP["line_params"], 77)
    code, first = overlay(world, f, flags=0)
    assert code == 0
    ours = [d for d in world.displays(f) if d != foreign]
    lines = sorted(line for d in ours for line in raw.lines_of_ds8(d))
    code, second = overlay(world, f, flags=0)
    assert code == 0
    assert second.removed == first.display_metas == len(ours)
    assert sorted(world.removed) == sorted(ours)
    assert all(ctypes.string_at(d + 40, raw.DISPLAY_SIZE_DS8 - 40) == bytes(raw.DISPLAY_SIZE_DS8 - 40)
               for d in ours)
    now = world.displays(f)
    assert foreign in now and raw.u32(foreign + DISP["line_params"]) == 77
    assert sorted(line for d in now if d != foreign for line in raw.lines_of_ds8(d)) == lines
    code, third = overlay(world, f, flags=OVERLAY_REMOVE_ONLY)
    assert code == 0 and third.removed == second.display_metas and third.lines == 0
    assert world.displays(f) == [foreign]
    # labels and borders untouched without the flags
    for o in world.objects(f):
        assert raw.u32(o + OBJ["border_width"]) == 5


def test_native_overlay_is_refused_on_ds8(world):
    f = world.add_frame()
    assert Call(BOXES[:1]).single(f).attach(world) == 1
    code, _ = overlay(world, f, flags=OVERLAY_NATIVE)
    assert code == ERR_LAYOUT
    assert world.displays(f) == [] and world.acquired["display"] == 0


# ---------------------------------------------------------------- the public API on the DS 6-8 layout

def test_the_public_api_on_a_ds8_batch(world, monkeypatch):
    """attach_obbs / read_obbs / add_display_lines / add_obb_overlay as a user of a DS 8 install calls them
    (with batch and frame addresses, as from pyds), the Core's detected layout being DS 6-8."""
    from obbmeta import nvds
    from obbmeta.osd import add_obb_overlay

    monkeypatch.setattr(_core, "_core", dataclasses.replace(_core.get(), layout=layouts.DS6_8,
                                                             obb_meta_type=FAKE_OBB_TYPE))
    f = world.add_frame()
    res = nvds.attach_obbs(world.batch, f, xywhr=np.array([[400, 300, 120, 40, 0.3], [-50, -50, 4, 4, 0]],
                                                          np.float32),
                           scores=np.array([0.75, 0.5], np.float32), labels=np.array([1, 0]),
                           class_names=["a", "é" * 100], component_id=3)
    assert (res.written, res.filtered) == (1, 1)
    (o,) = world.objects(f)
    assert raw.cstr(o + OBJ["obj_label"]).decode() == "é" * 63  # cut on a UTF-8 boundary by Python
    assert raw.i32(o + OBJ["unique_component_id"]) == 3
    with pytest.raises(ValueError, match="needs the DeepStream 9 layout"):
        nvds.attach_obbs(world.batch, f, xywhr=np.array([[10, 10, 4, 4, 0]], np.float32), rotation_angle=True)
    ((info, obb),) = readback.pairs(f)
    assert info.address == o and info.label == "é" * 63 and info.rotation_angle == 0.0
    assert obb.source == "user_meta" and obb.xywhr == pytest.approx((400, 300, 120, 40, 0.3))
    assert nvds.add_display_lines(world.batch, f, np.array([[0, 0, 100, 50]], np.float32), width=2) == 1
    (d,) = world.displays(f)
    assert raw.lines_of_ds8(d) == [(0, 0, 100, 50, 2, (1.0, 1.0, 1.0, 1.0))]
    r = add_obb_overlay(world.batch, f, width=3)
    assert (r.objects, r.drawn, r.lines, r.display_metas) == (1, 1, 4, 1)
    ours = [x for x in world.displays(f) if x != d]
    assert len(ours) == 1 and raw.u64(ours[0] + DISP["misc_osd_data"] + 24) == MARK
    with pytest.raises(ValueError, match="native=True needs the DeepStream 9 layout"):
        add_obb_overlay(world.batch, f, native=True)


def test_a_trackers_objects_on_a_ds8_batch(world, monkeypatch):
    """What obbmeta.track writes for tracks without a detection, on the DS 6-8 layout: bInferDone kept, detector_bbox
    zero, one component id per box, the written objects' addresses; rotation_angle refused (the layout has none)
    unless every value is NaN (nothing to write)."""
    from obbmeta import nvds

    monkeypatch.setattr(_core, "_core", dataclasses.replace(_core.get(), layout=layouts.DS6_8,
                                                             obb_meta_type=FAKE_OBB_TYPE))
    f = world.add_frame()
    rows = np.array([[400, 300, 120, 40, 0.3], [-50, -50, 4, 4, 0], [900, 500, 30, 60, 1.0]], np.float32)
    res = nvds.attach_obbs(world.batch, f, xywhr=rows, labels=np.array([0, 1, 1]), component_id=np.array([4, 5, 6]),
                           mark_infer_done=False, detector_bbox=False)
    assert raw.i32(f + raw.FRAME["bInferDone"]) == 0
    objs = world.objects(f)  # insertion order
    assert res.addresses.tolist() == [objs[0], 0, objs[1]]
    for o, comp in ((objs[0], 4), (objs[1], 6)):
        assert raw.i32(o + OBJ["unique_component_id"]) == comp
        assert obj_rect(o, "det") == (0.0, 0.0, 0.0, 0.0) and obj_rect(o)[2] > 0
    before = [obj_rect(o) for o in objs]
    nvds.update_objects(world.batch, f, res.addresses[res.written_mask], rotation_angle=np.nan)
    assert [obj_rect(o) for o in objs] == before and stray_bytes(objs[0], raw.OBJ_SIZE_DS8, [
        (0, 40), (48, 32), (96, 4), (104, 24), (128, 32), (232, 104), (336, 128), (472, 8)]) == []
    with pytest.raises(ValueError, match="rotation_angle needs the DeepStream 9 layout"):
        nvds.update_objects(world.batch, f, res.addresses[res.written_mask], rotation_angle=[10.0, np.nan])


def test_the_rotation_update_is_refused_by_the_ds8_path(world):
    f = world.add_frame()
    call = Call([[100, 100, 10, 10, 0.3]]).single(f)
    assert call.attach(world) == 1
    (o,) = world.objects(f)
    objs, angle = (c_int64 * 1)(o), (ctypes.c_float * 1)(5.0)
    p = _core.UpdateParams()
    p.objects, p.rotation_angle, p.n, p.flags = ctypes.addressof(objs), ctypes.addressof(angle), 1, 32
    frames, offsets = (ctypes.c_void_p * 1)(f), (c_int64 * 2)(0, 1)
    assert _core.get().c.obbmeta_nvds_update_objects(DS6_8, world.batch, frames, offsets, 1, None,
                                                     ctypes.addressof(p)) == ERR_LAYOUT
    assert world.lock_calls == 1  # the attach's only: refused before the lock


def test_the_real_table_is_back_after_a_fake_world(make_batch):
    """Runs after the tests above (file order): NVIDIA's real library is driven again, with the real type."""
    from obbmeta import nvds

    core = _core.get()
    assert core.c.obbmeta_nvds_obb_meta_type() == core.obb_meta_type != FAKE_OBB_TYPE
    batch = make_batch()
    frame = batch.frames[0]
    assert nvds.attach_obbs(batch, frame, xywhr=np.array([[100, 100, 10, 10, 0.2]], np.float32)).written == 1
    (obj,) = raw.objects_of(frame.address)
    (um,) = raw.user_metas_of(obj)
    assert raw.i32(um + raw.BASE_TYPE) == core.obb_meta_type
