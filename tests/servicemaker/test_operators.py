"""obbmeta.servicemaker's operators on a test-only stand-in exposing pyservicemaker's Python surface on NVIDIA's real
libnvds_meta (standin_pyservicemaker.py), read back through obbmeta.nvds; and on the real pyservicemaker whenever it
imports."""
from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest
import readback
import torch
from shapely.geometry import Polygon

from obbmeta import OrientedBoxes, nvds, servicemaker

from . import standin_pyservicemaker as standin

if not nvds.available():
    pytest.skip(f"NVIDIA's libnvds_meta is not available:\n{nvds.describe()}", allow_module_level=True)

W, H = 640, 480
NAMES = ["plane", "ship"]


@pytest.fixture
def psm(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyservicemaker", standin)
    return standin


@pytest.fixture
def batch():
    b = nvds.BatchMeta.create(2)
    for k in range(2):
        b.add_frame(source_id=k, width=W, height=H, frame_num=k)
    yield b
    b.destroy()


def boxes():
    return OrientedBoxes(torch.tensor([[100.0, 100, 60, 20, 0.3], [630, 240, 40, 40, 0.7], [300, 300, 80, 30, -1.2],
                                       [50, 400, 30, 10, 2.0], [-100, -100, 10, 10, 0.0]]),
                         torch.tensor([0.9, 0.8, 0.7, 0.6, 0.5]), torch.tensor([0, 1, 1, 0, 0]))


def edges(xywhr):
    poly = OrientedBoxes(torch.tensor([xywhr]), torch.ones(1), torch.zeros(1, dtype=torch.long)).polygons()[0]
    pts = [tuple(p) for p in poly.tolist()]
    return pts, [(pts[k], pts[(k + 1) % 4]) for k in range(4)]


def test_the_detector_operator_writes_objects_and_lines_that_read_back_through_nvidias_library(psm, batch):
    calls = []

    def detect(frame_meta):
        calls.append(frame_meta.frame_number)
        return boxes() if frame_meta.source_id == 0 else None

    op = servicemaker.ObbDetectorOperator(detect, NAMES)
    assert isinstance(op, psm.BatchMetadataOperator)
    op.handle_metadata(psm.BatchMetadata(batch.address))
    assert calls == [0, 1] and op.written == 4  # the fifth box lies outside the frame
    f0, f1 = batch.frames
    got = sorted(readback.pairs(f0), key=lambda r: -r[0].confidence)
    assert len(got) == 4 and not readback.pairs(f1)
    for (info, obb), row, score, label in zip(got, boxes().xywhr.tolist(), boxes().scores.tolist(),
                                              boxes().labels.tolist()):
        assert info.object_id == nvds.UNTRACKED_OBJECT_ID and info.label == NAMES[label] and info.class_id == label
        assert info.confidence == pytest.approx(score)
        frame = Polygon([(0, 0), (W, 0), (W, H), (0, H)])
        x1, y1, x2, y2 = Polygon(edges(row)[0]).bounds
        want = (max(x1, 0), max(y1, 0), min(x2, W) - max(x1, 0), min(y2, H) - max(y1, 0))
        assert info.rect == pytest.approx(want, abs=1e-3) and frame.intersects(Polygon(edges(row)[0]))
        assert obb.source == "aabb"  # pyservicemaker cannot attach obbmeta's user meta: the angle is in the lines
    lines = nvds.read_display_lines(f0)
    assert len(lines) == 16  # 4 boxes x 4 edges: exactly one full display meta
    want_lines = sorted(tuple(int(min(max(round(v), 0), lim - 1)) for v, lim in zip((*p, *q), (W, H, W, H)))
                        for row in boxes().xywhr.tolist()[:4] for p, q in edges(row)[1])
    assert sorted(tuple(line[:4]) for line in lines) == want_lines


def test_more_than_16_lines_go_to_a_new_display_meta(psm, batch):
    many = OrientedBoxes(torch.tensor([[50.0 + 40 * k, 200, 20, 10, 0.1 * k] for k in range(9)]), torch.ones(9),
                         torch.zeros(9, dtype=torch.long))
    f0 = next(psm.BatchMetadata(batch.address).frame_items)
    assert servicemaker.write_obbs(psm.BatchMetadata(batch.address), f0, many) == 9
    assert len(nvds.read_display_lines(batch.frames[0])) == 36  # none dropped at the 17th


def test_write_obbs_skips_exactly_the_boxes_the_c_writer_skips(psm, batch):
    """A box whose AABB reaches into the frame but whose polygon does not is skipped by both writers."""
    rng = np.random.default_rng(11)
    xywhr = np.c_[rng.uniform(-80, 720, (300, 2)), rng.uniform(2, 120, (300, 2)), rng.uniform(-4, 4, 300)]
    xywhr = np.r_[xywhr, [[-10.0, -10.0, 80.0, 4.0, -np.pi / 4]]].astype(np.float32)  # AABB in, polygon out
    many = OrientedBoxes(torch.from_numpy(xywhr), torch.ones(len(xywhr)), torch.zeros(len(xywhr), dtype=torch.long))
    f0 = next(psm.BatchMetadata(batch.address).frame_items)
    written = servicemaker.write_obbs(psm.BatchMetadata(batch.address), f0, many, draw=False)
    c_writer = nvds.attach_obbs(batch, batch.frames[1], xywhr=xywhr, frame_size=(W, H))
    assert not c_writer.written_mask[-1]
    assert written == c_writer.written == len(readback.pairs(batch.frames[0])) == len(readback.pairs(batch.frames[1]))
    rects = [sorted(tuple(round(v, 1) for v in i.rect) for i, _ in readback.pairs(f)) for f in batch.frames]
    assert rects[0] == rects[1]  # the same boxes, with the same clipped AABB


def test_the_overlay_operator_draws_ds9_rotated_objects_as_their_edges(psm, batch):
    if not batch.layout.has_rotation_angle:
        pytest.skip("needs the DeepStream 9 layout (rotation_angle)")
    xywhr = np.array([[200, 150, 80, 30, 0.5], [400, 300, 50, 50, -0.2]], np.float32)
    nvds.attach_obbs(batch, batch.frames[0], xywhr=xywhr, labels=np.array([0, 1]), rotation_angle=True)
    nvds.attach_obbs(batch, batch.frames[1], xywhr=xywhr)  # AABB mode: nothing for this operator to draw
    op = servicemaker.ObbOverlayOperator()
    op.handle_metadata(psm.BatchMetadata(batch.address))
    assert op.drawn == 2 and not nvds.read_display_lines(batch.frames[1])
    got = sorted(tuple(line[:4]) for line in nvds.read_display_lines(batch.frames[0]))
    want = sorted(tuple(int(round(v)) for v in (*p, *q)) for row in xywhr.tolist() for p, q in edges(row)[1])
    assert np.abs(np.array(got) - np.array(want)).max() <= 1  # float32 rect + degrees round trip


def test_bad_boxes_name_the_expected_form(psm, batch):
    f0 = next(psm.BatchMetadata(batch.address).frame_items)
    with pytest.raises(TypeError, match="OrientedBoxes"):
        servicemaker.write_obbs(psm.BatchMetadata(batch.address), f0, [[1, 2, 3, 4, 5]])


def test_without_pyservicemaker_the_error_says_where_it_comes_from(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyservicemaker", None)
    with pytest.raises(ImportError, match="Service Maker"):
        servicemaker.ObbOverlayOperator()


def test_the_real_pyservicemaker_has_the_surface_obbmeta_uses():
    try:
        real = importlib.import_module("pyservicemaker")
    except ImportError:
        pytest.skip("pyservicemaker is not installed (DeepStream only)")
    assert issubclass(type(servicemaker.ObbOverlayOperator()), real.BatchMetadataOperator)
    for name in ("Color", "Line"):
        assert hasattr(real.osd, name)
    for name in ("x1", "y1", "x2", "y2", "width", "color"):
        assert hasattr(real.osd.Line(), name)
