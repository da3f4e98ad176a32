import math

import pytest
import torch

from obbmeta import decode
from obbmeta.models import OBBDetector
from obbmeta.models.detector import BOX_CHANNELS, STRIDE, cell_centres, decode_boxes


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return OBBDetector(3, ["a", "b", "c"], widths=(8, 8, 16, 16, 16)).eval()


def test_output_is_the_raw_yolo_obb_layout_one_column_per_stride_8_cell(model):
    with torch.no_grad():
        out = model(torch.rand(2, 3, 256, 192))
    assert out.shape == (2, 4 + 3 + 1, (256 // 8) * (192 // 8))
    cx, cy, w, h = out[:, 0], out[:, 1], out[:, 2], out[:, 3]
    scores, angle = out[:, 4:7], out[:, 7]
    gx, gy = cell_centres(256, 192)
    assert ((cx - gx).abs() <= 2 * STRIDE).all() and ((cy - gy).abs() <= 2 * STRIDE).all()
    assert (w > 0).all() and (h > 0).all()
    assert ((scores >= 0) & (scores <= 1)).all()
    assert ((angle > -math.pi / 2 - 1e-6) & (angle <= math.pi / 2 + 1e-6)).all()


def test_yolo_obb_reads_the_rows_as_cx_cy_w_h_scores_angle(model):
    with torch.no_grad():
        out = model(torch.rand(1, 3, 64, 64))
    dets = decode.yolo_obb(out, conf=0.0, iou=1.0)[0]  # no suppression: every cell comes back
    rows = out[0].T
    assert len(dets) == len(rows)
    mine = torch.cat([dets.xywhr, dets.scores[:, None], dets.labels[:, None].float()], 1)
    expected = torch.cat([rows[:, :4], rows[:, 7:8], rows[:, 4:7].max(1).values[:, None],
                          rows[:, 4:7].argmax(1)[:, None].float()], 1)
    key = lambda t: t[torch.argsort(t[:, 0] * 1e4 + t[:, 1])]  # noqa: E731  (cell centres are distinct)
    assert torch.allclose(key(mine), key(expected))


def test_the_angle_is_half_the_angle_of_its_vector_so_a_half_turn_is_one_prediction():
    raw = torch.zeros(5, BOX_CHANNELS + 1)
    for i, a in enumerate([0.0, 0.3, -0.7, 1.2, math.pi / 2 - 0.01]):
        raw[i, 4], raw[i, 5] = 3 * math.cos(2 * a), 3 * math.sin(2 * a)
    boxes = decode_boxes(raw, torch.zeros(5), torch.zeros(5))
    assert torch.allclose(boxes[:, 4], torch.tensor([0.0, 0.3, -0.7, 1.2, math.pi / 2 - 0.01]), atol=1e-5)
    assert torch.allclose(boxes[:, 2:4], torch.full((5, 2), float(STRIDE)))  # log size 0 -> one cell
    assert torch.allclose(boxes[:, :2], torch.zeros(5, 2))  # offset logit 0 -> the cell centre


@pytest.mark.parametrize("bad, error", [
    (torch.rand(3, 64, 64), ValueError), (torch.rand(1, 1, 64, 64), ValueError),
    (torch.zeros(1, 3, 64, 64, dtype=torch.uint8), TypeError), (torch.rand(1, 3, 60, 64), ValueError),
])
def test_bad_inputs_name_the_expected_form(model, bad, error):
    with pytest.raises(error, match="input"):
        model(bad)
