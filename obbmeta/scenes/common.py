"""Types shared by the scene generators: one rendered frame with its ground truth."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np
import torch

from .._validators import int_in_range, size_pair
from ..boxes import OrientedBoxes
from ..geometry import wrap_angle


@dataclass(frozen=True, eq=False)
class SceneFrame:
    """One generated frame and its ground truth.

    Attributes:
        image: (H, W, 3) uint8 RGB.
        boxes: ground truth as :class:`obbmeta.OrientedBoxes` in the image's pixels (angle in radians, clockwise
            on screen, in [-pi/2, pi/2)); ``scores`` are 1, ``labels`` index ``class_names``.
        track_ids: (N,) int64, one per box: the same object keeps its id in every frame of a video.
        class_names: the scene's class names.
        index: the frame's number in its video (0 for a single frame).
        texts: for scenes with text (documents), each box's string as rendered, one per box; None otherwise.
        reading_angles: with ``texts``, (N,) float32, the direction each line's text reads in (along its baseline,
            first letter to last), radians clockwise on screen in [-pi, pi). The box angle is only known modulo pi
            (and w may be the short side); this says which way round the line is.
        parents: for scenes with objects on objects (containers on ships), (N,) int64: the track id of the object
            each box lies on, 0 for none; None otherwise.
    """

    image: np.ndarray
    boxes: OrientedBoxes
    track_ids: np.ndarray
    class_names: Tuple[str, ...]
    index: int = 0
    texts: Optional[Tuple[str, ...]] = None
    reading_angles: Optional[np.ndarray] = None
    parents: Optional[np.ndarray] = None

    def __post_init__(self):
        n = len(self.boxes)
        if self.texts is not None and len(self.texts) != n:
            raise ValueError(f"texts must hold one string per box ({n}), got {len(self.texts)}")
        if self.reading_angles is not None and np.shape(self.reading_angles) != (n,):
            raise ValueError(f"reading_angles must have shape ({n},), got {np.shape(self.reading_angles)}")
        if self.parents is not None and np.shape(self.parents) != (n,):
            raise ValueError(f"parents must have shape ({n},), got {np.shape(self.parents)}")

    @property
    def size(self) -> Tuple[int, int]:
        """(width, height) in pixels."""
        return self.image.shape[1], self.image.shape[0]

    def tensor(self) -> torch.Tensor:
        """(3, H, W) float32 RGB in [0, 1], the layout the demo models take (before letterboxing)."""
        return torch.from_numpy(self.image).permute(2, 0, 1).float().div_(255.0)


def make_boxes(rows) -> OrientedBoxes:
    """OrientedBoxes from rows (cx, cy, w, h, angle, label) with angles wrapped to [-pi/2, pi/2)."""
    arr = np.asarray(rows, np.float64).reshape(-1, 6)
    xywhr = arr[:, :5].copy()
    xywhr[:, 4] = wrap_angle(xywhr[:, 4])
    return OrientedBoxes(torch.from_numpy(xywhr.astype(np.float32)), torch.ones(len(arr)),
                         torch.from_numpy(arr[:, 5].astype(np.int64)))


def check_size(name: str, size) -> Tuple[int, int]:
    """(width, height) from an int or a pair of ints, sides in 32..8192."""
    return size_pair(name, size, 32, 8192)


def check_seed(seed) -> int:
    return int_in_range("seed", seed, 0, error=TypeError, numpy_ints=True)


def check_frames(n_frames) -> int:
    return int_in_range("n_frames", n_frames, 1, numpy_ints=True)

