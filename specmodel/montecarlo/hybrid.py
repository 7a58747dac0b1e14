"""Monte-Carlo of the hybrid: token-level speculation inside each reasoning step.

Each step is ``step_tokens`` tokens long.  Whoever generates a step (the target,
or the draft, which the paper assumes also runs its own token-level
speculation) does so by token-level SD iterations of k2 positions: an iteration
costs ``1 + c2 (k2 − 1)`` token-times and emits the accepted prefix plus one
token; the step is done when ``step_tokens`` tokens exist (tokens past the step
boundary are discarded).  A draft step costs c1 times the same process.  The
step-level process then runs on these durations: sync batches wait for their
slowest step (``batch="max"``, what a static batch does) or are charged the mean
(``batch="mean"``); async runs the discrete-event simulation.

The baseline is target-only autoregressive decoding: ``step_tokens`` token-times
per step.  As ``step_tokens`` grows the estimate tends to the product f·g of the
closed forms; for short steps it falls below it (the last iteration of each step
is cut short, and a sync batch waits for its slowest member).
"""

from __future__ import annotations

import numpy as np

from specmodel.closedform.step_level import check_mode
from specmodel.montecarlo.acceptance import acceptance_profile, sample_accepted_prefix
from specmodel.montecarlo.estimate import Estimate, ratio_estimate
from specmodel.montecarlo.step import simulate_async_events
from specmodel.validation import check_cost, check_positive_int, check_samples

__all__ = ["sample_step_times", "simulate_hybrid"]


def sample_step_times(
    rng: np.random.Generator,
    alpha2: float | np.ndarray,
    c2: float,
    k2: int,
    step_tokens: int,
    n: int,
) -> np.ndarray:
    """Time (token-times) for token-level SD with k2 positions to emit a step of L tokens."""
    prof = acceptance_profile("alpha2", alpha2)
    c = check_cost("c2", c2)
    k = check_positive_int("k2", k2)
    length = check_positive_int("step_tokens", step_tokens)
    remaining = np.full(n, length, dtype=np.int64)
    iterations = np.zeros(n, dtype=np.int64)
    active = np.arange(n)
    while active.size:
        got = sample_accepted_prefix(rng, prof, k - 1, active.size) + 1
        remaining[active] -= got
        iterations[active] += 1
        active = active[remaining[active] > 0]
    return iterations * (1.0 + c * (k - 1))


def simulate_hybrid(
    mode: str,
    alpha1: float,
    c1: float,
    alpha2: float | np.ndarray,
    c2: float,
    k1: int,
    k2: int,
    *,
    step_tokens: int = 64,
    n_cycles: int = 20_000,
    seed: int = 0,
    batch: str = "max",
) -> Estimate:
    """Speedup of Lookahead Reasoning with token-level SD inside every step."""
    m = check_mode(mode)
    prof1 = acceptance_profile("alpha1", alpha1)
    cc1 = check_cost("c1", c1, positive=m == "async")
    kk1 = check_positive_int("k1", k1)
    kk2 = check_positive_int("k2", k2)
    length = check_positive_int("step_tokens", step_tokens)
    n = check_samples("n_cycles", n_cycles)
    if batch not in ("max", "mean"):
        raise ValueError(f"batch must be 'max' or 'mean', got {batch!r}")
    rng = np.random.default_rng(seed)

    def steps(count: int) -> np.ndarray:
        return sample_step_times(rng, alpha2, c2, kk2, length, count) / length

    if m == "async":
        return simulate_async_events(
            float(prof1[0]) if prof1.size == 1 else prof1,
            cc1,
            kk1,
            n,
            rng,
            draft_time=lambda r, cnt: cc1 * steps(cnt),
            target_time=lambda r, cnt: steps(cnt),
        )
    accepted = sample_accepted_prefix(rng, prof1, kk1 - 1, n)
    draft = cc1 * steps(n * (kk1 - 1)).reshape(n, kk1 - 1).sum(axis=1) if kk1 > 1 else 0.0
    target = steps(n * kk1).reshape(n, kk1)
    batch_time = target.max(axis=1) if batch == "max" else target.mean(axis=1)
    return ratio_estimate(accepted + 1.0, draft + batch_time)
