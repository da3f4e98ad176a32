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
