"""GStreamer's Python bindings, imported once, with a message that says how to get them when they are missing."""
from __future__ import annotations

import importlib.util

INSTALL_HINT = (
    "obbmeta's GStreamer elements need GStreamer's Python bindings (PyGObject with Gst 1.0 and gst-python's "
    "overrides). They come from the system, not from pip alone: on Debian/Ubuntu `apt-get install python3-gi "
    "python3-gst-1.0 gir1.2-gst-plugins-base-1.0 gstreamer1.0-python3-plugin-loader` and, in a venv, create it with "
    "`--system-site-packages` (as DeepStream containers do); or `pip install \"pygobject<3.51\"` and copy "
    "/usr/lib/python3/dist-packages/gi/overrides/Gst*.py and _gi_gst*.so into the venv's gi/overrides/ "
    "(docs/install.md).")

try:
    import gi

    gi.require_version("Gst", "1.0")
    gi.require_version("GstBase", "1.0")
    gi.require_version("GstVideo", "1.0")
    from gi.repository import GLib, GObject, Gst, GstBase, GstVideo
except (ImportError, ValueError) as exc:
    raise ImportError(f"{INSTALL_HINT} (import failed: {exc})") from exc

if not Gst.is_initialized():
    Gst.init(None)

# PyPI's PyGObject lacks gst-python's overrides; without them Python elements register but never run.
if importlib.util.find_spec("gi.overrides.Gst") is None:
    raise ImportError(f"{INSTALL_HINT} (gi imports, but without gst-python's Gst overrides)")

__all__ = ["GLib", "GObject", "Gst", "GstBase", "GstVideo", "INSTALL_HINT"]
