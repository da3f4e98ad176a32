"""`obbmeta demo` / `obbmeta doctor` on inputs and environments at their edges: every argument the demo accepts
runs its generator, every one it refuses is one argparse error line (exit status 2), doctor counts what the demo
needs, and frames at the detector's max-det cap are said."""
import json
import math
import subprocess
import sys

import pytest
from test_demo_cli import doctor_lines, make_video, needs_gst, obbmeta_cli

from obbmeta import demo
from obbmeta.scenes import SCALES, SCENES


def argparse_error(run, prog="obbmeta demo") -> str:
    """The run stopped with argparse's exit status 2 and one error line (after the usage), no traceback."""
    assert run.returncode == 2, (run.returncode, run.stderr[-3000:])
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    errors = [line for line in run.stderr.splitlines() if line.startswith(f"{prog}: error: ")]
    assert len(errors) == 1 and run.stderr.rstrip().endswith(errors[0]), run.stderr[-3000:]
    return errors[0]


@pytest.fixture
def fake_pipeline(monkeypatch):
    """demo.run with the real generator but no GStreamer: the frames are made and checked, nothing detected."""
    import torch

    seen = []

    def run_pipeline(frames, output, *, width, height, input_size, **kw):
        rows = []
        for k, image in enumerate(frames):
            assert image.shape == (height, width, 3) and image.dtype.name == "uint8"
            truth = frames.truth[k]
            rows.append({"frame": k, "pts": k, "boxes": truth[torch.zeros(len(truth), dtype=torch.bool)],
                         "objects": []})
        assert input_size % 32 == 0 and 32 <= input_size <= demo.MAX_INPUT_SIZE
        seen.append((width, frames.scale, len(rows)))
        return {"objects": rows, "pngs": [], "seconds": 1.0, "frames": len(rows), "capped": 0, "warnings": []}

    monkeypatch.setattr(demo, "check_environment", lambda args: None)
    monkeypatch.setattr(demo, "run_pipeline", run_pipeline)
    return seen


@pytest.mark.parametrize("scene", SCENES)
def test_every_size_and_scale_the_demo_accepts_generates_its_frames(scene, fake_pipeline, tmp_path, capsys):
    """--size at its edges (64; where the default scale, size / 256 brought into the scene's range, meets the range's
    ends: 128 for the document scene, 1024) with the default scale and with --scale at both ends of the range: the
    scene's own generator makes the frames (beyond 1024 the scales are those of 1024; 4096 itself is left out, a
    frame there takes seconds)."""
    pytest.importorskip("PIL")
    lo, hi = SCALES[scene]
    cases = [(size, scale) for size in (64, 65, 127, 129, 256, 1023, 1025) for scale in (None, lo, hi)]
    for size, scale in cases:
        args = ["--scene", scene, "--size", str(size), "--frames", "2", "--output", str(tmp_path / "o")]
        assert demo.main(args + ([] if scale is None else ["--scale", repr(scale)])) == 0, (size, scale)
        made = fake_pipeline[-1]
        assert made[0] == size and made[2] == 2
        assert lo <= made[1] <= hi and made[1] == (scale or min(max(size / 256, lo), hi))
    assert len(fake_pipeline) == len(cases)
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["frames"] == 2 and summary["frames_at_max_det"] == 0


@pytest.mark.parametrize("scene", SCENES)
def test_a_scale_outside_the_scenes_range_is_one_argparse_error(scene, fake_pipeline, capsys):
    lo, hi = SCALES[scene]
    for value in (lo - 0.01, hi + 0.01, 0.25 if lo > 0.25 else 0.1, 16.0, math.nan, math.inf, -1.0, 0.0):
        with pytest.raises(SystemExit) as exc:
            demo.main(["--scene", scene, "--size", "64", "--scale", repr(value)])
        assert exc.value.code == 2, value
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert err.startswith(f"obbmeta demo: error: --scale must be in {lo:g}..{hi:g} for the {scene} scene"), err
    assert not fake_pipeline  # refused before anything was generated


@pytest.mark.parametrize("args, message", [
    (["--scale", "16", "--size", "64"], "--scale must be in 0.25..4 for the aerial scene, got 16"),
    (["--scene", "document", "--scale", "0.25"], "--scale must be in 0.5..4 for the document scene, got 0.25"),
    (["--seed", "-1000000001"], "--seed must be >= 0"),
    (["--max-det", "-1"], "--max-det must be in 0..1000000"),
])
def test_the_demo_refuses_out_of_range_arguments_in_one_line(args, message):
    run = subprocess.run([sys.executable, "-m", "obbmeta", "demo", *args], capture_output=True, text=True,
                         timeout=120)
    assert message in argparse_error(run)


def test_the_video_examples_check_scale_against_their_own_scene():
    from pathlib import Path

    example = Path(__file__).resolve().parents[1] / "examples" / "document_video.py"
    run = subprocess.run([sys.executable, str(example), "--scale", "0.25"], capture_output=True, text=True,
                         timeout=120)
    assert "--scale must be in 0.5..4 for the document scene" in argparse_error(run, prog="examples/document_video.py")


def test_the_document_demo_runs_at_the_smallest_size(tmp_path):
    """`obbmeta demo --scene document --size 64` (once a traceback from the generator: the default scale 64 / 256
    is below the document scene's range) through the real pipeline."""
    pytest.importorskip("gi")
    out = tmp_path / "doc"
    run = obbmeta_cli("demo", "--scene", "document", "--size", "64", "--frames", "1", "--output", str(out))
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["frames"] == 1 and summary["input_size"] == 128  # 64 px at scale 0.5: the model sees scale 1


# --- doctor --------------------------------------------------------------------------------------------------------
def test_doctor_without_gi_exits_1_and_says_how_to_install_it():
    doctor = obbmeta_cli("doctor", prelude="import sys; sys.modules['gi'] = None")
    assert doctor.returncode == 1 and "Traceback" not in doctor.stderr, doctor.stdout + doctor.stderr
    assert doctor_lines(doctor.stdout)["gi"] == "FAILED"
    assert "apt-get install python3-gi python3-gst-1.0" in doctor.stdout and "docs/install.md" in doctor.stdout
    assert "gi) cannot be imported" in doctor.stdout.split("problem(s):")[1]
    assert "no problems found" not in doctor.stdout


def test_doctor_exits_1_when_the_elements_cannot_be_created():
    """No obbmeta folder on the plugin path and obbmeta.gst.register() failing: the demo could not make its
    pipeline, so doctor says which elements, why, and the plugin path hint."""
    pytest.importorskip("gi")
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("GST_PLUGIN_PATH")}
    prelude = ("import obbmeta.gst\n"
               "def register():\n"
               "    raise ImportError('simulated: the element modules do not import')\n"
               "obbmeta.gst.register = register")
    doctor = obbmeta_cli("doctor", env=env, prelude=prelude)
    assert doctor.returncode == 1, doctor.stdout + doctor.stderr
    rows = doctor_lines(doctor.stdout)
    assert [rows[n] for n in ("obbinfer", "obboverlay", "obbtrack", "obbmessage")] == ["FAILED"] * 4
    problems = doctor.stdout.split("problem(s):")[1]
    assert "obbinfer, obboverlay, obbtrack, obbmessage cannot be created" in problems
    assert "simulated: the element modules do not import" in problems
    assert 'eval "$(python -m obbmeta.gst --env)"' in problems


def test_doctor_counts_elements_off_the_plugin_path_that_register_gives_as_no_problem():
    """The demo registers the elements in-process: no obbmeta folder on the plugin path only gets the hint."""
    pytest.importorskip("gi")
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("GST_PLUGIN_PATH")}
    doctor = obbmeta_cli("doctor", env=env)
    rows = doctor_lines(doctor.stdout)
    assert rows["obbinfer"] == "missing" and "register() creates it" in doctor.stdout
    assert "cannot be created" not in doctor.stdout


# --- max-det -------------------------------------------------------------------------------------------------------
@needs_gst
def test_the_demo_says_when_frames_hit_max_det(tmp_path):
    """SMPTE bars (footage the aerial detector was not trained for) fill every frame with boxes: with --max-det 10
    each frame is at the cap; obbinfer's warning comes through once and the summary counts the frames."""
    pytest.importorskip("gi")
    bars = tmp_path / "bars.webm"
    subprocess.run(["gst-launch-1.0", "-q", "videotestsrc", "num-buffers=3", "pattern=smpte", "!",
                    "video/x-raw,width=128,height=96,framerate=25/1", "!", "vp8enc", "deadline=1", "!", "webmmux", "!",
                    "filesink", f"location={bars}"], check=True, capture_output=True, timeout=120)
    out = tmp_path / "o"
    run = obbmeta_cli("demo", "--input", str(bars), "--frames", "3", "--max-det", "10", "--output", str(out))
    assert run.returncode == 0, run.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["max_det"] == 10 and summary["frames_at_max_det"] == 3 and summary["objects"] == 30
    warnings = [line for line in run.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1 and "hit max-det=10" in warnings[0], run.stderr[-3000:]
    assert "3 of 3 frames hit max-det=10" in run.stdout


@needs_gst
def test_a_demo_below_the_cap_says_nothing_about_it(tmp_path):
    pytest.importorskip("gi")
    video = make_video(tmp_path / "ball.webm", frames=3, width=96, height=64)
    out = tmp_path / "o"
    run = obbmeta_cli("demo", "--input", str(video), "--frames", "3", "--output", str(out))
    assert run.returncode == 0, run.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["max_det"] == 300 and summary["frames_at_max_det"] == 0
    assert "max-det" not in run.stdout + run.stderr
