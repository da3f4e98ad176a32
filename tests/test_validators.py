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
