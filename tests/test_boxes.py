import math
from types import SimpleNamespace

import numpy as np
import pytest
import reference
import torch
from hypothesis import given
from hypothesis import strategies as st

from obbmeta import Letterbox, OrientedBoxes


def make(rows, scores=None, labels=None):
    rows = torch.tensor(rows, dtype=torch.float32)
    n = len(rows)
    return OrientedBoxes(rows, torch.linspace(0.9, 0.5, n) if scores is None else torch.tensor(scores),
                         torch.arange(n) if labels is None else torch.tensor(labels))


def test_fields_are_cast_to_the_documented_dtypes():
    b = OrientedBoxes(torch.zeros(2, 5, dtype=torch.float64), np.array([0.5, 0.4]), [1, 2])
    assert b.xywhr.dtype == torch.float32 and b.scores.dtype == torch.float32 and b.labels.dtype == torch.int64
    assert len(b) == 2 and b.device == torch.device("cpu")


@pytest.mark.parametrize(
    "xywhr, scores, labels, error, match",
    [
        (torch.zeros(2, 4), torch.zeros(2), torch.zeros(2, dtype=torch.int64),
         ValueError, r"xywhr must have shape \(N, 5\)"),
        (torch.zeros(2, 5), torch.zeros(3), torch.zeros(2, dtype=torch.int64),
         ValueError, r"scores must have shape \(2,\)"),
        (torch.zeros(2, 5), torch.zeros(2), torch.zeros(2, 1, dtype=torch.int64),
         ValueError, r"labels must have shape \(2,\)"),
        (torch.zeros(2, 5, dtype=torch.int32), torch.zeros(2), torch.zeros(2, dtype=torch.int64),
         TypeError, "xywhr must be a floating-point"),
        (torch.zeros(2, 5), torch.zeros(2, dtype=torch.int64), torch.zeros(2, dtype=torch.int64),
         TypeError, "scores must be a floating-point"),
        (torch.zeros(2, 5), torch.zeros(2), torch.zeros(2), TypeError, "labels must be an integer"),
        (torch.zeros(2, 5), torch.zeros(2, device="meta"), torch.zeros(2, dtype=torch.int64),
         ValueError, "scores is on meta"),
        ("boxes", torch.zeros(2), torch.zeros(2), TypeError, "xywhr must be a torch.Tensor or array-like"),
    ],
)
def test_construction_rejects_bad_fields_with_clear_errors(xywhr, scores, labels, error, match):
    with pytest.raises(error, match=match):
        OrientedBoxes(xywhr, scores, labels)


def test_indexing_by_int_slice_mask_and_indices_returns_oriented_boxes():
    b = make([[i, 0, 1, 1, 0] for i in range(5)])
    assert b[1].xywhr[:, 0].tolist() == [1]
    assert b[-1].xywhr[:, 0].tolist() == [4]
    assert b[1:3].labels.tolist() == [1, 2]
    assert b[torch.tensor([True, False, True, False, False])].labels.tolist() == [0, 2]
    assert b[[4, 0]].labels.tolist() == [4, 0]
    with pytest.raises(IndexError, match=r"boolean mask must have shape \(5,\)"):
        b[torch.tensor([True, False])]


def test_integer_indexing_accepts_numpy_and_tensor_scalars_and_checks_bounds():
    b = make([[i, 0, 1, 1, 0] for i in range(3)])
    assert b[np.int64(2)].labels.tolist() == [2] and b[torch.tensor(1)].labels.tolist() == [1]
    assert b[-3].labels.tolist() == [0]
    for bad in (3, -4):
        with pytest.raises(IndexError, match="out of range for 3 boxes"):
            b[bad]
    with pytest.raises(TypeError, match="index must be"):
        b[1.5]


def test_empty_and_cat():
    e = OrientedBoxes.empty()
    assert len(e) == 0 and e.xywhr.shape == (0, 5)
    both = OrientedBoxes.cat([make([[0, 0, 1, 1, 0]]), e, make([[5, 5, 2, 2, 1]], labels=[7])])
    assert both.labels.tolist() == [0, 7] and len(OrientedBoxes.cat([])) == 0
    with pytest.raises(TypeError, match=r"items\[1\] must be OrientedBoxes"):
        OrientedBoxes.cat([e, "x"])


def test_methods_return_new_objects_and_never_mutate():
    b = make([[10, 10, 4, 2, 0.3]])
    before = b.xywhr.clone()
    b.rescale(Letterbox(2.0, 1, 1)), b.clip(12, 12), b.to("cpu"), b.polygons(), b.aabb()
    assert torch.equal(b.xywhr, before)


def test_polygons_aabb_area_numpy():
    b = make([[10, 20, 4, 2, 0.0]])
    assert b.polygons()[0].tolist() == [[8, 19], [12, 19], [12, 21], [8, 21]]
    assert b.aabb()[0].tolist() == [8, 19, 12, 21]
    assert b.area().tolist() == [8]
    arrays = b.numpy()
    assert isinstance(arrays.xywhr, np.ndarray) and arrays.labels.dtype == np.int64


def test_rescale_inverts_the_letterbox():
    src = make([[100, 50, 40, 10, 0.4]])
    lb = Letterbox(0.5, 3.0, 7.0)
    model = OrientedBoxes(torch.tensor([[100 * 0.5 + 3, 50 * 0.5 + 7, 20, 5, 0.4]]), src.scores, src.labels)
    assert torch.allclose(model.rescale(lb).xywhr, src.xywhr)


def test_letterbox_fit_matches_ultralytics_padding():
    lb = Letterbox.fit((1920, 1080), (640, 640))
    assert lb.scale == pytest.approx(1 / 3) and lb.pad_x == 0 and lb.pad_y == 140
    assert Letterbox.fit((1920, 1080), (640, 640), center=False).pad_y == 0
    with pytest.raises(ValueError, match=r"scale must be in \[1e-06, 1e\+06\]"):
        Letterbox(0.0)
    with pytest.raises(TypeError, match=r"source_size must be a \(width, height\) pair"):
        Letterbox.fit(1920, (640, 640))


frame_box = st.tuples(
    st.floats(-50, 150, width=32), st.floats(-50, 150, width=32), st.floats(1, 120, width=32),
    st.floats(1, 120, width=32), st.floats(-3.25, 3.25, width=32),
)


@given(frame_box)
def test_clip_gives_the_minimum_rectangle_around_the_part_inside_the_frame(b):
    from shapely.geometry import box as sbox

    W, H = 100.0, 80.0
    part = reference.rect(*b).intersection(sbox(0, 0, W, H))
    clipped = make([b]).clip(W, H).xywhr[0].double().tolist()
    got = reference.rect(*clipped)
    if part.area < 1e-3:
        return  # touching or outside: any degenerate answer inside the frame is fine, see the next test
    # It contains the inside part and has the area of shapely's minimum rotated rectangle around it.
    assert got.buffer(1e-3).contains(part)
    assert got.area == pytest.approx(part.minimum_rotated_rectangle.area, rel=1e-4, abs=1e-3)


def test_clip_outside_box_becomes_empty_and_inside_box_is_unchanged():
    b = make([[-100, -100, 10, 10, 0.3], [50, 40, 10, 6, 0.7], [5, 40, 20, 10, 0.0]])
    c = b.clip(100, 80)
    assert c.xywhr[0, 2:4].tolist() == [0, 0]
    assert torch.equal(c.xywhr[1], b.xywhr[1])
    assert c.xywhr[2].tolist() == pytest.approx([7.5, 40, 15, 10, 0])  # axis-aligned: classic clip
    assert c.nonempty().tolist() == [False, True, True]


def test_from_polygons():
    b = OrientedBoxes.from_polygons([[0, 0, 4, 0, 4, 2, 0, 2]], scores=[0.7], labels=[3])
    assert b.xywhr.tolist() == [[2, 1, 4, 2, 0]] and b.labels.tolist() == [3]


def test_from_ultralytics_accepts_results_obb_objects_and_data_tensors():
    xywhr = torch.tensor([[10.0, 20, 30, 5, 0.2]])
    obb = SimpleNamespace(xywhr=xywhr, conf=torch.tensor([0.8]), cls=torch.tensor([2.0]))
    for src in (obb, SimpleNamespace(obb=obb), torch.tensor([[10.0, 20, 30, 5, 0.2, 0.8, 2]]),
                torch.tensor([[10.0, 20, 30, 5, 0.2, 17, 0.8, 2]])):
        b = OrientedBoxes.from_ultralytics(src)
        assert torch.equal(b.xywhr, xywhr) and b.scores.tolist() == pytest.approx([0.8]) and b.labels.tolist() == [2]
    with pytest.raises(ValueError, match="result.obb is None"):
        OrientedBoxes.from_ultralytics(SimpleNamespace(obb=None))
    with pytest.raises(ValueError, match=r"\(N, 7\)"):
        OrientedBoxes.from_ultralytics(torch.zeros(3, 6))


def test_from_mmrotate_1x_and_0x():
    rb = SimpleNamespace(tensor=torch.tensor([[1.0, 2, 3, 4, 0.5], [5, 6, 7, 8, 0.1]]))
    sample = SimpleNamespace(pred_instances=SimpleNamespace(bboxes=rb, scores=torch.tensor([0.9, 0.2]),
                                                            labels=torch.tensor([4, 1])))
    b = OrientedBoxes.from_mmrotate(sample, score_thr=0.3)
    assert b.xywhr.tolist() == [[1, 2, 3, 4, 0.5]] and b.labels.tolist() == [4]
    legacy = [np.zeros((0, 6)), np.array([[1, 2, 3, 4, 0.5, 0.6]]), np.array([[5, 6, 7, 8, 0.1, 0.7]])]
    b = OrientedBoxes.from_mmrotate(legacy)
    assert b.labels.tolist() == [1, 2] and b.scores.tolist() == pytest.approx([0.6, 0.7])
    with pytest.raises(ValueError, match=r"result\[0\] must be an \(n, 6\)"):
        OrientedBoxes.from_mmrotate([np.zeros((2, 5))])
    with pytest.raises(TypeError, match="mmrotate 1.x DetDataSample"):
        OrientedBoxes.from_mmrotate(42)


def test_from_deepstream9_uses_the_unrotated_box_and_degrees():
    b = OrientedBoxes.from_deepstream9([[80, 45, 40, 10, 30.0]], scores=[0.5], labels=[1])
    assert b.xywhr[0].tolist() == pytest.approx([100, 50, 40, 10, math.radians(30)])


def tracked(n=4):
    return OrientedBoxes(torch.rand(n, 5) + 1, torch.rand(n), torch.arange(n), track_ids=torch.arange(10, 10 + n))


def test_track_ids_are_optional_and_cast_to_int64():
    assert OrientedBoxes(torch.rand(2, 5), torch.rand(2), torch.zeros(2, dtype=torch.int64)).track_ids is None
    boxes = OrientedBoxes(torch.rand(2, 5), torch.rand(2), torch.zeros(2, dtype=torch.int64), track_ids=[3, 4])
    assert boxes.track_ids.dtype == torch.int64 and boxes.track_ids.tolist() == [3, 4]
    assert "tracked" in repr(boxes)


@pytest.mark.parametrize("ids, error, match", [
    (torch.arange(3), ValueError, r"track_ids must have shape \(2,\)"),
    (torch.tensor([1.0, 2.0]), TypeError, "track_ids must be an integer tensor"),
    (torch.tensor([True, False]), TypeError, "track_ids must be an integer tensor"),
])
def test_track_ids_are_validated(ids, error, match):
    with pytest.raises(error, match=match):
        OrientedBoxes(torch.rand(2, 5), torch.rand(2), torch.zeros(2, dtype=torch.int64), track_ids=ids)


def test_track_ids_follow_indexing_to_rescale_and_clip():
    boxes = tracked()
    assert boxes[1].track_ids.tolist() == [11]
    assert boxes[torch.tensor([True, False, True, False])].track_ids.tolist() == [10, 12]
    assert boxes[[3, 0]].track_ids.tolist() == [13, 10]
    assert boxes.to("cpu").track_ids.tolist() == [10, 11, 12, 13]
    assert boxes.rescale(Letterbox(0.5, 1, 2)).track_ids.tolist() == [10, 11, 12, 13]
    assert boxes.clip(100, 100).track_ids.tolist() == [10, 11, 12, 13]


def test_cat_keeps_track_ids_and_refuses_to_mix_tracked_and_untracked():
    both = OrientedBoxes.cat([tracked(2), tracked(3)])
    assert both.track_ids.tolist() == [10, 11, 10, 11, 12]
    plain = OrientedBoxes(torch.rand(1, 5), torch.rand(1), torch.zeros(1, dtype=torch.int64))
    assert OrientedBoxes.cat([plain, plain]).track_ids is None
    with pytest.raises(ValueError, match=r"items\[1\] has no track_ids"):
        OrientedBoxes.cat([tracked(2), plain])


def test_from_ultralytics_keeps_the_track_id_column():
    data = torch.tensor([[10.0, 20.0, 4.0, 2.0, 0.1, 7.0, 0.9, 1.0]])
    assert OrientedBoxes.from_ultralytics(data).track_ids.tolist() == [7]
    assert OrientedBoxes.from_ultralytics(data[:, [0, 1, 2, 3, 4, 6, 7]]).track_ids is None


@given(frame_box)
def test_inside_is_the_frame_covering_the_exact_polygon(b):
    from hypothesis import assume
    from shapely.geometry import box as sbox

    assume(all(min(abs(x), abs(x - 100), abs(y), abs(y - 80)) > 1e-3 for x, y in reference.corners(b)))  # no tie
    assert make([b]).inside(100.0, 80.0).tolist() == [sbox(0, 0, 100.0, 80.0).covers(reference.rect(*b))]


_LETTERBOXES = st.builds(
    lambda sx, sy, px, py, uniform: Letterbox(sx, px, py, None if uniform else sy),
    st.floats(0.05, 20), st.floats(0.05, 20), st.floats(-500, 500), st.floats(-500, 500), st.booleans())


@given(st.lists(st.tuples(_LETTERBOXES, st.integers(0, 6)), min_size=1, max_size=5), st.integers(0, 2**31))
def test_rows_to_source_equals_each_frames_own_letterbox_bit_for_bit(frames, seed):
    """Several frames' boxes mapped at once (the padded decode's result path) equal each frame mapped under its own
    letterbox, to the bit, with uniform and two-scale letterboxes mixed."""
    from obbmeta.frames.letterbox import rows_to_source

    g = torch.Generator().manual_seed(seed)
    counts = [n for _, n in frames]
    x = torch.rand(sum(counts), 5, generator=g) * torch.tensor([1280.0, 720.0, 300.0, 200.0, 6.0]) + torch.tensor(
        [0.0, 0.0, 1.0, 1.0, -3.0])
    got = rows_to_source(x, [lb for lb, _ in frames], counts)
    want = torch.cat([lb.to_source(part) for (lb, _), part in zip(frames, x.split(counts))])
    assert got.dtype == want.dtype and torch.equal(got, want)


def _with_data():
    boxes = make([[10, 10, 4, 2, 0.0], [20, 20, 4, 2, 0.5], [30, 30, 4, 2, 1.0], [40, 40, 4, 2, -1.0]])
    return OrientedBoxes(boxes.xywhr, boxes.scores, boxes.labels,
                         data={"address": np.array([11, 22, 33, 44], np.uint64), "name": [b"a", b"b", b"c", b"d"],
                               "embedding": torch.arange(8.0).reshape(4, 2)})


@pytest.mark.parametrize("index, rows", [
    (1, [1]), (-1, [3]), (slice(1, 3), [1, 2]), ([3, 0], [3, 0]), (np.array([2]), [2]),
    (torch.tensor([True, False, False, True]), [0, 3]), (torch.tensor([2, 1]), [2, 1]),
])
def test_data_columns_follow_the_rows_they_belong_to(index, rows):
    boxes = _with_data()
    got = boxes[index]
    assert got.labels.tolist() == rows
    assert got.data["address"].tolist() == [11 * (r + 1) for r in rows]
    assert got.data["name"].tolist() == [b"abcd"[r:r + 1] for r in rows]
    assert isinstance(got.data["name"], np.ndarray) and isinstance(got.data["embedding"], torch.Tensor)
    assert got.data["embedding"].tolist() == [[2.0 * r, 2.0 * r + 1] for r in rows]


def test_data_is_kept_by_to_rescale_clip_and_cat():
    boxes = _with_data()
    for other in (boxes.to("cpu"), boxes.rescale(Letterbox(0.5, 1.0, 2.0)), boxes.clip(25.0, 25.0)):
        assert other.data["address"].tolist() == [11, 22, 33, 44]
        assert other.data["embedding"].shape == (4, 2)
    both = OrientedBoxes.cat([boxes[:1], boxes[2:]])
    assert both.data["address"].tolist() == [11, 33, 44] and both.data["embedding"][:, 0].tolist() == [0.0, 4.0, 6.0]
    assert "data=['address', 'embedding', 'name']" in repr(boxes) and OrientedBoxes.empty().data == {}


def test_data_of_the_wrong_form_is_refused_with_its_name():
    b = make([[10, 10, 4, 2, 0.0], [20, 20, 4, 2, 0.5]])
    with pytest.raises(ValueError, match=r"data\['id'\] must have one row per box \(2 rows"):
        OrientedBoxes(b.xywhr, b.scores, b.labels, data={"id": np.arange(3)})
    with pytest.raises(ValueError, match=r"data\['x'\] must have one row per box"):
        OrientedBoxes(b.xywhr, b.scores, b.labels, data={"x": np.float32(1.0)})
    with pytest.raises(TypeError, match="data must be a mapping"):
        OrientedBoxes(b.xywhr, b.scores, b.labels, data=[("id", [1, 2])])
    with pytest.raises(TypeError, match="data's names must be strings"):
        OrientedBoxes(b.xywhr, b.scores, b.labels, data={3: [1, 2]})
    tagged = OrientedBoxes(b.xywhr, b.scores, b.labels, data={"id": [1, 2]})
    with pytest.raises(ValueError, match=r"items\[1\] has data \[\] but items\[0\] has \['id'\]"):
        OrientedBoxes.cat([tagged, b])
    as_tensor = OrientedBoxes(b.xywhr, b.scores, b.labels, data={"id": torch.tensor([1, 2])})
    with pytest.raises(TypeError, match=r"data\['id'\] is a NumPy array in some items and a tensor in others"):
        OrientedBoxes.cat([tagged, as_tensor])


# --- NumPy backing ------------------------------------------------------------------------------------------------
finite_box = st.tuples(st.floats(-500, 500), st.floats(-500, 500), st.floats(0.5, 300), st.floats(0.5, 300),
                       st.floats(-4 * math.pi, 4 * math.pi))


def make_np(rows, scores=None, labels=None, **kw):
    rows = np.asarray(rows, np.float32).reshape(-1, 5)
    n = len(rows)
    return OrientedBoxes(rows, np.linspace(0.9, 0.5, n) if scores is None else scores,
                         np.arange(n) if labels is None else labels, **kw)


@given(st.lists(finite_box, min_size=1, max_size=6))
def test_numpy_polygons_and_aabb_are_shapelys_rectangle(rows):
    """NumPy-backed boxes: each polygon is the rectangle shapely builds from the centre, sides and angle, and the
    AABB is that rectangle's bounds."""
    from shapely import affinity
    from shapely.geometry import Polygon
    from shapely.geometry import box as sbox

    b = make_np(rows)
    polys, aabbs = b.polygons(), b.aabb()
    assert isinstance(polys, np.ndarray) and polys.dtype == np.float32 and polys.shape == (len(rows), 4, 2)
    assert isinstance(aabbs, np.ndarray) and aabbs.dtype == np.float32
    for (cx, cy, w, h, a), poly, bounds in zip(b.xywhr.astype(np.float64), polys, aabbs):
        rect = affinity.rotate(sbox(cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2), a, origin=(cx, cy),
                               use_radians=True)
        tol = 1e-3 * max(1.0, abs(cx), abs(cy), w, h)
        assert Polygon(poly).symmetric_difference(rect).area <= tol * (w + h) * 4
        np.testing.assert_allclose(bounds, rect.bounds, atol=tol)
        assert Polygon(poly).exterior.is_ccw  # clockwise on screen (y down) is counter-clockwise in shapely's axes


@given(st.lists(finite_box, max_size=6))
def test_numpy_and_torch_backings_agree(rows):
    t = make(rows) if rows else OrientedBoxes.empty()
    n = t.numpy()
    assert n.is_numpy and n.device is None and not t.is_numpy
    assert (n.xywhr.dtype, n.scores.dtype, n.labels.dtype) == (np.float32, np.float32, np.int64)
    np.testing.assert_allclose(n.polygons(), t.polygons().numpy(), atol=1e-3)
    np.testing.assert_allclose(n.aabb(), t.aabb().numpy(), atol=1e-3)
    np.testing.assert_array_equal(n.nonempty(1.0), t.nonempty(1.0).numpy())
    np.testing.assert_array_equal(n.inside(300, 200), t.inside(300, 200).numpy())
    back = n.to("cpu")
    assert not back.is_numpy and torch.equal(back.xywhr, t.xywhr) and torch.equal(back.labels, t.labels)
    clipped, clipped_t = n.clip(300, 200), t.clip(300, 200)
    assert clipped.is_numpy
    np.testing.assert_allclose(clipped.xywhr, clipped_t.xywhr.numpy(), atol=1e-5)
    lb = Letterbox(0.5, 3.0, 7.0)
    np.testing.assert_allclose(n.rescale(lb).xywhr, t.rescale(lb).xywhr.numpy(), atol=1e-5)


def test_numpy_boxes_index_cat_and_read_their_data_by_name():
    b = make_np([[10, 20, 4, 2, 0.0], [30, 40, 6, 3, 0.5], [50, 60, 8, 4, 1.0]], track_ids=np.array([7, -1, 9]),
                data={"address": np.array([11, 12, 13], np.uint64), "name": ["a", "b", "c"]})
    assert b["address"].tolist() == [11, 12, 13] and b["name"].tolist() == ["a", "b", "c"]
    with pytest.raises(KeyError, match=r"no data column 'nope'; these boxes have \['address', 'name'\]"):
        b["nope"]
    for index, rows in (([2, 0], [2, 0]), (np.array([False, True, True]), [1, 2]), (torch.tensor([1]), [1]),
                        (slice(1, None), [1, 2]), (-1, [2]), ([], [])):
        part = b[index]
        assert part.is_numpy and part.track_ids.tolist() == [[7, -1, 9][r] for r in rows]
        assert part["address"].tolist() == [[11, 12, 13][r] for r in rows]
        np.testing.assert_array_equal(part.xywhr, b.xywhr[rows])
    joined = OrientedBoxes.cat([b[:1], b[1:]])
    assert joined.is_numpy and np.array_equal(joined.xywhr, b.xywhr) and joined["name"].tolist() == ["a", "b", "c"]
    with pytest.raises(TypeError, match=r"items\[1\] is torch-backed but items\[0\] is NumPy-backed"):
        OrientedBoxes.cat([b, b.to("cpu")])
    with pytest.raises(IndexError, match=r"a boolean mask must have shape \(3,\)"):
        b[np.array([True, False])]
    assert repr(b) == "OrientedBoxes(n=3, numpy, tracked, data=['address', 'name'])"
    assert OrientedBoxes.empty(None).is_numpy and len(OrientedBoxes.empty(None)) == 0


def test_boxes_do_not_unpack_as_the_former_column_tuple():
    with pytest.raises(TypeError, match="OrientedBoxes is not iterable"):
        x, s, lab = make_np([[0, 0, 1, 1, 0]] * 3)


@pytest.mark.parametrize(
    "xywhr, scores, labels, error, match",
    [
        (np.zeros((2, 4), np.float32), np.zeros(2), np.zeros(2, np.int64), ValueError,
         r"xywhr must have shape \(N, 5\)"),
        (np.zeros((2, 5), bool), np.zeros(2), np.zeros(2, np.int64), TypeError, "xywhr must be a floating-point"),
        (np.zeros((2, 5)), np.zeros(3), np.zeros(2, np.int64), ValueError, r"scores must have shape \(2,\)"),
        (np.zeros((2, 5)), np.zeros(2), np.zeros(2), TypeError, "labels must be an integer array"),
        (np.zeros((2, 5)), torch.zeros(2), np.zeros(2, np.int64), TypeError,
         "scores is a torch.Tensor but xywhr is a NumPy array"),
        (np.zeros((2, 5)), np.array(["a", "b"]), np.zeros(2, np.int64), TypeError,
         "scores must be a floating-point or integer array"),
    ],
)
def test_numpy_columns_are_checked(xywhr, scores, labels, error, match):
    with pytest.raises(error, match=match):
        OrientedBoxes(xywhr, scores, labels)


def test_numpy_columns_are_cast_to_the_documented_dtypes():
    b = OrientedBoxes(np.zeros((2, 5), np.float64), [1, 0], np.array([1, 2], np.int32), np.array([3, 4], np.uint8))
    assert (b.xywhr.dtype, b.scores.dtype, b.labels.dtype, b.track_ids.dtype) == (np.float32, np.float32,
                                                                                   np.int64, np.int64)
