import math

import numpy as np
import pytest
import reference
import torch
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image, ImageDraw
from shapely.geometry import Point

from obbmeta import OrientedBoxes
from obbmeta.osd import PALETTE_RGB as PALETTE
from obbmeta.osd import draw_obbs, draw_obbs_batch

W, H = 64, 48


def painted(img: torch.Tensor) -> np.ndarray:
    return img.numpy().any(axis=2)


def shapely_outline_mask(box, thickness, width=W, height=H, slack=1e-6):
    """Pixels whose centre is within thickness/2 of the rectangle's boundary (shapely distance), and the
    pixels too close to that limit to call (excluded from comparisons)."""
    ring = reference.rect(*box).exterior
    r = thickness / 2
    inside = np.zeros((height, width), bool)
    unsure = np.zeros((height, width), bool)
    x0, y0, x1, y1 = ring.bounds
    for y in range(max(0, int(y0 - r - 1)), min(height, int(y1 + r + 2))):
        for x in range(max(0, int(x0 - r - 1)), min(width, int(x1 + r + 2))):
            d = ring.distance(Point(x + 0.5, y + 0.5))
            inside[y, x] = d <= r
            unsure[y, x] = abs(d - r) <= slack * (1 + r)
    return inside, unsure


boxes = st.tuples(
    st.floats(-20, 84, width=32), st.floats(-20, 68, width=32), st.floats(0.5, 70, width=32),
    st.floats(0.5, 70, width=32), st.floats(-3.25, 3.25, width=32),
)


@given(boxes, st.sampled_from([1, 2, 3, 5.5]))
def test_painted_pixels_are_exactly_those_within_half_thickness_of_the_outline(box, thickness):
    img = torch.zeros(H, W, 3, dtype=torch.uint8)
    draw_obbs(img, torch.tensor([box]), thickness=thickness)
    expected, unsure = shapely_outline_mask(box, thickness)
    got = painted(img)
    assert np.array_equal(got[~unsure], expected[~unsure])


@pytest.mark.parametrize("seed", range(5))
def test_agrees_with_pillow_polygon_outline_within_one_pixel(seed):
    rng = np.random.default_rng(seed)
    # Inside the frame: Pillow clips wide lines at the image border differently (the shapely test covers that).
    b = np.c_[rng.uniform(55, 145, 8), rng.uniform(55, 105, 8), rng.uniform(10, 70, (8, 2)), rng.uniform(-3, 3, 8)]
    b = b.astype(np.float32)
    ours = painted(draw_obbs(torch.zeros(160, 200, 3, dtype=torch.uint8), torch.from_numpy(b), thickness=3))
    canvas = Image.new("L", (200, 160))
    draw = ImageDraw.Draw(canvas)
    for poly in OrientedBoxes(b, np.ones(8), np.zeros(8, int)).polygons().tolist():
        # Run past the first corner so it gets a round joint too (a polyline's own ends are cut square).
        draw.line([tuple(p) for p in poly + poly[:2]], fill=255, width=3, joint="curve")
    pillow = np.asarray(canvas) > 0

    def dilate(m):
        out = m.copy()
        for dy in (-1, 0, 1):
            for dx in (-1, 0, 1):
                out |= np.roll(np.roll(m, dy, 0), dx, 1)
        return out

    assert (ours & ~dilate(pillow)).sum() == 0  # every pixel we paint is within 1 px of Pillow's
    assert (pillow & ~dilate(ours)).sum() == 0  # and the other way round
    assert abs(int(ours.sum()) - int(pillow.sum())) <= 0.2 * pillow.sum()


def test_axis_aligned_box_with_thickness_two():
    img = torch.zeros(20, 20, 3, dtype=torch.uint8)
    draw_obbs(img, torch.tensor([[10.0, 10.0, 10.0, 6.0, 0.0]]), colors=(255, 0, 0), thickness=2)
    m = painted(img)
    # Edges at x = 5 and 15, y = 7 and 13: columns 4-5 / 14-15 and rows 6-7 / 12-13 are painted.
    assert m[10, 4] and m[10, 5] and not m[10, 3] and not m[10, 6]
    assert m[6, 10] and m[7, 10] and not m[8, 10] and not m[5, 10]
    assert not m[10, 10]  # the inside stays untouched
    assert tuple(img[10, 4].tolist()) == (255, 0, 0)


def test_later_boxes_are_drawn_on_top():
    img = torch.zeros(30, 30, 3, dtype=torch.uint8)
    b = torch.tensor([[15.0, 15.0, 20.0, 20.0, 0.0], [15.0, 15.0, 20.0, 20.0, math.pi / 2]])
    draw_obbs(img, b, colors=torch.tensor([[255, 0, 0], [0, 0, 255]]))
    assert tuple(img[5, 15].tolist()) == (0, 0, 255)


def test_palette_by_label_and_rgba_alpha():
    img = torch.zeros(30, 30, 4, dtype=torch.uint8)
    draw_obbs(img, OrientedBoxes([[15.0, 15.0, 20.0, 20.0, 0.0]], [0.9], [7]))
    assert tuple(img[5, 15].tolist()) == (*PALETTE[7], 255)


def test_boxes_outside_zero_sized_and_huge_are_handled():
    img = torch.zeros(H, W, 3, dtype=torch.uint8)
    draw_obbs(img, torch.tensor([[-500.0, -500.0, 10.0, 10.0, 0.3], [1e9, 1e9, 5.0, 5.0, 0.0]]))
    assert not painted(img).any()
    draw_obbs(img, torch.tensor([[21.0, 21.0, 0.0, 0.0, 0.0]]), thickness=2)  # a dot: the 4 pixels around (21, 21)
    assert painted(img).sum() == 4
    img.zero_()
    draw_obbs(img, torch.tensor([[32.0, 24.0, 1e7, 1e7, 0.7]]))  # outline far outside the frame
    assert not painted(img).any()
    draw_obbs(img, torch.tensor([[32.0, 24.0, 40.0, 1e7, 0.0]]), thickness=2)  # vertical edges cross the frame
    assert painted(img)[:, 11].all() and painted(img)[:, 52].all()


def test_draws_into_a_strided_crop_without_touching_the_rest():
    big = torch.zeros(40, 50, 3, dtype=torch.uint8)
    crop = big[10:30, 10:40]
    draw_obbs(crop, torch.tensor([[15.0, 10.0, 10.0, 10.0, 0.0]]))
    ref = torch.zeros(20, 30, 3, dtype=torch.uint8)
    draw_obbs(ref, torch.tensor([[15.0, 10.0, 10.0, 10.0, 0.0]]))
    assert torch.equal(crop, ref)
    assert big[:10].sum() == 0 and big[30:].sum() == 0 and big[:, :10].sum() == 0


def test_boxes_with_nan_or_inf_are_not_drawn_and_the_others_are():
    img = torch.zeros(30, 30, 3, dtype=torch.uint8)
    b = torch.tensor([[15.0, 15.0, float("nan"), 10.0, 0.0], [15.0, 15.0, 10.0, 10.0, float("inf")],
                      [15.0, 15.0, 20.0, 20.0, 0.0]])
    draw_obbs(img, b)
    ref = draw_obbs(torch.zeros(30, 30, 3, dtype=torch.uint8), b[2:])
    assert torch.equal(img, ref) and painted(img).any()


def test_empty_boxes_leave_the_image_unchanged():
    img = torch.full((4, 4, 3), 7, dtype=torch.uint8)
    assert draw_obbs(img, torch.zeros(0, 5)) is img and bool((img == 7).all())


@pytest.mark.parametrize(
    "image, boxes, kwargs, error, match",
    [
        (torch.zeros(4, 4, 3), torch.zeros(1, 5), {}, TypeError, "image must be uint8"),
        (torch.zeros(4, 4, 2, dtype=torch.uint8), torch.zeros(1, 5), {}, ValueError, r"\(H, W, 3\) or \(H, W, 4\)"),
        (torch.zeros(4, 4, 3, dtype=torch.uint8).permute(1, 0, 2), torch.zeros(1, 5), {}, None, None),
        (torch.zeros(3, 4, 4, dtype=torch.uint8).permute(1, 2, 0), torch.zeros(1, 5), {},
         ValueError, "contiguous pixels"),
        (torch.zeros(4, 4, 3, dtype=torch.uint8), torch.zeros(1, 4), {}, ValueError, r"boxes must have shape \(N, 5\)"),
        (torch.zeros(4, 4, 3, dtype=torch.uint8), torch.zeros(1, 5), {"thickness": 0}, ValueError, "thickness must be"),
        (torch.zeros(4, 4, 3, dtype=torch.uint8), torch.zeros(2, 5), {"colors": torch.zeros(3, 3)},
         TypeError, "integers"),
        (torch.zeros(4, 4, 3, dtype=torch.uint8), torch.zeros(2, 5), {"colors": [1, 2]}, ValueError, "3 or 4 values"),
        (torch.zeros(4, 4, 3, dtype=torch.uint8), torch.zeros(1, 5), {"colors": [300, 0, 0]}, ValueError, "0..255"),
    ],
)
def test_bad_inputs_raise_clear_errors(image, boxes, kwargs, error, match):
    if error is None:  # a transposed view still has contiguous pixels: allowed when the row stride is sane
        with pytest.raises(ValueError, match="contiguous pixels"):
            draw_obbs(image, boxes, **kwargs)
        return
    with pytest.raises(error, match=match):
        draw_obbs(image, boxes, **kwargs)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("channels", [3, 4])
def test_cuda_draws_the_same_pixels_as_the_cpu(channels):
    rng = np.random.default_rng(channels)
    b = np.c_[rng.uniform(-50, 1970, (300, 2)), rng.uniform(0, 300, (300, 2)), rng.uniform(-4, 4, 300)]
    boxes = OrientedBoxes(b.astype(np.float32), np.ones(300), rng.integers(0, 20, 300))
    cpu = draw_obbs(torch.zeros(1080, 1920, channels, dtype=torch.uint8), boxes, thickness=3)
    gpu = draw_obbs(torch.zeros(1080, 1920, channels, dtype=torch.uint8, device="cuda"), boxes.to("cuda"), thickness=3)
    assert torch.equal(gpu.cpu(), cpu)
    again = draw_obbs(torch.zeros(1080, 1920, channels, dtype=torch.uint8, device="cuda"), boxes.to("cuda"),
                      thickness=3)
    assert torch.equal(again.cpu(), cpu)  # the reused per-pixel scratch was handed back clean


def test_numpy_backed_boxes_as_the_readers_give_them_draw_what_their_torch_form_draws():
    rng = np.random.default_rng(7)
    b = np.c_[rng.uniform(0, 200, (40, 2)), rng.uniform(2, 30, (40, 2)), rng.uniform(-4, 4, 40)].astype(np.float32)
    boxes = OrientedBoxes(b, np.ones(40, np.float32), rng.integers(0, 20, 40))
    assert boxes.device is None  # NumPy-backed
    a = draw_obbs(torch.zeros(160, 220, 4, dtype=torch.uint8), boxes, thickness=2)
    t = draw_obbs(torch.zeros(160, 220, 4, dtype=torch.uint8), boxes.to("cpu"), thickness=2)
    assert torch.equal(a, t) and int(a.sum()) > 0


def test_float64_boxes_draw_the_same_pixels_as_float32_boxes():
    boxes = torch.tensor([[20.0, 15.0, 18.0, 8.0, 0.4], [5.0, 30.0, 9.0, 9.0, -1.0]], dtype=torch.float64)
    a = draw_obbs(torch.zeros(40, 40, 3, dtype=torch.uint8), boxes, colors=(255, 0, 0))
    b = draw_obbs(torch.zeros(40, 40, 3, dtype=torch.uint8), boxes.float(), colors=(255, 0, 0))
    assert torch.equal(a, b) and int(a.sum()) > 0


def _batch_scene(channels: int, sizes: list, seed: int):
    """Images of ``sizes`` (w, h), ~60 boxes each (some outside, some overlapping), and their colours."""
    rng = np.random.default_rng(seed)
    images, boxes, colors, offsets = [], [], [], [0]
    for w, h in sizes:
        k = int(rng.integers(0, 60))
        b = np.c_[rng.uniform(-30, w + 30, (k, 1)), rng.uniform(-30, h + 30, (k, 1)), rng.uniform(0, w / 3, (k, 2)),
                  rng.uniform(-4, 4, k)]
        images.append(torch.zeros(h, w, channels, dtype=torch.uint8))
        boxes.append(b.astype(np.float32))
        colors.append(rng.integers(0, 256, (k, channels)).astype(np.uint8))
        offsets.append(offsets[-1] + k)
    return images, torch.from_numpy(np.concatenate(boxes)), torch.from_numpy(np.concatenate(colors)), offsets


@pytest.mark.parametrize("channels", [3, 4])
def test_a_batch_draws_what_each_image_drawn_alone_gets(channels):
    images, boxes, colors, offsets = _batch_scene(channels, [(160, 90), (64, 48), (160, 90), (33, 70)], channels)
    alone = [draw_obbs(im.clone(), boxes[a:b], colors=colors[a:b], thickness=2.5)
             for im, a, b in zip(images, offsets, offsets[1:])]
    draw_obbs_batch(images, boxes, offsets, colors, thickness=2.5)
    assert all(torch.equal(a, b) for a, b in zip(images, alone))
    assert sum(int(im.sum()) for im in images) > 0


def test_a_batch_with_bad_offsets_colours_or_images_is_refused_by_name():
    images, boxes, colors, offsets = _batch_scene(3, [(40, 30), (40, 30)], 1)
    with pytest.raises(ValueError, match="offsets must rise from 0"):
        draw_obbs_batch(images, boxes, [0, offsets[-1]], colors)
    with pytest.raises(ValueError, match=r"colors must be an \(\d+, 3\) uint8 tensor"):
        draw_obbs_batch(images, boxes, offsets, colors[:, :2])
    with pytest.raises(ValueError, match="same number of channels"):
        draw_obbs_batch([images[0], torch.zeros(30, 40, 4, dtype=torch.uint8)], boxes, offsets, colors)
    with pytest.raises(TypeError, match=r"images\[1\] must be uint8"):
        draw_obbs_batch([images[0], images[1].float()], boxes, offsets, colors)
    with pytest.raises(TypeError, match="non-empty list"):
        draw_obbs_batch([], boxes, offsets, colors)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("channels", [3, 4])
def test_cuda_batch_draws_the_same_pixels_as_the_cpu_in_batches_over_64_images(channels):
    sizes = [(320, 180), (64, 48), (1920, 1080)] * 23  # 69 images: two launches' tables
    images, boxes, colors, offsets = _batch_scene(channels, sizes, 10 + channels)
    cpu = [im.clone() for im in images]
    draw_obbs_batch(cpu, boxes, offsets, colors, thickness=3)
    for _ in range(2):  # the second time on the per-image scratch the first handed back
        gpu = [im.cuda() for im in images]
        draw_obbs_batch(gpu, boxes.cuda(), offsets, colors.cuda(), thickness=3)
        assert all(torch.equal(g.cpu(), c) for g, c in zip(gpu, cpu))


DRAW_OP = torch.ops.obbmeta.draw_outlines_batch.default


@pytest.mark.parametrize("device", ["cpu"] + (["cuda"] if torch.cuda.is_available() else []))
def test_opcheck_draw_outlines_batch(device):
    images = [torch.zeros(20, 30, 4, dtype=torch.uint8, device=device), torch.zeros(16, 16, 4, dtype=torch.uint8,
                                                                                      device=device)]
    boxes = torch.tensor([[10.0, 8.0, 12.0, 6.0, 0.3], [5.0, 5.0, 4.0, 4.0, 0.0], [8.0, 8.0, 9.0, 3.0, -1.0]],
                         device=device)
    colors = torch.tensor([[255, 0, 0, 255], [0, 255, 0, 255], [0, 0, 255, 255]], dtype=torch.uint8, device=device)
    torch.library.opcheck(DRAW_OP, ([im.clone() for im in images], boxes, [0, 1, 3], colors, 2.0))
    DRAW_OP(images, boxes, [0, 1, 3], colors, 2.0)
    # the op draws what draw_obbs draws into each image
    want = [torch.zeros_like(im) for im in images]
    draw_obbs(want[0], boxes[:1], colors[:1], 2.0)
    draw_obbs(want[1], boxes[1:], colors[1:], 2.0)
    assert all(torch.equal(a, b) for a, b in zip(images, want)) and images[0].any()


@pytest.mark.parametrize("args, match", [
    (lambda im, b, c: ([im], b.double(), [0, 2], c, 2.0), "boxes must be a contiguous"),
    (lambda im, b, c: ([im], b, [0, 1], c, 2.0), "offsets must rise"),
    (lambda im, b, c: ([im], b, [0, 2], c[:, :3].contiguous(), 2.0), "colors must be a contiguous"),
    (lambda im, b, c: ([im], b, [0, 2], c, 0.0), "thickness"),
    (lambda im, b, c: ([im.float()], b, [0, 2], c, 2.0), "uint8"),
    (lambda im, b, c: ([], b, [0], c, 2.0), "non-empty list"),
])
def test_the_draw_operator_refuses_what_its_kernels_cannot_take(args, match):
    image = torch.zeros(10, 10, 4, dtype=torch.uint8)
    boxes = torch.tensor([[5.0, 5.0, 4.0, 4.0, 0.0], [2.0, 2.0, 2.0, 2.0, 0.0]])
    colors = torch.full((2, 4), 200, dtype=torch.uint8)
    with pytest.raises((ValueError, TypeError), match=match):
        DRAW_OP(*args(image, boxes, colors))
    assert not image.any()
