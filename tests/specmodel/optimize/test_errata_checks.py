"""Checks of docs/errata.md entries beyond what `specmodel errata` computes.

Every entry's own check (specmodel/errata.py) runs in tests/specmodel/test_errata.py;
the tests here assert more of the same truths: over a region instead of a point
(LR-14), symbolically in M (LR-17), the slope behind LD-1, the pairwise case of LD-2,
and SS-1 as a property over random distributions.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from specmodel.closedform.lookahead_decoding import expected_accepted_tokens, step_compression_ratio
from specmodel.closedform.semantic_speculation import output_distribution
from specmodel.closedform.step_level import f_async
from specmodel.optimize.budget import optimize_budget
from specmodel.parameters import Parameters


def test_lr14_theorem4_bound_157_fails_inside_the_region() -> None:
    """Theorem 4, Step 1 case 2: '(1+α1)/(1+c1) >= 1.157 … is easy to prove' is false at
    α1 = 0.53, c1 = 0.33; what the async argument needs, f_async(2) >= 1.157, holds."""
    a1, c1 = 0.53, 0.33
    assert (1 + a1) / (1 + c1) < 1.157
    assert f_async(a1, c1, 2) == pytest.approx((1 + a1) / (1 + c1 * a1 * (1 - a1)), rel=1e-12)
    # its infimum over 0.52 < α1 < 0.8, c1 < 1/3 is at (0.52, 1/3): 1.403 > 1.157
    assert 1.52 / (1 + 0.52 * 0.48 / 3) > 1.4
    for a2 in (0.53, 0.79):
        assert optimize_budget(Parameters(a1, c1, a2, 0.19), 16, "async").regime == "hybrid"


def test_lr17_lemma1_bound_increases_in_m() -> None:
    """(1+α1)/((1+α2^{M/2})(1+α1c1(1−α1))) increases in M (the paper: decreases); its
    minimum over M >= 16 is therefore at M = 16, the value the proof plugs in."""
    M = sp.symbols("M", positive=True)
    a1, c1, a2 = sp.symbols("alpha1 c1 alpha2", positive=True)
    bound = (1 + a1) / ((1 + a2 ** (M / 2)) * (1 + a1 * c1 * (1 - a1)))
    d = sp.diff(bound, M)
    for vals in ({a1: 0.6, c1: 0.2, a2: 0.7}, {a1: 0.52, c1: 0.33, a2: 0.79}):
        for m in (16, 20, 40):
            assert float(d.subs(vals).subs(M, m)) > 0
    assert 1.52 / ((1 + 0.8**8) * (1 + 0.52 / 3 * 0.48)) > 1


def test_ld1_steps_saved_shrink_while_s_grows_linearly_in_log_b() -> None:
    """For large γ, S gains a near-constant amount per doubling of b, so the number of
    steps (∝ 1/S) falls by less and less: not a linear reduction in log b."""
    al, gamma, f = 0.425, 60, 3.106
    bs = [2**j for j in range(2, 12)]
    s = np.array([step_compression_ratio(al, gamma, b, f) for b in bs])
    gains = np.diff(s)
    slope = math.log(2) / -math.log(al) / f
    assert np.allclose(gains[3:], slope, rtol=0.05)
    saved = -np.diff(1 / s)  # steps per token saved by each doubling
    assert np.all(np.diff(saved) < 0) and saved[-1] < 0.5 * saved[0]


def test_ld2_eq5_needs_independent_speculations() -> None:
    """Eq. 5 is the mean of the max of b independent runs; b copies of one speculation
    (fully dependent) give Eq. 4, and b = 2 distinct greedy guesses of one position
    (mutually exclusive matches) give 1 + 2α, not Eq. 5's 1 + 2α − α²."""
    al, gamma, b, n = 0.5, 4, 4, 200_000
    rng = np.random.default_rng(0)
    accepted = (rng.random((n, gamma)) < al).cumprod(axis=1).sum(axis=1)  # one run, b copies
    mean, se = 1 + accepted.mean(), accepted.std() / math.sqrt(n)
    assert abs(mean - expected_accepted_tokens(al, gamma, 1)) < 4 * se
    assert expected_accepted_tokens(al, gamma, b) - mean > 40 * se
    assert expected_accepted_tokens(0.3, 1, 2) == pytest.approx(1 + 2 * 0.3 - 0.3**2)


dists = st.lists(st.floats(0.0, 1.0), min_size=2, max_size=5).filter(
    lambda v: sum(v) > 0.1).map(lambda v: np.array(v) / sum(v))


@given(dists, dists)
def test_ss1_regenerating_from_p_is_exact_iff_q_is_proportional_to_p_on_its_support(
    p: np.ndarray, q: np.ndarray
) -> None:
    """Not only p = q: the output is p iff q = λ·p on supp(p) for some λ (SS-1)."""
    if p.size != q.size:
        return
    out = output_distribution(p, q, "target")
    supp = p > 0
    with np.errstate(over="ignore"):  # p may be ~1e-308 on its support
        lam = q[supp] / p[supp]
    if np.ptp(lam) < 1e-12 and lam[0] <= 1:  # q = λ·p on supp(p)
        assert np.allclose(out, p, atol=1e-9)
    # out − p = min(p, q) − (Σ min) p: it vanishes only where min(p, q) ∝ p
    mins = np.minimum(p, q)
    assert np.allclose(out - p, mins - mins.sum() * p, atol=1e-12)


def test_ss1_exact_without_p_equal_q() -> None:
    p, q = np.array([1.0, 0.0]), np.array([0.5, 0.5])
    assert np.allclose(output_distribution(p, q, "target"), p)
    p, q = np.array([0.6, 0.4, 0.0]), np.array([0.3, 0.2, 0.5])  # q = p/2 on supp(p)
    assert np.allclose(output_distribution(p, q, "target"), p)
