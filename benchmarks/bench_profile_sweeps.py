"""How far two profiling passes of the same engines, minutes apart, disagree: each point's
repeats timed back to back (one sweep) against spread over the pass (several sweeps).

A registration priced by one profiling pass (``bench_synthetic --predict-here``) carries
that pass's noise into every prediction. On the shared 2-core VM, two passes a minute
apart priced the same row 5-26 % apart (seeds 30-33, docs/hardware.md), while each
point's own repeats agreed within a few per cent: a slow spell of the machine lasting a
second or two fell on one point's repeats whole. This benchmark builds the sweep's
engines once, then takes ``--passes`` pairs of profiling passes, one of each kind per
pair, alternating which goes first, and prices the sweep's configurations from every
pass with the decoder model (as ``--predict-here`` registers them). It reports, per kind:

* per point, the spread over the passes of its median time (the standard deviation of
  its log, pooled over the points as their median);
* per configuration, the spread of the predicted speedup over the passes (the standard
  deviation of its log, min and max), and their mean over the configurations;
* the passes' durations.

It runs no round: the predictions are only compared with one another. Usage (the options
of ``bench_synthetic`` choose the sweep; the JSON goes to ``benchmarks/results/``)::

    python -m benchmarks.bench_profile_sweeps --passes 4 --sweeps 3 \
        --problems 24 --seed 33 --k1 2 --k2 2 --continuous --out profile_sweeps
"""

from __future__ import annotations

import contextlib
import io
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from benchmarks import bench_synthetic as bs  # noqa: E402
from benchmarks.harness import print_table, write_json  # noqa: E402


def log_sd(values: list[float]) -> float:
    """The sample standard deviation of ``log(values)`` (0 for fewer than two)."""
    logs = [math.log(v) for v in values]
    return statistics.stdev(logs) if len(logs) > 1 else 0.0


def point_key(p: Any) -> str:
    """A profile point's name: kind, batch, tokens, context."""
    return f"{p.kind} b={p.batch} q={p.new_tokens} L={p.context}"


def summarise(passes: dict[int, list[dict[str, Any]]]) -> dict[str, Any]:
    """Per kind of pass (sweeps): the points' and the configurations' spread over its
    passes (each pass: ``{"points": {name: median ms}, "predicted": {config: speedup},
    "seconds": s}``)."""
    out: dict[str, Any] = {}
    for sweeps, got in passes.items():
        names = sorted(set.intersection(*(set(g["points"]) for g in got)))
        point_sd = {n: log_sd([g["points"][n] for g in got]) for n in names}
        configs = [c for c in got[0]["predicted"] if c != "target"]
        pred = {c: [g["predicted"][c] for g in got] for c in configs}
        out[str(sweeps)] = {
            "passes": len(got),
            "seconds": [round(g["seconds"], 2) for g in got],
            "point_log_sd_median": statistics.median(point_sd.values()),
            "point_log_sd_max": max(point_sd.values()),
            "point_log_sd": point_sd,
            "predicted": pred,
            "predicted_log_sd": {c: log_sd(v) for c, v in pred.items()},
            "predicted_log_sd_mean": statistics.fmean(log_sd(v) for v in pred.values()),
            "predicted_range_mean": statistics.fmean(max(v) / min(v) - 1
                                                     for v in pred.values()),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = bs.build_parser()
    ap.description = __doc__.split("\n\n")[0]
    ap.add_argument("--passes", type=int, default=4,
                    help="pairs of profiling passes (one of each kind per pair)")
    ap.add_argument("--sweeps", type=int, default=3,
                    help="the sweeps of the spread passes (2 to --profile-repeats)")
    a = ap.parse_args(argv)
    if a.passes < 2:
        ap.error(f"--passes must be at least 2, got {a.passes}")
    if not 2 <= a.sweeps <= a.profile_repeats:
        ap.error(f"--sweeps must be between 2 and --profile-repeats ({a.profile_repeats}), "
                 f"got {a.sweeps}")
    if a.placement is None:
        a.placement = "two-devices" if a.device == "cpu" else "one-device"
    from profiler.engines.synthetic import load_acceptance, prepare_run
    from profiler.hardware import device_description
    from profiler.problems import format_prompt

    dtype = bs.run_dtype(a)
    described = device_description(a.device, a.threads)
    acc = load_acceptance(a.acceptance)
    configs = bs._configs(a)
    _, (target, tgt), (draft, drf) = bs.engines(a, dtype)
    lengths = [tgt.count_tokens(format_prompt(p))
               for p in bs._problems(a.problems, a.prompt_words)]
    costs = prepare_run(tgt, drf, configs, max(lengths))
    passes: dict[int, list[dict[str, Any]]] = {1: [], a.sweeps: []}
    for i in range(a.passes):
        for sweeps in ((1, a.sweeps) if i % 2 == 0 else (a.sweeps, 1)):
            a.profile_sweeps = sweeps
            profile, how = bs.profiler(a, tgt, drf, configs, max(lengths))
            t0 = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                hardware = profile()
            seconds = time.perf_counter() - t0
            prices = bs.measured_prices(a, described, hardware, costs, lengths, target,
                                        draft, f"pass {i + 1} ({sweeps} sweeps)", how)
            with contextlib.redirect_stdout(io.StringIO()):
                reg = bs.registration_of(a, dtype, acc, configs, prices, None)
            predicted = {r["config"]: r["predicted_decoder"] for r in reg["rows"]}
            passes[sweeps].append({
                "seconds": seconds, "predicted": predicted,
                "points": {f"{h.architecture.name}: {point_key(p)}": p.ms[0]
                           for h in hardware for p in h.timed()}})
            print(f"pass {i + 1}, {sweeps} sweep(s): {seconds:.1f} s; "
                  + ", ".join(f"{c} {v:.3f}" for c, v in predicted.items() if c != "target"),
                  flush=True)
    got = summarise(passes)
    kinds = [str(k) for k in passes]
    configs_named = list(got[kinds[0]]["predicted"])
    print_table(
        f"predicted speedup over {a.passes} passes of each kind: mean [min, max], "
        "sd of log", ["configuration", *(f"{k} sweep(s)" for k in kinds)],
        [[c, *(f"{statistics.fmean(got[k]['predicted'][c]):.3f} "
               f"[{min(got[k]['predicted'][c]):.3f}, {max(got[k]['predicted'][c]):.3f}] "
               f"{got[k]['predicted_log_sd'][c]:.3f}" for k in kinds)]
         for c in configs_named])
    print_table("summary", ["sweeps", "passes", "seconds per pass (mean)",
                            "points: median sd of log", "points: max sd of log",
                            "configurations: mean sd of log",
                            "configurations: mean max/min - 1"],
                [[k, got[k]["passes"], statistics.fmean(got[k]["seconds"]),
                  got[k]["point_log_sd_median"], got[k]["point_log_sd_max"],
                  got[k]["predicted_log_sd_mean"], got[k]["predicted_range_mean"]]
                 for k in kinds])
    write_json(Path(a.out or "profile_sweeps").stem, {
        "benchmark": "profile_sweeps", "device": described, "target": a.target,
        "draft": a.draft, "acceptance": a.acceptance, "problems": a.problems,
        "seed": a.seed, "k1": a.k1, "k2": a.k2, "continuous": a.continuous,
        "profile_repeats": a.profile_repeats, "sweeps": a.sweeps, "pairs": a.passes,
        "order": "each pair one pass of each kind, alternating which goes first",
        "by_sweeps": got})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
