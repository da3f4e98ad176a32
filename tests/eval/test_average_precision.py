"""average_precision() on precision/recall curves worked out by hand."""
import pytest

from obbmeta.eval import average_precision

# The textbook curve of test_evaluate: 5 ground truths, ranking TP FP TP FP FP TP FP.
PRECISION = [1, 1 / 2, 2 / 3, 1 / 2, 2 / 5, 1 / 2, 3 / 7]
RECALL = [0.2, 0.2, 0.4, 0.4, 0.4, 0.6, 0.6]


def test_all_point_is_the_area_under_the_precision_envelope():
    # envelope: 1 up to recall .2, 2/3 up to .4, 1/2 up to .6, then 0.
    assert average_precision(RECALL, PRECISION, "area") == pytest.approx(0.2 + 0.2 * 2 / 3 + 0.2 / 2, abs=1e-15)


def test_eleven_point_averages_the_envelope_at_tenths_of_recall():
    # r = 0, .1, .2 -> 1; .3, .4 -> 2/3; .5, .6 -> 1/2; .7 ... 1 -> 0.
    assert average_precision(RECALL, PRECISION, "voc07") == pytest.approx((3 + 4 / 3 + 1) / 11, abs=1e-15)


def test_eleven_point_recall_points_are_exact_tenths():
    # A recall of exactly 3/10 reaches the point r = 0.3 (np.arange(0, 1.1, 0.1) puts it one ulp higher).
    assert average_precision([3 / 10], [1.0], "voc07") == pytest.approx(4 / 11, abs=1e-15)
    assert average_precision([3 / 5], [1.0], "voc07") == pytest.approx(7 / 11, abs=1e-15)


def test_perfect_curve_gives_one_and_empty_curve_gives_zero():
    assert average_precision([0.5, 1.0], [1.0, 1.0], "area") == 1.0
    assert average_precision([0.5, 1.0], [1.0, 1.0], "voc07") == pytest.approx(1.0, abs=1e-15)
    assert average_precision([], [], "area") == 0.0 and average_precision([], [], "voc07") == 0.0


def test_precision_rising_later_lifts_earlier_recall_levels():
    # precision 1/2 at recall .5, then 2/3 at recall 1: the envelope is 2/3 throughout.
    assert average_precision([0.5, 1.0], [0.5, 2 / 3], "area") == pytest.approx(2 / 3, abs=1e-15)


def test_bad_curves_and_metrics_are_refused():
    with pytest.raises(ValueError, match="1-D arrays of one length"):
        average_precision([0.1, 0.2], [1.0], "area")
    with pytest.raises(ValueError, match="metric must be one of"):
        average_precision([0.1], [1.0], "11point")
