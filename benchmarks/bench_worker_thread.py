"""Does the target run at the same speed in the async decoder's worker thread as alone?

On the 0.5B trio's held-out rounds the async decoder (k1 = 2) wrote the very same
answer as the target alone on some problems — no draft step accepted, the same target
steps on the same prefixes — in 0.79–0.96 of the target's time alone, while the draft
ran beside it on the other core; the decoder model, like the contention measurement,
expects the target to be slower beside the draft, never faster.  This benchmark times
the same problems, interleaved, ``--repeats`` rounds, three ways: the target alone in
the main thread (the sweep's baseline), the target alone in a worker thread started as
the async decoder starts its workers, and async Lookahead Reasoning (k1 = 2, k2 = 1);
each run's time is set against the main-thread baseline of the same round.

Usage::

    python -m benchmarks.bench_worker_thread --trio 0.5b --seed 2 --problem 0 \
        --repeats 2 --out worker_thread_05b
"""

from __future__ import annotations

import argparse
import statistics
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from benchmarks.bench_heldout import TRIOS  # noqa: E402
from benchmarks.harness import print_table, printer, write_json  # noqa: E402

VARIANTS = ("target, main thread", "target, worker thread", "async k1=2 k2=1")
"""The three ways each problem is decoded, in the order of the first round."""


def in_worker(decoder: Any, problem: Any) -> Any:
    """``decoder.decode(problem)`` in a fresh worker thread initialised as the async
    decoder initialises its workers."""
    from profiler.engines import init_worker_thread

    with ThreadPoolExecutor(1, "bench-worker", initializer=init_worker_thread) as pool:
        return pool.submit(decoder.decode, problem).result()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trio", choices=sorted(TRIOS), default="0.5b")
    ap.add_argument("--problems", type=int, default=3,
                    help="the sweep's problem count (the problem set depends on it)")
    ap.add_argument("--seed", type=int, default=2, help="the sweep's problem seed")
    ap.add_argument("--problem", type=int, action="append",
                    help="index of a problem to time (repeatable; default 0)")
    ap.add_argument("--repeats", type=int, default=2, help="interleaved rounds")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", required=True, help="results name (benchmarks/results/NAME.json)")
    a = ap.parse_args(argv)
    picks = a.problem or [0]
    if a.repeats < 1 or any(not 0 <= i < a.problems for i in picks):
        ap.error(f"--repeats must be >= 1 and every --problem in [0, {a.problems - 1}]")

    from benchmarks.bench_heldout import configurations
    from profiler.decoder import LookaheadDecoder
    from profiler.engines import HFEngine
    from profiler.packs import resolve_model
    from profiler.problems import format_prompt, load_problems
    from profiler.runs import baseline_like
    from profiler.verifiers import make_verifier

    names = TRIOS[a.trio]
    configs = configurations(a.trio, max_steps=12, max_step_tokens=48, delimiter="\n",
                             threshold=0.85)
    spec = next(c for c in configs if c.mode == "async" and c.k1 == 2 and c.k2 == 1)
    base = baseline_like(spec)
    problems = [load_problems(a.problems, a.seed)[i] for i in picks]
    target = HFEngine(resolve_model(names["target"]), threads=a.threads, delimiter="\n")
    draft = HFEngine(resolve_model(names["draft"]), threads=a.threads, delimiter="\n")
    verifier = make_verifier(spec.verifier, threads=a.threads)
    for eng in (target, draft):  # warm-up outside every timing
        eng.generate_steps([format_prompt(problems[0])] * 2, 8)
    verifier.verify([("1. A step.\n", "1. A step.\n")])
    plain = LookaheadDecoder.for_config(target, None, None, base)
    lr = LookaheadDecoder.for_config(target, draft, verifier, spec)
    run = {VARIANTS[0]: plain.decode, VARIANTS[1]: lambda p: in_worker(plain, p),
           VARIANTS[2]: lr.decode}
    say = printer("worker thread")
    runs: list[dict[str, Any]] = []
    for r in range(a.repeats):
        order = VARIANTS[r % 3:] + VARIANTS[: r % 3]  # rotate the order each round
        for problem in problems:
            for v in order:
                got = run[v](problem)
                runs.append({"round": r, "problem": problem.index, "variant": v,
                             "seconds": got.seconds, "target_seconds": got.target_seconds,
                             "draft_seconds": got.draft_seconds,
                             "target_steps": got.target_steps,
                             "output_tokens": got.output_tokens,
                             "accepted_steps": got.accepted_steps, "output": got.output})
                say(len(runs), a.repeats * len(problems) * 3,
                    f"{v}, problem {problem.index}: {got.seconds:.1f} s "
                    f"(target {got.target_seconds:.1f} s)")
    rows = []
    for problem in problems:
        ref = {x["round"]: x for x in runs
               if x["problem"] == problem.index and x["variant"] == VARIANTS[0]}
        for v in VARIANTS:
            mine = [x for x in runs if x["problem"] == problem.index and x["variant"] == v]
            ratio = [x["target_seconds"] / ref[x["round"]]["target_seconds"] for x in mine]
            same = sum(x["output"] == ref[x["round"]]["output"] for x in mine)
            rows.append({"problem": problem.index, "variant": v,
                         "seconds": [x["seconds"] for x in mine],
                         "target_seconds": [x["target_seconds"] for x in mine],
                         "target_time_ratio": ratio,
                         "median_ratio": statistics.median(ratio),
                         "same_output": same, "runs": len(mine)})
    print_table(f"the target's time against the main-thread baseline of the same round "
                f"({a.trio} trio, seed {a.seed}, {a.repeats} round(s))",
                ["problem", "variant", "target s (each round)", "ratio (median)",
                 "ratios", "same answer"],
                [[r["problem"], r["variant"],
                  " ".join(f"{s:.1f}" for s in r["target_seconds"]),
                  f"{r['median_ratio']:.3f}",
                  " ".join(f"{x:.3f}" for x in r["target_time_ratio"]),
                  f"{r['same_output']}/{r['runs']}"] for r in rows])
    write_json(a.out, {"trio": a.trio, "models": names, "seed": a.seed,
                       "problems": picks, "repeats": a.repeats, "threads": a.threads,
                       "rows": rows, "runs": runs})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
