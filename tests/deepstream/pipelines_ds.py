"""Pipeline pieces for the tests of NVIDIA's elements: NVMM sources into the new nvstreammux, and a subprocess
runner for pipelines whose NVIDIA element may crash."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import obb_toy_models

HERE = Path(__file__).resolve().parent
W, H = 320, 240
NAMES = ",".join(obb_toy_models.CLASS_NAMES)
# obbinfer with the tests' toy detector (it finds videotestsrc's ball) on the GPU, as after nvinfer's place
INFER = f"obbinfer name=infer model=obb_toy_models:toy input-size=160 device=cuda class-names={NAMES}"


def muxed_sources(n: int, frames: int, mux: str = "m", fmt: str = "NV12") -> str:
    """n videotestsrc balls as NVMM frames into ``nvstreammux name=<mux> batch-size=n`` (the new mux: no width /
    height / batched-push-timeout)."""
    parts = [f"nvstreammux name={mux} batch-size={n}"]
    for k in range(n):
        parts.append(f"videotestsrc num-buffers={frames} pattern=ball is-live=false "
                     f"! video/x-raw,format={fmt},width={W},height={H},framerate=30/1 ! nvvideoconvert "
                     f"! video/x-raw(memory:NVMM),format={fmt} ! {mux}.sink_{k}")
    return " ".join(parts[1:]) + " " + parts[0]


def run_isolated(description: str, timeout_s: float = 180.0) -> tuple[int, dict | None, str]:
    """(exit status, the counts run_pipeline.py printed or None, stderr tail) of the pipeline in its own process."""
    proc = subprocess.run([sys.executable, str(HERE / "run_pipeline.py"), description, str(timeout_s)],
                          capture_output=True, text=True, timeout=timeout_s + 60)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    return proc.returncode, json.loads(lines[-1]) if lines else None, proc.stderr[-3000:]
