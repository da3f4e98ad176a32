"""Seeded procedural scenes with exact oriented-box ground truth, for the demo models, tests and benchmarks.

* :mod:`obbmeta.scenes.aerial` — ground with roads, parking lots, a harbour, aprons and tank farms; classes
  ``vehicle``, ``ship``, ``plane``, ``storage_tank``; moving objects with track ids.
* :mod:`obbmeta.scenes.document` — pages of rendered text lines in blocks at several angles (needs Pillow);
  classes ``text_line``, ``title``.
* :mod:`obbmeta.scenes.harbour` — the aerial scene's harbour, large ships at any heading carrying rows of containers;
  the aerial classes plus ``container`` (each container's ship in ``SceneFrame.parents``).

``frame(scene, seed, size)`` and ``video(scene, seed, n_frames, size)`` give :class:`SceneFrame` objects:
an (H, W, 3) uint8 RGB image and its ground truth as :class:`obbmeta.OrientedBoxes` with track ids.
"""
from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:
    from .common import SceneFrame

SCENES = ("aerial", "document", "harbour")
SCALES = {"aerial": (0.25, 4.0), "document": (0.5, 4.0), "harbour": (0.25, 4.0)}
"""The ``scale`` each scene's generator takes, (lowest, highest) (known without importing a generator)."""
HELDOUT_SEED = 1_000_000_000
"""Scene seeds from here up are held out: the demo models never trained on them, evaluation and the demo use them."""
# scene (also its module's name) -> (scene class, frame function, video function) in that module
_PARTS = {"aerial": ("AerialScene", "aerial_frame", "aerial_video"),
          "document": ("DocumentScene", "document_frame", "document_video"),
          "harbour": ("HarbourScene", "harbour_frame", "harbour_video")}


def _module(scene: str):
    if scene not in _PARTS:
        raise ValueError(f"scene must be one of {SCENES}, got {scene!r}")
    return import_module(f".{scene}", __name__)


def _part(scene: str, k: int):
    return getattr(_module(scene), _PARTS[scene][k])


def class_names(scene: str):
    """The class names of ``scene`` ("aerial", "document" or "harbour")."""
    return _module(scene).CLASS_NAMES


def scene_class(scene: str):
    """The scene class of ``scene``: :class:`~obbmeta.scenes.aerial.AerialScene` or
    :class:`~obbmeta.scenes.document.DocumentScene` (``cls(seed, size).render(t)``)."""
    return _part(scene, 0)


def frame(scene: str, seed: int, size=256, **options) -> "SceneFrame":
    """One frame of ``scene`` ("aerial" or "document") from ``seed``."""
    return _part(scene, 1)(seed, size, **options)


def video(scene: str, seed: int, n_frames: int = 30, size=256, **options) -> Iterator["SceneFrame"]:
    """``n_frames`` frames of one ``scene`` from ``seed``, ground truth with track ids per frame."""
    return _part(scene, 2)(seed, n_frames, size, **options)


def __getattr__(name):  # SceneFrame (and the torch it needs) on first use: SCENES alone stays light
    if name == "SceneFrame":
        from .common import SceneFrame

        return SceneFrame
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["SceneFrame", "SCENES", "SCALES", "HELDOUT_SEED", "class_names", "scene_class", "frame", "video"]
