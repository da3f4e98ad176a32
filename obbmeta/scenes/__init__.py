"""Seeded procedural scenes with exact oriented-box ground truth, for the demo models, tests and benchmarks.

* :mod:`obbmeta.scenes.aerial` — ground with roads, parking lots, a harbour, aprons and tank farms; classes
  ``vehicle``, ``ship``, ``plane``, ``storage_tank``; moving objects with track ids.
* :mod:`obbmeta.scenes.document` — pages of rendered text lines in blocks at several angles (needs Pillow);
  classes ``text_line``, ``title``.

``frame(scene, seed, size)`` and ``video(scene, seed, n_frames, size)`` give :class:`SceneFrame` objects:
an (H, W, 3) uint8 RGB image and its ground truth as :class:`obbmeta.OrientedBoxes` with track ids.
"""
from __future__ import annotations

from typing import Iterator

from .common import SceneFrame

SCENES = ("aerial", "document")


def class_names(scene: str):
    """The class names of ``scene`` ("aerial" or "document")."""
    return _module(scene).CLASS_NAMES


def scene_class(scene: str):
    """The scene class of ``scene``: :class:`~obbmeta.scenes.aerial.AerialScene` or
    :class:`~obbmeta.scenes.document.DocumentScene` (``cls(seed, size).render(t)``)."""
    mod = _module(scene)
    return mod.AerialScene if scene == "aerial" else mod.DocumentScene


def frame(scene: str, seed: int, size=256, **options) -> SceneFrame:
    """One frame of ``scene`` ("aerial" or "document") from ``seed``."""
    mod = _module(scene)
    return mod.aerial_frame(seed, size, **options) if scene == "aerial" else mod.document_frame(seed, size, **options)


def video(scene: str, seed: int, n_frames: int = 30, size=256, **options) -> Iterator[SceneFrame]:
    """``n_frames`` frames of one ``scene`` from ``seed``, ground truth with track ids per frame."""
    mod = _module(scene)
    if scene == "aerial":
        return mod.aerial_video(seed, n_frames, size, **options)
    return mod.document_video(seed, n_frames, size, **options)


def _module(scene):
    if scene == "aerial":
        from . import aerial

        return aerial
    if scene == "document":
        from . import document

        return document
    raise ValueError(f"scene must be one of {SCENES}, got {scene!r}")


__all__ = ["SceneFrame", "SCENES", "class_names", "scene_class", "frame", "video"]
