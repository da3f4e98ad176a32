"""One home for argument checks (like supervision's validators): each check raises an error that names the
argument, says the expected form and shows what was given, and returns the value in the form the caller uses.

Light on purpose: torch is imported only inside the tensor checks, so ``import obbmeta.nvds`` stays torch-free.
Python's bool is an int subclass; every int / number check here refuses True and False, which are never a count,
an id or a threshold.
"""
from __future__ import annotations

import math
import sys
from typing import Any, Optional, Sequence

import numpy as np


def is_int(value: Any, *, numpy_ints: bool = False) -> bool:
    """An int and not a bool (with ``numpy_ints``, NumPy integer scalars count too)."""
    kinds = (int, np.integer) if numpy_ints else int
    return isinstance(value, kinds) and not isinstance(value, bool)


def is_number(value: Any, *, numpy_numbers: bool = False) -> bool:
    """An int or a float and not a bool (with ``numpy_numbers``, NumPy integer and float scalars count too)."""
    kinds = (int, float, np.integer, np.floating) if numpy_numbers else (int, float)
    return isinstance(value, kinds) and not isinstance(value, bool)


def int_in_range(name: str, value: Any, low: int, high: Optional[int] = None, form: Optional[str] = None, *,
                 error: type = ValueError, numpy_ints: bool = False) -> int:
    """``value`` as an int when it is one in [low, high] (``high`` None: no upper bound), else ``error``:
    "{name} must be {form}, got {value!r}" (``form`` defaults to "an int >= low" / "an int in [low, high]")."""
    if not is_int(value, numpy_ints=numpy_ints) or value < low or (high is not None and value > high):
        if form is None:
            form = f"an int >= {low}" if high is None else f"an int in [{low}, {high}]"
        raise error(f"{name} must be {form}, got {value!r}")
    return int(value)


def number_in_range(name: str, value: Any, low: float, high: float, form: Optional[str] = None, *,
                    low_open: bool = False) -> float:
    """``value`` as a float when it is a number in [low, high] (``low_open``: (low, high]), else ValueError:
    "{name} must be {form}, got {value!r}" (``form`` defaults to "a number in [low, high]")."""
    if not is_number(value) or not ((value > low if low_open else value >= low) and value <= high):
        if form is None:
            form = f"a number in {'(' if low_open else '['}{low:g}, {high:g}]"
        raise ValueError(f"{name} must be {form}, got {value!r}")
    return float(value)


def finite_number(name: str, value: Any, *, positive: bool = False) -> float:
    """``value`` as a float when it is a finite number (Python or NumPy scalar, not a bool; with ``positive``: also
    > 0), else "{name} must be a [positive ]finite number, got {value!r}": TypeError when it is no number,
    ValueError when it is one out of range (NaN, +-inf, and with ``positive`` <= 0)."""
    form = "a positive finite number" if positive else "a finite number"
    if not is_number(value, numpy_numbers=True):
        raise TypeError(f"{name} must be {form}, got {value!r}")
    v = float(value)
    if not math.isfinite(v) or (positive and not v > 0.0):
        raise ValueError(f"{name} must be {form}, got {value!r}")
    return v


def size_pair(name: str, value: Any, low: int, high: int, *, order: str = "wh", strings: bool = False,
              form: Optional[str] = None, kind_error: type = TypeError) -> tuple[int, int]:
    """A size of two int sides in [low, high], in the caller's ``order`` ("wh": (width, height); "hw": (height,
    width)): an int N (both sides), a pair of ints (Python or NumPy, not bools; or a 1-d NumPy integer array of two),
    and with ``strings`` also "N" and "AxB" / "A,B" in that order. "{name} must be {form}, got {value!r}" as
    ``kind_error`` (TypeError) when ``value`` is none of these kinds, as a ValueError when it is one with a bad side
    (or an unreadable string)."""
    a, b = ("W", "H") if order == "wh" else ("H", "W")
    if form is None:
        texts = f", 'N' or '{a}x{b}'" if strings else ""
        form = f"N{texts} or ({a.lower()}, {b.lower()}) with int sides in {low}..{high}"
    pair = value
    if strings and isinstance(value, str):
        parts = value.strip().lower().replace(",", "x").split("x")
        try:
            pair = tuple(int(p) for p in parts) if 1 <= len(parts) <= 2 else None
        except ValueError:
            pair = None
        pair = pair * 2 if pair is not None and len(pair) == 1 else pair
    elif is_int(value, numpy_ints=True):
        pair = (value, value)
    elif isinstance(value, np.ndarray) and value.ndim == 1 and value.dtype.kind in "iu":
        pair = value.tolist()
    elif not isinstance(value, (tuple, list)):
        raise kind_error(f"{name} must be {form}, got {value!r}")
    if not (isinstance(pair, (tuple, list)) and len(pair) == 2
            and all(is_int(v, numpy_ints=True) and low <= v <= high for v in pair)):
        raise ValueError(f"{name} must be {form}, got {value!r}")
    return int(pair[0]), int(pair[1])


def frame_size(name: str, value: Any, high: float = math.inf, high_text: Optional[str] = None) -> tuple[float, float]:
    """A (width, height) pair of finite numbers in (0, high] (Python or NumPy, not bools; in a sequence such as a
    tuple or a list, or a NumPy array) as two floats; TypeError when it is not a pair of numbers (a mapping or a set
    is not), ValueError "{name} must be two positive finite numbers, at most {high_text}" when a side is out of
    range (``high_text`` says why the bound is there; default: the number)."""
    # A sequence or an array: a dict {0: w, 1: h} or a set of two numbers is no pair (value[0] would be a KeyError
    # or a TypeError, or read a mapping by its keys).
    ok = (isinstance(value, (Sequence, np.ndarray)) and not isinstance(value, (str, bytes)) and len(value) == 2
          and all(is_number(v, numpy_numbers=True) for v in value))
    if not ok:
        raise TypeError(f"{name} must be a (width, height) pair of numbers, got {value!r}")
    w, h = float(value[0]), float(value[1])
    if not all(0.0 < v <= high and math.isfinite(v) for v in (w, h)):
        limit = "" if high == math.inf else f", at most {high_text or f'{high:g}'}"
        raise ValueError(f"{name} must be two positive finite numbers{limit}, got {value!r}")
    return w, h


def flag(name: str, value: Any) -> bool:
    """``value`` when it is True or False (not 0, 1 or None), else TypeError."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return value


def threshold(name: str, value: Any) -> float:
    """A number in [0, 1] as a float: a Python or NumPy number, or a tensor of one element. Not a bool (Python, NumPy
    or a bool tensor), not a string, not NaN."""
    if isinstance(value, (bool, np.bool_, str, bytes)) or str(getattr(value, "dtype", "")) == "torch.bool":
        raise TypeError(f"{name} must be a number in [0, 1], got {value!r}")
    if hasattr(value, "numel") and hasattr(value, "item"):  # a torch tensor, without importing torch here
        if value.numel() != 1:
            raise TypeError(f"{name} must be a number in [0, 1] (a float, or a tensor of one element), got a tensor "
                            f"of shape {tuple(value.shape)}")
        value = value.item()
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number in [0, 1], got {value!r}") from None
    if not (0.0 <= value <= 1.0) or math.isnan(value):
        raise ValueError(f"{name} must be in [0, 1], got {value}")
    return value


def rgba(name: str, colour: Any, what: str = "") -> tuple[float, float, float, float]:
    """An (r, g, b, a) colour with every value a number (Python or NumPy, not a bool) in 0..1, as four floats; else
    ValueError
    "{name} must be (r, g, b, a) with values in 0..1{what}, got ..." (``what``: e.g. " (NvOSD_ColorParams)")."""
    ok = (isinstance(colour, Sequence) and not isinstance(colour, (str, bytes)) and len(colour) == 4
          and all(is_number(v, numpy_numbers=True) and 0.0 <= v <= 1.0 for v in colour))
    if not ok:
        raise ValueError(f"{name} must be (r, g, b, a) with values in 0..1{what}, got {colour!r}")
    return tuple(float(v) for v in colour)


def finite_rows(name: str, value: Any, width: int, dtype: Any, form: str) -> np.ndarray:
    """``value`` as a C-contiguous (N, ``width``) ``dtype`` array, every entry finite, or ValueError naming it and
    the ``form`` expected (the C cores read raw rows)."""
    a = np.ascontiguousarray(value, dtype=dtype)
    if a.ndim != 2 or a.shape[1] != width:
        raise ValueError(f"{name} must have shape {form}, got {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} contains NaN or inf; every box must be finite")
    return a


def box_tensor(name: str, boxes: Any) -> Any:
    """Raise unless `boxes` is an (N, 5) floating-point tensor; return it unchanged. Reads only the type, shape
    and dtype, so it runs on fake tensors and under torch.compile."""
    import torch

    if not isinstance(boxes, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape (N, 5) [cx, cy, w, h, angle], "
                        f"got {type(boxes).__name__}")
    if boxes.dim() != 2 or boxes.shape[1] != 5:
        raise ValueError(f"{name} must have shape (N, 5) [cx, cy, w, h, angle], got {tuple(boxes.shape)}")
    if not boxes.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor (float16/32/64), got {boxes.dtype}")
    return boxes


def vector_tensor(name: str, values: Any, n: int, device: Any, *, floating: bool, against: str = "the boxes",
                  against_is: str = "the boxes are") -> Any:
    """Raise unless `values` is a length-n tensor (floating: scores; else integer: labels, ids) on `device`, the
    device of the boxes it belongs to (named ``against`` in the messages). Shapes and dtypes only."""
    import torch

    kind = "a floating-point" if floating else "an integer"
    if not isinstance(values, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape ({n},), got {type(values).__name__}")
    if values.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},) to match {against}, got {tuple(values.shape)}")
    if values.device != device:
        raise ValueError(f"{name} is on {values.device} but {against_is} on {device}; put them on one device")
    if floating != values.is_floating_point() or values.dtype == torch.bool or values.is_complex():
        raise TypeError(f"{name} must be {kind} tensor, got {values.dtype}")
    return values


def is_tensor(value: Any) -> bool:
    """A torch tensor (never true while torch is not imported: then nothing is one; no import here)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def vector_array(name: str, value: Any, n: int, *, floating: bool) -> np.ndarray:
    """:func:`vector_tensor`'s NumPy twin, for a column of NumPy-backed boxes: (n,) float32 (``floating``: scores)
    or int64 (labels, ids). NumPy arrays and lists are converted (integers to float32 for scores); a tensor beside a
    NumPy xywhr is refused, as is a bool, a complex or, for labels and ids, a floating column."""
    if is_tensor(value):
        raise TypeError(f"{name} is a torch.Tensor but xywhr is a NumPy array; give every column as one kind "
                        "(OrientedBoxes.to(device) / .numpy() convert whole boxes)")
    try:
        a = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a NumPy array or array-like, got {type(value).__name__}") from exc
    if a.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},) to match xywhr, got {a.shape}")
    if a.dtype == np.bool_ or a.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be {'a floating-point or integer' if floating else 'an integer'} array, "
                        f"got {a.dtype}")
    if floating:
        return a.astype(np.float32, copy=False)
    if a.dtype.kind == "f":
        raise TypeError(f"{name} must be an integer array, got {a.dtype}")
    return a.astype(np.int64, copy=False)
