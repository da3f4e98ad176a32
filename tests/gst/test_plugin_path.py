"""The elements as a user meets them: GST_PLUGIN_PATH=$(python -m obbmeta.gst --plugin-path), gst-inspect-1.0 and
gst-launch-1.0 in fresh processes (the gst-python plugin loader runs the system Python, embedded), in a clean
environment (only PATH and HOME, as ``env -i`` gives), with the venv activated and with its python called by path."""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import obbmeta.gst

HERE = Path(__file__).parent
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
pytestmark = pytest.mark.skipif(shutil.which("gst-launch-1.0", path=SYSTEM_PATH) is None,
                                reason="gstreamer1.0-tools not installed")
TAG_CRITICAL = "gst_meta_api_type_has_tag"


def clean_env(home: Path, activated: bool) -> dict:
    """What `env -i PATH=... HOME=...` leaves, plus what `source .venv/bin/activate` adds when ``activated``."""
    env = {"PATH": SYSTEM_PATH, "HOME": str(home)}
    if activated:
        env["VIRTUAL_ENV"] = sys.prefix
        env["PATH"] = f"{Path(sys.executable).parent}:{SYSTEM_PATH}"
    return env


def printed_plugin_path(env: dict) -> str:
    """$(<this interpreter, by its path> -m obbmeta.gst --plugin-path), run in ``env``."""
    return subprocess.run([sys.executable, "-m", "obbmeta.gst", "--plugin-path"], capture_output=True, text=True,
                          env=env, check=True, timeout=120).stdout.strip()


@pytest.fixture(scope="module", params=["activated", "by_path"])
def env(request, tmp_path_factory):
    """GST_PLUGIN_PATH=$(python -m obbmeta.gst --plugin-path) and nothing else, in a clean environment."""
    e = clean_env(tmp_path_factory.mktemp("home"), request.param == "activated")
    e["GST_PLUGIN_PATH"] = printed_plugin_path(e)
    return e


def gst(tool, *args, env, timeout=180):
    return subprocess.run([tool, *args], capture_output=True, text=True, env=env, timeout=timeout)


@pytest.mark.parametrize("name", obbmeta.gst.ELEMENTS)
def test_gst_inspect_finds_each_element_with_only_the_printed_plugin_path(env, name):
    r = gst("gst-inspect-1.0", name, env=env)
    assert r.returncode == 0, r.stdout[-1000:] + r.stderr[-2000:]
    assert "obbmeta" in r.stdout and "memory:NVMM" in r.stdout


def test_gst_launch_runs_the_bundled_model_into_an_encoder_without_a_meta_tag_critical(env):
    # an encoder downstream of obbinfer looks at every meta's tags; NVIDIA's lookup used a tag quark it had not set yet
    r = gst("gst-launch-1.0", "-q", "videotestsrc", "num-buffers=8", "!", "video/x-raw,width=128,height=96", "!",
            "obbinfer", "model=obbmeta.models:aerial_detector", "input-size=128", "!", "obboverlay", "mode=draw", "!",
            "videoconvert", "!", "vp8enc", "deadline=1", "!", "fakesink", env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert TAG_CRITICAL not in r.stderr, r.stderr[-2000:]


def test_decodebin_upstream_of_obbinfer_gives_no_meta_tag_critical(env, tmp_path):
    video = tmp_path / "in.webm"
    made = gst("gst-launch-1.0", "-q", "videotestsrc", "num-buffers=8", "!", "video/x-raw,width=96,height=64", "!",
               "vp8enc", "deadline=1", "!", "webmmux", "!", "filesink", f"location={video}", env=env)
    assert made.returncode == 0, made.stderr[-2000:]
    r = gst("gst-launch-1.0", "-q", "filesrc", f"location={video}", "!", "decodebin", "!", "videoconvert", "!",
            "obbinfer", "model=obbmeta.models:aerial_detector", "input-size=96", "!", "videoconvert", "!", "vp8enc",
            "deadline=1", "!", "fakesink", env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert TAG_CRITICAL not in r.stderr, r.stderr[-2000:]


@pytest.mark.parametrize("model,message", [("obb_toy_models:cxx_error", "RuntimeError"),
                                           ("no_such_module_xyz:f", "cannot import module")])
def test_gst_launch_reports_a_failing_model_and_exits(env, model, message):
    # cxx_error fails inside torch's C++ code: the process must report it, not abort (see obbmeta._one_unwinder).
    # The model is loaded and warmed up at READY -> PAUSED, so the pipeline never prerolls (gst-launch exits 255).
    # The user's own model package comes on PYTHONPATH, as it would for any Python program.
    r = gst("gst-launch-1.0", "videotestsrc", "num-buffers=30", "!", "video/x-raw,format=RGBA,width=96,height=64",
            "!", "obbinfer", f"model={model}", "input-size=64", "!", "fakesink", env=dict(env, PYTHONPATH=str(HERE)))
    assert r.returncode == 255 and "Failed to set pipeline to PAUSED" in r.stderr, (r.returncode, r.stderr[-2000:])
    assert message in r.stdout + r.stderr


def test_each_plugin_file_declares_its_element_without_importing_torch(env):
    # the loader's Python, as gst-python runs it: each gst<name>.py gives the factory of element <name>
    code = ("import importlib, sys; sys.path.insert(0, sys.argv[1]); "
            "names = [importlib.import_module('gst' + n).__gstelementfactory__[0] for n in sys.argv[2:]]; "
            "assert 'torch' not in sys.modules, 'torch imported'; print(' '.join(names))")
    r = subprocess.run(["/usr/bin/python3", "-c", code, str(Path(env["GST_PLUGIN_PATH"]) / "python"),
                        *obbmeta.gst.ELEMENTS], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and r.stdout.split() == list(obbmeta.gst.ELEMENTS), r.stderr


def test_env_exports_only_gst_plugin_path_and_that_is_enough(tmp_path):
    e = clean_env(tmp_path, activated=False)
    out = subprocess.run([sys.executable, "-m", "obbmeta.gst", "--env"], capture_output=True, text=True, env=e,
                         check=True).stdout
    assert out.startswith("export GST_PLUGIN_PATH=") and "PYTHONPATH" not in out and len(out.splitlines()) == 1
    r = subprocess.run(["bash", "-c", f'eval "$({shlex.quote(sys.executable)} -m obbmeta.gst --env)"; '
                                      "gst-inspect-1.0 obbinfer"], capture_output=True, text=True, env=e, timeout=180)
    assert r.returncode == 0 and "obbmeta" in r.stdout, r.stderr[-2000:]


def test_python_path_holds_no_stdlib_lib_dynload_empty_entry_or_current_directory(tmp_path):
    import sysconfig

    out = subprocess.run([sys.executable, "-m", "obbmeta.gst", "--python-path"], capture_output=True, text=True,
                         check=True, cwd=tmp_path).stdout.strip().split(os.pathsep)
    stdlib = os.path.realpath(sysconfig.get_path("stdlib"))
    assert out and all(out)
    for p in out:
        real = os.path.realpath(p)
        assert real != stdlib and real != os.path.join(stdlib, "lib-dynload") and not p.endswith(".zip"), p
        assert real != os.path.realpath(tmp_path), p
    # what it holds is enough to import obbmeta from another directory with the standard library alone
    code = "import obbmeta.gst, sys; print(obbmeta.gst.__file__)"
    r = subprocess.run([sys.executable, "-I", "-S", "-c", f"import sys; sys.path[:0] = {out!r}; {code}"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr


def test_the_printed_folder_knows_this_interpreter_and_is_rewritten_only_when_changed(tmp_path):
    e = clean_env(tmp_path, activated=False)
    folder = Path(printed_plugin_path(e))
    config = json.loads((folder / "python" / obbmeta.gst.SITE_CONFIG).read_text())
    assert config["python"] == f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert config["site_folders"] == obbmeta.gst.site_folders() and config["executable"] == sys.executable
    assert sorted(p.name for p in (folder / "python").glob("gst*.py")) == sorted(
        f"gst{n}.py" for n in obbmeta.gst.ELEMENTS)
    mtimes = {p.name: p.stat().st_mtime_ns for p in (folder / "python").iterdir()}
    assert printed_plugin_path(e) == str(folder)
    assert {p.name: p.stat().st_mtime_ns for p in (folder / "python").iterdir()} == mtimes  # no registry rescan


def test_outside_a_venv_the_folder_goes_to_the_user_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "base_prefix", sys.prefix)  # what a non-venv interpreter looks like
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = Path(obbmeta.gst.plugin_path())
    assert folder.parent == tmp_path / "cache" / "obbmeta" / "gst-plugin"
    assert folder.name.startswith(f"python{sys.version_info[0]}.{sys.version_info[1]}-")
    assert (folder / "python" / "gstobbinfer.py").is_file()


def test_a_folder_made_for_another_python_version_says_so(tmp_path):
    folder = obbmeta.gst.make_plugin_folder(tmp_path / "plugin")
    config_file = folder / "python" / obbmeta.gst.SITE_CONFIG
    config = json.loads(config_file.read_text())
    config_file.write_text(json.dumps(dict(config, python="3.99")))
    e = dict(clean_env(tmp_path, activated=False), GST_PLUGIN_PATH=str(folder))
    r = gst("gst-inspect-1.0", "obbinfer", env=e)
    assert r.returncode != 0
    assert "was made for Python 3.99" in r.stderr and "plugin loader runs Python" in r.stderr


def test_help_names_all_four_elements():
    out = subprocess.run([sys.executable, "-m", "obbmeta.gst", "--help"], capture_output=True, text=True,
                         check=True).stdout
    assert all(name in out for name in obbmeta.gst.ELEMENTS), out


def test_without_a_writable_place_the_package_folder_is_printed(tmp_path, monkeypatch):
    blocked = tmp_path / "a file"
    blocked.write_text("")
    monkeypatch.setattr(obbmeta.gst, "_folder_candidates", lambda: [blocked / "venv", blocked / "cache"])
    assert obbmeta.gst.plugin_path() == str(obbmeta.gst.PLUGIN_DIR)


def test_the_package_folder_itself_works_with_the_venv_activated(tmp_path):
    # the fallback: no generated site list, so it finds the package's own folder and $VIRTUAL_ENV's site-packages
    e = dict(clean_env(tmp_path, activated=True), GST_PLUGIN_PATH=str(obbmeta.gst.PLUGIN_DIR))
    r = gst("gst-inspect-1.0", "obbinfer", env=e)
    assert r.returncode == 0 and "obbmeta" in r.stdout, r.stderr[-2000:]
