"""Lifetimes: a destroyed batch (destroy(), the end of a with block) can no longer be used through any wrapper —
its own, its frames', or another wrapper of the same address — and every use raises instead of touching freed
memory; wrappers keep what they need alive."""
from __future__ import annotations

import gc

import numpy as np
import pytest
import readback

from obbmeta import nvds
from obbmeta.osd import add_obb_overlay

BOX = np.array([[100, 100, 40, 20, 0.3]], np.float32)
USES = {
    "read_boxes": lambda batch, frame: nvds.read_boxes(frame),
    "read_boxes_batch": lambda batch, frame: nvds.read_boxes_batch(batch),
    "attach_obbs": lambda batch, frame: nvds.attach_obbs(batch, frame, xywhr=BOX),
    "add_display_lines": lambda batch, frame: nvds.add_display_lines(batch, frame, np.zeros((1, 4), np.float32)),
    "read_display_lines": lambda batch, frame: nvds.read_display_lines(frame),
    "add_obb_overlay": lambda batch, frame: add_obb_overlay(batch, frame),
    "frames": lambda batch, frame: batch.frames,
    "add_frame": lambda batch, frame: batch.add_frame(width=10, height=10),
    "copy": lambda batch, frame: batch.copy(),
    "address": lambda batch, frame: batch.address,
    "frame.address": lambda batch, frame: frame.address,
    "frame.size": lambda batch, frame: frame.size,
    "n_frames": lambda batch, frame: batch.n_frames,
    "locked": lambda batch, frame: batch.locked().__enter__(),
}


def written_batch() -> tuple[nvds.BatchMeta, nvds.FrameMeta]:
    batch = nvds.BatchMeta.create(2)
    frame = batch.add_frame(width=640, height=480)
    nvds.attach_obbs(batch, frame, xywhr=BOX)
    return batch, frame


@pytest.mark.parametrize("use", sorted(USES))
def test_every_use_after_destroy_raises(use):
    batch, frame = written_batch()
    batch.destroy()
    assert batch.released
    with pytest.raises(ValueError, match="was destroyed"):
        USES[use](batch, frame)


@pytest.mark.parametrize("use", ["read_boxes", "attach_obbs", "read_display_lines", "frames"])
def test_every_use_after_the_with_block_raises(use):
    with nvds.BatchMeta.create(1) as batch:
        frame = batch.add_frame(width=640, height=480)
        nvds.attach_obbs(batch, frame, xywhr=BOX)
    with pytest.raises(ValueError, match="was destroyed"):
        USES[use](batch, frame)


def test_a_wrapper_of_the_same_address_learns_that_the_owner_destroyed_it():
    batch, frame = written_batch()
    other = nvds.BatchMeta.from_address(batch.address)
    other_frame = other.frames[0]
    assert len(readback.pairs(other_frame)) == 1
    batch.destroy()
    with pytest.raises(ValueError, match="was destroyed"):
        readback.pairs(other_frame)
    with pytest.raises(ValueError, match="was destroyed"):
        nvds.attach_obbs(other, other_frame, xywhr=BOX)


def test_destroy_twice_and_repr_after_destroy_are_harmless():
    batch, frame = written_batch()
    batch.destroy()
    batch.destroy()
    assert "released" in repr(batch) and "released" in repr(frame)


def test_a_frame_keeps_its_batch_alive():
    frame = nvds.BatchMeta.create(1).add_frame(width=640, height=480)  # the batch wrapper is dropped at once
    gc.collect()
    nvds.attach_obbs(frame.batch, frame, xywhr=BOX)
    assert len(readback.pairs(frame)) == 1
    frame.batch.destroy()


def test_a_wrapper_from_the_address_keeps_the_owner_alive():
    batch, _ = written_batch()
    other = nvds.BatchMeta.from_address(batch.address)
    del batch
    gc.collect()
    assert not other.released and len(readback.pairs(other.frames[0])) == 1
    other._owner.destroy()


def test_a_copy_outlives_its_destroyed_source():
    batch, _ = written_batch()
    copy = batch.copy()
    batch.destroy()
    assert len(readback.pairs(copy.frames[0])) == 1
    copy.destroy()
