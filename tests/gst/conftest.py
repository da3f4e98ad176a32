"""Real GStreamer 1.22 pipelines with obbmeta's elements (registered in this process; test_plugin_path.py finds them
through GST_PLUGIN_PATH instead) against NVIDIA's real metadata library."""
from __future__ import annotations

import pytest

from obbmeta import nvds

pytest.importorskip("gi")
if not nvds.available():
    pytest.skip(f"NVIDIA's libnvds_meta is not available:\n{nvds.describe()}", allow_module_level=True)

import obbmeta.gst  # noqa: E402

obbmeta.gst.register()
