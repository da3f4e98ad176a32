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


def test_boxes_stay_in_the_results_pixels_without_a_letterbox():
    # mmrotate's own inference rescales to the source image: nothing may move them again
    rows = [[960.5, 540.25, 90.0, 45.0, 0.2], [10.0, 1070.0, 8.0, 4.0, -1.1]]
    out = mmrotate(sample(rows, [0.9, 0.8], [0, 1]))[0]
    np.testing.assert_allclose(out.xywhr.numpy(), rows, rtol=1e-6)


def test_a_letterbox_maps_model_input_pixels_back_to_the_frame():
    from obbmeta import Letterbox

    # 1920x1080 letterboxed into 640x640: scale 1/3, the 640x360 image centred with 140 rows of padding above
    lb = Letterbox.fit((1920, 1080), (640, 640))
    assert (lb.scale, lb.pad_x, lb.pad_y) == pytest.approx((1 / 3, 0.0, 140.0))
    out = mmrotate(sample([[320.0, 320.0, 30.0, 15.0, 0.2]], [0.9], [0]), letterbox=lb)[0]
    np.testing.assert_allclose(out.xywhr.numpy(), [[960.0, 540.0, 90.0, 45.0, 0.2]], atol=1e-4)
    with pytest.raises(TypeError, match="letterbox must be None or an obbmeta.Letterbox"):
        mmrotate(sample([[0, 0, 1, 1, 0]], [0.9], [0]), letterbox=(1, 0, 0))


def test_detector_with_mmrotate_output_undoes_its_letterbox_as_obbinfer_does():
    from obbmeta.infer import Detector

    def model(x):  # an mmrotate-style model answering in the pixels of the letterboxed input it was given
        assert x.shape[-2:] == (64, 64)
        return [sample([[32.0, 32.0, 16.0, 8.0, 0.3]], [0.9], [1]) for _ in range(len(x))]

    det = Detector(model, input_size=64, output_format="mmrotate", device="cpu")
    frame = torch.zeros(32, 128, 3, dtype=torch.uint8)  # 128 wide, 32 high: scale 1/2, 16 rows of padding above
    out = det([frame], "RGB")[0]
    np.testing.assert_allclose(out.xywhr.numpy(), [[64.0, 16.0, 32.0, 16.0, 0.3]], atol=1e-4)
