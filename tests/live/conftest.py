"""Shared fixtures for the live tests: each model pack fetched (and converted) once per session."""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

import pytest

from tests.conftest import require, shared_pack_root

FETCH_MESSAGES: dict[str, list[str]] = {}
"""Pack name -> the progress messages of its fetch in this session (tests/live/test_packs.py
checks a fresh fetch's messages without downloading the pack a second time)."""


def _pack(name: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``name`` fetched into $SPECMODEL_CACHE, or into a session temp cache.

    Under pytest-xdist (the README's test command runs two workers) the workers fetch
    one after another, the first that asks while the others wait on a lock, so each
    pack is downloaded and converted once a session (a worker fetching on its own would
    convert it again, about a minute for Qwen2.5-Coder-0.5B, and, in the temp cache,
    double the 4 GB on disk).  The temp cache is then shared: ``packs-<name>`` in the
    controller's temp folder, beside the workers' own (the retention policy removes it
    when the session passes), with the fetch's messages kept beside it for every worker
    (``FETCH_MESSAGES``).
    """
    require("transformers")
    from profiler.packs import fetch_pack

    env = os.environ.get("SPECMODEL_CACHE")
    shared = shared_pack_root(tmp_path_factory)
    if shared is None:
        cache = Path(env) if env else tmp_path_factory.mktemp(f"packs-{name}")
        messages = FETCH_MESSAGES.setdefault(name, [])
        return fetch_pack(name, cache, progress=messages.append)
    cache = Path(env) if env else shared / f"packs-{name}"
    log = shared / f"packs-{name}.messages.json"
    with open(shared / f"packs-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if log.is_file():  # another worker fetched it: ready at once
            folder = fetch_pack(name, cache)
            messages = json.loads(log.read_text())
        else:
            messages = []
            folder = fetch_pack(name, cache, progress=messages.append)
            log.write_text(json.dumps(messages))
    FETCH_MESSAGES[name] = messages
    return folder


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
