"""The house's structure, read from the source (AST), so that a seam does not come back unnoticed:

* no private reach-across: a private module (``obbmeta.pkg._x``) is imported only from inside its package, and a
  private name (``_x`` that is not a module) is never imported from another module;
* one home per fact: one palette, one pixel-format table, one corner formula and one size reader;
* imports point down the data path: a low layer never imports a higher one;
* no second names: no deprecation shim (a module ``__getattr__`` or property serving an old name with a warning:
  nothing was released under the old names), and no test double in the package (the nvtracker stand-in lives in
  tests/);
* one op registry: every CUDA kernel launch runs inside an operator's CUDA kernel (``torch.ops.obbmeta.*``);
* one box type: every reader of the metadata returns ``OrientedBoxes``, and no public class of ``obbmeta.nvds``
  carries boxes of its own (the former ``FrameObjects``, ``ObjectInfo`` / ``Obb`` pairs, ``OrientedBoxesArrays``).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "obbmeta"


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        package = name if parts[-1] == "__init__" else name.rpartition(".")[0]
        yield path, name, package, ast.parse(path.read_text())


def _is_module(dotted: str) -> bool:
    rel = Path(*dotted.split("."))
    return (ROOT / rel).is_dir() or (ROOT / rel).with_suffix(".py").exists() or \
        any((ROOT / rel).parent.glob(f"{rel.name}.*.so"))


def _imports(tree: ast.AST, package: str):
    """(line, target module, imported name or None) for every obbmeta import of a module."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] == "obbmeta":
                for alias in node.names:
                    yield node.lineno, target, alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "obbmeta":
                    yield node.lineno, alias.name, None


def _private_reach_across() -> list[str]:
    found = []
    for path, name, package, tree in _modules():
        for line, target, imported in _imports(tree, package):
            full = target if imported is None or not _is_module(f"{target}.{imported}") else f"{target}.{imported}"
            parts = full.split(".")
            for k, part in enumerate(parts[1:], start=1):  # a private module: its package is parts[:k]
                owner = ".".join(parts[:k])
                if part.startswith("_") and not part.startswith("__") and not (
                        name == owner or name.startswith(owner + ".")):
                    found.append(f"{path.relative_to(ROOT)}:{line} imports {full}")
                    break
            if imported is not None and full == target and imported.startswith("_") \
                    and not imported.startswith("__") and target != name:
                found.append(f"{path.relative_to(ROOT)}:{line} imports the private name {imported} of {target}")
    return found


def test_no_private_reach_across_modules():
    found = _private_reach_across()  # no exception: obbmeta doctor reads the libraries through nvds / ops too
    assert not found, "\n".join(found)


def test_the_cli_reads_the_house_through_public_modules():
    """``obbmeta doctor`` reports what a user can ask for themselves: no private module or name of obbmeta's."""
    path = PACKAGE / "cli.py"
    private = [f"cli.py:{line} imports {target}{'.' + imported if imported else ''}"
               for line, target, imported in _imports(ast.parse(path.read_text()), "obbmeta")
               if any(p.startswith("_") and not p.startswith("__") for p in target.split(".")[1:])
               or (imported or "").startswith("_") and not (imported or "").startswith("__")]
    assert not private, private


def _assignments(tree: ast.AST) -> set[str]:
    return {t.id for node in ast.walk(tree) if isinstance(node, (ast.Assign, ast.AnnAssign))
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(t, ast.Name)}


def _functions(tree: ast.AST) -> set[str]:
    return {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


@pytest.mark.parametrize("fact, kind, home", [
    ("PALETTE_RGB", "name", "obbmeta/palette.py"),
    ("PALETTE_RGBA", "name", "obbmeta/palette.py"),
    ("CORNER_SIGNS", "name", "obbmeta/geometry.py"),
    ("SCENES", "name", "obbmeta/scenes/__init__.py"),
    ("HELDOUT_SEED", "name", "obbmeta/scenes/__init__.py"),
    ("NVBUF_COLOR_FORMATS", "name", "obbmeta/frames/pixels.py"),
    ("size_pair", "function", "obbmeta/_validators.py"),
    ("wrap_angle", "function", "obbmeta/geometry.py"),
    ("box_iou_rotated_host", "function", "obbmeta/geometry.py"),
    ("STATUS_FLAGS", "name", "obbmeta/geometry.py"),
    # the wire constants (kernels/nvds_meta.h, compared with the compiled library's table at load) and NVIDIA's limits
    ("OBB_VERSION", "name", "obbmeta/nvds/layouts.py"),
    ("OBB_RECT_CLIPPED", "name", "obbmeta/nvds/layouts.py"),
    ("OBB_PREDICTED", "name", "obbmeta/nvds/layouts.py"),
    ("SOURCES", "name", "obbmeta/nvds/layouts.py"),
    ("MAX_ELEMENTS_IN_DISPLAY_META", "name", "obbmeta/nvds/layouts.py"),
    ("MAX_LABEL_SIZE", "name", "obbmeta/nvds/layouts.py"),
    # one label cut (obj_label's 127 bytes on a character boundary)
    ("cut_label", "function", "obbmeta/nvds/_tables.py"),
    ("cut_bytes", "function", "obbmeta/nvds/_tables.py"),
])
def test_each_fact_has_one_home(fact, kind, home):
    homes = [str(path.relative_to(ROOT)) for path, _, _, tree in _modules()
             if fact in (_assignments(tree) if kind == "name" else _functions(tree))]
    assert homes == [home], homes


def test_no_other_corner_formula_or_wrap_in_python():
    """The corner and half-turn formulas are written in obbmeta.geometry (NumPy) and obbmeta.ops.convert (torch)
    only: a third copy is a hand-written ``(-w / 2, -h / 2)`` corner table or a ``% math.pi`` wrap elsewhere."""
    patterns = ("(-w / 2, -h / 2)", "(w / 2, -h / 2)", "+ math.pi / 2) % math.pi")
    found = [f"{path.relative_to(ROOT)}: {p}" for path, *_ in _modules() for p in patterns
             if p in path.read_text() and path.name not in ("geometry.py", "convert.py")]
    assert not found, found


# Layers, lowest first. A module may import its own layer and the layers below; the application layer (the demo,
# the CLI, the elements) may import anything. Within obbmeta: the box facts and checks; the ops, the box type and the
# wire format (written by nvds, read back by the consumer); decoding; the metadata; drawing; tracking; inference on
# frames; the elements.
LAYERS = [
    {"_validators", "_native", "_pointers", "_cuda_lib", "geometry", "palette", "conventions"},
    {"ops", "boxes", "frames", "publish"},
    {"decode", "config"},
    {"nvds", "eval"},
    {"osd"},
    {"track"},
    {"infer", "secondary", "scenes", "models"},
    {"servicemaker", "gst", "demo", "cli", "__main__"},
]


# The package's top level: a folder for each stage of the data path, in the path's order (obbmeta.__init__'s docstring,
# docs/structure.md), and beside them the one box type and its facts, the private plumbing, the pyservicemaker
# operators, and the tools around the path. A new top-level module is a decision: add it here and to the docs.
DATA_PATH = ["frames", "config", "infer", "decode", "ops", "nvds", "osd", "track", "secondary", "publish", "gst"]
BESIDE = {"boxes", "geometry", "conventions", "palette", "_validators", "_native", "_pointers", "_cuda_lib",
          "servicemaker", "eval", "scenes", "models", "demo", "cli", "__main__", "__init__"}


def test_the_top_level_is_the_data_path_in_folders():
    found = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
             if p.suffix == ".py" or (p / "__init__.py").exists()}
    assert found == set(DATA_PATH) | BESIDE, (sorted(found - set(DATA_PATH) - BESIDE),
                                              sorted(set(DATA_PATH) | BESIDE - found))
    assert [s for s in DATA_PATH if not (PACKAGE / s / "__init__.py").exists()] == []  # every stage is a folder
    import obbmeta

    listed = [m for m in obbmeta._MODULES if m in DATA_PATH]
    assert listed == DATA_PATH, "obbmeta._MODULES lists the stages in the data path's order"
    doc = obbmeta.__doc__
    assert sorted(DATA_PATH, key=lambda s: doc.index(f"``obbmeta.{s}``")) == DATA_PATH, \
        "obbmeta's docstring names the stages in the data path's order"


def _layer(module: str) -> int:
    top = module.split(".")[1] if "." in module else "__init__"
    return next((k for k, names in enumerate(LAYERS) if top in names), len(LAYERS))


def test_imports_point_down_the_data_path():
    up = []
    for path, name, package, tree in _modules():
        if name == "obbmeta":
            continue  # the package's lazy table names every module
        for line, target, _ in _imports(tree, package):
            if target != "obbmeta" and _layer(target) > _layer(name):
                up.append(f"{path.relative_to(ROOT)}:{line} ({name}) imports {target} from a higher layer")
    assert not up, "\n".join(up)


def test_no_deprecation_shim_serves_a_second_name():
    shims = []
    for path, _name, _package, tree in _modules():
        for node in ast.walk(tree):
            called = getattr(node, "func", None)
            if isinstance(node, ast.Call) and getattr(called, "attr", getattr(called, "id", "")) == "warn":
                given = (*node.args, *(k.value for k in node.keywords))
                if any(isinstance(a, ast.Name) and a.id == "DeprecationWarning" for a in given):
                    shims.append(f"{path.relative_to(ROOT)}:{node.lineno} warns DeprecationWarning")
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__getattr__"
                                                    for t in node.targets):
                shims.append(f"{path.relative_to(ROOT)}:{node.lineno} assigns a module __getattr__")
    assert not shims, "\n".join(shims)


def test_every_reader_returns_the_one_box_type():
    """The metadata readers (``read_boxes*``, ``obb_of_*``) are annotated to return OrientedBoxes, read as one
    (tests/nvds/test_read_boxes.py, test_pyds_bridge.py); no public class of obbmeta.nvds has a box column."""
    readers, forms = [], []
    for path, name, _package, tree in _modules():
        if not name.startswith("obbmeta.nvds"):
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith(("read_boxes", "obb_of_")):
                readers.append(node.name)
                returns = ast.unparse(node.returns) if node.returns else ""
                if "OrientedBoxes" not in returns:
                    forms.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} returns {returns or '?'}")
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                fields = {s.target.id for s in node.body if isinstance(s, ast.AnnAssign)
                          and isinstance(s.target, ast.Name)}
                if fields & {"xywhr", "corners", "boxes"}:
                    forms.append(f"{path.relative_to(ROOT)}:{node.lineno} class {node.name} carries boxes")
    assert sorted(readers) == ["obb_of_object", "obb_of_user_meta", "read_boxes", "read_boxes_batch"], readers
    assert not forms, "\n".join(forms)


def test_no_test_double_lives_in_the_package():
    doubles = [str(p.relative_to(ROOT)) for p in PACKAGE.rglob("*.py")
               if "standin" in p.stem or p.stem in ("testing", "fakes", "mocks")]
    assert not doubles, doubles
    assert (ROOT / "tests" / "nvtracker_standin.py").exists()


def _is_cuda_kernel(node: ast.AST) -> bool:
    """A function registered as an operator's CUDA kernel (``@op.register_kernel("cuda")``)."""
    return any(isinstance(d, ast.Call) and getattr(d.func, "attr", "") == "register_kernel"
               and any(isinstance(a, ast.Constant) and a.value == "cuda" for a in d.args)
               for d in getattr(node, "decorator_list", ()))


def test_every_cuda_launch_runs_inside_an_operator_kernel():
    """A kernel entry point is called (``launch(...)``) only by functions that an operator's CUDA kernel reaches: no
    public function launches beside the ``torch.ops.obbmeta.*`` registry."""
    found = []
    for path, _name, _package, tree in _modules():
        functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        calls = {f: {getattr(c.func, "id", getattr(c.func, "attr", "")) for c in ast.walk(f) if isinstance(c, ast.Call)}
                 for f in functions}
        direct = [f for f in functions if "launch" in calls[f] and f.name != "launch" and not _is_cuda_kernel(f)]
        launching = {f.name for f in direct}  # helpers that launch (kernels are not called by name)
        # the names the CUDA kernels call, transitively inside the module (kernels are told by their decorator, not
        # by their name: fakes and CPU kernels are also called _)
        reached = {name for f in functions if _is_cuda_kernel(f) for name in calls[f]}
        grow = True
        while grow:
            more = {name for f in functions if f.name in reached for name in calls[f]}
            grow = not more <= reached
            reached |= more
        for f in functions:
            if f in direct and f.name not in reached:
                found.append(f"{path.relative_to(ROOT)}: {f.name} launches outside an operator kernel")
            if calls[f] & launching and not _is_cuda_kernel(f) and f.name not in reached | launching:
                found.append(f"{path.relative_to(ROOT)}: {f.name} calls a launching function outside an operator")
    assert not found, "\n".join(found)


def test_every_operator_is_declared_in_the_one_registry():
    """``torch.ops.obbmeta.*`` is declared in obbmeta/ops/registry.py alone (a schema each): no module elsewhere
    defines an operator (custom_op, a Library, a schema), and what the dispatcher knows is what the registry lists."""
    import torch

    import obbmeta.decode  # noqa: F401  (registers the decode's kernels)
    import obbmeta.osd  # noqa: F401  (the draw's)
    from obbmeta.ops import registry

    found = []
    for path, name, _package, tree in _modules():
        if name == "obbmeta.ops.registry":
            continue
        for node in ast.walk(tree):
            called = getattr(node, "func", None)
            what = getattr(called, "attr", getattr(called, "id", ""))
            if isinstance(node, ast.Call) and what in ("custom_op", "Library", "define", "triton_op"):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} calls {what}")
    assert not found, "\n".join(found)
    dispatcher = {n.split("::", 1)[1] for n in torch._C._dispatch_get_all_op_names() if n.startswith("obbmeta::")}
    assert dispatcher == set(registry.OPERATORS)
