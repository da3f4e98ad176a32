"""Readers and writers of objects and display metas on one batch, under load: 9 threads for at least 10 s
(OBBMETA_STRESS_SECONDS to run longer). Writers: two attach_obbs threads, two add_display_lines threads, one
add_obb_overlay thread, one thread copying the batch with NVIDIA's copy function; readers: read_boxes (object by
object and as columns) and read_display_lines. Every read must be whole (each call's objects and lines all there or
none, every object's rect_params the AABB of its own payload) and at the end nothing is lost."""
from __future__ import annotations

import math
import os
import random
import threading
import time
from collections import Counter

import numpy as np
import pytest
import readback

from obbmeta import nvds
from obbmeta.osd import add_obb_overlay

pytestmark = pytest.mark.slow

SECONDS = float(os.environ.get("OBBMETA_STRESS_SECONDS", "10"))
W, H = 640, 480
BOXES_PER_CALL = 4
LINES_PER_CALL = 20  # two display metas per call
NAMES = ["writer-a", "writer-b"]


def boxes_of_call(writer: int, call: int) -> dict:
    j = np.arange(BOXES_PER_CALL, dtype=np.float32)
    x = np.column_stack([50 + 120 * j, np.full(BOXES_PER_CALL, 50 + (call % 50) * 8.0), np.full(BOXES_PER_CALL, 30.0),
                         np.full(BOXES_PER_CALL, 10.0), np.full(BOXES_PER_CALL, 0.1 + 0.2 * writer)]).astype(np.float32)
    return dict(xywhr=x, scores=np.full(BOXES_PER_CALL, call / 1e6, np.float32),
                labels=np.full(BOXES_PER_CALL, writer), class_names=NAMES)


def colour_of_call(writer: int, call: int) -> tuple[float, float, float, float]:
    return (writer / 4, (call % 997) / 997, (call // 997) / 997, 1.0)


def check_objects(rows: list, where: str) -> Counter:
    """Every object whole: its payload's AABB is its rect_params; each call's objects all present."""
    calls: Counter = Counter()
    for obj, obb in rows:
        assert obb.source == "user_meta", where
        cx, cy, w, h, a = obb.xywhr
        ex = 0.5 * (abs(math.cos(a)) * w + abs(math.sin(a)) * h)
        ey = 0.5 * (abs(math.sin(a)) * w + abs(math.cos(a)) * h)
        left, top, rw, rh = obj.rect
        assert abs(left - (cx - ex)) < 1e-3 and abs(top - (cy - ey)) < 1e-3, where
        assert abs(rw - 2 * ex) < 1e-3 and abs(rh - 2 * ey) < 1e-3, where
        assert obj.label == NAMES[obj.class_id], where
        calls[(obj.class_id, obj.confidence)] += 1
    assert set(calls.values()) <= {BOXES_PER_CALL}, f"{where}: a call's objects seen in part: {calls}"
    return calls


def check_lines(lines: list, where: str) -> Counter:
    calls = Counter(line[5] for line in lines)
    assert set(calls.values()) <= {LINES_PER_CALL}, f"{where}: a call's lines seen in part"
    return calls


def test_readers_and_writers_of_objects_and_display_metas_on_one_batch():
    batch = nvds.BatchMeta.create(4)
    frames = [batch.add_frame(source_id=k, width=W, height=H) for k in range(4)]
    obj_frames, line_frames = frames[:2], frames[2:]
    written = [0, 0]
    lines_written = [0, 0]
    errors: list[str] = []
    stop = threading.Event()
    reads = Counter()

    def guarded(fn):
        def run():
            try:
                while not stop.is_set():
                    fn()
            except BaseException as exc:  # noqa: BLE001 - reported by the main thread
                errors.append(f"{fn.__name__}: {type(exc).__name__}: {exc}")
                stop.set()
        return threading.Thread(target=run, name=fn.__name__)

    def object_writer(k):
        state = {"call": 0}

        def write_objects():
            state["call"] += 1
            r = nvds.attach_obbs(batch, obj_frames[k], **boxes_of_call(k, state["call"]))
            assert r.written == BOXES_PER_CALL and r.filtered == 0
            written[k] += r.written
            time.sleep(0.002)
        write_objects.__name__ = f"object_writer_{k}"
        return write_objects

    def line_writer(k):
        state = {"call": 0}

        def write_lines():
            state["call"] += 1
            j = np.arange(LINES_PER_CALL, dtype=np.float32)
            segs = np.column_stack([10 + j, np.full(LINES_PER_CALL, 10.0), 10 + j, np.full(LINES_PER_CALL, 100.0)])
            n = nvds.add_display_lines(batch, line_frames[k], segs.astype(np.float32),
                                       colors=colour_of_call(k, state["call"]), width=2)
            assert n == LINES_PER_CALL
            lines_written[k] += n
            time.sleep(0.004)
        write_lines.__name__ = f"line_writer_{k}"
        return write_lines

    def overlay_writer():
        r = add_obb_overlay(batch, obj_frames[1])
        assert r.objects == r.drawn and r.lines == 4 * r.drawn
        time.sleep(0.003)

    def copier():
        copy = batch.copy()
        try:
            for f in copy.frames:
                check_objects(readback.pairs(f), "copy")
        finally:
            copy.destroy()
        reads["copies"] += 1
        time.sleep(0.02)

    def object_reader():
        f = random.choice(obj_frames)
        check_objects(readback.pairs(f), "read_boxes")
        arrays = nvds.read_boxes(f)
        assert set(Counter(zip(arrays.labels.tolist(), arrays.scores.tolist())).values()) <= {
            BOXES_PER_CALL}, "read_boxes saw a call's objects in part"
        reads["objects"] += 1

    def line_reader():
        check_lines(nvds.read_display_lines(random.choice(line_frames)), "read_display_lines")
        reads["lines"] += 1

    def overlay_reader():
        with batch.locked():  # one snapshot of the frame's objects and its overlay lines
            objects = len(readback.pairs(obj_frames[1]))
            overlay = len(nvds.read_display_lines(obj_frames[1]))
        assert overlay % 4 == 0 and overlay <= 4 * objects, (overlay, objects)
        reads["overlay"] += 1

    threads = [guarded(object_writer(0)), guarded(object_writer(1)), guarded(line_writer(0)), guarded(line_writer(1)),
               guarded(overlay_writer), guarded(copier), guarded(object_reader), guarded(line_reader),
               guarded(overlay_reader)]
    start = time.monotonic()
    for t in threads:
        t.start()
    while time.monotonic() - start < SECONDS and not stop.is_set():
        time.sleep(0.1)
    stop.set()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    assert len(threads) >= 8 and time.monotonic() - start >= SECONDS

    # Nothing lost: every object and every line written is there, once.
    for k in range(2):
        calls = check_objects(readback.pairs(obj_frames[k]), "final")
        assert sum(calls.values()) == written[k] > 0
        lines = check_lines(nvds.read_display_lines(line_frames[k]), "final")
        assert sum(lines.values()) == lines_written[k] > 0
    final = add_obb_overlay(batch, obj_frames[1])
    assert final.removed > 0 and len(nvds.read_display_lines(obj_frames[1])) == 4 * written[1]
    assert min(reads.values()) > 0 and len(reads) == 4, reads
    before = nvds.live_payloads()
    batch.destroy()
    assert nvds.live_payloads() == before - sum(written)
