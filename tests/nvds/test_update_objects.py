"""update_objects / remove_objects (what a tracker does to a frame's objects), checked with the tests' own offsets
on NVIDIA's real library, and through its copy and release functions."""
from __future__ import annotations

import struct

import numpy as np
import pytest
import readback
import reference

from obbmeta import nvds

from . import raw

W, H = 1920, 1080
TRK = dict(left=80, top=84, width=88, height=92)  # tracker_bbox_info follows detector_bbox_info (16 bytes)


def write(batch, frame, rows):
    x = np.asarray(rows, np.float32).reshape(-1, 5)
    nvds.attach_obbs(batch, frame, xywhr=x, scores=np.full(len(x), 0.8, np.float32), labels=np.zeros(len(x), np.int64))
    return nvds.read_boxes(frame)["address"]


def payload_of(obj):
    found = [raw.ptr(u + raw.USER["user_meta_data"]) for u in raw.user_metas_of(obj)
             if raw.i32(u + raw.BASE_TYPE) == nvds.obb_meta_type()]
    assert len(found) == 1
    p = found[0]
    xywhr = [raw.f32(p + raw.PAYLOAD[k]) for k in ("cx", "cy", "w", "h", "angle")]
    corners = struct.unpack("8f", bytes((raw.ctypes.c_char * 32).from_address(p + raw.PAYLOAD["corners"])))
    return xywhr, corners, raw.u32(p + raw.PAYLOAD["flags"]), raw.u32(p + raw.PAYLOAD["version"])


def bare_object(lib, batch, frame):
    """An object meta without user meta, as nvtracker makes for a track without a detection."""
    obj = lib.nvds_acquire_obj_meta_from_pool(batch.address)
    raw.ctypes.c_uint64.from_address(obj + raw.OBJ["object_id"]).value = 42
    lib.nvds_add_obj_meta_to_frame(frame.address, obj, None)
    return obj


def test_the_payload_is_replaced_in_place_with_the_predicted_flag(make_batch):
    batch = make_batch()
    frame = batch.frames[0]
    (obj,) = write(batch, frame, [[500, 400, 120, 40, 0.3]])
    before = raw.user_metas_of(int(obj))
    box = [510.0, 395.0, 118.0, 41.0, 0.35]
    res = nvds.update_objects(batch, frame, [obj], np.array([box], np.float32), obb_flags=nvds.OBB_PREDICTED)
    assert (res.updated, res.added_payloads) == (1, 0)
    assert raw.user_metas_of(int(obj)) == before  # the same user meta, no second payload
    xywhr, corners, flags, version = payload_of(int(obj))
    assert xywhr == pytest.approx(box, abs=1e-5)
    assert np.allclose(np.asarray(corners).reshape(4, 2), np.asarray(reference.corners(box)), atol=1e-3)
    assert (flags, version) == (nvds.OBB_PREDICTED, 1)
    (_, obb), = readback.pairs(frame)
    assert obb.source == "predicted" and not obb.exact


def test_an_object_without_payload_gets_one_that_nvidias_copy_and_release_handle(lib, make_batch):
    batch = make_batch()
    frame = batch.frames[0]
    live = nvds.live_payloads()
    obj = bare_object(lib, batch, frame)
    assert readback.pairs(frame)[0][1].source == "aabb"
    res = nvds.update_objects(batch, frame, [obj], [[300.0, 200.0, 60.0, 20.0, -0.5]], obb_flags=nvds.OBB_PREDICTED)
    assert res.added_payloads == 1
    assert nvds.live_payloads() == live + 1
    (um,) = raw.user_metas_of(obj)
    assert raw.i32(um + raw.BASE_TYPE) == nvds.obb_meta_type()
    copy = batch.copy()
    assert nvds.live_payloads() == live + 2
    (copied,) = raw.objects_of(raw.frames_of(copy.address)[0])
    assert payload_of(copied)[0] == pytest.approx([300.0, 200.0, 60.0, 20.0, -0.5], abs=1e-5)
    copy.destroy()
    batch.destroy()
    assert nvds.live_payloads() == live


def test_object_id_rect_and_tracker_box_are_written_as_nvtracker_writes_its_box(make_batch):
    batch = make_batch()
    frame = batch.frames[0]
    objs = write(batch, frame, [[500, 400, 120, 40, 0.3], [1900, 500, 100, 30, 1.0]])
    boxes = np.array([[505, 402, 120, 40, 0.31], [1910, 505, 100, 30, 1.0]], np.float32)
    nvds.update_objects(batch, frame, objs, boxes, object_ids=np.array([7, 2**40], np.uint64), rect=True,
                        confidence=[0.5, -0.1], tracker_confidence=np.array([0.9, 0.4], np.float32))
    for obj, box, oid, conf, tconf in zip(objs.tolist(), boxes.tolist(), (7, 2**40), (0.5, -0.1), (0.9, 0.4)):
        x1, y1, x2, y2 = reference.aabb(box)
        cx1, cy1, cx2, cy2 = max(x1, 0), max(y1, 0), min(x2, W), min(y2, H)
        assert raw.u64(obj + raw.OBJ["object_id"]) == oid
        rect = [raw.f32(obj + raw.OBJ[f"rect_{k}"]) for k in ("left", "top", "width", "height")]
        assert rect == pytest.approx([cx1, cy1, cx2 - cx1, cy2 - cy1], abs=1e-3)
        trk = [raw.f32(obj + TRK[k]) for k in ("left", "top", "width", "height")]
        assert trk == pytest.approx([x1, y1, x2 - x1, y2 - y1], abs=1e-3)
        assert raw.f32(obj + raw.OBJ["confidence"]) == pytest.approx(conf)
        assert raw.f32(obj + raw.OBJ["tracker_confidence"]) == pytest.approx(tconf)
        assert payload_of(obj)[2] & nvds.OBB_RECT_CLIPPED == (nvds.OBB_RECT_CLIPPED if x2 > W else 0)
    x1, y1, x2, y2 = reference.aabb(boxes[0])
    info = {o.address: o for o, _ in readback.pairs(frame)}
    assert info[int(objs[0])].tracker_bbox == pytest.approx((x1, y1, x2 - x1, y2 - y1), abs=1e-3)


def test_without_xywhr_only_the_named_fields_change(make_batch):
    batch = make_batch()
    frame = batch.frames[0]
    (obj,) = write(batch, frame, [[500, 400, 120, 40, 0.3]])
    before = payload_of(int(obj))
    rect_before = [raw.f32(int(obj) + raw.OBJ[f"rect_{k}"]) for k in ("left", "top", "width", "height")]
    nvds.update_objects(batch, frame, [obj], object_ids=[3])
    assert raw.u64(int(obj) + raw.OBJ["object_id"]) == 3
    assert payload_of(int(obj)) == before
    assert [raw.f32(int(obj) + raw.OBJ[f"rect_{k}"]) for k in ("left", "top", "width", "height")] == rect_before


@pytest.mark.parametrize("case", ["foreign", "twice", "nan", "zero_width"])
def test_bad_entries_are_refused_before_anything_is_written(make_batch, case):
    batch = make_batch(max_frames=2, frames=2)
    f0, f1 = batch.frames
    objs = list(write(batch, f0, [[500, 400, 120, 40, 0.3], [800, 400, 120, 40, 0.3]]))
    (other,) = write(batch, f1, [[100, 100, 20, 20, 0.0]])
    boxes = np.array([[1, 1, 5, 5, 0], [2, 2, 5, 5, 0]], np.float32)
    if case == "foreign":
        objs[1] = other
        match = r"objects\[1\].*not an object meta of this frame"
    elif case == "twice":
        objs[1] = objs[0]
        match = r"objects\[1\].*listed twice"
    elif case == "nan":
        boxes[1, 0] = np.nan
        match = r"xywhr\[1\]"
    else:
        boxes[1, 2] = 0
        match = r"xywhr\[1\]"
    before = [payload_of(int(o)) for o in nvds.read_boxes(f0)["address"]]
    with pytest.raises(ValueError, match=match):
        nvds.update_objects(batch, f0, np.array(objs, np.uint64), boxes, object_ids=[5, 6])
    after = nvds.read_boxes(f0)
    assert [payload_of(int(o)) for o in after["address"]] == before
    assert (after["object_id"] == np.uint64(nvds.UNTRACKED_OBJECT_ID)).all()


@pytest.mark.parametrize("kwargs, match", [
    (dict(xywhr=[[1, 2, 3, 4, 0]], obb_flags=1), "obb_flags"),
    (dict(rect=True), "rect=True needs xywhr"),
    (dict(object_ids=[1, 2]), r"object_ids must have shape \(1,\)"),
    (dict(xywhr=[[1, 2, 3, 4]]), r"xywhr must have shape \(1, 5\)"),
    (dict(confidence=[np.inf]), "confidence must be finite"),
])
def test_argument_errors_name_the_argument(make_batch, kwargs, match):
    batch = make_batch()
    frame = batch.frames[0]
    objs = write(batch, frame, [[500, 400, 120, 40, 0.3]])
    if "xywhr" in kwargs:
        kwargs["xywhr"] = np.asarray(kwargs["xywhr"], np.float32)
    with pytest.raises(ValueError, match=match):
        nvds.update_objects(batch, frame, objs, **kwargs)


def test_remove_objects_releases_them_and_their_payloads(make_batch):
    batch = make_batch()
    frame = batch.frames[0]
    live = nvds.live_payloads()
    objs = write(batch, frame, [[500, 400, 120, 40, 0.3], [800, 400, 120, 40, 0.3], [900, 600, 50, 50, 0]])
    assert nvds.live_payloads() == live + 3
    assert nvds.remove_objects(batch, frame, objs[[0, 2]]) == 2
    left = nvds.read_boxes(frame)["address"]
    assert left.tolist() == [objs[1]]
    assert raw.u32(frame.address + raw.FRAME["num_obj_meta"]) == 1
    assert nvds.live_payloads() == live + 1
    with pytest.raises(ValueError, match="not an object meta of this frame"):
        nvds.remove_objects(batch, frame, objs[[0]])
    assert nvds.read_boxes(frame)["address"].tolist() == [objs[1]]


def test_removing_a_parent_leaves_its_children_without_one_and_refuses_an_address_twice(make_batch):
    """NVIDIA's removal leaves a child's parent pointing into the pool: obbmeta's removal sets it to NULL (read
    at the object's own offset), and it refuses a list naming one object twice before removing anything."""
    batch = make_batch()
    frame = batch.frames[0]
    parents = write(batch, frame, [[500, 400, 120, 40, 0.3], [800, 400, 120, 40, 0.3]])
    nvds.attach_obbs(batch, frame, xywhr=np.array([[500, 400, 20, 10, 0.3], [800, 400, 20, 10, 0.3]], np.float32),
                     scores=np.full(2, 0.8, np.float32), labels=np.zeros(2, np.int64), parents=parents)
    children = [a for a in nvds.read_boxes(frame)["address"].tolist() if a not in parents.tolist()]
    assert sorted(raw.ptr(c + raw.OBJ["parent"]) for c in children) == sorted(parents.tolist())
    with pytest.raises(ValueError, match="lists an address twice"):
        nvds.remove_objects(batch, frame, parents[[0, 0]])
    assert len(nvds.read_boxes(frame)["address"]) == 4  # nothing removed
    assert nvds.remove_objects(batch, frame, parents[[0]]) == 1
    by_child = {c: raw.ptr(c + raw.OBJ["parent"]) for c in children}
    assert sorted(v or 0 for v in by_child.values()) == [0, int(parents[1])]


def test_one_removal_call_over_several_frames_removes_each_from_its_own_frame(make_batch):
    """remove_objects_batch: each entry's objects leave their frame (read back from NVIDIA's frame lists and the
    frames' counts), their payloads are released, a frame with nothing to remove is fine; an object named under
    another frame, or twice across entries, is refused with the entry's index before anything is removed."""
    batch = make_batch(max_frames=3, frames=3)
    f0, f1, f2 = batch.frames
    live = nvds.live_payloads()
    a = write(batch, f0, [[500, 400, 120, 40, 0.3], [800, 400, 120, 40, 0.3], [900, 600, 50, 50, 0]])
    b = write(batch, f1, [[300, 300, 60, 30, -0.4], [1200, 700, 90, 40, 1.0]])
    c = write(batch, f2, [[700, 500, 80, 40, 0.2]])
    for removals, match in (([(f0, a[[0]]), (f1, a[[1]])], r"removals\[1\]: objects holds 0x[0-9a-f]+, which is not"),
                            ([(f0, a[[0]]), (f2, c), (f1, a[[0]])], r"removals\[2\]: objects lists an address twice")):
        with pytest.raises(ValueError, match=match):
            nvds.remove_objects_batch(batch, removals)
        assert [len(raw.objects_of(f.address)) for f in (f0, f1, f2)] == [3, 2, 1]  # nothing removed
    assert nvds.remove_objects_batch(batch, [(f0, a[[0, 2]]), (f2, c[:0]), (f1, b[[1]])]) == (2, 0, 1)
    assert raw.objects_of(f0.address) == [int(a[1])] and raw.objects_of(f1.address) == [int(b[0])]
    assert raw.objects_of(f2.address) == [int(c[0])]
    assert [raw.u32(f.address + raw.FRAME["num_obj_meta"]) for f in (f0, f1, f2)] == [1, 1, 1]
    assert nvds.live_payloads() == live + 3
    with pytest.raises(TypeError, match=r"removals\[0\] must be a \(frame, objects\) tuple"):
        nvds.remove_objects_batch(batch, [f0])
    assert nvds.remove_objects_batch(batch, []) == ()


def test_inside_one_batch_lock_the_short_c_calls_keep_the_interpreter_lock(make_batch, monkeypatch):
    """Under ``with batch.locked():`` the reader and writers (attach included) take their ``_held`` entry points
    (no handoff of the interpreter lock), a nested lock does not call NVIDIA's lock again, and another thread does
    not see the lock as its own; outside, the releasing entry points are used."""
    import threading

    from obbmeta.nvds import batch as batch_module

    batch = make_batch()
    frame = batch.frames[0]
    objs = write(batch, frame, [[500, 400, 120, 40, 0.3]])
    used, meta = [], batch._core.libs.meta
    real = batch_module.entry
    monkeypatch.setattr(batch_module, "entry", lambda c, name, address: used.append(
        (name, batch_module.holds_lock(address))) or real(c, name, address))
    for module in ("reader", "objects", "obbs"):
        monkeypatch.setattr(f"obbmeta.nvds.{module}.entry", batch_module.entry)
    nvds.read_boxes(frame)
    locks = []
    acquire = meta.nvds_acquire_meta_lock
    monkeypatch.setattr(meta, "nvds_acquire_meta_lock", lambda b: locks.append(b) or acquire(b))
    seen_elsewhere = []
    with batch.locked():
        with batch.locked():
            nvds.read_boxes(frame)
            nvds.update_objects(batch, frame, objs, object_ids=[7])
            nvds.attach_obbs(batch, frame, xywhr=[[900, 600, 80, 30, -0.2]], scores=[0.8], labels=[0])
        worker = threading.Thread(target=lambda: seen_elsewhere.append(batch_module.holds_lock(batch.address)))
        worker.start()
        worker.join()
        assert batch_module.holds_lock(batch.address)
    assert not batch_module.holds_lock(batch.address) and seen_elsewhere == [False]
    assert len(locks) == 1  # the nested lock took nothing
    assert used == [("obbmeta_nvds_read", False), ("obbmeta_nvds_read", True), ("obbmeta_nvds_update_objects", True),
                    ("obbmeta_nvds_attach", True)]
    nvds.attach_obbs(batch, frame, xywhr=[[300, 200, 80, 30, 0.1]], scores=[0.7], labels=[0])
    assert used[-1] == ("obbmeta_nvds_attach", False)  # outside the lock: the releasing entry point
    assert nvds.read_boxes(frame)["object_id"].tolist()[2] == 7


def test_a_batch_is_not_destroyed_inside_its_own_lock():
    """The lock lives in the batch meta: destroy() inside ``with batch.locked():`` is refused (leaving the block
    afterwards would unlock freed memory), and works once the block is left."""
    from obbmeta.nvds import batch as batch_module

    b = nvds.BatchMeta.create(1)
    with pytest.raises(RuntimeError, match="inside this batch's own batch.locked"):
        with b.locked():
            b.destroy()
    assert not batch_module.holds_lock(b.address)
    b.destroy()
    assert b.released


def test_read_boxes_has_what_a_tracker_needs(make_batch):
    batch = make_batch()
    frame = batch.frames[0]
    nvds.attach_obbs(batch, frame, xywhr=np.array([[500, 400, 120, 40, 0.3]], np.float32),
                     scores=np.array([0.7], np.float32), labels=np.array([1]), class_names=["car", "ship"],
                     component_id=4)
    a = nvds.read_boxes(frame)
    (obj,) = raw.objects_of(frame.address)  # NVIDIA's list, the tests' own offsets
    assert a["label"].tolist() == [b"ship"] and a["component_id"].tolist() == [4] and a.labels.tolist() == [1]
    assert a["address"].tolist() == [obj] and nvds.label_strings(a) == ["ship"]
    assert a["detector_bbox"][0].tolist() == pytest.approx([raw.f32(obj + raw.OBJ[f"det_{k}"])
                                                             for k in ("left", "top", "width", "height")])
    assert a["flags"].tolist() == [0] and a["tracker_bbox"].tolist() == [[0, 0, 0, 0]]
    assert a.track_ids is None and not nvds.is_tracked(a).any()


@pytest.mark.parametrize("ids", [[-1], [-1, -2], np.array([-2], np.int64), [2**64], [2**64 + 5, 3], [2**63, -1]])
def test_object_ids_outside_uint64_are_refused_by_name_not_wrapped(make_batch, ids):
    # -1 would become UNTRACKED_OBJECT_ID and -2 2**64 - 2; 2**64 does not fit the uint64 field.
    batch = make_batch()
    frame = batch.frames[0]
    objs = write(batch, frame, [[500, 400, 120, 40, 0.3]] * len(ids))
    with pytest.raises(ValueError, match=r"object_ids must be integer track ids in 0\.\.2\*\*64-1"):
        nvds.update_objects(batch, frame, objs, object_ids=ids)
    assert (nvds.read_boxes(frame)["object_id"] == np.uint64(nvds.UNTRACKED_OBJECT_ID)).all()


@pytest.mark.parametrize("ids", [[True], [1.0], np.array([2.0])])
def test_object_ids_that_are_not_integers_are_refused(make_batch, ids):
    batch = make_batch()
    frame = batch.frames[0]
    objs = write(batch, frame, [[500, 400, 120, 40, 0.3]])
    with pytest.raises(TypeError, match="object_ids must be integer track ids"):
        nvds.update_objects(batch, frame, objs, object_ids=ids)


def test_object_ids_at_both_ends_of_uint64_are_written(make_batch):
    batch = make_batch()
    frame = batch.frames[0]
    objs = write(batch, frame, [[500, 400, 120, 40, 0.3], [800, 400, 120, 40, 0.3]])
    nvds.update_objects(batch, frame, objs, object_ids=[0, 2**64 - 1])
    assert [raw.u64(int(o) + raw.OBJ["object_id"]) for o in objs] == [0, 2**64 - 1]


def _three_frames(make_batch):
    """A batch of three frames with 3, 0 and 2 objects (scores 0.9 / 0.4 / 0.7, ...), written in one attach."""
    batch = make_batch(max_frames=3, frames=3)
    rows = [np.array([[500, 400, 120, 40, 0.3], [800, 400, 120, 40, 0.3], [900, 600, 50, 50, 0]], np.float32),
            np.zeros((0, 5), np.float32), np.array([[300, 300, 60, 30, -0.4], [1200, 700, 90, 40, 1.0]], np.float32)]
    scores = [np.array([0.9, 0.4, 0.7], np.float32), np.zeros(0, np.float32), np.array([0.2, 0.95], np.float32)]
    nvds.attach_obbs_batch(batch, [(x, s, np.arange(len(x))) for x, s in zip(rows, scores)],
                           class_names=["a", "b", "c"])
    return batch


def test_a_batch_read_in_one_call_is_each_frame_read_alone(make_batch):
    """read_boxes_batch: every column of frame k's rows equals read_boxes(frame k), in NVIDIA's list order;
    a frame of another batch is refused by index."""
    batch = _three_frames(make_batch)
    objs, offsets = nvds.read_boxes_batch(batch)
    assert offsets.tolist() == [0, 3, 3, 5] and objs.is_numpy
    for k, f in enumerate(batch.frames):
        alone, part = nvds.read_boxes(f), objs[offsets[k]:offsets[k + 1]]
        assert part["address"].tolist() == raw.objects_of(f.address)
        for name in ("xywhr", "scores", "labels"):
            assert np.array_equal(getattr(part, name), getattr(alone, name)), name
        assert set(part.data) == set(alone.data) == set(nvds.DATA_COLUMNS)
        for name in part.data:
            assert np.array_equal(part[name], alone[name]), name
    objs, offsets = nvds.read_boxes_batch(batch, [batch.frames[2]])
    assert offsets.tolist() == [0, 2] and objs.scores.tolist() == pytest.approx([0.95, 0.2])
    on_cpu, _ = nvds.read_boxes_batch(batch, device="cpu")
    assert not on_cpu.is_numpy and on_cpu.scores.tolist() == pytest.approx([0.7, 0.4, 0.9, 0.95, 0.2])
    other = make_batch()
    with pytest.raises(ValueError, match=r"frames\[1\] is not a frame meta of this batch"):
        nvds.read_boxes_batch(batch, [batch.frames[0], other.frames[0]])
    assert len(nvds.read_boxes_batch(batch, [])[0]) == 0


def test_one_update_call_over_several_frames_writes_what_one_call_per_frame_writes(make_batch):
    """update_objects_batch against update_objects frame after frame on an identical batch: object ids, rect_params,
    tracker boxes and payloads read back through NVIDIA's lists are the same; an object named under another frame
    is refused with that frame's index, bad offsets by name, and nothing is written."""
    one, many = _three_frames(make_batch), _three_frames(make_batch)
    boxes = np.array([[510, 395, 118, 41, 0.35], [805, 402, 121, 39, 0.31], [1910, 600, 50, 50, 0.0],
                      [301, 299, 60, 31, -0.41], [1199, 701, 91, 40, 1.01]], np.float32)
    ids = np.array([5, 6, 7, 8, 9], np.uint64)
    for f, (a, b) in zip(one.frames, ((0, 3), (3, 3), (3, 5))):
        objs = nvds.read_boxes(f)["address"]
        nvds.update_objects(one, f, objs, boxes[a:b], object_ids=ids[a:b], rect=True, tracker_confidence=0.5,
                            frame_size=(W, H))
    objs, offsets = nvds.read_boxes_batch(many)
    res = nvds.update_objects_batch(many, many.frames, offsets, objs["address"], boxes, object_ids=ids, rect=True,
                                    tracker_confidence=0.5, frame_size=(W, H))
    assert (res.updated, res.added_payloads) == (5, 0)

    def seen(batch):
        return [(raw.u64(o + raw.OBJ["object_id"]), [raw.f32(o + raw.OBJ[k]) for k in ("rect_left", "rect_top",
                 "rect_width", "rect_height", "trk_left")], payload_of(o)[0])
                for f in batch.frames for o in raw.objects_of(f.address)]
    assert seen(many) == seen(one)
    assert [s[0] for s in seen(many)] == [5, 6, 7, 8, 9]
    f0, f1, f2 = many.frames
    with pytest.raises(ValueError, match=r"objects\[2\] = 0x[0-9a-f]+ is not an object meta of its frame "
                                         r"\(frames\[2\]\)"):
        nvds.update_objects_batch(many, [f0, f1, f2], [0, 2, 2, 4], objs["address"][[0, 1, 2, 3]], object_ids=1)
    with pytest.raises(ValueError, match="offsets must rise from 0 to the 5 objects"):
        nvds.update_objects_batch(many, [f0, f1, f2], [0, 4, 3, 5], objs["address"], object_ids=1)
    with pytest.raises(ValueError, match=r"offsets must be \(4,\) integers"):
        nvds.update_objects_batch(many, [f0, f1, f2], [0, 5], objs["address"], object_ids=1)
    assert [s[0] for s in seen(many)] == [5, 6, 7, 8, 9]  # nothing written by the refused calls


def test_the_pools_in_use_list_is_newest_first_which_the_removal_walks_from(make_batch):
    """NVIDIA's pool keeps its in-use objects newest first (what nvds_remove_obj_meta_from_frame walks, and why the
    removal goes from the last frame back, each frame's list from its head: objects written frame after frame are
    found near the head); the removal takes exactly the named objects and keeps the frames' order."""
    batch = _three_frames(make_batch)
    pool = raw.ptr(batch.address + raw.BATCH["obj_pool"])
    in_use = raw.glist(raw.ptr(pool + raw.POOL["full_list"]))
    mine = [o for o in in_use if o in {a for f in batch.frames for a in raw.objects_of(f.address)}]
    assert [round(raw.f32(o + raw.OBJ["confidence"]), 2) for o in mine] == [0.95, 0.2, 0.7, 0.4, 0.9]
    assert [[round(raw.f32(o + raw.OBJ["confidence"]), 2) for o in raw.objects_of(f.address)]
            for f in batch.frames] == [[0.7, 0.4, 0.9], [], [0.95, 0.2]]
    objs, _ = nvds.read_boxes_batch(batch)
    low = objs["address"][objs.scores < 0.5]
    assert nvds.remove_objects_batch(batch, [(batch.frames[0], low[:1]), (batch.frames[2], low[1:])]) == (1, 1)
    assert [[round(raw.f32(o + raw.OBJ["confidence"]), 2) for o in raw.objects_of(f.address)]
            for f in batch.frames] == [[0.7, 0.9], [], [0.95]]


def _twin_batch(make_batch, seed: int):
    """Four frames of 6-14 objects (OBB payloads), a classification (a classifier meta with a label info) on every
    third object; the same content for the same seed."""
    rng = np.random.default_rng(seed)
    batch = make_batch(max_frames=4, frames=4)
    rows = []
    for _ in range(4):
        n = int(rng.integers(6, 15))
        x = np.column_stack([rng.uniform(100, 1800, n), rng.uniform(100, 1000, n), rng.uniform(20, 90, (n, 2)),
                             rng.uniform(-1.5, 1.5, n)]).astype(np.float32)
        rows.append((x, rng.uniform(0.1, 0.99, n).astype(np.float32), rng.integers(0, 3, n)))
    nvds.attach_obbs_batch(batch, rows, class_names=["a", "b", "c"])
    objs, _ = nvds.read_boxes_batch(batch)
    chosen = objs["address"][::3]
    nvds.attach_classifications(batch, chosen, texts=[f"plate-{k}" for k in range(len(chosen))])
    return batch


def _pool_keys(batch) -> tuple[dict, dict]:
    """A name for every element of the batch's object, classifier, label and user pools that stays the same across
    twin batches: live elements by where they hang (frame, position, ...), free ones by their place in the free list;
    and each pool's (in-use, free) lists."""
    names, lists = {}, {}
    for k, f in enumerate(raw.frames_of(batch.address)):
        for j, o in enumerate(raw.objects_of(f)):
            names[o] = ("obj", k, j)
            for i, u in enumerate(raw.user_metas_of(o)):
                names[u] = ("user", k, j, i)
            for i, c in enumerate(raw.classifier_metas_of(o)):
                names[c] = ("classifier", k, j, i)
                for q, li in enumerate(raw.label_infos_of(c)):
                    names[li] = ("label", k, j, i, q)
    for pool in ("obj_pool", "classifier_pool", "label_pool", "user_pool"):
        p = raw.ptr(batch.address + raw.BATCH[pool])
        full, free = (raw.glist(raw.ptr(p + raw.POOL[side])) for side in ("full_list", "empty_list"))
        for i, e in enumerate(free):
            names.setdefault(e, (pool, "free", i))
        lists[pool] = (full, free)
    return names, lists


def test_the_removal_leaves_nvidias_pools_as_nvidias_own_removal_of_each_object_does(lib, make_batch):
    """remove_objects_batch first moves what it is about to return to NVIDIA's pools to the head of their in-use lists
    (so that NVIDIA's lookups find each element first); afterwards the object, classifier, label and user pools hold
    the same elements in the same order, in use and free, as on a twin batch where NVIDIA's
    nvds_remove_obj_meta_from_frame removed the same objects one at a time in the documented order (the last frame
    first, each frame's list from its head)."""
    ours, twin = _twin_batch(make_batch, 5), _twin_batch(make_batch, 5)
    before_ours, _ = _pool_keys(ours)
    before_twin, _ = _pool_keys(twin)
    objs, offsets = nvds.read_boxes_batch(ours)
    drop = (objs.scores < 0.6) | (np.arange(len(objs.scores)) % 5 == 1)
    assert 5 < drop.sum() < len(drop) - 5
    removals = [(f, objs["address"][offsets[k]:offsets[k + 1]][drop[offsets[k]:offsets[k + 1]]])
                for k, f in enumerate(ours.frames)]
    assert nvds.remove_objects_batch(ours, removals) == tuple(int(d.sum()) for d in np.split(drop, offsets[1:-1]))
    frames = [f.address for f in twin.frames]
    for k in reversed(range(len(frames))):
        for j, o in enumerate(raw.objects_of(frames[k])):  # the list as it was: removing o frees only o's link
            if drop[offsets[k] + j]:
                lib.nvds_remove_obj_meta_from_frame(frames[k], o)
    _, lists_ours = _pool_keys(ours)
    _, lists_twin = _pool_keys(twin)
    for pool in lists_ours:
        for side in (0, 1):
            assert [before_ours[e] for e in lists_ours[pool][side]] == [before_twin[e] for e in lists_twin[pool][side]]
        p = raw.ptr(ours.address + raw.BATCH[pool])
        for side in ("full_list", "empty_list"):  # every link's prev is the link before it (GList's back links)
            node, prev = raw.ptr(p + raw.POOL[side]), 0
            while node:
                assert raw.ptr(node + 16) == prev
                node, prev = raw.ptr(node + 8), node
    assert [len(lists_ours[p][0]) for p in ("obj_pool", "user_pool")] == [int((~drop).sum())] * 2
    assert len(lists_ours["classifier_pool"][0]) == int((~drop[::3]).sum())


def test_entries_in_list_order_or_not_name_the_same_objects(make_batch):
    """Entries in their frame's list order (what a reader of the frames passes: found in one walk without lookups)
    and the same entries in another order (looked up) update and remove the same objects: twin batches, one given
    each frame's entries as read, the other reversed."""
    in_order, shuffled = _twin_batch(make_batch, 7), _twin_batch(make_batch, 7)
    objs, offsets = nvds.read_boxes_batch(in_order)
    ids = np.arange(100, 100 + len(objs.scores))
    nvds.update_objects_batch(in_order, in_order.frames, offsets, objs["address"], object_ids=ids)
    other, _ = nvds.read_boxes_batch(shuffled)
    flip = np.concatenate([np.arange(offsets[k + 1] - 1, offsets[k] - 1, -1) for k in range(len(offsets) - 1)])
    nvds.update_objects_batch(shuffled, shuffled.frames, offsets, other["address"][flip], object_ids=ids[flip])

    def read_ids(batch):
        return [[raw.u64(o + raw.OBJ["object_id"]) for o in raw.objects_of(f.address)] for f in batch.frames]

    assert read_ids(in_order) == read_ids(shuffled) == [ids[offsets[k]:offsets[k + 1]].tolist()
                                                        for k in range(len(offsets) - 1)]
    drop = objs.scores < 0.5
    for batch, rows, order in ((in_order, objs, np.arange(len(drop))), (shuffled, other, flip)):
        nvds.remove_objects_batch(batch, [(f, rows["address"][order[offsets[k]:offsets[k + 1]]][
            drop[order[offsets[k]:offsets[k + 1]]]]) for k, f in enumerate(batch.frames)])
    assert read_ids(in_order) == read_ids(shuffled) == [ids[offsets[k]:offsets[k + 1]][
        ~drop[offsets[k]:offsets[k + 1]]].tolist() for k in range(len(offsets) - 1)]


@pytest.mark.parametrize("entries", [(2, 1, 0), (1, 2, 0)], ids=["looked-up", "in-list-order"])
def test_an_object_twice_in_its_frames_list_is_removed_once(lib, make_batch, entries):
    """NVIDIA's add takes an object twice (nothing makes such a list): removing it removes it once, as one NVIDIA
    removal does (its first link goes, the other stays), and every pool keeps its counts, whether the entries come
    in list order or not."""
    batch = make_batch()
    frame = batch.frames[0].address
    made = [lib.nvds_acquire_obj_meta_from_pool(batch.address) for _ in range(3)]  # x, a, b
    for o in (made[0], made[1], made[2], made[0]):
        lib.nvds_add_obj_meta_to_frame(frame, o, None)
    assert raw.objects_of(frame) == [made[0], made[2], made[1], made[0]]
    named = np.array([made[k] for k in entries], np.uint64)  # (a, b, x) / (b, a, x): b precedes a in the list
    assert nvds.remove_objects(batch, batch.frames[0], named) == 3
    assert raw.objects_of(frame) == [made[0]]
    for pool in ("obj_pool", "user_pool"):
        p = raw.ptr(batch.address + raw.BATCH[pool])
        full, empty = raw.pool_counts(batch.address, pool)
        assert (full, empty) == (len(raw.glist(raw.ptr(p + raw.POOL["full_list"]))),
                                 len(raw.glist(raw.ptr(p + raw.POOL["empty_list"]))))
