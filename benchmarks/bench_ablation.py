"""Ablation of the decoder model on measured runs (issue 12): starting from the papers'
idealisation, relax one assumption at a time (:mod:`specmodel.decodermodel.ablation`)
and show how the prediction error on the same runs changes.

Each run record is one round of a sweep; several records of the same sweep are
averaged per configuration (each round's speedup over its own baseline), as
``bench_heldout`` does.  The papers' closed form f·g is the first row for reference.

Usage::

    python -m benchmarks.bench_ablation --calibration CAL.json RECORD.run.json [...]
        [--prompt-tokens N] [--out NAME]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from benchmarks.harness import machine, percent, print_table, write_json  # noqa: E402


def ablate(records: list[Any], cal: Any, *, prompt_tokens: float | None, problems: int,
           seed: int) -> dict[str, Any]:
    """Every variant's prediction of every speculative configuration, and its errors."""
    from scipy.stats import spearmanr

    from specmodel.decodermodel import Workload, predict
    from specmodel.decodermodel.ablation import STEPS, variants
    from specmodel.prediction import compare_rounds

    summary = compare_rounds(records, cal, decoder=False)
    rows = [r for r in summary.rows if r.k1 > 1 or r.k2 > 1]
    configs = {c.label: c.config for c in records[0].configs}
    pt = prompt_tokens if prompt_tokens is not None else records[0].settings.prompt_tokens
    out_steps = []
    fg = [r.predicted_speedup for r in rows]
    table = [("f·g (closed form)", "the papers' f(k1)·g(k2)", fg)]
    for name, costs, acc in variants(cal):
        preds = []
        for r in rows:
            cfg = configs[r.config]
            work = Workload.of(cfg, None if pt is None else round(pt))
            preds.append(predict(cfg, acc, costs, work, problems=problems, draws=0,
                                 seed=seed).speedup)
        what = dict(STEPS)[name]
        table.append((name, what, preds))
    measured = [r.measured_mean for r in rows]
    for name, what, preds in table:
        errs = [p / m - 1 for p, m in zip(preds, measured, strict=True)]
        rho = spearmanr(preds, measured).statistic if len(rows) >= 3 else None
        out_steps.append({
            "step": name, "adds": what, "predicted": dict(zip([r.config for r in rows],
                                                              preds, strict=True)),
            "errors": dict(zip([r.config for r in rows], errs, strict=True)),
            "mean_abs_error": sum(abs(e) for e in errs) / len(errs),
            "max_abs_error": max(abs(e) for e in errs),
            "spearman": None if rho is None else float(rho)})
    return {"configs": [r.config for r in rows], "measured_mean": measured,
            "measured_spread": [r.measured_spread for r in rows], "rounds": len(records),
            "prompt_tokens": pt, "problems": problems, "seed": seed, "steps": out_steps}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("records", nargs="+", help="run records (rounds of one sweep)")
    ap.add_argument("--calibration", required=True)
    ap.add_argument("--prompt-tokens", type=float, default=None,
                    help="the runs' mean prompt length (default: the records' setting)")
    ap.add_argument("--problems", type=int, default=300, help="simulated problems")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="ablation")
    a = ap.parse_args(argv)
    from specmodel.formats.calibration import load_calibration
    from specmodel.formats.run_record import load_run_record

    cal = load_calibration(a.calibration)
    recs = [load_run_record(p) for p in a.records]
    res = ablate(recs, cal, prompt_tokens=a.prompt_tokens, problems=a.problems, seed=a.seed)
    print_table(
        f"ablation on {', '.join(Path(p).name for p in a.records)} (calibration {cal.name}, "
        f"prompt {res['prompt_tokens']} tokens)",
        ["step", "mean |err|", "max |err|", "Spearman", *res["configs"]],
        [[s["step"], percent(s["mean_abs_error"]), percent(s["max_abs_error"]),
          "-" if s["spearman"] is None else f"{s['spearman']:.2f}",
          *(percent(s["errors"][c], signed=True) for c in res["configs"])]
         for s in res["steps"]])
    print("measured (mean of rounds): " + ", ".join(
        f"{c} {m:.3f}" for c, m in zip(res["configs"], res["measured_mean"], strict=True)))
    write_json(a.out, {"records": [str(p) for p in a.records], "calibration": a.calibration,
                       "machine": machine(), **res})
    return 0


if __name__ == "__main__":
    sys.exit(main())
