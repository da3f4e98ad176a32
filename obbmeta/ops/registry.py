"""How obbmeta's pure operators reach torch's dispatcher (``torch.ops.obbmeta.*``): a schema defined once, a kernel
per backend, a fake kernel for FakeTensor / torch.compile, no autograd layer.

``torch.library.custom_op`` registers the same three things and wraps every call in a Python autograd layer (about 8 of
a 10.5 microsecond dispatch on the H200 host, measured 2026-12-04; a plain dispatcher call costs 2.8): the ops are
called per batch inside a pipeline, several times, and have no gradient (indices, counts, IoU values nobody
differentiates). So, as torchvision registers ``nms``: the schema on a :class:`torch.library.Library`, the kernels on
the backend keys, and the Autograd keys falling through in C++. Each kernel runs below autograd (as custom_op's do),
so its outputs never require grad: a backward through one fails with torch's "does not require grad" error instead of
passing a silent zero gradient. Operators that mutate an input (the draw op) stay ``custom_op``s, which keep the
version counters of what they mutate.

The objects are used like custom_op's: call them, decorate the CUDA kernel with ``@op.register_kernel("cuda")`` and
the fake one with ``@op.register_fake``; the function given to :func:`operator` is the kernel of every other device
(it refuses what it cannot run).
"""
from __future__ import annotations

from typing import Callable

import torch

_LIBRARY = torch.library.Library("obbmeta", "FRAGMENT")
_BELOW_AUTOGRAD = torch._C._AutoDispatchBelowAutograd
_KEYS = {"cpu": "CPU", "cuda": "CUDA"}


def _below_autograd(fn: Callable) -> Callable:
    def kernel(*args):
        with _BELOW_AUTOGRAD():
            return fn(*args)

    kernel.__name__ = kernel.__qualname__ = getattr(fn, "__name__", "kernel")
    return kernel


class Operator:
    """One ``obbmeta::name`` operator; calling it calls ``torch.ops.obbmeta.name.default``."""

    def __init__(self, name: str, schema: str, default: Callable):
        _LIBRARY.define(name + schema)
        _LIBRARY.impl(name, _below_autograd(default), "CompositeExplicitAutograd")
        _LIBRARY.impl(name, torch.library.fallthrough_kernel, "Autograd")
        self.name = name
        self.overload = getattr(torch.ops.obbmeta, name).default
        self.__doc__ = default.__doc__
        self.__wrapped__ = default

    def __call__(self, *args, **kwargs):
        return self.overload(*args, **kwargs)

    def register_kernel(self, device: str) -> Callable[[Callable], Callable]:
        """Decorator: `fn` is the kernel for tensors of ``device`` ("cpu" or "cuda")."""
        def register(fn: Callable) -> Callable:
            _LIBRARY.impl(self.name, _below_autograd(fn), _KEYS[device])
            return fn

        return register

    def register_fake(self, fn: Callable) -> Callable:
        """Decorator: `fn` answers the outputs' shapes and dtypes for FakeTensor inputs (torch.compile, export)."""
        torch.library.register_fake(f"obbmeta::{self.name}", fn, lib=_LIBRARY)
        return fn

    def __repr__(self) -> str:
        return f"<obbmeta operator {self.name}: {self.overload._schema}>"


def operator(schema: str) -> Callable[[Callable], Operator]:
    """Decorator: define ``obbmeta::<the function's name, less a trailing _op>`` with `schema` (the part after the
    name, e.g. ``"(Tensor boxes, float iou) -> Tensor"``); the function is the kernel of every device without one of
    its own."""
    def define(fn: Callable) -> Operator:
        return Operator(fn.__name__.removesuffix("_op"), schema, fn)

    return define
