"""Only obbmeta.nvds writes DeepStream's structs: obbmeta.track uses its public calls (no nvds._core, no ctypes), and
the nvtracker stand-in (a test double) lives in obbmeta.nvds and is public as obbmeta.testing.NvTrackerStandIn."""
import ast
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import obbmeta

PACKAGE = Path(obbmeta.__file__).parent


def _imports(path: Path) -> list[str]:
    """Every imported name of a module, resolved against its package (``from ..nvds import _core`` ->
    ``obbmeta.nvds._core``)."""
    package = ".".join(("obbmeta", *path.relative_to(PACKAGE).parent.parts))
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - (node.level - 1)] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            out += [module] + [f"{module}.{a.name}" for a in node.names]
    return out


def test_obbmeta_track_and_testing_use_only_obbmeta_nvds_public_modules():
    users = [PACKAGE / "testing.py", *sorted((PACKAGE / "track").glob("*.py"))]
    private = [f"{p.relative_to(PACKAGE)}: {name}" for p in users for name in _imports(p)
               if name.startswith("obbmeta.nvds.") and any(part.startswith("_") for part in name.split(".")[2:])]
    assert not private, private


def test_obbmeta_track_holds_no_ctypes():
    users = [str(p.relative_to(PACKAGE)) for p in sorted((PACKAGE / "track").glob("*.py")) if "ctypes" in _imports(p)]
    assert not users, users


def test_obbmeta_testing_imports_without_torch():
    code = "import sys, obbmeta.testing; assert 'torch' not in sys.modules, 'torch imported'"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr


def test_the_stand_in_is_obbmeta_testing_s_and_the_old_names_warn():
    from obbmeta import testing, track

    assert "NvTrackerStandIn" in testing.__all__ and "NvTrackerStandIn" not in track.__all__
    with pytest.warns(DeprecationWarning, match="obbmeta.testing.NvTrackerStandIn"):
        from obbmeta.track import NvTrackerStandIn
    assert NvTrackerStandIn is testing.NvTrackerStandIn
    with pytest.warns(DeprecationWarning, match="obbmeta.testing.NvTrackerStandIn"):
        from obbmeta.track.standin import NvTrackerStandIn as old
    assert old is testing.NvTrackerStandIn
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert obbmeta.testing.NvTrackerStandIn is testing.NvTrackerStandIn
    with pytest.raises(AttributeError):
        track.NoSuchName  # noqa: B018


def test_follow_tracker_update_is_the_deprecated_name_of_update_batch(make_batch):
    import pytest

    from obbmeta.track import FollowTracker

    batch = make_batch()
    follow = FollowTracker()
    with pytest.warns(DeprecationWarning, match=r"FollowTracker.update is deprecated .*use .update_batch"):
        old = follow.update(batch)
    assert [r.objects for r in old] == [r.objects for r in FollowTracker().update_batch(batch)] == [0]
