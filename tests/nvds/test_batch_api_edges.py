"""Edges of the BatchMeta / attach API found in review: C field ranges and empty batches."""
import numpy as np
import pytest
import readback
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from obbmeta import nvds

F32_MAX = float(np.finfo(np.float32).max)


@pytest.mark.parametrize("field, value", [("width", 2**32 + 640), ("height", 2**32), ("frame_num", 2**31),
                                          ("source_id", -1), ("pad_index", 2**32)])
def test_add_frame_refuses_values_its_c_field_cannot_hold(field, value):
    with nvds.BatchMeta.create(1) as batch:
        kwargs = dict(source_id=0, width=640, height=480, frame_num=0)
        kwargs[field] = value
        with pytest.raises(ValueError, match=field):
            batch.add_frame(**kwargs)
        assert batch.frames == []


def test_create_refuses_a_max_frames_the_c_int_cannot_hold():
    with pytest.raises(ValueError, match="max_frames"):
        nvds.BatchMeta.create(2**31)


def test_attach_obbs_batch_on_a_batch_without_frames_reports_no_frames():
    with nvds.BatchMeta.create(1) as batch:
        result = nvds.attach_obbs_batch(batch, [])
        assert result.written == 0 and result.per_frame == ()


def test_attach_obbs_reports_its_one_frame():
    with nvds.BatchMeta.create(1) as batch:
        frame = batch.add_frame(source_id=0, width=640, height=480, frame_num=0)
        x = np.array([[100, 100, 20, 10, 0.2], [-500, -500, 5, 5, 0]], np.float32)
        result = nvds.attach_obbs(batch, frame, xywhr=x)
        assert result.per_frame == (1,) and result.filtered == 1


def test_the_python_descriptor_is_the_one_the_c_writer_interns():
    import ctypes

    from obbmeta.nvds import _core

    fn = _core.get().c.obbmeta_nvds_obb_meta_descriptor
    fn.restype = ctypes.c_char_p
    assert fn().decode() == nvds.OBB_META_DESCRIPTOR


@pytest.mark.parametrize("max_frames", [0, 4097, 2**31 - 1])
def test_create_refuses_frame_counts_whose_preallocation_would_exhaust_memory(max_frames):
    with pytest.raises(ValueError, match=r"max_frames must be an int in \[1, 4096\]"):
        nvds.BatchMeta.create(max_frames)


def test_create_accepts_the_largest_documented_batch():
    with nvds.BatchMeta.create(4096) as batch:
        assert batch.max_frames == 4096


def test_copy_of_a_bare_nvds_create_batch_meta_is_refused_instead_of_crashing(lib):
    address = lib.nvds_create_batch_meta(2)  # max_frames_in_batch stays 0: NVIDIA's copy would crash on it
    try:
        with pytest.raises(ValueError, match="max_frames_in_batch = 0"):
            nvds.BatchMeta.from_address(address).copy()
    finally:
        lib.nvds_destroy_batch_meta(address)


@pytest.mark.parametrize("frame_size", [(2**32 + 1, 100), (100, 1e12), (float("inf"), 10)])
def test_frame_sizes_beyond_the_uint32_pixel_range_are_refused(make_batch, frame_size):
    from obbmeta.osd import add_obb_overlay

    batch = make_batch()
    frame = batch.frames[0]
    with pytest.raises(ValueError, match="frame_size must be two positive finite numbers, at most 2"):
        nvds.attach_obbs(batch, frame, xywhr=np.array([[10, 10, 4, 4, 0]], np.float32), frame_size=frame_size)
    with pytest.raises(ValueError, match="frame_size"):
        nvds.add_display_lines(batch, frame, np.zeros((1, 4), np.float32), frame_size=frame_size)
    with pytest.raises(ValueError, match="frame_size"):
        add_obb_overlay(batch, frame, frame_size=frame_size)


def test_the_c_writers_refuse_frame_sizes_beyond_the_uint32_pixel_range(make_batch):
    import ctypes

    from obbmeta.nvds import _core

    batch = make_batch()
    frame = batch.frames[0]
    core = _core.get()
    seg = np.array([[0, 0, 5e9, 5e9]], np.float32)
    rgba = np.ones(4)
    n = ctypes.c_int64()
    for fw in (1e12, float("nan"), 2.0**32 + 1):
        got = core.c.obbmeta_nvds_add_lines(core.layout.id, batch.address, frame.address, seg.ctypes.data, 1,
                                            rgba.ctypes.data, 1, 2, fw, 100.0, ctypes.byref(n))
        assert got == -6  # OBBMETA_ERR_ARGUMENT: never a float-to-uint32 cast out of range


def test_a_frame_as_wide_as_2_to_the_32_keeps_its_pixel_coordinates():
    from obbmeta.osd import add_obb_overlay

    side = 2**32
    with nvds.BatchMeta.create(1) as batch:
        frame = batch.add_frame(width=640, height=480)
        x = np.array([[4e9, 3e9, 1024, 512, 0]], np.float32)
        assert nvds.attach_obbs(batch, frame, xywhr=x, frame_size=(side, side)).written == 1
        add_obb_overlay(batch, frame, frame_size=(side, side))
        lines = nvds.read_display_lines(frame)
        xs = sorted({v for line in lines for v in (line[0], line[2])})
        ys = sorted({v for line in lines for v in (line[1], line[3])})
        assert xs == [4e9 - 512, 4e9 + 512] and ys == [3e9 - 256, 3e9 + 256]  # no wrap modulo 2**32


def test_float64_boxes_beyond_float32_are_refused_not_written_as_inf(make_batch):
    batch = make_batch()
    with pytest.raises(ValueError, match=r"xywhr\[1\] = .* does not fit float32"):
        nvds.attach_obbs(batch, batch.frames[0], xywhr=np.array([[10, 10, 4, 4, 0], [1e39, 10, 4, 4, 0]]))
    with pytest.raises(ValueError, match=r"scores\[0\] = .* does not fit float32"):
        nvds.attach_obbs(batch, batch.frames[0], xywhr=np.array([[10, 10, 4, 4, 0]], np.float32),
                         scores=np.array([1e300]))


def test_a_box_whose_bounds_leave_the_float32_range_is_refused(make_batch):
    batch = make_batch()
    x = np.array([[100, 100, 3e38, 3e38, 0.785]], np.float32)  # finite, but its AABB half-width is 4.2e38
    with pytest.raises(ValueError, match=r"xywhr\[0\] = .* bounding box leaves the float32 range"):
        nvds.attach_obbs(batch, batch.frames[0], xywhr=x)
    assert readback.pairs(batch.frames[0]) == []


@settings(max_examples=150, deadline=None)
@given(cx=st.floats(-F32_MAX, F32_MAX, width=32), w=st.floats(1.0, F32_MAX, width=32),
       h=st.floats(1.0, F32_MAX, width=32), angle=st.floats(-4.0, 4.0, width=32))
def test_a_box_is_written_exactly_when_its_polygons_bounds_fit_float32(cx, w, h, angle):
    """The writer skips the angle's trigonometry for boxes whose centre plus (w + h) / 2 stays under half the float32
    range; any box is still refused exactly when shapely's polygon of it has bounds (or a width / height of those
    bounds) beyond float32 (cases within 1e-6 of the limit, where rounding decides, are left out)."""
    import shapely.affinity
    import shapely.geometry

    poly = shapely.affinity.rotate(shapely.geometry.box(cx - w / 2, 10 - h / 2, cx + w / 2, 10 + h / 2), angle,
                                   origin=(cx, 10), use_radians=True)
    x0, y0, x1, y1 = poly.bounds
    values = [abs(x0), abs(y0), abs(x1), abs(y1), x1 - x0, y1 - y0]
    assume(all(abs(v - F32_MAX) > 1e-6 * F32_MAX for v in values))
    fits = all(v <= F32_MAX for v in values)
    x = np.array([[cx, 10, w, h, angle]], np.float32)
    with nvds.BatchMeta.create(1) as batch:
        frame = batch.add_frame(source_id=0, width=640, height=480, frame_num=0)
        if fits:  # written, or outside the frame and counted as filtered
            result = nvds.attach_obbs(batch, frame, xywhr=x, frame_size=(4e9, 4e9))
            assert result.written + result.filtered == 1
        else:
            with pytest.raises(ValueError, match=r"bounding box leaves the float32 range"):
                nvds.attach_obbs(batch, frame, xywhr=x)
            assert readback.pairs(frame) == []


def test_uint64_labels_beyond_int64_are_named_not_wrapped(make_batch):
    batch = make_batch()
    with pytest.raises(ValueError, match=r"labels\[0\] = 9223372036854775813: class ids must be in 0\.\.2\*\*31-1"):
        nvds.attach_obbs(batch, batch.frames[0], xywhr=np.ones((1, 5), np.float32) * 5,
                         labels=np.array([2**63 + 5], dtype=np.uint64))


@pytest.mark.parametrize("name, call, limit", [
    ("border_width", lambda b: nvds.attach_obbs(b, b.frames[0], xywhr=np.ones((1, 5), np.float32), border_width=2**40),
     r"0\.\.32"),  # nvdsosd's MAX_BORDER_WIDTH, well inside the C field
    ("width", lambda b: nvds.add_display_lines(b, b.frames[0], np.zeros((1, 4), np.float32), width=2**33),
     r"2\*\*31-1"),
])
def test_widths_too_large_for_their_c_field_say_the_range(make_batch, name, call, limit):
    with pytest.raises(ValueError, match=rf"{name} must be an int in .*{limit}"):
        call(make_batch())


def test_batch_attach_of_orientedboxes_joins_the_frames_and_names_a_refused_box():
    import torch

    from obbmeta import OrientedBoxes

    with nvds.BatchMeta.create(2) as batch:
        for i in range(2):
            batch.add_frame(source_id=i, width=100, height=100)
        good = OrientedBoxes(torch.tensor([[10.0, 10, 4, 4, 0]]), torch.tensor([0.9]), torch.tensor([0]))
        bad = OrientedBoxes(torch.tensor([[10.0, float("nan"), 4, 4, 0]]), torch.tensor([0.9]), torch.tensor([0]))
        with pytest.raises(ValueError, match=r"xywhr\[1\] = .* is not finite"):  # index over all frames' boxes
            nvds.attach_obbs_batch(batch, [good, bad])
        assert [len(readback.pairs(f)) for f in batch.frames] == [0, 0]  # refused before anything was written
        result = nvds.attach_obbs_batch(batch, [good, good])  # the joined path writes both frames
        assert result.per_frame == (1, 1) and [len(readback.pairs(f)) for f in batch.frames] == [1, 1]
