"""Decoders: model outputs -> one :class:`~obbmeta.OrientedBoxes` per image (or fixed-size tables, with no host
sync on CUDA: :func:`yolo_obb_padded`)."""
from ._head import detect_format
from .ctc import ctc_greedy, read_charset
from .mmrotate import mmrotate
from .yolo import yolo_obb
from .yolo_padded import PaddedDetections, yolo_obb_padded

__all__ = ["yolo_obb", "yolo_obb_padded", "PaddedDetections", "mmrotate", "detect_format", "ctc_greedy",
           "read_charset"]
