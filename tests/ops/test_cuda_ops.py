"""The CUDA kernels (same geometry header, compiled by nvcc) against the host code and the shapely reference.
Skipped without a CUDA device; run on the GPU machine (see benchmarks/README.md)."""
import numpy as np
import pytest
import reference
import torch

from obbmeta._cuda_lib import cuda_library
from obbmeta.ops import box_iou_rotated, nms_rotated

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def test_cuda_kernels_are_built_and_used():
    assert cuda_library() is not None


def test_iou_matrix_and_aligned_match_the_host():
    boxes, _, _ = reference.clustered_scene(700, 1, extent=500.0)
    b = torch.from_numpy(boxes)
    host = box_iou_rotated(b, b)
    gpu = box_iou_rotated(b.cuda(), b.cuda())
    assert gpu.device.type == "cuda"
    torch.testing.assert_close(gpu.cpu(), host, atol=1e-6, rtol=0)
    torch.testing.assert_close(box_iou_rotated(b.cuda(), b.flip(0).cuda(), aligned=True).cpu(),
                               box_iou_rotated(b, b.flip(0), aligned=True), atol=1e-6, rtol=0)


@pytest.mark.parametrize("n", [1, 63, 64, 65, 1000, 4097, 20000])
@pytest.mark.parametrize("class_aware", [False, True])
def test_nms_keep_set_equals_the_host(n, class_aware):
    boxes, scores, labels = reference.clustered_scene(n, n)
    b, s, lab = torch.from_numpy(boxes), torch.from_numpy(scores), torch.from_numpy(labels)
    host = nms_rotated(b, s, 0.5, labels=lab if class_aware else None)
    gpu = nms_rotated(b.cuda(), s.cuda(), 0.5, labels=lab.cuda() if class_aware else None)
    assert gpu.device.type == "cuda" and gpu.dtype == torch.int64
    assert gpu.cpu().tolist() == host.tolist()


def test_nms_matches_the_shapely_reference_and_ties_keep_the_lower_index():
    boxes, scores, _ = reference.clustered_scene(400, 9)
    scores = np.round(scores, 1)
    keep = nms_rotated(torch.from_numpy(boxes).cuda(), torch.from_numpy(scores).cuda(), 0.3)
    assert keep.cpu().tolist() == reference.greedy_nms(boxes, scores, 0.3)


def test_nms_empty_and_degenerate_on_cuda():
    assert nms_rotated(torch.zeros(0, 5, device="cuda"), torch.zeros(0, device="cuda"), 0.5).numel() == 0
    b = torch.tensor([[0.0, 0, 0, 0, 0], [0, 0, 10, 10, 0], [0, 0, 10, 10, 0]], device="cuda")
    assert nms_rotated(b, torch.tensor([0.9, 0.8, 0.7], device="cuda"), 0.5).tolist() == [0, 1]


def test_nan_inputs_on_cuda_raise_the_same_errors():
    b = torch.tensor([[0.0, 0, 10, 10, 0], [0, 0, float("nan"), 10, 0]], device="cuda")
    with pytest.raises(ValueError, match="boxes contains NaN or inf"):
        nms_rotated(b, torch.tensor([0.9, 0.8], device="cuda"), 0.5)
    with pytest.raises(ValueError, match="scores contains NaN"):
        nms_rotated(b[:1], torch.tensor([float("nan")], device="cuda"), 0.5)


def test_float64_is_computed_in_float64_on_cuda():
    far = torch.tensor([[3e8, 0.0, 5.0, 5.0, 0.0], [3e8 + 10.0, 0.0, 5.0, 5.0, 0.0]], dtype=torch.float64,
                       device="cuda")
    iou = box_iou_rotated(far, far)
    assert iou.dtype == torch.float64 and iou[0, 1].item() == 0.0
    assert nms_rotated(far, torch.tensor([0.9, 0.8], dtype=torch.float64, device="cuda"), 0.5).tolist() == [0, 1]
    with pytest.raises(ValueError, match="values beyond"):
        nms_rotated(far * 1e150, torch.tensor([0.9, 0.8], dtype=torch.float64, device="cuda"), 0.5)


@pytest.mark.parametrize("n", [1000, 4097])
def test_float64_nms_keep_set_equals_the_host(n):
    boxes, scores, labels = reference.clustered_scene(n, n)
    b, s = torch.from_numpy(boxes).double(), torch.from_numpy(scores).double()
    assert nms_rotated(b.cuda(), s.cuda(), 0.5).cpu().tolist() == nms_rotated(b, s, 0.5).tolist()
