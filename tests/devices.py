"""The devices a test runs on: the CPU always, CUDA where there is a GPU (the GPU machine runs the same tests)."""
import pytest
import torch

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
DEVICES = ["cpu", pytest.param("cuda", marks=needs_cuda)]
# where obbinfer's device=auto runs a model: references that must equal the element to the last digit run there, and
# models are traced there (a trace keeps the device of the tensors it makes)
AUTO = "cuda" if torch.cuda.is_available() else "cpu"
