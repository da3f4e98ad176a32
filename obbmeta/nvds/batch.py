"""Thin wrappers over a real ``NvDsBatchMeta`` / ``NvDsFrameMeta`` (addresses into NVIDIA's pools).

No GStreamer import here: a ``Gst.Buffer`` is only ever used through its address, ``hash(buf)`` (the ``GstBuffer*``,
the convention of pyds and pyservicemaker), passed to NVIDIA's ``libnvdsgst_meta.so``.
"""
from __future__ import annotations

import ctypes
from typing import Any

from . import _core, layouts


def _buffer_address(buf: Any) -> int:
    """``GstBuffer*`` of a Gst.Buffer (``hash(buf)``) or of an int address."""
    if isinstance(buf, int):
        address = buf
    elif type(buf).__module__.startswith("gi."):  # a PyGObject Gst.Buffer: hash() is the GstBuffer*
        address = hash(buf)
    else:
        raise TypeError(f"buf must be a Gst.Buffer or its address (int, hash(buf)); got {type(buf).__name__}")
    if address <= 0:
        raise ValueError(f"buf address must be a positive pointer, got {address}")
    return address


def _gst_meta_lib(core: _core.Core) -> ctypes.CDLL:
    if core.libs.gst_meta is None:
        raise RuntimeError(f"libnvdsgst_meta.so is needed for Gst.Buffer metadata: {core.libs.gst_meta_error}")
    return core.libs.gst_meta


class FrameMeta:
    """One ``NvDsFrameMeta`` of a batch. Valid only while its batch is alive."""

    __slots__ = ("address", "batch", "_head")

    def __init__(self, address: int, batch: "BatchMeta"):
        if not address:
            raise ValueError("frame address is NULL")
        self.address = int(address)
        self.batch = batch
        self._head = layouts.FrameMetaHead.from_address(self.address)

    def __repr__(self) -> str:
        return (f"FrameMeta(source_id={self.source_id}, frame_num={self.frame_num}, batch_id={self.batch_id}, "
                f"size={self.size}, num_obj_meta={self.num_obj_meta}, address=0x{self.address:x})")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FrameMeta) and other.address == self.address

    def __hash__(self) -> int:
        return hash(self.address)

    source_id = property(lambda self: self._head.source_id)
    pad_index = property(lambda self: self._head.pad_index)
    batch_id = property(lambda self: self._head.batch_id)
    frame_num = property(lambda self: self._head.frame_num)
    buf_pts = property(lambda self: self._head.buf_pts)
    num_obj_meta = property(lambda self: self._head.num_obj_meta)
    infer_done = property(lambda self: bool(self._head.bInferDone))
    source_frame_width = property(lambda self: self._head.source_frame_width)
    source_frame_height = property(lambda self: self._head.source_frame_height)
    pipeline_width = property(lambda self: self._head.pipeline_width)
    pipeline_height = property(lambda self: self._head.pipeline_height)

    @property
    def size(self) -> tuple[int, int] | None:
        """(width, height) of the frame in the batched surface: pipeline_* when set, else source_frame_*.

        nvstreammux scales to its own width/height; when that differs from the input size and pipeline_* is not
        set (the new mux and NVIDIA's frame copy leave it 0), pass ``frame_size=`` to attach_obbs.
        """
        h = self._head
        if h.pipeline_width and h.pipeline_height:
            return h.pipeline_width, h.pipeline_height
        if h.source_frame_width and h.source_frame_height:
            return h.source_frame_width, h.source_frame_height
        return None


class BatchMeta:
    """A real ``NvDsBatchMeta`` from NVIDIA's libnvds_meta.

    ``create`` makes one (owned by this object until attached to a buffer or destroyed); ``from_gst_buffer`` and
    ``from_address`` wrap one that something else owns.
    """

    __slots__ = ("address", "_owned", "_core", "_head", "__weakref__")

    def __init__(self, address: int, owned: bool = False):
        if not address:
            raise ValueError("batch address is NULL")
        self._core = _core.get()
        self.address = int(address)
        self._owned = owned
        self._head = layouts.BatchMetaHead.from_address(self.address)

    # ---- construction
    @classmethod
    def create(cls, max_frames: int) -> "BatchMeta":
        """A new batch meta for ``max_frames`` frames, set up exactly as nvstreammux sets its own."""
        if not isinstance(max_frames, int) or isinstance(max_frames, bool) or not 1 <= max_frames < 2**31:
            raise ValueError(f"max_frames must be an int in [1, 2**31), got {max_frames!r}")
        core = _core.get()
        m = core.libs.meta
        address = m.nvds_create_batch_meta(max_frames)
        if not address:
            raise MemoryError("nvds_create_batch_meta returned NULL")
        head = layouts.BatchMetaHead.from_address(address)
        # What nvstreammux sets by hand after nvds_create_batch_meta: NVIDIA's batch copy function builds the copy
        # with max_frames_in_batch pools and crashes on 0.
        head.base_meta.batch_meta = address
        head.base_meta.copy_func = ctypes.cast(m.nvds_batch_meta_copy_func, ctypes.c_void_p).value
        head.base_meta.release_func = ctypes.cast(m.nvds_batch_meta_release_func, ctypes.c_void_p).value
        head.max_frames_in_batch = max_frames
        return cls(address, owned=True)

    @classmethod
    def from_address(cls, address: int) -> "BatchMeta":
        """Wrap an existing ``NvDsBatchMeta*`` (e.g. from pyds or C); not owned."""
        if not isinstance(address, int) or isinstance(address, bool):
            raise TypeError(f"address must be an int (an NvDsBatchMeta*), got {type(address).__name__}")
        return cls(address)

    @classmethod
    def from_gst_buffer(cls, buf: Any) -> "BatchMeta":
        """The batch meta attached to a Gst.Buffer (or a ``GstBuffer*`` int); LookupError if there is none."""
        core = _core.get()
        address = _gst_meta_lib(core).gst_buffer_get_nvds_batch_meta(_buffer_address(buf))
        if not address:
            raise LookupError("this Gst.Buffer carries no NvDsBatchMeta (no nvstreammux upstream? use "
                              "BatchMeta.create(...).attach_to_gst_buffer(buf))")
        return cls(address)

    # ---- properties
    max_frames = property(lambda self: self._head.max_frames_in_batch)
    num_frames = property(lambda self: self._head.num_frames_in_batch)
    owned = property(lambda self: self._owned)

    @property
    def layout(self) -> layouts.Layout:
        return self._core.layout

    @property
    def frames(self) -> list[FrameMeta]:
        """The frame metas in ``frame_meta_list`` order."""
        out = []
        with self.locked():
            node = self._head.frame_meta_list
            while node:
                out.append(FrameMeta(node.contents.data, self))
                node = node.contents.next
        return out

    def __repr__(self) -> str:
        return (f"BatchMeta(num_frames={self.num_frames}, max_frames={self.max_frames}, owned={self._owned}, "
                f"address=0x{self.address:x})")

    # ---- editing
    def locked(self) -> "_MetaLock":
        """``with batch.locked():`` holds NVIDIA's (recursive) batch meta lock."""
        return _MetaLock(self)

    def add_frame(self, source_id: int = 0, width: int = 0, height: int = 0, frame_num: int = 0, *,
                  pad_index: int | None = None, buf_pts: int = 0) -> FrameMeta:
        """Acquire a frame meta from the pool, fill it as nvstreammux does and append it to the batch."""
        # The C fields are guint / gint / guint64: a larger value would wrap silently.
        for name, value, limit in (("source_id", source_id, 2**32), ("width", width, 2**32), ("height", height, 2**32),
                                   ("frame_num", frame_num, 2**31), ("buf_pts", buf_pts, 2**64),
                                   ("pad_index", 0 if pad_index is None else pad_index, 2**32)):
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < limit:
                raise ValueError(f"{name} must be an int in [0, {limit}), got {value!r}")
        m = self._core.libs.meta
        with self.locked():  # the full-batch check and the append under one lock: two threads cannot overfill it
            if self.num_frames >= self.max_frames:
                raise ValueError(f"the batch is full: {self.num_frames} of max_frames={self.max_frames} frames")
            address = m.nvds_acquire_frame_meta_from_pool(self.address)
            f = layouts.FrameMetaHead.from_address(address)
            f.pad_index = source_id if pad_index is None else pad_index
            f.source_id = source_id
            f.batch_id = self.num_frames
            f.frame_num = frame_num
            f.buf_pts = buf_pts
            f.num_surfaces_per_frame = 1
            f.source_frame_width, f.source_frame_height = width, height
            f.pipeline_width, f.pipeline_height = width, height
            m.nvds_add_frame_meta_to_batch(self.address, address)
        return FrameMeta(address, self)

    def attach_to_gst_buffer(self, buf: Any) -> None:
        """Attach this batch to a Gst.Buffer (or GstBuffer* int) as nvstreammux does; the buffer then owns it.

        Do it where the buffer is yours to change (an element's transform_ip, before pushing it on).
        """
        if not self._owned:
            raise ValueError("only a batch made by BatchMeta.create() and not yet attached can be attached")
        core = self._core
        m = core.libs.meta
        meta = _gst_meta_lib(core).gst_buffer_add_nvds_meta(
            _buffer_address(buf), self.address, None,
            ctypes.cast(m.nvds_batch_meta_copy_func, ctypes.c_void_p),
            ctypes.cast(m.nvds_batch_meta_release_func, ctypes.c_void_p))
        if not meta:
            raise RuntimeError("gst_buffer_add_nvds_meta returned NULL; the batch stays owned by this object")
        _NvDsMetaHead.from_address(meta).meta_type = layouts.NVDS_BATCH_GST_META
        self._owned = False

    def copy(self) -> "BatchMeta":
        """A deep copy made by NVIDIA's ``nvds_batch_meta_copy_func`` (what a tee / buffer copy does)."""
        address = self._core.libs.meta.nvds_batch_meta_copy_func(self.address, None)
        if not address:
            raise RuntimeError("nvds_batch_meta_copy_func returned NULL")
        return BatchMeta(address, owned=True)

    def destroy(self) -> None:
        """Release an owned batch through ``nvds_batch_meta_release_func`` (frees every meta and payload)."""
        if self._owned:
            self._owned = False
            self._core.libs.meta.nvds_batch_meta_release_func(self.address, None)

    def __enter__(self) -> "BatchMeta":
        return self

    def __exit__(self, *exc: object) -> None:
        self.destroy()

    def __del__(self) -> None:
        try:
            self.destroy()
        except Exception:  # interpreter shutdown
            pass


class _NvDsMetaHead(ctypes.Structure):
    """``NvDsMeta`` (gstnvdsmeta.h): GstMeta {flags, info*}, meta_data, user_data, meta_type."""
    _fields_ = [("flags", ctypes.c_uint), ("info", ctypes.c_void_p), ("meta_data", ctypes.c_void_p),
                ("user_data", ctypes.c_void_p), ("meta_type", ctypes.c_int)]


class _MetaLock:
    __slots__ = ("_batch",)

    def __init__(self, batch: BatchMeta):
        self._batch = batch

    def __enter__(self) -> BatchMeta:
        self._batch._core.libs.meta.nvds_acquire_meta_lock(self._batch.address)
        return self._batch

    def __exit__(self, *exc: object) -> None:
        self._batch._core.libs.meta.nvds_release_meta_lock(self._batch.address)
