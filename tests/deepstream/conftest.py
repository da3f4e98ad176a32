"""tests/deepstream: obbmeta between NVIDIA's own libraries and elements, from an installed DeepStream.

One command on a DeepStream machine runs the whole integration story::

    OBBMETA_DEEPSTREAM_ROOT=/opt/nvidia/deepstream/deepstream bash scripts/test.sh tests/deepstream -v

Everywhere else every test here is skipped with the reason (no ``lib/`` folder at the root); a test whose library
or plugin is missing from the install is skipped naming the file.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from . import install

GST_TESTS = Path(__file__).resolve().parents[1] / "gst"
if str(GST_TESTS) not in sys.path:
    sys.path.insert(0, str(GST_TESTS))  # pipelines.py (run, buffer_probe) and obb_toy_models (the toy detector)
# DeepStream 7.x / 8.0 pick the new nvstreammux with this variable (9.x has only the new one); read at plugin load
os.environ.setdefault("USE_NEW_NVSTREAMMUX", "yes")


def pytest_collection_modifyitems(config, items):
    reason = install.missing_reason()
    if reason is None:
        return
    here = __file__.rsplit("/", 1)[0]
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def deepstream_root():
    return install.root()


@pytest.fixture(scope="session")
def ds_gst():
    """GStreamer with obbmeta's elements and the install's plugins (lib/gst-plugins scanned into the registry)."""
    pytest.importorskip("gi")
    from obbmeta import nvds

    if not nvds.available():
        pytest.skip(f"NVIDIA's libnvds_meta is not available:\n{nvds.describe()}")
    import obbmeta.gst
    from obbmeta.gst import Gst

    obbmeta.gst.register()
    if install.plugin_dir().is_dir():
        Gst.Registry.get().scan_path(str(install.plugin_dir()))
    return Gst
