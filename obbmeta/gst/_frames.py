"""What the elements know of frames: the caps they accept (every format :mod:`obbmeta.frames.pixels` reads, in system
memory and NVMM), the negotiated video format, and the frames of a buffer as tensor views (system memory through
GstVideo's strides and offsets, NVMM through :mod:`obbmeta.frames`)."""
from __future__ import annotations

import contextlib
import ctypes
from dataclasses import dataclass
from typing import Any, Iterator

from ..frames import pixels
from ._gi import Gst, GstVideo

NVMM = "memory:NVMM"
# GStreamer names of the formats obbmeta reads (8-bit packed RGB first: negotiation prefers no conversion) and of
# those obboverlay mode=draw paints.
READ_FORMATS = pixels.CAPS_FORMATS
DRAW_FORMATS = pixels.DRAW_FORMATS


def caps_string(formats: tuple[str, ...]) -> str:
    fmt = "{ " + ", ".join(formats) + " }"
    return f"video/x-raw, format=(string){fmt}; video/x-raw({NVMM}), format=(string){fmt}"


def templates(formats: tuple[str, ...] = READ_FORMATS) -> tuple[Gst.PadTemplate, Gst.PadTemplate]:
    caps = Gst.Caps.from_string(caps_string(formats))
    return (Gst.PadTemplate.new("src", Gst.PadDirection.SRC, Gst.PadPresence.ALWAYS, caps),
            Gst.PadTemplate.new("sink", Gst.PadDirection.SINK, Gst.PadPresence.ALWAYS, caps))


# GstVideoColorMatrix / GstVideoColorRange / GstVideoColorPrimaries values (video-color.h) -> obbmeta's names.
_MATRICES = {GstVideo.VideoColorMatrix.BT601: "BT.601", GstVideo.VideoColorMatrix.BT709: "BT.709",
             GstVideo.VideoColorMatrix.BT2020: "BT.2020", GstVideo.VideoColorMatrix.FCC: "FCC",
             GstVideo.VideoColorMatrix.SMPTE240M: "SMPTE240M"}
_RANGE_0_255, _RANGE_16_235 = 1, 2


@dataclass(frozen=True)
class VideoFormat:
    """What the negotiated caps say about the frames. ``format``: GStreamer's name; ``pixel_format``: the entry of
    :data:`obbmeta.frames.pixels.FORMATS` system-memory frames are read as (from the caps' colorimetry; NVMM surfaces
    name their own), None with ``unreadable`` saying why when the caps' colorimetry is one obbmeta cannot convert (an
    element that never reads pixels still passes such frames)."""
    nvmm: bool
    format: str
    width: int
    height: int
    info: Any  # GstVideo.VideoInfo (system memory strides / offsets)
    pixel_format: str | None = None
    unreadable: str = ""

    @classmethod
    def from_caps(cls, caps: Gst.Caps) -> "VideoFormat":
        s = caps.get_structure(0)
        features = caps.get_features(0)
        nvmm = bool(features and features.contains(NVMM))
        fmt = s.get_value("format")
        if fmt not in READ_FORMATS:
            raise ValueError(f"format {fmt} is not one obbmeta reads ({', '.join(READ_FORMATS)})")
        width, height = pixels.check_size(s.get_value("width"), s.get_value("height"), "caps")
        info = GstVideo.VideoInfo.new_from_caps(caps)
        c = info.colorimetry
        try:
            name = pixels.from_gst(fmt, _MATRICES.get(c.matrix), {_RANGE_0_255: True, _RANGE_16_235: False}.get(
                int(c.range)), "BT.2020" if c.primaries == GstVideo.VideoColorPrimaries.BT2020 else None).name
        except pixels.UnreadFormatError as exc:
            return cls(nvmm, fmt, width, height, info, None, str(exc))
        return cls(nvmm, fmt, width, height, info, name)


@dataclass
class FrameView:
    """One frame of a buffer as tensors, in the form :func:`obbmeta.frames.pixels.to_rgb` takes: ``image`` for packed
    formats, ``planes`` for planar ones; ``format`` is its entry of :data:`obbmeta.frames.pixels.FORMATS`. Views of the
    buffer's memory: valid only inside :func:`mapped_frames`."""
    index: int
    width: int
    height: int
    format: str
    image: Any = None
    planes: tuple = ()

    @property
    def model_input(self) -> Any:
        return self.image if self.image is not None else self.planes


@contextlib.contextmanager
def mapped_frames(buf: Gst.Buffer, video: VideoFormat, write: bool) -> Iterator[list[FrameView]]:
    """The frames of ``buf`` as tensor views (system memory: one frame; NVMM: every filled surface of the batch,
    none for a batch with ``numFilled`` 0)."""
    from .. import frames

    if video.nvmm:
        with frames.map_surface(hash(buf), write=write) as surface:
            views = []
            for s in surface.surfaces:
                if s.pixel_format.caps != video.format:
                    raise ValueError(f"surface {s.index} holds {s.format_name} pixels (GStreamer's "
                                     f"{s.pixel_format.caps}) but the caps say {video.format}")
                views.append(_view(s.index, s.width, s.height, s.pixel_format, s.tensors()))
            yield views
        return
    if video.pixel_format is None:
        raise ValueError(f"the frames cannot be read: {video.unreadable}")
    flags = Gst.MapFlags.READ | (Gst.MapFlags.WRITE if write else 0)
    ok, info = buf.map(flags)
    if not ok:
        raise RuntimeError("the buffer could not be mapped")
    try:
        yield [_system_frame(info, video, buf)]
    finally:
        buf.unmap(info)


def _view(index: int, width: int, height: int, fmt: pixels.PixelFormat, tensors: Any) -> FrameView:
    if fmt.packed:
        return FrameView(index, width, height, fmt.name, image=tensors)
    return FrameView(index, width, height, fmt.name, planes=tuple(tensors))


def _system_frame(info: Any, video: VideoFormat, buf: Gst.Buffer) -> FrameView:
    import numpy as np
    import torch

    vi = video.info
    strides, offsets = list(vi.stride), list(vi.offset)
    meta = GstVideo.buffer_get_video_meta(buf)
    if meta is not None:  # a producer's own strides / offsets (e.g. decoders with padded rows)
        strides, offsets = list(meta.stride), list(meta.offset)
    size = len(info.data)
    address = np.frombuffer(info.data, dtype=np.uint8).ctypes.data if size else 0
    base = torch.frombuffer((ctypes.c_uint8 * size).from_address(address), dtype=torch.uint8) if size else \
        torch.empty(0, dtype=torch.uint8)
    w, h = video.width, video.height
    fmt = pixels.FORMATS[video.pixel_format]
    planes = []
    for k, spec in enumerate(fmt.planes):  # GStreamer numbers planes in memory order, as the table lists them
        rows, cols, comps = spec.shape(w, h)
        group, row = comps * spec.depth, spec.row_bytes(w)
        need = offsets[k] + strides[k] * (rows - 1) + row
        if need > size or strides[k] < row:
            raise ValueError(f"the buffer holds {size} bytes with plane {k} at offset {offsets[k]}, stride "
                             f"{strides[k]}: a {w}x{h} {video.format} frame needs {need}")
        view = base.as_strided((rows, cols, group), (strides[k], group, 1), offsets[k])
        planes.append(view.view(torch.uint16) if spec.depth == 2 else view)
    return _view(0, w, h, fmt, planes[0] if fmt.packed else tuple(planes))
