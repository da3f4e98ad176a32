"""What the elements share: checked properties, errors on the bus, the batch meta."""
from __future__ import annotations

from typing import Any, Callable

from ._frames import VideoFormat
from ._gi import GLib, GObject, Gst, GstBase


def one_of(*choices: str) -> Callable[[Any], str]:
    """A property check accepting exactly one of ``choices``."""
    def check(value: Any) -> str:
        if value not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}")
        return value
    return check


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
