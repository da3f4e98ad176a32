"""obbmeta: oriented boxes as first-class NVIDIA DeepStream metadata.

Data path: ``obbmeta.decode`` -> ``obbmeta.ops`` (suppress) -> ``obbmeta.nvds`` (write meta) -> ``obbmeta.osd``
(draw), ``obbmeta.track`` (objects over time), ``obbmeta.eval`` (DOTA-style mAP); ``obbmeta.frames`` (NVMM frames
as tensors), ``obbmeta.infer`` (a model on frames) and ``obbmeta.gst`` (GStreamer elements) put them into pipelines.

Every submodule and name is imported on first use (PEP 562), so ``import obbmeta.nvds`` and the GStreamer plugin
files stay light: torch is imported only by the parts that compute with it.
"""
import ctypes
from importlib import import_module

__version__ = "0.1.0"


def _one_unwinder() -> None:
    """Put libgcc_s's C++ unwinder in the process's global symbol scope now, before GStreamer brings libunwind.

    Debian's libgstreamer links libunwind, whose ``_Unwind_*`` functions shadow libgcc_s's once it is loaded
    globally (``import gi`` + ``Gst``). Code that bound some of those functions before and others after then mixes two
    incompatible unwinders, and the next C++ exception (a torch error inside a model) aborts the process instead of
    becoming a Python exception. With libgcc_s first, every binding resolves to it.
    """
    try:
        ctypes.CDLL("libgcc_s.so.1", mode=ctypes.RTLD_GLOBAL)
    except OSError:  # not a glibc/GCC system: nothing to do
        pass


_one_unwinder()

_NAMES = {"OrientedBoxes": "boxes", "Letterbox": "letterbox"}
_MODULES = ("ops", "decode", "conventions", "nvds", "osd", "eval", "track", "frames", "pixels", "preprocess", "infer",
            "secondary", "messages", "settings", "nvinfer_config", "gst", "servicemaker", "scenes", "models", "palette",
            "geometry")
__all__ = ["OrientedBoxes", "Letterbox", *_MODULES]


def __getattr__(name):
    if name in _NAMES:
        return getattr(import_module(f".{_NAMES[name]}", __name__), name)
    if name in _MODULES:
        return import_module(f".{name}", __name__)
    raise AttributeError(f"module 'obbmeta' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
