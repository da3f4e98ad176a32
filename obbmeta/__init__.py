"""obbmeta: oriented boxes as first-class NVIDIA DeepStream metadata.

Data path: ``obbmeta.decode`` -> ``obbmeta.ops`` (suppress) -> ``obbmeta.nvds`` (write meta) -> ``obbmeta.osd``
(draw). ``nvds`` and ``osd`` load NVIDIA's metadata library on first use, so ``import obbmeta`` stays light.
"""
from importlib import import_module

from . import conventions, decode, ops
from .boxes import OrientedBoxes
from .letterbox import Letterbox

__version__ = "0.1.0"
__all__ = ["OrientedBoxes", "Letterbox", "ops", "decode", "conventions", "nvds", "osd"]


def __getattr__(name):
    if name in ("nvds", "osd"):
        return import_module(f".{name}", __name__)
    raise AttributeError(f"module 'obbmeta' has no attribute {name!r}")
