"""``specmodel plot``: write the plotly figures."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from cli import render
from cli.common import ModelInputs, model_inputs


def plot(
    inputs: ModelInputs,
    out: Annotated[Path, typer.Option("--out", help="Folder for the figures.")] = Path("figures"),
    which: Annotated[
        list[str] | None, typer.Option("--which", help="Figure name (repeatable); default all.")
    ] = None,
) -> None:
    """Write figures (HTML; PNG too where a static renderer is installed)."""
    from specmodel.figures import make_all

    params: dict[str, Any] = {"budget": inputs.budget, "mode": inputs.mode}
    if inputs.given:  # else the figures' own defaults
        params.update(inputs.params.to_dict())
    written = make_all(out, which, **params)
    for path in written:
        render.line(f"wrote {path}")
    if not any(p.suffix == ".png" for p in written):
        render.dim("PNG skipped: no static renderer (kaleido + a browser) installed.")


def register(app: typer.Typer) -> None:
    """Add ``plot`` to the app."""
    app.command("plot")(model_inputs(budget=True, mode=True)(plot))
