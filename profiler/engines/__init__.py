"""Engines behind one small interface: generate one reasoning step for a batch of prefixes.

* :mod:`profiler.engines.base` — the :class:`Engine` protocol, :class:`StepOutput`,
  :class:`StepBatch`, :class:`EngineError` and helpers;
* :mod:`profiler.engines.hf` — :class:`HFEngine` (Hugging Face transformers);
* :mod:`profiler.engines.vllm_engine` — :class:`VLLMEngine` (vLLM);
* :mod:`profiler.engines.synthetic` — :class:`SyntheticEngine` (real forwards of a
  random-weight architecture, output drawn from a calibration's acceptance);
* here, the registry: :data:`ENGINES` (kind → builder) and :func:`make_engine`.

Token-level speculation is :class:`specmodel.config.TokenSpeculation`.  Importing
this package imports neither torch, transformers nor vllm.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from profiler.engines.base import (
    STEP_DELIMITER,
    ContinuousEngine,
    Engine,
    EngineError,
    StepBatch,
    StepOutput,
    StepServer,
    counter_delta,
    cut_at_step,
    init_worker_thread,
)
from profiler.engines.hf import DEFAULT_DECODE_PATH, HFEngine, hf_execution
from profiler.engines.synthetic import SyntheticEngine, synthetic_execution
from profiler.engines.vllm_engine import VLLMEngine, vllm_execution
from specmodel.config import TokenSpeculation

__all__ = [
    "ENGINES",
    "ENGINE_KINDS",
    "ENGINE_OPTIONS",
    "STEP_DELIMITER",
    "ContinuousEngine",
    "Engine",
    "EngineBuilder",
    "EngineError",
    "HFEngine",
    "StepBatch",
    "StepOutput",
    "StepServer",
    "SyntheticEngine",
    "VLLMEngine",
    "counter_delta",
    "execution_of",
    "cut_at_step",
    "init_worker_thread",
    "make_engine",
]

EngineBuilder = Callable[..., Engine]
"""``builder(model, *, threads, delimiter, speculation, device, dtype, **options) -> Engine``
(``options``: what :func:`make_engine` passes on, e.g. the synthetic engine's
``acceptance`` and ``role``)."""


def _transformers(model: str | Path, *, threads: int, delimiter: str,
                  speculation: TokenSpeculation | None, device: str = "cpu",
                  dtype: str = "float32",
                  decode_path: str = DEFAULT_DECODE_PATH) -> Engine:
    return HFEngine(model, threads=threads, delimiter=delimiter, speculation=speculation,
                    device=device, dtype=dtype, decode_path=decode_path)


def _vllm(model: str | Path, *, threads: int, delimiter: str,
          speculation: TokenSpeculation | None, device: str = "cpu",
          dtype: str = "float32") -> Engine:
    return VLLMEngine(model, threads=threads, delimiter=delimiter, speculation=speculation,
                      device=device, dtype=dtype)


def _synthetic(model: str | Path, *, threads: int, delimiter: str,
               speculation: TokenSpeculation | None, device: str = "cpu",
               dtype: str = "float32", **options: Any) -> Engine:
    if options.get("acceptance") is None:
        raise ValueError("the synthetic engine needs an acceptance calibration "
                         "(--acceptance CALIBRATION_FILE_OR_PRESET)")
    return SyntheticEngine(model, threads=threads, delimiter=delimiter,
                           speculation=speculation, device=device, dtype=dtype, **options)


ENGINES: dict[str, EngineBuilder] = {"transformers": _transformers, "vllm": _vllm,
                                     "synthetic": _synthetic}
"""Engine kind → builder (what :func:`make_engine` and ``--engine`` accept)."""
ENGINE_KINDS: tuple[str, ...] = tuple(ENGINES)
"""The engine kinds, in order."""
ENGINE_OPTIONS: dict[str, tuple[str, ...] | None] = {
    "transformers": ("decode_path",), "vllm": (), "synthetic": None}
"""Engine kind → the options its builder takes (None: its own check)."""


def _builder(kind: str) -> EngineBuilder:
    """The builder of engine ``kind``; a ValueError naming the kinds where it is none."""
    builder = ENGINES.get(kind)
    if builder is None:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {kind!r}")
    return builder


def make_engine(
    kind: str,
    model: str | Path,
    *,
    threads: int = 1,
    delimiter: str = STEP_DELIMITER,
    speculation: TokenSpeculation | None = None,
    device: str = "cpu",
    dtype: str = "float32",
    options: Mapping[str, Any] | None = None,
) -> Engine:
    """Build an engine by kind (:data:`ENGINES`): 'transformers' (:class:`HFEngine`;
    ``options`` may hold its ``decode_path``), 'vllm' (:class:`VLLMEngine`) or
    'synthetic' (:class:`SyntheticEngine`; ``options`` must hold its ``acceptance``
    calibration, and may hold ``role``, ``seed``, …), on ``device`` (cpu or cuda) in
    ``dtype``."""
    builder = _builder(kind)
    allowed = ENGINE_OPTIONS[kind]
    unknown = [name for name in options or () if allowed is not None and name not in allowed]
    if unknown:
        takes = f"only {', '.join(allowed)}" if allowed else "no options"
        raise ValueError(f"engine {kind} takes {takes}, got {', '.join(unknown)}")
    return builder(model, threads=threads, delimiter=delimiter, speculation=speculation,
                   device=device, dtype=dtype, **dict(options or {}))


def execution_of(kind: str, device: str = "cpu",
                 options: Mapping[str, Any] | None = None) -> str:
    """The ``execution`` that an engine of ``kind`` built by :func:`make_engine` with
    ``device`` and ``options`` will report (a run record's ``settings.execution``),
    known before any model loads."""
    _builder(kind)
    if kind == "transformers":
        return hf_execution((options or {}).get("decode_path", DEFAULT_DECODE_PATH), device)
    return vllm_execution(device) if kind == "vllm" else synthetic_execution(device)
