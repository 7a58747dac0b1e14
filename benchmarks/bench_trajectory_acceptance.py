"""Step acceptance on the target's own trajectory against the acceptance the decoder met,
on the same held-out problems.

The calibration's steps phase judges the draft's step at every prefix of the target's
greedy answer.  The decoder judges a draft step only where its schedule drafts one,
and from prefixes that hold accepted draft steps.  A token-only run of the held-out
sweep writes exactly the target's greedy answer (token speculation is lossless), so
its committed steps are the trajectory the steps phase would have judged: this
benchmark drafts the step-draft model's step at each of those prefixes, judges the
pair with the sweep's verifier, and sets the rate beside the acceptance each
step-speculation configuration met in the rounds.  It also walks the trajectory's
verdicts as sync k1 = 2 does (judge a position; after an acceptance the next position
is the target's, not judged) — the rate a sync run would report on that very
trajectory, which over-weights the hard stretches — and bins the verdicts by step
index.  Usage::

    python -m benchmarks.bench_trajectory_acceptance --trio 1.5b --records \\
        benchmarks/results/heldout_15b_s3_round1.run.json --out trajectory_15b_s3
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from benchmarks.bench_heldout import TRIOS, configurations  # noqa: E402
from benchmarks.harness import percent, print_table, printer, write_json  # noqa: E402

BINS = 4
"""Steps per index bin (0–3, 4–7, 8–11)."""


def sync_walk(verdicts: list[bool]) -> tuple[int, int]:
    """(accepted, judged) when sync k1 = 2 walks a fixed sequence of verdicts: it judges
    a position, and after an acceptance commits the draft step and the target's next
    step (that position is not judged)."""
    i = judged = accepted = 0
    while i < len(verdicts):
        judged += 1
        if verdicts[i]:
            accepted += 1
            i += 2
        else:
            i += 1
    return accepted, judged


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trio", choices=sorted(TRIOS), default="1.5b")
    ap.add_argument("--records", nargs="+", required=True,
                    help="round records of one held-out sweep (the first holds the "
                         "token-only run whose steps are the target's trajectory)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", required=True, help="results name (benchmarks/results/NAME.json)")
    a = ap.parse_args(argv)

    from profiler.engines import HFEngine
    from profiler.packs import resolve_model
    from profiler.problems import format_prompt, load_problems
    from profiler.verifiers import make_verifier
    from specmodel.formats.run_record import load_run_record

    recs = [load_run_record(p) for p in a.records]
    token = next((c for c in recs[0].configs if c.config.k1 == 1 and c.config.k2 > 1), None)
    if token is None:
        print(f"error: --records: {a.records[0]} holds no token-only run", file=sys.stderr)
        return 2
    s = recs[0].settings
    problems = load_problems(s.problems, s.seed)
    configs = configurations(a.trio, max_steps=s.max_steps, max_step_tokens=s.max_step_tokens,
                             delimiter=s.delimiter, threshold=0.85)
    verifier = make_verifier(configs[0].verifier, threads=a.threads)
    draft = HFEngine(resolve_model(TRIOS[a.trio]["draft"]), threads=a.threads,
                     delimiter=s.delimiter)
    say = printer("trajectory")
    pairs: list[dict[str, Any]] = []
    total = sum(len(p.steps) for p in token.problems)
    for prob in token.problems:
        prefix = format_prompt(problems[prob.problem])
        for i, step in enumerate(prob.steps):
            drafted = draft.generate_steps([prefix], s.max_step_tokens).outputs[0].text
            ok = bool(verifier.verify([(step.text, drafted)])[0].accepted)
            pairs.append({"problem": prob.problem, "step": i, "accepted": ok,
                          "target": step.text, "draft": drafted})
            say(len(pairs), total, f"problem {prob.problem} step {i}: "
                                   f"{'accepted' if ok else 'rejected'}")
            prefix += step.text
    by_problem: dict[int, list[bool]] = {}
    for p in pairs:
        by_problem.setdefault(p["problem"], []).append(p["accepted"])
    walked = [sync_walk(v) for v in by_problem.values()]
    bins: dict[str, list[int]] = {}
    for p in pairs:
        lo = p["step"] // BINS * BINS
        b = bins.setdefault(f"{lo}-{lo + BINS - 1}", [0, 0])
        b[0] += p["accepted"]
        b[1] += 1
    met = []
    for c in recs[0].configs:
        if c.config.k1 < 2:
            continue
        runs = [next(x for x in r.configs if x.label == c.label) for r in recs]
        judged = sum(x.totals.drafted_steps for x in runs)
        accepted = sum(x.totals.accepted_steps for x in runs)
        met.append({"config": c.label, "accepted": accepted, "judged": judged})
    accepted = sum(p["accepted"] for p in pairs)
    walk_a, walk_j = sum(w[0] for w in walked), sum(w[1] for w in walked)
    rows = [["target's trajectory (the steps phase's protocol)", f"{accepted}/{len(pairs)}",
             percent(accepted / len(pairs))],
            ["  the same verdicts walked as sync k1=2", f"{walk_a}/{walk_j}",
             percent(walk_a / walk_j)],
            *([f"  steps {k}", f"{v[0]}/{v[1]}", percent(v[0] / v[1])]
              for k, v in bins.items()),
            *([f"decoder, {m['config']} ({len(recs)} round(s))",
               f"{m['accepted']}/{m['judged']}",
               percent(m["accepted"] / m["judged"]) if m["judged"] else "-"] for m in met)]
    print_table(f"step acceptance, trio {a.trio}, {s.problems} problems (seed {s.seed}): "
                "on the target's trajectory and as the decoder met it",
                ["where", "accepted/judged", "rate"], rows)
    write_json(a.out, {"trio": a.trio, "records": a.records, "problems": s.problems,
                       "seed": s.seed, "trajectory": {"accepted": accepted,
                                                      "judged": len(pairs)},
                       "sync_walk": {"accepted": walk_a, "judged": walk_j},
                       "by_step_index": bins, "decoder": met, "pairs": pairs})
    return 0


if __name__ == "__main__":
    sys.exit(main())
