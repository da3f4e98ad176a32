"""CUDA graphs of a detector's model + fixed-size decode, one per input shape (batch bucket) and decode setting."""
from __future__ import annotations

import logging
import threading
import warnings
from typing import Any

import torch

log = logging.getLogger("obbmeta")

_CAPTURE_LOCK = threading.Lock()


class GraphRunner:
    """Model + fixed-size decode captured in one CUDA graph for one input shape (batch bucket): frames are
    prepared into ``input`` and ``replay()`` gives the padded tables."""

    def __init__(self, detector: Any, shape: tuple, device: torch.device, params: Any):
        self.lock = threading.Lock()
        memory = torch.channels_last if detector.channels_last else torch.contiguous_format
        with torch.inference_mode(False):
            self.input = torch.zeros(shape, device=device).contiguous(memory_format=memory)
        side = torch.cuda.Stream(device)
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(side):
            for _ in range(2):  # lazy initialisation and allocator growth happen outside the capture
                detector._forward_padded(self.input, params)
        torch.cuda.current_stream(device).wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        # thread_local: other pipelines' threads keep using CUDA while this one captures (the global mode invalidates
        # the capture on their first allocation or sync, seen with 16 pipelines on the H200); one capture at a time.
        self.layers: list = []  # the model's output layers: graph-owned buffers, valid until the next replay
        with _CAPTURE_LOCK, torch.cuda.graph(self.graph, capture_error_mode="thread_local"):
            self.output = detector._forward_padded(self.input, params, self.layers)

    def replay(self) -> tuple:
        self.graph.replay()
        return self.output


class Graphs:
    """A detector's CUDA graphs, one per (batch bucket, input shape, decode settings); batch sizes round up to a
    power of two (the extra rows are decoded and ignored). A shape that cannot be captured is remembered and runs
    eagerly, after one warning."""

    MAX = 8

    def __init__(self, detector: Any):
        self.detector = detector
        self._lock = threading.Lock()
        self._runners: dict[tuple, GraphRunner] = {}
        self._failed: set[tuple] = set()

    def runner(self, shape: tuple, device: torch.device, params: Any) -> GraphRunner | None:
        d = self.detector
        bucket = (1 << (int(shape[0]) - 1).bit_length(),) + tuple(shape[1:])
        key = (bucket, str(device), params.graph_key())
        with self._lock:
            if key in self._failed:
                return None
            runner = self._runners.get(key)
            if runner is None:
                try:
                    runner = GraphRunner(d, bucket, device, params)
                except Exception as exc:  # noqa: BLE001 - e.g. a model that syncs or allocates on the host
                    self._failed.add(key)
                    repaired = _end_failed_capture(device)
                    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                    why = (" - the model synchronises with the host in its forward (a .item() or .tolist(), or "
                           "shape arithmetic that torch.jit.trace recorded as tensor reads), which a CUDA graph "
                           "cannot hold" if _is_capture_error(exc) else "")
                    log.warning("the model and decode could not be captured in a CUDA graph for input %s (%s: %s%s); "
                                "running eagerly%s", bucket, type(exc).__name__, first, why,
                                "" if repaired else " (CUDA random number generation in this process may fail "
                                "after this)")
                    return None
                if len(self._runners) >= self.MAX:
                    self._runners.pop(next(iter(self._runners)))
                self._runners[key] = runner
            return runner


def _is_capture_error(exc: BaseException) -> bool:
    """An error of the capture itself (an operation a capturing stream refuses, or one that invalidated it)."""
    return "capture" in str(exc).lower()


def _end_failed_capture(device: torch.device) -> bool:
    """After a capture that failed, one empty capture that succeeds: torch marks the CUDA random generators as
    capturing when a capture begins and unmarks them only when one ends without error, so after a failed capture
    every later ``torch.rand(..., device='cuda')`` in the process raises "Offset increment outside graph capture"
    (seen on the H200 with a traced model that calls .item()). Returns whether that worked."""
    try:
        side = torch.cuda.Stream(device)
        with torch.cuda.device(device), torch.cuda.stream(side):
            graph = torch.cuda.CUDAGraph()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "the CUDA graph is empty"
                with torch.cuda.graph(graph, stream=side, capture_error_mode="thread_local"):
                    pass
        torch.empty(1, device=device).uniform_()  # the generator works again
        return True
    except Exception:  # noqa: BLE001 - nothing more to do: the warning says so
        return False


__all__ = ["GraphRunner", "Graphs"]
