"""The shared argument checks (obbmeta._validators): one rule for ints, numbers, flags, thresholds and colours."""
import numpy as np
import pytest

from obbmeta import _validators as v


@pytest.mark.parametrize("value", [True, False, 1.0, "1", None])
def test_int_in_range_refuses_bools_floats_and_others(value):
    with pytest.raises(ValueError, match=r"n must be an int >= 0, got "):
        v.int_in_range("n", value, 0)


def test_int_in_range_names_the_bounds_or_the_given_form():
    assert v.int_in_range("n", 5, 1, 5) == 5
    with pytest.raises(ValueError, match=r"n must be an int in \[1, 5\], got 6"):
        v.int_in_range("n", 6, 1, 5)
    with pytest.raises(TypeError, match=r"seed must be an int >= 0 \(a seed\), got -1"):
        v.int_in_range("seed", -1, 0, form="an int >= 0 (a seed)", error=TypeError)


def test_numpy_integers_count_only_where_asked():
    assert v.int_in_range("n", np.int64(3), 0, numpy_ints=True) == 3
    with pytest.raises(ValueError):
        v.int_in_range("n", np.int64(3), 0)


@pytest.mark.parametrize("value", [True, float("nan"), 0.0, 2.5, "1"])
def test_number_in_range_with_an_open_low_end(value):
    with pytest.raises(ValueError, match=r"t must be a number in \(0, 2\], got"):
        v.number_in_range("t", value, 0, 2, low_open=True)


@pytest.mark.parametrize("value", [0, 1, None, "yes"])
def test_flag_wants_true_or_false(value):
    with pytest.raises(TypeError, match="f must be True or False"):
        v.flag("f", value)


def test_threshold_takes_numbers_and_one_element_tensors_but_not_bools():
    torch = pytest.importorskip("torch")
    assert v.threshold("iou", torch.tensor(0.25)) == 0.25
    assert v.threshold("iou", np.float32(0.5)) == 0.5
    with pytest.raises(TypeError, match="iou must be a number"):
        v.threshold("iou", True)
    with pytest.raises(ValueError, match=r"iou must be in \[0, 1\]"):
        v.threshold("iou", float("nan"))


def test_one_colour_rule_for_metadata_and_overlay_palettes():
    assert v.rgba("c", (1, 0, np.float32(0.5), 1.0)) == (1.0, 0.0, 0.5, 1.0)
    for bad in [(True, 0, 0, 1), (0, 0, 0), (0, 0, 0, 1.5), "rgba"]:
        with pytest.raises(ValueError, match=r"c must be \(r, g, b, a\) with values in 0..1, got"):
            v.rgba("c", bad)


@pytest.mark.parametrize("bad", [np.True_, "0.5", b"0.5"])
def test_threshold_refuses_numpy_bools_and_strings(bad):
    with pytest.raises(TypeError, match="iou must be a number in"):
        v.threshold("iou", bad)


def test_threshold_refuses_a_bool_tensor():
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="iou must be a number in"):
        v.threshold("iou", torch.tensor(True))


@pytest.mark.parametrize("value, order, want", [
    (640, "wh", (640, 640)), ((640, 384), "wh", (640, 384)), ([np.int32(8), 9], "hw", (8, 9)),
    ("640", "wh", (640, 640)), ("640x384", "wh", (640, 384)), ("640,384", "wh", (640, 384)),
    (" 32X48 ", "hw", (32, 48)),
])
def test_size_pair_reads_an_int_a_pair_and_strings_in_the_callers_order(value, order, want):
    assert v.size_pair("s", value, 1, 1000, order=order, strings=True) == want


@pytest.mark.parametrize("value, error", [
    ((True, 640), ValueError), ((640.9, 384), ValueError), ((640.0, 384.0), ValueError), ((0, 4), ValueError),
    ((4, 1001), ValueError), ((1, 2, 3), ValueError), ("640x", ValueError), ("axb", ValueError), ("1x2x3", ValueError),
    (True, TypeError), (None, TypeError), (640.0, TypeError), ({"w": 1}, TypeError),
])
def test_size_pair_refuses_bools_floats_and_out_of_range_sides_by_name(value, error):
    with pytest.raises(error, match=r"s must be N, 'N' or 'WxH' or \(w, h\) with int sides in 1\.\.1000, got"):
        v.size_pair("s", value, 1, 1000, strings=True)


def test_size_pair_without_strings_refuses_text_as_a_type():
    with pytest.raises(TypeError, match=r"size must be N or \(h, w\) with int sides in 32\.\.64, got '40'"):
        v.size_pair("size", "40", 32, 64, order="hw")


def test_frame_size_takes_numbers_and_refuses_bools_and_non_pairs():
    assert v.frame_size("fs", (np.float32(640), 480)) == (640.0, 480.0)
    for bad in [(True, True), "ab", (1, 2, 3), None, (1, "2")]:
        with pytest.raises(TypeError, match=r"fs must be a \(width, height\) pair of numbers, got"):
            v.frame_size("fs", bad)
    for bad in [(0, 1), (1, float("inf")), (float("nan"), 1), (5, 11)]:
        with pytest.raises(ValueError, match=r"fs must be two positive finite numbers, at most 10 \(why\), got"):
            v.frame_size("fs", bad, 10, "10 (why)")


@pytest.mark.parametrize("bad", [{1: 2, 3: 4}, {0: 640, 1: 480}, {640, 480}, iter((640, 480)), b"ab"])
def test_frame_size_refuses_mappings_sets_and_other_non_sequences_by_name(bad):
    # a dict of two items is no (width, height) pair, even one keyed 0 and 1: not a KeyError, not a silent read
    with pytest.raises(TypeError, match=r"fs must be a \(width, height\) pair of numbers, got"):
        v.frame_size("fs", bad)


def test_frame_size_takes_tuples_lists_and_numpy_arrays():
    assert v.frame_size("fs", [640, 480]) == v.frame_size("fs", np.array([640.0, 480.0])) == (640.0, 480.0)


def test_size_pair_takes_a_numpy_integer_pair():
    assert v.size_pair("s", np.array([640, 384]), 1, 1000) == (640, 384)
    with pytest.raises(TypeError, match="s must be"):  # float sides are not a size
        v.size_pair("s", np.array([640.0, 384.0]), 1, 1000)
