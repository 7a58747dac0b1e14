"""The ``specmodel`` command line: parse, call the library, print.

Every command prints a rich table by default and machine JSON with ``--json``.
Bad input never produces a traceback: a ``ValueError`` from the library (or a
usage error) becomes one line on stderr and exit code 2.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from cli.common import (
    C1,
    C2,
    Alpha1,
    Alpha2,
    Budget,
    CalibrationOpt,
    JsonOut,
    MethodChoice,
    Mode,
    ModeChoice,
    Parameters,
    PresetOpt,
    ProcessChoice,
    _console,
    _emit_json,
)

app = typer.Typer(
    name="specmodel",
    help="Predict, optimize and realize the speedup of speculative decoding.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def _point(p: Any) -> dict[str, Any]:
    return {
        "k1": p.k1,
        "k2": p.k2,
        "speedup": p.speedup,
        "parallel_dim": p.parallel_dim,
        "regime": p.regime,
    }


@app.command()
def optimize(
    budget: Budget = 16,
    calibration: CalibrationOpt = None,
    preset: PresetOpt = None,
    alpha1: Alpha1 = None,
    c1: C1 = None,
    alpha2: Alpha2 = None,
    c2: C2 = None,
    mode: Mode = ModeChoice.async_,
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

    p = Parameters(calibration, preset, alpha1, c1, alpha2, c2)
    mc = None
    if method == MethodChoice.mc:
        mc = optimize_budget_mc(
            p.alpha1, p.c1, p.alpha2, p.c2, budget, mode.value, samples=samples, seed=seed
        )
        res = mc.closed_form
    else:
        res = optimize_budget(
            p.alpha1, p.c1, p.alpha2, p.c2, budget, mode.value, landscape=landscape
        )
    if landscape and res.landscape is None:
        res = optimize_budget(p.alpha1, p.c1, p.alpha2, p.c2, budget, mode.value, landscape=True)
    out: dict[str, Any] = {
        "mode": res.mode,
        "budget": res.budget,
        "k1": res.k1,
        "k2": res.k2,
        "speedup": res.speedup,
        "regime": res.regime,
        "parallel_dim": res.best.parallel_dim,
        "token_only": _point(res.token_only),
        "step_only": _point(res.step_only),
        "economical": None if res.economical is None else _point(res.economical),
        "parameters": {"alpha1": p.alpha1, "c1": p.c1, "alpha2": p.alpha2, "c2": p.c2},
        "calibration": p.source,
        "method": method.value,
        "message": res.message,
    }
    if res.theorem3 is not None:
        t = res.theorem3
        out["theorem3"] = {
            "in_scope": t.in_scope,
            "condition6": t.condition6,
            "condition7": t.condition7,
            "condition8": t.condition8,
            "predicted_regime": t.predicted_regime,
        }
    else:
        out["theorem4_in_scope"] = res.theorem4_in_scope
    if mc is not None:
        out["monte_carlo"] = {
            "samples": mc.samples,
            "seed": seed,
            "agrees": mc.agrees,
            "best": {
                "k1": mc.best.k1,
                "k2": mc.best.k2,
                "simulated": mc.best.simulated,
                "stderr": mc.best.stderr,
            },
            "candidates": [
                {
                    "k1": c.k1,
                    "k2": c.k2,
                    "closed_form": c.closed_form,
                    "simulated": c.simulated,
                    "stderr": c.stderr,
                    "z": c.z_score,
                }
                for c in mc.candidates
            ],
        }
    curve = p.cal.batch_cost_curve() if p.cal is not None else None
    if curve is not None:
        out["cost_aware"] = _cost_aware(res, curve)
    if res.landscape is not None and landscape:
        lz = res.landscape
        out["landscape"] = {
            "k1": lz.k1,
            "k2": lz.k2,
            "speedup": lz.speedup,
            "parallel_dim": lz.parallel_dim,
        }
    if json_out:
        _emit_json(out)
        return
    _print_optimize(out, p)


def _cost_aware(res: Any, curve: Any) -> dict[str, Any]:
    """Price the budget with the calibration's measured T(b)."""
    from specmodel.optimize.pricing import optimize_cost_aware, speculation_by_batch_size

    best = optimize_cost_aware(res.mode, res.alpha1, res.c1, res.alpha2, res.c2, res.budget,
                               curve)
    rows = speculation_by_batch_size(res.mode, res.alpha1, res.c1, res.alpha2, res.c2,
                                     res.budget, curve)
    off = [d.serving_batch for d in rows if not d.pays]
    return {
        "best": {"k1": best.k1, "k2": best.k2, "speedup": best.speedup, "width": best.width,
                 "flat_speedup": best.flat_speedup},
        "by_batch_size": [{"serving_batch": d.serving_batch, "k1": d.best.k1, "k2": d.best.k2,
                           "speedup": d.best.speedup, "pays": d.pays,
                           "token_only_k2": d.token_only.k2} for d in rows],
        "stops_paying_at": off[0] if off else None,
    }


def _print_optimize(out: dict[str, Any], p: Parameters) -> None:
    from rich.table import Table

    con = _console()
    con.print(f"[dim]Using {p.describe()}.[/dim]")
    con.print(
        f"[dim]α1 = {p.alpha1:.4g}, c1 = {p.c1:.4g}, α2 = {p.alpha2:.4g}, c2 = {p.c2:.4g}; "
        f"mode {out['mode']}, budget M = {out['budget']}.[/dim]"
    )
    t = Table(title=f"Best configurations under ParallelDim_f(k1)·k2 ≤ {out['budget']}")
    for col in ("", "k1 (steps)", "k2 (positions/step)", "budget used", "speedup"):
        t.add_column(col, justify="right" if col else "left")
    t.add_row(
        f"[bold]optimum ({out['regime']})[/bold]",
        str(out["k1"]),
        str(out["k2"]),
        str(out["parallel_dim"]),
        f"[bold]{out['speedup']:.3f}x[/bold]",
    )
    rows = [("token-only", "token_only"), ("step-only", "step_only")]
    if out["economical"] is not None:
        rows.insert(0, ("leanest within 0.1%", "economical"))
    for label, key in rows:
        q = out[key]
        t.add_row(label, str(q["k1"]), str(q["k2"]), str(q["parallel_dim"]), f"{q['speedup']:.3f}x")
    con.print(t)
    con.print(out["message"])
    if "theorem3" in out:
        th = out["theorem3"]
        scope = "inside" if th["in_scope"] else "outside"
        con.print(
            f"Theorem 3 (sync): {scope} its conditions; (6) {th['condition6']}, "
            f"(7) {th['condition7']}, (8) {th['condition8']} → predicts "
            f"{th['predicted_regime']}."
        )
    else:
        scope = "inside" if out["theorem4_in_scope"] else "outside"
        con.print(f"Theorem 4 (async, hybrid optimal): parameters are {scope} its conditions.")
    if "cost_aware" in out:
        ca = out["cost_aware"]
        b = ca["best"]
        con.print(f"Priced by the measured T(b): best (k1={b['k1']}, k2={b['k2']}) "
                  f"{b['speedup']:.3f}x (the flat-budget model says {b['flat_speedup']:.3f}x).")
        t2 = Table(title="By serving batch size (concurrent requests)")
        for col in ("batch", "k1", "k2", "speedup", "pays"):
            t2.add_column(col, justify="right")
        for r in ca["by_batch_size"]:
            t2.add_row(str(r["serving_batch"]), str(r["k1"]), str(r["k2"]),
                       f"{r['speedup']:.3f}x", "yes" if r["pays"] else "no")
        con.print(t2)
        stop = ca["stops_paying_at"]
        con.print("Speculation pays at every measured batch size." if stop is None else
                  f"Speculation stops paying at a batch of {stop} requests.")
    if "monte_carlo" in out:
        m = out["monte_carlo"]
        b = m["best"]
        con.print(
            f"Monte-Carlo ({m['samples']} samples, seed {m['seed']}): best "
            f"(k1={b['k1']}, k2={b['k2']}) {b['simulated']:.3f} ± {b['stderr']:.3f}; "
            f"{'agrees with' if m['agrees'] else 'DISAGREES with'} the closed form."
        )


@app.command()
def simulate(
    process: Annotated[ProcessChoice, typer.Option("--process", help="Which process.")] = (
        ProcessChoice.async_
    ),
    k1: Annotated[int, typer.Option(help="Target steps in parallel.")] = 4,
    k2: Annotated[int, typer.Option(help="Target positions per step (drafts + 1).")] = 4,
    step_tokens: Annotated[int, typer.Option(help="hybrid: tokens per reasoning step.")] = 64,
    calibration: CalibrationOpt = None,
    preset: PresetOpt = None,
    alpha1: Alpha1 = None,
    c1: C1 = None,
    alpha2: Alpha2 = None,
    c2: C2 = None,
    mode: Mode = ModeChoice.async_,
    samples: Annotated[int, typer.Option(help="Stages / iterations / cycles.")] = 200_000,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
    json_out: JsonOut = False,
) -> None:
    """Monte-Carlo of a process, next to its closed form."""
    from specmodel.closedform.hybrid import h
    from specmodel.closedform.step_level import f_async, f_sync
    from specmodel.closedform.token_level import g_token, g_token_step

    p = Parameters(calibration, preset, alpha1, c1, alpha2, c2)
    proc = process.value
    if proc == "token":
        from specmodel.montecarlo.token import simulate_token_sd

        est = simulate_token_sd(p.alpha2, p.c2, k2, samples, seed)
        exact, label = g_token(p.alpha2, p.c2, k2), f"g(k2={k2})"
    elif proc == "sync":
        from specmodel.montecarlo.step import simulate_sync

        est = simulate_sync(p.alpha1, p.c1, k1, samples, seed)
        exact, label = f_sync(p.alpha1, p.c1, k1), f"f_sync(k1={k1})"
    elif proc == "async":
        from specmodel.montecarlo.step import simulate_async

        est = simulate_async(p.alpha1, p.c1, k1, samples, seed)
        exact, label = f_async(p.alpha1, p.c1, k1), f"f_async(k1={k1})"
    else:
        from specmodel.montecarlo.hybrid import simulate_hybrid

        est = simulate_hybrid(
            mode.value,
            p.alpha1,
            p.c1,
            p.alpha2,
            p.c2,
            k1,
            k2,
            step_tokens=step_tokens,
            n_cycles=min(samples, 50_000),
            seed=seed,
        )
        exact = h(mode.value, p.alpha1, p.c1, p.alpha2, p.c2, k1, k2)
        label = f"f_{mode.value}(k1={k1})·g(k2={k2}) (endless-step product)"
    out: dict[str, Any] = {
        "process": proc,
        "k1": k1,
        "k2": k2,
        "simulated": est.mean,
        "stderr": est.stderr,
        "samples": est.n,
        "seed": seed,
        "closed_form": float(exact),
        "formula": label,
        "z": est.z_score(float(exact)),
        "calibration": p.source,
        "parameters": {"alpha1": p.alpha1, "c1": p.c1, "alpha2": p.alpha2, "c2": p.c2},
    }
    if proc == "hybrid":
        out["step_tokens"] = step_tokens
        if mode.value == "sync":
            out["finite_step_model"] = float(f_sync(p.alpha1, p.c1, k1)) * g_token_step(
                p.alpha2, p.c2, k2, step_tokens
            )
        out["note"] = (
            f"the closed form is the endless-step product f·g; the simulation has steps of "
            f"{step_tokens} tokens"
            + (" and a sync batch that waits for its slowest step" if mode.value == "sync"
               else "")
            + ", so z measures the product form's model error, not only noise."
        )
    if json_out:
        _emit_json(out)
        return
    con = _console()
    con.print(f"[dim]Using {p.describe()}.[/dim]")
    con.print(f"simulated {proc}: {est.mean:.4f} ± {est.stderr:.4f} (n = {est.n}, seed {seed})")
    con.print(f"closed form {label}: {float(exact):.4f}   z = {out['z']:+.2f}")
    if "finite_step_model" in out:
        con.print(
            f"finite-step model f_sync·g_L (L = {step_tokens}): {out['finite_step_model']:.4f}"
        )
    if "note" in out:
        con.print(f"[dim]Note: {out['note']}[/dim]")


@app.command()
def theorems(
    alpha1: Annotated[float, typer.Option("--alpha1", help="Step acceptance rate α1.")],
    c1: Annotated[float, typer.Option("--c1", help="Draft-step cost ratio c1.")],
    alpha2: Annotated[float, typer.Option("--alpha2", help="Token acceptance rate α2.")],
    c2: Annotated[float, typer.Option("--c2", help="Draft-token cost ratio c2.")],
    budget: Budget = 16,
    json_out: JsonOut = False,
) -> None:
    """Which theorem conditions hold, what they predict, what is actually optimal."""
    from specmodel.optimize.theorems import theorem_report

    report = theorem_report(alpha1, c1, alpha2, c2, budget)
    data = report.to_dict()
    if json_out:
        _emit_json(data)
        return
    from rich.table import Table

    con = _console()
    t = Table(title=f"α1={alpha1}, c1={c1}, α2={alpha2}, c2={c2}, M={budget}")
    for col in ("statement", "in scope", "claims", "actually", "holds"):
        t.add_column(col)
    for c in report.checks:
        verdict = "—" if c.holds is None else ("yes" if c.holds else "[red]NO[/red]")
        t.add_row(c.name, "yes" if c.in_scope else "no", c.prediction or "—", c.actual, verdict)
    con.print(t)
    for note in report.notes:
        con.print(f"• {note}")


@app.command()
def presets(json_out: JsonOut = False) -> None:
    """List the embedded calibrations."""
    from specmodel.formats.calibration import DEFAULT_PRESET, list_presets, load_preset

    rows = []
    for name in list_presets():
        cal = load_preset(name)
        rows.append(
            {
                "name": name,
                "default": name == DEFAULT_PRESET,
                "source": cal.provenance.source,
                "alpha1": cal.step.alpha1,
                "c1": cal.step.c1,
                "alpha2": cal.token.alpha2,
                "c2": cal.token.c2,
                "description": cal.provenance.description,
            }
        )
    if json_out:
        _emit_json(rows)
        return
    from rich.table import Table

    t = Table(title="Embedded calibrations")
    for col in ("name", "source", "α1", "c1", "α2", "c2"):
        t.add_column(col)
    for r in rows:
        t.add_row(
            r["name"] + (" (default)" if r["default"] else ""),
            r["source"],
            f"{r['alpha1']:.4g}",
            f"{r['c1']:.4g}",
            f"{r['alpha2']:.4g}",
            f"{r['c2']:.4g}",
        )
    _console().print(t)


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


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app; ValueError and usage errors → one line, exit 2."""
    try:
        app(args=argv, standalone_mode=False)
    except (ValueError, FileNotFoundError, ImportError) as e:
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        sys.stderr.write(f"error: {msg}\n")
        return 2
    except Exception as e:
        # typer vendors click: match its exceptions by shape, not by import path.
        kind = type(e).__name__
        if kind in ("EngineError", "PackError"):  # profiler errors: no model, engine, context
            sys.stderr.write(f"error: {str(e).splitlines()[0] if str(e) else kind}\n")
            return 2
        if kind == "Exit":
            return int(getattr(e, "exit_code", 0))
        if kind == "Abort":
            sys.stderr.write("Aborted.\n")
            return 1
        if hasattr(e, "format_message"):
            message = e.format_message()
            if message:
                sys.stderr.write(f"error: {message}\n")
            return int(getattr(e, "exit_code", 2) or 2)
        raise
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def run() -> None:
    """Console-script entry point."""
    raise SystemExit(main())
