"""Does the step length of a run's problems move the decoder model's prediction?  The
model with every step length scaled to a run's.

A held-out set's steps can be shorter or longer than the calibration's (the 1.5B trio's
seed 17: 17.2 tokens against 21.0), and on the static path a two-row sync call re-reads
both whole prefixes, so a shorter step might leave more of each call in prefill.  This
predicts the run's configurations with the calibration's acceptance model as it is and
with every step length it holds (the target's and the draft's histograms, the joint
pairs, the whole answers) multiplied by the run's target-alone mean step length over
the calibration's, each at the calibration's step acceptance and at logit offsets
(``--offsets``).  One calibration draw, ``--problems`` simulated problems, the same seed
for every row: a check of the model's sensitivity, not a prediction.  Usage::

    python -m benchmarks.bench_length_scale --calibration \\
        benchmarks/results/heldout_15b_calibration30_xeon.json \\
        --record benchmarks/results/calls_15b_s17_sync.run.json --out length_scale_15b_s17
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from benchmarks.harness import print_table, write_json  # noqa: E402


def scaled(acc: Any, factor: float) -> Any:
    """``acc`` with every step length multiplied by ``factor`` (rounded, at least 1)."""
    from specmodel.decodermodel.acceptance import StepLengths

    def n(v: int) -> int:
        return max(1, round(v * factor))

    changes: dict[str, Any] = {
        "target_steps": StepLengths(tuple(n(v) for v in acc.target_steps.values),
                                    acc.target_steps.weights),
        "draft_steps": StepLengths(tuple(n(v) for v in acc.draft_steps.values),
                                   acc.draft_steps.weights)}
    if acc.step_length_pairs:
        changes["step_length_pairs"] = tuple((n(t), n(d), w)
                                             for t, d, w in acc.step_length_pairs)
    if acc.step_length_answers:
        changes["step_length_answers"] = tuple(tuple((n(t), n(d)) for t, d in answer)
                                               for answer in acc.step_length_answers)
    return dataclasses.replace(acc, **changes)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calibration", required=True)
    ap.add_argument("--record", required=True,
                    help="a run record with the target alone (its steps set the scale)")
    ap.add_argument("--offsets", default="0,-0.85",
                    help="logit offsets of step acceptance, comma-separated")
    ap.add_argument("--problems", type=int, default=2000)
    ap.add_argument("--out", required=True, help="results name (benchmarks/results/NAME.json)")
    a = ap.parse_args(argv)

    from specmodel.decodermodel import AcceptanceModel, CostModel, Workload, predict
    from specmodel.formats.calibration import load_calibration
    from specmodel.formats.run_record import load_run_record

    cal = load_calibration(a.calibration)
    rec = load_run_record(a.record)
    base = next(c for c in rec.configs if c.label == rec.baseline)
    run_mean = (sum(s.tokens for p in base.problems for s in p.steps)
                / sum(len(p.steps) for p in base.problems))
    acc0 = AcceptanceModel.from_calibration(cal)
    factor = run_mean / acc0.target_steps.mean
    costs = CostModel.from_calibration(cal)
    offsets = [float(x) for x in a.offsets.split(",")]
    rows, out = [], []
    for off in offsets:
        for f in (1.0, factor):
            acc = scaled(acc0.step_shifted(off), f)
            for c in rec.configs:
                if c.config.k1 < 2:
                    continue
                p = predict(c.config, acc, costs, Workload.of(c.config, rec.settings.prompt_tokens),
                            problems=a.problems, draws=1, seed=0)
                k = p.counters
                alpha = k["accepted_steps"] / k["drafted_steps"] if k["drafted_steps"] else None
                per = k["output_tokens"] / k["target_batches"]
                rows.append([c.label, f"{off:+.2f}", f"{f:.3f}", f"{p.speedup:.3f}",
                             "-" if alpha is None else f"{alpha:.3f}", f"{per:.1f}"])
                out.append({"config": c.label, "offset": off, "scale": f,
                            "speedup": p.speedup, "step_acceptance": alpha,
                            "tokens_per_target_call": per})
    print_table(f"the decoder model with step lengths ×{factor:.3f} (the run's "
                f"{run_mean:.1f} tokens against the calibration's {acc0.target_steps.mean:.1f})",
                ["config", "offset", "scale", "speedup", "α1", "tokens / target call"], rows)
    write_json(a.out, {"calibration": a.calibration, "record": a.record,
                       "run_step_tokens": run_mean,
                       "calibration_step_tokens": acc0.target_steps.mean, "scale": factor,
                       "problems": a.problems, "rows": out})
    return 0


if __name__ == "__main__":
    sys.exit(main())
