"""Fixtures for the tests against NVIDIA's real libnvds_meta (from the nvidia-deepstream-videodecode-cu13 wheel)."""
from __future__ import annotations

import pytest

from obbmeta import nvds

from . import raw

if not nvds.available():
    pytest.skip(f"NVIDIA's libnvds_meta is not available:\n{nvds.describe()}", allow_module_level=True)


@pytest.fixture(scope="session")
def lib():
    """NVIDIA's libnvds_meta, opened by the tests for their own calls."""
    return raw.load_nvds_meta()
