"""How far prompt lookup's tokens per pass move from one problem to the next.

Under greedy decoding prompt lookup is exact, so the passes token speculation makes on
an answer follow from the answer alone (:func:`profiler.ngram_replay.replay_steps`).
This benchmark replays whole answers of the target, problem by problem: the target's
steps of a steps-phase pairs record (the calibration's problems) and the target-alone
answers of held-out run records, each as if every step had been written with
``--k2`` − 1 draft tokens per pass; it prints each problem's tokens per pass and, per
source, the pooled rate with its standard error counting each problem as one cluster
(:func:`specmodel.montecarlo.estimate.ratio_estimate` over the problems); with more
than one run record, a last row pools the runs' problems (give one record per problem
set: two rounds of one seed replay the same answers).

Usage::

    python -m benchmarks.bench_pass_spread \
        --pairs benchmarks/results/heldout_15b_calibration.pairs.jsonl \
        --runs benchmarks/results/heldout_15b_round1.run.json --out pass_spread_15b
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from benchmarks.harness import print_table, write_json  # noqa: E402


def _tokenizer(model: str) -> Any:
    from transformers import AutoTokenizer

    from profiler.packs import resolve_model

    return AutoTokenizer.from_pretrained(str(resolve_model(model)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=Path, action="append", default=[],
                    help="a steps-phase pairs record (repeatable)")
    ap.add_argument("--runs", type=Path, action="append", default=[],
                    help="a run record with a target-alone configuration (repeatable)")
    ap.add_argument("--k2", type=int, default=3, help="target positions per pass")
    ap.add_argument("--lookup", type=int, default=3, help="prompt lookup's longest n-gram")
    ap.add_argument("--out", required=True, help="results name (benchmarks/results/NAME.json)")
    a = ap.parse_args(argv)
    if not a.pairs and not a.runs:
        ap.error("give at least one --pairs or --runs record")
    if a.k2 < 2 or a.lookup < 1:
        ap.error("--k2 must be >= 2 and --lookup >= 1")

    from profiler.answers import pairs_answers, run_answers
    from profiler.ngram_replay import replay_steps
    from specmodel.montecarlo.estimate import ratio_estimate

    sources = [(str(p), *pairs_answers(p)) for p in a.pairs]
    sources += [(str(p), *run_answers(p)) for p in a.runs]
    tokenizers: dict[str, Any] = {}
    out = []
    for name, cut, answers in sources:
        model = cut.target
        tok = tokenizers.setdefault(model, _tokenizer(model))
        per = []
        for ans in answers:
            c = replay_steps(tok, ans.prompt, [(s, True) for s in ans.steps], a.k2 - 1,
                             a.lookup)
            per.append({"problem": ans.problem, "seed": ans.seed,
                        "tokens": c["output_tokens"],
                        "passes": c["num_target_passes"], "drafts": c["num_drafts"]})
        pooled = ratio_estimate([p["tokens"] for p in per], [p["passes"] for p in per])
        drafted = sum(p["drafts"] for p in per) / sum(p["passes"] for p in per)
        out.append({"source": name, "target": model, "problems": per,
                    "tokens_per_pass": pooled.mean, "clustered_stderr": pooled.stderr,
                    "draft_rate": drafted})
    held = [r for r in out if r["source"] in {str(p) for p in a.runs}]
    if len(held) > 1:  # every held-out problem one cluster: the population's rate
        per = [p for r in held for p in r["problems"]]
        pooled = ratio_estimate([p["tokens"] for p in per], [p["passes"] for p in per])
        out.append({"source": f"{len(held)} run records pooled", "target": held[0]["target"],
                    "problems": per, "tokens_per_pass": pooled.mean,
                    "clustered_stderr": pooled.stderr,
                    "draft_rate": sum(p["drafts"] for p in per)
                    / sum(p["passes"] for p in per)})
    print_table(f"prompt lookup replayed on whole answers (k2 = {a.k2}, n-grams up to "
                f"{a.lookup})",
                ["source", "target", "problems", "drafted", "tokens per pass (± se)",
                 "per problem"],
                [[Path(r["source"]).name, r["target"], len(r["problems"]),
                  f"{r['draft_rate']:.3f}",
                  f"{r['tokens_per_pass']:.3f} ± {r['clustered_stderr']:.3f}",
                  " ".join(f"{p['tokens'] / p['passes']:.2f}" for p in r["problems"])]
                 for r in out])
    write_json(a.out, {"k2": a.k2, "lookup": a.lookup, "sources": out})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
