"""What NVIDIA's nvtracker writes into metadata, as facts read from its sources (DeepStream 9.1, gst-nvtracker
``nvtracker_proc.cpp``: ``fillMOTFrame``, ``updateBatchMeta``, ``updateFrameMeta``, ``clipBBox``,
``removeUntrackedObjects``). One home for them: the test stand-in (tests/nvtracker_standin.py) reproduces
them, :mod:`obbmeta.track`'s FollowTracker and OrientedTracker read or mimic them. They are facts about metadata, so
they live here, below the track stage, where the stand-in can use them without importing it.
"""
from __future__ import annotations

import numpy as np

# The detector confidence nvtracker gives the objects it makes itself (no detection behind them on this frame).
TRACKER_MADE_CONFIDENCE = -0.1

# The label position nvtracker writes on every object it reports: x = rect left, y = rect top - 20.
LABEL_RISE = 20

# display-tracking-id (on by default) rebuilds display_text as "<text> <object_id>" in a 128-byte buffer.
DISPLAY_TEXT_SIZE = 128


def made_by_tracker(confidence: np.ndarray, detector_bbox: np.ndarray, source: np.ndarray) -> np.ndarray:
    """Which objects nvtracker made itself: no OBB payload of obbmeta (reader source 1 or 2), the tracker's
    confidence (-0.1 as float32) and a zeroed ``detector_bbox_info``. Everything such an object carries besides its
    box, id, class and tracker confidence is a copy of the first object of its class nvtracker ever saw:
    ``rect_params`` whole (border, colours, a DS 9 ``rotation_angle``), ``text_params``, ``obj_label``,
    ``unique_component_id``."""
    return ((np.asarray(confidence, np.float32) == np.float32(TRACKER_MADE_CONFIDENCE))
            & (np.asarray(detector_bbox) == 0).all(axis=1) & np.isin(source, (1, 2)))


def clip_bbox(left: float, top: float, width: float, height: float, frame_width: float, frame_height: float
              ) -> tuple[float, float, float, float] | None:
    """nvtracker's clipBBox: a box reaching left of / above the frame loses that part; a box that starts at or past
    the right / bottom edge, or has nothing left, gives None (nvtracker then removes a matched object, with its user
    metas, and makes no object for an unmatched track); the rest is cut at the right and bottom edges."""
    if left < 0:
        width += left
        left = 0.0
    if top < 0:
        height += top
        top = 0.0
    if left >= frame_width or top >= frame_height or width <= 0 or height <= 0:
        return None
    width = min(width, frame_width - left)
    height = min(height, frame_height - top)
    return left, top, width, height
