"""Where the DeepStream install under test is: ``$OBBMETA_DEEPSTREAM_ROOT`` (default
``/opt/nvidia/deepstream/deepstream``), holding NVIDIA's libraries in ``lib/`` and its GStreamer plugins in
``lib/gst-plugins/``. Tests of NVIDIA's libraries and elements run against it and are skipped, with the reason,
where a piece they need is absent."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT_ENV = "OBBMETA_DEEPSTREAM_ROOT"
DEFAULT_ROOT = "/opt/nvidia/deepstream/deepstream"


def root() -> Path:
    return Path(os.environ.get(ROOT_ENV) or DEFAULT_ROOT)


def lib_dir() -> Path:
    return root() / "lib"


def plugin_dir() -> Path:
    return root() / "lib" / "gst-plugins"


def describe() -> str:
    value = os.environ.get(ROOT_ENV)
    return f"${ROOT_ENV}={value}" if value else f"${ROOT_ENV} unset, default {DEFAULT_ROOT}"


def missing_reason() -> str | None:
    """Why no test here can run (no lib/ folder), or None."""
    if not lib_dir().is_dir():
        return (f"no DeepStream install: {lib_dir()} is not a folder ({describe()}; it must hold NVIDIA's lib/ "
                "and lib/gst-plugins/)")
    return None


def library(name: str) -> Path:
    """NVIDIA's ``lib/<name>``; the calling test is skipped when the install lacks it."""
    path = lib_dir() / name
    if not path.is_file():
        pytest.skip(f"{path} is absent ({describe()})")
    return path


def plugin(name: str) -> Path:
    """NVIDIA's GStreamer plugin ``lib/gst-plugins/<name>``; the calling test is skipped when the install lacks it."""
    path = plugin_dir() / name
    if not path.is_file():
        pytest.skip(f"{path} is absent ({describe()})")
    return path


def require_element(gst, factory: str, plugin_file: str) -> None:
    """Skip unless the install's ``lib/gst-plugins/<plugin_file>`` is there and provides the element ``factory``."""
    path = plugin(plugin_file)
    if gst.ElementFactory.find(factory) is None:
        pytest.skip(f"{path} provides no {factory} element here (it did not load; gst-inspect-1.0 {path} says why)")
