"""The devices a test runs on: the CPU always, CUDA where there is a GPU (the GPU machine runs the same tests)."""
import pytest
import torch

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
DEVICES = ["cpu", pytest.param("cuda", marks=needs_cuda)]
