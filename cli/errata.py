"""``specmodel errata [ID]``: run the check behind every entry of docs/errata.md."""

from __future__ import annotations

from typing import Annotated

import typer

from cli import render
from cli.common import JsonOut


def errata(
    ids: Annotated[
        list[str] | None, typer.Argument(help="Erratum ids (LR-1, CSD-2, LD-1…); default all.")
    ] = None,
    json_out: JsonOut = False,
) -> None:
    """Check every erratum of the papers: statement, truth and verdict.

    For each erratum: the paper (file name), its statement, the truth, and the verdict,
    each computed by this project's closed forms, simulations and sympy checks."""
    from specmodel.errata import run_checks

    results = run_checks(ids or None)
    if json_out:
        render.emit_json([r.to_dict() for r in results])
        return
    render.show(render.table(
        "Errata of the source papers (docs/errata.md)",
        ("id", "paper", "paper's statement (computed)", "truth (computed)", "verdict"),
        [(r.erratum.id, r.erratum.paper, r.outcome.paper, r.outcome.truth,
          r.verdict if r.outcome.truth_holds else f"[red]{r.verdict}[/red]") for r in results]))
    if any(not r.outcome.truth_holds for r in results):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``errata`` to the app."""
    app.command("errata")(errata)
