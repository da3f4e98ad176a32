"""obbmeta.ops.status: the CUDA core's status flags (one set of values, kernels/obb_status.h, checked against the host
library at load), the one translator of a status into an exception, and the overlap pool sizes."""
import ctypes
import dataclasses

import pytest
import torch

from obbmeta import geometry
from obbmeta.geometry import (
    STATUS_BOXES,
    STATUS_CLASSES,
    STATUS_CONSTANTS,
    STATUS_FLAGS,
    STATUS_OVERFLOW,
    STATUS_SCORES,
)
from obbmeta.ops import status
from obbmeta.ops.status import status_error


def test_the_host_library_exports_the_flags_python_uses():
    lib = geometry.geometry_library()  # loading it checks STATUS_CONSTANTS against the library's table
    names = (ctypes.c_char_p * 8)()
    values = (ctypes.c_int64 * 8)()
    count = lib.obbmeta_geometry_abi_table(names, values, 8)
    assert {n.decode(): v for n, v in zip(names[:count], values[:count])} == STATUS_CONSTANTS
    assert (STATUS_BOXES, STATUS_SCORES, STATUS_OVERFLOW, STATUS_CLASSES) == STATUS_FLAGS == (1, 2, 4, 8)


def test_a_library_whose_flags_differ_is_refused_at_load(monkeypatch):
    from obbmeta._native import StaleLibraryError

    wrong = dataclasses.replace(geometry.GEOMETRY, constants={**STATUS_CONSTANTS, "OBB_STATUS_OVERFLOW": 16})
    with pytest.raises(StaleLibraryError, match="OBB_STATUS_OVERFLOW"):
        wrong.open()


def test_no_flags_no_error():
    assert status_error(0) is None


def test_each_flag_names_what_the_caller_calls_the_values():
    named = {"boxes": "output (a candidate box)", "scores": "output (a candidate score)", "classes": "output (cls)"}
    cases = [
        (STATUS_BOXES, {}, ValueError, "^boxes contains NaN or inf; every box must be finite$"),
        (STATUS_BOXES, named, ValueError, r"^output \(a candidate box\) contains NaN or inf; every box must be "
                                          "finite$"),
        (STATUS_SCORES, {}, ValueError, "^scores contains NaN or inf$"),
        (STATUS_SCORES, named, ValueError, r"^output \(a candidate score\) contains NaN or inf$"),
        (STATUS_CLASSES, named, ValueError, r"^output \(cls\) is NaN, inf, negative or >= 2\*\*31"),
    ]
    for flags, names, kind, match in cases:
        error = status_error(flags, **names)
        assert isinstance(error, kind)
        with pytest.raises(kind, match=match):
            raise error


def test_the_first_problem_is_named_boxes_then_scores_then_classes_then_overflow():
    assert "boxes" in str(status_error(STATUS_BOXES | STATUS_SCORES | STATUS_OVERFLOW))
    assert "scores" in str(status_error(STATUS_SCORES | STATUS_CLASSES))
    assert "NaN, inf, negative" in str(status_error(STATUS_CLASSES | STATUS_OVERFLOW))


def test_nms_boxes_are_told_apart_nan_from_float64_overflow():
    nan = torch.tensor([[0.0, 0.0, float("nan"), 1.0, 0.0]], dtype=torch.float64)
    huge = torch.tensor([[1e200, 0.0, 1.0, 1.0, 0.0]], dtype=torch.float64)
    assert str(status_error(STATUS_BOXES, box_values=nan)) == "boxes contains NaN or inf; every box must be finite"
    assert "beyond +-1e+150" in str(status_error(STATUS_BOXES, box_values=huge))


def test_an_overflow_takes_the_callers_advice():
    nms = status_error(STATUS_OVERFLOW)
    assert isinstance(nms, RuntimeError)
    assert str(nms).endswith("; split the boxes (e.g. by label or image) into smaller calls")
    decode = status_error(STATUS_OVERFLOW, advice="pass a larger overlap_words")
    assert str(decode).startswith("the overlapping boxes need more candidate words than the pool held")
    assert str(decode).endswith("; pass a larger overlap_words")


def test_a_status_no_decoder_sets_is_named():
    with pytest.raises(ValueError, match=r"^PaddedDetections.status = 16 is not a status the decoders set \(0, or the "
                                         r"flags 1, 2, 4 and 8\)$"):
        raise status_error(16, name="PaddedDetections.status")


def test_the_first_pool_grows_to_what_a_device_needed_and_never_past_the_bound(monkeypatch):
    monkeypatch.setattr(status, "_pool_seen", {})
    cpu = torch.device("cpu")
    assert status.pool_for(cpu, 10**9) == status.POOL_FIRST
    assert status.pool_for(cpu, 100) == 100  # the worst case of these shapes is less
    status.remember_pool(cpu, status.POOL_FIRST * 3)
    status.remember_pool(cpu, 5)  # a smaller need does not shrink it
    assert status.pool_for(cpu, 10**9) == status.POOL_FIRST * 3
