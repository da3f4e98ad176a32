"""Raw pointer ints (the pyds convention) are checked before anything is read through them: a wrong int raises a
ValueError naming it, never a segfault; right ones keep working."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest
import readback

from obbmeta import nvds

BOX = np.array([[100, 100, 40, 20, 0.3]], np.float32)
ZEROS = ctypes.create_string_buffer(4096)  # readable memory that holds no DeepStream struct
UNMAPPED = 0x10  # the first page is never mapped


@pytest.mark.parametrize("address, error, match", [
    (-1, ValueError, "positive address"), (0, ValueError, "positive address"), (2**64, ValueError, "positive address"),
    (UNMAPPED, ValueError, "readable memory"), (ctypes.addressof(ZEROS), ValueError, "not point to an NvDsBatchMeta"),
    (True, TypeError, "must be an int"), (1.5, TypeError, "must be an int"),
])
def test_from_address_refuses_what_is_no_batch_meta(address, error, match):
    with pytest.raises(error, match=match):
        nvds.BatchMeta.from_address(address)


@pytest.mark.parametrize("address, match", [(-7, "positive address"), (UNMAPPED, "readable memory"),
                                            (ctypes.addressof(ZEROS), "not point to an NvDsFrameMeta")])
def test_readers_refuse_a_frame_int_that_is_no_frame_meta(address, match):
    with pytest.raises(ValueError, match=match):
        readback.pairs(address)
    with pytest.raises(ValueError, match=match):
        nvds.read_display_lines(address)


@pytest.mark.parametrize("address", [-5, UNMAPPED, ctypes.addressof(ZEROS)])
def test_writers_refuse_a_frame_int_that_is_not_a_frame_of_the_batch(make_batch, address):
    batch = make_batch()
    with pytest.raises(ValueError, match="frame address"):
        nvds.attach_obbs(batch, address, xywhr=BOX)
    assert readback.pairs(batch.frames[0]) == []


def test_a_frame_of_another_batch_given_as_an_int_is_refused(make_batch):
    a, b = make_batch(), make_batch()
    with pytest.raises(ValueError, match="is not a frame of the batch"):
        nvds.attach_obbs(a, b.frames[0].address, xywhr=BOX)


def test_pointer_ints_of_real_metadata_still_work(make_batch):
    batch = make_batch()
    frame_address = batch.frames[0].address
    assert nvds.attach_obbs(batch.address, frame_address, xywhr=BOX).written == 1
    assert len(readback.pairs(frame_address)) == 1
    assert len(readback.pairs(frame_address, batch.address)) == 1
    assert nvds.FrameMeta(frame_address, None).address == frame_address


@pytest.mark.parametrize("address, match", [(-3, "positive address"), (UNMAPPED, "readable memory"),
                                            (ctypes.addressof(ZEROS), "not a live GstBuffer")])
def test_from_gst_buffer_refuses_an_int_that_is_no_gst_buffer(address, match):
    with pytest.raises(ValueError, match=match):
        nvds.BatchMeta.from_gst_buffer(address)
