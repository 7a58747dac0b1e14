"""Shared fixtures for the live tests: one converted SmolLM2 pack per session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import require


@pytest.fixture(scope="session")
def smollm_path(tmp_path_factory) -> Path:
    """SmolLM2-135M fetched (and converted) once, in $SPECMODEL_CACHE or a temp cache."""
    require("transformers")
    from profiler.packs import fetch_pack

    env = os.environ.get("SPECMODEL_CACHE")
    cache = Path(env) if env else tmp_path_factory.mktemp("packs-session")
    return fetch_pack("smollm2-135m", cache)


@pytest.fixture(scope="session")
def qwen05_path(tmp_path_factory) -> Path:
    """Qwen2.5-Coder-0.5B fetched (and converted) once: a target that SmolLM2 can draft for."""
    require("transformers")
    from profiler.packs import fetch_pack

    env = os.environ.get("SPECMODEL_CACHE")
    cache = Path(env) if env else tmp_path_factory.mktemp("packs-qwen")
    return fetch_pack("qwen2.5-coder-0.5b", cache)
