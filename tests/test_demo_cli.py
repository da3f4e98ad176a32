"""`obbmeta demo`, `obbmeta doctor` and examples/*_video.py as a user runs them: real pipelines, one-line errors with
an exit status for what the user can fix, and doctor lines for every part."""
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import obbmeta.gst

ROOT = Path(__file__).resolve().parents[1]
needs_gst = pytest.mark.skipif(shutil.which("gst-launch-1.0") is None, reason="gstreamer1.0-tools not installed")


def obbmeta_cli(*args, env=None, prelude="", timeout=600, cwd=None):
    """``python -m obbmeta ARGS`` (``prelude``: Python run first, e.g. to hide a package)."""
    code = f"{prelude}\nimport sys\nfrom obbmeta.cli import main\nsys.exit(main({list(args)!r}))"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=cwd)


def one_line_error(run, prog="obbmeta demo") -> str:
    """The run failed with exit status 1 and said why in one line, without a traceback."""
    lines = [line for line in run.stderr.splitlines() if line.strip() and "should be floating" not in line]
    assert run.returncode == 1, (run.returncode, run.stderr[-3000:])
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    assert len(lines) == 1 and lines[0].startswith(f"{prog}: error: "), run.stderr[-3000:]
    return lines[0]


def make_video(path: Path, frames: int = 12, width: int = 200, height: int = 150) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["gst-launch-1.0", "-q", "videotestsrc", f"num-buffers={frames}", "pattern=ball", "!",
                    f"video/x-raw,width={width},height={height},framerate=25/1", "!", "vp8enc", "deadline=1", "!",
                    "webmmux", "!", "filesink", f"location={path}"], check=True, capture_output=True, timeout=120)
    return path


# --- the demo ------------------------------------------------------------------------------------------------------
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
    assert (out / "annotated.webm").read_bytes()[:4] == b"\x1a\x45\xdf\xa3"
    from PIL import Image

    # the PNG frames are spread over the run: the first, the middle, the last
    assert sorted(p.name for p in out.glob("*.png")) == ["frame_0000.png", "frame_0014.png", "frame_0029.png"]
    assert Image.open(out / "frame_0029.png").size == (256, 256)
    assert "mAP50" in run.stdout and str(out) in run.stdout
    # not a terminal: progress as plain lines, none of them a carriage-return update
    assert "\r" not in run.stderr and "pipeline: 30 frames in" in run.stderr


def test_the_harbour_demo_finds_containers_on_ships_and_scores_both_crops(tmp_path):
    """appsrc ! obbinfer (aerial detector) ! obbinfer process-mode=2 (container detector) ! obboverlay ...: the
    children come back under their ship, and the summary has the container detector's mAP50 on the pipeline's
    upright crops beside the same detector's on axis-aligned crops of the same ships."""
    pytest.importorskip("gi")
    out = tmp_path / "harbour"
    run = obbmeta_cli("demo", "--scene", "harbour", "--frames", "3", "--output", str(out))
    assert run.returncode == 0, run.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    c = summary["containers"]
    assert summary["frames"] == 3 and summary["model"] == "obbmeta.models:aerial_detector"
    assert c["secondary"] == "obbmeta.models:container_detector" and c["ships_found"] > 0 and c["containers"] > 0
    assert c["map50_upright"] > 0.8 and c["map50_axis_aligned"] is not None
    assert c["map50_upright"] > c["map50_axis_aligned"]
    assert abs(c["map50_upright_recomputed"] - c["map50_upright"]) < 0.05  # the pipeline's crops, recomputed
    assert sum(b["ships"] for b in c["by_heading"].values()) == c["ships_found"]
    rows = [json.loads(line) for line in (out / "detections.jsonl").read_text().splitlines()]
    kids = [(r, o) for r in rows for o in r["objects"] if o["component_id"] == 3]
    assert kids and all(o["label"] == "container" and o["parent"] is not None for _, o in kids)
    assert all(r["objects"][o["parent"]]["label"] == "ship" for r, o in kids)
    assert "axis-aligned crops" in run.stdout


@needs_gst
def test_demo_reads_at_most_frames_from_a_file_whose_path_and_output_have_spaces(tmp_path):
    pytest.importorskip("gi")
    video = make_video(tmp_path / "my videos" / 'clip "one".webm', frames=12)
    out = tmp_path / "out dir" / "run 1"
    run = obbmeta_cli("demo", "--input", str(video), "--frames", "5", "--output", str(out))
    assert run.returncode == 0, run.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["frames"] == 5 and summary["input"] == str(video)
    assert summary["input_size"] == 224  # the file's longer side (200) rounded up to 32
    assert summary["map50"] is None  # no ground truth for a file
    assert (out / "annotated.webm").read_bytes()[:4] == b"\x1a\x45\xdf\xa3"
    assert sorted(p.name for p in out.glob("*.png")) == ["frame_0000.png", "frame_0002.png", "frame_0004.png"]
    assert len((out / "detections.jsonl").read_text().splitlines()) == 5


@pytest.mark.parametrize("value", ["2", "-1", "nan", "1.5", "abc"])
def test_demo_refuses_a_confidence_outside_0_1(value):
    run = subprocess.run([sys.executable, "-m", "obbmeta", "demo", "--conf", value], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 2 and "argument --conf: must be a number in [0, 1]" in run.stderr, run.stderr
    assert "GLib" not in run.stderr


@pytest.mark.parametrize("args, message", [
    (["--frames", "0"], "--frames must be in 1..100000"),
    (["--input-size", "100"], "--input-size must be a multiple of 32"),
    (["--device", "gpu"], "argument --device: must be auto, cpu, cuda or cuda:N, got 'gpu'"),
])
def test_demo_refuses_bad_arguments(args, message):
    run = subprocess.run([sys.executable, "-m", "obbmeta", "demo", *args], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 2 and message in run.stderr, run.stderr


def test_demo_with_cuda_and_no_gpu_says_so_in_one_line(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is available")
    pytest.importorskip("gi")
    run = obbmeta_cli("demo", "--device", "cuda", "--output", str(tmp_path / "o"))
    assert "--device cuda: torch" in one_line_error(run) and "sees no CUDA device" in run.stderr


@needs_gst
@pytest.mark.parametrize("kind, message", [
    ("missing", "no such file"),
    ("folder", "not a regular file"),
    ("text", "no video frame could be decoded (typefind: Could not determine type of stream"),
    ("truncated", "no video frame could be decoded"),
])
def test_demo_with_a_bad_input_file_says_so_in_one_line(tmp_path, kind, message):
    pytest.importorskip("gi")
    path = tmp_path / "in put.webm"
    if kind == "folder":
        path.mkdir()
    elif kind == "text":
        path.write_text("not a video\n")
    elif kind == "truncated":  # cut inside the header: not one frame can be decoded
        whole = make_video(tmp_path / "whole.webm").read_bytes()
        path.write_bytes(whole[:200])
    run = obbmeta_cli("demo", "--input", str(path), "--output", str(tmp_path / "o"))
    line = one_line_error(run)
    assert f"--input {path}" in line and message in line


@pytest.mark.parametrize("hidden, message", [("gi", "GStreamer's Python bindings are missing"),
                                             ("PIL", "Pillow is missing")])
def test_demo_without_gi_or_pillow_says_so_before_making_any_frame(tmp_path, hidden, message):
    out = tmp_path / "o"
    run = obbmeta_cli("demo", "--output", str(out), prelude=f"import sys; sys.modules[{hidden!r}] = None")
    assert message in one_line_error(run)
    assert not out.exists()  # checked before anything was generated or written


def test_progress_is_one_updating_line_on_a_terminal_and_plain_lines_otherwise():
    from obbmeta.demo import Progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    tty = Terminal()
    bar = Progress("pipeline", 50, stream=tty)
    for _ in range(50):
        bar.step()
    assert "\n" not in tty.getvalue() and tty.getvalue().count("\r") == 50
    bar.close()
    assert tty.getvalue().count("\n") == 1 and "50/50 frames" in tty.getvalue()

    plain = io.StringIO()
    bar = Progress("pipeline", 50, stream=plain)
    for _ in range(50):
        bar.step()
    bar.close()
    lines = plain.getvalue().splitlines()
    assert "\r" not in plain.getvalue() and 2 <= len(lines) <= 12 and lines[-1].startswith("pipeline: 50 frames in")


def test_png_frames_are_spread_over_the_run():
    from obbmeta.demo import png_indices

    assert png_indices(30) == {0, 14, 29} and png_indices(1) == {0} and png_indices(2) == {0, 1}


def test_the_pipeline_description_keeps_paths_with_spaces_quotes_and_bangs_whole(tmp_path):
    pytest.importorskip("gi")
    from obbmeta.demo import pipeline_description
    from obbmeta.gst import Gst

    obbmeta.gst.register()
    out = tmp_path / 'a "b" \\ c ! d'
    desc = pipeline_description("obbmeta.models:aerial_detector", ["vehicle", "ship"], out, width=64, height=48,
                                fps=(10, 1), conf=0.3, device="cpu", input_size=64)
    p = Gst.parse_launch(desc)
    sink = next(e for e in p.iterate_sinks() if e.get_factory().get_name() == "filesink")
    assert sink.get_property("location") == str(out / "annotated.webm")
    infer = p.get_by_name("infer")
    assert infer.get_property("class-names") == "vehicle,ship" and infer.get_property("conf") == pytest.approx(0.3)


def test_demo_output_folders_are_ignored_by_git():
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    for folder in ("demo-output", "aerial-output", "document-output"):
        r = subprocess.run(["git", "check-ignore", "-q", f"{folder}/summary.json"], cwd=ROOT)
        assert r.returncode == 0, folder


# --- the examples --------------------------------------------------------------------------------------------------
def test_video_examples_offer_the_output_format_they_promise():
    for scene in ("aerial", "document"):
        run = subprocess.run([sys.executable, str(ROOT / "examples" / f"{scene}_video.py"), "--help"],
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0 and "--output-format {yolo-obb,mmrotate,boxes}" in run.stdout, run.stderr


def test_video_example_runs_a_model_returning_oriented_boxes_with_output_format_boxes(tmp_path):
    pytest.importorskip("gi")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "tests" / "gst"), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, str(ROOT / "examples" / "aerial_video.py"), "--model",
                          "obb_toy_models:as_boxes", "--output-format", "boxes", "--class-names", "a,b", "--frames",
                          "3", "--output", str(tmp_path)], capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    rows = [json.loads(line) for line in (tmp_path / "detections.jsonl").read_text().splitlines()]
    assert len(rows) == 3 and all([o["label"] for o in r["objects"]] == ["b"] for r in rows)


# --- doctor and the command line -----------------------------------------------------------------------------------
def doctor_lines(out: str) -> dict:
    """``name: status - why`` lines of the doctor's GStreamer part, by name."""
    rows = {}
    for line in out.splitlines():
        name, sep, rest = line.strip().partition(": ")
        if sep and rest.split(" - ")[0].strip() in ("ok", "missing", "FAILED"):
            rows[name] = rest.split(" - ")[0].strip()
    return rows


def test_doctor_runs_as_a_module_and_reports_every_gstreamer_part():
    doctor = subprocess.run([sys.executable, "-m", "obbmeta", "doctor"], capture_output=True, text=True, timeout=180,
                            env={k: v for k, v in os.environ.items() if not k.startswith("GST_PLUGIN_PATH")})
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert "C geometry core: loaded" in doctor.stdout
    rows = doctor_lines(doctor.stdout)
    names = {"gi", "GStreamer", "python plugin loader", "plugin path", *obbmeta.gst.ELEMENTS, "nvstreammux",
             "nvinfer", "nvtracker", "nvdsosd", "nvmsgconv", "nvvideoconvert", "nvv4l2decoder"}
    assert names <= set(rows), rows
    if rows["gi"] == "ok":
        assert rows["plugin path"] == "missing" and rows["obbinfer"] == "missing"  # no GST_PLUGIN_PATH: said so
        assert "export GST_PLUGIN_PATH=$(python -m obbmeta.gst --plugin-path)" in doctor.stdout


@needs_gst
def test_doctor_finds_each_element_through_the_printed_plugin_path(tmp_path):
    pytest.importorskip("gi")
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path)}
    env["GST_PLUGIN_PATH"] = subprocess.run([sys.executable, "-m", "obbmeta.gst", "--plugin-path"], env=env,
                                            capture_output=True, text=True, check=True).stdout.strip()
    doctor = obbmeta_cli("doctor", env=env)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    rows = doctor_lines(doctor.stdout)
    assert [rows[n] for n in ("python plugin loader", "plugin path", "obbinfer", "obboverlay", "obbtrack",
                              "obbmessage")] == ["ok"] * 6, doctor.stdout
    assert f"made for {sys.executable}" in doctor.stdout


@needs_gst
def test_doctor_says_why_elements_on_the_plugin_path_do_not_load(tmp_path):
    pytest.importorskip("gi")
    folder = obbmeta.gst.make_plugin_folder(tmp_path / "plugin")
    config = folder / "python" / obbmeta.gst.SITE_CONFIG
    config.write_text(json.dumps(dict(json.loads(config.read_text()), python="3.99")))
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path), "GST_PLUGIN_PATH": str(folder)}
    doctor = obbmeta_cli("doctor", env=env)
    assert doctor.returncode == 1, doctor.stdout
    rows = doctor_lines(doctor.stdout)
    assert rows["plugin path"] == "FAILED" and rows["obbinfer"] == "FAILED"
    assert "made for another Python version" in doctor.stdout and "gst-inspect-1.0 obbinfer prints why" in doctor.stdout


def test_doctor_without_gi_says_so_and_the_library_part_still_counts():
    doctor = obbmeta_cli("doctor", prelude="import sys; sys.modules['gi'] = None")
    assert doctor.returncode == 1, doctor.stdout + doctor.stderr  # the elements and the demo need gi
    assert doctor_lines(doctor.stdout)["gi"] == "FAILED" and "Traceback" not in doctor.stderr
    assert "the elements and the demo need it" in doctor.stdout and "C geometry core: loaded" in doctor.stdout


def test_cli_version():
    out = subprocess.run([sys.executable, "-m", "obbmeta", "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "obbmeta 0.1.0"


def test_doctor_exits_1_and_says_why_when_the_metadata_layer_is_unavailable(tmp_path):
    env = dict(os.environ, OBBMETA_NVDS_LIB_DIR=str(tmp_path))  # an explicit folder without libnvds_meta.so
    doctor = subprocess.run([sys.executable, "-m", "obbmeta", "doctor"], capture_output=True, text=True, timeout=120,
                            env=env)
    assert doctor.returncode == 1
    assert "1 problem(s)" in doctor.stdout and "obbmeta.nvds) is unavailable" in doctor.stdout


def test_doctor_pointed_at_a_library_that_is_not_libnvds_meta_says_so(tmp_path):
    import ctypes.util

    other = ctypes.util.find_library("m")  # a real shared library, without NVIDIA's functions
    found = next((Path(d) / other for d in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/lib")
                  if other and (Path(d) / other).is_file()), None)
    if found is None:
        pytest.skip("no libm to stand in for a wrong library")
    shutil.copy(found, tmp_path / "libnvds_meta.so")
    env = dict(os.environ, OBBMETA_NVDS_LIB_DIR=str(tmp_path))
    doctor = subprocess.run([sys.executable, "-m", "obbmeta", "doctor"], capture_output=True, text=True, timeout=120,
                            env=env)
    assert doctor.returncode == 1 and "Traceback" not in doctor.stderr, doctor.stderr[-2000:]
    assert f"{tmp_path / 'libnvds_meta.so'} (from $OBBMETA_NVDS_LIB_DIR) is not NVIDIA's libnvds_meta.so" in \
        doctor.stdout


def test_doctor_says_cuda_was_disabled_on_purpose_rather_than_no_nvcc(monkeypatch, capsys):
    from obbmeta import cli

    monkeypatch.setattr(cli, "cuda_build_status", lambda: "not built: disabled on purpose (OBBMETA_CUDA=0 at install)")
    monkeypatch.setattr("obbmeta._cuda_lib.cuda_library", lambda: None)
    cli._doctor()
    out = capsys.readouterr().out
    assert "disabled on purpose (OBBMETA_CUDA=0 at install)" in out
    assert "nvcc" not in out.split("CUDA kernels")[1].split("\n")[0]
