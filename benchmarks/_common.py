"""The one harness of the benchmark scripts: command line (``arguments``), pinning to one core, timing (median of
repeats, with a CUDA sync around each call or CUDA events; or repeats within a time budget), machine facts and the
JSON results (``write_json``: benchmark, date, machine, then the script's own fields), and the log-log plot."""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

# Relative to the working directory (benchmarks/results when run from the repository, as documented), so that what
# the scripts print into logs names no folder of the machine that ran them; valid as long as no script changes
# directory.
RESULTS = Path(os.path.relpath(Path(__file__).resolve().parent / "results"))
REPO = Path(__file__).resolve().parents[1]


def portable_path(path) -> str:
    """``path`` as results may record it, without the folders of the machine that ran it: a site-packages folder
    becomes ``<site-packages>``, the repository ``<repo>``, the home folder ``~``; other paths (system folders such
    as a DeepStream install) stay as they are."""
    import site

    p = Path(path).absolute()
    roots = [(Path(s), "<site-packages>") for s in site.getsitepackages()] + [(REPO, "<repo>"), (Path.home(), "~")]
    for root, name in roots:
        try:
            return str(Path(name) / p.relative_to(root))
        except ValueError:
            continue
    return str(p)


def machine() -> dict:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info = {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()}
    try:
        import torch

        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
        if torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(0)
    except ImportError:
        pass
    return info


def arguments(description: str | None, *, plot_only: bool = False, quick: bool = False,
              repeats: int | None = None) -> argparse.ArgumentParser:
    """The benchmarks' common options (add the script's own, then ``parse_args()``): ``--plot-only`` redraws the
    figure from the committed JSON, ``--quick`` is a short run for trying the script, ``--repeats`` sets the number
    of timed repeats."""
    ap = argparse.ArgumentParser(description=description)
    if plot_only:
        ap.add_argument("--plot-only", action="store_true", help="redraw the figure from the committed JSON")
    if quick:
        ap.add_argument("--quick", action="store_true", help="a short run (fewer repeats) to try the script")
    if repeats is not None:
        ap.add_argument("--repeats", type=int, default=repeats, help="timed repeats per case (median reported)")
    return ap


def pin_to_one_core() -> str:
    """Pin this process to its first allowed CPU (steadier single-thread timings); returns what was done."""
    try:
        cpu = sorted(os.sched_getaffinity(0))[0]
        os.sched_setaffinity(0, {cpu})
        return f"CPU {cpu}"
    except (AttributeError, OSError):
        return "not pinned"


def cuda_sync():
    """``torch.cuda.synchronize`` when CUDA is there (pass it as ``sync=`` to median_time), else None."""
    import torch

    return torch.cuda.synchronize if torch.cuda.is_available() else None


def graph_of(fn):
    """fn() captured in a CUDA graph (after a warm-up call outside it); returns the replay callable and the output
    the replays write."""
    import torch

    fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()
    return graph.replay, out


def median_time(fn, repeats: int, warmup: int = 1, sync=None) -> dict:
    """Run fn `warmup` times, then `repeats` times; return median/min/max seconds."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        if sync:
            sync()
        t0 = time.perf_counter()
        fn()
        if sync:
            sync()
        times.append(time.perf_counter() - t0)
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times), "repeats": repeats}


def budget_time(measure, budget_s: float, min_repeats: int = 5, max_repeats: int = 200) -> dict:
    """Call ``measure()`` (which times its own work and returns seconds, e.g. leaving set-up out) at least
    ``min_repeats`` times and then while ``budget_s`` lasts, at most ``max_repeats``; median/min/max seconds."""
    times, start = [], time.perf_counter()
    while len(times) < min_repeats or (time.perf_counter() - start < budget_s and len(times) < max_repeats):
        times.append(measure())
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times), "repeats": len(times)}


def write_json(name: str, payload: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    payload = {"benchmark": name, "date": time.strftime("%Y-%m-%d"), "machine": machine(), **payload}
    path.write_text(json.dumps(payload, indent=2) + "\n")
    return path


def cuda_event_time(fn, repeats: int, warmup: int = 3) -> dict:
    """GPU time between CUDA events recorded around each call (what the stream spends, launch gaps included)."""
    import torch

    for _ in range(warmup):
        fn()
    pairs = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        pairs.append((start, end))
    torch.cuda.synchronize()
    times = [s.elapsed_time(e) / 1e3 for s, e in pairs]
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times), "repeats": repeats}


def plot_lines(rows, name: str, title: str, xlabel: str, ylabel: str = "ms (median)") -> Path:
    """Log-log plot of each method's median time against rows' "n"; saved as results/<name>.png."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for method in sorted({m for r in rows for m in r["methods"]}):
        pts = [(r["n"], r["methods"][method]["median_s"] * 1e3) for r in rows if method in r["methods"]]
        ax.plot(*zip(*pts), marker="o", label=method)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path = RESULTS / f"{name}.png"
    fig.savefig(path, dpi=120)
    return path
