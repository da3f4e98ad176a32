"""What obbinfer costs per batch besides the model: map the frames, find / make the batch meta, decode + rotated NMS,
write the objects (``attach_obbs_batch``), next to a bare Python identity element in the same pipeline (the anchor:
what any gst-python element costs per buffer).

Batches as nvstreammux makes them: one NvBufSurface of B frames (1920x1080 RGBA) and a batch meta of B frame metas,
pushed by appsrc (system memory on the CPU, built like tests/surfaces.py; NVIDIA's NvBufSurfaceCreate in CUDA memory
with ``--device cuda``). The model is a stand-in returning a fixed YOLO-OBB head output (B, 4+15+1, 8400) with 20
objects x 3 proposals per frame above conf (20 objects written per frame), so decode + NMS do real work and the
model itself costs ~nothing. The element's phases are timed per batch (``element.timings``: map the frames and find
the batch meta; infer = letterbox of B frames to 640x640 on the model's device, the model, decode + NMS, the one copy
of the results to the host; write), and their sum is what obbinfer costs beyond the model. On CUDA the detector's own
phases come too (``prepare``, ``model_decode``, ``copy``; timed in the same run, the device synchronised between
them), eager and with the model + decode in a CUDA graph. Median over 60 batches after 5 warm-up batches; on the CPU
one core (affinity + 1 torch thread).

Usage: python benchmarks/pipeline_overhead.py [--device cpu|cuda] [--quick]
       -> benchmarks/results/pipeline_overhead[_cuda].{json,png}
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

# GStreamer is initialised before torch / NVIDIA's libraries are loaded (see tests/gpu/nvmm.sh): keep this first.
from obbmeta.gst import GObject, Gst, GstBase  # isort: skip
import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))
from _common import RESULTS, pin_to_one_core, write_json  # noqa: E402
from surfaces import CudaSurface, HostSurface, batched_buffers  # noqa: E402

import obbmeta.gst  # noqa: E402
from obbmeta.gst.infer import ObbInfer  # noqa: E402
from obbmeta.infer import Detector  # noqa: E402

W, H, NC, ANCHORS, OBJECTS = 1920, 1080, 15, 8400, 20


def head(batch: int, seed: int = 0) -> torch.Tensor:
    """A (B, 4+NC+1, ANCHORS) raw head: background below conf, OBJECTS boxes x 3 jittered proposals above it."""
    rng = np.random.default_rng(seed)
    out = np.zeros((batch, 4 + NC + 1, ANCHORS), np.float32)
    out[:, 0:2] = rng.uniform(0, 640, (batch, 2, ANCHORS))
    out[:, 2:4] = rng.uniform(8, 60, (batch, 2, ANCHORS))
    out[:, 4:4 + NC] = rng.uniform(0, 0.1, (batch, NC, ANCHORS))
    out[:, -1] = rng.uniform(-1.5, 1.5, (batch, ANCHORS))
    for b in range(batch):
        centres = np.stack(np.meshgrid(np.linspace(60, 580, 5), np.linspace(140, 500, 4)), -1).reshape(-1, 2)
        for k, (cx, cy) in enumerate(centres[:OBJECTS]):
            for j in range(3):
                a = 3 * k + j
                out[b, 0:4, a] = [cx + j, cy - j, 40 + j, 16, ]
                out[b, 4:4 + NC, a] = 0
                out[b, 4 + k % NC, a] = 0.9 - 0.1 * j
                out[b, -1, a] = 0.3 + 0.01 * j
    return torch.from_numpy(out)


class FixedHead(torch.nn.Module):
    def __init__(self, batch: int, device: str):
        super().__init__()
        self.out = head(batch).to(device)

    def forward(self, x):
        return self.out[: x.shape[0]]


class Identity(GstBase.BaseTransform):
    """The anchor: a gst-python element that does nothing but exist in the pipeline (in place)."""
    __gstmetadata__ = ("identity (python)", "Filter", "does nothing", "obbmeta benchmarks")
    __gsttemplates__ = ObbInfer.__gsttemplates__

    def __init__(self):
        super().__init__()
        self.set_in_place(True)

    def do_transform_ip(self, buf):
        t0 = time.perf_counter()
        TIMES["identity"].append(time.perf_counter() - t0)
        return Gst.FlowReturn.OK


GObject.type_register(Identity)
TIMES: dict[str, list[float]] = {}


def buffers(batch: int, count: int, device: str) -> list:
    rng = np.random.default_rng(1)
    imgs = [rng.integers(0, 256, (H, W, 4), dtype=np.uint8) for _ in range(batch)]
    surface = HostSurface(imgs) if device == "cpu" else CudaSurface(imgs)
    return [surface, batched_buffers(surface, batch, count, W, H)]


def run(element: Gst.Element, batch: int, count: int, device: str) -> float:
    surface, bufs = buffers(batch, count, device)
    pipeline = Gst.Pipeline()
    src = Gst.ElementFactory.make("appsrc")
    src.set_property("caps", Gst.Caps.from_string(
        f"video/x-raw(memory:NVMM),format=RGBA,width={W},height={H},framerate=30/1"))
    src.set_property("format", Gst.Format.TIME)
    sink = Gst.ElementFactory.make("fakesink")
    sink.set_property("sync", False)
    for e in (src, element, sink):
        pipeline.add(e)
    src.link(element)
    element.link(sink)
    pipeline.set_state(Gst.State.PLAYING)
    t0 = time.perf_counter()
    for b in bufs:
        src.emit("push-buffer", b)
    src.emit("end-of-stream")
    msg = pipeline.get_bus().timed_pop_filtered(600 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    wall = time.perf_counter() - t0
    pipeline.set_state(Gst.State.NULL)
    if msg is None or msg.type != Gst.MessageType.EOS:
        raise RuntimeError(f"pipeline failed: {msg.parse_error() if msg else 'timeout'}")
    del surface
    return wall / count


def measure(batch: int, device: str, count: int, warmup: int, graph: bool = False) -> dict:
    """obbinfer's time per batch (its own phases, element.timings) with a model that costs nothing: everything the
    element does besides the model forward, the letterbox included; and the identity element's in the same run."""
    global TIMES
    TIMES = {"identity": []}
    det = Detector(FixedHead(batch, device), input_size=640, conf=0.25, iou=0.45, device=device, cuda_graph=graph)
    infer = Gst.ElementFactory.make("obbinfer")
    infer.detector = det
    infer.timings = []
    det.timings = [] if device == "cuda" else None
    per_buffer = run(infer, batch, count + warmup, device)
    phases = infer.timings[warmup:]
    total = np.array([p["map"] + p["infer"] + p["write"] for p in phases])
    ident_per_buffer = run(Gst.ElementFactory.make("obbmeta_bench_identity"), batch, count + warmup, device)
    ident = np.array(TIMES["identity"][warmup:])
    ms = lambda a: round(float(statistics.median(a)) * 1e3, 4)  # noqa: E731
    row = {"batch": batch, "variant": "graph" if graph else "eager", "frames": f"{W}x{H} RGBA",
           "objects_per_frame": OBJECTS, "buffers": count,
           "overhead_ms": ms(total), "overhead_per_frame_ms": round(ms(total) / batch, 4),
           "map_ms": ms([p["map"] for p in phases]), "infer_ms": ms([p["infer"] for p in phases]),
           "write_ms": ms([p["write"] for p in phases]), "identity_transform_ms": ms(ident),
           "pipeline_ms_per_buffer": {"obbinfer": round(per_buffer * 1e3, 3),
                                      "identity (python)": round(ident_per_buffer * 1e3, 3)},
           "goal_ms": 0.5 if batch == 1 else 1.0}
    if det.timings:
        inner = det.timings[warmup:]
        row["detector_ms"] = {k: ms([t[k] for t in inner]) for k in inner[0]}
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--quick", action="store_true", help="a short run (fewer repeats) to try the script")
    args = ap.parse_args()
    if args.device == "cpu":
        pin_to_one_core()
        torch.set_num_threads(1)
    obbmeta.gst.register()
    Gst.Element.register(None, "obbmeta_bench_identity", Gst.Rank.NONE, Identity)
    count, warmup = (10, 2) if args.quick else (60, 5)
    rows = [measure(b, args.device, count, warmup, graph) for b in (1, 16)
            for graph in ((False, True) if args.device == "cuda" else (False,))]
    for r in rows:
        print(f"batch {r['batch']:2} {r['variant']}: overhead {r['overhead_ms']:.3f} ms "
              f"({r['overhead_per_frame_ms']:.3f} ms/frame; map {r['map_ms']:.3f}, letterbox + decode + copy "
              f"{r['infer_ms']:.3f}, write {r['write_ms']:.3f}; detector {r.get('detector_ms')}), identity element "
              f"{r['identity_transform_ms']:.4f} ms; pipeline per buffer {r['pipeline_ms_per_buffer']}")
    name = "pipeline_overhead" + ("_cuda" if args.device == "cuda" else "")
    if not args.quick:
        path = write_json(name, {"device": args.device, "rows": rows, "note": __doc__.split("\n\n")[1]})
        plot(rows, name)
        print(f"wrote {path}")


def plot(rows, name) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    labels = [f"batch {r['batch']} {r['variant']}" for r in rows]
    ax.bar(labels, [r["overhead_ms"] for r in rows], label="obbinfer per batch beyond the model (letterbox included)")
    ax.bar(labels, [r["identity_transform_ms"] for r in rows], label="python identity element", alpha=0.8)
    ax.plot(labels, [r["goal_ms"] for r in rows], "r_", markersize=40, label="goal")
    ax.set_ylabel("ms per batch (median)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / f"{name}.png", dpi=120)


if __name__ == "__main__":
    main()
