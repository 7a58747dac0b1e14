"""``specmodel report RUN_RECORD``: one self-contained HTML page of a run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cli import render
from cli.common import CalibrationOpt, ModeChoice, PresetOpt, resolve_inputs


def report(
    run_record: Annotated[Path, typer.Argument(help="A run record (specmodel decode).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The HTML file to write.")] = Path(
        "report.html"
    ),
    calibration: CalibrationOpt = None,
    preset: PresetOpt = None,
    budget: Annotated[
        int | None,
        typer.Option("--budget", "-M", min=1, help="Landscape budget (default: the run's)."),
    ] = None,
    mode: Annotated[ModeChoice, typer.Option("--mode", help="Landscape: sync or async.")] = (
        ModeChoice.async_
    ),
) -> None:
    """Write one self-contained HTML page on a run record: predicted against measured.

    The page embeds plotly.js (opens offline) and shows predicted against measured
    speedup per configuration, acceptance by position, the T(b) curve, the landscape with
    the optimizer's choice. Predictions use the run's own calibration unless
    --calibration/--preset is given."""
    from specmodel.formats.run_record import load_run_record
    from specmodel.report import write_report

    record = load_run_record(run_record)
    if calibration is not None or preset is not None or record.calibration is None:
        inputs = resolve_inputs(calibration, preset)
        cal = inputs.calibration
        note = inputs.source.describe()
    else:
        cal = record.calibration
        note = f"the run record's own calibration '{cal.name}'"
    rep = write_report(record, out, cal, calibration_note=note, budget=budget,
                       mode=ModeChoice(mode).value)
    render.dim(f"Using {note}.")
    size = out.stat().st_size
    render.line(f"wrote {out} ({size / 1e6:.1f} MB, {len(rep.figures)} figures, "
                f"{len(rep.rows)} configurations)")


def register(app: typer.Typer) -> None:
    """Add ``report`` to the app."""
    app.command("report")(report)
