"""The ``specmodel`` command line: parse, call the library, print.

Every command prints a table by default and machine JSON with ``--json``.
Bad input never produces a traceback: a ``ValueError`` from the library (or a
usage error) becomes one line on stderr and exit code 2.
"""

from __future__ import annotations

import copy
import inspect
import os
import sys
from collections.abc import Sequence
from typing import Annotated, Any

import typer

from cli import render
from cli.common import (
    Concurrency,
    JsonOut,
    MethodChoice,
    ModelInputs,
    ProcessChoice,
    TargetBatchingOpt,
    batchings_of,
    model_inputs,
)

_app = typer.Typer(
    name="specmodel",
    help="Predict, optimize and realize the speedup of speculative decoding.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    """``--version``: ``specmodel X.Y.Z``, then exit."""
    if value:
        from specmodel import __version__

        sys.stdout.write(f"specmodel {__version__}\n")
        raise typer.Exit(0)


@_app.callback()
def _main_options(
    version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True,
        help="Print specmodel's version and exit.")] = False,
) -> None:
    """Predict, optimize and realize the speedup of speculative decoding."""


def _contention(text: str | None, *, what_if: bool
                ) -> tuple[float | None, float | None, str | None]:
    """``--contention TARGET[,DRAFT]`` as (the target's slowdown, the draft's, None), or
    ``--contention kernels|overlap`` as (None, None, the model); all None when not
    given.  It prices a decoder-model what-if only."""
    if text is None:
        return None, None, None
    if not what_if:
        raise ValueError("--contention prices a what-if with --target-arch, --draft-arch "
                         "and --decoder")
    from specmodel.hardware.costmodel import CONTENTION_MODELS

    if text in CONTENTION_MODELS:
        return None, None, text
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        values = []
    if len(values) not in (1, 2) or not all(1.0 <= v < float("inf") for v in values):
        raise ValueError(f"--contention must be TARGET or TARGET,DRAFT (numbers >= 1), or "
                         f"{' or '.join(CONTENTION_MODELS)}; got {text!r}")
    return values[0], values[-1], None


@_app.command()
@model_inputs(budget=True, mode=True, options={"n_samples": "--samples", "samples": "--samples",
                                               "serving_batch": "--concurrency",
                                               "concurrency": "--concurrency",
                                               "target": "--target-arch",
                                               "draft": "--draft-arch",
                                               "device": "--device", "context": "--context",
                                               "placement": "--placement",
                                               "contention_model": "--contention",
                                               "attention_layout": "--attention-layout",
                                               "token_drafter": "--token-drafter"})
def optimize(
    inputs: ModelInputs,
    method: Annotated[
        MethodChoice, typer.Option("--method", help="closed-form, or mc (Monte-Carlo).")
    ] = MethodChoice.closed_form,
    samples: Annotated[int, typer.Option(help="Monte-Carlo samples per level.")] = 200_000,
    seed: Annotated[int, typer.Option(min=0, help="Monte-Carlo seed.")] = 0,
    concurrency: Concurrency = 1,
    landscape: Annotated[bool, typer.Option(help="Include every feasible point.")] = False,
    target_arch: Annotated[str | None, typer.Option(
        "--target-arch", help="What-if: the target's architecture (embedded name or "
        "config.json); costs come from the analytical cost model, no hardware runs.")
    ] = None,
    draft_arch: Annotated[str | None, typer.Option(
        "--draft-arch", help="What-if: the step draft's architecture.")] = None,
    token_drafter: Annotated[str, typer.Option(
        "--token-drafter", help="What-if: same (the draft), ngram, or an architecture.")
    ] = "same",
    device: Annotated[str, typer.Option(
        "--device", help="What-if: device preset (h100-sxm, h200, a100-80gb-sxm, l40s, "
        "cpu-epyc, cpu-xeon).")] = "h100-sxm",
    context: Annotated[int, typer.Option(
        "--context", help="What-if: tokens already in each request's context.")] = 4096,
    placement: Annotated[str, typer.Option(
        "--placement", help="What-if: draft and target on one-device or two-devices.")
    ] = "two-devices",
    shared_prefix: Annotated[bool, typer.Option(
        "--shared-prefix/--no-shared-prefix",
        help="What-if: branches share their prefix's attention (cascade kernels).")] = True,
    attention_layout: Annotated[str, typer.Option(
        "--attention-layout", help="What-if: the verification attention kernel's blocks: "
        "gqa (one per query head, as profiled) or packed (one per KV head, as "
        "decode-optimized engine kernels).")] = "gqa",
    target_batching: TargetBatchingOpt = None,
    decoder: Annotated[bool | None, typer.Option(
        "--decoder/--no-decoder",
        help="The decoder model (a Monte-Carlo of the project's decoder, every engine "
        "call priced; a few seconds): by default it leads when the calibration has engine "
        "costs; with --target-arch, --decoder adds it priced by predicted profiles.")
    ] = None,
    contention: Annotated[str | None, typer.Option(
        "--contention", metavar="TARGET[,DRAFT]|kernels|overlap",
        help="What-if with --decoder: how many times slower the target's and the draft's "
        "forwards run beside each other's, as measured (numbers >= 1; one number for both), "
        "or the model that predicts it on one device: kernels (graphs on two streams of "
        "one GPU, the default on a GPU; one H200 measured 1.16,2.61 for 32B beside 1.5B) or "
        "overlap (2 - overlap = 1.9 for both, the default on a CPU; two cores of this "
        "project's EPYC measured about 1.17). 1 on two devices (docs/hardware.md).")
    ] = None,
    json_out: JsonOut = False,
) -> None:
    """Split a parallelism budget between steps in flight (k1) and tokens per step (k2).

    With a measured T(b) in the calibration the answer is priced by it at --concurrency
    requests; the papers' flat-budget f·g optimum is shown beside it as a comparison.
    With --target-arch and --draft-arch the costs come from the analytical cost model
    of those architectures on --device at --context (acceptance from the calibration).
    """
    from specmodel.optimize.budget import optimize_budget, optimize_budget_mc

    params, budget, mode = inputs.params, inputs.budget, inputs.mode
    batchings = batchings_of(target_batching, "both" if target_arch is not None else "call")
    slowdowns = _contention(contention, what_if=target_arch is not None and bool(decoder))
    if target_arch is not None or draft_arch is not None:
        if target_arch is None or draft_arch is None:
            raise ValueError("--target-arch and --draft-arch go together: give both")
        from specmodel.hardware.whatif import what_if

        result = what_if(target_arch, draft_arch, alpha1=params.alpha1,
                         alpha2=params.alpha2, device=device, context=context,
                         concurrency=concurrency, placement=placement,  # type: ignore[arg-type]
                         shared_prefix=shared_prefix,
                         attention_layout=attention_layout,  # type: ignore[arg-type]
                         token_drafter=token_drafter, budget=budget)
        dec = None
        if decoder:
            if inputs.calibration is None:
                raise ValueError("--decoder needs a calibration (--calibration or --preset) "
                                 "for the step lengths and acceptance, not typed numbers")
            if concurrency != 1:
                raise ValueError("--decoder predicts one request at a time: use "
                                 "--concurrency 1")
            from specmodel.hardware.whatif import what_if_decoder

            dec = what_if_decoder(inputs.calibration, target_arch, draft_arch,
                                  device=device, context=context,
                                  placement=placement,  # type: ignore[arg-type]
                                  token_drafter=token_drafter, budget=budget, seed=seed,
                                  search={"batchings": batchings},
                                  concurrent=slowdowns[0], concurrent_draft=slowdowns[1],
                                  contention_model=slowdowns[2])
        if json_out:
            render.emit_json({**result.to_dict(), "calibration": inputs.source.to_dict(),
                              **({} if dec is None else {"decoder_model": dec.to_dict()})})
            return
        _print_what_if(inputs, result)
        if dec is not None:
            _print_decoder(inputs, dec, costs="hardware profiles the cost model predicts "
                           "(no hardware run) on an engine with prefix caching whose call "
                           "returns with its longest member" + (
                               "; async also with continuous batching (each step joins "
                               "the engine's running batch)" if "continuous" in batchings
                               else ""), source=False)
        return
    curve = inputs.priced_curve(concurrency)
    base = inputs.calibration.base_config(mode) if inputs.calibration is not None else None
    mc = None
    if method == MethodChoice.mc:
        mc = optimize_budget_mc(params, budget, mode, base=base, samples=samples, seed=seed)
        res = mc.closed_form
    else:
        res = optimize_budget(params, budget, mode, base=base, landscape=landscape)
    priced = None
    if curve is not None:
        from specmodel.optimize.pricing import price_budget

        priced = price_budget(params, budget, mode, curve, concurrency,
                              compare=(res.k1, res.k2))
    dec = None
    cal = inputs.calibration
    if decoder is not False and cal is not None and cal.engine_costs is not None \
            and concurrency == 1:
        # the decoder model predicts one request at a time
        from specmodel.decodermodel.search import optimize_decoder

        dec = optimize_decoder(cal, budget, base=base, seed=seed, batchings=batchings)
    if json_out:
        out = _optimize_json(inputs, res, priced, mc, method.value, landscape)
        if dec is not None:  # the best model the calibration supports leads
            b = dec.best
            out = {"model": "decoder model", "mode": b.mode, "k1": b.k1, "k2": b.k2,
                   "width": b.width, "speedup": b.speedup, "interval": list(b.interval or ()),
                   "tokens_per_second": b.tokens_per_second, "budget": budget,
                   "calibration": inputs.source.to_dict(), "decoder_model": dec.to_dict(),
                   "comparisons": out}
        elif cal is not None:
            out["decoder_model"] = {"used": False, "missing": cal.decoder_gaps()}
        render.emit_json(out)
        return
    if dec is not None:
        _print_decoder(inputs, dec)
        render.console().print("[bold]Comparisons[/bold] (models that price less of the "
                               "decoder's work):")
    _print_optimize(inputs, res, priced, mc, source=dec is None)
    if dec is None and cal is not None:
        gaps = [g for g in cal.decoder_gaps() if g.startswith("engine call costs")]
        if gaps:
            render.dim("Decoder model (each engine call priced) not used: " + gaps[0] + ".")


def _print_decoder(inputs: ModelInputs, dec: Any,
                   costs: str = "the calibration's engine costs", source: bool = True
                   ) -> None:
    """optimize's answer from the decoder model: the best and leanest configurations with
    their intervals, the refined candidates, and where the costs came from (``costs``, in
    words; ``source``: print the calibration's source line first)."""
    from specmodel.optimize.pricing import SPEEDUP_DEFINITION

    con = render.console()
    if source:
        inputs.print_source()
    render.dim(f"Decoder model: a Monte-Carlo of the decoder's own schedule, every engine "
               f"call priced by {costs}; {SPEEDUP_DEFINITION}.")
    rows = []
    for c in dec.refined:
        lo, hi = c.interval or (c.speedup, c.speedup)
        tag = ("[bold]best[/bold]" if c == dec.best else
               f"leanest within {dec.tolerance:.0%}" if c == dec.leanest else "")
        rows.append((tag, c.label, str(c.budget_used), f"{c.speedup:.3f}x",
                     f"{lo:.3f}-{hi:.3f}",
                     "-" if c.tokens_per_second is None else f"{c.tokens_per_second:.2f}"))
    con.print(render.table(
        f"Decoder model: best of {len(dec.screened)} configurations with k1·k2·W ≤ "
        f"{dec.budget} (one request)",
        ("", "configuration", "budget used", "speedup", "95 % interval", "tokens/s"), rows,
        justify=("left", "left", "right", "right", "right", "right")))
    b = dec.best
    con.print(f"Decoder model: best {b.label} at {b.speedup:.3f}x"
              + ("" if b.k1 > 1 or b.k2 > 1 else " (speculation does not pay here)")
              + (f"; leanest within {dec.tolerance:.0%}: {dec.leanest.label}"
                 if dec.leanest != b else "") + ".")
    for key in ("target_decode", "prefill_per_token", "call_overhead", "contention",
                "prompt_tokens"):
        if key in dec.sources:
            render.dim(f"  {key}: {dec.sources[key]}")
    for g in dec.gaps:
        render.dim(f"  missing: {g}")


def _print_what_if(inputs: ModelInputs, result: Any) -> None:
    """The what-if answer: the best configuration first, then each method, each number
    with the model that produced it."""
    inputs.print_source()
    i, c = result.inputs, result.costs
    render.dim(f"α1 = {i['alpha1']:.3f}, α2 = {i['alpha2']:.3f} (calibration); "
               f"{i['target']} ← {i['draft']} on {i['device']}, L = {i['context']}, "
               f"{i['concurrency']} request(s), {i['placement']}, "
               f"{'shared' if i['shared_prefix'] else 'unshared'} prefix, "
               f"{i['attention_layout']} attention blocks.")
    render.dim(f"Priced: c1 = {c['c1']:.4f}, c2 = {c['c2']:.4f}; {c['model']}.")
    def rows(preds: dict[str, Any], bold: str) -> list[tuple[str, ...]]:
        out = []
        for name, p in preds.items():
            b = name == bold
            out.append((f"[bold]{name}[/bold]" if b else name, p.mode, str(p.k1), str(p.k2),
                        str(p.parallel_dim) + ("" if p.parallel_dim <= i["budget"] else " > M"),
                        f"[bold]{p.speedup:.3f}x[/bold]" if b else f"{p.speedup:.3f}x",
                        f"{p.flat_speedup:.3f}x"))
        return out

    head = ("", "mode", "k1", "k2", "budget used", "speedup", "flat f·g")
    just = ("left", "left", "right", "right", "right", "right", "right")
    best = result.predictions["best"]
    within = {**result.within_budget, "best": best}
    render.console().print(render.table(
        f"What-if, budget M = {i['budget']}: the best of each method within it (priced by "
        "the cost model; flat = the papers' f·g at the same point)", head,
        rows(within, "best"), justify=just))
    fixed = {k: v for k, v in result.predictions.items() if k != "best"}
    render.console().print(render.table(
        f"The same methods at the LR paper's setting ({i['k1']} speculative steps, k2 = "
        f"{i['k2']}), whether or not it fits the budget", head, rows(fixed, ""),
        justify=just))
    for note in result.notes:
        render.dim(note)


def _optimize_json(
    inputs: ModelInputs, res: Any, priced: Any, mc: Any, method: str, landscape: bool
) -> dict[str, Any]:
    """optimize's JSON: the headline (k1, k2, speedup, …) is the priced optimum when the
    calibration has a T(b) (``model`` says which), the flat-budget result otherwise."""
    flat = res.to_dict(landscape=landscape)
    out: dict[str, Any] = {}
    if priced is None:
        out["model"] = "flat-budget f·g"
        for key, value in flat.items():
            out[key] = value
            if key == "parameters":  # where the numbers came from, next to them
                out["calibration"] = inputs.source.to_dict()
                out["method"] = method
    else:
        from specmodel.closedform.hybrid import regime_of
        from specmodel.optimize.pricing import SPEEDUP_DEFINITION

        b = priced.best
        out.update({
            "model": "priced by the measured T(b)", "mode": res.mode, "budget": res.budget,
            "concurrency": priced.serving_batch, "k1": b.k1, "k2": b.k2, "speedup": b.speedup,
            "regime": regime_of(b.k1, b.k2), "width": b.width,
            "serving": None if priced.serving is None else priced.serving.to_dict(),
            "definition": SPEEDUP_DEFINITION, "parameters": flat["parameters"],
            "calibration": inputs.source.to_dict(), "method": method,
            "config": res.config.replace(k1=b.k1, k2=b.k2).model_dump(),
            "flat_budget": {k: v for k, v in flat.items() if k != "landscape"},
            "cost_aware": priced.to_dict(),
        })
        if "landscape" in flat:
            out["landscape"] = flat["landscape"]
    if mc is not None:
        out["monte_carlo"] = mc.to_dict()
    if "landscape" in out:  # the long part last
        out["landscape"] = out.pop("landscape")
    return out


def _print_optimize(inputs: ModelInputs, res: Any, priced: Any, mc: Any, *,
                    source: bool = True) -> None:
    con = render.console()
    if source:
        inputs.print_source()
    if priced is not None:
        _print_priced(inputs, res, priced, mc)
        return
    render.dim(f"{res.params.describe()}; mode {res.mode}, budget M = {res.budget}.")
    rows = [(f"[bold]optimum ({res.regime})[/bold]", str(res.k1), str(res.k2),
             str(res.best.parallel_dim), f"[bold]{res.speedup:.3f}x[/bold]")]
    points = [("token-only", res.token_only), ("step-only", res.step_only)]
    if res.economical is not None:
        points.insert(0, ("leanest within 0.1%", res.economical))
    rows += [(label, str(q.k1), str(q.k2), str(q.parallel_dim), f"{q.speedup:.3f}x")
             for label, q in points]
    con.print(render.table(
        f"Best configurations under ParallelDim_f(k1)·k2 ≤ {res.budget}",
        ("", "k1 (steps)", "k2 (positions/step)", "budget used", "speedup"), rows,
        justify=("left", "right", "right", "right", "right")))
    con.print(res.message)
    _print_theorem(res)
    _print_mc(mc)


def _print_theorem(res: Any) -> None:
    con = render.console()
    if res.theorem3 is not None:
        th = res.theorem3
        scope = "inside" if th.in_scope else "outside"
        con.print(
            f"Theorem 3 (sync): {scope} its conditions; (6) {th.condition6}, "
            f"(7) {th.condition7}, (8) {th.condition8} → predicts {th.predicted_regime}."
        )
    else:
        scope = "inside" if res.theorem4_in_scope else "outside"
        con.print(f"Theorem 4 (async, hybrid optimal): parameters are {scope} its conditions.")


def _print_mc(mc: Any) -> None:
    if mc is not None:
        b = mc.best
        render.console().print(
            f"Monte-Carlo ({mc.samples} samples, seed {mc.seed}): best "
            f"(k1={b.k1}, k2={b.k2}) {b.simulated:.3f} ± {b.stderr:.3f}; "
            f"{'agrees with' if mc.agrees else 'DISAGREES with'} the closed form "
            "(flat-budget model)."
        )


def _print_priced(inputs: ModelInputs, res: Any, priced: Any, mc: Any) -> None:
    """optimize's answer when the calibration has a measured T(b): the priced optimum at
    the concurrency first, the flat-budget f·g optimum as a comparison."""
    from specmodel.closedform.hybrid import regime_of
    from specmodel.optimize.pricing import SPEEDUP_DEFINITION

    con = render.console()
    n = priced.serving_batch
    req = "request" if n == 1 else "concurrent requests"
    render.dim(f"{res.params.describe()}; mode {res.mode}, budget M = {res.budget}, "
               f"concurrency {n}.")
    render.dim(f"Priced by the measured T(b); {SPEEDUP_DEFINITION}.")
    b, flat = priced.best, priced.compared
    regime = regime_of(b.k1, b.k2)
    label = "no speculation" if regime == "none" else regime
    rows = [(f"[bold]optimum ({label})[/bold]", str(b.k1), str(b.k2), str(b.width),
             f"[bold]{b.speedup:.3f}x[/bold]", f"{b.flat_speedup:.3f}x")]
    tok = next(d.token_only for d in priced.by_batch_size if d.serving_batch == n)
    rows.append(("token-only", str(tok.k1), str(tok.k2), str(tok.width),
                 f"{tok.speedup:.3f}x", f"{tok.flat_speedup:.3f}x"))
    if flat is not None:
        rows.append(("flat-budget f·g optimum", str(flat.k1), str(flat.k2),
                     str(flat.width), f"{flat.speedup:.3f}x", f"{flat.flat_speedup:.3f}x"))
    con.print(render.table(
        f"Best configurations under ParallelDim_f(k1)·k2 ≤ {res.budget} at {n} {req}",
        ("", "k1", "k2", "width", "speedup (T(b))", "flat f·g says"), rows,
        justify=("left", "right", "right", "right", "right", "right")))
    sp = priced.serving
    if sp is not None:
        con.print(f"At {n} {req}: {sp.ms_per_token:.1f} ms/token per request and "
                  f"{sp.tokens_per_second:.1f} tokens/s in all (target alone: "
                  f"{sp.baseline_ms_per_token:.1f} ms/token, "
                  f"{sp.baseline_tokens_per_second:.1f} tokens/s).")
    render.dim(f"Flat-budget model (the papers', no T(b)), for comparison: {res.message}")
    _print_theorem(res)
    batch_cols = ("batch", "k1", "k2", "speedup", "pays")
    if priced.serving_by_batch_size:
        batch_cols += ("ms/token", "tokens/s")
    rows = []
    for i, d in enumerate(priced.by_batch_size):
        row: tuple[str, ...] = (str(d.serving_batch), str(d.best.k1), str(d.best.k2),
                                f"{d.best.speedup:.3f}x", "yes" if d.pays else "no")
        if priced.serving_by_batch_size:
            at = priced.serving_by_batch_size[i]
            row += (f"{at.ms_per_token:.1f}", f"{at.tokens_per_second:.1f}")
        rows.append(row)
    con.print(render.table("By serving batch size (concurrent requests)", batch_cols, rows,
                           justify="right"))
    con.print(priced.pays_summary())
    _print_mc(mc)


@_app.command()
@model_inputs(mode=True, options={"k1": "--k1", "k2": "--k2", "n_samples": "--samples",
                                  "samples": "--samples", "step_tokens": "--step-tokens"})
def simulate(
    inputs: ModelInputs,
    process: Annotated[ProcessChoice, typer.Option("--process", help="Which process.")] = (
        ProcessChoice.async_
    ),
    k1: Annotated[int, typer.Option(min=1, help="Target steps in parallel.")] = 4,
    k2: Annotated[int, typer.Option(min=1, help="Target positions per step (drafts + 1).")] = 4,
    step_tokens: Annotated[
        int, typer.Option(min=1, help="hybrid: tokens per reasoning step.")
    ] = 64,
    samples: Annotated[int, typer.Option(help="Stages / iterations / cycles.")] = 200_000,
    seed: Annotated[int, typer.Option(min=0, help="Random seed.")] = 0,
    json_out: JsonOut = False,
) -> None:
    """Monte-Carlo of a process, next to its closed form."""
    from specmodel.montecarlo.check import simulate_process

    check = simulate_process(inputs.params, process.value, k1, k2, mode=inputs.mode,
                             step_tokens=step_tokens, samples=samples, seed=seed)
    if json_out:
        render.emit_json({**check.to_dict(), "calibration": inputs.source.to_dict()})
        return
    est = check.estimate
    inputs.print_source()
    render.line(f"simulated {check.process}: {est.mean:.4f} ± {est.stderr:.4f} "
                f"(n = {est.n}, seed {seed})")
    render.line(f"closed form {check.formula}: {check.closed_form:.4f}   z = {check.z:+.2f}")
    if check.finite_step_model is not None:
        render.line(f"finite-step model f_sync·g_L (L = {step_tokens}): "
                    f"{check.finite_step_model:.4f}")
    if check.note is not None:
        render.dim(f"Note: {check.note}")


@_app.command()
@model_inputs(budget=True)
def theorems(inputs: ModelInputs, json_out: JsonOut = False) -> None:
    """Which theorem conditions hold, what they predict, what is actually optimal."""
    from specmodel.optimize.theorems import theorem_report

    report = theorem_report(inputs.params, inputs.budget)
    if json_out:
        render.emit_json({**report.to_dict(), "calibration": inputs.source.to_dict()})
        return
    p = report.params
    inputs.print_source()
    render.show(render.table(
        f"α1={p.alpha1}, c1={p.c1}, α2={p.alpha2}, c2={p.c2}, M={report.budget}",
        ("statement", "in scope", "claims", "actually", "holds"),
        [(c.name, "yes" if c.in_scope else "no", c.prediction or "—", c.actual,
          "—" if c.holds is None else ("yes" if c.holds else "[red]NO[/red]"))
         for c in report.checks]))
    for note in report.notes:
        render.line(f"• {note}")


@_app.command()
def presets(json_out: JsonOut = False) -> None:
    """List the embedded calibrations."""
    from specmodel.formats.calibration import DEFAULT_PRESET, list_presets, load_preset

    cals = {name: load_preset(name) for name in list_presets()}
    if json_out:
        render.emit_json([
            {"name": name, "default": name == DEFAULT_PRESET, "source": cal.provenance.source,
             **cal.parameters().to_dict(), "description": cal.provenance.description}
            for name, cal in cals.items()
        ])
        return
    render.show(render.table(
        "Embedded calibrations", ("name", "source", "α1", "c1", "α2", "c2"),
        [(name + (" (default)" if name == DEFAULT_PRESET else ""), cal.provenance.source,
          *(f"{v:.4g}" for v in cal.parameters().to_dict().values()))
         for name, cal in cals.items()]))


_registered = False


def _whole_app() -> typer.Typer:
    """The app with every command: this module's, and those that live in their own
    modules (cli/<command>.py), imported and registered on first use."""
    global _registered
    if not _registered:
        _registered = True
        import importlib

        for name in ("cli.export", "cli.plot", "cli.compare", "cli.models", "cli.profile",
                     "cli.decode", "cli.report", "cli.errata"):
            try:
                mod = importlib.import_module(name)
            except ImportError:
                continue
            mod.register(_app)
    return _app


def __getattr__(name: str) -> Any:
    """``cli.main.app``: the whole app (:func:`_whole_app`).  Resolved on first use, so
    that running one of this module's commands imports none of the other modules."""
    if name == "app":
        return _whole_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_EXTRAS = {"torch": "live", "vllm": "live", "transformers": "live", "accelerate": "live",
           "gguf": "live", "reasoning_gym": "live", "plotly": "plot", "kaleido": "plot"}
"""Top-level module → the extra of pyproject.toml that installs it."""


def _import_hint(err: ImportError) -> str:
    top = (err.name or "").split(".")[0]
    extra = _EXTRAS.get(top)
    msg = str(err).splitlines()[0] if str(err) else f"cannot import {top or 'a module'}"
    return f"{msg} (install it with: pip install -e \".[{extra}]\")" if extra else msg


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app; expected errors (SpecmodelError, ValueError, a validation
    error, a missing file or optional dependency, a usage error) → one line, exit 2; an
    interrupt (Ctrl-C, SIGINT) → one line saying what was saved and how to resume
    (:mod:`cli.interrupt`), exit 130."""
    from cli import interrupt

    # pydantic looks for plugins (entry points of the group "pydantic") the first time it
    # builds a validator, which means reading the metadata of every installed distribution
    # (some 15 ms of a command's start, with the ~190 distributions of a full install).
    # The command line runs without them unless the user's own PYDANTIC_DISABLE_PLUGINS
    # says otherwise (issue 15).
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    interrupt.reset()
    try:
        with interrupt.sigint_handler():
            code = _run(argv)
    except KeyboardInterrupt:
        code = None
    if code is None or interrupt.was_interrupted():
        sys.stderr.write(interrupt.interrupt_line() + "\n")
        return interrupt.EXIT_CODE
    return code


def _app_for(args: Sequence[str]) -> typer.Typer:
    """The app that runs ``args``: when they start with a command's name, a copy of the
    app holding that command only (with the same callback and settings), else the whole
    app.

    typer builds the click command of every registered command each time an app is
    called (signatures, options, help: about 35 ms for the twenty here); a command's
    parsing, help, usage lines and error messages depend only on it and the group's
    own options, so building just the one named is the same to the user and keeps
    ``specmodel optimize`` quick to start (issue 15); this module's own commands are
    found without importing the others.  Anything else (no command, an option first, an
    unknown name) goes to the whole app, whose help and "No such command" list every
    command.
    """
    if args and not args[0].startswith("-"):
        one = _only(_app, args[0])  # this module's commands first: nothing more to import
        if one is None:
            one = _only(_whole_app(), args[0])
        if one is not None:
            return _reflowed(one)
    return _reflowed(_whole_app())


def _reflowed(app: typer.Typer) -> typer.Typer:
    """``app`` with every command's help given as paragraphs of one line each (its
    docstring's line breaks inside a paragraph joined): typer's rich help keeps them,
    so a paragraph would print broken wherever the source wrapped it.  In place and
    idempotent; returns ``app``."""
    for c in app.registered_commands:
        text = c.help if c.help is not None else inspect.getdoc(c.callback) or ""
        c.help = "\n\n".join(p if p.startswith("\b") else " ".join(p.split("\n"))
                             for p in inspect.cleandoc(text).split("\n\n"))
    for g in app.registered_groups:
        if g.typer_instance is not None:
            _reflowed(g.typer_instance)
    return app


def _only(app: typer.Typer, name: str) -> typer.Typer | None:
    """A copy of ``app`` with only its command (or command group) ``name``; None when it
    has no such command."""
    commands = [c for c in app.registered_commands if c.callback is not None
                and (c.name or typer.main.get_command_name(c.callback.__name__)) == name]
    groups = [g for g in app.registered_groups if g.name == name]
    if len(commands) + len(groups) != 1:
        return None
    one = copy.copy(app)
    one.registered_commands, one.registered_groups = commands, groups
    return one


def _run(argv: list[str] | None) -> int | None:
    """Run the app; the exit code, or None when it was interrupted."""
    from pydantic import ValidationError
    from typer.exceptions import TyperException  # base of typer's vendored click errors

    from cli import interrupt
    from specmodel.errors import describe_validation_error

    try:
        code = _app_for(sys.argv[1:] if argv is None else argv)(args=argv,
                                                                 standalone_mode=False)
    except typer.Exit as e:  # typer turns a KeyboardInterrupt into Exit(130)
        return None if interrupt.was_interrupted(e) else int(e.exit_code)
    except typer.Abort as e:  # click turns a KeyboardInterrupt (or EOF) into Abort
        if interrupt.was_interrupted(e):
            return None
        sys.stderr.write("Aborted.\n")
        return 1
    except TyperException as e:  # usage errors: bad option value, unknown option, …
        message = e.format_message()
        if message:
            render.error(message)
        return int(getattr(e, "exit_code", 2) or 2)
    except ValidationError as e:  # a ValueError too: described field by field
        render.error(describe_validation_error(e))
        return 2
    except (ValueError, FileNotFoundError) as e:  # SpecmodelError is a ValueError
        render.error(str(e) or type(e).__name__)
        return 2
    except ImportError as e:
        render.error(_import_hint(e))
        return 2
    if code == interrupt.EXIT_CODE:  # typer's answer to a KeyboardInterrupt
        return None
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    raise SystemExit(main())


def run() -> None:
    """Console-script entry point."""
    raise SystemExit(main())
