"""One home for argument checks (like supervision's validators): each check raises an error that names the
argument, says the expected form and shows what was given, and returns the value in the form the caller uses.

Light on purpose: torch is imported only inside the tensor checks, so ``import obbmeta.nvds`` stays torch-free.
Python's bool is an int subclass; every int / number check here refuses True and False, which are never a count,
an id or a threshold.
"""
from __future__ import annotations

import math
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


def flag(name: str, value: Any) -> bool:
    """``value`` when it is True or False (not 0, 1 or None), else TypeError."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return value


def threshold(name: str, value: Any) -> float:
    """A number in [0, 1] as a float: a Python or NumPy number, or a tensor of one element. Not a bool, not NaN."""
    if isinstance(value, bool):
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
