"""The scale story: 1, 4 and 16 streams of 1920x1080 frames through obbinfer with the bundled aerial model at 640,
(a) batched as nvstreammux batches them (one NvBufSurface of S frames and a batch meta of S frames per buffer, pushed
by appsrc: NVIDIA's NvBufSurfaceCreate in CUDA memory with ``--device cuda``, system memory on the CPU) and (b) as S
separate pipelines in one process (appsrc ! obbinfer ! fakesink each, fed from S threads at once), against the same
pipelines without obbinfer in the same run (the baseline: appsrc ! fakesink).

Variants of the model path: ``eager`` (fp32), ``graph`` (model + decode in a CUDA graph, one host sync per batch),
``fp16`` (autocast, in a graph), and for separate pipelines ``graph+batch`` (``max-batch-wait-us``: frames of the S
pipelines run as one model batch; ``eager+batch`` on the CPU). Aggregate fps is frames over wall time after a
warm-up, the median of repeats; ``per_batch_ms`` splits a batch into the element's phases (map, infer, write) and
the detector's (prepare, model_decode, copy), measured in a separate profiling pass that synchronises the device
between phases; ``thread_cpu_ms_per_frame``: the CPU time a frame of each group of like-named threads over the fed
phase (the elements started and warmed up before it), and their total.

Also measured here: the bundled model's forward alone, eager and replayed from a CUDA graph, at batch 1 and 16; and
on the CPU the demo's fps with and without a parallel encoder load (``--cpu-load``).

Usage: python benchmarks/pipeline_streams.py [--device cuda|cpu] [--quick] [--streams 1,4,16] [--formats RGBA,NV12]
       -> benchmarks/results/pipeline_streams[_cpu].{json,png}
"""
from __future__ import annotations

import functools
import os
import re
import statistics
import sys
import threading
import time
from pathlib import Path

# GStreamer is initialised before torch / NVIDIA's libraries are loaded (see tests/gpu/nvmm.sh): keep this first.
from obbmeta.gst import Gst  # isort: skip
import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))
from _common import RESULTS, arguments, machine, write_json  # noqa: E402
from surfaces import CudaSurface, HostSurface, batched_buffers  # noqa: E402

import obbmeta.gst  # noqa: E402
from obbmeta import nvds  # noqa: E402

W, H = 1920, 1080
MODEL = "obbmeta.models:aerial_detector"
VARIANTS = {"eager": {}, "graph": {"cuda-graph": True}, "fp16": {"cuda-graph": True, "precision": "fp16"}}


@functools.lru_cache(maxsize=64)
def scene_image(k: int, fmt: str):
    """Generated aerial scene k at 1080p (so the model finds objects) in ``fmt``'s planes."""
    from obbmeta import scenes

    rgb = scenes.frame("aerial", seed=k, size=(W, H)).image
    if fmt == "NV12":
        import cv2

        return _nv12(cv2, rgb)
    return np.concatenate([rgb, np.full((H, W, 1), 255, np.uint8)], 2)


def frames_for(streams: int, fmt: str, device: str, first: int = 0):
    """A batch surface of ``streams`` 1080p frames (scenes first .. first + streams - 1)."""
    imgs = [scene_image(first + k, fmt) for k in range(streams)]
    if device == "cuda":
        return CudaSurface(imgs, fmt)
    return HostSurface(imgs, fmt)


def _nv12(cv2, rgb):
    """(luma (H, W), chroma (H/2, W/2, 2)) of an RGB frame (OpenCV's BT.601 limited-range I420, interleaved)."""
    i420 = cv2.cvtColor(rgb, cv2.COLOR_RGB2YUV_I420)
    u = i420[H:H + H // 4].reshape(H // 2, W // 2)
    v = i420[H + H // 4:].reshape(H // 2, W // 2)
    return i420[:H], np.stack([u, v], 2)


def pipeline(fmt: str, element: str | None, props: dict) -> tuple:
    """appsrc [! element] ! fakesink, and the list the sink's pad probe appends each buffer's arrival time to."""
    p = Gst.Pipeline()
    src = Gst.ElementFactory.make("appsrc")
    src.set_property("caps", Gst.Caps.from_string(f"video/x-raw(memory:NVMM),format={fmt},width={W},height={H},"
                                                  "framerate=30/1"))
    src.set_property("format", Gst.Format.TIME)
    src.set_property("max-buffers", 8)
    src.set_property("block", True)
    sink = Gst.ElementFactory.make("fakesink")
    sink.set_property("sync", False)
    chain = [src]
    infer = None
    if element:
        infer = Gst.ElementFactory.make(element)
        for k, v in props.items():
            infer.set_property(k, v)
        chain.append(infer)
    chain.append(sink)
    for e in chain:
        p.add(e)
    for a, b in zip(chain, chain[1:]):
        a.link(b)
    arrivals: list[float] = []
    sink.get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER,
                                          lambda _pad, _info: arrivals.append(time.perf_counter())
                                          or Gst.PadProbeReturn.OK)
    return p, src, infer, arrivals


def run_pipelines(specs: list, warmup: int) -> float:
    """Feed each (pipeline, appsrc, buffers, arrivals) from its own thread at once; the wall seconds from the last
    pipeline's ``warmup``-th buffer out to the last buffer out of all of them (the model loads at start, before)."""
    for p, *_ in specs:
        if p.set_state(Gst.State.PLAYING) == Gst.StateChangeReturn.FAILURE:
            msg = p.get_bus().pop_filtered(Gst.MessageType.ERROR)
            why = msg.parse_error()[0].message if msg else "no error posted"
            raise RuntimeError(f"a pipeline did not start: {why}")

    def feed(src, bufs):
        for b in bufs:
            src.emit("push-buffer", b)
        src.emit("end-of-stream")

    threads = [threading.Thread(target=feed, args=(src, bufs)) for _p, src, bufs, _a in specs]
    for t in threads:
        t.start()
    try:
        for p, *_ in specs:
            msg = p.get_bus().timed_pop_filtered(600 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
            if msg is None or msg.type != Gst.MessageType.EOS:
                raise RuntimeError(f"pipeline failed: {msg.parse_error() if msg else 'timeout'}")
    finally:
        for t in threads:
            t.join()
        for p, *_ in specs:
            p.set_state(Gst.State.NULL)
    start = max(a[warmup - 1] for *_, a in specs)
    end = max(a[-1] for *_, a in specs)
    return end - start


def measure(streams: int, mode: str, variant: str, fmt: str, device: str, count: int, repeats: int) -> dict:
    props = {"model": MODEL, "input-size": "640", "device": device, **VARIANTS.get(variant.split("+")[0], {})}
    if variant.endswith("+batch"):
        props["max-batch-wait-us"] = 4000
        props["batch-size"] = streams
    per_pipe = streams if mode == "batched" else 1
    pipes = 1 if mode == "batched" else streams
    surfaces = [frames_for(per_pipe, fmt, device, first=k) for k in range(pipes)]
    warmup = 5

    def rate(element: str | None, profile: bool = False) -> tuple[float, list, dict]:
        specs, infers = [], []
        for s in surfaces:
            p, src, infer, arrivals = pipeline(fmt, element, props if element else {})
            specs.append((p, src, batched_buffers(s, per_pipe, count + warmup, W, H), arrivals))
            infers.append(infer)
        if profile:
            for infer in infers:
                infer.timings = []
        for p, *_ in specs:  # each element starts (model, warm-up) in this call; no buffer flows before PLAYING
            p.set_state(Gst.State.PAUSED)
        if profile:  # the detector exists once the element started: profile from its first batch on
            for infer in infers:
                infer.detector.timings = []
        cpu0 = _thread_cpu()
        wall = run_pipelines(specs, warmup)
        per_thread = _thread_cpu_since(cpu0)
        phases = []
        if profile:
            for infer in infers:
                for outer, inner in list(zip(infer.timings, infer.detector.timings))[warmup:]:
                    phases.append({**outer, **inner})
        return streams * count / wall, phases, per_thread

    runs = sorted((rate("obbinfer") for _ in range(repeats)), key=lambda r: r[0])
    fps, threads = statistics.median(r[0] for r in runs), runs[len(runs) // 2][2]  # the threads of the median run
    baseline = statistics.median(rate(None)[0] for _ in range(repeats))
    # calls gathered into another pipeline's batch are not seen by a profile: no profiling pass for "+batch"
    phases = rate("obbinfer", profile=True)[1] if device == "cuda" and not variant.endswith("+batch") else []
    split = {k: round(statistics.median(p[k] for p in phases) * 1e3, 3) for k in phases[0] if k != "frames"} \
        if phases else {}
    return {"streams": streams, "mode": mode, "variant": variant, "format": fmt, "device": device,
            "fps": round(fps, 1), "baseline_fps": round(baseline, 1), "ratio": round(fps / baseline, 3),
            "per_batch_ms": split, "thread_cpu_ms_per_frame": _per_frame(threads, streams * (count + warmup)),
            "buffers": count, "repeats": repeats}


def _per_frame(per_thread: dict, frames: int) -> dict:
    """CPU ms a frame of each group of like-named threads (digits folded: ``appsrc#:src`` is every pipeline's
    streaming thread, on which obbinfer maps, submits and, without an output thread, writes; ``obbinfer#:out`` the
    elements' output threads), over the fed phase (the elements started before), and their ``total``."""
    groups: dict = {}
    for name, sec in per_thread.items():
        key = re.sub(r"\d+", "#", name)
        groups[key] = groups.get(key, 0.0) + sec
    out = {k: round(v * 1e3 / frames, 3) for k, v in sorted(groups.items(), key=lambda kv: -kv[1]) if v > 0.005}
    out["total"] = round(sum(groups.values()) * 1e3 / frames, 3)
    return out


# ---------------------------------------------------------------- sources that load the GPU

class Producers:
    """``streams`` NVMM sources running in this process, as a real pipeline's sources run beside its inference:
    ``upload``: ``videotestsrc ! nvvideoconvert`` (each frame drawn on the CPU and uploaded, in ``fmt``);
    ``decoder``: NVIDIA's ``nvv4l2decoder`` decoding a 1080p H.264 stream (I_PCM, made by tests/gst/h264_pcm.py:
    every frame decoded, 3 MB of bitstream each, so more host-to-device traffic than a camera's stream, pushed by a
    Python thread per source) to NV12, then for any other ``fmt`` an ``nvvideoconvert`` on the GPU to it (what a
    pipeline that draws into RGBA runs); ``camera``: the same decoder and converter fed as a camera's stream feeds
    them, by ``multifilesrc`` (C, no Python) looping over a stream of one I_PCM key frame and 29 P_Skip pictures
    per second (``h264_pcm.encode_gop``: 3 MB a second instead of 90, every picture still decoded and converted on
    the GPU). Each ends in an appsink holding at most two frames, so a consumer slower than the sources throttles
    them, as nvstreammux's back-pressure does."""

    def __init__(self, source: str, streams: int, fmt: str):
        self.pipes, self.sinks, self.feeders, self.stop = [], [], [], threading.Event()
        self.folder = None
        caps = f"video/x-raw(memory:NVMM),format={fmt},width={W},height={H}"
        aus = _pcm_stream() if source == "decoder" else None
        h264 = f"video/x-h264,stream-format=byte-stream,alignment=au,width={W},height={H},framerate=30/1"
        convert = "" if fmt == "NV12" else " ! nvvideoconvert"
        if source == "camera":
            import tempfile

            self.folder = tempfile.TemporaryDirectory(prefix="obbmeta-camera-")
            camera = _pcm_stream(gop=30)
            for k, au in enumerate(camera):
                Path(self.folder.name, f"au{k:05d}.h264").write_bytes(au)
        for _ in range(streams):
            if source == "upload":
                head = (f"videotestsrc pattern=ball is-live=false ! video/x-raw,format={fmt},width={W},height={H},"
                        "framerate=30/1 ! nvvideoconvert")
            elif source == "decoder":
                head = f"appsrc name=src format=time block=true max-buffers=4 caps={h264} ! nvv4l2decoder{convert}"
            elif source == "camera":
                head = (f'multifilesrc location={self.folder.name}/au%05d.h264 index=0 stop-index={len(camera) - 1} '
                        f'loop=true caps="{h264}" ! nvv4l2decoder{convert}')
            else:
                raise ValueError(f"source must be upload, decoder or camera, got {source!r}")
            p = Gst.parse_launch(f"{head} ! {caps} ! appsink name=out max-buffers=2 drop=false sync=false")
            self.pipes.append(p)
            self.sinks.append(p.get_by_name("out"))
            if aus is not None:
                t = threading.Thread(target=self._feed, args=(p.get_by_name("src"), aus), daemon=True)
                self.feeders.append(t)
        for p in self.pipes:
            if p.set_state(Gst.State.PLAYING) == Gst.StateChangeReturn.FAILURE:
                raise RuntimeError(f"a {source} source did not start")
        for t in self.feeders:
            t.start()

    def _feed(self, src, aus: list) -> None:
        k = 0
        whole = [Gst.Buffer.new_wrapped(au) for au in aus]
        while not self.stop.is_set():
            buf = whole[k % len(whole)].copy()  # shares the bitstream's memory: no copy per frame
            buf.pts = buf.dts = k * Gst.SECOND // 30
            if src.emit("push-buffer", buf) != Gst.FlowReturn.OK:
                return
            k += 1

    def next_frames(self) -> None:
        """One frame from every source (blocking), as a muxer takes a batch."""
        for sink in self.sinks:
            if sink.emit("try-pull-sample", 20 * Gst.SECOND) is None:
                raise RuntimeError("a source gave no frame within 20 s (ended or failed)")

    def close(self) -> None:
        self.stop.set()
        for p in self.pipes:
            p.set_state(Gst.State.NULL)
        if self.folder is not None:
            self.folder.cleanup()


def _pcm_stream(frames: int = 4, gop: int = 1) -> list:
    """The access units of ``frames`` random I_PCM key frames, each followed by ``gop - 1`` P_Skip pictures."""
    sys.path.insert(0, str(ROOT / "tests" / "gst"))
    from h264_pcm import encode_gop

    rng = np.random.default_rng(0)
    return encode_gop([(rng.integers(16, 236, (H, W), dtype=np.uint8),
                        rng.integers(16, 241, (H // 2, W // 2), np.uint8),
                        rng.integers(16, 241, (H // 2, W // 2), np.uint8)) for _ in range(frames)], gop)


CHAINS = {"obbinfer": ["obbinfer"], "obbinfer+track+overlay": ["obbinfer", "obbtrack", "obboverlay"],
          # queues between, as a DeepStream app puts them: each element on its own thread
          "obbinfer+queue+track+queue+overlay": ["obbinfer", "queue", "obbtrack", "queue", "obboverlay"],
          # the harbour demo's secondary detector on every ship (obbmeta.demo.container_stage's settings)
          "obbinfer+secondary-detector": ["obbinfer", "obbinfer:containers"]}
SECONDARY = {"process-mode": 2, "model": "obbmeta.models:container_detector", "output-format": "yolo-obb",
             "input-size": "256x64", "unique-id": 3, "operate-on-gie-id": 1, "operate-on-class-ids": "1",
             "crop-reading": "long-side", "crop-padding": 0.05, "crop-fill": 114, "class-names": "container",
             "device": "cuda", "batch-size": 64}


def measure_sourced(producers: Producers, source: str, streams: int, fmt: str, chain: str, variant: str,
                    depth: int, count: int, repeats: int, rate: float | None = None) -> dict:
    """One batched pipeline ``appsrc ! <chain> ! fakesink`` fed a batch of ``streams`` 1080p scene frames (a
    NvBufSurface made by NVIDIA's NvBufSurfaceCreate) each time every producer has delivered one frame (a muxer
    in Python), against ``appsrc ! fakesink`` fed the same way in the same run (the baseline). Also: latency per
    buffer (obbinfer's sink pad in -> fakesink), and the process's CPU seconds per batch beyond the baseline's.
    obbinfer's own CPU time a batch on its threads (``obbinfer_host_ms``: submit on the streaming thread, result and
    write on the output thread, without what downstream does in its push) and each batch's GPU span (``gpu_ms``, CUDA
    events on its stream) come from the element. ``rate``: batches a second pushed at most (a live pipeline's pace,
    e.g. 30 for 16 cameras of 30 fps), so that latency is the element's, not a queue's in front of a saturated
    pipeline."""
    surface = frames_for(streams, fmt, "cuda")
    warmup = 5
    props = {"model": MODEL, "input-size": "640", "device": "cuda", "batch-size": streams, "queue-depth": depth,
             **VARIANTS[variant]}

    def once(elements: list) -> tuple:
        p = Gst.Pipeline()
        src = Gst.ElementFactory.make("appsrc")
        src.set_property("caps", Gst.Caps.from_string(f"video/x-raw(memory:NVMM),format={fmt},width={W},"
                                                      f"height={H},framerate=30/1"))
        src.set_property("format", Gst.Format.TIME)
        src.set_property("max-buffers", 2)
        src.set_property("block", True)
        chain_elems = []
        for name in elements:
            e = Gst.ElementFactory.make(name.split(":")[0])
            if name == "obbinfer":
                for k, v in {**props, "unique-id": 1}.items():
                    e.set_property(k, v)
                e.gpu_timing = True
            if name == "obbinfer:containers":
                for k, v in {**SECONDARY, "queue-depth": depth, **VARIANTS[variant]}.items():
                    e.set_property(k, v)
            if name == "queue":
                e.set_property("max-size-buffers", 4)
            if name == "obboverlay":
                e.set_property("mode", "draw")
            chain_elems.append(e)
        sink = Gst.ElementFactory.make("fakesink")
        sink.set_property("sync", False)
        elems = [src, *chain_elems, sink]
        for e in elems:
            p.add(e)
        for a, b in zip(elems, elems[1:]):
            a.link(b)
        t_in, t_out = {}, {}

        def stamp(times: dict):
            def probe(_pad, info):
                times.setdefault(info.get_buffer().pts, time.perf_counter())
                return Gst.PadProbeReturn.OK
            return probe

        (chain_elems[0] if chain_elems else sink).get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER,
                                                                                    stamp(t_in))
        sink.get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER, stamp(t_out))
        counted = {"objects": 0, "children": 0, "buffers": 0}
        children = any(":" in name for name in elements)  # a secondary stage: children are told by their parent

        def count_objects(_pad, info):  # objects reaching the sink after the warm-up (children: parent set)
            counted["buffers"] += 1
            if chain_elems and counted["buffers"] > warmup:
                try:
                    batch = nvds.BatchMeta.from_gst_buffer(info.get_buffer())
                except LookupError:
                    return Gst.PadProbeReturn.OK
                if children:  # one C read of every object (the sink's thread is obbinfer's output thread)
                    rows, _ = nvds.read_boxes_batch(batch)
                    counted["objects"] += len(rows)
                    counted["children"] += int((rows["parent"] != 0).sum())
                else:  # the frames' counts only
                    counted["objects"] += sum(f.num_obj_meta for f in batch.frames)
            return Gst.PadProbeReturn.OK
        sink.get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER, count_objects)
        bufs = batched_buffers(surface, streams, count + warmup, W, H)
        if p.set_state(Gst.State.PAUSED) == Gst.StateChangeReturn.FAILURE:
            raise RuntimeError("the pipeline did not start")
        p.set_state(Gst.State.PLAYING)  # the model was loaded and warmed up (graphs captured) in READY -> PAUSED
        threads0 = _thread_cpu()
        cpu0 = time.process_time()
        with GpuClocks() as clocks:
            due = time.perf_counter()
            for b in bufs:
                producers.next_frames()
                if rate:  # a live pace: the next batch not before its time
                    time.sleep(max(0.0, due - time.perf_counter()))
                    due += 1.0 / rate
                src.emit("push-buffer", b)
            src.emit("end-of-stream")
            msg = p.get_bus().timed_pop_filtered(300 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
        cpu = time.process_time() - cpu0
        threads = _thread_cpu_since(threads0)
        p.set_state(Gst.State.NULL)
        if msg is None or msg.type != Gst.MessageType.EOS:
            raise RuntimeError(f"pipeline failed: {msg.parse_error() if msg else 'timeout'}")
        outs = sorted(t_out.values())
        wall = outs[-1] - outs[warmup - 1]
        lat = sorted(t_out[k] - t_in[k] for k in sorted(t_out)[warmup:] if k in t_in)
        per_batch = {name: round(sec * 1e3 / len(bufs), 3) for name, sec in threads.items()}
        infer = chain_elems[0] if elements and elements[0] == "obbinfer" else None
        host = list(infer.host_times)[warmup:] if infer is not None else []
        gpu = list(infer.gpu_times)[warmup:] if infer is not None else []
        return streams * count / wall, lat, cpu / len(bufs), counted["objects"] / wall, counted["children"] / wall, \
            per_batch, clocks.summary(), host, gpu

    runs, base = [], []
    for r in range(repeats):  # interleaved, ABBA: the sources' rate drifts between runs (seen up to 2x on the H200,
        # with the GPU's clocks: an idle GPU clocks down, so whichever runs first after a pause is the slower)
        for measured in ((CHAINS[chain], []) if r % 2 == 0 else ([], CHAINS[chain])):
            (runs if measured else base).append(once(measured))
    fps = statistics.median(r[0] for r in runs)
    baseline = statistics.median(r[0] for r in base)
    lat = sorted(x for r in runs for x in r[1])
    host = [c for r in runs for c in r[7]]
    gpu = sorted(g for r in runs for g in r[8])
    return {"source": source, "streams": streams, "mode": "batched", "chain": chain, "variant": variant,
            "queue_depth": depth, "format": fmt, "device": "cuda", "fps": round(fps, 1),
            "baseline_fps": round(baseline, 1), "ratio": round(fps / baseline, 3),
            "latency_ms": _p50_p99(lat, 2),
            "cpu_ms_per_batch": round((statistics.median(r[2] for r in runs) - statistics.median(r[2] for r in base))
                                      * 1e3, 3),
            "objects_per_s": round(statistics.median(r[3] for r in runs), 1),
            "children_per_s": round(statistics.median(r[4] for r in runs), 1),
            "thread_cpu_ms_per_batch": _top(runs[len(runs) // 2][5]),
            "baseline_thread_cpu_ms_per_batch": _top(base[len(base) // 2][5]),
            "gpu": [r[6] for r in runs], "baseline_gpu": [r[6] for r in base],
            **({"rate_batches_per_s": rate} if rate else {}),
            **({"obbinfer_host_ms": _host_split(host)} if host else {}),
            **({"gpu_ms": _p50_p99(gpu, 3)} if gpu else {}),
            "buffers": count, "repeats": repeats}


def _p50_p99(seconds: list, digits: int) -> dict:
    """The median and 99th percentile of sorted ``seconds``, in ms."""
    return {"p50": round(seconds[len(seconds) // 2] * 1e3, digits),
            "p99": round(seconds[int(len(seconds) * 0.99)] * 1e3, digits)}


def _host_split(costs: list) -> dict:
    """Medians of obbinfer's CPU ms a batch on its threads (the element's host_times), and of their sum."""
    names = ("submit", "result", "write")
    parts = {k: round(statistics.median(c[i] for c in costs) * 1e3, 3) for i, k in enumerate(names)}
    return {**parts, "total": round(statistics.median(sum(c) for c in costs) * 1e3, 3), "batches": len(costs)}


class GpuClocks:
    """The GPU's SM clock (MHz), power (W) and utilisation (%) sampled every 100 ms by ``nvidia-smi`` while the
    block runs (read only: the GPU's settings are left as they are); :meth:`summary` gives their medians, or {} where
    nvidia-smi is missing. An idle H200 clocks down: a run that starts on an idle GPU runs slower at first, which is
    why the rows carry these for the chain's runs and the baseline's."""

    FIELDS = ("sm_mhz", "power_w", "util_pct")

    def __enter__(self) -> "GpuClocks":
        import shutil
        import subprocess

        self.samples: list = []
        self.proc = None
        if shutil.which("nvidia-smi"):
            self.proc = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw,utilization.gpu",
                                          "--format=csv,noheader,nounits", "-i", "0", "-lms", "100"],
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            self.reader = threading.Thread(target=self._read, daemon=True)
            self.reader.start()
        return self

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                self.samples.append(tuple(float(v) for v in line.split(",")))
            except ValueError:
                continue

    def __exit__(self, *exc) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(5)
            self.reader.join(5)

    def summary(self) -> dict:
        if not self.samples:
            return {}
        return {"samples": len(self.samples), **{name: round(statistics.median(s[i] for s in self.samples), 1)
                                                 for i, name in enumerate(self.FIELDS)}}


def _thread_cpu() -> dict:
    """{thread id: (name, CPU seconds)} of this process's threads, from /proc (Linux; {} elsewhere)."""
    out = {}
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    for task in Path("/proc/self/task").glob("*"):
        try:
            name = (task / "comm").read_text().strip()
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            out[task.name] = (name, (int(fields[11]) + int(fields[12])) / tick)  # utime + stime
        except (OSError, IndexError, ValueError):
            continue
    return out


def _thread_cpu_since(before: dict) -> dict:
    """CPU seconds per thread name spent since ``before`` (threads that started since count from zero)."""
    spent: dict = {}
    for tid, (name, sec) in _thread_cpu().items():
        spent[name] = spent.get(name, 0.0) + sec - before.get(tid, (name, 0.0))[1]
    return spent


def _top(per_thread: dict, k: int = 8) -> dict:
    """The ``k`` busiest threads other than the sources' own (``videotestsrc*``: about 14 ms a batch each, the same
    with and without the chain): the elements' streaming and output threads, the queues' threads."""
    return dict(sorted(((name, v) for name, v in per_thread.items() if not name.startswith("videotestsrc")),
                       key=lambda kv: -kv[1])[:k])


def _model_format(spec: str) -> str:
    return {".onnx": "onnx", ".pt": "torchscript", ".ts": "torchscript"}.get(Path(spec).suffix, "factory")


def forward_alone(device: str) -> list:
    """The model's forward (``--model``, as obbinfer loads it) at 640, eager and replayed from a CUDA graph, batch 1
    and 16 (CUDA events)."""
    from obbmeta.infer.models import load_model

    model = load_model(MODEL, device)
    rows = []
    for batch in (1, 16):
        x = torch.rand(batch, 3, 640, 640, device=device)
        with torch.inference_mode():
            for _ in range(5):
                model(x)
            times = []
            for _ in range(50):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                model(x)
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end))
            eager = statistics.median(times)
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    model(x)
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            try:
                with torch.cuda.graph(g, capture_error_mode="thread_local"):
                    model(x)
            except Exception as exc:  # noqa: BLE001 - e.g. a traced model that reads numbers from the GPU
                from obbmeta.infer.graphs import _end_failed_capture

                _end_failed_capture(torch.device(device))
                rows.append({"model_format": _model_format(MODEL), "batch": batch, "eager_ms": round(eager, 3),
                             "graph_ms": None, "graph_error": str(exc).strip().splitlines()[0][:200]})
                continue
            times = []
            for _ in range(50):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                g.replay()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end))
            rows.append({"model_format": _model_format(MODEL), "batch": batch, "eager_ms": round(eager, 3),
                         "graph_ms": round(statistics.median(times), 3)})
    return rows


def cpu_under_load(frames: int) -> dict:
    """The demo's pipeline fps on the CPU, alone and with a parallel VP8 encoder loading the machine."""
    import json
    import subprocess

    from obbmeta import demo

    def fps():
        out = Path(os.environ.get("TMPDIR", "/tmp")) / "obbmeta-streams-demo"
        if demo.main(["--frames", str(frames), "--output", str(out)]) != 0:
            raise RuntimeError("the demo failed")
        return json.loads((out / "summary.json").read_text())["fps"]

    alone = fps()
    load = subprocess.Popen(["gst-launch-1.0", "-q", "videotestsrc", "is-live=false", "!",
                             "video/x-raw,width=1280,height=720", "!", "vp8enc", "deadline=1", "!", "fakesink"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)
        loaded = fps()
    finally:
        load.terminate()
        load.wait()
    return {"frames": frames, "fps_alone": round(alone, 2), "fps_loaded": round(loaded, 2),
            "ratio": round(loaded / alone, 3), "torch_threads": torch.get_num_threads()}


def main() -> None:
    global MODEL
    ap = arguments(__doc__.split("\n\n")[0], quick=True)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", choices=["cpu", "cuda"])
    ap.add_argument("--streams", default="1,4,16")
    ap.add_argument("--formats", default="RGBA,NV12")
    ap.add_argument("--cpu-load", action="store_true", help="also the CPU demo with and without an encoder's load")
    ap.add_argument("--modes", default="batched,separate")
    ap.add_argument("--variants", default=None, help="comma-separated (default: every variant of the device)")
    ap.add_argument("--name", default=None, help="results/<name>.json (default pipeline_streams[_cpu])")
    ap.add_argument("--sources", default="appsrc",
                    help="comma-separated: appsrc (ready-made batches, nothing else on the GPU), upload "
                         "(videotestsrc ! nvvideoconvert producers), decoder (nvv4l2decoder producers fed I_PCM "
                         "frames by Python threads: NV12, or converted on the GPU to each of --formats), camera (the "
                         "same decoders fed a camera-like stream by multifilesrc: one key frame and 29 P_Skip "
                         "pictures a second)")
    ap.add_argument("--model", default=MODEL, help="obbinfer's model (a factory, a TorchScript or an ONNX file)")
    ap.add_argument("--repeats", type=int, default=2, help="runs of each row (median), baseline interleaved")
    ap.add_argument("--buffers", type=int, default=40, help="buffers measured in each run (after 5 of warm-up)")
    ap.add_argument("--depths", default="0,2", help="queue-depth values of the upload / decoder / camera rows")
    ap.add_argument("--chains", default="obbinfer+track+overlay",
                    help="comma-separated chains measured after obbinfer alone (upload / decoder / camera rows): "
                         + ", ".join(CHAINS))
    ap.add_argument("--rates", default="",
                    help="comma-separated batches a second (e.g. 30: 16 cameras of 30 fps): obbinfer and each chain "
                         "again at that live pace (upload / decoder / camera rows), for the latency a buffer gets")
    ap.add_argument("--switch-interval", type=float, default=None,
                    help="sys.setswitchinterval for the run, in seconds (Python's default 0.005): how long a thread "
                         "running Python keeps the interpreter lock from one whose C call returned")
    args = ap.parse_args()
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval)
    MODEL = args.model
    obbmeta.gst.register()
    count, repeats = (10, 1) if args.quick else (args.buffers, args.repeats)
    streams = [int(s) for s in args.streams.split(",")]
    variants = ["eager", "graph", "fp16"] if args.device == "cuda" else ["eager"]
    chosen = args.variants.split(",") if args.variants else None
    sources = args.sources.split(",")
    rows = []
    name = args.name or "pipeline_streams" + ("" if args.device == "cuda" else "_cpu")

    def save() -> None:  # after every row: a run cut short keeps what it measured
        if not args.quick:
            write_json(name, {"device": args.device, "machine": machine(), "rows": rows, "model": MODEL,
                              "input_size": 640, "frame": f"{W}x{H}", "note": __doc__.split("\n\n")[1]})
    for source in (x for x in sources if x != "appsrc"):
        if args.device != "cuda":
            raise SystemExit(f"--sources {source} needs --device cuda (NVIDIA's NVMM sources)")
        for fmt in args.formats.split(","):
            for s in streams:
                producers = Producers(source, s, fmt)
                try:
                    for v in ([] if args.variants == "none" else chosen or ["eager", "graph"]):
                        for depth in (int(d) for d in args.depths.split(",")):
                            r = measure_sourced(producers, source, s, fmt, "obbinfer", v, depth, count, repeats)
                            r["switch_interval_s"] = sys.getswitchinterval()
                            print(r, flush=True)
                            rows.append(r)
                            save()
                    depth = max(int(d) for d in args.depths.split(","))
                    chains = list(filter(None, args.chains.split(",")))
                    paced = [(chain, float(rate)) for rate in filter(None, args.rates.split(","))
                             for chain in ["obbinfer", *chains]]
                    for chain, rate in [(c, None) for c in chains] + paced:
                        r = measure_sourced(producers, source, s, fmt, chain, "graph", depth, count, repeats, rate)
                        r["switch_interval_s"] = sys.getswitchinterval()
                        print(r, flush=True)
                        rows.append(r)
                        save()
                finally:
                    producers.close()
    if "appsrc" not in sources:
        args.modes = ""
    for fmt in args.formats.split(","):
        for s in streams:
            for mode in filter(None, args.modes.split(",")):
                batched = "graph+batch" if args.device == "cuda" else "eager+batch"
                for v in variants + ([batched] if mode == "separate" and s > 1 else []):
                    if (chosen and v not in chosen) or (not chosen and fmt != "RGBA" and v != "graph"):
                        continue  # NV12 sources: the fastest variant only, unless chosen
                    r = {"source": "appsrc", "model_format": _model_format(MODEL),
                         **measure(s, mode, v, fmt, args.device, count, repeats)}
                    print(r, flush=True)
                    rows.append(r)
                    save()
    result = {"device": args.device, "machine": machine(), "rows": rows, "model": MODEL, "input_size": 640,
              "frame": f"{W}x{H}", "note": __doc__.split("\n\n")[1]}
    if args.device == "cuda":
        result["forward_alone"] = forward_alone("cuda")
        print(result["forward_alone"])
    if args.cpu_load:
        result["cpu_under_load"] = cpu_under_load(30 if args.quick else 60)
        print(result["cpu_under_load"])
    if not args.quick:
        path = write_json(name, result)
        plot(rows, name)
        print(f"wrote {path}")


def plot(rows: list, name: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.5))
    labels, fps, base = [], [], []
    for r in rows:
        labels.append(f"{r.get('source', 'appsrc')} {r['streams']} {r['mode'][:3]} {r['variant']} {r['format']}"
                      + (f" q{r['queue_depth']}" if "queue_depth" in r else "")
                      + (" +track+overlay" if r.get("chain", "obbinfer") != "obbinfer" else ""))
        fps.append(r["fps"])
        base.append(r["baseline_fps"])
    x = np.arange(len(rows))
    ax.bar(x - 0.2, base, 0.4, label="without obbinfer (same run)", color="#bbbbbb")
    ax.bar(x + 0.2, fps, 0.4, label="with obbinfer")
    ax.set_xticks(x, labels, rotation=70, fontsize=7)
    ax.set_ylabel("aggregate fps (median)")
    ax.set_yscale("log")
    ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / f"{name}.png", dpi=120)


if __name__ == "__main__":
    main()
