"""Thin wrappers over a real ``NvDsBatchMeta`` / ``NvDsFrameMeta`` (addresses into NVIDIA's pools).

No GStreamer import here: a ``Gst.Buffer`` is only ever used through its address, ``hash(buf)`` (the ``GstBuffer*``,
the convention of pyds and pyservicemaker), passed to NVIDIA's ``libnvdsgst_meta.so``.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import threading
import weakref
from typing import Any, Iterator

from .. import _pointers
from .._validators import int_in_range, is_int
from . import _core, layouts

NVDS_BATCH_META = 1  # NvDsMetaType of an NvDsBatchMeta's base_meta
# NVIDIA preallocates per frame slot (a frame meta and 8 object, classifier and label-info elements, about 7 KB):
# a bound keeps a mistyped max_frames from exhausting memory. nvstreammux batches are far smaller.
MAX_FRAMES = 4096


def _check_batch_pointer(address: int) -> None:
    """ValueError unless ``address`` points to readable memory holding an NvDsBatchMeta."""
    head = _pointers.struct_at("batch address", address, layouts.BatchMetaHead)
    if head.base_meta.meta_type != NVDS_BATCH_META or not head.obj_meta_pool or not head.frame_meta_pool:
        raise ValueError(f"batch address 0x{address:x} does not point to an NvDsBatchMeta (its base_meta.meta_type "
                         f"is {head.base_meta.meta_type}, not NVDS_BATCH_META, or it has no pools)")


def _check_frame_pointer(address: int) -> None:
    """ValueError unless ``address`` points to an NvDsFrameMeta whose batch meta is readable too."""
    head = _pointers.struct_at("frame address", address, layouts.FrameMetaHead)
    if head.base_meta.meta_type != layouts.NVDS_FRAME_META or not head.base_meta.batch_meta:
        raise ValueError(f"frame address 0x{address:x} does not point to an NvDsFrameMeta (base_meta.meta_type "
                         f"{head.base_meta.meta_type}, not NVDS_FRAME_META, or no batch_meta)")
    _check_batch_pointer(head.base_meta.batch_meta)


def _gst_meta_lib(core: _core.Core) -> ctypes.CDLL:
    if core.libs.gst_meta is None:
        raise RuntimeError(f"libnvdsgst_meta.so is needed for Gst.Buffer metadata: {core.libs.gst_meta_error}")
    return core.libs.gst_meta


class FrameMeta:
    """One ``NvDsFrameMeta`` of a batch. Valid only while its batch is alive: after ``destroy()`` of the batch
    (or the end of its ``with`` block) every use raises ValueError instead of reading freed memory.

    ``FrameMeta(address, batch)`` checks a raw address: it must be one of ``batch``'s frames, or, without a batch,
    point to readable memory holding an NvDsFrameMeta (a wrong int raises instead of crashing).
    """

    __slots__ = ("_address", "batch", "_frame_head")

    def __init__(self, address: int, batch: "BatchMeta | None"):
        address = _pointers.pointer("frame address", address)
        if batch is not None:
            if address not in batch._frame_addresses():
                raise ValueError(f"frame address 0x{address:x} is not a frame of the batch meta at "
                                 f"0x{batch.address:x} (pass one of batch.frames, or frame_meta_list data pointers)")
        else:
            _check_frame_pointer(address)
        self._set(address, batch)

    @classmethod
    def _wrap(cls, address: int, batch: "BatchMeta") -> "FrameMeta":
        """A frame found in ``batch``'s own frame_meta_list (no check needed)."""
        frame = cls.__new__(cls)
        frame._set(address, batch)
        return frame

    def _set(self, address: int, batch: "BatchMeta | None") -> None:
        self._address = int(address)
        self.batch = batch
        self._frame_head = layouts.FrameMetaHead.from_address(self._address)

    @property
    def address(self) -> int:
        """The ``NvDsFrameMeta*`` (ValueError once its batch was destroyed)."""
        if self.batch is not None:
            self.batch._check_alive()
        return self._address

    @property
    def _head(self) -> layouts.FrameMetaHead:
        if self.batch is not None:
            self.batch._check_alive()
        return self._frame_head

    def __repr__(self) -> str:
        if self.batch is not None and self.batch.released:
            return f"FrameMeta(released, address=0x{self._address:x})"
        return (f"FrameMeta(source_id={self.source_id}, frame_number={self.frame_number}, batch_id={self.batch_id}, "
                f"size={self.size}, num_obj_meta={self.num_obj_meta}, address=0x{self._address:x})")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FrameMeta) and other._address == self._address

    def __hash__(self) -> int:
        return hash(self._address)

    # Read-only fields, under pyservicemaker's FrameMetadata names (frame_number, source_width, ...): one name each.
    @property
    def source_id(self) -> int:
        """``source_id``: the stream the frame came from (nvstreammux's sink pad / source index)."""
        return self._head.source_id

    @property
    def pad_index(self) -> int:
        """``pad_index``: the nvstreammux sink pad the frame came in on."""
        return self._head.pad_index

    @property
    def batch_id(self) -> int:
        """``batch_id``: the frame's index in the batched surface (``NvBufSurface.surfaceList[batch_id]``)."""
        return self._head.batch_id

    @property
    def frame_number(self) -> int:
        """The frame's number in its stream (C ``frame_num``)."""
        return self._head.frame_num


    @property
    def buffer_pts(self) -> int:
        """Presentation timestamp of the frame's buffer in nanoseconds (C ``buf_pts``)."""
        return self._head.buf_pts


    @property
    def ntp_timestamp(self) -> int:
        """NTP timestamp of the frame in nanoseconds (0 unless nvstreammux attaches it)."""
        return self._head.ntp_timestamp

    @property
    def source_width(self) -> int:
        """Width of the frame as it came from the source, in pixels (C ``source_frame_width``)."""
        return self._head.source_frame_width

    @property
    def source_height(self) -> int:
        """Height of the frame as it came from the source, in pixels (C ``source_frame_height``)."""
        return self._head.source_frame_height



    @property
    def pipeline_width(self) -> int:
        """Width of the frame in the batched surface (0 when nvstreammux leaves it unset; see :attr:`size`)."""
        return self._head.pipeline_width

    @property
    def pipeline_height(self) -> int:
        """Height of the frame in the batched surface (0 when nvstreammux leaves it unset; see :attr:`size`)."""
        return self._head.pipeline_height

    @property
    def num_obj_meta(self) -> int:
        """Objects in the frame's ``obj_meta_list``."""
        return self._head.num_obj_meta

    @property
    def infer_done(self) -> bool:
        """C ``bInferDone``: a detector has run on this frame (``attach_obbs`` sets it)."""
        return bool(self._head.bInferDone)

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


# Owned batches by address, so that a wrapper made later with from_address(...) of the same batch learns when the
# owner destroys it (weak: an owner that is garbage-collected destroys the batch and leaves this map by itself).
_OWNERS: "weakref.WeakValueDictionary[int, BatchMeta]" = weakref.WeakValueDictionary()


class BatchMeta:
    """A real ``NvDsBatchMeta`` from NVIDIA's libnvds_meta.

    ``create`` makes one (owned by this object until attached to a buffer or destroyed); ``from_gst_buffer`` and
    ``from_address`` wrap one that something else owns. After ``destroy()`` (or the end of a ``with`` block) the
    batch is freed and every use of this wrapper, of its frames and of other wrappers of the same batch made with
    ``from_address`` raises ValueError. (A batch owned by a Gst.Buffer lives as long as the buffer; obbmeta cannot
    see that buffer's end: use its wrappers only while you hold the buffer.)
    """

    __slots__ = ("_address", "_owned", "_core", "_batch_head", "_owner", "_released", "__weakref__")

    def __init__(self, address: int, owned: bool = False, *, _checked: bool = False):
        """Wrap ``address`` (checked to hold an NvDsBatchMeta unless it is a live batch obbmeta owns). ``owned``
        is for obbmeta's own constructors (``create``, ``copy``): an owned batch is freed by ``destroy()``."""
        address = _pointers.pointer("batch address", address)
        if not owned and not _checked:
            owner = _OWNERS.get(address)
            if owner is None or owner.released:
                _check_batch_pointer(address)
        self._core = _core.get()
        self._address = address
        self._owned = owned
        self._released = False
        self._batch_head = layouts.BatchMetaHead.from_address(address)
        if owned:
            _OWNERS[address] = self
            self._owner = None
        else:
            self._owner = _OWNERS.get(address)

    @property
    def released(self) -> bool:
        """True once this batch was destroyed (by this wrapper, or by the owner of the batch it wraps)."""
        return self._released or (self._owner is not None and self._owner._released)

    def _check_alive(self) -> None:
        if self.released:
            raise ValueError(f"the NvDsBatchMeta at 0x{self._address:x} was destroyed (destroy() or the end of its "
                             "with block); it and its frames can no longer be used")

    @property
    def address(self) -> int:
        """The ``NvDsBatchMeta*`` (for pyds / ctypes / C callers); ValueError once destroyed."""
        self._check_alive()
        return self._address

    @property
    def _head(self) -> layouts.BatchMetaHead:
        self._check_alive()
        return self._batch_head

    def _frame_addresses(self) -> list[int]:
        """The data pointers of frame_meta_list, read under the batch lock."""
        out = []
        with self.locked():
            node = self._head.frame_meta_list
            while node:
                out.append(node.contents.data)
                node = node.contents.next
        return out

    # ---- construction
    @classmethod
    def create(cls, max_frames: int) -> "BatchMeta":
        """A new batch meta for ``max_frames`` frames (1 to 4096), set up exactly as nvstreammux sets its own."""
        int_in_range("max_frames", max_frames, 1, MAX_FRAMES,
                     f"an int in [1, {MAX_FRAMES}] (NVIDIA preallocates about 7 KB per frame slot)")
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
        """Wrap an existing ``NvDsBatchMeta*`` (e.g. from pyds or C); not owned. The address is checked: it must
        point to readable memory holding an NvDsBatchMeta (``base_meta.meta_type == NVDS_BATCH_META``)."""
        if not is_int(address):
            raise TypeError(f"address must be an int (an NvDsBatchMeta*), got {type(address).__name__}")
        return cls(address)

    @classmethod
    def from_gst_buffer(cls, buf: Any) -> "BatchMeta":
        """The batch meta attached to a Gst.Buffer (or a ``GstBuffer*`` int); LookupError if there is none."""
        core = _core.get()
        address = _gst_meta_lib(core).gst_buffer_get_nvds_batch_meta(_pointers.gst_buffer_address(buf))
        if not address:
            raise LookupError("this Gst.Buffer carries no NvDsBatchMeta (no nvstreammux upstream? use "
                              "BatchMeta.create(...).attach_to_gst_buffer(buf))")
        return cls(address, _checked=True)  # NVIDIA's lookup on a live buffer

    # ---- properties
    @property
    def max_frames(self) -> int:
        """Frame slots of the batch (C ``max_frames_in_batch``)."""
        return self._head.max_frames_in_batch

    @property
    def n_frames(self) -> int:
        """Frames in the batch (pyservicemaker's name; C ``num_frames_in_batch``)."""
        return self._head.num_frames_in_batch


    @property
    def owned(self) -> bool:
        """True when this wrapper made the batch (``create``) and releases it; False for a batch it only wraps."""
        return self._owned

    @property
    def layout(self) -> layouts.MetaLayout:
        """The metadata struct layout of the DeepStream in use (``has_rotation_angle``: DeepStream 9)."""
        return self._core.layout

    @property
    def frames(self) -> list[FrameMeta]:
        """The frame metas in ``frame_meta_list`` order."""
        return [FrameMeta._wrap(a, self) for a in self._frame_addresses()]

    @property
    def frame_items(self) -> Iterator[FrameMeta]:
        """The frame metas in ``frame_meta_list`` order, as pyservicemaker's ``BatchMetadata.frame_items``."""
        return iter(self.frames)

    def __repr__(self) -> str:
        if self.released:
            return f"BatchMeta(released, address=0x{self._address:x})"
        return (f"BatchMeta(n_frames={self.n_frames}, max_frames={self.max_frames}, owned={self._owned}, "
                f"address=0x{self._address:x})")

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
            int_in_range(name, value, 0, limit - 1, f"an int in [0, {limit})")
        m = self._core.libs.meta
        with self.locked():  # the full-batch check and the append under one lock: two threads cannot overfill it
            if self.n_frames >= self.max_frames:
                raise ValueError(f"the batch is full: {self.n_frames} of max_frames={self.max_frames} frames")
            address = m.nvds_acquire_frame_meta_from_pool(self.address)
            f = layouts.FrameMetaHead.from_address(address)
            f.pad_index = source_id if pad_index is None else pad_index
            f.source_id = source_id
            f.batch_id = self.n_frames
            f.frame_num = frame_num
            f.buf_pts = buf_pts
            f.num_surfaces_per_frame = 1
            f.source_frame_width, f.source_frame_height = width, height
            f.pipeline_width, f.pipeline_height = width, height
            m.nvds_add_frame_meta_to_batch(self.address, address)
        return FrameMeta._wrap(address, self)

    def attach_to_gst_buffer(self, buf: Any) -> None:
        """Attach this batch to a Gst.Buffer (or GstBuffer* int) as nvstreammux does; the buffer then owns it.

        Do it where the buffer is yours to change (an element's transform_ip, before pushing it on).
        """
        if not self._owned:
            raise ValueError("only a batch made by BatchMeta.create() and not yet attached can be attached")
        core = self._core
        m = core.libs.meta
        meta = _gst_meta_lib(core).gst_buffer_add_nvds_meta(
            _pointers.gst_buffer_address(buf), self.address, None,
            ctypes.cast(m.nvds_batch_meta_copy_func, ctypes.c_void_p),
            ctypes.cast(m.nvds_batch_meta_release_func, ctypes.c_void_p))
        if not meta:
            raise RuntimeError("gst_buffer_add_nvds_meta returned NULL; the batch stays owned by this object")
        _NvDsMetaHead.from_address(meta).meta_type = layouts.NVDS_BATCH_GST_META
        self._owned = False
        if _OWNERS.get(self._address) is self:  # the buffer owns it now
            del _OWNERS[self._address]

    def copy(self) -> "BatchMeta":
        """A deep copy made by NVIDIA's ``nvds_batch_meta_copy_func`` (what a tee / buffer copy does).

        NVIDIA's copy builds the new batch with ``max_frames_in_batch`` frame slots and crashes on 0 (a batch made by
        a bare ``nvds_create_batch_meta`` that nobody set up as nvstreammux does): such a batch is refused."""
        head = self._head
        if head.max_frames_in_batch < 1 or head.num_frames_in_batch > head.max_frames_in_batch:
            raise ValueError(f"this batch has max_frames_in_batch = {head.max_frames_in_batch} and "
                             f"{head.num_frames_in_batch} frames; NVIDIA's nvds_batch_meta_copy_func needs "
                             "max_frames_in_batch >= 1 and >= num_frames_in_batch (set max_frames_in_batch as "
                             "nvstreammux does, or make the batch with BatchMeta.create)")
        if head.max_frames_in_batch > MAX_FRAMES:
            raise ValueError(f"this batch has max_frames_in_batch = {head.max_frames_in_batch}; copies are made for "
                             f"at most {MAX_FRAMES} frame slots")
        with self.locked():  # a consistent source while other threads write into it
            address = self._core.libs.meta.nvds_batch_meta_copy_func(self.address, None)
        if not address:
            raise RuntimeError("nvds_batch_meta_copy_func returned NULL")
        return BatchMeta(address, owned=True)

    def destroy(self) -> None:
        """Release an owned batch through ``nvds_batch_meta_release_func`` (frees every meta and payload). The
        wrapper, its frames and the wrappers of the same batch from ``from_address`` are unusable afterwards."""
        if self._owned:
            if holds_lock(self._address):
                raise RuntimeError("destroy() inside this batch's own batch.locked(): leave the lock first (the "
                                   "lock lives in the batch meta that destroy frees)")
            self._owned = False
            self._released = True
            if _OWNERS.get(self._address) is self:
                del _OWNERS[self._address]
            self._core.libs.meta.nvds_batch_meta_release_func(self._address, None)

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


_HELD = threading.local()  # per thread: {batch address: depth} of the batch meta locks it holds


def holds_lock(address: int) -> bool:
    """Whether this thread holds the batch meta lock of the batch at ``address`` (``with batch.locked():``). Then
    obbmeta's short C calls on that batch keep the interpreter lock (``NativeLibrary.held``): the batch lock is
    recursive, so they cannot block on it, and each call saves the wait for the interpreter lock after it."""
    return getattr(_HELD, "depth", {}).get(address, 0) > 0


def entry(c: Any, name: str, batch_address: int) -> Any:
    """The C function ``name`` of library ``c``, in its ``_held`` form (the interpreter lock kept: ``NativeLibrary
    .held``) when this thread holds the lock of the batch at ``batch_address``: a batch's frames handled under one
    ``with batch.locked():`` cost no handoff of the interpreter lock per frame."""
    return getattr(c, name + "_held") if holds_lock(batch_address) else getattr(c, name)


class _MetaLock:
    __slots__ = ("_batch",)

    def __init__(self, batch: BatchMeta):
        self._batch = batch

    def __enter__(self) -> BatchMeta:
        address = self._batch.address
        depth = _HELD.__dict__.setdefault("depth", {})
        if not depth.get(address):  # held already by this thread: NVIDIA's lock is recursive, nothing to take
            self._batch._core.libs.meta.nvds_acquire_meta_lock(address)
        depth[address] = depth.get(address, 0) + 1
        return self._batch

    def __exit__(self, *exc: object) -> None:
        address = self._batch._address
        depth = _HELD.depth
        depth[address] -= 1
        if not depth[address]:
            del depth[address]
            if not self._batch.released:  # freed meanwhile (another wrapper's destroy): its lock is gone with it
                self._batch._core.libs.meta.nvds_release_meta_lock(address)
