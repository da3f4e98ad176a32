import math

import numpy as np
import pytest
import reference
import shapely
from shapely.ops import unary_union

from obbmeta import OrientedBoxes
from obbmeta.scenes import aerial, class_names, frame, video
from obbmeta.scenes.aerial import AerialScene


def test_the_same_seed_gives_the_same_frame_and_ground_truth():
    a, b = aerial.aerial_frame(5), aerial.aerial_frame(5)
    assert np.array_equal(a.image, b.image)
    assert np.array_equal(a.boxes.xywhr.numpy(), b.boxes.xywhr.numpy())
    assert np.array_equal(a.boxes.labels.numpy(), b.boxes.labels.numpy())
    assert np.array_equal(a.track_ids, b.track_ids)
    assert not np.array_equal(a.image, aerial.aerial_frame(6).image)


@pytest.mark.parametrize("size", [256, (320, 192)])
def test_frames_are_rgb_uint8_with_oriented_boxes_centred_inside(size):
    for seed in range(4):
        f = frame("aerial", seed, size)
        w, h = (size, size) if isinstance(size, int) else size
        assert f.image.shape == (h, w, 3) and f.image.dtype == np.uint8
        assert isinstance(f.boxes, OrientedBoxes) and f.class_names == class_names("aerial")
        xywhr = f.boxes.xywhr.numpy()
        assert np.isfinite(xywhr).all()
        assert ((xywhr[:, 0] >= 0) & (xywhr[:, 0] < w) & (xywhr[:, 1] >= 0) & (xywhr[:, 1] < h)).all()
        assert (xywhr[:, 2:4] > 2).all()
        assert ((xywhr[:, 4] >= -math.pi / 2) & (xywhr[:, 4] < math.pi / 2)).all()
        assert len(f.track_ids) == len(f.boxes) == len(set(f.track_ids.tolist()))
        assert (f.boxes.scores == 1).all()


def test_every_class_appears_and_tanks_are_axis_aligned_squares():
    seen = set()
    for seed in range(40):
        f = aerial.aerial_frame(seed)
        labels = f.boxes.labels.numpy()
        seen |= set(labels.tolist())
        tanks = f.boxes.xywhr.numpy()[labels == aerial.TANK]
        assert np.array_equal(tanks[:, 2], tanks[:, 3]) and (tanks[:, 4] == 0).all()
    assert seen == set(range(len(aerial.CLASS_NAMES)))


def _drawn_mask(scene, t):
    """Pixels where the objects changed the ground (no sensor noise)."""
    img = scene.render(t, sensor_noise=False).image.astype(np.int16)
    ground = (np.clip(scene.ground, 0, 1) * 255 + 0.5).astype(np.int16)
    return np.abs(img - ground).max(axis=2) > 0


@pytest.mark.parametrize("seed", [0, 3, 7, 11])
def test_drawn_object_pixels_lie_inside_their_boxes_grown_by_one_pixel(seed):
    scene = AerialScene(seed, 256)
    for t in (0, 17):
        mask = _drawn_mask(scene, t)
        polys = [reference.rect(*row[:5]) for row in scene.object_boxes(t)]
        allowed = unary_union(polys).buffer(1.0)
        ys, xs = np.nonzero(mask)
        inside = shapely.contains_xy(allowed, xs + 0.5, ys + 0.5)
        assert inside.all(), \
            f"{(~inside).sum()} drawn pixels outside every box, e.g. {xs[~inside][:3]}, {ys[~inside][:3]}"


@pytest.mark.parametrize("seed", [0, 3, 7, 11])
def test_every_ground_truth_box_is_mostly_covered_by_its_drawn_object(seed):
    scene = AerialScene(seed, 256)
    mask = _drawn_mask(scene, 0)
    f = scene.render(0)
    for (cx, cy, w, h, a), label in zip(f.boxes.xywhr.tolist(), f.boxes.labels.tolist()):
        poly = reference.rect(cx, cy, w, h, a)
        x0, y0, x1, y1 = (int(v) for v in poly.bounds)
        if x0 < 0 or y0 < 0 or x1 >= 255 or y1 >= 255:
            continue  # partly outside the frame
        gy, gx = np.mgrid[y0:y1 + 1, x0:x1 + 1]
        inside = shapely.contains_xy(poly, gx + 0.5, gy + 0.5)
        # A cross-shaped plane fills about a third of its box, a circle pi/4 of its square, a car nearly all.
        floor = {aerial.PLANE: 0.2, aerial.TANK: 0.6}.get(label, 0.7)
        assert mask[gy[inside], gx[inside]].mean() >= floor


@pytest.mark.parametrize("seed", [1, 3, 5])
def test_track_ids_follow_one_object_at_constant_speed_and_turn_rate(seed):
    tracks = {}
    for f in video("aerial", seed, n_frames=30):
        for tid, row, label in zip(f.track_ids.tolist(), f.boxes.xywhr.tolist(), f.boxes.labels.tolist()):
            tracks.setdefault(tid, []).append((f.index, row, label))
    moving = 0
    for obs in tracks.values():
        assert len({label for _, _, label in obs}) == 1  # one class per track
        sizes = {(round(r[2], 4), round(r[3], 4)) for _, r, _ in obs}
        assert len(sizes) == 1  # one size per track
        steps = [math.hypot(b[1][0] - a[1][0], b[1][1] - a[1][1]) for a, b in zip(obs, obs[1:]) if b[0] == a[0] + 1]
        if steps and max(steps) > 0:
            moving += 1
            assert max(steps) - min(steps) < 1e-3  # equal chords: constant speed (and turn rate, on an arc)
            assert max(steps) < 5
    assert moving >= 1


def test_objects_enter_and_leave_the_frame_over_a_video():
    changed = 0
    for seed in range(6):
        frames = list(video("aerial", seed, n_frames=30))
        ids = [set(f.track_ids.tolist()) for f in frames]
        changed += any(a != b for a, b in zip(ids, ids[1:]))
    assert changed >= 2


def test_parking_rows_at_30_to_60_degrees_are_generated():
    degrees = []
    for seed in range(30):
        f = aerial.aerial_frame(seed)
        vehicles = f.boxes.xywhr.numpy()[f.boxes.labels.numpy() == aerial.VEHICLE]
        degrees += list(np.degrees(vehicles[:, 4]) % 90)
    degrees = np.array(degrees)
    assert ((degrees > 30) & (degrees < 60)).mean() > 0.25


@pytest.mark.parametrize("kwargs, error", [
    ({"seed": -1}, TypeError), ({"seed": 1.5}, TypeError), ({"seed": 0, "size": 16}, ValueError),
    ({"seed": 0, "size": "big"}, TypeError), ({"seed": 0, "scale": 0}, ValueError),
])
def test_bad_arguments_are_rejected_by_name(kwargs, error):
    with pytest.raises(error, match=next(k for k in ("scale", "size", "seed") if k in kwargs)):
        AerialScene(**kwargs)


def test_a_video_needs_at_least_one_frame():
    with pytest.raises(ValueError, match="n_frames"):
        list(aerial.aerial_video(0, n_frames=0))


def test_unknown_scene_names_are_rejected():
    with pytest.raises(ValueError, match="scene"):
        frame("satellite", 0)
