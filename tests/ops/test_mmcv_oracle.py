"""Cross-checks against mmcv's compiled ops when mmcv (with ops) is installed; skipped otherwise.

Build recipe (about 15 minutes on 2 cores): see benchmarks/README.md."""
import numpy as np
import pytest
import reference
import torch

from obbmeta.ops import box_iou_rotated, nms_rotated

mmcv_ops = pytest.importorskip("mmcv.ops", reason="mmcv with compiled ops is not installed")


def test_box_iou_rotated_agrees_with_mmcv():
    boxes, _, _ = reference.clustered_scene(300, 5, extent=400.0)
    b = torch.from_numpy(boxes)
    ours = box_iou_rotated(b, b)
    theirs = mmcv_ops.box_iou_rotated(b, b, clockwise=True)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=1e-4)


@pytest.mark.parametrize("seed", range(3))
def test_nms_rotated_keep_set_equals_mmcv(seed):
    boxes, scores, _ = reference.clustered_scene(500, seed)
    b, s = torch.from_numpy(boxes), torch.from_numpy(scores)
    _, keep = mmcv_ops.nms_rotated(b, s, 0.5)
    assert nms_rotated(b, s, 0.5).tolist() == keep.tolist()
