import os

import pytest
from hypothesis import HealthCheck, settings

# Deterministic in CI (same examples every run); a developer can explore with HYPOTHESIS_PROFILE=explore.
settings.register_profile(
    "ci", max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("explore", max_examples=2000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def make_batch():
    """BatchMeta.create(...) on NVIDIA's libnvds_meta (skipped with the reason where it is missing), released at the
    end of the test: make(max_frames=1, frames=1, width=1920, height=1080), frame k from source k, frame_num k."""
    from obbmeta import nvds

    if not nvds.available():
        pytest.skip(f"NVIDIA's libnvds_meta is not available:\n{nvds.describe()}")
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
