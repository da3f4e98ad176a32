"""The elements as a user meets them: GST_PLUGIN_PATH=$(python -m obbmeta.gst --plugin-path), gst-inspect-1.0 and
gst-launch-1.0 in fresh processes (the gst-python plugin loader runs the system Python, embedded)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import obbmeta.gst

HERE = Path(__file__).parent
pytestmark = pytest.mark.skipif(shutil.which("gst-launch-1.0") is None, reason="gstreamer1.0-tools not installed")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    out = subprocess.run([sys.executable, "-m", "obbmeta.gst", "--plugin-path"], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == obbmeta.gst.plugin_path() and (Path(out) / "python" / "gstobbinfer.py").is_file()
    e = dict(os.environ)
    e["GST_PLUGIN_PATH"] = os.pathsep.join(filter(None, [out, os.environ.get("GST_PLUGIN_PATH")]))
    # the embedded Python sees this environment's packages (and the test models) through PYTHONPATH
    e["PYTHONPATH"] = os.pathsep.join([str(HERE), obbmeta.gst.python_path()])
    e["GST_REGISTRY"] = str(tmp_path_factory.mktemp("registry") / "registry.bin")
    return e


def gst(tool, *args, env, timeout=120):
    return subprocess.run([tool, *args], capture_output=True, text=True, env=env, timeout=timeout)


@pytest.mark.parametrize("name", obbmeta.gst.ELEMENTS)
def test_gst_inspect_finds_the_elements(env, name):
    r = gst("gst-inspect-1.0", name, env=env)
    assert r.returncode == 0, r.stderr
    assert "obbmeta" in r.stdout and "memory:NVMM" in r.stdout


def test_gst_launch_runs_obbinfer_and_obboverlay(env):
    r = gst("gst-launch-1.0", "-q", "videotestsrc", "num-buffers=30", "!", "video/x-raw,format=RGBA,width=96,height=64",
            "!", "obbinfer", "model=obb_toy_models:toy", "input-size=64", "!", "tee", "name=t",
            "t.", "!", "queue", "!", "obboverlay", "mode=draw", "!", "fakesink",
            "t.", "!", "queue", "!", "obboverlay", "!", "fakesink", env=env)
    assert r.returncode == 0, r.stderr[-2000:]


@pytest.mark.parametrize("model,message", [("obb_toy_models:cxx_error", "RuntimeError"),
                                           ("no_such_module_xyz:f", "cannot import module")])
def test_gst_launch_reports_a_failing_model_and_exits(env, model, message):
    # cxx_error fails inside torch's C++ code: the process must report it, not abort (see obbmeta._one_unwinder).
    # The model is loaded and warmed up at READY -> PAUSED, so the pipeline never prerolls (gst-launch exits 255).
    r = gst("gst-launch-1.0", "videotestsrc", "num-buffers=30", "!", "video/x-raw,format=RGBA,width=96,height=64",
            "!", "obbinfer", f"model={model}", "input-size=64", "!", "fakesink", env=env)
    assert r.returncode == 255 and "Failed to set pipeline to PAUSED" in r.stderr, (r.returncode, r.stderr[-2000:])
    assert message in r.stdout + r.stderr


def test_plugin_files_import_without_torch(env):
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import gstobbinfer, gstobboverlay, gstobbmessage; "
            "assert 'torch' not in sys.modules, 'torch imported'; print(gstobbinfer.__gstelementfactory__[0])")
    r = subprocess.run([sys.executable, "-c", code, str(Path(obbmeta.gst.plugin_path()) / "python")],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0 and r.stdout.strip() == "obbinfer", r.stderr


def test_env_prints_shell_exports():
    out = subprocess.run([sys.executable, "-m", "obbmeta.gst", "--env"], capture_output=True, text=True,
                         check=True).stdout
    assert "export GST_PLUGIN_PATH=" in out and "export PYTHONPATH=" in out
