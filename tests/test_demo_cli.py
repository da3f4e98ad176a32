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
