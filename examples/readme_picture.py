"""The README picture: one synthetic aerial frame, its oriented detections drawn two ways.

Left: ``obbmeta.osd.draw_obbs`` rasterises the boxes straight into the frame tensor (CPU here; CUDA the same).
Right: the same boxes written into a real NvDsBatchMeta (NVIDIA's libnvds_meta) with ``nvds.attach_obbs``, the
overlay planned with ``obbmeta.osd.add_obb_overlay`` (display-meta lines, as nvdsosd on DeepStream 7.1 / 8.0 would
get them), read back with ``nvds.read_display_lines`` and rendered here with the rasteriser (a line is a box of
height 0); the labels where the overlay moved the objects' text_params; and in thin grey the objects'
rect_params, the axis-aligned box that nvtracker tracks.

Usage: python examples/readme_picture.py [--out docs/images/obb_overlay.png] [--width 960 --height 540]
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageDraw, ImageFont

from obbmeta import OrientedBoxes, nvds
from obbmeta.osd import add_obb_overlay, draw_obbs

CLASS_NAMES = ["plane", "ship", "vehicle", "tank"]
PLANE, SHIP, VEHICLE, TANK = range(4)
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "docs" / "images" / "obb_overlay.png"


# ---------------------------------------------------------------- the synthetic scene (base size 960 x 540)

def rotate(points, cx, cy, angle):
    """Local (x along the box's width, y along its height) -> image, positive angle = clockwise on screen."""
    c, s = math.cos(angle), math.sin(angle)
    return [(cx + c * x - s * y, cy + s * x + c * y) for x, y in points]


def rect(w, h, x0=0.0, y0=0.0):
    return [(x0 - w / 2, y0 - h / 2), (x0 + w / 2, y0 - h / 2), (x0 + w / 2, y0 + h / 2), (x0 - w / 2, y0 + h / 2)]


def plane_shapes(length, span):
    fuselage = rect(length, 0.13 * span)
    wings = [(0.12 * length, -0.5 * span), (0.22 * length, -0.5 * span), (0.08 * length, 0.0),
             (0.22 * length, 0.5 * span), (0.12 * length, 0.5 * span), (-0.14 * length, 0.0)]
    tail = [(-0.36 * length, -0.2 * span), (-0.3 * length, -0.2 * span), (-0.4 * length, 0.0),
            (-0.3 * length, 0.2 * span), (-0.36 * length, 0.2 * span), (-0.5 * length, 0.0)]
    return [((226, 229, 233), fuselage), ((210, 214, 220), wings), ((210, 214, 220), tail)]


def ship_shapes(length, beam, hull):
    body = [(-length / 2, -beam / 2), (length / 4, -beam / 2), (length / 2, 0.0), (length / 4, beam / 2),
            (-length / 2, beam / 2)]
    bridge = rect(0.16 * length, 0.7 * beam, -0.3 * length)
    deck = rect(0.45 * length, 0.5 * beam, 0.05 * length)
    return [(hull, body), ((236, 236, 230), bridge), ((150, 92, 60), deck)]


def vehicle_shapes(length, width, paint):
    return [(paint, rect(length, width)), ((40, 48, 60), rect(0.18 * length, 0.8 * width, 0.12 * length))]


def make_scene(width: int, height: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An (H, W, 3) uint8 aerial frame and its objects' oriented boxes (xywhr, labels)."""
    rng = np.random.default_rng(seed)
    k = min(width / 960, height / 540)
    sx, sy = width / 960, height / 540

    def at(x, y):
        return x * sx, y * sy

    # Ground: smooth colour variation (upsampled coarse noise keeps the PNG small).
    coarse = rng.normal(0, 1, (14, 24)).astype(np.float32)
    base = np.array([112, 124, 86], np.float32)
    noise = np.asarray(Image.fromarray(((coarse * 30) + 128).clip(0, 255).astype(np.uint8)).resize(
        (width, height), Image.BICUBIC), np.float32)[..., None] - 128
    ground = Image.fromarray((base + noise * np.float32([0.45, 0.5, 0.35])).clip(0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(ground)

    def poly(points, fill):
        draw.polygon([(float(x), float(y)) for x, y in points], fill=fill)

    for cx, cy, w, h, a, colour in ((120, 420, 260, 150, 0.35, (132, 140, 92)), (330, 470, 200, 120, 0.35,
                                    (146, 136, 98)), (760, 90, 300, 160, -0.2, (98, 116, 74))):
        poly(rotate(rect(w * k, h * k), *at(cx, cy), a), colour)
    # Water (a harbour basin, lower right).
    poly([at(585, 250), at(960, 205), at(960, 540), at(540, 540)], (48, 82, 108))
    # Airfield apron and runway (upper left).
    apron = rotate(rect(420 * k, 200 * k), *at(235, 150), -0.12)
    poly(apron, (150, 150, 146))
    runway = rotate(rect(470 * k, 36 * k), *at(250, 40), -0.12)
    poly(runway, (92, 92, 96))
    for t in np.linspace(-0.42, 0.42, 9):
        poly(rotate(rect(24 * k, 3 * k, t * 470 * k), *at(250, 40), -0.12), (230, 230, 230))
    # Roads.
    roads = [(at(-20, 330), at(600, 262)), (at(470, -20), at(515, 560))]
    for (x0, y0), (x1, y1) in roads:
        draw.line([(x0, y0), (x1, y1)], fill=(86, 86, 88), width=max(2, int(26 * k)))
        n = int(math.hypot(x1 - x0, y1 - y0) / (28 * k))
        for t in np.linspace(0, 1, n)[::2]:
            xm, ym = x0 + t * (x1 - x0), y0 + t * (y1 - y0)
            dx, dy = (x1 - x0) / n * 0.4, (y1 - y0) / n * 0.4
            draw.line([(xm, ym), (xm + dx, ym + dy)], fill=(214, 204, 120), width=max(1, int(2 * k)))

    objects = []  # (cx, cy, w, h, angle, class, shapes)

    def add(cx, cy, w, h, angle, cls, shapes):
        objects.append((cx, cy, w, h, angle, cls, shapes))

    # Planes on the apron, at several headings.
    for x, y, a in ((110, 130, 0.5), (215, 175, -0.9), (320, 125, 2.6), (390, 205, 1.45)):
        cx, cy = at(x, y)
        add(cx, cy, 62 * k, 58 * k, a, PLANE, plane_shapes(62 * k, 58 * k))
    # Ships in the basin; the last one leaves the frame at the right edge.
    for x, y, a, ln, hull in ((640, 330, -0.25, 86, (70, 72, 80)), (745, 300, -0.3, 70, (150, 40, 40)),
                              (700, 440, 0.6, 96, (40, 60, 90)), (850, 380, -1.2, 64, (200, 200, 196)),
                              (945, 495, 0.25, 92, (86, 64, 52))):
        cx, cy = at(x, y)
        add(cx, cy, ln * k, 0.22 * ln * k, a, SHIP, ship_shapes(ln * k, 0.22 * ln * k, hull))
    # Vehicles along the roads, both lanes.
    paints = [(200, 40, 40), (230, 230, 230), (40, 90, 180), (30, 30, 30), (230, 190, 40), (120, 120, 130)]
    for (x0, y0), (x1, y1) in roads:
        a = math.atan2(y1 - y0, x1 - x0)
        for i, t in enumerate((0.12, 0.27, 0.41, 0.58, 0.77)):
            side = 6 * k if i % 2 else -6 * k
            cx = x0 + t * (x1 - x0) - math.sin(a) * side
            cy = y0 + t * (y1 - y0) + math.cos(a) * side
            add(cx, cy, 17 * k, 8 * k, a + (math.pi if i % 2 else 0.0), VEHICLE,
                vehicle_shapes(17 * k, 8 * k, paints[(i + len(objects)) % len(paints)]))
    # Storage tanks by the harbour: round, so the oriented box is a square at 0 degrees.
    tanks = []
    for x, y in ((612, 135), (680, 135), (612, 205)):
        cx, cy = at(x, y)
        tanks.append((cx, cy))
        objects.append((cx, cy, 38 * k, 38 * k, 0.0, TANK, []))

    for cx, cy, _w, _h, a, _cls, shapes in objects:  # soft shadows first, then the shapes
        for _, pts in shapes:
            poly(rotate(pts, cx + 3 * k, cy + 3 * k, a), (60, 66, 52))
    for cx, cy in tanks:
        r = 19 * k
        draw.ellipse([cx - r + 3 * k, cy - r + 3 * k, cx + r + 3 * k, cy + r + 3 * k], fill=(60, 66, 52))
        draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=(206, 206, 200))
        draw.ellipse([cx - 0.6 * r, cy - 0.6 * r, cx + 0.6 * r, cy + 0.6 * r], fill=(186, 186, 180))
    for cx, cy, _w, _h, a, _cls, shapes in objects:
        for colour, pts in shapes:
            poly(rotate(pts, cx, cy, a), colour)

    xywhr = np.array([o[:5] for o in objects], np.float32)
    labels = np.array([o[5] for o in objects], np.int64)
    return np.asarray(ground, np.uint8).copy(), xywhr, labels


# ---------------------------------------------------------------- the two panels

def segments_as_boxes(lines) -> tuple[torch.Tensor, torch.Tensor]:
    """Display-meta lines (pixel indices) -> boxes of height 0 through the pixel centres, and their colours."""
    xywhr, colours = [], []
    for x1, y1, x2, y2, _width, rgba in lines:
        ax, ay, bx, by = x1 + 0.5, y1 + 0.5, x2 + 0.5, y2 + 0.5
        xywhr.append(((ax + bx) / 2, (ay + by) / 2, math.hypot(bx - ax, by - ay), 0.0, math.atan2(by - ay, bx - ax)))
        colours.append([round(255 * v) for v in rgba[:3]])
    return torch.tensor(xywhr, dtype=torch.float32).reshape(-1, 5), torch.tensor(colours, dtype=torch.uint8)


def overlay_panel(frame_rgb: np.ndarray, dets: OrientedBoxes, font) -> tuple[np.ndarray, dict]:
    height, width = frame_rgb.shape[:2]
    with nvds.BatchMeta.create(1) as batch:
        frame = batch.add_frame(source_id=0, width=width, height=height, frame_num=0)
        attached = nvds.attach_obbs(batch, frame, dets, class_names=CLASS_NAMES)
        result = add_obb_overlay(batch, frame, hide_aabb=True)
        lines = nvds.read_display_lines(frame)
        objects = nvds.read_boxes(frame)
        obj_t = batch.layout.object_meta
        labels = []
        for label, address in zip(nvds.label_strings(objects), objects["address"].tolist()):
            t = obj_t.from_address(address).text_params
            labels.append((label, t.x_offset, t.y_offset))
    image = torch.from_numpy(frame_rgb.copy())
    # What nvtracker sees: each object's rect_params, thin grey (hidden from nvdsosd by hide_aabb=True).
    aabbs = torch.tensor([[x + w / 2, y + h / 2, w, h, 0.0] for (x, y, w, h) in objects["rect"].tolist()])
    draw_obbs(image, aabbs.reshape(-1, 5), colors=(175, 175, 175), thickness=1)
    boxes, colours = segments_as_boxes(lines)
    widths = {line[4] for line in lines}
    for w in widths:  # one call per line width (one in practice)
        keep = torch.tensor([line[4] == w for line in lines])
        draw_obbs(image, boxes[keep], colors=colours[keep], thickness=float(w))
    picture = Image.fromarray(image.numpy())
    draw = ImageDraw.Draw(picture)
    for text, x, y in labels:  # as attach_obbs sets text_params: white on black, at (x_offset, y_offset)
        left, top, right, bottom = draw.textbbox((x, y), text, font=font)
        draw.rectangle([left - 1, top - 1, right + 1, bottom + 1], fill=(0, 0, 0))
        draw.text((x, y), text, font=font, fill=(255, 255, 255))
    stats = {"objects": attached.written, "lines": result.lines, "display_metas": result.display_metas,
             "drawn": result.drawn, "labels": result.labels}
    return np.asarray(picture), stats


def main(out: Path = DEFAULT_OUT, width: int = 960, height: int = 540, seed: int = 0) -> dict:
    frame, xywhr, labels = make_scene(width, height, seed)
    dets = OrientedBoxes(torch.from_numpy(xywhr), torch.full((len(labels),), 0.9), torch.from_numpy(labels))
    left = draw_obbs(torch.from_numpy(frame.copy()), dets, thickness=2).numpy()
    font = ImageFont.load_default(size=max(8, round(11 * height / 540)))
    right, stats = overlay_panel(frame, dets, font)
    gap, band = max(2, width // 120), max(14, round(26 * height / 540))
    canvas = Image.new("RGB", (2 * width + gap, height + band), (255, 255, 255))
    canvas.paste(Image.fromarray(left), (0, band))
    canvas.paste(Image.fromarray(right), (width + gap, band))
    draw = ImageDraw.Draw(canvas)
    caption = ImageFont.load_default(size=max(8, round(15 * height / 540)))
    draw.text((6, band // 2), "obbmeta.osd.draw_obbs: rasterised into the frame (CPU / CUDA)", font=caption,
              fill=(20, 20, 20), anchor="lm")
    draw.text((width + gap + 6, band // 2), f"add_obb_overlay: {stats['lines']} nvdsosd lines in "
              f"{stats['display_metas']} display metas (DS 7.1+); grey: rect_params for nvtracker", font=caption,
              fill=(20, 20, 20), anchor="lm")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    canvas.save(out, optimize=True)
    stats["size"] = canvas.size
    return stats


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--width", type=int, default=960)
    parser.add_argument("--height", type=int, default=540)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    stats = main(args.out, args.width, args.height, args.seed)
    print(f"wrote {args.out} ({stats['size'][0]}x{stats['size'][1]}): {stats['objects']} objects, "
          f"{stats['lines']} lines in {stats['display_metas']} display metas")
