"""The output thread of obbinfer and of obboverlay mode=draw (queue-depth > 0): buffers leave in order with their
metadata (and pixels), serialized events and queries wait for the buffers before them, flushes and downstream flow
errors reach upstream, and the streaming thread takes the next buffer while the previous one is still on its way
out. The tests marked ``queued`` run each element as the one with the queue."""
from __future__ import annotations

import hashlib
import io
import threading
import time

import pytest
import readback
from pipelines import buffer_probe, run

from obbmeta import nvds
from obbmeta.gst import Gst
from obbmeta.gst.overlay import ObbOverlay
from obbmeta.gst.track import ObbTrack

W, H = 160, 120
CAPS = f"video/x-raw,format=RGBA,width={W},height={H},framerate=30/1"
INFER = "obbinfer name=infer model=obb_toy_models:toy input-size=96 device=cpu"
#: the element with the output queue, as a pipeline fragment for a queue-depth, and its name in that fragment
ELEMENTS = {
    "obbinfer": (lambda depth: f"{INFER} queue-depth={depth}", "infer"),
    "obboverlay": (lambda depth: f"{INFER} queue-depth=0 ! obboverlay name=draw mode=draw thickness=2 "
                                 f"queue-depth={depth}", "draw"),
}
queued = pytest.mark.parametrize("which", list(ELEMENTS))


def read_back(buf):
    (frame,) = nvds.BatchMeta.from_gst_buffer(buf).frames
    pixels = hashlib.sha1(buf.extract_dup(0, buf.get_size())).hexdigest()
    return frame.infer_done, sorted((tuple(round(v, 3) for v in obb.xywhr), info.class_id)
                                    for info, obb in readback.pairs(frame)), pixels


def objects_by_pts(fragment: str, n: int = 40, sleep_us: int = 0) -> list:
    p = Gst.parse_launch(f"videotestsrc num-buffers={n} pattern=ball ! {CAPS} ! {fragment} "
                         f"! identity sleep-time={sleep_us} ! fakesink name=sink sync=false")
    got = []
    errors = buffer_probe(p.get_by_name("sink"), "sink", lambda b: got.append((b.pts, read_back(b))))
    outcome = run(p)
    assert outcome.eos and outcome.stopped and not errors, (outcome, errors[:1])
    return got


@queued
def test_the_output_thread_writes_what_the_synchronous_path_writes_in_the_same_order(which):
    fragment = ELEMENTS[which][0]
    threaded, synchronous = objects_by_pts(fragment(2)), objects_by_pts(fragment(0))
    assert [pts for pts, _ in threaded] == sorted(pts for pts, _ in threaded)  # in order, none twice
    assert len(threaded) == 40 and threaded == synchronous  # the same objects and (obboverlay) the same pixels
    assert all(done for _, (done, _, _) in threaded) and sum(len(o) for _, (_, o, _) in threaded) > 40
    if which == "obboverlay":  # it drew: the frames differ from obbinfer's alone
        assert [px for _, (_, _, px) in threaded] != [px for _, (_, _, px) in objects_by_pts(f"{INFER}")]


@pytest.mark.parametrize("chain", ["obboverlay mode=meta queue-depth=2", "obboverlay mode=draw queue-depth=0",
                                   "obbtrack"])
def test_elements_without_a_wait_of_their_own_have_no_output_thread(chain):
    p = Gst.parse_launch(f"videotestsrc num-buffers=4 pattern=ball ! {CAPS} ! {INFER} queue-depth=0 ! {chain} "
                         "! fakesink name=sink sync=false")
    names = []
    errors = buffer_probe(p.get_by_name("sink"), "sink", lambda _b: names.append(threading.current_thread().name))
    assert run(p).eos and not errors
    assert len(names) == 4 and not any(n.endswith("-output") for n in names)
    assert not any(t.name.endswith("-output") for t in threading.enumerate())


@queued
def test_the_streaming_thread_takes_the_next_buffer_while_the_previous_one_is_pushed(which):
    # a slow downstream (20 ms per buffer): with the output thread, buffer k+1 enters the element before buffer k
    # has left it; without it, never.
    fragment, name = ELEMENTS[which]
    for depth, overlaps in ((3, True), (0, False)):
        p = Gst.parse_launch(f"videotestsrc num-buffers=12 pattern=ball ! {CAPS} ! {fragment(depth)} "
                             "! identity sleep-time=20000 ! fakesink sync=false")
        infer = p.get_by_name(name)
        log = []
        lock = threading.Lock()

        def mark(what, log=log, lock=lock):
            def fn(buf):
                with lock:
                    log.append((what, buf.pts))
            return fn

        errors = buffer_probe(infer, "sink", mark("in"))
        buffer_probe(infer, "src", mark("out"), errors)
        outcome = run(p)
        assert outcome.eos and not errors
        ins = [pts for w, pts in log if w == "in"]
        early = sum(1 for k in range(len(ins) - 1)
                    if log.index(("in", ins[k + 1])) < log.index(("out", ins[k])))
        assert (early > 0) is overlaps, (depth, log)
        assert [pts for w, pts in log if w == "out"] == ins


@queued
def test_serialized_events_leave_after_the_buffers_before_them_and_eos_after_all(which):
    p = Gst.parse_launch(f"appsrc name=src format=time caps={CAPS} ! {ELEMENTS[which][0](4)} "
                         "! identity sleep-time=5000 ! fakesink name=sink sync=false")
    src, sink = p.get_by_name("src"), p.get_by_name("sink")
    seen = []

    def probe(_pad, info):
        if info.type & Gst.PadProbeType.BUFFER:
            seen.append(("buffer", info.get_buffer().pts))
        else:
            ev = info.get_event()
            if ev.type == Gst.EventType.CUSTOM_DOWNSTREAM:
                seen.append(("marker", ev.get_structure().get_value("after")))
            elif ev.type == Gst.EventType.EOS:
                seen.append(("eos", None))
        return Gst.PadProbeReturn.OK

    sink.get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER | Gst.PadProbeType.EVENT_DOWNSTREAM, probe)
    p.set_state(Gst.State.PLAYING)
    frame = bytes(W * H * 4)
    for k in range(12):
        buf = Gst.Buffer.new_wrapped(frame)
        buf.pts, buf.duration = k * Gst.SECOND // 30, Gst.SECOND // 30
        assert src.emit("push-buffer", buf) == Gst.FlowReturn.OK
        if k % 4 == 3:
            s = Gst.Structure.new_empty("obbmeta-test-marker")
            s.set_value("after", buf.pts)
            src.send_event(Gst.Event.new_custom(Gst.EventType.CUSTOM_DOWNSTREAM, s))
    src.emit("end-of-stream")
    msg = p.get_bus().timed_pop_filtered(30 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    p.set_state(Gst.State.NULL)
    assert msg is not None and msg.type == Gst.MessageType.EOS
    buffers = [pts for kind, pts in seen if kind == "buffer"]
    assert len(buffers) == 12 and seen[-1] == ("eos", None)
    for kind, pts in seen:
        if kind == "marker":  # every buffer up to the marker's was pushed before it, none after it
            i = seen.index((kind, pts))
            assert [b for k, b in seen[:i] if k == "buffer"] == [b for b in buffers if b <= pts]


def test_a_drain_query_is_answered_after_the_queued_buffers_have_left():
    p = Gst.parse_launch(f"appsrc name=src format=time caps={CAPS} ! {INFER} queue-depth=4 "
                         "! identity sleep-time=20000 ! fakesink name=sink sync=false")
    src, infer = p.get_by_name("src"), p.get_by_name("infer")
    pushed = []
    errors = buffer_probe(p.get_by_name("sink"), "sink", lambda b: pushed.append(b.pts))
    p.set_state(Gst.State.PLAYING)
    frame = bytes(W * H * 4)
    pad = infer.get_static_pad("sink")
    for k in range(4):
        buf = Gst.Buffer.new_wrapped(frame)
        buf.pts = k * Gst.SECOND // 30
        src.emit("push-buffer", buf)
    deadline = time.monotonic() + 10
    while infer.batches < 4 and time.monotonic() < deadline:  # obbinfer has taken the four buffers
        time.sleep(0.005)
    assert pad.query(Gst.Query.new_drain())
    assert len(pushed) == 4
    src.emit("end-of-stream")
    p.get_bus().timed_pop_filtered(10 * Gst.SECOND, Gst.MessageType.EOS)
    p.set_state(Gst.State.NULL)
    assert not errors


@queued
def test_a_flush_drops_the_queued_buffers_and_the_stream_runs_on_after_it(which):
    p = Gst.parse_launch(f"appsrc name=src format=time caps={CAPS} ! {ELEMENTS[which][0](8)} "
                         "! identity sleep-time=30000 ! fakesink name=sink sync=false")
    src = p.get_by_name("src")
    pushed = []
    errors = buffer_probe(p.get_by_name("sink"), "sink", lambda b: pushed.append(b.pts))
    p.set_state(Gst.State.PLAYING)
    frame = bytes(W * H * 4)
    for k in range(8):
        buf = Gst.Buffer.new_wrapped(frame)
        buf.pts = k * Gst.SECOND // 30
        src.emit("push-buffer", buf)
    time.sleep(0.1)
    src.send_event(Gst.Event.new_flush_start())
    src.send_event(Gst.Event.new_flush_stop(True))
    before = len(pushed)
    assert before < 8  # some were still queued when the flush came
    for k in range(100, 105):
        buf = Gst.Buffer.new_wrapped(frame)
        buf.pts = k * Gst.SECOND // 30
        assert src.emit("push-buffer", buf) == Gst.FlowReturn.OK
    src.emit("end-of-stream")
    msg = p.get_bus().timed_pop_filtered(30 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    p.set_state(Gst.State.NULL)
    assert msg is not None and msg.type == Gst.MessageType.EOS, msg and msg.parse_error()
    assert not errors
    late = [pts for pts in pushed if pts >= 100 * Gst.SECOND // 30]
    assert len(late) == 5 and pushed[-5:] == late  # the stream after the flush arrives whole, in order
    assert all(pts < 8 * Gst.SECOND // 30 for pts in pushed[:-5])


@queued
@pytest.mark.parametrize("depth", [1, 3])
def test_a_downstream_flow_error_reaches_upstream_and_stops_the_pipeline(which, depth):
    p = Gst.parse_launch(f"videotestsrc num-buffers=200 pattern=ball ! {CAPS} ! {ELEMENTS[which][0](depth)} "
                         "! identity error-after=5 ! fakesink sync=false")
    outcome = run(p, timeout_s=30)
    assert not outcome.eos and outcome.stopped
    assert outcome.error is not None and outcome.error.startswith("identity"), outcome
    assert p.get_by_name("infer").batches < 200  # upstream got the error and stopped


@queued
def test_stopping_while_buffers_are_queued_does_not_hang(which):
    p = Gst.parse_launch(f"videotestsrc is-live=true pattern=ball ! {CAPS} ! {ELEMENTS[which][0](8)} "
                         "! identity sleep-time=50000 ! fakesink sync=false")
    p.set_state(Gst.State.PLAYING)
    time.sleep(0.5)
    t0 = time.monotonic()
    assert p.set_state(Gst.State.NULL) != Gst.StateChangeReturn.FAILURE
    assert p.get_state(10 * Gst.SECOND)[1] == Gst.State.NULL
    assert time.monotonic() - t0 < 5


@queued
def test_latencies_are_recorded_per_pushed_buffer(which):
    fragment, name = ELEMENTS[which]
    fragment = fragment(2).replace(" queue-depth=2", "")  # the element's default depth
    p = Gst.parse_launch(f"videotestsrc num-buffers=20 pattern=ball ! {CAPS} ! {fragment} ! fakesink sync=false")
    infer = p.get_by_name(name)
    seen = []

    def on_eos(_pad, info):
        if info.get_event().type == Gst.EventType.EOS:
            seen.extend(infer.latencies)
        return Gst.PadProbeReturn.OK

    infer.get_static_pad("src").add_probe(Gst.PadProbeType.EVENT_DOWNSTREAM, on_eos)
    assert run(p).eos
    assert infer.get_property("queue-depth") == 2  # the default
    assert len(seen) == 20 and all(0 < s < 10 for s in seen)


@pytest.mark.parametrize("depth", [0, 2])
def test_host_times_count_the_elements_own_work_once_per_model_batch_not_downstreams(depth):
    # downstream burns 40 ms of CPU per buffer on the thread that pushed it (obbinfer's output thread with depth 2,
    # the streaming thread with 0): the element's own CPU time a batch leaves that out; interval=1 skips every
    # other buffer, which gets no entry
    p = Gst.parse_launch(f"videotestsrc num-buffers=12 pattern=ball ! {CAPS} ! {INFER} queue-depth={depth} "
                         "interval=1 ! fakesink name=sink sync=false")
    infer = p.get_by_name("infer")
    infer.gpu_timing = True  # no CUDA stream here: nothing to time

    def burn(_buf):
        end = time.thread_time() + 0.04
        while time.thread_time() < end:
            pass

    errors = buffer_probe(p.get_by_name("sink"), "sink", burn)
    assert run(p).eos and not errors
    costs = list(infer.host_times)
    assert len(costs) == 6 and infer.inferred == 6
    assert all(len(c) == 3 and min(c) >= 0 and c[0] > 0 for c in costs)
    assert max(sum(c) for c in costs) < 0.04, costs
    assert list(infer.gpu_times) == []


@pytest.mark.parametrize("depth", [0, 2])
def test_downstream_gets_the_buffer_unshared_and_writes_in_place_without_a_copy(depth):
    p = Gst.parse_launch(f"videotestsrc num-buffers=40 pattern=ball ! {CAPS} ! {INFER} queue-depth={depth} "
                         "! obboverlay name=draw mode=draw ! fakesink name=sink")
    before, after = [], []
    errors = buffer_probe(p.get_by_name("draw"), "sink", lambda b: before.append(hash(b)))
    buffer_probe(p.get_by_name("sink"), "sink", lambda b: after.append(hash(b)), errors)
    assert run(p).eos and not errors
    assert len(before) == 40 and before == after  # the same GstBuffer: obboverlay drew into it, nothing copied


@queued
@pytest.mark.skipif(not __import__("os").path.isdir("/proc/self/task"), reason="needs Linux's /proc")
def test_the_output_thread_has_its_own_name_in_the_os(which):
    """``top -H``, py-spy and /proc show which thread spends the CPU: the output thread is named for its element."""
    from pathlib import Path

    fragment, name = ELEMENTS[which]
    p = Gst.parse_launch(f"videotestsrc num-buffers=8 pattern=ball ! {CAPS} ! {fragment(2)} "
                         "! identity sleep-time=50000 ! fakesink sync=false")
    names = []
    errors = buffer_probe(p.get_by_name(name), "src", lambda _b: names.append(
        Path(f"/proc/self/task/{threading.get_native_id()}/comm").read_text().strip()))
    outcome = run(p)
    assert outcome.eos and not errors
    assert set(names) == {f"{name}:out"}  # the element's name: the buffers leave on its output thread


@queued
@pytest.mark.parametrize("depth", [0, 2])
def test_a_position_query_on_the_source_pad_tells_the_last_buffer_pushed(which, depth):
    # BaseTransform answers it from the last buffer it pushed itself; with an output thread it pushes none
    fragment, name = ELEMENTS[which]
    p = Gst.parse_launch(f"appsrc name=src format=time caps={CAPS} ! {fragment(depth)} ! fakesink sync=false")
    src, element = p.get_by_name("src"), p.get_by_name(name)
    pushed = []
    errors = buffer_probe(element, "src", lambda b: pushed.append(b.pts))
    p.set_state(Gst.State.PLAYING)
    frame = bytes(W * H * 4)
    for k in range(10):
        buf = Gst.Buffer.new_wrapped(frame)
        buf.pts, buf.duration = k * Gst.SECOND // 30, Gst.SECOND // 30
        src.emit("push-buffer", buf)
    want = 10 * Gst.SECOND // 30
    deadline = time.monotonic() + 10
    ok, position = False, None
    while time.monotonic() < deadline:  # the output thread records the position after its push returns
        ok, position = element.get_static_pad("src").query_position(Gst.Format.TIME)
        if len(pushed) == 10 and ok and position == want:
            break
        time.sleep(0.005)
    p.set_state(Gst.State.NULL)
    assert not errors and len(pushed) == 10
    assert ok and position == want


class _FailingOverlay(ObbOverlay):
    """A user's obboverlay whose own start fails after obboverlay's has opened the output thread."""

    def start(self):
        super().start()
        raise FileNotFoundError("my-font.ttf")


class _OwnNamesTrack(ObbTrack):
    """A user's obbtrack with attributes of its own named like the base class's output machinery."""

    def __init__(self):
        super().__init__()
        self._out = io.StringIO()
        self.latencies = []


Gst.Element.register(None, "testfailingoverlay", Gst.Rank.NONE, _FailingOverlay)
Gst.Element.register(None, "testownnamestrack", Gst.Rank.NONE, _OwnNamesTrack)


def test_a_start_that_fails_after_the_output_thread_opened_leaves_no_thread_behind():
    p = Gst.parse_launch(f"videotestsrc num-buffers=5 ! {CAPS} ! testfailingoverlay name=mine mode=draw ! fakesink")
    assert p.set_state(Gst.State.PLAYING) == Gst.StateChangeReturn.FAILURE
    msg = p.get_bus().timed_pop_filtered(5 * Gst.SECOND, Gst.MessageType.ERROR)
    assert msg is not None and "my-font.ttf" in msg.parse_error()[0].message
    p.set_state(Gst.State.NULL)
    deadline = time.monotonic() + 5
    while any(t.name == "mine-output" for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not [t.name for t in threading.enumerate() if t.name == "mine-output"]


def test_a_subclass_may_use_the_names_out_and_latencies_for_its_own_attributes():
    p = Gst.parse_launch(f"videotestsrc num-buffers=4 pattern=ball ! {CAPS} ! {INFER} ! testownnamestrack "
                         "! fakesink sync=false")
    outcome = run(p, timeout_s=30)
    assert outcome.eos and outcome.stopped and outcome.error is None, outcome
