"""Held-out validation of the predictions on real models (issue 12's protocol).

A calibration is profiled (``specmodel profile run``) on one set of gsm_symbolic
problems; this benchmark decodes *other* problems (``--seed``; refused where any of its
problems is among the calibration's, compared by text; ``--dataset``: another
reasoning-gym dataset's, a workload the calibration was not profiled on) with the same
models on the same machine, every configuration in ``--rounds`` interleaved rounds
(round 1 in order, round 2 in reverse, …), and holds three predictions against the
mean measured speedup, the rounds' spread beside it: the papers' f·g, f·g priced by
the calibration's T(b), and the decoder model (:mod:`specmodel.decodermodel`).  It
reports mean and max |error|, the Spearman rank correlation of each model's predictions
with the measured speedups, and whether each model's recommended configuration is the
best measured (or within 5 % of it).

The rounds take hours on a 2-core CPU: each round's run record is written after every
configuration, and ``--resume`` goes on from what the records hold (commit them as
they complete).  ``--report`` compares what the records hold without decoding.

A calibration's absolute costs are one moment of a shared machine: ``--cost-probe``
times a few engine-cost cells (b = 1, 2 at the problems' prompt length, target and
draft) before each round into its record; the report prints the costs at run time
over the calibration's, and ``--costs-at-run-time`` prices the decoder model with the
calibration's costs rescaled by them (:func:`specmodel.prediction.calibration_at_run_time`).

``--register`` writes the decoder model's predictions before the sweep decodes
(never overwritten; ``--register-as TAG`` for a further one), and ``--report
--registered [TAG]`` holds them against the same means; every problem run records when
it finished, so the report says which rows, if any, decoded before the registration.
``--register --costs-at-run-time`` loads the trio, takes one cost probe first and
registers from the calibration's costs rescaled by it (the probe goes into the
registration): the drift the report's ``--costs-at-run-time`` corrects afterwards,
corrected before the sweep decodes.

The summary's ``machine`` is the one that wrote it (a report may be made elsewhere);
``decoded_on`` names the machine each round record was decoded on.

Usage::

    python -m benchmarks.bench_heldout --trio 0.5b --calibration CAL.json --cost-probe [--resume]
    python -m benchmarks.bench_heldout --trio 1.5b --calibration CAL.json --report
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from benchmarks.harness import (  # noqa: E402
    RESULTS,
    git_commit,
    percent,
    print_table,
    printer,
    registered_row,
    write_json,
)
from profiler.problems import DEFAULT_DATASET, check_dataset  # noqa: E402

TRIOS = {
    "0.5b": {"target": "qwen2.5-coder-0.5b", "draft": "smollm2-135m",
             "configs": [("token", 1, 3, 1), ("sync", 2, 1, 1), ("async", 2, 1, 1),
                         ("sync", 3, 1, 1), ("async", 3, 1, 1), ("sync", 2, 3, 1),
                         ("async", 2, 3, 1), ("sync", 2, 1, 2)]},
    "1.5b": {"target": "qwen2.5-coder-1.5b", "draft": "qwen2.5-coder-0.5b",
             "configs": [("token", 1, 3, 1), ("sync", 2, 1, 1), ("async", 2, 1, 1),
                         ("sync", 2, 3, 1), ("async", 2, 3, 1), ("sync", 2, 1, 2)]},
}
"""The two trios of issue 12 (verifier: the MiniLM embedding judge) and their sweeps:
(mode, k1, k2, width) — token-only, sync, async, hybrid and one W = 2."""


def configurations(trio: str, *, max_steps: int, max_step_tokens: int, delimiter: str,
                   threshold: float) -> list[Any]:
    """The trio's sweep as :class:`SpecConfig` objects."""
    from specmodel.config import SpecConfig, VerifierSpec

    base = SpecConfig(max_steps=max_steps, max_step_tokens=max_step_tokens,
                      step_delimiter=delimiter,
                      verifier=VerifierSpec(kind="embedding", threshold=threshold))
    return [base.replace(mode="sync" if mode == "token" else mode, k1=k1, k2=k2, width=w)
            for mode, k1, k2, w in TRIOS[trio]["configs"]]


def mode_of(config: Any) -> str:
    """A sweep configuration's mode as ``--modes`` names it: its label's first word,
    ``token`` (token speculation alone, k1 = 1), ``sync`` or ``async``."""
    return config.label.split()[0]


PAUSE_FILE = "/tmp/specmodel-heldout.pause"
"""The default ``--pause-file``."""


def pausing(progress: Any, pause_file: str) -> Any:
    """``progress`` that, after reporting, waits while ``pause_file`` exists."""
    import os

    def report(done: int, total: int, message: str) -> None:
        progress(done, total, message)
        if os.path.exists(pause_file):
            print(f"  paused ({pause_file} exists)", flush=True)
            while os.path.exists(pause_file):
                time.sleep(5)
            print("  resumed", flush=True)

    return report


def calibration_problems(cal: Any) -> set[tuple[str, int, int]]:
    """(dataset, seed, count) of the problems the calibration's profiler phases drew: its
    steps and tokens phases', and its engine costs' speculative calls' (a phase written
    before ``--dataset`` existed: gsm_symbolic).  A calibration without phase settings:
    the problem counts and seeds its provenance names, of gsm_symbolic."""
    import re

    phases = {ph: cal.phase_settings(ph)
              for ph in ("batch_cost", "steps", "tokens", "engine_costs")}
    if not any(phases.values()):
        named = re.findall(r"(\d+) (?:\w+ )?(?:problems?|prompts) \(seed (\d+)\)",
                           cal.provenance.description)
        return {(DEFAULT_DATASET, int(seed), int(n)) for n, seed in named}
    found = {(got.dataset, got.seed, got.problems)
             for got in (phases["steps"], phases["tokens"]) if got}
    costs = phases["engine_costs"]
    if costs is not None and costs.speculation_problems and costs.speculation_seed is not None:
        found.add((costs.dataset, costs.speculation_seed, costs.speculation_problems))
    return found


def describe_draws(drawn: set[tuple[str, int, int]]) -> str:
    """``drawn`` as a reader reads it: "30 gsm_symbolic of seed 1, …"."""
    return ", ".join(f"{n} {dataset} of seed {seed}" for dataset, seed, n in sorted(drawn))


def held_out(a: argparse.Namespace) -> list[Any]:
    """The sweep's problems: ``--problems`` of ``--dataset`` at ``--seed``."""
    from profiler.problems import load_problems

    return load_problems(a.problems, a.seed, a.dataset)


def profiled_problems(a: argparse.Namespace, cal: Any) -> list[Any]:
    """The sweep's problems that the calibration profiled too (compared by their text:
    in most reasoning-gym datasets neighbouring seeds share problems)."""
    from profiler.problems import shared_problems

    return shared_problems(held_out(a), calibration_problems(cal))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trio", choices=sorted(TRIOS), default="0.5b")
    ap.add_argument("--calibration", required=True,
                    help="the trio's calibration (profile run on other problems)")
    ap.add_argument("--problems", type=int, default=3, help="held-out problems of --dataset")
    ap.add_argument("--dataset", default=DEFAULT_DATASET,
                    help="the reasoning-gym dataset of the held-out problems (default "
                         "gsm_symbolic, the calibrations' own; another one holds a "
                         "calibration against a workload it was not profiled on)")
    ap.add_argument("--seed", type=int, default=2,
                    help="their seed (none of its problems may be among the calibration's: "
                         "in most reasoning-gym datasets neighbouring seeds share problems)")
    ap.add_argument("--max-steps", type=int, default=12)
    ap.add_argument("--max-step-tokens", type=int, default=48)
    ap.add_argument("--threshold", type=float, default=0.85, help="embedding threshold")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--decode-path", default="eager", choices=["eager", "static", "compiled"],
                    help="the transformers engines' decode path (HFEngine): the dynamic "
                         "cache, a static one, or the static one compiled; prepared before "
                         "any clock starts")
    ap.add_argument("--resume", action="store_true", help="go on from the round records")
    ap.add_argument("--report", action="store_true", help="compare the records only")
    ap.add_argument("--pause-file", default=PAUSE_FILE,
                    help="while this file exists the sweep waits between problems (each "
                         "problem is timed on its own), so heavy work can share the machine; "
                         "the record is written per configuration, and the pause after a "
                         "configuration's last problem comes once it is written, so a sweep "
                         "stopped there goes on with --resume without decoding it again")
    ap.add_argument("--out", default=None,
                    help="name of the round records and the summary under "
                         "benchmarks/results (default heldout_<trio>)")
    ap.add_argument("--alpha-from-runs", action="store_true",
                    help="diagnostic: price with the step acceptance the rounds themselves "
                         "observed (pooled over every configuration) instead of the "
                         "calibration's, to separate the cost model's error from the "
                         "acceptance shift between calibration and held-out problems")
    ap.add_argument("--cost-probe", action="store_true",
                    help="before each round's configurations, time a few engine-cost "
                         "cells (b = 1, 2 at the problems' prompt length, target and draft) "
                         "into the round record, so the costs at run time can be held "
                         "against the calibration's")
    ap.add_argument("--probe-contention", type=int, default=0, metavar="ROUNDS",
                    help="every cost probe (--cost-probe's, and --register "
                         "--costs-at-run-time's) also pairs the target's and the draft's "
                         "calls for ROUNDS rounds, measuring each one's slowdown beside "
                         "the other as the calibration's engine_costs phase does; a "
                         "registration or report from the probes then prices the async "
                         "configurations with it (0: no pairing)")
    ap.add_argument("--modes", default=None, metavar="MODE[,MODE]",
                    help="decode only these configurations' modes (token, sync, async; "
                         "the target alone always runs); a registration still covers "
                         "every configuration, the report the ones decoded")
    ap.add_argument("--costs-at-run-time", action="store_true",
                    help="report: price with the calibration's engine costs rescaled by "
                         "the records' cost probes (specmodel.prediction."
                         "calibration_at_run_time), a separate prediction from the "
                         "calibration's own; with --register: load the trio, take one "
                         "cost probe now and register from the costs it rescales")
    ap.add_argument("--keep-times", action="store_true",
                    help="with --costs-at-run-time: keep the calibration's times and take "
                         "only the probes' slowdowns beside each other (--probe-contention)")
    ap.add_argument("--drift-uniform", action="store_true",
                    help="with --costs-at-run-time: rescale every cost of a model by one "
                         "ratio instead of each batch size's cells by the probes' ratio at "
                         "that size (beyond the largest probed, that size's)")
    ap.add_argument("--register", action="store_true",
                    help="before any decoding: the decoder model's prediction of every "
                         "configuration for these problems (their prompt length from the "
                         "target's tokenizer), written to <name>.registered.json and "
                         "printed; commit it before the sweep runs")
    ap.add_argument("--register-as", default=None, metavar="TAG",
                    help="with --register: write <name>.registered-TAG.json (a further "
                         "registration for the same sweep, e.g. from a corrected model "
                         "before the rest of the sweep decodes); a registration is never "
                         "overwritten")
    ap.add_argument("--registered", default=None, metavar="TAG",
                    help="the registration the report holds against the rounds "
                         "(<name>.registered-TAG.json; default <name>.registered.json)")
    ap.add_argument("--acceptance-as-run", action="store_true",
                    help="report: also the decoder model at each configuration's step "
                         "acceptance pooled over the rounds (a diagnosis, post hoc)")
    ap.add_argument("--lengths-as-run", action="store_true",
                    help="report: also the decoder model at the step lengths the first "
                         "round's problems wrote, read from its calls (a diagnosis, post "
                         "hoc; with --acceptance-as-run also at both)")
    ap.add_argument("--report-round", type=int, default=None, metavar="N",
                    help="report: round N's record alone (e.g. the round that decoded "
                         "after a registration), its speedups over its own baseline")
    ap.add_argument("--summary", default=None,
                    help="another name for the summary only (e.g. a report of the same "
                         "rounds with another calibration)")
    a = ap.parse_args(argv)
    for flag, given in (("--drift-uniform", a.drift_uniform), ("--keep-times", a.keep_times)):
        if given and not a.costs_at_run_time:
            print(f"error: {flag} goes with --costs-at-run-time", file=sys.stderr)
            return 2
    if a.probe_contention < 0:
        print(f"error: --probe-contention takes a number of rounds >= 0, got "
              f"{a.probe_contention}", file=sys.stderr)
        return 2
    modes = None if a.modes is None else {m.strip() for m in a.modes.split(",")}
    if modes is not None and (not modes or not modes <= {"token", "sync", "async"}):
        print(f"error: --modes takes token, sync and/or async, comma-separated, got "
              f"{a.modes!r}", file=sys.stderr)
        return 2
    name = a.out or f"heldout_{a.trio.replace('.', '')}"
    records = [RESULTS / f"{name}_round{r + 1}.run.json" for r in range(a.rounds)]
    if a.report_round is not None:
        if not a.report or not 1 <= a.report_round <= a.rounds:
            print(f"error: --report-round goes with --report and takes 1 to --rounds "
                  f"({a.rounds}), got {a.report_round}", file=sys.stderr)
            return 2
        records = [records[a.report_round - 1]]

    from specmodel.formats.calibration import load_calibration

    cal = load_calibration(a.calibration)
    try:
        check_dataset(a.dataset, "--dataset")
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    shared = profiled_problems(a, cal)
    if shared:
        which = ", ".join(str(p.index) for p in shared)
        message = (f"--seed {a.seed}: {len(shared)} of the {a.problems} {a.dataset} problems "
                   f"(index {which}) are among those the calibration profiled "
                   f"({describe_draws(calibration_problems(cal))}); held-out problems "
                   f"need a seed whose problems it did not see (in most reasoning-gym "
                   f"datasets seed s's problem i is seed s + 1's problem i − 1)")
        if not a.report:
            print(f"error: {message}", file=sys.stderr)
            return 2
        print(f"warning: not held out: {message}", file=sys.stderr)
    configs = configurations(a.trio, max_steps=a.max_steps,
                             max_step_tokens=a.max_step_tokens, delimiter="\n",
                             threshold=a.threshold)
    t0 = time.perf_counter()
    if a.register:
        reg_name = registration_name(name, a.register_as)
        if (RESULTS / f"{reg_name}.json").exists():
            print(f"error: {reg_name}.json exists: a registration is never overwritten (give "
                  "--register-as TAG for a further one)", file=sys.stderr)
            return 2
        write_json(reg_name, register(a, cal, configs))
        return 0
    if not a.report:
        decode_rounds(a, cal, [c for c in configs if modes is None or mode_of(c) in modes],
                      records)
    summary = report(a, cal, name, records)
    summary["decode_seconds_this_invocation"] = time.perf_counter() - t0
    summary["profiled_by_the_calibration"] = [p.index for p in shared]
    write_json(a.summary or name, summary)
    return 0


@dataclass
class _Trio:
    """The sweep's engines, loaded and prepared (every batch size's first call made)."""

    target: Any
    """The target's engine."""
    draft: Any
    """The step draft's engine."""
    verifier: Any
    """The step verifier."""
    problems: list[Any]
    """The held-out problems."""
    tokens: float
    """The problems' mean prompt length in the target's tokens."""
    everything: list[Any]
    """The target alone, then every configuration."""


def load_trio(a: argparse.Namespace, cal: Any, configs: list[Any]) -> _Trio:
    """Load the trio's engines and verifier and prepare them as the rounds decode."""
    from profiler.engines import HFEngine
    from profiler.packs import resolve_model
    from profiler.runs import (
        baseline_like,
        mean_prompt_tokens,
        prepare_engines,
        prepared_message,
        prompt_lengths,
    )
    from profiler.verifiers import make_verifier

    trio = TRIOS[a.trio]
    problems = held_out(a)
    target, draft = (HFEngine(resolve_model(trio[role]), threads=a.threads, delimiter="\n",
                              decode_path=a.decode_path) for role in ("target", "draft"))
    verifier = make_verifier(configs[0].verifier, threads=a.threads)
    lengths = prompt_lengths(target, problems)
    everything = [baseline_like(configs[0]), *configs]  # the sweep's step caps, delimiter
    positions, seconds = prepare_engines(target, draft, everything, lengths, verifier)
    if a.decode_path != "eager":
        print(prepared_message(target, positions, seconds, cal), flush=True)
    return _Trio(target, draft, verifier, problems, mean_prompt_tokens(lengths), everything)


def decode_rounds(a: argparse.Namespace, cal: Any, configs: list[Any],
                  records: list[Path]) -> None:
    """Run (or resume) every round, interleaved: odd rounds reversed."""
    from profiler.runs import run_configurations
    from specmodel.prediction import cost_drift

    t = load_trio(a, cal, configs)
    target, draft, verifier, everything = t.target, t.draft, t.verifier, t.everything
    trio = TRIOS[a.trio]
    models = {"target": trio["target"], "draft": trio["draft"], "verifier": verifier.name}
    tokens = t.tokens  # validate reads it from the records
    settings = {"dataset": a.dataset, "problems": a.problems, "seed": a.seed,
                "threads": a.threads, "engine": "transformers", "max_steps": a.max_steps,
                "max_step_tokens": a.max_step_tokens, "delimiter": "\n",
                "prompt_tokens": tokens, "execution": target.execution,
                "static_cache": target.cache_length(1)}
    for r, path in enumerate(records):
        order = everything if r % 2 == 0 else everything[::-1]
        probes = []
        if a.cost_probe and not round_complete(path, order, a.resume):
            probes = [probe(a, target, draft, before=order[0].label, context=round(tokens))]
            drift = cost_drift(cal, probes)
            if drift is not None:  # before the round: a machine that is not the calibration's
                print(f"round {r + 1}: {drift.summary()}", flush=True)
        run_configurations(target, draft, verifier, order, t.problems, path, models=models,
                           settings=settings, calibration=cal, include_baseline=False,
                           resume=a.resume, cost_probes=probes,
                           progress=pausing(printer(f"round {r + 1}"), a.pause_file))


def register(a: argparse.Namespace, cal: Any, configs: list[Any]) -> dict[str, Any]:
    """The decoder model's predictions for the sweep, made before it decodes (the
    protocol's registered predictions), with what they were made from."""
    from specmodel.formats.jsonio import timestamp
    from specmodel.prediction import calibration_at_run_time, decoder_prediction

    probed: dict[str, Any] = {}
    if not a.costs_at_run_time:
        tokens = prompt_tokens(a)
    else:  # a probe now, before any decoding, rescales the costs
        t = load_trio(a, cal, configs)
        tokens = t.tokens
        got = probe(a, t.target, t.draft, before="registration", context=round(t.tokens))
        try:
            cal, drift = calibration_at_run_time(cal, [got], by_batch=not a.drift_uniform,
                                                 times=not a.keep_times)
        except ValueError as e:
            raise SystemExit(f"--costs-at-run-time: {e}") from e
        print(drift.summary())
        times = ("the calibration's times" if a.keep_times else
                 "the calibration's rescaled by cost_probe" + (
                     ", one ratio per model" if a.drift_uniform
                     else ", each batch size by its own"))
        probed = {"cost_probe": got.model_dump(mode="json"),
                  "costs": times + (", each model's slowdown beside the other the probe's "
                                    "paired calls" if a.probe_contention else "")}
    from benchmarks.bench_track_record import current_band
    from specmodel.stats import track_interval

    band = current_band()
    rows = [registered_row(cfg, decoder_prediction(cal, cfg, prompt_tokens=tokens,
                                                   sample_problems=a.problems))
            for cfg in configs]
    for r in rows:
        r["decoder_track_interval"] = (None if not r["predicted_decoder"] else
                                       track_interval(r["predicted_decoder"],
                                                      band["quantile_log"]))
    print_table(f"registered before the sweep: trio {a.trio}, {a.problems} {a.dataset} "
                f"problems (seed {a.seed}), prompt {tokens:.1f} tokens; calibration "
                f"{a.calibration}",
                ["config", "decoder model", "95 % interval", f"… of {a.problems} problems",
                 "track-record band"],
                [[r["config"], r["predicted_decoder"] or "-",
                  *("-" if r[k] is None else f"{r[k][0]:.3f}-{r[k][1]:.3f}"
                    for k in ("decoder_interval", "decoder_sample_interval",
                              "decoder_track_interval"))]
                 for r in rows])
    print(f"track-record band: x/÷ {band['factor']:.3f}, the {band['level']:.0%} conformal "
          f"bound of {band['rounds']} rounds of {len(band['reports'])} committed held-out "
          "sweeps (bench_track_record)")
    return {"registered": timestamp(), "commit": git_commit(),
            "trio": a.trio, "calibration": a.calibration, "dataset": a.dataset,
            "problems": a.problems, "seed": a.seed, "max_steps": a.max_steps,
            "max_step_tokens": a.max_step_tokens, "prompt_tokens": tokens,
            "decode_path": a.decode_path,
            "speedup_over": "the target alone, same problems",
            **probed, "track_band": band, "rows": rows}


def round_complete(path: Path, configs: list[Any], resume: bool) -> bool:
    """Whether ``--resume`` finds every configuration of the round in its record."""
    if not resume or not path.is_file():
        return False
    from specmodel.formats.run_record import load_run_record

    done = {c.label for c in load_run_record(path).configs}
    return all(c.label in done for c in configs)


def probe(a: argparse.Namespace, target: Any, draft: Any, *, before: str,
          context: int) -> Any:
    """One engine-cost probe of the trio's models (printed as it is taken)."""
    from profiler.engine_costs import probe_costs

    trio = TRIOS[a.trio]
    got = probe_costs(target, draft, models=(trio["target"], trio["draft"]), context=context,
                      threads=a.threads, contention_rounds=a.probe_contention, before=before,
                      progress=printer("cost probe"))
    print(f"cost probe before {before}: {got.cells_text()}", flush=True)
    return got


@functools.cache
def target_tokenizer(trio: str) -> Any:
    """The trio's target tokenizer (loaded once for the report's prompt lengths and its
    replayed passes)."""
    from transformers import AutoTokenizer

    from profiler.packs import resolve_model

    return AutoTokenizer.from_pretrained(resolve_model(TRIOS[trio]["target"]))


def prompt_tokens(a: argparse.Namespace) -> float:
    """The held-out problems' mean prompt length in the target's tokens (records written
    before ``settings.prompt_tokens`` existed lack it)."""
    from types import SimpleNamespace

    from profiler.runs import mean_prompt_tokens, prompt_lengths

    tok = target_tokenizer(a.trio)
    counter = SimpleNamespace(  # the tokenizer alone, counted as HFEngine.count_tokens does
        count_tokens=lambda text: len(tok(text, add_special_tokens=False).input_ids))
    return mean_prompt_tokens(prompt_lengths(counter, held_out(a)))


def registration_name(name: str, tag: str | None) -> str:
    """The results name of a sweep's registration (``--register-as`` / ``--registered``)."""
    return f"{name}.registered" + ("" if tag is None else f"-{tag}")


def load_registration(a: argparse.Namespace, name: str) -> dict[str, Any] | None:
    """The registration the report holds the rounds against (``--register``;
    ``--registered TAG`` picks a further one), its origin printed; None when none was
    written.  A registration for other problems or steps is refused."""
    path = RESULTS / f"{registration_name(name, a.registered)}.json"
    if not path.is_file():
        if a.registered is not None:
            raise SystemExit(f"--registered {a.registered}: no {path.name}")
        return None
    reg = json.loads(path.read_text())
    mine = {"trio": a.trio, "dataset": a.dataset, "problems": a.problems, "seed": a.seed,
            "max_steps": a.max_steps, "max_step_tokens": a.max_step_tokens}
    # registrations written before --dataset were all of gsm_symbolic
    held = {"dataset": DEFAULT_DATASET, **reg}
    differ = {k: (held.get(k), v) for k, v in mine.items() if held.get(k) != v}
    if differ:
        raise SystemExit(f"{path.name}: registered for other settings "
                         f"(registered, now): {differ}")
    print(f"registered predictions: {path.name}, written {reg['registered']} at commit "
          f"{(reg.get('commit') or '?')[:7]} from {reg['calibration']}, prompt "
          f"{reg['prompt_tokens']:.1f} tokens")
    return reg


def registered_predictions(reg: dict[str, Any], baseline: str
                           ) -> tuple[str, dict[str, tuple[Any, ...]]]:
    """When the registration ``reg`` (:func:`load_registration`) was written and its
    decoder model's speedups and intervals, keyed by configuration, the target alone's
    (``baseline``) at 1 by definition."""
    out = {r["config"]: (r["predicted_decoder"], tuple(r["decoder_interval"]),
                         None if r.get("decoder_sample_interval") is None
                         else tuple(r["decoder_sample_interval"]))
           for r in reg["rows"] if r["predicted_decoder"] is not None}
    out[baseline] = (1.0, None, None)
    return reg["registered"], out


def registered_times(reg: dict[str, Any], baseline: str) -> dict[str, float] | None:
    """The registration's milliseconds per output token, keyed by configuration, the
    target alone's under ``baseline``; None when it registered none (registrations
    before 2026-11-28 evening registered speedups only)."""
    rows = [r for r in reg["rows"] if (r.get("decoder_ms_per_token") or {}).get("total")]
    if not rows:
        return None
    out = {r["config"]: r["decoder_ms_per_token"]["total"] for r in rows}
    bases = [r["decoder_baseline_ms_per_token"] for r in rows
             if r.get("decoder_baseline_ms_per_token")]
    if bases:
        out[baseline] = statistics.mean(bases)  # one per row, simulated apart
    return out


def decoded_since(recs: list[Any], when: str) -> dict[str, dict[str, int]]:
    """Per configuration, its problem runs over the rounds decoded after ``when`` (a
    registration's time), before it, and of unknown time (records from before
    :attr:`ProblemRun.finished_at`): which rows a registration truly preceded."""
    from specmodel.formats.jsonio import parse_timestamp

    cut = parse_timestamp(when)
    out: dict[str, dict[str, int]] = {}
    for rec in recs:
        for c in rec.configs:
            n = out.setdefault(c.label, {"after": 0, "before": 0, "undated": 0})
            for p in c.problems:
                key = ("undated" if p.finished_at is None
                       else "after" if parse_timestamp(p.finished_at) > cut else "before")
                n[key] += 1
    return out


def print_decoded_since(when: str, since: dict[str, dict[str, int]]) -> None:
    """One line per configuration a registration did not wholly precede."""
    undated = sum(v["undated"] for v in since.values())
    runs = sum(sum(v.values()) for v in since.values())
    if undated == runs:
        print(f"registration written {when}: the records carry no decode times (older than "
              "the problem runs' finished_at), so what it preceded is not checked here")
        return
    late = {k: v for k, v in since.items() if v["before"] or v["undated"]}
    if not late:
        print(f"registration written {when}: every problem run of the sweep decoded after it")
    for label, v in late.items():
        print(f"registration written {when}: {label}: {v['before']} of {sum(v.values())} "
              f"problem runs decoded before it, {v['undated']} of unknown time")


def token_passes(a: argparse.Namespace, cal: Any, recs: list[Any]) -> list[dict[str, Any]]:
    """Per configuration with n-gram token speculation: its passes over the rounds,
    replayed from the committed target steps (a hybrid's discarded target steps are not
    in the record), against the tokens per pass the decoder model draws."""
    from profiler.ngram_replay import add_counters, replay_steps
    from profiler.problems import format_prompt
    from specmodel.decodermodel import AcceptanceModel

    configs = [c for c in recs[0].configs if c.config.k2 > 1 and c.config.token is not None
               and c.config.token.method == "ngram"]
    if not configs:
        return []
    tok = target_tokenizer(a.trio)
    prompts = [format_prompt(p) for p in held_out(a)]
    model = AcceptanceModel.from_calibration(cal)
    out = []
    for cfg in configs:
        k2, lookup = cfg.config.k2, cfg.config.token.prompt_lookup_max or 3
        totals: dict[str, Any] = {}
        for rec in recs:
            run = next(c for c in rec.configs if c.label == cfg.label)
            for prob in run.problems:
                totals = add_counters(totals, replay_steps(
                    tok, prompts[prob.problem],
                    [(st.text, st.source == "target") for st in prob.steps], k2 - 1, lookup))
        n = totals.get("num_target_passes", 0)
        if n:
            out.append({"config": cfg.label, "passes": n,
                        "draft_rate": totals["num_drafts"] / n,
                        "tokens_per_pass": totals["output_tokens"] / n,
                        "model_tokens_per_pass": model.tokens_per_pass(k2),
                        "counters": totals})
    return out


def with_run_acceptance(cal: Any, recs: list[Any]) -> Any:
    """``cal`` with α1 (Jeffreys-smoothed) from the step verdicts of the round records,
    pooled over every configuration, and its best-of-w rates scaled by the same ratio."""
    judged = accepted = 0
    for rec in recs:
        for c in rec.configs:
            for p in c.problems:
                judged += p.drafted_steps
                accepted += p.accepted_steps
    if judged == 0:
        raise SystemExit("--alpha-from-runs: the records judged no draft step")
    alpha1 = (accepted + 0.5) / (judged + 1)
    ratio = alpha1 / cal.step.alpha1
    branch = cal.step.branch_acceptance
    step = cal.step.model_copy(update={
        "alpha1": alpha1, "samples": judged,
        "branch_acceptance": None if branch is None else
        {w: min(0.999, r * ratio) for w, r in branch.items()}})
    print(f"--alpha-from-runs: α1 {cal.step.alpha1:.3f} (calibration) -> {alpha1:.3f} "
          f"({accepted}/{judged} draft steps accepted in the rounds)")
    return cal.model_copy(update={"step": step})


def report(a: argparse.Namespace, cal: Any, name: str, records: list[Path]
           ) -> dict[str, Any]:
    """Compare what the round records hold (complete rounds only) and print the table."""
    from specmodel.formats.run_record import load_run_record
    from specmodel.prediction import compare_rounds

    recs = [load_run_record(p) for p in records if p.is_file()]
    if not recs:
        raise SystemExit(f"no round record yet ({records[0]})")
    common = set.intersection(*({c.label for c in r.configs} for r in recs))
    recs = [r.model_copy(update={"configs": [c for c in r.configs if c.label in common]})
            for r in recs]
    known = recs[0].settings.prompt_tokens
    if a.alpha_from_runs:
        cal = with_run_acceptance(cal, recs)
    from specmodel.prediction import calibration_at_run_time, cost_drift

    probes = [p for r in recs for p in r.cost_probes]
    drift = cost_drift(cal, probes) if probes else None
    if drift is not None:
        print(drift.summary())
    if a.costs_at_run_time:
        try:
            cal, drift = calibration_at_run_time(cal, probes, by_batch=not a.drift_uniform,
                                                 times=not a.keep_times)
        except ValueError as e:
            raise SystemExit(f"--costs-at-run-time: {e}") from e
        beside = ("" if drift.target_contention is None else
                  " and the probes' slowdowns beside each other")
        print("--costs-at-run-time: the decoder model prices with "
              + ("the calibration's times" if a.keep_times else
                 "the engine costs rescaled by those ratios"
                 + (", one per model" if a.drift_uniform else ", each batch size by its own"))
              + beside)
    registration = load_registration(a, name)
    reg = since = times = None
    if registration is not None:  # the configurations every round has run so far
        when, predictions = registered_predictions(registration, recs[0].baseline)
        times = registered_times(registration, recs[0].baseline)
        reg = {k: v for k, v in predictions.items() if k in common}
        since = decoded_since(recs, when)
    lengths = None
    if a.lengths_as_run:
        from specmodel.run_lengths import run_lengths

        try:
            lengths = run_lengths(recs[0])
        except ValueError as e:
            raise SystemExit(f"--lengths-as-run: {e}") from e
    s = compare_rounds(recs, cal, prompt_tokens=known if known is not None else prompt_tokens(a),
                       registered=reg, acceptance_as_run=a.acceptance_as_run,
                       lengths=lengths)
    print_table(
        f"held-out sweep, trio {a.trio} ({recs[0].models}), {a.problems} {a.dataset} "
        f"problems (seed {a.seed}), {len(recs)} round(s); calibration {cal.name}",
        ["config", "measured (rounds)", "spread", "f·g", "err", "priced", "err", "decoder",
         "95 % interval", f"… of {a.problems} problems", "err", "registered", "err",
         "α1 run / model"],
        [[r.config, " ".join(f"{m:.3f}" for m in r.measured), percent(r.measured_spread),
          r.predicted_speedup or "-", percent(r.error, signed=True), r.predicted_priced or "-",
          percent(r.priced_error, signed=True), r.predicted_decoder or "-",
          *("-" if v is None else f"{v[0]:.3f}-{v[1]:.3f}"
            for v in (r.decoder_interval, r.decoder_sample_interval)),
          percent(r.decoder_error, signed=True), r.registered_decoder or "-",
          percent(r.registered_error, signed=True),
          " / ".join("-" if v is None else f"{v:.3f}"
                     for v in (r.step_acceptance, r.decoder_step_acceptance))]
         for r in s.rows])
    parts = ("total", "target", "draft", "verify")
    print_table(
        "where the time goes: ms per output token, measured (pooled over the rounds) / "
        "decoder model (in async the parts overlap)",
        ["config", *parts, "target steps per call"],
        [[r.config, *(f"{1e3 * r.measured_split.get(k, 0):.0f} / "
                      + (f"{1e3 * r.decoder_split[k]:.0f}" if k in r.decoder_split else "-")
                      for k in parts),
          " / ".join("-" if v is None else f"{v:.2f}"
                     for v in (r.rows_per_batch, r.decoder_rows_per_batch))]
         for r in s.rows])
    if a.acceptance_as_run or a.lengths_as_run:
        print_diagnoses(s.rows, a.acceptance_as_run, a.lengths_as_run)
    read = None if lengths is None else run_lengths_of(cal, lengths)
    passes = token_passes(a, cal, recs)
    if passes:
        print_table(
            "token-speculation passes, replayed from the rounds' committed target steps "
            "(prompt lookup is exact under greedy decoding) / the decoder model",
            ["config", "passes", "drafted", "tokens per pass", "decoder model"],
            [[r["config"], r["passes"], f"{r['draft_rate']:.3f}",
              f"{r['tokens_per_pass']:.3f}", f"{r['model_tokens_per_pass']:.3f}"]
             for r in passes])
    for model in s.mean_abs_error:
        if s.mean_abs_error[model] is None:
            continue
        print(f"{model:10s} mean |error| {percent(s.mean_abs_error[model])}, max "
              f"{percent(s.max_abs_error[model])}, Spearman "
              f"{'-' if s.spearman[model] is None else f'{s.spearman[model]:.2f}'}, "
              f"recommends {s.recommended[model]} "
              f"({percent(s.recommended_vs_best[model])} of the best measured, "
              f"{s.best_measured})")
    for model, (inside, rows) in s.covered.items():
        print(f"{model}: the 95 % interval holds the mean measured speedup in {inside} of "
              f"{rows} speculative configurations")
    timed = [] if times is None else [
        (r.config, 1e3 * r.measured_split["total"], times[r.config]) for r in s.rows
        if r.config in times and r.measured_split.get("total")]
    if timed:
        print_table("time per output token (ms): measured (pooled over the rounds) / "
                    "registered before the sweep (absolute: the calibration's engine costs "
                    "against this machine at run time)",
                    ["config", "measured", "registered", "error"],
                    [[c, f"{m:.1f}", f"{p:.1f}", percent(p / m - 1, signed=True)]
                     for c, m, p in timed])
        errs = [abs(p / m - 1) for _, m, p in timed]
        print(f"registered time per token: mean |error| {percent(statistics.mean(errs))}, "
              f"max {percent(max(errs))} over {len(timed)} rows")
    at_prices = calls_at_prices(cal, recs, {r.config: r.predicted_decoder for r in s.rows})
    if s.baseline_speed is not None:
        print(f"the target alone ran at {percent(s.baseline_speed)} of the time per token the "
              "decoder model gives it (calibration's absolute costs against the sweep's)")
    if since is not None:
        print_decoded_since(when, since)
    track = None
    if registration is not None:
        from benchmarks.bench_track_record import band_coverage

        track = band_coverage(registration, s.rows)
    if track is not None:
        print(f"registered track-record band (x/÷ {track['factor']:.3f}): "
              f"{track['rounds_inside']} of {track['rounds']} measured rounds inside")
    return {"trio": a.trio, "calibration": a.calibration, "dataset": a.dataset,
            "problems": a.problems, "seed": a.seed, "max_steps": a.max_steps,
            "max_step_tokens": a.max_step_tokens,
            "records": [str(p.relative_to(ROOT)) for p in records if p.is_file()],
            "decoded_on": [None if r.machine is None else r.machine.line for r in recs],
            "complete_configs": sorted(common),
            "cost_drift": None if drift is None else drift.model_dump(mode="json"),
            "token_passes": passes, "registered_from": a.registered,
            "registered_ms_per_token": [{"config": c, "measured": m, "registered": p}
                                        for c, m, p in timed],
            "decoded_since_registration": since, "calls_at_prices": at_prices,
            "track_band_coverage": track,
            "run_lengths": read,
            **s.model_dump(mode="json")}


def run_lengths_of(cal: Any, got: Any) -> dict[str, Any]:
    """The step lengths ``--lengths-as-run`` read from the first round (``got``,
    printed): each problem's pairs, its mean target step and padding ratio beside the
    calibration's."""
    from specmodel.run_lengths import padding_ratio

    mean = got.mean_target_step
    own = cal.step.step_length_answers
    out = {**got.to_dict(), "calibration_mean_target_step": cal.step.step_tokens_mean,
           "calibration_padding_ratio": padding_ratio(own) if own else None}
    print(f"run lengths from {got.config!r} (round 1): {len(got.answers)} problems, "
          f"{got.steps} steps of {mean:.1f} target tokens (calibration "
          f"{cal.step.step_tokens_mean or float('nan'):.1f}), padding ratio "
          f"{out['padding_ratio'] or float('nan'):.2f} (calibration's answers "
          f"{out['calibration_padding_ratio'] or float('nan'):.2f}); {got.filled} draft "
          "lengths not measured, set to the target's")
    return out


def print_diagnoses(rows: list[Any], acceptance: bool, lengths: bool) -> None:
    """The decoder model at what the rounds decoded (``--acceptance-as-run``,
    ``--lengths-as-run``): each row's speedup and error against the rounds' mean."""
    cols = [("registered", "registered_decoder", "registered_error")]
    if acceptance:
        cols.append(("at run α1", "decoder_at_run_acceptance",
                     "decoder_at_run_acceptance_error"))
    if lengths:
        cols.append(("at run lengths", "decoder_at_run_lengths",
                     "decoder_at_run_lengths_error"))
    if acceptance and lengths:
        cols.append(("at both", "decoder_at_run_lengths_and_acceptance",
                     "decoder_at_run_lengths_and_acceptance_error"))
    spec = [r for r in rows if r.k1 > 1 or r.k2 > 1]
    print_table("the decoder model at what the rounds decoded (a diagnosis, post hoc): "
                "speedup and error against the rounds' mean",
                ["config", "measured", *(h for c in cols for h in (c[0], "err"))],
                [[r.config, f"{r.measured_mean:.3f}",
                  *(v for _, pred, err in cols for v in (
                      "-" if getattr(r, pred) is None else f"{getattr(r, pred):.3f}",
                      percent(getattr(r, err), signed=True)))] for r in spec])
    for name, _, err in cols:
        errs = [abs(getattr(r, err)) for r in spec if getattr(r, err) is not None]
        if errs:
            print(f"{name}: mean |error| {percent(statistics.mean(errs))}, max "
                  f"{percent(max(errs))} over {len(errs)} rows")


def calls_at_prices(cal: Any, recs: list[Any], decoder: dict[str, float | None]
                    ) -> dict[str, Any] | None:
    """Where the rounds logged their engine calls (records since 2026-12-02): each call
    priced by the calibration at the shape it had (:func:`specmodel.call_audit.call_audit`),
    printed per configuration — the measured speedup, at the baseline's pace
    (:meth:`~specmodel.call_audit.CallAudit.at_baseline_pace`), had every call taken
    its price, and the decoder model's — and per model and rows the measured over the
    priced seconds, pooled over the rounds; None where no round logged calls."""
    from specmodel.call_audit import call_audit

    audits = [call_audit(r, cal) for r in recs if any(
        p.calls for c in r.configs for p in c.problems)]
    if not audits:
        return None
    speed: dict[str, list[tuple[float, float | None, float | None]]] = {}
    for audit in audits:
        paced = audit.at_baseline_pace()
        for label, (m, p) in audit.speedups().items():
            speed.setdefault(label, []).append((m, p, paced.get(label)))

    def mean_of(values: list[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return statistics.mean(known) if known else None

    rows = []
    for label, triples in speed.items():
        rows.append({"config": label, "measured": statistics.mean(t[0] for t in triples),
                     "at_base_pace": mean_of([t[2] for t in triples]),
                     "at_prices": mean_of([t[1] for t in triples]),
                     "decoder": decoder.get(label)})
    kinds: dict[str, list[float]] = {}
    for audit in audits:
        for g in audit.groups:
            k = kinds.setdefault(f"{g.role}{' sampled' if g.sampled else ''} b={g.rows}",
                                 [0.0, 0.0])
            k[0] += g.measured
            k[1] += g.priced
    print_table(f"the rounds' engine calls at their price ({len(audits)} round(s) logged "
                "calls; specmodel audit-calls ROUND.run.json for one round): measured "
                "speedup / at the baseline's pace / with every call at its price / the "
                "decoder model",
                ["config", "measured", "at base pace", "at prices", "decoder"],
                [[r["config"], f"{r['measured']:.3f}",
                  *("-" if r[k] is None else f"{r[k]:.3f}"
                    for k in ("at_base_pace", "at_prices", "decoder"))] for r in rows])
    print("measured ÷ priced seconds by call: " + ", ".join(
        f"{k} {m / p:.3f}" for k, (m, p) in sorted(kinds.items()) if p > 0))
    return {"rows": rows, "measured_over_priced": {k: m / p for k, (m, p) in kinds.items()
                                                   if p > 0}}


if __name__ == "__main__":
    sys.exit(main())
