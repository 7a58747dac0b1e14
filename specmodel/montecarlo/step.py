"""Monte-Carlo of Lookahead Reasoning, sync (Algorithm 1) and async (event-driven).

Time is in units of one target step T unless step durations are sampled.

**Sync.**  A cycle drafts k1 − 1 steps one after another (c1 each), then the
target expands k1 prefixes in one batch (1), the verifier keeps the longest
accepted prefix and the target's step at the first rejection (or its bonus
step) is appended: accepted + 1 steps per cycle.

**Async.**  Drafting and target generation overlap.  At the start of each draft
step j the target starts step j from the prefix that ends with draft j − 1;
drafting only proceeds while fewer than k1 target steps are in flight.  Draft
j is verified against target step j when both exist, in order; at the first
rejection X the stage emits X + 1 steps (X drafts and the target's correction)
and a new stage starts from the corrected prefix, discarding whatever was in
flight.  :func:`simulate_async` runs this with constant durations by the start
time recurrence ``s_j = max(s_{j−1} + c1, s_{j−k1} + 1)`` (run once per call:
with constant costs it does not depend on where a stage stops) and the stage
time ``s_X + max(1, c1)`` (the rejection is known once both target step X and
draft X exist; a draft slower than the target, c1 > 1, makes the stage wait);
:func:`simulate_async_events` runs the same rules as a discrete-event
simulation with any step durations (a heap of in-flight targets), which is the
ground truth the recurrence is itself tested against.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

import numpy as np

from specmodel.montecarlo.acceptance import (
    acceptance_profile,
    sample_accepted_prefix,
    sample_run_length,
)
from specmodel.montecarlo.estimate import Estimate, ratio_estimate
from specmodel.validation import check_cost, check_positive_int, check_samples

__all__ = [
    "DurationSampler",
    "async_stage_times",
    "simulate_async",
    "simulate_async_events",
    "simulate_sync",
]

DurationSampler = Callable[[np.random.Generator, int], np.ndarray]
"""``sampler(rng, n)`` -> n step durations (in units of the target-only step time)."""


def _rng(seed: int | np.random.Generator) -> np.random.Generator:
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def simulate_sync(
    alpha1: float | np.ndarray,
    c1: float,
    k1: int,
    n_cycles: int = 200_000,
    seed: int = 0,
) -> Estimate:
    """Speedup of sync Lookahead Reasoning: steps emitted per unit time over n cycles."""
    prof = acceptance_profile("alpha1", alpha1)
    c = check_cost("c1", c1)
    k = check_positive_int("k1", k1)
    n = check_samples("n_cycles", n_cycles)
    steps = sample_accepted_prefix(_rng(seed), prof, k - 1, n) + 1
    cost = 1.0 + c * (k - 1)
    x = steps.astype(np.float64)
    se = float(x.std(ddof=1) / np.sqrt(n)) / cost
    return Estimate(float(x.mean()) / cost, se, n)


def async_stage_times(x: np.ndarray, c1: float, k1: int) -> np.ndarray:
    """Duration of async stages whose first rejection is at position ``x`` (constant costs).

    With constant costs the start times ``s_j = max(s_{j−1} + c1, s_{j−k1} + 1)`` do
    not depend on where the stage will stop, so the recurrence is run once up to
    ``max(x)`` and each stage reads its duration from that table.  The stage ends
    when the rejection at X is known: target step X is done at ``s_X + 1`` and the
    draft it is compared with at ``s_X + c1``, so the duration is
    ``s_X + max(1, c1)`` (``s_X + 1`` for the usual c1 < 1; for c1 >= 1 the stage
    waits for the slow draft, ``s_j = c1·j`` and the speedup is exactly 1/c1).
    """
    c = check_cost("c1", c1)
    k = check_positive_int("k1", k1)
    xs = np.asarray(x, dtype=np.int64)
    if xs.size == 0:
        return np.zeros(0, dtype=np.float64)
    if int(xs.min()) < 0:
        raise ValueError(f"x must be run lengths >= 0, got min {int(xs.min())}")
    jmax = int(xs.max())
    s = np.zeros(jmax + 1, dtype=np.float64)
    for j in range(1, jmax + 1):
        s[j] = s[j - 1] + c if j < k else max(s[j - 1] + c, s[j - k] + 1.0)
    return s[xs] + max(1.0, c)


def simulate_async(
    alpha1: float | np.ndarray,
    c1: float,
    k1: int,
    n_stages: int = 200_000,
    seed: int = 0,
) -> Estimate:
    """Speedup of async Lookahead Reasoning with constant step costs (vectorized)."""
    prof = acceptance_profile("alpha1", alpha1)
    c = check_cost("c1", c1)
    k = check_positive_int("k1", k1)
    n = check_samples("n_stages", n_stages)
    x = sample_run_length(_rng(seed), prof, n)
    return ratio_estimate(x + 1, async_stage_times(x, c, k))


def _constant(value: float) -> DurationSampler:
    return lambda rng, n: np.full(n, value, dtype=np.float64)


def simulate_async_events(
    alpha1: float,
    c1: float,
    k1: int,
    n_stages: int = 20_000,
    seed: int = 0,
    *,
    draft_time: DurationSampler | None = None,
    target_time: DurationSampler | None = None,
    baseline_time: float = 1.0,
) -> Estimate:
    """Discrete-event simulation of async Lookahead Reasoning, any step durations.

    ``draft_time`` / ``target_time`` sample durations of draft and target steps
    (default: constants c1 and 1).  The speedup is steps emitted per unit time
    divided by the target-only rate ``1 / baseline_time`` (pass the mean
    target-only step time when durations are sampled).  Pure Python: for tests
    and for durations the vectorized recurrence cannot express.
    """
    prof = acceptance_profile("alpha1", alpha1)
    c = check_cost("c1", c1)
    k = check_positive_int("k1", k1)
    n = check_samples("n_stages", n_stages)
    rng = _rng(seed)
    draft = draft_time or _constant(c)
    target = target_time or _constant(1.0)
    xs = sample_run_length(rng, prof, n)
    total = int(xs.sum()) + n
    dts = iter(draft(rng, total).tolist())
    tts = iter(target(rng, total).tolist())
    times = np.empty(n, dtype=np.float64)
    for i, x in enumerate(xs.tolist()):
        in_flight: list[float] = []  # finish times of running target steps
        draft_free = 0.0  # when the draft model can start its next step
        verified = 0.0  # when verification of the last accepted position ended
        for _j in range(x + 1):
            start = draft_free
            while len(in_flight) >= k:
                start = max(start, heapq.heappop(in_flight))
            while in_flight and in_flight[0] <= start:
                heapq.heappop(in_flight)
            d_end = start + next(dts)
            t_end = start + next(tts)
            heapq.heappush(in_flight, t_end)
            draft_free = d_end
            verified = max(verified, t_end, d_end)
        # The last position is the rejection: its target step is the correction,
        # so the stage ends when that step (and every earlier verification) is done.
        times[i] = verified
    return ratio_estimate((xs + 1).astype(np.float64) * baseline_time, times)
