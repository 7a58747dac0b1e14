"""How every ``specmodel`` command prints: JSON for machines, rich tables and lines for
people, one-line errors, a progress bar on stderr.

Commands hand this module what the library returned (``.to_dict()``/``.model_dump()``
for JSON); nothing here knows about a particular command.  rich is imported only when
something is printed for people, so ``--json`` paths stay light.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import PurePath
from typing import Any

__all__ = [
    "ProgressBar",
    "console",
    "dim",
    "emit_json",
    "error",
    "line",
    "show",
    "table",
    "to_jsonable",
]


def console(*, stderr: bool = False) -> Any:
    """rich's console; 120 columns when output is not a terminal (pipes, files, CI logs)
    unless ``COLUMNS`` says otherwise."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty() or os.environ.get("COLUMNS"):
        return Console(stderr=stderr)
    return Console(width=120, stderr=stderr)


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
    """One line of rich markup."""
    console(stderr=stderr).print(text)


def dim(text: str, *, stderr: bool = False) -> None:
    """One line in the dim style (context: which calibration, notes)."""
    console(stderr=stderr).print(f"[dim]{text}[/dim]")


def error(message: str) -> None:
    """``error: <first line of message>`` on stderr."""
    first = message.splitlines()[0] if message else "unknown error"
    sys.stderr.write(f"error: {first}\n")


def table(
    title: str | None,
    columns: Sequence[str],
    rows: Iterable[Sequence[str]] = (),
    *,
    justify: str | Sequence[str | None] | None = None,
    no_wrap: bool = False,
) -> Any:
    """A rich ``Table`` with the given columns and rows (cells as rich markup).

    ``justify`` is one value for every column or one per column (None: rich's default).
    """
    from rich.table import Table

    t = Table(title=title)
    just = [justify] * len(columns) if justify is None or isinstance(justify, str) else justify
    for col, j in zip(columns, just, strict=True):
        kw: dict[str, Any] = {"no_wrap": True} if no_wrap else {}
        if j is not None:
            kw["justify"] = j
        t.add_column(col, **kw)
    for row in rows:
        t.add_row(*row)
    return t


def show(*renderables: Any) -> None:
    """Print rich renderables (tables) on stdout."""
    con = console()
    for r in renderables:
        con.print(r)


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
