"""An oriented detector in a GStreamer pipeline, on the CPU: frames -> obbinfer -> tee -> obboverlay mode=draw ->
VP8/WebM file, and a probe on the other branch that reads every frame's objects back from the NvDsBatchMeta, as
nvtracker, nvmsgconv or your own probe downstream would.

    python examples/pipeline.py --model mypkg.models:build --class-names car,ship,plane [--input clip.mp4]

    videotestsrc | filesrc ! decodebin ! videoconvert ! video/x-raw,format=RGBA ! obbinfer model=... ! tee name=t
      t. ! queue ! obboverlay mode=draw ! videoconvert ! vp8enc ! webmmux ! filesink location=OUT
      t. ! queue ! fakesink (probe: obbmeta.nvds.read_boxes on every frame)

The same pipeline as one gst-launch line is in examples/pipeline_cpu.sh; the DeepStream form (nvstreammux,
nvtracker, nvdsosd) in examples/deepstream_pipeline.sh. ``--model`` is anything obbinfer's ``model`` property takes:
``package.module:callable`` (called with no arguments, returning a torch module or any callable), a TorchScript file
or a torch.export ``.pt2`` file, taking (B, 3, S, S) RGB in [0, 1] and returning the YOLO-OBB head.
"""
from __future__ import annotations

import argparse
import sys

import obbmeta.gst
from obbmeta import nvds

Gst = obbmeta.gst.init()


def build(args) -> Gst.Pipeline:
    src = (f"filesrc location={args.input} ! decodebin ! videoconvert" if args.input
           else f"videotestsrc num-buffers={args.frames} pattern=ball")
    names = f" class-names={args.class_names}" if args.class_names else ""
    return Gst.parse_launch(
        f"{src} ! videoscale ! video/x-raw,format=RGBA,width={args.width},height={args.height} "
        f"! obbinfer model={args.model} input-size={args.input_size} conf={args.conf}{names} ! tee name=t "
        f"t. ! queue ! obboverlay mode=draw thickness=2 ! videoconvert ! vp8enc deadline=1 ! webmmux "
        f"! filesink location={args.output} "
        "t. ! queue ! fakesink name=objects")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="obbinfer's model property")
    ap.add_argument("--class-names", default="", help="comma-separated class names (obj_label)")
    ap.add_argument("--input", help="a video file (default: videotestsrc)")
    ap.add_argument("--frames", type=int, default=90, help="frames of videotestsrc")
    ap.add_argument("--width", type=int, default=640)
    ap.add_argument("--height", type=int, default=480)
    ap.add_argument("--input-size", default="640", help="model input, N or WxH")
    ap.add_argument("--conf", type=float, default=0.25)
    ap.add_argument("--output", default="obb.webm")
    args = ap.parse_args(argv)
    obbmeta.gst.register()  # in-process; gst-launch-1.0 finds the same elements through GST_PLUGIN_PATH
    pipeline = build(args)
    counts = []

    def read_back(pad, info):
        for frame in nvds.BatchMeta.from_gst_buffer(info.get_buffer()).frames:
            objects = nvds.read_boxes(frame)  # OrientedBoxes (NumPy): xywhr, scores, labels, data["label"], ...
            counts.append(len(objects))
            print(f"frame {frame.frame_number}: {len(objects)} objects"
                  + "".join(f"; {label} {w:.0f}x{h:.0f} at ({cx:.0f}, {cy:.0f}) {a:+.2f} rad"
                            for label, (cx, cy, w, h, a) in zip(nvds.label_strings(objects[:2]),
                                                                objects.xywhr[:2].tolist())))
        return Gst.PadProbeReturn.OK

    pipeline.get_by_name("objects").get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER, read_back)
    pipeline.set_state(Gst.State.PLAYING)
    msg = pipeline.get_bus().timed_pop_filtered(Gst.CLOCK_TIME_NONE, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    pipeline.set_state(Gst.State.NULL)
    if msg.type == Gst.MessageType.ERROR:
        err, _ = msg.parse_error()
        print(f"error from {msg.src.get_name()}: {err.message}", file=sys.stderr)
        return 1
    print(f"{len(counts)} frames, {sum(counts)} objects; annotated video: {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
