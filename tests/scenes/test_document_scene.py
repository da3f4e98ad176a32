import math

import numpy as np
import pytest
import reference
import shapely
from shapely.ops import unary_union

from obbmeta.scenes import document, video
from obbmeta.scenes.document import DocumentScene


def test_the_same_seed_gives_the_same_page_and_ground_truth():
    a, b = document.document_frame(4), document.document_frame(4)
    assert np.array_equal(a.image, b.image)
    assert np.array_equal(a.boxes.xywhr.numpy(), b.boxes.xywhr.numpy())
    assert np.array_equal(a.track_ids, b.track_ids)
    assert not np.array_equal(a.image, document.document_frame(5).image)


def test_frames_hold_text_lines_and_titles_centred_inside_the_frame():
    counts = np.zeros(2, int)
    for seed in range(12):
        f = document.document_frame(seed, 256)
        assert f.image.shape == (256, 256, 3) and f.image.dtype == np.uint8
        xywhr = f.boxes.xywhr.numpy()
        assert ((xywhr[:, :2] >= 0) & (xywhr[:, :2] < 256)).all()
        assert ((xywhr[:, 4] >= -math.pi / 2) & (xywhr[:, 4] < math.pi / 2)).all()
        counts += np.bincount(f.boxes.labels.numpy(), minlength=2)
    assert counts[document.TEXT_LINE] > 100 and counts[document.TITLE] >= 3


def test_lines_come_at_several_angles_within_one_page():
    spread = []
    for seed in range(20):
        f = document.document_frame(seed, 256, perspective=False)
        a = f.boxes.xywhr.numpy()[:, 4]
        if len(a) > 3:
            d = np.abs((a[:, None] - a[None, :] + math.pi / 2) % math.pi - math.pi / 2)
            spread.append(d.max())
    assert max(spread) > math.radians(20)


@pytest.mark.parametrize("seed, perspective", [(0, False), (1, True), (2, False), (3, True), (8, True)])
def test_text_ink_lies_inside_its_line_boxes_grown_by_one_pixel(seed, perspective):
    scene = DocumentScene(seed, 256, perspective=perspective, blur=0.0)
    for t in (0, 9):
        ink = scene.ink(t) > 0.1
        allowed = unary_union([reference.rect(*row[:5]) for row in scene.line_boxes(t)]).buffer(1.0)
        ys, xs = np.nonzero(ink)
        assert len(xs) > 100
        inside = shapely.contains_xy(allowed, xs + 0.5, ys + 0.5)
        assert inside.all(), f"{(~inside).sum()} ink pixels outside every line box"


@pytest.mark.parametrize("seed", [0, 5])
def test_every_line_box_holds_ink(seed):
    scene = DocumentScene(seed, 256, blur=0.0)
    ink = scene.ink(0)
    for cx, cy, w, h, a, *_ in scene.line_boxes(0):
        poly = reference.rect(cx, cy, w, h, a)
        x0, y0, x1, y1 = (int(v) for v in poly.bounds)
        if x0 < 0 or y0 < 0 or x1 >= 255 or y1 >= 255:
            continue
        gy, gx = np.mgrid[y0:y1 + 1, x0:x1 + 1]
        inside = shapely.contains_xy(poly, gx + 0.5, gy + 0.5)
        assert ink[gy[inside], gx[inside]].mean() > 0.05


def test_track_ids_follow_each_line_as_the_camera_moves():
    frames = list(video("document", 2, n_frames=30))
    first = dict(zip(frames[0].track_ids.tolist(), frames[0].boxes.xywhr.tolist()))
    for f in frames[1:]:
        assert len(set(f.track_ids.tolist())) == len(f.track_ids)
        for tid, row in zip(f.track_ids.tolist(), f.boxes.xywhr.tolist()):
            prev = first.get(tid)
            if prev is not None:  # the camera moves a few pixels and a fraction of a degree per frame
                assert math.hypot(row[0] - prev[0], row[1] - prev[1]) < 6 * f.index + 6
        first.update(zip(f.track_ids.tolist(), f.boxes.xywhr.tolist()))
    assert any(not np.array_equal(frames[0].boxes.xywhr.numpy(), f.boxes.xywhr.numpy()) for f in frames[1:])


@pytest.mark.parametrize("kwargs, name", [({"seed": 0, "blur": -1.0}, "blur"), ({"seed": 0, "scale": 9}, "scale"),
                                          ({"seed": 0, "size": (10, 10)}, "size")])
def test_bad_arguments_are_rejected_by_name(kwargs, name):
    with pytest.raises(ValueError, match=name):
        DocumentScene(**kwargs)


def test_without_pillow_the_document_scene_says_what_to_install(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "PIL", None)
    with pytest.raises(ImportError, match="pip install pillow"):
        DocumentScene(0)
