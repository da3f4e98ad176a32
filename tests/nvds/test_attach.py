"""attach_obbs, checked by walking NVIDIA's own lists with the tests' own offsets (tests/nvds/raw.py)."""
from __future__ import annotations

import ctypes
import math
import threading

import numpy as np
import pytest
import readback
import reference
import torch

from obbmeta import OrientedBoxes, nvds
from obbmeta.nvds import _core
from obbmeta.palette import PALETTE_RGBA

from . import raw

W, H = 1920, 1080


corners_ref, aabb_ref = reference.corners, reference.aabb


def rect(obj, prefix="rect"):
    keys = ("left", "top", "width", "height")
    return tuple(raw.f32(obj + raw.OBJ[f"{prefix}_{k}"]) for k in keys)


def payload(obj):
    (um,) = [u for u in raw.user_metas_of(obj) if raw.i32(u + raw.BASE_TYPE) == nvds.obb_meta_type()]
    return um, raw.ptr(um + raw.USER["user_meta_data"])


def boxes(rows, scores=None, labels=None):
    x = np.asarray(rows, np.float32).reshape(-1, 5)
    n = len(x)
    return dict(xywhr=x, scores=np.asarray(scores if scores is not None else [0.5] * n, np.float32),
                labels=np.asarray(labels if labels is not None else [0] * n, np.int64))


def test_every_field_of_every_object_is_what_was_asked(make_batch):
    batch = make_batch()
    frame = batch.frames[0]
    rows = [[400, 300, 120, 40, 0.3], [1000, 600, 50, 200, -1.2], [1500, 100, 30, 30, 0.0]]
    names = ["plane", "ship", "vehicle"]
    res = nvds.attach_obbs(batch, frame, **boxes(rows, [0.9, 0.6, 0.3], [0, 1, 2]), class_names=names,
                           component_id=5, border_width=4)
    assert (res.written, res.filtered) == (3, 0)
    f = frame.address
    assert raw.u32(f + raw.FRAME["num_obj_meta"]) == 3
    assert raw.i32(f + raw.FRAME["bInferDone"]) == 1
    objs = raw.objects_of(f)[::-1]  # NVIDIA prepends: reverse to get insertion order
    assert len(objs) == 3
    for k, (obj, b) in enumerate(zip(objs, rows)):
        x1, y1, x2, y2 = aabb_ref(b)
        assert rect(obj) == pytest.approx((x1, y1, x2 - x1, y2 - y1), abs=1e-3)
        assert rect(obj, "det") == pytest.approx((x1, y1, x2 - x1, y2 - y1), abs=1e-3)
        assert raw.u64(obj + raw.OBJ["object_id"]) == raw.UNTRACKED
        assert raw.i32(obj + raw.OBJ["class_id"]) == k
        assert raw.i32(obj + raw.OBJ["unique_component_id"]) == 5
        assert raw.f32(obj + raw.OBJ["confidence"]) == pytest.approx([0.9, 0.6, 0.3][k])
        assert raw.cstr(obj + raw.OBJ["obj_label"]) == names[k].encode()
        assert raw.cstr(raw.ptr(obj + raw.OBJ["display_text"])) == names[k].encode()
        assert raw.u32(obj + raw.OBJ["border_width"]) == 4
        colour = [raw.f64(obj + raw.OBJ["border_color"] + 8 * i) for i in range(4)]
        assert colour == pytest.approx(PALETTE_RGBA[k])
        assert raw.f32(obj + raw.OBJ["rotation_angle"]) == 0.0
        assert raw.ptr(obj + raw.OBJ["parent"]) == 0
        um, p = payload(obj)
        assert raw.ptr(um + raw.BASE_COPY) == ctypes.cast(_core.get().c.obbmeta_obb_meta_copy, ctypes.c_void_p).value
        assert raw.ptr(um + raw.BASE_RELEASE) == ctypes.cast(_core.get().c.obbmeta_obb_meta_release,
                                                             ctypes.c_void_p).value
        assert raw.u32(p + raw.PAYLOAD["version"]) == 1 and raw.u32(p + raw.PAYLOAD["struct_size"]) == 64
        got = [raw.f32(p + raw.PAYLOAD[n]) for n in ("cx", "cy", "w", "h", "angle")]
        assert got == pytest.approx(b, abs=1e-6)
        corners = [raw.f32(p + raw.PAYLOAD["corners"] + 4 * i) for i in range(8)]
        assert corners == pytest.approx([c for pt in corners_ref(b) for c in pt], abs=1e-3)
        assert raw.u32(p + raw.PAYLOAD["flags"]) == 0


def test_a_box_partly_outside_is_clipped_and_flagged(make_batch):
    batch = make_batch()
    frame = batch.frames[0]
    b = [10, 1075, 60, 30, 0.5]
    nvds.attach_obbs(batch, frame, **boxes([b]))
    (obj,) = raw.objects_of(frame.address)
    x1, y1, x2, y2 = aabb_ref(b)
    assert rect(obj) == pytest.approx((0, y1, x2, H - y1), abs=1e-3)
    assert rect(obj, "det") == pytest.approx((x1, y1, x2 - x1, y2 - y1), abs=1e-3)
    _, p = payload(obj)
    assert raw.u32(p + raw.PAYLOAD["flags"]) == 1  # OBBMETA_OBB_RECT_CLIPPED


def test_boxes_fully_outside_the_frame_are_counted_not_written(make_batch):
    batch = make_batch()
    frame = batch.frames[0]
    rows = [[-100, 500, 50, 50, 0.0],         # left of the frame
            [960, 540, 100, 100, 0.2],        # inside
            [2000, 1200, 30, 30, 1.0],        # beyond the bottom-right corner
            [-25, -25, 60, 20, math.pi / 4],  # its AABB overlaps the corner, the rotated box does not
            [W + 10, 540, 20, 20, 0.0]]       # touching nothing
    res = nvds.attach_obbs(batch, frame, **boxes(rows))
    assert (res.written, res.filtered) == (1, 4)
    assert res.filtered_indices.tolist() == [0, 2, 3, 4]
    assert res.written_mask.tolist() == [False, True, False, False, False]
    assert raw.u32(frame.address + raw.FRAME["num_obj_meta"]) == 1
    (obj,) = raw.objects_of(frame.address)
    assert raw.f32(obj + raw.OBJ["rect_left"]) == pytest.approx(aabb_ref(rows[1])[0], abs=1e-3)


def test_an_empty_frame_is_marked_as_inferred_with_no_objects(make_batch):
    batch = make_batch()
    frame = batch.frames[0]
    res = nvds.attach_obbs(batch, frame, xywhr=np.zeros((0, 5), np.float32))
    assert (res.written, res.filtered) == (0, 0)
    assert raw.i32(frame.address + raw.FRAME["bInferDone"]) == 1
    assert raw.objects_of(frame.address) == []
    assert readback.pairs(frame) == []


@pytest.mark.parametrize("nbytes", [0, 1, 127, 128, 500])
def test_labels_are_cut_to_127_bytes(make_batch, nbytes):
    batch = make_batch()
    frame = batch.frames[0]
    name = "x" * nbytes
    nvds.attach_obbs(batch, frame, **boxes([[100, 100, 10, 10, 0]]), class_names=[name])
    (obj,) = raw.objects_of(frame.address)
    want = name.encode()[:127]
    assert raw.cstr(obj + raw.OBJ["obj_label"]) == want
    assert ctypes.string_at(obj + raw.OBJ["obj_label"] + len(want), 1) == b"\0"
    assert raw.cstr(raw.ptr(obj + raw.OBJ["display_text"])) == want


def test_non_ascii_labels_are_cut_on_a_utf8_boundary(make_batch):
    batch = make_batch()
    frame = batch.frames[0]
    names = ["船舶", "é" * 100, "a" + "€" * 60]  # 6 bytes; 200 bytes; 181 bytes
    nvds.attach_obbs(batch, frame, **boxes([[100, 100, 10, 10, 0]] * 3, labels=[0, 1, 2]), class_names=names)
    labels = [raw.cstr(o + raw.OBJ["obj_label"]) for o in raw.objects_of(frame.address)[::-1]]
    assert labels[0].decode() == "船舶"
    assert labels[1].decode() == "é" * 63 and len(labels[1]) == 126
    assert labels[2].decode() == "a" + "€" * 42 and len(labels[2]) == 127


def test_without_class_names_the_label_is_the_class_id(make_batch):
    batch = make_batch()
    frame = batch.frames[0]
    nvds.attach_obbs(batch, frame, **boxes([[100, 100, 10, 10, 0]] * 2, labels=[0, 1234567]))
    labels = [raw.cstr(o + raw.OBJ["obj_label"]) for o in raw.objects_of(frame.address)[::-1]]
    assert labels == [b"0", b"1234567"]


@pytest.mark.parametrize("bad, message", [
    ([100, 100, float("nan"), 10, 0], r"xywhr\[1\] .* not finite"),
    ([100, float("inf"), 10, 10, 0], r"xywhr\[1\] .* not finite"),
    ([100, 100, 10, 10, float("-inf")], r"xywhr\[1\] .* not finite"),
    ([100, 100, -5, 10, 0], r"xywhr\[1\] .* w <= 0 or h <= 0"),
    ([100, 100, 10, 0, 0], r"xywhr\[1\] .* w <= 0 or h <= 0"),
])
def test_invalid_boxes_raise_and_write_nothing(make_batch, bad, message):
    batch = make_batch()
    frame = batch.frames[0]
    with pytest.raises(ValueError, match=message):
        nvds.attach_obbs(batch, frame, **boxes([[50, 50, 10, 10, 0], bad]))
    assert raw.objects_of(frame.address) == []
    assert raw.u32(frame.address + raw.FRAME["num_obj_meta"]) == 0


def test_a_nan_score_raises(make_batch):
    batch = make_batch()
    with pytest.raises(ValueError, match=r"scores\[0\] = nan is not finite"):
        nvds.attach_obbs(batch, batch.frames[0], **boxes([[50, 50, 10, 10, 0]], scores=[float("nan")]))


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(xywhr=np.zeros((3, 4), np.float32)), ValueError, r"xywhr must have shape \(N, 5\)"),
    (dict(xywhr=np.zeros(5, np.float32)), ValueError, r"xywhr must have shape \(N, 5\)"),
    (dict(xywhr=np.ones((2, 5), np.int32)), TypeError, "xywhr must be a floating-point array"),
    (dict(xywhr=np.ones((2, 5), np.float32), scores=np.ones(3, np.float32)), ValueError,
     r"scores must have shape \(N,\) = \(2,\)"),
    (dict(xywhr=np.ones((2, 5), np.float32), labels=np.ones(2, np.float32)), TypeError,
     "labels must be an integer array"),
    (dict(xywhr=np.ones((2, 5), np.float32), labels=np.array([0, -1])), ValueError,
     r"labels\[1\] = -1: class ids must be"),
    (dict(xywhr=np.ones((1, 5), np.float32), labels=np.array([3]), class_names=["a", "b"]), ValueError,
     r"labels\[0\] = 3 has no entry in class_names \(len 2\)"),
    (dict(xywhr=np.ones((1, 5), np.float32), frame_size=(0, 10)), ValueError, "frame_size must be two positive"),
    (dict(xywhr=np.ones((1, 5), np.float32), component_id=-1), ValueError, "component_id must be an int"),
    (dict(xywhr=np.ones((1, 5), np.float32), border_width=33), ValueError,
     r"border_width must be an int in 0\.\.32 \(pixels; nvdsosd refuses wider borders"),
    (dict(xywhr=np.ones((1, 5), np.float32), osd_limit=-1), ValueError,
     r"osd_limit must be None or an int in 0\.\.2\*\*63-1"),
    (dict(xywhr=np.ones((1, 5), np.float32), osd_limit=2.0), ValueError,
     r"osd_limit must be None or an int in 0\.\.2\*\*63-1"),
    (dict(), TypeError, "no boxes given"),
])
def test_bad_arguments_name_the_argument_and_the_expected_form(make_batch, kwargs, error, message):
    batch = make_batch()
    with pytest.raises(error, match=message):
        nvds.attach_obbs(batch, batch.frames[0], **kwargs)


def test_oriented_boxes_and_torch_tensors_are_accepted(make_batch):
    batch = make_batch()
    frame = batch.frames[0]
    dets = OrientedBoxes(torch.tensor([[100.0, 120.0, 40.0, 10.0, 0.7]]), torch.tensor([0.8]), torch.tensor([3]))
    nvds.attach_obbs(batch, frame, dets, class_names=["a", "b", "c", "d"])
    nvds.attach_obbs(batch, frame, xywhr=torch.tensor([[50.0, 60.0, 4.0, 8.0, 0.0]], dtype=torch.float64),
                     scores=torch.tensor([0.5]), labels=torch.tensor([1]), class_names=["a", "b", "c", "d"])
    objs = raw.objects_of(frame.address)[::-1]
    assert [raw.cstr(o + raw.OBJ["obj_label"]) for o in objs] == [b"d", b"b"]
    _, p = payload(objs[0])
    assert raw.f32(p + raw.PAYLOAD["angle"]) == pytest.approx(0.7)


def test_rotation_angle_mode_writes_the_unrotated_box_and_degrees(make_batch):
    batch = make_batch()
    frame = batch.frames[0]
    b = [500, 400, 100, 30, 0.5]
    nvds.attach_obbs(batch, frame, **boxes([b]), rotation_angle=True)
    (obj,) = raw.objects_of(frame.address)
    assert rect(obj) == pytest.approx((450, 385, 100, 30))
    assert raw.f32(obj + raw.OBJ["rotation_angle"]) == pytest.approx(math.degrees(0.5), rel=1e-6)
    x1, y1, x2, y2 = aabb_ref(b)
    assert rect(obj, "det") == pytest.approx((x1, y1, x2 - x1, y2 - y1), abs=1e-3)
    _, p = payload(obj)
    assert raw.u32(p + raw.PAYLOAD["flags"]) == 2  # OBBMETA_OBB_RECT_ROTATED


def test_the_batch_form_writes_every_frame_in_one_call(make_batch):
    batch = make_batch(max_frames=3, frames=3, width=640, height=480)
    dets = [boxes([[10, 10, 5, 5, 0]] * 2), boxes([]), boxes([[100, 100, 5, 5, 0], [900, 10, 5, 5, 0]])]
    res = nvds.attach_obbs_batch(batch, [(d["xywhr"], d["scores"], d["labels"]) for d in dets])
    assert (res.written, res.filtered, res.per_frame) == (3, 1, (2, 0, 1))
    counts = [raw.u32(f + raw.FRAME["num_obj_meta"]) for f in raw.frames_of(batch.address)]
    assert counts == [2, 0, 1]
    assert all(raw.i32(f + raw.FRAME["bInferDone"]) == 1 for f in raw.frames_of(batch.address))


def test_the_pool_grows_past_ten_thousand_objects_in_one_frame(make_batch):
    batch = make_batch()
    frame = batch.frames[0]
    n = 10_050
    rng = np.random.default_rng(0)
    x = np.column_stack([rng.uniform(10, W - 10, n), rng.uniform(10, H - 10, n), rng.uniform(2, 20, n),
                         rng.uniform(2, 20, n), rng.uniform(-3, 3, n)]).astype(np.float32)
    res = nvds.attach_obbs(batch, frame, xywhr=x, labels=np.arange(n) % 7)
    assert res.written == n
    objs = raw.objects_of(frame.address)
    assert len(objs) == n == raw.u32(frame.address + raw.FRAME["num_obj_meta"])
    assert len(set(objs)) == n
    assert raw.u32(raw.ptr(batch.address + raw.BATCH["obj_pool"]) + raw.POOL["max_elements"]) >= n
    got = nvds.read_boxes(frame)
    np.testing.assert_array_equal(got.xywhr[::-1], x)
    np.testing.assert_array_equal(got.labels[::-1], np.arange(n) % 7)


def test_two_threads_write_different_frames_of_one_batch(make_batch):
    batch = make_batch(max_frames=2, frames=2)
    frames = batch.frames
    errors = []

    def work(k):
        try:
            for i in range(200):
                nvds.attach_obbs(batch, frames[k], **boxes([[100 + k, 100 + i, 10, 10, 0.1 * k]] * 5,
                                                          labels=[k] * 5))
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for k, f in enumerate(frames):
        objs = raw.objects_of(f.address)
        assert len(objs) == 1000 == raw.u32(f.address + raw.FRAME["num_obj_meta"])
        assert {raw.i32(o + raw.OBJ["class_id"]) for o in objs} == {k}
        _, p = payload(objs[0])
        assert raw.f32(p + raw.PAYLOAD["cx"]) == 100 + k
    assert len(set(raw.objects_of(frames[0].address)) & set(raw.objects_of(frames[1].address))) == 0


def test_addresses_work_in_place_of_wrappers(make_batch):
    """What a pyds probe has: integer addresses (hash(gst_buffer) -> batch, frame pointers)."""
    batch = make_batch()
    frame_address = raw.frames_of(batch.address)[0]
    res = nvds.attach_obbs(batch.address, frame_address, **boxes([[100, 100, 10, 10, 0]]), frame_size=(W, H))
    assert res.written == 1
    ((info, obb),) = readback.pairs(frame_address)
    assert obb.source == "user_meta" and info.address == raw.objects_of(frame_address)[0]


def test_a_frame_without_a_size_needs_frame_size(make_batch):
    batch = make_batch(frames=0)
    frame = batch.add_frame(source_id=0)
    with pytest.raises(ValueError, match=r"pass frame_size=\(width, height\)"):
        nvds.attach_obbs(batch, frame, **boxes([[10, 10, 5, 5, 0]]))
    assert nvds.attach_obbs(batch, frame, **boxes([[10, 10, 5, 5, 0]]), frame_size=(20, 20)).written == 1


def test_a_batch_whose_pools_do_not_match_the_layout_is_refused(make_batch):
    """As if the batch came from a DeepStream 8 library while obbmeta detected 9 (or the reverse)."""
    import dataclasses

    from obbmeta.nvds import layouts

    batch = make_batch()
    frame = batch.frames[0]
    batch._core = dataclasses.replace(_core.get(), layout=layouts.DS6_8)
    with pytest.raises(RuntimeError, match="pools do not hold elements of the detected layout"):
        nvds.attach_obbs(batch, frame, **boxes([[10, 10, 5, 5, 0]]))
    assert raw.objects_of(frame.address) == []


def test_the_batch_form_checks_its_arguments(make_batch):
    batch = make_batch(max_frames=2, frames=2)
    with pytest.raises(ValueError, match="detections has 1 entries but there are 2 frames"):
        nvds.attach_obbs_batch(batch, [boxes([])["xywhr"]])
    with pytest.raises(ValueError, match=r"detections\[1\]: xywhr must have shape \(N, 5\)"):
        nvds.attach_obbs_batch(batch, [(np.zeros((1, 5), np.float32),), (np.zeros((1, 4), np.float32),)])
    dets = OrientedBoxes(torch.tensor([[10.0, 10.0, 4.0, 4.0, 0.0]]), torch.tensor([0.5]), torch.tensor([1]))
    res = nvds.attach_obbs_batch(batch, [dets], frames=[batch.frames[1]])
    assert res.per_frame == (1,) and raw.u32(batch.frames[1].address + raw.FRAME["num_obj_meta"]) == 1
    assert raw.u32(batch.frames[0].address + raw.FRAME["num_obj_meta"]) == 0


def test_a_frame_of_another_batch_is_refused(make_batch):
    a, b = make_batch(), make_batch()
    with pytest.raises(RuntimeError, match="belongs to another batch meta"):
        nvds.attach_obbs(a, b.frames[0], **boxes([[10, 10, 5, 5, 0]]))
    assert raw.objects_of(b.frames[0].address) == []


def test_label_text_sits_above_the_rect_and_inside_the_frame(make_batch):
    batch = make_batch()
    frame = batch.frames[0]
    rows = [[400.3, 300.6, 120, 40, 0.3], [20, 4, 30, 6, 0.0], [1915, 1075, 40, 40, 0.0]]
    nvds.attach_obbs(batch, frame, **boxes(rows, labels=[0, 1, 2]), class_names=["a", "b", "c"])
    for obj in raw.objects_of(frame.address):
        left, top = rect(obj)[:2]
        assert raw.u32(obj + raw.OBJ["text_x"]) == min(max(round(left), 0), W - 1)
        assert raw.u32(obj + raw.OBJ["text_y"]) == min(max(round(top - 10), 0), H - 1)


def test_rotation_mode_keeps_label_offsets_inside_the_frame_for_huge_boxes(make_batch):
    # The un-rotated rect of a huge rotated box lies far outside the frame (left ~ 1e10): the unsigned text
    # offsets must still be clamped pixels, not a cast of an out-of-range float.
    batch = make_batch()
    frame = batch.frames[0]
    res = nvds.attach_obbs(batch, frame, **boxes([[1e10, 1e10, 10, 4e10, -math.pi / 4]]), rotation_angle=True)
    assert res.written == 1
    (obj,) = raw.objects_of(frame.address)
    assert 0 <= raw.u32(obj + raw.OBJ["text_x"]) <= W - 1
    assert 0 <= raw.u32(obj + raw.OBJ["text_y"]) <= H - 1


def test_read_obbs_from_a_bare_frame_address_reads_every_object(make_batch):
    # No BatchMeta passed (the pyds pattern): the reader locks the frame's own batch and sizes itself.
    batch = make_batch()
    frame = batch.frames[0]
    rows = [[10 + 15 * k, 500, 12, 6, 0.01 * k] for k in range(100)]
    nvds.attach_obbs(batch, frame, **boxes(rows))
    got = readback.pairs(frame.address)
    assert len(got) == 100 == raw.u32(frame.address + raw.FRAME["num_obj_meta"])
    assert sorted(round(o.xywhr[0]) for _, o in got) == [10 + 15 * k for k in range(100)]


# ---------------------------------------------------------------- what nvdsosd reads (docs/osd.md)
# gst-nvdsosd walks batch_meta->obj_meta_pool->full_list (not the frames' lists), copies every object's rect_params
# into its rect list and, when display_text is set, its text_params into its text list, 1024 at a time; nvll_osd
# then refuses border widths above 32, reads display_text as a NUL-terminated UTF-8 string and, in GPU mode, builds
# a C++ std::string from font_name (a NULL font_name there is a crash). nvtracker's display-tracking-id rebuilds
# display_text in 128 bytes (longer than 127 bytes writes past its buffer).

def nvdsosd_view(batch):
    """What gst-nvdsosd collects from a batch: every element of the object pool's full list, checked against the
    frames' own lists."""
    pool = raw.ptr(batch.address + raw.BATCH["obj_pool"])
    full = raw.glist(raw.ptr(pool + 32))  # NvDsMetaPool.full_list (after 5 uint32 fields and padding, empty_list)
    in_frames = [o for f in raw.frames_of(batch.address) for o in raw.objects_of(f)]
    return full, in_frames


def scene(rng, n, width, height, long_names=False):
    x = np.c_[rng.uniform(-60, width + 60, (n, 1)), rng.uniform(-60, height + 60, (n, 1)),
              rng.uniform(2, width / 3, (n, 1)), rng.uniform(2, height / 3, (n, 1)), rng.uniform(-4, 4, (n, 1))]
    x[: n // 10, :4] = [width / 2, height / 2, 3 * width, 3 * height]  # larger than the frame: clipped to all of it
    x[n // 10: n // 5, 1] = height - x[n // 10: n // 5, 3] / 2  # touching the bottom edge
    return x.astype(np.float32), rng.uniform(0.25, 1, n).astype(np.float32), rng.integers(0, 4, n)


NAMES = ["vehicle", "ship", "plane", "storage_tank"]
LONG_NAMES = ["é" * 90, "a" * 200, "船" * 60, "x"]  # each cut to <= 127 bytes on a UTF-8 boundary


@pytest.mark.parametrize("rotation", [False, True], ids=["aabb", "rotation_angle"])
@pytest.mark.parametrize("names", [NAMES, LONG_NAMES], ids=["names", "long_names"])
def test_every_object_nvdsosd_collects_at_batch_16_holds_what_nvdsosd_needs(make_batch, rotation, names):
    if rotation and not _core.get().layout.has_rotation_angle:
        pytest.skip("rotation_angle is DS 9 only")
    width, height = 1920, 1080
    batch = make_batch(max_frames=16, frames=16, width=width, height=height)
    rng = np.random.default_rng(16)
    res = nvds.attach_obbs_batch(batch, [scene(rng, 90, width, height) for _ in range(16)], class_names=names,
                                 rotation_angle=rotation)
    full, in_frames = nvdsosd_view(batch)
    # no object nvdsosd would draw that no frame holds, none twice; more than one 1024-element chunk of each kind
    assert sorted(full) == sorted(in_frames) and len(set(full)) == len(full) == res.written > 1024
    assert raw.pool_counts(batch.address, "obj_pool")[0] == res.written
    for o in full:
        left, top, w, h = rect(o)
        assert all(math.isfinite(v) for v in (left, top, w, h)) and w > 0 and h > 0
        if not rotation:  # the tight box, inside the frame as nvll_osd's int conversions see it
            x1, y1 = int(left), int(top)
            x2, y2 = int(np.float32(w) + np.float32(x1)), int(np.float32(h) + np.float32(y1))
            assert 0 <= x1 <= x2 <= width and 0 <= y1 <= y2 <= height
            assert left + w <= width + 1e-3 and top + h <= height + 1e-3
            assert raw.f32(o + raw.OBJ["rotation_angle"]) == 0.0
        else:
            assert abs(raw.f32(o + raw.OBJ["rotation_angle"])) <= 360.0
        assert 0 < raw.u32(o + raw.OBJ["border_width"]) <= 32
        assert raw.u32(o + raw.OBJ["has_bg_color"]) == 0
        assert all(0.0 <= raw.f64(o + raw.OBJ["border_color"] + 8 * i) <= 1.0 for i in range(4))
        assert raw.ptr(o + raw.OBJ["mask_data"]) == 0 and raw.u32(o + raw.OBJ["mask_size"]) == 0
        text = raw.ptr(o + raw.OBJ["display_text"])
        assert text
        shown = raw.cstr(text)
        assert 0 < len(shown) <= 127 and shown.decode("utf-8")  # valid UTF-8, within nvtracker's buffer
        assert raw.cstr(raw.ptr(o + raw.OBJ["font_name"])) == b"Serif" and raw.u32(o + raw.OBJ["font_size"]) >= 1
        assert raw.u32(o + raw.OBJ["text_x"]) < width and raw.u32(o + raw.OBJ["text_y"]) < height


def test_osd_limit_keeps_border_and_label_on_the_first_objects_of_each_frame_only(make_batch):
    batch = make_batch(max_frames=16, frames=16)
    rng = np.random.default_rng(3)
    dets = [scene(rng, 90, 1920, 1080) for _ in range(16)]
    live = nvds.live_payloads()
    res = nvds.attach_obbs_batch(batch, dets, class_names=NAMES, osd_limit=64)
    assert nvds.live_payloads() - live == res.written == sum(res.per_frame)
    drawn = texts = 0
    for f, k in zip(raw.frames_of(batch.address), res.per_frame):
        objs = raw.objects_of(f)[::-1]  # insertion order
        assert len(objs) == k
        for i, o in enumerate(objs):
            visible = i < 64
            assert (raw.u32(o + raw.OBJ["border_width"]) == 3) == visible
            assert (raw.f64(o + raw.OBJ["border_color"] + 24) > 0) == visible  # alpha
            assert bool(raw.ptr(o + raw.OBJ["display_text"])) == visible
            assert raw.cstr(o + raw.OBJ["obj_label"]).decode() in NAMES  # a complete object otherwise
            drawn += raw.u32(o + raw.OBJ["border_width"]) > 0
            texts += bool(raw.ptr(o + raw.OBJ["display_text"]))
        infos = readback.pairs(f)
        assert len(infos) == k and all(obb.source == "user_meta" for _, obb in infos)
    assert drawn == texts == sum(min(k, 64) for k in res.per_frame) <= 1024 < res.written


def test_osd_limit_does_not_change_what_is_written_besides_what_nvdsosd_draws(make_batch):
    rng = np.random.default_rng(4)
    dets = [scene(rng, 40, 1920, 1080) for _ in range(3)]
    rows = []
    for limit in (None, 5):
        batch = make_batch(max_frames=3, frames=3)
        res = nvds.attach_obbs_batch(batch, dets, class_names=NAMES, osd_limit=limit)
        rows.append((res.written_mask.tolist(), res.per_frame,
                     [[(i.class_id, i.confidence, i.rect, i.detector_bbox, i.label, o.xywhr, o.flags)
                       for i, o in readback.pairs(f)] for f in batch.frames]))
    assert rows[0] == rows[1]
    batch = make_batch()
    assert nvds.attach_obbs(batch, batch.frames[0], xywhr=dets[0][0], osd_limit=0).written > 0
    assert all(raw.u32(o + raw.OBJ["border_width"]) == 0 and not raw.ptr(o + raw.OBJ["display_text"])
               for o in raw.objects_of(batch.frames[0].address))


@pytest.mark.parametrize("limit", [2**63, 2**64 + 1, 2**100])
def test_an_osd_limit_beyond_int64_is_refused_by_name_not_wrapped(make_batch, limit):
    # The C field is int64: 2**64 + 1 would wrap to 1 (keeping one object drawn), 2**63 to a negative number.
    batch = make_batch()
    with pytest.raises(ValueError, match=r"osd_limit must be None or an int in 0\.\.2\*\*63-1"):
        nvds.attach_obbs(batch, batch.frames[0], xywhr=np.ones((2, 5), np.float32), osd_limit=limit)
    assert raw.objects_of(batch.frames[0].address) == []


def test_the_largest_osd_limit_keeps_every_object_drawn(make_batch):
    batch = make_batch()
    rows = np.array([[100, 100, 40, 10, 0.2], [300, 300, 40, 10, 0.4], [500, 500, 40, 10, 0.6]], np.float32)
    assert nvds.attach_obbs(batch, batch.frames[0], xywhr=rows, osd_limit=2**63 - 1).written == 3
    assert all(raw.u32(o + raw.OBJ["border_width"]) > 0 and raw.ptr(o + raw.OBJ["display_text"])
               for o in raw.objects_of(batch.frames[0].address))
