"""The package as a new user builds it: the sdist carries the whole test tree and the licence, the wheel's
metadata states Apache-2.0 and ships LICENSE, a stale library in an old build/ folder is rebuilt, never shipped,
and the wheel records why the CUDA kernels were not built."""
from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def checkout(tmp: Path) -> Path:
    """The tracked files of this checkout (what a clone holds), copied to tmp."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    src = tmp / "src"
    for name in filter(None, files):
        path = ROOT / name.decode()
        if path.is_file():
            (src / name.decode()).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, src / name.decode())
    return src


def pip_wheel(src: Path, out: Path, **env) -> Path:
    import os

    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", str(src), "-w",
                    str(out)], check=True, cwd=src, env=dict(os.environ, **env), capture_output=True)
    return next(out.glob("*.whl"))


def test_sdist_holds_every_test_folder_and_the_licence(tmp_path):
    src = checkout(tmp_path)
    code = "from setuptools import build_meta as b; print(b.build_sdist('sd'))"
    name = subprocess.run([sys.executable, "-c", code], cwd=src, check=True, capture_output=True, text=True).stdout
    names = tarfile.open(src / "sd" / name.strip().splitlines()[-1]).getnames()
    root = names[0].split("/")[0]
    tracked = subprocess.run(["git", "ls-files", "tests", "kernels"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    missing = [t for t in tracked if f"{root}/{t}" not in names]
    assert not missing
    assert f"{root}/LICENSE" in names and not any(n.endswith(".so") for n in names)


def test_wheel_states_the_licence_and_rebuilds_a_stale_library(tmp_path):
    src = checkout(tmp_path)
    with zipfile.ZipFile(pip_wheel(src, tmp_path / "w1", OBBMETA_CUDA="0")) as whl:
        good = whl.read(next(n for n in whl.namelist() if n.startswith("obbmeta/_geometry")))
    stale = next((src / "build").glob("lib*/obbmeta/_geometry*.so"))
    stale.write_bytes(b"a library of other sources")
    second = pip_wheel(src, tmp_path / "w2", OBBMETA_CUDA="0")
    with zipfile.ZipFile(second) as whl:
        names = whl.namelist()
        shipped = whl.read(next(n for n in names if n.startswith("obbmeta/_geometry")))
        metadata = whl.read(next(n for n in names if n.endswith("METADATA"))).decode()
        info = whl.read("obbmeta/_build_info.json").decode()
    assert shipped == good
    assert "License-Expression: Apache-2.0" in metadata
    assert any(n.endswith("licenses/LICENSE") for n in names)
    assert "disabled on purpose (OBBMETA_CUDA=0" in info


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (compile only)")
def test_a_changed_cuda_arch_list_rebuilds_the_kernels(tmp_path):
    src = checkout(tmp_path)
    one = zipfile.ZipFile(pip_wheel(src, tmp_path / "a", OBBMETA_CUDA="1", OBBMETA_CUDA_ARCHS="90"))
    two = zipfile.ZipFile(pip_wheel(src, tmp_path / "b", OBBMETA_CUDA="1", OBBMETA_CUDA_ARCHS="89"))
    assert "sm_90" in one.read("obbmeta/_build_info.json").decode()
    assert "sm_89" in two.read("obbmeta/_build_info.json").decode()
    cuda = lambda z: z.read(next(n for n in z.namelist() if n.startswith("obbmeta/_cuda")))  # noqa: E731
    assert cuda(one) != cuda(two)
