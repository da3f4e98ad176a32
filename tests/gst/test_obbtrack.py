"""obbtrack and obboverlay follow-tracker=true in real pipelines (the tracker's own behaviour is tested in
tests/track against ground truth; here: the elements wire it to every buffer)."""
from __future__ import annotations

import threading

import readback
from pipelines import buffer_probe, bus_warnings, run

from obbmeta import nvds
from obbmeta.gst import Gst

W, H = 160, 120


def test_obbtrack_gives_stable_ids_and_predicts_on_skipped_frames():
    p = Gst.parse_launch(
        f"videotestsrc num-buffers=30 pattern=solid-color foreground-color=0xff808080 "
        f"! video/x-raw,format=RGBA,width={W},height={H} "
        "! obbinfer model=obb_toy_models:toy input-size=96 interval=1 ! obbtrack min-hits=1 ! fakesink name=s")
    frames = []

    def on(buf):
        (f,) = nvds.BatchMeta.from_gst_buffer(buf).frames
        objs = readback.pairs(f)
        frames.append((f.infer_done, sorted(i.object_id for i, _ in objs), {o.source for _, o in objs}))

    errors = buffer_probe(p.get_by_name("s"), "sink", on)
    assert run(p).eos and not errors
    assert len(frames) == 30
    ids = [ids for done, ids, _ in frames if done]
    # a still frame: the same objects every detection frame, with the same ids after the first
    assert all(x == ids[1] for x in ids[1:]) and len(ids[1]) > 0
    assert nvds.UNTRACKED_OBJECT_ID not in ids[1]
    for done, got, sources in frames[2:]:
        if not done:  # skipped by interval: the tracks come back as predicted objects
            assert got == ids[1] and sources == {"predicted"}


def test_obboverlay_follow_tracker_runs_on_every_buffer():
    p = Gst.parse_launch(
        f"videotestsrc num-buffers=10 ! video/x-raw,format=RGBA,width={W},height={H} "
        "! obbinfer model=obb_toy_models:toy input-size=96 ! obbtrack min-hits=1 "
        "! obboverlay follow-tracker=true mode=meta ! fakesink name=s")
    lines = []
    errors = buffer_probe(p.get_by_name("s"), "sink", lambda b: lines.append(
        sum(len(nvds.read_display_lines(f)) for f in nvds.BatchMeta.from_gst_buffer(b).frames)))
    assert run(p).eos and not errors
    assert len(lines) == 10 and all(n > 0 for n in lines[1:])


def test_bad_association_is_refused():
    p = Gst.parse_launch(f"videotestsrc num-buffers=3 ! video/x-raw,format=RGBA,width={W},height={H} "
                         "! obbtrack name=t association=iou ! fakesink")
    outcome = run(p, timeout_s=30)
    assert outcome.error and "association='iou' refused" in outcome.error


def test_a_ready_only_property_set_while_playing_waits_for_the_next_start():
    """obboverlay's mode is read when it starts: set to draw on a playing NV12 pipeline (draw paints packed RGB only)
    it keeps planning display metas until the next start, says so, and reads back as set."""
    p = Gst.parse_launch(
        f"videotestsrc num-buffers=12 ! video/x-raw,format=NV12,width={W},height={H} "
        "! obbinfer model=obb_toy_models:toy input-size=96 ! obboverlay name=o mode=meta ! fakesink name=s")
    overlay, lines = p.get_by_name("o"), []
    warnings = bus_warnings(p)

    def on(buf):
        if len(lines) == 3:
            overlay.set_property("mode", "draw")
        lines.append(sum(len(nvds.read_display_lines(f)) for f in nvds.BatchMeta.from_gst_buffer(buf).frames))

    errors = buffer_probe(p.get_by_name("s"), "sink", on)
    outcome = run(p)
    assert outcome.eos and outcome.error is None and not errors, (outcome, errors[:1])
    assert len(lines) == 12 and all(n > 0 for n in lines), lines  # display metas on every buffer: still meta mode
    assert overlay.get_property("mode") == "draw" and overlay.prop("mode") == "draw"  # stopped: the value set
    assert any("property mode cannot change while the element runs" in w for w in warnings), warnings


def test_a_ready_only_property_set_while_the_element_starts_waits_for_the_next_start(monkeypatch):
    """A set from another thread after the element took its start values but before it runs: the element keeps what
    it started with (the tracker built with min-hits 1 and prop() agree) and warns."""
    from obbmeta.gst.track import ObbTrack

    start = ObbTrack.start

    def start_with_a_set_meanwhile(self):
        t = threading.Thread(target=lambda: self.set_property("min-hits", 7))
        t.start()
        t.join()
        start(self)

    monkeypatch.setattr(ObbTrack, "start", start_with_a_set_meanwhile)
    p = Gst.parse_launch(f"videotestsrc num-buffers=3 ! video/x-raw,format=RGBA,width={W},height={H} "
                         "! obbinfer model=obb_toy_models:toy input-size=96 ! obbtrack name=t min-hits=1 "
                         "! fakesink name=s")
    track, seen = p.get_by_name("t"), []
    warnings = bus_warnings(p)
    errors = buffer_probe(p.get_by_name("s"), "sink", lambda b: seen.append(
        (track.prop("min-hits"), track.get_property("min-hits"), track.tracker.min_hits)))
    assert run(p).eos and not errors
    assert seen and set(seen) == {(1, 7, 1)}, seen
    assert any("property min-hits cannot change while the element runs" in w for w in warnings), warnings

