"""CUDA tensors go into attach_obbs directly (moved to the host once). Runs where torch sees a GPU; on the GPU
machine without pytest: python tests/nvds/test_cuda_input.py."""
from __future__ import annotations

import math
import types

import numpy as np
import readback
import torch

from obbmeta import nvds

pytestmark = []
if not torch.cuda.is_available():
    import pytest

    pytestmark = [pytest.mark.skip(reason="no CUDA device")]


def test_cuda_oriented_boxes_are_written_like_cpu_ones():
    g = torch.Generator().manual_seed(0)
    n = 500
    xywhr = torch.stack([torch.rand(n, generator=g) * 1900 + 10, torch.rand(n, generator=g) * 1060 + 10,
                         torch.rand(n, generator=g) * 50 + 2, torch.rand(n, generator=g) * 50 + 2,
                         (torch.rand(n, generator=g) - 0.5) * 2 * math.pi], dim=1)
    scores, labels = torch.rand(n, generator=g), torch.arange(n) % 4
    cuda = types.SimpleNamespace(xywhr=xywhr.cuda(), scores=scores.cuda(), labels=labels.cuda())
    cpu = types.SimpleNamespace(xywhr=xywhr, scores=scores, labels=labels)
    got = []
    for dets in (cuda, cpu):
        batch = nvds.BatchMeta.create(1)
        frame = batch.add_frame(width=1920, height=1080)
        res = nvds.attach_obbs(batch, frame, dets, class_names=["a", "b", "c", "d"])
        arrays = nvds.read_boxes(frame)
        got.append((res.written, res.filtered, arrays.xywhr, arrays["rect"], arrays.labels))
        batch.destroy()
    (w1, f1, x1, r1, c1), (w2, f2, x2, r2, c2) = got
    assert (w1, f1) == (w2, f2) and w1 + f1 == n
    np.testing.assert_array_equal(x1, x2)
    np.testing.assert_array_equal(r1, r2)
    np.testing.assert_array_equal(c1, c2)
    np.testing.assert_array_equal(x1[::-1], xywhr.numpy()[: w1])


def test_the_batch_form_takes_cuda_detections_of_every_frame():
    dets = [types.SimpleNamespace(xywhr=torch.tensor([[100.0 + k, 50.0, 20.0, 10.0, 0.3]], device="cuda"),
                                  scores=torch.tensor([0.5], device="cuda"),
                                  labels=torch.tensor([k], device="cuda")) for k in range(3)]
    batch = nvds.BatchMeta.create(3)
    for k in range(3):
        batch.add_frame(source_id=k, width=640, height=480)
    res = nvds.attach_obbs_batch(batch, dets)
    assert res.per_frame == (1, 1, 1)
    for k, frame in enumerate(batch.frames):
        ((info, obb),) = readback.pairs(frame)
        assert info.class_id == k and obb.xywhr[0] == 100.0 + k
    batch.destroy()


if __name__ == "__main__":
    test_cuda_oriented_boxes_are_written_like_cpu_ones()
    test_the_batch_form_takes_cuda_detections_of_every_frame()
    print("cuda input OK on", torch.cuda.get_device_name(0))
