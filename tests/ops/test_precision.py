"""float64 input is computed in float64: a silent cast to float32 would merge boxes float32 cannot tell apart
(and reorder scores that differ only beyond float32), so IoU and NMS would answer wrongly."""
import pytest
import reference
import torch
from devices import DEVICES, needs_cuda

from obbmeta.ops import box_iou_rotated, nms_rotated, obb_to_aabb, obb_to_polygons, polygons_to_obb

# Two 5 x 5 boxes 10 px apart, 3e8 px from the origin: disjoint, but float32 (spacing 32 there) makes them one box.
FAR = torch.tensor([[3e8, 0.0, 5.0, 5.0, 0.0], [3e8 + 10.0, 0.0, 5.0, 5.0, 0.0]], dtype=torch.float64)


def test_the_far_pair_collapses_in_float32_which_is_why_float64_matters():
    assert torch.equal(FAR.float()[0], FAR.float()[1])


def test_disjoint_float64_boxes_far_from_the_origin_have_iou_zero():
    iou = box_iou_rotated(FAR, FAR)
    assert iou.dtype == torch.float64
    assert iou[0, 1].item() == 0.0 and iou[0, 0].item() == 1.0
    assert reference.iou(FAR[0].numpy(), FAR[1].numpy()) == 0.0


def test_nms_keeps_both_far_disjoint_float64_boxes():
    assert nms_rotated(FAR, torch.tensor([0.9, 0.8], dtype=torch.float64), 0.5).tolist() == [0, 1]


def test_nms_orders_scores_that_differ_only_in_float64():
    boxes = torch.tensor([[0, 0, 10, 10, 0], [1, 0, 10, 10, 0]], dtype=torch.float32)
    scores = torch.tensor([0.5, 0.5 + 1e-12], dtype=torch.float64)
    assert scores.float()[0] == scores.float()[1]  # float32 would see a tie and keep index 0
    assert nms_rotated(boxes, scores, 0.5).tolist() == [1]


def test_float32_boxes_with_float64_scores_are_compared_exactly():
    far32 = FAR.float()  # already collapsed by the caller: obbmeta cannot undo that, and says nothing wrong
    assert nms_rotated(far32, torch.tensor([0.9, 0.8], dtype=torch.float64), 0.5).tolist() == [0]


def test_float64_values_beyond_the_double_products_range_are_refused():
    huge = torch.tensor([[1e200, 0.0, 10.0, 10.0, 0.0]], dtype=torch.float64)
    with pytest.raises(ValueError, match=r"boxes1 has values beyond \+-1e\+150"):
        box_iou_rotated(huge, huge)
    with pytest.raises(ValueError, match=r"boxes has values beyond"):
        nms_rotated(huge, torch.ones(1, dtype=torch.float64), 0.5)


def test_the_operators_themselves_handle_float64_and_non_contiguous_input():
    wide = torch.cat([FAR, FAR], dim=1)[:, :5]  # non-contiguous rows
    assert not wide.is_contiguous()
    assert torch.ops.obbmeta.box_iou_rotated(wide, wide, False)[0, 1].item() == 0.0
    scores = torch.tensor([0.9, 0.8], dtype=torch.float64)
    assert torch.ops.obbmeta.nms_rotated(wide, scores, None, 0.5).tolist() == [0, 1]


def test_conversions_keep_float64():
    assert obb_to_polygons(FAR).dtype == torch.float64
    assert obb_to_aabb(FAR).dtype == torch.float64
    assert obb_to_aabb(FAR)[1, 0].item() == 3e8 + 7.5
    assert polygons_to_obb(obb_to_polygons(FAR)).dtype == torch.float64
    assert obb_to_polygons(torch.tensor([[1.0, 2.0, 3.0, 4.0, 0.5]], dtype=torch.float16)).dtype == torch.float32


@pytest.mark.parametrize("device", DEVICES)
def test_float64_is_computed_in_float64_on_every_device(device):
    far = FAR.to(device)
    iou = box_iou_rotated(far, far)
    assert iou.dtype == torch.float64 and iou[0, 1].item() == 0.0
    assert nms_rotated(far, torch.tensor([0.9, 0.8], dtype=torch.float64, device=device), 0.5).tolist() == [0, 1]
    with pytest.raises(ValueError, match="values beyond"):
        nms_rotated(far * 1e150, torch.tensor([0.9, 0.8], dtype=torch.float64, device=device), 0.5)


@needs_cuda
@pytest.mark.parametrize("n", [1000, 4097])
def test_cuda_float64_nms_keep_set_equals_the_host(n):
    boxes, scores, _ = reference.clustered_scene(n, n)
    b, s = torch.from_numpy(boxes).double(), torch.from_numpy(scores).double()
    assert nms_rotated(b.cuda(), s.cuda(), 0.5).cpu().tolist() == nms_rotated(b, s, 0.5).tolist()
