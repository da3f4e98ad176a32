"""Procedural document scenes: pages of real rendered text (Pillow's bundled font, random words) in blocks at
several angles, photographed from above with optional perspective, blur and a moving camera.

Ground truth: one oriented box per text line — class ``text_line`` for body text (paragraphs, notes, margin
lines) and ``title`` for headings. A line's box is its rectangle on the page: horizontally the ink extent of the
line, vertically from the top of the font's capitals and ascenders to the bottom of its descenders (the same
band for every line of one font, whatever letters it holds), mapped to the frame by the page's transform. With
perspective the mapped rectangle is a quadrilateral, and the box is its minimum-area rectangle. Each line also
carries its string (``SceneFrame.texts``: words of lower-case letters, capitalised words and numbers, single
spaces) and the direction it reads in (``SceneFrame.reading_angles``): the camera can turn the page by any angle,
so a line may read right to left, upside down, along its box's angle.

A video keeps the page and moves the camera (rotation, drift, slight zoom); a line is in a frame's ground truth
while its centre lies inside the frame, and keeps its track id.

Needs Pillow >= 10.1 (``ImageFont.load_default(size=...)``).
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Iterator, List, Tuple

import numpy as np

from .._validators import number_in_range
from . import SCALES, raster
from .common import SceneFrame, check_frames, check_seed, check_size, make_boxes

CLASS_NAMES: Tuple[str, ...] = ("text_line", "title")
TEXT_LINE, TITLE = range(2)

_WORDS = (
    "the of and to in is for on that by with as at from this be are or an it was which not have has but all their "
    "can more other new one two three data system model time year state first such these over most after also "
    "report field value table figure result method section page line work case group number order point image "
    "north south river harbour vehicle ship plane tank road parking city market water energy light signal level "
    "rotated oriented box angle frame video stream camera detector track object class score metadata pipeline "
    "network layer output input width height centre corner polygon region sample batch memory device kernel "
    "process during between under without within each where when while because however therefore example "
    "important general local national public private small large long short high low early late final total "
    "average annual review summary appendix chapter notes draft version update contents index reference"
).split()
_INKS = np.array([(0.05, 0.05, 0.06), (0.1, 0.12, 0.3), (0.2, 0.2, 0.22), (0.35, 0.05, 0.05)], np.float32)
_PAPERS = np.array([(0.96, 0.96, 0.94), (0.93, 0.91, 0.85), (0.98, 0.98, 0.98), (0.88, 0.9, 0.92)], np.float32)
_NOTES = np.array([(0.98, 0.93, 0.55), (0.75, 0.9, 0.98), (0.98, 0.8, 0.85), (0.85, 0.95, 0.75)], np.float32)


def _pil():
    try:
        from PIL import Image, ImageDraw, ImageFilter, ImageFont
    except ImportError as exc:  # optional dependency
        raise ImportError("the document scenes need Pillow >= 10.1: pip install pillow") from exc
    return Image, ImageDraw, ImageFilter, ImageFont


@lru_cache(maxsize=64)
def _font(size: int):
    return _pil()[3].load_default(size=size)


@lru_cache(maxsize=8192)
def _length(size: int, word: str) -> float:
    return _font(size).getlength(word)


@lru_cache(maxsize=64)
def _band(size: int, stroke: int) -> Tuple[int, int]:
    """Vertical ink band (top, bottom) of a line of this font, relative to the text origin."""
    _, top, _, bottom = _font(size).getbbox("HÅgjpqy|", stroke_width=stroke)
    return top, bottom


class _Line:
    __slots__ = ("corners", "cls", "track_id", "text")

    def __init__(self, corners, cls, text):
        self.corners = np.asarray(corners, np.float64)  # (4, 2) on the page, clockwise from top-left
        self.cls = cls
        self.track_id = 0
        self.text = text


class DocumentScene:
    """One page and its camera path from a seed; ``render(t)`` draws frame t.

    Args:
        seed: any int >= 0; the same seed gives the same page and frames.
        size: frame size, an int or (width, height).
        scale: font size multiplier (1.0: body text 7-12 px high).
        perspective: tilt the page (mild keystone); None picks it at random (about 1 in 3 scenes).
        blur: Gaussian blur radius in px; None picks it at random (0 in about half the scenes, else up to 0.9).
    """

    class_names = CLASS_NAMES

    def __init__(self, seed: int, size=256, scale: float = 1.0, perspective=None, blur=None):
        Image, ImageDraw, _, _ = _pil()
        self.seed = check_seed(seed)
        self.width, self.height = check_size("size", size)
        self.scale = number_in_range("scale", scale, *SCALES["document"])
        rng = self.rng = np.random.default_rng([self.seed, 0xD0C])
        short = min(self.width, self.height)
        self.page_w = int(short * rng.uniform(0.75, 1.25))
        self.page_h = int(self.page_w * rng.uniform(1.2, 1.45))
        if rng.random() < 0.3:  # landscape
            self.page_w, self.page_h = self.page_h, self.page_w
        self.paper = _PAPERS[rng.integers(len(_PAPERS))] * rng.uniform(0.9, 1.02)
        # ink: (H, W) coverage in [0, 1] and its colour per pixel; paper tint per pixel for notes.
        self._ink = Image.new("L", (self.page_w, self.page_h), 0)
        self._tint = np.broadcast_to(self.paper, (self.page_h, self.page_w, 3)).copy()
        self._ink_rgb = np.zeros((self.page_h, self.page_w, 3), np.float32)
        self.lines: List[_Line] = []
        self._layout(ImageDraw)
        for i, line in enumerate(self.lines):
            line.track_id = i + 1
        self._page_rgba = self._compose_page(Image)
        self._camera()
        self.perspective = bool(rng.random() < 0.35) if perspective is None else bool(perspective)
        self._keystone = self._make_keystone() if self.perspective else np.eye(3)
        self.blur = (0.0 if rng.random() < 0.5 else float(rng.uniform(0.3, 0.9))) if blur is None else float(blur)
        if not (0.0 <= self.blur <= 5.0):
            raise ValueError(f"blur must be a radius in [0, 5] px, got {blur!r}")
        self._desk = self._make_desk()

    # ----------------------------------------------------------------------------------------------- page
    def _words(self, n):
        rng = self.rng
        words = [_WORDS[i] for i in rng.integers(len(_WORDS), size=n)]
        for i in range(n):
            r = rng.random()
            if r < 0.06:
                words[i] = str(int(rng.integers(1, 2030)))
            elif r < 0.12:
                words[i] = words[i].capitalize()
        return words

    def _text_block(self, draw, x0, y0, width, bottom, size, cls, stroke=0, n_lines=None, ragged=True):
        """Word-wrapped lines from (x0, y0) within ``width`` px, down to ``bottom``; returns the y after it."""
        rng = self.rng
        font = _font(size)
        top_band, bottom_band = _band(size, stroke)
        leading = int(round((bottom_band - top_band) * rng.uniform(1.25, 1.6)))
        y = y0
        count = 0
        while y + bottom_band <= bottom and (n_lines is None or count < n_lines):
            words = self._words(40)
            # Fill the line by summed word widths (kerning across words ignored; textbbox below gives the truth).
            ends = np.cumsum([_length(size, w) + _length(size, " ") for w in words]) - _length(size, " ")
            text = " ".join(words[:int(np.searchsorted(ends, width, side="right"))])
            if not text:
                break
            last = n_lines is not None and count == n_lines - 1
            if ragged and (last or rng.random() < 0.12):  # a paragraph's short last line
                cut = max(1, int(len(text.split()) * rng.uniform(0.2, 0.8)))
                text = " ".join(text.split()[:cut])
            left, top, right, low = draw.textbbox((x0, y), text, font=font, stroke_width=stroke)
            top, low = min(top, y + top_band), max(low, y + bottom_band)
            draw.text((x0, y), text, font=font, fill=255, stroke_width=stroke, stroke_fill=255)
            self.lines.append(_Line([(left, top), (right, top), (right, low), (left, low)], cls, text))
            y += leading
            count += 1
        return y

    def _layout(self, ImageDraw):
        rng, s = self.rng, self.scale
        draw = ImageDraw.Draw(self._ink)
        W, H = self.page_w, self.page_h
        margin = int(W * rng.uniform(0.06, 0.12))
        body = int(round(rng.uniform(7, 12) * s))
        y = margin
        first = len(self.lines)
        if rng.random() < 0.8:  # a title, sometimes bold (stroked)
            size = int(round(body * rng.uniform(1.5, 2.2)))
            stroke = int(rng.random() < 0.4)
            y = self._text_block(draw, margin, y, W - 2 * margin, H - margin, size, TITLE, stroke, n_lines=1,
                                 ragged=True) + body
        columns = 1 if (W < 200 * s or rng.random() < 0.5) else 2
        gutter = int(body * 1.5)
        col_w = (W - 2 * margin - (columns - 1) * gutter) // columns
        # Leave a free area for a rotated note in some pages.
        note_area = None
        bottom = H - margin
        if rng.random() < 0.5:
            note_h = int(H * rng.uniform(0.25, 0.4))
            note_area = (margin, H - margin - note_h, W - margin, H - margin)
            bottom = note_area[1] - body
        for c in range(columns):
            x = margin + c * (col_w + gutter)
            yy = y
            while yy < bottom - 2 * body:
                yy = self._text_block(draw, x, yy, col_w, bottom, body, TEXT_LINE, n_lines=int(rng.integers(2, 7)))
                yy += int(body * rng.uniform(0.6, 1.4))
                if rng.random() < 0.15 and yy < bottom - 4 * body:  # a sub-heading
                    size = int(round(body * rng.uniform(1.4, 1.8)))
                    yy = self._text_block(draw, x, yy, col_w, bottom, size, TITLE, n_lines=1) + body // 2
        ink = self._ink_colour()
        self._colour_lines(first, ink)
        if note_area is not None:
            self._note(note_area, body)
        if rng.random() < 0.4:  # a line along the margin, turned by 90 degrees (like an arXiv stamp)
            self._rotated_block(margin * 0.5, H * rng.uniform(0.3, 0.7), rng.choice([-90.0, 90.0]),
                                int(H * rng.uniform(0.3, 0.6)), max(6, int(body * 0.9)), 1, None)

    def _ink_colour(self):
        return _INKS[self.rng.integers(len(_INKS))] * self.rng.uniform(0.7, 1.2)

    def _colour_lines(self, first, colour):
        """Give the ink drawn so far (lines from ``first``) one colour."""
        ink = np.asarray(self._ink, np.float32) / 255.0
        fresh = (ink > 0) & (self._ink_rgb.sum(axis=2) == 0)
        self._ink_rgb[fresh] = colour

    def _note(self, area, body):
        rng = self.rng
        x0, y0, x1, y1 = area
        cx, cy = (x0 + x1) / 2 + rng.uniform(-0.2, 0.2) * (x1 - x0), (y0 + y1) / 2
        angle = float(rng.choice([rng.uniform(-40, 40), rng.uniform(-90, 90)]))
        max_w = (x1 - x0) * rng.uniform(0.5, 0.8)
        self._rotated_block(cx, cy, angle, int(max_w), max(6, int(body * rng.uniform(0.9, 1.2))),
                            int(rng.integers(2, 5)), _NOTES[rng.integers(len(_NOTES))], fit=(x0, y0, x1, y1))

    def _rotated_block(self, cx, cy, angle_deg, width, size, n_lines, background, fit=None):
        """Render a small text block upright, turn it by ``angle_deg`` (clockwise on screen) about (cx, cy) and put
        it on the page; skipped when it would leave ``fit`` (x0, y0, x1, y1) or the page."""
        Image, ImageDraw, _, _ = _pil()
        rng = self.rng
        pad = int(size * 0.6)
        block = Image.new("L", (width + 2 * pad, int(n_lines * size * 1.8) + 2 * pad), 0)
        before = len(self.lines)
        end = self._text_block(ImageDraw.Draw(block), pad, pad, width, block.height - pad, size, TEXT_LINE,
                               n_lines=n_lines)
        new = self.lines[before:]
        if not new:
            return
        bw, bh = block.width, int(min(block.height, end - int(size * 0.4) + pad))
        block = block.crop((0, 0, bw, bh))
        a = math.radians(angle_deg)
        ca, sa = math.cos(a), math.sin(a)

        def to_page(p):  # block pixel -> page, rotating clockwise on screen about the block centre
            dx, dy = p[..., 0] - bw / 2, p[..., 1] - bh / 2
            return np.stack([cx + dx * ca - dy * sa, cy + dx * sa + dy * ca], axis=-1)

        outline = to_page(np.array([(0, 0), (bw, 0), (bw, bh), (0, bh)], np.float64))
        x0, y0, x1, y1 = fit if fit is not None else (0, 0, self.page_w, self.page_h)
        if outline[:, 0].min() < x0 or outline[:, 0].max() > x1 or outline[:, 1].min() < y0 or \
                outline[:, 1].max() > y1:
            del self.lines[before:]
            return
        for line in new:
            line.corners = to_page(line.corners)
        # Pillow rotates counter-clockwise for positive angles; our angles are clockwise on screen.
        turned = block.rotate(-angle_deg, resample=Image.BILINEAR, expand=True)
        ox, oy = int(round(cx - turned.width / 2)), int(round(cy - turned.height / 2))
        shift = (ox + turned.width / 2 - cx, oy + turned.height / 2 - cy)  # integer paste offset, < 0.5 px
        for line in new:
            line.corners = line.corners + np.array(shift)
        if background is not None:
            mask = Image.new("L", block.size, 255).rotate(-angle_deg, resample=Image.BILINEAR, expand=True)
            m = np.zeros((self.page_h, self.page_w), np.float32)
            self._paste(m, np.asarray(mask, np.float32) / 255.0, ox, oy)
            tint = np.asarray(background, np.float32) * rng.uniform(0.9, 1.02)
            self._tint += m[..., None] * (tint - self._tint)
        ink = np.zeros((self.page_h, self.page_w), np.float32)
        self._paste(ink, np.asarray(turned, np.float32) / 255.0, ox, oy)
        colour = self._ink_colour()
        fresh = ink > 0
        self._ink_rgb[fresh] = colour
        merged = np.maximum(np.asarray(self._ink, np.float32) / 255.0, ink)
        self._ink = Image.fromarray((merged * 255 + 0.5).astype(np.uint8))

    @staticmethod
    def _paste(dst, src, ox, oy):
        h, w = src.shape
        x0, y0 = max(ox, 0), max(oy, 0)
        x1, y1 = min(ox + w, dst.shape[1]), min(oy + h, dst.shape[0])
        if x0 < x1 and y0 < y1:
            dst[y0:y1, x0:x1] = np.maximum(dst[y0:y1, x0:x1], src[y0 - oy:y1 - oy, x0 - ox:x1 - ox])

    def _compose_page(self, Image):
        rng = self.rng
        ink = np.asarray(self._ink, np.float32)[..., None] / 255.0
        shade = raster.value_noise(rng, self.page_h, self.page_w, cell=max(self.page_w, 8) / 2, octaves=1)
        paper = self._tint * (0.93 + 0.1 * shade)[..., None]
        rgb = paper + ink * (self._ink_rgb - paper)
        rgba = np.concatenate([raster.to_uint8(rgb), np.full((self.page_h, self.page_w, 1), 255, np.uint8)], axis=2)
        return Image.fromarray(rgba, "RGBA")

    # ----------------------------------------------------------------------------------------------- camera
    def _camera(self):
        rng = self.rng
        r = rng.random()
        if r < 0.55:
            angle = rng.normal(0, 0.15)
        elif r < 0.7:
            angle = rng.choice([-1, 1]) * math.pi / 2 + rng.normal(0, 0.1)
        else:
            angle = rng.uniform(-math.pi, math.pi)
        self._angle0 = angle
        self._zoom0 = rng.uniform(0.9, 1.15)
        self._centre0 = np.array([self.width, self.height]) * rng.uniform(0.35, 0.65, 2)
        self._spin = rng.normal(0, 0.01)  # rad per frame
        self._drift = rng.normal(0, 0.8, 2)  # px per frame
        self._zoom_rate = rng.normal(0, 0.002)

    def _make_keystone(self):
        rng = self.rng
        g, h = rng.uniform(-0.45, 0.45, 2) / max(self.width, self.height)
        cx, cy = self.width / 2, self.height / 2
        # Perspective about the frame centre: x' = (x - c) / (1 + g (x - cx) + h (y - cy)) + c
        to_c = np.array([[1, 0, -cx], [0, 1, -cy], [0, 0, 1]], np.float64)
        persp = np.array([[1, 0, 0], [0, 1, 0], [g, h, 1]], np.float64)
        return np.linalg.inv(to_c) @ persp @ to_c

    def homography(self, t: float) -> np.ndarray:
        """3x3 map from page pixels to frame pixels at frame t."""
        angle = self._angle0 + self._spin * t
        zoom = self._zoom0 * (1 + self._zoom_rate * t)
        centre = self._centre0 + self._drift * t
        ca, sa = math.cos(angle) * zoom, math.sin(angle) * zoom
        # Page centre -> origin, rotate (clockwise on screen) and zoom, then to the camera's centre.
        sim = np.array([[ca, -sa, centre[0]], [sa, ca, centre[1]], [0, 0, 1]], np.float64) @ \
            np.array([[1, 0, -self.page_w / 2], [0, 1, -self.page_h / 2], [0, 0, 1]], np.float64)
        return self._keystone @ sim

    def _make_desk(self):
        rng = self.rng
        base = np.array([(0.35, 0.25, 0.17), (0.2, 0.2, 0.22), (0.55, 0.5, 0.45), (0.1, 0.1, 0.1)][rng.integers(4)],
                        np.float32)
        grain = raster.value_noise(rng, self.height, self.width, cell=12, octaves=2)
        return base * (0.8 + 0.4 * grain)[..., None]

    # ----------------------------------------------------------------------------------------------- drawing
    def render(self, t: int = 0, sensor_noise: bool = True) -> SceneFrame:
        """Frame ``t`` (camera moved by t frames) with its ground truth."""
        Image, _, ImageFilter, _ = _pil()
        hom = self.homography(t)
        inv = np.linalg.inv(hom)
        inv = inv / inv[2, 2]
        page = self._page_rgba.transform((self.width, self.height), Image.PERSPECTIVE, tuple(inv.ravel()[:8]),
                                         resample=Image.BILINEAR, fillcolor=(0, 0, 0, 0))
        rgba = np.asarray(page, np.float32) / 255.0
        alpha = rgba[..., 3:]
        img = self._desk + alpha * (rgba[..., :3] - self._desk)
        if self.blur > 0:
            img = np.asarray(Image.fromarray(raster.to_uint8(img)).filter(ImageFilter.GaussianBlur(self.blur)),
                             np.float32) / 255.0
        if sensor_noise:
            noise_rng = np.random.default_rng([self.seed, 0xD0C, t])
            img = img + noise_rng.standard_normal(img.shape, dtype=np.float32) * 0.015
        keep, rows, reading = self._in_frame(hom)
        return SceneFrame(raster.to_uint8(img), make_boxes(rows), np.asarray([self.lines[i].track_id for i in keep],
                                                                             np.int64),
                          CLASS_NAMES, int(t), texts=tuple(self.lines[i].text for i in keep),
                          reading_angles=reading[keep].astype(np.float32))

    def ink(self, t: int = 0) -> np.ndarray:
        """(H, W) float32 text ink coverage in [0, 1] of frame t, warped exactly as ``render`` warps the page."""
        Image = _pil()[0]
        inv = np.linalg.inv(self.homography(t))
        inv = inv / inv[2, 2]
        warped = self._ink.transform((self.width, self.height), Image.PERSPECTIVE, tuple(inv.ravel()[:8]),
                                     resample=Image.BILINEAR, fillcolor=0)
        return np.asarray(warped, np.float32) / 255.0

    def _in_frame(self, hom):
        """Indices of the lines whose centre is inside the frame, their (cx, cy, w, h, angle, class) rows and every
        line's reading angle."""
        boxes = self.line_boxes_at(hom)
        keep = [i for i, row in enumerate(boxes) if 0 <= row[0] < self.width and 0 <= row[1] < self.height]
        return keep, [boxes[i][:6] for i in keep], self.reading_angles_at(hom)

    def line_boxes(self, t: int = 0):
        """Every line's (cx, cy, w, h, angle, class, track id) at frame t, in or out of the frame."""
        return self.line_boxes_at(self.homography(t))

    def line_boxes_at(self, hom):
        if not self.lines:
            return []
        boxes = _min_area_rects(self._frame_corners(hom))
        return [(*map(float, box), line.cls, line.track_id) for line, box in zip(self.lines, boxes)]

    def line_texts(self) -> Tuple[str, ...]:
        """Every line's string, in the order of :meth:`line_boxes`."""
        return tuple(line.text for line in self.lines)

    def reading_angles_at(self, hom) -> np.ndarray:
        """(N,) the direction each line reads in under ``hom``: the angle of its mapped baseline direction (the
        page rectangle's top edge, left to right), radians clockwise on screen in [-pi, pi)."""
        if not self.lines:
            return np.zeros(0)
        q = self._frame_corners(hom)
        # Under perspective the top and bottom edges differ slightly: their mean direction is the line's.
        d = (q[:, 1] - q[:, 0]) + (q[:, 2] - q[:, 3])
        return (np.arctan2(d[:, 1], d[:, 0]) + math.pi) % (2 * math.pi) - math.pi

    def _frame_corners(self, hom) -> np.ndarray:
        corners = np.stack([line.corners for line in self.lines])  # (N, 4, 2) page pixels
        pts = np.concatenate([corners, np.ones(corners.shape[:2] + (1,))], axis=2) @ hom.T
        return pts[..., :2] / pts[..., 2:]


def _min_area_rects(quads: np.ndarray) -> np.ndarray:
    """(N, 5) cx, cy, w, h, angle of the minimum-area rectangle around each (N, 4, 2) convex quadrilateral (the
    rectangle itself when it is one). Tries each edge's direction, as rotating calipers does for a convex polygon;
    w runs along the first edge of the best direction."""
    best = None
    for k in range(4):
        edge = quads[:, (k + 1) % 4] - quads[:, k]
        a = np.arctan2(edge[:, 1], edge[:, 0])
        c, s = np.cos(a)[:, None], np.sin(a)[:, None]
        u = quads[..., 0] * c + quads[..., 1] * s
        v = -quads[..., 0] * s + quads[..., 1] * c
        umin, umax, vmin, vmax = u.min(1), u.max(1), v.min(1), v.max(1)
        w, h = umax - umin, vmax - vmin
        uc, vc = (umin + umax) / 2, (vmin + vmax) / 2
        cand = np.stack([uc * c[:, 0] - vc * s[:, 0], uc * s[:, 0] + vc * c[:, 0], w, h, a], axis=1)
        if best is None:
            best = cand
        else:
            better = (w * h) < best[:, 2] * best[:, 3] - 1e-9
            best[better] = cand[better]
    return best


def document_frame(seed: int, size=256, **options) -> SceneFrame:
    """One document frame (frame 0 of the scene of ``seed``); options as :class:`DocumentScene`."""
    return DocumentScene(seed, size, **options).render(0)


def document_video(seed: int, n_frames: int = 30, size=256, **options) -> Iterator[SceneFrame]:
    """``n_frames`` frames of one page under a moving camera, text-line ground truth with track ids."""
    n_frames = check_frames(n_frames)
    scene = DocumentScene(seed, size, **options)
    for t in range(n_frames):
        yield scene.render(t)
