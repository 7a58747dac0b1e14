"""Token-level speculative decoding: the speedup g in both conventions.

Two conventions are in use and this module keeps them apart by name:

* **Leviathan's γ** (``gamma``) counts *draft tokens* per iteration::

      g_leviathan(α, c, γ) = (1 − α^{γ+1}) / ((1 − α)(1 + cγ))

* **The Lookahead Reasoning paper's k** counts *target positions verified in
  parallel* (draft tokens + 1), the parallel dimension of the budget problem::

      g_token(α, c, k) = (1 − α^k) / ((1 − α)(1 − c + ck))

They are one function shifted: ``g_token(α, c, k) == g_leviathan(α, c, k − 1)``.
The optimizer works in k.  α is the i.i.d. per-token acceptance rate, c the cost
of one draft token in units of one target forward pass (``c = T_q / T_p``).

``k`` (or ``gamma``) may be an int or an integer NumPy array; the result is then a
float or an array of the same shape.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from specmodel.closedform.geometric import expected_truncated_run, geometric_sum
from specmodel.validation import (
    check_cost,
    check_nonnegative_int_array,
    check_positive_int,
    check_positive_int_array,
    check_probability,
    scalar_or_array,
)

__all__ = [
    "OptimalDraftLength",
    "continuous_optimal_k",
    "expected_accepted_drafts",
    "expected_iterations_for_tokens",
    "expected_tokens_per_iteration",
    "g_leviathan",
    "g_token",
    "g_token_step",
    "optimal_k",
    "token_speedup_bound",
    "unimodality_sign",
]


def g_token(alpha: float, c: float, k: int | np.ndarray) -> float | np.ndarray:
    """Speedup of token-level speculation with ``k`` parallel target positions.

    ``k = 1`` is plain autoregressive decoding (speedup 1).  Convention: k = draft
    tokens + 1 (the Lookahead Reasoning paper's eq. 2).
    """
    a = check_probability("alpha", alpha)
    cc = check_cost("c", c)
    kk = check_positive_int_array("k", k)
    return scalar_or_array(np.asarray(geometric_sum(a, kk)) / (1.0 - cc + cc * kk))


def g_leviathan(alpha: float, c: float, gamma: int | np.ndarray) -> float | np.ndarray:
    """Leviathan et al.'s speedup with ``gamma`` draft tokens per iteration (γ >= 0)."""
    a = check_probability("alpha", alpha)
    cc = check_cost("c", c)
    gg = check_nonnegative_int_array("gamma", gamma)
    return scalar_or_array(np.asarray(geometric_sum(a, gg + 1)) / (1.0 + cc * gg))


def expected_tokens_per_iteration(alpha: float, gamma: int | np.ndarray) -> float | np.ndarray:
    """E[tokens emitted per iteration] = (1 − α^{γ+1}) / (1 − α), γ draft tokens.

    Counts the accepted drafts plus the one token the target always contributes
    (the correction on a rejection, the bonus token when all γ are accepted).
    """
    a = check_probability("alpha", alpha)
    gg = check_nonnegative_int_array("gamma", gamma)
    return scalar_or_array(np.asarray(geometric_sum(a, gg + 1)))


def expected_accepted_drafts(alpha: float, gamma: int | np.ndarray) -> float | np.ndarray:
    """E[accepted draft tokens] = α(1 − α^γ)/(1 − α), γ >= 1 draft tokens."""
    a = check_probability("alpha", alpha)
    gg = check_positive_int_array("gamma", gamma)
    return scalar_or_array(np.asarray(expected_truncated_run(a, gg)))


def token_speedup_bound(alpha: float) -> float:
    """Supremum of g over all c >= 0 and k: 1/(1 − α), approached only as c → 0, k → ∞."""
    a = check_probability("alpha", alpha)
    return 1.0 / (1.0 - a)


def unimodality_sign(alpha: float, c: float, k: float) -> float:
    """Lemma 3's F(k) = α^k(−ln α)(1 − c + ck) − c(1 − α^k), same sign as g'(k).

    ``k`` is real here (k >= 1): the lemma treats g as a function on the reals.
    """
    a = check_probability("alpha", alpha)
    cc = check_cost("c", c)
    x = float(k)
    if math.isnan(x) or x < 1.0:
        raise ValueError(f"k must be a real number >= 1, got {k!r}")
    ak = a**x
    return ak * (-math.log(a)) * (1.0 - cc + cc * x) - cc * (1.0 - ak)


def continuous_optimal_k(alpha: float, c: float) -> float:
    """The unique maximiser k̂ >= 1 of g over the reals (Lemma 3), for 0 < c < α.

    Returns ``math.inf`` for c = 0 (g then increases without bound towards
    1/(1 − α)) and 1.0 when c >= α·(−ln α)/(1 − α) makes g non-increasing from k = 1.
    """
    a = check_probability("alpha", alpha)
    cc = check_cost("c", c)
    if cc == 0.0:
        return math.inf
    if unimodality_sign(a, cc, 1.0) <= 0.0:
        return 1.0
    hi = 2.0
    while unimodality_sign(a, cc, hi) > 0.0:
        hi *= 2.0
        if hi > 1e15:  # pragma: no cover - unreachable for c > 0
            return math.inf
    # F is strictly decreasing (Lemma 3, step 2): bisection on [1, hi] to 1e-12.
    from specmodel.closedform.solve import bisect_boundary

    return bisect_boundary(lambda k: unimodality_sign(a, cc, k) > 0.0, 1.0, hi)


@dataclass(frozen=True)
class OptimalDraftLength:
    """The best integer draft length for token-level speculation."""

    k: int
    """Target positions verified in parallel (LR convention, drafts + 1)."""
    gamma: int
    """Draft tokens per iteration (Leviathan's convention), ``k − 1``."""
    speedup: float
    """g at the optimum."""
    continuous_k: float
    """The real maximiser k̂ of Lemma 3 (``inf`` when c = 0)."""
    capped: bool
    """True when ``k_max`` cut the search before the unconstrained optimum."""


def optimal_k(alpha: float, c: float, k_max: int | None = None) -> OptimalDraftLength:
    """Integer maximiser of ``g_token`` over 1 <= k <= k_max (unbounded if None).

    Uses Lemma 3 (g is unimodal in k): the integer optimum is ⌊k̂⌋ or ⌈k̂⌉.  Ties
    go to the smaller k (less parallelism for the same speedup).
    """
    a = check_probability("alpha", alpha)
    cc = check_cost("c", c)
    cap = None if k_max is None else check_positive_int("k_max", k_max)
    kh = continuous_optimal_k(a, cc)
    if math.isinf(kh):
        if cap is None:
            raise ValueError("k_max must be given when c = 0 (g grows without bound in k)")
        best = cap
        return OptimalDraftLength(best, best - 1, float(g_token(a, cc, best)), kh, True)
    lo = max(1, math.floor(kh))
    cands = {lo, lo + 1}
    capped = False
    if cap is not None:
        if cap < max(cands):
            capped = cap < lo or (cap == lo and g_token(a, cc, lo + 1) > g_token(a, cc, lo))
        cands = {min(x, cap) for x in cands}
    best = min(cands, key=lambda x: (-float(g_token(a, cc, x)), x))
    return OptimalDraftLength(best, best - 1, float(g_token(a, cc, best)), kh, capped)


def expected_iterations_for_tokens(alpha: float, k: int, tokens: int) -> float:
    """E[iterations of k-position SD until at least ``tokens`` tokens exist].

    A renewal recursion over the tokens still missing: ``m(l) = 1 + Σ_j p_j m(l − j)``
    with ``m(l) = 0`` for ``l <= 0`` and ``p_j`` the probability that an iteration
    emits j tokens (j = 1..k).  O(tokens · k).
    """
    a = check_probability("alpha", alpha)
    kk = check_positive_int("k", k)
    length = check_positive_int("tokens", tokens)
    j = np.arange(kk)
    p = (1.0 - a) * a**j  # iteration emits j + 1 tokens
    p[-1] = a ** (kk - 1)
    m = np.zeros(length + kk, dtype=np.float64)  # m[kk - 1 + l] holds m(l); m(l <= 0) = 0
    for ell in range(1, length + 1):
        window = m[ell - 1 : ell - 1 + kk][::-1]  # m(l-1), m(l-2), ..., m(l-k)
        m[kk - 1 + ell] = 1.0 + float(p @ window)
    return float(m[kk - 1 + length])


def g_token_step(alpha: float, c: float, k: int, step_tokens: int) -> float:
    """Token-level speedup for steps of exactly ``step_tokens`` tokens (beyond the papers).

    The papers' g assumes an endless token stream.  A reasoning step ends at a
    fixed boundary: the last iteration of each step is cut short and its surplus
    tokens are discarded, so the speedup is
    ``L / (E[iterations to reach L] · (1 − c + ck))``, which tends to ``g_token`` as
    L → ∞ and equals it for k = 1.
    """
    cc = check_cost("c", c)
    kk = check_positive_int("k", k)
    length = check_positive_int("step_tokens", step_tokens)
    iters = expected_iterations_for_tokens(alpha, kk, length)
    return length / (iters * (1.0 - cc + cc * kk))
