"""The one JSON reader and the one atomic JSON writer of every file the project writes.

Calibrations, run records and export files are typed pydantic models; they are
read by :func:`read_json_file` (a missing file or bad JSON is one line naming
the file) and written by :func:`write_json_atomic`: a temporary file in the
target's folder, flushed and synced, then renamed over the target, so a reader
never sees half a file and an interrupted write leaves the old file in place
(the temporary file is removed on any failure).  The written file gets the mode
an ordinary write would give it (``mkstemp`` creates files 0600).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel

__all__ = ["parse_json", "read_json_file", "write_json_atomic"]


def parse_json(text: str, what: str) -> Any:
    """``json.loads`` with a one-line ValueError naming ``what`` (e.g. 'calibration x.json')."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{what} is not valid JSON: {e.msg} at line {e.lineno}") from e


def read_json_file(path: str | Path, what: str) -> Any:
    """Read a JSON file; a missing file or bad JSON is a one-line ValueError naming ``what``."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{what} {p} does not exist")
    return parse_json(p.read_text(encoding="utf-8"), f"{what} {p}")


def _umask() -> int:
    """The process's umask (read by setting it and restoring it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_json_atomic(
    data: BaseModel | dict[str, Any] | list[Any], path: str | Path, *, indent: int = 2
) -> Path:
    """Write ``data`` (a pydantic model — dumped without its None fields — or plain JSON
    data) to ``path`` atomically; returns the path."""
    if isinstance(data, BaseModel):
        text = data.model_dump_json(indent=indent, exclude_none=True)
    else:
        text = json.dumps(data, indent=indent)
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return p
