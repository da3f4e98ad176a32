"""add_obb_overlay: oriented boxes as nvdsosd display metas in a real NvDsBatchMeta (NVIDIA's libnvds_meta).

Everything is read back with the tests' own byte offsets (tests/nvds/raw.py) by walking NVIDIA's lists, and the
expected lines are computed here, independently of obbmeta: the corner formula in float64 and shapely for clipping.
"""
from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest
from shapely.geometry import LineString
from shapely.geometry import box as shapely_box

from obbmeta import nvds
from obbmeta.palette import PALETTE_RGBA

if not nvds.available():
    pytest.skip(f"NVIDIA's libnvds_meta is not available:\n{nvds.describe()}", allow_module_level=True)

from nvds import raw  # noqa: E402  tests/nvds/raw.py: the tests' own offsets

from obbmeta.osd import OverlayResult, add_obb_overlay, remove_obb_overlay  # noqa: E402

W, H = 1920, 1080
MARK = int.from_bytes(b"OBBMOVL1", "big")


@pytest.fixture
def make_batch():
    made = []

    def make(width: int = W, height: int = H, frames: int = 1) -> nvds.BatchMeta:
        batch = nvds.BatchMeta.create(frames)
        for k in range(frames):
            batch.add_frame(source_id=k, width=width, height=height, frame_num=0)
        made.append(batch)
        return batch

    yield make
    for batch in made:
        batch.destroy()


@pytest.fixture(scope="module")
def lib():
    return raw.load_nvds_meta()


def corners(b) -> list[tuple[float, float]]:
    """c + R(a)(sx w/2, sy h/2), (sx, sy) = (-,-), (+,-), (+,+), (-,+): docs/nvds.md, in float64."""
    cx, cy, w, h, a = (float(v) for v in b)
    c, s = math.cos(a), math.sin(a)
    return [(cx + c * sx * w / 2 - s * sy * h / 2, cy + s * sx * w / 2 + c * sy * h / 2)
            for sx, sy in ((-1, -1), (1, -1), (1, 1), (-1, 1))]


def px(v: float, limit: int) -> int:
    return int(min(max(math.floor(v + 0.5), 0), limit - 1))


def expected_lines(xywhr, labels, width=3, palette=PALETTE_RGBA, frame=(W, H)) -> list[tuple]:
    """Each box's 4 edges, corner k -> k + 1, clipped to the frame by shapely, rounded, clamped."""
    fw, fh = frame
    area = shapely_box(0, 0, fw, fh)
    out = []
    for b, cls in zip(xywhr, labels):
        p = corners(b)
        for k in range(4):
            seg = LineString([p[k], p[(k + 1) % 4]])
            inside = seg.intersection(area)
            if inside.is_empty or inside.length == 0:
                continue
            (x1, y1), (x2, y2) = inside.coords[0], inside.coords[-1]
            out.append((px(x1, fw), px(y1, fh), px(x2, fw), px(y2, fh), width, palette[int(cls) % len(palette)]))
    return out


def inside_boxes(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Boxes well inside the frame whose corners are not near a rounding tie (x.5)."""
    rng = np.random.default_rng(seed)
    rows = []
    while len(rows) < n:
        w, h = rng.uniform(4, 120, 2)
        r = math.hypot(w, h) / 2 + 2
        b = (rng.uniform(r, W - r), rng.uniform(r, H - r), w, h, rng.uniform(-math.pi, math.pi))
        b = tuple(float(v) for v in np.float32(b))
        if all(abs((v % 1.0) - 0.5) > 1e-3 for p in corners(b) for v in p):
            rows.append(b)
    return np.array(rows, np.float32), (np.arange(n) * 7 % 23).astype(np.int64)


def overlay_displays(frame_address: int) -> list[int]:
    return [d for d in raw.display_metas_of(frame_address) if raw.u64(d + raw.DISPLAY["misc_osd_data"] + 24) == MARK]


def lines_of_frame(frame_address: int) -> list[tuple]:
    return [line for d in raw.display_metas_of(frame_address) for line in raw.lines_of(d)]


def key(line: tuple) -> tuple:
    """A line without its direction (clipping may give the endpoints either way round)."""
    a, b = (line[0], line[1]), (line[2], line[3])
    return (min(a, b), max(a, b), line[4], line[5])


def attach(batch, xywhr, labels, **kw):
    frame = batch.frames[0]
    res = nvds.attach_obbs(batch, frame, xywhr=xywhr, labels=labels, **kw)
    assert res.filtered == 0
    return frame


# ---------------------------------------------------------------- lines


@pytest.mark.parametrize("n", [1, 4, 5, 17, 100])
def test_every_box_becomes_its_four_edges_at_the_rounded_corners(make_batch, n):
    batch = make_batch()
    x, labels = inside_boxes(n, seed=n)
    frame = attach(batch, x, labels)
    result = add_obb_overlay(batch, frame)
    got = lines_of_frame(frame.address)
    assert len(got) == 4 * n
    assert sorted(got) == sorted(expected_lines(x, labels))
    assert (result.objects, result.drawn, result.lines) == (n, n, 4 * n)


@pytest.mark.parametrize("n", [1, 4, 5, 17, 100])
def test_no_display_meta_holds_more_than_16_lines(make_batch, n):
    batch = make_batch()
    x, labels = inside_boxes(n, seed=n)
    frame = attach(batch, x, labels)
    add_obb_overlay(batch, frame)
    displays = raw.display_metas_of(frame.address)
    counts = [raw.u32(d + raw.DISPLAY["num_lines"]) for d in displays]
    assert max(counts) <= 16 and sum(counts) == 4 * n
    assert len(displays) == math.ceil(4 * n / 16)


def test_only_appended_display_metas_are_taken_from_the_pool(make_batch):
    """nvdsosd draws every display meta in the pool's full_list, appended to a frame or not."""
    batch = make_batch()
    x, labels = inside_boxes(17, seed=3)
    frame = attach(batch, x, labels)
    add_obb_overlay(batch, frame)
    full, _ = raw.pool_counts(batch.address, "display_pool")
    assert full == len(raw.display_metas_of(frame.address)) == 5


def test_an_empty_frame_takes_no_display_meta(make_batch):
    batch = make_batch()
    result = add_obb_overlay(batch, batch.frames[0])
    assert raw.pool_counts(batch.address, "display_pool")[0] == 0
    assert result == OverlayResult(0, 0, 0, 0, 0, 0, 0, 0, 0, 0)


def test_one_colour_and_a_width_apply_to_every_line(make_batch):
    batch = make_batch()
    x, labels = inside_boxes(5, seed=1)
    frame = attach(batch, x, labels)
    add_obb_overlay(batch, frame, colors=(0.0, 1.0, 0.5, 0.75), width=5)
    got = lines_of_frame(frame.address)
    assert {(line[4], line[5]) for line in got} == {(5, (0.0, 1.0, 0.5, 0.75))}
    assert sorted(got) == sorted(expected_lines(x, labels, width=5, palette=[(0.0, 1.0, 0.5, 0.75)]))


def test_a_colour_sequence_is_a_palette_indexed_by_class_id(make_batch):
    batch = make_batch()
    x, _ = inside_boxes(6, seed=2)
    labels = np.array([0, 1, 2, 3, 4, 5])
    frame = attach(batch, x, labels)
    palette = [(1.0, 0.0, 0.0, 1.0), (0.0, 0.0, 1.0, 1.0)]
    add_obb_overlay(batch, frame, colors=np.array(palette))
    assert sorted(lines_of_frame(frame.address)) == sorted(expected_lines(x, labels, palette=palette))


def test_boxes_partly_outside_the_frame_are_clipped_to_it(make_batch):
    batch = make_batch(width=320, height=240)
    x = np.array([[0.0, 120.0, 80.0, 40.0, 0.6],      # across the left edge, rotated
                  [310.0, 235.0, 60.0, 30.0, -0.3],   # across the bottom-right corner
                  [160.0, -5.0, 50.0, 20.0, 0.0]],    # across the top edge, axis-aligned
                 np.float32)
    labels = np.array([0, 1, 2])
    frame = attach(batch, x, labels)
    result = add_obb_overlay(batch, frame)
    got = lines_of_frame(frame.address)
    want = expected_lines(x, labels, frame=(320, 240))
    assert sorted(map(key, got)) == sorted(map(key, want))
    assert all(0 <= line[0] < 320 and 0 <= line[2] < 320 and 0 <= line[1] < 240 and 0 <= line[3] < 240
               for line in got)
    assert result.lines == len(want) < 12 and result.drawn == 3


def test_the_visible_part_of_an_edge_keeps_its_slope(make_batch):
    """Clipping, not clamping each corner: an edge from (-100, 0) to (100, 100) enters the frame at (0, 50)."""
    batch = make_batch(width=200, height=200)
    frame = attach(batch, np.array([[0.0, 50.0, math.hypot(200, 100), 1.0, math.atan2(100, 200)]], np.float32),
                   np.array([0]))
    add_obb_overlay(batch, frame)
    starts = {(line[0], line[1]) for line in lines_of_frame(frame.address)}
    assert (0, 50) in starts or (0, 51) in starts or (0, 49) in starts


# ---------------------------------------------------------------- repeated calls, other display metas, copies


def test_repeated_calls_replace_the_overlay(make_batch):
    batch = make_batch()
    x, labels = inside_boxes(17, seed=4)
    frame = attach(batch, x, labels)
    first = add_obb_overlay(batch, frame)
    for _ in range(3):
        again = add_obb_overlay(batch, frame)
        assert again.removed == first.display_metas == 5
    assert sorted(lines_of_frame(frame.address)) == sorted(expected_lines(x, labels))
    assert raw.pool_counts(batch.address, "display_pool")[0] == 5


def test_a_new_call_draws_the_objects_added_since(make_batch):
    batch = make_batch()
    x, labels = inside_boxes(8, seed=5)
    frame = attach(batch, x[:3], labels[:3])
    add_obb_overlay(batch, frame)
    nvds.attach_obbs(batch, frame, xywhr=x[3:], labels=labels[3:])
    assert add_obb_overlay(batch, frame).lines == 32
    assert sorted(lines_of_frame(frame.address)) == sorted(expected_lines(x, labels))


def test_other_display_metas_are_left_alone(make_batch):
    batch = make_batch()
    x, labels = inside_boxes(4, seed=6)
    frame = attach(batch, x, labels)
    mine = [(1, 2, 3, 4)] * 20
    nvds.add_display_lines(batch, frame, np.array(mine, np.float32), colors=(1, 1, 1, 1), width=1)
    add_obb_overlay(batch, frame)
    add_obb_overlay(batch, frame)
    user_lines = [line for line in lines_of_frame(frame.address) if line[:5] == (1, 2, 3, 4, 1)]
    assert len(user_lines) == 20
    assert len(lines_of_frame(frame.address)) == 20 + 16


def test_overlay_display_metas_are_marked_in_misc_osd_data(make_batch):
    batch = make_batch()
    x, labels = inside_boxes(5, seed=7)
    frame = attach(batch, x, labels)
    add_obb_overlay(batch, frame)
    displays = raw.display_metas_of(frame.address)
    assert len(displays) == 2 and overlay_displays(frame.address) == displays


def test_remove_obb_overlay_returns_its_display_metas_to_the_pool(make_batch):
    batch = make_batch()
    x, labels = inside_boxes(5, seed=8)
    frame = attach(batch, x, labels)
    add_obb_overlay(batch, frame)
    assert remove_obb_overlay(batch, frame) == 2
    assert raw.display_metas_of(frame.address) == []
    assert raw.pool_counts(batch.address, "display_pool")[0] == 0


def test_nvidias_batch_copy_carries_the_overlay_and_a_new_call_replaces_it(lib, make_batch):
    batch = make_batch()
    x, labels = inside_boxes(17, seed=9)
    frame = attach(batch, x, labels)
    add_obb_overlay(batch, frame, hide_aabb=True)
    live = nvds.live_payloads()
    copy = lib.nvds_batch_meta_copy_func(batch.address, None)
    try:
        (copied_frame,) = raw.frames_of(copy)
        assert sorted(lines_of_frame(copied_frame)) == sorted(expected_lines(x, labels))
        assert len(overlay_displays(copied_frame)) == 5
        again = add_obb_overlay(nvds.BatchMeta.from_address(copy), copied_frame)
        assert again.removed == 5 and len(lines_of_frame(copied_frame)) == 68
    finally:
        lib.nvds_batch_meta_release_func(copy, None)
    assert nvds.live_payloads() == live
    assert sorted(lines_of_frame(frame.address)) == sorted(expected_lines(x, labels))


# ---------------------------------------------------------------- which objects


def add_plain_object(lib, batch, frame, rect, rotation=0.0, border=3, class_id=0) -> int:
    """An object as another element would write it: rect_params only (and maybe a DS 9 rotation_angle)."""
    obj = lib.nvds_acquire_obj_meta_from_pool(batch.address)
    raw.ctypes.c_int32.from_address(obj + raw.OBJ["class_id"]).value = class_id
    for name, v in zip(("rect_left", "rect_top", "rect_width", "rect_height"), rect):
        raw.ctypes.c_float.from_address(obj + raw.OBJ[name]).value = v
    raw.ctypes.c_float.from_address(obj + raw.OBJ["rotation_angle"]).value = rotation
    raw.ctypes.c_uint32.from_address(obj + raw.OBJ["border_width"]).value = border
    lib.nvds_add_obj_meta_to_frame(frame.address, obj, None)
    return obj


def test_objects_without_an_obb_are_skipped_and_counted(lib, make_batch):
    batch = make_batch()
    x, labels = inside_boxes(3, seed=10)
    frame = attach(batch, x, labels)
    plain = [add_plain_object(lib, batch, frame, (10, 10, 50, 30)), add_plain_object(lib, batch, frame, (90, 90, 5, 5))]
    result = add_obb_overlay(batch, frame, hide_aabb=True)
    assert (result.objects, result.drawn, result.skipped, result.lines) == (5, 3, 2, 12)
    assert sorted(lines_of_frame(frame.address)) == sorted(expected_lines(x, labels))
    assert [raw.u32(o + raw.OBJ["border_width"]) for o in plain] == [3, 3]


def test_a_ds9_rotation_angle_object_is_drawn_from_its_rotated_rect(lib, make_batch):
    batch = make_batch()
    add_plain_object(lib, batch, batch.frames[0], (100.0, 200.0, 80.0, 40.0), rotation=30.0)
    result = add_obb_overlay(batch, batch.frames[0])
    b = (140.0, 220.0, 80.0, 40.0, math.radians(30.0))
    assert result.drawn == 1 and result.skipped == 0
    assert sorted(lines_of_frame(batch.frames[0].address)) == sorted(expected_lines([b], [0]))


def test_a_negative_class_id_still_gets_a_palette_colour(lib, make_batch):
    batch = make_batch()
    add_plain_object(lib, batch, batch.frames[0], (100.0, 200.0, 80.0, 40.0), rotation=30.0, class_id=-1)
    add_obb_overlay(batch, batch.frames[0])
    assert {line[5] for line in lines_of_frame(batch.frames[0].address)} == {PALETTE_RGBA[19]}


def test_every_object_is_counted_once(lib, make_batch):
    batch = make_batch(width=400, height=300)
    x, labels = np.array([[100.0, 100.0, 30.0, 20.0, 0.4], [395.0, 150.0, 40.0, 20.0, 1.0]], np.float32), [0, 1]
    frame = attach(batch, x, labels)
    add_plain_object(lib, batch, frame, (10.0, 10.0, 20.0, 20.0))                   # no OBB
    add_plain_object(lib, batch, frame, (900.0, 900.0, 20.0, 20.0), rotation=5.0)   # OBB outside the frame
    r = add_obb_overlay(batch, frame)
    assert (r.objects, r.drawn, r.skipped, r.outside) == (4, 2, 1, 1)
    assert r.objects == r.drawn + r.skipped + r.outside


def test_raw_pointers_work_as_batch_and_frame(make_batch):
    """pyds / C callers hold addresses, not obbmeta wrappers."""
    batch = make_batch()
    x, labels = inside_boxes(3, seed=17)
    frame = attach(batch, x, labels)
    assert add_obb_overlay(batch.address, frame.address).lines == 12
    assert sorted(lines_of_frame(frame.address)) == sorted(expected_lines(x, labels))


def test_a_box_fully_outside_the_frame_is_counted_as_outside(lib, make_batch):
    batch = make_batch(width=100, height=100)
    add_plain_object(lib, batch, batch.frames[0], (300.0, 300.0, 20.0, 20.0), rotation=10.0)
    result = add_obb_overlay(batch, batch.frames[0])
    assert (result.drawn, result.outside, result.lines, result.display_metas) == (0, 1, 0, 0)


# ---------------------------------------------------------------- object fields: hide_aabb, label


def rect_of(obj: int) -> tuple:
    return tuple(raw.f32(obj + raw.OBJ[k]) for k in ("rect_left", "rect_top", "rect_width", "rect_height"))


def test_hide_aabb_sets_the_border_width_to_0_and_keeps_the_box(make_batch):
    batch = make_batch()
    x, labels = inside_boxes(4, seed=11)
    frame = attach(batch, x, labels)
    objects = raw.objects_of(frame.address)
    before = [rect_of(o) for o in objects]
    assert add_obb_overlay(batch, frame, hide_aabb=True).hidden == 4
    assert [raw.u32(o + raw.OBJ["border_width"]) for o in objects] == [0] * 4
    assert [rect_of(o) for o in objects] == before


def test_without_hide_aabb_the_border_stays(make_batch):
    batch = make_batch()
    x, labels = inside_boxes(4, seed=11)
    frame = attach(batch, x, labels)
    add_obb_overlay(batch, frame)
    assert [raw.u32(o + raw.OBJ["border_width"]) for o in raw.objects_of(frame.address)] == [3] * 4


def text_offsets(obj: int) -> tuple[int, int]:
    return raw.u32(obj + raw.OBJ["text_x"]), raw.u32(obj + raw.OBJ["text_y"])


def test_the_label_moves_to_the_top_most_corner(make_batch):
    batch = make_batch()
    b = (400.0, 300.0, 120.0, 40.0, 0.5)
    frame = attach(batch, np.array([b], np.float32), np.array([0]))
    assert add_obb_overlay(batch, frame).labels == 1
    top = min(corners(b), key=lambda p: (p[1], p[0]))
    (obj,) = raw.objects_of(frame.address)
    assert text_offsets(obj) == (px(top[0], W), px(top[1] - 10, H))
    assert raw.cstr(raw.ptr(obj + raw.OBJ["display_text"])) == b"0"


def test_an_unrotated_box_keeps_its_label_at_the_top_left_corner(make_batch):
    batch = make_batch()
    frame = attach(batch, np.array([[400.0, 300.0, 120.0, 40.0, 0.0]], np.float32), np.array([0]))
    add_obb_overlay(batch, frame)
    (obj,) = raw.objects_of(frame.address)
    assert text_offsets(obj) == (340, 270)


def test_a_label_near_the_top_edge_is_clamped_to_the_frame(make_batch):
    batch = make_batch()
    frame = attach(batch, np.array([[400.0, 8.0, 40.0, 10.0, 0.2]], np.float32), np.array([0]))
    add_obb_overlay(batch, frame)
    (obj,) = raw.objects_of(frame.address)
    assert text_offsets(obj)[1] == 0


def test_label_false_leaves_the_text_where_it_was(make_batch):
    batch = make_batch()
    frame = attach(batch, np.array([[400.0, 300.0, 120.0, 40.0, 0.5]], np.float32), np.array([0]))
    (obj,) = raw.objects_of(frame.address)
    before = text_offsets(obj)
    assert add_obb_overlay(batch, frame, label=False).labels == 0
    assert text_offsets(obj) == before


def test_objects_without_display_text_get_no_label(make_batch):
    batch = make_batch()
    frame = attach(batch, np.array([[400.0, 300.0, 120.0, 40.0, 0.5]], np.float32), np.array([0]),
                   display_text=False)
    (obj,) = raw.objects_of(frame.address)
    assert add_obb_overlay(batch, frame).labels == 0
    assert text_offsets(obj) == (0, 0) and raw.ptr(obj + raw.OBJ["display_text"]) == 0


# ---------------------------------------------------------------- native (DS 9)


def test_native_mode_writes_rotated_display_rects_and_no_lines(make_batch):
    batch = make_batch()
    x, labels = inside_boxes(17, seed=12)
    frame = attach(batch, x, labels)
    result = add_obb_overlay(batch, frame, native=True, width=4)
    displays = raw.display_metas_of(frame.address)
    assert sorted(raw.u32(d + raw.DISPLAY["num_rects"]) for d in displays) == [1, 16]
    assert lines_of_frame(frame.address) == []
    got = sorted(r for d in displays for r in raw.rects_of(d))
    want = sorted((float(np.float32(cx - w / 2)), float(np.float32(cy - h / 2)), float(w), float(h), 4,
                   PALETTE_RGBA[int(cls) % 20], float(np.float32(math.degrees(a))))
                  for (cx, cy, w, h, a), cls in zip(x.tolist(), labels))
    assert len(got) == 17
    for g, e in zip(got, want):
        assert g[4:6] == e[4:6]
        assert g[:4] + (g[6],) == pytest.approx(e[:4] + (e[6],), abs=1e-3)
    assert (result.rects, result.lines, result.drawn) == (17, 0, 17)


def test_native_mode_leaves_the_objects_rect_params_the_aabb(make_batch):
    batch = make_batch()
    x, labels = inside_boxes(5, seed=13)
    frame = attach(batch, x, labels)
    objects = raw.objects_of(frame.address)
    before = [rect_of(o) for o in objects]
    add_obb_overlay(batch, frame, native=True)
    assert [rect_of(o) for o in objects] == before
    assert [raw.f32(o + raw.OBJ["rotation_angle"]) for o in objects] == [0.0] * 5


def test_switching_from_lines_to_native_replaces_the_lines(make_batch):
    batch = make_batch()
    x, labels = inside_boxes(5, seed=14)
    frame = attach(batch, x, labels)
    add_obb_overlay(batch, frame)
    assert add_obb_overlay(batch, frame, native=True).removed == 2
    assert lines_of_frame(frame.address) == []


def test_the_ds6_8_layout_refuses_native_mode(make_batch):
    import dataclasses

    from obbmeta.nvds import _core, layouts

    batch = make_batch()
    x, labels = inside_boxes(2, seed=15)
    frame = attach(batch, x, labels)
    batch._core = dataclasses.replace(_core.get(), layout=layouts.DS6_8)
    with pytest.raises(ValueError, match=r"native=True needs the DeepStream 9 layout"):
        add_obb_overlay(batch, frame, native=True)
    assert raw.display_metas_of(frame.address) == []


# ---------------------------------------------------------------- arguments


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(width=0), ValueError, r"width must be an int in 1\.\.32"),
    (dict(width=33), ValueError, r"width must be an int in 1\.\.32 \(pixels; nvdsosd refuses wider lines"),
    (dict(width=2.5), ValueError, r"width must be an int in 1\.\.32"),
    (dict(width=True), ValueError, r"width must be an int in 1\.\.32"),
    (dict(label="yes"), TypeError, r"label must be True or False"),
    (dict(hide_aabb=1), TypeError, r"hide_aabb must be True or False"),
    (dict(native=None), TypeError, r"native must be True or False"),
    (dict(colors=(2, 0, 0, 1)), ValueError, r"colors\[0\] must be \(r, g, b, a\) with values in 0..1"),
    (dict(colors=[(1, 0, 0, 1), (0, 0, 1)]), ValueError, r"colors\[1\] must be \(r, g, b, a\)"),
    (dict(colors="red"), TypeError, r"colors must be None, \(r, g, b, a\)"),
    (dict(colors=[]), ValueError, r"colors must hold at least one"),
    (dict(frame_size=(0, 10)), ValueError, r"frame_size must be two positive finite numbers"),
])
def test_bad_arguments_are_named_and_nothing_is_written(make_batch, kwargs, error, message):
    batch = make_batch()
    x, labels = inside_boxes(2, seed=16)
    frame = attach(batch, x, labels)
    with pytest.raises(error, match=message):
        add_obb_overlay(batch, frame, **kwargs)
    assert raw.display_metas_of(frame.address) == []


def test_bad_batch_and_frame_are_named(make_batch):
    a, b = make_batch(), make_batch()
    with pytest.raises(TypeError, match="batch must be an obbmeta.nvds.BatchMeta"):
        add_obb_overlay("batch", a.frames[0])
    with pytest.raises(TypeError, match="frame must be an obbmeta.nvds.FrameMeta"):
        add_obb_overlay(a, None)
    with pytest.raises(RuntimeError, match="belongs to another batch meta"):
        add_obb_overlay(a, b.frames[0])


def test_the_frame_size_argument_overrides_the_frame_meta(make_batch):
    batch = make_batch(width=1920, height=1080)
    frame = attach(batch, np.array([[100.0, 100.0, 300.0, 20.0, 0.0]], np.float32), np.array([0]))
    add_obb_overlay(batch, frame, frame_size=(200, 200))
    assert max(max(line[0], line[2]) for line in lines_of_frame(frame.address)) == 199


def test_obbmeta_osd_imports_without_nvidias_library(tmp_path):
    code = ("import sys; from obbmeta.osd import draw_obbs, add_obb_overlay; "
            "assert 'obbmeta.nvds' not in sys.modules; print('ok')")
    env = dict(os.environ, OBBMETA_NVDS_LIB_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr
