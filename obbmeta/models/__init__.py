"""Small oriented detectors for the demo, trained on :mod:`obbmeta.scenes`, in plain PyTorch.

>>> from obbmeta.models import load_demo_model, letterbox_frames        # doctest: +SKIP
>>> model = load_demo_model("aerial")                                    # eval mode, CPU
>>> x, lb = letterbox_frames(frame_rgb_uint8, model.input_size)          # (1, 3, 256, 256) float in [0, 1]
>>> dets = obbmeta.decode.yolo_obb(model(x), conf=0.25, iou=0.5, letterbox=lb)

Input: (B, 3, S, S) float32 RGB in [0, 1], letterboxed with pad value 114/255 (S = ``model.input_size`` = 256; any
multiple of 32 runs). Output: (B, 4 + nc + 1, (S/8)^2), rows [cx, cy, w, h (input pixels), sigmoid class scores,
angle (radians, clockwise on screen)] — the raw YOLO-OBB layout :func:`obbmeta.decode.yolo_obb` decodes.
``model.class_names`` names the classes. ``aerial_detector`` and ``document_detector`` take no arguments, so
``obbmeta.models:aerial_detector`` can be named as a factory.

The harbour demo's secondary detector (``container_detector`` / ``load_container_detector``, the same architecture,
one class ``container``) takes upright 256x64 crops of ships: (K, 3, 64, 256) -> (K, 4 + 1 + 1, 256).

The document demo's text recogniser (:class:`TextRecognizer`, ``text_recognizer`` / ``load_text_recognizer``)
reads upright crops of text lines: (K, 3, 32, W) float RGB in [0, 1] -> (K, W / 4, C) CTC logits (blank 0, class
i >= 1 = ``model.charset[i - 1]``), decoded by :func:`obbmeta.decode.ctc_greedy`.
"""
from __future__ import annotations

from pathlib import Path

from ..infer import PAD_VALUE
from ..scenes import SCENES
from .containers import INPUT_SIZE as CONTAINER_INPUT_SIZE  # (width, height): the upright crop of one ship
from .detector import OBBDetector
from .preprocess import letterbox_frames
from .recognizer import CHARSET, TextRecognizer, crop_width, load_recognizer, save_recognizer
from .weights import load_weights, save_weights

WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"


def _bundled(name: str, trainer: str) -> Path:
    """The bundled weights file ``name``, or FileNotFoundError naming the module that trains it."""
    path = WEIGHTS_DIR / name
    if not path.exists():
        raise FileNotFoundError(f"bundled weights {path} are missing (train them with python -m {trainer})")
    return path


def load_demo_model(scene: str = "aerial", device="cpu") -> OBBDetector:
    """The bundled detector for ``scene`` ("aerial" or "document"; "harbour": the aerial detector, which finds the
    ships), in eval mode on ``device``."""
    if scene not in SCENES:
        raise ValueError(f"scene must be one of {SCENES}, got {scene!r}")
    return load_weights(_bundled(f"{'aerial' if scene == 'harbour' else scene}.pt", "obbmeta.models.train"), device)


def aerial_detector() -> OBBDetector:
    """Factory: the bundled aerial detector (vehicle, ship, plane, storage_tank) on the CPU, eval mode."""
    return load_demo_model("aerial")


def document_detector() -> OBBDetector:
    """Factory: the bundled document detector (text_line, title) on the CPU, eval mode."""
    return load_demo_model("document")


def load_container_detector(device="cpu") -> OBBDetector:
    """The harbour demo's secondary detector (one class, ``container``) for upright 256x64 crops of ships (input
    (B, 3, 64, 256), as ``obbinfer process-mode=2 input-size=256x64 crop-reading=long-side`` crops them), eval mode."""
    return load_weights(_bundled("container.pt", "obbmeta.models.train_containers"), device)


def container_detector() -> OBBDetector:
    """Factory: the bundled container detector (``class_names = ["container"]``) on the CPU, eval mode; give it
    ``input-size=256x64`` (``CONTAINER_INPUT_SIZE``, width x height)."""
    return load_container_detector()


def load_text_recognizer(device="cpu") -> TextRecognizer:
    """The bundled text-line recogniser of the document demo, in eval mode on ``device``."""
    return load_recognizer(_bundled("recognizer.pt", "obbmeta.models.train_recognizer"), device)


def text_recognizer() -> TextRecognizer:
    """Factory: the bundled text-line recogniser (CTC over ``model.charset``) on the CPU, eval mode."""
    return load_text_recognizer()


__all__ = ["OBBDetector", "load_demo_model", "aerial_detector", "document_detector", "letterbox_frames",
           "load_weights", "save_weights", "PAD_VALUE", "WEIGHTS_DIR", "TextRecognizer", "text_recognizer",
           "load_text_recognizer", "load_recognizer", "save_recognizer", "crop_width", "CHARSET", "container_detector",
           "load_container_detector", "CONTAINER_INPUT_SIZE"]
