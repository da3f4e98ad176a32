"""Finds and loads NVIDIA's real metadata libraries (``libnvds_meta.so``, ``libnvdsgst_meta.so``).

Search order (the first folder that holds ``libnvds_meta.so`` wins; ``libnvdsgst_meta.so`` is taken from the same
folder):

1. the environment variable ``OBBMETA_NVDS_LIB_DIR`` (a folder), when set: an explicit choice, never second-guessed;
2. a copy already loaded in this process (pyds, pyservicemaker or a DeepStream plugin loaded it first): a second
   copy of the pool code would work on the same structs, but one copy is simpler to reason about;
3. a DeepStream install: ``/opt/nvidia/deepstream/deepstream/lib``;
4. the PyPI wheel ``nvidia-deepstream-videodecode-cu13`` (``nvidia/deepstream_videodecode/_libs/``), located on
   ``sys.path`` without importing it (importing it sets ``GST_PLUGIN_PATH`` to NVIDIA's GPU-only plugins).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

ENV_VAR = "OBBMETA_NVDS_LIB_DIR"
DEEPSTREAM_LIB_DIR = Path("/opt/nvidia/deepstream/deepstream/lib")
WHEEL_SUBDIR = Path("nvidia") / "deepstream_videodecode" / "_libs"
META_LIB = "libnvds_meta.so"
GST_META_LIB = "libnvdsgst_meta.so"


class NvdsUnavailableError(ImportError):
    """NVIDIA's metadata library could not be found or loaded (the message says where obbmeta looked)."""


@dataclass
class Candidate:
    source: str
    folder: Path | None
    found: bool
    note: str = ""


@dataclass
class Libraries:
    meta: ctypes.CDLL
    meta_path: Path
    source: str
    glib: ctypes.CDLL
    gst_meta_path: Path | None = None
    gst_meta_error: str = ""
    candidates: list[Candidate] = field(default_factory=list)
    _gst_meta: ctypes.CDLL | None = None
    _gst_tried: bool = False

    @property
    def gst_meta(self) -> ctypes.CDLL | None:
        """``libnvdsgst_meta`` (the Gst.Buffer helpers), loaded on first use, i.e. once a Gst.Buffer exists and so
        GStreamer is initialised. It links libgstreamer; loaded before ``gst_init``, a later ``gst_init`` aborted the
        process ("free(): invalid pointer") on the GPU machine's GStreamer, so it is never loaded earlier than needed.
        None when it cannot be loaded (``gst_meta_error`` says why)."""
        if not self._gst_tried:
            with _gst_lock:
                if not self._gst_tried:
                    if self.gst_meta_path is not None:
                        try:
                            lib = ctypes.CDLL(str(self.gst_meta_path))
                            vp = ctypes.c_void_p
                            lib.gst_buffer_get_nvds_batch_meta.argtypes = [vp]
                            lib.gst_buffer_get_nvds_batch_meta.restype = vp
                            lib.gst_buffer_add_nvds_meta.argtypes = [vp, vp, vp, vp, vp]
                            lib.gst_buffer_add_nvds_meta.restype = vp
                            # gst_buffer_get_nvds_batch_meta matches metas by a tag quark that only this call's
                            # one-time registration sets: before it, every other meta on a buffer (decodebin's,
                            # an encoder's video meta) meets gst_meta_api_type_has_tag(api, 0) and a CRITICAL.
                            register = lib.nvds_meta_api_get_type
                            register.argtypes, register.restype = [], ctypes.c_size_t
                            register()
                            self._gst_meta = lib
                        except OSError as exc:  # needs libgstreamer-1.0; only the Gst.Buffer helpers depend on it
                            self.gst_meta_error = f"{self.gst_meta_path} could not be loaded: {exc}"
                            self.gst_meta_path = None
                    self._gst_tried = True
        return self._gst_meta


def _loaded_in_process() -> Path | None:
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                path = line.rstrip("\n").split(None, 5)[-1]
                if path.endswith("/" + META_LIB):
                    return Path(path).parent
    except OSError:
        pass
    return None


def _wheel_dirs() -> list[Path]:
    seen, out = set(), []
    for entry in sys.path:
        if not entry:
            continue
        folder = Path(entry) / WHEEL_SUBDIR
        if folder in seen:
            continue
        seen.add(folder)
        if (folder / META_LIB).exists():
            out.append(folder)
    return out


def candidates() -> list[Candidate]:
    """Every place the loader considers, in order, with whether ``libnvds_meta.so`` is there."""
    out = []
    env = os.environ.get(ENV_VAR)
    if env:
        folder = Path(env)
        out.append(Candidate(f"${ENV_VAR}", folder, (folder / META_LIB).exists(),
                             "" if (folder / META_LIB).exists() else f"no {META_LIB} in {folder}"))
    else:
        out.append(Candidate(f"${ENV_VAR}", None, False, "not set"))
    loaded = _loaded_in_process()
    out.append(Candidate("already loaded in this process", loaded, loaded is not None,
                         "" if loaded else "not loaded"))
    ds = (DEEPSTREAM_LIB_DIR / META_LIB).exists()
    out.append(Candidate("DeepStream install", DEEPSTREAM_LIB_DIR, ds, "" if ds else f"no {DEEPSTREAM_LIB_DIR}"))
    wheels = _wheel_dirs()
    out.append(Candidate("PyPI wheel nvidia-deepstream-videodecode-cu13", wheels[0] if wheels else None,
                         bool(wheels), "" if wheels else "not installed (pip install 'obbmeta[nvds]')"))
    return out


_lock = threading.Lock()
_gst_lock = threading.Lock()
_libs: Libraries | None = None


def load() -> Libraries:
    """Load (once) and return the libraries; raises NvdsUnavailableError with the places it looked."""
    global _libs
    with _lock:
        if _libs is not None:
            return _libs
        cands = candidates()
        # An explicit but wrong environment variable is an error, not a reason to silently use another copy.
        chosen = next((c for c in cands if c.found), None)
        if cands[0].folder is not None and not cands[0].found:
            chosen = None
        if chosen is None:
            lines = "\n".join(f"  - {c.source}: {c.note or c.folder}" for c in cands)
            raise NvdsUnavailableError(f"NVIDIA's {META_LIB} was not found. Looked at:\n{lines}")
        meta_path = chosen.folder / META_LIB
        try:
            meta = ctypes.CDLL(str(meta_path))
        except OSError as exc:
            raise NvdsUnavailableError(f"{meta_path} could not be loaded: {exc}") from exc
        glib_name = ctypes.util.find_library("glib-2.0") or "libglib-2.0.so.0"
        try:
            glib = ctypes.CDLL(glib_name)  # the same soname libnvds_meta links, hence the same loaded copy
        except OSError as exc:
            raise NvdsUnavailableError(
                f"glib ({glib_name}), which {META_LIB} needs, could not be loaded: {exc}") from exc
        libs = Libraries(meta=meta, meta_path=meta_path, source=chosen.source, glib=glib, candidates=cands)
        gst_path = chosen.folder / GST_META_LIB
        if gst_path.exists():
            libs.gst_meta_path = gst_path  # loaded on first use (Libraries.gst_meta)
        else:
            libs.gst_meta_error = f"no {GST_META_LIB} next to {meta_path}"
        _declare(libs)
        _libs = libs
        return libs


def _declare(libs: Libraries) -> None:
    """argtypes / restypes of every NVIDIA function obbmeta calls from Python."""
    vp, u = ctypes.c_void_p, ctypes.c_uint
    m = libs.meta
    sigs = {
        "nvds_create_batch_meta": ([u], vp),
        "nvds_destroy_batch_meta": ([vp], ctypes.c_int),
        "nvds_acquire_frame_meta_from_pool": ([vp], vp),
        "nvds_add_frame_meta_to_batch": ([vp, vp], None),
        "nvds_acquire_obj_meta_from_pool": ([vp], vp),
        "nvds_add_obj_meta_to_frame": ([vp, vp, vp], None),
        "nvds_remove_obj_meta_from_frame": ([vp, vp], None),
        "nvds_acquire_user_meta_from_pool": ([vp], vp),
        "nvds_add_user_meta_to_obj": ([vp, vp], None),
        "nvds_acquire_meta_lock": ([vp], None),
        "nvds_release_meta_lock": ([vp], None),
        "nvds_get_user_meta_type": ([ctypes.c_char_p], ctypes.c_int),
        "nvds_acquire_display_meta_from_pool": ([vp], vp),
        "nvds_add_display_meta_to_frame": ([vp, vp], None),
        "nvds_remove_display_meta_from_frame": ([vp, vp], None),
        "nvds_batch_meta_copy_func": ([vp, vp], vp),
        "nvds_batch_meta_release_func": ([vp, vp], None),
    }
    for name, (args, res) in sigs.items():
        try:
            fn = getattr(m, name)
        except AttributeError:  # some other library under that name (a wrong OBBMETA_NVDS_LIB_DIR, a stub)
            raise NvdsUnavailableError(
                f"{libs.meta_path} (from {libs.source}) is not NVIDIA's {META_LIB}: it has no {name}()") from None
        fn.argtypes, fn.restype = args, res
    libs.glib.g_malloc.argtypes, libs.glib.g_malloc.restype = [ctypes.c_size_t], vp
    libs.glib.g_free.argtypes, libs.glib.g_free.restype = [vp], None


def status() -> tuple[Libraries | None, str | None]:
    """(libraries, None) when loaded or loadable, else (None, why)."""
    try:
        return load(), None
    except NvdsUnavailableError as exc:
        return None, str(exc)
