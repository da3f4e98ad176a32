"""Deprecated home of the nvtracker stand-in: use :class:`obbmeta.testing.NvTrackerStandIn`."""
import warnings

_MOVED = ("NvTrackerStandIn", "FRAME_NUMBERS")


def __getattr__(name):
    if name in _MOVED:
        warnings.warn(f"obbmeta.track.standin.{name} is deprecated: the stand-in is obbmeta.testing.NvTrackerStandIn "
                      "(a test double, not part of obbmeta.track)", DeprecationWarning, stacklevel=2)
        from ..nvds import nvtracker_standin

        return getattr(nvtracker_standin, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
