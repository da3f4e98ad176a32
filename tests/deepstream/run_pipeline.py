"""Run one pipeline with obbmeta's elements and the install's plugins in a process of its own, so that a crash
inside NVIDIA's code (a segfault) is a failed test with the exit status, not a dead test run.

    python tests/deepstream/run_pipeline.py "<gst-launch description>" [timeout_s]

Prints one JSON line: {"eos", "error", "frames", "objects", "obbs", "max_batch"} counted on the sink named "out"
(frames: frame metas seen, objects: their objects, obbs: objects whose rotated box is obbmeta's user meta).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import readback

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "gst"))
sys.path.insert(0, str(HERE.parent))


def main() -> int:
    from pipelines import buffer_probe, run

    import obbmeta.gst
    from deepstream import install
    from obbmeta import nvds
    from obbmeta.gst import Gst

    obbmeta.gst.register()
    Gst.Registry.get().scan_path(str(install.plugin_dir()))
    pipeline = Gst.parse_launch(sys.argv[1])
    counts = {"frames": 0, "objects": 0, "obbs": 0, "max_batch": 0}

    def count(buf):
        frames = nvds.BatchMeta.from_gst_buffer(buf).frames
        counts["max_batch"] = max(counts["max_batch"], len(frames))
        for frame in frames:
            counts["frames"] += 1
            for _, obb in readback.pairs(frame):
                counts["objects"] += 1
                counts["obbs"] += obb.source == "user_meta"

    errors = buffer_probe(pipeline.get_by_name("out"), "sink", count)
    outcome = run(pipeline, timeout_s=float(sys.argv[2]) if len(sys.argv) > 2 else 120.0)
    pipeline.set_state(Gst.State.NULL)
    print(json.dumps({"eos": outcome.eos, "error": outcome.error or (repr(errors[0]) if errors else None),
                      **counts}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
