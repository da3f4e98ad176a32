import os

from hypothesis import HealthCheck, settings

# Deterministic in CI (same examples every run); a developer can explore with HYPOTHESIS_PROFILE=explore.
settings.register_profile(
    "ci", max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("explore", max_examples=2000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
