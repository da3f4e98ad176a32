"""obbmeta.infer: model specs, frame pre-processing, and boxes mapped back to frame pixels."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from obbmeta import Letterbox, OrientedBoxes
from obbmeta.frames.pixels import to_rgb
from obbmeta.infer import (
    Detector,
    ModelLoadError,
    letterbox_batch,
    load_model,
    parse_class_names,
    parse_device,
    parse_input_size,
)

sys.path.insert(0, str(Path(__file__).parent / "gst"))
import obb_toy_models  # noqa: E402

X = torch.rand(2, 3, 64, 64)


def test_module_callable_specs_are_called_with_no_arguments():
    m = load_model("obb_toy_models:toy")
    assert isinstance(m, obb_toy_models.ToyObb) and not m.training
    assert load_model("obb_toy_models:as_boxes")(X)[0].xywhr.shape == (1, 5)


def test_torchscript_and_export_files_load(tmp_path):
    ref = obb_toy_models.toy()(X)
    ts = tmp_path / "toy.torchscript"
    torch.jit.trace(obb_toy_models.toy(), X).save(str(ts))
    assert torch.allclose(load_model(str(ts))(X), ref)
    ep = tmp_path / "toy.pt2"
    torch.export.save(torch.export.export(obb_toy_models.toy(), (X,)), str(ep))
    assert torch.allclose(load_model(str(ep))(X), ref)


@pytest.mark.parametrize("spec,match", [
    ("no_such_module_xyz:f", "cannot import module"), ("obb_toy_models:nope", "has no attribute"),
    ("obb_toy_models:NUM_CLASSES", "not callable"), ("not a spec", "neither an existing file"),
    ("", "must be"), (42, "must be"),
])
def test_bad_model_specs_say_what_is_wrong(spec, match):
    with pytest.raises(ModelLoadError, match=match):
        load_model(spec)


def test_an_unloadable_file_reports_both_formats(tmp_path):
    f = tmp_path / "junk.pt"
    f.write_bytes(b"not a model")
    with pytest.raises(ModelLoadError, match="as TorchScript.*as torch.export"):
        load_model(str(f))


def test_a_failing_factory_is_named():
    with pytest.raises(ModelLoadError, match="calling failing_factory"):
        load_model("test_infer:failing_factory")


def failing_factory():
    raise RuntimeError("boom")


@pytest.mark.parametrize("value,want", [(640, (640, 640)), ("320", (320, 320)), ("640x384", (640, 384)),
                                        ((512, 288), (512, 288))])
def test_input_sizes(value, want):
    assert parse_input_size(value) == want


@pytest.mark.parametrize("value", ["0", "-3", "axb", "1x2x3", 10**6, True, None, 1.5])
def test_bad_input_sizes(value):
    with pytest.raises(ValueError, match="input_size"):
        parse_input_size(value)


def test_class_names_from_a_list_or_a_file(tmp_path):
    assert parse_class_names("car, ship,plane") == ["car", "ship", "plane"]
    f = tmp_path / "labels.txt"
    f.write_text("car\nship\n\n")
    assert parse_class_names(str(f)) == ["car", "ship"]
    assert parse_class_names("") is None
    with pytest.raises(ValueError, match="class_names\\[1\\]"):
        parse_class_names("car,,ship")


@pytest.mark.parametrize("value", ["gpu", "cuda:x", "mps", 3])
def test_bad_devices(value):
    with pytest.raises(ValueError, match="device"):
        parse_device(value)


@pytest.mark.parametrize("fmt,order", [("RGBA", [0, 1, 2]), ("BGRx", [2, 1, 0]), ("RGB", [0, 1, 2]),
                                       ("BGR", [2, 1, 0]), ("ARGB", [1, 2, 3]), ("xBGR", [3, 2, 1])])
def test_packed_formats_become_rgb(fmt, order):
    img = torch.randint(0, 256, (5, 7, len(fmt) if len(fmt) == 3 else 4), dtype=torch.uint8)
    rgb = to_rgb(img, fmt)
    assert rgb.shape == (3, 5, 7) and torch.allclose(rgb, img[..., order].permute(2, 0, 1).float() / 255)


def test_nv12_conversion_agrees_with_opencv():
    cv2 = pytest.importorskip("cv2")
    rng = np.random.default_rng(3)
    h, w = 16, 24
    yuv = rng.integers(16, 236, (h * 3 // 2, w), dtype=np.uint8)
    want = cv2.cvtColor(yuv, cv2.COLOR_YUV2RGB_NV12).astype(np.float32)
    y = torch.from_numpy(yuv[:h])
    uv = torch.from_numpy(yuv[h:].reshape(h // 2, w // 2, 2).copy())
    got = (to_rgb((y, uv), "NV12") * 255).permute(1, 2, 0).numpy()
    assert np.abs(got - want).max() <= 2.5


def test_letterbox_batch_scales_uniformly_centres_and_pads_grey():
    img = torch.zeros(3, 120, 320)
    img[:, 40:80, 100:200] = 1.0  # a white block
    x, (lb,) = letterbox_batch([img], (160, 160))
    assert x.shape == (1, 3, 160, 160) and lb == Letterbox(0.5, 0.0, 50.0)
    assert torch.all(x[0, :, :50] == 114 / 255) and torch.all(x[0, :, 110:] == 114 / 255)
    ys, xs = torch.nonzero(x[0, 0] > 0.9, as_tuple=True)
    # the block's corners map back to (100, 40) - (200, 80) in the source
    assert abs((xs.min().item() - lb.pad_x) / lb.scale - 100) <= 2 and abs((ys.max().item() + 1 - lb.pad_y) / lb.scale
                                                                           - 80) <= 2


def test_frames_of_different_sizes_get_their_own_letterbox():
    x, lbs = letterbox_batch([torch.rand(3, 120, 320), torch.rand(3, 200, 100), torch.rand(3, 120, 320)], (160, 160))
    assert x.shape == (3, 3, 160, 160) and lbs[0] == lbs[2] != lbs[1]


class FixedHead(torch.nn.Module):
    """A raw head with one confident box at the input centre, 40x20 at 30 degrees, class 1 of 2."""

    def forward(self, x):
        b, _, h, w = x.shape
        out = torch.zeros(b, 4 + 2 + 1, 3)
        out[:, :4, 0] = torch.tensor([w / 2, h / 2, 40.0, 20.0])
        out[:, 5, 0] = 0.9
        out[:, 6, 0] = math.radians(30)
        return out


def test_detector_maps_boxes_back_to_each_frames_pixels():
    det = Detector(FixedHead(), input_size=160, conf=0.5)
    frames = [torch.zeros(120, 320, 4, dtype=torch.uint8), torch.zeros(200, 100, 4, dtype=torch.uint8)]
    a, b = det(frames, "RGBA")
    # 320x120 -> scale 0.5: the centre (80, 80) of the input is (160, 60), and 40x20 is 80x40, in the frame.
    assert torch.allclose(a.xywhr, torch.tensor([[160.0, 60.0, 80.0, 40.0, math.radians(30)]]), atol=1e-4)
    assert a.labels.tolist() == [1] and abs(float(a.scores[0]) - 0.9) < 1e-6
    # 100x200 -> scale 0.8, pad_x 40: centre (80, 80) -> (50, 100); 40x20 -> 50x25.
    assert torch.allclose(b.xywhr, torch.tensor([[50.0, 100.0, 50.0, 25.0, math.radians(30)]]), atol=1e-4)


def test_boxes_format_filters_by_conf_and_caps_max_det():
    def model(x):
        xywhr = torch.tensor([[80.0, 80, 10, 10, 0]] * 3)
        return [OrientedBoxes(xywhr, torch.tensor([0.2, 0.9, 0.6]), torch.tensor([0, 1, 2]))] * len(x)

    (d,) = Detector(model, input_size=160, conf=0.5, max_det=1, output_format="boxes")(
        [torch.zeros(160, 160, 3, dtype=torch.uint8)], "RGB")
    assert d.scores.tolist() == [pytest.approx(0.9)] and d.labels.tolist() == [1]


def test_wrong_outputs_are_refused_with_the_format_named():
    with pytest.raises(ValueError, match="4\\+nc\\+1"):
        Detector("obb_toy_models:wrong_shape", input_size=64)([torch.zeros(8, 8, 3, dtype=torch.uint8)], "RGB")
    with pytest.raises(TypeError, match="OrientedBoxes per frame"):
        Detector(lambda x: [1], input_size=64, output_format="boxes")([torch.zeros(8, 8, 3, dtype=torch.uint8)], "RGB")
    with pytest.raises(ValueError, match="2 frames went in"):
        Detector(lambda x: [OrientedBoxes.empty()], input_size=64, output_format="boxes")(
            [torch.zeros(8, 8, 3, dtype=torch.uint8)] * 2, "RGB")


@pytest.mark.parametrize("kwargs,match", [({"conf": 1.5}, "conf"), ({"iou": -0.1}, "iou"), ({"max_det": -1}, "max_det"),
                                          ({"output_format": "yolo"}, "output_format"), ({"device": "tpu"}, "device")])
def test_bad_detector_settings(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Detector(FixedHead(), **kwargs)
