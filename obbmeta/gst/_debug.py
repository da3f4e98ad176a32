"""GStreamer debug categories for obbmeta's elements (``GST_DEBUG=obbinfer:5``).

``gst_debug_category_new`` is a C macro, absent from the introspected API, so the category is made through the
function behind it (``_gst_debug_category_new`` in libgstreamer) and then looked up by name for gst-python's
``Gst.debug_log_literal``. Messages are formatted only when the category's threshold lets them through.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import sys
from functools import lru_cache
from typing import Any

from ._gi import Gst


@lru_cache(maxsize=1)
def gst_library() -> ctypes.CDLL:
    """libgstreamer-1.0 with the signatures obbmeta.gst calls (debug categories, the output thread's push)."""
    lib = ctypes.CDLL(ctypes.util.find_library("gstreamer-1.0") or "libgstreamer-1.0.so.0")
    lib._gst_debug_category_new.restype = ctypes.c_void_p
    lib._gst_debug_category_new.argtypes = [ctypes.c_char_p, ctypes.c_uint, ctypes.c_char_p]
    lib.gst_mini_object_ref.restype = ctypes.c_void_p
    lib.gst_mini_object_ref.argtypes = [ctypes.c_void_p]
    lib.gst_pad_push.restype = ctypes.c_int
    lib.gst_pad_push.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    return lib


class Category:
    """One debug category: ``cat.info(element, "loaded %s in %.3f s", name, seconds)``; levels as GStreamer's."""

    def __init__(self, name: str, description: str):
        self.name = name
        gst_library()._gst_debug_category_new(name.encode(), 0, description.encode())  # returns the existing one if any
        self._cat = next(c for c in Gst.debug_get_all_categories() if c.get_name() == name)

    def enabled(self, level: Gst.DebugLevel) -> bool:
        return self._cat.get_threshold() >= level

    def _log(self, level: Gst.DebugLevel, obj: Any, fmt: str, args: tuple) -> None:
        if not self.enabled(level):
            return
        caller = sys._getframe(2)
        Gst.debug_log_literal(self._cat, level, caller.f_code.co_filename, caller.f_code.co_name, caller.f_lineno,
                              obj, fmt % args if args else fmt)

    def error(self, obj: Any, fmt: str, *args: Any) -> None:
        self._log(Gst.DebugLevel.ERROR, obj, fmt, args)

    def warning(self, obj: Any, fmt: str, *args: Any) -> None:
        self._log(Gst.DebugLevel.WARNING, obj, fmt, args)

    def info(self, obj: Any, fmt: str, *args: Any) -> None:
        self._log(Gst.DebugLevel.INFO, obj, fmt, args)

    def debug(self, obj: Any, fmt: str, *args: Any) -> None:
        self._log(Gst.DebugLevel.DEBUG, obj, fmt, args)

    def log(self, obj: Any, fmt: str, *args: Any) -> None:
        self._log(Gst.DebugLevel.LOG, obj, fmt, args)


__all__ = ["Category"]
