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


@pytest.fixture
def make_batch():
    """BatchMeta.create(...) whose batches are released at the end of the test."""
    made = []

    def make(max_frames: int = 1, frames: int = 1, width: int = 1920, height: int = 1080) -> nvds.BatchMeta:
        batch = nvds.BatchMeta.create(max_frames)
        for k in range(frames):
            batch.add_frame(source_id=k, width=width, height=height, frame_num=k)
        made.append(batch)
        return batch

    yield make
    for batch in made:
        batch.destroy()
