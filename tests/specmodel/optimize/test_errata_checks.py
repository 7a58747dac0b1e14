"""Checks behind docs/errata.md entries LR-14 … LR-20, LD-1 … LD-3 and SS-1/SS-2.

Each test asserts the property the erratum states (what is true), so the entry
cannot drift from the code.
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
from specmodel.closedform.token_level import g_leviathan, g_token
from specmodel.montecarlo.token import simulate_token_sd
from specmodel.optimize.budget import optimize_budget
from specmodel.parameters import Parameters
from specmodel.symbolic.lr import a, expected_mod_series, lemma6_f, y


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


def test_lr15_lemma5_w_prime_is_not_decreasing() -> None:
    """w''(γ) > 0 on part of [1, M] (so w' increases there); the bracket is decreasing."""
    g = sp.symbols("gamma", positive=True)
    a1, c1, a2, c2, M = (sp.Rational(v) for v in ("0.6", "0.2", "0.7", "0.05", "16"))

    def f(al, c, xx):
        return (1 - al**xx) / ((1 - al) * (1 - c + c * xx))

    w = f(a1, c1, g) * f(a2, c2, M / g)
    assert float(sp.diff(w, g, 2).subs(g, 8)) > 0.04
    assert float(sp.diff(w, g, 2).subs(g, 2)) < 0

    def bracket(gg: np.ndarray) -> np.ndarray:
        def ai(al: float, xx: np.ndarray) -> np.ndarray:
            return xx * -math.log(al) * al**xx / (1 - al**xx)

        eta = 16 / gg
        return (ai(0.6, gg) - ai(0.7, eta) - 0.2 * gg / (0.8 + 0.2 * gg)
                + 0.05 * eta / (0.95 + 0.05 * eta))

    grid = np.linspace(1, 16, 2001)
    assert np.all(np.diff(bracket(grid)) < 0)


def test_lr16_lemma6_limits_of_f_prime() -> None:
    """F'(0+) = 1/2 (the paper: '+O(y)') and F'(1−) = −1 (the paper: −∞)."""
    fp = sp.diff(lemma6_f(y), y)
    assert sp.limit(fp, y, 0, "+") == sp.Rational(1, 2)
    assert sp.limit(fp, y, 1, "-") == -1


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


@pytest.mark.parametrize("gamma", [1, 2, 3, 4])
def test_lr18_appendix_c_mod_formula_needs_no_gamma_above_4(gamma: int) -> None:
    """E[X mod γ] = (α − α^{γ+1} − γ(1−α)α^γ)/((1−α)(1−α^γ)) for every integer γ >= 1."""
    closed = (a - a ** (gamma + 1) - gamma * (1 - a) * a**gamma) / ((1 - a) * (1 - a**gamma))
    assert sp.simplify(expected_mod_series(gamma) - closed) == 0


def test_lr19_section33_k2_counts_positions_not_additional_tokens() -> None:
    """§3.3's g(k2) is Leviathan's with k2 − 1 draft tokens, not k2 'additional' ones."""
    al, c, k2 = 0.8, 0.05, 4
    assert g_token(al, c, k2) == pytest.approx(g_leviathan(al, c, k2 - 1), rel=1e-12)
    assert abs(g_token(al, c, k2) - g_leviathan(al, c, k2)) > 0.2
    est = simulate_token_sd(al, c, k2, 200_000, seed=3)  # k2 positions = 3 drafts + 1
    assert est.agrees_with(g_token(al, c, k2))
    assert abs(est.z_score(g_leviathan(al, c, k2))) > 10


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


def _sample_verify_position(p: np.ndarray, guesses: list[int], rng: np.random.Generator) -> int:
    """One position of Algorithm 4 with its indices corrected (j for the speculation)."""
    pj = p.copy()
    for s in guesses:  # j = 1 .. size(V)
        if rng.random() <= pj[s]:
            return s  # accepted
        pj[s] = 0.0
        pj = pj / pj.sum()
    return int(rng.choice(p.size, p=pj))


def test_ld3_corrected_algorithm4_preserves_the_distribution() -> None:
    p = np.array([0.4, 0.3, 0.2, 0.1])
    rng = np.random.default_rng(1)
    n = 100_000
    out = np.bincount([_sample_verify_position(p, [1, 3, 0], rng) for _ in range(n)],
                      minlength=4) / n
    assert np.all(np.abs(out - p) < 4 * np.sqrt(p * (1 - p) / n))


def _deterministic_rule(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """SemanticSpec §2.1 Step 3: accept when p(x) >= q(x), else draw from norm(max(0, p − q))."""
    acc = np.where(p >= q, q, 0.0)
    resid = np.maximum(p - q, 0.0)
    return acc + (1 - acc.sum()) * (resid / resid.sum() if resid.sum() > 0 else 0.0)


def test_ss2_accept_if_p_ge_q_is_not_lossless() -> None:
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3, 0.5])
    assert np.allclose(_deterministic_rule(p, q), [0.7, 0.3, 0.0])
    # lossless exactly when p(x) >= q(x) or p(x) = 0 at every x
    assert np.allclose(_deterministic_rule(np.array([1.0, 0.0]), np.array([0.5, 0.5])), [1, 0])


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
