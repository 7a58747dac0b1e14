"""Run the decoder over configurations and write a run record as it goes.

Shared by ``specmodel decode`` and ``benchmarks/bench_decoder.py``.  The record
(:class:`specmodel.formats.run_record.RunRecord`) is built as that typed model and
rewritten atomically (:func:`specmodel.formats.jsonio.write_json_atomic`) after
every configuration, so an interrupted run keeps what it measured and
``resume=True`` skips the configurations already in the file.

Resume is keyed on everything that determines a measurement: the models (role ->
name), the engine, the run settings (dataset, problems, seed, threads, caps,
delimiter, device, dtype, synthetic acceptance, the engine's execution), the
specmodel/torch/transformers versions, the problem indices, and, for every
configuration kept, its whole :class:`SpecConfig`.  A record measured with
anything else is refused with the differing settings named.  The record is written
under a :class:`specmodel.formats.lock.WriteLock` held for the whole run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from profiler.calibrate import key_versions
from profiler.decoder import LookaheadDecoder, totals
from profiler.engines import Engine
from profiler.environment import machine_description, package_versions
from profiler.problems import Problem, format_prompt
from profiler.verifiers import Verifier
from specmodel.config import SpecConfig, VerifierSpec
from specmodel.formats.calibration import Calibration
from specmodel.formats.jsonio import timestamp, write_json_atomic
from specmodel.formats.lock import WriteLock, resume_mismatch
from specmodel.formats.run_record import (
    ConfigRun,
    CostProbe,
    ProblemRun,
    RunRecord,
    RunSettings,
    load_run_record,
)

__all__ = ["BASELINE", "RESUME_SETTINGS", "check_resume", "mean_prompt_tokens", "planned",
           "prepare_engines", "prepared_message", "prompt_lengths", "resume_before_loading",
           "run_configurations"]

RESUME_SETTINGS = ("dataset", "problems", "seed", "threads", "max_steps", "max_step_tokens",
                   "delimiter", "device", "dtype", "synthetic", "execution")
"""The :class:`RunSettings` fields a resumed record must share with the run."""

BASELINE = SpecConfig(k1=1, k2=1)
"""Target-only step-by-step greedy decoding: speedup 1 by definition."""


def prompt_lengths(engine: Any, problems: Sequence[Problem]) -> list[int]:
    """Each problem's prompt length in ``engine``'s tokens: what a run tokenizes once,
    for its record's mean (:func:`mean_prompt_tokens`) and its prepared caches
    (:func:`prepare_engines`)."""
    if not problems:
        raise ValueError("problems must not be empty")
    return [engine.count_tokens(format_prompt(p)) for p in problems]


def mean_prompt_tokens(lengths: Sequence[int]) -> float:
    """The mean of :func:`prompt_lengths` (the run record's ``settings.prompt_tokens``)."""
    if not lengths:
        raise ValueError("lengths must not be empty")
    return sum(lengths) / len(lengths)


def prepare_engines(target: Any, draft: Any | None, configs: Sequence[SpecConfig],
                    lengths: Sequence[int], verifier: Any | None = None) -> tuple[int, float]:
    """Ready the transformers engines (``HFEngine.prepare``) for every call that
    ``configs`` make on problems of prompt ``lengths`` (:func:`prompt_lengths`, the
    target's tokens), before any clock starts: each batch size (the target's 1 … k1 ×
    width, the draft's 1 … width, the widest configuration's) run once, so that no timed
    call pays a first call's costs, and on a static or compiled path their static
    caches as long as the longest call (the longest prompt, ``max_steps`` + 1 steps of
    ``max_step_tokens``, and 64 positions for re-tokenizing), each batch size compiled
    on the compiled path; and ``verifier``'s first call too, when given.  (those
    positions, the seconds it took); 0 seconds for engines without a decode path (vLLM,
    synthetic)."""
    if not configs:
        raise ValueError("configs must not be empty")
    if not lengths:
        raise ValueError("lengths must not be empty")
    positions = (max(lengths) + max((c.max_steps + 1) * c.max_step_tokens for c in configs)
                 + 64)
    seconds = 0.0
    for engine, widest in ((target, max(c.k1 * c.width for c in configs)),
                           (draft, max(c.width for c in configs))):
        if engine is not None and getattr(engine, "decode_path", None) is not None:
            seconds += engine.prepare(range(1, widest + 1), positions)
    if verifier is not None:
        t0 = time.perf_counter()
        verifier.verify([("1. A step.\n", "1. A step.\n")])
        seconds += time.perf_counter() - t0
    return positions, seconds


def prepared_message(target: Any, positions: int, seconds: float,
                     calibration: Calibration | None = None) -> str:
    """What ``decode`` and ``bench_heldout`` print after :func:`prepare_engines`: the
    path, the positions, the cache length and the time it took, and where
    ``calibration``'s engine costs were timed on another cache length (or path), that
    and how to time them on this one: on a static path every forward attends over its
    whole cache, so a longer cache costs more per token (docs/decoder.md)."""
    from profiler.engines.hf import cache_mismatch

    if target.decode_path == "eager":
        return (f"eager decode path prepared: every batch size run once in {seconds:.1f} s "
                "(not timed)")
    length = target.cache_length(1)
    out = (f"{target.decode_path} decode path prepared for calls of up to {positions} "
           f"positions (static caches of {length}) in {seconds:.1f} s (not timed)")
    timed = cache_mismatch(
        None if calibration is None else calibration.phase_settings("engine_costs"), length)
    if timed is None:
        return out
    return (out + f"; note: the calibration's engine costs were timed {timed}, this run's "
            f"caches have {length} (profile engine-costs --decode-path "
            f"{target.decode_path} --cache-positions {positions} times them on these)")


def baseline_like(config: SpecConfig) -> SpecConfig:
    """Target-only decoding with ``config``'s step caps and delimiter."""
    return SpecConfig(max_step_tokens=config.max_step_tokens, max_steps=config.max_steps,
                      step_delimiter=config.step_delimiter)


def _check_verifier(config: SpecConfig, verifier: Verifier | None) -> None:
    """A configuration with step speculation must be judged by the verifier it names."""
    if config.k1 == 1 or verifier is None:
        return
    try:
        kind = VerifierSpec.from_name(verifier.name).kind
    except ValueError:
        return  # a verifier this format cannot name (a test's): nothing to compare
    if kind != config.verifier.kind:
        raise ValueError(
            f"verifier {verifier.name!r} does not match {config.label}'s verifier.kind "
            f"{config.verifier.kind!r}"
        )


def _key(engine: str, models: dict[str, str], settings: RunSettings, versions: dict[str, str],
         problems: list[int], configs: dict[str, SpecConfig],
         skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """A run record's resume key, flat enough for :func:`resume_mismatch`, without the
    settings named in ``skip``."""
    out: dict[str, Any] = {"engine": engine, "models": dict(models)}
    for name in RESUME_SETTINGS:
        if name in skip:
            continue
        v = getattr(settings, name)
        # a measured time is not a setting: it may differ between a run and its resume
        out[name] = (v.model_dump(mode="json", exclude={"verifier_pair_seconds"})
                     if hasattr(v, "model_dump") else v)
    out["versions"] = versions
    out["problem indices"] = problems
    for label, cfg in configs.items():
        out[f"[{label}]"] = cfg.model_dump(mode="json")
    return out


def check_resume(path: Path, old: RunRecord, *, engine: str, models: dict[str, str],
                 settings: RunSettings, problems: list[int],
                 configs: dict[str, SpecConfig], skip: tuple[str, ...] = ()) -> None:
    """Refuse to resume ``old`` (the record at ``path``) into a run of ``configs``
    (label -> configuration) unless it was measured with the same key: a one-line
    ValueError naming every difference.  Configurations of ``old`` that the run does
    not name are not compared (they are dropped), nor the settings named in ``skip``
    (those of :data:`RESUME_SETTINGS` not known yet)."""
    kept = [c for c in old.configs if c.label in configs]
    if not kept:
        return  # nothing of the old record is reused
    recorded = _key(old.engine, old.models, old.settings, old.versions,
                    sorted({p.problem for c in kept for p in c.problems}),
                    {c.label: c.config for c in kept}, skip)
    expected = _key(engine, models, settings, key_versions(settings.engine or engine),
                    sorted(problems), {c.label: configs[c.label] for c in kept}, skip)
    problem = resume_mismatch(path, recorded, expected)
    if problem is not None:
        raise ValueError(problem)


def planned(configs: Sequence[SpecConfig], include_baseline: bool = True) -> list[SpecConfig]:
    """The configurations :func:`run_configurations` decodes, in order: ``configs``, the
    target-only baseline first (:func:`baseline_like` the first) when
    ``include_baseline`` and none of them is it; a ValueError when two share a label."""
    todo = list(configs)
    if include_baseline and all(c.label != BASELINE.label for c in todo):
        todo.insert(0, baseline_like(configs[0]) if configs else BASELINE)
    labels = [c.label for c in todo]
    if len(set(labels)) != len(labels):
        raise ValueError(f"configs must be distinct, got {labels}")
    return todo


def resume_before_loading(path: Path, *, engine: str, models: dict[str, str],
                          settings: RunSettings, problems: Sequence[int],
                          configs: Sequence[SpecConfig],
                          include_baseline: bool = True) -> RunRecord | None:
    """What a resume of the record at ``path`` (an existing file) can decide before any
    model loads, for a run of ``configs`` on ``problems`` by an engine of kind
    ``engine``, of ``models`` (the verifier's name may be left out: the
    configurations' ``verifier`` field says which it is, and its name comes with it),
    whose ``settings`` hold all that :data:`RESUME_SETTINGS` names (the engine's
    execution: :func:`profiler.engines.execution_of`) but the synthetic engine's draws,
    made once it is built.

    A ValueError naming every difference from the record (:func:`check_resume`; the
    draws not compared); the record, with only the run's configurations, when it holds
    every one of them already and the engine is not the synthetic one (nothing is left
    to decode); else None (the run loads its models, and :func:`run_configurations`
    compares the whole key and decodes the rest)."""
    old = load_run_record(path)
    by_label = {c.label: c for c in planned(configs, include_baseline)}
    synthetic = engine == "synthetic"
    if "verifier" not in models:  # its name is the built verifier's; what it is, the
        # configurations' verifier field says
        models = {**models, "verifier": old.models.get("verifier", "")}
    check_resume(path, old, engine=engine, models=models, settings=settings,
                 problems=list(problems), configs=by_label,
                 skip=("synthetic",) if synthetic else ())
    held = {c.label: c for c in old.configs}
    if synthetic or any(label not in held for label in by_label):
        return None
    return old.model_copy(update={"configs": [held[label] for label in by_label]})


def run_configurations(
    target: Engine,
    draft: Engine | None,
    verifier: Verifier | None,
    configs: Sequence[SpecConfig],
    problems: Sequence[Problem],
    record_path: str | Path,
    *,
    models: dict[str, str],
    settings: RunSettings | dict[str, Any],
    calibration: Calibration | None = None,
    optimizer: dict[str, Any] | None = None,
    include_baseline: bool = True,
    resume: bool = False,
    progress: Callable[[int, int, str], None] | None = None,
    cost_probes: Sequence[CostProbe] = (),
    interleave: bool = False,
) -> RunRecord:
    """Decode ``problems`` with every configuration (the target-only baseline first).

    ``progress(done, total, message)`` is called after every problem, counting
    over all configurations; after a configuration's last problem only once the record
    holds that configuration (a sweep paused there, as ``bench_heldout --pause-file``
    does, and stopped, resumes without decoding it again).  ``cost_probes``
    (engine-cost probes taken for this invocation,
    :func:`profiler.engine_costs.probe_costs`) are added to the record's (a resumed
    record keeps its earlier ones).  ``interleave``: decode problem by
    problem, every configuration on each (forwards on even problems, backwards on odd
    ones), so that a slow spell of a shared machine lands on every configuration alike
    and not on one configuration's minutes; the record (``settings.order``
    'problems') is then written once, at the end, and cannot be resumed.  Either way
    each configuration decodes each problem from a cold prefix cache, with the same
    draws.
    """
    if not configs and not include_baseline:
        raise ValueError("configs must not be empty")
    if not problems:
        raise ValueError("problems must not be empty")
    if interleave and resume:
        raise ValueError("resume cannot continue an interleaved run (its record is written "
                         "only at the end): give interleave=False or resume=False")
    for cfg in configs:
        _check_verifier(cfg, verifier)
    todo = planned(configs, include_baseline)
    labels = [c.label for c in todo]
    path = Path(record_path)
    with WriteLock(path):
        done: list[ConfigRun] = []
        probes = list(cost_probes)
        run_settings = RunSettings.model_validate(settings).model_copy(
            update={"order": "problems" if interleave else "configurations",
                    "prompts": [format_prompt(p) for p in problems]})
        if resume and path.is_file():
            old = load_run_record(path)
            check_resume(path, old, engine=target.name, models=models, settings=run_settings,
                         problems=[p.index for p in problems],
                         configs={c.label: c for c in todo})
            done = [c for c in old.configs if c.label in labels]
            probes = [*old.cost_probes, *probes]
        finished = {c.label for c in done}
        meta: dict[str, Any] = {
            "created": timestamp(),
            "machine": machine_description(run_settings.device or "cpu"),
            "versions": package_versions(),
            "models": models,
            "engine": target.name,
            "settings": run_settings,
            "calibration": calibration,
            "baseline": BASELINE.label,
            "optimizer": optimizer,
            "cost_probes": probes,
        }
        total = len(todo) * len(problems)
        count = len(finished) * len(problems)
        record: RunRecord | None = None
        pending = [c for c in todo if c.label not in finished]

        def decoder(cfg: SpecConfig) -> LookaheadDecoder:
            return LookaheadDecoder.for_config(target, draft if cfg.k1 > 1 else None,
                                               verifier if cfg.k1 > 1 else None, cfg)

        def decode(cfg: SpecConfig, dec: LookaheadDecoder, p: Problem) -> ProblemRun:
            for eng in (target, draft):  # a problem starts with a cold prefix cache
                forget = getattr(eng, "forget", None)
                if forget is not None:
                    forget()
            return dec.decode(p)

        def report(cfg: SpecConfig, p: Problem, r: ProblemRun) -> None:
            nonlocal count
            count += 1
            if progress is not None:
                progress(count, total, f"{cfg.label}: problem {p.index}, {r.output_tokens} "
                         f"tokens in {r.seconds:.1f} s")

        def finish(finished_runs: list[tuple[SpecConfig, list[ProblemRun]]]) -> None:
            nonlocal record
            for cfg, runs in finished_runs:
                done.append(ConfigRun(label=cfg.label, config=cfg, totals=totals(runs),
                                      problems=runs))
            done.sort(key=lambda c: labels.index(c.label))
            record = RunRecord(**meta, configs=done)
            write_json_atomic(record, path)

        if interleave:
            decs = [(cfg, decoder(cfg)) for cfg in pending]
            by_config: dict[str, list[ProblemRun]] = {cfg.label: [] for cfg in pending}
            for i, p in enumerate(problems):
                for cfg, dec in decs if i % 2 == 0 else decs[::-1]:
                    by_config[cfg.label].append(decode(cfg, dec, p))
                    report(cfg, p, by_config[cfg.label][-1])
            finish([(cfg, by_config[cfg.label]) for cfg in pending])  # one write
        else:
            for cfg in pending:
                dec = decoder(cfg)
                runs: list[ProblemRun] = []
                for i, p in enumerate(problems):
                    runs.append(decode(cfg, dec, p))
                    if i < len(problems) - 1:
                        report(cfg, p, runs[-1])
                finish([(cfg, runs)])
                if runs:  # reported once written: a sweep stopped here loses nothing
                    report(cfg, problems[-1], runs[-1])
        return record if record is not None else RunRecord(**meta, configs=done)
