"""Objects per second written into a real NvDsBatchMeta: obbmeta.nvds.attach_obbs (one C call) vs a per-object
Python loop that sets the same fields through ctypes, the way pyds / pyservicemaker probe code does it.

Both paths write exactly the same thing per object (checked before timing): acquire an NvDsObjectMeta, tight AABB
of the rotated box clipped to the frame in rect_params, the unclipped AABB in detector_bbox_info, object_id =
UNTRACKED_OBJECT_ID, class_id, confidence, unique_component_id, obj_label, a g_malloc'd display_text, border
width / colour, one user meta with the 64-byte OBB payload (cx, cy, w, h, angle, 4 corners, version, flags) and
its C copy / release functions, add to the frame; bInferDone on the frame. Boxes lie inside the frame.

Sizes: 1 and 16 frames x 10 / 100 / 1000 objects per frame; 16 frames use attach_obbs_batch (one call per batch).
Timing: only the writing (batch creation and release are outside the timer); the median of repeats, each on a
fresh batch; the process is pinned to one CPU core.

Usage: python benchmarks/meta_write.py [--quick | --plot-only]  -> benchmarks/results/meta_write.{json,png}

``--classifier``: secondary results instead, obbmeta.nvds.attach_classifications (one C call for the whole batch)
vs a per-object ctypes loop writing the same: per object one NvDsClassifierMeta (unique_component_id,
classifier_type) with one NvDsLabelInfo (label_id, result_class_id, result_prob, result_label) through NVIDIA's
acquire / add functions, the label appended to a g_malloc'd display_text, bInferDone on the frames. The objects are
written by attach_obbs outside the timer. -> benchmarks/results/meta_write_classifier.{json,png}
"""
from __future__ import annotations

import ctypes
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, arguments, budget_time, pin_to_one_core, portable_path, write_json  # noqa: E402

from obbmeta import nvds  # noqa: E402
from obbmeta.nvds import _core, layouts  # noqa: E402
from obbmeta.palette import PALETTE_RGBA  # noqa: E402

W, H = 1920, 1080
CLASS_NAMES = ["plane", "ship", "storage-tank", "vehicle", "harbor"]


def make_boxes(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = np.column_stack([rng.uniform(100, W - 100, n), rng.uniform(100, H - 100, n), rng.uniform(8, 80, n),
                         rng.uniform(8, 80, n), rng.uniform(-math.pi, math.pi, n)]).astype(np.float32)
    return x, rng.uniform(0.2, 1.0, n).astype(np.float32), (np.arange(n) % len(CLASS_NAMES)).astype(np.int64)


class CtypesLoop:
    """The per-object baseline: NVIDIA's acquire/add functions and field sets through ctypes structs."""

    def __init__(self) -> None:
        core = _core.get()
        self.m, self.glib, self.layout = core.libs.meta, core.libs.glib, core.layout
        self.meta_type = core.obb_meta_type
        self.copy_fn = ctypes.cast(core.c.obbmeta_obb_meta_copy, ctypes.c_void_p).value
        self.release_fn = ctypes.cast(core.c.obbmeta_obb_meta_release, ctypes.c_void_p).value
        self.font = ctypes.c_char_p(b"Serif")
        self.labels = [nvds.cut_label(n) for n in CLASS_NAMES]

    def write(self, batch: int, frame: int, x: np.ndarray, s: np.ndarray, lab: np.ndarray) -> int:
        m, glib, obj_t = self.m, self.glib, self.layout.object_meta
        written = 0
        for (cx, cy, w, h, a), score, cls in zip(x.tolist(), s.tolist(), lab.tolist()):
            c, sn = math.cos(a), math.sin(a)
            ex = abs(c) * w / 2 + abs(sn) * h / 2
            ey = abs(sn) * w / 2 + abs(c) * h / 2
            x1, y1, x2, y2 = cx - ex, cy - ey, cx + ex, cy + ey
            if x2 <= 0 or y2 <= 0 or x1 >= W or y1 >= H:
                continue
            cx1, cy1, cx2, cy2 = max(x1, 0.0), max(y1, 0.0), min(x2, W), min(y2, H)
            address = m.nvds_acquire_obj_meta_from_pool(batch)
            o = obj_t.from_address(address)
            o.unique_component_id = 1
            o.class_id = cls
            o.object_id = layouts.UNTRACKED_OBJECT_ID
            o.confidence = score
            r = o.rect_params
            r.left, r.top, r.width, r.height = cx1, cy1, cx2 - cx1, cy2 - cy1
            d = o.detector_bbox_info
            d.left, d.top, d.width, d.height = x1, y1, x2 - x1, y2 - y1
            r.border_width = 3
            col = PALETTE_RGBA[cls % len(PALETTE_RGBA)]
            bc = r.border_color
            bc.red, bc.green, bc.blue, bc.alpha = col
            label = self.labels[cls]
            o.obj_label = label
            t = o.text_params
            text = glib.g_malloc(len(label) + 1)
            ctypes.memmove(text, label + b"\0", len(label) + 1)
            t.display_text = text
            t.x_offset, t.y_offset = int(cx1), int(max(cy1 - 10, 0))
            fp = t.font_params
            fp.font_name = ctypes.cast(self.font, ctypes.c_void_p).value
            fp.font_size = 10
            fp.font_color.red = fp.font_color.green = fp.font_color.blue = fp.font_color.alpha = 1.0
            t.set_bg_clr = 1
            t.text_bg_clr.alpha = 1.0
            p_addr = glib.g_malloc(ctypes.sizeof(layouts.ObbPayloadV1))
            p = layouts.ObbPayloadV1.from_address(p_addr)
            p.version, p.struct_size, p.flags = 1, ctypes.sizeof(layouts.ObbPayloadV1), 0
            p.cx, p.cy, p.w, p.h, p.angle = cx, cy, w, h, a
            corners = p.corners
            for k, (sx, sy) in enumerate(((-1, -1), (1, -1), (1, 1), (-1, 1))):
                lx, ly = sx * w / 2, sy * h / 2
                corners[2 * k] = cx + c * lx - sn * ly
                corners[2 * k + 1] = cy + sn * lx + c * ly
            um_addr = m.nvds_acquire_user_meta_from_pool(batch)
            um = layouts.UserMeta.from_address(um_addr)
            um.user_meta_data = p_addr
            um.base_meta.meta_type = self.meta_type
            um.base_meta.copy_func = self.copy_fn
            um.base_meta.release_func = self.release_fn
            m.nvds_add_user_meta_to_obj(address, um_addr)
            m.nvds_add_obj_meta_to_frame(frame, address, None)
            written += 1
        layouts.FrameMetaHead.from_address(frame).bInferDone = 1
        return written


def fresh_batch(frames: int) -> nvds.BatchMeta:
    batch = nvds.BatchMeta.create(frames)
    for k in range(frames):
        batch.add_frame(source_id=k, width=W, height=H, frame_num=0)
    return batch


def time_once(kind: str, loop: CtypesLoop, frames: int, dets: list) -> float:
    batch = fresh_batch(frames)
    fs = batch.frames
    try:
        t0 = time.perf_counter()
        if kind == "attach_obbs":
            if frames == 1:
                nvds.attach_obbs(batch, fs[0], xywhr=dets[0][0], scores=dets[0][1], labels=dets[0][2],
                                 class_names=CLASS_NAMES)
            else:
                nvds.attach_obbs_batch(batch, dets, class_names=CLASS_NAMES)
        else:
            for f, (x, s, lab) in zip(fs, dets):
                loop.write(batch.address, f.address, x, s, lab)
        return time.perf_counter() - t0
    finally:
        batch.destroy()


def same_output(loop: CtypesLoop) -> None:
    """Both paths must write the same fields; compared through read_boxes and the raw structs."""
    x, s, lab = make_boxes(50, 7)
    out = []
    for kind in ("attach_obbs", "ctypes_loop"):
        batch = fresh_batch(1)
        f = batch.frames[0]
        if kind == "attach_obbs":
            nvds.attach_obbs(batch, f, xywhr=x, scores=s, labels=lab, class_names=CLASS_NAMES)
        else:
            loop.write(batch.address, f.address, x, s, lab)
        b = nvds.read_boxes(f)
        d = b.data
        out.append([(cls, label, round(conf, 6), tuple(round(v, 2) for v in rect), tuple(round(v, 2) for v in det),
                     oid, src, tuple(round(v, 5) for v in x5), tuple(round(c, 2) for p in corners for c in p))
                    for cls, label, conf, rect, det, oid, src, x5, corners in zip(
                        b.labels.tolist(), nvds.label_strings(b), b.scores.tolist(), d["rect"].tolist(),
                        d["detector_bbox"].tolist(), d["object_id"].tolist(), d["source"].tolist(), b.xywhr.tolist(),
                        d["corners"].tolist())])
        batch.destroy()
    if out[0] != out[1]:
        raise SystemExit("the two paths disagree; the benchmark would compare different work")


def main() -> None:
    ap = arguments(__doc__, plot_only=True, quick=True)
    ap.add_argument("--classifier", action="store_true", help="time attach_classifications instead")
    args = ap.parse_args()
    if args.classifier:
        return classifier_main(args)
    if args.plot_only:
        plot(json.loads((RESULTS / "meta_write.json").read_text()), RESULTS / "meta_write.png")
        return
    pinned = pin_to_one_core()
    loop = CtypesLoop()
    same_output(loop)
    core = _core.get()
    results = []
    for frames in (1, 16):
        for per_frame in (10, 100, 1000):
            dets = [make_boxes(per_frame, seed) for seed in range(frames)]
            n = frames * per_frame
            row = {"frames": frames, "objects_per_frame": per_frame, "objects": n}
            for kind in ("attach_obbs", "ctypes_loop"):
                time_once(kind, loop, frames, dets)  # warm-up
                t = budget_time(lambda: time_once(kind, loop, frames, dets), 0.3 if args.quick else 1.5)
                med = t["median_s"]
                row[kind] = {"median_s": med, "repeats": t["repeats"], "us_per_object": med / n * 1e6,
                             "objects_per_s": n / med, "min_s": t["min_s"]}
            row["speedup"] = row["ctypes_loop"]["median_s"] / row["attach_obbs"]["median_s"]
            results.append(row)
            print(f"{frames:2d} frames x {per_frame:4d} objects: attach_obbs {row['attach_obbs']['us_per_object']:7.3f}"
                  f" us/object ({row['attach_obbs']['objects_per_s']:>12,.0f}/s), ctypes loop "
                  f"{row['ctypes_loop']['us_per_object']:7.2f} us/object, speed-up {row['speedup']:6.1f}x",
                  flush=True)
    info = {
        "what": __doc__.split("\n\n")[0].replace("\n", " "),
        "pinned_to": pinned, "numpy": np.__version__,
        "nvds_library": portable_path(core.libs.meta_path), "layout": core.layout.name, "frame_size": [W, H],
        "timing": "median over repeats (>= 5, up to 1.5 s per case) of the write only, each on a fresh batch",
        "goal": ">= 20x the per-object ctypes loop and <= 2 us per object",
        "results": results,
    }
    path = write_json("meta_write", info)
    plot(json.loads(path.read_text()), RESULTS / "meta_write.png")


def plot(info: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = info["results"]
    labels = [f"{r['frames']}x{r['objects_per_frame']}" for r in rows]
    pos = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(8, 4.2), dpi=120)
    a = [r["attach_obbs"]["us_per_object"] for r in rows]
    c = [r["ctypes_loop"]["us_per_object"] for r in rows]
    ax.bar(pos - 0.2, c, 0.4, label="per-object ctypes loop (pyds-style)", color="#bbbbbb")
    ax.bar(pos + 0.2, a, 0.4, label="obbmeta.nvds.attach_obbs (one C call)", color="#2a7fd4")
    for p, r in zip(pos, rows):
        ax.text(p, r["ctypes_loop"]["us_per_object"] * 1.15, f"{r['speedup']:.0f}x", ha="center", fontsize=8)
    ax.axhline(2.0, color="#d62728", lw=0.8, ls="--", label="goal: 2 us / object")
    ax.set_yscale("log")
    ax.set_ylim(0.1, 200)
    ax.set_xticks(pos, labels)
    ax.set_xlabel("frames x objects per frame")
    ax.set_ylabel("microseconds per object (median, log)")
    cpu = info.get("machine", {}).get("cpu") or info.get("cpu", "CPU")  # older results kept cpu at the top level
    ax.set_title(f"Writing OBB metadata into NvDsBatchMeta ({cpu}, one core)", fontsize=9)
    ax.legend(fontsize=8, loc="upper center", ncol=3)
    fig.tight_layout()
    fig.savefig(path)


# ---------------------------------------------------------------- secondary results (classifier metadata)

CLASSIFIER_TYPE = ctypes.create_string_buffer(b"vehicletype")  # lives as long as the process, as it must


class CtypesClassifierLoop:
    """The per-object baseline for classifier metadata: NVIDIA's acquire / add functions and field sets through
    ctypes structs, one label per object, the label appended to display_text as nvinfer does."""

    def __init__(self) -> None:
        core = _core.get_classifier()
        self.m, self.glib, self.layout = core.libs.meta, core.libs.glib, core.layout
        vp = ctypes.c_void_p
        for name, args, res in (("nvds_acquire_classifier_meta_from_pool", [vp], vp),
                                ("nvds_acquire_label_info_meta_from_pool", [vp], vp),
                                ("nvds_add_classifier_meta_to_object", [vp, vp], None),
                                ("nvds_add_label_info_meta_to_classifier", [vp, vp], None)):
            fn = getattr(self.m, name)
            fn.argtypes, fn.restype = args, res
        self.names = [n.encode() for n in CLASS_NAMES]
        self.kind = ctypes.addressof(CLASSIFIER_TYPE)

    def write(self, batch: int, frames: list[int], objects: np.ndarray, class_ids: np.ndarray,
              probs: np.ndarray) -> None:
        m, glib, obj_t = self.m, self.glib, self.layout.object_meta
        for o, cls, prob in zip(objects.tolist(), class_ids.tolist(), probs.tolist()):
            cm_address = m.nvds_acquire_classifier_meta_from_pool(batch)
            cm = layouts.ClassifierMeta.from_address(cm_address)
            cm.unique_component_id = 2
            cm.classifier_type = self.kind
            li_address = m.nvds_acquire_label_info_meta_from_pool(batch)
            li = layouts.LabelInfo.from_address(li_address)
            li.label_id, li.result_class_id, li.result_prob = 0, cls, prob
            name = self.names[cls]
            li.result_label = name
            m.nvds_add_label_info_meta_to_classifier(cm_address, li_address)
            m.nvds_add_classifier_meta_to_object(o, cm_address)
            t = obj_t.from_address(o).text_params
            old = ctypes.string_at(t.display_text) if t.display_text else b""
            text = old + b" " + name + b"\0"
            new = glib.g_malloc(len(text))
            ctypes.memmove(new, text, len(text))
            if t.display_text:
                glib.g_free(t.display_text)
            t.display_text = new
        for f in frames:
            layouts.FrameMetaHead.from_address(f).bInferDone = 1


def batch_with_objects(frames: int, per_frame: int) -> tuple[nvds.BatchMeta, np.ndarray]:
    batch = fresh_batch(frames)
    nvds.attach_obbs_batch(batch, [make_boxes(per_frame, seed) for seed in range(frames)], class_names=CLASS_NAMES)
    objects = nvds.read_boxes_batch(batch)[0]["address"]
    return batch, objects


def classify_once(kind: str, loop: CtypesClassifierLoop, frames: int, per_frame: int, class_ids: np.ndarray,
                  probs: np.ndarray, cpu: list[float]) -> float:
    """Wall seconds of one write; its CPU seconds (this thread's) go to ``cpu``: the work is single-threaded and
    never waits, so CPU time is its cost even on a busy shared machine, where wall time also counts preemption."""
    batch, objects = batch_with_objects(frames, per_frame)
    try:
        t0, c0 = time.perf_counter(), time.thread_time()
        if kind == "attach_classifications":
            nvds.attach_classifications(batch, objects, class_ids=class_ids, probs=probs, class_names=CLASS_NAMES,
                                        classifier_type="vehicletype")
        else:
            loop.write(batch.address, [f.address for f in batch.frames], objects, class_ids, probs)
        wall, used = time.perf_counter() - t0, time.thread_time() - c0
        cpu.append(used)
        return wall
    finally:
        batch.destroy()


def same_classifications(loop: CtypesClassifierLoop) -> None:
    """Both paths must write the same; compared through read_classifications and display_text."""
    out = []
    for kind in ("attach_classifications", "ctypes_loop"):
        batch, objects = batch_with_objects(2, 20)
        class_ids = (np.arange(objects.size) % len(CLASS_NAMES)).astype(np.int64)
        probs = np.linspace(0.1, 0.9, objects.size).astype(np.float32)
        if kind == "attach_classifications":
            nvds.attach_classifications(batch, objects, class_ids=class_ids, probs=probs, class_names=CLASS_NAMES,
                                        classifier_type="vehicletype")
        else:
            loop.write(batch.address, [f.address for f in batch.frames], objects, class_ids, probs)
        out.append([([(c.component_id, c.classifier_type, c.labels, c.num_labels)
                      for c in nvds.read_classifications(int(o))],
                     ctypes.string_at(loop.layout.object_meta.from_address(int(o)).text_params.display_text))
                    for o in objects])
        out[-1].append([f.infer_done for f in batch.frames])
        batch.destroy()
    if out[0] != out[1]:
        raise SystemExit("the two classifier paths disagree; the benchmark would compare different work")


def classifier_main(args) -> None:
    path_json = RESULTS / "meta_write_classifier.json"
    if args.plot_only:
        plot_classifier(json.loads(path_json.read_text()), RESULTS / "meta_write_classifier.png")
        return
    pinned = pin_to_one_core()
    loop = CtypesClassifierLoop()
    same_classifications(loop)
    core = _core.get_classifier()
    results = []
    for frames, per_frame in ((1, 10), (1, 100), (16, 100), (16, 1000)):
        n = frames * per_frame
        rng = np.random.default_rng(n)
        class_ids = rng.integers(0, len(CLASS_NAMES), n).astype(np.int64)
        probs = rng.uniform(0.2, 1.0, n).astype(np.float32)
        row = {"frames": frames, "objects_per_frame": per_frame, "objects": n}
        for kind in ("attach_classifications", "ctypes_loop"):
            cpu: list[float] = []
            classify_once(kind, loop, frames, per_frame, class_ids, probs, cpu)  # warm-up
            cpu.clear()
            t = budget_time(lambda: classify_once(kind, loop, frames, per_frame, class_ids, probs, cpu),
                            0.3 if args.quick else 1.5)
            med, cpu_med = t["median_s"], float(np.median(cpu))
            row[kind] = {"median_s": med, "cpu_median_s": cpu_med, "repeats": t["repeats"],
                         "us_per_object": cpu_med / n * 1e6, "wall_us_per_object": med / n * 1e6,
                         "objects_per_s": n / cpu_med, "min_s": t["min_s"]}
        row["speedup"] = row["ctypes_loop"]["cpu_median_s"] / row["attach_classifications"]["cpu_median_s"]
        results.append(row)
        print(f"{frames:2d} frames x {per_frame:4d} objects: attach_classifications "
              f"{row['attach_classifications']['us_per_object']:7.3f} us/object, ctypes loop "
              f"{row['ctypes_loop']['us_per_object']:7.2f} us/object (CPU time), speed-up {row['speedup']:6.1f}x",
              flush=True)
    info = {
        "what": "NvDsClassifierMeta + NvDsLabelInfo per object (one label, display_text appended): "
                "obbmeta.nvds.attach_classifications (one C call) vs a per-object Python ctypes loop",
        "pinned_to": pinned, "numpy": np.__version__, "load_average": list(os.getloadavg()),
        "nvds_library": portable_path(core.libs.meta_path), "layout": core.layout.name,
        "timing": "median over repeats (>= 5, up to 1.5 s per case) of the classifier write only, each on a fresh "
                  "batch whose objects attach_obbs wrote outside the timer; us_per_object, objects_per_s and speedup "
                  "from the thread's CPU time (the machine is shared), wall time beside it",
        "results": results,
    }
    path = write_json("meta_write_classifier", info)
    plot_classifier(json.loads(path.read_text()), RESULTS / "meta_write_classifier.png")


def plot_classifier(info: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = info["results"]
    pos = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    ax.bar(pos - 0.2, [r["ctypes_loop"]["us_per_object"] for r in rows], 0.4,
           label="per-object ctypes loop (pyds-style)", color="#bbbbbb")
    ax.bar(pos + 0.2, [r["attach_classifications"]["us_per_object"] for r in rows], 0.4,
           label="obbmeta.nvds.attach_classifications (one C call)", color="#2a7fd4")
    for p, r in zip(pos, rows):
        top = max(r["ctypes_loop"]["us_per_object"], r["attach_classifications"]["us_per_object"])
        ax.text(p, top * 1.15, f"{r['speedup']:.1f}x", ha="center", fontsize=8)
    ax.set_yscale("log")
    ax.set_ylim(0.1, 30)
    ax.set_xticks(pos, [f"{r['frames']}x{r['objects_per_frame']}" for r in rows])
    ax.set_xlabel("frames x objects per frame")
    ax.set_ylabel("CPU microseconds per object (median, log)")
    cpu = info.get("machine", {}).get("cpu", "CPU")
    ax.set_title(f"Writing classifier metadata (one label per object) into NvDsBatchMeta ({cpu}, one core)",
                 fontsize=9)
    ax.legend(fontsize=8, loc="upper center", ncol=2)
    fig.tight_layout()
    fig.savefig(path)


if __name__ == "__main__":
    main()
