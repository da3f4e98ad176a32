"""Procedural aerial scenes: textured ground with fields, roads, parking lots, a harbour, an airport apron and tank
farms, with vehicles, ships, planes and storage tanks drawn as shaded oriented shapes.

Ground truth (one oriented box per object, in pixels):

* vehicle, ship: the body's rectangle; width along the heading (length), height across it.
* plane: length (nose to tail) along the heading by wingspan across it — the rectangle that just holds the cross.
* storage_tank: a circle of radius r has no orientation, so its box is defined as the axis-aligned square of side
  2r around it, angle 0 (a rotated square would hold the circle too; this one is the convention here).

Objects may move (constant speed with a constant turn rate): road traffic, ships under way, taxiing planes, cars
turning on open ground. A video keeps the camera and ground fixed; an object is in a frame's ground truth while its
centre lies inside the frame, so movers enter and leave. Every object keeps its track id for the whole video.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterator, List, Tuple

import numpy as np

from .._validators import number_in_range
from . import SCALES, raster
from .common import SceneFrame, check_frames, check_seed, check_size, make_boxes

CLASS_NAMES: Tuple[str, ...] = ("vehicle", "ship", "plane", "storage_tank")
VEHICLE, SHIP, PLANE, TANK = range(4)

_CAR_COLOURS = np.array([
    (0.92, 0.92, 0.9), (0.1, 0.1, 0.11), (0.55, 0.56, 0.58), (0.75, 0.76, 0.78), (0.7, 0.12, 0.1),
    (0.12, 0.25, 0.6), (0.15, 0.35, 0.2), (0.85, 0.7, 0.15), (0.35, 0.2, 0.15), (0.9, 0.45, 0.1),
], np.float32)
_HULL_COLOURS = np.array([(0.75, 0.75, 0.75), (0.45, 0.2, 0.15), (0.2, 0.25, 0.35), (0.9, 0.9, 0.88),
                          (0.15, 0.35, 0.3)], np.float32)
_PLANE_COLOURS = np.array([(0.93, 0.93, 0.94), (0.8, 0.82, 0.85), (0.6, 0.62, 0.64), (0.88, 0.88, 0.8)], np.float32)
_BIOMES = [  # (low, high) ground colours mixed by low-frequency noise
    ((0.30, 0.40, 0.20), (0.45, 0.50, 0.30)),
    ((0.50, 0.46, 0.34), (0.62, 0.58, 0.45)),
    ((0.40, 0.33, 0.25), (0.52, 0.46, 0.36)),
    ((0.45, 0.45, 0.43), (0.58, 0.57, 0.54)),
]


@dataclass
class _Object:
    cls: int
    x: float
    y: float
    length: float  # along the heading
    width: float  # across it
    heading: float
    colour: np.ndarray
    track_id: int = 0
    speed: float = 0.0  # px per frame along the heading
    turn: float = 0.0  # rad per frame
    style: dict = field(default_factory=dict)

    def pose(self, t: float) -> Tuple[float, float, float]:
        """(x, y, heading) after t frames of constant speed and turn rate."""
        if self.speed == 0.0:
            return self.x, self.y, self.heading
        h = self.heading + self.turn * t
        if abs(self.turn) < 1e-9:
            return self.x + self.speed * t * math.cos(h), self.y + self.speed * t * math.sin(h), h
        r = self.speed / self.turn
        return (self.x + r * (math.sin(h) - math.sin(self.heading)),
                self.y - r * (math.cos(h) - math.cos(self.heading)), h)

    def box(self, t: float) -> Tuple[float, float, float, float, float]:
        x, y, h = self.pose(t)
        if self.cls == TANK:
            return x, y, self.length, self.length, 0.0
        return x, y, self.length, self.width, h


class AerialScene:
    """One aerial scene (ground, zones and objects) from a seed; ``render(t)`` draws frame t.

    Args:
        seed: any int >= 0; the same seed gives the same scene and frames.
        size: frame size, an int or (width, height).
        scale: object and zone size multiplier (1.0 suits 256-640 px frames: cars about 10-20 px long).
    """

    class_names = CLASS_NAMES

    def __init__(self, seed: int, size=256, scale: float = 1.0):
        self.seed = check_seed(seed)
        self.width, self.height = check_size("size", size)
        self.scale = number_in_range("scale", scale, *SCALES["aerial"])
        self.rng = np.random.default_rng([self.seed, 0xAE])
        self.objects: List[_Object] = []
        self._footprints: List[Tuple[float, float, float]] = []  # (x, y, radius) of zones, to keep them apart
        self._roads: List[Tuple[float, float, float, float]] = []  # (x, y, angle, half width)
        self._water = None  # (x, y, nx, ny): water where (p - (x, y)) . n > 0
        self.ground = self._make_ground()
        for i, obj in enumerate(self.objects):
            obj.track_id = i + 1

    # ----------------------------------------------------------------------------------------------- layout
    def _make_ground(self) -> np.ndarray:
        rng, w, h, s = self.rng, self.width, self.height, self.scale
        low, high = (np.array(c, np.float32) for c in _BIOMES[rng.integers(len(_BIOMES))])
        coarse = raster.value_noise(rng, h, w, cell=64 * s, octaves=2)
        fine = raster.value_noise(rng, h, w, cell=6 * s, octaves=2)
        img = low + (high - low) * coarse[..., None]
        img *= (0.88 + 0.24 * fine)[..., None]
        xs, ys = raster.pixel_centres(h, w)
        area = w * h / (256.0 * 256.0) / (s * s)
        for _ in range(rng.poisson(2.0 * area)):
            self._field(img, xs, ys)
        if rng.random() < 0.4:
            self._harbour(img, xs, ys)
        for _ in range(rng.choice([0, 1, 1, 2])):
            self._road(img, xs, ys)
        zones = [self._parking_lot, self._parking_lot, self._apron, self._tank_farm]
        for _ in range(max(1, rng.poisson(1.6 * area))):
            zones[rng.integers(len(zones))](img)
        for _ in range(rng.poisson(3 * area)):
            self._loose_vehicle(img)
        return img

    def _place(self, radius: float, tries: int = 30, on_water: bool = False):
        """A centre for a zone of ``radius`` that stays clear of other zones, roads and (unless on_water) water."""
        rng = self.rng
        for _ in range(tries):
            x = rng.uniform(-0.1 * self.width, 1.1 * self.width)
            y = rng.uniform(-0.1 * self.height, 1.1 * self.height)
            if any(math.hypot(x - fx, y - fy) < radius + fr for fx, fy, fr in self._footprints):
                continue
            if any(abs(-(x - rx) * math.sin(ra) + (y - ry) * math.cos(ra)) < radius + rw for rx, ry, ra, rw in
                   self._roads):
                continue
            if self._water is not None:
                wx, wy, nx, ny = self._water
                d = (x - wx) * nx + (y - wy) * ny
                if (d < radius) if on_water else (d > -radius):
                    continue
            elif on_water:
                return None
            self._footprints.append((x, y, radius))
            return x, y
        return None

    def _field(self, img, xs, ys):
        rng, s = self.rng, self.scale
        cx, cy = rng.uniform(0, self.width), rng.uniform(0, self.height)
        fw, fh, a = rng.uniform(40, 150) * s, rng.uniform(30, 120) * s, rng.uniform(0, math.pi)
        base = np.array(_BIOMES[rng.integers(len(_BIOMES))][rng.integers(2)], np.float32) * rng.uniform(0.85, 1.15)
        period = rng.uniform(2.5, 6.0) * s
        win = raster.window(self.height, self.width, cx, cy, math.hypot(fw, fh) / 2)
        if win is None:
            return
        rows, cols = win
        u, v = raster.local_coords(xs[:, cols], ys[rows], cx, cy, a)
        cov = raster.coverage(raster.box_sdf(u, v, fw / 2, fh / 2))
        stripes = 0.92 + 0.08 * np.sin((2 * math.pi / period) * u)  # crop rows
        raster.blend(img, rows, cols, cov * 0.9, base * stripes[..., None])

    def _road(self, img, xs, ys):
        rng, s = self.rng, self.scale
        x, y, a = rng.uniform(0.15, 0.85) * self.width, rng.uniform(0.15, 0.85) * self.height, rng.uniform(0, math.pi)
        half = rng.uniform(6, 9) * s
        u, v = raster.local_coords(xs, ys, x, y, a)
        cov = raster.coverage(np.abs(v) - half)
        asphalt = np.array((0.27, 0.27, 0.29), np.float32) * rng.uniform(0.85, 1.2)
        raster.blend(img, slice(None), slice(None), cov, asphalt)
        dash = raster.coverage(np.abs(v) - 0.5 * s) * ((u % (12 * s)) < 6 * s)
        raster.blend(img, slice(None), slice(None), dash * 0.8, (0.9, 0.9, 0.85))
        self._roads.append((x, y, a, half))
        # Traffic: one lane each way, a common speed per lane so cars keep their spacing.
        reach = math.hypot(self.width, self.height) / 2 + 60 * s
        for lane in (-1, 1):
            speed = rng.uniform(0.8, 2.5) * s
            heading = a if lane > 0 else a + math.pi
            pos = -reach + rng.uniform(0, 30) * s
            while pos < reach:
                length, width = self._vehicle_size()
                pos += length / 2
                if rng.random() < 0.5:  # right-hand traffic: lane +1 drives towards +u on the +v side
                    off = lane * half / 2
                    self.objects.append(self._vehicle(
                        x + pos * math.cos(a) - off * math.sin(a), y + pos * math.sin(a) + off * math.cos(a),
                        length, width, heading, speed=speed))
                pos += length / 2 + rng.uniform(4, 30) * s

    def _vehicle_size(self, truck_p: float = 0.15):
        rng, s = self.rng, self.scale
        if rng.random() < truck_p:
            return rng.uniform(16, 26) * s, rng.uniform(6.5, 8.5) * s
        return rng.uniform(10, 15) * s, rng.uniform(5, 7) * s

    def _vehicle(self, x, y, length, width, heading, speed=0.0, turn=0.0):
        # Long vehicles are drawn as trucks (a cab and a cargo box), the rest as cars.
        return _Object(VEHICLE, x, y, length, width, heading, self._car_colour(), speed=speed, turn=turn,
                       style={"truck": length > 15.5 * self.scale})

    def _car_colour(self):
        c = _CAR_COLOURS[self.rng.integers(len(_CAR_COLOURS))]
        return np.clip(c * self.rng.uniform(0.85, 1.1) + self.rng.normal(0, 0.03, 3), 0, 1).astype(np.float32)

    def _zone_angle(self):
        rng = self.rng
        if rng.random() < 0.5:  # the 30-60 degree rows the brief asks for, in any quadrant
            return rng.uniform(math.pi / 6, math.pi / 3) + rng.integers(4) * math.pi / 2
        return rng.uniform(0, math.pi)

    def _paint_rect(self, img, cx, cy, w, h, a, colour, alpha=1.0, texture=0.0):
        rows_cols = raster.window(self.height, self.width, cx, cy, math.hypot(w, h) / 2)
        if rows_cols is None:
            return
        rows, cols = rows_cols
        xs, ys = raster.pixel_centres(self.height, self.width)
        u, v = raster.local_coords(xs[:, cols], ys[rows], cx, cy, a)
        cov = raster.coverage(raster.box_sdf(u, v, w / 2, h / 2)) * alpha
        colour = np.asarray(colour, np.float32)
        if texture:
            noise = self.rng.normal(1.0, texture, cov.shape).astype(np.float32)
            colour = colour * noise[..., None]
        raster.blend(img, rows, cols, cov, colour)

    def _parking_lot(self, img):
        rng, s = self.rng, self.scale
        truck_lot = rng.random() < 0.2
        car_len = (26 if truck_lot else 15) * s
        stall_w = (rng.uniform(9.5, 12) if truck_lot else rng.uniform(7, 9.5)) * s
        depth = car_len + rng.uniform(1.5, 3) * s
        n_rows, n_stalls = int(rng.integers(1, 4)), int(rng.integers(5, 14))
        aisle = rng.uniform(8, 14) * s
        lot_w, lot_h = n_stalls * stall_w + 4 * s, n_rows * depth + (n_rows - 1) * aisle / 2 + 4 * s
        placed = self._place(math.hypot(lot_w, lot_h) / 2)
        if placed is None:
            return
        cx, cy = placed
        a = self._zone_angle()  # direction along the rows
        self._paint_rect(img, cx, cy, lot_w, lot_h, a, (0.36, 0.36, 0.37), texture=0.04)
        ca, sa = math.cos(a), math.sin(a)
        fill = rng.uniform(0.55, 0.95)
        parallel = rng.random() < 0.15  # cars along the row instead of nose-in
        for r in range(n_rows):
            row_v = -lot_h / 2 + 2 * s + depth / 2 + r * (depth + aisle / 2)
            for k in range(n_stalls):
                row_u = -lot_w / 2 + 2 * s + (k + 0.5) * stall_w
                x, y = cx + row_u * ca - row_v * sa, cy + row_u * sa + row_v * ca
                # painted stall separator
                self._paint_rect(img, x - stall_w / 2 * ca, y - stall_w / 2 * sa, 0.8 * s, depth * 0.9, a,
                                 (0.8, 0.8, 0.78), alpha=0.6)
                if rng.random() > fill:
                    continue
                length, width = self._vehicle_size(truck_p=0.8 if truck_lot else 0.0)
                length = min(length, depth - 1.0 * s)
                width = min(width, stall_w - 1.5 * s)
                if parallel:
                    length = min(length, stall_w - 1.5 * s)
                    width = min(width, depth - 1.0 * s)
                    heading = a + (math.pi if rng.random() < 0.5 else 0.0)
                else:
                    heading = a + math.pi / 2 + (math.pi if rng.random() < 0.5 else 0.0)
                jitter = rng.normal(0, 0.4 * s, 2)
                self.objects.append(self._vehicle(x + jitter[0], y + jitter[1], length, width,
                                                  heading + rng.normal(0, 0.04)))

    def _harbour(self, img, xs, ys):
        rng, s = self.rng, self.scale
        wx, wy = rng.uniform(0.25, 0.75) * self.width, rng.uniform(0.25, 0.75) * self.height
        a = rng.uniform(0, 2 * math.pi)
        nx, ny = math.cos(a), math.sin(a)
        d = (xs - wx) * nx + (ys - wy) * ny
        cov = raster.coverage(-d)  # water where d > 0
        ripple = raster.value_noise(rng, self.height, self.width, cell=10 * s, octaves=2)
        water = np.array((0.12, 0.22, 0.32), np.float32) * rng.uniform(0.8, 1.2)
        raster.blend(img, slice(None), slice(None), cov, water * (0.85 + 0.3 * ripple)[..., None])
        # shore strip
        raster.blend(img, slice(None), slice(None), raster.coverage(np.abs(d) - 1.5 * s) * 0.7, (0.6, 0.57, 0.5))
        self._water = (wx, wy, nx, ny)
        # Piers perpendicular to the shore, ships moored side by side along them.
        along = (-ny, nx)
        for _p in range(rng.integers(1, 3)):
            offset = rng.uniform(-0.4, 0.4) * max(self.width, self.height)
            pier_len = rng.uniform(50, 110) * s
            pier_w = rng.uniform(4, 7) * s
            px = wx + offset * along[0] + nx * pier_len / 2
            py = wy + offset * along[1] + ny * pier_len / 2
            if any(math.hypot(px - fx, py - fy) < pier_len / 2 + fr for fx, fy, fr in self._footprints):
                continue
            self._footprints.append((px, py, pier_len / 2 + 30 * s))
            self._paint_rect(img, px, py, pier_len, pier_w, a, (0.55, 0.53, 0.5), texture=0.05)
            for side in (-1, 1):
                ship_len = rng.uniform(22, 45) * s
                pos = 4 * s
                while pos < pier_len - 6 * s:
                    ship_w = rng.uniform(6, 11) * s
                    pos += ship_w / 2
                    if pos > pier_len - 4 * s:
                        break
                    if rng.random() < 0.8:
                        length = ship_len * rng.uniform(0.85, 1.1)
                        dist = pier_w / 2 + 1.5 * s + length / 2
                        u = -pier_len / 2 + pos
                        x = px + u * nx + side * dist * along[0]
                        y = py + u * ny + side * dist * along[1]
                        heading = math.atan2(along[1], along[0]) + (0 if side > 0 else math.pi)
                        self.objects.append(self._ship(x, y, length, ship_w, heading))
                    pos += ship_w / 2 + rng.uniform(1.5, 5) * s
        # Ships under way in open water.
        for _ in range(rng.integers(0, 4)):
            length = rng.uniform(24, 70) * s
            width = length * rng.uniform(0.16, 0.25)
            dist = rng.uniform(30, 120) * s
            x = wx + nx * dist + along[0] * rng.uniform(-120, 120) * s
            y = wy + ny * dist + along[1] * rng.uniform(-120, 120) * s
            if any(math.hypot(x - fx, y - fy) < length / 2 + fr for fx, fy, fr in self._footprints):
                continue
            heading = rng.uniform(0, 2 * math.pi)
            ship = self._ship(x, y, length, width, heading)
            ship.speed, ship.turn = rng.uniform(0.4, 1.6) * s, rng.normal(0, 0.008)
            self.objects.append(ship)

    def _ship(self, x, y, length, width, heading):
        rng = self.rng
        colour = _HULL_COLOURS[rng.integers(len(_HULL_COLOURS))] * rng.uniform(0.85, 1.1)
        style = {"bow": rng.uniform(0.12, 0.25), "bridge": rng.uniform(-0.42, -0.2),
                 "cargo": rng.random() < 0.5, "seed": int(rng.integers(1 << 30))}
        return _Object(SHIP, x, y, length, width, heading, colour.astype(np.float32), style=style)

    def _apron(self, img):
        rng, s = self.rng, self.scale
        n = int(rng.integers(2, 6))
        length = rng.uniform(24, 44) * s
        span = length * rng.uniform(0.85, 1.15)
        gap = rng.uniform(3, 10) * s
        apron_w, apron_h = n * (span + gap) + 6 * s, length + 14 * s
        placed = self._place(math.hypot(apron_w, apron_h) / 2 + 10 * s)
        if placed is None:
            return
        cx, cy = placed
        a = self._zone_angle()
        self._paint_rect(img, cx, cy, apron_w, apron_h + 16 * s, a, (0.62, 0.62, 0.6), texture=0.03)
        ca, sa = math.cos(a), math.sin(a)
        heading = a + math.pi / 2 + (math.pi if rng.random() < 0.5 else 0)
        colour = _PLANE_COLOURS[rng.integers(len(_PLANE_COLOURS))]
        for k in range(n):
            if rng.random() < 0.15:
                continue
            u = -apron_w / 2 + 3 * s + (k + 0.5) * (span + gap)
            x, y = cx + u * ca, cy + u * sa
            size = length * rng.uniform(0.92, 1.05)
            self.objects.append(self._plane(x, y, size, span * size / length, heading + rng.normal(0, 0.05), colour))
        if rng.random() < 0.6:  # one taxiing plane
            v = apron_h / 2 + 8 * s
            plane = self._plane(cx - v * sa + rng.uniform(-20, 20) * s, cy + v * ca, length * rng.uniform(0.8, 1.2),
                                span * rng.uniform(0.8, 1.2), a + (math.pi if rng.random() < 0.5 else 0),
                                _PLANE_COLOURS[rng.integers(len(_PLANE_COLOURS))])
            plane.speed, plane.turn = rng.uniform(0.4, 1.2) * s, rng.normal(0, 0.015)
            self.objects.append(plane)

    def _plane(self, x, y, length, span, heading, colour):
        rng = self.rng
        style = {"fuselage": rng.uniform(0.1, 0.14), "wing_at": rng.uniform(0.0, 0.12), "chord": rng.uniform(0.14, 0.2),
                 "sweep": rng.uniform(0.0, 0.35), "tail": rng.uniform(0.28, 0.4),
                 "tail_colour": _CAR_COLOURS[rng.integers(len(_CAR_COLOURS))]}
        return _Object(PLANE, x, y, length, span, heading, np.asarray(colour, np.float32), style=style)

    def _tank_farm(self, img):
        rng, s = self.rng, self.scale
        r = rng.uniform(5, 15) * s
        gap = rng.uniform(3, 8) * s
        nu, nv = int(rng.integers(1, 5)), int(rng.integers(1, 4))
        pitch = 2 * r + gap
        fw, fh = nu * pitch + 6 * s, nv * pitch + 6 * s
        placed = self._place(math.hypot(fw, fh) / 2)
        if placed is None:
            return
        cx, cy = placed
        a = self._zone_angle()
        self._paint_rect(img, cx, cy, fw, fh, a, (0.55, 0.52, 0.46), texture=0.04)
        ca, sa = math.cos(a), math.sin(a)
        for i in range(nu):
            for j in range(nv):
                if rng.random() < 0.1:
                    continue
                u, v = -fw / 2 + 3 * s + (i + 0.5) * pitch, -fh / 2 + 3 * s + (j + 0.5) * pitch
                rr = r * rng.uniform(0.9, 1.0)
                colour = np.array((0.85, 0.85, 0.83), np.float32) * rng.uniform(0.8, 1.1)
                self.objects.append(_Object(TANK, cx + u * ca - v * sa, cy + u * sa + v * ca, 2 * rr, 2 * rr, 0.0,
                                            colour, style={"floating": rng.random() < 0.4}))

    def _loose_vehicle(self, img):
        rng = self.rng
        length, width = self._vehicle_size()
        x, y = rng.uniform(0, self.width), rng.uniform(0, self.height)
        if self._water is not None:
            wx, wy, nx, ny = self._water
            if (x - wx) * nx + (y - wy) * ny > -length:
                return
        if any(math.hypot(x - fx, y - fy) < fr + length for fx, fy, fr in self._footprints):
            return
        car = self._vehicle(x, y, length, width, rng.uniform(0, 2 * math.pi))
        if rng.random() < 0.5:  # driving in a curve across open ground
            car.speed, car.turn = rng.uniform(0.5, 1.5) * self.scale, rng.uniform(-0.06, 0.06)
        self._footprints.append((x, y, length))
        self.objects.append(car)

    # ----------------------------------------------------------------------------------------------- drawing
    def render(self, t: int = 0, sensor_noise: bool = True) -> SceneFrame:
        """Frame ``t`` of the scene (objects moved by t frames) with its ground truth: the objects whose centre lies
        inside the frame. ``sensor_noise=False`` leaves out the per-frame pixel noise (the objects are then the
        only difference from ``ground``)."""
        img = self.ground.copy()
        xs, ys = raster.pixel_centres(self.height, self.width)
        rows_gt = []
        ids = []
        for obj in sorted(self.objects, key=lambda o: o.cls == PLANE):  # planes on top (taxiing over a road)
            cx, cy, w, h, a = obj.box(t)
            win = raster.window(self.height, self.width, cx, cy, math.hypot(w, h) / 2 + 1)
            if win is not None:
                rows, cols = win
                u, v = raster.local_coords(xs[:, cols], ys[rows], cx, cy, a)
                self._draw(img, rows, cols, u, v, obj)
            if 0 <= cx < self.width and 0 <= cy < self.height:
                rows_gt.append((cx, cy, w, h, a, obj.cls))
                ids.append(obj.track_id)
        if sensor_noise:
            noise_rng = np.random.default_rng([self.seed, 0xAE, t])
            img += noise_rng.standard_normal(img.shape, dtype=np.float32) * 0.012
        return SceneFrame(raster.to_uint8(img), make_boxes(rows_gt), np.asarray(ids, np.int64), CLASS_NAMES, int(t))

    def _draw(self, img, rows, cols, u, v, obj) -> None:
        """Draw ``obj`` into ``img[rows, cols]``, whose pixels lie at (u, v) along and across its heading."""
        _DRAW[obj.cls](img, rows, cols, u, v, obj)

    def object_boxes(self, t: int = 0):
        """Every object's (cx, cy, w, h, angle, class, track id) at frame t, in or out of the frame."""
        return [(*obj.box(t), obj.cls, obj.track_id) for obj in self.objects]


def _draw_vehicle(img, rows, cols, u, v, obj):
    L, W = obj.length, obj.width
    sdf = raster.rounded_box_sdf(u, v, L / 2, W / 2, 0.3 * W)
    cov = raster.coverage(sdf)
    colour = np.broadcast_to(obj.colour, cov.shape + (3,)).copy()
    inner = np.abs(v) < 0.36 * W
    dark = np.array((0.08, 0.1, 0.13), np.float32)
    if obj.style["truck"]:
        cab = u > 0.22 * L
        colour[cab & inner & (u > 0.36 * L)] = dark
        colour[~cab] *= 0.9
        colour[np.abs(u - 0.22 * L) < 0.6] *= 0.5
    else:
        colour[inner & (u > 0.12 * L) & (u < 0.3 * L)] = dark  # windscreen
        colour[inner & (u < -0.26 * L) & (u > -0.38 * L)] = dark  # rear window
        colour[inner & (u >= -0.26 * L) & (u <= 0.12 * L)] *= 1.08  # roof
    colour[sdf > -0.8] *= 0.7  # dark rim
    raster.blend(img, rows, cols, cov, colour)


def _draw_ship(img, rows, cols, u, v, obj):
    L, W, st = obj.length, obj.width, obj.style
    bow_start = L / 2 - st["bow"] * L
    taper = np.clip((L / 2 - u) / max(L / 2 - bow_start, 1e-3), 0.0, 1.0)
    # Not an exact distance on the bow's slanted sides, but never an underestimate (it is |v| - taper * W/2 along
    # v); a 1 px floor on the half-width keeps the bow tip visible.
    sdf = np.maximum(np.abs(v) - np.maximum(taper * W / 2, np.minimum(0.5, W / 2)), np.abs(u) - L / 2)
    cov = raster.coverage(sdf)
    deck = np.clip(obj.colour * 1.25 + 0.1, 0, 1)
    colour = np.broadcast_to(deck, cov.shape + (3,)).copy()
    colour[sdf > -1.0] = obj.colour  # hull side
    bridge = (u > st["bridge"] * L) & (u < st["bridge"] * L + 0.12 * L) & (np.abs(v) < 0.38 * W)
    colour[bridge] = (0.95, 0.95, 0.95)
    colour[bridge & (u > st["bridge"] * L + 0.09 * L)] = (0.2, 0.22, 0.25)
    if st["cargo"]:
        rng = np.random.default_rng(st["seed"])
        palette = rng.uniform(0.2, 0.9, (8, 3)).astype(np.float32)
        slot = np.floor((u + L / 2) / max(L * 0.06, 1.0)).astype(np.int64) % 8
        hold = (u > st["bridge"] * L + 0.14 * L) & (u < bow_start - 0.02 * L) & (np.abs(v) < 0.36 * W)
        colour[hold] = palette[slot[hold]]
    raster.blend(img, rows, cols, cov, colour)


def _draw_plane(img, rows, cols, u, v, obj):
    L, S, st = obj.length, obj.width, obj.style
    fw = max(st["fuselage"] * L, 2.0)
    fuselage = raster.rounded_box_sdf(u, v, L / 2, fw / 2, fw / 2)
    chord = st["chord"] * L
    # Swept wings: the chord's centre moves back (towards -u) with |v|, staying inside the box.
    sweep = st["sweep"] * np.clip(np.abs(v) / (S / 2), 0, 1) * (L / 2 - chord)
    wing_u = st["wing_at"] * L - sweep
    wing = np.maximum(np.abs(u - wing_u) - chord / 2 * (1 - 0.5 * np.abs(v) / (S / 2)), np.abs(v) - S / 2)
    tail_span = st["tail"] * S
    tail_c = 0.08 * L
    tail = np.maximum(np.abs(u + L / 2 - tail_c) - tail_c, np.abs(v) - tail_span / 2)
    sdf = np.minimum(np.minimum(fuselage, wing), tail)
    cov = raster.coverage(sdf)
    colour = np.broadcast_to(obj.colour, cov.shape + (3,)).copy()
    colour[(tail <= 0) & (fuselage > 0)] = st["tail_colour"]
    colour[(wing <= 0) & (fuselage > 0)] *= 0.92
    colour[sdf > -0.7] *= 0.75
    raster.blend(img, rows, cols, cov, colour)


def _draw_tank(img, rows, cols, u, v, obj):
    r = obj.length / 2
    rr = np.sqrt(u * u + v * v)
    cov = raster.coverage(rr - r)
    shade = (0.82 + 0.18 * np.clip(1 - (u + v) / (2 * r), 0, 2) / 2)[..., None]  # light from the top-left
    colour = obj.colour * shade
    colour = np.where((rr > r - max(1.0, 0.12 * r))[..., None], obj.colour * 0.6, colour)
    if obj.style.get("floating"):
        colour = np.where((rr < 0.75 * r)[..., None], colour * 0.8, colour)
    raster.blend(img, rows, cols, cov, colour.astype(np.float32))


_DRAW = {VEHICLE: _draw_vehicle, SHIP: _draw_ship, PLANE: _draw_plane, TANK: _draw_tank}


def aerial_frame(seed: int, size=256, scale: float = 1.0) -> SceneFrame:
    """One aerial frame (frame 0 of the scene of ``seed``)."""
    return AerialScene(seed, size, scale).render(0)


def aerial_video(seed: int, n_frames: int = 30, size=256, scale: float = 1.0) -> Iterator[SceneFrame]:
    """``n_frames`` frames of one aerial scene: fixed camera, moving traffic, ships and planes, with track ids."""
    n_frames = check_frames(n_frames)
    scene = AerialScene(seed, size, scale)
    for t in range(n_frames):
        yield scene.render(t)
