"""Synthetic-acceptance runs: the decoder's real schedule on real forwards, measured.

The target and draft are architectures with random weights
(:class:`profiler.engines.synthetic.SyntheticEngine`); the step verifier's and token
verification's decisions and the step lengths are drawn from a calibration
(``--acceptance``).  So the decoder's schedule — sync Algorithm 1, async, the hybrid
with token speculation inside each step — runs on real forwards of models of any
size, and its wall-clock speedup is measured, not assumed.  Each configuration runs
``--rounds`` times (round 1 in order, round 2 in reverse, …; within a round problem by
problem, every configuration on each, unless ``--by-configurations``), and its
measured speedup (tokens/s over the baseline's in the same round) is compared with
what ``specmodel validate`` predicts from the acceptance calibration with c1, c2 and
T(b) timed on the same engines (the papers' f·g, and the same priced by T(b)).

Writes one run record per round (readable by ``specmodel validate``) and a summary.

Usage::

    python -m benchmarks.bench_synthetic                       # CPU, small architectures
    python -m benchmarks.bench_synthetic --device cuda --dtype bfloat16 \\
        --target qwen2.5-32b --draft deepseek-r1-distill-qwen-1.5b \\
        --out benchmarks/results/synthetic_gpu.json

Imports only what ``specmodel decode`` needs (torch, pydantic, numpy); the problems
are built in (no reasoning-gym).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from specmodel.formats.jsonio import timestamp
from specmodel.stats import track_interval

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

BUILTIN = {
    "bench-target": {"model_type": "qwen2", "hidden_size": 512, "intermediate_size": 1536,
                     "num_hidden_layers": 8, "num_attention_heads": 8,
                     "num_key_value_heads": 4, "vocab_size": 8192,
                     "tie_word_embeddings": True},
    "bench-draft": {"model_type": "qwen2", "hidden_size": 256, "intermediate_size": 768,
                    "num_hidden_layers": 2, "num_attention_heads": 4,
                    "num_key_value_heads": 2, "vocab_size": 8192,
                    "tie_word_embeddings": True},
    "bench-target-wide": {"model_type": "qwen2", "hidden_size": 1024,
                          "intermediate_size": 2816, "num_hidden_layers": 6,
                          "num_attention_heads": 16, "num_key_value_heads": 4,
                          "vocab_size": 8192, "tie_word_embeddings": True},
}
"""The CPU defaults: an 8-layer target (about 21 M weights) and a 2-layer draft; and a
wider, shallower target (6 layers of width 1024, about 75 M weights) for a shape the
cost model's CPU preset has not seen."""

QUESTIONS = [
    "A baker makes 48 rolls in the morning and 36 in the afternoon. He sells 70 of them. "
    "How many rolls are left?",
    "Mia reads 12 pages a day for 9 days and then 15 pages a day for 4 days. How many pages "
    "has she read?",
    "A train travels 180 km in 3 hours and then 120 km in 2 hours. What is its average speed?",
    "Tom buys 5 notebooks at 3 dollars each and 2 pens at 4 dollars each. He pays with a 50 "
    "dollar bill. How much change does he get?",
    "A garden has 6 rows of 14 tulips. A quarter of them are red. How many are not red?",
    "Sara saves 25 dollars a week. After 8 weeks she spends 60 dollars. How much is left?",
]


def _problems(n: int, prompt_words: int) -> list[Any]:
    from profiler.problems import Problem

    out = []
    for i in range(n):
        q = QUESTIONS[i % len(QUESTIONS)]
        if i >= len(QUESTIONS):  # a prompt of its own (the draws are functions of it)
            q = f"Problem {i}. {q}"
        if prompt_words > 0:  # a longer context: pad the question with filler words
            words = q.split()
            q = " ".join(words + [f"x{j}" for j in range(max(0, prompt_words - len(words)))])
        out.append(Problem(i, q, "nan", ""))  # synthetic text has no answer: never right
    return out


def _arch(name: str, tmp: Path) -> str:
    if name in BUILTIN:
        p = tmp / f"{name}.json"
        p.write_text(json.dumps(BUILTIN[name]))
        return str(p)
    return name


def _configs(a: argparse.Namespace) -> list[Any]:
    """The sweep: baseline, token-only, sync, async and both hybrids (and, with
    ``--continuous``, async and its hybrid with continuous target batching), judged by
    the synthetic verifier of ``--acceptance``."""
    from specmodel.config import SpecConfig

    common = {"max_steps": a.max_steps, "max_step_tokens": a.max_step_tokens,
              "verifier": {"kind": "synthetic", "model": a.acceptance}}
    k1, k2 = a.k1, a.k2
    out = [SpecConfig(**common),
           SpecConfig(k2=k2, **common),
           SpecConfig(mode="sync", k1=k1, **common),
           SpecConfig(mode="async", k1=k1, **common),
           SpecConfig(mode="sync", k1=k1, k2=k2, **common),
           SpecConfig(mode="async", k1=k1, k2=k2, **common)]
    if a.continuous:
        out += [SpecConfig(mode="async", k1=k1, target_batching="continuous", **common),
                SpecConfig(mode="async", k1=k1, k2=k2, target_batching="continuous",
                           **common)]
    if getattr(a, "only_async", False):  # the baseline and async (k2 = 1: no hybrid)
        out = [c for c in out if c.k1 == c.k2 == 1 or (c.mode == "async" and c.k1 > 1
                                                      and (k2 > 1 or c.k2 == 1))]
    return list({c.label: c for c in out}.values())


def build_parser() -> argparse.ArgumentParser:
    """The options of a sweep (and of what this benchmark reports on committed runs)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_device_arguments(ap)
    ap.add_argument("--target", default="bench-target",
                    help="architecture name or config.json (default: the built-in 8-layer)")
    ap.add_argument("--draft", default="bench-draft",
                    help="architecture name or config.json (default: the built-in 2-layer)")
    ap.add_argument("--acceptance", default="lr-paper-gsm8k-deepseek",
                    help="calibration file or preset the decisions are drawn from")
    ap.add_argument("--k1", type=int, default=3)
    ap.add_argument("--k2", type=int, default=3)
    ap.add_argument("--problems", type=int, default=3)
    ap.add_argument("--max-steps", type=int, default=12)
    ap.add_argument("--max-step-tokens", type=int, default=48)
    ap.add_argument("--prompt-words", type=int, default=0,
                    help="pad each question to this many words (a longer context)")
    ap.add_argument("--no-prefill", dest="prefill", action="store_false",
                    help="skip the prefill forwards of uncached prefix tokens (the papers' "
                         "model has none)")
    ap.add_argument("--continuous", action="store_true",
                    help="also run async and its hybrid with continuous target batching "
                         "(target_batching continuous)")
    ap.add_argument("--only-async", action="store_true",
                    help="run only the baseline and the async configurations (with "
                         "--continuous: call and continuous side by side; --k2 1: no hybrid)")
    ap.add_argument("--interleave", dest="interleave", action="store_true", default=True,
                    help="time each round problem by problem, every configuration on each "
                         "(a slow spell then falls on all of them alike; the default since "
                         "2026-11-28: seeds 36 and 37 ran it)")
    ap.add_argument("--by-configurations", dest="interleave", action="store_false",
                    help="time each configuration over every problem in turn, as every "
                         "sweep before seed 36 ran")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--profile-repeats", type=int, default=3,
                    help="timed forwards per verification/prefill point in each profiling "
                         "pass (4× for decode points); a pass runs before the rounds and "
                         "after each")
    ap.add_argument("--profile-sweeps", type=int, default=1,
                    help="passes over a profile's points its repeats are spread across (1 "
                         "to --profile-repeats; 1: each point's repeats back to back, as "
                         "every committed run timed them)")
    ap.add_argument("--threads", type=int, default=1, help="CPU threads per model")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--draws", default="position", choices=["position", "prefix"],
                    help="what keys a synthetic step's draws: position (the prompt and the "
                         "step's position: every configuration meets the same steps) or "
                         "prefix (the whole prefix, as runs before 2026-11-25 drew)")
    ap.add_argument("--out", default=None,
                    help="summary JSON (default: benchmarks/results/synthetic_<device>.json)")
    ap.add_argument("--predict-on", default=None, metavar="DEVICE",
                    help="run nothing: register the decoder model's predictions of this "
                         "sweep on a device preset (e.g. h100-sxm), its forwards priced by "
                         "the analytical cost model; writes OUT's name with "
                         ".registered.json")
    ap.add_argument("--predict-here", action="store_true",
                    help="decode nothing: build the engines on --device, take one profiling "
                         "pass (the one a run takes before its rounds) and register the "
                         "decoder model's predictions of this sweep priced by it; writes "
                         "OUT's name with .registered.json (--track-record: the band the "
                         "named runs' errors on their own profiles give)")
    ap.add_argument("--here-passes", type=int, default=1, metavar="N",
                    help="with --predict-here: take N profiling passes, --here-gap-s apart, "
                         "and register from them merged (as a run merges its passes; "
                         "default 1)")
    ap.add_argument("--here-gap-s", type=float, default=0.0, metavar="S",
                    help="with --predict-here --here-passes N > 1: seconds to wait, idle, "
                         "between one pass and the next (default 0)")
    ap.add_argument("--register-first-pass", action="store_true",
                    help="a run also registers the decoder model's predictions priced by "
                         "its first profiling pass alone (what --predict-here registers), "
                         "written to OUT's name with _first_pass.registered.json before "
                         "round 1 decodes, and holds its rounds against them beside "
                         "--registered's (--track-record: their band as --predict-here's)")
    ap.add_argument("--drawn", action="store_true",
                    help="with --predict-on or --predict-here: the decoder model decodes the "
                         "sweep's own draws (its problems' step lengths, passes and verdicts "
                         "as the engines will draw them from --seed, --draws position) "
                         "instead of fresh draws from the laws: a prediction of this sample, "
                         "not of the laws' expectation")
    ap.add_argument("--placement", default=None, choices=["one-device", "two-devices"],
                    help="with --predict-on: draft and target share the device (their "
                         "forwards contend; default on a GPU) or each has its own (default "
                         "on a CPU, where each model runs on its own core)")
    ap.add_argument("--concurrent", type=float, default=None, metavar="X",
                    help="with --predict-on: the target's and draft's slowdown beside each "
                         "other, measured apart before registering (default: from "
                         "--placement, 1 on two devices)")
    ap.add_argument("--concurrent-draft", type=float, default=None, metavar="X",
                    help="with --predict-on: the draft's slowdown beside the target where "
                         "it differs from --concurrent's (e.g. the in-run slowdown "
                         "--in-run-contention reads from earlier runs)")
    ap.add_argument("--track-record", type=Path, nargs="+", default=None, metavar="RUN",
                    help="committed sweeps held against registrations (summary JSON): with "
                         "--predict-on, the registration also carries the band their "
                         "rounds' errors give (decoder_track_interval); alone, run nothing "
                         "and check that band on each of them, made from the others")
    ap.add_argument("--track-basis", default=None, choices=TRACK_BASES,
                    help="the errors a --track-record band is made of: the runs' against "
                         "their registrations priced by a device preset (registered; the "
                         "default alone and the only one for --predict-on), the decoder "
                         "model's on the runs' own profiling passes (profiles; the default "
                         "for --predict-here and --register-first-pass) or the runs' "
                         "against their registrations priced by a profiling pass measured "
                         "before them (measured)")
    ap.add_argument("--in-run-contention", type=Path, nargs="+", default=None,
                    metavar="RUN",
                    help="run nothing: print the step draft's in-run slowdown in committed "
                         "run records (ROUND.run.json): its seconds per draft step in each "
                         "async configuration over the mean in the sync ones")
    ap.add_argument("--forward-prices", type=Path, nargs="+", default=None, metavar="RUN",
                    help="run nothing: the target's forwards of each run record "
                         "(ROUND.run.json) over its decode step T(1), from the profiling "
                         "passes written into it, beside the CPU preset's ratios")
    ap.add_argument("--row-times", type=Path, nargs="+", default=None, metavar="RUN",
                    help="run nothing: for each committed sweep (summary JSON) and each "
                         "registration it was held against, every row's measured time per "
                         "token over the registration's price by round, its speedup errors, "
                         "and those errors with the target alone priced as it ran")
    ap.add_argument("--registered", type=Path, nargs="+", default=None, metavar="REG",
                    help="registrations (--predict-on, --predict-here) to hold the "
                         "measured speedups against as well (the first is the run's "
                         "registration; the others are reported beside it)")
    ap.add_argument("--passes-of", type=Path, nargs=2, default=None,
                    metavar=("REG", "RUN"),
                    help="run nothing: the registration REG measured here (--predict-here, "
                         "its --here-passes kept) priced again by each pass alone and "
                         "merged, held against the run RUN (summary JSON)")
    ap.add_argument("--coverage", type=Path, nargs="+", default=None, metavar="RUN",
                    help="run nothing: how many measured rounds of these committed runs "
                         "(held against a registration) fell inside the registered 95 %% "
                         "band of a run of that many problems, by run and pooled")
    return ap


def profile_sweeps_error(a: argparse.Namespace) -> str | None:
    """What is wrong with ``a``'s ``--profile-sweeps`` (1 to ``--profile-repeats``), or
    None."""
    if 1 <= a.profile_sweeps <= a.profile_repeats:
        return None
    return (f"--profile-sweeps must be between 1 and --profile-repeats "
            f"({a.profile_repeats}), got {a.profile_sweeps}")


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    a = ap.parse_args(argv)
    if a.register_first_pass and (a.predict_on or a.predict_here):
        ap.error("--register-first-pass registers during a run: not with "
                 + ("--predict-on" if a.predict_on else "--predict-here"))
    if a.drawn and not (a.predict_on or a.predict_here):
        ap.error("--drawn needs --predict-on or --predict-here")
    if a.drawn and a.draws != "position":
        ap.error(f"--drawn needs --draws position (a prefix-keyed step depends on the "
                 f"whole decode), got --draws {a.draws}")
    if a.predict_here and (a.predict_on or a.registered):
        ap.error("--predict-here registers from this device's measured prices: not with "
                 + ("--predict-on" if a.predict_on else "--registered"))
    registering = a.predict_on or a.predict_here or a.register_first_pass
    measuring = a.predict_here or a.register_first_pass
    if a.track_basis is None:
        a.track_basis = "profiles" if measuring else "registered"
    elif registering and (a.track_basis == "registered") == bool(measuring):
        ap.error(f"--track-basis {a.track_basis}: "
                 + ("a registration priced by a measured profiling pass takes its band from "
                    "measured prices (profiles or measured)" if measuring else
                    "a --predict-on registration takes its band from runs registered from "
                    "a preset (registered)"))
    for paths, report in ((a.coverage, print_coverage),
                          (a.passes_of, print_registration_passes),
                          (a.in_run_contention, print_in_run_contention),
                          (a.forward_prices, print_forward_prices),
                          (a.row_times, print_row_times),
                          (None if registering else a.track_record,
                           lambda p: print_track_record(p, a.track_basis))):
        if paths:  # a report on committed files: nothing runs
            try:
                report(paths)
            except ValueError as e:
                print(f"error: {e}", file=sys.stderr)
                return 2
            return 0
    for flag, v in (("--concurrent", a.concurrent), ("--concurrent-draft", a.concurrent_draft)):
        if v is not None and not (a.predict_on and 1 <= v < float("inf")):
            ap.error(f"{flag} must be a number >= 1, with --predict-on; got {v}"
                     + ("" if a.predict_on else " without --predict-on"))
    if (bad := profile_sweeps_error(a)) is not None:
        ap.error(bad)
    if a.here_passes < 1 or not 0 <= a.here_gap_s < float("inf"):
        ap.error(f"--here-passes must be >= 1 (got {a.here_passes}) and --here-gap-s a "
                 f"number of seconds >= 0 (got {a.here_gap_s})")
    if (a.here_passes != 1 or a.here_gap_s) and not a.predict_here:
        ap.error("--here-passes and --here-gap-s are for --predict-here: a run takes its "
                 "passes before and after its rounds")
    if a.placement is not None and not a.predict_on:
        ap.error("--placement is for --predict-on: a run, and what --predict-here and "
                 "--register-first-pass measure, have the engines where --device puts them")
    if a.placement is None:  # a measured CPU run: each model on its own core
        a.placement = ("two-devices" if (a.predict_on or "").startswith("cpu") or (
            not a.predict_on and a.device == "cpu") else "one-device")
    dtype = run_dtype(a)
    out = Path(a.out or ROOT / "benchmarks" / "results" / f"synthetic_{a.device}.json")
    try:
        if a.predict_on or a.predict_here:
            path = out.with_name(f"{out.stem}.registered.json")
            if path.exists():
                raise ValueError(f"{path} exists: a registration is never overwritten "
                                 "(choose another --out)")
            reg = register(a, dtype)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(reg, indent=1) + "\n", encoding="utf-8")
            print(f"wrote {path}")
            return 0
        summary = run(a, dtype, out)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return 0


def _settings(a: argparse.Namespace, acc: Any, prompt_tokens: list[int],
              configs: list[Any], target: str, draft: str, target_t1: float
              ) -> tuple[Any, Any]:
    """(the run's synthetic-acceptance settings, its step verifier priced by the
    target's decode forward ``target_t1``)."""
    from profiler.engines.synthetic import StepLengths, TokenAcceptance, architectures
    from profiler.verifiers import SyntheticVerifier
    from specmodel.formats.run_record import SyntheticAcceptance
    from specmodel.hardware.predicted import DEFAULT_CONTEXT_BUCKET

    lengths = StepLengths.from_step(acc.step)
    ver = SyntheticVerifier(acc, source=a.acceptance, seed=a.seed)
    ver.price(lengths.mean * target_t1)
    syn = SyntheticAcceptance(
        acceptance=a.acceptance, calibration=acc.name,
        step_acceptance=ver.acceptance.source, verifier_cost=ver.cost,
        verifier_pair_seconds=ver.pair_seconds, seed=a.seed, draws=a.draws,
        prompt_tokens=round(sum(prompt_tokens) / len(prompt_tokens)),
        architectures=architectures(target, draft, configs),
        step_lengths=lengths.source,
        token_acceptance=TokenAcceptance.from_token(acc.token).source,
        context_bucket=DEFAULT_CONTEXT_BUCKET, prefill=a.prefill,
        execution=("predicted" if a.predict_on else
                   "cuda graphs" if a.device == "cuda" else "eager"))
    return syn, ver


def sweep_draws(acc: Any, *, seed: int, problems: int, prompt_words: int, target: str,
                draft: str, max_steps: int, max_step_tokens: int, configs: list[Any]
                ) -> Any:
    """The draws the sweep's engines (position draws, seed ``seed``) will meet on its
    ``problems`` prompts (:func:`profiler.engines.synthetic.position_draws`), with the
    passes of every token-speculation depth ``configs`` use; nothing runs."""
    from profiler.engines.synthetic import position_draws
    from profiler.problems import format_prompt

    return position_draws(acc, seed=seed, target=target, draft=draft,
                          prompts=[format_prompt(p) for p in _problems(problems,
                                                                       prompt_words)],
                          steps=max_steps, cap=max_step_tokens,
                          gammas=sorted({c.k2 - 1 for c in configs if c.k2 > 1}))


PASS_DISAGREEMENT = 0.20
"""How far apart (largest over smallest speedup, less one) a registration's profiling
passes may price a configuration before :func:`registration_of` says so: two passes
that far apart cannot tell which is off, and a third lets the merged median reject one.
Chosen in-sample on the two-pass registrations of seeds 37-41: 8-16 % apart where the
merged registration came within 7 %, 29 % on seed 41, where one pass's one-sequence
decodes were hit by a slow spell and the registration missed by 18.9 %."""

COST_DRAWS = 16
"""Draws of the cost model's error behind a registration's cost band."""
COST_DRAW_PROBLEMS = 100
"""Problems simulated per configuration in each of those draws."""


def cost_error_sd(device: str) -> tuple[float, str]:
    """(the relative standard deviation of a forward's price error on ``device``'s cost
    preset, the preset's name): its held-out median |relative error| ("held out, all
    kinds", else the median of its held-out sets' medians) over 0.6745, a normal's median
    |x| in standard deviations."""
    from specmodel.hardware.costmodel import load_coefficients, preset_for_device

    name = preset_for_device(device) or "h100-sxm-graph"
    held = load_coefficients(name)[2].get("held_out_error") or {}
    if not held:
        raise ValueError(f"the cost preset {name} records no held-out error")
    med = (held["held out, all kinds"]["median_abs"] if "held out, all kinds" in held
           else statistics.median(v["median_abs"] for v in held.values()))
    return float(med) / 0.6745, name


def perturbed(profiles: list[Any], rng: Any, sd: float) -> list[Any]:
    """``profiles`` (:class:`~specmodel.formats.hardware.HardwareProfile`) with every timed
    point's times multiplied by one log-normal factor (log standard deviation ``sd``) per
    profile and kind of forward (decode, verify, prefill), drawn independently: the cost
    model's error as a systematic error of each predicted surface."""
    out = []
    for prof in profiles:
        f = {k: float(rng.lognormal(0.0, sd)) for k in ("decode", "verify", "prefill")}
        out.append(prof.scaled(lambda _, p, f=f: f[p.kind]))
    return out


def _priced_on_preset(a: argparse.Namespace, dtype: str, configs: list[Any]
                      ) -> dict[str, Any]:
    """The prices of every forward the sweep can take on the device preset
    ``a.predict_on``, from the analytical cost model, nothing run: the hardware profiles
    (:func:`profiler.engines.synthetic.predicted_profiles`), the calibration's scalar
    costs, the prompts' lengths, the architectures' config files, the model's source."""
    from profiler.engines.synthetic import cost_point, scalar_costs
    from profiler.problems import format_prompt
    from specmodel.hardware.costmodel import Workload, predict_seconds, resolve_coefficients
    from specmodel.hardware.predicted import (
        DEFAULT_CONTEXT_BUCKET,
        bucket,
        predicted_profiles,
    )
    from specmodel.hardware.shape import load_shape

    tmp = Path(tempfile.mkdtemp(prefix="bench-synthetic-"))
    target, draft = _arch(a.target, tmp), _arch(a.draft, tmp)
    lengths = [len(format_prompt(p).split()) for p in _problems(a.problems, a.prompt_words)]
    prompt = max(lengths)
    hardware = predicted_profiles(target, draft, configs, prompt, device=a.predict_on,
                                  dtype=dtype, context_bucket=DEFAULT_CONTEXT_BUCKET,
                                  prefill=a.prefill, placement=a.placement,
                                  concurrent=a.concurrent,
                                  concurrent_draft=a.concurrent_draft)
    # the calibration's scalar costs (c1, c2, T(b)) where prepare_run times them, predicted
    coef, _, _, source = resolve_coefficients(a.predict_on)
    tshape, dshape = load_shape(target), load_shape(draft)
    context, widest, k2 = cost_point(configs, prompt)
    mid = bucket(context, DEFAULT_CONTEXT_BUCKET)

    def t(shape: Any, b: int, q: int = 1) -> float:
        return predict_seconds(shape, Workload(b, q, mid), coef, dtype)

    T = {b: t(tshape, b) for b in range(1, widest + 1)}
    costs = scalar_costs(T, t(dshape, 1), context=mid, k2=k2,
                         V=t(tshape, 1, k2) if k2 > 1 else None)  # n-gram drafter: free
    return {"hardware": hardware, "costs": costs,
            "lengths": lengths, "target": target, "draft": draft, "source": source,
            "device": a.predict_on, "priced_by": "preset", "measured_on": None}


def _priced_here(a: argparse.Namespace, dtype: str, configs: list[Any],
                 described: dict[str, Any]) -> dict[str, Any]:
    """The prices of every forward the sweep can take, measured now on ``a.device``: the
    engines built and prepared as a run builds them (:func:`profiler.engines.synthetic.
    prepare_run`), then one profiling pass (:func:`profiler`, the pass a run takes before
    its rounds, on fresh random-weight decoders); no round decoded. ``described``: the
    device (:func:`profiler.hardware.device_description`). The same fields as
    :func:`_priced_on_preset`."""
    from profiler.engines.synthetic import prepare_run
    from profiler.problems import format_prompt

    _, (target, tgt), (draft, drf) = engines(a, dtype)
    lengths = [tgt.count_tokens(format_prompt(p))
               for p in _problems(a.problems, a.prompt_words)]
    prompt = max(lengths)
    print(f"measuring the prices here: {a.target} / {a.draft} on {a.device} {dtype}, "
          f"prompt {prompt} tokens ...", flush=True)
    costs = prepare_run(tgt, drf, configs, prompt)
    profile, how = profiler(a, tgt, drf, configs, prompt)
    passes, times = [], []
    for i in range(a.here_passes):
        if i:
            print(f"waiting {a.here_gap_s:g} s before pass {i + 1} ...", flush=True)
            time.sleep(a.here_gap_s)
        passes.append(profile())
        times.append(timestamp())
    if len(passes) == 1:
        hardware, what = passes[0], f"one profiling pass on {described['name']} at {times[0]}"
    else:
        from profiler.engines.synthetic import merge_profiles

        hardware = merge_profiles(passes)
        what = (f"{len(passes)} profiling passes on {described['name']}, {a.here_gap_s:g} s "
                f"apart, merged (ended at {', '.join(times)})")
    priced = measured_prices(a, described, hardware, costs, lengths, target, draft, what, how)
    return priced if len(passes) == 1 else {**priced, "passes": passes}


def measured_prices(a: argparse.Namespace, described: dict[str, Any], hardware: list[Any],
                    costs: dict[str, Any], lengths: list[int], target: str, draft: str,
                    what: str, how: str) -> dict[str, Any]:
    """The fields of :func:`_priced_on_preset` for prices measured on the device
    ``described``: its profiling pass ``hardware`` (``what`` it was, ``how`` it timed the
    contention), the scalar ``costs`` :func:`profiler.engines.synthetic.prepare_run`
    timed, the prompts' ``lengths`` in tokens, the architectures' config files."""
    return {"hardware": hardware, "costs": costs, "lengths": lengths, "target": target,
            "draft": draft, "device": here_device(a.device, described),
            "source": f"{what} (contention: {how}), {a.profile_repeats} repeats per point"
                      + ("" if a.profile_sweeps == 1 else
                         f" in {a.profile_sweeps} sweeps"),
            "priced_by": "profile", "measured_on": described}


def register(a: argparse.Namespace, dtype: str) -> dict[str, Any]:
    """The decoder model's predictions of the sweep, made before it runs: every forward
    the run can take priced by the analytical cost model on the device preset
    ``a.predict_on`` (:func:`_priced_on_preset`, nothing run), or with
    ``a.predict_here`` by one profiling pass on this device (:func:`_priced_here`, no
    round decoded)."""
    from profiler.engines.synthetic import load_acceptance

    # every source of error at once, as past rounds showed it (read first: a bad file
    # fails before the predictions are made)
    here = a.predict_here
    described = None
    if here:
        from profiler.hardware import device_description
        described = device_description(a.device, a.threads)
    device = a.predict_on if not here else here_device(a.device, described)
    track = (None if not a.track_record else
             track_record(a.track_record, device=device, problems=a.problems,
                          basis=a.track_basis))
    acc = load_acceptance(a.acceptance)
    configs = _configs(a)
    priced = (_priced_here(a, dtype, configs, described) if here else
              _priced_on_preset(a, dtype, configs))
    return registration_of(a, dtype, acc, configs, priced, track)


def registration_of(a: argparse.Namespace, dtype: str, acc: Any, configs: list[Any],
                    priced: dict[str, Any], track: dict[str, Any] | None
                    ) -> dict[str, Any]:
    """The registration of the sweep ``a`` (its ``configs``, the acceptance calibration
    ``acc``) priced by ``priced`` (:func:`_priced_on_preset` or :func:`_priced_here`'s
    fields): each configuration's decoder-model speedup with its sample band, for a
    preset its cost band, with ``track`` (:func:`track_record`) its track-record band."""
    from benchmarks.harness import git_commit, registered_row
    from profiler.engines.synthetic import with_costs
    from specmodel.prediction import decoder_prediction

    here, device = priced["priced_by"] == "profile", priced["device"]
    hardware, costs, lengths = priced["hardware"], priced["costs"], priced["lengths"]
    target, draft, source, T = priced["target"], priced["draft"], priced["source"], \
        costs["T"]
    syn, ver = _settings(a, acc, lengths, configs, target, draft, T[1])
    models = {"target": a.target, "draft": a.draft, "verifier": ver.name}
    what = (f"{a.target} / {a.draft} " + ("measured" if here else "predicted")
            + f" on {device} {dtype}")

    def cal_of(hardware: list[Any]) -> Any:
        return with_costs(acc, costs, what, models, hardware)

    sample = None if not getattr(a, "drawn", False) else sweep_draws(
        acc, seed=a.seed, problems=a.problems, prompt_words=a.prompt_words, target=target,
        draft=draft, max_steps=a.max_steps, max_step_tokens=a.max_step_tokens,
        configs=configs)
    cal = cal_of(hardware)
    rows = []
    for cfg in configs:
        got = decoder_prediction(cal, cfg, synthetic=syn, sample_problems=a.problems,
                                 sample=sample)
        rows.append(registered_row(cfg, got))
        if sample is not None:  # the laws' prediction from the same prices, beside it
            law = decoder_prediction(cal, cfg, synthetic=syn, sample_problems=a.problems)
            rows[-1]["predicted_decoder_law"] = None if law is None else law.speedup
    # with several passes, each alone: how far apart they price the sweep
    disagreement = None if "passes" not in priced else pass_disagreement(
        rows, [cal_of(p) for p in priced["passes"]], configs, syn, a.problems, sample)
    # the cost model's error (measured prices have none: their drift shows in the track
    # record)
    band = None if here else cost_band(a, cal_of=cal_of, hardware=hardware, syn=syn,
                                       configs=configs, rows=rows, sample=sample)
    if track is not None:
        for r in rows:
            if r["predicted_decoder"] is not None:
                r["decoder_track_interval"] = track_interval(r["predicted_decoder"],
                                                             track["quantile_log"])
    print(f"registered: {a.target} / {a.draft} on {device} ({a.placement}) {dtype}, "
          f"{source}; T(1) {T[1] * 1e3:.2f} ms, c1 {costs['c1']:.3f}"
          + ("" if sample is None else f"; on the sweep's own draws ({sample.source})"))
    for r in rows:
        iv, ms = r["decoder_interval"], r["decoder_ms_per_token"] or {}
        cb, tb = r.get("decoder_cost_interval"), r.get("decoder_track_interval")
        print(f"  {r['config']:<18} {r['predicted_decoder'] or 0:.3f}"
              + ("" if iv is None else f"  [{iv[0]:.3f}, {iv[1]:.3f}]")
              + ("" if cb is None else f"  with the costs' error [{cb[0]:.3f}, {cb[1]:.3f}]")
              + ("" if tb is None else f"  track record [{tb[0]:.3f}, {tb[1]:.3f}]")
              + "  ms/token " + ", ".join(f"{k} {v:.2f}" for k, v in ms.items()))
    if disagreement is not None:
        n, worst = len(priced["passes"]), disagreement["ratio"] - 1
        print(f"the {n} passes alone: at most {worst:.1%} apart "
              f"({disagreement['config']})"
              + ("" if worst <= PASS_DISAGREEMENT else
                 f"; more than {PASS_DISAGREEMENT:.0%}: "
                 + ("two passes cannot say which is off, and their merged median is "
                    "their mean (--here-passes 3 lets it reject one)" if n == 2 else
                    f"the merged median of {n} rejects one pass's outlying points")),
              flush=True)
    return {"registered": timestamp(), "commit": git_commit(), "device": device,
            "priced_by": priced["priced_by"], "measured_on": priced["measured_on"],
            "placement": a.placement, "dtype": dtype, "cost_model": source,
            "concurrent": hardware[0].concurrent.get(hardware[1].architecture.name)
            if len(hardware) > 1 else None,
            "concurrent_draft": hardware[1].concurrent.get(hardware[0].architecture.name)
            if len(hardware) > 1 else None,
            "target": a.target, "draft": a.draft, "acceptance": a.acceptance,
            "problems": a.problems, "seed": a.seed, "draws": a.draws,
            "max_steps": a.max_steps,
            "max_step_tokens": a.max_step_tokens, "k1": a.k1, "k2": a.k2,
            "prompt_tokens": syn.prompt_tokens, "prompt_words": a.prompt_words,
            "prefill": a.prefill, "continuous": a.continuous,
            "drawn": None if sample is None else sample.source,
            "costs": {"context": costs["context"],
                      "T_ms": {str(b): v * 1e3 for b, v in T.items()},
                      "draft_T1_ms": costs["draft_T1"] * 1e3, "c1": costs["c1"],
                      "c2": costs["c2"]},
            "speedup_over": "the target alone, same problems",
            **({} if band is None else {"cost_band": band}),
            **({} if track is None else {"track_band": track}),
            **({"hardware": [h.model_dump(mode="json") for h in hardware]} if here else {}),
            **({"hardware_by_pass": [[h.model_dump(mode="json") for h in p]
                                     for p in priced["passes"]]}
               if "passes" in priced else {}),
            **({} if disagreement is None else {"pass_disagreement": disagreement}),
            "rows": rows}


def pass_disagreement(rows: list[dict[str, Any]], cals: list[Any], configs: list[Any],
                      syn: Any, problems: int, sample: Any = None) -> dict[str, Any]:
    """Each configuration's decoder-model speedup priced by each profiling pass alone
    (``cals``: one calibration per pass; ``sample``: the sweep's own draws, or None),
    written into ``rows`` as ``predicted_by_pass``; returns the configuration the passes
    price furthest apart and that ``ratio`` (largest over smallest speedup)."""
    from specmodel.prediction import decoder_prediction

    worst: dict[str, Any] = {"config": None, "ratio": 1.0}
    by_label = {r["config"]: r for r in rows}
    for cfg in configs:
        got = [decoder_prediction(cal, cfg, synthetic=syn, sample_problems=problems,
                                  sample=sample) for cal in cals]
        speedups = [None if g is None else g.speedup for g in got]
        by_label[cfg.label]["predicted_by_pass"] = speedups
        known = [v for v in speedups if v]
        if len(known) > 1 and max(known) / min(known) > worst["ratio"]:
            worst = {"config": cfg.label, "ratio": max(known) / min(known)}
    return worst


def cost_band(a: argparse.Namespace, *, cal_of: Any, hardware: list[Any], syn: Any,
              configs: list[Any], rows: list[dict[str, Any]], sample: Any = None
              ) -> dict[str, Any]:
    """The cost band of a registration on the device preset ``a.predict_on``: the same
    predictions with every predicted surface of ``hardware`` drawn off by the preset's
    held-out error (``cal_of``: the calibration priced by given profiles), the spread
    added to each row's sample band (``rows`` gain ``cost_spread`` and
    ``decoder_cost_interval``; ``sample``: the sweep's own draws, or None); returns what
    the band is."""
    import numpy as np

    from specmodel.prediction import decoder_prediction

    sd, preset = cost_error_sd(a.predict_on)
    rng = np.random.default_rng(a.seed)
    drawn: dict[str, list[float]] = {cfg.label: [] for cfg in configs}
    for _ in range(COST_DRAWS):
        cal_d = cal_of(perturbed(hardware, rng, sd))
        for cfg in configs:
            got = decoder_prediction(cal_d, cfg, synthetic=syn, problems=COST_DRAW_PROBLEMS,
                                     draws=1, sample=sample)
            if got is not None:
                drawn[cfg.label].append(got.speedup)
    for r in rows:
        vals, band, point = drawn[r["config"]], r["decoder_sample_interval"], \
            r["predicted_decoder"]
        if point is None or band is None or len(vals) < 2:
            continue
        spread = statistics.stdev(vals)
        half = ((band[1] - band[0]) ** 2 / 4 + (1.96 * spread) ** 2) ** 0.5
        r.update(cost_spread=spread, decoder_cost_interval=[point - half, point + half])
    return {"preset": preset, "relative_sd": sd, "draws": COST_DRAWS,
            "problems_per_draw": COST_DRAW_PROBLEMS, "covers": COST_BAND_COVERS}


def here_device(device: str, described: dict[str, Any]) -> str:
    """The device a registration measured here names: the preset of the device
    ``described`` (:func:`profiler.hardware.device_description`; see
    :func:`specmodel.hardware.predicted.preset_of`), else its own name."""
    from specmodel.hardware.predicted import preset_of

    return (preset_of("cpu" if device == "cpu" else "cuda", described["name"])
            or described["name"])


REGISTERED_KEYS = ("target", "draft", "acceptance", "problems", "seed", "max_steps",
                   "max_step_tokens", "k1", "k2", "prefill", "prompt_words", "continuous")
"""What a registration (--predict-on) must share with the run held against it."""


def registration(a: argparse.Namespace, path: Path) -> dict[str, Any]:
    """A registration written by ``--predict-on``, checked to be of this sweep's settings:
    its fields and ``predictions`` (configuration -> the decoder model's speedup)."""
    try:
        reg = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ValueError(f"--registered {path}: cannot read it ({e})") from e
    reg.setdefault("prompt_words", 0)  # registrations before it was recorded: none
    reg.setdefault("continuous", False)  # nor continuous configurations
    differ = {k: (reg.get(k), getattr(a, k)) for k in REGISTERED_KEYS
              if reg.get(k) != getattr(a, k)}
    if differ:
        raise ValueError(f"--registered {path}: registered for other settings "
                         f"(registered, now): {differ}")
    print(f"registered predictions: {path.name}, written {reg['registered']} at commit "
          f"{(reg.get('commit') or '?')[:7]} on {reg['device']} ({reg['placement']})",
          flush=True)
    return with_predictions(reg)


def with_predictions(reg: dict[str, Any]) -> dict[str, Any]:
    """A registration's fields and ``predictions`` (configuration -> the decoder model's
    speedup)."""
    return {**reg, "predictions": {r["config"]: r["predicted_decoder"] for r in reg["rows"]
                                   if r["predicted_decoder"] is not None}}


RENAMED_PRESETS = {"cpu-this": "cpu-epyc"}
"""Device presets registrations were made on under a name since changed (old: new)."""


def check_registered_device(reg: dict[str, Any], path: Path, device: str,
                            description: dict[str, Any]) -> None:
    """Refuse to hold a run on ``device`` (its ``description``, as
    :func:`profiler.hardware.device_description` gives it) against a registration made for
    another device preset: an H200 run against an H100 registration, a Xeon against the
    EPYC's."""
    from specmodel.hardware.predicted import preset_of

    here = preset_of("cpu" if device == "cpu" else "cuda", description["name"])
    there = RENAMED_PRESETS.get(reg["device"], reg["device"])
    if there != (here or description["name"]):  # a device without a preset: its name
        raise ValueError(f"--registered {path}: registered on {there}, but this run's "
                         f"device is {description['name']} "
                         f"({'preset ' + here if here else 'no preset'}): hold the run "
                         "against a registration made for its own device")


def engines(a: argparse.Namespace, dtype: str) -> tuple[Any, tuple[str, Any],
                                                       tuple[str, Any]]:
    """(the acceptance calibration, (target architecture, its synthetic engine), (draft
    architecture, its engine)) of ``a``'s ``--target``, ``--draft``, ``--acceptance``,
    ``--seed``, ``--draws``, ``--prefill``, ``--device`` and ``--threads``."""
    from profiler.engines import make_engine
    from profiler.engines.synthetic import load_acceptance

    acc = load_acceptance(a.acceptance)
    tmp = Path(tempfile.mkdtemp(prefix="bench-synthetic-"))
    where = {"threads": a.threads, "device": a.device, "dtype": dtype}
    built = []
    for role, name in (("target", a.target), ("draft", a.draft)):
        arch = _arch(name, tmp)
        built.append((arch, make_engine("synthetic", arch, **where, options={
            "acceptance": acc, "role": role, "seed": a.seed, "prefill": a.prefill,
            "draws": a.draws})))
    return acc, built[0], built[1]


def add_device_arguments(ap: argparse.ArgumentParser) -> None:
    """The options of where a synthetic run's engines run and how its profiles time the
    two models' contention: ``--device``, ``--dtype``, ``--contention-eager``."""
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                    help="where both engines run (on CUDA every forward is a captured "
                         "graph's replay)")
    ap.add_argument("--dtype", default=None,
                    help="float32, bfloat16 or float16 (default: float32 on cpu, bfloat16 "
                         "on cuda)")
    ap.add_argument("--contention-eager", action="store_true",
                    help="on CUDA: measure the two models' contention on eager forwards "
                         "timed to the device's completion (as the runs of 2026-11-27 did) "
                         "instead of graph replays on their own streams")


def run_dtype(a: argparse.Namespace) -> str:
    """``a.dtype``, or its default: bfloat16 on CUDA or predicted on a GPU preset
    (``a.predict_on``), float32 on a CPU."""
    return a.dtype or ("bfloat16" if a.device == "cuda" or (
        a.predict_on and not a.predict_on.startswith("cpu")) else "float32")


def profiler(a: argparse.Namespace, tgt: Any, drf: Any, configs: list[Any],
             prompt: int) -> tuple[Any, str]:
    """(the profiling pass a run takes before and after its rounds, how it times the two
    models' contention in words): :func:`profiler.engines.synthetic.profile_costs` with
    ``a``'s ``--profile-repeats`` and ``--profile-sweeps``, the contention on CUDA timed
    on captured graphs each on its own stream unless ``--contention-eager``."""
    from profiler.engines.synthetic import profile_costs

    graphs = a.device == "cuda" and not a.contention_eager

    def profile() -> list[Any]:
        return profile_costs(tgt, drf, configs, prompt, repeats=a.profile_repeats,
                             sweeps=a.profile_sweeps,
                             progress=lambda m: print("  " + m, flush=True),
                             contention_graphs=graphs)

    return profile, ("captured graphs, each side timed to its own stream" if graphs else
                     "eager, timed to the device's completion")


def run(a: argparse.Namespace, dtype: str, out: Path) -> dict[str, Any]:
    from profiler.engines.synthetic import (
        merge_profiles,
        prepare_run,
        with_costs,
    )
    from profiler.environment import machine_description, package_versions
    from profiler.problems import format_prompt
    from profiler.runs import run_configurations
    from specmodel.formats.jsonio import write_json_atomic
    from specmodel.formats.run_record import RunSettings
    from specmodel.prediction import (
        busy_over_price,
        compare,
        decoder_prediction,
        decoder_time_split,
        split_of,
    )

    regs = [(path, registration(a, path)) for path in a.registered or []]
    if regs or a.register_first_pass:
        from profiler.hardware import device_description
        described = device_description(a.device, a.threads)
    for path, got in regs:
        check_registered_device(got, path, a.device, described)
    first_pass = None
    if a.register_first_pass:  # refused before anything is built
        first_pass = out.with_name(f"{out.stem}_first_pass.registered.json")
        if first_pass.exists():
            raise ValueError(f"{first_pass} exists: a registration is never overwritten "
                             "(choose another --out)")
        track = (None if not a.track_record else track_record(
            a.track_record, device=here_device(a.device, described), problems=a.problems,
            basis=a.track_basis))
    configs = _configs(a)
    problems = _problems(a.problems, a.prompt_words)
    t0 = time.perf_counter()
    acc, (target, tgt), (draft, drf) = engines(a, dtype)
    build_s = time.perf_counter() - t0
    lengths = [tgt.count_tokens(format_prompt(p)) for p in problems]
    prompt = max(lengths)
    print(f"built {a.target} and {a.draft} on {a.device} {dtype} in {build_s:.1f} s; "
          f"preparing forwards (prompt {prompt} tokens) ...", flush=True)
    costs = prepare_run(tgt, drf, configs, prompt)
    syn, ver = _settings(a, acc, lengths, configs, target, draft, costs["T"][1])
    models = {"target": a.target, "draft": a.draft, "verifier": ver.name}

    def cal_for(hardware: list[Any]) -> Any:
        """The acceptance calibration priced by the profiles ``hardware``."""
        return with_costs(acc, costs, f"{a.target} / {a.draft} on {a.device} {dtype}",
                          models, hardware)

    t1 = time.perf_counter()

    profile, contention_forwards = profiler(a, tgt, drf, configs, prompt)
    passes = [profile()]
    hardware = passes[0]
    profile_s = time.perf_counter() - t1
    if first_pass is not None:  # registered from the first pass before any round decodes
        priced = measured_prices(a, described, hardware, costs, lengths, target, draft,
                                 f"the run's first profiling pass on {described['name']}",
                                 contention_forwards)
        doc = registration_of(a, dtype, acc, configs, priced, track)
        first_pass.parent.mkdir(parents=True, exist_ok=True)
        first_pass.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {first_pass} before round 1", flush=True)
        regs.append((first_pass, with_predictions(doc)))
    reg = regs[0][1] if regs else None
    cal = cal_for(hardware)
    print(f"prepared in {costs['prepare_seconds']:.1f} s: T(1) {costs['T'][1] * 1e3:.2f} ms, "
          f"c1 {costs['c1']:.3f}, c2 {costs['c2'] or 0.0:.3f}", flush=True)
    settings = RunSettings(problems=a.problems, seed=a.seed, threads=a.threads,
                           engine="synthetic", max_steps=a.max_steps,
                           max_step_tokens=a.max_step_tokens, device=a.device, dtype=dtype,
                           synthetic=syn)
    records = []
    for r in range(a.rounds):
        order = configs if r % 2 == 0 else configs[::-1]
        path = out.with_name(f"{out.stem}_round{r + 1}.run.json")
        path.unlink(missing_ok=True)

        def show(done: int, total: int, msg: str, r: int = r) -> None:
            print(f"  round {r + 1} [{done}/{total}] {msg}", flush=True)

        rec = run_configurations(tgt, drf, ver, order, problems, path, models=models,
                                 settings=settings, calibration=cal, include_baseline=True,
                                 progress=show, interleave=a.interleave)
        records.append((path, rec))
        t1 = time.perf_counter()
        passes.append(profile())  # after every round: the machine's state drifts
        profile_s += time.perf_counter() - t1
    # the decoder model's costs: every profiling pass (before, between and after the
    # rounds; none of them the decode run), merged; written into every round's record
    hardware = merge_profiles(passes)
    cal = cal_for(hardware)
    for i, (path, rec) in enumerate(records):
        rec = rec.model_copy(update={"calibration": cal})
        write_json_atomic(rec, path)
        records[i] = (path, rec)
    # each round priced by the passes nearest it as well (a diagnosis of the drift): the
    # pass taken just before it, as a registration from that pass would price it, and
    # the two bracketing it
    by_pass = {basis: [{x.config: x.predicted_decoder for x in compare(
        rec, cal_for(merge_profiles(nearest_passes(passes, r, basis))))}
        for r, (_, rec) in enumerate(records)] for basis in NEAREST_PASSES}
    rows = []
    # the decoder model at each round's own step acceptance too (a diagnosis: what is
    # left of its error once the acceptance the round drew is given to it)
    compared = [{x.config: x for x in compare(rec, cal, acceptance_as_run=True)}
                for _, rec in records]
    # and on the sweep's own draws (position draws: known from the seed before the run):
    # what is left of its error once the sample the sweep met is given to it
    sample = None if a.draws != "position" else sweep_draws(
        acc, seed=a.seed, problems=a.problems, prompt_words=a.prompt_words, target=target,
        draft=draft, max_steps=a.max_steps, max_step_tokens=a.max_step_tokens,
        configs=configs)
    on_draws = {c.label: None if sample is None else decoder_prediction(
        cal, c, record=records[0][1], sample=sample) for c in configs}
    for c in configs:
        measured, per_round, alpha1, alpha2, at_run = [], [], [], [], []
        steady: list[float | None] = []  # less the one-time setup inside the wall time
        setup_s = 0.0
        pred = priced = decoder = None
        interval = None
        for (_, rec), cmp in zip(records, compared, strict=True):
            row = cmp[c.label]
            pred, priced = row.predicted_speedup, row.predicted_priced
            decoder, interval = row.predicted_decoder, row.decoder_interval
            measured.append(row.measured_speedup)
            steady.append(row.measured_speedup_less_setup)
            at_run.append(row.decoder_at_run_acceptance)
            run_ = next(x for x in rec.configs if x.label == c.label)
            setup_s += sum(p.setup_seconds or 0.0 for p in run_.problems)
            t = run_.totals
            per_round.append(1e3 * t.seconds / max(1, t.output_tokens))
            if t.step_acceptance is not None:
                alpha1.append(t.step_acceptance)
            drafts = sum(p.spec_metrics.get("num_drafts", 0) for p in run_.problems)
            first = sum((p.spec_metrics.get("num_accepted_tokens_per_pos") or [0])[0]
                        for p in run_.problems)
            if drafts:
                alpha2.append(first / drafts)
        mean = statistics.fmean(measured)
        steady_mean = None if None in steady else statistics.fmean(steady)  # type: ignore[arg-type]
        nearest = {basis: [got[c.label] for got in by_pass[basis]] for basis in by_pass}
        drawn = None if on_draws[c.label] is None else on_draws[c.label].speedup
        round1 = next(x for x in records[0][1].configs if x.label == c.label)
        busy = (None if on_draws[c.label] is None else  # round 1's, as the draws are
                busy_over_price(split_of(round1.problems),  # priced with its record
                                decoder_time_split(on_draws[c.label])))
        rows.append({
            "config": c.label, "mode": c.mode, "k1": c.k1, "k2": c.k2,
            "predicted": pred, "priced": priced, "measured": measured,
            "measured_mean": mean,
            "error": None if pred is None else pred / mean - 1,
            "priced_error": None if priced is None else priced / mean - 1,
            "decoder": decoder, "decoder_interval": interval,
            "decoder_error": None if decoder is None else decoder / mean - 1,
            "decoder_errors_by_round": [None if decoder is None else decoder / m - 1
                                        for m in measured],
            "decoder_by_pass": nearest,
            "decoder_errors_by_pass": {basis: [None if p is None else p / m - 1
                                               for p, m in zip(got, measured, strict=True)]
                                       for basis, got in nearest.items()},
            "ms_per_token": per_round,
            "step_acceptance_run": statistics.fmean(alpha1) if alpha1 else None,
            "token_acceptance_pos0_run": statistics.fmean(alpha2) if alpha2 else None,
            "decoder_at_run_acceptance": at_run if None not in at_run else None,
            "decoder_at_run_acceptance_error": (
                None if None in at_run else statistics.fmean(at_run) / mean - 1),
            "decoder_drawn": drawn,
            "decoder_drawn_error": None if drawn is None else drawn / mean - 1,
            "busy_over_price": busy,
            "setup_seconds": setup_s,
            "measured_less_setup": None if steady_mean is None else steady,
            "measured_less_setup_mean": steady_mean,
            "decoder_error_less_setup": (None if decoder is None or steady_mean is None
                                         else decoder / steady_mean - 1),
            "decoder_drawn_error_less_setup": (None if drawn is None or steady_mean is None
                                               else drawn / steady_mean - 1),
        })
    for i, (path, held) in enumerate(regs):
        for row in rows:
            got = held["predictions"].get(row["config"])
            err = None if got is None else got / row["measured_mean"] - 1
            if i == 0:
                steady = row["measured_less_setup_mean"]
                row.update(registered=got, registered_error=err,
                           registered_error_less_setup=(None if got is None or steady is None
                                                        else got / steady - 1))
            if len(regs) > 1:
                row.setdefault("registered_by", {})[path.name] = {"predicted": got,
                                                                  "error": err}
    _print(rows, a, dtype, costs)
    machine = machine_description()
    summary = {
        "benchmark": "synthetic-acceptance decoder runs (bench_synthetic.py)",
        "date": timestamp(),
        "machine": machine,
        "device": a.device, "dtype": dtype, "threads": a.threads,
        "versions": package_versions(("specmodel", "torch")),
        "target": a.target, "draft": a.draft,
        "architectures": {"target": tgt.shape.to_dict(), "draft": drf.shape.to_dict()},
        "acceptance": a.acceptance, "prefill": a.prefill,
        "synthetic": syn.model_dump(mode="json"),
        "interleave": a.interleave,
        "problems": a.problems, "max_steps": a.max_steps,
        "max_step_tokens": a.max_step_tokens, "prompt_tokens": prompt, "rounds": a.rounds,
        "costs": {"context": costs["context"], "T_ms": {str(b): t * 1e3 for b, t in
                                                        costs["T"].items()},
                  "draft_T1_ms": costs["draft_T1"] * 1e3, "c1": costs["c1"],
                  "c2": costs["c2"], "verify_ms": costs.get("V", 0.0) * 1e3,
                  "prepare_seconds": costs["prepare_seconds"], "profile_seconds": profile_s,
                  "profile_passes": len(passes),
                  "contention": hardware[0].concurrent if hardware else None,
                  "contention_draft": hardware[1].concurrent if len(hardware) > 1 else None,
                  "contention_forwards": contention_forwards},
        "mean_abs_error": {name: (statistics.fmean(errs) if errs else None) for name, errs in (
            (n, [abs(r[k]) for r in rows if speculative(r) and r[k] is not None])
            for n, k in (("f·g", "error"), ("priced", "priced_error"),
                         ("decoder", "decoder_error"), ("registered", "registered_error"),
                         ("decoder at the run's acceptance",
                          "decoder_at_run_acceptance_error"),
                         ("decoder on the sweep's draws", "decoder_drawn_error"),
                         ("decoder, less one-time setup", "decoder_error_less_setup"),
                         ("decoder on the sweep's draws, less one-time setup",
                          "decoder_drawn_error_less_setup"),
                         ("registered, less one-time setup", "registered_error_less_setup"))
            if reg is not None or not k.startswith("registered_error"))},
        "per_round_abs_error": per_round_abs_error(rows),
        "registration": None if reg is None else {k: v for k, v in reg.items()
                                                  if k not in ("predictions", "hardware")},
        "calibration": {"name": cal.name, "alpha1": cal.step.alpha1, "c1": cal.step.c1,
                        "alpha2": cal.token.alpha2, "c2": cal.token.c2},
        "records": [str(p) for p, _ in records],
        "rows": rows,
        "profiles_by_pass": [[h.model_dump(mode="json") for h in pass_] for pass_ in passes],
    }
    print("each round priced by " + "; ".join(
        f"{PASS_BASES[k]}: mean |error| {v:.1%}" for k, v in
        summary["per_round_abs_error"].items() if v is not None), flush=True)
    also = []
    for i, (path, held) in enumerate(regs):
        fields = {k: v for k, v in held.items() if k not in ("predictions", "hardware")}
        coverage = band_coverage({**summary, "registration": fields})
        assert coverage is not None  # a registration with rows
        if i == 0:
            summary["registered_band_coverage"] = coverage
        else:
            errs = [abs(r["registered_by"][path.name]["error"]) for r in rows
                    if speculative(r)
                    and r["registered_by"][path.name]["error"] is not None]
            also.append({"file": path.name, "registration": fields,
                         "mean_abs_error": statistics.fmean(errs) if errs else None,
                         "registered_band_coverage": coverage})
            print(f"held against {path.name} ({held.get('priced_by', 'preset')}) too: "
                  + ("" if not errs else f"mean |error| {statistics.fmean(errs):.1%}; "),
                  end="")
        print(f"measured rounds inside the registered 95 % band: {coverage['rounds_inside']}"
              f" of {coverage['rounds']} (the band covers {coverage['band']})"
              + "".join(f"; {coverage[f'{k}rounds_inside']} of {coverage[f'{k}rounds']} "
                        f"inside the {name}" for k, name in BANDS[1:]
                        if f"{k}rounds" in coverage))
    if also:
        summary["registrations_also"] = also
    return summary


NEAREST_PASSES = ("preceding", "bracketing")
"""The passes each round is priced by besides all of a run's passes merged: the one
taken just before it, or the two bracketing it (before and after)."""
PASS_BASES = {"merged": "every pass of the run (merged)",
              "preceding": "the pass just before the round",
              "bracketing": "the two passes bracketing the round"}
"""The pricing bases of :func:`per_round_abs_error`, described."""


def nearest_passes(passes: list[Any], r: int, basis: str) -> list[Any]:
    """The profiling passes nearest round ``r`` (0-based) of a run whose ``passes`` were
    taken before the first round and after each: ``preceding`` the one just before it,
    ``bracketing`` that one and the one just after it."""
    if basis not in NEAREST_PASSES:
        raise ValueError(f"basis must be one of {NEAREST_PASSES}; got {basis!r}")
    if not 0 <= r < len(passes) - 1:
        raise ValueError(f"r must be in [0, {len(passes) - 2}] for {len(passes)} passes "
                         f"(one before each round and one after the last); got {r}")
    return passes[r:r + (1 if basis == "preceding" else 2)]


def per_round_abs_error(rows: list[dict[str, Any]]) -> dict[str, float | None]:
    """The decoder model's mean |error| against each round's measured speedup over the
    speculative rows, priced by every pass merged (``decoder_errors_by_round``) and by
    each basis of ``decoder_errors_by_pass``; None where a basis priced no row."""
    def mean(errs: list[float | None]) -> float | None:
        got = [abs(e) for e in errs if e is not None]
        return statistics.fmean(got) if got else None

    spec = [r for r in rows if speculative(r)]
    out = {"merged": mean([e for r in spec for e in r["decoder_errors_by_round"]])}
    for basis in NEAREST_PASSES:
        out[basis] = mean([e for r in spec
                           for e in (r.get("decoder_errors_by_pass") or {}).get(basis, [])])
    return out


COST_BAND_COVERS = (
    "the sample band and, added in quadrature, 1.96 times the spread of the speedup when "
    "every predicted surface (each architecture's decode, verify and prefill) is off by a "
    "log-normal factor of the preset's held-out error; not the machine's drift nor the "
    "rounds' spread")
"""What a registration's cost band (``decoder_cost_interval``) accounts for."""
BAND_COVERS = ("the problems' sampling alone, as the decoder model simulates it (its "
               "sample_interval): not the cost model's error, the machine's drift nor "
               "the rounds' spread")
"""What a registration's band (``decoder_sample_interval``) accounts for."""

DRAWN_BAND_COVERS = ("the calibration's draws alone: a registration on the sweep's own "
                     "draws (--drawn) decodes the sample it will meet, so no sampling error "
                     "is left in it; not the cost model's error, the machine's drift nor the "
                     "rounds' spread")
"""What the same band accounts for in a registration on the sweep's own draws."""


TRACK_LEVEL = 0.95
"""The coverage the track-record band claims."""
TRACK_BAND_COVERS = (
    "every source of error at once, as it showed in past rounds: the registered speedup "
    "times and over exp(q), q the conformal 95 % bound of |log(measured / registered)| "
    "over every speculative round of the committed sweeps it was made from (held against "
    "registrations on the same device preset, of as many problems); it holds for a new "
    "round as far as that round is exchangeable with theirs")
"""What a registration's track-record band (``decoder_track_interval``) accounts for."""
PROFILE_TRACK_COVERS = (
    "every source of error at once, as it showed in past rounds for the decoder model "
    "priced by measured profiles: the registered speedup times and over exp(q), q the "
    "conformal 95 % bound of |log(measured / the decoder model on that run's own "
    "profiling passes)| over every speculative round of the committed sweeps it was made "
    "from (on the same device, of as many problems); their passes bracketed the rounds, "
    "where a registration's one pass precedes them")
"""What the track-record band of a registration measured here (``--predict-here``)
accounts for, made from the runs' own profiles (basis "profiles")."""
MEASURED_TRACK_COVERS = (
    "every source of error at once, as it showed in past rounds held against "
    "registrations priced as this one is, by one profiling pass measured before the "
    "rounds: the registered speedup times and over exp(q), q the conformal 95 % bound of "
    "|log(measured / registered)| over every speculative round of the committed sweeps "
    "it was made from (on the same device, of as many problems)")
"""What the track-record band of a registration measured here accounts for, made from
past measured registrations' own errors (basis "measured")."""
BANDS = (("", "registered band"), ("cost_", "band with the costs' error"),
         ("track_", "track-record band"))
"""The bands a registration can carry: (the prefix of their counts in
:func:`band_coverage`, their name)."""


TRACK_BASES = ("registered", "profiles", "measured")
"""What a track record's residuals hold the measured rounds against: the registration
priced by a device preset that the run was held against ("registered"), the decoder
model priced by the run's own profiling passes ("profiles"), or the registration priced
by a profiling pass measured before the run ("measured")."""
PRICED_BY = {"registered": "preset", "measured": "profile"}
"""The bases that hold rounds against a registration -> how that registration was
priced (its ``priced_by``)."""
BASIS_COVERS = {"registered": TRACK_BAND_COVERS, "profiles": PROFILE_TRACK_COVERS,
                "measured": MEASURED_TRACK_COVERS}
"""Each basis -> what a track-record band made on it accounts for."""


def speculative(row: dict[str, Any]) -> bool:
    """Whether a summary's ``row`` speculates (steps, tokens or both), i.e. is not the
    target-alone baseline."""
    return row["k1"] > 1 or row["k2"] > 1


def track_residuals(run: dict[str, Any], basis: str = "registered") -> list[float]:
    """``|log(measured / predicted)|`` of every measured round of a sweep's speculative
    configurations (``run``: a summary held against a registration), the prediction its
    registration's (``basis`` "registered") or the decoder model's on the run's own
    profiles ("profiles": each round's ``decoder_errors_by_round``), or that of the
    registration priced by a measured profiling pass it was held against ("measured")."""
    if basis not in TRACK_BASES:
        raise ValueError(f"basis must be one of {TRACK_BASES}, got {basis!r}")
    rows = [row for row in run.get("rows") or [] if speculative(row)]
    if basis == "profiles":
        return [abs(math.log1p(e)) for row in rows
                for e in row.get("decoder_errors_by_round") or [] if e is not None]
    reg = priced_registration(run, PRICED_BY[basis])
    preds = {} if reg is None else reg[1]
    return [abs(math.log(m / preds[row["config"]])) for row in rows
            if preds.get(row["config"]) for m in row["measured"]]


def priced_registration(run: dict[str, Any], priced_by: str = "preset"
                        ) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(the fields, configuration -> predicted speedup) of the registration priced
    ``priced_by`` ("preset": by a device preset; "profile": by a profiling pass measured
    before the run) that a sweep's summary ``run`` was held against: its own
    registration, else the first such of ``registrations_also``; None if none was."""
    reg = run.get("registration") or {}
    if reg.get("priced_by", "preset") == priced_by:
        return reg, {r["config"]: r.get("predicted_decoder") for r in reg.get("rows") or []}
    for also in run.get("registrations_also") or []:
        if also["registration"].get("priced_by", "preset") == priced_by:
            return also["registration"], {
                row["config"]: row["registered_by"][also["file"]]["predicted"]
                for row in run.get("rows") or [] if also["file"] in row.get(
                    "registered_by", {})}
    return None


def _conformal(residuals: list[float], level: float = TRACK_LEVEL) -> float:
    """:func:`specmodel.stats.conformal_bound` of a track record's rounds (its message
    counts rounds)."""
    from specmodel.stats import conformal_bound

    try:
        return conformal_bound(residuals, level)
    except ValueError as e:
        raise ValueError(str(e).replace(" residuals are", " rounds are")) from e


def _read_runs(paths: list[Path], option: str) -> list[tuple[Path, dict[str, Any]]]:
    out = []
    for path in paths:
        try:
            run = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise ValueError(f"{option} {path}: cannot read it ({e})") from e
        if not isinstance(run, dict) or not run.get("registration"):
            raise ValueError(f"{option} {path}: not held against a registration")
        out.append((path, run))
    return out


def registration_passes(reg_path: Path, run_path: Path) -> dict[str, Any]:
    """A registration measured here (``--predict-here``, with ``--here-passes`` N kept in
    ``hardware_by_pass``) priced again pass by pass and held against the run
    ``run_path`` (a summary JSON held against it): what a registration from each pass
    alone would have predicted, beside the passes merged. Every price is the decoder
    model's on the run's first round record (its synthetic settings and acceptance) with
    the registration's profiles in place of the run's; ``reproduced`` is the largest
    |repriced merged / registered − 1|, the check that repricing stands for the
    registration (the registration priced its verifier by its own T(1));
    ``median_of_passes`` the median of the passes' predictions, row by row (the other
    way to merge passes: after pricing instead of before); ``merged_law`` and
    ``merged_on_draws`` the merged profiles' prediction on fresh draws from the laws and
    on the sweep's own draws (:func:`sweep_draws`, position draws only; None otherwise) —
    a registration made on the draws (``--drawn``) is priced on them throughout — with
    ``draws_reproduce`` (:func:`specmodel.prediction.reproduces_on_draws`) whether the
    decoder model on them decodes the run's first round as it recorded (the check that
    the engines drew as :func:`sweep_draws` draws now)."""
    from specmodel.formats.run_record import RunRecord
    from specmodel.prediction import draws_predictions, reproduces_on_draws

    reg, run = held_registration(reg_path, run_path)
    first = Path(run["records"][0])
    if not first.is_absolute() and not first.exists():
        first = run_path.parent / first.name
    rec = RunRecord.model_validate_json(first.read_text(encoding="utf-8"))
    measured = {r["config"]: r["measured_mean"] for r in run["rows"] if speculative(r)}
    registered = {r["config"]: r["predicted_decoder"] for r in reg["rows"]}

    def priced(hardware: list[dict[str, Any]], sample: Any = None) -> dict[str, Any]:
        return priced_by_profiles(rec, hardware, measured, sample)

    sample = recorded_draws(rec, run, prompt_words=reg.get("prompt_words", 0))
    reproduces = (None if sample is None else
                  reproduces_on_draws(rec, draws_predictions(rec, sample,
                                                             timing_free_only=True)))
    if sample is None and reg.get("drawn"):
        raise ValueError(f"--passes-of {reg_path}: registered on the sweep's draws, but "
                         f"{run_path} did not draw by position")
    own = sample if reg.get("drawn") else None  # priced as it was registered
    merged = priced(reg["hardware"], own)
    reproduced = max((abs(v / registered[c] - 1) for c, v in merged["predictions"].items()
                      if v is not None and registered.get(c)), default=None)
    passes = ([priced(p, own) for p in reg["hardware_by_pass"]]
              if reg.get("hardware_by_pass") else [merged])  # one pass: the merge
    return {"registration": reg_path.name, "run": run_path.name,
            "cost_model": reg["cost_model"], "drawn": bool(reg.get("drawn")),
            "measured": measured, "merged": merged,
            "reproduced": reproduced, "passes": passes,
            "median_of_passes": held_against({c: _median_or_none(
                [p["predictions"][c] for p in passes]) for c in measured}, measured),
            "merged_law": priced(reg["hardware"]) if own is not None else merged,
            "merged_on_draws": (None if sample is None else merged if own is not None
                                else priced(reg["hardware"], sample)),
            "draws_reproduce": reproduces}


def held_registration(reg_path: Path, run_path: Path) -> tuple[dict[str, Any],
                                                                dict[str, Any]]:
    """(registration, run summary) read from ``reg_path`` and ``run_path``, checked to be
    a registration priced by profiling passes measured here (``--predict-here``) and a
    summary with round records that was held against it; one-line ValueErrors naming
    ``--passes-of`` otherwise."""
    try:
        reg = json.loads(reg_path.read_text(encoding="utf-8"))
        run = json.loads(run_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ValueError(f"--passes-of: cannot read {reg_path} or {run_path} ({e})") from e
    if reg.get("priced_by") != "profile" or not reg.get("hardware"):
        raise ValueError(f"--passes-of {reg_path}: not a registration priced by profiling "
                         "passes measured here (--predict-here)")
    if not run.get("records") or not run.get("rows"):
        raise ValueError(f"--passes-of {run_path}: not a run summary with round records")
    held = [run.get("registration") or {}, *[x["registration"] for x in
                                             run.get("registrations_also") or []]]
    if not any(h.get("registered") == reg.get("registered")
               and h.get("cost_model") == reg.get("cost_model") for h in held):
        raise ValueError(f"--passes-of: {run_path} was not held against {reg_path}")
    return reg, run


def priced_by_profiles(rec: Any, hardware: list[dict[str, Any]],
                       measured: dict[str, float], sample: Any = None) -> dict[str, Any]:
    """The decoder model on the run record ``rec`` (its synthetic settings and
    acceptance) with ``hardware`` (profiles as JSON) in place of its own, for every
    configuration of ``measured``, on fresh draws or on the sweep's ``sample``, held
    against the ``measured`` mean speedups (:func:`held_against`)."""
    from specmodel.formats.hardware import HardwareProfile
    from specmodel.prediction import decoder_prediction

    cal = rec.calibration.model_copy(update={"hardware": [
        HardwareProfile.model_validate(h) for h in hardware]})
    configs = {c.config.label: c.config for c in rec.configs}
    got = {c: decoder_prediction(cal, configs[c], record=rec, sample=sample)
           for c in measured}
    return held_against({c: None if g is None else g.speedup for c, g in got.items()},
                        measured)


def held_against(pred: dict[str, float | None], measured: dict[str, float]
                 ) -> dict[str, Any]:
    """Predictions (configuration -> speedup, None where not priced) held against the
    ``measured`` mean speedups: each error and their mean |error|."""
    errors = {c: pred[c] / m - 1 for c, m in measured.items() if pred.get(c) is not None}
    return {"predictions": pred, "errors": errors,
            "mean_abs_error": sum(map(abs, errors.values())) / len(errors)
            if errors else None}


def recorded_draws(rec: Any, summary: dict[str, Any], *, prompt_words: int) -> Any:
    """The draws a committed sweep (its first round record ``rec`` and its ``summary``)
    met (:func:`profiler.engines.synthetic.record_draws`); None unless it drew by
    position.  A record from before the prompts were stored gets the sweep's own
    (``summary``'s problem count, ``prompt_words``), as :func:`sweep_draws` builds them."""
    from profiler.engines.synthetic import record_draws
    from profiler.problems import format_prompt

    syn = rec.settings.synthetic
    if syn is None or syn.draws != "position":
        return None
    prompts = rec.settings.prompts or [
        format_prompt(p) for p in _problems(summary["problems"], prompt_words)]
    return record_draws(rec, prompts)


def _median_or_none(values: list[float | None]) -> float | None:
    """The median of ``values``; None if any is None (a pass that could not price it)."""
    return None if any(v is None for v in values) else statistics.median(values)


def print_registration_passes(paths: list[Path]) -> dict[str, Any]:
    """:func:`registration_passes` of ``paths`` (REG RUN) as a table."""
    got = registration_passes(*paths)
    n = len(got["passes"])
    print(f"{got['registration']} ({got['cost_model']}) against {got['run']}: "
          f"the decoder model's speedup from each pass alone and merged"
          + (" (registered on the sweep's draws: every column on them)" if got["drawn"]
             else ""))
    drawn = None if got["drawn"] else got["merged_on_draws"]
    print(f"{'configuration':<28} {'measured':>8} " + " ".join(
        f"{'pass ' + str(i + 1):>14}" for i in range(n)) + f" {'merged':>14} {'median':>14}"
        + ("" if drawn is None else f" {'on draws':>14}"))
    columns = [*got["passes"], got["merged"], got["median_of_passes"],
               *([] if drawn is None else [drawn])]
    for c, measured in got["measured"].items():
        cells = [(p["predictions"][c], p["errors"].get(c)) for p in columns]
        print(f"{c:<28} {measured:>8.3f} " + " ".join(
            f"{v:>6.3f} ({e:+.1%})" if v is not None else f"{'-':>14}" for v, e in cells))
    print(f"{'mean |error|':<37} " + " ".join(
        f"{p['mean_abs_error']:>14.1%}" for p in columns))
    if got["reproduced"] is not None:
        print(f"repriced merged vs registered: at most {got['reproduced']:.1%} apart")
    if got["draws_reproduce"] is not None:
        print("on draws: the merged profiles on the sweep's own draws, on which the decoder "
              "model " + ("decodes" if got["draws_reproduce"] else "does NOT decode")
              + " the target alone and the sync rows as the run's first round recorded")
    return got


def track_record(paths: list[Path], *, device: str | None = None,
                 problems: int | None = None, basis: str = "registered") -> dict[str, Any]:
    """The track-record band of the committed sweeps ``paths`` (summaries held against
    registrations; with ``device`` and ``problems``, each must have been registered on
    that device preset for that many problems; with ``basis`` "registered" or
    "measured", by a registration priced as theirs were, from a preset or a measured
    profiling pass (:data:`PRICED_BY`), which that basis reads): ``quantile_log``
    (:func:`_conformal` of their rounds' :func:`track_residuals` on ``basis``), the
    count, the runs, the basis, what it covers."""
    res: list[float] = []
    runs = _read_runs(paths, "--track-record")
    for path, run in runs:
        reg = _basis_registration(run, basis, path)
        have = {"device": RENAMED_PRESETS.get(reg.get("device"), reg.get("device")),
                "problems": reg.get("problems")}
        for key, want in (("device", device), ("problems", problems)):
            if want is not None and have[key] != want:
                raise ValueError(f"--track-record {path}: registered with {key} "
                                 f"{have[key]!r}, not {want!r}")
        got = track_residuals(run, basis)
        if not got:
            raise ValueError(f"--track-record {path}: no measured speculative round")
        res.extend(got)
    try:
        q = _conformal(res)
    except ValueError as e:
        raise ValueError(f"--track-record: {e}") from e
    return {"quantile_log": q, "level": TRACK_LEVEL, "rounds": len(res),
            "runs": [p.name for p, _ in runs], "basis": basis, "covers": BASIS_COVERS[basis]}


def _basis_registration(run: dict[str, Any], basis: str, path: Path) -> dict[str, Any]:
    """The registration of ``run`` (read from ``path``) whose residuals ``basis`` reads:
    for "registered" and "measured", the one priced as that basis says (an error naming
    the file if it was held against none); for "profiles", the run's own."""
    if basis not in PRICED_BY:
        return run["registration"]
    found = priced_registration(run, PRICED_BY[basis])
    if found is None:
        how = "a device preset" if basis == "registered" else "a measured profiling pass"
        raise ValueError(f"--track-record {path}: held against no registration priced by "
                         f"{how}")
    return found[0]


def print_track_record(paths: list[Path], basis: str = "registered") -> dict[str, int]:
    """Check the track-record band on each committed sweep, made from the others (leave one
    sweep out), its residuals on ``basis`` (:func:`track_residuals`): print each's bound
    and how many of its rounds fell inside; the pooled counts."""
    runs = _read_runs(paths, "--track-record")
    if len(runs) < 2:
        raise ValueError("--track-record: name at least two runs to check one against "
                         "the others")
    regs = [_basis_registration(r, basis, path) for path, r in runs]
    kinds = {(RENAMED_PRESETS.get(g.get("device"), g.get("device")), g.get("problems"))
             for g in regs}
    if len(kinds) > 1:
        raise ValueError("--track-record: the runs were registered on different device "
                         f"presets or for different numbers of problems: {sorted(kinds)}")
    res = [track_residuals(run, basis) for _, run in runs]
    inside = total = 0
    for i, (path, _) in enumerate(runs):
        others = [x for j, r in enumerate(res) if j != i for x in r]
        try:
            q = _conformal(others)
        except ValueError as e:
            raise ValueError(f"--track-record: without {path.name}, {e}") from e
        got = sum(x <= q for x in res[i])
        inside, total = inside + got, total + len(res[i])
        print(f"{path.name}: bound ±{q:.3f} in log (from {len(others)} rounds of the "
              f"others), {got} of {len(res[i])} rounds inside")
    print(f"pooled: {inside} of {total} rounds inside ({inside / max(total, 1):.0%}; the "
          f"band claims {TRACK_LEVEL:.0%})")
    with_all = _conformal([x for r in res for x in r])
    print(f"from all {sum(map(len, res))} rounds: ±{with_all:.3f} in log "
          f"(x{math.exp(with_all):.3f})")
    return {"rounds_inside": inside, "rounds": total}


def band_coverage(run: dict[str, Any]) -> dict[str, Any] | None:
    """How many of a run's measured rounds (speculative configurations) fell inside the
    registered 95 % band of a run of its size (``decoder_sample_interval`` of its
    registration's rows); None for a run not held against a registration."""
    reg = run.get("registration")
    if not reg or not reg.get("rows"):
        return None
    out: dict[str, Any] = {}
    track = reg.get("track_band") or {}
    sample_covers = DRAWN_BAND_COVERS if reg.get("drawn") else BAND_COVERS
    for key, name, covers in (("decoder_sample_interval", "", sample_covers),
                              ("decoder_cost_interval", "cost_", COST_BAND_COVERS),
                              ("decoder_track_interval", "track_",
                               track.get("covers", TRACK_BAND_COVERS))):
        bands = {r["config"]: r.get(key) for r in reg["rows"]}
        by_config: dict[str, list[bool]] = {}
        for row in run["rows"]:
            band = bands.get(row["config"])
            if not speculative(row) or band is None:
                continue
            lo, hi = band
            by_config[row["config"]] = [lo <= m <= hi for m in row["measured"]]
        if key == "decoder_sample_interval" or by_config:
            out.update({f"{name}rounds_inside": sum(sum(v) for v in by_config.values()),
                        f"{name}rounds": sum(len(v) for v in by_config.values()),
                        f"{name}by_config": by_config, f"{name}band": covers})
    return out


def in_run_draft_slowdown(record: dict[str, Any]) -> dict[str, float]:
    """A run record's (``ROUND.run.json``, as a dict) step-draft slowdown beside the
    target, read from the run itself: per async configuration, the draft's seconds per
    draft step over their mean in the sync configurations (where the draft runs alone);
    empty where the record has no sync or no async configuration that drafts steps."""
    per: dict[str, tuple[str, float]] = {}
    for c in record["configs"]:
        steps = sum(p.get("draft_steps", 0) for p in c["problems"])
        if steps:
            per[c["label"]] = (c["config"]["mode"],
                               sum(p["draft_seconds"] for p in c["problems"]) / steps)
    alone = [v for mode, v in per.values() if mode == "sync"]
    if not alone:
        return {}
    base = statistics.fmean(alone)
    return {label: v / base for label, (mode, v) in per.items() if mode == "async"}


def print_in_run_contention(paths: list[Path]) -> float:
    """Print :func:`in_run_draft_slowdown` of each run record and their pooled mean;
    return the mean."""
    pooled = []
    for path in paths:
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            got = in_run_draft_slowdown(record)
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ValueError(f"--in-run-contention {path}: cannot read a run record ({e})"
                             ) from e
        if not got:
            raise ValueError(f"--in-run-contention {path}: no sync and async configurations "
                             "that draft steps")
        pooled.extend(got.values())
        print(f"{path}: " + ", ".join(f"{k} {v:.2f}x" for k, v in got.items()))
    mean = statistics.fmean(pooled)
    print(f"the draft's in-run slowdown, mean of {len(pooled)} async configurations: "
          f"{mean:.2f}x")
    return mean


FORWARD_CONTEXT_MAX = 1024
"""The contexts (tokens) a sweep's forwards are priced over in :func:`forward_prices`."""


def forward_prices(record: dict[str, Any]) -> dict[str, Any]:
    """The target's forwards a run record's sweep takes, priced relative to one decode
    step: from the run's profiling passes merged (what the record's calibration holds
    once the run ends), the median over contexts up to :data:`FORWARD_CONTEXT_MAX` of a
    decode of k1 sequences, a verification of k2 tokens and of k2 tokens on each of k1
    sequences (k1, k2 the largest of the record's configurations), each over T(1) —
    beside the same ratios
    from the cost preset of the record's CPU (None where it has none). A drift of these
    ratios is what a preset fitted once cannot follow."""
    from specmodel.formats.hardware import HardwareProfile
    from specmodel.hardware.costmodel import Workload, predict_seconds, resolve_coefficients
    from specmodel.hardware.predicted import preset_of

    target = record["settings"]["synthetic"]["architectures"]["target"]
    profs = [HardwareProfile.model_validate(h) for h in
             (record.get("calibration") or {}).get("hardware") or []]
    prof = next((h for h in profs if h.architecture.name == target), None)
    if prof is None:
        raise ValueError(f"no profile of the target {target} in its calibration")
    k1 = max(c["config"]["k1"] for c in record["configs"])
    k2 = max(c["config"]["k2"] for c in record["configs"])
    forwards = {"T(1)": ("decode", 1, 1), f"D({k1})": ("decode", k1, 1),
                f"V(1, {k2})": ("verify", 1, k2), f"V({k1}, {k2})": ("verify", k1, k2)}

    def ms(kind: str, b: int, q: int) -> tuple[float | None, list[int]]:
        pts = [p for p in prof.points if p.kind == kind and p.batch == b and p.ms
               and (kind == "decode" or p.new_tokens == q)
               and 0 < p.context <= FORWARD_CONTEXT_MAX]
        return (statistics.median(p.ms[0] for p in pts) if pts else None,
                sorted({p.context for p in pts}))

    measured = {k: ms(*v) for k, v in forwards.items()}
    t1, contexts = measured["T(1)"]
    if t1 is None:
        raise ValueError("its profile has no decode step of one sequence")
    out = {"created": record.get("created"), "T1_ms": t1, "contexts": contexts,
           "measured": {k: None if v is None else v / t1
                        for k, (v, _) in measured.items() if k != "T(1)"}}
    device = preset_of(prof.device.type, prof.device.name)
    out["preset"] = None
    if device is not None:
        c = resolve_coefficients(device)[0]
        shape = prof.architecture.shape()

        def sec(kind: str, b: int, q: int) -> float:
            return statistics.median(predict_seconds(shape, Workload(b, q, L), c, prof.dtype)
                                     for L in contexts)

        p1 = sec("decode", 1, 1)
        out["preset"] = {"device": device, **{k: sec(*v) / p1 for k, v in forwards.items()
                                              if k != "T(1)"}}
    return out


def print_forward_prices(paths: list[Path]) -> list[dict[str, Any]]:
    """:func:`forward_prices` of each run record, one row each."""
    got = []
    for path in paths:
        try:
            got.append(forward_prices(json.loads(path.read_text(encoding="utf-8"))))
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ValueError(f"--forward-prices {path}: cannot price a run record's "
                             f"forwards ({e})") from e
        row = got[-1]
        print(f"{path.name:<44} {row['created'][:16]}  T(1) {row['T1_ms']:.2f} ms  "
              + "  ".join(f"{k}/T(1) {v:.2f}" for k, v in row["measured"].items()
                          if v is not None))
    presets = {json.dumps(r["preset"], sort_keys=True) for r in got if r["preset"]}
    for p in map(json.loads, sorted(presets)):
        print(f"preset {p.pop('device')}: "
              + "  ".join(f"{k}/T(1) {v:.2f}" for k, v in p.items()))
    return got


def registration_kind(reg: dict[str, Any]) -> str:
    """What priced a registration: "preset" (a device's cost model), "first pass" (the
    run's own first profiling pass, ``--register-first-pass``) or "measured here"
    (profiling passes taken before the run, ``--predict-here``)."""
    if reg.get("priced_by", "preset") == "preset":
        return "preset"
    return ("first pass" if str(reg.get("cost_model", "")).startswith("the run's first")
            else "measured here")


def row_times(run: dict[str, Any]) -> list[dict[str, Any]]:
    """Where a registration's speedup errors come from, for each registration the sweep
    ``run`` (a summary) was held against: each configuration's measured milliseconds per
    written token in each round over the registration's price of them (``ratios``). A
    speedup is the target alone's time over a configuration's, so its error in a round is
    that configuration's ratio over the target alone's, less one (``errors``; the check
    ``reproduced`` is the largest gap to the registered speedup over the measured one);
    ``errors_at_measured_baseline`` is what it would be with the target alone priced
    as it ran: the configuration's own ratio, less one. Where the target alone's ratio
    is far from 1, every row's error shares it."""
    rows = {r["config"]: r for r in run.get("rows") or []}
    base = [c for c, r in rows.items() if not speculative(r)]
    if len(base) != 1 or not all(r.get("ms_per_token") for r in rows.values()):
        raise ValueError("not a sweep summary with the target alone and each row's "
                         "time per token by round")
    base = base[0]
    held = [("the run's registration", run.get("registration") or {}),
            *[(x["file"], x["registration"]) for x in run.get("registrations_also") or []]]
    out = []
    for name, reg in held:
        priced = {r["config"]: (r.get("decoder_ms_per_token") or {}).get("total")
                  for r in reg.get("rows") or []}
        predicted = {r["config"]: r.get("predicted_decoder") for r in reg.get("rows") or []}
        if not priced.get(base):
            raise ValueError(f"{name}: no price of the target alone's time per token")
        ratios = {c: [m / priced[c] for m in r["ms_per_token"]]
                  for c, r in rows.items() if priced.get(c)}
        spec = [c for c in ratios if c != base]
        errors = {c: [rc / rb - 1 for rc, rb in zip(ratios[c], ratios[base], strict=True)]
                  for c in spec}
        at_base = {c: [rc - 1 for rc in ratios[c]] for c in spec}
        reproduced = max((abs((1 + e) - predicted[c] / m) for c in spec if predicted.get(c)
                          for e, m in zip(errors[c], rows[c]["measured"], strict=True)),
                         default=None)

        def mean_abs(d: dict[str, list[float]]) -> float:
            return statistics.fmean(abs(x) for v in d.values() for x in v)

        out.append({"registration": name, "kind": registration_kind(reg),
                    "ratios": ratios, "baseline": ratios[base], "errors": errors,
                    "errors_at_measured_baseline": at_base, "reproduced": reproduced,
                    "mean_abs_error": mean_abs(errors) if spec else None,
                    "mean_abs_error_at_measured_baseline": mean_abs(at_base) if spec
                    else None})
    return out


def print_row_times(paths: list[Path]) -> dict[str, dict[str, Any]]:
    """:func:`row_times` of each committed sweep: per registration, the target alone's
    measured / priced time by round and each row's, its errors as registered and with the
    target alone priced as it ran; then the means pooled over the sweeps by what priced
    the registration, with each configuration's signed error (its mean over the rounds
    and their standard deviation: a bias of the prices, or their scatter). Returns those
    pooled figures by kind."""
    # by what priced the registration: each sweep's two mean |error|s, and each
    # configuration's signed errors over the rounds
    pooled: dict[str, tuple[list[tuple[float, float]], dict[str, list[float]]]] = {}
    for path, run in _read_runs(paths, "--row-times"):
        try:
            got = row_times(run)
        except ValueError as e:
            raise ValueError(f"--row-times {path}: {e}") from e
        for g in got:
            means, signed = pooled.setdefault(g["kind"], ([], {}))
            print(f"{path.name}, {g['registration']} ({g['kind']}): measured / priced "
                  f"time per token, the target alone "
                  + " ".join(f"{x:.3f}" for x in g["baseline"]) + " by round")
            print(f"  {'configuration':<28} {'measured / priced':>18}  {'error':>16}  "
                  f"{'target alone as run':>20}")
            for c, e in g["errors"].items():
                print(f"  {c:<28} {' '.join(f'{x:.3f}' for x in g['ratios'][c]):>18}  "
                      f"{' '.join(f'{x:+.1%}' for x in e):>16}  "
                      f"{' '.join(f'{x:+.1%}' for x in g['errors_at_measured_baseline'][c]):>20}")
            if g["mean_abs_error"] is not None:
                print(f"  mean |error| over rows and rounds {g['mean_abs_error']:.1%}; with "
                      f"the target alone priced as it ran "
                      f"{g['mean_abs_error_at_measured_baseline']:.1%}"
                      + ("" if g["reproduced"] is None else
                         f" (errors reproduce the registered ones within "
                         f"{g['reproduced']:.1e})"))
                means.append((g["mean_abs_error"], g["mean_abs_error_at_measured_baseline"]))
            signed.setdefault("target alone (measured / priced - 1)", []).extend(
                x - 1 for x in g["baseline"])
            for c, e in g["errors"].items():
                signed.setdefault(c, []).extend(e)
    out: dict[str, dict[str, Any]] = {}
    for kind, (v, signed) in pooled.items():
        if not v:
            continue
        out[kind] = {"sweeps": len(v), "mean_abs_error": statistics.fmean(x for x, _ in v),
                     "mean_abs_error_at_measured_baseline": statistics.fmean(y for _, y in v),
                     "by_configuration": {c: {"rounds": len(e), "mean": statistics.fmean(e),
                                              "sd": statistics.stdev(e) if len(e) > 1
                                              else None}
                                          for c, e in signed.items()}}
        print(f"pooled over {len(v)} sweeps, {kind}: mean |error| {out[kind]['mean_abs_error']:.1%}"
              f", with the target alone priced as it ran "
              f"{out[kind]['mean_abs_error_at_measured_baseline']:.1%}; by configuration, "
              "the signed error's mean and standard deviation over the rounds (a bias, or "
              "scatter):")
        for c, d in out[kind]["by_configuration"].items():
            print(f"  {c:<38} {d['rounds']:>3} rounds  mean {d['mean']:+.1%}  sd "
                  + ("-" if d["sd"] is None else f"{d['sd']:.1%}"))
    return out


def print_coverage(paths: list[Path]) -> dict[str, int]:
    """Print :func:`band_coverage` of each committed run and pooled; the pooled counts."""
    inside = total = 0
    covers: list[str] = []
    for path, run in _read_runs(paths, "--coverage"):
        got = band_coverage(run)
        if got is None:
            raise ValueError(f"--coverage {path}: not held against a registration")
        inside, total = inside + got["rounds_inside"], total + got["rounds"]
        if got["band"] not in covers:
            covers.append(got["band"])
        print(f"{path.name}: " + ", ".join(
            f"{got[f'{k}rounds_inside']} of {got[f'{k}rounds']} rounds inside the {name}"
            for k, name in BANDS if f"{k}rounds" in got))
        for config, flags in got["by_config"].items():
            print(f"  {config:<28} {' '.join('in' if f else 'out' for f in flags)}")
    print(f"pooled: {inside} of {total} rounds inside ({inside / max(total, 1):.0%}; a "
          f"calibrated 95 % band holds about 95 %); the band covers "
          + "; or ".join(covers))
    return {"rounds_inside": inside, "rounds": total}


def _print(rows: list[dict[str, Any]], a: argparse.Namespace, dtype: str,
           costs: dict[str, Any]) -> None:
    def f(v: float | None, pct: bool = False) -> str:
        if v is None:
            return "-"
        return f"{v:+.1%}" if pct else f"{v:.3f}"

    head = ("config", "f·g", "priced", "decoder", "registered", "measured (rounds)", "mean",
            "f·g err", "priced err", "decoder err", "registered err", "α1 run",
            "at run α1 err", "on draws err", "target÷price", "ms/token")
    body = [(r["config"], f(r["predicted"]), f(r["priced"]), f(r["decoder"]),
             f(r.get("registered")), " ".join(f"{m:.3f}" for m in r["measured"]),
             f(r["measured_mean"]), f(r["error"], True), f(r["priced_error"], True),
             f(r["decoder_error"], True), f(r.get("registered_error"), True),
             f(r["step_acceptance_run"]), f(r.get("decoder_at_run_acceptance_error"), True),
             f(r.get("decoder_drawn_error"), True),
             f((r.get("busy_over_price") or {}).get("target")),
             " ".join(f"{m:.2f}" for m in r["ms_per_token"])) for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]
    print(f"\nsynthetic acceptance ({a.acceptance}), {a.target} / {a.draft} on {a.device} "
          f"{dtype}; T(1) {costs['T'][1] * 1e3:.2f} ms, c1 {costs['c1']:.3f}, "
          f"c2 {costs['c2'] or 0.0:.3f}")
    print("  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)))
    for b in body:
        print("  ".join(v.ljust(w) for v, w in zip(b, widths, strict=True)))
    spec = [r for r in rows if speculative(r)]
    for key, name in (("error", "f·g"), ("priced_error", "priced"),
                      ("decoder_error", "decoder"), ("registered_error", "registered"),
                      ("decoder_at_run_acceptance_error", "decoder at the run's α1"),
                      ("decoder_drawn_error", "decoder on the sweep's draws")):
        errs = [abs(r[key]) for r in spec if r.get(key) is not None]
        if errs:
            print(f"mean |error| {name}: {statistics.fmean(errs):.1%} over {len(errs)} "
                  "configurations (baseline excluded)")
    if any(r.get("measured_less_setup_mean") is not None for r in rows):
        print("one-time setup inside the wall time (binding and capturing forwards of new "
              "shapes; the decoder model prices none): " + ", ".join(
                  f"{r['config']} {r['setup_seconds']:.2f} s" for r in rows))
        for key, name in (("decoder_error_less_setup", "decoder"),
                          ("registered_error_less_setup", "registered"),
                          ("decoder_drawn_error_less_setup", "decoder on the sweep's draws")):
            errs = [abs(r[key]) for r in spec if r.get(key) is not None]
            if errs:
                print(f"mean |error| {name} against the speedup less that setup: "
                      f"{statistics.fmean(errs):.1%} over {len(errs)} configurations")


if __name__ == "__main__":
    sys.exit(main())
