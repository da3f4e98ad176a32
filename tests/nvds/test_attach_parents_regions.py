"""attach_obbs' parents (child objects, as a secondary detector or a preprocess ROI's object writes them) and
regions (nvinfer's clip-object-outside-roi), read back through NVIDIA's lists with the tests' own offsets."""
from __future__ import annotations

import numpy as np
import pytest
import reference
from shapely.geometry import box

from obbmeta import nvds

from . import raw


def rects(frame_address):
    out = {}
    for o in raw.objects_of(frame_address):
        out[raw.i32(o + raw.OBJ["class_id"])] = (raw.ptr(o + raw.OBJ["parent"]), tuple(
            raw.f32(o + raw.OBJ[k]) for k in ("rect_left", "rect_top", "rect_width", "rect_height")))
    return out


def test_objects_get_their_parent_pointer(make_batch):
    batch = make_batch(max_frames=1, frames=1)
    (f,) = batch.frames
    parents = nvds.attach_obbs(batch, f, xywhr=np.array([[50, 50, 40, 20, 0.0], [300, 200, 60, 30, 0.5]],
                                                        np.float32), scores=np.array([0.9, 0.8], np.float32),
                               labels=np.array([0, 1]))
    kids = nvds.attach_obbs(batch, f, xywhr=np.array([[45, 50, 10, 6, 0.1], [305, 205, 12, 8, 0.4],
                                                      [100, 100, 5, 5, 0.0]], np.float32),
                            scores=np.array([0.7, 0.6, 0.5], np.float32), labels=np.array([2, 3, 4]),
                            parents=[int(parents.addresses[0]), int(parents.addresses[1]), 0])
    got = rects(f.address)
    assert got[0][0] == got[1][0] == 0
    assert (got[2][0], got[3][0], got[4][0]) == (int(parents.addresses[0]), int(parents.addresses[1]), 0)
    assert kids.written == 3


@pytest.mark.parametrize("seed", range(20))
def test_a_region_keeps_the_boxes_that_meet_it_and_clips_their_rect_to_it(make_batch, seed):
    rng = np.random.default_rng(seed)
    batch = make_batch(max_frames=1, frames=1, width=640, height=480)
    (f,) = batch.frames
    n = 30
    x = np.c_[rng.uniform(0, 640, n), rng.uniform(0, 480, n), rng.uniform(4, 120, (n, 2)),
              rng.uniform(-3, 3, n)].astype(np.float32)
    region = tuple(float(v) for v in (rng.uniform(0, 300), rng.uniform(0, 200), rng.uniform(340, 640),
                                      rng.uniform(260, 480)))
    res = nvds.attach_obbs(batch, f, xywhr=x, scores=np.linspace(1, 0.1, n).astype(np.float32),
                           labels=np.arange(n), region=region)
    roi = box(*region)
    got = rects(f.address)
    for k in range(n):
        poly = reference.rect(*x[k].tolist())
        meets = poly.intersection(roi).area > 1e-3
        if not meets:
            assert k not in got or poly.intersection(roi).area < 1e-2
            continue
        assert k in got, k
        left, top, w, h = got[k][1]
        # the AABB of the polygon, clipped to the region (float32 rounding)
        x1, y1, x2, y2 = poly.bounds
        want = (max(x1, region[0]), max(y1, region[1]), min(x2, region[2]), min(y2, region[3]))
        assert np.allclose([left, top, left + w, top + h], want, atol=1e-2), (k, got[k], want)
    assert res.written + res.filtered == n


def test_a_region_outside_its_frame_is_refused_by_name(make_batch):
    batch = make_batch(max_frames=1, frames=1, width=64, height=48)
    (f,) = batch.frames
    for region in ((0, 0, 65, 10), (10, 10, 5, 20), (-1, 0, 10, 10)):
        with pytest.raises(ValueError, match=r"regions\[0\]"):
            nvds.attach_obbs(batch, f, xywhr=np.array([[5, 5, 2, 2, 0]], np.float32),
                             scores=np.array([0.5], np.float32), labels=np.array([0]), region=region)
