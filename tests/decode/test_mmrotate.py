from types import SimpleNamespace

import numpy as np
import pytest
import torch

from obbmeta.decode import mmrotate


def sample(boxes, scores, labels):
    return SimpleNamespace(pred_instances=SimpleNamespace(
        bboxes=SimpleNamespace(tensor=torch.tensor(boxes, dtype=torch.float32)),
        scores=torch.tensor(scores), labels=torch.tensor(labels)))


def test_batch_of_1x_samples_sorted_by_score_with_threshold():
    s = sample([[0, 0, 10, 5, 0.1], [50, 50, 10, 5, 0.2], [90, 90, 4, 4, 0]], [0.3, 0.9, 0.01], [0, 1, 1])
    out = mmrotate([s, s], score_thr=0.05)
    assert len(out) == 2 and out[0].scores.tolist() == pytest.approx([0.9, 0.3])


def test_single_sample_and_single_0x_result_are_accepted():
    assert len(mmrotate(sample([[0, 0, 10, 5, 0.1]], [0.5], [0]))) == 1
    legacy = [np.array([[0, 0, 10, 5, 0.1, 0.5]]), np.array([[0, 0, 10, 5, 0.1, 0.6]])]
    out = mmrotate(legacy)
    assert len(out) == 1 and out[0].labels.tolist() == [1, 0]


def test_optional_nms_is_class_aware_and_max_det_applies():
    s = sample([[0, 0, 10, 5, 0.1], [0, 0, 10, 5, 0.1], [0, 0, 10, 5, 0.1]], [0.9, 0.8, 0.7], [0, 0, 1])
    out = mmrotate(s, iou=0.5)[0]
    assert out.labels.tolist() == [0, 1]
    assert len(mmrotate(s, max_det=1)[0]) == 1
