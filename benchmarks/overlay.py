"""Time to plan one frame's OBB overlay for nvdsosd: obbmeta.osd.add_obb_overlay (one C call per frame) vs a
per-line Python loop writing the same display metas through ctypes, the way pyds probe code does it.

Both paths write exactly the same metadata (checked before timing, through read_display_lines and the objects'
text offsets): each object's 4 edges as NvOSD_LineParams (clipped, rounded unsigned pixels, per-class colour,
width 3) in display metas acquired from the batch's pool, 16 lines each, marked in misc_osd_data[3], added to the
frame; and the object's label (text_params x/y offsets) moved to its top-most corner. The loop gets its boxes from
``read_boxes`` (one C call: generous to it; a pyds probe would walk the user metas in Python).

Sizes: one 1920x1080 frame with 10 / 100 / 1000 objects written by attach_obbs (outside the timer). Timing: the
overlay call only (``_common.median_time``, median of repeats), each repeat on its own frame whose batch's display
pool was grown beforehand (the speed-up compares these); also add_obb_overlay called again on a frame that already
has its overlay (it removes the old display metas first), and on a fresh batch, where NVIDIA's pool growth (paid
by any writer) dominates and varies a lot. The process is pinned to one CPU core.

Usage: python benchmarks/overlay.py [--quick | --plot-only]  -> benchmarks/results/overlay.{json,png}
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    RESULTS,
    arguments,
    median_time,
    pin_to_one_core,
    plot_lines,
    portable_path,
    write_json,
)

from obbmeta import nvds  # noqa: E402
from obbmeta.nvds import _core  # noqa: E402
from obbmeta.osd import add_obb_overlay, remove_obb_overlay  # noqa: E402
from obbmeta.palette import PALETTE_RGBA  # noqa: E402

W, H = 1920, 1080
WIDTH = 3
SIZES = (10, 100, 1000)
METHODS = ("add_obb_overlay", "ctypes per-line loop (pyds-style)", "add_obb_overlay, replacing its previous overlay",
           "add_obb_overlay on a fresh batch (NVIDIA's pool growth included)")


def make_boxes(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = np.column_stack([rng.uniform(100, W - 100, n), rng.uniform(100, H - 100, n), rng.uniform(8, 80, n),
                         rng.uniform(8, 80, n), rng.uniform(-math.pi, math.pi, n)]).astype(np.float32)
    return x, (np.arange(n) % 20).astype(np.int64)


def frame_with_objects(x: np.ndarray, labels: np.ndarray, warm: bool = False
                       ) -> tuple[nvds.BatchMeta, nvds.FrameMeta]:
    """A one-frame batch with the objects written. ``warm``: its display-meta pool already holds enough elements
    (an overlay written and removed), so the timing shows the writers' own work rather than NVIDIA's pool growth,
    whose cost (g_malloc0 of 7 KB elements, page faults) is the same for both writers and very noisy."""
    batch = nvds.BatchMeta.create(1)
    frame = batch.add_frame(source_id=0, width=W, height=H, frame_num=0)
    nvds.attach_obbs(batch, frame, xywhr=x, labels=labels)
    if warm:
        add_obb_overlay(batch, frame, label=False)
        remove_obb_overlay(batch, frame)
    return batch, frame


class CtypesLoop:
    """The per-line baseline: NVIDIA's acquire/add functions and one ctypes field set per value."""

    def __init__(self) -> None:
        core = _core.get()
        self.m, self.layout = core.libs.meta, core.layout

    @staticmethod
    def clip(x0: float, y0: float, x1: float, y1: float) -> tuple | None:
        dx, dy = x1 - x0, y1 - y0
        t0, t1 = 0.0, 1.0
        for p, q in ((-dx, x0), (dx, W - x0), (-dy, y0), (dy, H - y0)):
            if p == 0.0:
                if q < 0.0:
                    return None
            else:
                t = q / p
                if p < 0.0:
                    if t > t1:
                        return None
                    t0 = max(t0, t)
                else:
                    if t < t0:
                        return None
                    t1 = min(t1, t)
        return x0 + t0 * dx, y0 + t0 * dy, x0 + t1 * dx, y0 + t1 * dy

    @staticmethod
    def pixel(v: float, limit: int) -> int:
        return int(min(max(math.floor(v + 0.5), 0), limit - 1))

    def write(self, batch: nvds.BatchMeta, frame: nvds.FrameMeta) -> int:
        m, display_t, obj_t = self.m, self.layout.display_meta, self.layout.object_meta
        obbs = nvds.read_boxes(frame)
        objects = []
        node = frame._head.obj_meta_list
        while node:
            objects.append(node.contents.data)
            node = node.contents.next
        dm, written = None, 0
        for address, c8, cls in zip(objects, obbs["corners"].tolist(), obbs.labels.tolist()):
            colour = PALETTE_RGBA[cls % len(PALETTE_RGBA)]
            for k in range(4):
                (x0, y0), (x1, y1) = c8[k], c8[(k + 1) % 4]
                seg = self.clip(x0, y0, x1, y1)
                if seg is None:
                    continue
                if dm is None or dm.num_lines >= 16:
                    d_addr = m.nvds_acquire_display_meta_from_pool(batch.address)
                    dm = display_t.from_address(d_addr)
                    dm.misc_osd_data[_core.OVERLAY_MARK_SLOT] = _core.OVERLAY_MARK
                    m.nvds_add_display_meta_to_frame(frame.address, d_addr)
                lp = dm.line_params[dm.num_lines]
                lp.x1, lp.y1 = self.pixel(seg[0], W), self.pixel(seg[1], H)
                lp.x2, lp.y2 = self.pixel(seg[2], W), self.pixel(seg[3], H)
                lp.line_width = WIDTH
                lc = lp.line_color
                lc.red, lc.green, lc.blue, lc.alpha = colour
                dm.num_lines += 1
                written += 1
            o = obj_t.from_address(address)
            if o.text_params.display_text:
                tx, ty = min(c8, key=lambda p: (p[1], p[0]))
                o.text_params.x_offset, o.text_params.y_offset = self.pixel(tx, W), self.pixel(ty - 10, H)
        return written


def text_offsets(frame: nvds.FrameMeta) -> list[tuple[int, int]]:
    obj_t = _core.get().layout.object_meta
    out, node = [], frame._head.obj_meta_list
    while node:
        t = obj_t.from_address(node.contents.data).text_params
        out.append((t.x_offset, t.y_offset))
        node = node.contents.next
    return out


def same_output(loop: CtypesLoop) -> None:
    """Both paths must write the same lines and labels, or the benchmark would compare different work."""
    x, labels = make_boxes(300, 7)
    x[:20, :2] = np.float32([[-10.0, 500.0]])  # some boxes across the frame's edge: clipping on both paths
    out = []
    for kind in ("c", "loop"):
        batch, frame = frame_with_objects(x, labels)
        if kind == "c":
            add_obb_overlay(batch, frame, width=WIDTH)
        else:
            loop.write(batch, frame)
        out.append((sorted(nvds.read_display_lines(frame)), text_offsets(frame)))
        batch.destroy()
    if out[0] != out[1]:
        raise SystemExit("the two paths disagree; the benchmark would compare different work")


def time_method(method: str, loop: CtypesLoop, n: int, repeats: int) -> dict:
    x, labels = make_boxes(n, n)
    if method.startswith("add_obb_overlay, replacing"):
        batch, frame = frame_with_objects(x, labels)
        add_obb_overlay(batch, frame, width=WIDTH)
        try:
            return median_time(lambda: add_obb_overlay(batch, frame, width=WIDTH), repeats, warmup=2)
        finally:
            batch.destroy()
    warm = "fresh batch" not in method
    frames = [frame_with_objects(x, labels, warm) for _ in range(repeats + 1)]  # each repeat on a fresh frame
    todo = iter(frames)
    if method.startswith("add_obb_overlay"):
        fn = lambda: add_obb_overlay(*next(todo), width=WIDTH)  # noqa: E731
    else:
        fn = lambda: loop.write(*next(todo))  # noqa: E731
    try:
        return median_time(fn, repeats, warmup=1)
    finally:
        for batch, _ in frames:
            batch.destroy()


def main() -> None:
    args = arguments(__doc__, plot_only=True, quick=True).parse_args()
    if args.plot_only:
        plot(json.loads((RESULTS / "overlay.json").read_text()))
        return
    quick = args.quick
    pinned = pin_to_one_core()
    loop = CtypesLoop()
    same_output(loop)
    rows = []
    for n in SIZES:
        repeats = {10: 400, 100: 200, 1000: 40}[n] // (8 if quick else 1)
        row = {"n": n, "objects": n, "lines": 4 * n, "methods": {}}
        for method in METHODS:
            reps = max(5, repeats // 4) if method.startswith("ctypes") else repeats
            t = time_method(method, loop, n, reps)
            t["us_per_object"] = t["median_s"] / n * 1e6
            row["methods"][method] = t
        c = row["methods"]["add_obb_overlay"]["median_s"]
        row["speedup_vs_ctypes_loop"] = row["methods"][METHODS[1]]["median_s"] / c
        rows.append(row)
        us = {m: row["methods"][m]["median_s"] * 1e6 for m in METHODS}
        print(f"{n:5d} objects ({4 * n:5d} lines): add_obb_overlay {us[METHODS[0]]:7.1f} us, ctypes loop "
              f"{us[METHODS[1]]:8.1f} us, speed-up {row['speedup_vs_ctypes_loop']:5.1f}x; replacing "
              f"{us[METHODS[2]]:7.1f} us; fresh batch {us[METHODS[3]]:7.1f} us", flush=True)
    core = _core.get()
    info = {
        "what": __doc__.split("\n\n")[0].replace("\n", " "),
        "pinned_to": pinned, "numpy": np.__version__, "nvds_library": portable_path(core.libs.meta_path),
        "layout": core.layout.name, "frame_size": [W, H], "line_width": WIDTH,
        "timing": "median of repeats (_common.median_time) of the overlay call only; its own frame per repeat, "
                  "display pool grown beforehand, except the 'replacing' (same frame) and 'fresh batch' rows",
        "results": rows,
    }
    path = write_json("overlay", info)
    plot(json.loads(path.read_text()))
    print(f"wrote {path}")


def plot(info: dict) -> Path:
    cpu = info.get("machine", {}).get("cpu", "CPU")
    return plot_lines(info["results"], "overlay", f"OBB overlay planning, one 1920x1080 frame ({cpu}, one core)",
                      "objects in the frame (4 lines each)")


if __name__ == "__main__":
    main()
