"""Arguments found wrong by an adversarial pass: each now raises an error that names the argument and the expected
form (or, for valid empty input, gives the documented empty result) instead of a silent drop, an unrelated error
or an inf."""
import numpy as np
import pytest
import torch

from obbmeta import Letterbox, OrientedBoxes, decode
from obbmeta.ops import nms_rotated, polygons_to_obb
from obbmeta.osd import draw_obbs


def raw_output():
    out = torch.zeros(1, 7, 3)
    out[0, :4] = torch.tensor([[10.0, 50, 90], [10, 50, 90], [8, 8, 8], [4, 4, 4]])
    out[0, 4:6] = torch.tensor([[0.9, 0.8, 0.7], [0.1, 0.1, 0.1]])
    return out


@pytest.mark.parametrize("max_det", [-1, 1.5, True])
def test_mmrotate_max_det_must_be_a_count(max_det):
    result = [np.array([[10, 10, 4, 4, 0, 0.9], [50, 50, 4, 4, 0, 0.8]], np.float32)]
    with pytest.raises(ValueError, match="max_det must be None or an int >= 0"):
        decode.mmrotate(result, max_det=max_det)


def test_mmrotate_max_det_zero_keeps_nothing_and_none_keeps_all():
    result = [np.array([[10, 10, 4, 4, 0, 0.9], [50, 50, 4, 4, 0, 0.8]], np.float32)]
    assert len(decode.mmrotate(result, max_det=0)[0]) == 0
    assert len(decode.mmrotate(result, max_det=None)[0]) == 2


@pytest.mark.parametrize("max_nms", [-1, 0, True, 2.0])
def test_yolo_obb_max_nms_must_be_a_positive_count(max_nms):
    with pytest.raises(ValueError, match="max_nms must be an int >= 1"):
        decode.yolo_obb(raw_output(), max_nms=max_nms)


def test_yolo_obb_max_det_may_not_be_a_bool():
    with pytest.raises(ValueError, match="max_det must be an int >= 0"):
        decode.yolo_obb(raw_output(), max_det=True)


@pytest.mark.parametrize("kwargs, match", [
    (dict(scale=1e-40), r"scale must be in \[1e-06, 1e\+06\]"), (dict(scale=1e7), "scale must be in"),
    (dict(scale=0.5, pad_x=1e12), r"pad_x must be within \+-1e\+09"), (dict(scale=True), "finite number"),
])
def test_letterbox_refuses_what_would_map_boxes_to_inf(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Letterbox(**kwargs)


def test_letterbox_at_its_bounds_maps_float32_boxes_to_finite_ones():
    boxes = OrientedBoxes(torch.tensor([[3e4, 3e4, 50.0, 20.0, 0.1]]), torch.ones(1), torch.zeros(1, dtype=torch.int64))
    for lb in (Letterbox(1e-6, 1e9, -1e9), Letterbox(1e6, -1e9, 1e9)):
        assert torch.isfinite(boxes.rescale(lb).xywhr).all()


@pytest.mark.parametrize("polygons", [torch.zeros(0, 8), torch.zeros(0, 4, 2), torch.zeros(0, 6)])
def test_polygons_to_obb_of_valid_empty_input_is_empty(polygons):
    assert polygons_to_obb(polygons).shape == (0, 5)


@pytest.mark.parametrize("polygons", [[], np.zeros((0, 8)), torch.zeros(0, 4, 2, dtype=torch.float64)])
def test_from_polygons_of_valid_empty_input_is_empty(polygons):
    boxes = OrientedBoxes.from_polygons(polygons)
    assert len(boxes) == 0 and boxes.xywhr.shape == (0, 5)


def test_a_threshold_given_as_a_tensor_of_two_elements_names_the_threshold():
    with pytest.raises(TypeError, match=r"iou_threshold must be a number in \[0, 1\] .* shape \(2,\)"):
        nms_rotated(torch.zeros(1, 5), torch.zeros(1), torch.tensor([0.5, 0.6]))
    with pytest.raises(TypeError, match="conf must be a number"):
        decode.yolo_obb(raw_output(), conf=torch.tensor([0.2, 0.3]))
    assert nms_rotated(torch.zeros(1, 5), torch.zeros(1), torch.tensor(0.5)).tolist() == [0]


@pytest.mark.parametrize("thickness", [1e6, 257, 0, -1, True, float("nan")])
def test_draw_thickness_outside_its_bounded_range_says_the_range(thickness):
    with pytest.raises(ValueError, match=r"thickness must be a number of pixels in \(0, 256\]"):
        draw_obbs(torch.zeros(8, 8, 3, dtype=torch.uint8), torch.zeros(1, 5), thickness=thickness)


def test_draw_at_the_largest_thickness_covers_the_small_image():
    image = torch.zeros(16, 16, 3, dtype=torch.uint8)
    draw_obbs(image, torch.tensor([[8.0, 8.0, 4.0, 4.0, 0.0]]), colors=(255, 0, 0), thickness=256)
    assert (image[..., 0] == 255).all()


@pytest.mark.parametrize("colors", ["red", b"red", [["r", "g", "b"]]])
def test_draw_named_colours_are_refused_by_name(colors):
    with pytest.raises(TypeError, match="colors must be 3 or 4 ints"):
        draw_obbs(torch.zeros(8, 8, 3, dtype=torch.uint8), torch.zeros(1, 5), colors=colors)


def test_polygons_to_obb_processes_many_polygons_in_bounded_chunks_with_the_same_result():
    rng = np.random.default_rng(0)
    polys = torch.from_numpy(rng.uniform(0, 100, (3000, 16, 2)))  # 3000 x 120 pairs x 16 points: three chunks
    whole = polygons_to_obb(polys)
    parts = torch.cat([polygons_to_obb(polys[i:i + 700]) for i in range(0, 3000, 700)])
    assert whole.shape == (3000, 5) and torch.equal(whole, parts)


def test_polygons_with_too_many_points_ask_for_their_convex_hull():
    with pytest.raises(ValueError, match="at most 64 are supported .* convex hull"):
        polygons_to_obb(torch.zeros(1, 65, 2))


@pytest.mark.parametrize("classes", ["ab", 3, [0.5], [True]])
def test_yolo_obb_classes_must_be_int_class_ids(classes):
    with pytest.raises(TypeError, match="classes must be None or a sequence of int class ids"):
        decode.yolo_obb(raw_output(), classes=classes)


def test_a_bool_threshold_is_refused():
    with pytest.raises(TypeError, match="iou_threshold must be a number"):
        nms_rotated(torch.zeros(1, 5), torch.zeros(1), True)


def _boxes():
    return OrientedBoxes(torch.tensor([[10.0, 10, 4, 4, 0]]), torch.tensor([0.9]), torch.tensor([0]))


@pytest.mark.parametrize("make, match", [
    (lambda: _boxes().clip(True, 10), "width must be a positive finite number, got True"),
    (lambda: _boxes().clip(10, float("inf")), "height must be a positive finite number, got inf"),
    (lambda: __import__("obbmeta.track", fromlist=["MotionNoise"]).MotionNoise(position=True),
     "MotionNoise.position must be a positive finite number, got True"),
    (lambda: __import__("obbmeta.scenes.aerial", fromlist=["AerialScene"]).AerialScene(0, scale=True),
     r"scale must be a number in \[0.25, 4\], got True"),
    (lambda: __import__("obbmeta.scenes.document", fromlist=["DocumentScene"]).DocumentScene(0, scale=False),
     r"scale must be a number in \[0.5, 4\], got False"),
    (lambda: __import__("obbmeta.infer", fromlist=["Detector"]).Detector(lambda x: x, conf=True),
     r"conf must be a number in \[0, 1\], got True"),
])
def test_a_bool_is_not_a_number(make, match):
    """True and False are ints to Python; every numeric argument refuses them by name."""
    with pytest.raises(ValueError, match=match):
        make()


def _evaluate(**kwargs):
    from obbmeta.eval import evaluate

    return evaluate([_boxes()], [_boxes()], **kwargs)


@pytest.mark.parametrize("make, error, match", [
    (lambda: __import__("obbmeta.frames.pixels", fromlist=["x"]).from_nvbuf(True), Exception,
     "colour format True is no"),
    (lambda: _evaluate(num_classes=True), ValueError, r"num_classes must be a positive int <= 65536 .*, got True"),
    (lambda: _evaluate(iou_threshold=True), TypeError, "iou_threshold must be a number in"),
    (lambda: _evaluate(iou_threshold="0.5"), TypeError, "iou_threshold must be a number in"),
    (lambda: __import__("obbmeta.publish.messages", fromlist=["x"]).FrameCollector(remember=True), ValueError,
     "remember must be an int >= 1, got True"),
    (lambda: __import__("obbmeta.models.preprocess", fromlist=["x"]).letterbox_frames(
        torch.zeros(1, 8, 8, 3, dtype=torch.uint8), True), ValueError, "input_size must be a multiple of 32"),
    (lambda: __import__("obbmeta.infer", fromlist=["x"]).parse_input_size((True, 640.9)), ValueError,
     r"input_size must be .* got \(True, 640.9\)"),
    (lambda: Letterbox.fit((True, True), (640, 640)), TypeError, "source_size must be a .width, height. pair"),
])
def test_more_bools_are_not_numbers(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_thresholds_may_be_an_array_or_a_tensor():
    import numpy as np

    from obbmeta.eval import IOU_THRESHOLDS_50_95

    a = _evaluate(iou_threshold=np.arange(0.5, 0.96, 0.05))
    b = _evaluate(iou_threshold=IOU_THRESHOLDS_50_95)
    assert a.map == pytest.approx(b.map)
    assert _evaluate(iou_threshold=torch.tensor([0.5])).map == _evaluate(iou_threshold=0.5).map
