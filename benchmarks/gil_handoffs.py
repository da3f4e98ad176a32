"""What the interpreter lock costs obbtrack when another thread runs Python, and what keeping it saves.

ctypes releases the interpreter lock for every C call; when the call returns, the thread waits for the lock until
the thread holding it gives it up, which a thread running Python does only every ``sys.getswitchinterval()``
seconds (5 ms by default). In a pipeline several Python elements share one process, so each short C call can cost
that wait. obbmeta keeps the lock for its short C calls on a batch whose meta lock the thread holds
(``obbmeta.nvds.batch.holds_lock``; ``NativeLibrary.held``) and releases it for the long ones (the tracker's step
over a batch's streams, on several threads).

Measured: ``OrientedTracker.update_batch`` of a batch of 16 streams of 450 objects (the aerial density; scenes of
benchmarks/tracking_cost.py) on a real NvDsBatchMeta, 40 batches after 20 warm-up ones, median per batch:

* alone, and with a neighbour thread that runs Python all the time (a stand-in for the other elements' Python);
* at switch intervals 5 ms (Python's default) and 1 ms;
* ``held``: as obbmeta does it; ``releasing``: every C call releasing the lock (``holds_lock`` patched to say no:
  the anchor, in the same run). The reader's split of its rows into columns (``obbmeta_nvds_columns``, since
  session 50) keeps the lock in both: it takes no lock of its own; before it, the reader's 17 NumPy field copies
  released the lock in both (``results/gil_handoffs_0433399.json``: that tree, run right after on the same
  machine with ``PYTHONPATH`` at its checkout).

The tracker runs on one thread (``threads=1``) so that the figures count handoffs, not parallel work.
Usage: python benchmarks/gil_handoffs.py [--quick] -> benchmarks/results/gil_handoffs.json
"""
from __future__ import annotations

import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import arguments, write_json  # noqa: E402
from tracking_cost import batch_of, scene  # noqa: E402

from obbmeta.nvds import batch as batch_module  # noqa: E402
from obbmeta.track import OrientedTracker  # noqa: E402

STREAMS, OBJECTS = 16, 450


def run(scenes, neighbour: bool, batches: int, warmup: int) -> float:
    stop = threading.Event()

    def spin():  # Python all the time
        x = 0
        while not stop.is_set():
            for i in range(1000):
                x += i

    t = threading.Thread(target=spin, daemon=True)
    if neighbour:
        t.start()
    tracker, times = OrientedTracker(threads=1), []
    try:
        for f in range(warmup + batches):
            b = batch_of([sc[f % len(sc)] for sc in scenes], f)
            t0 = time.perf_counter()
            tracker.update_batch(b, frame_size=(1920, 1080))
            times.append(time.perf_counter() - t0)
            b.destroy()
    finally:
        stop.set()
        if neighbour:
            t.join()
    return statistics.median(times[warmup:]) * 1e3


def main() -> None:
    args = arguments(__doc__, quick=True).parse_args()
    batches, warmup, repeats = (10, 5, 1) if args.quick else (40, 20, 3)
    scenes = [scene(60, seed=s, n=OBJECTS) for s in range(STREAMS)]
    real = batch_module.holds_lock
    rows = []
    for interval in (0.005, 0.001):
        sys.setswitchinterval(interval)
        for mode in ("held", "releasing"):
            batch_module.holds_lock = real if mode == "held" else (lambda address: False)
            try:
                for neighbour in (False, True):
                    runs = [run(scenes, neighbour, batches, warmup) for _ in range(repeats)]
                    row = {"switch_interval_s": interval, "calls": mode, "python_neighbour": neighbour,
                           "median_ms_per_batch": round(statistics.median(runs), 3),
                           "runs_ms": [round(r, 3) for r in runs]}
                    rows.append(row)
                    print(row, flush=True)
            finally:
                batch_module.holds_lock = real
    sys.setswitchinterval(0.005)
    payload = {"streams": STREAMS, "objects_per_frame": OBJECTS, "batches": batches, "warmup": warmup,
               "repeats": repeats, "rows": rows, "numpy": np.__version__}
    if not args.quick:
        print(write_json("gil_handoffs", payload))


if __name__ == "__main__":
    main()
