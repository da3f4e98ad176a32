"""obbmeta.frames.preprocess: each framework's preparation against that framework's own steps, run with OpenCV here (the
algorithms restated from Ultralytics' LetterBox and predictor, mmcv's imrescale / mmdet's data preprocessor and
nvinfer's get_converted_buffer; tests/test_ultralytics_oracle.py runs Ultralytics itself where it is installed)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from devices import DEVICES
from hypothesis import given, settings
from hypothesis import strategies as st
from shapely.affinity import affine_transform
from shapely.geometry import Polygon

import obbmeta.frames.preprocess as pre
from obbmeta import Letterbox
from obbmeta.frames.pixels import to_rgb

cv2 = pytest.importorskip("cv2")
SIZES = [(1280, 720), (720, 1280), (1366, 768), (767, 1366), (320, 200), (1920, 1080), (641, 1)]


def ultralytics_reference(img: np.ndarray, new: int, auto: bool, stride: int = 32) -> np.ndarray:
    """Ultralytics 8.4's LetterBox(new_shape, auto, stride) on an RGB uint8 image, then /255 (CHW float)."""
    h, w = img.shape[:2]
    r = min(new / h, new / w)
    nw, nh = max(round(w * r), 1), max(round(h * r), 1)
    dw, dh = new - nw, new - nh
    if auto:
        dw, dh = dw % stride, dh % stride
    dw, dh = dw / 2, dh / 2
    if (w, h) != (nw, nh):
        img = cv2.resize(img, (nw, nh), interpolation=cv2.INTER_LINEAR)
    top, bottom, left, right = round(dh - 0.1), round(dh + 0.1), round(dw - 0.1), round(dw + 0.1)
    img = cv2.copyMakeBorder(img, top, bottom, left, right, cv2.BORDER_CONSTANT, value=(114, 114, 114))
    return img.transpose(2, 0, 1).astype(np.float32) / 255


def mmdet_reference(img: np.ndarray, scale=(1024, 1024), divisor=32) -> np.ndarray:
    """mmcv imrescale(keep_ratio) + cv2 bilinear, mmdet's normalise (RGB) and bottom-right pad to the divisor."""
    h, w = img.shape[:2]
    s = min(max(scale) / max(h, w), min(scale) / min(h, w))
    nw, nh = int(w * s + 0.5), int(h * s + 0.5)
    img = cv2.resize(img, (nw, nh), interpolation=cv2.INTER_LINEAR).astype(np.float32)
    img = (img - np.array(pre.MMDET_MEAN, np.float32)) / np.array(pre.MMDET_STD, np.float32)
    ph, pw = -(-nh // divisor) * divisor, -(-nw // divisor) * divisor
    out = np.zeros((ph, pw, 3), np.float32)
    out[:nh, :nw] = img
    return out.transpose(2, 0, 1)


def frame(w, h, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


def prepare(name_or_pre, img, input_size, device="cpu"):
    p = pre.preset(name_or_pre) if isinstance(name_or_pre, str) else name_or_pre
    x, lbs = p.apply([to_rgb(torch.from_numpy(img).to(device), "RGB")], input_size)
    return x[0].cpu().numpy(), lbs[0]


@pytest.mark.parametrize("w,h", SIZES)
@pytest.mark.parametrize("name,auto", [("ultralytics", False), ("ultralytics-rect", True)])
def test_ultralytics_input_equals_its_letterbox_byte_for_byte_on_the_cpu(w, h, name, auto):
    img = frame(w, h)
    got, _ = prepare(name, img, (640, 640))
    want = ultralytics_reference(img, 640, auto)
    assert got.shape == want.shape and np.array_equal(got, want)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("direct", [False, True])
def test_a_batch_of_mixed_sizes_gives_each_frame_what_it_gets_alone(monkeypatch, device, direct):
    # frames of sizes A, B, A, A, B share a canvas (the largest letterbox); each size is prepared as one group, so a
    # group's rows are not consecutive in the batch: each frame must land in its own row, as when prepared alone
    if direct:  # the in-place resampling path (CUDA frames, a CPU without OpenCV)
        monkeypatch.setattr(pre, "_has_cv2", lambda: False)
    sizes = [(320, 200), (200, 320), (320, 200), (320, 200), (200, 320)]
    imgs = [np.concatenate([frame(w, h, seed=k), np.full((h, w, 1), 255, np.uint8)], 2) for k, (w, h) in
            enumerate(sizes)]
    views = [torch.from_numpy(im).to(device) for im in imgs]
    p = pre.preset("ultralytics")
    x, lbs = p.apply_frames(views, ["RGBA"] * 5, (160, 160))
    for k, v in enumerate(views):
        alone, (lb,) = p.apply_frames([v], ["RGBA"], (160, 160))
        assert lbs[k] == lb and torch.equal(x[k], alone[0]), k


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("w,h", SIZES[:4])
def test_ultralytics_input_without_opencv_is_within_one_level(monkeypatch, device, w, h):
    monkeypatch.setattr(pre, "_cv2_resize", lambda x, size: None)  # the path CUDA tensors always take
    img = frame(w, h, seed=1)
    got, _ = prepare("ultralytics", img, (640, 640), device)
    want = ultralytics_reference(img, 640, False)
    assert np.abs(got - want).max() * 255 <= 1.0 + 1e-3


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("w,h,name", [(1280, 720, "ultralytics"), (720, 1280, "ultralytics"),
                                      (1366, 768, "ultralytics"), (1920, 1080, "ultralytics-rect")])
def test_packed_frames_are_resampled_in_place_within_one_level(monkeypatch, device, w, h, name):
    """The in-place path (what CUDA frames and a CPU without OpenCV take): RGBA frames resampled by the crop kernel
    straight from their uint8 pixels, no whole-frame RGB copy, within one level of Ultralytics' LetterBox."""
    import obbmeta.frames.pixels

    monkeypatch.setattr(pre, "_has_cv2", lambda: False)
    monkeypatch.setattr(obbmeta.frames.pixels, "to_rgb", lambda *a: pytest.fail("a whole-frame RGB copy was made"))
    img = frame(w, h, seed=6)
    rgba = np.concatenate([img, np.full((h, w, 1), 255, np.uint8)], 2)
    views = [torch.from_numpy(rgba).to(device)] * 2
    x, lbs = pre.preset(name).apply_frames(views, ["RGBA", "RGBA"], (640, 640))
    want = ultralytics_reference(img, 640, name.endswith("rect"))
    assert x.shape[1:] == want.shape and lbs[0] == lbs[1]
    assert np.abs(x[0].cpu().numpy() - want).max() * 255 <= 1.0 + 1e-3
    assert torch.equal(x[0], x[1])


@pytest.mark.parametrize("w,h", [(1280, 720), (720, 1280), (1366, 768)])
def test_mmrotate_input_equals_mmdets_pipeline(w, h):
    img = frame(w, h, seed=2)
    got, lb = prepare("mmrotate", img, (1024, 1024))
    want = mmdet_reference(img)
    assert got.shape == want.shape and np.abs(got - want).max() <= 1e-5
    nw, nh = int(w * min(1024 / max(w, h), 1024 / min(w, h)) + 0.5), int(h * min(1024 / max(w, h), 1024 / min(w, h))
                                                                          + 0.5)
    assert (lb.pad_x, lb.pad_y) == (0, 0) and lb.scale == nw / w and (lb.scale_y or lb.scale) == nh / h


@pytest.mark.parametrize("keep,symmetric", [(False, False), (True, False), (True, True)])
def test_nvinfer_geometry(keep, symmetric):
    """nvinfer: stretch, or keep the ratio with the destination size truncated and the padding right / bottom or
    split with the left / top part rounded down; black padding; net-scale-factor 1 and offsets 0."""
    p = pre.from_nvinfer_keys(pre.preset("nvinfer"), maintain_aspect_ratio=keep, symmetric_padding=symmetric)
    img = frame(1366, 768, seed=3)
    got, lb = prepare(p, img, (640, 480))
    if not keep:
        nw, nh = 640, 480
    else:
        hdest = 640 * 768 / 1366
        nw, nh = (640, int(hdest)) if hdest <= 480 else (int(480 * 1366 / 768), 480)
    px, py = ((640 - nw) // 2, (480 - nh) // 2) if symmetric else (0, 0)
    assert (lb.pad_x, lb.pad_y) == (px, py) and lb.scale == nw / 1366 and (lb.scale_y or lb.scale) == nh / 768
    want = cv2.resize(img, (nw, nh), interpolation=cv2.INTER_NEAREST).transpose(2, 0, 1)
    assert np.array_equal(got[:, py:py + nh, px:px + nw], want.astype(np.float32))
    mask = np.ones((480, 640), bool)
    mask[py:py + nh, px:px + nw] = False
    assert np.all(got[:, mask] == 0)


def test_channel_orders_and_normalisation():
    img = frame(64, 48, seed=4)
    rgb, _ = prepare(pre.Preprocess(scale=1.0), img, (64, 48))
    bgr, _ = prepare(pre.Preprocess(scale=1.0, channels="BGR"), img, (64, 48))
    assert np.array_equal(rgb, img.transpose(2, 0, 1).astype(np.float32)) and np.array_equal(bgr, rgb[::-1])
    gray, _ = prepare(pre.Preprocess(scale=1.0, channels="GRAY"), img, (64, 48))
    assert gray.shape == (1, 48, 64)
    assert np.abs(gray[0] - cv2.cvtColor(img, cv2.COLOR_RGB2GRAY)).max() <= 1
    p = pre.from_nvinfer_keys(pre.preset("nvinfer"), net_scale_factor=0.5, offsets=[10, 20, 30])
    got, _ = prepare(p, img, (64, 48))
    assert np.allclose(got, (img.transpose(2, 0, 1) - np.array([10, 20, 30])[:, None, None]) * 0.5)


def test_a_side_that_rounds_to_zero_keeps_one_pixel():
    p = pre.preset("ultralytics")
    lb, size = p.plan((4096, 1), (64, 64))
    assert size == (64, 1) and lb.scale == 64 / 4096 and lb.scale_y == 1.0
    x, (lb2,) = p.apply([torch.rand(3, 1, 4096)], (64, 64))
    assert x.shape == (1, 3, 64, 64) and lb2 == lb


@pytest.mark.parametrize("field,value,error", [
    ("resize", "lanczos", ValueError), ("channels", "RGBA", ValueError), ("keep_ratio", 1, TypeError),
    ("stride", -1, ValueError), ("stride", True, ValueError), ("pad_value", 300, ValueError),
    ("scale", (1.0, 2.0), ValueError), ("scale", 0.0, ValueError), ("mean", float("nan"), ValueError),
])
def test_bad_settings_name_the_field(field, value, error):
    with pytest.raises(error, match=f"Preprocess.{field}"):
        pre.Preprocess(**{field: value})


def test_presets_and_nvinfer_keys():
    with pytest.raises(ValueError, match="preprocess must be one of"):
        pre.preset("yolo")
    assert pre.from_nvinfer_keys(pre.preset("nvinfer"), scaling_filter=4).resize == "bicubic"  # no Lanczos in torch
    assert pre.from_nvinfer_keys(pre.preset("nvinfer"), scaling_filter=5).resize == "nearest"  # VIC only: GPU default
    with pytest.raises(ValueError, match="scaling-filter must be 0..6"):
        pre.from_nvinfer_keys(pre.preset("nvinfer"), scaling_filter=7)
    gray = pre.from_nvinfer_keys(pre.preset("mmrotate"), model_color_format="GRAY")
    assert gray.num_channels == 1 and len(gray.mean) == 1


# ---------------------------------------------------------------- the inverse

def rect(cx, cy, w, h, a):
    c, s = math.cos(a), math.sin(a)
    return Polygon([(cx + c * dx * w / 2 - s * dy * h / 2, cy + s * dx * w / 2 + c * dy * h / 2)
                    for dx, dy in ((-1, -1), (1, -1), (1, 1), (-1, 1))])


@settings(max_examples=300, deadline=None)
@given(sx=st.floats(0.05, 20), ratio=st.floats(0.25, 4), px=st.floats(-50, 50), py=st.floats(-50, 50),
       box=st.tuples(st.floats(0, 640), st.floats(0, 640), st.floats(0.5, 300), st.floats(0.5, 300),
                     st.floats(-4, 4)))
def test_the_inverse_maps_centres_width_edges_and_areas_exactly(sx, ratio, px, py, box):
    """to_source against shapely: the source-frame image of the input-space box (an exact affine map of its
    polygon) has the returned centre, width edge and area."""
    sy = sx * ratio
    lb = Letterbox(sx, px, py, scale_y=sy)
    got = lb.to_source(torch.tensor([box], dtype=torch.float64))[0].tolist()
    image = affine_transform(rect(*box), [1 / sx, 0, 0, 1 / sy, -px / sx, -py / sy])
    assert math.isclose(got[0], image.centroid.x, rel_tol=1e-9, abs_tol=1e-7)
    assert math.isclose(got[1], image.centroid.y, rel_tol=1e-9, abs_tol=1e-7)
    assert math.isclose(got[2] * got[3], image.area, rel_tol=1e-9)
    (x0, y0), (x1, y1) = list(image.exterior.coords)[:2]  # corner 0 -> corner 1: the width edge
    assert math.isclose(got[2], math.hypot(x1 - x0, y1 - y0), rel_tol=1e-9)
    assert abs(math.remainder(got[4] - math.atan2(y1 - y0, x1 - x0), 2 * math.pi)) < 1e-9
    if ratio == 1:
        assert lb.is_uniform and got[4] == box[4]


def test_fit_uses_the_sizes_the_resize_produced():
    lb = Letterbox.fit((1366, 768), (640, 640))
    assert (lb.scale, lb.scale_y) == (640 / 1366, 360 / 768) and (lb.pad_x, lb.pad_y) == (0, 140)
    assert Letterbox.fit((1920, 1080), (640, 640)) == Letterbox(1 / 3, 0, 140)
    assert Letterbox(0.5, 1, 2, scale_y=0.5) == Letterbox(0.5, 1, 2) and Letterbox(0.5, scale_y=0.5).is_uniform


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("channels", ["RGB", "BGR", "GRAY"])
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_levels_normalised_into_the_canvas_equal_normalise_then_a_copy_bit_for_bit(device, channels, dtype):
    """apply_frames writes the normalised levels straight into the canvas rows (subtract into the canvas, divide in
    place): the same float32 values as normalise() of the levels as floats copied into those rows."""
    p = pre.Preprocess(channels=channels, mean=(0.0,) if channels == "GRAY" else (123.675, 116.28, 103.53),
                       scale=(1 / 57.0,) if channels == "GRAY" else (1 / 58.395, 1 / 57.12, 1 / 57.375))
    gen = torch.Generator().manual_seed(4)
    levels = torch.randint(0, 256, (4, 3, 30, 50), generator=gen, dtype=torch.uint8)
    levels = (levels if dtype == torch.uint8 else levels.float() + torch.rand(levels.shape, generator=gen)).to(device)
    c = p.num_channels
    got, want = (torch.full((6, c, 40, 64), 7.0, device=device) for _ in range(2))
    idx = [0, 2, 3, 5]  # two runs and two single rows
    p._normalise_into(got, idx, levels, 9, 4)
    pre._place(want, idx, p.normalise(levels.float()), 9, 4)
    assert torch.equal(got, want)
