"""Monte-Carlo of token-level speculative decoding (Leviathan et al.'s process).

One iteration: the draft proposes k − 1 tokens (cost c each, in target forward
passes), the target verifies all k positions in one pass (cost 1), the longest
accepted prefix is kept and the target adds one token (correction or bonus).
"""

from __future__ import annotations

import numpy as np

from specmodel.montecarlo.acceptance import acceptance_profile, sample_accepted_prefix
from specmodel.montecarlo.estimate import Estimate, mean_estimate
from specmodel.validation import check_cost, check_positive_int, check_samples

__all__ = ["sample_token_iterations", "simulate_token_sd"]


def sample_token_iterations(
    alpha: float | np.ndarray, k: int, n: int, seed: int | np.random.Generator = 0
) -> np.ndarray:
    """Tokens emitted by each of ``n`` iterations with k parallel positions."""
    prof = acceptance_profile("alpha", alpha)
    kk = check_positive_int("k", k)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    return sample_accepted_prefix(rng, prof, kk - 1, n) + 1


def simulate_token_sd(
    alpha: float | np.ndarray,
    c: float,
    k: int,
    n_iterations: int = 200_000,
    seed: int = 0,
) -> Estimate:
    """Speedup of token-level SD: tokens per unit of target time, over ``n_iterations``.

    ``alpha`` may be a per-draft-position acceptance vector (beyond i.i.d.).
    Convention: k = draft tokens + 1 (parallel positions).
    """
    cc = check_cost("c", c)
    n = check_samples("n_iterations", n_iterations)
    kk = check_positive_int("k", k)
    tokens = sample_token_iterations(alpha, kk, n, seed)
    est = mean_estimate(tokens)
    cost = 1.0 + cc * (kk - 1)
    return Estimate(est.mean / cost, est.stderr / cost, n)
