"""The bundled aerial detector as the files users hold, for the model-format rows of ``pipeline_streams.py``: a
TorchScript trace (``aerial.ts``, traced on CUDA when there is a GPU: a trace records the device of the tensors the
model makes, here its cell centres, so a CPU trace does not run on CUDA) and an ONNX export with dynamic batch and
size (``aerial.onnx``, opset 17, the TorchScript exporter as Ultralytics and DeepStream-Yolo use it), both of the
same weights.

Usage: python benchmarks/model_files.py OUT_DIR     (needs the onnx package)
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

from obbmeta.models import aerial_detector


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results/models")
    out.mkdir(parents=True, exist_ok=True)
    m = aerial_detector().eval()
    x = torch.rand(1, 3, 640, 640)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    with torch.no_grad():
        torch.jit.trace(m.to(device), x.to(device)).save(str(out / "aerial.ts"))
    m, x = m.cpu(), x.cpu()
    torch.onnx.export(m, (x,), str(out / "aerial.onnx"), dynamo=False, input_names=["images"],
                      output_names=["output0"], opset_version=17,
                      dynamic_axes={"images": {0: "batch", 2: "h", 3: "w"}, "output0": {0: "batch"}})
    print(out / "aerial.ts", out / "aerial.onnx")


if __name__ == "__main__":
    main()
