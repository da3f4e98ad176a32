"""`obbmeta demo`: the product end to end on this machine.

A short generated aerial (or document) video — or your own file — goes through a real GStreamer pipeline::

    appsrc (RGB frames) ! obbinfer model=obbmeta.models:aerial_detector ! obboverlay mode=draw ! tee
        ! queue ! videoconvert ! vp8enc ! webmmux ! filesink DIR/annotated.webm
        ! queue ! fakesink   (probe: every frame's objects read back from the NvDsBatchMeta)

``obbinfer`` runs the bundled PyTorch detector (obbmeta.models, trained on obbmeta.scenes), decodes and suppresses
with exact rotated NMS and writes real NvDsObjectMeta + OBB user meta on NVIDIA's libnvds_meta; ``obboverlay``
draws the rotated boxes into the frames. The probe reads every object back through NVIDIA's lists and writes
``detections.jsonl``; the generated video's ground truth gives ``map50`` (obbmeta.eval); ``summary.json``,
``annotated.webm`` and a few PNG frames land in the output folder.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any, Iterable

SCENES = ("aerial", "document")
PNG_FRAMES = 3


class Progress:
    """A one-line progress bar on stderr (plain lines when stderr is not a terminal)."""

    def __init__(self, label: str, total: int | None):
        self.label, self.total, self.n, self.t0 = label, total, 0, time.perf_counter()
        self.tty = sys.stderr.isatty()
        self._last = -1

    def step(self, k: int = 1) -> None:
        self.n += k
        if self.tty:
            if self.total:
                done = int(30 * self.n / self.total)
                sys.stderr.write(f"\r{self.label:<10} [{'#' * done}{'.' * (30 - done)}] {self.n}/{self.total}")
            else:
                sys.stderr.write(f"\r{self.label:<10} {self.n}")
            sys.stderr.flush()
        elif self.total and (10 * self.n) // self.total != self._last:
            self._last = (10 * self.n) // self.total
            sys.stderr.write(f"{self.label}: {self.n}/{self.total}\n")

    def close(self) -> float:
        dt = time.perf_counter() - self.t0
        sys.stderr.write(("\r" if self.tty else "") + f"{self.label:<10} {self.n} in {dt:.1f} s\n")
        return dt


def generate(scene: str, frames: int, size: int, seed: int) -> list:
    """The demo video: ``frames`` frames of a held-out ``scene`` (seeds the model never saw in training)."""
    from . import scenes
    from .models.data import HELDOUT_SEED

    bar = Progress("generate", frames)
    out = []
    for f in scenes.video(scene, HELDOUT_SEED + seed, frames, size):
        out.append(f)
        bar.step()
    bar.close()
    return out


def pipeline_description(model: str, class_names: list[str], output: Path, *, source: str, conf: float,
                         device: str, input_size: int) -> str:
    names = ",".join(class_names)
    return (f"{source} ! obbinfer name=infer model={model} input-size={input_size} "
            f"class-names={names} conf={conf} iou=0.5 device={device} "
            "! obboverlay mode=draw thickness=2 ! tee name=t "
            f"t. ! queue ! videoconvert ! vp8enc deadline=1 target-bitrate=2000000 ! webmmux "
            f"! filesink location={output / 'annotated.webm'} "
            "t. ! queue ! fakesink name=out sync=false")


def run_pipeline(frames: list | None, output: Path, *, model: str, class_names: list[str],
                 input_file: str | None = None, conf: float = 0.25, device: str = "auto", input_size: int = 256,
                 fps: int = 10) -> dict:
    """Run the pipeline over ``frames`` (objects with an ``.image`` (H, W, 3) uint8 RGB, e.g. obbmeta.scenes
    frames) or ``input_file``, with ``model`` (obbinfer's ``model`` property) and its ``class_names``; returns what
    was read back: ``{"objects": [per-frame rows], "pngs": [...], "seconds": wall time, "frames": n}``."""
    import numpy as np

    import obbmeta.gst

    from . import nvds
    from .gst._gi import Gst

    obbmeta.gst.register()
    if input_file is not None:
        source = (f"filesrc location={input_file} ! decodebin ! videoconvert ! videoscale "
                  f"! video/x-raw,format=RGB,pixel-aspect-ratio=1/1")
    else:
        height, width = frames[0].image.shape[:2]
        source = (f"appsrc name=src format=time caps=video/x-raw,format=RGB,width={width},height={height},"
                  f"framerate={fps}/1")
    p = Gst.parse_launch(pipeline_description(model, class_names, output, source=source, conf=conf, device=device,
                                              input_size=input_size))
    total = len(frames) if frames is not None else None
    png_at = set() if total is None else {0, total // 2, total - 1}
    rows: list = []
    pngs: list = []
    errors: list = []
    bar = Progress("pipeline", total)

    def on_buffer(_pad, info):
        try:
            buf = info.get_buffer()
            batch = nvds.BatchMeta.from_gst_buffer(buf)
            for frame in batch.frames:
                a = nvds.read_obbs_arrays(frame)
                rows.append({"frame": len(rows), "pts": buf.pts, "arrays": a,
                             "objects": [obj_row(info_, obb) for info_, obb in nvds.read_obbs(frame)]})
                if len(rows) - 1 in png_at or (total is None and len(rows) <= PNG_FRAMES):
                    caps = _pad.get_current_caps().get_structure(0)
                    w, h = caps.get_value("width"), caps.get_value("height")
                    ok, m = buf.map(Gst.MapFlags.READ)
                    stride = (w * 3 + 3) // 4 * 4
                    img = np.frombuffer(m.data, np.uint8)[: stride * h].reshape(h, stride)[:, : w * 3].reshape(h, w, 3)
                    pngs.append((len(rows) - 1, img.copy()))
                    buf.unmap(m)
            bar.step()
        except Exception as exc:  # noqa: BLE001 - reported after the run
            errors.append(exc)
        return Gst.PadProbeReturn.OK

    p.get_by_name("out").get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER, on_buffer)
    t0 = time.perf_counter()
    p.set_state(Gst.State.PLAYING)
    if frames is not None:
        src = p.get_by_name("src")
        for k, f in enumerate(frames):
            buf = Gst.Buffer.new_wrapped(np.ascontiguousarray(f.image).tobytes())
            buf.pts = buf.dts = k * Gst.SECOND // fps
            buf.duration = Gst.SECOND // fps
            src.emit("push-buffer", buf)
        src.emit("end-of-stream")
    msg = p.get_bus().timed_pop_filtered(Gst.CLOCK_TIME_NONE, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    seconds = time.perf_counter() - t0
    p.set_state(Gst.State.NULL)
    bar.close()
    if msg.type == Gst.MessageType.ERROR:
        err, _ = msg.parse_error()
        raise RuntimeError(f"the pipeline stopped: {msg.src.get_name()}: {err.message}")
    if errors:
        raise errors[0]
    return {"objects": rows, "pngs": pngs, "seconds": seconds, "frames": len(rows)}


def obj_row(info: Any, obb: Any) -> dict:
    """One object as detections.jsonl writes it."""
    cx, cy, w, h, a = obb.xywhr
    left, top, rw, rh = info.rect
    return {"class_id": info.class_id, "label": info.label, "confidence": round(info.confidence, 5),
            "object_id": None if not info.tracked else info.object_id,
            "aabb": [round(v, 2) for v in (left, top, left + rw, top + rh)],
            "obb": {"cx": round(cx, 2), "cy": round(cy, 2), "w": round(w, 2), "h": round(h, 2),
                    "angle_rad": round(a, 5), "angle_deg": round(math.degrees(a), 3)},
            "polygon": [[round(x, 2), round(y, 2)] for x, y in obb.corners], "source": obb.source}


def score(frames: list, read_back: list) -> Any:
    """mAP at IoU 0.5 (and 0.5:0.95) of the objects read back from the metadata against the generator's truth."""
    import torch

    from .boxes import OrientedBoxes
    from .eval import IOU_THRESHOLDS_50_95, evaluate

    dets = [OrientedBoxes(torch.from_numpy(r["arrays"]["xywhr"]), torch.from_numpy(r["arrays"]["confidence"]),
                          torch.from_numpy(r["arrays"]["class_id"].astype("int64"))) for r in read_back]
    truth = [f.boxes for f in frames]
    return evaluate(dets, truth, iou_threshold=IOU_THRESHOLDS_50_95, class_names=list(frames[0].class_names))


def write_outputs(output: Path, result: dict, summary: dict) -> None:
    from PIL import Image

    with open(output / "detections.jsonl", "w") as f:
        for r in result["objects"]:
            f.write(json.dumps({"frame": r["frame"], "pts": r["pts"], "objects": r["objects"]}) + "\n")
    for k, img in result["pngs"]:
        Image.fromarray(img).save(output / f"frame_{k:04d}.png")
    (output / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")


def main(argv: Iterable[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="obbmeta demo", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scene", choices=SCENES, default="aerial", help="generated scene and bundled model")
    ap.add_argument("--input", help="a video file instead of a generated one (no ground truth: no mAP)")
    ap.add_argument("--frames", type=int, default=30, help="frames to generate (default 30)")
    ap.add_argument("--size", type=int, default=256, help="side of the generated frames in pixels (default 256)")
    ap.add_argument("--seed", type=int, default=0, help="which held-out scene (default 0)")
    ap.add_argument("--conf", type=float, default=0.25, help="score threshold (default 0.25)")
    ap.add_argument("--device", default="auto", help="where the model runs: auto, cpu, cuda (default auto)")
    ap.add_argument("--input-size", type=int, default=None,
                    help="model input side (multiple of 32); default: the generated frame size rounded up to 32 "
                         "(the scenes keep their objects' pixel size at any frame size, as in training), 256 for files")
    ap.add_argument("--output", default="demo-output", help="output folder (default ./demo-output)")
    args = ap.parse_args(list(argv) if argv is not None else None)
    if not 1 <= args.frames <= 100000:
        ap.error("--frames must be in 1..100000")
    if not 64 <= args.size <= 4096:
        ap.error("--size must be in 64..4096")
    input_size = args.input_size or (256 if args.input else -(-args.size // 32) * 32)
    if input_size % 32 or not 32 <= input_size <= 4096:
        ap.error("--input-size must be a multiple of 32 in 32..4096")
    output = Path(args.output).resolve()
    output.mkdir(parents=True, exist_ok=True)
    frames = None if args.input else generate(args.scene, args.frames, args.size, args.seed)
    from . import scenes

    result = run_pipeline(frames, output, model=f"obbmeta.models:{args.scene}_detector",
                          class_names=list(scenes.class_names(args.scene)), input_file=args.input, conf=args.conf,
                          device=args.device, input_size=input_size)
    n = result["frames"]
    summary = {"scene": args.scene, "input": args.input or f"generated held-out {args.scene} video, seed {args.seed}",
               "model": f"obbmeta.models:{args.scene}_detector", "input_size": input_size, "device": args.device,
               "frames": n,
               "seconds": round(result["seconds"], 3), "fps": round(n / result["seconds"], 2) if n else 0.0,
               "objects": sum(len(r["objects"]) for r in result["objects"]), "map50": None, "map50_95": None,
               "ap50": None, "outputs": ["annotated.webm", "detections.jsonl", "summary.json"]
               + [f"frame_{k:04d}.png" for k, _ in result["pngs"]]}
    if frames is not None:
        ev = score(frames, result["objects"])
        summary.update(map50=round(ev.map50, 4), map50_95=round(ev.map50_95, 4),
                       ap50={frames[0].class_names[c]: (None if ap != ap else round(ap, 4))
                             for c, ap in ev.ap_at(0.5).items()})
    write_outputs(output, result, summary)
    first = next((r for r in result["objects"] if r["objects"]), None)
    if first:
        print(f"frame {first['frame']}, read back from the NvDsBatchMeta (rect_params = the AABB nvtracker tracks; "
              "OBB from obbmeta's user meta):")
        print(f"{'label':>13} {'conf':>5}  {'rect_params x1,y1,x2,y2':>24}  {'OBB cx,cy,w,h,angle°':>24}")
        for o in first["objects"][:6]:
            b = o["obb"]
            obb = f"{b['cx']:.0f},{b['cy']:.0f},{b['w']:.0f},{b['h']:.0f},{b['angle_deg']:.0f}"
            print(f"{o['label']:>13} {o['confidence']:5.2f}  {','.join(f'{v:.0f}' for v in o['aabb']):>24}  {obb:>24}")
    print(f"{n} frames through appsrc ! obbinfer ! obboverlay ! vp8enc in {result['seconds']:.1f} s "
          f"({summary['fps']} fps), {summary['objects']} objects read back"
          + (f"; mAP50 {summary['map50']:.3f} (mAP50:95 {summary['map50_95']:.3f}) against the generator's truth"
             if summary["map50"] is not None else ""))
    print(f"outputs in {output}: " + ", ".join(summary["outputs"]))
    return 0
