"""crop_rotated against OpenCV: each crop equals ``cv2.warpAffine`` with the inverse map (INTER_LINEAR,
BORDER_CONSTANT with the fill) built from OpenCV's own box corners (``cv2.boxPoints``), within one level on uint8.
The reading directions, aspect-ratio widths and padding are restated here from the documentation, not taken from
obbmeta. OpenCV 4 (whose warpAffine rounds sample positions to 1/32 pixel) gets the tolerance that rounding implies;
the development machine's OpenCV 5 samples at float positions. Parametrised by device: the CUDA cases are skipped
without a GPU and run on the GPU machine, where they also compare each CUDA crop with the host code's."""
import math

import numpy as np
import pytest
import torch
from devices import DEVICES, needs_cuda
from hypothesis import given
from hypothesis import strategies as st

from obbmeta import OrientedBoxes
from obbmeta._cuda_lib import cuda_library
from obbmeta.ops import crop_rotated

cv2 = pytest.importorskip("cv2")


def opencv_warps_at_float_positions() -> bool:
    """OpenCV 5 samples INTER_LINEAR at float positions; OpenCV 4's warpAffine rounds them to 1/32 pixel first."""
    step = np.zeros((2, 4), np.uint8)
    step[:, 2:] = 255
    shifted = cv2.warpAffine(step, np.array([[1.0, 0.0, 0.01], [0.0, 1.0, 0.0]]), (4, 2),
                             flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP)
    return int(shifted[0, 1]) == 3  # 0.01 * 255 = 2.55; rounded to 1/32 pixel the shift is 0


OPENCV_EXACT = opencv_warps_at_float_positions()


def opencv_tolerance(frame: np.ndarray, fill: float) -> float:
    """1 level, plus what OpenCV 4's 1/32-pixel positions can move a sample: up to 1/64 pixel on each axis, times
    the largest step between neighbouring values (the fill counts as a neighbour of the border)."""
    if OPENCV_EXACT:
        return 1.0
    padded = np.pad(frame.astype(np.float64), ((1, 1), (1, 1), (0, 0)), constant_values=fill)
    step = max(np.abs(np.diff(padded, axis=0)).max(initial=0), np.abs(np.diff(padded, axis=1)).max(initial=0))
    return 1.0 + step / 32.0

CROP = torch.ops.obbmeta.crop_rotated.default
F32_HALF_PI = float(np.float32(math.pi / 2))
SPECIAL_ANGLES = [0.0, F32_HALF_PI, -F32_HALF_PI, float(np.float32(math.pi)), -float(np.float32(math.pi)),
                  float(np.float32(3 * math.pi / 2)), float(np.float32(2 * math.pi))]
READINGS = ["as-is", "left-to-right", "long-side"]


# ---- the reference: the documented convention, restated with OpenCV -----------------------------------------------
def named(w, h, a, reading):
    """The (w, h, angle) name of the rectangle whose width axis the crop's x follows (crop_rotated's docstring)."""
    if reading == "long-side" and h > w:
        w, h, a = h, w, a + math.pi / 2
    if reading != "as-is":
        c, s = math.cos(a), math.sin(a)
        if c < -1e-6 or (abs(c) <= 1e-6 and s > 0):
            a += math.pi
    return w, h, a


def reference(frame, box, out_h, out_w, fill, reading="as-is", padding=0.0, keep_aspect=False):
    """(C, out_h, out_w) crop of an (H, W, C) NumPy frame by cv2.warpAffine (WARP_INVERSE_MAP) from the box's corners
    as cv2.boxPoints gives them: crop (0, 0) / (cw, 0) / (0, out_h) are the corners at local (-W/2, -H/2) /
    (+W/2, -H/2) / (-W/2, +H/2), in continuous coordinates; OpenCV indexes pixel centres, hence the half pixels."""
    cx, cy, w, h, a = (float(v) for v in box)
    w, h, a = named(w, h, a, reading)
    margin = padding * min(w, h)
    big_w, big_h = w + 2 * margin, h + 2 * margin
    cw = out_w
    if keep_aspect:
        if big_h <= 0:  # a line along the width: the widest crop; a point: one column
            cw = out_w if big_w > 0 else 1
        else:
            cw = int(min(max(math.floor(out_h * big_w / big_h + 0.5), 1), out_w))
    corners = cv2.boxPoints(((cx, cy), (big_w, big_h), math.degrees(a))).astype(np.float64)
    top_left, top_right, bottom_left = corners[1], corners[2], corners[0]
    ex, ey = (top_right - top_left) / cw, (bottom_left - top_left) / out_h
    m = np.array([[ex[0], ey[0], top_left[0] + 0.5 * (ex[0] + ey[0]) - 0.5],
                  [ex[1], ey[1], top_left[1] + 0.5 * (ex[1] + ey[1]) - 0.5]])
    channels = frame.shape[2]
    warped = cv2.warpAffine(frame, m, (cw, out_h), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                            borderMode=cv2.BORDER_CONSTANT, borderValue=(fill,) * 4).reshape(out_h, cw, channels)
    full = np.full((out_h, out_w, channels), fill, frame.dtype)
    full[:, :cw] = warped
    return full.transpose(2, 0, 1)


def assert_within(got, want, tol):
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    assert diff.max(initial=0) <= tol, f"max difference {diff.max()} at {np.unravel_index(diff.argmax(), diff.shape)}"


# ---- strategies --------------------------------------------------------------------------------------------------
@st.composite
def crop_cases(draw):
    height, width = draw(st.integers(1, 40)), draw(st.integers(1, 40))
    channels = draw(st.sampled_from([1, 3, 4]))
    big = 2.0 * max(height, width)
    side = st.one_of(st.floats(0.0, 1.5, width=32), st.floats(1.0, big, width=32))  # 1-pixel and beyond the frame
    angle = st.one_of(st.sampled_from(SPECIAL_ANGLES), st.floats(-7.0, 7.0, width=32))
    box = [draw(st.floats(-10.0, width + 10.0, width=32)), draw(st.floats(-10.0, height + 10.0, width=32)),
           draw(side), draw(side), draw(angle)]
    return dict(shape=(height, width, channels), seed=draw(st.integers(0, 2**16)), box=box,
                out_h=draw(st.integers(1, 24)), out_w=draw(st.integers(1, 24)), fill=draw(st.integers(0, 255)),
                reading=draw(st.sampled_from(READINGS)), padding=draw(st.sampled_from([0.0, 0.1, 0.5])),
                keep_aspect=draw(st.booleans()))


def frame_of(case, dtype=np.uint8):
    rng = np.random.default_rng(case["seed"])
    if dtype == np.uint8:
        return rng.integers(0, 256, case["shape"], dtype=np.uint8)
    return rng.uniform(0.0, 255.0, case["shape"]).astype(dtype)


def size_args(case):
    if case["keep_aspect"]:
        return dict(height=case["out_h"], max_width=case["out_w"])
    return dict(size=(case["out_h"], case["out_w"]))


@pytest.mark.parametrize("device", DEVICES)
@given(case=crop_cases())
def test_uint8_crops_match_opencv_warp_affine_within_one_level(device, case):
    frame = frame_of(case)
    want = reference(frame, case["box"], case["out_h"], case["out_w"], case["fill"], case["reading"], case["padding"],
                     case["keep_aspect"])
    got = crop_rotated(torch.from_numpy(frame).to(device), torch.tensor([case["box"]], device=device),
                       fill=case["fill"], reading=case["reading"], padding=case["padding"], layout="HWC",
                       **size_args(case))
    assert got.shape == (1, case["shape"][2], case["out_h"], case["out_w"]) and got.dtype == torch.uint8
    assert_within(got[0].cpu().numpy(), want, opencv_tolerance(frame, case["fill"]))
    if device != "cpu":  # and the host code, checked against OpenCV 5 within one level where it is installed
        host = crop_rotated(torch.from_numpy(frame), torch.tensor([case["box"]]), fill=case["fill"],
                            reading=case["reading"], padding=case["padding"], layout="HWC", **size_args(case))
        assert_within(got[0].cpu().numpy(), host[0].numpy(), 1)


@pytest.mark.parametrize("device", DEVICES)
@given(case=crop_cases())
def test_float32_crops_match_opencv_warp_affine(device, case):
    frame = frame_of(case, np.float32)
    want = reference(frame, case["box"], case["out_h"], case["out_w"], float(case["fill"]), case["reading"],
                     case["padding"], case["keep_aspect"])
    got = crop_rotated(torch.from_numpy(frame).permute(2, 0, 1).to(device), torch.tensor([case["box"]], device=device),
                       fill=case["fill"], reading=case["reading"], padding=case["padding"], layout="CHW",
                       **size_args(case))
    assert got.dtype == torch.float32
    assert_within(got[0].cpu().numpy(), want, 0.02 if OPENCV_EXACT else opencv_tolerance(frame, case["fill"]))
    if device != "cpu":
        host = crop_rotated(torch.from_numpy(frame).permute(2, 0, 1), torch.tensor([case["box"]]), fill=case["fill"],
                            reading=case["reading"], padding=case["padding"], layout="CHW", **size_args(case))
        assert_within(got[0].cpu().numpy(), host[0].numpy(), 1e-3)


@pytest.mark.parametrize("device", DEVICES)
def test_crops_of_a_1080p_frame_match_opencv(device):
    rng = np.random.default_rng(7)
    frame = rng.integers(0, 256, (1080, 1920, 4), dtype=np.uint8)
    boxes = np.c_[rng.uniform(-50, 1970, 60), rng.uniform(-50, 1130, 60), rng.uniform(4, 600, (60, 2)),
                  rng.uniform(-3.2, 3.2, 60)].astype(np.float32)
    got = crop_rotated(torch.from_numpy(frame).to(device), torch.from_numpy(boxes).to(device), (32, 128), fill=114,
                       channels=(0, 1, 2)).cpu().numpy()
    tolerance = opencv_tolerance(frame, 114)
    for k, box in enumerate(boxes):
        assert_within(got[k], reference(frame, box, 32, 128, 114)[:3], tolerance)


# ---- in-place reads: layouts, views, lists ------------------------------------------------------------------------
def scene(seed=0, k=9, height=37, width=53, channels=4):
    rng = np.random.default_rng(seed)
    frame = torch.from_numpy(rng.integers(0, 256, (height, width, channels), dtype=np.uint8))
    boxes = torch.from_numpy(np.c_[rng.uniform(-5, width + 5, k), rng.uniform(-5, height + 5, k),
                                   rng.uniform(1, 40, (k, 2)), rng.uniform(-4, 4, k)].astype(np.float32))
    return frame, boxes


@pytest.mark.parametrize("device", DEVICES)
def test_every_layout_and_view_of_one_frame_gives_the_same_crops(device):
    frame, boxes = scene()
    frame, boxes = frame.to(device), boxes.to(device)
    want = crop_rotated(frame.contiguous(), boxes, (12, 20))
    pitched = torch.zeros(frame.shape[0], frame.shape[1] + 11, 4, dtype=torch.uint8, device=device)
    pitched[:, 3:3 + frame.shape[1]] = frame
    views = {"chw view": frame.permute(2, 0, 1), "chw contiguous": frame.permute(2, 0, 1).contiguous(),
             "pitched rows": pitched[:, 3:3 + frame.shape[1]], "list of one": [frame],
             "bhwc batch": frame[None], "bchw batch": frame.permute(2, 0, 1)[None]}
    for name, view in views.items():
        assert torch.equal(crop_rotated(view, boxes, (12, 20)), want), name


@pytest.mark.parametrize("device", DEVICES)
def test_a_list_of_frames_of_different_sizes_crops_each_box_from_its_own_frame(device):
    frames, per_frame = [], []
    for seed, (h, w) in enumerate([(37, 53), (20, 31), (64, 16)]):
        frame, boxes = scene(seed, k=seed + 2, height=h, width=w)
        frames.append(frame.to(device))
        per_frame.append(boxes.to(device))
    got = crop_rotated(frames, per_frame, (10, 14))
    want = torch.cat([crop_rotated(f, b, (10, 14)) for f, b in zip(frames, per_frame)])
    assert torch.equal(got, want)
    table = torch.cat([torch.cat([torch.full((len(b), 1), float(i), device=device), b], 1)
                       for i, b in enumerate(per_frame)])
    shuffled = torch.randperm(len(table), generator=torch.Generator().manual_seed(0)).to(device)
    assert torch.equal(crop_rotated(frames, table[shuffled], (10, 14)), want[shuffled])
    detections = [OrientedBoxes(b, torch.ones(len(b), device=device), torch.zeros(len(b), dtype=torch.int64,
                                                                                 device=device)) for b in per_frame]
    assert torch.equal(crop_rotated(frames, detections, (10, 14)), want)


@pytest.mark.parametrize("device", DEVICES)
def test_a_batch_tensor_and_an_expanded_batch_crop_like_their_frames(device):
    frames = [scene(s)[0].to(device) for s in range(3)]
    boxes = scene(5, k=12)[1].to(device)
    table = torch.cat([torch.arange(12, device=device)[:, None].remainder(3).float(), boxes], 1)
    batch = torch.stack(frames)
    want = crop_rotated(frames, table, (9, 11))
    assert torch.equal(crop_rotated(batch, table, (9, 11)), want)
    assert torch.equal(crop_rotated(batch.permute(0, 3, 1, 2), table, (9, 11)), want)
    same = frames[0][None].expand(3, -1, -1, -1)
    assert same.stride(0) == 0
    assert torch.equal(crop_rotated(same, table, (9, 11)), crop_rotated([frames[0]] * 3, table, (9, 11)))


def test_frames_are_read_in_place_never_copied():
    # A 100 000 x 100 000 RGBA frame that is one pixel repeated (stride 0): a copy would need 40 GB.
    huge = torch.tensor([[[10, 20, 30, 40]]], dtype=torch.uint8).expand(100_000, 100_000, 4)
    got = crop_rotated(huge, torch.tensor([[50_000.0, 70_000.0, 300.0, 20.0, 0.7]]), (8, 16))
    assert got.shape == (1, 4, 8, 16) and got[0, :, 4, 8].tolist() == [10, 20, 30, 40]


@pytest.mark.parametrize("device", DEVICES)
def test_channel_indices_pick_and_reorder_channels_without_a_frame_copy(device):
    frame, boxes = scene()
    frame, boxes = frame.to(device), boxes.to(device)
    full = crop_rotated(frame, boxes, (8, 8), fill=(1, 2, 3, 4))
    assert torch.equal(crop_rotated(frame, boxes, (8, 8), channels=(0, 1, 2), fill=(1, 2, 3)), full[:, :3])
    assert torch.equal(crop_rotated(frame, boxes, (8, 8), channels=[2, 1, 0, 0], fill=(3, 2, 1, 1)),
                       full[:, [2, 1, 0, 0]])


# ---- values: dtypes and conversions ------------------------------------------------------------------------------
def identity_box(height, width):
    """A box covering the frame exactly: every output pixel samples one input pixel centre with weight 1."""
    return torch.tensor([[width / 2, height / 2, float(width), float(height), 0.0]])


@pytest.mark.parametrize("device", DEVICES)
def test_float_outputs_round_to_nearest_even_like_torch(device):
    rng = np.random.default_rng(3)
    bits = rng.integers(0, 2**32, 256 * 256, dtype=np.uint64).astype(np.uint32).view(np.float32)
    values = np.where(np.isfinite(bits), bits, 1.0).astype(np.float32)
    values[:24] = [0.0, -0.0, 65504.0, 65519.99, 65520.0, -65520.0, 6e-8, 3e-8, 2.98e-8, 1e-40, 3.4e38, -3.4e38,
                   1.0 + 2**-11, 1.0 + 3 * 2**-11, 1.0 + 2**-8, 1.0 + 3 * 2**-8, 5.96e-8, 6.1e-5, 6.09e-5,
                   2**-24, 2**-25, 3 * 2**-26, 1e-45, 255.5]
    frame = torch.from_numpy(values.reshape(1, 256, 256)).to(device)
    box = identity_box(256, 256).to(device)
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        got = crop_rotated(frame, box, (256, 256), out_dtype=dtype)[0]
        assert got.dtype == dtype and torch.equal(got, frame.to(dtype)), dtype


@pytest.mark.parametrize("device", DEVICES)
def test_half_and_bfloat16_frames_are_read_exactly(device):
    every = torch.arange(65536, dtype=torch.int32).to(torch.int16).view(256, 256)
    for dtype in (torch.float16, torch.bfloat16):
        frame = every.view(dtype)[None].to(device)
        frame = torch.where(torch.isfinite(frame), frame, torch.zeros_like(frame))  # NaN / inf spread to neighbours
        got = crop_rotated(frame, identity_box(256, 256).to(device), (256, 256), out_dtype=torch.float32)[0]
        assert torch.equal(got, frame.float()), dtype
        assert torch.equal(crop_rotated(frame, identity_box(256, 256).to(device), (256, 256))[0], frame), dtype


@pytest.mark.parametrize("device", DEVICES)
def test_uint8_results_round_half_to_even_and_saturate(device):
    frame = torch.tensor([[[100, 101, 0, 255]]], dtype=torch.float32, device=device)  # (1, 1, 4) CHW
    # Half way between pixels 0 and 1, then 2 and 3: 100.5 -> 100 (even), 127.5 -> 128 (even).
    boxes = torch.tensor([[1.0, 0.5, 2.0, 1.0, 0.0], [3.0, 0.5, 2.0, 1.0, 0.0]], device=device)
    got = crop_rotated(frame, boxes, (1, 1), out_dtype=torch.uint8, layout="CHW")
    assert got.flatten().tolist() == [100, 128]
    hot = torch.tensor([[[-20.0, 300.0]]], device=device)
    sat = crop_rotated(hot, torch.tensor([[0.5, 0.5, 1.0, 1.0, 0.0], [1.5, 0.5, 1.0, 1.0, 0.0]], device=device),
                       (1, 1), out_dtype=torch.uint8, layout="CHW", fill=0)
    assert sat.flatten().tolist() == [0, 255]


@pytest.mark.parametrize("device", DEVICES)
def test_uint8_frames_with_float_output_keep_the_blend_unrounded(device):
    frame = torch.tensor([[[0, 255]]], dtype=torch.uint8, device=device)
    got = crop_rotated(frame, torch.tensor([[1.0, 0.5, 1.0, 1.0, 0.0]], device=device), (1, 1),
                       out_dtype=torch.float32, layout="CHW")
    assert got.item() == 127.5


# ---- orientation -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
def test_row_zero_is_the_edge_from_corner_zero_to_corner_one(device):
    # A frame whose value is its row index (pixel y's centre is at y + 0.5): an upright box's crop counts rows down,
    # a box turned by pi counts up.
    rows = torch.arange(40, dtype=torch.float32)[:, None].expand(40, 60).contiguous()[None].to(device)
    box = torch.tensor([[30.0, 20.0, 20.0, 10.0, 0.0], [30.0, 20.0, 20.0, 10.0, math.pi]], device=device)
    up, down = crop_rotated(rows, box, (10, 20))[:, 0, :, 0].tolist()
    assert up == pytest.approx([15.0 + j for j in range(10)], abs=1e-3)
    assert down == pytest.approx([24.0 - j for j in range(10)], abs=1e-3)
    # A quarter turn clockwise on screen: the crop's x runs down the frame and its rows run right to left.
    cols = torch.arange(60, dtype=torch.float32)[None].expand(40, 60).contiguous()[None].to(device)
    quarter = torch.tensor([[30.0, 20.0, 20.0, 10.0, F32_HALF_PI]], device=device)
    assert crop_rotated(rows, quarter, (10, 20))[0, 0, 0].tolist() == pytest.approx([10.0 + i for i in range(20)],
                                                                                    abs=1e-3)
    assert crop_rotated(cols, quarter, (10, 20))[0, 0, :, 0].tolist() == pytest.approx([34.0 - j for j in range(10)],
                                                                                       abs=1e-3)


@pytest.mark.parametrize("device", DEVICES)
@given(cx=st.floats(10, 50), cy=st.floats(10, 30), w=st.floats(1, 40), h=st.floats(1, 40), a=st.floats(-7, 7))
def test_reading_directions_pick_one_crop_for_every_name_of_the_rectangle(device, cx, cy, w, h, a):
    frame, _ = scene(1, height=40, width=60)
    frame = frame.to(device)
    names = torch.tensor([[cx, cy, w, h, a], [cx, cy, w, h, a + math.pi], [cx, cy, h, w, a + math.pi / 2],
                          [cx, cy, h, w, a - math.pi / 2]], device=device)

    def crops(reading):
        return crop_rotated(frame, names, (9, 13), reading=reading, fill=7).int()

    as_is = crops("as-is")
    assert (as_is[1] - as_is[0].flip(-1, -2)).abs().max() <= 1  # (w, h, a + pi): the same crop turned by pi
    upright = crops("left-to-right")
    if abs(math.cos(a)) > 1e-4:  # away from vertical both names of the width axis read the same way
        assert (upright[1] - upright[0]).abs().max() <= 1
    long_side = crops("long-side")
    if abs(w - h) > 1e-3 and abs(math.cos(a if w > h else a + math.pi / 2)) > 1e-4:
        assert all((long_side[k] - long_side[0]).abs().max() <= 1 for k in range(4))


@pytest.mark.parametrize("device", DEVICES)
def test_a_vertical_line_reads_bottom_to_top_whichever_way_its_angle_points(device):
    rows = torch.arange(40, dtype=torch.float32)[:, None].expand(40, 60).contiguous()[None].to(device)
    for angle in (F32_HALF_PI, -F32_HALF_PI, 3 * math.pi / 2, -3 * math.pi / 2):
        box = torch.tensor([[30.0, 20.0, 20.0, 6.0, angle]], device=device)
        line = crop_rotated(rows, box, (6, 20), reading="left-to-right")[0, 0, 3].tolist()
        assert line == pytest.approx([29.0 - i for i in range(20)], abs=1e-3), angle
        tall = torch.tensor([[30.0, 20.0, 6.0, 20.0, angle - math.pi / 2]], device=device)
        assert crop_rotated(rows, tall, (6, 20), reading="long-side")[0, 0, 3].tolist() == pytest.approx(line, abs=1e-3)


# ---- sizes -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
def test_height_mode_keeps_the_aspect_ratio_and_fills_the_rest(device):
    frame, _ = scene(2, height=60, width=80)
    frame = frame.to(device)
    boxes = torch.tensor([[40.0, 30.0, 50.0, 10.0, 0.2], [40.0, 30.0, 12.0, 12.0, -1.0], [40.0, 30.0, 500.0, 5.0, 0.0],
                          [40.0, 30.0, 20.0, 0.0, 0.0], [40.0, 30.0, 0.0, 0.0, 0.0]], device=device)
    crops, widths = crop_rotated(frame, boxes, height=8, max_width=64, fill=9, return_widths=True)
    # round(8 * w / h) clamped to [1, 64]; a zero height gives the maximum, a zero-area box one column.
    assert widths.tolist() == [40, 8, 64, 64, 1] and crops.shape == (5, 4, 8, 64)
    for k, width in enumerate(widths.tolist()):
        assert bool((crops[k, :, :, width:] == 9).all())
        want = crop_rotated(frame, boxes[k:k + 1], (8, width), fill=9)
        assert torch.equal(crops[k, :, :, :width], want[0])
    widest, widths = crop_rotated(frame, boxes[:2], height=8, return_widths=True)
    assert widest.shape == (2, 4, 8, 40) and widths.tolist() == [40, 8]
    padded = crop_rotated(frame, boxes[:1], height=8, padding=0.5, return_widths=True)[1]
    assert padded.tolist() == [round(8 * 60 / 20)]  # a margin of half the shorter side all round: 60 x 20


@pytest.mark.parametrize("device", DEVICES)
def test_no_boxes_give_an_empty_batch(device):
    frame = torch.zeros(3, 20, 30, device=device)
    assert crop_rotated(frame, torch.zeros(0, 5, device=device), (4, 6)).shape == (0, 3, 4, 6)
    assert crop_rotated([frame, frame], [torch.zeros(0, 5)] * 2, (4, 6)).shape == (0, 3, 4, 6)
    crops, widths = crop_rotated(frame, torch.zeros(0, 6, device=device), height=4, return_widths=True)
    assert crops.shape == (0, 3, 4, 1) and widths.shape == (0,)


# ---- bad input ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "row, match",
    [
        ([0.0, 5.0, 5.0, float("nan"), 4.0, 0.0], r"boxes\[1\] = .* contains NaN or inf"),
        ([0.0, 5.0, float("inf"), 4.0, 4.0, 0.0], r"boxes\[1\] = .* contains NaN or inf"),
        ([0.0, 5.0, 5.0, -1.0, 4.0, 0.0], r"boxes\[1\] has a negative side \(w=-1, h=4\)"),
        ([2.0, 5.0, 5.0, 4.0, 4.0, 0.0], r"boxes\[1\] has batch index 2, not an integer in \[0, 2\)"),
        ([-1.0, 5.0, 5.0, 4.0, 4.0, 0.0], r"boxes\[1\] has batch index -1"),
        ([0.5, 5.0, 5.0, 4.0, 4.0, 0.0], r"boxes\[1\] has batch index 0.5"),
    ],
)
@pytest.mark.parametrize("device", DEVICES)
def test_bad_box_rows_are_named(device, row, match):
    frames = torch.zeros(2, 3, 10, 10, device=device)
    table = torch.tensor([[1.0, 5.0, 5.0, 4.0, 4.0, 0.3], row], device=device)
    with pytest.raises(ValueError, match=match):
        crop_rotated(frames, table, (4, 4))
    with pytest.raises(ValueError, match=match):
        crop_rotated(frames, table, height=4)
    with pytest.raises(ValueError, match=match):
        CROP([frames], table, 4, 4, False, 0.0, [0.0] * 3, [0, 1, 2], False, "as-is", torch.float32, True)


@pytest.mark.parametrize("device", DEVICES)
def test_bad_boxes_in_a_per_frame_list_are_named_by_frame_and_index(device):
    frames = [torch.zeros(10, 10, 3, device=device)] * 3
    boxes = [torch.ones(2, 5, device=device), torch.zeros(0, 5, device=device), torch.ones(3, 5, device=device)]
    boxes[2][1, 4] = float("nan")
    with pytest.raises(ValueError, match=r"boxes\[2\]\[1\] = .* contains NaN"):
        crop_rotated(frames, boxes, (4, 4))


@pytest.mark.parametrize("device", DEVICES)
def test_unchecked_bad_rows_give_fill_and_width_zero(device):
    frames = torch.full((2, 1, 10, 10), 50.0, device=device)
    table = torch.tensor([[0.0, 5.0, 5.0, 4.0, 4.0, 0.0], [0.0, 5.0, 5.0, float("nan"), 4.0, 0.0],
                          [7.0, 5.0, 5.0, 4.0, 4.0, 0.0], [0.0, 5.0, 5.0, -2.0, 4.0, 0.0]], device=device)
    crops, widths = crop_rotated(frames, table, (3, 3), fill=-1, check_boxes=False, return_widths=True)
    assert widths.tolist() == [3, 0, 0, 0]
    assert bool((crops[0] == 50).all()) and bool((crops[1:] == -1).all())


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda f, b: crop_rotated(f[0, 0], b, (4, 4)), ValueError, r"got a tensor of shape \(10, 10\)"),
        (lambda f, b: crop_rotated("frames", b, (4, 4)), TypeError, "frames must be a tensor or a non-empty list"),
        (lambda f, b: crop_rotated([], b, (4, 4)), TypeError, "frames must be a tensor or a non-empty list"),
        (lambda f, b: crop_rotated([f[0], f], b, (4, 4)), ValueError, "must hold .* tensors, got shapes"),
        (lambda f, b: crop_rotated(f.int(), b, (4, 4)), TypeError, "frames must be uint8, float16, bfloat16 or"),
        (lambda f, b: crop_rotated(torch.zeros(2, 3, 4, 4), b, (4, 4)), ValueError, "cannot tell whether frames"),
        (lambda f, b: crop_rotated(f, b, (4, 4), layout="NCHW"), ValueError, "layout must be 'CHW', 'HWC' or None"),
        (lambda f, b: crop_rotated([f[0], f[1, :2]], b, (4, 4)), ValueError, r"frames\[1\] has 2 channels"),
        (lambda f, b: crop_rotated([f[0], f[1].double()], b, (4, 4)), ValueError, r"frames\[1\] is torch.float64"),
        (lambda f, b: crop_rotated(f, b[:, :4], (4, 4)), ValueError, "boxes must be a list of OrientedBoxes"),
        (lambda f, b: crop_rotated(f, b.long(), (4, 4)), TypeError, "boxes must be a floating-point tensor"),
        (lambda f, b: crop_rotated(f, b[:, 1:], (4, 4)), ValueError, r"boxes of shape \(N, 5\) need a single frame"),
        (lambda f, b: crop_rotated(f, [b[:, 1:]], (4, 4)), ValueError, r"one entry per frame \(2\), got 1"),
        (lambda f, b: crop_rotated(f, [b[:, 1:], b], (4, 4)), ValueError, r"boxes\[1\] must be OrientedBoxes or an"),
        (lambda f, b: crop_rotated(f, b.to("meta"), (4, 4)), ValueError, "boxes is on meta but frames are on cpu"),
        (lambda f, b: crop_rotated(f, b), ValueError, "give either size="),
        (lambda f, b: crop_rotated(f, b, (4, 4), height=4), ValueError, "give either size="),
        (lambda f, b: crop_rotated(f, b, (4, 4), max_width=9), ValueError, "max_width goes with height="),
        (lambda f, b: crop_rotated(f, b, (0, 4)), ValueError, r"size must be \(h, w\) or an int, with sides in 1\.\.8"),
        (lambda f, b: crop_rotated(f, b, (4, 4, 4)), ValueError, r"size must be \(h, w\) or an int"),
        (lambda f, b: crop_rotated(f, b, height=4, max_width=10**5), ValueError, "max_width must be an int in"),
        (lambda f, b: crop_rotated(f, b, (4, 4), padding=-0.1), ValueError, "padding must be a number >= 0"),
        (lambda f, b: crop_rotated(f, b, (4, 4), padding=float("nan")), ValueError, "padding must be a finite"),
        (lambda f, b: crop_rotated(f, b, (4, 4), channels=(0, 3)), ValueError, r"channels must be indices of the"),
        (lambda f, b: crop_rotated(f, b, (4, 4), channels=[0] * 17), ValueError, "channels must be a list of 1 to 16"),
        (lambda f, b: crop_rotated(f, b, (4, 4), channels="rgb"), TypeError, "channels must be a sequence"),
        (lambda f, b: crop_rotated(f, b, (4, 4), channels=[True]), TypeError, r"channels\[0\] must be an int channel"),
        (lambda f, b: crop_rotated(f, b, (4, 4), channels=[0, False]), TypeError, r"channels\[1\] must be an int"),
        (lambda f, b: crop_rotated(f, b, (4, 4), channels=[1.0]), TypeError, r"channels\[0\] must be an .*got 1\.0"),
        (lambda f, b: crop_rotated(f, b, (4, 4), channels=[np.float32(0)]), TypeError, r"channels\[0\] must be an int"),
        (lambda f, b: crop_rotated(f, b, (4, 4), channels=[np.bool_(True)]), TypeError, r"channels\[0\] must be an"),
        (lambda f, b: crop_rotated(f, b, (4, 4), channels=["0"]), TypeError, r"channels\[0\] must be an int"),
        (lambda f, b: crop_rotated(f, b, (4, 4), fill=(1, 2)), ValueError, r"fill must be a number or 3 numbers"),
        (lambda f, b: crop_rotated(f.byte(), b, (4, 4), fill=300), ValueError, r"fill must be a number in \[0, 255\]"),
        (lambda f, b: crop_rotated(f, b, (4, 4), reading="rtl"), ValueError, "reading must be one of"),
        (lambda f, b: crop_rotated(f, b, (4, 4), out_dtype=torch.int32), TypeError, "out_dtype must be torch.uint8"),
        (lambda f, b: crop_rotated(f, b, (4, 4), check_boxes=1), TypeError, "check_boxes must be True or False"),
    ],
)
def test_bad_arguments_are_refused_by_name(call, error, match):
    frames = torch.zeros(2, 3, 10, 10)
    table = torch.tensor([[0.0, 5.0, 5.0, 4.0, 4.0, 0.3], [1.0, 5.0, 5.0, 4.0, 4.0, 0.3]])
    with pytest.raises(error, match=match):
        call(frames, table)


@needs_cuda
def test_frames_and_boxes_on_different_devices_are_refused_or_uploaded():
    frame, boxes = scene()
    want = crop_rotated(frame, boxes, (8, 8))
    assert torch.equal(crop_rotated(frame.cuda(), boxes, (8, 8)).cpu(), want)  # CPU boxes: checked here, uploaded
    with pytest.raises(ValueError, match="boxes is on cuda:0 but frames are on cpu"):
        crop_rotated(frame, boxes.cuda(), (8, 8))
    with pytest.raises(TypeError, match="boxes must be a floating-point tensor"):
        crop_rotated(frame.cuda(), torch.zeros(2, 6, dtype=torch.int64), (8, 8))
    bad = boxes.clone()
    bad[3, 2] = float("nan")
    with pytest.raises(ValueError, match=r"boxes\[3\] = .* contains NaN"):
        crop_rotated(frame.cuda(), bad, (8, 8))


@needs_cuda
def test_cuda_crops_equal_the_cpu_crops_within_one_level():
    frames = [scene(s, k=40, height=90, width=120)[0] for s in range(3)]
    table = torch.cat([torch.arange(40)[:, None].remainder(3).float(), scene(9, k=40, height=90, width=120)[1]], 1)
    for dtype in (torch.uint8, torch.float32):
        cpu = crop_rotated(frames, table, (16, 24), out_dtype=dtype, reading="long-side")
        gpu = crop_rotated([f.cuda() for f in frames], table.cuda(), (16, 24), out_dtype=dtype, reading="long-side")
        # float: the device contracts the bilinear blend into FMAs (0.003 levels seen on the H200)
        assert (gpu.cpu().float() - cpu.float()).abs().max() <= (1 if dtype == torch.uint8 else 1e-2)


@needs_cuda
def test_more_frames_than_one_launch_holds_are_all_cropped():
    frames = [torch.full((8, 8, 4), i, dtype=torch.uint8, device="cuda") for i in range(150)]
    table = torch.tensor([[float(i), 4.0, 4.0, 4.0, 4.0, 0.0] for i in range(149, -1, -1)], device="cuda")
    crops = crop_rotated(frames, table, (2, 2))
    assert crops[:, 0, 0, 0].tolist() == list(range(149, -1, -1))


# ---- the operator contract ---------------------------------------------------------------------------------------
def op_args(device, dtype=torch.uint8, layout="HWC", keep_aspect=False, check=True):
    frame, boxes = scene(4, k=6)
    frame = frame.to(dtype).to(device)
    frames = [frame] if layout == "HWC" else [frame.permute(2, 0, 1)]
    table = torch.cat([torch.zeros(6, 1), boxes], 1).to(device)
    return (frames, table, 5, 7, keep_aspect, 0.1, [3.0, 2.0, 1.0], [2, 1, 0], layout == "HWC", "long-side",
            torch.float32, check)


@pytest.mark.parametrize("layout", ["HWC", "CHW"])
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float16, torch.float32])
@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_crop_rotated(device, dtype, layout):
    torch.library.opcheck(CROP, op_args(device, dtype, layout))
    torch.library.opcheck(CROP, op_args(device, dtype, layout, keep_aspect=True, check=False))


@pytest.mark.parametrize("device", DEVICES)
def test_crop_rotated_traces_with_fullgraph(device):
    torch._dynamo.reset()
    frame, boxes = scene(6)
    frame, boxes = frame.to(device), boxes.to(device)

    def crops(frame, boxes):
        return crop_rotated(frame, boxes, (8, 12), channels=(0, 1, 2), out_dtype=torch.float32) / 255.0

    compiled = torch.compile(crops, fullgraph=True, backend="aot_eager")
    assert torch.equal(compiled(frame, boxes), crops(frame, boxes))


def test_the_kernels_are_the_ones_tested():
    # Without the CUDA kernels built the CUDA cases above would test the host code on a copy.
    if torch.cuda.is_available():
        assert cuda_library() is not None, "the CUDA kernels were not built: `pip install -e .` with nvcc"


# ---- the CUDA kernel's logic, run on the CPU -----------------------------------------------------------------------
# Stand-ins for the CUDA built-ins the crop kernel uses. Each block's threads run one after another: the kernel's
# threads meet at __syncthreads only around one set-up, and with a grid that covers the work each thread makes one
# pass of the block loop, so thread 0's set-up is done before the others read it, as on the GPU.
EMULATION = r"""
#include <stdint.h>
#include <string.h>
#include <math.h>
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(x)
#define __grid_constant__
#define __shared__ static
struct emu_dim { unsigned x; };
static emu_dim threadIdx, blockIdx, gridDim;
struct uchar4 { unsigned char x, y, z, w; };
static inline uchar4 make_uchar4(unsigned char a, unsigned char b, unsigned char c, unsigned char d)
{ uchar4 q = {a, b, c, d}; return q; }
template <class T> static inline T __ldg(const T *p) { return *p; }
static inline unsigned long long atomicMin(unsigned long long *p, unsigned long long v)
{ unsigned long long o = *p; if (v < o) *p = v; return o; }
static inline void __syncthreads() {}
typedef void *cudaStream_t;
enum { cudaErrorInvalidValue = 1 };
static inline int cudaGetLastError() { return 0; }
static long emu_launches = 0;
template <class F> static void emu_launch(unsigned grid, unsigned block, F body)
{
    ++emu_launches;
    gridDim.x = grid;
    for (unsigned b = 0; b < grid; ++b)
        for (unsigned t = 0; t < block; ++t) { blockIdx.x = b; threadIdx.x = t; body(); }
}
#define OBB_EXPORT extern "C" __attribute__((visibility("default")))
OBB_EXPORT long emu_launch_count(void) { return emu_launches; }
"""


@pytest.fixture(scope="module")
def emulated_kernel(tmp_path_factory):
    import ctypes
    import re
    import shutil
    import subprocess
    from pathlib import Path

    compiler = shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        pytest.skip("needs a C++ compiler")
    kernels = Path(__file__).resolve().parents[2] / "kernels"
    source = (kernels / "obbmeta_cuda.cu").read_text()
    crop = source[source.index("// ---- rotated crops"):]
    crop, launches = re.subn(r"(crop_kernel<[^>]*>)<<<([^,]+),\s*([^,]+),\s*0,\s*s>>>\(([^;]*)\);",
                             r"emu_launch(\2, \3, [&]{ \1(\4); });", crop)
    assert launches == 2 and "<<<" not in crop, "the crop kernel's launches changed: update the emulation"
    folder = tmp_path_factory.mktemp("crop_kernel")
    (folder / "emu.cpp").write_text(EMULATION + crop)
    subprocess.run([compiler, "-O1", "-std=c++17", "-shared", "-fPIC", f"-I{kernels}", str(folder / "emu.cpp"), "-o",
                    str(folder / "emu.so")], check=True, capture_output=True)
    lib = ctypes.CDLL(str(folder / "emu.so"))
    p = ctypes.c_void_p
    lib.obbmeta_cuda_crop.argtypes = [p, ctypes.c_int32, ctypes.c_int64, p, ctypes.c_int64, p, p, p, p, p]
    lib.obbmeta_cuda_crop.restype = ctypes.c_int
    lib.emu_launch_count.restype = ctypes.c_long
    return lib


def test_the_cuda_kernel_run_on_the_cpu_crops_bit_for_bit_like_the_host_code(emulated_kernel):
    """Indexing, chunking, the 4-lane path, batch strides, launches of 64 frames, fills, widths and the status word
    of the CUDA kernel, compiled for the CPU (host arithmetic): every case equals the host library exactly."""
    import ctypes
    import random

    from obbmeta.ops import _core

    rng = random.Random(0)
    ptr = lambda t: ctypes.c_void_p(t.data_ptr())  # noqa: E731
    dtypes = [torch.uint8, torch.float16, torch.bfloat16, torch.float32]
    launches = emulated_kernel.emu_launch_count()
    expected_launches = 0
    for _ in range(300):
        n, c = rng.choice([1, 2, 5, 64, 65, 130]), rng.choice([1, 3, 4])
        din, dout, channels_last = rng.choice(dtypes), rng.choice(dtypes), rng.random() < 0.5
        batch = rng.choice([None, None, "stack", "expand"]) if n <= 65 else None
        size = (rng.randint(1, 40), rng.randint(1, 40))
        frames = []
        for _ in range(n):
            h, w = size if batch else (rng.randint(1, 40), rng.randint(1, 40))
            store = torch.zeros(h, w + rng.randint(0, 5), c, dtype=din)  # pitched rows
            store[:, :w] = (torch.rand(h, w, c) * 255).round().to(din)
            frames.append(store[:, :w] if channels_last else store[:, :w].permute(2, 0, 1))
        if batch == "stack":
            frames = [torch.stack(frames)]
        elif batch == "expand":
            frames = [frames[0][None].expand(n, *frames[0].shape)]
        k = rng.choice([0, 1, 9, 40])
        table = torch.stack([torch.randint(0, n, (k,)).float(), torch.rand(k) * 50 - 5, torch.rand(k) * 50 - 5,
                             torch.rand(k) * 60, torch.rand(k) * 60, torch.rand(k) * 14 - 7], 1).contiguous()
        if k and rng.random() < 0.3:  # one invalid row
            table[rng.randrange(k), rng.choice([0, 1, 3, 5])] = rng.choice([float("nan"), -1.0, float(n), 0.5])
        channels = [rng.randrange(c) for _ in range(rng.randint(1, 5))]
        params = _core.crop_params(frames, rng.randint(1, 20), rng.randint(1, 20), rng.random() < 0.4,
                                   rng.choice([0.0, 0.1, 0.5]), [float(rng.randint(0, 255)) for _ in channels],
                                   channels, rng.choice(list(_core.CROP_READINGS)), dout)
        descriptors, n_desc, batch_stride = _core.crop_descriptors(frames, channels_last)
        shape = (k, len(channels), params.out_h, params.out_w)
        host, host_widths = torch.empty(shape, dtype=dout), torch.empty(k, dtype=torch.int64)
        kernel, kernel_widths = torch.full(shape, 77, dtype=dout), torch.full((k,), -5, dtype=torch.int64)
        status = torch.full((1,), -1, dtype=torch.int64)
        bad = _core.crop_library().obbmeta_crop(descriptors, batch_stride, ptr(table), k, ctypes.byref(params),
                                                ptr(host), ptr(host_widths)) if k else -1
        assert emulated_kernel.obbmeta_cuda_crop(descriptors, n_desc, batch_stride, ptr(table), k,
                                                 ctypes.byref(params), ptr(kernel), ptr(kernel_widths), ptr(status),
                                                 None) == 0
        bits = torch.int32 if dout == torch.float32 else (torch.uint8 if dout == torch.uint8 else torch.int16)
        assert torch.equal(kernel.view(bits), host.view(bits)) and torch.equal(kernel_widths, host_widths)
        assert int(status) == bad
        expected_launches += 0 if k == 0 else (1 if batch_stride else -(-n_desc // 64))
    assert emulated_kernel.emu_launch_count() - launches == expected_launches
