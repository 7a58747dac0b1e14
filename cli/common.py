"""Options and helpers shared by the ``specmodel`` commands."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer


class ModeChoice(StrEnum):
    """Lookahead Reasoning algorithm."""

    sync = "sync"
    async_ = "async"


class MethodChoice(StrEnum):
    """How the optimizer evaluates configurations."""

    closed_form = "closed-form"
    mc = "mc"


class ProcessChoice(StrEnum):
    """Which process `simulate` runs."""

    token = "token"
    sync = "sync"
    async_ = "async"
    hybrid = "hybrid"


Budget = Annotated[int, typer.Option("--budget", "-M", min=1, help="Parallelism budget M (>= 1).")]
CalibrationOpt = Annotated[
    Path | None, typer.Option("--calibration", "-c", help="Calibration JSON file.")
]
PresetOpt = Annotated[str | None, typer.Option("--preset", help="Embedded calibration name.")]
Alpha1 = Annotated[float | None, typer.Option("--alpha1", help="Step acceptance rate α1.")]
C1 = Annotated[float | None, typer.Option("--c1", help="Draft-step cost ratio c1.")]
Alpha2 = Annotated[float | None, typer.Option("--alpha2", help="Token acceptance rate α2.")]
C2 = Annotated[float | None, typer.Option("--c2", help="Draft-token cost ratio c2.")]
Mode = Annotated[ModeChoice, typer.Option("--mode", help="sync (Algorithm 1) or async.")]
JsonOut = Annotated[bool, typer.Option("--json", help="Print JSON for machines.")]


def unescape(text: str) -> str:
    """Decode backslash escapes typed on a command line ('\\n' -> newline)."""
    return text.encode().decode("unicode_escape")


def _console() -> Any:
    """rich's console; 120 columns when output is not a terminal (pipes, files, CI logs)
    unless ``COLUMNS`` says otherwise."""
    import os

    from rich.console import Console

    if sys.stdout.isatty() or os.environ.get("COLUMNS"):
        return Console()
    return Console(width=120)


def _emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=_jsonable) + "\n")


def _jsonable(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


class Parameters:
    """α1, c1, α2, c2 after merging a calibration with direct overrides."""

    def __init__(
        self,
        calibration: Path | None,
        preset: str | None,
        alpha1: float | None,
        c1: float | None,
        alpha2: float | None,
        c2: float | None,
    ) -> None:
        direct = [alpha1, c1, alpha2, c2]
        self.cal = None
        if calibration is not None or preset is not None or any(v is None for v in direct):
            from specmodel.formats.calibration import resolve_calibration

            self.cal = resolve_calibration(calibration, preset)
        self.alpha1 = alpha1 if alpha1 is not None else self.cal.step.alpha1
        self.c1 = c1 if c1 is not None else self.cal.step.c1
        self.alpha2 = alpha2 if alpha2 is not None else self.cal.token.alpha2
        self.c2 = c2 if c2 is not None else self.cal.token.c2
        overridden = [
            n
            for n, v in zip(("alpha1", "c1", "alpha2", "c2"), direct, strict=True)
            if v is not None
        ]
        if self.cal is None:
            self.source = {"name": "command line", "source": "user", "overridden": overridden}
        else:
            self.source = {
                "name": self.cal.name,
                "source": self.cal.provenance.source,
                "file": str(calibration) if calibration else None,
                "default": calibration is None and preset is None,
                "overridden": overridden,
            }

    def describe(self) -> str:
        """One line saying which calibration was used."""
        s = self.source
        if self.cal is None:
            return "parameters given on the command line"
        text = f"calibration '{s['name']}' ({s['source']})"
        if s["default"]:
            text += " — the embedded default; pass --calibration or --preset to change it"
        if s["overridden"]:
            text += f"; overridden: {', '.join(s['overridden'])}"
        return text


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
