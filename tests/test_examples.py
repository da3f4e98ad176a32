import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_pipeline_example_writes_a_video_and_reads_back_every_frame(tmp_path):
    pytest.importorskip("gi")
    out = tmp_path / "obb.webm"
    env = {"PYTHONPATH": str(ROOT / "tests" / "gst"), "PATH": "/usr/bin:/bin"}
    run = subprocess.run([sys.executable, str(ROOT / "examples" / "pipeline.py"), "--model", "obb_toy_models:toy",
                          "--class-names", "vehicle,ship,plane", "--frames", "12", "--width", "320", "--height", "240",
                          "--input-size", "160", "--output", str(out)],
                         capture_output=True, text=True, timeout=180, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    lines = [line for line in run.stdout.splitlines() if line.startswith("frame ")]
    assert [line.split(":")[0] for line in lines] == [f"frame {k}" for k in range(12)]
    assert out.stat().st_size > 1000 and out.read_bytes()[:4] == b"\x1a\x45\xdf\xa3"  # an EBML (WebM) file


def test_the_gst_launch_example_runs_through_gst_plugin_path(tmp_path):
    pytest.importorskip("gi")
    out = tmp_path / "cpu.webm"
    env = {"PYTHONPATH": str(ROOT / "tests" / "gst"), "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
           "GST_REGISTRY": str(tmp_path / "registry.bin"), "HOME": str(tmp_path)}
    run = subprocess.run(["bash", str(ROOT / "examples" / "pipeline_cpu.sh"), "obb_toy_models:toy", str(out)],
                         capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    assert out.stat().st_size > 1000


@pytest.mark.parametrize("scene", ["aerial", "document"])
def test_the_video_examples_run_with_the_bundled_models(tmp_path, scene):
    pytest.importorskip("gi")
    run = subprocess.run([sys.executable, str(ROOT / "examples" / f"{scene}_video.py"), "--frames", "6",
                          "--output", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    import json

    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["frames"] == 6 and summary["map50"] >= 0.8
