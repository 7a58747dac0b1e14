"""Run records: what the real decoder measured, one file per run.

A run record (JSON, written by ``specmodel decode`` and ``benchmarks/bench_decoder.py``
through :func:`profiler.runs.run_configurations`) holds, for one set of problems,
models and engine, every configuration that was run (its :class:`SpecConfig`),
what happened on every problem (:class:`ProblemRun`), the totals
(:class:`Totals`), the target-only baseline among them, and the calibration
whose numbers predict each configuration's speedup (:mod:`specmodel.prediction`
holds prediction against measurement).

Every section is typed and rejects unknown fields.  Version 1 files (free-form
settings, the old decoder dataclass as ``config``) still load:
:func:`load_run_record` migrates them (:func:`migrate_version1`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from specmodel.config import SpecConfig
from specmodel.errors import SpecmodelError
from specmodel.formats import DEFAULT_DATASET
from specmodel.formats.calibration import (
    Calibration,
    EngineCosts,
    MachineDetails,
    check_file_data,
    validate_file_data,
)
from specmodel.formats.jsonio import read_json_file

__all__ = [
    "RUN_SCHEMA_VERSION",
    "CallRecord",
    "CostProbe",
    "ConfigRun",
    "ProblemRun",
    "RunRecord",
    "RunSettings",
    "StepRecord",
    "SyntheticAcceptance",
    "Totals",
    "check_consistency",
    "load_run_record",
    "migrate_version1",
]

RUN_SCHEMA_VERSION = 2
"""The run record format version (1: untyped settings and problems, the decoder's old
dataclass as each configuration; still read)."""


TOKENS_PER_SECOND_RTOL = 1e-6
"""How far a stored ``tokens_per_second`` may differ from output_tokens ÷ seconds
(relative): rounding only."""


class _Record(BaseModel):
    """Base of every run-record section: unknown fields rejected, every number finite.
    Files are validated in pydantic's strict JSON mode (no string → number coercion)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class StepRecord(_Record):
    """One committed step."""

    text: str
    """The step's text."""
    source: Literal["draft", "target"]
    """Whether the verifier's accepted draft or the target's own step was kept."""
    tokens: int = Field(ge=0)
    """Tokens of the step under the tokenizer of the model that wrote it."""


class CallRecord(_Record):
    """One engine call of the decoder: a batch of steps from the target or the step
    draft, as the engine ran it."""

    role: Literal["target", "draft"]
    """Which model's engine ran the call."""
    start: float = Field(ge=0)
    """When the call began, in seconds from the start of its problem's decode."""
    seconds: float = Field(ge=0)
    """Its wall time (the device synchronised before the clock is read)."""
    rows: int = Field(ge=1)
    """Prefixes in the batch."""
    step_tokens: list[int]
    """Tokens of each row's step as committed or judged (cut at the delimiter)."""
    prompt_tokens: list[int] | None = None
    """Tokens of each row's prefix (None: the engine does not report them)."""
    prefilled_tokens: int | None = Field(default=None, ge=0)
    """Prompt tokens the call prefilled: every row's padded prefix, less what a reused
    KV cache already held (None: not reported)."""
    iterations: int | None = Field(default=None, ge=0)
    """Tokens the batch generated: the longest row's, every row running until the last
    one stops (None: not reported, or token speculation ran inside the call)."""
    sampled: bool = False
    """A sampled draft batch (the extra branches of a draft tree), not the greedy one."""


class ProblemRun(_Record):
    """What happened on one problem."""

    problem: int = Field(ge=0)
    """Problem index."""
    output: str
    """The generated answer (everything after the prompt)."""
    steps: list[StepRecord]
    """Committed steps in order."""
    drafted_steps: int = Field(ge=0)
    """Draft steps judged by the verifier (a position counts once however many branches)."""
    accepted_steps: int = Field(ge=0)
    """Draft steps the verifier accepted."""
    wasted_draft_steps: int
    """Draft steps generated but never judged (the chain was dropped first; with several
    branches, the extra branches)."""
    draft_steps: int | None = Field(default=None, ge=0)
    """Draft steps generated (None in records from before it was counted)."""
    draft_ends: int | None = Field(default=None, ge=0)
    """Of those, the steps that end the answer (the answer mark, end of sequence, or
    nothing written): the decoder drafts nothing after them and gives them no target
    step (None in records from before it was counted)."""
    target_steps: int = Field(ge=0)
    """Target steps generated (all positions of all batches, used or not)."""
    target_batches: int = Field(ge=0)
    """Target engine calls."""
    output_tokens: int = Field(ge=0)
    """Tokens of ``output`` under the target's tokenizer."""
    seconds: float = Field(ge=0)
    """Wall time of the whole problem."""
    draft_seconds: float = Field(ge=0)
    """Time inside draft calls (overlaps target time in async mode)."""
    target_seconds: float = Field(ge=0)
    """Time inside target calls."""
    verify_seconds: float = Field(ge=0)
    """Time inside the verifier."""
    setup_seconds: float | None = Field(default=None, ge=0)
    """The engines' one-time setup inside ``seconds``: binding a forward of a new shape
    and, on CUDA, capturing it as a graph, the first time the problem needs it (a
    serving engine does this once at start-up; the calls' times exclude it).  None
    where the engines do not report it (every engine but the synthetic one, and records
    from before it was recorded)."""
    answer: str | None = None
    """The final answer extracted from the output (None: none found)."""
    correct: bool
    """reasoning-gym's scorer gives full credit."""
    finished: Literal["answer", "end", "max_steps"]
    """Why decoding stopped."""
    spec_metrics: dict[str, Any] = Field(default_factory=dict)
    """Token-speculation counters from the engine, when it reports them."""
    finished_at: str | None = None
    """When the problem's decode ended (ISO date-time, UTC, whole seconds; None in
    records from before it was recorded): what tells a prediction registered before the
    run from one made after it."""
    calls: list[CallRecord] = Field(default_factory=list)
    """Every target and draft engine call, in the order they began (empty in records
    from before calls were logged; a target batched continuously makes no calls: its
    steps join the engine's running batch)."""

    @property
    def acceptance(self) -> float | None:
        """Accepted / drafted steps (None when nothing was drafted)."""
        return self.accepted_steps / self.drafted_steps if self.drafted_steps else None


class Totals(_Record):
    """A configuration's totals over the problems."""

    problems: int = Field(ge=1)
    """Problems decoded."""
    output_tokens: int = Field(ge=0)
    """Output tokens (target tokenizer)."""
    seconds: float = Field(gt=0)
    """Total wall time."""
    tokens_per_second: float = Field(ge=0)
    """output_tokens / seconds."""
    drafted_steps: int = Field(0, ge=0)
    """Draft steps judged."""
    accepted_steps: int = Field(0, ge=0)
    """Draft steps accepted."""
    step_acceptance: float | None = Field(None, ge=0, le=1)
    """Accepted / judged draft steps (None without step speculation)."""
    accuracy: float = Field(ge=0, le=1)
    """Fraction of final answers right."""


class ConfigRun(_Record):
    """One configuration as run."""

    label: str
    """Short name, e.g. 'sync k1=3 k2=1' (the configuration's :attr:`SpecConfig.label`)."""
    config: SpecConfig
    """The configuration, complete (verifier and token drafter included)."""
    totals: Totals
    """Totals over the problems."""
    problems: list[ProblemRun] = Field(default_factory=list)
    """Per problem: output, committed steps (draft or target), tokens, times, correctness."""


class SyntheticAcceptance(_Record):
    """How a synthetic-acceptance run drew its decisions (``decode --engine synthetic``):
    real forwards of random-weight architectures, the verifier's and token verification's
    decisions drawn from a calibration instead of read from real text."""

    acceptance: str = Field(min_length=1)
    """The calibration as given (file or preset name)."""
    calibration: str = Field(min_length=1)
    """Its name."""
    step_acceptance: str
    """The step verifier's law (by depth, or α1 at every depth)."""
    token_acceptance: str
    """Token verification's law (by position, or α2 i.i.d.)."""
    step_lengths: str
    """The step-length law (the histogram, or a geometric law with the mean)."""
    verifier_cost: Literal["free", "calibration"] = "free"
    """Whether the synthetic verifier was free or cost the calibration's verifier_cost."""
    verifier_pair_seconds: float = Field(0.0, ge=0)
    """Seconds the verifier spent per (target, draft) pair."""
    context_bucket: int = Field(ge=1)
    """Forwards ran at the context rounded up to a multiple of this."""
    prefill: bool = True
    """Whether uncached prefix tokens were prefilled."""
    execution: str
    """'cuda graphs' or 'eager'."""
    seed: int = 0
    """The engines' and verifier's seed."""
    draws: Literal["position", "prefix"] = "prefix"
    """What keyed each step's random draws: ``position`` (the problem's prompt and the
    step's position after it: every configuration meets the same steps, common random
    numbers) or ``prefix`` (the whole prefix; every record written before the field
    existed)."""
    prompt_tokens: int | None = Field(None, ge=0)
    """The problems' mean prompt length in synthetic tokens (the decoder model's workload);
    None if not recorded."""
    architectures: dict[str, str] | None = None
    """Role (target, draft, and each token drafter by its model) → the architecture name
    of its hardware profile in the calibration; None if not recorded."""


class RunSettings(_Record):
    """How the problems were chosen and the models run (the same for every configuration)."""

    dataset: str = DEFAULT_DATASET
    """The reasoning-gym dataset the problems come from."""
    problems: int | None = Field(None, ge=1)
    """Problems per configuration."""
    seed: int | None = None
    """The dataset's seed."""
    threads: int | None = Field(None, ge=1)
    """CPU threads per model."""
    engine: str | None = None
    """Engine kind the run was asked for ('transformers' or 'vllm')."""
    config_file: str | None = None
    """The export file the configuration came from ('' or None: none)."""
    budget: int | None = Field(None, ge=1)
    """The optimizer's budget, when the run compared its choices."""
    max_steps: int | None = Field(None, ge=1)
    """Steps per problem at most, when one cap was set for the whole run."""
    max_step_tokens: int | None = Field(None, ge=1)
    """Token cap per step, when one cap was set for the whole run."""
    delimiter: str | None = None
    """The step delimiter, when one was set for the whole run."""
    device: str | None = None
    """Device the engines ran on (cpu or cuda; None in records from before it was
    recorded)."""
    dtype: str | None = None
    """Their dtype (None in records from before it was recorded)."""
    execution: str | None = None
    """How the target engine's forwards ran, in words (transformers' eager generate,
    vLLM's CUDA graphs, the synthetic engine's reference decoder as CUDA graphs): what
    produced every time in the record (None in records from before it was recorded)."""
    static_cache: int | None = Field(None, ge=1)
    """On the transformers engine's static or compiled path, the length (positions) of
    the static caches its calls ran on, prepared for the run's longest call (every
    forward attends over the whole cache, so it prices them); None on the eager path,
    other engines, and records from before 2026-11-28 evening."""
    prompt_tokens: float | None = Field(None, gt=0)
    """Mean prompt length of the run's problems in the target's tokens (the first
    prefill and the starting context of every call; None in records from before it was
    recorded: the decoder model then assumes one)."""
    order: Literal["configurations", "problems"] | None = None
    """How the configurations were timed: 'configurations', each over every problem
    before the next; 'problems', problem by problem with every configuration on each
    (in alternating directions), so that a slow spell of the machine falls on all of
    them alike instead of on one configuration's minutes; None in records from before it
    was recorded (they ran by configurations)."""
    synthetic: SyntheticAcceptance | None = None
    """Set when the acceptance was synthetic (drawn from a calibration, not real text);
    None: real models, real text."""
    prompts: list[str] | None = None
    """The problems' prompts as the decoder was given them, in the order of the problems
    (None in records from before they were stored): what a synthetic run's draws are
    keyed by, so that its sample can be rebuilt after the run
    (:func:`profiler.engines.synthetic.record_draws`)."""
    legacy: dict[str, Any] = Field(default_factory=dict)
    """Version-1 records only: settings that this format does not name, kept as written."""


class ChosenConfig(_Record):
    """One (mode, k1, k2) an optimizer chose."""

    mode: Literal["sync", "async"]
    """sync or async."""
    k1: int = Field(ge=1)
    """Target steps in parallel."""
    k2: int = Field(ge=1)
    """Target positions per token pass."""


class OptimizerChoices(_Record):
    """What the optimizers chose for the run's calibration, to compare with the measurement
    (``benchmarks/bench_decoder.py``)."""

    budget: int = Field(ge=1)
    """The parallelism budget M."""
    choices: dict[str, ChosenConfig]
    """Optimizer (e.g. 'closed form, async', 'priced by T(b), sync') -> its choice."""


class CostProbe(_Record):
    """A short measurement of the engines' call costs taken while the run ran (beside
    its configurations, not on its problems), so that a drift of the machine between
    the calibration and the run can be told from the model's own error
    (:func:`specmodel.prediction.cost_drift`)."""

    date: str
    """ISO date and time the probe finished."""
    before: str | None = None
    """The configuration it was taken just before (None: after the last one)."""
    costs: EngineCosts
    """The cells it timed (a small grid of the calibration's ``engine_costs`` phase:
    target and draft, no speculative calls), and where the probe paired the two models'
    calls, each model's slowdown beside the other (``concurrent_slowdown``)."""

    def cells_text(self) -> str:
        """The cells it timed, one model after the other: ``target T(1, 87) = 481 ms,
        T(2, 87) = 1020 ms; draft …`` (milliseconds per generated token), then the
        slowdowns beside the other model where it measured them: ``; beside each other
        (5 paired rounds): target 1.16 ± 0.04×, draft 1.05 ± 0.02×``."""
        models = (("target", self.costs.target), ("draft", self.costs.draft))
        text = "; ".join(
            f"{role} " + ", ".join(f"T({p.batch}, {p.context}) = {p.per_token * 1e3:.0f} ms"
                                   for p in m.points)
            for role, m in models if m is not None)
        slow = [(role, m.concurrent_slowdown) for role, m in models
                if m is not None and m.concurrent_slowdown is not None]
        if slow:
            n = slow[0][1].n
            text += f"; beside each other ({n} paired round{'s' * (n != 1)}): " + ", ".join(
                f"{role} {s.value:.2f}" + ("" if s.stderr is None else f" ± {s.stderr:.2f}")
                + "×" for role, s in slow)
        return text


class RunRecord(_Record):
    """A decoder run: configurations, measurements and the calibration that predicts them."""

    schema_version: Literal[2] = RUN_SCHEMA_VERSION
    """The format version (2; version-1 files are migrated on load)."""
    kind: Literal["specmodel-run"] = "specmodel-run"
    """Marks the file as a run record."""
    created: str
    """ISO date and time of the run."""
    machine: MachineDetails | None = None
    """CPU, cores, memory, platform, Python (the same record as a calibration's)."""
    versions: dict[str, str] = Field(default_factory=dict)
    """Package versions (specmodel, torch, transformers, vllm, ...)."""
    models: dict[str, str] = Field(default_factory=dict)
    """Role -> model (target, draft, verifier)."""
    engine: str
    """Engine that decoded."""
    settings: RunSettings = Field(default_factory=RunSettings)
    """Dataset, problems, seed, threads, engine, config file, caps."""
    calibration: Calibration | None = None
    """The calibration used for the predictions (None: give one to
    :func:`specmodel.prediction.compare`)."""
    baseline: str = "target"
    """Label of the target-only configuration that defines speedup 1."""
    configs: list[ConfigRun] = Field(min_length=1)
    """Every configuration run, in order."""
    optimizer: OptimizerChoices | None = None
    """What the optimizer chose for this calibration and budget, when recorded."""
    cost_probes: list[CostProbe] = Field(default_factory=list)
    """Engine-cost probes taken during the run, in order (empty: none taken)."""


def migrate_version1(data: dict[str, Any]) -> dict[str, Any]:
    """A version-1 run record as version-2 data.

    Each configuration's old decoder settings become a :class:`SpecConfig`
    (:meth:`SpecConfig.from_legacy_decoder`, the verifier from the record's
    ``models['verifier']``); settings this format does not name move to
    ``settings.legacy`` (version 1's settings were free-form).  Anything else
    unknown is left for validation to reject.
    """
    out = dict(data)
    out["schema_version"] = RUN_SCHEMA_VERSION
    models = data.get("models")
    verifier = models.get("verifier") if isinstance(models, dict) else None
    if not isinstance(verifier, str) or not verifier:
        verifier = None
    configs = []
    for i, c in enumerate(data.get("configs") or []):
        if isinstance(c, dict) and isinstance(c.get("config"), dict):
            try:
                cfg = SpecConfig.from_legacy_decoder(c["config"], verifier)
            except SpecmodelError as e:
                raise SpecmodelError(f"configs.{i}.{e}") from e
            except (ValueError, TypeError, KeyError, AttributeError) as e:
                raise SpecmodelError(f"configs.{i}.config: not a version-1 decoder "
                                     f"configuration ({type(e).__name__}: {e})") from e
            c = {**c, "config": cfg.model_dump(mode="json")}
        configs.append(c)
    out["configs"] = configs
    settings = data.get("settings")
    if isinstance(settings, dict):
        named = set(RunSettings.model_fields) - {"legacy"}
        out["settings"] = {k: v for k, v in settings.items() if k in named}
        extra = {k: v for k, v in settings.items() if k not in named}
        if extra:
            out["settings"]["legacy"] = extra
    return out


def check_consistency(record: RunRecord, origin: str, *, require_baseline: bool = False
                      ) -> None:
    """Refuse a record whose numbers contradict each other; each failure is one
    :class:`SpecmodelError` line naming ``origin`` (the file) and the field.

    Checked: every ``totals.tokens_per_second`` equals output_tokens ÷ seconds (within
    :data:`TOKENS_PER_SECOND_RTOL`), seconds finite and > 0, configuration labels
    unique, each label its configuration's :attr:`SpecConfig.label`, and, with
    ``require_baseline``, the ``baseline`` label among them (a record decoded without
    the baseline — ``decode --no-baseline``, or one being resumed — legitimately lacks
    it; :func:`specmodel.prediction.compare` refuses such a record itself).
    """
    seen: set[str] = set()
    for i, run in enumerate(record.configs):
        where = f"{origin}: configs.{i}"
        t = run.totals
        if not (math.isfinite(t.seconds) and t.seconds > 0):
            raise SpecmodelError(f"{where}.totals.seconds must be finite and > 0, "
                                 f"got {t.seconds!r}")
        rate = t.output_tokens / t.seconds
        if not math.isclose(t.tokens_per_second, rate, rel_tol=TOKENS_PER_SECOND_RTOL,
                            abs_tol=0.0):
            raise SpecmodelError(
                f"{where}.totals.tokens_per_second: {t.tokens_per_second!r} disagrees with "
                f"output_tokens / seconds = {t.output_tokens} / {t.seconds!r} = {rate!r} "
                f"(allowed: {TOKENS_PER_SECOND_RTOL:g} relative)")
        if run.label in seen:
            raise SpecmodelError(f"{where}.label: {run.label!r} is duplicated (configuration "
                                 f"labels must be unique)")
        seen.add(run.label)
        if run.label != run.config.label:
            raise SpecmodelError(f"{where}.label: {run.label!r} contradicts its config, whose "
                                 f"label is {run.config.label!r}")
    if require_baseline and record.baseline not in seen:
        raise SpecmodelError(f"{origin}: baseline: {record.baseline!r} is not the label of "
                             f"any configuration (labels: {', '.join(sorted(seen))})")


def load_run_record(path: str | Path, *, require_baseline: bool = False) -> RunRecord:
    """Read and validate a run record (version 1 is migrated); anything else — a wrong
    type, a string for a number, a non-finite number, a missing ``schema_version``, an
    inconsistent record (:func:`check_consistency`; ``require_baseline``: the baseline
    configuration must be in it) — is one :class:`SpecmodelError` line naming the file
    and the field."""
    p = Path(path)
    data = read_json_file(p, "run record")
    if not isinstance(data, dict) or data.get("kind") != "specmodel-run":
        raise SpecmodelError(
            f"{p} is not a specmodel run record (kind must be 'specmodel-run')")
    if "schema_version" not in data:
        raise SpecmodelError(f"{p}: schema_version: field required (this specmodel reads "
                             f"1 and {RUN_SCHEMA_VERSION})")
    version = data.get("schema_version")
    if type(version) is not int or version not in (1, RUN_SCHEMA_VERSION):
        raise SpecmodelError(
            f"{p}: schema_version {version!r} is not supported "
            f"(this specmodel reads 1 and {RUN_SCHEMA_VERSION})"
        )
    if data.get("calibration") is not None:
        check_file_data(data["calibration"], f"{p}: calibration")
    if version == 1:
        data = migrate_version1(data)
    record = validate_file_data(RunRecord, data, str(p))
    check_consistency(record, str(p), require_baseline=require_baseline)
    return record
