import os
import subprocess
import sys

import torch

from obbmeta import ops
from obbmeta.demo import TRUTH, run


def test_demo_recovers_every_ground_truth_box_and_nothing_else():
    lines = []
    dets = run(print_fn=lines.append)
    truth = torch.tensor([t[:5] for t in TRUTH])
    assert len(dets) == len(TRUTH)
    iou = ops.box_iou_rotated(dets.xywhr, truth)
    assert bool((iou.max(dim=0).values > 0.99).all())  # each truth box found
    assert sorted(dets.labels.tolist()) == sorted(t[5] for t in TRUTH)
    assert any("kept 5 of" in line for line in lines)
    assert any("20 lines in 2 display metas for 5 oriented boxes" in line for line in lines)


def test_cli_demo_and_doctor_run_as_modules():
    demo = subprocess.run([sys.executable, "-m", "obbmeta", "demo"], capture_output=True, text=True, timeout=120)
    assert demo.returncode == 0, demo.stderr
    assert "greedy rotated NMS" in demo.stdout
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
    assert "disabled on purpose (OBBMETA_CUDA=0 at install)" in out and "nvcc" not in out.split("CUDA kernels")[1].split("\n")[0]
