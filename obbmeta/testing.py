"""obbmeta.testing: test doubles for the parts of a DeepStream pipeline that cannot run where tests run.

* :class:`NvTrackerStandIn` — reproduces, on metadata only, what NVIDIA's nvtracker does to a frame's objects (ids,
  rect_params, the objects it makes and removes, ``frame_num``), so that :class:`obbmeta.track.FollowTracker` and
  pipeline tests meet nvtracker's metadata behaviour without DeepStream's plugins. It is not nvtracker.

Torch-free, like :mod:`obbmeta.nvds`.
"""
from .nvds.nvtracker_standin import NvTrackerStandIn

__all__ = ["NvTrackerStandIn"]
