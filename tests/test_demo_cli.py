import json
import os
import subprocess
import sys

import pytest


def test_demo_runs_the_real_pipeline_and_scores_what_it_reads_back(tmp_path):
    """30 generated 256x256 aerial frames through appsrc ! obbinfer (bundled model) ! obboverlay ! vp8enc: the
    objects read back from the NvDsBatchMeta reach mAP50 >= 0.8 against the generator's ground truth."""
    pytest.importorskip("gi")
    out = tmp_path / "demo"
    run = subprocess.run([sys.executable, "-m", "obbmeta", "demo", "--frames", "30", "--output", str(out)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["frames"] == 30 and summary["fps"] > 0 and summary["map50"] >= 0.8
    lines = [json.loads(line) for line in (out / "detections.jsonl").read_text().splitlines()]
    assert [r["frame"] for r in lines] == list(range(30))
    assert sum(len(r["objects"]) for r in lines) == summary["objects"] > 0
    o = lines[0]["objects"][0]
    assert set(o) >= {"label", "confidence", "aabb", "obb", "polygon"} and len(o["polygon"]) == 4
    assert o["source"] == "user_meta"  # the rotated box came from obbmeta's user meta, through NVIDIA's lists
    assert (out / "annotated.webm").read_bytes()[:4] == b"\x1a\x45\xdf\xa3" and len(summary["outputs"]) >= 4
    from PIL import Image

    assert Image.open(out / "frame_0000.png").size == (256, 256)
    assert "mAP50" in run.stdout and str(out) in run.stdout


def test_demo_refuses_bad_arguments():
    run = subprocess.run([sys.executable, "-m", "obbmeta", "demo", "--frames", "0"], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 2 and "--frames must be in 1..100000" in run.stderr


def test_doctor_runs_as_a_module():
    doctor = subprocess.run([sys.executable, "-m", "obbmeta", "doctor"], capture_output=True, text=True, timeout=120)
    assert doctor.returncode == 0, doctor.stderr
    assert "C geometry core: loaded" in doctor.stdout


def test_cli_version():
    out = subprocess.run([sys.executable, "-m", "obbmeta", "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "obbmeta 0.1.0"


def test_doctor_exits_1_and_says_why_when_the_metadata_layer_is_unavailable(tmp_path):
    env = dict(os.environ, OBBMETA_NVDS_LIB_DIR=str(tmp_path))  # an explicit folder without libnvds_meta.so
    doctor = subprocess.run([sys.executable, "-m", "obbmeta", "doctor"], capture_output=True, text=True, timeout=120,
                            env=env)
    assert doctor.returncode == 1
    assert "1 problem(s)" in doctor.stdout and "obbmeta.nvds) is unavailable" in doctor.stdout


def test_doctor_says_cuda_was_disabled_on_purpose_rather_than_no_nvcc(monkeypatch, capsys):
    from obbmeta import cli

    monkeypatch.setattr(cli, "cuda_build_status", lambda: "not built: disabled on purpose (OBBMETA_CUDA=0 at install)")
    monkeypatch.setattr("obbmeta._cuda_lib.cuda_library", lambda: None)
    cli._doctor()
    out = capsys.readouterr().out
    assert "disabled on purpose (OBBMETA_CUDA=0 at install)" in out
    assert "nvcc" not in out.split("CUDA kernels")[1].split("\n")[0]
