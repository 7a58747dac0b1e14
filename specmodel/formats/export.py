"""The export file: the chosen configuration for the serving engine and the decoder.

``specmodel export --engine vllm -o F`` writes an :class:`ExportFile`;
``specmodel decode --config F`` reads its :class:`~specmodel.config.SpecConfig`
back, every field (the verifier included).  The file holds:

* ``config`` — the run configuration (mode, k1, k2, width, token drafter,
  verifier, step settings);
* ``speculative_config`` — vLLM's view of it, derived from ``config`` by
  :meth:`specmodel.config.SpecConfig.speculative_config` (vLLM's field names;
  pass it to ``vllm.LLM(speculative_config=...)`` or ``vllm serve
  --speculative-config``).  It is written for vLLM and checked on load: a file
  whose ``speculative_config`` disagrees with its ``config`` is rejected (edit
  ``config``);
* ``batch_schedule`` — vLLM's ``num_speculative_tokens_per_batch_size``, inclusive
  ranges ``[start, end, K]`` from batch size 1, when a measured T(b) says K should
  change with the number of concurrent requests (K = 0: no speculation there);
* ``prediction`` — what specmodel predicts for the configuration, from which
  calibration and by which model.

Version-1 files (``lookahead_reasoning`` + ``speculative_config`` sections, no
``kind``) still load: :func:`load_export` converts them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator

from specmodel.config import SpecConfig, TokenDrafter, VerifierSpec, build
from specmodel.errors import SpecmodelError
from specmodel.formats.jsonio import read_json_file, write_json_atomic
from specmodel.optimize.budget import OptimizeResult
from specmodel.optimize.pricing import BatchSizeDecision, CostAwarePoint

__all__ = [
    "EXPORT_SCHEMA_VERSION",
    "MAX_SPECULATIVE_TOKENS",
    "ExportFile",
    "Prediction",
    "batch_size_schedule",
    "export_vllm",
    "load_export",
    "save_export",
]

EXPORT_SCHEMA_VERSION = 2
"""The export file format version (1: the sections ``lookahead_reasoning`` and
``speculative_config`` without a ``kind``)."""


MAX_SPECULATIVE_TOKENS = 32
"""The most draft tokens per pass (vLLM's ``num_speculative_tokens``, the library's k2 − 1)
an export writes: beyond it acceptance α2^k is negligible for any measured α2 < 0.9
(0.9^32 ≈ 3 %), and vLLM allocates per-token verification buffers for every draft
position.  A larger optimum is capped and the export says so in ``notes``."""
MAX_DRAFT_STEPS = 32
"""The most draft steps ahead (k1 − 1) an export writes for the Lookahead Reasoning
decoder (each is a concurrent branch the target expands); larger values are capped."""


ScheduleRange = Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=3, max_length=3)]
"""One range of vLLM's schedule: [first batch size, last batch size, K]."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Prediction(_Strict):
    """What specmodel predicts for the exported configuration."""

    speedup: float = Field(gt=0, allow_inf_nan=False)
    """Predicted speedup over target-only decoding."""
    model: Literal["flat-budget f·g", "priced by the measured T(b)", "decoder model"]
    """Which model produced ``speedup``: the papers' closed form under a flat budget, or the
    same priced by the calibration's measured batch cost."""
    regime: Literal["hybrid", "token-only", "step-only", "none"]
    """The configuration's regime."""
    budget: int = Field(ge=1)
    """The parallelism budget M the optimizer was given."""
    k1: int = Field(ge=1)
    """k1 of the exported configuration."""
    k2: int = Field(ge=1)
    """k2 of the exported configuration."""
    alpha1: float
    """Step acceptance rate used."""
    c1: float
    """Draft-step cost ratio used."""
    alpha2: float
    """Token acceptance rate used."""
    c2: float
    """Draft-token cost ratio used."""
    calibration: str = ""
    """Name of the calibration the parameters came from."""
    calibration_source: str = ""
    """measured / paper / user."""

    @property
    def priced_by_batch_cost(self) -> bool:
        """Whether the measured T(b) priced the prediction."""
        return self.model == "priced by the measured T(b)"


class ExportFile(_Strict):
    """Everything ``specmodel export --engine vllm`` writes."""

    schema_version: Literal[2] = EXPORT_SCHEMA_VERSION
    """The format version."""
    kind: Literal["specmodel-export"] = "specmodel-export"
    """Marks the file as an export file."""
    engine: Literal["vllm"] = "vllm"
    """The serving engine the ``speculative_config`` is for."""
    config: SpecConfig
    """The run configuration (what ``specmodel decode --config`` runs)."""
    batch_schedule: list[ScheduleRange] | None = None
    """vLLM's num_speculative_tokens_per_batch_size: inclusive [start, end, K] ranges."""
    prediction: Prediction
    """The predicted speedup and where it came from."""
    notes: list[str] = Field(default_factory=list)
    """Caveats (e.g. the schedule derived from a measured T(b))."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def speculative_config(self) -> dict[str, Any] | None:
        """vLLM's speculative_config (None when no token is drafted), derived from ``config``
        and ``batch_schedule``."""
        return self.config.speculative_config(self.batch_schedule)

    @model_validator(mode="before")
    @classmethod
    def _drop_derived_view(cls, data: Any) -> Any:
        """A written ``speculative_config`` is derived state, not input (:func:`load_export`
        checks that it is what ``config`` gives)."""
        if isinstance(data, dict) and "speculative_config" in data:
            data = {k: v for k, v in data.items() if k != "speculative_config"}
        return data

    def check_view(self, written: dict[str, Any] | None, origin: str = "") -> None:
        """Raise when a file's ``speculative_config`` disagrees with its ``config``."""
        derived = self.speculative_config
        if _normal(written) != _normal(derived):
            head = f"{origin}: " if origin else ""
            raise SpecmodelError(
                f"{head}speculative_config {written} is not what config gives ({derived}): "
                "it is derived from config — edit config instead"
            )

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (None fields kept: speculative_config null says none)."""
        return self.model_dump(mode="json")


def _normal(spec: dict[str, Any] | None) -> dict[str, Any] | None:
    if spec is None:
        return None
    out = dict(spec)
    if "num_speculative_tokens_per_batch_size" in out:
        out["num_speculative_tokens_per_batch_size"] = [
            list(r) for r in out["num_speculative_tokens_per_batch_size"]]
    return out


def batch_size_schedule(decisions: Sequence[BatchSizeDecision]) -> list[list[int]]:
    """vLLM's ``num_speculative_tokens_per_batch_size`` from per-batch-size decisions.

    Each measured batch size B_i covers [B_i, B_{i+1} − 1]; the last covers only
    itself (vLLM carries the last K forward).  Adjacent ranges with the same K
    are merged.  K is the token-only optimum's draft length (k2 − 1), capped at
    :data:`MAX_SPECULATIVE_TOKENS`.
    """
    if not decisions:
        raise ValueError("decisions must not be empty")
    ordered = sorted(decisions, key=lambda d: d.serving_batch)
    if ordered[0].serving_batch != 1:
        raise ValueError("decisions must start at serving batch size 1 (vLLM requires it)")
    ranges: list[list[int]] = []
    for i, d in enumerate(ordered):
        hi = ordered[i + 1].serving_batch - 1 if i + 1 < len(ordered) else d.serving_batch
        k = min(d.token_only.k2 - 1, MAX_SPECULATIVE_TOKENS)
        if ranges and ranges[-1][2] == k:
            ranges[-1][1] = hi
        else:
            ranges.append([d.serving_batch, hi, k])
    return ranges


def export_vllm(
    result: OptimizeResult,
    *,
    calibration_name: str = "",
    calibration_source: str = "",
    decisions: Sequence[BatchSizeDecision] | None = None,
    priced: CostAwarePoint | None = None,
    concurrency: int = 1,
    decoder: Any = None,
) -> ExportFile:
    """The export file for the point ``specmodel optimize`` leads with.

    With ``priced`` (the optimum priced by a measured T(b) at ``concurrency`` requests)
    the decoder runs that point; else with ``decisions`` the priced optimum at the
    smallest batch size; else the leanest point within the optimizer's tolerance
    (``result.economical``, else ``result.best``).  With ``decoder`` (the decoder
    model's :class:`~specmodel.decodermodel.search.DecoderOptimum`, what ``optimize``
    leads with when the calibration has engine costs) its leanest configuration within
    its tolerance, mode and width included.  ``decisions`` (per serving batch
    size) give vLLM's per-batch-size K.  k2 − 1 and k1 − 1 beyond
    :data:`MAX_SPECULATIVE_TOKENS` / :data:`MAX_DRAFT_STEPS` are capped, saying so in
    ``notes``.
    """
    config = result.config
    notes: list[str] = []
    schedule = batch_size_schedule(decisions) if decisions else None
    if priced is None and decisions:
        priced = min(decisions, key=lambda d: d.serving_batch).best
        concurrency = min(d.serving_batch for d in decisions)
    if decoder is not None:
        pick = decoder.leanest
        config = pick.config(config)
        speedup = pick.speedup
        notes.append(
            f"decoder model (every engine call priced): {pick.label}, the leanest within "
            f"{decoder.tolerance:.0%} of its best ({decoder.best.label}, "
            f"{decoder.best.speedup:.4g}x); the flat-budget optimum was ({result.k1}, "
            f"{result.k2}).")
    elif priced is not None:
        config = config.replace(k1=priced.k1, k2=priced.k2)
        speedup = priced.speedup
        notes.append(
            f"priced by the measured T(b): (k1, k2) = ({priced.k1}, {priced.k2}) at "
            f"{concurrency} concurrent request{'s' if concurrency != 1 else ''}; the "
            f"flat-budget optimum was ({result.k1}, {result.k2})."
        )
    else:
        chosen = result.economical if result.economical is not None else result.best
        config = config.replace(k1=chosen.k1, k2=chosen.k2)
        speedup = chosen.speedup
        if result.economical is not None:
            notes.append(
                f"the leanest point within 0.1% of the optimum: (k1, k2) = ({chosen.k1}, "
                f"{chosen.k2}), budget {chosen.parallel_dim}, {chosen.speedup:.4g}x; the "
                f"optimum ({result.k1}, {result.k2}) gives {result.speedup:.4g}x."
            )
    if config.k2 - 1 > MAX_SPECULATIVE_TOKENS:
        notes.append(
            f"num_speculative_tokens capped at {MAX_SPECULATIVE_TOKENS} (the model's choice "
            f"was {config.k2 - 1}); the predicted speedup is the uncapped point's."
        )
        config = config.replace(k2=MAX_SPECULATIVE_TOKENS + 1)
    if config.k1 - 1 > MAX_DRAFT_STEPS:
        notes.append(
            f"draft steps capped at {MAX_DRAFT_STEPS} (the model's choice was "
            f"{config.k1 - 1}); the predicted speedup is the uncapped point's."
        )
        config = config.replace(k1=MAX_DRAFT_STEPS + 1)
    if decisions and any(d.token_only.k2 - 1 > MAX_SPECULATIVE_TOKENS for d in decisions):
        notes.append(f"num_speculative_tokens_per_batch_size capped at "
                     f"{MAX_SPECULATIVE_TOKENS}.")
    if config.speculative_config(schedule) is None:
        notes.append("token-level speculation does not pay here: no speculative_config.")
    elif schedule:
        notes.append(
            "num_speculative_tokens_per_batch_size comes from the calibration's measured "
            "T(b): K per serving batch size is the token-only optimum priced by T(b)."
        )
    p = result.params
    prediction = Prediction(
        speedup=speedup,
        model=("decoder model" if decoder is not None else
               "priced by the measured T(b)" if priced is not None else "flat-budget f·g"),
        regime=config.regime,  # type: ignore[arg-type]
        budget=result.budget, k1=config.k1, k2=config.k2,
        alpha1=p.alpha1, c1=p.c1, alpha2=p.alpha2, c2=p.c2,
        calibration=calibration_name, calibration_source=calibration_source,
    )
    return ExportFile(config=config, batch_schedule=schedule, prediction=prediction, notes=notes)


def save_export(export: ExportFile, path: str | Path) -> Path:
    """Write ``export`` atomically (:func:`specmodel.formats.jsonio.write_json_atomic`)."""
    return write_json_atomic(export.to_dict(), path)


def load_export(path: str | Path) -> ExportFile:
    """Read an export file (version 2, or version 1 converted), validated: unknown keys
    are rejected with the field named, and ``speculative_config`` must be what ``config``
    gives."""
    p = Path(path)
    data = read_json_file(p, "export file")
    if not isinstance(data, dict):
        raise SpecmodelError(f"{p} is not a specmodel export file (a JSON object is expected)")
    if "kind" not in data and "lookahead_reasoning" in data:
        return _from_version1(data, str(p))
    if data.get("kind") != "specmodel-export":
        raise SpecmodelError(f"{p} is not a specmodel export file "
                             "(kind must be 'specmodel-export')")
    written = data.get("speculative_config")
    export = build(ExportFile, data, str(p))
    if "speculative_config" in data:
        export.check_view(written, str(p))
    return export


def _from_version1(data: dict[str, Any], origin: str) -> ExportFile:
    """A version-1 export file: ``lookahead_reasoning`` (mode, k1, draft_steps, k2, width,
    step_delimiter, verifier) and ``speculative_config`` (vLLM's) as the configuration."""
    lr = data.get("lookahead_reasoning")
    if not isinstance(lr, dict):
        raise SpecmodelError(f"{origin}: lookahead_reasoning must be an object")
    spec = data.get("speculative_config") or {}
    known_lr = {"mode", "k1", "draft_steps", "k2", "width", "step_delimiter", "verifier"}
    extra = sorted(set(lr) - known_lr)
    if extra:
        raise SpecmodelError(f"{origin}: lookahead_reasoning.{extra[0]}: unknown field")
    drafter: dict[str, Any] = {"method": spec.get("method", "ngram")}
    for key in ("model", "prompt_lookup_min", "prompt_lookup_max"):
        if spec.get(key) is not None:
            drafter[key] = spec[key]
    config: dict[str, Any] = {key: lr[key] for key in ("mode", "k1", "k2", "width")
                              if key in lr}
    config["token"] = build(TokenDrafter, drafter, f"{origin}: speculative_config").model_dump()
    if "step_delimiter" in lr:
        config["step_delimiter"] = lr["step_delimiter"]
    if lr.get("verifier"):
        config["verifier"] = VerifierSpec.from_name(str(lr["verifier"])).model_dump()
    pred = dict(data.get("prediction") or {})
    priced = bool(pred.pop("priced_by_batch_cost", False))
    schedule = spec.get("num_speculative_tokens_per_batch_size")
    out: dict[str, Any] = {
        "config": config,
        "batch_schedule": [list(r) for r in schedule] if schedule else None,
        "notes": list(data.get("notes") or []),
        "prediction": {
            **{k: pred[k] for k in ("speedup", "regime", "budget", "k1", "k2", "alpha1", "c1",
                                    "alpha2", "c2", "calibration", "calibration_source")
               if k in pred},
            "model": "priced by the measured T(b)" if priced else "flat-budget f·g",
        },
    }
    return build(ExportFile, out, f"{origin} (version 1)")
