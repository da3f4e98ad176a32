"""Only obbmeta.nvds writes DeepStream's structs: obbmeta.track uses its public calls (no nvds._core; ctypes only for
its own C core), and the nvtracker stand-in (a test double) lives in tests/, outside the package."""
import ast
from pathlib import Path

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


def test_obbmeta_track_uses_only_obbmeta_nvds_public_modules():
    users = sorted((PACKAGE / "track").glob("*.py"))
    private = [f"{p.relative_to(PACKAGE)}: {name}" for p in users for name in _imports(p)
               if name.startswith("obbmeta.nvds.") and any(part.startswith("_") for part in name.split(".")[2:])]
    assert not private, private


def test_obbmeta_track_holds_ctypes_only_for_its_own_core():
    """ctypes in obbmeta.track only in track/_core.py, which loads the tracker's own C library (kernels/track_cpu.c,
    no DeepStream struct) and imports nothing of obbmeta.nvds."""
    users = [str(p.relative_to(PACKAGE)) for p in sorted((PACKAGE / "track").glob("*.py")) if "ctypes" in _imports(p)]
    assert users == ["track/_core.py"], users
    assert not [name for name in _imports(PACKAGE / "track" / "_core.py") if name.startswith("obbmeta.nvds")]


def test_the_nvtracker_stand_in_is_a_test_double_outside_the_package():
    import nvtracker_standin

    from obbmeta import track

    assert "NvTrackerStandIn" not in track.__all__ and not hasattr(track, "NvTrackerStandIn")
    assert not (PACKAGE / "testing.py").exists() and not list(PACKAGE.rglob("*standin*.py"))
    assert Path(nvtracker_standin.__file__).parent.name == "tests"
