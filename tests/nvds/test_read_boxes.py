"""read_boxes / read_objects: the frame's objects as one OrientedBoxes (the other columns in its data) or as typed
columns, each row checked against the object NVIDIA's obj_meta_list holds at that place (the tests' own offsets,
tests/nvds/raw.py)."""
import numpy as np
import pytest
import torch

from obbmeta import OrientedBoxes, nvds

from . import raw

XYWHR = np.array([[500, 400, 120, 40, 0.3], [200, 150, 60, 30, -1.0], [900, 700, 80, 80, 0.0]], np.float32)


def written(make_batch):
    batch = make_batch()
    frame = batch.frames[0]
    nvds.attach_obbs(batch, frame, xywhr=XYWHR, scores=np.array([0.9, 0.6, 0.3], np.float32),
                     labels=np.array([1, 0, 1]), class_names=["car", "ship"], component_id=4)
    return batch, frame


def test_rows_are_nvidias_list_in_order(make_batch):
    batch, frame = written(make_batch)
    objects = nvds.read_objects(frame)
    addresses = raw.objects_of(frame.address)
    assert objects.address.tolist() == addresses and len(objects) == 3
    for i, obj in enumerate(addresses):
        assert objects.class_id[i] == raw.i32(obj + raw.OBJ["class_id"])
        assert objects.component_id[i] == raw.i32(obj + raw.OBJ["unique_component_id"]) == 4
        assert objects.object_id[i] == raw.u64(obj + raw.OBJ["object_id"]) == raw.UNTRACKED
        assert objects.confidence[i] == pytest.approx(raw.f32(obj + raw.OBJ["confidence"]))
        assert objects.label[i] == raw.cstr(obj + raw.OBJ["obj_label"])
        assert objects.rect[i].tolist() == pytest.approx([raw.f32(obj + raw.OBJ[f"rect_{k}"])
                                                         for k in ("left", "top", "width", "height")])
        assert objects.num_user_meta[i] == len(raw.user_metas_of(obj)) == 1
    assert objects.labels == ["ship", "car", "ship"] and not objects.tracked.any()  # labels 1, 0, 1 reversed
    # DeepStream prepends: the newest object (the last box written) comes first
    np.testing.assert_allclose(objects.xywhr, XYWHR[::-1], rtol=1e-6)
    assert (objects.source == 0).all()


def test_read_boxes_is_an_oriented_boxes_row_for_row(make_batch):
    batch, frame = written(make_batch)
    boxes = nvds.read_boxes(frame)
    addresses = raw.objects_of(frame.address)
    assert isinstance(boxes, OrientedBoxes) and len(boxes) == 3
    np.testing.assert_allclose(boxes.xywhr.numpy(), XYWHR[::-1], rtol=1e-6)
    assert boxes.scores.tolist() == pytest.approx([0.3, 0.6, 0.9]) and boxes.labels.tolist() == [1, 0, 1]
    assert boxes.track_ids is None  # no tracker set an id
    assert boxes.data["address"].tolist() == addresses
    for i, obj in enumerate(addresses):  # the data columns, against NVIDIA's list
        assert boxes.data["component_id"][i] == raw.i32(obj + raw.OBJ["unique_component_id"]) == 4
        assert boxes.data["label"][i] == raw.cstr(obj + raw.OBJ["obj_label"])
        assert boxes.data["rect"][i].tolist() == pytest.approx([raw.f32(obj + raw.OBJ[f"rect_{k}"])
                                                               for k in ("left", "top", "width", "height")])
    objects = nvds.read_objects(frame)
    assert set(boxes.data) == {"corners", "rect", "object_id", "source", "flags", "detector_bbox", "tracker_bbox",
                               "tracker_confidence", "component_id", "label", "rotation_angle", "address",
                               "num_user_meta", "parent"}
    for name, column in boxes.data.items():
        np.testing.assert_array_equal(column, getattr(objects, name))
    ships = boxes[boxes.labels == 1]  # the columns follow their rows
    assert ships.data["label"].tolist() == [b"ship", b"ship"] and ships.data["address"].tolist() == addresses[::2]


def test_tracked_ids_become_track_ids_and_untracked_rows_minus_one(make_batch):
    batch, frame = written(make_batch)
    objs = nvds.read_objects(frame).address
    nvds.update_objects(batch, frame, objs[:2], object_ids=np.array([7, 2**40], np.uint64))
    boxes = nvds.read_boxes(frame)
    assert boxes.track_ids.tolist() == [7, 2**40, -1]
    assert nvds.read_objects(frame).tracked.tolist() == [True, True, False]
    assert [raw.u64(a + raw.OBJ["object_id"]) for a in boxes.data["address"].tolist()] == [7, 2**40, raw.UNTRACKED]
    assert boxes.data["object_id"].tolist() == [7, 2**40, raw.UNTRACKED]


def test_an_id_beyond_int64_is_refused_by_read_boxes_not_by_read_objects(make_batch):
    batch, frame = written(make_batch)
    objs = nvds.read_objects(frame).address
    nvds.update_objects(batch, frame, objs[:1], object_ids=np.array([2**63 + 5], np.uint64))
    assert nvds.read_objects(frame).object_id[0] == 2**63 + 5
    with pytest.raises(OverflowError, match="object_id is above 2\\*\\*63 - 1"):
        nvds.read_boxes(frame)


def test_subsets_and_single_objects(make_batch):
    batch, frame = written(make_batch)
    objects = nvds.read_objects(frame)
    two = objects[objects.class_id == 1]
    assert len(two) == 2 and two.labels == ["ship", "ship"]
    assert objects.info(0) == nvds.read_obbs(frame)[0][0] and objects.obb(2) == nvds.read_obbs(frame)[2][1]
    with pytest.raises(TypeError, match=r"objects.info\(i\)"):
        objects[0]


def test_an_empty_frame_reads_as_no_boxes(make_batch):
    boxes = nvds.read_boxes(make_batch().frames[0], device=torch.device("cpu"))
    assert len(boxes) == 0 and boxes.xywhr.shape == (0, 5) and boxes.data["corners"].shape == (0, 4, 2)


def test_the_readers_stay_torch_free():
    import subprocess
    import sys

    code = ("import sys; from obbmeta import nvds; b = nvds.BatchMeta.create(1); f = b.add_frame(); "
            "nvds.read_objects(f); assert 'torch' not in sys.modules")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr


def test_a_label_is_read_up_to_its_nul_not_the_old_tail_of_a_reused_element(make_batch):
    """g_strlcpy into a pool element that held a longer label leaves that label's tail after the NUL."""
    import ctypes

    batch = make_batch()
    frame = batch.frames[0]
    nvds.attach_obbs(batch, frame, xywhr=XYWHR[:1], labels=np.array([0]), class_names=["pedestrian"])
    obj = nvds.read_objects(frame).address[0]
    ctypes.memmove(int(obj) + raw.OBJ["obj_label"], b"car\0", 4)
    assert raw.cstr(int(obj) + raw.OBJ["obj_label"]) == b"car"
    assert nvds.read_objects(frame).labels == ["car"] and nvds.read_objects(frame).label.tolist() == [b"car"]
    assert nvds.read_obbs(frame)[0][0].label == "car"
