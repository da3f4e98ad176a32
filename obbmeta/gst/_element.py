"""What obbinfer and obboverlay share: checked properties, errors on the bus, the batch meta, frames as tensors."""
from __future__ import annotations

import contextlib
import ctypes
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from ..frames import COLOR_FORMATS
from ._gi import GLib, GObject, Gst, GstBase, GstVideo

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


def one_of(*choices: str) -> Callable[[Any], str]:
    """A property check accepting exactly one of ``choices``."""
    def check(value: Any) -> str:
        if value not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}")
        return value
    return check


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


class ObbmetaElement(GstBase.BaseTransform):
    __gtype_name__ = "GstObbmetaElement"
    """An in-place BaseTransform whose properties are checked when set, and whose failures become bus errors.

    Subclasses list their properties in ``_specs`` (and set ``__gproperties__ = _specs``: PyGObject consumes the
    latter when it registers the class) and give ``_checks[name] = fn(value) -> value`` for
    those that need more than GLib's own range check. A refused value keeps the old one, is logged, and makes the
    element refuse to start with the reason as an error message on the bus.
    """

    _specs: dict[str, tuple] = {}
    _checks: dict[str, Callable[[Any], Any]] = {}

    def __init__(self):
        super().__init__()
        self.set_in_place(True)
        self._props = {name: spec[3] if spec[0] in (str, bool) else spec[-2]
                       for name, spec in self._specs.items()}
        self._refused: dict[str, str] = {}
        self.video: VideoFormat | None = None

    # ---- properties
    def do_get_property(self, prop: GObject.ParamSpec) -> Any:
        return self._props[prop.name]

    def do_set_property(self, prop: GObject.ParamSpec, value: Any) -> None:
        check = self._checks.get(prop.name)
        try:
            if check is not None:
                value = check(value)
        except (TypeError, ValueError, OSError) as exc:
            self._refused[prop.name] = f"property {prop.name}={value!r} refused: {exc}"
            Gst.error(f"{self.get_name()}: {self._refused[prop.name]}")
            return
        self._refused.pop(prop.name, None)
        self._props[prop.name] = value
        self.property_changed(prop.name)

    def property_changed(self, name: str) -> None:
        """Hook: a property took a new value."""

    def prop(self, name: str) -> Any:
        return self._props[name]

    # ---- life cycle
    def do_start(self) -> bool:
        if self._refused:
            self.fail(Gst.LibraryError.SETTINGS, "; ".join(self._refused.values()))
            return False
        try:
            self.start()
        except Exception as exc:  # noqa: BLE001 - any failure to start is reported on the bus
            self.fail(Gst.LibraryError.INIT, f"{type(exc).__name__}: {exc}")
            return False
        return True

    def start(self) -> None:
        """Hook: load what the element needs (may raise)."""

    def reset(self) -> None:
        """Hook: a stream ended or was flushed (EOS / FLUSH_STOP): drop per-stream state."""

    def do_sink_event(self, event: Gst.Event) -> bool:
        if event.type in (Gst.EventType.EOS, Gst.EventType.FLUSH_STOP):
            self.reset()
        return GstBase.BaseTransform.do_sink_event(self, event)

    def do_set_caps(self, incaps: Gst.Caps, outcaps: Gst.Caps) -> bool:
        try:
            video = VideoFormat.from_caps(incaps)
            self.check_format(video)
        except Exception as exc:  # noqa: BLE001
            self.fail(Gst.CoreError.NEGOTIATION, f"caps {incaps.to_string()} cannot be used: {exc}")
            return False
        self.video = video
        return True

    def check_format(self, video: VideoFormat) -> None:
        """Hook: raise when these frames cannot be handled."""

    def do_transform_ip(self, buf: Gst.Buffer) -> Gst.FlowReturn:
        # gst-python only prints an exception raised here and lets the stream run on: make it an error message and
        # a flow error, so the pipeline stops cleanly with the reason on the bus.
        try:
            return self.process(buf)
        except Exception as exc:  # noqa: BLE001
            self.fail(Gst.StreamError.FAILED, f"{type(exc).__name__}: {exc}")
            return Gst.FlowReturn.ERROR

    def process(self, buf: Gst.Buffer) -> Gst.FlowReturn:
        raise NotImplementedError

    def fail(self, code: Any, text: str) -> None:
        """Post an error message from this element (domain and code as GStreamer's own elements use them)."""
        err = GLib.Error.new_literal(code.__class__.quark(), text, int(code))
        self.post_message(Gst.Message.new_error(self, err, text))


# ---------------------------------------------------------------- batch meta and frames

def batch_meta_for(buf: Gst.Buffer, num_frames: int, width: int, height: int, frame_number: int):
    """The buffer's NvDsBatchMeta; when there is none (no nvstreammux upstream), one made and attached exactly as
    nvstreammux makes it: ``num_frames`` frames with batch_id 0..n-1, source 0, frame_num, pts, size."""
    from .. import nvds

    try:
        return nvds.BatchMeta.from_gst_buffer(buf)
    except LookupError:
        pass
    batch = nvds.BatchMeta.create(num_frames)
    pts = buf.pts if buf.pts != Gst.CLOCK_TIME_NONE else 0
    for _ in range(num_frames):
        batch.add_frame(source_id=0, width=width, height=height, frame_num=frame_number, buf_pts=pts)
    batch.attach_to_gst_buffer(buf)
    return batch


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

