"""The front page does what it says: README.md's quick start runs as written (CPU, in a fresh interpreter), its
gst-launch line runs (GST_PLUGIN_PATH prepended as `python -m obbmeta.gst --env` does), every page of docs/ is
linked from it, every relative link resolves (anchors too), the set-up commands are the scripts that exist, and the
performance table quotes the committed benchmark JSON."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
RESULTS = ROOT / "benchmarks" / "results"
SETUP_COMMANDS = (
    "bash scripts/demo.sh    # the main job: a generated aerial video through the real pipeline with the bundled "
    "detector",
    "bash scripts/test.sh    # the whole test suite (extra arguments go to pytest)",
)


def text(path: Path = README) -> str:
    return path.read_text(encoding="utf-8")


def section(md: str, title: str) -> str:
    """The body of the `## title` section (up to the next `## ` heading)."""
    m = re.search(rf"^## {re.escape(title)}\s*$(.*?)(?=^## |\Z)", md, re.M | re.S)
    assert m, f"README.md has no '## {title}' section"
    return m.group(1)


def code_blocks(md: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", md, re.M | re.S)


def cpu_env() -> dict:
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONPATH", None)
    return env


def run_python(code: str, cwd: Path, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=cpu_env(), capture_output=True, text=True,
                          timeout=timeout)


# ------------------------------------------------------------------------------------------------ the code

def test_quick_start_runs_as_written_on_the_cpu(tmp_path):
    blocks = code_blocks(section(text(), "Quick start"), "python")
    assert len(blocks) == 1, "the quick start should be one python block"
    r = run_python(blocks[0], tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    assert re.search(r"\d+ boxes", r.stdout), r.stdout


def test_docs_readme_api_block_runs_as_written_on_the_cpu(tmp_path):
    blocks = code_blocks(section(text(DOCS / "README.md"), "The API in one block"), "python")
    assert len(blocks) == 1
    r = run_python(blocks[0], tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]


def gst_launch_argv(block: str) -> list[str]:
    """The gst-launch-1.0 command of a shell block, continuation lines joined, split as a shell would."""
    joined = re.sub(r"\\\n", " ", block)
    lines = [ln.split(" #")[0].strip() for ln in joined.splitlines()]
    launch = [ln for ln in lines if ln.startswith("gst-launch-1.0 ")]
    assert len(launch) == 1, f"expected one gst-launch-1.0 line in:\n{block}"
    return shlex.split(launch[0])


def pipeline_block() -> str:
    blocks = [b for b in code_blocks(section(text(), "In a pipeline"), "bash") if "gst-launch-1.0" in b]
    assert len(blocks) == 1, "the pipeline section should have one shell block with the gst-launch line"
    return blocks[0]


def test_the_pipeline_block_sets_the_plugin_path_with_obbmeta_gst_env():
    first = pipeline_block().splitlines()[0]
    assert re.fullmatch(r'eval "\$\(\S*python\S* -m obbmeta\.gst --env\)"(\s+#.*)?', first), first


def test_gst_launch_line_runs_on_the_cpu(tmp_path):
    tool = shutil.which("gst-launch-1.0")
    if tool is None:
        pytest.skip("gst-launch-1.0 is not installed (apt-get install gstreamer1.0-tools)")
    if importlib.util.find_spec("gi") is None:
        pytest.skip("GStreamer's Python bindings (gi) are not importable: docs/install.md")
    argv = gst_launch_argv(pipeline_block())
    assert "obbinfer" in argv and "obboverlay" in argv
    env = cpu_env()
    # what `eval "$(python -m obbmeta.gst --env)"` does: this interpreter's plugin folder prepended to GST_PLUGIN_PATH
    plugin = subprocess.run([sys.executable, "-m", "obbmeta.gst", "--plugin-path"], capture_output=True, text=True,
                            env=env, check=True, timeout=60).stdout.strip()
    env["GST_PLUGIN_PATH"] = plugin + (":" + env["GST_PLUGIN_PATH"] if env.get("GST_PLUGIN_PATH") else "")
    r = subprocess.run([tool, *argv[1:]], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    assert "ERROR" not in r.stdout + r.stderr, r.stdout[-2000:] + r.stderr[-4000:]


def test_set_up_block_is_the_two_commands_that_exist():
    blocks = code_blocks(section(text(), "Set-up"), "bash")
    assert [b.rstrip("\n").split("\n") for b in blocks] == [list(SETUP_COMMANDS)]
    for cmd in SETUP_COMMANDS:
        assert (ROOT / cmd.split()[1]).is_file(), cmd
    assert "bash scripts/test.sh" in (ROOT / ".ci" / "run").read_text()


# ------------------------------------------------------------------------------------------------ the links

def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped (not - or _), spaces to hyphens."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    out: set[str] = set()
    seen: dict[str, int] = {}
    in_code = False
    for line in text(path).splitlines():
        if line.startswith("```"):
            in_code = not in_code
        m = None if in_code else re.match(r"^#{1,6} (.+)$", line)
        if m:
            a = github_anchor(m.group(1))
            n = seen.get(a, 0)
            seen[a] = n + 1
            out.add(a if n == 0 else f"{a}-{n}")
    return out


def relative_links(path: Path) -> list[str]:
    md = re.sub(r"^```.*?^```", "", text(path), flags=re.M | re.S)     # links inside code blocks are not links
    targets = re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", md)
    return [t for t in targets if not re.match(r"^[a-z][a-z0-9+.-]*:", t)]


@pytest.mark.parametrize("page", ["README.md", "docs/README.md", "docs/performance.md"])
def test_every_relative_link_resolves(page):
    path = ROOT / page
    bad = []
    for target in relative_links(path):
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            bad.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{target}: no heading with that anchor in {dest.relative_to(ROOT)}")
    assert not bad, f"{page}: " + "; ".join(bad)


@pytest.mark.parametrize("index", ["README.md", "docs/README.md"])
def test_every_docs_page_is_in_the_index(index):
    path = ROOT / index
    linked = {(path.parent / t.partition("#")[0]).resolve() for t in relative_links(path)}
    pages = sorted(DOCS.glob("*.md"))
    assert pages
    missing = [p.name for p in pages if p.resolve() not in linked and p.resolve() != path.resolve()]
    assert not missing, f"{index} does not link docs/{', docs/'.join(missing)}"


# ------------------------------------------------------------------------------------------------ the figures

def load(name: str) -> dict:
    return json.loads((RESULTS / name).read_text())


def link(name: str) -> str:
    return f"[{name}](benchmarks/results/{name})"


def ms(seconds: float) -> str:
    """Seconds as milliseconds to 3 significant figures (whole milliseconds from 100 ms)."""
    x = seconds * 1e3
    return f"{x:.0f}" if x >= 100 else f"{x:#.3g}".rstrip(".")


def thousands(n: int) -> str:
    return f"{n:,}".replace(",", " ")


def hardware(d: dict) -> str:
    m = d["machine"]
    return f"{m['gpu']}, {d['date']}" if m.get("gpu") else f"{m['cpu']} ({m['cores']} cores), {d['date']}"


def stream_row(d: dict, run: str, **match) -> dict:
    rows = [r for r in d["rows"] if r["run"].startswith(run) and all(r.get(k) == v for k, v in match.items())]
    assert len(rows) == 1, (run, match, rows)
    return rows[0]


def performance_table() -> str:
    """The README's table, made from benchmarks/results/*.json."""
    lines = ["| measured | obbmeta | for comparison | hardware, date | JSON |", "|---|---|---|---|---|"]

    streams = load("pipeline_streams.json")
    for label, run, match in [
        ("`obbinfer`, 16 × 1080p streams of `videotestsrc ! nvvideoconvert` (RGBA), batches of 16", "2026-12-01 #6",
         dict(chain="obbinfer", format="RGBA", variant="graph", queue_depth=2)),
        ("the same, NV12", "2026-12-01 #6", dict(chain="obbinfer", format="NV12", variant="graph", queue_depth=2)),
        ("the same, 16 `nvv4l2decoder` streams (NV12)", "2026-12-01 #7",
         dict(chain="obbinfer", variant="graph", queue_depth=2)),
        *[(label, "2026-12-02 #21", dict(source=source, chain=chain))
          for source, sources, again in (
              ("decoder", "16 `nvv4l2decoder` streams converted to RGBA", "the same decoders"),
              ("upload", "16 `videotestsrc ! nvvideoconvert` (RGBA)", "the same sources"))
          for label, chain in ((f"{sources}, `obbinfer ! obbtrack ! obboverlay`", "obbinfer+track+overlay"),
                               ("the same with queues between them", "obbinfer+queue+track+queue+overlay"),
                               (f"{again}, `obbinfer` + a secondary detector on every ship",
                                "obbinfer+secondary-detector"))],
    ]:
        r = stream_row(streams, run, **match)
        date = r["run"][:10]  # the run's own date: the file gathers several runs
        lines.append(f"| {label} | {r['fps']} fps | sources alone {r['baseline_fps']} fps (ratio {r['ratio']}) "
                     f"| {streams['machine']['gpu']}, {date} | {link('pipeline_streams.json')} |")

    new, old = (stream_row(streams, "2026-12-03 #25", mode="separate", code=c) for c in (
        "asynchronous batcher (this session, one wake-up a batch)", "16bf41f (the leader ran each batch to the end)"))
    lines.append(f"| 16 separate `appsrc ! obbinfer` pipelines sharing one model (`max-batch-wait-us`, graphs), "
                 f"1080p | {new['fps']} fps | the batcher before (16bf41f), the same call: {old['fps']} fps "
                 f"| {streams['machine']['gpu']}, {new['run'][:10]} | {link('pipeline_streams.json')} |")

    live = load("pipeline_streams_run29.json")

    def row(source: str, rate: float | None, code: str) -> dict:
        return next(r for r in live["rows"] if r["source"] == source and r.get("rate_batches_per_s") == rate
                    and r["code"].startswith(code))

    where = f"{live['machine']['gpu']}, {live['date']} | {link('pipeline_streams_run29.json')} |"
    camera, saturated = row("camera", 30.0, "85c0d59"), row("camera", None, "85c0d59")
    lat = camera["latency_ms"]
    lines.append(f"| a buffer's latency through `obbinfer` at a live 16 cameras × 30 fps (16 `nvv4l2decoder` streams "
                 f"of a camera-like H.264 stream to RGBA, 1080p, batches of 16) "
                 f"| p50 {lat['p50']} / p99 {lat['p99']} ms "
                 f"| the batch's GPU span {camera['gpu_ms']['p50']} ms; obbinfer's own CPU time "
                 f"{camera['obbinfer_host_ms']['total']} ms a batch | {where}")
    new, old = row("decoder", 30.0, "85c0d59"), row("decoder", 30.0, "ca56f34")
    lines.append(f"| the same with the I_PCM decoders (3 MB of bitstream a frame, pushed by Python threads) "
                 f"| p50 {new['latency_ms']['p50']} / p99 {new['latency_ms']['p99']} ms "
                 f"| before this session's host-time work (ca56f34), the same call: p50 {old['latency_ms']['p50']} / "
                 f"p99 {old['latency_ms']['p99']} ms; CPU {old['obbinfer_host_ms']['total']} -> "
                 f"{new['obbinfer_host_ms']['total']} ms a batch | {where}")
    span = saturated["gpu_ms"]["p50"]
    lines.append(f"| `obbinfer`, 16 camera-like `nvv4l2decoder` streams, as fast as it goes | {saturated['fps']} fps "
                 f"| sources alone {saturated['baseline_fps']} fps (ratio {saturated['ratio']}); obbinfer's GPU span "
                 f"of {span} ms a batch of 16 allows {16e3 / span:.0f} fps | {where}")

    r30 = load("pipeline_streams_run30.json")
    where = f"{r30['machine']['gpu']}, {r30['date']} | {link('pipeline_streams_run30.json')} |"
    for source, sources in (("decoder", "16 `nvv4l2decoder` streams converted to RGBA"),
                            ("upload", "16 `videotestsrc ! nvvideoconvert` (RGBA)")):
        new, old = (next(r for r in r30["rows"] if r["source"] == source and r["chain"] == "obbinfer+track+overlay"
                         and r["code"].startswith(code)) for code in ("a9959dc", "234a25d"))
        lines.append(f"| {sources}, `obbinfer ! obbtrack ! obboverlay`, the tracker's removals found at the head of "
                     f"NVIDIA's pool lists | {new['fps']} fps | sources alone {new['baseline_fps']} fps (ratio "
                     f"{new['ratio']}); the removals before (234a25d): {old['fps']} fps (ratio {old['ratio']}) "
                     f"| {where}")
    sep = next(r for r in r30["rows"] if r.get("mode") == "separate")
    lines.append(f"| 16 separate `appsrc ! obbinfer` pipelines sharing one model (`max-batch-wait-us`, graphs), 1080p "
                 f"| {sep['fps']} fps | the goal: 480 fps (16 × 30) | {where}")

    r31 = load("pipeline_streams_run31.json")
    where = f"{r31['machine']['gpu']}, {r31['date']} | {link('pipeline_streams_run31.json')} |"
    first = [r for r in r31["rows"] if r["benchmark_name"].startswith("camq_")]
    new, old = ([r["latency_ms"]["p99"] for r in first if r["code"].startswith(code)]
                for code in ("0433399", "1393a60"))
    lines.append(f"| p99 latency, 16 camera-like `nvv4l2decoder` streams into `obbinfer ! queue ! obbtrack ! queue ! "
                 f"obboverlay` (a fresh process, as fast as it goes), the draw operator set up when obboverlay starts "
                 f"| {' / '.join(map(str, new))} ms | set up in the first draw (1393a60), the same call: "
                 f"{' / '.join(map(str, old))} ms | {where}")
    for fmt_source, label in ((("NV12", "upload"), "16 `videotestsrc ! nvvideoconvert` streams (NV12)"),
                              (("NV12", "decoder"), "16 `nvv4l2decoder` streams (NV12)")):
        r = next(r for r in r31["rows"] if (r["format"], r["source"]) == fmt_source and r["chain"] == "obbinfer")
        lines.append(f"| `obbinfer`, {label}, batches of 16 | {r['fps']} fps | sources alone {r['baseline_fps']} fps "
                     f"(ratio {r['ratio']}) | {where}")

    r32 = load("pipeline_streams_run32.json")
    where = f"{r32['machine']['gpu']}, {r32['date']} | {link('pipeline_streams_run32.json')} |"
    new, old = ([str(r["ratio"]) for r in r32["rows"] if r["benchmark_name"].startswith(f"ab_{tree}")]
                for tree in ("new", "old"))
    lines.append(f"| 16 `videotestsrc ! nvvideoconvert` streams (RGBA), `obbinfer ! obbtrack ! obboverlay mode=draw` "
                 f"without queues, obboverlay waiting for its draw on its own output thread, 4 runs "
                 f"| ratio to the sources alone {' / '.join(new)} | the wait on obbinfer's thread (8bcb6c2), "
                 f"alternated in the same calls: {' / '.join(old)} | {where}")

    gpu_nms = load("nms_cuda.json")
    nms = {r["n"]: r["methods"] for r in gpu_nms["rows"]}
    sizes = (1000, 10000, 30000)
    sized = " / ".join(ms(nms[n]["obbmeta_cuda"]["median_s"]) for n in sizes)
    graph = " / ".join(ms(nms[n]["obbmeta_cuda_graph"]["median_s"]) for n in sizes)
    mmcv = " / ".join(ms(nms[n]["mmcv_cuda"]["median_s"]) for n in sizes)
    lines.append(f"| rotated NMS on the GPU, 1 000 / 10 000 / 30 000 clustered boxes | {sized} ms "
                 f"(CUDA graph {graph} ms) | mmcv {gpu_nms['versions']['mmcv'].split()[1]} CUDA {mmcv} ms "
                 f"| {hardware(gpu_nms)} "
                 f"| {link('nms_cuda.json')} |")

    dec = load("decode.json")
    b16 = next(r for r in dec["rows"] if r["batch"] == 16)
    lines.append(f"| fused YOLO-OBB decode + NMS, batch 16 ({thousands(b16['anchors'])} anchors, {b16['classes']} "
                 f"classes) | {ms(b16['methods']['obbmeta_cuda']['median_s'])} ms (CUDA graph "
                 f"{ms(b16['methods']['obbmeta_cuda_graph']['median_s'])} ms) "
                 f"| Ultralytics {dec['versions']['ultralytics']} {ms(b16['methods']['ultralytics']['median_s'])} ms "
                 f"| {hardware(dec)} | {link('decode.json')} |")

    crop = load("crop.json")
    c1k = next(r for r in crop["rows"] if r["n"] == 1000)
    lines.append(f"| `ops.crop_rotated`, 1 000 upright 32×128 crops from 16 1080p frames "
                 f"| {ms(c1k['methods']['obbmeta uint8']['median_s'])} ms "
                 f"| a `cv2.warpAffine` loop {ms(c1k['methods']['cv2.warpAffine loop (host)']['median_s'])} ms "
                 f"| {hardware(crop)} | {link('crop.json')} |")

    cpu = load("nms_cpu.json")
    c10k = next(r for r in cpu["rows"] if r["scene"] == "clustered" and r["n"] == 10000)
    previous = c10k["methods"]["obbmeta_previous_quadratic"]["median_s"]
    lines.append(f"| rotated NMS on one CPU core, 10 000 clustered boxes "
                 f"| {ms(c10k['methods']['obbmeta']['median_s'])} ms "
                 f"| obbmeta's previous (quadratic) NMS {ms(previous)} ms "
                 f"| {hardware(cpu)} | {link('nms_cpu.json')} |")

    tracking = load("tracking_cost.json")
    step = next(o for o in tracking["by_objects"] if o["objects_per_frame"] == 500)["cases"]
    lines.append(f"| `OrientedTracker.step`, 500 objects a frame (one core) "
                 f"| {step['step_rotated']['median_ms']:.3g} ms "
                 f"| the same rules in NumPy {step['step_numpy_reference']['median_ms']:.3g} ms "
                 f"| {hardware(tracking)} | {link('tracking_cost.json')} |")

    gil = load("gil_handoffs.json")
    by = {(r["calls"], r["python_neighbour"]): r for r in gil["rows"] if r["switch_interval_s"] == 0.005}
    held, releasing, alone = (by[k]["median_ms_per_batch"] for k in (("held", True), ("releasing", True),
                                                                       ("held", False)))
    before = next(r for r in load("gil_handoffs_0433399.json")["rows"]
                  if r["switch_interval_s"] == 0.005 and r["calls"] == "held" and r["python_neighbour"])
    lines.append(f"| `update_batch`, 16 × {gil['objects_per_frame']} objects, beside a thread running Python "
                 f"| {held:.3g} ms | the reader's columns as 17 NumPy copies (0433399, run right after) "
                 f"{before['median_ms_per_batch']:.3g} ms; every C call releasing the interpreter lock "
                 f"{releasing:.3g} ms; alone {alone:.3g} ms "
                 f"| {hardware(gil)} | {link('gil_handoffs.json')} |")

    cer = load("recognizer_cer.json")
    res = cer["results"]
    lines.append(f"| text recogniser's character error rate on {thousands(res['rotated']['lines'])} held-out "
                 f"lines, upright rotated crops | {res['rotated']['cer'] * 100:.3g} % "
                 f"| nvinfer-style axis-aligned crops {res['aabb']['cer'] * 100:.3g} % "
                 f"| {hardware(cer)} | {link('recognizer_cer.json')} |")
    return "\n".join(lines)


def test_performance_table_quotes_the_committed_json():
    expected = performance_table()
    assert expected in section(text(), "Performance"), (
        "README.md's performance table differs from benchmarks/results/*.json; the table as the JSON has it:\n\n"
        + expected)
