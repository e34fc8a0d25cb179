"""Shared test configuration: deterministic hypothesis runs without deadlines.

The "ci" profile (default) derandomizes hypothesis so CI runs are reproducible and bounded;
set HYPOTHESIS_PROFILE=dev locally for fresh random examples.
"""

import os

# Eight CPU devices, as JAX's own test suite forces eight host devices: multi-device tests
# use the first 1, 2, 4 or 8 of them; everything else runs on device 0 as before. (Set
# before minijax is imported: the device count is fixed at first use.)
os.environ.setdefault("MINIJAX_NUM_CPU_DEVICES", "8")
# The same for real JAX where tests compare with it (pmap over forced host devices).
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile(
    "ci", deadline=None, derandomize=True, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much])
settings.register_profile(
    "dev", deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
# A local campaign for tests/test_differential.py: thousands of random programs.
settings.register_profile(
    "differential", max_examples=2000, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def x64():
    """Enable 64-bit dtypes for one test, restoring the previous setting afterwards."""
    from minijax.test_util import enable_x64
    with enable_x64():
        yield
