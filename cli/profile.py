"""``specmodel profile``: measure on real models and write a calibration."""

from __future__ import annotations

import platform
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from cli.common import CalibrationOpt, PresetOpt, _console

profile_app = typer.Typer(help="Measure c, α and T(b) on real models.", no_args_is_help=True)


@profile_app.command("batch-cost")
def batch_cost(
    model: Annotated[str, typer.Option(help="Pack name or local model folder (the target).")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Calibration file to write.")],
    engine: Annotated[str, typer.Option(help="transformers or vllm.")] = "transformers",
    widths: Annotated[str, typer.Option(help="Comma-separated batch widths.")] = "1,2,4,8,16",
    tokens: Annotated[int, typer.Option(help="Decode steps timed per repeat.")] = 16,
    repeats: Annotated[int, typer.Option(help="Timed repeats per width.")] = 3,
    threads: Annotated[int, typer.Option(help="CPU threads (transformers).")] = 1,
    calibration: CalibrationOpt = None,
    preset: PresetOpt = None,
) -> None:
    """Measure the target's T(b) and write it into a copy of a calibration."""
    from profiler.batch_cost import batch_cost_section, measure_batch_cost
    from profiler.packs import resolve_model
    from specmodel.calibration import Calibration, resolve_calibration, save_calibration

    try:
        ws = [int(w) for w in widths.split(",") if w.strip()]
    except ValueError as e:
        raise ValueError(f"widths must be comma-separated integers, got {widths!r}") from e
    base = resolve_calibration(calibration, preset)
    path = resolve_model(model)
    con = _console()
    timings = measure_batch_cost(path, engine=engine, widths=ws, tokens=tokens,
                                 repeats=repeats, threads=threads,
                                 progress=lambda m: con.print(f"[dim]{m}[/dim]"))
    data = base.model_dump(exclude_none=True)
    data["name"] = f"{base.name}+batch-cost"
    data["batch_cost"] = batch_cost_section(timings)
    prov = data["provenance"]
    machine = f"{platform.machine()} {platform.processor() or ''}".strip()
    prov["description"] += (
        f" batch_cost: T(b) measured by `specmodel profile batch-cost` on {model} with "
        f"{engine}, {tokens} decode steps x {repeats} repeats per width, {threads} thread(s)."
    )
    prov["date"] = datetime.now(UTC).date().isoformat()
    prov.setdefault("settings", {})["batch_cost"] = {"model": model, "engine": engine,
                                                     "tokens": tokens, "repeats": repeats,
                                                     "threads": threads, "machine": machine}
    save_calibration(Calibration.model_validate(data), output)
    con.print(f"wrote {output}")


def register(app: typer.Typer) -> None:
    """Add ``profile`` to the app."""
    app.add_typer(profile_app, name="profile")
