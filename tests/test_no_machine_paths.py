"""No file of the repository names a folder of the machine it was written or measured on, and the scripts that
write results and logs record portable paths."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# written in pieces so that this file does not match itself
MACHINE_FOLDERS = ["/" + "work" + "/", "/" + "root" + "/", "/" + "home" + "/"]


def test_no_tracked_file_holds_an_absolute_path_of_a_development_machine():
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    args = ["git", "grep", "-n", "-I"] + [a for p in MACHINE_FOLDERS for a in ("-e", p)]
    hits = subprocess.run(args, cwd=ROOT, capture_output=True, text=True).stdout.splitlines()
    assert not hits, "\n".join(hits[:20])


def test_benchmark_results_record_portable_paths(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import site

    import _common

    wheel = Path(site.getsitepackages()[0]) / "nvidia" / "deepstream_videodecode" / "_libs" / "libnvds_meta.so"
    assert _common.portable_path(wheel) == "<site-packages>/nvidia/deepstream_videodecode/_libs/libnvds_meta.so"
    assert _common.portable_path(ROOT / "benchmarks" / "results" / "x.json") == "<repo>/benchmarks/results/x.json"
    assert _common.portable_path("/opt/nvidia/deepstream/deepstream/lib/libnvds_meta.so").startswith("/opt/nvidia")
    assert not _common.RESULTS.is_absolute()  # what the scripts print after "wrote" names no machine folder
    assert _common.RESULTS.resolve() == ROOT / "benchmarks" / "results"
    sys.modules.pop("_common", None)
