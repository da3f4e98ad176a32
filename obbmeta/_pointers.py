"""Checks on raw pointers handed in as ints (pyds, C callers): a wrong int must raise, never take the process down.

A pointer int is first range-checked (> 0, a user-space address), then the bytes obbmeta is about to read are
copied through ``/proc/self/mem``, which answers an unmapped address with an error instead of a segfault, and the
struct found there must say what it is (``base_meta.meta_type``, a GstBuffer's GType). Where ``/proc/self/mem`` cannot
be opened the range check is all that is left (the probe then reads directly).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from functools import lru_cache
from typing import Any

from ._validators import is_int

# pread's offset is a signed 64-bit int; user-space addresses on x86_64 and aarch64 lie far below 2**63.
ADDRESS_LIMIT = 1 << 63

_lock = threading.Lock()
_mem: tuple[int, int] | None = None  # (pid, fd): /proc/self/mem opened by this process (a fork reopens it)


def pointer(name: str, value: object) -> int:
    """``value`` as a pointer int, or TypeError / ValueError naming ``name``."""
    if not is_int(value):
        raise TypeError(f"{name} must be an int address, got {type(value).__name__}")
    if not 0 < value < ADDRESS_LIMIT:
        raise ValueError(f"{name} must be a positive address below 2**63, got {value}")
    return value


def _fd() -> int | None:
    global _mem
    pid = os.getpid()
    with _lock:
        if _mem is None or _mem[0] != pid:
            try:
                _mem = (pid, os.open("/proc/self/mem", os.O_RDONLY | os.O_CLOEXEC))
            except OSError:
                _mem = (pid, -1)
        return _mem[1] if _mem[1] >= 0 else None


def read(address: int, size: int) -> bytes | None:
    """``size`` bytes at ``address``, or None when that memory is not mapped readable in this process."""
    if not 0 < address < ADDRESS_LIMIT - size:
        return None
    fd = _fd()
    if fd is None:  # no /proc/self/mem: read directly (then a bad address would crash)
        return ctypes.string_at(address, size)
    try:
        data = os.pread(fd, size, address)
    except OSError:
        return None
    return data if len(data) == size else None


def mapped(ranges: list[tuple[int, int]], write: bool = False) -> list[bool] | None:
    """For each ``(address, size)``: whether all its bytes lie in memory this process has mapped readable (and
    writable, with ``write``), from one read of ``/proc/self/maps``; None where that file cannot be read.

    The kernel lists the mappings in address order without overlaps, so each range parses only the lines it needs:
    a binary search for the first mapping that ends past its start, then the mappings that follow while they are
    contiguous and usable (a process with torch and DeepStream loaded maps a few thousand; parsing every line cost
    more than the rest of a 1080p buffer's map)."""
    try:
        with open("/proc/self/maps", "rb") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    return covered(lines, ranges, write)


def usable(ranges: list[tuple[int, int]], write: bool = False) -> list[bool]:
    """:func:`mapped`, or where ``/proc/self/maps`` cannot be read, at least whether the first and the last byte of
    each range can be read (:func:`read`)."""
    ok = mapped(ranges, write)
    if ok is None:
        ok = [read(a, 1) is not None and read(a + n - 1, 1) is not None for a, n in ranges]
    return ok


def covered(lines: list[bytes], ranges: list[tuple[int, int]], write: bool = False) -> list[bool]:
    """:func:`mapped` on the lines of a ``/proc/<pid>/maps`` read (``lo-hi perms ...``, in address order)."""
    def span(i: int) -> tuple[int, int, bytes]:
        head = lines[i].split(b" ", 2)
        lo, _, hi = head[0].partition(b"-")
        return int(lo, 16), int(hi, 16), head[1] if len(head) > 1 else b""

    out = []
    for address, size in ranges:
        pos, end, ok = address, address + size, size >= 0 and 0 < address < ADDRESS_LIMIT - max(size, 0)
        if ok and size:
            first, last = 0, len(lines)
            while first < last:  # the first mapping whose end is past pos
                mid = (first + last) // 2
                if span(mid)[1] <= pos:
                    first = mid + 1
                else:
                    last = mid
            for i in range(first, len(lines)):
                lo, hi, perms = span(i)
                if lo > pos or perms[:1] != b"r" or (write and perms[1:2] != b"w"):
                    ok = False
                    break
                pos = hi
                if pos >= end:
                    break
        out.append(ok and pos >= end)
    return out


def struct_at(name: str, address: int, ctype: type) -> ctypes.Structure:
    """A copy of the ``ctype`` struct at ``address``; ValueError naming ``name`` when it is not readable memory."""
    data = read(address, ctypes.sizeof(ctype))
    if data is None:
        raise ValueError(f"{name} = 0x{address:x} does not point to readable memory of this process")
    return ctype.from_buffer_copy(data)


class _GstMiniObjectHead(ctypes.Structure):
    """GstMiniObject's first fields (gstminiobject.h): GType type; gint refcount."""
    _fields_ = [("type", ctypes.c_size_t), ("refcount", ctypes.c_int)]


@lru_cache(maxsize=1)
def _gst_buffer_type() -> int | None:
    name = ctypes.util.find_library("gstreamer-1.0") or "libgstreamer-1.0.so.0"
    try:
        gst = ctypes.CDLL(name)
    except OSError:
        return None
    gst.gst_buffer_get_type.restype = ctypes.c_size_t
    return gst.gst_buffer_get_type()


def gst_buffer_address(buf: Any) -> int:
    """``GstBuffer*`` of a PyGObject Gst.Buffer (``hash(buf)``, the convention of pyds and pyservicemaker) or of an
    int address, checked to be a live GstBuffer; no GStreamer Python import needed."""
    if is_int(buf):
        address = pointer("buf", buf)
        head = struct_at("buf", address, _GstMiniObjectHead)
        gtype = _gst_buffer_type()
        if (gtype is not None and head.type != gtype) or head.refcount <= 0:
            raise ValueError(f"buf = 0x{address:x} is not a live GstBuffer (pass hash(gst_buffer) or the Gst.Buffer)")
        return address
    if type(buf).__module__.startswith("gi."):  # a PyGObject Gst.Buffer: hash() is the GstBuffer*
        return hash(buf)
    raise TypeError(f"buf must be a Gst.Buffer or its address (int, hash(buf)); got {type(buf).__name__}")
