"""Frames that several pipelines' detectors of identical settings get at about the same time, run as one batch."""
from __future__ import annotations

import threading
import time
from typing import Any, Sequence


class _Request:
    __slots__ = ("frames", "pixel_format", "result", "error", "done")

    def __init__(self, frames: Sequence[Any], pixel_format: list[str]):
        self.frames, self.pixel_format = list(frames), pixel_format
        self.result: list | None = None
        self.error: BaseException | None = None
        self.done = False


class Batcher:
    """Frames that several callers hand detectors of identical settings at about the same time, run as one batch.

    The first caller to arrive leads: it waits up to the window (or until ``max_frames`` are queued), takes what is
    queued, runs it as one model call and hands each caller its own frames' detections; the others
    wait on the result. Callers arriving while a batch runs form the next one.
    """

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.pending: list[_Request] = []
        self.leading = False

    def run(self, detector: Any, frames: Sequence[Any], pixel_format: list[str], wait_s: float, max_frames: int,
            on_host: bool, params: Any) -> list:
        req = _Request(frames, pixel_format)
        with self.cond:
            self.pending.append(req)
            self.cond.notify_all()
            if self.leading:
                while not req.done:
                    self.cond.wait()
                if req.error is not None:
                    raise req.error
                return req.result
            self.leading = True
            deadline = time.monotonic() + wait_s
            while sum(len(r.frames) for r in self.pending) < max_frames:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.cond.wait(left)
            batch, self.pending, self.leading = self.pending, [], False
        try:
            dets = detector._call([f for r in batch for f in r.frames], [p for r in batch for p in r.pixel_format],
                                  on_host, params)
            k = 0
            for r in batch:
                r.result, k = dets[k:k + len(r.frames)], k + len(r.frames)
        except BaseException as exc:  # noqa: BLE001 - every caller of the batch gets the error
            for r in batch:
                r.error = exc
        with self.cond:
            for r in batch:
                r.done = True
            self.cond.notify_all()
        if req.error is not None:
            raise req.error
        return req.result


BATCHERS: dict[tuple, Batcher] = {}
BATCHERS_LOCK = threading.Lock()

__all__ = ["Batcher", "BATCHERS", "BATCHERS_LOCK"]
