"""What the elements know of frames: the caps they accept, the negotiated video format, and the frames of a buffer
as tensor views (system memory or NVMM surfaces)."""
from __future__ import annotations

import contextlib
import ctypes
from dataclasses import dataclass
from typing import Any, Iterator

from ..frames import COLOR_FORMATS
from ._gi import Gst, GstVideo

# Packed formats obbmeta reads and draws, and the planar ones it reads (NVMM surfaces use the same names).
# The formats obbmeta.frames reads from NvBufSurfaces (NV12_ER arrives with NV12 caps): one list for both memories.
PACKED_FORMATS = tuple(name for name, channels in COLOR_FORMATS.values() if channels > 1)
PLANAR_FORMATS = ("NV12", "GRAY8")
NVMM = "memory:NVMM"


def caps_string(formats: tuple[str, ...]) -> str:
    fmt = "{ " + ", ".join(formats) + " }"
    return f"video/x-raw, format=(string){fmt}; video/x-raw({NVMM}), format=(string){fmt}"


def templates(formats: tuple[str, ...]) -> tuple[Gst.PadTemplate, Gst.PadTemplate]:
    caps = Gst.Caps.from_string(caps_string(formats))
    return (Gst.PadTemplate.new("src", Gst.PadDirection.SRC, Gst.PadPresence.ALWAYS, caps),
            Gst.PadTemplate.new("sink", Gst.PadDirection.SINK, Gst.PadPresence.ALWAYS, caps))


@dataclass(frozen=True)
class VideoFormat:
    """What the negotiated caps say about the frames."""
    nvmm: bool
    format: str
    width: int
    height: int
    info: Any  # GstVideo.VideoInfo (system memory strides / offsets)

    @classmethod
    def from_caps(cls, caps: Gst.Caps) -> "VideoFormat":
        s = caps.get_structure(0)
        features = caps.get_features(0)
        nvmm = bool(features and features.contains(NVMM))
        info = GstVideo.VideoInfo.new_from_caps(caps)
        fmt = s.get_value("format")
        return cls(nvmm, fmt, int(s.get_value("width")), int(s.get_value("height")), info)


@dataclass
class FrameView:
    """One frame of a buffer as tensors: ``image`` (H, W, C) for packed formats, ``planes`` (luma, chroma) for NV12
    (luma only for GRAY8). Views of the buffer's memory: valid only inside :func:`mapped_frames`."""
    index: int
    width: int
    height: int
    format: str
    image: Any = None
    planes: tuple = ()

    @property
    def model_input(self) -> Any:
        return self.image if self.image is not None else (self.planes if len(self.planes) == 2 else self.planes[0])


@contextlib.contextmanager
def mapped_frames(buf: Gst.Buffer, video: VideoFormat, write: bool) -> Iterator[list[FrameView]]:
    """The frames of ``buf`` as tensor views (system memory: one frame; NVMM: every filled surface of the batch)."""
    from .. import frames

    if video.nvmm:
        with frames.map_surface(hash(buf), write=write) as surface:
            views = []
            for s in surface.surfaces:
                if s.format_name != video.format and (video.format, s.format_name) != ("NV12", "NV12_ER"):
                    raise ValueError(f"surface {s.index} holds {s.format_name} pixels but the caps say {video.format}")
                t = s.tensors()
                views.append(FrameView(s.index, s.width, s.height, s.format_name,
                                       image=None if isinstance(t, tuple) else t,
                                       planes=t if isinstance(t, tuple) else ()))
            yield views
        return
    flags = Gst.MapFlags.READ | (Gst.MapFlags.WRITE if write else 0)
    ok, info = buf.map(flags)
    if not ok:
        raise RuntimeError("the buffer could not be mapped")
    try:
        yield [_system_frame(info, video, buf)]
    finally:
        buf.unmap(info)


def _system_frame(info: Any, video: VideoFormat, buf: Gst.Buffer) -> FrameView:
    import torch

    vi = video.info
    strides, offsets = list(vi.stride), list(vi.offset)
    meta = GstVideo.buffer_get_video_meta(buf)
    if meta is not None:  # a producer's own strides / offsets (e.g. decoders with padded rows)
        strides, offsets = list(meta.stride), list(meta.offset)
    import numpy as np

    size = len(info.data)
    address = np.frombuffer(info.data, dtype=np.uint8).ctypes.data if size else 0
    base = torch.frombuffer((ctypes.c_uint8 * size).from_address(address), dtype=torch.uint8) if size else \
        torch.empty(0, dtype=torch.uint8)
    w, h, fmt = video.width, video.height, video.format

    def plane(k: int, rows: int, cols: int, ch: int):
        need = offsets[k] + strides[k] * (rows - 1) + cols * ch
        if need > size:
            raise ValueError(f"the buffer holds {size} bytes, a {w}x{h} {fmt} frame needs {need}")
        return base.as_strided((rows, cols, ch), (strides[k], ch, 1), offsets[k])

    if fmt in PACKED_FORMATS:
        return FrameView(0, w, h, fmt, image=plane(0, h, w, len(fmt) if len(fmt) == 3 else 4))
    if fmt == "NV12":
        return FrameView(0, w, h, fmt, planes=(plane(0, h, w, 1), plane(1, (h + 1) // 2, (w + 1) // 2, 2)))
    return FrameView(0, w, h, fmt, planes=(plane(0, h, w, 1),))

