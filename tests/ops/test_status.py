"""obbmeta.ops.status: the CUDA core's status flags (one set of values, kernels/obb_status.h, checked against the host
library at load)."""
import ctypes

import pytest

from obbmeta.ops import _core
from obbmeta.ops.status import (
    STATUS_BOXES,
    STATUS_CLASSES,
    STATUS_FLAGS,
    STATUS_OVERFLOW,
    STATUS_SCORES,
    check_status_flags,
)


def test_the_host_library_exports_the_flags_python_uses():
    lib = _core._lib()  # loading it runs check_status_flags
    out = (ctypes.c_int64 * 8)()
    count = lib.obbmeta_status_flags(out, 8)
    assert list(out[:count]) == list(STATUS_FLAGS) == [1, 2, 4, 8]
    assert (STATUS_BOXES, STATUS_SCORES, STATUS_OVERFLOW, STATUS_CLASSES) == STATUS_FLAGS


class _FakeLib:
    """A library whose obbmeta_status_flags writes `values` (a ctypes function's stand-in)."""

    def __init__(self, values):
        def export(out, n):
            for i, v in enumerate(values[:n]):
                out[i] = v
            return len(values)

        self.obbmeta_status_flags = export


def test_a_library_whose_flags_differ_is_refused_at_load():
    check_status_flags(_FakeLib([1, 2, 4, 8]))
    with pytest.raises(ImportError, match=r"disagree on the status flags: C \[1, 2, 8, 16\], Python \[1, 2, 4, 8\]"):
        check_status_flags(_FakeLib([1, 2, 8, 16]))
    with pytest.raises(ImportError, match="disagree"):
        check_status_flags(_FakeLib([1, 2, 4]))


def test_a_library_without_the_flags_is_out_of_date():
    with pytest.raises(ImportError, match="out of date .no obbmeta_status_flags.; rebuild"):
        check_status_flags(object())
