"""Run records of the real decoder, and prediction held against measurement.

A run record (JSON, written by ``specmodel decode`` and ``benchmarks/bench_decoder.py``)
holds, for one set of problems, models and engine, the measured totals of every
configuration that was run, the target-only baseline among them, and the
calibration whose numbers predict each configuration's speedup.
:func:`compare` puts the two side by side:

* ``measured_speedup`` = tokens per second of the configuration / tokens per
  second of the baseline (target-only, k1 = k2 = 1) in the same run;
* ``predicted_speedup`` = the papers' closed form as it stands,
  f(k1)·g(k2) (``specmodel.hybrid.h``; g alone for k1 = 1, f alone for k2 = 1),
  which assumes a flat batch cost, a free verifier and i.i.d. acceptance;
* ``predicted_priced`` = the same configuration priced by the calibration's
  measured T(b) (``specmodel.batch_cost.cost_aware_speedup``), when the
  calibration has one;
* ``error`` = predicted / measured − 1 (positive: the model over-predicts).

This module is pure (no torch): ``specmodel validate`` answers in well under a second.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from specmodel.calibration import Calibration
from specmodel.validation import read_json_file

__all__ = [
    "RUN_SCHEMA_VERSION",
    "ConfigRun",
    "RunRecord",
    "ValidationRow",
    "calibration_mismatches",
    "compare",
    "load_run_record",
    "predict",
]

RUN_SCHEMA_VERSION = 1
"""The run record format version."""


class _Loose(BaseModel):
    model_config = ConfigDict(extra="allow")


class DecodeSettings(_Loose):
    """What one configuration ran with (the decoder's DecoderConfig, as data)."""

    mode: Literal["sync", "async"]
    """sync (Algorithm 1) or async."""
    k1: int = Field(ge=1)
    """Target steps in parallel (draft steps + 1)."""
    k2: int = Field(ge=1)
    """Target positions per token-speculation pass (draft tokens + 1)."""
    width: int = Field(1, ge=1)
    """Draft branches per position (multi-branch drafting, sync); 1 = a single chain."""


class Totals(_Loose):
    """A configuration's totals over the problems."""

    problems: int = Field(ge=1)
    """Problems decoded."""
    output_tokens: int = Field(ge=0)
    """Output tokens (target tokenizer)."""
    seconds: float = Field(gt=0)
    """Total wall time."""
    tokens_per_second: float = Field(ge=0)
    """output_tokens / seconds."""
    accuracy: float = Field(ge=0, le=1)
    """Fraction of final answers right."""
    step_acceptance: float | None = None
    """Accepted / judged draft steps (None without step speculation)."""


class ConfigRun(_Loose):
    """One configuration as run."""

    label: str
    """Short name, e.g. 'sync k1=3 k2=1'."""
    config: DecodeSettings
    """The decoder settings."""
    totals: Totals
    """Totals over the problems."""
    problems: list[dict[str, Any]] = Field(default_factory=list)
    """Per problem: output, committed steps (draft or target), tokens, times, correctness."""


class RunRecord(_Loose):
    """A decoder run: configurations, measurements and the calibration that predicts them."""

    schema_version: int = RUN_SCHEMA_VERSION
    """The format version (currently 1)."""
    kind: Literal["specmodel-run"] = "specmodel-run"
    """Marks the file as a run record."""
    created: str
    """ISO date and time of the run."""
    machine: dict[str, Any] = Field(default_factory=dict)
    """Platform, CPU, cores, memory."""
    versions: dict[str, str] = Field(default_factory=dict)
    """Package versions (specmodel, torch, transformers, vllm, ...)."""
    models: dict[str, str] = Field(default_factory=dict)
    """Role -> model (target, draft, verifier)."""
    engine: str
    """Engine that decoded."""
    settings: dict[str, Any] = Field(default_factory=dict)
    """Problems, seed, threads, delimiter, caps."""
    calibration: Calibration | None = None
    """The calibration used for the predictions (None: give one to :func:`compare`)."""
    baseline: str = "target"
    """Label of the target-only configuration that defines speedup 1."""
    configs: list[ConfigRun] = Field(min_length=1)
    """Every configuration run, in order."""
    optimizer: dict[str, Any] | None = None
    """What ``optimize_budget`` chose for this calibration and budget, when recorded."""


def load_run_record(path: str | Path) -> RunRecord:
    """Read and validate a run record (a clear ValueError for anything else)."""
    p = Path(path)
    data = read_json_file(p, "run record")
    if not isinstance(data, dict) or data.get("kind") != "specmodel-run":
        raise ValueError(f"{p} is not a specmodel run record (kind must be 'specmodel-run')")
    if data.get("schema_version") != RUN_SCHEMA_VERSION:
        raise ValueError(
            f"{p}: schema_version {data.get('schema_version')!r} is not supported "
            f"(this specmodel reads {RUN_SCHEMA_VERSION})"
        )
    try:
        return RunRecord.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise ValueError(f"{p}: {where}: {first['msg']}") from e


def predict(
    cal: Calibration, mode: str, k1: int, k2: int, width: int = 1
) -> tuple[float, float | None]:
    """(closed-form speedup f(k1)·g(k2), the same priced by the calibration's T(b) or None).

    With ``width`` W > 1 (sync multi-branch drafting) f is
    :func:`specmodel.step_level.f_sync_multibranch` with the independent-branch
    acceptance 1 − (1 − α1)^W (an upper bound: real branches are correlated) and a
    flat draft batch, priced by :func:`specmodel.batch_cost.cost_aware_multibranch_speedup`.
    """
    from specmodel.batch_cost import cost_aware_multibranch_speedup, cost_aware_speedup
    from specmodel.hybrid import h

    a1, c1 = cal.step.alpha1, cal.step.c1
    a2, c2 = cal.token.alpha2, cal.token.c2
    m = mode if k1 > 1 else "sync"  # without step speculation the mode does not matter
    curve = cal.batch_cost_curve()
    priced = None
    if width > 1 and k1 > 1:
        from specmodel.step_level import f_sync_multibranch
        from specmodel.token_level import g_token

        if m != "sync":
            raise ValueError(f"width must be 1 in {m} mode, got {width}")
        f = f_sync_multibranch(a1, c1, k1, width).speedup
        if curve is not None:
            priced = cost_aware_multibranch_speedup(a1, c1, a2, c2, k1, k2, width, curve)[0]
        return f * float(g_token(a2, c2, k2)), priced
    closed = float(h(m, a1, c1, a2, c2, k1, k2))
    if curve is not None:
        priced = cost_aware_speedup(m, a1, c1, a2, c2, k1, k2, curve)[0]
    return closed, priced


class ValidationRow(BaseModel):
    """One configuration: predicted against measured."""

    config: str
    """The configuration's label."""
    mode: str
    """sync or async."""
    k1: int
    """Target steps in parallel."""
    k2: int
    """Target positions per token pass."""
    width: int = 1
    """Draft branches per position."""
    predicted_speedup: float | None
    """The papers' closed form f(k1)·g(k2) (None where it is undefined, e.g. async with c1 ≥ 1)."""
    measured_speedup: float
    """Tokens/s of this configuration over the baseline's, same run."""
    error: float | None
    """predicted / measured − 1."""
    predicted_priced: float | None
    """Priced by the measured T(b), when the calibration has it."""
    priced_error: float | None
    """predicted_priced / measured − 1."""
    step_acceptance: float | None
    """Measured accepted / judged draft steps."""
    accuracy: float
    """Fraction of final answers right."""


def _rel_error(pred: float | None, measured: float) -> float | None:
    if pred is None or measured <= 0 or not math.isfinite(pred):
        return None
    return pred / measured - 1.0


def calibration_mismatches(record: RunRecord, calibration: Calibration | None = None) -> list[str]:
    """Where the calibration was measured on other models than the run.

    Compares the target, draft and verifier the calibration names (its
    provenance) with the run's; a calibration that names none is not checked.
    α1 belongs to one draft, target and verifier together, so a prediction from
    another verifier's α1 is no test of the model.
    """
    cal = calibration or record.calibration
    if cal is None:
        return []
    named = cal.provenance.models
    out = []
    for role in ("target", "draft", "verifier"):
        theirs, ours = named.get(role), record.models.get(role)
        if theirs and ours and theirs != ours:
            out.append(f"{role}: the calibration measured {theirs}, the run used {ours}")
    return out


def compare(record: RunRecord, calibration: Calibration | None = None) -> list[ValidationRow]:
    """Predicted against measured speedup for every configuration of ``record``.

    ``calibration`` replaces the record's own (to predict the same run from
    another calibration).
    """
    cal = calibration or record.calibration
    if cal is None:
        raise ValueError("calibration must be given: the run record carries none")
    base = [c for c in record.configs if c.label == record.baseline]
    if not base:
        raise ValueError(
            f"baseline {record.baseline!r} is not among the configurations "
            f"{[c.label for c in record.configs]}"
        )
    base_tps = base[0].totals.tokens_per_second
    if base_tps <= 0:
        raise ValueError("the baseline produced no tokens: no speedup can be measured")
    rows = []
    for c in record.configs:
        s = c.config
        measured = c.totals.tokens_per_second / base_tps
        try:
            closed, priced = predict(cal, s.mode, s.k1, s.k2, s.width)
        except ValueError:
            closed, priced = None, None
        rows.append(
            ValidationRow(
                config=c.label,
                mode=s.mode,
                k1=s.k1,
                k2=s.k2,
                width=s.width,
                predicted_speedup=closed,
                measured_speedup=measured,
                error=_rel_error(closed, measured),
                predicted_priced=priced,
                priced_error=_rel_error(priced, measured),
                step_acceptance=c.totals.step_acceptance,
                accuracy=c.totals.accuracy,
            )
        )
    return rows
