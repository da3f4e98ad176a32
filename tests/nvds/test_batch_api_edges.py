"""Edges of the BatchMeta / attach API found in review: C field ranges and empty batches."""
import numpy as np
import pytest

from obbmeta import nvds


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
