"""Frames that several pipelines' detectors of identical settings get at about the same time, run as one batch."""
from __future__ import annotations

import threading
import time
from typing import Any, Sequence

from .pending import Pending, share


class _Request:
    __slots__ = ("frames", "pixel_format", "ready", "pending", "error", "done")

    def __init__(self, frames: Sequence[Any], pixel_format: list[str], ready: Any):
        self.frames, self.pixel_format, self.ready = list(frames), pixel_format, ready
        self.pending: Pending | None = None
        self.error: BaseException | None = None
        self.done = False


class Batcher:
    """Frames that several callers hand detectors of identical settings at about the same time, run as one batch.

    The first caller to arrive leads: it waits up to the window (or until ``max_frames`` are queued), takes the
    queued calls (whole, at most ``max_frames`` frames unless one call alone holds more), queues them as one model
    call and hands each caller a :class:`~obbmeta.infer.Pending` of its own frames; nobody waits for the device
    here, so every caller goes on to its next frame (and the batch after this one gathers) while the GPU runs, as
    nvinfer's input thread does. Calls arriving while a leader queues its batch form the next one.

    Every batch runs on one detector (the first caller's: one model, one set of CUDA graphs and buffers for the
    batcher, not one per pipeline) and, on CUDA, on the batcher's own non-blocking stream, after an event each caller
    recorded on its current stream when it handed its frames over (so frames a caller made on its stream are read
    after they are written). The class filter's removals are counted in that detector's ``filtered``.
    """

    def __init__(self, device: Any) -> None:
        self.device = device  # the torch.device every batch runs on (part of the batcher's key)
        lock = threading.Lock()
        self.full = threading.Condition(lock)  # the gathering leader waits here: woken once its batch is full
        self.free = threading.Condition(lock)  # callers wait here for their batch to be queued or to lead
        self.lock = lock
        self.queue: list[_Request] = []
        self.queued = 0  # frames in the queue
        self.wanted = 0  # the frames that fill the batch being gathered (0: nobody gathers)
        self.leading = False
        self.detector: Any = None  # the detector every batch runs on
        self.stream: Any = None  # the batches' CUDA stream (a model on CUDA)

    def submit(self, detector: Any, frames: Sequence[Any], pixel_format: list[str], wait_s: float, max_frames: int,
               params: Any) -> Pending:
        req = _Request(frames, pixel_format, self._ready_event())
        with self.lock:
            self.queue.append(req)
            self.queued += len(req.frames)
            if self.wanted and self.queued >= self.wanted:
                self.full.notify()  # one wake-up a batch, not one per caller
        while True:  # a leader whose own call did not fit in the batch it queued leads the next one too
            with self.lock:
                while self.leading and not req.done:
                    self.free.wait()
                if req.done:
                    break
                self.leading, self.wanted = True, max_frames
                deadline = time.monotonic() + wait_s
                while self.queued < max_frames:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self.full.wait(left)
                self.wanted = 0
                batch = _take(self.queue, max_frames)
                self.queued -= sum(len(r.frames) for r in batch)
                if self.detector is None:
                    self.detector = detector
                runner = self.detector
            try:
                self._queue(runner, batch, params)
            finally:
                with self.lock:
                    for r in batch:
                        r.done = True
                    self.leading = False
                    self.free.notify_all()
        if req.error is not None:
            raise req.error
        return req.pending

    def _queue(self, runner: Any, batch: list[_Request], params: Any) -> None:
        """The batch's model call queued on ``runner`` (its stream after every caller's event); each request gets
        its slice, or every one the error."""
        try:
            stream = self._stream()
            frames = [f for r in batch for f in r.frames]
            formats = [p for r in batch for p in r.pixel_format]
            if stream is None:
                pending = runner._submit(frames, formats, params, None)
            else:
                import torch

                for r in batch:
                    if r.ready is not None:
                        stream.wait_event(r.ready)
                with torch.cuda.stream(stream):
                    pending = runner._submit(frames, formats, params, None)
            for r, part in zip(batch, share(pending, [len(r.frames) for r in batch])):
                r.pending = part
        except BaseException as exc:  # noqa: BLE001 - every caller of the batch gets the error
            for r in batch:
                r.error = exc

    def _stream(self) -> Any:
        if self.device.type != "cuda":
            return None
        if self.stream is None:
            import torch

            self.stream = torch.cuda.Stream(device=self.device)
        return self.stream

    def _ready_event(self) -> Any:
        """An event on the caller's current CUDA stream after which the frames it made there are readable (None
        off CUDA)."""
        if self.device.type != "cuda":
            return None
        import torch

        event = torch.cuda.Event()
        event.record(torch.cuda.current_stream(self.device))
        return event

    def forget(self, detector: Any) -> None:
        """``detector`` was released: later batches run on the next caller's."""
        with self.lock:
            if self.detector is detector:
                self.detector = None


def _take(queue: list[_Request], max_frames: int) -> list[_Request]:
    """The leading requests of ``queue`` holding at most ``max_frames`` frames (at least one request), removed."""
    n, total = 0, 0
    while n < len(queue) and (n == 0 or total + len(queue[n].frames) <= max_frames):
        total += len(queue[n].frames)
        n += 1
    batch = queue[:n]
    del queue[:n]
    return batch


BATCHERS: dict[tuple, Batcher] = {}
BATCHERS_LOCK = threading.Lock()

__all__ = ["Batcher", "BATCHERS", "BATCHERS_LOCK"]
