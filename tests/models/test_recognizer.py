import math

import numpy as np
import pytest
import reference
import shapely
import torch
from devices import DEVICES
from hypothesis import given
from hypothesis import strategies as st

from obbmeta.conventions import to_le90
from obbmeta.decode import ctc_greedy
from obbmeta.eval import character_error_rate
from obbmeta.models import CHARSET, WEIGHTS_DIR, TextRecognizer, crop_width, load_recognizer, save_recognizer
from obbmeta.models import text_recognizer as bundled_recognizer
from obbmeta.models.train_recognizer import (
    aabb_boxes,
    crop_lines,
    frame_lines,
    heldout_frames,
    pad_boxes,
    parse_args,
    train,
    upright_boxes,
)
from obbmeta.scenes.document import DocumentScene


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return TextRecognizer().eval()


@pytest.mark.parametrize("width", [4, 8, 128, 340])
def test_output_is_one_column_of_class_logits_per_four_input_columns(model, width):
    out = model(torch.rand(3, 3, 32, width))
    assert out.shape == (3, width // 4, len(CHARSET) + 1) and out.dtype == torch.float32
    assert model.input_height == 32 and model.num_classes == len(model.charset) + 1 and model.charset == CHARSET


def test_the_charset_holds_the_document_scenes_characters():
    chars = set()
    for seed in range(6):
        chars |= set("".join(DocumentScene(seed, 256).line_texts()))
    assert chars <= set(CHARSET) and len(set(CHARSET)) == len(CHARSET) and " " in CHARSET


def test_an_empty_batch_gives_an_empty_output(model):
    assert model(torch.rand(0, 3, 32, 64)).shape == (0, 16, len(CHARSET) + 1)


@pytest.mark.parametrize("x, error, match", [
    (torch.rand(1, 3, 31, 64), ValueError, "height must be 32"),
    (torch.rand(1, 3, 32, 66), ValueError, "multiple of 4"),
    (torch.rand(1, 1, 32, 64), ValueError, r"\(K, 3, 32, W\)"),
    (torch.zeros(1, 3, 32, 64, dtype=torch.uint8), TypeError, "floating-point"),
    (np.zeros((1, 3, 32, 64), np.float32), ValueError, "ndarray"),
])
def test_bad_input_is_refused_with_the_expected_form(model, x, error, match):
    with pytest.raises(error, match=match):
        model(x)


def test_a_crop_and_the_same_crop_turned_by_180_degrees_read_the_same(model):
    # Whichever way up a crop comes, the orientation head picks the same reading of it.
    x = torch.rand(6, 3, 32, 96)
    a, turned_a = model.read(x)
    b, turned_b = model.read(x.flip(2, 3))
    assert torch.equal(turned_a, ~turned_b)
    assert torch.allclose(a, b, atol=1e-5)
    # The chosen reading is the one the head scores higher, and it is the sequence head's output for that crop.
    cols, cols_t = model.columns(x), model.columns(x.flip(2, 3))
    expect = torch.where((model.upright_logit(cols_t) > model.upright_logit(cols))[:, None, None],
                         model.sequence_logits(cols_t), model.sequence_logits(cols))
    assert torch.allclose(a, expect, atol=1e-5)


def test_auto_orient_off_reads_crops_as_given():
    m = TextRecognizer().eval()
    m.auto_orient = False
    x = torch.rand(2, 3, 32, 64)
    out, turned = m.read(x)
    assert not turned.any() and torch.allclose(out, m.sequence_logits(m.columns(x)))


def test_charset_must_be_distinct_tokens():
    with pytest.raises(ValueError, match="charset"):
        TextRecognizer("aab")


def test_weights_round_trip_in_fp16(tmp_path, model):
    path = tmp_path / "r.pt"
    save_recognizer(model, path, note="test")
    loaded = load_recognizer(path)
    x = torch.rand(2, 3, 32, 64)
    assert loaded.charset == model.charset and not loaded.training
    assert torch.allclose(loaded(x), model(x), atol=0.05)
    torch.save({"format": "something else"}, path)
    with pytest.raises(ValueError, match="text-recogniser weights"):
        load_recognizer(path)


def test_crop_width_keeps_the_aspect_ratio_in_multiples_of_four():
    assert crop_width(100.0, 10.0).item() == 320
    assert crop_width(torch.tensor([1.0, 5000.0]), torch.tensor([10.0, 10.0])).tolist() == [8, 1024]
    assert crop_width(30.0, 20.0, height=32).item() % 4 == 0


# ----------------------------------------------------------------------------------------------- crops
def _cv2_crop(image, box, out_w, out_h):
    """OpenCV's inverse-map warp of the (out_h, out_w) upright crop of box (cx, cy, w, h, angle), INTER_LINEAR."""
    import cv2

    cx, cy, w, h, a = box
    ca, sa = math.cos(a), math.sin(a)
    sx, sy = w / out_w, h / out_h
    # dst pixel centre (j + 0.5, i + 0.5) -> box (u, v) = (sx (j + 0.5) - w/2, sy (i + 0.5) - h/2) -> src centre - 0.5
    m = np.array([[ca * sx, -sa * sy, 0.0], [sa * sx, ca * sy, 0.0]])
    u0, v0 = 0.5 * sx - w / 2, 0.5 * sy - h / 2
    m[0, 2] = cx + u0 * ca - v0 * sa - 0.5
    m[1, 2] = cy + u0 * sa + v0 * ca - 0.5
    return cv2.warpAffine(image, m, (out_w, out_h), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                          borderMode=cv2.BORDER_CONSTANT, borderValue=(0.25, 0.25, 0.25))


def _smooth_image(h, w, seed=0):
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    img = np.stack([0.5 + 0.4 * np.sin(xx / 7 + c) * np.cos(yy / 9 - c) for c in range(3)], -1)
    return (img + rng.normal(0, 0.01, img.shape)).astype(np.float32)


@pytest.mark.parametrize("device", DEVICES)
@given(cx=st.floats(-20, 140), cy=st.floats(-20, 100), w=st.floats(8, 120), h=st.floats(4, 40),
       angle=st.floats(-math.pi, math.pi), out_w=st.sampled_from([16, 64, 100]))
def test_crops_equal_opencvs_inverse_warp(device, cx, cy, w, h, angle, out_w):
    pytest.importorskip("cv2")
    img = _smooth_image(96, 128)
    ref = _cv2_crop(img, (cx, cy, w, h, angle), out_w, 32)
    frames = torch.from_numpy(img).permute(2, 0, 1)[None].to(device)
    got = crop_lines(frames, torch.tensor([0]), torch.tensor([[cx, cy, w, h, angle]]), torch.tensor([out_w]),
                     out_w, fill=0.25)[0].permute(1, 2, 0).cpu().numpy()
    # OpenCV quantises its bilinear weights to 1/32; the image changes by < 0.1 per pixel.
    inner = np.ones_like(ref[..., 0], bool)
    inner[[0, -1], :] = inner[:, [0, -1]] = False  # OpenCV treats the frame border's half pixel differently
    assert np.abs(got - ref)[inner].max() < 0.02


def test_crops_sample_their_own_frame_and_fill_outside_their_columns():
    frames = torch.stack([torch.full((3, 40, 60), v) for v in (0.1, 0.5, 0.9)])
    boxes = torch.tensor([[30.0, 20, 20, 10, 0.3]] * 3)
    out = crop_lines(frames, torch.tensor([2, 0, 1]), boxes, torch.tensor([16, 40, 8]), 40, fill=0.0,
                     starts=torch.tensor([0, 0, 32]))
    assert out.shape == (3, 3, 32, 40)
    assert torch.allclose(out[0, :, :, :16], torch.tensor(0.9)) and (out[0, :, :, 16:] == 0).all()
    assert torch.allclose(out[1], torch.tensor(0.1))
    assert (out[2, :, :, :32] == 0).all() and torch.allclose(out[2, :, :, 32:], torch.tensor(0.5))
    # Outside the frame: the fill, blended at the edge.
    far = crop_lines(frames[:1], torch.tensor([0]), torch.tensor([[-50.0, 20, 10, 10, 0]]), torch.tensor([8]), 8,
                     fill=torch.tensor([0.7]))
    assert torch.allclose(far, torch.tensor(0.7))


def test_upright_boxes_are_the_same_rectangle_along_the_reading_direction():
    rng = np.random.default_rng(0)
    xywhr = torch.tensor(np.c_[rng.uniform(0, 100, (50, 2)), rng.uniform(5, 50, (50, 2)),
                               rng.uniform(-math.pi / 2, math.pi / 2, 50)], dtype=torch.float32)
    reading = torch.tensor(rng.uniform(-math.pi, math.pi, 50), dtype=torch.float32)
    up = upright_boxes(xywhr, reading)
    for a, b, r in zip(xywhr.tolist(), up.tolist(), reading.tolist()):
        assert reference.rect(*a).symmetric_difference(reference.rect(*b)).area < 1e-3 * a[2] * a[3]
        assert abs(math.remainder(b[4] - r, 2 * math.pi)) <= math.pi / 4 + 1e-5
        assert -math.pi <= b[4] < math.pi


def test_aabb_boxes_are_the_tight_axis_aligned_boxes():
    boxes = torch.tensor([[50.0, 40, 60, 10, 0.5], [10, 10, 4, 20, -1.2]])
    for box, aabb in zip(boxes.tolist(), aabb_boxes(boxes).tolist()):
        x1, y1, x2, y2 = reference.rect(*box).bounds
        assert aabb == pytest.approx([(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1, 0.0], abs=1e-4)


def test_frame_lines_keep_only_lines_wholly_inside_the_frame():
    f = DocumentScene(3, 256).render(0)
    image, boxes, texts = frame_lines(f)
    assert len(texts) == len(boxes) and 0 < len(texts) <= len(f.texts) and set(texts) <= set(f.texts)
    frame_box = shapely.box(0, 0, 256, 256)
    assert all(reference.rect(*b).buffer(-1e-3).within(frame_box) for b in boxes.tolist())


# ----------------------------------------------------------------------------------------------- training
def test_training_runs_writes_weights_and_a_log_and_repeats_exactly_on_the_cpu(tmp_path):
    def run(out):
        args = parse_args(["--out", str(out), "--steps", "2", "--batch", "8", "--lines-per-frame", "4",
                           "--chunks", "2", "--frames", "2", "--frames-per-scene", "2", "--size", "256",
                           "--workers", "0", "--eval-every", "2", "--eval-scenes", "1", "--eval-size", "256",
                           "--eval-scale", "1.0", "--log-every", "1", "--threads", "1", "--device", "cpu"])
        return train(args)

    log = run(tmp_path / "a")
    model = load_recognizer(tmp_path / "a" / "recognizer.pt")
    assert model.charset == CHARSET
    saved = (tmp_path / "a" / "recognizer_train_log.json").read_text()
    assert '"evals"' in saved and len(log["steps"]) == 2 and math.isfinite(log["steps"][-1]["loss_ctc"])
    assert 0.0 <= log["evals"][-1]["cer"] and log["evals"][-1]["lines"] > 0
    again = run(tmp_path / "b")
    assert again["steps"] == [dict(r, time_s=again["steps"][i]["time_s"]) for i, r in enumerate(log["steps"])]
    other = load_recognizer(tmp_path / "b" / "recognizer.pt").state_dict()
    assert all(torch.equal(v, other[k]) for k, v in model.state_dict().items())


# ----------------------------------------------------------------------------------------------- bundled weights
@pytest.fixture(scope="module")
def bundled():
    if not (WEIGHTS_DIR / "recognizer.pt").exists():
        pytest.skip("no bundled recogniser weights")
    return bundled_recognizer()


def test_the_bundled_weights_are_small_fp16(bundled):
    payload = torch.load(WEIGHTS_DIR / "recognizer.pt", weights_only=True)
    assert (WEIGHTS_DIR / "recognizer.pt").stat().st_size <= 2 * 2 ** 20
    assert all(v.dtype == torch.float16 for v in payload["state_dict"].values() if v.is_floating_point())
    assert bundled.charset == CHARSET and not bundled.training


def test_the_bundled_recognizer_reads_held_out_lines_whichever_way_up(bundled):
    # Held-out frames at the demo's text scale: lines cropped from their true boxes along the long side (angle
    # modulo pi, so many crops are upside down), padded as the demo pads them.
    frames = heldout_frames(4, 512, 2.0, start=500)
    preds, refs = [], []
    for f in frames:
        _, _, texts = frame_lines(f)
        w, h = f.size
        poly = f.boxes.polygons()
        inside = ((poly[..., 0] >= 0) & (poly[..., 0] <= w) & (poly[..., 1] >= 0) & (poly[..., 1] <= h)).all(1)
        boxes = pad_boxes(to_le90(f.boxes.xywhr[inside]), 0.08)
        widths = crop_width(boxes[:, 2], boxes[:, 3])
        image = torch.from_numpy(f.image).permute(2, 0, 1)[None].float() / 255
        x = crop_lines(image, torch.zeros(len(boxes), dtype=torch.int64), boxes, widths, int(widths.max()),
                       fill=114 / 255)
        with torch.no_grad():
            strings, conf = ctc_greedy(bundled(x), bundled.charset)
        preds += strings
        refs += texts
        assert ((conf >= 0) & (conf <= 1)).all()
    assert len(refs) > 20
    assert character_error_rate(preds, refs) < 0.05  # the demo's goal
