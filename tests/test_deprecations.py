"""Every public name renamed in the structural round still works, with a DeprecationWarning naming its successor."""
import importlib

import pytest


@pytest.mark.parametrize("module, old, new", [
    ("obbmeta.frames", "Layout", "SurfaceLayout"),
    ("obbmeta.nvds.layouts", "Layout", "MetaLayout"),
    ("obbmeta.nvds.obbs", "PALETTE", "PALETTE_RGBA"),
    ("obbmeta.nvds", "PALETTE", "PALETTE_RGBA"),
    ("obbmeta.palette", "PALETTE", "PALETTE_RGB"),
    ("obbmeta.osd", "PALETTE", "PALETTE_RGB"),
    ("obbmeta.decode.yolo_padded", "status_error", "padded_status_error"),
    ("obbmeta.track.association", "aabb_of", "aabb"),
    ("obbmeta.scenes.common", "wrap_half_turn", "wrap_angle"),
    ("obbmeta.track.angles", "PI", "math.pi"),
])
def test_a_renamed_name_warns_and_still_works(module, old, new):
    mod = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=rf"{module}.{old} is deprecated .*use .*{new}"):
        value = getattr(mod, old)
    assert value is not None


def test_the_renamed_functions_behave_as_their_successors():
    import numpy as np

    from obbmeta import geometry
    from obbmeta.scenes import common
    from obbmeta.track import association

    b = np.array([[10.0, 20.0, 8.0, 4.0, 0.5]])
    with pytest.warns(DeprecationWarning):
        np.testing.assert_array_equal(association.aabb_of(b), geometry.aabb(b))
    with pytest.warns(DeprecationWarning):
        assert common.wrap_half_turn(3.5) == geometry.wrap_angle(3.5)
