"""obbmeta.track: oriented objects over time.

* :class:`OrientedTracker` — a SORT / ByteTrack-style tracker with exact rotated-IoU association, a
  constant-velocity model on (cx, cy, w, h) and a continuous angle state; on ``OrientedBoxes``
  (``update``) or on a real ``NvDsBatchMeta`` (``update_frame``: writes ``object_id`` as nvtracker does).
* :class:`FollowTracker` — after nvtracker: every tracked object gets an OBB on every frame (the detector's, moved
  with the tracker's box, or its track's prediction, flagged ``OBB_PREDICTED``), angles smoothed without pi jumps.
* :func:`align_to`, :func:`wrap_angle` — the angle of a box over time (pi-periodic boxes, 2*pi headings).

Docs: docs/track.md.
"""
from .angles import align_to, wrap_angle
from .follow import FollowResult, FollowTracker
from .tracker import FrameTracking, MotionNoise, OrientedTracker, TrackStep

__all__ = ["OrientedTracker", "FollowTracker", "MotionNoise", "TrackStep", "FrameTracking", "FollowResult",
           "align_to", "wrap_angle", "native_libraries"]


def native_libraries() -> tuple:
    """The tracker's compiled C core (``obbmeta doctor`` reports it)."""
    from . import _core

    return (_core.TRACKER,)

