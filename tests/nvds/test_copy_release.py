"""Copy and release through NVIDIA's own functions: deep copies, pool reuse, and reading after a copy."""
from __future__ import annotations

import ctypes
import math

import numpy as np
import pytest
import readback

from obbmeta import nvds

from . import raw


def write(batch, frame, rows, **kw):
    x = np.asarray(rows, np.float32).reshape(-1, 5)
    return nvds.attach_obbs(batch, frame, xywhr=x, scores=np.linspace(0.9, 0.1, len(x)).astype(np.float32),
                            labels=np.arange(len(x)) % 3, class_names=["a", "bb", "ccc"], **kw)


def snapshot(batch_address):
    """Per frame, per object (list order): the fields and the payload bytes, read with the tests' offsets."""
    out = []
    for f in raw.frames_of(batch_address):
        objs = []
        for o in raw.objects_of(f):
            ums = raw.user_metas_of(o)
            payloads = [raw.ptr(u + raw.USER["user_meta_data"]) for u in ums]
            objs.append(dict(
                obj=o, label=raw.cstr(o + raw.OBJ["obj_label"]), cls=raw.i32(o + raw.OBJ["class_id"]),
                rect=ctypes.string_at(o + raw.OBJ["rect_left"], 112), text=raw.ptr(o + raw.OBJ["display_text"]),
                text_bytes=raw.cstr(raw.ptr(o + raw.OBJ["display_text"])), payloads=payloads,
                payload_bytes=[ctypes.string_at(p, raw.PAYLOAD_SIZE) for p in payloads],
                types=[raw.i32(u + raw.BASE_TYPE) for u in ums]))
        out.append(dict(frame=f, infer=raw.i32(f + raw.FRAME["bInferDone"]), objs=objs))
    return out


def test_nvidias_batch_copy_is_an_independent_deep_copy(lib, make_batch):
    batch = make_batch(max_frames=2, frames=2)
    f0, f1 = batch.frames
    write(batch, f0, [[100, 100, 30, 10, 0.2], [300, 200, 50, 20, -0.4]])
    write(batch, f1, [[500, 500, 40, 40, 1.0]], rotation_angle=True)
    copy = lib.nvds_batch_meta_copy_func(batch.address, None)
    try:
        a, b = snapshot(batch.address), snapshot(copy)
        assert len(a) == len(b) == 2
        for fa, fb in zip(a, b):
            assert fb["infer"] == 1
            # NVIDIA's copy walks the list and prepends: the copy's list is reversed.
            oa, ob = fa["objs"], fb["objs"][::-1]
            assert len(oa) == len(ob) > 0
            for x, y in zip(oa, ob):
                assert y["obj"] != x["obj"]
                assert (y["label"], y["cls"], y["rect"], y["text_bytes"]) == (x["label"], x["cls"], x["rect"],
                                                                              x["text_bytes"])
                assert y["text"] != x["text"]
                assert y["types"] == x["types"] == [nvds.obb_meta_type()]
                assert y["payload_bytes"] == x["payload_bytes"]
                assert set(y["payloads"]).isdisjoint(x["payloads"])
        # Releasing the original leaves the copy intact and readable.
        batch.destroy()
        again = snapshot(copy)
        assert [[o["payload_bytes"] for o in f["objs"]] for f in again] == \
               [[o["payload_bytes"] for o in f["objs"]] for f in b]
        frame = nvds.batch.FrameMeta(raw.frames_of(copy)[1], None)
        ((info, obb),) = readback.pairs(frame)
        assert obb.source == "user_meta" and obb.xywhr == pytest.approx((500, 500, 40, 40, 1.0))
        assert info.rotation_angle == pytest.approx(math.degrees(1.0), rel=1e-6)
    finally:
        lib.nvds_batch_meta_release_func(copy, None)


def test_batch_copy_method_uses_nvidias_copy_func_and_read_obbs_sees_the_boxes(make_batch):
    batch = make_batch()
    write(batch, batch.frames[0], [[100, 100, 30, 10, 0.2]])
    with batch.copy() as copy:
        assert copy.address != batch.address and copy.max_frames == batch.max_frames == 1
        ((info, obb),) = readback.pairs(copy.frames[0])
        assert (info.label, info.class_id, obb.source) == ("a", 0, "user_meta")
        assert obb.xywhr == pytest.approx((100, 100, 30, 10, 0.2))


def test_released_user_metas_are_reused_with_all_four_fields_set(lib, make_batch):
    """The user-meta pool hands out elements without clearing them: clearing a frame's objects and writing
    again must give objects whose user metas are ours in every field (no stale pointers, no double free)."""
    batch = make_batch()
    frame = batch.frames[0]
    write(batch, frame, [[100, 100, 30, 10, 0.2]] * 20)
    old_user_metas = {u for o in raw.objects_of(frame.address) for u in raw.user_metas_of(o)}
    old_payloads = {raw.ptr(u + raw.USER["user_meta_data"]) for u in old_user_metas}
    lib.nvds_clear_obj_meta_list(frame.address, raw.ptr(frame.address + raw.FRAME["obj_meta_list"]))
    ctypes.c_void_p.from_address(frame.address + raw.FRAME["obj_meta_list"]).value = None
    ctypes.c_uint32.from_address(frame.address + raw.FRAME["num_obj_meta"]).value = 0
    # Our release function left nothing behind on the pooled elements.
    for u in old_user_metas:
        assert raw.ptr(u + raw.USER["user_meta_data"]) == 0
        assert raw.ptr(u + raw.BASE_COPY) == 0 and raw.ptr(u + raw.BASE_RELEASE) == 0
    write(batch, frame, [[200, 200, 10, 10, 0.0]] * 20)
    new_user_metas = {u for o in raw.objects_of(frame.address) for u in raw.user_metas_of(o)}
    assert new_user_metas & old_user_metas  # the pool really reused elements
    for u in new_user_metas:
        p = raw.ptr(u + raw.USER["user_meta_data"])
        assert raw.i32(u + raw.BASE_TYPE) == nvds.obb_meta_type()
        assert raw.ptr(u + raw.BASE_COPY) and raw.ptr(u + raw.BASE_RELEASE)
        assert raw.f32(p + raw.PAYLOAD["cx"]) == 200
    assert len(old_payloads) == 20


def test_read_obbs_falls_back_to_rotation_angle_then_to_the_aabb(lib, make_batch):
    """Objects written by someone else (nvinfer on DS 9 with an OBB parser; a plain detector)."""
    batch = make_batch()
    frame = batch.frames[0]
    for left, top, w, h, deg in ((100, 50, 40, 20, 30.0), (300, 300, 10, 60, 0.0)):
        o = lib.nvds_acquire_obj_meta_from_pool(batch.address)
        for name, value in (("rect_left", left), ("rect_top", top), ("rect_width", w), ("rect_height", h),
                            ("rotation_angle", deg)):
            ctypes.c_float.from_address(o + raw.OBJ[name]).value = value
        lib.nvds_add_obj_meta_to_frame(frame.address, o, None)
    (plain_info, plain), (rot_info, rot) = readback.pairs(frame)
    assert rot.source == "rotation_angle" and not rot.exact
    assert rot.xywhr == pytest.approx((120, 60, 40, 20, math.radians(30)))
    assert plain.source == "aabb" and plain.xywhr == pytest.approx((305, 330, 10, 60, 0))
    assert plain.corners[0] == pytest.approx((300, 300)) and plain.corners[2] == pytest.approx((310, 360))
    assert plain_info.num_user_meta == 0


def test_read_obbs_returns_what_attach_wrote(make_batch):
    batch = make_batch()
    frame = batch.frames[0]
    rows = [[100, 100, 30, 10, 0.2], [5, 5, 30, 10, -0.3]]
    write(batch, frame, rows, component_id=3)
    got = readback.pairs(frame)[::-1]
    for (info, obb), b in zip(got, rows):
        assert obb.source == "user_meta" and obb.exact
        assert obb.xywhr == pytest.approx(b, abs=1e-6)
        assert info.component_id == 3 and not info.tracked and info.num_user_meta == 1
    assert got[1][1].flags == 1 and got[0][1].flags == 0  # the second box was clipped at the frame edge
    assert got[1][0].rect[0] == 0.0
