"""How long profiling takes and how stable its figures are across two runs.

Runs the whole profile (T(b), steps, tokens: the phases of ``specmodel profile
run``) twice with the same settings, each into a fresh calibration, and reports
for every figure the two values, their difference, and the difference in units
of the figures' combined standard error (where the profiler reports one), plus
each phase's wall time.  Greedy decoding is deterministic, so the acceptance
rates should agree exactly and the spread is in the timings (c1, c2, T(b)).

Usage::

    python -m benchmarks.bench_profile_stability [--quick] [--keep DIR] [--token-engine vllm]
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

from benchmarks.harness import add_trio_arguments, print_table, printer, write_json
from profiler.environment import package_versions


def profile_once(out: Path, args: argparse.Namespace, run: int) -> dict[str, float]:
    """One full profile into ``out``; returns each phase's wall time."""
    from profiler.calibrate import Recorder, batch_cost_phase, steps_phase, tokens_phase
    from specmodel.formats.calibration import load_preset

    rec = Recorder(out, load_preset("lr-paper-gsm8k-deepseek"))
    times = {}
    t0 = time.perf_counter()
    rec.add(batch_cost_phase(args.target, widths=args.widths, tokens=args.batch_tokens,
                             repeats=args.repeats, threads=args.threads,
                             progress=printer(f"run {run} T(b)")))
    times["batch_cost"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    rec.add(steps_phase(args.target, args.draft, verifier=args.verifier,
                        threshold=args.threshold, problems=args.problems, seed=args.seed,
                        steps_per_problem=args.steps_per_problem,
                        max_step_tokens=args.max_step_tokens, threads=args.threads,
                        delimiter=args.delimiter, record=out.with_suffix(".pairs.jsonl"),
                        progress=printer(f"run {run} steps")))
    times["steps"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    rec.add(tokens_phase(args.target, engine=args.token_engine, problems=args.token_problems,
                         seed=args.seed, max_tokens=args.max_tokens,
                         num_speculative_tokens=args.gamma, threads=args.threads,
                         progress=printer(f"run {run} tokens")))
    times["tokens"] = time.perf_counter() - t0
    return times


def figures(path: Path) -> dict[str, tuple[float, float | None]]:
    """(value, standard error or None) of every figure of a calibration."""
    from specmodel.formats.calibration import load_calibration

    cal = load_calibration(path)
    steps = cal.provenance.settings.phases.steps
    if steps is None:
        raise ValueError(f"{path} has no measured steps phase")
    n = steps.pairs
    raw = steps.accepted / n
    out: dict[str, tuple[float, float | None]] = {
        "alpha1 (raw)": (raw, math.sqrt(max(raw * (1 - raw), 1e-12) / n)),
        "c1": (cal.step.c1, steps.c1_stderr),
        "verifier cost": (cal.step.verifier_cost or 0.0, None),
        "alpha2": (cal.token.alpha2, None),
        "c2 (effective)": (cal.token.c2, None),
    }
    pts = cal.batch_cost.points if cal.batch_cost else []
    for p in pts[1:]:
        ratio = p.time / pts[0].time
        se = None
        if p.stderr is not None and pts[0].stderr is not None:
            se = ratio * math.hypot(p.stderr / p.time, pts[0].stderr / pts[0].time)
        out[f"T({p.batch})/T(1)"] = (ratio, se)
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_trio_arguments(ap, problems=6, seed=1, max_step_tokens=40)
    ap.add_argument("--steps-per-problem", type=int, default=4)
    ap.add_argument("--widths", default="1,2,4,8")
    ap.add_argument("--batch-tokens", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--token-problems", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--gamma", type=int, default=4)
    ap.add_argument("--token-engine", default="transformers", choices=["transformers", "vllm"],
                    help="Engine of the token phase (n-gram speculation on the target).")
    ap.add_argument("--keep", type=Path, help="Keep the two calibrations in this folder.")
    ap.add_argument("--quick", action="store_true",
                    help="Qwen-0.5B target, SmolLM2 draft, exact verifier, 2 problems x 2 "
                         "steps, widths 1,2, tiny token counts (a smoke run).")
    args = ap.parse_args(argv)
    if args.quick:
        args.target, args.draft, args.verifier = "qwen2.5-coder-0.5b", "smollm2-135m", "exact"
        args.problems, args.steps_per_problem, args.max_step_tokens = 2, 2, 12
        args.widths, args.batch_tokens, args.repeats = "1,2", 4, 2
        args.token_problems, args.max_tokens = 2, 24
    args.delimiter = args.delimiter.encode().decode("unicode_escape")
    args.widths = [int(w) for w in str(args.widths).split(",")]
    folder = args.keep or Path(tempfile.mkdtemp(prefix="profile-stability-"))
    folder.mkdir(parents=True, exist_ok=True)
    runs, values = [], []
    for i in (1, 2):
        out = folder / f"run{i}.json"
        t0 = time.perf_counter()
        phases = profile_once(out, args, i)
        runs.append({"file": str(out), "seconds": time.perf_counter() - t0, "phases": phases})
        values.append(figures(out))
    rows, records = [], []
    for name in values[0]:
        (a, sa), (b, sb) = values[0][name], values[1][name]
        se = math.hypot(sa, sb) if sa is not None and sb is not None else None
        z = (b - a) / se if se else None
        rel = (b - a) / a if a else None
        rows.append([name, a, b, b - a, "-" if rel is None else f"{rel:+.1%}",
                     "-" if z is None else f"{z:+.2f}"])
        records.append({"figure": name, "run1": a, "run2": b, "stderr1": sa, "stderr2": sb,
                        "difference": b - a, "relative": rel, "z": z})
    print_table(
        f"profile stability: {args.target} target, {args.draft} draft, {args.verifier}; "
        f"two runs, same settings",
        ["figure", "run 1", "run 2", "difference", "relative", "in SEs"], rows)
    print_table("profiling time (s)", ["run", "T(b)", "steps", "tokens", "total"],
                [[i + 1, r["phases"]["batch_cost"], r["phases"]["steps"], r["phases"]["tokens"],
                  r["seconds"]] for i, r in enumerate(runs)])
    settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    write_json("profile_stability" + ("_quick" if args.quick else ""),
               {"settings": settings, "versions": package_versions(), "runs": runs,
                "figures": records})


if __name__ == "__main__":
    main()
