"""What nvtracker writes into metadata, for obbmeta.track's modules: the facts live in :mod:`obbmeta.nvds.nvtracker`
(facts about metadata, below the track stage, where the nvtracker stand-in uses them too)."""
from ..nvds.nvtracker import DISPLAY_TEXT_SIZE, LABEL_RISE, TRACKER_MADE_CONFIDENCE, clip_bbox, made_by_tracker

__all__ = ["DISPLAY_TEXT_SIZE", "LABEL_RISE", "TRACKER_MADE_CONFIDENCE", "clip_bbox", "made_by_tracker"]
