"""Token-level speculation: both conventions, bound, optimum, Monte-Carlo twin."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from specmodel.closedform.token_level import (
    continuous_optimal_k,
    expected_accepted_drafts,
    expected_iterations_for_tokens,
    expected_tokens_per_iteration,
    g_leviathan,
    g_token,
    g_token_step,
    optimal_k,
    token_speedup_bound,
    unimodality_sign,
)
from specmodel.montecarlo.hybrid import sample_step_times
from specmodel.montecarlo.token import simulate_token_sd

alphas = st.floats(min_value=1e-4, max_value=1 - 1e-9)
costs = st.floats(min_value=0.0, max_value=2.0)
ks = st.integers(min_value=1, max_value=4096)


@given(alphas, costs, ks)
def test_conventions_are_one_function_shifted(alpha: float, c: float, k: int) -> None:
    assert g_token(alpha, c, k) == pytest.approx(g_leviathan(alpha, c, k - 1), rel=1e-12)


@given(alphas, costs, ks)
def test_bound_one_over_one_minus_alpha(alpha: float, c: float, k: int) -> None:
    g = g_token(alpha, c, k)
    assert math.isfinite(g)
    assert 0 < g <= token_speedup_bound(alpha) * (1 + 1e-12)
    assert g <= k * (1 + 1e-12)  # never more tokens than positions per target pass


@given(alphas, costs)
def test_k_equal_one_is_autoregressive(alpha: float, c: float) -> None:
    assert g_token(alpha, c, 1) == pytest.approx(1.0)
    assert g_token(alpha, c, 2) == pytest.approx((1 + alpha) / (1 + c))


@given(alphas, ks)
def test_c_zero_is_expected_tokens_and_increasing(alpha: float, k: int) -> None:
    assert g_token(alpha, 0.0, k) == pytest.approx(expected_tokens_per_iteration(alpha, k - 1))
    assert g_token(alpha, 0.0, k + 1) >= g_token(alpha, 0.0, k)


@given(alphas, costs, st.integers(min_value=1, max_value=200))
def test_monotone_in_alpha_and_c(alpha: float, c: float, k: int) -> None:
    assume(alpha < 0.999)
    assert g_token(alpha + 1e-3 * (1 - alpha), c, k) >= g_token(alpha, c, k) * (1 - 1e-12)
    assert g_token(alpha, c + 0.01, k) <= g_token(alpha, c, k) * (1 + 1e-12)


def test_edge_values() -> None:
    # alpha -> 0: only the target's token; alpha -> 1: every position accepted.
    assert g_token(1e-12, 0.1, 8) == pytest.approx(1 / (1 - 0.1 + 0.8), rel=1e-9)
    assert g_token(1 - 1e-12, 0.1, 8) == pytest.approx(8 / 1.7, rel=1e-9)
    assert math.isfinite(g_token(1 - 1e-15, 0.0, 10**6))
    assert expected_accepted_drafts(0.5, 3) == pytest.approx(0.5 + 0.25 + 0.125)


@given(st.floats(0.05, 0.98), st.floats(0.001, 0.9))
def test_unimodal_and_integer_optimum(alpha: float, c: float) -> None:
    """Lemma 3: g increases then decreases; the integer optimum is >= 2 when alpha > c."""
    ks_ = np.arange(1, 400)
    g = np.asarray(g_token(alpha, c, ks_))
    best = optimal_k(alpha, c)
    assert best.speedup == pytest.approx(float(g.max()), rel=1e-12)
    assert int(ks_[np.argmax(g)]) == best.k or g[best.k - 1] >= g.max() * (1 - 1e-12)
    diffs = np.sign(np.diff(g))
    # one sign change at most (ignore exact ties)
    nz = diffs[diffs != 0]
    assert np.count_nonzero(np.diff(nz)) <= 1
    if alpha > c:
        assert best.k >= 2
        assert unimodality_sign(alpha, c, 1.0) > 0
    kh = continuous_optimal_k(alpha, c)
    assert math.floor(kh) <= best.k <= math.ceil(kh) or kh == 1.0


def test_optimal_k_respects_cap() -> None:
    free = optimal_k(0.8, 0.05)
    capped = optimal_k(0.8, 0.05, k_max=3)
    assert free.k > 3 and capped.k == 3 and capped.capped
    assert optimal_k(0.8, 0.0, k_max=64).k == 64
    with pytest.raises(ValueError, match="k_max"):
        optimal_k(0.8, 0.0)


@pytest.mark.parametrize(
    "alpha,c,k",
    [(0.3, 0.0, 2), (0.6, 0.05, 5), (0.8, 0.2, 8), (0.9, 0.01, 16), (0.5, 1.0, 3)],
)
def test_closed_form_against_monte_carlo(alpha: float, c: float, k: int) -> None:
    est = simulate_token_sd(alpha, c, k, n_iterations=300_000, seed=11)
    assert est.agrees_with(g_token(alpha, c, k), z=4.0), (est, g_token(alpha, c, k))


def test_position_dependent_acceptance_changes_the_answer() -> None:
    """A falling acceptance profile is not the i.i.d. mean: the simulator sees the difference."""
    profile = np.array([0.9, 0.7, 0.5, 0.3])
    est = simulate_token_sd(profile, 0.05, 5, n_iterations=300_000, seed=3)
    exact = (1 + 0.9 + 0.9 * 0.7 + 0.9 * 0.7 * 0.5 + 0.9 * 0.7 * 0.5 * 0.3) / (1 + 0.05 * 4)
    assert est.agrees_with(exact)
    assert not est.agrees_with(g_token(float(profile.mean()), 0.05, 5))


@pytest.mark.parametrize("alpha,k,length", [(0.7, 5, 16), (0.5, 3, 40), (0.9, 9, 7)])
def test_finite_step_speedup_against_monte_carlo(alpha: float, k: int, length: int) -> None:
    rng = np.random.default_rng(5)
    times = sample_step_times(rng, alpha, 0.0, k, length, 200_000)
    from specmodel.montecarlo.estimate import mean_estimate

    assert mean_estimate(times).agrees_with(expected_iterations_for_tokens(alpha, k, length))
    assert g_token_step(alpha, 0.1, k, length) < g_token(alpha, 0.1, k)
    assert g_token_step(alpha, 0.1, k, 20_000) == pytest.approx(g_token(alpha, 0.1, k), rel=1e-3)


@pytest.mark.parametrize(
    "call,param",
    [
        (lambda: g_token(1.2, 0.1, 3), "alpha"),
        (lambda: g_token(0.5, -0.1, 3), "c"),
        (lambda: g_token(0.5, float("nan"), 3), "c"),
        (lambda: g_token(0.5, 0.1, 0), "k"),
        (lambda: g_token(0.5, 0.1, 2.0), "k"),
        (lambda: g_token(0.5, 0.1, True), "k"),
        (lambda: g_leviathan(0.5, 0.1, -1), "gamma"),
        (lambda: unimodality_sign(0.5, 0.1, 0.5), "k"),
        (lambda: simulate_token_sd(0.5, 0.1, 3, n_iterations=1), "n_iterations"),
        (lambda: simulate_token_sd([0.5, 1.5], 0.1, 3), r"alpha\[1\]"),
    ],
)
def test_bad_input_names_the_parameter(call, param: str) -> None:
    with pytest.raises(ValueError, match=param):
        call()
