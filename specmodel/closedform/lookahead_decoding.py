"""Lookahead Decoding (Fu, Bailis, Stoica, Zhang): b parallel speculations per step.

Conventions (the paper's §4): each step verifies b disjoint speculations
(n-grams from the pool) of γ tokens each; every guessed token is accepted with
probability α, independently; the step emits the longest accepted prefix among
the b speculations plus the target's own next token.  Lookahead decoding sets
``b = G = W`` (guess-set size = window) and ``γ = N − 1`` (n-gram size N).

* Eq. 5: ``E[tokens/step] = (γ + 1) − Σ_{i=1}^{γ} (1 − α^i)^b``
  (b = 1 is Leviathan's ``(1 − α^{γ+1})/(1 − α)``).
* Eq. 7: the step compression ratio ``S = (f − 1 + E)/f`` when one step in f has
  a good speculation and the others fall back to one token (f >= 1).
* A step feeds ``(W + G)(N − 1)`` tokens to the model (lookahead branch W(N−1),
  verification branch G(N−1)), roughly proportional to its FLOPs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from specmodel.validation import (
    check_cost,
    check_nonnegative_int,
    check_positive_int,
    check_probability,
)

__all__ = [
    "PAPER_FIG4B_ALPHA",
    "PAPER_FIG4B_F",
    "LookaheadConfig",
    "best_lookahead_config",
    "expected_accepted_tokens",
    "step_compression_ratio",
    "tokens_per_step",
]

PAPER_FIG4B_ALPHA = 0.425
"""α of the paper's Fig. 4(b) scaling curve."""
PAPER_FIG4B_F = 3.106
"""f of the paper's Fig. 4(b) scaling curve (one good speculation every f steps)."""


def expected_accepted_tokens(alpha: float, gamma: int, b: int) -> float:
    """Eq. 5: expected tokens per step with b speculations of γ tokens (γ >= 0, b >= 1).

    ``1 + Σ_{i=1}^{γ} P(max accepted prefix >= i) = 1 + Σ (1 − (1 − α^i)^b)``; each
    term is computed as ``−expm1(b·log1p(−α^i))`` so it stays accurate for large b.
    """
    a = check_probability("alpha", alpha)
    g = check_nonnegative_int("gamma", gamma)
    bb = check_positive_int("b", b)
    if g == 0:
        return 1.0
    i = np.arange(1, g + 1, dtype=np.float64)
    ai = np.exp(i * math.log(a))
    return 1.0 + float(np.sum(-np.expm1(bb * np.log1p(-ai))))


def step_compression_ratio(alpha: float, gamma: int, b: int, f: float = 1.0) -> float:
    """Eq. 7: S = (f − 1 + E)/f, with E from Eq. 5 and f >= 1 steps per good speculation."""
    ff = check_cost("f", f)
    if ff < 1.0:
        raise ValueError(f"f must be >= 1, got {ff}")
    return (ff - 1.0 + expected_accepted_tokens(alpha, gamma, b)) / ff


def tokens_per_step(W: int, N: int, G: int) -> int:
    """Input tokens per lookahead step, (W + G)(N − 1) (window W, n-gram size N >= 2, guesses G)."""
    w = check_positive_int("W", W)
    n = check_positive_int("N", N)
    g = check_nonnegative_int("G", G)
    if n < 2:
        raise ValueError(f"N must be an integer >= 2, got {n}")
    return (w + g) * (n - 1)


@dataclass(frozen=True)
class LookaheadConfig:
    """A lookahead decoding configuration and its predicted speedup."""

    window: int
    """W, lookahead window."""
    ngram: int
    """N, n-gram size (γ = N − 1 tokens per speculation)."""
    guesses: int
    """G, speculations verified per step (b)."""
    tokens_per_step: int
    """(W + G)(N − 1)."""
    speedup: float
    """Step compression ratio S (the speedup when a step's cost is flat in its width)."""


def best_lookahead_config(
    alpha: float, budget: int, f: float = PAPER_FIG4B_F, max_ngram: int = 64
) -> LookaheadConfig | None:
    """Best (W = G, N) with (W + G)(N − 1) <= budget, as the paper sets W = G.

    Returns None when no configuration fits (budget < 2).
    """
    a = check_probability("alpha", alpha)
    m = check_positive_int("budget", budget)
    cap = check_positive_int("max_ngram", max_ngram)
    best: LookaheadConfig | None = None
    for n in range(2, cap + 1):
        b = m // (2 * (n - 1))
        if b < 1:
            break
        s = step_compression_ratio(a, n - 1, b, f)
        if best is None or s > best.speedup * (1 + 1e-12):
            best = LookaheadConfig(b, n, b, tokens_per_step(b, n, b), s)
    return best
