"""Monte-Carlo simulation of the processes behind Cascade Speculative Drafting.

Each simulator runs the process itself, not a formula: per target call it draws
one Bernoulli acceptance per reviewed draft token, finds the first rejection,
counts the tokens produced (accepted drafts + the reviewer's own token) and counts
the model runs; the cost of a call is ``target runs + sum_i runs_i c_i`` in units of
one target run.  The EWIF is the ratio estimator ``sum(tokens) / sum(cost)`` over
independent target calls (:func:`~specmodel.montecarlo.estimate.ratio_estimate`).

Conventions as in :mod:`specmodel.closedform.cascade`: ``k`` = draft tokens per speculative
call (Leviathan's ``γ``), acceptance i.i.d. with the stated probabilities.

* :func:`simulate_speculative` — plain speculative decoding, ``k`` drafts.
* :func:`simulate_vertical` — the target reviews the block made by ``n`` calls of
  ``M_d1``, each itself speculative decoding of ``M_d1`` with ``M_d2`` drafting
  ``k`` tokens.
* :func:`simulate_horizontal` — draft position ``i`` accepted with its own
  conditional probability ``alphas[i-1]`` and produced at cost ``costs[i-1]``.

All simulators are seeded (``numpy.random.default_rng(seed)``), vectorized over
target calls and processed in chunks so memory stays bounded for large ``k``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from specmodel.montecarlo.acceptance import leading_accepts
from specmodel.montecarlo.estimate import Estimate, mean_estimate, ratio_estimate
from specmodel.validation import (
    check_cost,
    check_cost_vector,
    check_nonnegative_int,
    check_positive_int,
    check_probability,
    check_probability_vector,
    check_samples,
)

__all__ = [
    "CascadeSimulation",
    "ewif_horizontal_mc",
    "ewif_speculative_mc",
    "ewif_vertical_mc",
    "simulate_horizontal",
    "simulate_speculative",
    "simulate_vertical",
]

_CHUNK_CELLS = 1 << 22
"""Random numbers drawn per chunk (32 MiB of float64)."""


@dataclass(frozen=True)
class CascadeSimulation:
    """What a simulation of ``n_samples`` independent target calls measured."""

    ewif: Estimate
    """Tokens per unit of time (target-run units): the simulated EWIF, ratio estimator."""
    tokens_per_call: Estimate
    """Tokens produced per target call (accepted drafts + the target's own token)."""
    cost_per_call: float
    """Time of one target call in target-run units (fixed by the schedule)."""
    total_tokens: int
    """Tokens produced over all simulated target calls."""
    target_runs: int
    """Runs of the target model over all calls (one per call)."""
    draft_runs: tuple[int, ...]
    """Runs of each draft model (or draft position, horizontal) over all calls."""
    draft_costs: tuple[float, ...]
    """Cost of one run of each entry of ``draft_runs``, in target-run units."""


def _check_seed(seed: object) -> int:
    return check_nonnegative_int("seed", seed)


def _chunks(n_rows: int, width: int) -> list[int]:
    rows = max(1, _CHUNK_CELLS // max(1, width))
    sizes = [rows] * (n_rows // rows)
    if n_rows % rows:
        sizes.append(n_rows % rows)
    return sizes


def _result(
    tokens: np.ndarray, cost: float, runs: tuple[int, ...], costs: tuple[float, ...]
) -> CascadeSimulation:
    n = tokens.size
    return CascadeSimulation(
        ewif=ratio_estimate(tokens, np.full(n, cost)),
        tokens_per_call=mean_estimate(tokens),
        cost_per_call=cost,
        total_tokens=int(tokens.sum()),
        target_runs=n,
        draft_runs=runs,
        draft_costs=costs,
    )


def _simulate_positions(rng: np.random.Generator, probs: np.ndarray, n_samples: int) -> np.ndarray:
    """Accepted drafts per call when position ``i`` is accepted w.p. ``probs[i]``."""
    width = probs.size
    out = []
    for rows in _chunks(n_samples, width):
        accept = rng.random((rows, width)) < probs
        out.append(leading_accepts(accept))
    return np.concatenate(out)


def simulate_speculative(
    alpha: float, c: float, k: int, n_samples: int, seed: int
) -> CascadeSimulation:
    """Plain speculative decoding: ``k`` drafts at cost ``c`` each, i.i.d. acceptance.

    Per target call: the draft model runs ``k`` times, the target once and accepts
    drafts while Bernoulli(``alpha``) draws succeed; tokens = accepted + 1, cost =
    ``1 + c k``.
    """
    a = check_probability("alpha", alpha)
    cc = check_cost("c", c)
    kk = check_positive_int("k", k)
    n = check_samples("n_samples", n_samples)
    rng = np.random.default_rng(_check_seed(seed))
    accepted = _simulate_positions(rng, np.full(kk, a), n)
    return _result(accepted + 1, 1.0 + cc * kk, (kk * n,), (cc,))


def simulate_vertical(
    alpha: float,
    alpha_prime: float,
    c_d1: float,
    c_d2: float,
    k: int,
    n: int,
    n_samples: int,
    seed: int,
) -> CascadeSimulation:
    """The vertical cascade M_t <- M_d1 <- M_d2 of Theorem 4.3.

    Per target call: ``n`` inner calls, each ``M_d2`` drafting ``k`` tokens that
    ``M_d1`` accepts while Bernoulli(``alpha_prime``) draws succeed, giving accepted
    + 1 tokens; the ``n`` outputs form a block of ``J`` tokens.  The target then
    accepts block tokens while Bernoulli(``alpha``) draws succeed (at most ``J``) and
    adds one token.  Runs counted: target 1, ``M_d1`` ``n``, ``M_d2`` ``n k``; cost =
    ``1 + n c_d1 + n k c_d2``.
    """
    a = check_probability("alpha", alpha)
    ap = check_probability("alpha_prime", alpha_prime)
    c1 = check_cost("c_d1", c_d1)
    c2 = check_cost("c_d2", c_d2)
    kk = check_positive_int("k", k)
    nn = check_positive_int("n", n)
    ns = check_samples("n_samples", n_samples)
    rng = np.random.default_rng(_check_seed(seed))
    block_max = nn * (kk + 1)
    tokens = []
    for rows in _chunks(ns, nn * kk + block_max):
        inner = rng.random((rows, nn, kk)) < ap
        block = (leading_accepts(inner) + 1).sum(axis=1)  # J, tokens from n M_d1 calls
        review = rng.random((rows, block_max)) < a
        accepted = np.minimum(leading_accepts(review), block)
        tokens.append(accepted + 1)
    cost = 1.0 + nn * c1 + nn * kk * c2
    return _result(np.concatenate(tokens), cost, (nn * ns, nn * kk * ns), (c1, c2))


def simulate_horizontal(
    alphas: Sequence[float] | np.ndarray,
    costs: Sequence[float] | np.ndarray,
    n_samples: int,
    seed: int,
) -> CascadeSimulation:
    """The horizontal cascade of Theorem 4.5: position-dependent drafts and acceptance.

    Per target call: draft position ``i`` (1-based) is produced by one run of a model
    of cost ``costs[i-1]``; the target accepts position ``i`` with probability
    ``alphas[i-1]`` given that the earlier ones were accepted, stopping at the first
    rejection; tokens = accepted + 1, cost = ``1 + sum(costs)``.  ``draft_runs`` of the
    result holds one entry per position.
    """
    al = check_probability_vector("alphas", alphas)
    cs = tuple(float(c) for c in check_cost_vector("costs", costs, al.size))
    n = check_samples("n_samples", n_samples)
    rng = np.random.default_rng(_check_seed(seed))
    accepted = _simulate_positions(rng, al, n)
    return _result(accepted + 1, 1.0 + float(np.sum(cs)), (n,) * al.size, cs)


def ewif_speculative_mc(alpha: float, c: float, k: int, n_samples: int, seed: int) -> Estimate:
    """Simulated EWIF of plain speculative decoding (see :func:`simulate_speculative`)."""
    return simulate_speculative(alpha, c, k, n_samples, seed).ewif


def ewif_vertical_mc(
    alpha: float,
    alpha_prime: float,
    c_d1: float,
    c_d2: float,
    k: int,
    n: int,
    n_samples: int,
    seed: int,
) -> Estimate:
    """Simulated EWIF of the vertical cascade (see :func:`simulate_vertical`)."""
    return simulate_vertical(alpha, alpha_prime, c_d1, c_d2, k, n, n_samples, seed).ewif


def ewif_horizontal_mc(
    alphas: Sequence[float] | np.ndarray,
    costs: Sequence[float] | np.ndarray,
    n_samples: int,
    seed: int,
) -> Estimate:
    """Simulated EWIF of the horizontal cascade (see :func:`simulate_horizontal`)."""
    return simulate_horizontal(alphas, costs, n_samples, seed).ewif
