"""Final-answer accuracy of Lookahead Reasoning against the target alone (the LR paper's Table 1).

On the same gsm_symbolic problems, with caps long enough for the answers to be
written, this runs target-only greedy decoding once, then Lookahead Reasoning
with each verifier (exact match, the embedding verifier, the LLM judge), and
optionally multi-branch drafting (sync, width W) with one of them.  For each it
reports accuracy with a Wilson 95 % interval, how many problems change from right
to wrong and wrong to right against the target (paired, same problems), how
often the final answer is the target's, the step acceptance, the share of
committed steps written by the draft, and the measured speed relative to the
target in the same run.

With greedy models the committed text at each position is the accepted draft or
the target's step from the same prefix, whatever k1 and the mode
(docs/decoder.md): accuracy is the verifier's, so one (mode, k1) per verifier
suffices; async k1 = 2 is the default because it was the fastest configuration
of the decoder benchmark.

Writes one run record per verifier (``benchmarks/results/accuracy_<verifier>.json``,
each holding the shared target-only baseline, readable by ``specmodel
validate``) and the summary ``accuracy.json`` beside them (``--records``, default
``benchmarks/results``).  ``--resume`` skips what the records already hold.

Usage::

    python -m benchmarks.bench_accuracy [--problems 12] [--verifiers exact,embedding,judge]
"""

from __future__ import annotations

import argparse
import shutil
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


def paired(base: list[dict[str, Any]], other: list[dict[str, Any]]) -> dict[str, int]:
    """Paired outcome counts of two runs over the same problems (matched by index; each
    problem as a run record's problem, dumped)."""
    by_index = {p["problem"]: p for p in base}
    out = {"both_right": 0, "target_only_right": 0, "lr_only_right": 0, "both_wrong": 0,
           "same_answer": 0, "problems": 0}
    for p in other:
        b = by_index[p["problem"]]
        out["problems"] += 1
        out["same_answer"] += b["answer"] == p["answer"]
        key = {(True, True): "both_right", (True, False): "target_only_right",
               (False, True): "lr_only_right", (False, False): "both_wrong"}
        out[key[(bool(b["correct"]), bool(p["correct"]))]] += 1
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_trio_arguments(ap, problems=12, seed=0, max_step_tokens=64)
    ap.add_argument("--max-steps", type=int, default=24)
    ap.add_argument("--verifiers", default="exact,embedding,judge",
                    help="Comma-separated verifier kinds, each run with --mode/--k1.")
    ap.add_argument("--judge-model", default="qwen2.5-coder-0.5b")
    ap.add_argument("--mode", default="async", choices=["sync", "async"])
    ap.add_argument("--k1", type=int, default=2)
    ap.add_argument("--width", type=int, default=2,
                    help="Also run sync k1 with this many branches (1: skip).")
    ap.add_argument("--width-verifier", default="embedding",
                    help="The verifier of the multi-branch row.")
    ap.add_argument("--calibration", default=None, help="Calibration for validate's predictions.")
    ap.add_argument("--preset", default="measured-qwen2.5-coder-0.5b-smollm2-135m")
    ap.add_argument("--records", type=Path, default=RESULTS, help="Folder for the run records.")
    ap.add_argument("--resume", action="store_true")
    args = ap.parse_args(argv)
    kinds = [v.strip() for v in args.verifiers.split(",") if v.strip()]
    if not kinds:
        raise SystemExit("--verifiers must name at least one verifier")

    from profiler.engines import HFEngine
    from profiler.packs import resolve_model
    from profiler.problems import load_problems
    from profiler.runs import run_configurations
    from profiler.verifiers import make_verifier
    from specmodel.config import SpecConfig, VerifierSpec
    from specmodel.formats.calibration import resolve_calibration
    from specmodel.prediction import compare
    from specmodel.stats import wilson

    cal = resolve_calibration(args.calibration, None if args.calibration else args.preset)
    delim = args.delimiter.encode().decode("unicode_escape")
    caps = {"max_steps": args.max_steps, "max_step_tokens": args.max_step_tokens,
            "delimiter": delim}
    settings = {"dataset": "gsm_symbolic", "problems": args.problems, "seed": args.seed,
                "threads": args.threads, "engine": "transformers", **caps}
    problems = load_problems(args.problems, args.seed)
    target = HFEngine(resolve_model(args.target), threads=args.threads, delimiter=delim)
    draft = HFEngine(resolve_model(args.draft), threads=args.threads, delimiter=delim)
    models = {"target": args.target, "draft": args.draft}
    args.records.mkdir(parents=True, exist_ok=True)

    t0 = time.perf_counter()
    base_path = args.records / "accuracy_target.json"
    # The baseline with this benchmark's caps and delimiter (an empty list would run the
    # default ones).
    only_target = SpecConfig(max_steps=args.max_steps, max_step_tokens=args.max_step_tokens,
                             step_delimiter=delim)
    base = run_configurations(target, None, None, [only_target], problems, base_path,
                              models={**models, "verifier": ""}, settings=settings,
                              calibration=cal, resume=args.resume, progress=printer("target"))
    rows: list[dict[str, Any]] = []
    base_run = base.configs[0]
    lo, hi = wilson(round(base_run.totals.accuracy * len(problems)), len(problems))
    rows.append({"verifier": "-", "config": "target", "accuracy": base_run.totals.accuracy,
                 "wilson95": [lo, hi], "speedup": 1.0, "step_acceptance": None,
                 "draft_share": 0.0, "paired": None, "record": str(base_path)})
    for kind in kinds:
        spec = VerifierSpec(kind=kind, threshold=args.threshold,
                            model=args.judge_model if kind == "judge" else None)
        verifier = make_verifier(spec, threads=args.threads)
        lr = SpecConfig(mode=args.mode, k1=args.k1, max_steps=args.max_steps,
                        max_step_tokens=args.max_step_tokens, step_delimiter=delim,
                        verifier=spec)
        configs = [lr]
        if args.width > 1 and kind == args.width_verifier:
            configs.append(lr.replace(mode="sync", width=args.width))
        path = args.records / f"accuracy_{kind}.json"
        if not (args.resume and path.is_file()):
            shutil.copyfile(base_path, path)  # the shared baseline, reused by resume below
        record = run_configurations(
            target, draft, verifier, configs, problems, path,
            models={**models, "verifier": verifier.name}, settings=settings, calibration=cal,
            resume=True, progress=printer(kind))
        speed = {r.config: r.measured_speedup for r in compare(record)}
        for c in record.configs:
            if c.label == record.baseline:
                continue
            n_right = round(c.totals.accuracy * len(problems))
            steps = [s for p in c.problems for s in p.steps]
            rows.append({
                "verifier": verifier.name, "config": c.label, "accuracy": c.totals.accuracy,
                "wilson95": list(wilson(n_right, len(problems))), "speedup": speed[c.label],
                "step_acceptance": c.totals.step_acceptance,
                "draft_share": sum(s.source == "draft" for s in steps) / max(1, len(steps)),
                "paired": paired([p.model_dump() for p in base_run.problems],
                                  [p.model_dump() for p in c.problems]), "record": str(path),
            })
        del verifier
    seconds = time.perf_counter() - t0

    print_table(
        f"{args.target} target, {args.draft} draft; {args.problems} gsm_symbolic problems "
        f"(seed {args.seed}), ≤{args.max_steps} steps of ≤{args.max_step_tokens} tokens",
        ["verifier", "config", "accuracy", "Wilson 95%", "R→W", "W→R", "same answer",
         "α1 run", "draft steps", "speed vs target"],
        [[r["verifier"], r["config"], percent(r["accuracy"], 0),
          f"{r['wilson95'][0]:.2f}–{r['wilson95'][1]:.2f}",
          "-" if r["paired"] is None else r["paired"]["target_only_right"],
          "-" if r["paired"] is None else r["paired"]["lr_only_right"],
          "-" if r["paired"] is None else f"{r['paired']['same_answer']}/{len(problems)}",
          percent(r["step_acceptance"], 0), percent(r["draft_share"], 0), round(r["speedup"], 3)]
         for r in rows],
    )
    write_json("accuracy", {"settings": vars(args) | {"records": str(args.records)},
                            "calibration": cal.name, "rows": rows, "seconds": seconds},
               args.records)


if __name__ == "__main__":
    main()
