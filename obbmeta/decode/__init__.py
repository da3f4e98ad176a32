"""Decoders: model outputs -> one :class:`~obbmeta.OrientedBoxes` per image."""
from .mmrotate import mmrotate
from .yolo import detect_format, yolo_obb

__all__ = ["yolo_obb", "mmrotate", "detect_format"]
