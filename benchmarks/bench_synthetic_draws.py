"""Common random numbers in synthetic runs: does keying a step's draws by its position
change the schedule the decoder runs?

The synthetic engine draws what a step writes from a stream keyed by the prompt and
the step's position (``draws=position``, the default since 2026-11-25) or by the
whole prefix (``prefix``, before).  Either way every step's law is the calibration's;
the first shares the draws between configurations (the target alone and every
speculative schedule meet the same target step at each position).  This benchmark
runs the same problems under both keys on small random-weight architectures (their
speed is not the point; their counts are) and reports, per configuration: committed
tokens per step, the step acceptance drawn, and the target's decode iterations per
committed token by rows (:class:`benchmarks.bench_schedule_audit.ForwardLog`).  What
to look for: under ``position`` the configurations' tokens per step sit close to the
target alone's; the iterations per token at a given acceptance do not move beyond the
draws' noise (no schedule bias from the coupling).  Timing never decides a test.

Usage::

    python -m benchmarks.bench_synthetic_draws --problems 120 --seed 5
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

SMALL = {"model_type": "qwen2", "hidden_size": 256, "intermediate_size": 1024,
         "num_hidden_layers": 6, "num_attention_heads": 4, "num_key_value_heads": 2,
         "vocab_size": 512}
"""The target's shape: hidden 256, 6 layers (a forward of a few milliseconds)."""
TINY = {**SMALL, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 1}
"""The draft's: hidden 64, 1 layer."""
DRAWS = ("prefix", "position")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--acceptance", default="lr-paper-gsm8k-deepseek")
    ap.add_argument("--problems", type=int, default=120)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--k1", type=int, default=3)
    ap.add_argument("--max-steps", type=int, default=12)
    ap.add_argument("--max-step-tokens", type=int, default=48)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results"
                    / "synthetic_draws.json", help="summary JSON (default: "
                    "benchmarks/results/synthetic_draws.json)")
    a = ap.parse_args(argv)
    for name, low in (("problems", 1), ("k1", 2), ("max_steps", 1), ("max_step_tokens", 1)):
        if getattr(a, name) < low:
            print(f"error: --{name.replace('_', '-')} must be >= {low}", file=sys.stderr)
            return 2
    from benchmarks.harness import write_json

    rows = run(a)
    _print(rows)
    write_json(a.out.name.removesuffix(".json"), {
        "benchmark": "common random numbers in synthetic runs (bench_synthetic_draws.py)",
        "acceptance": a.acceptance, "problems": a.problems, "seed": a.seed, "k1": a.k1,
        "max_steps": a.max_steps, "max_step_tokens": a.max_step_tokens,
        "architectures": {"target": SMALL, "draft": TINY}, "rows": rows}, a.out.parent)
    return 0


def run(a: argparse.Namespace) -> list[dict[str, Any]]:
    """Every configuration under each key: its counts (one row each)."""
    from benchmarks.bench_schedule_audit import ForwardLog, measured_mix
    from benchmarks.bench_synthetic import _problems
    from profiler.decoder import LookaheadDecoder
    from profiler.engines.synthetic import SyntheticEngine, load_acceptance
    from profiler.verifiers import SyntheticVerifier
    from specmodel.config import SpecConfig

    tmp = Path(tempfile.mkdtemp(prefix="bench-draws-"))
    paths = {}
    for role, shape in (("target", SMALL), ("draft", TINY)):
        paths[role] = tmp / f"{role}.json"
        paths[role].write_text(json.dumps(shape))
    acc = load_acceptance(a.acceptance)
    problems = _problems(a.problems, 0)
    common = {"max_steps": a.max_steps, "max_step_tokens": a.max_step_tokens,
              "verifier": {"kind": "synthetic", "model": a.acceptance}}
    configs = [SpecConfig(**common), SpecConfig(mode="sync", k1=a.k1, **common),
               SpecConfig(mode="async", k1=a.k1, **common),
               SpecConfig(mode="async", k1=a.k1, target_batching="continuous", **common)]
    rows = []
    for draws in DRAWS:
        eng = {role: SyntheticEngine(str(p), acceptance=acc, role=role, seed=a.seed,
                                     draws=draws) for role, p in paths.items()}
        ver = SyntheticVerifier(acc, source=a.acceptance, seed=a.seed)
        log = ForwardLog()
        log.wrap(eng["target"]._fwd, "target")
        for cfg in configs:
            spec = cfg.k1 > 1
            dec = LookaheadDecoder.for_config(eng["target"], eng["draft"] if spec else None,
                                              ver if spec else None, cfg)
            runs, steps, judged, accepted = [], 0, 0, 0
            for p in problems:
                for e in eng.values():
                    e.forget()
                log.take()
                got = dec.decode(p)
                runs.append({"tokens": got.output_tokens, "log": log.take()})
                steps += len(got.steps)
                judged += got.drafted_steps
                accepted += got.accepted_steps
            tokens = sum(r["tokens"] for r in runs)
            mix = measured_mix(runs, lambda role, b, q, L: 1.0)
            rows.append({"draws": draws, "config": cfg.label, "tokens": tokens,
                         "tokens_per_step": tokens / steps,
                         "step_acceptance": accepted / judged if judged else None,
                         "iterations_per_token": mix["iterations_per_token"]})
            print(f"  {draws}: {cfg.label} done", flush=True)
    return rows


def _print(rows: list[dict[str, Any]]) -> None:
    print("\ndraws     config                      tokens/step  α1 drawn  target iterations "
          "per committed token by rows (sum)")
    for r in rows:
        it = r["iterations_per_token"]
        alpha = "-" if r["step_acceptance"] is None else f"{r['step_acceptance']:.3f}"
        mix = " ".join(f"b{b}:{v:.3f}" for b, v in it.items())
        print(f"{r['draws']:<9} {r['config']:<27} {r['tokens_per_step']:>11.2f}  {alpha:>8}  "
              f"{mix} ({sum(it.values()):.3f})")


if __name__ == "__main__":
    sys.exit(main())
