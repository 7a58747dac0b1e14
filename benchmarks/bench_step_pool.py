"""Step acceptance pooled over many held-out problem sets, against the model's.

A held-out sweep decodes three to six problems, and on so few the share of draft steps
the verifier accepts moves from 0 to 0.43 between sweeps.  Whether the calibration's
acceptance is the problems' own or a bias shows only over many sets at once.  This
benchmark pools every configuration's judged draft steps over the run records given
(one record per problem set: rounds of one seed judge the same steps), with each
problem one cluster (:func:`specmodel.montecarlo.estimate.ratio_estimate`), and sets
beside it the decoder model's acceptance for that configuration as the sweeps'
summaries registered it (``decoder_step_acceptance`` of ``bench_heldout --report``),
weighted by the steps each sweep judged; with ``--pairs``, the steps phase's own
acceptance on the calibration's problems (every target step judged) too.

Usage::

    python -m benchmarks.bench_step_pool \
        --run benchmarks/results/heldout_05b_s3_round1.run.json \
            benchmarks/results/heldout_05b_s3.json \
        --run … --pairs benchmarks/results/heldout_05b_profile_run_xeon.pairs.jsonl \
        --out step_pool_05b
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from benchmarks.harness import print_table, write_json  # noqa: E402


def pool(runs: list[tuple[Path, Path | None]]) -> list[dict[str, Any]]:
    """Per configuration that drafts steps: the runs' judged and accepted draft steps
    pooled with problems as clusters, and the summaries' model acceptance weighted by
    the steps each run judged (None where no summary gives it)."""
    from specmodel.formats.run_record import load_run_record
    from specmodel.montecarlo.estimate import ratio_estimate

    by: dict[str, dict[str, Any]] = {}
    for run, summary in runs:
        rec = load_run_record(run)
        model: dict[str, float | None] = {}
        if summary is not None:
            model = {r["config"]: r.get("decoder_step_acceptance")
                     for r in json.loads(summary.read_text())["rows"]}
        for c in rec.configs:
            judged = sum(p.drafted_steps for p in c.problems)
            if not judged:
                continue
            row = by.setdefault(c.label, {"accepted": [], "judged": [], "model": [],
                                          "sets": 0})
            row["accepted"] += [p.accepted_steps for p in c.problems]
            row["judged"] += [p.drafted_steps for p in c.problems]
            row["sets"] += 1
            if model.get(c.label) is not None:
                row["model"].append((float(model[c.label]), judged))  # type: ignore[arg-type]
    out = []
    for label, row in by.items():
        est = ratio_estimate(row["accepted"], row["judged"])
        weighted = (sum(m * n for m, n in row["model"]) / sum(n for _, n in row["model"])
                    if row["model"] else None)
        out.append({"config": label, "sets": row["sets"], "problems": len(row["judged"]),
                    "accepted": sum(row["accepted"]), "judged": sum(row["judged"]),
                    "rate": est.mean, "clustered_stderr": est.stderr,
                    "model": weighted, "model_sets": len(row["model"])})
    return out


def steps_phase(path: Path) -> dict[str, Any]:
    """The steps phase's acceptance on its own problems (every target step judged), with
    problems as clusters."""
    from profiler.step_profile import read_record, summarize
    from specmodel.montecarlo.estimate import ratio_estimate

    per = summarize(read_record(path).pairs).problem_verdicts or []
    est = ratio_estimate([a for a, _ in per], [n for _, n in per])
    return {"source": str(path), "problems": len(per),
            "accepted": sum(a for a, _ in per), "judged": sum(n for _, n in per),
            "rate": est.mean, "clustered_stderr": est.stderr}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", nargs="+", action="append", default=[], metavar="PATH",
                    help="a run record, optionally followed by its sweep's summary "
                         "(repeatable; one record per problem set)")
    ap.add_argument("--pairs", type=Path, default=None,
                    help="the calibration's steps-phase pairs record")
    ap.add_argument("--out", required=True, help="results name (benchmarks/results/NAME.json)")
    a = ap.parse_args(argv)
    if not a.run:
        ap.error("give at least one --run record")
    if any(len(r) > 2 for r in a.run):
        ap.error("--run takes a run record and at most one summary")
    runs = [(Path(r[0]), Path(r[1]) if len(r) > 1 else None) for r in a.run]
    rows = pool(runs)
    calib = steps_phase(a.pairs) if a.pairs is not None else None
    print_table(f"draft steps accepted, pooled over {len(runs)} run records (problems as "
                "clusters)",
                ["config", "sets", "problems", "accepted / judged", "rate ± se",
                 "model (sets)"],
                [[r["config"], r["sets"], r["problems"], f"{r['accepted']}/{r['judged']}",
                  f"{r['rate']:.3f} ± {r['clustered_stderr']:.3f}",
                  "—" if r["model"] is None else f"{r['model']:.3f} ({r['model_sets']})"]
                 for r in rows])
    if calib is not None:
        print(f"\nsteps phase, {calib['problems']} problems, every target step judged: "
              f"{calib['accepted']}/{calib['judged']} = {calib['rate']:.3f} ± "
              f"{calib['clustered_stderr']:.3f}")
    write_json(a.out, {"runs": [[str(r), None if s is None else str(s)] for r, s in runs],
                       "configs": rows, "steps_phase": calib})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
