"""The output side of an element, as nvinfer splits its work: the streaming thread converts a batch and queues its
GPU work, then hands the buffer to this queue and returns at once; the queue's own thread waits for that batch's
results, writes its metadata and pushes the buffer downstream, so batch k's metadata is written while batch k+1
runs on the GPU and upstream keeps going.

Order is kept: buffers leave in the order they came, and a serialized event (caps, segment, EOS, gap, custom) or a
serialized query (drain, allocation) waits until every buffer before it has been pushed (:meth:`drain`). A flush
(FLUSH_START) makes a waiting producer return FLUSHING and lets the queued batches finish without being pushed;
FLUSH_STOP waits for them and clears the flushing state. A push that returns anything but OK is kept and returned
for the next buffer (nvinfer's last flow return), so upstream sees EOS / FLUSHING / NOT_LINKED / ERROR.
"""
from __future__ import annotations

import collections
import ctypes
import threading
import time
from typing import Any, Callable

from ._debug import gst_library
from ._gi import Gst

#: GST_BASE_TRANSFORM_FLOW_DROPPED: what transform_ip returns for a buffer this queue will push itself.
QUEUED = Gst.FlowReturn.CUSTOM_SUCCESS
STOP_TIMEOUT_S = 10.0  # how long stop() waits for a push blocked downstream before it gives up on the thread
HANDOVER_WAIT_S = 0.02  # the longest the output thread waits for the streaming thread to let go of a buffer


class OutputQueue:
    """At most ``depth`` buffers between the element's streaming thread and its output thread.

    :meth:`put` (streaming thread) takes a buffer and ``finish`` (a callable that waits for the batch's device work
    and writes its metadata, or None), blocking while ``depth`` are already queued. The output thread calls
    ``finish``, then pushes the buffer on the element's source pad. ``latencies`` holds the last buffers' seconds
    from ``t_in`` (when the streaming thread got them) to the end of their push."""

    def __init__(self, element: Any, depth: int, name: str = "output"):
        if depth < 1:
            raise ValueError(f"depth must be >= 1, got {depth}")
        self.element, self.depth = element, depth
        self.cond = threading.Condition()
        self.items: collections.deque = collections.deque()
        self.busy = False        # the output thread holds an item
        self.flushing = False
        self.closed = False
        self.flow = Gst.FlowReturn.OK
        self.pushed = 0
        self.position: int | None = None  # the end (pts + duration, ns) of the last buffer pushed, since a flush
        self.latencies: collections.deque = collections.deque(maxlen=4096)
        self.thread = threading.Thread(target=self._loop, daemon=True, name=name)
        self.thread.start()

    # ---------------------------------------------------------------- streaming thread

    def put(self, buf: Gst.Buffer, finish: Callable[[], None] | None, t_in: float) -> Gst.FlowReturn:
        """Queue ``buf``: QUEUED (the element must not push it), or the flow that stops the stream (FLUSHING while
        flushing or after stop, a downstream push's error). ``finish`` runs on the output thread either way once
        queued; when the buffer is refused, it runs here (so the batch's buffers are released)."""
        with self.cond:
            while len(self.items) >= self.depth and not self.flushing and not self.closed:
                self.cond.wait()
            refused = Gst.FlowReturn.FLUSHING if self.flushing or self.closed else self.flow
            if refused == Gst.FlowReturn.OK:
                # holders beside this call's two (base transform's and this wrapper's): an upstream tee's, say
                others = max(_refcount(hash(buf)) - 2, 0)
                self.items.append((buf, finish, t_in, others))
                self.cond.notify_all()
                return QUEUED
        if finish is not None:
            finish()
        return refused

    def drain(self) -> None:
        """Wait until every queued buffer has been pushed (or dropped by a flush)."""
        with self.cond:
            while (self.items or self.busy) and not self.closed:
                self.cond.wait()

    def flush_start(self) -> None:
        with self.cond:
            self.flushing = True
            self.cond.notify_all()

    def flush_stop(self) -> None:
        """The flushed buffers are done with; the queue takes buffers again and forgets the last flow return."""
        self.drain()
        with self.cond:
            self.flushing = False
            self.flow = Gst.FlowReturn.OK
            self.position = None
            self.cond.notify_all()

    def stop(self) -> None:
        """Finish what is queued without pushing it, and end the thread."""
        with self.cond:
            self.flushing = True
            self.closed = True
            self.cond.notify_all()
        self.thread.join(STOP_TIMEOUT_S)
        if self.thread.is_alive():
            self.element.warn(f"the output thread did not end within {STOP_TIMEOUT_S:.0f} s (a push blocked "
                              "downstream); it ends when that push returns")

    # ---------------------------------------------------------------- output thread

    def _loop(self) -> None:
        _name_os_thread(self.thread.name.replace("-output", ":out"))  # "obbinfer0:out" in top -H, profilers
        while True:
            with self.cond:
                while not self.items and not self.closed:
                    self.cond.wait()
                if not self.items:
                    return
                buf, finish, t_in, others = self.items.popleft()
                self.busy = True
                self.cond.notify_all()
            flow = Gst.FlowReturn.OK
            try:
                if finish is not None:
                    finish()
                finish = None
                with self.cond:
                    dropped = self.flushing
                if not dropped:
                    # downstream gets the only reference, as from a C element's push: PyGObject's push would keep
                    # this wrapper's reference meanwhile, so every in-place element downstream would see a shared
                    # buffer and copy it (its batch meta too, which loses the objects' parent pointers)
                    end = _end_time(buf)
                    ptr = gst_library().gst_mini_object_ref(hash(buf))  # hash: the GstBuffer* (a boxed value's pointer)
                    buf = None
                    # the streaming thread may not have left transform_ip yet: wait (briefly) for its references
                    deadline = time.perf_counter() + HANDOVER_WAIT_S
                    while _refcount(ptr) > 1 + others and time.perf_counter() < deadline:
                        time.sleep(20e-6)
                    flow = Gst.FlowReturn(gst_library().gst_pad_push(hash(self.element.srcpad), ptr))  # GIL released
                    self.pushed += 1
                    if end is not None and flow == Gst.FlowReturn.OK:
                        self.position = end
                    self.latencies.append(time.perf_counter() - t_in)
            except BaseException as exc:  # noqa: BLE001 - the reason goes on the bus; upstream gets ERROR
                from ._element import describe_failure

                self.element.fail(Gst.StreamError.FAILED, describe_failure(exc))
                flow = Gst.FlowReturn.ERROR
            buf = finish = None
            with self.cond:
                self.busy = False
                if flow != Gst.FlowReturn.OK and self.flow == Gst.FlowReturn.OK and not self.flushing:
                    self.flow = flow
                self.cond.notify_all()



def _end_time(buf: Gst.Buffer) -> int | None:
    """Where a buffer ends in running order (pts + duration, or pts), as BaseTransform tracks its position."""
    if buf.pts == Gst.CLOCK_TIME_NONE:
        return None
    return buf.pts + (buf.duration if buf.duration != Gst.CLOCK_TIME_NONE else 0)


def _refcount(ptr: int) -> int:
    """GstMiniObject.refcount (a gint after the GType) of the buffer at ``ptr``."""
    return ctypes.c_int.from_address(ptr + ctypes.sizeof(ctypes.c_size_t)).value


def is_serialized(event_or_query_type: Any, flags_of: Callable[[Any], Any], serialized: Any) -> bool:
    return bool(int(flags_of(event_or_query_type)) & int(serialized))


def event_is_serialized(event: Gst.Event) -> bool:
    return is_serialized(event.type, Gst.EventType.get_flags, Gst.EventTypeFlags.SERIALIZED)


def query_is_serialized(query: Gst.Query) -> bool:
    return is_serialized(query.type, Gst.QueryType.get_flags, Gst.QueryTypeFlags.SERIALIZED)


__all__ = ["OutputQueue", "QUEUED", "event_is_serialized", "query_is_serialized"]


def _name_os_thread(name: str) -> None:
    """The calling thread's name as the OS shows it (``top -H``, ``/proc/<pid>/task/*/comm``, profilers): Linux keeps
    15 bytes. Nothing happens where prctl is missing."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(15, ctypes.c_char_p(name.encode("utf-8", "replace")[:15]), 0, 0, 0)  # 15: PR_SET_NAME
    except (OSError, AttributeError):
        pass
