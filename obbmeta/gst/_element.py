"""What the elements share: their declaration (GType name, metadata, pad templates, properties, debug category),
checked properties (with nvinfer's aliases and GStreamer's mutability flags), errors and warnings on the bus, the
batch meta."""
from __future__ import annotations

import ctypes
import ctypes.util
import threading
import weakref
from typing import Any, Callable

from ._debug import Category
from ._frames import READ_FORMATS, VideoFormat, templates
from ._gi import GLib, GObject, Gst, GstBase
from ._output import OutputQueue, event_is_serialized, query_is_serialized


def one_of(*choices: str) -> Callable[[Any], str]:
    """A property check accepting exactly one of ``choices``."""
    def check(value: Any) -> str:
        if value not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}")
        return value
    return check


def properties(specs: dict[str, tuple], ready_only: frozenset = frozenset()) -> dict[str, tuple]:
    """PyGObject's ``__gproperties__`` for ``specs`` (``(type, nick, blurb, [min, max,] default)`` tuples, by
    property name): each property readable and writable, with GStreamer's mutability flag:
    ``GST_PARAM_MUTABLE_READY`` for the names in ``ready_only`` (they take effect at the next start),
    ``GST_PARAM_MUTABLE_PLAYING`` for the others (they take effect at the next buffer)."""
    out = {}
    for name, spec in specs.items():
        mutable = Gst.PARAM_MUTABLE_READY if name in ready_only else Gst.PARAM_MUTABLE_PLAYING
        out[name] = spec + (int(GObject.ParamFlags.READWRITE) | mutable,)
    return out


class _GEnumValue(ctypes.Structure):
    _fields_ = [("value", ctypes.c_int), ("value_name", ctypes.c_char_p), ("value_nick", ctypes.c_char_p)]


_ENUM_TABLES: list = []  # GLib keeps pointers into the value tables of a registered enum: they live forever


def enum_type(name: str, values: tuple[tuple[int, str, str], ...]) -> type:
    """A GEnum type ``name`` with ``(value, name, nick)`` entries, registered once, as PyGObject's class: a property
    of this type takes ``process-mode=secondary`` or ``=2`` in gst-launch, as nvinfer's enums do. PyGObject cannot
    register an enum type from Python, so GLib's own ``g_enum_register_static`` registers it."""
    import gi._gi as _gi

    try:
        gtype = GObject.type_from_name(name)
    except RuntimeError:
        lib = ctypes.CDLL(ctypes.util.find_library("gobject-2.0") or "libgobject-2.0.so.0")
        lib.g_enum_register_static.restype = ctypes.c_size_t
        lib.g_enum_register_static.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
        table = (_GEnumValue * (len(values) + 1))(*[_GEnumValue(v, n.encode(), k.encode()) for v, n, k in values],
                                                    _GEnumValue(0, None, None))
        names = ctypes.create_string_buffer(name.encode())
        _ENUM_TABLES.append((table, names))
        lib.g_enum_register_static(names, ctypes.addressof(table))
        gtype = GObject.type_from_name(name)
    return _gi.enum_add(gtype)


#: The element classes declared with an ``element_name`` (obbmeta's, and any subclass declaring a name of its own),
#: by that name, in the order they were created: what :func:`obbmeta.gst.register` registers.
ELEMENT_CLASSES: dict[str, type] = {}
_DECLARATION = ("gtype_name", "long_name", "klass", "description")


class ObbmetaElement(GstBase.BaseTransform):
    """An in-place BaseTransform whose properties are checked when set, and whose failures become bus errors.

    Subclasses name in ``_aliases`` the properties that are another name of one (nvinfer's names), in
    ``_ready_only`` those that apply only at start, and give ``_checks[name] = fn(value) -> value`` for those that
    need more than GLib's own range check. A refused value keeps the old one, is logged, and makes the element
    refuse to start with the reason as an error message on the bus. Every exception out of a hook (user code
    included: a model, a factory; ``SystemExit`` and ``KeyboardInterrupt`` too) becomes the element's error on the
    bus and a flow error, never a hang or a silent pass.

    An element is declared by class attributes, which the class turns into what PyGObject and gst-python read when
    it is created (:meth:`__init_subclass__`): ``element_name`` (the factory name, also the debug category's),
    ``gtype_name``, ``long_name``, ``klass``, ``description`` and ``author`` (``__gstmetadata__``), ``formats`` (the
    pad templates' formats, system memory and NVMM), ``property_specs`` (``(type, nick, blurb, [min, max,]
    default)`` by property name, for :func:`properties`) and ``debug_description`` (default: ``long_name``). A
    subclass that declares no ``element_name`` (a user's, overriding a hook) is the element it derives from under an
    automatic GType name: register it with ``Gst.Element.register`` under a name of its own, or give it an
    ``element_name`` (and the rest of a declaration) so that :func:`obbmeta.gst.register` registers it. Either may
    add properties of its own in ``property_specs``.
    """
    __gtype_name__ = "GstObbmetaElement"

    element_name: str = ""
    gtype_name: str = ""
    long_name: str = ""
    klass: str = ""
    description: str = ""
    author: str = "obbmeta"
    debug_description: str = ""
    formats: tuple[str, ...] = READ_FORMATS
    property_specs: dict[str, tuple] = {}

    _specs: dict[str, tuple] = {}  # every property of the class, inherited ones included, with their flags
    _checks: dict[str, Callable[[Any], Any]] = {}
    _aliases: dict[str, str] = {}
    _ready_only: frozenset = frozenset()
    debug_category: Category | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Runs inside type.__new__, before PyGObject's metaclass registers the GType: what is set here lands in the
        # class's own __dict__, the only place PyGObject and gst-python read these names from. The GType does not
        # exist yet (cls.__gtype__ is still the parent's), so the class is only recorded, not registered.
        super().__init_subclass__(**kwargs)
        own = cls.__dict__
        if "property_specs" in own:
            if "__gproperties__" in own:
                raise TypeError(f"{cls.__qualname__}: declare properties in property_specs or __gproperties__, "
                                "not both")
            new = properties(cls.property_specs, cls._ready_only)
            cls.__gproperties__ = new
            cls._specs = {**cls._specs, **new}
        if "element_name" not in own:
            return
        name = cls.element_name
        missing = [attr for attr in _DECLARATION if not own.get(attr)]
        if not isinstance(name, str) or not name or missing:
            raise TypeError(f"{cls.__qualname__}: an element declares a non-empty element_name (got {name!r}) and "
                            f"its own {', '.join(_DECLARATION)} (missing: {', '.join(missing) or 'none'})")
        if name in ELEMENT_CLASSES:
            raise ValueError(f"{cls.__qualname__}: element_name {name!r} is already declared by "
                             f"{ELEMENT_CLASSES[name].__module__}.{ELEMENT_CLASSES[name].__qualname__}")
        if _gtype_exists(cls.gtype_name):  # checked here: PyGObject's own refusal would come after the recording
            raise ValueError(f"{cls.__qualname__}: gtype_name {cls.gtype_name!r} is already a GType")
        cls.__gtype_name__ = cls.gtype_name
        cls.__gstmetadata__ = (cls.long_name, cls.klass, cls.description, cls.author)
        cls.__gsttemplates__ = templates(cls.formats)
        cls.debug_category = Category(name, cls.debug_description or cls.long_name)
        ELEMENT_CLASSES[name] = cls

    def __init__(self):
        super().__init__()
        self.set_in_place(True)
        self._props = {name: spec[3] if spec[0] in (str, bool) else spec[-2]
                       for name, spec in self._specs.items() if name not in self._aliases}
        self._explicit: set[str] = set()  # properties the application set (they override a config file)
        self._refused: dict[str, str] = {}
        self._prop_lock = threading.RLock()
        self._started: dict[str, Any] | None = None  # the ready-only values in force, from snapshot to stop
        self.running = False
        self.video: VideoFormat | None = None
        self._output_queue: OutputQueue | None = None  # the output thread, while one is open (open_output)
        me = weakref.ref(self)  # a closure holding the element would keep it alive (the pad holds the closure)
        self.sinkpad.add_probe(Gst.PadProbeType.QUERY_DOWNSTREAM,
                               lambda pad, info: me()._query_probe(pad, info) if me() is not None
                               else Gst.PadProbeReturn.OK)
        self.srcpad.add_probe(Gst.PadProbeType.QUERY_UPSTREAM,
                              lambda pad, info: me()._position_probe(pad, info) if me() is not None
                              else Gst.PadProbeReturn.OK)

    # ---- properties
    def do_get_property(self, prop: GObject.ParamSpec) -> Any:
        with self._prop_lock:  # the value last set (a ready-only one set while running included)
            return self.get_alias(prop.name) if prop.name in self._aliases else self._props[prop.name]

    def get_alias(self, name: str) -> Any:
        """Hook: the value of an alias whose type differs from its property's (default: the property's value)."""
        return self._props[self._aliases[name]]

    def set_alias(self, name: str, value: Any) -> tuple[str, Any]:
        """Hook: ``(property, value)`` for a value set through an alias (default: the same value)."""
        return self._aliases[name], value

    def do_set_property(self, prop: GObject.ParamSpec, value: Any) -> None:
        name = prop.name
        shown = value
        try:
            if name in self._aliases:
                name, value = self.set_alias(name, value)
            check = self._checks.get(name)
            if check is not None:
                value = check(value)
        except (TypeError, ValueError, OSError) as exc:
            with self._prop_lock:
                self._refused[name] = f"property {prop.name}={shown!r} refused: {exc}"
            self.warn(self._refused[name])
            return
        with self._prop_lock:
            self._refused.pop(name, None)
            self._props[name] = value
            self._explicit.add(name)
            pending = self._started is not None and name in self._ready_only
        if pending:
            self.warn(f"property {prop.name} cannot change while the element runs; it applies at the next start")
            return
        self.property_changed(name)

    def property_changed(self, name: str) -> None:
        """Hook: a property took a new value (on the thread that set it)."""

    def prop(self, name: str) -> Any:
        """The value in force: while the element runs, a ready-only property keeps the value it started with (one
        set meanwhile is read back by get_property and applies at the next start, as the warning says)."""
        started = self._started
        if started is not None and name in started:
            return started[name]
        return self._props[name]

    # ---- life cycle
    def do_start(self) -> bool:
        with self._prop_lock:
            refused = list(self._refused.values())
        if refused:
            self.fail(Gst.LibraryError.SETTINGS, "; ".join(refused))
            return False
        with self._prop_lock:
            self._started = {name: self._props[name] for name in self._ready_only if name in self._props}
        try:
            self.start()
        except BaseException as exc:  # noqa: BLE001 - any failure to start is reported on the bus
            self._started = None
            self.close_output()  # a subclass's start may fail after its parent's opened one (no stop follows)
            self.fail(Gst.LibraryError.INIT, describe_failure(exc))
            return False
        self.running = True
        return True

    def do_stop(self) -> bool:
        self.running = False
        self._started = None
        try:
            self.close_output()  # what is queued finishes (not pushed) before stop() lets go of what it needs
            self.stop()
        except BaseException as exc:  # noqa: BLE001
            self.fail(Gst.LibraryError.SHUTDOWN, describe_failure(exc))
            return False
        return True

    def start(self) -> None:
        """Hook: load what the element needs (may raise)."""

    def stop(self) -> None:
        """Hook: the element stopped (PAUSED -> READY): release what start loaded."""

    def reset(self) -> None:
        """Hook: a stream ended or was flushed (EOS / FLUSH_STOP): drop per-stream state."""

    def do_sink_event(self, event: Gst.Event) -> bool:
        out = self._output_queue
        if out is not None:
            if event.type == Gst.EventType.FLUSH_START:
                out.flush_start()
            elif event.type == Gst.EventType.FLUSH_STOP:
                out.flush_stop()
            elif event_is_serialized(event):
                out.drain()  # the buffers before it leave first (caps, segment, EOS, gap, custom events)
        if event.type in (Gst.EventType.EOS, Gst.EventType.FLUSH_STOP):
            self.reset()
        return GstBase.BaseTransform.do_sink_event(self, event)

    # ---- output thread (nvinfer's split: the streaming thread queues a buffer's GPU work, another thread waits)
    def open_output(self, depth: int) -> None:
        """Give the element an output thread (``<name>-output``) with up to ``depth`` buffers between it and the
        streaming thread (docs/gst.md, "Which thread does what"); start() calls it. From then on every buffer
        leaves through :meth:`hand_over`, in order."""
        self.close_output()
        self._output_queue = OutputQueue(self, depth, name=f"{self.get_name()}-output")

    def close_output(self) -> None:
        """Finish what is queued without pushing it and end the output thread (at stop; nothing if none)."""
        out, self._output_queue = self._output_queue, None
        if out is not None:
            out.stop()

    def downstream_flow(self) -> Gst.FlowReturn:
        """OK, or the flow of a push of the output thread that failed (EOS, FLUSHING, NOT_LINKED, ERROR), which
        :meth:`process` returns for the next buffer, as nvinfer returns its last flow."""
        out = self._output_queue
        return out.flow if out is not None else Gst.FlowReturn.OK

    def hand_over(self, buf: Gst.Buffer, finish: Callable[[], None] | None, t_in: float) -> Gst.FlowReturn:
        """The end of :meth:`process` for a buffer: without an output thread ``finish`` (the buffer's remaining
        work: a wait for the device, the metadata) runs here and the buffer goes on as usual; with one, the buffer
        and ``finish`` are queued and that thread runs ``finish``, then pushes the buffer."""
        out = self._output_queue
        if out is None:
            if finish is not None:
                finish()
            return Gst.FlowReturn.OK
        return out.put(buf, finish, t_in)

    def output_latencies(self) -> list[float]:
        """Seconds from a buffer's arrival to the end of its push, for the last buffers (output thread only; the
        ``latencies`` property of obbinfer and obboverlay)."""
        out = self._output_queue
        return list(out.latencies) if out is not None else []

    def _position_probe(self, pad: Gst.Pad, info: Gst.PadProbeInfo) -> Gst.PadProbeReturn:
        # BaseTransform answers a TIME position query on the source pad from the last buffer it pushed itself, and
        # with an output thread it pushes none: the output thread's last pushed buffer answers it instead
        out = self._output_queue
        query = info.get_query()
        if out is None or query.type != Gst.QueryType.POSITION or query.parse_position()[0] != Gst.Format.TIME:
            return Gst.PadProbeReturn.OK
        end, segment = out.position, self.segment
        if end is None or segment.format != Gst.Format.TIME:
            return Gst.PadProbeReturn.OK
        query.set_position(Gst.Format.TIME, segment.to_stream_time(Gst.Format.TIME, end))
        return Gst.PadProbeReturn.HANDLED

    def _query_probe(self, pad: Gst.Pad, info: Gst.PadProbeInfo) -> Gst.PadProbeReturn:
        # a probe, not do_query (PyGObject finds BaseTransform's and Element's query vfuncs ambiguous)
        out = self._output_queue
        if out is not None and query_is_serialized(info.get_query()):
            out.drain()  # a drain or allocation query is answered after the buffers before it have left
        return Gst.PadProbeReturn.OK

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
        # gst-python only prints an exception raised here and lets the stream run on (and a SystemExit ends the
        # streaming thread, leaving the pipeline hung): make any of them an error message and a flow error, so the
        # pipeline stops cleanly with the reason on the bus.
        try:
            return self.process(buf)
        except BaseException as exc:  # noqa: BLE001
            self.fail(Gst.StreamError.FAILED, describe_failure(exc))
            return Gst.FlowReturn.ERROR

    def process(self, buf: Gst.Buffer) -> Gst.FlowReturn:
        raise NotImplementedError

    def fail(self, code: Any, text: str) -> None:
        """Post an error message from this element (domain and code as GStreamer's own elements use them)."""
        if self.debug_category is not None:
            self.debug_category.error(self, "%s", text)
        err = GLib.Error.new_literal(code.__class__.quark(), text, int(code))
        self.post_message(Gst.Message.new_error(self, err, text))

    def warn(self, text: str) -> None:
        """Post a warning message from this element (the pipeline runs on)."""
        if self.debug_category is not None:
            self.debug_category.warning(self, "%s", text)
        err = GLib.Error.new_literal(Gst.LibraryError.quark(), text, int(Gst.LibraryError.SETTINGS))
        self.post_message(Gst.Message.new_warning(self, err, text))


def _gtype_exists(name: str) -> bool:
    try:
        GObject.type_from_name(name)
    except RuntimeError:
        return False
    return True


def describe_failure(exc: BaseException) -> str:
    """What an exception out of an element's hook is called in its bus message: ``Type: text``, with a word on who
    raised a ``SystemExit`` / ``KeyboardInterrupt`` (which otherwise say nothing)."""
    if isinstance(exc, SystemExit):
        return f"SystemExit({exc.code!r}) raised inside the element (by the model or its factory)"
    if isinstance(exc, KeyboardInterrupt):
        return "KeyboardInterrupt raised inside the element (by the model or its factory)"
    return f"{type(exc).__name__}: {exc}"


# ---------------------------------------------------------------- batch meta

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
