"""``specmodel compare``: every method family under one budget, and which wins."""

from __future__ import annotations

from typing import Annotated

import typer

from cli import render
from cli.common import JsonOut, ModelInputs, model_inputs
from specmodel.errors import SpecmodelError


def compare(
    inputs: ModelInputs,
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
    from specmodel.optimize.methods import CascadeParams, LookaheadParams, compare_methods

    if (alpha_prime is None) != (c_d2 is None):
        raise SpecmodelError("--alpha-prime and --c-d2 must be given together for the cascade")
    cascade = None
    if alpha_prime is not None and c_d2 is not None:
        cascade = CascadeParams(alpha_prime, c_d2)
    lookahead = None if alpha_lookahead is None else LookaheadParams(alpha_lookahead, lookahead_f)
    res = compare_methods(inputs.params, inputs.budget, cascade=cascade, lookahead=lookahead)
    if json_out:
        render.emit_json({**res.to_dict(), "calibration": inputs.source.to_dict()})
        return
    inputs.print_source()
    render.show(render.table(
        f"Method families under a budget of {res.budget} positions per target pass",
        ("method", "settings", "width", "speedup"),
        [(r.method, ", ".join(f"{k}={v}" for k, v in r.settings.items()), str(r.width),
          f"{r.speedup:.3f}x") for r in res.results]))
    render.line(f"winner: [bold]{res.winner.method}[/bold] at {res.winner.speedup:.3f}x")
    for name, why in res.skipped.items():
        render.dim(f"skipped {name}: {why}")


def register(app: typer.Typer) -> None:
    """Add ``compare`` to the app."""
    options = {"alpha_prime": "--alpha-prime", "c_d2": "--c-d2",
               "alpha_lookahead": "--alpha-lookahead", "alpha": "--alpha-lookahead"}
    app.command("compare")(model_inputs(budget=True, options=options)(compare))
