"""Procedural harbour scenes: the aerial scene's water, piers and ships (:mod:`obbmeta.scenes.aerial`), every ship
large, at any heading, and most of them container ships carrying rows of containers on deck, each with its own box.

Classes: the aerial scene's four (``vehicle``, ``ship``, ``plane``, ``storage_tank``: the bundled aerial detector's
class ids) and ``container`` (id 4). Ground truth, one oriented box per object in pixels:

* ship: the hull's rectangle, width along the heading (as in the aerial scene);
* container: the container's rectangle on deck, width along the ship's heading (containers lie in rows along the
  ship's axis, bays of 2-4 across the beam), so a container's angle is its ship's;
* vehicle, storage_tank: as in the aerial scene (cars, a parking lot or tank farm on land).

``SceneFrame.parents`` gives, per box, the track id of the ship a container stands on (0 for the other boxes).
Containers move with their ship; like every object, a container is in a frame's ground truth while its centre lies
inside the frame. Sizes at ``scale=1`` (pixels): ships 34-64 long, 0.17-0.24 of that wide (aspect 4.2-5.9);
containers 2.2-3.5 wide across the ship (the beam's hold split into 2-4 rows, 0.5 px gaps) and 1.8-2.8 times that
long. The demo draws them at ``scale=2`` on 512x512 frames: ships 68-128 px, containers about 5 x 11 px.
"""
from __future__ import annotations

import math
from typing import Iterator, List, Tuple

import numpy as np

from . import raster
from .aerial import CLASS_NAMES as AERIAL_CLASS_NAMES
from .aerial import SHIP, AerialScene
from .common import SceneFrame, check_frames, make_boxes

CLASS_NAMES: Tuple[str, ...] = AERIAL_CLASS_NAMES + ("container",)
CONTAINER = len(AERIAL_CLASS_NAMES)

_CONTAINER_COLOURS = np.array([
    (0.72, 0.16, 0.12), (0.15, 0.3, 0.62), (0.16, 0.45, 0.25), (0.9, 0.5, 0.12), (0.85, 0.75, 0.2),
    (0.55, 0.56, 0.58), (0.9, 0.9, 0.88), (0.45, 0.25, 0.15), (0.12, 0.55, 0.6), (0.6, 0.15, 0.4),
], np.float32)


class HarbourScene(AerialScene):
    """One harbour scene from a seed; ``render(t)`` draws frame t (ships under way move, their containers with them).

    Args:
        seed: any int >= 0; the same seed gives the same scene and frames.
        size: frame size, an int or (width, height).
        scale: object size multiplier (2.0 on 512x512 frames keeps the bundled aerial detector's scale once the
            frame is fitted to its 256 input).
    """

    class_names = CLASS_NAMES

    def __init__(self, seed: int, size=256, scale: float = 1.0):
        super().__init__(seed, size, scale)
        n = len(self.objects)
        k = 0
        for obj in self.objects:
            for c in obj.style.get("containers", ()):
                k += 1
                c["track_id"] = n + k

    # ----------------------------------------------------------------------------------------------- layout
    def _make_ground(self) -> np.ndarray:
        self.rng = np.random.default_rng([self.seed, 0x4B])  # the harbour's own stream, not the aerial scene's
        rng, w, h, s = self.rng, self.width, self.height, self.scale
        low, high = (np.array(c, np.float32) for c in ((0.42, 0.42, 0.4), (0.56, 0.55, 0.52)))
        coarse = raster.value_noise(rng, h, w, cell=64 * s, octaves=2)
        fine = raster.value_noise(rng, h, w, cell=6 * s, octaves=2)
        img = low + (high - low) * coarse[..., None]
        img *= (0.88 + 0.24 * fine)[..., None]
        xs, ys = raster.pixel_centres(h, w)
        self._harbour(img, xs, ys)
        area = w * h / (256.0 * 256.0) / (s * s)
        for _ in range(rng.integers(0, 2)):
            (self._parking_lot if rng.random() < 0.7 else self._tank_farm)(img)
        for _ in range(rng.poisson(1.5 * area)):
            self._loose_vehicle(img)
        return img

    def _harbour(self, img, xs, ys):
        """Water over most of the frame beyond a straight shore, a quay and piers with ships moored at them, and
        ships under way at any heading."""
        rng, s, side = self.rng, self.scale, min(self.width, self.height)
        a = rng.uniform(0, 2 * math.pi)
        nx, ny = math.cos(a), math.sin(a)
        back = rng.uniform(0.12, 0.32) * side  # the shore line lies this far behind the centre: water beyond
        wx, wy = self.width / 2 - nx * back, self.height / 2 - ny * back
        d = (xs - wx) * nx + (ys - wy) * ny
        ripple = raster.value_noise(rng, self.height, self.width, cell=10 * s, octaves=2)
        water = np.array((0.12, 0.22, 0.32), np.float32) * rng.uniform(0.8, 1.2)
        raster.blend(img, slice(None), slice(None), raster.coverage(-d), water * (0.85 + 0.3 * ripple)[..., None])
        raster.blend(img, slice(None), slice(None), raster.coverage(np.abs(d) - 1.5 * s) * 0.7, (0.6, 0.57, 0.5))
        self._water = (wx, wy, nx, ny)
        along = (-ny, nx)
        reach = 0.75 * math.hypot(self.width, self.height)
        # A quay: ships moored along the shore, bow either way.
        pos = -reach + rng.uniform(0, 60) * s
        while pos < reach:
            length, width = self._ship_size()
            pos += length / 2
            if rng.random() < 0.45:
                dist = width / 2 + 2 * s
                x, y = wx + pos * along[0] + dist * nx, wy + pos * along[1] + dist * ny
                if self._clear(x, y, length / 2):
                    heading = math.atan2(along[1], along[0]) + (math.pi if rng.random() < 0.5 else 0.0)
                    self.objects.append(self._container_ship(x, y, length, width, heading))
            pos += length / 2 + rng.uniform(6, 60) * s
        # Piers out into the water, ships moored side by side along them (perpendicular to the shore).
        for _p in range(rng.integers(0, 3)):
            offset = rng.uniform(-0.45, 0.45) * side
            pier_len = rng.uniform(70, 130) * s
            pier_w = rng.uniform(4, 7) * s
            px, py = wx + offset * along[0] + nx * pier_len / 2, wy + offset * along[1] + ny * pier_len / 2
            if not self._clear(px, py, pier_len / 2 + 20 * s):
                continue
            self._footprints.append((px, py, pier_len / 2 + 20 * s))
            self._paint_rect(img, px, py, pier_len, pier_w, a, (0.55, 0.53, 0.5), texture=0.05)
            for side_k in (-1, 1):
                upos = 6 * s
                while upos < pier_len - 10 * s:
                    length, width = self._ship_size()
                    upos += width / 2
                    if rng.random() < 0.75:
                        u = -pier_len / 2 + upos
                        dist = pier_w / 2 + 1.5 * s + length / 2
                        x = px + u * nx + side_k * dist * along[0]
                        y = py + u * ny + side_k * dist * along[1]
                        heading = math.atan2(side_k * along[1], side_k * along[0]) + (
                            math.pi if rng.random() < 0.3 else 0.0)
                        self.objects.append(self._container_ship(x, y, length, width, heading))
                    upos += width / 2 + rng.uniform(2, 6) * s
        # Ships under way in open water, any heading, on gentle arcs.
        for _ in range(rng.integers(2, 6)):
            length, width = self._ship_size()
            dist = rng.uniform(25, 160) * s
            x = wx + nx * dist + along[0] * rng.uniform(-0.6, 0.6) * side
            y = wy + ny * dist + along[1] * rng.uniform(-0.6, 0.6) * side
            if not self._clear(x, y, length / 2):
                continue
            self._footprints.append((x, y, length / 2))
            ship = self._container_ship(x, y, length, width, rng.uniform(0, 2 * math.pi))
            ship.speed, ship.turn = rng.uniform(0.3, 1.2) * s, rng.normal(0, 0.006)
            self.objects.append(ship)

    def _clear(self, x: float, y: float, radius: float) -> bool:
        """No zone's footprint and no ship within ``radius`` (+ the other ship's half length) of (x, y)."""
        if any(math.hypot(x - fx, y - fy) < radius + fr for fx, fy, fr in self._footprints):
            return False
        return not any(math.hypot(x - o.x, y - o.y) < radius + o.length / 2 for o in self.objects if o.cls == SHIP)

    def _ship_size(self) -> Tuple[float, float]:
        length = self.rng.uniform(34, 64) * self.scale
        return length, length * self.rng.uniform(0.17, 0.24)

    def _container_ship(self, x, y, length, width, heading):
        """A ship (the aerial scene's hull, bridge at the stern), with containers on deck in 85 % of them."""
        rng, s = self.rng, self.scale
        ship = self._ship(x, y, length, width, heading)
        st = ship.style
        st.update(cargo=False, bow=rng.uniform(0.1, 0.16), bridge=rng.uniform(-0.44, -0.38),
                  containers=[])
        if rng.random() >= 0.85:
            return ship
        # The hold: from behind the bridge to where the bow narrows, 0.36 of the beam either side of the axis.
        u0, u1 = (st["bridge"] + 0.15) * length, (0.5 - st["bow"] - 0.03) * length
        half = 0.36 * width
        gap = 0.5 * s
        rows = int(np.clip(round(2 * half / (3.2 * s)), 2, 4))
        cw = (2 * half - (rows - 1) * gap) / rows
        cl = cw * rng.uniform(1.8, 2.8)
        bays = int((u1 - u0 + gap) // (cl + gap))
        if bays < 1:
            return ship
        start = u0 + ((u1 - u0) - (bays * cl + (bays - 1) * gap)) / 2
        fill = rng.uniform(0.6, 1.0)
        for b in range(bays):
            for r in range(rows):
                if rng.random() > fill:
                    continue
                colour = _CONTAINER_COLOURS[rng.integers(len(_CONTAINER_COLOURS))] * rng.uniform(0.85, 1.1)
                st["containers"].append({"u": start + b * (cl + gap) + cl / 2, "v": -half + r * (cw + gap) + cw / 2,
                                         "length": cl, "width": cw, "colour": np.clip(colour, 0, 1),
                                         "track_id": 0})
        return ship

    # ----------------------------------------------------------------------------------------------- drawing
    def _draw(self, img, rows, cols, u, v, obj) -> None:
        super()._draw(img, rows, cols, u, v, obj)  # the hull, its light deck and the bridge
        if obj.cls != SHIP or not obj.style.get("containers"):
            return
        st = obj.style
        for c in st["containers"]:
            sdf = raster.box_sdf(u - c["u"], v - c["v"], c["length"] / 2, c["width"] / 2)
            cov = raster.coverage(sdf)
            colour = np.broadcast_to(c["colour"], cov.shape + (3,)).copy()
            colour[sdf > -0.5] *= 0.7  # a darker edge
            raster.blend(img, rows, cols, cov, colour)

    def container_boxes(self, t: int = 0) -> List[Tuple[float, float, float, float, float, int, int]]:
        """Every container's (cx, cy, w, h, angle, track id, ship's track id) at frame t, in or out of the frame."""
        out = []
        for obj in self.objects:
            if not obj.style.get("containers"):
                continue
            x, y, h = obj.pose(t)
            c, s = math.cos(h), math.sin(h)
            for k in obj.style["containers"]:
                out.append((x + k["u"] * c - k["v"] * s, y + k["u"] * s + k["v"] * c, k["length"], k["width"], h,
                            k["track_id"], obj.track_id))
        return out

    def render(self, t: int = 0, sensor_noise: bool = True) -> SceneFrame:
        """Frame ``t`` with its ground truth: the objects, then the containers, whose centre lies inside the frame;
        ``parents`` names each container's ship."""
        f = super().render(t, sensor_noise)
        rows, ids, parents = [], [], []
        for cx, cy, w, h, a, cls, tid in self.object_boxes(t):
            if 0 <= cx < self.width and 0 <= cy < self.height:
                rows.append((cx, cy, w, h, a, cls))
                ids.append(tid)
                parents.append(0)
        for cx, cy, w, h, a, tid, ship in self.container_boxes(t):
            if 0 <= cx < self.width and 0 <= cy < self.height:
                rows.append((cx, cy, w, h, a, CONTAINER))
                ids.append(tid)
                parents.append(ship)
        return SceneFrame(f.image, make_boxes(rows), np.asarray(ids, np.int64), CLASS_NAMES, int(t),
                          parents=np.asarray(parents, np.int64))


def harbour_frame(seed: int, size=256, scale: float = 1.0) -> SceneFrame:
    """One harbour frame (frame 0 of the scene of ``seed``)."""
    return HarbourScene(seed, size, scale).render(0)


def harbour_video(seed: int, n_frames: int = 30, size=256, scale: float = 1.0) -> Iterator[SceneFrame]:
    """``n_frames`` frames of one harbour scene: fixed camera, ships under way carrying their containers."""
    n_frames = check_frames(n_frames)
    scene = HarbourScene(seed, size, scale)
    for t in range(n_frames):
        yield scene.render(t)
