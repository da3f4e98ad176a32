"""GStreamer elements (the only part of obbmeta that imports ``gi``).

* ``obbinfer``: a PyTorch oriented detector in the pipeline, the nvinfer replacement: frames (system memory or
  ``memory:NVMM``) -> model -> decode + rotated NMS -> NvDsObjectMeta + OBB user meta on the batch meta.
* ``obboverlay``: the rotated boxes for nvdsosd (``mode=meta``, display-meta lines) or drawn into the frames
  (``mode=draw``); ``follow-tracker=true`` after nvtracker gives every tracked object an OBB first.
* ``obbtrack``: obbmeta's oriented tracker (rotated-IoU association), writing object ids as nvtracker does.
* ``obbmessage``: every frame's objects with their rotated boxes as an ``NVDS_CUSTOM_MSG_BLOB`` JSON message for
  ``nvmsgconv msg2p-newapi=1`` (docs/messages.md).

Two ways to get them:

* ``export GST_PLUGIN_PATH=$(python -m obbmeta.gst --plugin-path)`` (with the interpreter whose packages the elements
  should use): ``gst-inspect-1.0 obbinfer``, ``gst-launch-1.0 ... ! obbinfer model=... ! ...``, ``Gst.parse_launch``,
  pyservicemaker ``Pipeline.add("obbinfer", ...)``; needs ``gstreamer1.0-python3-plugin-loader``.
* ``obbmeta.gst.register()`` inside a Python program registers them in-process (no plugin loader needed).

Importing this package does not import torch (the GStreamer plugin scanner imports the plugin files).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

PLUGIN_DIR = Path(__file__).resolve().parent / "plugin"
ELEMENTS = ("obbinfer", "obboverlay", "obbtrack", "obbmessage")


def plugin_path() -> str:
    """The folder to put on ``GST_PLUGIN_PATH`` (it holds the ``python/`` folder the gst-python loader scans)."""
    return str(PLUGIN_DIR)


def python_path() -> str:
    """``os.pathsep``-joined entries of this interpreter's ``sys.path`` that hold packages (for ``PYTHONPATH``
    when the plugin loader's embedded Python should see this environment's torch and obbmeta)."""
    return os.pathsep.join(p for p in sys.path if p and os.path.isdir(p) and not p.endswith(".zip"))


def register() -> None:
    """Register obbmeta's elements with GStreamer in this process (idempotent)."""
    from ._gi import Gst
    from .infer import ObbInfer
    from .message import ObbMessage
    from .overlay import ObbOverlay
    from .track import ObbTrack

    for name, cls in (("obbinfer", ObbInfer), ("obboverlay", ObbOverlay), ("obbtrack", ObbTrack),
                      ("obbmessage", ObbMessage)):
        if Gst.ElementFactory.find(name) is None:
            Gst.Element.register(None, name, Gst.Rank.NONE, cls)


__all__ = ["plugin_path", "python_path", "register", "ELEMENTS", "PLUGIN_DIR"]
