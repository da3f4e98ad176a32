"""A gst-python detector element: run a PyTorch OBB model on each RGBA frame, decode and suppress on the model's
device, write the boxes as DeepStream metadata, and draw them into the frame.

    python examples/gst_detector.py [--num-buffers 30] [--model model.torchscript] [--save out.png]

Pipeline: videotestsrc ! video/x-raw,format=RGBA ! obbdetector ! fakesink, and a pad probe after the detector that
reads the boxes back through NVIDIA's lists, as any downstream element (nvtracker, nvdsosd, a pyds probe) would.
The element handles system-memory RGBA buffers of one frame each. When a batch meta is already on the buffer it
writes into that batch's first frame; after nvstreammux (NVMM surfaces, several frames per buffer) the frames must
be reached through the NvBufSurface instead, which this example does not do.

``--model`` loads a TorchScript YOLO-OBB model taking (1, 3, 640, 640) float RGB in [0, 1] and returning the raw
(1, 4+nc+1, N) head output. Without it the example has no detector of its own yet: it feeds the decoder the
synthetic head output of ``obbmeta demo`` (five known objects), so the plumbing runs end to end.
"""
from __future__ import annotations

import argparse
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstBase", "1.0")
from gi.repository import GLib, GObject, Gst, GstBase  # noqa: E402

Gst.init(None)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import obbmeta  # noqa: E402
from obbmeta import Letterbox, nvds  # noqa: E402
from obbmeta.demo import synthetic_output  # noqa: E402
from obbmeta.osd import draw_obbs  # noqa: E402

CLASS_NAMES = ["vehicle", "ship", "plane"]
INPUT = 640


def letterbox_input(frame: torch.Tensor):
    """(H, W, 4) uint8 RGBA -> (1, 3, 640, 640) float RGB in [0, 1] and the letterbox that maps boxes back."""
    h, w = frame.shape[:2]
    lb = Letterbox.fit((w, h), (INPUT, INPUT))
    rgb = frame[..., :3].permute(2, 0, 1)[None].float() / 255
    new_w, new_h = round(w * lb.scale), round(h * lb.scale)
    rgb = F.interpolate(rgb, size=(new_h, new_w), mode="bilinear", align_corners=False)
    x = rgb.new_full((1, 3, INPUT, INPUT), 114 / 255)
    x[..., int(lb.pad_y):int(lb.pad_y) + new_h, int(lb.pad_x):int(lb.pad_x) + new_w] = rgb
    return x, lb


class ObbDetector(GstBase.BaseTransform):
    __gstmetadata__ = ("obbmeta OBB detector", "Filter/Analyzer/Video", "PyTorch OBB model -> NvDsObjectMeta + OBB "
                       "user meta, drawn into the frame", "obbmeta")
    _caps = Gst.Caps.from_string("video/x-raw,format=RGBA")
    __gsttemplates__ = (Gst.PadTemplate.new("src", Gst.PadDirection.SRC, Gst.PadPresence.ALWAYS, _caps),
                        Gst.PadTemplate.new("sink", Gst.PadDirection.SINK, Gst.PadPresence.ALWAYS, _caps))

    def __init__(self, model=None, draw=True):
        super().__init__()
        self.set_in_place(True)
        self.model, self.draw, self.frame_num, self.size = model, draw, 0, None

    def do_set_caps(self, incaps, outcaps):
        s = incaps.get_structure(0)
        self.size = (s.get_value("width"), s.get_value("height"))
        return True

    def do_transform_ip(self, buf):
        # gst-python only prints a Python exception raised here and lets the pipeline run on: turn it into a
        # flow error that stops the pipeline with a message on the bus.
        try:
            return self._detect(buf)
        except Exception as exc:  # noqa: BLE001
            Gst.error(f"obbdetector: {exc!r}")
            self.post_message(Gst.Message.new_error(self, GLib.Error(repr(exc)), "obbdetector failed"))
            return Gst.FlowReturn.ERROR

    def _detect(self, buf):
        w, h = self.size
        ok, info = buf.map(Gst.MapFlags.READ | Gst.MapFlags.WRITE)
        if not ok:
            return Gst.FlowReturn.ERROR
        try:
            # The frame's own memory as a tensor (no copy); a CUDA model would take frame.cuda() here.
            frame = torch.frombuffer(info.data, dtype=torch.uint8).view(h, w, 4)
            x, lb = letterbox_input(frame)
            with torch.inference_mode():
                out = self.model(x) if self.model is not None else synthetic_output()[0]
            dets = obbmeta.decode.yolo_obb(out, conf=0.25, iou=0.5, letterbox=lb)[0]
            if self.draw:
                draw_obbs(frame, dets, thickness=2)
        finally:
            buf.unmap(info)
        try:  # after nvstreammux the batch meta is there; in a plain GStreamer pipeline make it as nvstreammux does
            batch = nvds.BatchMeta.from_gst_buffer(buf)
            frames = batch.frames
        except LookupError:
            batch = nvds.BatchMeta.create(max_frames=1)
            frames = [batch.add_frame(source_id=0, width=w, height=h, frame_num=self.frame_num)]
            batch.attach_to_gst_buffer(buf)
        nvds.attach_obbs(batch, frames[0], dets, class_names=CLASS_NAMES, frame_size=(w, h))
        self.frame_num += 1
        return Gst.FlowReturn.OK


GObject.type_register(ObbDetector)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--num-buffers", type=int, default=30)
    ap.add_argument("--width", type=int, default=1920)
    ap.add_argument("--height", type=int, default=1080)
    ap.add_argument("--model", help="TorchScript YOLO-OBB model (raw head output)")
    ap.add_argument("--save", help="write the last frame, with the boxes drawn, to this PNG")
    args = ap.parse_args(argv)
    model = torch.jit.load(args.model).eval() if args.model else None
    pipeline = Gst.parse_launch(
        f"videotestsrc num-buffers={args.num_buffers} pattern=smpte ! "
        f"video/x-raw,format=RGBA,width={args.width},height={args.height} ! identity name=slot ! fakesink name=sink")
    detector = ObbDetector(model)
    slot, sink = pipeline.get_by_name("slot"), pipeline.get_by_name("sink")
    slot.unlink(sink)
    pipeline.add(detector)
    slot.link(detector)
    detector.link(sink)
    last = {}

    def probe(pad, info):  # what any element downstream sees
        try:
            return read_back(info.get_buffer())
        except Exception as exc:  # noqa: BLE001  (same reason as in do_transform_ip)
            last["error"] = repr(exc)
            return Gst.PadProbeReturn.REMOVE

    def read_back(buf):
        for frame in nvds.BatchMeta.from_gst_buffer(buf).frames:
            objs = nvds.read_obbs(frame)
            print(f"frame {frame.frame_num}: {len(objs)} objects read back, e.g. "
                  + ", ".join(f"{o.label} {b.xywhr[2]:.0f}x{b.xywhr[3]:.0f}@{b.xywhr[4]:.2f}rad" for o, b in objs[:2]))
        if args.save:
            ok, m = buf.map(Gst.MapFlags.READ)
            last["png"] = bytes(m.data)
            buf.unmap(m)
        return Gst.PadProbeReturn.OK

    sink.get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER, probe)
    pipeline.set_state(Gst.State.PLAYING)
    msg = pipeline.get_bus().timed_pop_filtered(Gst.CLOCK_TIME_NONE, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    pipeline.set_state(Gst.State.NULL)
    if msg.type == Gst.MessageType.ERROR or "error" in last:
        print(msg.parse_error() if msg.type == Gst.MessageType.ERROR else last["error"], file=sys.stderr)
        return 1
    if args.save and last:
        from PIL import Image

        Image.frombytes("RGBA", (args.width, args.height), last["png"]).save(args.save)
        print(f"saved {args.save}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
