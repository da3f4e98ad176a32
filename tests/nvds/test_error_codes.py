"""The C writer's error codes have one Python home (nvds._core.WriterError), checked against the C library at load."""
import ctypes

import pytest

from obbmeta.nvds import _core, layouts


def test_the_loaded_c_library_lists_the_same_codes_in_the_same_order():
    core = _core.get()  # the check runs here; this test names it
    out = (ctypes.c_int32 * 32)()
    count = core.c.obbmeta_nvds_error_codes(out, 32)
    assert list(out[:count]) == [int(e) for e in _core.WriterError]


def test_a_library_whose_codes_differ_is_refused_at_load():
    class Drifted:
        @staticmethod
        def obbmeta_nvds_error_codes(out, n):
            for i, code in enumerate([-1, -2, -3, -4, -5, -6, -8]):
                out[i] = code
            return 7

    with pytest.raises(layouts.LayoutError, match="error codes"):
        _core.check_error_codes_against_c(Drifted())


def test_every_code_has_a_reason_and_unknown_codes_are_shown_as_numbers():
    assert all(e.reason for e in _core.WriterError)
    assert _core.error_reason(-3) == "a box is not finite or has w <= 0 or h <= 0"
    assert _core.error_reason(-99) == "-99"


# ---- writer_error: the one translation of these codes into exceptions, used by every writer and reader

E = _core.WriterError


@pytest.mark.parametrize("code, words", [
    (E.INVALID_BOX, "is not finite or has w <= 0 or h <= 0"),
    (E.LABEL, "is negative or has no class name"),
    (E.FOREIGN_FRAME, "is not an object meta of this batch"),
])
def test_an_entry_the_c_side_names_is_a_value_error_with_the_argument_the_value_and_the_code_s_words(code, words):
    error = _core.writer_error(code, "writer", "xywhr", 3, [1.0, 2.0, 0.0, 4.0, 0.0])
    assert type(error) is ValueError and str(error) == f"xywhr[3] = [1.0, 2.0, 0.0, 4.0, 0.0] {words}"


def test_the_caller_s_words_about_the_entry_replace_the_code_s():
    error = _core.writer_error(E.ARGUMENT, "object update", "objects", 1, "0x10", "is listed twice")
    assert type(error) is ValueError and str(error) == "objects[1] = 0x10 is listed twice"
    error = _core.writer_error(E.LABEL, "writer", "labels", 0, -1, ": class ids must be in 0..2**31-1")
    assert str(error) == "labels[0] = -1: class ids must be in 0..2**31-1"  # ':' follows the value directly


def test_argument_without_the_caller_s_words_is_a_runtime_error_naming_the_entry():
    """ARGUMENT has many causes in C: only the caller can say which one an entry has."""
    error = _core.writer_error(E.ARGUMENT, "classifier writer", "objects_or_frame", 2, "0x10")
    assert type(error) is RuntimeError
    assert str(error) == "obbmeta's C classifier writer failed: bad argument (objects_or_frame[2])"


def test_layout_names_the_argument_only_on_a_layout_without_rotation_angle():
    error = _core.writer_error(E.LAYOUT, "overlay writer", "native", layout=layouts.DS6_8,
                               detail="use the default line overlay")
    assert type(error) is ValueError
    assert str(error) == ("native=True needs the DeepStream 9 layout (NvOSD_RectParams.rotation_angle); the loaded "
                          f"library has {layouts.DS6_8.name}; use the default line overlay")
    error = _core.writer_error(E.LAYOUT, "writer", "rotation_angle", layout=layouts.DS9)  # an unknown layout id
    assert type(error) is RuntimeError and "unknown layout" in str(error)


@pytest.mark.parametrize("code, reason", [(E.POOL_MISMATCH, E.POOL_MISMATCH.reason), (E.NOT_READY, E.NOT_READY.reason),
                                          (-99, "-99")])
def test_every_other_code_is_a_runtime_error_with_its_reason(code, reason):
    error = _core.writer_error(code, "reader")
    assert type(error) is RuntimeError and str(error) == f"obbmeta's C reader failed: {reason}"
