"""Run records: what the real decoder measured, one file per run.

A run record (JSON, written by ``specmodel decode`` and ``benchmarks/bench_decoder.py``)
holds, for one set of problems, models and engine, the measured totals of every
configuration that was run, the target-only baseline among them, and the
calibration whose numbers predict each configuration's speedup
(:mod:`specmodel.prediction` holds prediction against measurement).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from specmodel.formats.calibration import Calibration
from specmodel.formats.jsonio import read_json_file

__all__ = [
    "RUN_SCHEMA_VERSION",
    "ConfigRun",
    "RunRecord",
    "load_run_record",
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
