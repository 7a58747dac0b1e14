"""The one JSON reader and the one atomic JSON writer of every file the project writes.

Calibrations, run records and export files are typed pydantic models; they are
read by :func:`read_json_file` and written by :func:`write_json_atomic`.

Reading never blocks and never ends in a traceback: a missing file, a directory,
a FIFO or device, an unreadable file, a file that is not UTF-8, a file larger
than :data:`MAX_JSON_BYTES`, JSON nested deeper than :data:`MAX_JSON_DEPTH`,
bad JSON or a non-finite number (``NaN``, ``Infinity``) is one
:class:`~specmodel.errors.SpecmodelError` line naming the file.

Writing is atomic and failure-safe: a temporary file in the target's folder,
flushed and synced, then renamed over the target, so a reader never sees half a
file and an interrupted write leaves the old file in place.  The temporary file
is removed on every failure, and every ``OSError`` (read-only file system,
permission denied, the target is a directory, a parent is a file, the disk or
the file size limit is full) becomes one :class:`SpecmodelError` line naming the
file and the cause.  A replaced file keeps its mode; a new file gets the mode an
ordinary write would give it (``0o666`` less the umask; ``mkstemp`` creates 0600).
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import re
import stat
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from specmodel.errors import SpecmodelError

__all__ = [
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "parse_json",
    "parse_timestamp",
    "read_json_file",
    "timestamp",
    "write_json_atomic",
    "write_text_atomic",
]


def timestamp() -> str:
    """Now, as the ISO date-time (UTC, whole seconds) that every record's date field
    holds (a calibration phase's ``date``, a run record's ``created``, a problem's
    ``finished_at``, a benchmark's ``date``)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def parse_timestamp(text: str) -> datetime:
    """A record's ISO date-time as an aware datetime (one written without a zone is
    read as UTC, as :func:`timestamp` writes them)."""
    when = datetime.fromisoformat(text)
    return when if when.tzinfo else when.replace(tzinfo=UTC)


MAX_JSON_BYTES = 64 * 1024 * 1024
"""The largest JSON file read (64 MiB): the biggest run record of the project is a
few MiB, and the parsed objects of a 64 MiB file fit comfortably in memory."""
MAX_JSON_DEPTH = 200
"""The deepest nesting of arrays and objects read: every format of the project nests
fewer than 10 levels; deeper input would exhaust Python's recursion in the parser
or the validation."""

_STRING_OR_BRACKET = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def _reject_constant(name: str) -> Any:
    """``parse_constant`` hook: NaN and ±Infinity are not JSON numbers."""
    raise ValueError(f"{name} is not a JSON number (numbers must be finite)")


def _finite_float(text: str) -> float:
    """``parse_float`` hook: a number too large for a float (1e400) is not finite."""
    x = float(text)
    if math.isinf(x):
        raise ValueError(f"number {text[:40]} is out of range (numbers must be finite)")
    return x


def _check_depth(text: str, what: str) -> None:
    """Refuse nesting deeper than :data:`MAX_JSON_DEPTH` without recursion (brackets
    inside strings do not count)."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return
    depth = 0
    for m in _STRING_OR_BRACKET.finditer(text):
        c = m.group()
        if c == "[" or c == "{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                raise SpecmodelError(f"{what} nests arrays/objects deeper than "
                                     f"{MAX_JSON_DEPTH} levels (the limit)")
        elif c == "]" or c == "}":
            depth -= 1


def parse_json(text: str, what: str) -> Any:
    """``json.loads`` with a one-line :class:`SpecmodelError` (a ``ValueError``) naming
    ``what`` (e.g. 'calibration x.json'): bad JSON, NaN/Infinity, nesting deeper than
    :data:`MAX_JSON_DEPTH`, an integer too long to convert."""
    _check_depth(text, what)
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except json.JSONDecodeError as e:
        raise SpecmodelError(f"{what} is not valid JSON: {e.msg} at line {e.lineno}") from e
    except RecursionError as e:  # a guard behind _check_depth
        raise SpecmodelError(f"{what} nests arrays/objects too deeply (limit "
                             f"{MAX_JSON_DEPTH} levels)") from e
    except ValueError as e:  # NaN/Infinity, an integer beyond Python's digit limit
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise SpecmodelError(f"{what} is not valid JSON: {first}") from e


def _kind_of(mode: int) -> str | None:
    """What a non-regular file is, in words (None for a regular file)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _cause(e: OSError) -> str:
    """An OSError's cause in words, without the path (the message names the file)."""
    code = e.errno
    if code in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if code == errno.EROFS:
        return "read-only file system"
    if code == errno.ENOSPC:
        return "no space left on device (disk full)"
    if code == errno.EDQUOT:
        return "disk quota exceeded"
    if code == errno.EFBIG:
        return "file too large (disk full or the file size limit reached)"
    if code == errno.EISDIR:
        return "it is a directory"
    if code == errno.ENOTDIR:
        return "a parent of the path is not a directory"
    if code == errno.ENOENT:
        return "does not exist"
    if code == errno.ELOOP:
        return "too many levels of symbolic links"
    if code == errno.ENAMETOOLONG:
        return "file name too long"
    return e.strerror.lower() if e.strerror else (str(e) or type(e).__name__)


def read_json_file(path: str | Path, what: str) -> Any:
    """Read a JSON file; anything wrong with it is one :class:`SpecmodelError` line naming
    ``what`` and the file (see the module docstring)."""
    p = Path(path)
    name = f"{what} {p}"
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)  # never block on a FIFO
    except FileNotFoundError as e:
        raise SpecmodelError(f"{name} does not exist") from e
    except OSError as e:
        raise SpecmodelError(f"cannot read {name}: {_cause(e)}") from e
    try:
        st = os.fstat(fd)
        kind = _kind_of(st.st_mode)
        if kind is not None:
            raise SpecmodelError(f"{name} is {kind}, not a regular file")
        if st.st_size > MAX_JSON_BYTES:
            raise SpecmodelError(f"{name} is {st.st_size} bytes, larger than the "
                                 f"{MAX_JSON_BYTES} bytes (64 MiB) limit")
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_JSON_BYTES:
            chunk = os.read(fd, min(1 << 20, MAX_JSON_BYTES + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > MAX_JSON_BYTES:
            raise SpecmodelError(f"{name} is larger than the {MAX_JSON_BYTES} bytes "
                                 f"(64 MiB) limit")
    except OSError as e:
        raise SpecmodelError(f"cannot read {name}: {_cause(e)}") from e
    finally:
        os.close(fd)
    data = b"".join(chunks)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SpecmodelError(f"{name} is not UTF-8 text (byte 0x{data[e.start]:02x} at "
                             f"offset {e.start})") from e
    return parse_json(text, name)


def _umask() -> int:
    """The process's umask: read from /proc where possible (setting and restoring it
    races with other threads), else by setting it and restoring it."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _check_target(p: Path) -> None:
    """Refuse a target that is a directory, or whose nearest existing ancestor is not a
    directory, before anything is created."""
    if p.is_dir():
        raise SpecmodelError(f"cannot write {p}: it is a directory")
    for parent in p.parents:
        if parent.exists():
            if not parent.is_dir():
                raise SpecmodelError(f"cannot write {p}: {parent} is not a directory")
            return


def write_json_atomic(
    data: BaseModel | dict[str, Any] | list[Any], path: str | Path, *, indent: int = 2
) -> Path:
    """Write ``data`` (a pydantic model — dumped without its None fields — or plain JSON
    data) to ``path`` atomically; returns the path.

    Any ``OSError`` becomes one :class:`SpecmodelError` line naming the file and the
    cause; no temporary file is left behind on any failure (an interrupt included).
    """
    if isinstance(data, BaseModel):
        text = data.model_dump_json(indent=indent, exclude_none=True)
    else:
        text = json.dumps(data, indent=indent)
    return write_text_atomic(text + "\n", path)


def write_text_atomic(text: str, path: str | Path) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically — the one writer behind every file
    the project writes (JSON, HTML reports, saved scrapes): a temporary file in the
    target's folder, flushed and fsynced, then renamed over the target, keeping a
    replaced file's mode (a new one gets the umask's).  Any ``OSError`` becomes one
    :class:`SpecmodelError` line naming the file and the cause; no temporary file is
    left behind on any failure (an interrupt included)."""
    p = Path(path)
    _check_target(p)
    tmp: str | None = None
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        try:
            mode = stat.S_IMODE(os.stat(p).st_mode)
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, p)
        tmp = None
    except OSError as e:
        raise SpecmodelError(f"cannot write {p}: {_cause(e)}") from e
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return p
