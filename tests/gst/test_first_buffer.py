"""No element does its one-time set-up while the first buffer waits: whatever obbinfer, obbtrack and obboverlay
import or build lazily happens when they start (READY -> PAUSED), as nvinfer loads its engine there. The first call
of the draw operator imported ``torch._dynamo`` (about 800 modules) inside obboverlay's first draw, which held a
queued 16-camera pipeline's first buffers about 5 s on a loaded GPU host (run #31, docs/performance.md).

Checked in a fresh interpreter (a pytest process has imported everything already): pad probes around each element
record ``sys.modules`` when the first buffer enters and leaves it; obbinfer runs without its output thread
(queue-depth=0), so one thread carries the buffer through all three and nothing else imports meanwhile."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent

SCRIPT = r"""
import json, sys
import obbmeta.gst
obbmeta.gst.register()
from obbmeta.gst import Gst
from pipelines import run

p = Gst.parse_launch(
    "videotestsrc num-buffers=4 ! video/x-raw,format=RGBA,width=160,height=120 ! identity name=before_infer "
    "! obbinfer model=obb_toy_models:toy input-size=96 queue-depth=0 ! identity name=before_track "
    "! obbtrack min-hits=1 ! identity name=before_overlay ! obboverlay mode=%s ! fakesink name=after_overlay")
seen = {}

objects = []

def probe(name):
    def record(_pad, info):
        if name not in seen:
            seen[name] = set(sys.modules)
            if name == "after_overlay":  # the first buffer had objects to track and draw
                from obbmeta import nvds
                objects.append(sum(f.num_obj_meta for f in nvds.BatchMeta.from_gst_buffer(info.get_buffer()).frames))
        return Gst.PadProbeReturn.OK
    return record

for name in ("before_infer", "before_track", "before_overlay"):
    p.get_by_name(name).get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, probe(name))
p.get_by_name("after_overlay").get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER, probe("after_overlay"))
outcome = run(p)
stages = ("before_infer", "before_track", "before_overlay", "after_overlay")
print(json.dumps({"eos": outcome.eos, "error": outcome.error, "objects": objects,
                  "imported": {e: sorted(seen[b] - seen[a]) for e, a, b in zip(("obbinfer", "obbtrack", "obboverlay"),
                                                                            stages, stages[1:])}}))
"""


@pytest.mark.parametrize("mode", ["draw", "meta"])
def test_the_first_buffer_imports_nothing_in_obbinfer_obbtrack_or_obboverlay(mode):
    path = os.pathsep.join(filter(None, [str(HERE), str(HERE.parent), os.environ.get("PYTHONPATH")]))
    r = subprocess.run([sys.executable, "-c", SCRIPT % mode], capture_output=True, text=True, timeout=300, cwd=HERE,
                       env={**os.environ, "PYTHONPATH": path})
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["eos"] and got["error"] is None, got
    assert got["objects"] and got["objects"][0] > 0, got  # something was tracked and drawn: the check is not vacuous
    assert got["imported"] == {"obbinfer": [], "obbtrack": [], "obboverlay": []}, {
        k: (len(v), v[:10]) for k, v in got["imported"].items()}
