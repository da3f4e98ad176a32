"""Loads the C core (plain shared libraries built by setup.py) with ctypes.

Why ctypes rather than a torch C++ extension: building against torch headers would tie the wheel to one torch
ABI and make ``pip install`` pull torch into the build environment. The C functions take raw pointers, so tensors
are passed with ``data_ptr()`` and never copied.
"""
from __future__ import annotations

import ctypes
import importlib.machinery
from functools import lru_cache
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


@lru_cache(maxsize=None)
def load_library(module: str) -> ctypes.CDLL:
    """Return the ctypes handle of the compiled module ``obbmeta.<module>`` (e.g. ``"_geometry"``)."""
    parts = module.split(".")
    folder = _PACKAGE_DIR.joinpath(*parts[:-1])
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = folder / (parts[-1] + suffix)
        if candidate.exists():
            return ctypes.CDLL(str(candidate))
    raise ImportError(
        f"obbmeta's compiled core 'obbmeta.{module}' was not found in {folder}. "
        "Build it with `pip install .` (or `pip install -e .` in a checkout); it needs a C compiler."
    )


def ptr(tensor) -> "ctypes.c_void_p | None":
    """A tensor's data pointer for a C call (None for None); the tensor must stay alive during the call."""
    return None if tensor is None else ctypes.c_void_p(tensor.data_ptr())

