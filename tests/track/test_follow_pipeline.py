"""obboverlay follow-tracker=true behind the nvtracker stand-in in a real GStreamer pipeline: obbinfer (interval=1,
so every other buffer is a skipped frame) -> the stand-in in a pad probe, where nvtracker would be -> obboverlay. The
objects nvtracker makes on skipped frames reach the overlay with their track's predicted OBB; frame_num is the
stand-in's batch count."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import readback
from nvtracker_standin import NvTrackerStandIn

from obbmeta import nvds

pytest.importorskip("gi")
if not nvds.available():
    pytest.skip("NVIDIA's libnvds_meta is not available", allow_module_level=True)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gst"))  # the element tests' toy models and runner

from pipelines import buffer_probe, run  # noqa: E402

import obbmeta.gst  # noqa: E402
from obbmeta.gst import Gst  # noqa: E402

obbmeta.gst.register()
W, H = 160, 120


def test_obboverlay_follow_tracker_gives_the_objects_nvtracker_made_their_tracks_obb():
    p = Gst.parse_launch(
        f"videotestsrc num-buffers=12 pattern=solid-color foreground-color=0xff808080 "
        f"! video/x-raw,format=RGBA,width={W},height={H} "
        "! obbinfer model=obb_toy_models:toy input-size=96 interval=1 ! identity name=nvtracker "
        "! obboverlay follow-tracker=true mode=meta ! fakesink name=s")
    standin = NvTrackerStandIn(probation=2, frame_numbers="batch")
    for _ in range(5):  # batches of another pipeline: nvtracker's count no longer equals the streams' frame numbers
        empty = nvds.BatchMeta.create(1)
        standin.update(empty)
        empty.destroy()
    errors = buffer_probe(p.get_by_name("nvtracker"), "src",
                          lambda b: standin.update(nvds.BatchMeta.from_gst_buffer(b)))
    seen = []

    def after(buf):
        (f,) = nvds.BatchMeta.from_gst_buffer(buf).frames
        seen.append((f.infer_done, f.frame_number, [(i.confidence, o.source) for i, o in readback.pairs(f)],
                     len(nvds.read_display_lines(f))))

    buffer_probe(p.get_by_name("s"), "sink", after, errors)
    assert run(p).eos and not errors
    assert [n for _, n, _, _ in seen] == list(range(5, 17))  # nvtracker's frame_num, not obbinfer's 0..11
    assert seen[0][2] == [] and seen[1][2] == []  # the first detections are in probation: removed
    skipped = [objs for done, _, objs, _ in seen[2:] if not done]
    assert skipped and all(objs for objs in skipped)
    for objs in skipped:  # made by nvtracker, given their track's OBB by obboverlay before it drew them
        assert all(c == pytest.approx(-0.1) and source == "predicted" for c, source in objs)
    assert all(lines > 0 for _, _, objs, lines in seen if objs)
