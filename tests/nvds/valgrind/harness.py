"""The program valgrind runs (tests/nvds/valgrind/run.sh): every allocation path of obbmeta.nvds on NVIDIA's real
libnvds_meta, small but complete.

Per round: a 3-frame batch, OBBs written in both modes (AABB and DS 9 rotation) with long / non-ASCII labels and
boxes outside the frame, display-meta lines over several display metas, the OBB overlay (lines, labels, hidden
borders, replaced by a second call; DS 9 native rects); NVIDIA's nvds_batch_meta_copy_func deep copy; read_obbs
and the overlay (replacing / removing the copied one) on the copy; both released with
nvds_batch_meta_release_func. Then the GStreamer path without gi: the batch attached to a GstBuffer through
gst_buffer_add_nvds_meta, the buffer copied (NvDsMeta transform -> batch copy -> our C copy_func) and both unref'd.
nvmsgconv message blobs and NvDsEventMsgMeta events (one per object, objSignature, strings) ride along on every
frame. Pool elements are reused across rounds (the dirty user-meta case).
Exit status 0 only if every check passed and no payload is left alive.
"""
from __future__ import annotations

import ctypes
import sys
import types
from pathlib import Path

import numpy as np

if "--no-torch" in sys.argv:
    # Under valgrind, importing torch (pulled in by obbmeta/__init__) costs minutes; obbmeta.nvds needs none of
    # it, so register the package without running its __init__.
    # The same for obbmeta.osd (its __init__ imports the torch rasteriser); the overlay planner needs no torch.
    for name, folder in (("obbmeta", "obbmeta"), ("obbmeta.osd", "obbmeta/osd")):
        package = types.ModuleType(name)
        package.__path__ = [str(Path(__file__).resolve().parents[3] / folder)]
        sys.modules[name] = package

from obbmeta import nvds  # noqa: E402
from obbmeta.nvds import _core, messages  # noqa: E402
from obbmeta.osd.overlay import add_obb_overlay, remove_obb_overlay  # noqa: E402

ROUNDS = 3
NAMES = ["plane", "é" * 100, "船" * 50, "x" * 500, ""]


def boxes(n: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    x = np.column_stack([rng.uniform(-50, 690, n), rng.uniform(-50, 530, n), rng.uniform(2, 40, n),
                         rng.uniform(2, 40, n), rng.uniform(-3.2, 3.2, n)]).astype(np.float32)
    return dict(xywhr=x, scores=rng.uniform(0, 1, n).astype(np.float32), labels=np.arange(n) % len(NAMES))


def check(condition: bool, what: str) -> None:
    if not condition:
        print(f"FAILED: {what}", flush=True)
        sys.exit(1)


def gst_round(batch_maker) -> None:
    gst = ctypes.CDLL("libgstreamer-1.0.so.0")
    gst.gst_init.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    gst.gst_buffer_new.restype = ctypes.c_void_p
    gst.gst_buffer_copy_deep.argtypes, gst.gst_buffer_copy_deep.restype = [ctypes.c_void_p], ctypes.c_void_p
    gst.gst_mini_object_unref.argtypes = [ctypes.c_void_p]
    gst.gst_init(None, None)
    buf = gst.gst_buffer_new()
    batch = batch_maker()
    batch.attach_to_gst_buffer(buf)
    copy = gst.gst_buffer_copy_deep(buf)
    a, b = nvds.BatchMeta.from_gst_buffer(buf), nvds.BatchMeta.from_gst_buffer(copy)
    check(a.address != b.address, "a buffer copy carries its own batch meta")
    check(len(nvds.read_boxes(b.frames[0])) == len(nvds.read_boxes(a.frames[0])) > 0, "the copy has the objects")
    gst.gst_mini_object_unref(copy)
    gst.gst_mini_object_unref(buf)


def make_batch(seed: int) -> nvds.BatchMeta:
    batch = nvds.BatchMeta.create(3)
    for k in range(3):
        batch.add_frame(source_id=k, width=640, height=480, frame_num=seed)
    f0, f1, f2 = batch.frames
    r = nvds.attach_obbs(batch, f0, **boxes(40, seed), class_names=NAMES)
    check(r.written + r.filtered == 40 and r.filtered > 0, "some boxes are outside the frame")
    nvds.attach_obbs(batch, f1, **boxes(25, seed + 1), class_names=NAMES, rotation_angle=True)
    nvds.attach_obbs(batch, f2, xywhr=np.zeros((0, 5), np.float32))
    # Secondary results (NvDsClassifierMeta / NvDsLabelInfo): long names and texts carry pResult_label.
    o0, o1 = nvds.read_boxes(f0)["address"], nvds.read_boxes(f1)["address"]
    ids = np.stack([np.arange(len(o0)) % (len(NAMES) + 1) - 1, np.arange(len(o0)) % 2], axis=1)
    r = nvds.attach_classifications(batch, o0, class_ids=ids, class_names=[NAMES, ["a", "b"]], classifier_type="t")
    check(r.long_labels > 0 and r.classified == len(o0), "classifier metas with long labels")
    texts = [None if k % 4 == 0 else ("船" * 60 if k % 2 else "plate") for k in range(len(o1))]
    check(nvds.attach_classifications(batch, o1, texts=texts, component_id=3).long_labels > 0, "long texts")
    polygons = np.array([[[-20, 5], [50, 5], [50, 30], [-20, 30]]] * 9, np.float32)  # 36 edges, 9 outside
    check(nvds.add_display_lines(batch, f2, polygons, colors=(0, 1, 0, 1)) == 27, "display lines (2 metas)")
    # The OBB overlay: lines with labels and hidden borders, called twice (the first one's display metas go back
    # to the pool), DS 9 native rects on the rotated frame, and a frame with no objects.
    first = add_obb_overlay(batch, f0, hide_aabb=True)
    again = add_obb_overlay(batch, f0, hide_aabb=True, width=2)
    check(first.display_metas > 1 and again.removed == first.display_metas and again.lines == first.lines,
          "the overlay is replaced, not duplicated")
    check(add_obb_overlay(batch, f1, native=True).rects > 16, "native rects over several display metas")
    check(add_obb_overlay(batch, f2).display_metas == 0, "no objects, no display meta")
    # nvmsgconv message blobs (kernels/nvds_message.c): the JSON of each frame, an empty one, a long one
    for frame in (f0, f1, f2):
        messages.attach_obb_message(batch, frame)
    messages.attach_message(batch, f2, b"")
    messages.attach_message(batch, f2, "é" * 5000)
    # nvmsgconv event metas (kernels/nvds_message.c): every object of f0 / f1 (long and empty labels), none on f2
    check(messages.attach_obb_events(batch, f0, sensor="cam-" + "é" * 300) == f0.num_obj_meta > 0, "f0 events")
    check(messages.attach_obb_events(batch, f1, event_type="entry", timestamp="t") == f1.num_obj_meta, "f1 events")
    check(messages.attach_obb_events(batch, f2) == 0, "no objects, no events")
    return batch


def main() -> int:
    core = _core.get()
    for rnd in range(ROUNDS):
        batch = make_batch(rnd)
        copy = batch.copy()
        got = nvds.read_boxes(copy.frames[0])
        check((got["source"] == 0).all() and len(got) > 0, "read after copy")
        check("é" * 63 in nvds.label_strings(got), "the cut UTF-8 label survives the copy")
        labels = lambda frame: sorted(repr([(c.component_id, c.labels) for c in nvds.read_classifications(a)])  # noqa: E731
                                      for a in nvds.read_boxes(frame)["address"].tolist())
        check(labels(copy.frames[0]) == labels(batch.frames[0]), "the classifier metas survive the copy")
        # The copied overlay is recognised (NVIDIA's display-meta copy keeps misc_osd_data) and replaced.
        check(add_obb_overlay(copy, copy.frames[0]).removed > 1, "the copied overlay is replaced")
        check([sorted(messages.read_messages(f)) for f in copy.frames]
              == [sorted(messages.read_messages(f)) for f in batch.frames], "the message blobs survive the copy")
        check([sorted(map(repr, messages.read_events(f))) for f in copy.frames]
              == [sorted(map(repr, messages.read_events(f))) for f in batch.frames], "the events survive the copy")
        check(remove_obb_overlay(copy, copy.frames[1]) > 1, "the copied native overlay is removed")
        try:
            nvds.attach_obbs(batch, batch.frames[0], xywhr=np.array([[1, 1, float("nan"), 1, 0]], np.float32))
            check(False, "NaN raises")
        except ValueError:
            pass
        batch.destroy()
        copy.destroy()
        gst_round(lambda rnd=rnd: make_batch(100 + rnd))
    if "--leak-one-batch" in sys.argv:
        # Used by the test of the harness itself: a batch never released must make valgrind fail.
        forgotten = make_batch(999)
        forgotten._owned = False  # as if a C caller dropped the pointer
        del forgotten
        return 0
    live = core.c.obbmeta_nvds_live_payloads()
    check(live == 0, f"no payload left alive (live={live})")
    check(messages.live_blobs() == 0, f"no message blob left alive (live={messages.live_blobs()})")
    check(messages.live_events() == 0, f"no event meta left alive (live={messages.live_events()})")
    print("harness OK", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
