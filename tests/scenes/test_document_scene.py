import math

import numpy as np
import pytest
import reference
import shapely
from shapely.ops import unary_union

from obbmeta.scenes import document, frame, video
from obbmeta.scenes.document import DocumentScene


def test_the_same_seed_gives_the_same_page_and_ground_truth():
    a, b = document.document_frame(4), document.document_frame(4)
    assert np.array_equal(a.image, b.image)
    assert np.array_equal(a.boxes.xywhr.numpy(), b.boxes.xywhr.numpy())
    assert np.array_equal(a.track_ids, b.track_ids)
    assert not np.array_equal(a.image, document.document_frame(5).image)


def test_frames_hold_text_lines_and_titles_centred_inside_the_frame():
    counts = np.zeros(2, int)
    for seed in range(12):
        f = document.document_frame(seed, 256)
        assert f.image.shape == (256, 256, 3) and f.image.dtype == np.uint8
        xywhr = f.boxes.xywhr.numpy()
        assert ((xywhr[:, :2] >= 0) & (xywhr[:, :2] < 256)).all()
        assert ((xywhr[:, 4] >= -math.pi / 2) & (xywhr[:, 4] < math.pi / 2)).all()
        counts += np.bincount(f.boxes.labels.numpy(), minlength=2)
    assert counts[document.TEXT_LINE] > 100 and counts[document.TITLE] >= 3


def test_lines_come_at_several_angles_within_one_page():
    spread = []
    for seed in range(20):
        f = document.document_frame(seed, 256, perspective=False)
        a = f.boxes.xywhr.numpy()[:, 4]
        if len(a) > 3:
            d = np.abs((a[:, None] - a[None, :] + math.pi / 2) % math.pi - math.pi / 2)
            spread.append(d.max())
    assert max(spread) > math.radians(20)


@pytest.mark.parametrize("seed, perspective", [(0, False), (1, True), (2, False), (3, True), (8, True)])
def test_text_ink_lies_inside_its_line_boxes_grown_by_one_pixel(seed, perspective):
    scene = DocumentScene(seed, 256, perspective=perspective, blur=0.0)
    for t in (0, 9):
        ink = scene.ink(t) > 0.1
        allowed = unary_union([reference.rect(*row[:5]) for row in scene.line_boxes(t)]).buffer(1.0)
        ys, xs = np.nonzero(ink)
        assert len(xs) > 100
        inside = shapely.contains_xy(allowed, xs + 0.5, ys + 0.5)
        assert inside.all(), f"{(~inside).sum()} ink pixels outside every line box"


@pytest.mark.parametrize("seed", [0, 5])
def test_every_line_box_holds_ink(seed):
    scene = DocumentScene(seed, 256, blur=0.0)
    ink = scene.ink(0)
    for cx, cy, w, h, a, *_ in scene.line_boxes(0):
        poly = reference.rect(cx, cy, w, h, a)
        x0, y0, x1, y1 = (int(v) for v in poly.bounds)
        if x0 < 0 or y0 < 0 or x1 >= 255 or y1 >= 255:
            continue
        gy, gx = np.mgrid[y0:y1 + 1, x0:x1 + 1]
        inside = shapely.contains_xy(poly, gx + 0.5, gy + 0.5)
        assert ink[gy[inside], gx[inside]].mean() > 0.05


def test_track_ids_follow_each_line_as_the_camera_moves():
    frames = list(video("document", 2, n_frames=30))
    first = dict(zip(frames[0].track_ids.tolist(), frames[0].boxes.xywhr.tolist()))
    for f in frames[1:]:
        assert len(set(f.track_ids.tolist())) == len(f.track_ids)
        for tid, row in zip(f.track_ids.tolist(), f.boxes.xywhr.tolist()):
            prev = first.get(tid)
            if prev is not None:  # the camera moves a few pixels and a fraction of a degree per frame
                assert math.hypot(row[0] - prev[0], row[1] - prev[1]) < 6 * f.index + 6
        first.update(zip(f.track_ids.tolist(), f.boxes.xywhr.tolist()))
    assert any(not np.array_equal(frames[0].boxes.xywhr.numpy(), f.boxes.xywhr.numpy()) for f in frames[1:])


@pytest.mark.parametrize("kwargs, name", [({"seed": 0, "blur": -1.0}, "blur"), ({"seed": 0, "scale": 9}, "scale"),
                                          ({"seed": 0, "size": (10, 10)}, "size")])
def test_bad_arguments_are_rejected_by_name(kwargs, name):
    with pytest.raises(ValueError, match=name):
        DocumentScene(**kwargs)


def test_without_pillow_the_document_scene_says_what_to_install(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "PIL", None)
    with pytest.raises(ImportError, match="pip install pillow"):
        DocumentScene(0)


def _page_line_image(text, size, stroke):
    """``text`` drawn alone by Pillow with the scenes' font, in its line box (ink extent across, the font's band of
    capitals to descenders up and down): (h, w) float in [0, 1]."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=size)
    _, band_top, _, band_bottom = font.getbbox("HÅgjpqy|", stroke_width=stroke)
    img = Image.new("L", (int(font.getlength(text)) + 8 * size, 4 * size), 0)
    draw = ImageDraw.Draw(img)
    origin = (2 * size, 2 * size)
    left, top, right, bottom = draw.textbbox(origin, text, font=font, stroke_width=stroke)
    draw.text(origin, text, font=font, fill=255, stroke_width=stroke, stroke_fill=255)
    top, bottom = min(top, origin[1] + band_top), max(bottom, origin[1] + band_bottom)
    return np.asarray(img, np.float32)[top:bottom, left:right] / 255.0


@pytest.mark.parametrize("seed", [0, 3, 6])
def test_each_line_carries_the_string_drawn_in_its_box(seed):
    # Lines on the unturned page: the page's ink inside the line's rectangle is what Pillow draws for its string
    # at some font size (the scene picks sizes at random, so every size is tried).
    scene = DocumentScene(seed, 384)
    page = np.asarray(scene._ink, np.float32) / 255.0
    checked = 0
    for line in scene.lines:
        c = line.corners
        if not np.allclose(c, np.round(c)) or c[0, 1] != c[1, 1]:
            continue  # a turned note or margin line
        x0, y0, x1, y1 = int(c[0, 0]), int(c[0, 1]), int(c[2, 0]), int(c[2, 1])
        crop = page[y0:y1, x0:x1]
        best = 0.0
        for size in range(5, 40):
            for stroke in (0, 1):
                ref = _page_line_image(line.text, size, stroke)
                if ref.shape == crop.shape:
                    best = max(best, float((np.abs(ref - crop) < 0.02).mean()))
        assert best > 0.97, f"line {line.text!r}: no font size draws this string into its box"
        checked += 1
    assert checked >= 3


def test_ground_truth_texts_pair_with_boxes_and_track_ids_through_a_video():
    scene = DocumentScene(2, 256)
    by_track = dict(zip((line.track_id for line in scene.lines), scene.line_texts()))
    seen = set()
    for f in video("document", 2, n_frames=12):
        assert isinstance(f.texts, tuple) and len(f.texts) == len(f.boxes) == len(f.track_ids)
        assert f.reading_angles.shape == (len(f.boxes),) and f.reading_angles.dtype == np.float32
        for tid, text in zip(f.track_ids.tolist(), f.texts):
            assert text == by_track[tid] and text.strip() == text and "  " not in text
            seen.add(text)
    assert len(seen) > 10


def test_texts_use_only_letters_digits_and_spaces():
    chars = set()
    for seed in range(8):
        chars |= set("".join(document.document_frame(seed).texts))
    import string

    assert chars <= set(string.ascii_letters + string.digits + " ")
    assert {" ", "e"} <= chars and chars & set(string.digits) and chars & set(string.ascii_uppercase)


def _upright_crop(image, cx, cy, w, h, angle):
    """OpenCV's inverse map: the (h, w) patch whose x axis runs along ``angle`` (clockwise on screen) at (cx, cy)."""
    cv2 = pytest.importorskip("cv2")
    ca, sa = math.cos(angle), math.sin(angle)
    # dst (u, v) -> src: centre + R(angle) (u - w/2, v - h/2), pixel centres at +0.5 on both sides.
    m = np.array([[ca, -sa, cx - ca * w / 2 + sa * h / 2], [sa, ca, cy - sa * w / 2 - ca * h / 2]])
    m[:, 2] += m[:, 0] * 0.5 + m[:, 1] * 0.5 - 0.5
    return cv2.warpAffine(image, m, (int(round(w)), int(round(h))), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP)


@pytest.mark.parametrize("seed", [1, 9, 13, 26, 32, 53])
def test_reading_angles_say_which_way_round_each_line_reads(seed):
    # Cut each line out along its reading angle (OpenCV) and compare with its string drawn upright by Pillow: the
    # crop matches it better than the same crop turned by 180 degrees does.
    cv2 = pytest.importorskip("cv2")
    scene = DocumentScene(seed, 512, scale=2.0, perspective=False, blur=0.0)
    f = scene.render(0, sensor_noise=False)
    gray = f.image.astype(np.float32).mean(axis=2)
    checked = 0
    for (cx, cy, w, h, a), r, text in zip(f.boxes.xywhr.tolist(), f.reading_angles.tolist(), f.texts):
        along, across = (w, h) if abs(math.remainder(r - a, math.pi)) < math.pi / 4 else (h, w)
        if len(text) < 6 or not reference.rect(cx, cy, w, h, a).within(shapely.box(0, 0, 512, 512)):
            continue
        crop = _upright_crop(gray, cx, cy, along, across, r)
        ink = (crop.max() - crop) / max(np.ptp(crop), 1e-6)
        same = turned = -1.0
        for size in range(10, 30):  # the line's font size is not known: the best of every size, both ways round
            ref = cv2.resize(_page_line_image(text, size, 0), (ink.shape[1], ink.shape[0]),
                             interpolation=cv2.INTER_AREA)
            same = max(same, np.corrcoef(ref.ravel(), ink.ravel())[0, 1])
            turned = max(turned, np.corrcoef(ref.ravel(), ink[::-1, ::-1].ravel())[0, 1])
        assert same > 0.6 and same > turned + 0.2, f"{text!r}: read at {math.degrees(r):.0f} deg, {same} vs {turned}"
        checked += 1
    assert checked >= 3


def test_a_scene_frame_refuses_texts_that_do_not_pair_with_its_boxes():
    from obbmeta.scenes.common import SceneFrame

    f = document.document_frame(0)
    with pytest.raises(ValueError, match="texts"):
        SceneFrame(f.image, f.boxes, f.track_ids, f.class_names, texts=f.texts[:-1])
    with pytest.raises(ValueError, match="reading_angles"):
        SceneFrame(f.image, f.boxes, f.track_ids, f.class_names, texts=f.texts, reading_angles=np.zeros(1))


def test_scenes_without_text_carry_no_texts():
    f = frame("aerial", 0, 64)
    assert f.texts is None and f.reading_angles is None
