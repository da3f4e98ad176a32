"""The model files users hold, through obbinfer: an ONNX export and the same model as TorchScript give the same
boxes; nvinfer's model-engine-file falls back to the ONNX file; an Ultralytics checkpoint without Ultralytics says
what to do; a file exported for other dims says which, in one line."""
from __future__ import annotations

import zipfile

import numpy as np
import pytest
import readback
import torch
from devices import AUTO
from pipelines import buffer_probe, bus_warnings, run

from obbmeta import nvds
from obbmeta.gst import Gst

onnx = pytest.importorskip("onnx", reason="onnx (the onnx extra) is not installed")


def export_onnx(module, path, size=256):
    torch.onnx.export(module, (torch.rand(1, 3, size, size),), str(path), dynamo=False, input_names=["images"],
                      output_names=["output0"], opset_version=17, dynamic_axes={"images": {0: "batch"}})
    return str(path)


def boxes_through_obbinfer(element: str, n=4, size=256):
    p = Gst.parse_launch(f"videotestsrc num-buffers={n} pattern=smpte ! video/x-raw,format=RGBA,width={size},"
                         f"height={size} ! {element} ! fakesink name=sink")
    rows = []
    errors = buffer_probe(p.get_by_name("sink"), "sink", lambda b: rows.append(sorted(
        (i.class_id, round(i.confidence, 3), tuple(round(v, 1) for v in o.xywhr))
        for f in nvds.BatchMeta.from_gst_buffer(b).frames for i, o in readback.pairs(f))))
    warnings = bus_warnings(p)
    outcome = run(p)
    return outcome, errors, rows, warnings


def close(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert len(x) == len(y), (x, y)
        for u, v in zip(x, y):
            assert u[0] == v[0] and abs(u[1] - v[1]) <= 2e-3 and max(abs(p - q) for p, q in zip(u[2], v[2])) <= 0.2


@pytest.mark.parametrize("runner", ["torch", "onnxruntime"])
def test_an_onnx_export_and_the_same_model_as_torchscript_give_the_same_boxes(tmp_path, monkeypatch, runner):
    """The bundled aerial detector exported to ONNX and traced to TorchScript, through obbinfer on the same frames
    (onnxruntime is the CPU default where it is installed; the PyTorch-ops runner is what CUDA uses)."""
    if runner == "onnxruntime":
        pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
    from obbmeta.models import aerial_detector

    monkeypatch.setenv("OBBMETA_ONNX_RUNNER", runner)
    # the formats are compared, not TF32: with torch's default TF32 convolutions on a GPU (10 mantissa bits) two
    # implementations of one network differ by a few 1e-3 in a score (seen on an H100), enough to flip an NMS choice
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)  # (matmuls are not TF32 by default)
    m = aerial_detector().eval()
    onnx_path = export_onnx(m, tmp_path / "aerial.onnx")
    ts_path = tmp_path / "aerial.pt"
    # traced where it runs (a trace keeps the device of the tensors the model makes); onnxruntime runs on the CPU
    device = AUTO if runner == "torch" else "cpu"
    torch.jit.trace(m.to(device), torch.rand(1, 3, 256, 256, device=device)).save(str(ts_path))
    common = f"input-size=256 conf=0.05 class-names=vehicle,ship,plane,storage_tank device={device}"
    a = boxes_through_obbinfer(f"obbinfer model={onnx_path} {common}")
    b = boxes_through_obbinfer(f"obbinfer model={ts_path} {common}")
    for outcome, errors, *_ in (a, b):
        assert outcome.eos and not errors, outcome
    assert sum(len(r) for r in a[2]) > 0
    close(a[2], b[2])


def test_model_engine_file_falls_back_to_onnx_file_as_nvinfer_does_said_once(tmp_path):
    from obbmeta.models import aerial_detector

    export_onnx(aerial_detector().eval(), tmp_path / "m.onnx")
    cfg = tmp_path / "pgie.txt"
    cfg.write_text("[property]\nonnx-file=m.onnx\nmodel-engine-file=m.onnx_b1_gpu0_fp32.engine\ninfer-dims=3;256;256\n"
                   "cluster-mode=2\n[obbmeta]\npreprocess=ultralytics\n")
    outcome, errors, rows, warnings = boxes_through_obbinfer(f"obbinfer config-file-path={cfg}")
    assert outcome.eos and not errors, outcome
    said = [w for w in warnings if "model-engine-file" in w]
    assert len(said) == 1 and "cannot deserialize a TensorRT engine" in said[0] and "onnx-file=" in said[0]
    cfg.write_text("[property]\nmodel-engine-file=m.engine\n")
    outcome, *_ = boxes_through_obbinfer(f"obbinfer config-file-path={cfg}")
    assert not outcome.eos and "no onnx-file to build from" in outcome.error


def fake_ultralytics_checkpoint(path):
    """A torch.save zip whose pickle names Ultralytics' model class (what a yolo11n-obb.pt holds), written without
    Ultralytics: obbmeta recognises it by reading the pickle's opcodes, never unpickling it."""
    body = b"\x80\x02cultralytics.nn.tasks\nOBBModel\nq\x00)\x81q\x01."  # protocol 2: GLOBAL, NEWOBJ
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("yolo11n-obb/data.pkl", body)
        z.writestr("yolo11n-obb/version", "3\n")
    return str(path)


def test_an_ultralytics_checkpoint_without_ultralytics_says_what_to_install_or_how_to_export(tmp_path):
    try:
        import ultralytics  # noqa: F401
        pytest.skip("Ultralytics is installed here: the checkpoint loads (tests/test_ultralytics_oracle.py)")
    except ImportError:
        pass
    path = fake_ultralytics_checkpoint(tmp_path / "yolo11n-obb.pt")
    outcome, *_ = boxes_through_obbinfer(f"obbinfer model={path}")
    assert not outcome.eos and outcome.error.count("\n") == 0
    assert "is an Ultralytics checkpoint" in outcome.error and "pip install ultralytics" in outcome.error
    assert "yolo export model=yolo11n-obb.pt format=onnx" in outcome.error


def test_a_plain_torch_save_checkpoint_is_refused_with_what_to_give_instead(tmp_path):
    path = tmp_path / "weights.pt"
    torch.save({"state_dict": {"w": torch.zeros(2)}}, path)
    outcome, *_ = boxes_through_obbinfer(f"obbinfer model={path}")
    assert not outcome.eos and "torch.save checkpoint" in outcome.error and "module:callable" in outcome.error


@pytest.mark.parametrize("kind", ["torchscript", "export"])
def test_a_fixed_size_file_run_at_other_dims_is_one_line_naming_the_dims(tmp_path, kind):
    import obb_toy_models

    class Fixed(torch.nn.Module):  # a model that only runs at the traced size, as exported YOLO heads do
        def forward(self, x):
            return obb_toy_models.ToyObb()(x) + x.reshape(x.shape[0], 3, 64, 64).mean() * 0

    x = torch.rand(1, 3, 64, 64)
    path = tmp_path / ("fixed.pt" if kind == "torchscript" else "fixed.pt2")
    if kind == "torchscript":
        torch.jit.trace(Fixed(), x).save(str(path), _extra_files={"obbmeta.json": '{"input_shape": [1, 3, 64, 64]}'})
    else:
        torch.export.save(torch.export.export(Fixed(), (x,)), str(path))
    outcome, *_ = boxes_through_obbinfer(f"obbinfer model={path} input-size=96", size=96)
    assert not outcome.eos and outcome.error.count("\n") == 0, outcome.error
    assert "exported for input (1, 3, 64, 64) but obbinfer fed (1, 3, 96, 96): set input-size=64x64" in outcome.error
    assert np.char.count(outcome.error, "Traceback") == 0
