"""Guards of every long writer: one writer per file, and resume only into what matches.

:class:`WriteLock` is an advisory lock (``fcntl.flock``, non-blocking) on a sidecar
``<file>.lock`` that holds the writer's pid.  Every writer of a calibration, a step
pairs file or a run record holds it for its whole run, so a second writer of the same
file is refused at once (:class:`FileLockedError`, one line naming the file and the pid
that holds it) instead of both printing 'wrote' and one of them losing its data.  The
kernel releases the lock when its process dies, even on SIGKILL, so a stale lock file
never blocks anyone.  One process may take the same lock again (nested writers, e.g.
``decode`` locks its record before loading models and the runner locks it again); it is
released when the outermost holder releases it.

:func:`resume_mismatch` compares the settings a file was measured with against the
settings of the run that wants to resume into it, and says in one line what differs.

Pure Python, POSIX only (``fcntl``); no torch.
"""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

from specmodel.errors import SpecmodelError

__all__ = ["FileLockedError", "WriteLock", "lock_path", "resume_mismatch"]


class FileLockedError(SpecmodelError):
    """Another process is writing the file."""


def lock_path(path: str | Path) -> Path:
    """The sidecar lock file of ``path``: ``<path>.lock``."""
    p = Path(path)
    return p.with_name(p.name + ".lock")


_HELD: dict[Path, list[int]] = {}
"""Lock files this process holds: resolved path -> [file descriptor, depth]."""
_GUARD = threading.Lock()


def _holder(lock: Path) -> str:
    """The pid written into ``lock`` by its holder, or '?'."""
    try:
        text = lock.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return "?"
    return text if text.isdigit() else "?"


class WriteLock:
    """An exclusive, non-blocking advisory lock on ``<path>.lock`` (a context manager).

    ``acquire`` raises :class:`FileLockedError` when another process holds it.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        """The file being written (the lock is its ``.lock`` sidecar)."""
        self.lock = lock_path(self.path)
        """The sidecar lock file."""
        self._key = Path(os.path.abspath(self.lock))
        self._mine = False

    def acquire(self) -> WriteLock:
        """Take the lock (again, if this process holds it already)."""
        if self._mine:
            return self
        with _GUARD:
            held = _HELD.get(self._key)
            if held is not None:
                held[1] += 1
                self._mine = True
                return self
            self.lock.parent.mkdir(parents=True, exist_ok=True)
            while True:
                fd = os.open(self.lock, os.O_RDWR | os.O_CREAT, 0o666)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    raise FileLockedError(
                        f"{self.path} is being written by another specmodel process "
                        f"(pid {_holder(self.lock)}); wait for it or choose another --output"
                    ) from None
                except BaseException:
                    os.close(fd)
                    raise
                # The holder before us may have removed the file after we opened it: then
                # we locked an orphan inode, and must lock the file that is there now.
                try:
                    same = os.stat(self.lock).st_ino == os.fstat(fd).st_ino
                except FileNotFoundError:
                    same = False
                if same:
                    break
                os.close(fd)
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode("ascii"))
            _HELD[self._key] = [fd, 1]
            self._mine = True
        return self

    def release(self) -> None:
        """Give the lock back (the outermost release removes the lock file)."""
        if not self._mine:
            return
        self._mine = False
        with _GUARD:
            held = _HELD.get(self._key)
            if held is None:
                return
            held[1] -= 1
            if held[1] > 0:
                return
            del _HELD[self._key]
            try:
                self.lock.unlink(missing_ok=True)  # while still locked: nobody else holds it
            finally:
                os.close(held[0])

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._mine

    def __enter__(self) -> WriteLock:
        return self.acquire()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()


def _flat(settings: dict[str, Any]) -> dict[str, Any]:
    """Nested dicts (``versions``) flattened to ``'versions.torch'`` keys."""
    out: dict[str, Any] = {}
    for key, value in settings.items():
        if isinstance(value, dict):
            out.update({f"{key}.{k}": v for k, v in value.items()})
        else:
            out[key] = value
    return out


def resume_mismatch(what: str | Path, recorded: dict[str, Any],
                    expected: dict[str, Any],
                    defaults: dict[str, Any] | None = None) -> str | None:
    """None when ``recorded`` agrees with ``expected`` on every key of ``expected``; else
    the one-line refusal ``--resume: WHAT was measured with seed = 1, not 2; …``.

    Nested dicts (package versions) are compared key by key; a key ``expected`` holds
    and ``recorded`` lacks counts as recorded None.  ``defaults`` (setting -> value):
    settings a key leaves out at their default, so that keys from before a setting
    existed still match; either side lacking one counts as holding its default (a
    recorded non-default is then compared against an expected key without it).
    """
    rec = _flat({**(defaults or {}), **recorded})
    exp = _flat({**(defaults or {}), **expected})
    diffs = [f"{k} = {rec.get(k)!r}, not {v!r}" for k, v in exp.items() if rec.get(k) != v]
    if not diffs:
        return None
    return (f"--resume: {what} was measured with {'; '.join(diffs)}; resume with the same "
            "settings, or start over without --resume or with another --output")
