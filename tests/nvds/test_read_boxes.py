"""read_boxes / read_boxes_batch: the frame's objects as one NumPy-backed OrientedBoxes (the other fields in its
data), each row checked against the object NVIDIA's obj_meta_list holds at that place (the tests' own offsets,
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


def test_read_boxes_is_nvidias_list_row_for_row(make_batch):
    batch, frame = written(make_batch)
    boxes = nvds.read_boxes(frame)
    addresses = raw.objects_of(frame.address)
    assert isinstance(boxes, OrientedBoxes) and boxes.is_numpy and len(boxes) == 3
    assert boxes["address"].tolist() == addresses
    # DeepStream prepends: the newest object (the last box written) comes first
    np.testing.assert_allclose(boxes.xywhr, XYWHR[::-1], rtol=1e-6)
    assert (boxes.xywhr.dtype, boxes.scores.dtype, boxes.labels.dtype) == (np.float32, np.float32, np.int64)
    assert boxes.track_ids is None and not nvds.is_tracked(boxes).any()  # no tracker set an id
    for i, obj in enumerate(addresses):  # every column against NVIDIA's list
        assert boxes.labels[i] == raw.i32(obj + raw.OBJ["class_id"])
        assert boxes.scores[i] == pytest.approx(raw.f32(obj + raw.OBJ["confidence"]))
        assert boxes["component_id"][i] == raw.i32(obj + raw.OBJ["unique_component_id"]) == 4
        assert boxes["object_id"][i] == raw.u64(obj + raw.OBJ["object_id"]) == raw.UNTRACKED
        assert boxes["label"][i] == raw.cstr(obj + raw.OBJ["obj_label"])
        assert boxes["rect"][i].tolist() == pytest.approx([raw.f32(obj + raw.OBJ[f"rect_{k}"])
                                                          for k in ("left", "top", "width", "height")])
        assert boxes["num_user_meta"][i] == len(raw.user_metas_of(obj)) == 1
    assert nvds.label_strings(boxes) == ["ship", "car", "ship"] and boxes.labels.tolist() == [1, 0, 1]
    assert (boxes["source"] == 0).all()
    assert set(boxes.data) == set(nvds.DATA_COLUMNS) == {
        "corners", "rect", "object_id", "source", "flags", "detector_bbox", "tracker_bbox", "tracker_confidence",
        "component_id", "label", "rotation_angle", "address", "num_user_meta", "parent"}
    ships = boxes[boxes.labels == 1]  # the columns follow their rows
    assert ships["label"].tolist() == [b"ship", b"ship"] and ships["address"].tolist() == addresses[::2]


def test_the_corners_are_the_payloads_and_the_polygons_of_the_boxes(make_batch):
    """data["corners"] is what the payload holds, and the same polygon OrientedBoxes.polygons() gives."""
    batch, frame = written(make_batch)
    boxes = nvds.read_boxes(frame)
    np.testing.assert_allclose(boxes["corners"], boxes.polygons(), atol=1e-3)
    assert boxes["corners"].shape == (3, 4, 2) and boxes["corners"].dtype == np.float32


def test_a_device_gives_tensors_and_data_stays_on_the_host(make_batch):
    batch, frame = written(make_batch)
    boxes = nvds.read_boxes(frame, device="cpu")
    assert isinstance(boxes.xywhr, torch.Tensor) and boxes.device == torch.device("cpu")
    assert isinstance(boxes["address"], np.ndarray)
    np.testing.assert_array_equal(boxes.xywhr.numpy(), nvds.read_boxes(frame).xywhr)


def test_tracked_ids_become_track_ids_and_untracked_rows_minus_one(make_batch):
    batch, frame = written(make_batch)
    objs = nvds.read_boxes(frame)["address"]
    nvds.update_objects(batch, frame, objs[:2], object_ids=np.array([7, 2**40], np.uint64))
    boxes = nvds.read_boxes(frame)
    assert boxes.track_ids.tolist() == [7, 2**40, -1] and boxes.track_ids.dtype == np.int64
    assert nvds.is_tracked(boxes).tolist() == [True, True, False]
    assert [raw.u64(a + raw.OBJ["object_id"]) for a in boxes["address"].tolist()] == [7, 2**40, raw.UNTRACKED]
    assert boxes["object_id"].tolist() == [7, 2**40, raw.UNTRACKED]


def test_an_id_beyond_int64_reads_as_its_twos_complement_and_object_id_keeps_it(make_batch):
    """track_ids is object_id read as int64: UNTRACKED_OBJECT_ID is -1 and an id above 2**63 - 1 negative (no
    error in a pipeline's reader); data["object_id"] and is_tracked have the uint64."""
    batch, frame = written(make_batch)
    objs = nvds.read_boxes(frame)["address"]
    nvds.update_objects(batch, frame, objs[:1], object_ids=np.array([2**63 + 5], np.uint64))
    boxes = nvds.read_boxes(frame)
    assert boxes["object_id"][0] == 2**63 + 5 and boxes.track_ids.tolist() == [2**63 + 5 - 2**64, -1, -1]
    assert nvds.is_tracked(boxes).tolist() == [True, False, False]


def test_an_empty_frame_reads_as_no_boxes(make_batch):
    boxes = nvds.read_boxes(make_batch().frames[0])
    assert len(boxes) == 0 and boxes.xywhr.shape == (0, 5) and boxes["corners"].shape == (0, 4, 2)
    assert boxes.is_numpy and nvds.label_strings(boxes) == []


def test_the_readers_stay_torch_free():
    import subprocess
    import sys

    code = ("import sys; from obbmeta import nvds; b = nvds.BatchMeta.create(1); f = b.add_frame(width=64, height=64); "
            "nvds.attach_obbs(b, f, xywhr=[[5, 5, 4, 2, 0.3]]); r = nvds.read_boxes(f); "
            "r = r[r.scores > 0]; r.polygons(); nvds.read_boxes_batch(b); assert 'torch' not in sys.modules")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr


def test_a_label_is_read_up_to_its_nul_not_the_old_tail_of_a_reused_element(make_batch):
    """g_strlcpy into a pool element that held a longer label leaves that label's tail after the NUL."""
    import ctypes

    batch = make_batch()
    frame = batch.frames[0]
    nvds.attach_obbs(batch, frame, xywhr=XYWHR[:1], labels=np.array([0]), class_names=["pedestrian"])
    obj = nvds.read_boxes(frame)["address"][0]
    ctypes.memmove(int(obj) + raw.OBJ["obj_label"], b"car\0", 4)
    assert raw.cstr(int(obj) + raw.OBJ["obj_label"]) == b"car"
    boxes = nvds.read_boxes(frame)
    assert nvds.label_strings(boxes) == ["car"] and boxes["label"].tolist() == [b"car"]


def test_what_a_read_returned_is_a_copy_a_later_read_leaves_alone(make_batch):
    """The reader reuses its row buffer between reads: every column it returned is the caller's own copy."""
    batch = make_batch()
    frame = batch.frames[0]
    nvds.attach_obbs(batch, frame, xywhr=XYWHR[:1], labels=np.array([1]), class_names=["car", "ship"])
    first = nvds.read_boxes(frame)  # one row: the case where a view of the buffer would look contiguous
    keep = {name: np.array(first[name], copy=True) for name in first.data}
    xywhr = first.xywhr.copy()
    other = make_batch()
    nvds.attach_obbs(other, other.frames[0], xywhr=np.array([[10, 10, 4, 4, 0.0]] * 5, np.float32),
                     labels=np.zeros(5, np.int64), class_names=["x" * 100])
    nvds.read_boxes(other.frames[0])  # the same buffer written over with other objects
    nvds.attach_obbs(other, other.frames[0], xywhr=np.array([[10, 10, 4, 4, 0.0]] * 300, np.float32),
                     labels=np.zeros(300, np.int64), class_names=["y" * 100])
    nvds.read_boxes(other.frames[0])  # more rows than the buffer holds: it grows
    np.testing.assert_array_equal(first.xywhr, xywhr)
    for name, column in keep.items():
        np.testing.assert_array_equal(first[name], column, err_msg=name)


def test_every_column_is_the_row_buffers_field_for_600_objects_over_16_frames(make_batch):
    """Past 500 rows (where NumPy's field copies would release the interpreter lock) the reader's one C call gives
    each column exactly NumPy's copy of that field of the C rows: contiguous, in memory of its own."""
    from obbmeta.nvds import reader

    batch = make_batch(16, 16)
    rng = np.random.default_rng(5)
    for k, frame in enumerate(batch.frames):
        n = 30 + 5 * k
        x = np.column_stack([rng.uniform(50, 1800, n), rng.uniform(50, 1000, n), rng.uniform(4, 90, (n, 2)),
                             rng.uniform(-3, 3, n)]).astype(np.float32)
        nvds.attach_obbs(batch, frame, xywhr=x, scores=rng.uniform(0.1, 1, n).astype(np.float32),
                         labels=rng.integers(0, 3, n), class_names=["car", "ship", "long label " * 8])
    boxes, offsets = nvds.read_boxes_batch(batch)
    rows, n, _ = reader._read_rows(list(batch.frames))  # the same read again: the C rows, as NumPy sees them
    t = np.frombuffer(rows, dtype=reader._ROW_DTYPE, count=n)
    assert n == offsets[-1] == len(boxes) > 500
    np.testing.assert_array_equal(boxes.xywhr, t["xywhr"])
    np.testing.assert_array_equal(boxes.scores, t["confidence"])
    np.testing.assert_array_equal(boxes.labels, t["class_id"].astype(np.int64))
    fields = {"corners": t["corners"].reshape(n, 4, 2), "flags": t["obb_flags"],
              "label": t["label"].copy().view("S128").reshape(n)}
    for name in nvds.DATA_COLUMNS:
        want = fields.get(name, t[name] if name in t.dtype.names else None)
        got = boxes.data[name]
        assert want is not None and got.flags.c_contiguous and not np.shares_memory(got, t), name
        np.testing.assert_array_equal(got, want, err_msg=name)


@pytest.mark.parametrize("offset,width,row_size", [(0, 9, 8), (-1, 4, 8), (4, 0, 8), (0, 4, 0), (5, 4, 8)])
def test_the_column_copier_refuses_a_column_outside_the_row(offset, width, row_size):
    import ctypes

    from obbmeta.nvds import _core

    rows, out = np.arange(16, dtype=np.uint8), np.zeros(16, np.uint8)
    offsets, widths = np.array([offset], np.int64), np.array([width], np.int64)
    dest = (ctypes.c_void_p * 1)(out.ctypes.data)
    got = _core.get().c.obbmeta_nvds_columns_held(rows.ctypes.data, 2, row_size, 1, offsets.ctypes.data,
                                                  widths.ctypes.data, dest)
    assert got == _core.WriterError.ARGUMENT and not out.any()


@pytest.mark.parametrize("n", [0, 1, 3, 499, 500, 501, 2000])
def test_the_columns_of_random_row_bytes_are_numpys_copies_of_their_fields(n):
    """Any bytes in the C rows (ids beyond int64, labels without a NUL, NaN floats) come out column for column as
    NumPy's copy of each field, and object_id read as int64 as track_ids unless every row is untracked."""
    import ctypes

    from obbmeta.nvds import _core, layouts, reader

    rng = np.random.default_rng(n)
    rows = (_core.ReadRow * max(n, 1))()
    raw = np.frombuffer(rows, np.uint8)
    raw[:] = rng.integers(0, 256, raw.size, dtype=np.uint8)
    t = np.frombuffer(rows, dtype=reader._ROW_DTYPE, count=n)
    if n > 2:
        t["object_id"][::3] = layouts.UNTRACKED_OBJECT_ID
    boxes = reader._boxes_of(rows, n)
    want = {"corners": t["corners"].reshape(n, 4, 2), "flags": t["obb_flags"],
            "label": t["label"].copy().view("S128").reshape(n)}
    for name in nvds.DATA_COLUMNS:
        got, ref = boxes.data[name], want.get(name, t[name] if name in t.dtype.names else None)
        assert got.dtype == ref.dtype and got.shape == ref.shape and got.tobytes() == ref.tobytes(), name
    assert boxes.xywhr.tobytes() == t["xywhr"].tobytes() and boxes.scores.tobytes() == t["confidence"].tobytes()
    np.testing.assert_array_equal(boxes.labels, t["class_id"].astype(np.int64))
    ids = boxes.track_ids
    if n:
        assert ids.tobytes() == t["object_id"].tobytes() and not np.shares_memory(ids, boxes.data["object_id"])
    else:
        assert ids is None
    before = {name: boxes.data[name].tobytes() for name in nvds.DATA_COLUMNS}
    ctypes.memset(rows, 0, ctypes.sizeof(rows))  # the reader's buffer written over: the boxes keep their values
    assert {name: boxes.data[name].tobytes() for name in nvds.DATA_COLUMNS} == before
