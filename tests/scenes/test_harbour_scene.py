import math

import numpy as np
import pytest
import shapely

from obbmeta.scenes import class_names, frame, harbour, video
from obbmeta.scenes.harbour import CONTAINER, HarbourScene

SHIP = 1


def _polygon(box):
    cx, cy, w, h, a = box
    c, s = math.cos(a), math.sin(a)
    return shapely.Polygon([(cx + u * c - v * s, cy + u * s + v * c)
                            for u, v in ((-w / 2, -h / 2), (w / 2, -h / 2), (w / 2, h / 2), (-w / 2, h / 2))])


def test_the_scene_is_listed_with_the_aerial_classes_and_container():
    assert class_names("harbour") == ("vehicle", "ship", "plane", "storage_tank", "container")
    assert CONTAINER == 4


def test_the_same_seed_gives_the_same_frame_and_truth():
    a, b = harbour.harbour_frame(3, 512, 2.0), frame("harbour", 3, 512, scale=2.0)
    assert np.array_equal(a.image, b.image)
    assert np.array_equal(a.boxes.xywhr.numpy(), b.boxes.xywhr.numpy())
    assert np.array_equal(a.parents, b.parents) and np.array_equal(a.track_ids, b.track_ids)


@pytest.mark.parametrize("seed", [0, 1, 2, 5, 1_000_000_000])
def test_every_container_lies_inside_its_ship_in_every_frame(seed):
    scene = HarbourScene(seed, 512, 2.0)
    for t in (0, 20):
        f = scene.render(t)
        labels, ids = f.boxes.labels.numpy(), f.track_ids
        boxes = f.boxes.xywhr.double().numpy()
        assert len(f.parents) == len(f.boxes) and len(set(ids.tolist())) == len(ids)
        ships = {int(ids[i]): _polygon(boxes[i]) for i in np.flatnonzero(labels == SHIP)}
        every_ship = {o[6]: _polygon(o[:5]) for o in scene.object_boxes(t) if o[5] == SHIP}
        n = 0
        for i in np.flatnonzero(labels == CONTAINER):
            parent = int(f.parents[i])
            assert parent in every_ship  # containers stand on ships only
            box = _polygon(boxes[i])
            assert every_ship[parent].buffer(1e-3).contains(box), (seed, t, i)
            assert abs(math.remainder(boxes[i, 4] - every_ship_angle(scene, parent, t), math.pi)) < 1e-5
            n += parent in ships
        assert (f.parents[labels != CONTAINER] == 0).all()
        assert n > 0 or not ships


def every_ship_angle(scene, track_id, t):
    return next(o[4] for o in scene.object_boxes(t) if o[6] == track_id)


def test_containers_do_not_overlap_and_ships_come_at_all_headings():
    angles = []
    for seed in range(12):
        f = harbour.harbour_frame(seed, 512, 2.0)
        labels = f.boxes.labels.numpy()
        boxes = f.boxes.xywhr.double().numpy()
        angles += [math.degrees(a) % 180 for a in boxes[labels == SHIP, 4]]
        polys = [_polygon(b) for b in boxes[labels == CONTAINER]]
        for k in range(len(polys) - 1):
            for q in polys[k + 1:k + 8]:
                assert polys[k].intersection(q).area < 1e-6
    hist = np.histogram(angles, bins=6, range=(0, 180))[0]
    assert (hist > 0).all(), hist


def test_containers_are_drawn_where_their_boxes_are():
    """The container's pixels differ from the bare deck: its box's inside is not the ship's deck colour."""
    scene = HarbourScene(2, 512, 2.0)
    f = scene.render(0, sensor_noise=False)
    labels = f.boxes.labels.numpy()
    img = f.image.astype(np.int16)
    assert (labels == CONTAINER).sum() > 5
    for cx, cy, *_ in f.boxes.xywhr[f.boxes.labels == CONTAINER].tolist()[:10]:
        x, y = int(cx), int(cy)
        if 2 <= x < 510 and 2 <= y < 510:
            patch = img[y - 1:y + 2, x - 1:x + 2].reshape(-1, 3)
            assert np.ptp(patch, axis=0).max() < 60  # a flat container colour around its centre


def test_a_video_moves_the_containers_with_their_ship():
    frames = list(video("harbour", 7, n_frames=3, size=512, scale=2.0))
    a, b = frames[0], frames[2]
    for tid in set(a.track_ids[a.boxes.labels.numpy() == CONTAINER].tolist()) & set(b.track_ids.tolist()):
        i = int(np.flatnonzero(a.track_ids == tid)[0])
        j = int(np.flatnonzero(b.track_ids == tid)[0])
        assert a.parents[i] == b.parents[j]
