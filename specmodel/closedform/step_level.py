"""Step-level speculation (Lookahead Reasoning): f_sync, f_async, multi-branch.

Conventions (binding for the whole library):

* ``k1`` is the number of **target steps generated in parallel**.  In the sync
  algorithm (Algorithm 1) the draft proposes γ = k1 − 1 steps and the target
  expands γ + 1 = k1 prefixes in one batch.  ``k1 = 1`` is target-only decoding.
* ``c1`` is the cost of one draft step in units of one target step (T).
* ``alpha1`` is the i.i.d. probability that the verifier accepts a draft step.

Sync::

    f_sync(k1) = (1 − α^{k1}) / ((1 − α)(1 − c + c·k1))

Async: a target step starts as soon as its prefix exists; drafting runs ahead
while fewer than ``k1`` target steps are in flight.  Target step j then starts
at ``s_j = max(s_{j−1} + c, s_{j−k1} + 1)`` (in units of T), and a stage that
ends at the first rejection X takes ``s_X + 1``.  Solving the recurrence:

* if ``k1·c <= 1`` (depth-limited): ``s_X = ⌊X/k1⌋ + c·(X mod k1)`` and the
  speedup is ``S2(k1) = E[1 + X] / (E⌈(X+1)/k1⌉ + c·E[X mod k1])``;
* if ``k1·c >= 1`` (draft-limited): ``s_X = c·X`` and the speedup is
  ``S1 = 1 / (c + (1 − c)(1 − α))``.

For integer k1 the two cases meet at ``k1 = ⌈1/c⌉`` (where, if 1/c is an
integer, S1 = S2): ``f_async(k1) = S2(k1)`` for ``k1 < ⌈1/c⌉`` and ``S1``
otherwise, which equals ``min(S1, S2(k1))``.  At most ``⌈1/c⌉`` target steps are
ever in flight, so the parallel dimension is ``min(⌈1/c⌉, k1)``.  (The paper
states the boundary with ⌊·⌋ in Theorem 2 case 1 and §3.2 and with ⌈·⌉
elsewhere; see docs/errata.md.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from specmodel.closedform.geometric import expected_batches, expected_run_mod, geometric_sum
from specmodel.validation import (
    check_cost,
    check_positive_int,
    check_positive_int_array,
    check_probability,
    scalar_or_array,
)

__all__ = [
    "MODES",
    "Mode",
    "MultiBranchSpeedup",
    "check_async_c1",
    "async_knee",
    "async_s1",
    "async_s2",
    "branch_acceptance",
    "check_mode",
    "f_async",
    "f_async_of",
    "f_step",
    "f_sync",
    "f_sync_multibranch",
    "knee_of",
    "multibranch_parallel_dim",
    "parallel_dim_f",
]

Mode = Literal["sync", "async"]
"""Which Lookahead Reasoning algorithm: Algorithm 1 (sync) or the async variant."""
MODES: tuple[str, ...] = ("sync", "async")

# 1/c is computed in floating point; a relative slack keeps ⌈1/c⌉ exact for c = 1/n.
_KNEE_RTOL = 1e-12


def check_mode(mode: object) -> str:
    """Return ``mode`` if it is 'sync' or 'async', else raise ValueError."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    return str(mode)


def f_sync(alpha1: float, c1: float, k1: int | np.ndarray) -> float | np.ndarray:
    """Speedup of sync Lookahead Reasoning with k1 target steps in parallel (Theorem 1)."""
    a = check_probability("alpha1", alpha1)
    c = check_cost("c1", c1)
    kk = check_positive_int_array("k1", k1)
    return scalar_or_array(np.asarray(geometric_sum(a, kk)) / (1.0 - c + c * kk))


def async_knee(c1: float) -> int:
    """⌈1/c1⌉: the most target steps the async algorithm ever has in flight (c1 > 0)."""
    c = check_cost("c1", c1, positive=True)
    return int(knee_of(np.asarray(c)))


def knee_of(c1: np.ndarray) -> np.ndarray:
    """⌈1/c1⌉ elementwise for an array of costs already known to be > 0 (no validation
    beyond finiteness of the knee); :func:`async_knee` is its checked scalar form."""
    inv = 1.0 / np.asarray(c1, dtype=np.float64)
    if np.any(inv > 2**62):
        raise ValueError(
            f"c1 must be >= 2**-62 for the async knee to be finite, got {float(np.min(c1))!r}"
        )
    return np.maximum(1, np.ceil(inv * (1.0 - _KNEE_RTOL))).astype(np.int64)


def check_async_c1(c1: object) -> float:
    """c1 for the async closed forms: finite and in (0, 1).

    At c1 = 0 the knee ⌈1/c1⌉ is infinite.  At c1 >= 1 the draft is no faster
    than the target: a stage then has to wait for the draft it verifies (its
    time is s_X + max(1, c1), not s_X + 1), which S1 and S2 do not describe.
    Both simulators of the process (``simulate_async`` and
    ``simulate_async_events``) do: every stage then takes c1·(X + 1), so the
    speedup is exactly 1/c1 <= 1 for every α1 and k1 — speculation never pays,
    and the closed forms reject it rather than extend to a configuration no
    optimizer should choose.
    """
    c = check_cost("c1", c1, positive=True)
    if c >= 1.0:
        raise ValueError(
            f"c1 must be in (0, 1) for async Lookahead Reasoning, got {c!r}: a draft no faster "
            "than the target never pays, and the closed form does not hold there"
        )
    return c


def async_s1(alpha1: float, c1: float) -> float:
    """S1 = 1/(c1 + (1 − c1)(1 − α1)): the draft-limited async speedup (k1 >= ⌈1/c1⌉)."""
    return float(_s1(check_probability("alpha1", alpha1), check_async_c1(c1)))


def async_s2(alpha1: float, c1: float, k1: int | np.ndarray) -> float | np.ndarray:
    """S2(k1) = (1 − α^k)/((1 − α) + c[α − α^{k+1} − k(1 − α)α^k]): depth-limited async.

    The formula of the process only for k1 <= 1/c1; beyond it, it overstates the
    speedup (see :func:`f_async`).  Evaluated in the stable form
    ``(1/(1−α)) / (E⌈(X+1)/k⌉ + c·E[X mod k])``.
    """
    a = check_probability("alpha1", alpha1)
    c = check_async_c1(c1)
    return scalar_or_array(_s2(a, c, check_positive_int_array("k1", k1)))


def _s1(a: float, c: np.ndarray | float) -> np.ndarray:
    """S1 on validated arguments, elementwise in c."""
    c = np.asarray(c, dtype=np.float64)
    return 1.0 / (c + (1.0 - c) * (1.0 - a))


def _s2(a: float, c: np.ndarray | float, k: np.ndarray) -> np.ndarray:
    """S2 on validated arguments, elementwise (broadcast) in c and k."""
    den = np.asarray(expected_batches(a, k)) + np.asarray(c) * np.asarray(expected_run_mod(a, k))
    return (1.0 / (1.0 - a)) / den


def f_async(alpha1: float, c1: float, k1: int | np.ndarray) -> float | np.ndarray:
    """Speedup of async Lookahead Reasoning with depth limit k1 (Theorem 2, corrected).

    S2(k1) for k1 < ⌈1/c1⌉, S1 for k1 >= ⌈1/c1⌉; c1 must lie in (0, 1)
    (see :func:`check_async_c1`).
    """
    a = check_probability("alpha1", alpha1)
    c = check_async_c1(c1)
    kk = check_positive_int_array("k1", k1)
    return scalar_or_array(f_async_of(a, np.asarray(c), kk))


def f_async_of(alpha1: float, c1: np.ndarray, k1: np.ndarray) -> np.ndarray:
    """:func:`f_async` elementwise over arrays of c1 and k1 (broadcast), on arguments
    already validated (0 < α1 < 1, 0 < c1 < 1, integer k1 >= 1).

    The one evaluation of the corrected Theorem 2: S2(k1) below the knee ⌈1/c1⌉,
    S1 from it on.  For pricing many configurations whose effective c1 differs.
    """
    c = np.asarray(c1, dtype=np.float64)
    kk = np.asarray(k1, dtype=np.int64)
    knee = knee_of(c)
    return np.where(kk < knee, _s2(alpha1, c, np.minimum(kk, knee)), _s1(alpha1, c))


def f_step(mode: str, alpha1: float, c1: float, k1: int | np.ndarray) -> float | np.ndarray:
    """``f_sync`` or ``f_async`` by ``mode``."""
    m = check_mode(mode)
    return f_sync(alpha1, c1, k1) if m == "sync" else f_async(alpha1, c1, k1)


def parallel_dim_f(mode: str, c1: float, k1: int | np.ndarray) -> int | np.ndarray:
    """Target steps in flight: k1 (sync) or min(⌈1/c1⌉, k1) (async)."""
    m = check_mode(mode)
    kk = check_positive_int_array("k1", k1)
    if m == "async":
        kk = np.minimum(kk, async_knee(c1))
    return int(kk) if np.ndim(kk) == 0 else kk


def branch_acceptance(alpha1: float, width: int) -> float:
    """Acceptance of the best of ``width`` draft branches: 1 − (1 − α1)^W.

    Assumes the W branches at one position are accepted independently, each with
    probability α1.  Real branches from one draft model are positively
    correlated (the LR paper's Table 3: α = 0.63 at W = 1 and 0.73 at W = 2 where
    independence predicts 0.86), so this is an upper bound; pass a measured
    per-width acceptance to :func:`f_sync_multibranch` when one is available.
    """
    a = check_probability("alpha1", alpha1)
    w = check_positive_int("width", width)
    return -math.expm1(w * math.log1p(-a))


def multibranch_parallel_dim(k1: int, width: int) -> int:
    """Target steps per sync cycle for a draft tree of depth k1 − 1 and width W.

    Every node at depths 0..k1−1 of the tree (the root prefix, then W^j draft
    prefixes at depth j) needs one target step: Σ_{j=0}^{k1−1} W^j.  W = 1 gives k1.
    """
    kk = check_positive_int("k1", k1)
    w = check_positive_int("width", width)
    return kk if w == 1 else (w**kk - 1) // (w - 1)


@dataclass(frozen=True)
class MultiBranchSpeedup:
    """Sync Lookahead Reasoning with a draft tree of width W (the paper's §3.1)."""

    speedup: float
    """Predicted speedup over target-only decoding."""
    acceptance: float
    """Per-position acceptance of the best branch."""
    parallel_dim: int
    """Target steps expanded per cycle, Σ_{j<k1} W^j."""
    draft_cost: float
    """Draft time per cycle in units of T."""
    expected_steps: float
    """Steps committed per cycle, Σ_{i<k1} α_W^i (the target's own step included)."""


def f_sync_multibranch(
    alpha1: float,
    c1: float,
    k1: int,
    width: int,
    *,
    branch_alpha: float | None = None,
    draft_batch_cost: float = 0.0,
) -> MultiBranchSpeedup:
    """Model of multi-branch drafting of width W at depth k1 − 1.

    Assumptions, stated because the paper gives no formula: a position is
    accepted when any of its W branches is (probability ``branch_alpha`` if given,
    else :func:`branch_acceptance`), independently across positions; the draft
    expands each depth level as one batch whose cost is ``c1·(1 + β·(W^j − 1))``
    for the W^j nodes at depth j (β = ``draft_batch_cost``; β = 0 is a flat batch,
    β = 1 is fully sequential); the target expands all Σ W^j prefixes in one batch
    at the cost of one step (a flat budget — price wider batches with a T(b) curve
    in the optimizer).  W = 1 reduces exactly to :func:`f_sync`.
    """
    a = check_probability("alpha1", alpha1)
    c = check_cost("c1", c1)
    kk = check_positive_int("k1", k1)
    w = check_positive_int("width", width)
    beta = check_cost("draft_batch_cost", draft_batch_cost)
    # Work with the rejection probability q = 1 − α_W (exact even when α_W rounds to 1).
    if branch_alpha is None:
        q = math.exp(w * math.log1p(-a))
    else:
        q = 1.0 - check_probability("branch_alpha", branch_alpha)
    aw = 1.0 - q
    expected_steps = 1.0 if kk == 1 else -math.expm1(kk * math.log1p(-q)) / q  # Σ α_W^i
    draft = sum(c * (1.0 + beta * (w**j - 1)) for j in range(1, kk))
    speedup = expected_steps / (1.0 + draft)
    return MultiBranchSpeedup(speedup, aw, multibranch_parallel_dim(kk, w), draft,
                              expected_steps)
