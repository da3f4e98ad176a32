"""``obbtrack``: obbmeta's oriented tracker as a pipeline element, for pipelines without nvtracker or that want
rotated-IoU association (``obbmeta.track.OrientedTracker.update_frame`` on every frame meta; docs/track.md).

Like nvtracker on the metadata: tracked objects get ``object_id``, ``rect_params`` = the clipped AABB of the track's
box and ``tracker_bbox_info``; untracked detections are removed; on frames without inference (``bInferDone``
false: ``obbinfer interval``) confirmed tracks are added at their predicted OBB with confidence -0.1. One tracker
state per ``source_id``; a stream's state is dropped at EOS (of the whole buffer flow) or flush.
"""
from __future__ import annotations

from ._element import ObbmetaElement, one_of
from ._gi import Gst

ASSOCIATIONS = ("rotated", "aabb")


class ObbTrack(ObbmetaElement):
    element_name = "obbtrack"
    gtype_name = "GstObbTrack"
    long_name = "obbmeta oriented tracker"
    klass = "Filter/Analyzer/Video"
    description = ("Tracks oriented objects with rotated-IoU association and writes object_id / rect_params as "
                   "nvtracker does")
    _ready_only = frozenset({"association", "max-age", "min-hits", "output-lost", "heading"})  # read at start
    property_specs = {
        "association": (str, "association", "rotated (exact IoU of the OBBs) or aabb (IoU of their AABBs)",
                        "rotated"),
        "max-age": (int, "max age", "detection frames a confirmed track survives unmatched", 0, 100000, 30),
        "min-hits": (int, "min hits", "matched frames that confirm a track", 1, 1000, 2),
        "output-lost": (int, "output lost", "also output confirmed tracks missed for up to this many detection "
                        "frames, at their prediction", 0, 100000, 0),
        "heading": (bool, "heading", "the model's angle is a 2*pi heading (never flipped by pi)", False),
    }
    _checks = {"association": one_of(*ASSOCIATIONS)}

    def __init__(self):
        super().__init__()
        self.tracker = None

    def start(self) -> None:
        from ..track import OrientedTracker

        self.tracker = OrientedTracker(self.prop("association"), max_age=self.prop("max-age"),
                                       min_hits=self.prop("min-hits"), output_lost=self.prop("output-lost"),
                                       heading=self.prop("heading"))

    def reset(self) -> None:
        if self.tracker is not None:
            self.tracker.reset()

    def process(self, buf: Gst.Buffer) -> Gst.FlowReturn:
        from .. import nvds

        try:
            batch = nvds.BatchMeta.from_gst_buffer(buf)
        except LookupError:
            return Gst.FlowReturn.OK  # no detections upstream: nothing to track
        self.tracker.update_batch(batch, frame_size=(self.video.width, self.video.height))
        return Gst.FlowReturn.OK
