"""Running a pipeline to its end in a test: EOS or the first error, within a time limit, always back to NULL."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from obbmeta.gst import Gst


@dataclass
class Outcome:
    eos: bool
    error: str | None  # "element name: message" of the first error
    stopped: bool      # set_state(NULL) completed


def run(pipeline: Gst.Pipeline, timeout_s: float = 60.0) -> Outcome:
    bus = pipeline.get_bus()
    pipeline.set_state(Gst.State.PLAYING)
    msg = bus.timed_pop_filtered(int(timeout_s * Gst.SECOND), Gst.MessageType.EOS | Gst.MessageType.ERROR)
    ret = pipeline.set_state(Gst.State.NULL)
    stopped = ret != Gst.StateChangeReturn.FAILURE and pipeline.get_state(5 * Gst.SECOND)[1] == Gst.State.NULL
    if msg is None:
        raise TimeoutError(f"the pipeline neither finished nor failed within {timeout_s} s")
    if msg.type == Gst.MessageType.ERROR:
        err, _debug = msg.parse_error()
        return Outcome(False, f"{msg.src.get_name()}: {err.message}", stopped)
    return Outcome(True, None, stopped)


def buffer_probe(element: Gst.Element, pad: str, fn, errors: list | None = None) -> list[Exception]:
    """Call fn(buffer) for every buffer through element's pad; returns the list the probe's exceptions go to
    (``errors`` when given, so several probes can share one; a test asserts it is empty after the run: an exception
    inside a probe must not pass unseen). Concatenating the returned lists before the run would copy them empty."""
    errors = [] if errors is None else errors

    def probe(_pad, info):
        try:
            fn(info.get_buffer())
        except Exception as exc:  # noqa: BLE001 - surfaced by the test
            errors.append(exc)
        return Gst.PadProbeReturn.OK

    element.get_static_pad(pad).add_probe(Gst.PadProbeType.BUFFER, probe)
    return errors


def bus_warnings(pipeline: Gst.Pipeline) -> list[str]:
    """The list the warning messages of the pipeline's elements go to, as they are posted: seen on the posting
    thread, since run() pops only EOS and errors (and flushes the bus when it stops)."""
    warnings: list[str] = []
    bus = pipeline.get_bus()
    bus.enable_sync_message_emission()
    bus.connect("sync-message::warning", lambda _bus, m: warnings.append(m.parse_warning()[0].message))
    return warnings


def rgba_copy(buf: Gst.Buffer, width: int, height: int) -> np.ndarray:
    """A copy of a system-memory RGBA buffer's first width x height pixels, (height, width, 4) uint8."""
    ok, info = buf.map(Gst.MapFlags.READ)
    assert ok
    try:
        return np.frombuffer(info.data, np.uint8)[: width * height * 4].reshape(height, width, 4).copy()
    finally:
        buf.unmap(info)
