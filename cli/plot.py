"""``specmodel plot``: write the plotly figures."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cli.common import (
    C1,
    C2,
    Alpha1,
    Alpha2,
    Budget,
    CalibrationOpt,
    Mode,
    ModeChoice,
    Parameters,
    PresetOpt,
    _console,
)


def plot(
    out: Annotated[Path, typer.Option("--out", help="Folder for the figures.")] = Path("figures"),
    which: Annotated[
        list[str] | None, typer.Option("--which", help="Figure name (repeatable); default all.")
    ] = None,
    budget: Budget = 16,
    calibration: CalibrationOpt = None,
    preset: PresetOpt = None,
    alpha1: Alpha1 = None,
    c1: C1 = None,
    alpha2: Alpha2 = None,
    c2: C2 = None,
    mode: Mode = ModeChoice.async_,
) -> None:
    """Write figures (HTML; PNG too where a static renderer is installed)."""
    from specmodel.figures import make_all

    use_params = any(v is not None for v in (calibration, preset, alpha1, c1, alpha2, c2))
    params = {"budget": budget, "mode": mode.value}
    if use_params:
        p = Parameters(calibration, preset, alpha1, c1, alpha2, c2)
        params.update(alpha1=p.alpha1, c1=p.c1, alpha2=p.alpha2, c2=p.c2)
    written = make_all(out, which, **params)
    con = _console()
    for path in written:
        con.print(f"wrote {path}")
    if not any(p.suffix == ".png" for p in written):
        con.print("[dim]PNG skipped: no static renderer (kaleido + a browser) installed.[/dim]")


def register(app: typer.Typer) -> None:
    """Add ``plot`` to the app."""
    app.command("plot")(plot)
