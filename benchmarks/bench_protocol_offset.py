"""Would one logit offset between the step acceptance the decoder met and the acceptance
the decoder model expected, fitted on other held-out sweeps, have improved a sweep's
prediction?  Leave one sweep out.

The steps phase judges the draft's step at each prefix of the target's own answer; the
decoder's prefixes hold accepted draft steps, and on the 1.5B trio's held-out problems
it met less than that protocol measures on the same problems (docs/results.md, "Seed 17
call by call").  For every step-speculation row of every sweep this sets the verdicts
the decoder met (all rounds) beside the rate the decoder model expects for that row
(its simulated accepted / judged steps), pools the others' into one offset
logit(met) − logit(expected), and predicts the left-out sweep with every step rate moved
by it (:func:`specmodel.prediction.decoder_prediction`, ``step_offset``), against its
measured speedups (mean of its rounds).  Each sweep is priced by the thirty-problem
calibration of the machine that decoded it.  A check of a correction, not a
registration: the sweeps were decoded before.  Usage::

    python -m benchmarks.bench_protocol_offset --out protocol_offset_15b
"""

from __future__ import annotations

import argparse
import glob
import math
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from benchmarks.harness import percent, print_table, write_json  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
SWEEPS = {
    "2": ["heldout_15b_round1.run.json", "heldout_15b_round2.run.json"],
    "3": ["heldout_15b_s3_round1.run.json", "heldout_15b_s3_round2.run.json"],
    "14": "heldout_15b_s14_xeon_round*.run.json",
    "15": "heldout_15b_s15_epyc_round*.run.json",
    "16": "heldout_15b_s16_epyc_round*.run.json",
    "17": "heldout_15b_s17_xeon_round*.run.json",
}
"""The 1.5B trio's held-out sweeps: seed → round records (names or a glob)."""
CALIBRATIONS = {"epyc": "heldout_15b_calibration30_epyc.json",
                "xeon": "heldout_15b_calibration30_xeon.json"}
"""The thirty-problem calibration of each machine."""


def logit(p: float) -> float:
    return math.log(p / (1 - p))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problems", type=int, default=200,
                    help="simulated problems per prediction (with 16 calibration draws)")
    ap.add_argument("--out", required=True, help="results name (benchmarks/results/NAME.json)")
    a = ap.parse_args(argv)

    from specmodel.formats.calibration import load_calibration
    from specmodel.formats.run_record import load_run_record
    from specmodel.prediction import decoder_prediction

    cals = {k: load_calibration(RESULTS / v) for k, v in CALIBRATIONS.items()}
    sweeps: dict[str, dict[str, Any]] = {}
    for seed, files in SWEEPS.items():
        paths = (sorted(glob.glob(str(RESULTS / files))) if isinstance(files, str)
                 else [str(RESULTS / f) for f in files])
        recs = [load_run_record(p) for p in paths]
        cpu = str(getattr(recs[0].machine, "cpu", "") or "")
        cal = cals["epyc" if "EPYC" in cpu else "xeon"]
        rows = []
        for c in recs[0].configs:
            runs = [(r, next(x for x in r.configs if x.label == c.label)) for r in recs]
            measured = sum(x.totals.tokens_per_second / next(
                y for y in r.configs if y.label == r.baseline).totals.tokens_per_second
                for r, x in runs) / len(runs)
            rows.append({"config": c.label, "spec": c.config, "measured": measured,
                         "accepted": sum(x.totals.accepted_steps for _, x in runs),
                         "judged": sum(x.totals.drafted_steps for _, x in runs)})
        sweeps[seed] = {"records": [Path(p).name for p in paths], "record": recs[0],
                        "calibration": cal, "rows": rows}

    def predict(seed: str, row: dict[str, Any], offset: float) -> Any:
        s = sweeps[seed]
        return decoder_prediction(s["calibration"], row["spec"], seed=0, record=s["record"],
                                  problems=a.problems, step_offset=offset)

    for seed, s in sweeps.items():
        for row in s["rows"]:
            row["at0"] = predict(seed, row, 0.0)
            c = row["at0"].counters
            row["expected"] = (c["accepted_steps"] / c["drafted_steps"]
                               if row["judged"] and c.get("drafted_steps") else None)

    def offset(leave_out: str | None) -> tuple[float, float, float]:
        met = judged = expected = 0.0
        for seed, s in sweeps.items():
            if seed == leave_out:
                continue
            for row in s["rows"]:
                if row["expected"] is not None:
                    met += row["accepted"]
                    judged += row["judged"]
                    expected += row["expected"] * row["judged"]
        return logit(met / judged) - logit(expected / judged), met / judged, expected / judged

    pooled = offset(None)
    out_rows, table = [], []
    for seed, s in sweeps.items():
        off = offset(seed)[0]
        errs0, errs1, per = [], [], []
        for row in s["rows"]:
            p0 = row["at0"].speedup
            p1 = p0 if row["expected"] is None else predict(seed, row, off).speedup
            e0, e1 = p0 / row["measured"] - 1, p1 / row["measured"] - 1
            errs0.append(abs(e0))
            errs1.append(abs(e1))
            per.append({"config": row["config"], "measured": row["measured"],
                        "decoder": p0, "with_offset": p1, "error": e0,
                        "error_with_offset": e1})
        m0, m1 = sum(errs0) / len(errs0), sum(errs1) / len(errs1)
        table.append([seed, str(len(s["rows"])), f"{off:+.3f}", percent(m0),
                      percent(max(errs0)), percent(m1), percent(max(errs1))])
        out_rows.append({"seed": seed, "records": s["records"],
                         "calibration": s["calibration"].name, "offset": off,
                         "mean_abs_error": m0, "max_abs_error": max(errs0),
                         "mean_abs_error_with_offset": m1,
                         "max_abs_error_with_offset": max(errs1), "rows": per})
    n = len(out_rows)
    table.append(["mean", "", f"{pooled[0]:+.3f} (all)",
                  percent(sum(r["mean_abs_error"] for r in out_rows) / n), "",
                  percent(sum(r["mean_abs_error_with_offset"] for r in out_rows) / n), ""])
    print_table("the decoder model with a protocol offset fitted on the other sweeps "
                f"(pooled over all: met {pooled[1]:.3f} against expected {pooled[2]:.3f})",
                ["seed", "configs", "offset", "mean |err|", "max", "with offset", "max"],
                table)
    write_json(a.out, {"pooled": {"offset": pooled[0], "met": pooled[1],
                                  "expected": pooled[2]},
                       "simulated_problems": a.problems, "sweeps": out_rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
