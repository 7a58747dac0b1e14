"""The ``specmodel`` command line: parse, call the library, print.

Every command prints a rich table by default and machine JSON with ``--json``.
Bad input never produces a traceback: a ``ValueError`` from the library (or a
usage error) becomes one line on stderr and exit code 2.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from cli import render
from cli.common import (
    JsonOut,
    MethodChoice,
    ModelInputs,
    ProcessChoice,
    model_inputs,
)

app = typer.Typer(
    name="specmodel",
    help="Predict, optimize and realize the speedup of speculative decoding.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


@app.command()
@model_inputs(budget=True, mode=True, options={"n_samples": "--samples", "samples": "--samples"})
def optimize(
    inputs: ModelInputs,
    method: Annotated[
        MethodChoice, typer.Option("--method", help="closed-form, or mc (Monte-Carlo).")
    ] = MethodChoice.closed_form,
    samples: Annotated[int, typer.Option(help="Monte-Carlo samples per level.")] = 200_000,
    seed: Annotated[int, typer.Option(help="Monte-Carlo seed.")] = 0,
    landscape: Annotated[bool, typer.Option(help="Include every feasible point.")] = False,
    json_out: JsonOut = False,
) -> None:
    """Split a parallelism budget between steps in flight (k1) and tokens per step (k2)."""
    from specmodel.optimize.budget import optimize_budget, optimize_budget_mc

    params, budget, mode = inputs.params, inputs.budget, inputs.mode
    base = inputs.calibration.base_config(mode) if inputs.calibration is not None else None
    mc = None
    if method == MethodChoice.mc:
        mc = optimize_budget_mc(params, budget, mode, base=base, samples=samples, seed=seed)
        res = mc.closed_form
    else:
        res = optimize_budget(params, budget, mode, base=base, landscape=landscape)
    curve = inputs.batch_cost_curve()
    priced = None
    if curve is not None:
        from specmodel.optimize.pricing import price_budget

        priced = price_budget(params, budget, mode, curve)
    if json_out:
        out: dict[str, Any] = {}
        for key, value in res.to_dict(landscape=landscape).items():
            out[key] = value
            if key == "parameters":  # where the numbers came from, next to them
                out["calibration"] = inputs.source.to_dict()
                out["method"] = method.value
        if mc is not None:
            out["monte_carlo"] = mc.to_dict()
        if priced is not None:
            out["cost_aware"] = priced.to_dict()
        if "landscape" in out:  # the long part last
            out["landscape"] = out.pop("landscape")
        render.emit_json(out)
        return
    _print_optimize(inputs, res, priced, mc)


def _print_optimize(inputs: ModelInputs, res: Any, priced: Any, mc: Any) -> None:
    con = render.console()
    inputs.print_source()
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
    if priced is not None:
        b = priced.best
        con.print(f"Priced by the measured T(b): best (k1={b.k1}, k2={b.k2}) "
                  f"{b.speedup:.3f}x (the flat-budget model says {b.flat_speedup:.3f}x).")
        con.print(render.table(
            "By serving batch size (concurrent requests)", ("batch", "k1", "k2", "speedup", "pays"),
            [(str(d.serving_batch), str(d.best.k1), str(d.best.k2), f"{d.best.speedup:.3f}x",
              "yes" if d.pays else "no") for d in priced.by_batch_size],
            justify="right"))
        stop = priced.stops_paying_at
        con.print("Speculation pays at every measured batch size." if stop is None else
                  f"Speculation stops paying at a batch of {stop} requests.")
    if mc is not None:
        b = mc.best
        con.print(
            f"Monte-Carlo ({mc.samples} samples, seed {mc.seed}): best "
            f"(k1={b.k1}, k2={b.k2}) {b.simulated:.3f} ± {b.stderr:.3f}; "
            f"{'agrees with' if mc.agrees else 'DISAGREES with'} the closed form."
        )


@app.command()
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
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
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


@app.command()
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


@app.command()
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


def _register_optional() -> None:
    """Commands that live in their own modules (cli/<command>.py)."""
    import importlib

    for name in ("cli.export", "cli.plot", "cli.compare", "cli.models", "cli.profile",
                 "cli.decode"):
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        mod.register(app)


_register_optional()


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


def _run(argv: list[str] | None) -> int | None:
    """Run the app; the exit code, or None when it was interrupted."""
    from pydantic import ValidationError
    from typer.exceptions import TyperException  # base of typer's vendored click errors

    from cli import interrupt
    from specmodel.errors import describe_validation_error

    try:
        code = app(args=argv, standalone_mode=False)
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
