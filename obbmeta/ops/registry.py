"""Every obbmeta operator (``torch.ops.obbmeta.*``), declared once: its schema here, its kernels (per backend) and its
fake kernel registered by the module of its stage (ops/_core.py: the geometry and the crop; decode/yolo_padded.py: the
fused decode; osd/draw.py: the draw), next to the argument checks they share with that stage's Python functions.

The pure operators are defined on a :class:`torch.library.Library`: the schema, a kernel per dispatch key, a fake
kernel for FakeTensor / torch.compile, and the Autograd keys falling through in C++. ``torch.library.custom_op``
registers the same and wraps every call in a Python autograd layer (about 8 of a 10.3 microsecond dispatch on the H200
host, against 2.6 for a Library op; ``benchmarks/op_host_time.py``, 2026-12-04): these ops are called per batch in a
pipeline, some several times, and have no gradient (indices, counts, IoU values nobody differentiates). So, as
torchvision registers ``nms``, each kernel runs below autograd and its outputs never require grad: a backward through
one fails with torch's "does not require grad" instead of passing a silent zero gradient. The draw operator mutates
its images and stays a custom_op, which keeps the version counters of what it mutates.

Both kinds are used alike: call the object, decorate a kernel with ``@op.register_kernel("cpu" | "cuda")`` and the
fake one with ``@op.register_fake``. A device without a kernel of its own gets the dispatcher's NotImplementedError.
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
    """One pure ``obbmeta::name`` operator; calling it calls ``torch.ops.obbmeta.name.default``."""

    def __init__(self, name: str, schema: str):
        _LIBRARY.define(name + schema)
        _LIBRARY.impl(name, torch.library.fallthrough_kernel, "Autograd")
        self.name = name
        self.overload = getattr(torch.ops.obbmeta, name).default

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
        return f"<obbmeta operator {self.overload._schema}>"


def _mutating(name: str, schema: str, mutates: tuple) -> "torch._library.custom_ops.CustomOpDef":
    def no_kernel(*args):
        raise NotImplementedError(f"obbmeta::{name} has no kernel for these tensors' device (CPU and CUDA only)")

    return torch.library.custom_op(f"obbmeta::{name}", no_kernel, mutates_args=mutates, schema=schema)


box_iou_rotated = Operator("box_iou_rotated", "(Tensor boxes1, Tensor boxes2, bool aligned) -> Tensor")
nms_rotated = Operator("nms_rotated", "(Tensor boxes, Tensor scores, Tensor? labels, float iou_threshold) -> Tensor")
nms_rotated_padded = Operator(
    "nms_rotated_padded",
    "(Tensor boxes, Tensor scores, Tensor? labels, float iou_threshold, SymInt pool) -> (Tensor, Tensor)")
crop_rotated = Operator(
    "crop_rotated",
    "(Tensor[] frames, Tensor boxes, SymInt out_h, SymInt out_w, bool keep_aspect, float padding, float[] fill, "
    "SymInt[] channels, bool channels_last, str reading, ScalarType out_dtype, bool check_boxes) -> (Tensor, Tensor)")
yolo_obb_padded = Operator(
    "yolo_obb_padded",
    "(Tensor output, float conf, float iou, SymInt max_det, Tensor? allowed, bool multi_label, bool agnostic, "
    "SymInt max_nms, float scale, float pad_x, float pad_y, SymInt overlap_words, Tensor? class_iou=None, "
    "Tensor? class_conf=None) -> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)")
draw_outlines_batch = _mutating(
    "draw_outlines_batch",
    "(Tensor(a0!)[] images, Tensor boxes, SymInt[] offsets, Tensor colors, float thickness) -> ()", ("images",))

# Every operator by name (tests/test_structure.py checks that the dispatcher knows these and no others).
OPERATORS = {"box_iou_rotated": box_iou_rotated, "nms_rotated": nms_rotated, "nms_rotated_padded": nms_rotated_padded,
             "crop_rotated": crop_rotated, "yolo_obb_padded": yolo_obb_padded,
             "draw_outlines_batch": draw_outlines_batch}
