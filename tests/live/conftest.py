"""Shared fixtures for the live tests: each model pack fetched (and converted) once per session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import require

FETCH_MESSAGES: dict[str, list[str]] = {}
"""Pack name -> the progress messages of its fetch in this session (tests/live/test_packs.py
checks a fresh fetch's messages without downloading the pack a second time)."""


def _pack(name: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``name`` fetched into $SPECMODEL_CACHE, or into a session temp cache."""
    require("transformers")
    from profiler.packs import fetch_pack

    env = os.environ.get("SPECMODEL_CACHE")
    cache = Path(env) if env else tmp_path_factory.mktemp(f"packs-{name}")
    messages = FETCH_MESSAGES.setdefault(name, [])
    return fetch_pack(name, cache, progress=messages.append)


@pytest.fixture(scope="session")
def smollm_path(tmp_path_factory) -> Path:
    """SmolLM2-135M-Instruct."""
    return _pack("smollm2-135m", tmp_path_factory)


@pytest.fixture(scope="session")
def qwen05_path(tmp_path_factory) -> Path:
    """Qwen2.5-Coder-0.5B-Instruct: a target that SmolLM2 can draft for."""
    return _pack("qwen2.5-coder-0.5b", tmp_path_factory)


@pytest.fixture(scope="session")
def minilm_path(tmp_path_factory) -> Path:
    """all-MiniLM-L6-v2 sentence embeddings."""
    return _pack("minilm-l6-v2", tmp_path_factory)
