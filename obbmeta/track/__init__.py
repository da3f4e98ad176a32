"""obbmeta.track: oriented objects over time.

* :class:`OrientedTracker` — a SORT / ByteTrack-style tracker with exact rotated-IoU association, a
  constant-velocity model on (cx, cy, w, h) and a continuous angle state; on ``OrientedBoxes``
  (``update``) or on a real ``NvDsBatchMeta`` (``update_frame``: writes ``object_id`` as nvtracker does).
* :class:`FollowTracker` — after nvtracker: every tracked object gets an OBB on every frame (the detector's, moved
  with the tracker's box, or its track's prediction, flagged ``OBB_PREDICTED``), angles smoothed without pi jumps.
* :func:`align_to`, :func:`wrap_angle` — the angle of a box over time (pi-periodic boxes, 2*pi headings).

The nvtracker stand-in for tests is :class:`obbmeta.testing.NvTrackerStandIn`.

Docs: docs/track.md.
"""
import warnings

from .angles import align_to, wrap_angle
from .follow import FollowResult, FollowTracker
from .tracker import FrameTracking, MotionNoise, OrientedTracker, TrackStep

__all__ = ["OrientedTracker", "FollowTracker", "MotionNoise", "TrackStep", "FrameTracking", "FollowResult",
           "align_to", "wrap_angle"]


def __getattr__(name):
    if name == "NvTrackerStandIn":
        warnings.warn("obbmeta.track.NvTrackerStandIn is deprecated: use obbmeta.testing.NvTrackerStandIn (a test "
                      "double, not part of obbmeta.track)", DeprecationWarning, stacklevel=2)
        from ..nvds.nvtracker_standin import NvTrackerStandIn  # obbmeta.testing's (below track, unlike testing)

        return NvTrackerStandIn
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
