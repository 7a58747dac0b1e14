"""What an interrupted command has saved, and how to go on: the one line of Ctrl-C.

A long command registers, for the time it runs, a function that says what is on disk
and how to resume (``with saving(lambda: f"{output} holds …; run it again with
--resume")``).  When the run is interrupted (SIGINT: a KeyboardInterrupt, which typer
turns into an exit code or click into an Abort), ``cli.main.main`` prints
``interrupted: <that line>`` on stderr — or just ``interrupted`` for a command that
registered nothing — and exits 130.  The line is taken while the interrupt unwinds
through the command, so it describes the state the command left behind.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["EXIT_CODE", "interrupt_line", "reset", "saving", "sigint_handler", "was_interrupted"]

EXIT_CODE = 130
"""The exit status of an interrupted command (128 + SIGINT, as shells report it)."""

_describers: list[Callable[[], str]] = []
"""What the commands running now have saved (innermost last)."""
_state: dict[str, str | bool | None] = {"line": None, "signal": False}
"""The line captured while an interrupt unwound, and whether SIGINT arrived."""


def reset() -> None:
    """Forget an earlier interrupt (``main`` calls it before each run)."""
    _describers.clear()
    _state.update(line=None, signal=False)


@contextmanager
def saving(describe: Callable[[], str] | str) -> Iterator[None]:
    """While the block runs, an interrupt is reported with ``describe()`` (or the string):
    what is saved and how to resume."""
    fn = describe if callable(describe) else (lambda: describe)
    _describers.append(fn)
    try:
        yield
    except KeyboardInterrupt:
        _state["signal"] = True
        if _state["line"] is None:
            try:
                _state["line"] = fn()
            except Exception:  # the message must never hide the interrupt
                _state["line"] = None
        raise
    finally:
        _describers.remove(fn)


def was_interrupted(exc: BaseException | None = None) -> bool:
    """Whether SIGINT arrived, or ``exc`` is (or was caused by) a KeyboardInterrupt."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return bool(_state["signal"])


def interrupt_line() -> str:
    """The one line to print: ``interrupted: <what is saved>`` or ``interrupted``."""
    line = _state["line"]
    return f"interrupted: {line}" if line else "interrupted"


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    _state["signal"] = True
    raise KeyboardInterrupt


@contextmanager
def sigint_handler() -> Iterator[None]:
    """Note SIGINT (then raise KeyboardInterrupt as Python does) while the block runs; the
    previous handler is restored after.  Outside the main thread, or where SIGINT is not
    Python's default (ignored, as for a shell's background job, or handled by a host
    program), nothing changes."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return
    previous = signal.signal(signal.SIGINT, _on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
