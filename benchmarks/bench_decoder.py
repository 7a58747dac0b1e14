"""Close the loop: profile → optimize → decode → compare, on real models in one run.

On the same problems, models and engine this runs the autoregressive target
(the baseline), token-level speculation only, step-level only (sync and async),
the hybrid at the optimizer's (k1, k2) for the given calibration, and a sweep of
other (k1, k2); it prints measured speedup, accuracy and step acceptance next to
what ``specmodel`` predicts for each from the calibration (the papers' closed
forms as they stand, and the same priced by the calibration's T(b)), says how far
the optimizer's choice is from the best configuration measured, and measures the
decoder's own overhead (target-only step-by-step decoding against one
``generate`` call producing the same tokens, interleaved per problem).

Writes the run record (``benchmarks/results/decoder_run.json``, readable by
``specmodel validate``) and a summary (``benchmarks/results/decoder.json``).

Usage::

    python -m benchmarks.bench_decoder --calibration FILE [--problems 4] [--quick]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    RESULTS,
    add_trio_arguments,
    percent,
    print_table,
    printer,
    write_json,
)

SWEEP = [("sync", 1, 2), ("sync", 1, 3), ("sync", 1, 5), ("sync", 2, 1), ("sync", 3, 1),
         ("async", 2, 1), ("async", 3, 1), ("sync", 2, 3), ("async", 2, 3)]
"""(mode, k1, k2) always run besides the optimizer's choices."""
QUICK_SWEEP = [("sync", 1, 3), ("sync", 2, 1), ("async", 2, 1)]


def optimizer_choices(cal: Any, budget: int) -> dict[str, tuple[str, int, int]]:
    """The optimizer's (mode, k1, k2) for this calibration: closed form, and priced by T(b)."""
    from specmodel.optimize.budget import optimize_budget
    from specmodel.optimize.pricing import optimize_cost_aware

    a1, c1, a2, c2 = cal.step.alpha1, cal.step.c1, cal.token.alpha2, cal.token.c2
    out = {}
    for mode in ("sync", "async"):
        r = optimize_budget(a1, c1, a2, c2, budget, mode)
        out[f"closed form, {mode}"] = (mode, r.k1, r.k2)
        curve = cal.batch_cost_curve()
        if curve is not None:
            p = optimize_cost_aware(mode, a1, c1, a2, c2, budget, curve)
            out[f"priced by T(b), {mode}"] = (mode, p.k1, p.k2)
    return out


def measure_overhead(engine: Any, problems: list[Any], cfg: Any) -> dict[str, Any]:
    """Decoder at k1 = k2 = 1 against one ``generate`` call for the same tokens, per problem."""
    from profiler.decoder import LookaheadDecoder
    from profiler.problems import format_prompt

    dec = LookaheadDecoder(engine, None, None, cfg)
    torch, tok, model = engine._torch, engine.tokenizer, engine.model
    rows = []
    for p in problems:
        run = dec.decode(p)
        enc = tok([format_prompt(p)], return_tensors="pt")
        n_new = sum(s.tokens for s in run.steps)
        t0 = time.perf_counter()
        with torch.inference_mode():
            model.generate(**enc, max_new_tokens=n_new, min_new_tokens=n_new, do_sample=False,
                           pad_token_id=tok.pad_token_id)
        t_engine = time.perf_counter() - t0
        rows.append({"problem": p.index, "tokens": n_new, "decoder_seconds": run.seconds,
                     "engine_seconds": t_engine})
    dec_s = sum(r["decoder_seconds"] for r in rows)
    eng_s = sum(r["engine_seconds"] for r in rows)
    return {"problems": rows, "decoder_seconds": dec_s, "engine_seconds": eng_s,
            "decoder_speed_relative_to_engine": eng_s / dec_s}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calibration", required=True, help="Profiled calibration of the trio.")
    add_trio_arguments(ap, problems=4, seed=0, max_step_tokens=40)
    ap.add_argument("--max-steps", type=int, default=8)
    ap.add_argument("--budget", type=int, default=16)
    ap.add_argument("--record", type=Path, default=RESULTS / "decoder_run.json")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--quick", action="store_true", help="Few configurations (a smoke run).")
    args = ap.parse_args(argv)

    from profiler.engines import HFEngine
    from profiler.packs import resolve_model
    from profiler.problems import load_problems
    from profiler.runs import run_configurations
    from profiler.verifiers import make_verifier
    from specmodel.config import SpecConfig, VerifierSpec
    from specmodel.formats.calibration import load_calibration
    from specmodel.prediction import compare

    cal = load_calibration(args.calibration)
    delim = args.delimiter.encode().decode("unicode_escape")
    caps = {"max_steps": args.max_steps, "max_step_tokens": args.max_step_tokens,
            "delimiter": delim}
    ver_spec = VerifierSpec(kind=args.verifier, threshold=args.threshold)
    base = SpecConfig(max_steps=args.max_steps, max_step_tokens=args.max_step_tokens,
                      step_delimiter=delim, verifier=ver_spec)
    picks = optimizer_choices(cal, args.budget)
    points = list(QUICK_SWEEP if args.quick else SWEEP) + list(picks.values())
    configs, seen = [], set()
    for mode, k1, k2 in points:
        cfg = base.replace(mode=mode if k1 > 1 else "sync", k1=k1, k2=k2)
        if cfg.label not in seen and cfg.label != "target":
            seen.add(cfg.label)
            configs.append(cfg)
    problems = load_problems(args.problems, args.seed)
    target = HFEngine(resolve_model(args.target), threads=args.threads, delimiter=delim)
    draft = HFEngine(resolve_model(args.draft), threads=args.threads, delimiter=delim)
    verifier = make_verifier(ver_spec, threads=args.threads)
    t0 = time.perf_counter()
    record = run_configurations(
        target, draft, verifier, configs, problems, args.record,
        models={"target": args.target, "draft": args.draft, "verifier": verifier.name},
        settings={"dataset": "gsm_symbolic", "problems": args.problems, "seed": args.seed,
                  "threads": args.threads, "engine": "transformers", "budget": args.budget,
                  **caps},
        calibration=cal,
        optimizer={"budget": args.budget,
                   "choices": {k: {"mode": m, "k1": a, "k2": b} for k, (m, a, b) in picks.items()}},
        resume=args.resume,
        progress=printer(),
    )
    decode_seconds = time.perf_counter() - t0
    rows = compare(record)
    measured = {r.config: r.measured_speedup for r in rows}
    pick_label = {name: base.replace(mode=m if k1 > 1 else "sync", k1=k1, k2=k2).label
                  for name, (m, k1, k2) in picks.items()}
    chosen: dict[str, list[str]] = {}
    for name, label in pick_label.items():
        chosen.setdefault(label, []).append(name)
    best = max(rows, key=lambda r: r.measured_speedup)
    choice_vs_best = {name: measured[label] / best.measured_speedup
                      for name, label in pick_label.items()}

    print_table(
        f"{args.target} target, {args.draft} draft, {verifier.name}; {args.problems} "
        f"gsm_symbolic problems (seed {args.seed}); calibration {cal.name}",
        ["config", "predicted", "priced", "measured", "error", "priced err", "α1 run",
         "accuracy", "optimizer"],
        [[r.config, r.predicted_speedup, r.predicted_priced or "-", r.measured_speedup,
          percent(r.error, signed=True), percent(r.priced_error, signed=True),
          "-" if r.step_acceptance is None else round(r.step_acceptance, 3), r.accuracy,
          "; ".join(chosen.get(r.config, []))]
         for r in rows],
    )
    print(f"\nbest measured: {best.config} at {best.measured_speedup:.3f}x")
    for name, ratio in choice_vs_best.items():
        print(f"optimizer ({name}): {ratio:.3f} of the best measured speedup "
              f"({'within' if ratio >= 0.95 else 'NOT within'} 5 %)")
    overhead = measure_overhead(target, problems, base)
    print(f"decoder overhead at k1 = k2 = 1: decoder speed / engine speed = "
          f"{overhead['decoder_speed_relative_to_engine']:.3f} "
          f"({overhead['decoder_seconds']:.1f} s vs {overhead['engine_seconds']:.1f} s)")
    write_json("decoder", {
        "record": str(args.record),
        "settings": vars(args) | {"record": str(args.record), "calibration": args.calibration},
        "calibration": cal.name,
        "rows": [r.model_dump() for r in rows],
        "optimizer_choices": {k: list(v) for k, v in picks.items()},
        "optimizer_vs_best_measured": choice_vs_best,
        "best_measured": best.config,
        "decode_seconds": decode_seconds,
        "overhead": overhead,
    })


if __name__ == "__main__":
    main()
