"""attach_obbs / update_objects as a tracker uses them for objects of its own (mark_infer_done=False,
detector_bbox=False, one component id per box, the written objects' addresses, rotation_angle=), checked by walking
NVIDIA's own lists with the tests' own offsets (tests/nvds/raw.py)."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest
import readback

from obbmeta import nvds

from . import raw

W, H = 1920, 1080
ROWS = np.array([[400, 300, 120, 40, 0.3],     # inside
                 [-300, 500, 50, 50, 0.0],     # fully outside: filtered
                 [1000, 600, 50, 200, -1.2],   # inside
                 [1500, 100, 30, 30, 0.0]], np.float32)


def payload_cx(obj: int) -> float:
    (um,) = [u for u in raw.user_metas_of(obj) if raw.i32(u + raw.BASE_TYPE) == nvds.obb_meta_type()]
    return raw.f32(raw.ptr(um + raw.USER["user_meta_data"]) + raw.PAYLOAD["cx"])


def det_box(obj: int) -> tuple[float, ...]:
    return tuple(raw.f32(obj + raw.OBJ[f"det_{k}"]) for k in ("left", "top", "width", "height"))


def set_infer_done(frame, value: int) -> None:
    ctypes.c_int32.from_address(frame.address + raw.FRAME["bInferDone"]).value = value


def test_addresses_name_each_boxs_object_in_input_order_and_0_where_filtered(make_batch):
    batch = make_batch()
    frame = batch.frames[0]
    res = nvds.attach_obbs(batch, frame, xywhr=ROWS)
    assert res.addresses.dtype == np.uint64 and res.addresses.shape == (4,)
    assert res.addresses[1] == 0 and res.written_mask.tolist() == [True, False, True, True]
    listed = raw.objects_of(frame.address)  # NVIDIA's obj_meta_list: newest first
    assert res.addresses[res.written_mask].tolist() == listed[::-1]
    for i in (0, 2, 3):  # each address holds its own box
        assert payload_cx(int(res.addresses[i])) == pytest.approx(ROWS[i, 0])


def test_addresses_in_the_batch_form_are_objects_of_each_boxs_own_frame(make_batch):
    batch = make_batch(max_frames=2, frames=2)
    f0, f1 = batch.frames
    res = nvds.attach_obbs_batch(batch, [(ROWS[:2],), (ROWS[2:],)])
    assert res.addresses[1] == 0
    assert res.addresses[:1].tolist() == raw.objects_of(f0.address)
    assert res.addresses[2:].tolist() == raw.objects_of(f1.address)[::-1]


@pytest.mark.parametrize("before", [0, 1])
def test_mark_infer_done_false_leaves_binferdone_as_it_was(make_batch, before):
    batch = make_batch(max_frames=2, frames=2)
    for f in batch.frames:
        set_infer_done(f, before)
    res = nvds.attach_obbs(batch, batch.frames[0], xywhr=ROWS, mark_infer_done=False)
    nvds.attach_obbs_batch(batch, [(ROWS[:1],), (ROWS[1:2],)], mark_infer_done=False)  # the second: all filtered
    assert res.written == 3
    assert [raw.i32(f.address + raw.FRAME["bInferDone"]) for f in batch.frames] == [before, before]
    nvds.attach_obbs(batch, batch.frames[1], xywhr=ROWS[1:2])  # the default marks the frame, even with nothing written
    assert raw.i32(batch.frames[1].address + raw.FRAME["bInferDone"]) == 1


def test_detector_bbox_false_leaves_detector_bbox_info_zero_also_on_recycled_objects(make_batch):
    batch = make_batch()
    frame = batch.frames[0]
    first = nvds.attach_obbs(batch, frame, xywhr=ROWS)
    assert all(det_box(int(o))[2] > 0 for o in first.addresses[first.written_mask])
    nvds.remove_objects(batch, frame, first.addresses[first.written_mask])  # back to the pool, written
    res = nvds.attach_obbs(batch, frame, xywhr=ROWS, detector_bbox=False)
    for o in res.addresses[res.written_mask].tolist():
        assert det_box(o) == (0.0, 0.0, 0.0, 0.0)
        assert raw.f32(o + raw.OBJ["rect_width"]) > 0  # rect_params is still the box
    infos = {i.address: i for i, _ in readback.pairs(frame)}
    assert all(infos[o].detector_bbox == (0, 0, 0, 0) for o in res.addresses[res.written_mask].tolist())


def test_component_id_per_box_lands_on_each_boxs_object(make_batch):
    batch = make_batch(max_frames=2, frames=2)
    res = nvds.attach_obbs(batch, batch.frames[0], xywhr=ROWS, component_id=np.array([3, 9, 4, 2**31 - 1]))
    got = [raw.i32(int(o) + raw.OBJ["unique_component_id"]) for o in res.addresses[res.written_mask]]
    assert got == [3, 4, 2**31 - 1]
    res = nvds.attach_obbs_batch(batch, [(ROWS[:2],), (ROWS[2:],)], component_id=[5, 6, 7, 8])
    got = [raw.i32(int(o) + raw.OBJ["unique_component_id"]) for o in res.addresses[res.written_mask]]
    assert got == [5, 7, 8]


@pytest.mark.parametrize("value, error, match", [
    (np.array([1, 2]), ValueError, r"shape \(N,\) = \(4,\)"),
    (np.array([1, -1, 2, 3]), ValueError, r"component_id\[1\] = -1"),
    (np.array([1, 2**31, 2, 3]), ValueError, r"component_id\[1\] = 2147483648"),
    (np.array([1.0, 2.0, 3.0, 4.0]), TypeError, "got dtype float64"),
    (True, ValueError, "component_id must be an int"),
    (-1, ValueError, "component_id must be an int"),
])
def test_bad_component_ids_are_refused_naming_the_argument(make_batch, value, error, match):
    batch = make_batch()
    frame = batch.frames[0]
    with pytest.raises(error, match=match):
        nvds.attach_obbs(batch, frame, xywhr=ROWS, component_id=value)
    assert raw.objects_of(frame.address) == []


@pytest.mark.parametrize("name", ["mark_infer_done", "detector_bbox"])
def test_the_tracker_switches_take_only_true_or_false(make_batch, name):
    batch = make_batch()
    with pytest.raises(TypeError, match=f"{name} must be True or False"):
        nvds.attach_obbs(batch, batch.frames[0], xywhr=ROWS, **{name: 0})


# ---------------------------------------------------------------- update_objects(rotation_angle=)

def rotation(obj: int) -> float:
    return raw.f32(obj + raw.OBJ["rotation_angle"])


def test_rotation_angle_is_written_where_given_and_left_where_nan(make_batch):
    batch = make_batch()
    frame = batch.frames[0]
    res = nvds.attach_obbs(batch, frame, xywhr=ROWS[[0, 2, 3]], rotation_angle=True)
    objs = res.addresses
    before = [rotation(int(o)) for o in objs]
    assert before == pytest.approx(np.degrees(ROWS[[0, 2, 3], 4]).tolist())
    nvds.update_objects(batch, frame, objs, rotation_angle=[12.5, np.nan, -40])
    assert [rotation(int(o)) for o in objs] == [12.5, before[1], -40.0]
    infos = {i.address: i for i, _ in readback.pairs(frame)}
    assert infos[int(objs[2])].rotation_angle == -40.0


def test_rotation_angle_is_applied_after_rect_which_sets_0(make_batch):
    batch = make_batch()
    frame = batch.frames[0]
    objs = nvds.attach_obbs(batch, frame, xywhr=ROWS[[0, 2]], rotation_angle=True).addresses
    nvds.update_objects(batch, frame, objs, ROWS[[0, 2]], rect=True, rotation_angle=[np.nan, 7])
    assert [rotation(int(o)) for o in objs] == [0.0, 7.0]


@pytest.mark.parametrize("value, error, match", [
    ([np.inf, 1.0], ValueError, "rotation_angle must be finite"),
    ([1.0, 2.0, 3.0], ValueError, r"rotation_angle must have shape \(2,\)"),
    (["a", "b"], TypeError, "rotation_angle must be degrees"),
])
def test_bad_rotation_angles_are_refused_before_anything_is_written(make_batch, value, error, match):
    batch = make_batch()
    frame = batch.frames[0]
    objs = nvds.attach_obbs(batch, frame, xywhr=ROWS[[0, 2]], rotation_angle=True).addresses
    before = [rotation(int(o)) for o in objs]
    with pytest.raises(error, match=match):
        nvds.update_objects(batch, frame, objs, rotation_angle=value)
    assert [rotation(int(o)) for o in objs] == before
