"""A detector call whose boxes are taken later: the model's work queued on the device, the result read when needed."""
from __future__ import annotations

import threading


class Pending:
    """A detector call whose results are taken later (:meth:`~obbmeta.infer.Detector.submit`): :meth:`result` waits
    for the device and returns one :class:`~obbmeta.OrientedBoxes` per frame on the CPU."""

    def result(self) -> list:
        raise NotImplementedError

    def wait(self) -> None:
        """Block until the device work is done (the GIL released meanwhile)."""

    @staticmethod
    def done(dets: list) -> "Pending":
        """A call whose results are already here."""
        return Done(dets)


class Done(Pending):
    def __init__(self, dets: list):
        self.dets = dets

    def result(self) -> list:
        return self.dets


class Many(Pending):
    """The parts of a call split into ``batch_size`` chunks, in order."""

    def __init__(self, parts: list[Pending]):
        self.parts = parts

    def wait(self) -> None:
        for p in self.parts:
            p.wait()

    def result(self) -> list:
        return [d for p in self.parts for d in p.result()]


class _Slice(Pending):
    """One caller's frames ``[start, stop)`` of a call several callers share (a batcher's batch): the first caller to
    ask reads the whole call's result (once, under a lock), every caller gets its own frames, or the call's error."""

    def __init__(self, shared: "_Shared", start: int, stop: int):
        self.shared, self.start, self.stop = shared, start, stop

    def wait(self) -> None:
        self.shared.pending.wait()

    def result(self) -> list:
        return self.shared.result()[self.start:self.stop]


class _Shared:
    def __init__(self, pending: Pending):
        self.pending, self.lock = pending, threading.Lock()
        self.dets: list | None = None
        self.error: BaseException | None = None

    def result(self) -> list:
        with self.lock:  # a second caller sleeps here (the GIL released) while the first waits for the device
            if self.dets is None and self.error is None:
                try:
                    self.dets = self.pending.result()
                except BaseException as exc:  # noqa: BLE001 - every caller of the call gets the error
                    self.error = exc
                self.pending = Done(self.dets or [])  # the device tables and buffers let go
        if self.error is not None:
            raise self.error
        return self.dets


def share(pending: Pending, sizes: list[int]) -> list[Pending]:
    """One :class:`Pending` per caller of a call whose frames are the callers' frames in order (``sizes``: each
    caller's frame count)."""
    shared, out, k = _Shared(pending), [], 0
    for n in sizes:
        out.append(_Slice(shared, k, k + n))
        k += n
    return out


__all__ = ["Pending", "Done", "Many", "share"]
