"""How every ``specmodel`` command prints: JSON for machines, tables and lines of markup
for people (:mod:`cli.terminal`), one-line errors, a progress bar on stderr (rich's,
imported only by the long commands that show one).

Commands hand this module what the library returned (``.to_dict()``/``.model_dump()``
for JSON); nothing here knows about a particular command.
"""

from __future__ import annotations

import json
import sys
from pathlib import PurePath
from typing import Any

from cli.terminal import Console, Table, escape, table

__all__ = [
    "ProgressBar",
    "Table",
    "console",
    "dim",
    "emit_json",
    "error",
    "escape",
    "line",
    "show",
    "table",
    "to_jsonable",
]


def console(*, stderr: bool = False) -> Console:
    """Where text for people goes (:class:`cli.terminal.Console`): the terminal's width,
    120 columns when output is not a terminal (pipes, files, CI logs) unless ``COLUMNS``
    says otherwise; colour only on a terminal."""
    return Console(stderr=stderr)


def to_jsonable(o: Any) -> Any:
    """``json.dumps`` fallback: NumPy scalars and arrays as Python numbers and lists, paths
    as strings, objects that serialise themselves through ``to_dict()`` or
    ``model_dump(mode='json')``."""
    if hasattr(o, "to_dict"):
        return o.to_dict()
    if hasattr(o, "model_dump"):
        return o.model_dump(mode="json")
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.bool_):
        return bool(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, PurePath):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def emit_json(data: Any) -> None:
    """``data`` as indented JSON on stdout (NumPy-safe; see :func:`to_jsonable`)."""
    sys.stdout.write(json.dumps(data, indent=2, default=to_jsonable) + "\n")


def line(text: str, *, stderr: bool = False) -> None:
    """One line of markup (:mod:`cli.terminal`), wrapped at the width."""
    console(stderr=stderr).print(text)


def dim(text: str, *, stderr: bool = False) -> None:
    """One line in the dim style (context: which calibration, notes)."""
    console(stderr=stderr).print(f"[dim]{text}[/dim]")


def error(message: str) -> None:
    """``error: <first line of message>`` on stderr."""
    first = message.splitlines()[0] if message else "unknown error"
    sys.stderr.write(f"error: {first}\n")


def show(*tables: Table) -> None:
    """Print tables on stdout."""
    con = console()
    for t in tables:
        con.print(t)


class ProgressBar:
    """A rich progress bar on stderr (items done/total, elapsed, remaining), driven by the
    library's callback: pass the bar as ``progress`` and it is called as
    ``bar(done, total, message)`` (:data:`profiler.progress.ProgressCallback`).
    """

    def __init__(self, total: int | None = None, description: str = "") -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                             TimeElapsedColumn(), TimeRemainingColumn(),
                             console=Console(stderr=True), transient=False)
        self._total = total
        self._description = description
        self._task: Any = None

    def __enter__(self) -> ProgressBar:
        self._bar.__enter__()
        self._task = self._bar.add_task(self._description, total=self._total)
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.__exit__(*exc)

    def __call__(self, done: int, total: int, message: str) -> None:
        text = f"{self._description}: {message}" if self._description else str(message)
        self._bar.update(self._task, completed=done, total=total, description=text)
