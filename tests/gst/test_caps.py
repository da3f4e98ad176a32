"""The caps of obbmeta's elements in real GStreamer pipelines: every format obbmeta.frames.pixels reads passes every
element and reaches obbinfer's model as the reference RGB (system memory; NVMM: test_nvvideoconvert.py on the GPU
machine), and obboverlay mode=draw negotiates only what it paints, so a converter before it converts."""
from __future__ import annotations

import numpy as np
import pytest
import readback
import torch
from pipelines import buffer_probe, run
from pixel_refs import describe, planes_from_bytes, reference_rgb

from obbmeta import nvds
from obbmeta.frames import pixels
from obbmeta.frames.pixels import to_rgb
from obbmeta.gst import GLib, Gst, GstVideo
from obbmeta.gst._frames import DRAW_FORMATS, READ_FORMATS
from obbmeta.infer import Detector
from obbmeta.osd import draw_obbs
from obbmeta.palette import PALETTE_RGB

# GStreamer's names for DeepStream's (written from GStreamer's format list, independently of obbmeta.frames.pixels).
GST_NAMES = {"YUV420": "I420", "YVU420": "YV12", "NV12": "NV12", "NV21": "NV21", "YUV422": "Y42B", "NV16": "NV16",
             "YUV444": "Y444", "NV24": "NV24", "UYVY": "UYVY", "VYUY": "VYUY", "YUYV": "YUY2", "YVYU": "YVYU",
             "NV12_10LE": "P010_10LE", "UYVP": "UYVP", "GRAY8": "GRAY8", "GRAY16_LE": "GRAY16_LE",
             "R8_G8_B8": "RGBP", "B8_G8_R8": "BGRP", "RGBA_10_10_10_2": "RGB10A2_LE", "BGRA_10_10_10_2": "BGR10A2_LE",
             "BGRA64_LE": "BGRA64_LE"}
# GstVideoColorimetry "range:matrix:transfer:primaries" values (video-color.h).
RANGE = {True: 1, False: 2}
MATRIX = {"601": 4, "709": 3, "2020": 6}


def caps_for(name):
    """(GStreamer format, colorimetry string or None) of the system-memory frames that are ``name``."""
    base, matrix, full = describe(name)
    if name.startswith(("RGBA_10", "BGRA_10")):
        return GST_NAMES[name[:15]], "1:1:0:7" if name.endswith("2020") else None
    if base in ("GRAY8", "GRAY16_LE"):
        return base, None if full or base == "GRAY16_LE" else "2:4:0:0"
    if base not in GST_NAMES:
        return name, None  # packed 8-bit RGB: the same name
    return GST_NAMES[base], f"{RANGE[full]}:{MATRIX[matrix]}:0:0"


def planes_of(buf, caps, name):
    """The planes of a system-memory buffer at GStreamer's own strides and offsets (numpy copies)."""
    info = GstVideo.VideoInfo.new_from_caps(caps)
    ok, mapinfo = buf.map(Gst.MapFlags.READ)
    raw = np.frombuffer(mapinfo.data, np.uint8).copy()
    buf.unmap(mapinfo)
    return planes_from_bytes(raw, name, info.width, info.height, list(info.offset), list(info.stride))


class Recording(Detector):
    """What obbinfer hands the model's pre-processing, converted as the model sees it."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.seen = []

    def _images(self, frames, pixel_format, device):
        images = super()._images(frames, pixel_format, device)
        fmt = pixel_format if isinstance(pixel_format, str) else pixel_format[0]
        self.seen.append((fmt, to_rgb(frames[0], fmt).clone()))
        return images


CASES = [(name, 64, 48) for name in sorted(pixels.FORMATS)] + [("NV12_709", 1280, 720)]


@pytest.mark.parametrize("name,width,height", CASES, ids=[f"{n}-{w}x{h}" for n, w, h in CASES])
def test_obbinfer_reads_system_memory_frames_of_each_format_as_the_reference_rgb(name, width, height):
    fmt, colorimetry = caps_for(name)
    if (width, height) == (1280, 720):
        colorimetry = None  # GStreamer's default for HD: BT.709 limited range, NV12_709 in DeepStream's words
    caps = f"video/x-raw,format={fmt},width={width},height={height}" + (f",colorimetry={colorimetry}"
                                                                      if colorimetry else "")
    p = Gst.parse_launch(
        f"videotestsrc num-buffers=2 pattern=smpte ! {caps} ! tee name=t "
        "t. ! queue ! obbinfer name=infer model=obb_toy_models:toy input-size=64 ! fakesink "
        "t. ! queue ! videoconvert chroma-mode=none dither=none ! video/x-raw,format=ARGB64 ! fakesink name=conv")
    detector = p.get_by_name("infer").detector = Recording("obb_toy_models:toy", input_size=64)
    raw, converted = [], []
    negotiated = Gst.Caps.from_string(caps)

    def on_conv(buf):
        ok, info = buf.map(Gst.MapFlags.READ)
        converted.append(np.frombuffer(info.data, "<u2")[: width * height * 4].reshape(height, width, 4).copy())
        buf.unmap(info)

    errors = buffer_probe(p.get_by_name("infer"), "sink", lambda b: raw.append(planes_of(b, negotiated, name)))
    buffer_probe(p.get_by_name("conv"), "sink", on_conv, errors)
    outcome = run(p)
    assert outcome.eos and not errors, (outcome, errors[:1])
    assert len(detector.seen) == len(raw) == len(converted) == 2
    for (seen_format, rgb), planes, argb in zip(detector.seen, raw, converted):
        assert seen_format == name
        ref = reference_rgb(name, planes)
        assert float(np.abs(rgb.numpy().astype(np.float64) - ref).max()) * 255 <= 0.5
        # GStreamer's own converter (its 16-bit path) on the same bytes: the same matrix and range, to within its
        # integer rounding (8-bit codes widened to 16 bits by repetition)
        gst_rgb = argb[..., 1:].transpose(2, 0, 1) / 257.0
        assert float(np.abs(rgb.numpy() * 255 - gst_rgb).max()) <= 2.5, name


@pytest.mark.parametrize("fmt", READ_FORMATS)
def test_every_element_passes_every_format_obbmeta_reads(fmt):
    p = Gst.parse_launch(
        f"videotestsrc num-buffers=2 ! video/x-raw,format={fmt},width=64,height=48 "
        "! obbinfer model=obb_toy_models:toy input-size=64 ! obbtrack ! obboverlay mode=meta ! obbmessage "
        "! fakesink name=s")
    seen = []
    sink = p.get_by_name("s").get_static_pad("sink")

    def on(buf):
        (frame,) = nvds.BatchMeta.from_gst_buffer(buf).frames
        seen.append((len(readback.pairs(frame)), sink.get_current_caps().get_structure(0).get_value("format")))

    errors = buffer_probe(p.get_by_name("s"), "sink", on)
    outcome = run(p)
    assert outcome.eos and not errors, (outcome, errors[:1])
    assert len(seen) == 2 and all(n > 0 and got == fmt for n, got in seen)  # inferred, and never converted


def test_obboverlay_draw_behind_a_converter_negotiates_packed_rgb_and_draws():
    p = Gst.parse_launch(
        "videotestsrc num-buffers=4 pattern=smpte ! video/x-raw,format=NV12,width=96,height=64 ! videoconvert "
        "! obbinfer name=infer model=obb_toy_models:toy input-size=64 ! obboverlay name=draw mode=draw thickness=2 "
        "! fakesink name=s")
    before, after = [], []

    def copy(store):
        def fn(buf):
            ok, info = buf.map(Gst.MapFlags.READ)
            store.append(np.frombuffer(info.data, np.uint8).copy())
            buf.unmap(info)
        return fn

    errors = buffer_probe(p.get_by_name("infer"), "src", copy(before))
    buffer_probe(p.get_by_name("s"), "sink", copy(after), errors)
    objects, formats = [], set()
    pad = p.get_by_name("draw").get_static_pad("sink")

    def on(buf):
        objects.append(nvds.read_boxes(nvds.BatchMeta.from_gst_buffer(buf).frames[0]))
        formats.add(pad.get_current_caps().get_structure(0).get_value("format"))

    buffer_probe(p.get_by_name("s"), "sink", on, errors)
    outcome = run(p)
    assert outcome.eos and not errors, (outcome, errors[:1])
    (fmt,) = formats
    assert fmt in DRAW_FORMATS  # videoconvert converted the NV12 frames to what obboverlay paints
    comps = len(fmt) if len(fmt) == 3 else 4
    assert len(objects) == 4 and all(len(o.xywhr) for o in objects)
    for pre, post, rows in zip(before, after, objects):
        ref = torch.from_numpy(pre[: 96 * 64 * comps].reshape(64, 96, comps).copy())
        rgb = np.asarray([PALETTE_RGB[c % 20] for c in rows.labels], np.uint8)
        colors = np.full((len(rgb), comps), 255, np.uint8)
        colors[:, [fmt.index(c) for c in "RGB"]] = rgb
        draw_obbs(ref, torch.from_numpy(rows.xywhr), colors=torch.from_numpy(colors), thickness=2)
        assert np.array_equal(post[: 96 * 64 * comps].reshape(64, 96, comps), ref.numpy())
        assert not np.array_equal(pre, post)


def test_obboverlay_draw_cannot_link_to_frames_it_does_not_paint():
    with pytest.raises(GLib.Error, match="can't handle caps"):
        Gst.parse_launch("videotestsrc num-buffers=1 ! video/x-raw,format=NV12,width=64,height=48 "
                         "! obboverlay mode=draw ! fakesink")
    # mode=meta never touches pixels: the same frames pass
    assert run(Gst.parse_launch("videotestsrc num-buffers=2 ! video/x-raw,format=NV12,width=64,height=48 "
                                "! obboverlay mode=meta ! fakesink")).eos


def test_obboverlay_answers_a_caps_query_with_what_its_mode_takes():
    overlay = Gst.ElementFactory.make("obboverlay")
    pad = overlay.get_static_pad("sink")

    def takes(fmt, memory=""):
        return pad.query_caps(None).can_intersect(Gst.Caps.from_string(f"video/x-raw{memory},format={fmt}"))

    assert all(takes(f) and takes(f, "(memory:NVMM)") for f in READ_FORMATS)
    overlay.set_property("mode", "draw")
    assert [f for f in READ_FORMATS if takes(f)] == list(DRAW_FORMATS)
    assert all(takes(f, "(memory:NVMM)") for f in DRAW_FORMATS) and not takes("NV12", "(memory:NVMM)")


def test_caps_of_an_implausible_size_are_refused_at_negotiation():
    p = Gst.parse_launch("appsrc name=src caps=video/x-raw,format=GRAY8,width=60000,height=60000,framerate=1/1 "
                         "format=time ! obbinfer model=obb_toy_models:toy ! fakesink")
    src = p.get_by_name("src")
    buf = Gst.Buffer.new_wrapped(bytes(16))
    src.emit("push-buffer", buf)
    src.emit("end-of-stream")
    outcome = run(p, timeout_s=30)
    assert outcome.stopped and outcome.error and "caps width must be an int in 1..16384 pixels, got 60000" in \
        outcome.error


@pytest.mark.parametrize("fmt, name", [("UYVY", "UYVY"), ("YUY2", "YUYV"), ("UYVP", "UYVP")])
@pytest.mark.parametrize("width", [1, 5])
def test_odd_width_packed_422_system_frames_are_refused_with_one_message(fmt, name, width):
    # UYVP too: not "the buffer holds 4 bytes" (width 1), nor a 6-wide frame read out of a 5-wide one (width 5).
    p = Gst.parse_launch(f"videotestsrc num-buffers=1 ! video/x-raw,format={fmt},width={width},height=4 ! "
                         "obbinfer model=obb_toy_models:toy input-size=64 ! fakesink")
    outcome = run(p, timeout_s=30)
    assert outcome.stopped and not outcome.eos
    assert f"frame must have an even width (format {name} is packed 4:2:2), got {width}" in outcome.error
