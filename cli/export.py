"""``specmodel export --engine vllm``: the serving engine's config for the chosen point."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli import render
from cli.common import Concurrency, ModelInputs, TargetBatchingOpt, batchings_of, model_inputs
from specmodel.errors import SpecmodelError

if TYPE_CHECKING:
    from specmodel.config import SpecConfig


def export(
    inputs: ModelInputs,
    engine: Annotated[str, typer.Option(help="Serving engine (vllm).")] = "vllm",
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
    concurrency: Concurrency = 1,
    target_batching: TargetBatchingOpt = None,
) -> None:
    """Write vLLM's speculative_config and the Lookahead Reasoning decoder settings."""
    from specmodel.formats.export import export_vllm, save_export
    from specmodel.optimize.budget import optimize_budget

    if engine != "vllm":
        raise SpecmodelError(f"--engine must be 'vllm', got {engine!r}")
    params, budget, mode = inputs.params, inputs.budget, inputs.mode
    base = _base_config(inputs, token_method, draft_model, prompt_lookup_min, prompt_lookup_max,
                        verifier)
    curve = inputs.priced_curve(concurrency)
    res = optimize_budget(params, budget, mode, base=base)
    decisions = best = None
    if curve is not None:  # the same answer as optimize: priced at the concurrency
        from specmodel.optimize.pricing import price_budget

        priced = price_budget(params, budget, mode, curve, concurrency)
        decisions, best = priced.by_batch_size, priced.best
    dec = None
    cal = inputs.calibration
    if cal is not None and cal.engine_costs is not None and concurrency == 1:
        # what optimize leads with (the decoder model predicts one request at a time)
        from specmodel.decodermodel.search import optimize_decoder

        dec = optimize_decoder(cal, budget, base=base, batchings=batchings_of(target_batching))
    bundle = export_vllm(res, calibration_name=inputs.source.name,
                         calibration_source=inputs.source.source, decisions=decisions,
                         priced=best, concurrency=concurrency, decoder=dec)
    if output is None:
        inputs.print_source(stderr=True)
        render.emit_json(bundle.to_dict())
        return
    path = save_export(bundle, output)
    inputs.print_source()
    render.line(f"wrote {path} (speculative_config for vLLM, decoder settings)")


def _base_config(
    inputs: ModelInputs,
    token_method: str | None,
    draft_model: str | None,
    prompt_lookup_min: int | None,
    prompt_lookup_max: int | None,
    verifier: str | None,
) -> SpecConfig:
    """The calibration's run configuration (its token drafter and verifier) with the
    command line's drafter and verifier options applied."""
    from specmodel.config import VERIFIER_KINDS, SpecConfig

    cal = inputs.calibration
    base = cal.base_config(inputs.mode) if cal is not None else SpecConfig(mode=inputs.mode)
    token = {"method": token_method, "model": draft_model,
             "prompt_lookup_min": prompt_lookup_min, "prompt_lookup_max": prompt_lookup_max}
    token = {k: v for k, v in token.items() if v is not None}
    if token:
        base = base.replace(token=token)
    if verifier is not None:
        if verifier not in VERIFIER_KINDS:
            raise SpecmodelError(
                f"--verifier must be one of {', '.join(VERIFIER_KINDS)}, got {verifier!r}")
        base = base.replace(verifier={"kind": verifier})
    return base


def register(app: typer.Typer) -> None:
    """Add ``export`` to the app."""
    app.command("export")(model_inputs(
        budget=True, mode=True,
        options={"serving_batch": "--concurrency", "concurrency": "--concurrency",
                 "token.method": "--token-method", "token.model": "--draft-model",
                 "token.prompt_lookup_min": "--prompt-lookup-min",
                 "token.prompt_lookup_max": "--prompt-lookup-max",
                 "token": "--token-method/--draft-model"})(export))
