"""The run-length expectations: exact sums, Monte-Carlo, stability at the edges."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from specmodel.closedform.geometric import (
    expected_batches,
    expected_run_length,
    expected_run_mod,
    expected_truncated_run,
    geometric_sum,
    one_minus_power,
    run_length_pmf,
)
from specmodel.montecarlo.estimate import mean_estimate

alphas = st.floats(min_value=1e-6, max_value=1 - 1e-6)
ks = st.integers(min_value=1, max_value=5000)


def _direct_mod(alpha: float, k: int) -> float:
    """E[X mod k] by summing the pmf far into the tail (mpmath-free reference)."""
    n = int(max(10 * k, 40 / -math.log(alpha)))
    x = np.arange(n, dtype=np.float64)
    p = (1 - alpha) * np.exp(x * math.log(alpha))
    return float(np.sum(p * (x % k)))


@given(alphas, ks)
def test_geometric_sum_matches_series_definition(alpha: float, k: int) -> None:
    value = geometric_sum(alpha, k)
    i = np.arange(k, dtype=np.float64)
    assert value == pytest.approx(float(np.sum(np.exp(i * math.log(alpha)))), rel=1e-9)
    assert 1.0 - 1e-12 <= value <= min(k, 1 / (1 - alpha)) * (1 + 1e-12)


@given(alphas, st.integers(min_value=1, max_value=400))
def test_expected_run_mod_matches_direct_sum(alpha: float, k: int) -> None:
    u = -math.log(alpha)
    if u < 2e-5:
        # The direct sum would need ~40/u terms; check the alpha -> 1 expansion instead.
        approx = (k - 1) / 2 - (k * k - 1) * u / 12
        assert expected_run_mod(alpha, k) == pytest.approx(approx, rel=1e-6, abs=1e-9)
        return
    assert expected_run_mod(alpha, k) == pytest.approx(_direct_mod(alpha, k), rel=1e-7, abs=1e-9)


@given(alphas, ks)
def test_run_mod_bounds_and_limits(alpha: float, k: int) -> None:
    value = expected_run_mod(alpha, k)
    assert math.isfinite(value)
    assert -1e-12 <= value <= (k - 1) + 1e-12
    # X mod k <= X, so its mean is at most E[X].
    assert value <= expected_run_length(alpha) * (1 + 1e-9) + 1e-12


def test_run_mod_tends_to_uniform_mean_as_alpha_to_one() -> None:
    for k in (2, 7, 100, 4096):
        assert expected_run_mod(1 - 1e-13, k) == pytest.approx((k - 1) / 2, rel=1e-6)


@given(alphas, ks)
def test_batches_identity(alpha: float, k: int) -> None:
    # E[ceil((X+1)/k)] = sum_m P(X >= m k) = 1 / (1 - alpha^k)
    assert expected_batches(alpha, k) == pytest.approx(1 / one_minus_power(alpha, k), rel=1e-12)
    assert expected_batches(alpha, k) >= 1.0


@given(alphas, ks)
def test_truncated_run_between_zero_and_both_bounds(alpha: float, k: int) -> None:
    v = expected_truncated_run(alpha, k)
    assert 0 < v <= min(k, expected_run_length(alpha)) * (1 + 1e-12)


@pytest.mark.parametrize("alpha,k", [(0.3, 3), (0.63, 6), (0.9, 4), (0.95, 17)])
def test_expectations_against_monte_carlo(alpha: float, k: int) -> None:
    rng = np.random.default_rng(7)
    x = rng.geometric(1 - alpha, size=400_000) - 1
    assert mean_estimate(x).agrees_with(expected_run_length(alpha))
    assert mean_estimate(np.minimum(x, k)).agrees_with(expected_truncated_run(alpha, k))
    assert mean_estimate(-(-(x + 1) // k)).agrees_with(expected_batches(alpha, k))
    assert mean_estimate(x % k).agrees_with(expected_run_mod(alpha, k))


def test_array_arguments_match_scalars() -> None:
    k = np.arange(1, 50)
    arr = expected_run_mod(0.7, k)
    assert np.allclose(arr, [expected_run_mod(0.7, int(i)) for i in k], rtol=1e-13)
    pmf = run_length_pmf(0.4, 200)
    assert pmf.sum() == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize(
    "call,param",
    [
        (lambda: geometric_sum(1.0, 3), "alpha"),
        (lambda: geometric_sum(0.0, 3), "alpha"),
        (lambda: geometric_sum(float("nan"), 3), "alpha"),
        (lambda: geometric_sum(0.5, 0), "k"),
        (lambda: geometric_sum(0.5, 2.5), "k"),
        (lambda: expected_run_mod(0.5, np.array([1, 0])), "k"),
        (lambda: expected_batches(0.5, np.array([1.0, 2.0])), "k"),
    ],
)
def test_bad_input_names_the_parameter(call, param: str) -> None:
    with pytest.raises(ValueError, match=param):
        call()
