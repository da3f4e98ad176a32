"""obbmeta: oriented boxes as first-class NVIDIA DeepStream metadata.

The folders follow the data path: ``obbmeta.frames`` (frames in: NVMM buffers as tensors, pixel formats, the
letterbox, preprocessing) -> ``obbmeta.config`` (the model stage's settings) and ``obbmeta.infer`` (the model on
frames) -> ``obbmeta.decode`` (model outputs to boxes) -> ``obbmeta.ops`` (suppress: rotated IoU and NMS;
conversions, rotated crops) -> ``obbmeta.nvds`` (write the metadata, read it back) -> ``obbmeta.osd`` (draw),
``obbmeta.track`` (objects over time), ``obbmeta.secondary`` (models on the objects' crops) -> ``obbmeta.publish``
(the message format and its reader) -> ``obbmeta.gst`` and ``obbmeta.servicemaker`` (the elements). One type flows
through it, :class:`obbmeta.OrientedBoxes`; ``obbmeta.eval`` (DOTA-style mAP), ``obbmeta.scenes`` and
``obbmeta.models`` (the demo's scenes and models) stand beside it.

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

_NAMES = {"OrientedBoxes": "boxes", "Letterbox": "frames.letterbox"}
# the data path's stages in order, then what stands beside it
_MODULES = ("frames", "config", "infer", "decode", "ops", "nvds", "osd", "track", "secondary", "publish", "gst",
            "servicemaker", "boxes", "geometry", "conventions", "palette", "eval", "scenes", "models")
__all__ = ["OrientedBoxes", "Letterbox", *_MODULES]


def __getattr__(name):
    if name in _NAMES:
        return getattr(import_module(f".{_NAMES[name]}", __name__), name)
    if name in _MODULES:
        return import_module(f".{name}", __name__)
    raise AttributeError(f"module 'obbmeta' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
