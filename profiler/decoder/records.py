"""What the decoder records: committed steps, per-problem counters, and totals.

The records themselves are the run record's typed models
(:class:`specmodel.formats.run_record.StepRecord`, :class:`ProblemRun`,
:class:`Totals`); this module holds the counters a problem accumulates while it
is decoded (:class:`Tally`), when a step ends the answer, and :func:`totals`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from profiler.engines import StepBatch, StepOutput
from specmodel.formats.run_record import CallRecord, ProblemRun, StepRecord, Totals

__all__ = [
    "ANSWER_MARK",
    "CallRecord",
    "ProblemRun",
    "StepRecord",
    "Tally",
    "Totals",
    "ends_answer",
    "finish_reason",
    "totals",
]

ANSWER_MARK = "####"
"""Marks the final answer in the GSM8K format; the step that writes it ends decoding."""


@dataclass
class Tally:
    """Counters of one problem, updated by every engine and verifier call."""

    seed: int = 0
    """Base seed of the problem's sampled draft branches."""
    samples: int = 0
    """Sampled draft batches so far (each takes the next seed)."""
    drafted: int = 0
    """Draft positions judged."""
    accepted: int = 0
    """Draft positions accepted."""
    draft_calls: int = 0
    """Draft steps generated (judged or not)."""
    draft_ends: int = 0
    """Draft steps generated that end the answer (:func:`ends_answer`)."""
    target_steps: int = 0
    """Target steps generated."""
    target_batches: int = 0
    """Target engine calls."""
    draft_seconds: float = 0.0
    """Time inside draft calls."""
    target_seconds: float = 0.0
    """Time inside target calls."""
    verify_seconds: float = 0.0
    """Time inside the verifier."""
    started: float = field(default_factory=time.perf_counter)
    """The problem's start on the performance counter (what call starts count from)."""
    calls: list[CallRecord] = field(default_factory=list)
    """Every engine call so far (:meth:`log`)."""

    def log(self, role: Literal["target", "draft"], batch: StepBatch, began: float,
            sampled: bool = False) -> None:
        """Record one engine call that began at ``began`` (performance counter)."""
        self.calls.append(CallRecord(
            role=role, start=max(0.0, began - self.started), seconds=batch.seconds,
            rows=batch.batch, step_tokens=[o.tokens for o in batch.outputs],
            prompt_tokens=batch.prompt_tokens, prefilled_tokens=batch.prefilled_tokens,
            iterations=batch.iterations, sampled=sampled))


def ends_answer(step: StepOutput, delimiter: str) -> bool:
    """Whether a step ends the answer: the answer mark, end of sequence, or nothing written."""
    if ANSWER_MARK in step.text or not step.text.strip():
        return True
    return step.finished == "stop" and not step.text.endswith(delimiter)


def finish_reason(step: StepOutput) -> Literal["answer", "end"]:
    """Why a step that ends the answer ended it: the answer mark, or the model stopped."""
    return "answer" if ANSWER_MARK in step.text else "end"


def totals(runs: Sequence[ProblemRun]) -> Totals:
    """Sum a configuration's problem runs into the run record's :class:`Totals`."""
    if not runs:
        raise ValueError("runs must not be empty")
    tok = sum(r.output_tokens for r in runs)
    sec = sum(r.seconds for r in runs)
    drafted = sum(r.drafted_steps for r in runs)
    acc = sum(r.accepted_steps for r in runs)
    return Totals(
        problems=len(runs),
        output_tokens=tok,
        seconds=sec,
        tokens_per_second=tok / sec if sec > 0 else 0.0,
        drafted_steps=drafted,
        accepted_steps=acc,
        step_acceptance=acc / drafted if drafted else None,
        accuracy=sum(r.correct for r in runs) / len(runs),
    )
