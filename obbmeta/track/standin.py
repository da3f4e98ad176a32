"""Deprecated home of the nvtracker stand-in: use :class:`obbmeta.testing.NvTrackerStandIn`."""
from .._deprecation import renamed


def _standin(name):
    from ..nvds import nvtracker_standin  # imported on use: the stand-in writes DeepStream's structs

    return getattr(nvtracker_standin, name)


__getattr__ = renamed(__name__, {
    "NvTrackerStandIn": ("obbmeta.testing.NvTrackerStandIn", lambda: _standin("NvTrackerStandIn")),
    "FRAME_NUMBERS": ("obbmeta.nvds.nvtracker_standin.FRAME_NUMBERS", lambda: _standin("FRAME_NUMBERS")),
})
