"""obbmeta.infer.onnx: ONNX graphs run with PyTorch ops. Every operator against onnxruntime (the reference) on a
small graph of its own; whole exported models against the PyTorch module they came from; the files users hold
(an ONNX export, a TorchScript file) giving the same boxes in obbinfer."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

onnx = pytest.importorskip("onnx", reason="onnx (the onnx extra) is not installed")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime (the onnx extra) is not installed")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from obbmeta.infer.onnx import OPS, OnnxError, OnnxModule  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent / "gst"))
import obb_toy_models  # noqa: E402

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def graph(op, inputs, attrs=None, opset=17, n_out=1, consts=(), out_type=F):
    """A one-node graph: ``inputs`` = [(name, array)] fed at run time, ``consts`` = [(name, array)] initializers."""
    node = helper.make_node(op, [n for n, _ in inputs] + [n for n, _ in consts], [f"y{k}" for k in range(n_out)],
                            **(attrs or {}))
    ins = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape) for n, a in inputs]
    outs = [helper.make_tensor_value_info(f"y{k}", out_type if not isinstance(out_type, list) else out_type[k], None)
            for k in range(n_out)]
    inits = [numpy_helper.from_array(a, n) for n, a in consts]
    g = helper.make_graph([node], "g", ins, outs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def both(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    theirs = sess.run(None, {k: v for k, v in feeds.items()})
    mod = OnnxModule(model)
    if len(feeds) == 1:
        ours = mod(torch.from_numpy(next(iter(feeds.values()))))
    else:
        pytest.fail("the runner feeds one input")
    ours = ours if isinstance(ours, tuple) else (ours,)
    return theirs, [o.numpy() for o in ours]


rng = np.random.default_rng(0)
X = rng.standard_normal((2, 3, 8, 10)).astype(np.float32)
P = np.abs(X) + 0.5


def c(a, dtype=np.float32):
    return np.asarray(a, dtype)


CASES = {  # op -> (graph args, the input); each a reference test against onnxruntime
    "Add": dict(consts=[("b", c(rng.standard_normal((3, 1, 1))))]),
    "Sub": dict(consts=[("b", c([1.5]))]),
    "Mul": dict(consts=[("b", c(rng.standard_normal((1, 10))))]),
    "Div": dict(consts=[("b", c([0.5, -2, 4, 3, 1, 2, 7, 1, 1, 5]))]),
    "Pow": dict(consts=[("b", c([2.0]))]),
    "Relu": {}, "Sigmoid": {}, "Tanh": {}, "Exp": {}, "Neg": {}, "Abs": {}, "Floor": {}, "Ceil": {},
    "Round": {}, "Sin": {}, "Cos": {}, "Atan": {}, "Sign": {}, "Erf": {}, "Softplus": {}, "HardSwish": {},
    "Identity": {}, "Log": dict(x=P), "Sqrt": dict(x=P), "Reciprocal": dict(x=P),
    "LeakyRelu": dict(attrs=dict(alpha=0.1)), "Elu": dict(attrs=dict(alpha=0.7)),
    "HardSigmoid": dict(attrs=dict(alpha=0.3, beta=0.4)),
    "Clip": dict(consts=[("lo", c(-0.5)), ("hi", c(0.7))]),
    "Max": dict(consts=[("b", c([0.1]))]), "Min": dict(consts=[("b", c([0.1]))]),
    "Sum": dict(consts=[("b", c([0.1]))]), "Mean": dict(consts=[("b", c([0.3]))]),
    "Equal": dict(x=np.round(X), consts=[("b", c([0.0]))], out=TensorProto.BOOL),
    "Less": dict(consts=[("b", c([0.0]))], out=TensorProto.BOOL),
    "Greater": dict(consts=[("b", c([0.0]))], out=TensorProto.BOOL),
    "LessOrEqual": dict(consts=[("b", c([0.0]))], out=TensorProto.BOOL),
    "GreaterOrEqual": dict(consts=[("b", c([0.0]))], out=TensorProto.BOOL),
    "Mod": dict(x=np.round(X * 5), consts=[("b", c([3.0]))], attrs=dict(fmod=1)),
    "Cast": dict(attrs=dict(to=TensorProto.INT64), out=I64),
    "Conv": dict(consts=[("w", c(rng.standard_normal((4, 3, 3, 3)))), ("b", c(rng.standard_normal(4)))],
                 attrs=dict(pads=[1, 1, 1, 1], strides=[2, 2])),
    "ConvTranspose": dict(consts=[("w", c(rng.standard_normal((3, 2, 2, 2))))], attrs=dict(strides=[2, 2])),
    "BatchNormalization": dict(consts=[("s", c([1.0, 2, 3])), ("b", c([0.1, 0.2, 0.3])), ("m", c([0.0, 1, -1])),
                                       ("v", c([1.0, 0.5, 2]))]),
    "InstanceNormalization": dict(consts=[("s", c([1.0, 2, 3])), ("b", c([0.1, 0.2, 0.3]))]),
    "MaxPool": dict(attrs=dict(kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])),
    "AveragePool": dict(attrs=dict(kernel_shape=[2, 2], strides=[2, 2])),
    "GlobalAveragePool": {}, "GlobalMaxPool": {},
    "MatMul": dict(consts=[("w", c(rng.standard_normal((10, 4))))]),
    "Softmax": dict(attrs=dict(axis=1)), "LogSoftmax": dict(attrs=dict(axis=-1)),
    "Concat": dict(consts=[("b", c(np.ones((2, 1, 8, 10))))], attrs=dict(axis=1)),
    "Split": dict(consts=[("s", c([1, 2], np.int64))], attrs=dict(axis=1), n_out=2),
    "Slice": dict(consts=[("st", c([1, -5], np.int64)), ("en", c([3, 100], np.int64)), ("ax", c([1, 3], np.int64)),
                          ("sp", c([1, 2], np.int64))]),
    "Reshape": dict(consts=[("s", c([2, -1, 10], np.int64))]),
    "Flatten": dict(attrs=dict(axis=2)),
    "Transpose": dict(attrs=dict(perm=[0, 2, 3, 1])),
    "Squeeze": dict(x=X[:, :1], consts=[("a", c([1], np.int64))]),
    "Unsqueeze": dict(consts=[("a", c([0, 3], np.int64))]),
    "Shape": dict(out=I64), "Size": dict(out=I64),
    "Gather": dict(consts=[("i", c([2, 0, -1], np.int64))], attrs=dict(axis=3)),
    "GatherElements": dict(consts=[("i", rng.integers(0, 3, (2, 3, 8, 10)).astype(np.int64))], attrs=dict(axis=1)),
    "Expand": dict(x=X[:, :1], consts=[("s", c([2, 3, 1, 1], np.int64))]),
    "Tile": dict(consts=[("r", c([1, 2, 1, 1], np.int64))]),
    "Resize": dict(consts=[("roi", c([])), ("sc", c([1, 1, 2, 2]))], attrs=dict(mode="nearest",
                                                                            coordinate_transformation_mode="asymmetric",
                                                                            nearest_mode="floor")),
    "ReduceMean": dict(consts=[("a", c([2, 3], np.int64))], opset=18),
    "ReduceSum": dict(consts=[("a", c([1], np.int64))]),
    "ReduceMax": dict(consts=[("a", c([1], np.int64))], attrs=dict(keepdims=0), opset=18),
    "ReduceMin": dict(consts=[("a", c([3], np.int64))], opset=18),
    "ReduceProd": dict(x=P[:, :, :2, :2], consts=[("a", c([2, 3], np.int64))], opset=18),
    "ReduceL2": dict(consts=[("a", c([1], np.int64))], opset=18),
    "ArgMax": dict(attrs=dict(axis=1), out=I64), "ArgMin": dict(attrs=dict(axis=3, keepdims=0), out=I64),
    "TopK": dict(consts=[("k", c([4], np.int64))], attrs=dict(axis=3), n_out=2, out=[F, I64]),
    "Pad": dict(consts=[("p", c([0, 0, 1, 2, 0, 0, 3, 0], np.int64)), ("v", c(0.5))]),
    "Einsum": dict(consts=[("w", c(rng.standard_normal((10, 5))))], attrs=dict(equation="bchw,wk->bchk")),
    "Where": dict(x=(X > 0), consts=[("a", c([1.0])), ("b", c([-1.0]))]),
    "Not": dict(x=(X > 0), out=TensorProto.BOOL),
    "And": dict(x=(X > 0), consts=[("b", np.array([True, False] * 5))], out=TensorProto.BOOL),
    "Or": dict(x=(X > 0), consts=[("b", np.array([True, False] * 5))], out=TensorProto.BOOL),
    "Xor": dict(x=(X > 0), consts=[("b", np.array([True, False] * 5))], out=TensorProto.BOOL),
    "Dropout": dict(n_out=1),
    "LayerNormalization": dict(consts=[("s", c(rng.standard_normal(10))), ("b", c(rng.standard_normal(10)))]),
    "Gemm": dict(x=X[0, 0], consts=[("w", c(rng.standard_normal((4, 10)))), ("b", c(rng.standard_normal(4)))],
                 attrs=dict(transB=1, alpha=0.5)),
    "OneHot": dict(x=np.array([[0, 3, -1], [9, -4, 2]], np.int64), consts=[("d", c(4, np.int64)),
                                                                        ("v", c([-0.5, 2.0]))], attrs=dict(axis=1)),
    "Range": None, "ConstantOfShape": None, "NonZero": dict(x=(X > 1.5), out=I64),
    "CastLike": dict(consts=[("t", c([1], np.int64))], out=I64),
    "ScatterND": dict(consts=[("i", c([[0, 1], [1, 2]], np.int64)), ("u", c(np.zeros((2, 8, 10))))]),
    "Upsample": None,
}


@pytest.mark.parametrize("op", sorted(OPS))
def test_every_operator_matches_onnxruntime(op):
    case = CASES.get(op, "missing")
    assert case != "missing", f"{op} has no reference case: add one to CASES"
    if op == "Range":
        model = graph("Shape", [("x", X)], out_type=I64)
        start = helper.make_node("Range", ["a", "b", "d"], ["r"])
        g = model.graph
        g.initializer.extend([numpy_helper.from_array(c(v, np.int64), n) for n, v in (("a", 1), ("b", 9), ("d", 2))])
        g.node.append(start)
        mul = helper.make_node("Add", ["y0", "r1"], ["z"])
        g.node.append(helper.make_node("ReduceSum", ["r"], ["r1"], keepdims=1))
        g.node.append(mul)
        del g.output[:]
        g.output.extend([helper.make_tensor_value_info("z", I64, None)])
        theirs, ours = both(model, {"x": X})
    elif op == "ConstantOfShape":
        model = graph("Shape", [("x", X)], out_type=I64)
        g = model.graph
        g.node.append(helper.make_node("ConstantOfShape", ["y0"], ["z"],
                                       value=numpy_helper.from_array(c([2.5]), "v")))
        del g.output[:]
        g.output.extend([helper.make_tensor_value_info("z", F, None)])
        theirs, ours = both(model, {"x": X})
    elif op == "Upsample":
        model = graph("Upsample", [("x", X)], consts=[("sc", c([1, 1, 2, 3]))], attrs=dict(mode="nearest"), opset=9)
        model.ir_version = 4
        theirs, ours = both(model, {"x": X})
    else:
        x = case.get("x", X)
        model = graph(op, [("x", x)], case.get("attrs"), case.get("opset", 17), case.get("n_out", 1),
                      case.get("consts", ()), case.get("out", F))
        theirs, ours = both(model, {"x": x})
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape, (op, a.shape, b.shape)
        if b.dtype == np.bool_ or np.issubdtype(b.dtype, np.integer):
            assert np.array_equal(a, b), op
        else:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=op)


def test_an_operator_it_does_not_run_is_named_at_load():
    model = graph("DepthToSpace", [("x", X[:, :, :2, :2].repeat(4, axis=1))], attrs=dict(blocksize=2))
    with pytest.raises(OnnxError, match="operators obbmeta does not run: DepthToSpace"):
        OnnxModule(model)


def export(module, path, size=96, dynamic=True, opset=17):
    torch.onnx.export(module, (torch.rand(1, 3, size, size),), str(path), dynamo=False, input_names=["images"],
                      output_names=["output0"], opset_version=opset,
                      dynamic_axes={"images": {0: "batch", 2: "h", 3: "w"}, "output0": {0: "batch"}} if dynamic
                      else None)
    return str(path)


@pytest.mark.parametrize("opset", [11, 13, 17, 18])
def test_the_demo_detector_exported_with_dynamic_shapes_equals_its_pytorch_module(tmp_path, opset):
    from obbmeta.models import aerial_detector

    m = aerial_detector().eval()
    mod = OnnxModule(onnx.load(export(m, tmp_path / "a.onnx", 256, opset=opset)))
    with torch.inference_mode():
        for shape in ((1, 3, 256, 256), (3, 3, 192, 320), (2, 3, 256, 256)):  # the plan is made once per shape
            x = torch.rand(*shape)
            torch.testing.assert_close(mod(x), m(x), rtol=1e-4, atol=2e-3)
    assert len(mod._plans) == 3


def test_a_static_onnx_export_fed_another_size_names_its_dims(tmp_path):
    from obbmeta.infer import Detector, ModelInputError

    path = export(obb_toy_models.ToyObb(), tmp_path / "s.onnx", 64, dynamic=False)
    det = Detector(path, input_size=96, device="cpu")
    with pytest.raises(ModelInputError, match=r"exported for input \(1, 3, 64, 64\) but obbinfer fed \(1, 3, 96, 96\)"
                                              r": set input-size=64x64"):
        det([torch.zeros(60, 80, 3, dtype=torch.uint8)], "RGB")


def test_a_planned_call_reads_every_number_from_a_host_copy(tmp_path, monkeypatch):
    """Axes, slice bounds, resize scales: read as Python numbers from host copies, never from a tensor on the
    model's device (on CUDA that read is a synchronisation, and an error inside a CUDA graph capture)."""
    from obbmeta.infer import onnx as runner
    from obbmeta.models import aerial_detector

    mod = OnnxModule(onnx.load(export(aerial_detector().eval(), tmp_path / "a.onnx", 128)))
    x = torch.rand(1, 3, 128, 128)
    with torch.inference_mode():
        mod(x)  # the plan for this shape
        reads = []
        host = runner._Args._host
        monkeypatch.setattr(runner._Args, "_host", lambda self, i: reads.append(
            (self.node.op, f"host:{self.node.inputs[i]}" in self.env)) or host(self, i))
        mod(x)
    assert reads and all(found for _, found in reads), [op for op, found in reads if not found]


def test_silu_is_fused_only_where_nothing_else_reads_the_sigmoid():
    x = helper.make_tensor_value_info("x", F, X.shape)
    outs = [helper.make_tensor_value_info(n, F, None) for n in ("y", "s2")]
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", ["x", "s"], ["y0"]),
             helper.make_node("Sigmoid", ["y0"], ["s2"]), helper.make_node("Mul", ["s2", "y0"], ["y"])]
    model = helper.make_model(helper.make_graph(nodes, "g", [x], outs), ir_version=8,
                              opset_imports=[helper.make_opsetid("", 17)])
    mod = OnnxModule(model)
    assert [n.op for n in mod.nodes] == ["Silu", "Sigmoid", "Mul"]  # s2 is a graph output: that pair stays
    theirs, ours = both(model, {"x": X})
    for a, b in zip(theirs, ours):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-6)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (tests/gpu/streams.sh runs it)")
def test_an_exported_detector_is_captured_in_a_cuda_graph_without_a_sync(tmp_path):
    from obbmeta.models import aerial_detector

    m = aerial_detector().eval()
    mod = OnnxModule(onnx.load(export(m, tmp_path / "a.onnx", 256))).cuda()
    x = torch.rand(4, 3, 256, 256, device="cuda")
    with torch.inference_mode():
        eager = mod(x)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            mod(x)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        torch.cuda.set_sync_debug_mode("error")
        try:
            with torch.cuda.graph(g):
                out = mod(x)
        finally:
            torch.cuda.set_sync_debug_mode("default")
        g.replay()
        torch.testing.assert_close(out, eager, rtol=1e-4, atol=1e-3)
        # against the PyTorch module in full fp32 (TF32 convolutions, CUDA's default, differ between the two graphs
        # by more than the CPU tolerance: the export folds each batch norm into its convolution's weights)
        tf32 = torch.backends.cudnn.allow_tf32
        torch.backends.cudnn.allow_tf32 = False
        try:
            torch.testing.assert_close(mod(x), m.cuda()(x), rtol=1e-4, atol=2e-3)
        finally:
            torch.backends.cudnn.allow_tf32 = tf32
