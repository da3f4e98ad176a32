"""candidate_ious scores exactly the pairs that can overlap, with the exact rotated IoU (shapely) or the AABB IoU;
greedy_match takes the best pair first."""
import numpy as np
import pytest
import reference
from hypothesis import given, settings
from hypothesis import strategies as st
from shapely.geometry import box as shapely_box

from obbmeta.geometry import aabb
from obbmeta.track.association import candidate_ious, greedy_match


def boxes(n, seed):
    rng = np.random.default_rng(seed)
    return np.c_[rng.uniform(0, 200, (n, 2)), rng.uniform(10, 60, n), rng.uniform(5, 25, n), rng.uniform(-3, 3, n)]


def dense(ti, di, iou, shape):
    m = np.zeros(shape)
    m[ti, di] = iou
    return m


def test_rotated_candidates_are_the_exact_iou_of_every_pair():
    a, b = boxes(12, 0), boxes(9, 1)
    got = dense(*candidate_ious(a, b, "rotated"), (12, 9))
    np.testing.assert_allclose(got, reference.iou_matrix(a, b), atol=1e-5)


def test_aabb_candidates_are_the_iou_of_the_axis_aligned_boxes():
    a, b = boxes(12, 2), boxes(9, 3)
    want = np.array([[shapely_box(*p).intersection(shapely_box(*q)).area / shapely_box(*p).union(shapely_box(*q)).area
                      for q in aabb(b)] for p in aabb(a)])
    np.testing.assert_allclose(dense(*candidate_ious(a, b, "aabb"), (12, 9)), want, atol=1e-9)


def test_the_buffer_lengthens_both_sides_by_the_same_margin():
    """With a buffer, a pair is scored by the exact IoU (shapely) of both boxes with both sides lengthened by
    2 * buffer * sqrt(w * h): two parallel text lines 17.5 px apart across their 16 px height meet only then."""
    a = np.array([[100.0, 100.0, 400.0, 16.0, 0.5]])
    b = a + [[0.0, 20.0, 0.0, 0.0, 0.0]]
    assert candidate_ious(a, b, "rotated")[0].size == 0
    margin = 2 * 0.1 * np.sqrt(400.0 * 16.0)
    grown = lambda x: x + [[0.0, 0.0, margin, margin, 0.0]]  # noqa: E731
    ti, di, iou = candidate_ious(a, b, "rotated", buffer=0.1)
    assert (ti.tolist(), di.tolist()) == ([0], [0])
    np.testing.assert_allclose(iou, reference.iou_matrix(grown(a), grown(b))[0], atol=1e-5)


def test_labels_keep_classes_apart():
    a = np.array([[0.0, 0.0, 20, 10, 0.0]])
    ti, _, _ = candidate_ious(a, a, "rotated", np.array([0]), np.array([1]))
    assert ti.size == 0


def test_greedy_takes_the_best_pair_first_and_respects_the_threshold():
    ti, di, iou = np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1]), np.array([0.6, 0.7, 0.65, 0.1])
    mt, md = greedy_match(ti, di, iou, 0.2)
    assert sorted(zip(mt.tolist(), md.tolist())) == [(0, 1), (1, 0)]
    mt, md = greedy_match(ti, di, iou, 0.2, detection_free=np.array([True, False]))
    assert list(zip(mt.tolist(), md.tolist())) == [(1, 0)]


def _greedy_reference(pairs, threshold, track_free, det_free):
    """The rule as written in the docstring, in plain Python."""
    taken = []
    for score, t, d in sorted((-s, t, d) for t, d, s in pairs):
        if -score >= threshold and track_free[t] and det_free[d]:
            track_free[t] = det_free[d] = False
            taken.append((t, d))
    return taken


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7), st.sampled_from([0.0, 0.1, 0.3, 0.3, 0.5, 0.9, 1.0])),
                max_size=40, unique_by=lambda p: p[:2]),
       st.floats(0, 1), st.lists(st.booleans(), min_size=8, max_size=8), st.lists(st.booleans(), min_size=8,
                                                                                  max_size=8))
def test_greedy_match_takes_pairs_in_the_documented_order(pairs, threshold, tf, df):
    ti = np.array([p[0] for p in pairs], np.int64)
    di = np.array([p[1] for p in pairs], np.int64)
    iou = np.array([p[2] for p in pairs], np.float64)
    want_tf, want_df = list(tf), list(df)
    want = _greedy_reference(pairs, threshold, want_tf, want_df)
    track_free, det_free = np.array(tf), np.array(df)
    mt, md = greedy_match(ti, di, iou, threshold, track_free, det_free)
    assert list(zip(mt.tolist(), md.tolist())) == want
    assert track_free.tolist() == want_tf and det_free.tolist() == want_df  # the masks updated in place


def test_greedy_match_refuses_what_it_cannot_index():
    ti, di, iou = np.array([0, 3]), np.array([0, 1]), np.array([0.5, 0.6])
    with pytest.raises(ValueError, match=r"track_free must be a 1-D boolean array covering every index in the pairs "
                                         r"\(at least 4\)"):
        greedy_match(ti, di, iou, 0.2, track_free=np.ones(2, bool))
    with pytest.raises(ValueError, match="iou contains NaN"):
        greedy_match(ti, di, np.array([0.5, np.nan]), 0.2)
    with pytest.raises(ValueError, match="must be 1-D of one length"):
        greedy_match(ti, di[:1], iou, 0.2)
    with pytest.raises(ValueError, match="non-negative"):
        greedy_match(np.array([-1, 0]), di, iou, 0.2)
