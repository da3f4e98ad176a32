"""The C writer's lookup tables, built once and cached: class names as NUL-terminated ``obj_label`` bytes and
palettes as flat (r, g, b, a) double arrays. Package-internal (obbs writes objects with them, display draws
overlays with them)."""
from __future__ import annotations

import ctypes
from functools import lru_cache
from typing import Any

from .._validators import rgba
from ..palette import PALETTE_RGBA
from . import layouts


def cut_label(name: str) -> bytes:
    """``name`` as UTF-8, cut to at most 127 bytes on a character boundary (obj_label holds 128 with the NUL)."""
    if not isinstance(name, str):
        raise TypeError(f"class names must be str, got {type(name).__name__}")
    if "\x00" in name:
        raise ValueError(f"class name {name!r} contains a NUL character")
    return cut_bytes(name.encode("utf-8"))


def cut_bytes(raw: bytes) -> bytes:
    """UTF-8 ``raw`` cut to at most 127 bytes on a character boundary."""
    if len(raw) <= layouts.MAX_LABEL_SIZE - 1:
        return raw
    return raw[: layouts.MAX_LABEL_SIZE - 1].decode("utf-8", "ignore").encode("utf-8")


@lru_cache(maxsize=64)
def label_table(names: tuple[str, ...]) -> tuple[Any, int, tuple[bytes, ...]]:
    encoded = tuple(cut_label(n) for n in names)
    table = (ctypes.c_char_p * max(len(encoded), 1))(*encoded)
    return table, len(encoded), encoded  # keep the bytes alive with the table


@lru_cache(maxsize=64)
def palette_table(palette: tuple[tuple[float, ...], ...]) -> tuple[Any, int]:
    flat = []
    for k, colour in enumerate(palette):
        flat.extend(rgba(f"palette[{k}]", colour))
    if not flat:
        raise ValueError("palette must hold at least one (r, g, b, a) colour")
    return (ctypes.c_double * len(flat))(*flat), len(palette)


DEFAULT_PALETTE_TABLE = palette_table(PALETTE_RGBA)
