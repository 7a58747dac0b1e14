"""``specmodel export --engine vllm``: the serving engine's config for the chosen point."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cli.common import (
    C1,
    C2,
    Alpha1,
    Alpha2,
    Budget,
    CalibrationOpt,
    Mode,
    ModeChoice,
    Parameters,
    PresetOpt,
    _console,
    _emit_json,
)


def export(
    engine: Annotated[str, typer.Option(help="Serving engine (vllm).")] = "vllm",
    budget: Budget = 16,
    calibration: CalibrationOpt = None,
    preset: PresetOpt = None,
    alpha1: Alpha1 = None,
    c1: C1 = None,
    alpha2: Alpha2 = None,
    c2: C2 = None,
    mode: Mode = ModeChoice.async_,
    token_method: Annotated[
        str | None, typer.Option(help="ngram, draft_model, eagle, eagle3, mtp or suffix.")
    ] = None,
    draft_model: Annotated[str | None, typer.Option(help="Draft model path or name.")] = None,
    prompt_lookup_min: Annotated[int | None, typer.Option(help="n-gram: shortest match.")] = None,
    prompt_lookup_max: Annotated[int | None, typer.Option(help="n-gram: longest match.")] = None,
    verifier: Annotated[
        str | None, typer.Option(help="exact, embedding or judge (default: the calibration's).")
    ] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write JSON here.")] = None,
) -> None:
    """Write vLLM's speculative_config and the Lookahead Reasoning decoder settings."""
    import json
    import os
    import tempfile

    from specmodel.formats.export import TokenDrafter, export_vllm
    from specmodel.optimize.budget import optimize_budget

    if engine != "vllm":
        raise ValueError(f"engine must be 'vllm', got {engine!r}")
    p = Parameters(calibration, preset, alpha1, c1, alpha2, c2)
    res = optimize_budget(p.alpha1, p.c1, p.alpha2, p.c2, budget, mode.value)
    tok = p.cal.token if p.cal is not None else None
    method = token_method or (tok.method if tok else "ngram")
    drafter = TokenDrafter(
        method=method,
        model=draft_model or (tok.draft_model if tok else None),
        prompt_lookup_min=prompt_lookup_min or (tok.prompt_lookup_min if tok else None) or 1,
        prompt_lookup_max=prompt_lookup_max or (tok.prompt_lookup_max if tok else None) or 3,
    )
    if verifier is None:
        named = (p.cal.step.verifier or "") if p.cal is not None else ""
        verifier = named.split(":")[0] if named.split(":")[0] in ("exact", "judge") else "embedding"
    decisions = None
    curve = p.cal.batch_cost_curve() if p.cal is not None else None
    if curve is not None:
        from specmodel.optimize.pricing import speculation_by_batch_size

        decisions = speculation_by_batch_size(mode.value, p.alpha1, p.c1, p.alpha2, p.c2,
                                              budget, curve)
    bundle = export_vllm(res, drafter, calibration_name=p.source["name"],
                         calibration_source=p.source["source"], verifier=verifier,
                         decisions=decisions)
    data = bundle.to_dict()
    if output is None:
        _emit_json(data)
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{output.name}.", dir=output.parent)
    with os.fdopen(fd, "w") as fh:
        fh.write(json.dumps(data, indent=2) + "\n")
    os.replace(tmp, output)
    _console().print(f"wrote {output} (speculative_config for vLLM, decoder settings)")


def register(app: typer.Typer) -> None:
    """Add ``export`` to the app."""
    app.command("export")(export)
