"""Shared test configuration: the hypothesis profiles."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=200,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=50, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def require(module: str):
    """Import an optional dependency: skip locally when missing, fail under CI.

    ``.ci/run`` sets ``SPECMODEL_STRICT=1`` so that a test of a real engine never
    passes by being skipped there.
    """
    import importlib

    import pytest

    if os.environ.get("SPECMODEL_STRICT") == "1":
        return importlib.import_module(module)
    return pytest.importorskip(module)
