"""``specmodel plot``: write the plotly figures."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cli import render
from cli.common import ModelInputs, model_inputs


def plot(
    inputs: ModelInputs,
    out: Annotated[Path, typer.Option("--out", help="Folder for the figures.")] = Path("figures"),
    which: Annotated[
        list[str] | None, typer.Option("--which", help="Figure name (repeatable); default all.")
    ] = None,
    png: Annotated[
        bool, typer.Option("--png/--no-png", help="Also write PNG (needs kaleido + Chromium).")
    ] = True,
    shared_js: Annotated[
        bool,
        typer.Option(
            "--shared-js",
            help="Write one plotly.min.js beside the figures instead of embedding it in each.",
        ),
    ] = False,
) -> None:
    """Write the figures: self-contained HTML, and PNG where kaleido and Chromium are found.

    The HTML embeds plotly.js (opens offline); PNG needs kaleido and a
    Chrome/Chromium. The calibrated figures use the chosen calibration
    (--calibration/--preset, else the embedded default), and say which."""
    from specmodel.figures import PNG_HINT, make_all

    inputs.print_source()
    written = make_all(
        out,
        which,
        inputs.params,
        budget=inputs.budget,
        mode=inputs.mode,
        label=inputs.source.name,
        png=png,
        plotlyjs="directory" if shared_js else "embed",
    )
    render.dim(f"{inputs.params.describe()}; mode {inputs.mode}, budget M = {inputs.budget}.")
    for path in written:
        render.line(f"wrote {path}")
    if written.png_skipped is not None:
        render.dim(f"PNG skipped: {written.png_skipped}; {PNG_HINT}.")


def register(app: typer.Typer) -> None:
    """Add ``plot`` to the app."""
    app.command("plot")(model_inputs(budget=True, mode=True)(plot))
