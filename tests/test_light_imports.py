"""The metadata side imports without torch (a DeepStream probe or a gst-python plugin should not pay for it)."""
import subprocess
import sys

import pytest


@pytest.mark.parametrize("module", ["obbmeta", "obbmeta.nvds", "obbmeta.nvds.display", "obbmeta.nvds.messages",
                                    "obbmeta.boxes", "obbmeta.palette", "obbmeta._validators", "obbmeta.geometry",
                                    "obbmeta.publish.messages",
                                    "obbmeta.servicemaker", "obbmeta.scenes", "obbmeta.demo", "obbmeta.osd",
                                    "obbmeta.osd.overlay", "obbmeta.config.nvinfer",
                                    "obbmeta.frames.preprocess", "obbmeta.track"])
def test_module_imports_without_torch(module):
    code = f"import sys, {module}; assert 'torch' not in sys.modules, 'torch imported'"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr


def test_every_public_module_is_reachable_from_the_package():
    """``obbmeta.<name>`` lazily imports each public module; a module added without it is found here."""
    import importlib.util
    import pkgutil

    import obbmeta

    public = {m.name for m in pkgutil.iter_modules(obbmeta.__path__) if not m.name.startswith("_")}
    public -= {"cli", "demo", "boxes", "letterbox", "schemas"}  # the CLI, two names (OrientedBoxes, Letterbox), data
    assert public <= set(obbmeta._MODULES), sorted(public - set(obbmeta._MODULES))
    assert all(importlib.util.find_spec(f"obbmeta.{m}") is not None for m in obbmeta._MODULES)


def test_the_examples_use_only_public_modules():
    """What a user copies from examples/ must not reach into obbmeta's private modules (``obbmeta.x._y``)."""
    import ast
    from pathlib import Path

    private = []
    for path in sorted((Path(__file__).parent.parent / "examples").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [f"{node.module}.{a.name}" for a in node.names] if isinstance(node, ast.ImportFrom) else []
            private += [f"{path.name}: {n}" for n in names
                        if n.startswith("obbmeta") and any(p.startswith("_") for p in n.split(".")[1:])]
    assert not private, private


def test_the_runtime_path_does_not_import_the_training_code():
    """Training (models.train, train_recognizer, loss, data) ships for who wants to retrain; running a model does not
    load it."""
    code = ("import sys; import obbmeta.demo, obbmeta.infer, obbmeta.secondary, obbmeta.models as m; "
            "m.load_demo_model('aerial'); m.load_recognizer; "
            "bad = [k for k in sys.modules if k.startswith(('obbmeta.models.train', 'obbmeta.models.loss', "
            "'obbmeta.models.data'))]; assert not bad, bad")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr


def test_numpy_backed_boxes_work_without_torch():
    """What a metadata reader returns (NumPy-backed OrientedBoxes) is indexed, joined and measured without torch."""
    code = ("import sys, numpy as np; from obbmeta import OrientedBoxes; "
            "b = OrientedBoxes(np.array([[5, 5, 4, 2, 0.3], [9, 9, 2, 2, 0]]), [0.9, 0.8], [1, 2], "
            "data={'k': [1, 2]}); "
            "b = OrientedBoxes.cat([b[b.scores > 0.85], b[[1]]]); b.polygons(); b.aabb(); b.inside(20, 20); "
            "b.numpy(); repr(b); assert b['k'].tolist() == [1, 2]; assert 'torch' not in sys.modules, 'torch imported'")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr


def test_the_tracker_tracks_numpy_backed_boxes_without_torch():
    """OrientedTracker.update returns the backing it is given: NumPy boxes in, NumPy boxes out, torch never loaded."""
    code = ("import sys, numpy as np; from obbmeta import OrientedBoxes; from obbmeta.track import OrientedTracker; "
            "t = OrientedTracker(); b = OrientedBoxes(np.array([[50, 50, 20, 10, 0.3]]), [0.9], [1]); "
            "out = [t.update(b) for _ in range(3)][-1]; t.update(b, detection_done=False); "
            "assert out.is_numpy and out.track_ids is not None; assert 'torch' not in sys.modules, 'torch imported'")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
