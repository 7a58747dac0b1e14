"""The Lookahead Reasoning decoder on real engines: sync (Algorithm 1) and async.

It runs a :class:`specmodel.config.SpecConfig` (conventions: ``k1`` target steps
in parallel = draft steps + 1, 1 = plain step-by-step target decoding; ``k2``
target positions per token-speculation pass = draft tokens + 1, 1 = off).

* :mod:`~profiler.decoder.core` — :class:`LookaheadDecoder`: one problem, the
  timed engine and verifier calls, commit, target-only decoding;
* :mod:`~profiler.decoder.sync` — Algorithm 1 and the multi-branch draft tree;
* :mod:`~profiler.decoder.asynchronous` — the async scheduler;
* :mod:`~profiler.decoder.records` — the per-problem counters, when a step ends
  the answer, :func:`totals` (the records are the run record's typed models).

With the exact-match verifier every committed step is the target's own greedy
step, so the output equals step-by-step greedy decoding of the target (up to
numerical ties between batched and single evaluation).  Token-level speculation
(n-gram prompt lookup or a draft model, through the engine) is lossless under
greedy decoding.  A problem ends when a committed step contains ``####`` (the
GSM8K answer mark), when the target ends its sequence or writes an empty step,
or after ``max_steps`` steps.  See docs/decoder.md.
"""

from __future__ import annotations

from profiler.decoder.core import Finish, LookaheadDecoder
from profiler.decoder.records import ANSWER_MARK, ProblemRun, StepRecord, Totals, totals

__all__ = [
    "ANSWER_MARK",
    "Finish",
    "LookaheadDecoder",
    "ProblemRun",
    "StepRecord",
    "Totals",
    "totals",
]
