"""add_display_lines: nvdsosd line segments in NvDsDisplayMeta, read back with the tests' own offsets."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from obbmeta import OrientedBoxes, nvds

from . import raw


def all_lines(frame):
    # display_meta_list is prepended: reverse for insertion order.
    return [line for d in raw.display_metas_of(frame.address)[::-1] for line in raw.lines_of(d)]


def test_the_display_pool_holds_ds9_display_metas(make_batch):
    batch = make_batch()
    assert raw.pool_element_size(batch.address, "display_pool") == raw.DISPLAY_SIZE


def test_lines_are_written_with_their_colour_and_width(make_batch):
    batch = make_batch(width=640, height=480)
    frame = batch.frames[0]
    segs = np.array([[10, 20, 300, 400], [5.4, 5.6, 100.5, 7.49]], np.float32)
    assert nvds.add_display_lines(batch, frame, segs, colors=[[1, 0, 0, 1], [0, 0.5, 1, 0.25]], width=3) == 2
    assert all_lines(frame) == [(10, 20, 300, 400, 3, (1.0, 0.0, 0.0, 1.0)),
                                (5, 6, 101, 7, 3, (0.0, 0.5, 1.0, 0.25))]


def test_every_16_lines_take_a_new_display_meta(make_batch):
    batch = make_batch()
    frame = batch.frames[0]
    segs = np.column_stack([np.arange(40), np.zeros(40), np.arange(40), np.full(40, 10)]).astype(np.float32)
    assert nvds.add_display_lines(batch, frame, segs) == 40
    displays = raw.display_metas_of(frame.address)
    assert sorted(raw.u32(d + raw.DISPLAY["num_lines"]) for d in displays) == [8, 16, 16]
    assert [line[0] for line in all_lines(frame)] == list(range(40))


def test_lines_are_clipped_to_the_frame_and_outside_ones_skipped(make_batch):
    batch = make_batch(width=100, height=80)
    frame = batch.frames[0]
    segs = np.array([[-50, 40, 150, 40], [200, 10, 300, 10], [50, -20, 50, 10]], np.float32)
    assert nvds.add_display_lines(batch, frame, segs) == 2
    assert [line[:4] for line in all_lines(frame)] == [(0, 40, 99, 40), (50, 0, 50, 10)]


def test_polygons_become_their_closed_edges(make_batch):
    batch = make_batch()
    frame = batch.frames[0]
    boxes = OrientedBoxes(torch.tensor([[100.0, 100.0, 40.0, 20.0, 0.0], [300.0, 200.0, 10.0, 10.0, 0.0]]),
                          torch.tensor([0.9, 0.8]), torch.tensor([0, 1]))
    n = nvds.add_display_lines(batch, frame, boxes.polygons(), colors=[[1, 0, 0, 1], [0, 1, 0, 1]])
    assert n == 8
    lines = all_lines(frame)
    assert [line[:4] for line in lines[:4]] == [(80, 90, 120, 90), (120, 90, 120, 110), (120, 110, 80, 110),
                                                (80, 110, 80, 90)]
    assert {line[5] for line in lines[:4]} == {(1.0, 0.0, 0.0, 1.0)}
    assert {line[5] for line in lines[4:]} == {(0.0, 1.0, 0.0, 1.0)}


def test_display_lines_survive_nvidias_batch_copy(lib, make_batch):
    batch = make_batch()
    frame = batch.frames[0]
    nvds.add_display_lines(batch, frame, np.array([[1, 2, 3, 4]] * 20, np.float32), (0, 1, 0, 1), 5)
    copy = lib.nvds_batch_meta_copy_func(batch.address, None)
    try:
        (copied_frame,) = raw.frames_of(copy)
        lines = [line for d in raw.display_metas_of(copied_frame) for line in raw.lines_of(d)]
        assert sorted(lines) == sorted(all_lines(frame)) and len(lines) == 20
    finally:
        lib.nvds_batch_meta_release_func(copy, None)


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(segments=np.zeros((2, 3), np.float32)), ValueError, r"segments must have shape \(M, 4\)"),
    (dict(segments=np.array([[0, 0, np.nan, 1]], np.float32)), ValueError, r"segments\[0\] = .* is not finite"),
    (dict(segments=np.array([[[0, 0], [9, 0], [9, 9]], [[0, 0], [5, np.nan], [5, 5]]], np.float32)), ValueError,
     r"segments\[1\] = \[\[0\.0, 0\.0\], \[5\.0, nan\], \[5\.0, 5\.0\]\] is not finite"),  # the polygon, not its edge
    (dict(segments=np.zeros((2, 4), np.float32), colors=np.zeros((3, 4))), ValueError, "colors must be one"),
    (dict(segments=np.zeros((1, 4), np.float32), colors=(2, 0, 0, 1)), ValueError, "values in 0..1"),
    (dict(segments=np.zeros((1, 4), np.float32), width=0), ValueError, r"width must be an int in 1\.\.2\*\*31-1"),
])
def test_bad_display_arguments_are_named(make_batch, kwargs, error, message):
    batch = make_batch()
    with pytest.raises(error, match=message):
        nvds.add_display_lines(batch, batch.frames[0], **kwargs)
    assert raw.display_metas_of(batch.frames[0].address) == []


@pytest.mark.parametrize("colors", ["red", ["r", "g", "b", "a"]])
def test_named_colours_are_refused_by_name(make_batch, colors):
    batch = make_batch()
    with pytest.raises(TypeError, match=r"colors must be \(r, g, b, a\)"):
        nvds.add_display_lines(batch, batch.frames[0], np.zeros((1, 4), np.float32), colors=colors)


def test_a_named_palette_is_refused_by_name(make_batch):
    batch = make_batch()
    with pytest.raises(TypeError, match="palette must be a sequence of"):
        nvds.attach_obbs(batch, batch.frames[0], xywhr=np.zeros((1, 5), np.float32) + 1, palette="red")
