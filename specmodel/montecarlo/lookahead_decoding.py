"""Monte-Carlo of lookahead decoding's verification and of SemanticSpec's accept/reject."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from specmodel.closedform.semantic_speculation import check_distribution
from specmodel.montecarlo.acceptance import acceptance_profile, sample_accepted_prefix
from specmodel.montecarlo.estimate import Estimate, mean_estimate
from specmodel.validation import check_nonnegative_int, check_positive_int, check_samples

__all__ = ["simulate_lookahead_decoding", "simulate_semantic_speculation"]


def simulate_lookahead_decoding(
    alpha: float, gamma: int, b: int, n_steps: int = 200_000, seed: int = 0
) -> Estimate:
    """Tokens per step: b speculations of γ i.i.d. tokens, longest accepted prefix + 1."""
    prof = acceptance_profile("alpha", alpha)
    g = check_nonnegative_int("gamma", gamma)
    bb = check_positive_int("b", b)
    n = check_samples("n_steps", n_steps)
    rng = np.random.default_rng(seed)
    best = np.zeros(n, dtype=np.int64)
    for _ in range(bb):
        np.maximum(best, sample_accepted_prefix(rng, prof, g, n), out=best)
    return mean_estimate(best + 1)


def simulate_semantic_speculation(
    p_probs: Sequence[float] | np.ndarray,
    q_probs: Sequence[float] | np.ndarray,
    n_draws: int = 200_000,
    seed: int = 0,
    resample: str = "target",
) -> tuple[Estimate, np.ndarray]:
    """Run SemanticSpec's accept/reject: (acceptance rate, empirical output distribution)."""
    p = check_distribution("p_probs", p_probs)
    q = check_distribution("q_probs", q_probs)
    n = check_samples("n_draws", n_draws)
    if resample not in ("target", "residual"):
        raise ValueError(f"resample must be 'target' or 'residual', got {resample!r}")
    rng = np.random.default_rng(seed)
    draft = rng.choice(p.size, size=n, p=q)
    ratio = np.divide(p[draft], q[draft], out=np.ones(n), where=q[draft] > 0)
    accept = rng.random(n) < np.minimum(1.0, ratio)
    fallback = p if resample == "target" else np.maximum(p - q, 0.0)
    if fallback.sum() > 0:
        fallback = fallback / fallback.sum()
        redraw = rng.choice(p.size, size=n, p=fallback)
    else:
        redraw = draft
    out = np.where(accept, draft, redraw)
    return mean_estimate(accept.astype(np.float64)), np.bincount(out, minlength=p.size) / n
