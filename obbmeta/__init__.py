"""obbmeta: oriented boxes as first-class NVIDIA DeepStream metadata.

Data path: ``obbmeta.decode`` -> ``obbmeta.ops`` (suppress) -> ``obbmeta.nvds`` (write meta) -> ``obbmeta.osd``
(draw). ``import obbmeta`` imports torch but neither NVIDIA's metadata library nor anything CUDA: ``nvds``, ``osd``
and ``eval`` (DOTA-style mAP) are imported on first use, and the first two load their native libraries on first call.
"""
from importlib import import_module

from . import conventions, decode, ops
from .boxes import OrientedBoxes
from .letterbox import Letterbox

__version__ = "0.1.0"
__all__ = ["OrientedBoxes", "Letterbox", "ops", "decode", "conventions", "nvds", "osd", "eval"]


def __getattr__(name):
    if name in ("nvds", "osd", "eval"):
        return import_module(f".{name}", __name__)
    raise AttributeError(f"module 'obbmeta' has no attribute {name!r}")
