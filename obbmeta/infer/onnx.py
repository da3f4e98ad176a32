"""ONNX models run with PyTorch ops, so they run where a PyTorch model runs: on CUDA, under autocast, inside CUDA
graphs.

nvinfer builds a TensorRT engine from ``onnx-file``; obbinfer's GPU path is PyTorch (no TensorRT, and
onnxruntime's GPU build is far too large for the machines it runs on). :class:`OnnxModule` reads the graph with the
``onnx`` package and executes its nodes with torch functions, one function per ONNX operator (:data:`OPS`, each
checked against onnxruntime in the tests). Like TensorRT, it specialises to the input shape: the nodes that depend
only on the input's shape (``Shape -> Gather -> Concat -> Reshape`` chains, anchors built with ``Range``) are
evaluated once per input shape on the host, so a call runs only the data nodes, with no host synchronisation —
which is what a CUDA graph needs. Initializers are buffers of the module: ``.to(device)`` moves them.

On the CPU, onnxruntime (the ``onnx`` extra) runs ONNX files faster than PyTorch's eager ops (1.4-2.2x on the
measured YOLO-OBB exports), so :func:`load_onnx` uses it there when it is installed; results agree within float
rounding (tested).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch
import torch.nn.functional as F

# ONNX TensorProto data types -> torch
DTYPES = {1: torch.float32, 2: torch.uint8, 3: torch.int8, 5: torch.int16, 6: torch.int32, 7: torch.int64,
          9: torch.bool, 10: torch.float16, 11: torch.float64, 12: torch.int32, 13: torch.int64, 16: torch.bfloat16}


class OnnxError(RuntimeError):
    """An ONNX graph obbmeta cannot run: an operator or attribute it does not implement, a malformed graph."""


@dataclass(frozen=True)
class _Node:
    op: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: dict
    name: str


def _attr(a: Any) -> Any:
    from onnx import helper

    v = helper.get_attribute_value(a)
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, list) and v and isinstance(v[0], bytes):
        return [s.decode() for s in v]
    if hasattr(v, "dims"):  # a TensorProto
        return _tensor(v)
    return v


def _tensor(t: Any) -> torch.Tensor:
    from onnx import numpy_helper

    a = numpy_helper.to_array(t)
    if a.dtype == np.uint16 and t.data_type == 16:  # bfloat16 comes as its raw bits
        return torch.from_numpy(a.astype(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(np.array(a, copy=True))


class OnnxModule(torch.nn.Module):
    """One ONNX graph (one image input) as a torch module. ``input_name`` / ``output_names`` are the graph's;
    ``forward(x)`` returns the one output, or a tuple in the graph's output order."""

    def __init__(self, proto: Any):
        super().__init__()
        graph = proto.graph
        opsets = {o.domain: o.version for o in proto.opset_import}
        self.opset = opsets.get("", opsets.get("ai.onnx", 13))
        unknown = sorted({n.op_type for n in graph.node if n.domain not in ("", "ai.onnx")} |
                         {n.op_type for n in graph.node if n.domain in ("", "ai.onnx") and n.op_type not in OPS
                          and n.op_type != "Constant"})
        if unknown:
            raise OnnxError(f"the ONNX graph uses operators obbmeta does not run: {', '.join(unknown)}")
        inits = {i.name for i in graph.initializer}
        inputs = [i for i in graph.input if i.name not in inits]
        if len(inputs) != 1:
            raise OnnxError(f"the ONNX graph has {len(inputs)} inputs ({', '.join(i.name for i in inputs)}); "
                            "obbinfer feeds one image batch")
        self.input_name = inputs[0].name
        self.output_names = tuple(o.name for o in graph.output)
        self._const: dict[str, str] = {}  # value name -> buffer attribute
        for k, init in enumerate(graph.initializer):
            self._add_const(init.name, _tensor(init), k)
        nodes = []
        for k, n in enumerate(graph.node):
            attrs = {a.name: _attr(a) for a in n.attribute}
            if n.op_type == "Constant":
                self._add_const(n.output[0], _constant(attrs), f"n{k}")
                continue
            nodes.append(_Node(n.op_type, tuple(n.input), tuple(n.output), attrs, n.name or f"{n.op_type}_{k}"))
        self.nodes = _fuse_silu(nodes, self.output_names)
        self._plans: dict[tuple, Any] = {}

    def _add_const(self, name: str, value: torch.Tensor, k: Any) -> None:
        attr = f"_c{k}"
        self.register_buffer(attr, value, persistent=False)
        self._const[name] = attr

    def _apply(self, fn, recurse=True):  # .to() / .half(): the per-shape plans were made for the old buffers
        self._plans = {}
        return super()._apply(fn, recurse)

    def _value(self, name: str) -> torch.Tensor:
        return getattr(self, self._const[name])

    def _plan(self, x: torch.Tensor) -> "_Plan":
        """What an input of this shape, dtype and device needs besides itself: the values that depend on its shape
        only, computed once on the host (a ``meta`` pass gives every other value's shape), placed on its device.
        A graph whose shapes depend on the data (NonZero, a reshape by computed values) gets no plan: it runs every
        node at every call."""
        key = (tuple(x.shape), x.dtype, x.device)
        plan = self._plans.get(key)
        if plan is None:
            env: dict[str, torch.Tensor] = {n: self._value(n).cpu() for n in self._const}
            env[self.input_name] = torch.empty(x.shape, dtype=x.dtype, device="meta")
            host: set[str] = set(self._const)
            try:
                for node in self.nodes:
                    real = node.op in ("Shape", "Size") or all(i == "" or i in host for i in node.inputs)
                    if real:
                        self._run(node, env)
                        host.update(o for o in node.outputs if o)
                    else:
                        self._run(node, _Meta(env, host))
            except OnnxError:
                plan = _Plan({}, frozenset(), False)
            else:
                shaped = frozenset(host - set(self._const))
                values = {n: env[n].to(x.device) for n in shaped}
                values.update({f"host:{n}": env[n] for n in shaped})
                # the constants an operator reads as numbers (axes, slice bounds, scales) from their host copies: a
                # call never reads a device tensor into Python (a synchronisation, and an error in a CUDA graph)
                values.update({f"host:{n}": env[n] for n in self._const if env[n].numel() <= _HOST_CONST_MAX})
                plan = _Plan(values, shaped, True)
            if len(self._plans) > 16:
                self._plans.clear()
            self._plans[key] = plan
        return plan

    def forward(self, x: torch.Tensor) -> Any:
        env: dict[str, torch.Tensor] = {n: self._value(n) for n in self._const}
        plan = self._plan(x)
        env.update(plan.values)
        env[self.input_name] = x
        for node in self.nodes:
            if node.outputs[0] not in plan.shaped:
                self._run(node, env)
        outs = tuple(env[n] for n in self.output_names)
        return outs[0] if len(outs) == 1 else outs

    def _run(self, node: _Node, env: dict) -> None:
        args = _Args(node, env)
        try:
            result = (OPS.get(node.op) or _FUSED[node.op])(args, node.attrs, self.opset)
        except OnnxError:
            raise
        except Exception as exc:  # noqa: BLE001 - say which node of the graph failed
            raise OnnxError(f"ONNX node {node.name} ({node.op}) failed: {type(exc).__name__}: {exc}") from exc
        if isinstance(result, torch.Tensor):
            result = (result,)
        for name, value in zip(node.outputs, result):
            if name:
                env[name] = value


_HOST_CONST_MAX = 4096  # constants up to this many elements keep a host copy (shapes, axes, scales; not weights)


def _fuse_silu(nodes: list[_Node], outputs: tuple[str, ...]) -> tuple[_Node, ...]:
    """``Mul(x, Sigmoid(x))`` (how PyTorch exports SiLU, once per convolution in a YOLO) as one ``Silu`` node when
    nothing else reads the sigmoid: one kernel and one pass over the activation instead of two. Same values
    (``torch.nn.functional.silu`` is ``x * sigmoid(x)``), checked against onnxruntime on whole exported models."""
    readers: dict[str, int] = {}
    for n in nodes:
        for i in n.inputs:
            readers[i] = readers.get(i, 0) + 1
    made = {o: n for n in nodes for o in n.outputs}
    fused: set[str] = set()
    out: list[_Node] = []
    for n in nodes:
        if n.op == "Mul" and len(n.inputs) == 2:
            for s, x in (n.inputs, n.inputs[::-1]):
                sig = made.get(s)
                if (sig is not None and sig.op == "Sigmoid" and sig.inputs == (x,) and readers.get(s) == 1
                        and s not in outputs):
                    fused.add(s)
                    n = _Node("Silu", (x,), n.outputs, {}, n.name)
                    break
        out.append(n)
    return tuple(n for n in out if not (n.op == "Sigmoid" and n.outputs[0] in fused))


@dataclass(frozen=True)
class _Plan:
    values: dict
    shaped: frozenset
    planned: bool


class _Meta(dict):
    """The environment of the meta pass seen by a data node: host values come as meta tensors (only shapes
    matter there), except for the operands an operator reads as numbers (``ints`` / ``floats``)."""

    def __init__(self, env: dict, host: set):
        super().__init__()
        self.env, self.host = env, host

    def __getitem__(self, name: str) -> torch.Tensor:
        v = self.env[name]
        return v.to("meta") if name in self.host else v

    def get(self, name: str, default: Any = None) -> Any:
        if name.startswith("host:"):
            base = name[5:]
            if base in self.host:
                return self.env[base]
            raise OnnxError(f"{base} is computed from the data: its value is not known before a call")
        return self[name] if name in self.env else default

    def __setitem__(self, name: str, value: torch.Tensor) -> None:
        self.env[name] = value

    def __contains__(self, name: object) -> bool:
        return name in self.env


class _Args:
    """A node's inputs: ``t(i)`` the tensor (None when absent), ``ints(i)`` a host list of ints (shapes, axes,
    indices: read from the host copy of a shape-only value, so no device synchronisation)."""

    def __init__(self, node: _Node, env: dict):
        self.node, self.env = node, env

    def __len__(self) -> int:
        return len(self.node.inputs)

    def has(self, i: int) -> bool:
        return i < len(self.node.inputs) and self.node.inputs[i] != ""

    def t(self, i: int) -> torch.Tensor | None:
        return self.env[self.node.inputs[i]] if self.has(i) else None

    def all(self) -> list[torch.Tensor]:
        return [self.env[n] for n in self.node.inputs if n]

    def _host(self, i: int) -> torch.Tensor:
        name = self.node.inputs[i]
        v = self.env.get(f"host:{name}")
        return self.env[name] if v is None else v

    def ints(self, i: int) -> list[int] | None:
        return [int(a) for a in self._host(i).reshape(-1).tolist()] if self.has(i) else None

    def floats(self, i: int) -> list[float] | None:
        return [float(a) for a in self._host(i).reshape(-1).tolist()] if self.has(i) else None


def _constant(attrs: dict) -> torch.Tensor:
    if "value" in attrs:
        return attrs["value"]
    for key, dtype in (("value_float", torch.float32), ("value_floats", torch.float32), ("value_int", torch.int64),
                       ("value_ints", torch.int64)):
        if key in attrs:
            return torch.tensor(attrs[key], dtype=dtype)
    raise OnnxError(f"Constant with attributes {sorted(attrs)} is not supported")


# ---------------------------------------------------------------- the operators

OPS: dict[str, Callable[[_Args, dict, int], Any]] = {}
_DATA_ONLY = {"RandomNormal", "RandomUniform"}  # never folded (none implemented: listed for the rule's sake)


def op(*names: str):
    def register(fn):
        for n in names:
            OPS[n] = fn
        return fn
    return register


def _on_meta(x: torch.Tensor) -> bool:
    return x.device.type == "meta"


def _broadcast(fn):
    def run(a: _Args, attrs: dict, opset: int):
        x, y = a.t(0), a.t(1)
        if x.device != y.device:  # a host-side shape value meeting a device tensor
            y = y.to(x.device) if y.device.type == "cpu" else y
            x = x.to(y.device) if x.device.type == "cpu" else x
        return fn(x, y)
    return run


for _name, _fn in {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul, "Pow": torch.pow,
                   "Equal": torch.eq, "Less": torch.lt, "LessOrEqual": torch.le, "Greater": torch.gt,
                   "GreaterOrEqual": torch.ge, "And": torch.logical_and, "Or": torch.logical_or,
                   "Xor": torch.logical_xor, "BitShift": None}.items():
    if _fn is not None:
        OPS[_name] = _broadcast(_fn)


@op("Div")
def _div(a, attrs, opset):
    x, y = a.t(0), a.t(1)
    if x.device != y.device:
        y = y.to(x.device)
    if not x.is_floating_point() and not y.is_floating_point():
        return torch.div(x, y, rounding_mode="trunc")  # ONNX integer division truncates
    return torch.div(x, y)


@op("Mod")
def _mod(a, attrs, opset):
    x, y = a.t(0), a.t(1).to(a.t(0).device)
    return torch.fmod(x, y) if attrs.get("fmod", 0) else torch.remainder(x, y)


_UNARY = {"Relu": F.relu, "Sigmoid": torch.sigmoid, "Tanh": torch.tanh, "Exp": torch.exp, "Log": torch.log,
          "Sqrt": torch.sqrt, "Reciprocal": torch.reciprocal, "Neg": torch.neg, "Abs": torch.abs,
          "Floor": torch.floor, "Ceil": torch.ceil, "Round": torch.round, "Sin": torch.sin, "Cos": torch.cos,
          "Atan": torch.atan, "Sign": torch.sign, "Not": torch.logical_not, "Erf": torch.erf,
          "Softplus": F.softplus, "HardSwish": F.hardswish, "Identity": lambda x: x}
for _name, _fn in _UNARY.items():
    OPS[_name] = (lambda f: lambda a, attrs, opset: f(a.t(0)))(_fn)


@op("Dropout")
def _dropout(a, attrs, opset):
    x = a.t(0)
    return x, torch.ones_like(x, dtype=torch.bool)


@op("LeakyRelu")
def _leaky(a, attrs, opset):
    return F.leaky_relu(a.t(0), attrs.get("alpha", 0.01))


@op("Elu")
def _elu(a, attrs, opset):
    return F.elu(a.t(0), attrs.get("alpha", 1.0))


@op("HardSigmoid")
def _hard_sigmoid(a, attrs, opset):
    return torch.clamp(attrs.get("alpha", 0.2) * a.t(0) + attrs.get("beta", 0.5), 0, 1)


@op("Clip")
def _clip(a, attrs, opset):
    x = a.t(0)
    if opset < 11:
        lo, hi = attrs.get("min", -math.inf), attrs.get("max", math.inf)
    else:
        lo = a.floats(1)[0] if a.has(1) else -math.inf
        hi = a.floats(2)[0] if a.has(2) else math.inf
    return torch.clamp(x, lo, hi)


@op("Max", "Min", "Sum", "Mean")
def _variadic(a, attrs, opset):
    xs = a.all()
    device = next((x.device for x in xs if x.device.type != "cpu"), xs[0].device)
    xs = [x.to(device) for x in xs]
    out = xs[0]
    f = {"Max": torch.maximum, "Min": torch.minimum, "Sum": torch.add, "Mean": torch.add}[a.node.op]
    for x in xs[1:]:
        out = f(out, x)
    return out / len(xs) if a.node.op == "Mean" else out


@op("Where")
def _where(a, attrs, opset):
    c, x, y = a.t(0), a.t(1), a.t(2)
    device = next((v.device for v in (c, x, y) if v.device.type != "cpu"), c.device)
    return torch.where(c.to(device), x.to(device), y.to(device))


@op("Cast")
def _cast(a, attrs, opset):
    return a.t(0).to(DTYPES[attrs["to"]])


@op("CastLike")
def _cast_like(a, attrs, opset):
    return a.t(0).to(a.t(1).dtype)


def _pads_2d(pads: list[int], x: torch.Tensor) -> tuple[torch.Tensor, list[int]]:
    """ONNX pads (begin..., end...) for the spatial dims: symmetric ones as the op's padding, others applied
    first."""
    k = len(pads) // 2
    begin, end = pads[:k], pads[k:]
    if begin == end:
        return x, begin
    torch_pads = []
    for b, e in zip(reversed(begin), reversed(end)):
        torch_pads += [b, e]
    return F.pad(x, torch_pads), [0] * k


def _auto_pads(attrs: dict, x: torch.Tensor, kernel: list[int], strides: list[int], dilations: list[int]
               ) -> list[int]:
    mode = attrs.get("auto_pad", "NOTSET")
    k = len(kernel)
    if mode in ("NOTSET", ""):
        return list(attrs.get("pads", [0] * 2 * k))
    if mode == "VALID":
        return [0] * 2 * k
    begin, end = [], []
    for d in range(k):
        size = x.shape[2 + d]
        out = -(-size // strides[d])
        total = max(0, (out - 1) * strides[d] + (kernel[d] - 1) * dilations[d] + 1 - size)
        small, big = total // 2, total - total // 2
        begin.append(small if mode == "SAME_UPPER" else big)
        end.append(big if mode == "SAME_UPPER" else small)
    return begin + end


@op("Conv")
def _conv(a, attrs, opset):
    x, w, b = a.t(0), a.t(1), a.t(2)
    k = w.dim() - 2
    strides = list(attrs.get("strides", [1] * k))
    dilations = list(attrs.get("dilations", [1] * k))
    pads = _auto_pads(attrs, x, list(w.shape[2:]), strides, dilations)
    x, padding = _pads_2d(pads, x)
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[k]
    return conv(x, w, b, stride=strides, padding=padding, dilation=dilations, groups=attrs.get("group", 1))


@op("ConvTranspose")
def _conv_transpose(a, attrs, opset):
    x, w, b = a.t(0), a.t(1), a.t(2)
    k = w.dim() - 2
    if "output_shape" in attrs or attrs.get("auto_pad", "NOTSET") not in ("NOTSET", ""):
        raise OnnxError("ConvTranspose with output_shape or auto_pad is not supported")
    pads = list(attrs.get("pads", [0] * 2 * k))
    if pads[:k] != pads[k:]:
        raise OnnxError("ConvTranspose with asymmetric pads is not supported")
    conv = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[k]
    return conv(x, w, b, stride=attrs.get("strides", [1] * k), padding=pads[:k],
                output_padding=attrs.get("output_padding", [0] * k), groups=attrs.get("group", 1),
                dilation=attrs.get("dilations", [1] * k))


@op("BatchNormalization")
def _batch_norm(a, attrs, opset):
    return F.batch_norm(a.t(0), a.t(3), a.t(4), a.t(1), a.t(2), False, 0.0, attrs.get("epsilon", 1e-5))


@op("InstanceNormalization")
def _instance_norm(a, attrs, opset):
    return F.instance_norm(a.t(0), weight=a.t(1), bias=a.t(2), eps=attrs.get("epsilon", 1e-5))


@op("LayerNormalization")
def _layer_norm(a, attrs, opset):
    x = a.t(0)
    axis = attrs.get("axis", -1) % x.dim()
    return F.layer_norm(x, x.shape[axis:], a.t(1), a.t(2), attrs.get("epsilon", 1e-5))


def _pool(a, attrs, kind):
    x = a.t(0)
    kernel = list(attrs["kernel_shape"])
    k = len(kernel)
    strides = list(attrs.get("strides", [1] * k))
    dilations = list(attrs.get("dilations", [1] * k))
    pads = _auto_pads(attrs, x, kernel, strides, dilations)
    ceil = bool(attrs.get("ceil_mode", 0))
    if pads[:k] != pads[k:] or any(p > kk // 2 for p, kk in zip(pads[:k], kernel)):
        fill = -math.inf if kind == "max" else 0.0
        tp = []
        for b, e in zip(reversed(pads[:k]), reversed(pads[k:])):
            tp += [b, e]
        x, pads = F.pad(x, tp, value=fill), [0] * 2 * k
    if kind == "max":
        f = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[k]
        return f(x, kernel, strides, pads[:k], dilations, ceil_mode=ceil)
    f = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}[k]
    return f(x, kernel, strides, pads[:k], ceil_mode=ceil, count_include_pad=bool(attrs.get("count_include_pad", 0)))


@op("MaxPool")
def _max_pool(a, attrs, opset):
    if attrs.get("storage_order", 0) or len(a.node.outputs) > 1 and a.node.outputs[1]:
        raise OnnxError("MaxPool with indices output is not supported")
    return _pool(a, attrs, "max")


@op("AveragePool")
def _avg_pool(a, attrs, opset):
    return _pool(a, attrs, "avg")


@op("GlobalAveragePool")
def _gap(a, attrs, opset):
    x = a.t(0)
    return x.mean(dim=tuple(range(2, x.dim())), keepdim=True)


@op("GlobalMaxPool")
def _gmp(a, attrs, opset):
    x = a.t(0)
    return x.amax(dim=tuple(range(2, x.dim())), keepdim=True)


@op("MatMul")
def _matmul(a, attrs, opset):
    return torch.matmul(a.t(0), a.t(1))


@op("Gemm")
def _gemm(a, attrs, opset):
    x, w, c = a.t(0), a.t(1), a.t(2)
    if attrs.get("transA", 0):
        x = x.t()
    if attrs.get("transB", 0):
        w = w.t()
    y = attrs.get("alpha", 1.0) * (x @ w)
    return y + attrs.get("beta", 1.0) * c if c is not None else y


@op("Einsum")
def _einsum(a, attrs, opset):
    return torch.einsum(attrs["equation"], *a.all())


@op("Softmax", "LogSoftmax")
def _softmax(a, attrs, opset):
    x = a.t(0)
    f = torch.softmax if a.node.op == "Softmax" else torch.log_softmax
    axis = attrs.get("axis", -1 if opset >= 13 else 1)
    if opset >= 13:
        return f(x, dim=axis)
    axis %= x.dim()  # before 13: the input flattened to 2-D at axis
    shape = x.shape
    return f(x.reshape(int(np.prod(shape[:axis])), -1), dim=1).reshape(shape)


@op("Concat")
def _concat(a, attrs, opset):
    xs = a.all()
    device = next((x.device for x in xs if x.device.type not in ("cpu",)), xs[0].device)
    return torch.cat([x.to(device) for x in xs], dim=attrs["axis"])


@op("Split")
def _split(a, attrs, opset):
    x = a.t(0)
    axis = attrs.get("axis", 0)
    n = len(a.node.outputs)
    sizes = list(attrs["split"]) if "split" in attrs else a.ints(1) if a.has(1) else None
    if sizes is None:
        total = x.shape[axis]
        parts = attrs.get("num_outputs", n)
        step = -(-total // parts)  # opset 18: ceil, the last part smaller
        sizes = [step] * (parts - 1) + [total - step * (parts - 1)]
    return tuple(torch.split(x, sizes, dim=axis))


@op("Slice")
def _slice(a, attrs, opset):
    x = a.t(0)
    if opset < 10:
        starts, ends = attrs["starts"], attrs["ends"]
        axes = attrs.get("axes", list(range(len(starts))))
        steps = [1] * len(starts)
    else:
        starts, ends = a.ints(1), a.ints(2)
        axes = a.ints(3) if a.has(3) else list(range(len(starts)))
        steps = a.ints(4) if a.has(4) else [1] * len(starts)
    index = [slice(None)] * x.dim()
    flips = []
    for s, e, ax, st in zip(starts, ends, axes, steps):
        ax %= x.dim()
        size = x.shape[ax]
        if st > 0:
            s = max(0, min(size, s + size if s < 0 else s))
            e = max(0, min(size, e + size if e < 0 else e))
            index[ax] = slice(s, e, st)
        else:  # a negative step: flip, then slice forwards
            s = max(-1, min(size - 1, s + size if s < 0 else s))
            e = max(-1, min(size - 1, e + size if e < -1 or (e < 0 and e != -1) else e)) if e > -(2**62) else -1
            flips.append(ax)
            index[ax] = slice(size - 1 - s, size - 1 - e, -st)
    if flips:
        x = torch.flip(x, flips)
    return x[tuple(index)]


@op("Reshape")
def _reshape(a, attrs, opset):
    x = a.t(0)
    shape = a.ints(1)
    if not attrs.get("allowzero", 0):
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return x.reshape(shape)


@op("Flatten")
def _flatten(a, attrs, opset):
    x = a.t(0)
    axis = attrs.get("axis", 1) % (x.dim() or 1) if attrs.get("axis", 1) < 0 else attrs.get("axis", 1)
    return x.reshape(int(np.prod(x.shape[:axis])), -1)


@op("Transpose")
def _transpose(a, attrs, opset):
    x = a.t(0)
    return x.permute(attrs.get("perm", list(reversed(range(x.dim())))))


@op("Squeeze")
def _squeeze(a, attrs, opset):
    x = a.t(0)
    axes = attrs.get("axes") if opset < 13 else a.ints(1)
    if axes is None:
        return x.squeeze()
    return x.squeeze(tuple(ax % x.dim() for ax in axes)) if axes else x


@op("Unsqueeze")
def _unsqueeze(a, attrs, opset):
    x = a.t(0)
    axes = attrs.get("axes") if opset < 13 else a.ints(1)
    rank = x.dim() + len(axes)
    for ax in sorted(ax % rank for ax in axes):
        x = x.unsqueeze(ax)
    return x


@op("Shape")
def _shape(a, attrs, opset):
    shape = list(a.t(0).shape)
    start, end = attrs.get("start", 0), attrs.get("end", None)
    return torch.tensor(shape[start:end], dtype=torch.int64)


@op("Size")
def _size(a, attrs, opset):
    return torch.tensor(a.t(0).numel(), dtype=torch.int64)


@op("Gather")
def _gather(a, attrs, opset):
    x, idx = a.t(0), a.t(1)
    axis = attrs.get("axis", 0) % x.dim()
    idx = idx.to(x.device) if not _on_meta(x) else idx
    idx = torch.where(idx < 0, idx + x.shape[axis], idx)
    out = torch.index_select(x, axis, idx.reshape(-1))
    return out.reshape(x.shape[:axis] + idx.shape + x.shape[axis + 1:])


@op("OneHot")
def _one_hot(a, attrs, opset):
    idx, depth, values = a.t(0), a.ints(1)[0], a.t(2)
    if not _on_meta(idx):
        values = values.to(idx.device)
    idx = idx.to(torch.int64)
    idx = torch.where(idx < 0, idx + depth, idx)  # [-depth, -1] counts from the end; others stay out of range
    hot = idx.unsqueeze(-1) == torch.arange(depth, device=idx.device)  # an index out of range is all "off"
    out = torch.where(hot, values.reshape(-1)[1], values.reshape(-1)[0])
    return out.movedim(-1, attrs.get("axis", -1) % out.dim())


@op("GatherElements")
def _gather_elements(a, attrs, opset):
    x, idx = a.t(0), a.t(1).to(a.t(0).device)
    axis = attrs.get("axis", 0) % x.dim()
    idx = torch.where(idx < 0, idx + x.shape[axis], idx)
    return torch.gather(x, axis, idx)


@op("Expand")
def _expand(a, attrs, opset):
    x, shape = a.t(0), a.ints(1)
    target = torch.broadcast_shapes(tuple(x.shape), tuple(shape))
    return x.expand(target)


@op("Tile")
def _tile(a, attrs, opset):
    return a.t(0).repeat(a.ints(1))


@op("Range")
def _range(a, attrs, opset):
    start, limit, delta = a.t(0), a.t(1), a.t(2)
    dtype = start.dtype
    return torch.arange(start.item(), limit.item(), delta.item(), dtype=dtype)


@op("ConstantOfShape")
def _constant_of_shape(a, attrs, opset):
    value = attrs.get("value", torch.zeros(1))
    return torch.full(a.ints(0), value.reshape(-1)[0].item(), dtype=value.dtype)


@op("Resize", "Upsample")
def _resize(a, attrs, opset):
    x = a.t(0)
    mode = attrs.get("mode", "nearest")
    if a.node.op == "Upsample":
        scales = list(attrs["scales"]) if "scales" in attrs else a.floats(1)
        sizes, transform = None, "asymmetric"
    else:
        if opset < 11:
            scales, sizes = a.floats(1), None
            transform = "asymmetric"
        else:
            scales = a.floats(2) if a.has(2) else None
            sizes = a.ints(3) if a.has(3) else None
            transform = attrs.get("coordinate_transformation_mode", "half_pixel")
        if attrs.get("antialias", 0) or attrs.get("axes") or attrs.get("keep_aspect_ratio_policy", "stretch") != \
                "stretch":
            raise OnnxError("Resize with antialias, axes or keep_aspect_ratio_policy is not supported")
    if not scales:
        scales = None
    out = sizes[2:] if sizes else [int(math.floor(s * f)) for s, f in zip(x.shape[2:], scales[2:])]
    if (scales and scales[:2] != [1.0, 1.0]) or (sizes and sizes[:2] != list(x.shape[:2])):
        raise OnnxError("Resize of the batch or channel dimension is not supported")
    if mode == "nearest":
        nearest = attrs.get("nearest_mode", "round_prefer_floor")
        integral = scales is not None and all(float(s).is_integer() for s in scales[2:])
        if transform == "asymmetric" and (nearest == "floor" or integral):
            return F.interpolate(x, size=out, mode="nearest")
        if transform in ("half_pixel", "pytorch_half_pixel") and nearest in ("round_prefer_ceil", "floor") \
                and integral:
            return F.interpolate(x, size=out, mode="nearest")  # integer upscales sample the same pixels
        if transform == "half_pixel" and nearest == "round_prefer_floor":
            return F.interpolate(x, size=out, mode="nearest-exact")
        raise OnnxError(f"Resize nearest with {transform} / {nearest} is not supported")
    if mode in ("linear", "cubic"):
        torch_mode = {"linear": {3: "linear", 4: "bilinear", 5: "trilinear"}[x.dim()], "cubic": "bicubic"}[mode]
        if transform == "align_corners":
            return F.interpolate(x, size=out, mode=torch_mode, align_corners=True)
        if transform in ("half_pixel", "pytorch_half_pixel"):
            if mode == "cubic" and attrs.get("cubic_coeff_a", -0.75) != -0.75:
                raise OnnxError("Resize cubic with cubic_coeff_a other than -0.75 is not supported")
            return F.interpolate(x, size=out, mode=torch_mode, align_corners=False)
        raise OnnxError(f"Resize {mode} with {transform} is not supported")
    raise OnnxError(f"Resize mode {mode} is not supported")


def _reduce(fn):
    def run(a, attrs, opset):
        x = a.t(0)
        keep = bool(attrs.get("keepdims", 1))
        axes = attrs.get("axes")
        if axes is None and a.has(1):  # opset 18 (13 for ReduceSum): axes as an input
            axes = a.ints(1)
        if not axes:
            if attrs.get("noop_with_empty_axes", 0):
                return x
            axes = list(range(x.dim()))
        return fn(x, tuple(ax % x.dim() for ax in axes), keep)
    return run


OPS["ReduceMean"] = _reduce(lambda x, d, k: x.mean(dim=d, keepdim=k))
OPS["ReduceSum"] = _reduce(lambda x, d, k: x.sum(dim=d, keepdim=k))
OPS["ReduceMax"] = _reduce(lambda x, d, k: x.amax(dim=d, keepdim=k))
OPS["ReduceMin"] = _reduce(lambda x, d, k: x.amin(dim=d, keepdim=k))
OPS["ReduceProd"] = _reduce(lambda x, d, k: _prod(x, d, k))
OPS["ReduceL2"] = _reduce(lambda x, d, k: x.square().sum(dim=d, keepdim=k).sqrt())


def _prod(x, dims, keep):
    for d in sorted(dims, reverse=True):
        x = x.prod(dim=d, keepdim=keep)
    return x


@op("ArgMax", "ArgMin")
def _argmax(a, attrs, opset):
    x = a.t(0)
    axis = attrs.get("axis", 0)
    keep = bool(attrs.get("keepdims", 1))
    if attrs.get("select_last_index", 0):
        x = torch.flip(x, [axis])
        i = (x.argmax if a.node.op == "ArgMax" else x.argmin)(dim=axis, keepdim=keep)
        return x.shape[axis] - 1 - i
    return (x.argmax if a.node.op == "ArgMax" else x.argmin)(dim=axis, keepdim=keep)


@op("TopK")
def _topk(a, attrs, opset):
    x = a.t(0)
    k = attrs["k"] if opset < 10 else a.ints(1)[0]
    values, indices = torch.topk(x, k, dim=attrs.get("axis", -1), largest=bool(attrs.get("largest", 1)),
                                 sorted=bool(attrs.get("sorted", 1)))
    return values, indices


@op("NonZero")
def _nonzero(a, attrs, opset):
    return torch.nonzero(a.t(0)).T


@op("Pad")
def _pad(a, attrs, opset):
    x = a.t(0)
    mode = attrs.get("mode", "constant")
    if opset < 11:
        pads, value = list(attrs["pads"]), attrs.get("value", 0.0)
    else:
        pads = a.ints(1)
        value = a.floats(2)[0] if a.has(2) else 0.0
        if a.has(3):
            raise OnnxError("Pad with axes is not supported")
    k = len(pads) // 2
    tp = []
    for d in reversed(range(k)):
        tp += [pads[d], pads[d + k]]
    while len(tp) > 2 and tp[-1] == 0 and tp[-2] == 0:
        tp = tp[:-2]
    torch_mode = {"constant": "constant", "reflect": "reflect", "edge": "replicate"}[mode]
    return F.pad(x, tp, mode=torch_mode, value=value) if torch_mode == "constant" else F.pad(x, tp, mode=torch_mode)


@op("ScatterND")
def _scatter_nd(a, attrs, opset):
    x, idx, upd = a.t(0).clone(), a.t(1), a.t(2)
    if attrs.get("reduction", "none") != "none":
        raise OnnxError("ScatterND with a reduction is not supported")
    k = idx.shape[-1]
    flat = idx.reshape(-1, k)
    x[tuple(flat[:, j] for j in range(k))] = upd.reshape((-1,) + tuple(x.shape[k:]))
    return x


# ---------------------------------------------------------------- loading

# fused patterns of the graph rewrite (not ONNX operators: a file naming one is refused at load like any other)
_FUSED: dict[str, Callable[[_Args, dict, int], Any]] = {"Silu": lambda a, attrs, opset: F.silu(a.t(0))}


class OnnxRuntimeModel:
    """An ONNX file run by onnxruntime on the CPU (faster there than PyTorch's eager ops), called with and returning
    torch tensors like the module it stands for."""

    def __init__(self, path: str, threads: int | None = None):
        import onnxruntime as ort

        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        self.session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        self.input_name = self.session.get_inputs()[0].name
        self.output_names = tuple(o.name for o in self.session.get_outputs())

    def __call__(self, x: torch.Tensor) -> Any:
        if x.device.type != "cpu":
            raise ValueError("onnxruntime runs this ONNX model on the CPU; its input is on " + str(x.device))
        try:
            outs = self.session.run(None, {self.input_name: x.detach().float().contiguous().numpy()})
        except Exception as exc:  # noqa: BLE001 - onnxruntime's own exception types: one the runner knows
            raise RuntimeError(" ".join(str(exc).split())) from None
        outs = tuple(torch.from_numpy(o) for o in outs)
        return outs[0] if len(outs) == 1 else outs


def onnxruntime_available() -> bool:
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


__all__ = ["OnnxModule", "OnnxRuntimeModel", "OnnxError", "OPS", "onnxruntime_available"]
