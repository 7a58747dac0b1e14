"""``specmodel compare``: every method family under one budget, and which wins."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.common import (
    C1,
    C2,
    Alpha1,
    Alpha2,
    Budget,
    CalibrationOpt,
    JsonOut,
    Parameters,
    PresetOpt,
    _console,
    _emit_json,
)


def compare(
    budget: Budget = 16,
    calibration: CalibrationOpt = None,
    preset: PresetOpt = None,
    alpha1: Alpha1 = None,
    c1: C1 = None,
    alpha2: Alpha2 = None,
    c2: C2 = None,
    alpha_prime: Annotated[
        float | None,
        typer.Option(help="cascade: acceptance of the cheapest draft by the middle one."),
    ] = None,
    c_d2: Annotated[
        float | None, typer.Option(help="cascade: cost of the cheapest draft's token.")
    ] = None,
    alpha_lookahead: Annotated[
        float | None, typer.Option(help="lookahead decoding: acceptance of a guessed token.")
    ] = None,
    lookahead_f: Annotated[
        float, typer.Option(help="lookahead decoding: steps per good speculation (Eq. 7).")
    ] = 3.106,
    json_out: JsonOut = False,
) -> None:
    """Compare token-only, step-only, hybrid (sync/async), cascade and lookahead decoding."""
    from dataclasses import asdict

    from specmodel.optimize.methods import CascadeParams, LookaheadParams, compare_methods

    p = Parameters(calibration, preset, alpha1, c1, alpha2, c2)
    cascade = None
    if (alpha_prime is None) != (c_d2 is None):
        raise ValueError("alpha_prime and c_d2 must be given together for the cascade")
    if alpha_prime is not None and c_d2 is not None:
        cascade = CascadeParams(alpha_prime, c_d2)
    lookahead = None if alpha_lookahead is None else LookaheadParams(alpha_lookahead, lookahead_f)
    res = compare_methods(
        p.alpha1, p.c1, p.alpha2, p.c2, budget, cascade=cascade, lookahead=lookahead
    )
    if json_out:
        _emit_json(
            {
                "budget": res.budget,
                "winner": res.winner.method,
                "results": [asdict(r) for r in res.results],
                "skipped": res.skipped,
                "calibration": p.source,
            }
        )
        return
    from rich.table import Table

    con = _console()
    con.print(f"[dim]Using {p.describe()}.[/dim]")
    t = Table(title=f"Method families under a budget of {res.budget} positions per target pass")
    for col in ("method", "settings", "width", "speedup"):
        t.add_column(col)
    for r in res.results:
        settings = ", ".join(f"{k}={v}" for k, v in r.settings.items())
        t.add_row(r.method, settings, str(r.width), f"{r.speedup:.3f}x")
    con.print(t)
    con.print(f"winner: [bold]{res.winner.method}[/bold] at {res.winner.speedup:.3f}x")
    for name, why in res.skipped.items():
        con.print(f"[dim]skipped {name}: {why}[/dim]")


def register(app: typer.Typer) -> None:
    """Add ``compare`` to the app."""
    app.command("compare")(compare)
