"""Model packs for real: download, verify, convert, load and generate (SmolLM2-135M)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from profiler import packs
from profiler.packs import MANIFEST, PACKS, PackError, fetch_pack
from tests.conftest import require

pytestmark = pytest.mark.live


@pytest.fixture(scope="module")
def smollm(tmp_path_factory):
    require("transformers")
    cache = tmp_path_factory.mktemp("packs")
    return cache, fetch_pack("smollm2-135m", cache)


def test_fetch_verifies_and_converts(smollm, monkeypatch) -> None:
    cache, folder = smollm
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["sha256"] == PACKS["smollm2-135m"].sha256
    assert (folder / "model.safetensors").is_file() and (folder / "config.json").is_file()
    assert [p.name for p in cache.iterdir()] == ["smollm2-135m"]  # no temp folder left
    def no_download(*_args, **_kwargs):
        raise AssertionError("a cached pack must not be downloaded again")

    monkeypatch.setattr(packs, "_download", no_download)
    assert fetch_pack("smollm2-135m", cache) == folder  # cached: no download, no conversion


def test_converted_model_generates(smollm) -> None:
    torch = require("torch")
    transformers = require("transformers")
    _, folder = smollm
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    ids = tok("Question: what is 2 + 3?\nAnswer:", return_tensors="pt").input_ids
    out = model.generate(ids, max_new_tokens=8, do_sample=False)
    text = tok.decode(out[0, ids.shape[1]:], skip_special_tokens=True)
    assert out.shape[1] > ids.shape[1] and text.strip()


def test_wrong_hash_leaves_no_cache(tmp_path, monkeypatch) -> None:
    require("transformers")
    bad = dataclasses.replace(PACKS["smollm2-135m"], sha256="0" * 64)
    monkeypatch.setitem(packs.PACKS, "smollm2-135m", bad)
    with pytest.raises(PackError, match="SHA-256"):
        fetch_pack("smollm2-135m", tmp_path)
    assert list(tmp_path.iterdir()) == []
