"""The budget problem: exact integer optimum, landscape, comparison points."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from specmodel.closedform.hybrid import h
from specmodel.closedform.step_level import async_knee, parallel_dim_f
from specmodel.optimize.budget import budget_landscape, optimize_budget
from specmodel.parameters import Parameters

params = st.tuples(
    st.floats(0.05, 0.95), st.floats(0.01, 0.9), st.floats(0.05, 0.95), st.floats(0.0, 0.5),
    st.integers(1, 48), st.sampled_from(["sync", "async"]),
)


def _brute(mode, a1, c1, a2, c2, M):
    best = (-1.0, None)
    for k1 in range(1, M + 1):
        pd = parallel_dim_f(mode, c1, k1)
        for k2 in range(1, M // pd + 1):
            v = h(mode, a1, c1, a2, c2, k1, k2)
            if v > best[0] * (1 + 1e-12):
                best = (v, (k1, k2))
    return best


@given(params)
def test_optimum_equals_brute_force(p) -> None:
    a1, c1, a2, c2, M, mode = p
    res = optimize_budget(Parameters(a1, c1, a2, c2), M, mode)
    value, _ = _brute(mode, a1, c1, a2, c2, M)
    assert res.speedup == pytest.approx(value, rel=1e-10)
    assert res.best.parallel_dim <= M
    assert parallel_dim_f(mode, c1, res.k1) * res.k2 == res.best.parallel_dim
    assert res.token_only.k1 == 1 and res.step_only.k2 == 1
    assert res.speedup >= max(res.token_only.speedup, res.step_only.speedup) * (1 - 1e-12)
    if mode == "async":
        assert res.k1 <= async_knee(c1)


@given(params)
def test_landscape_is_exactly_the_feasible_set(p) -> None:
    a1, c1, a2, c2, M, mode = p
    land = budget_landscape(Parameters(a1, c1, a2, c2), M, mode)
    assert np.all(land.parallel_dim <= M)
    k1_max = M if mode == "sync" else min(M, async_knee(c1))
    n_expected = sum(M // parallel_dim_f(mode, c1, k1) for k1 in range(1, k1_max + 1))
    assert land.k1.size == n_expected
    assert np.allclose(land.speedup, h(mode, a1, c1, a2, c2, land.k1, land.k2), rtol=1e-12)
    res = optimize_budget(Parameters(a1, c1, a2, c2), M, mode)
    assert float(land.speedup.max()) == pytest.approx(res.speedup, rel=1e-12)


@given(params)
def test_more_budget_never_hurts(p) -> None:
    a1, c1, a2, c2, M, mode = p
    assert (
        optimize_budget(Parameters(a1, c1, a2, c2), M + 1, mode).speedup
        >= optimize_budget(Parameters(a1, c1, a2, c2), M, mode).speedup * (1 - 1e-12)
    )


def test_budget_one_is_autoregressive() -> None:
    res = optimize_budget(Parameters(0.7, 0.1, 0.7, 0.1), 1, "sync")
    assert (res.k1, res.k2, res.speedup, res.regime) == (1, 1, 1.0, "none")


def test_large_budget_stays_finite() -> None:
    res = optimize_budget(Parameters(0.8, 0.05, 0.8, 0.02), 4096, "sync", landscape=True)
    assert math.isfinite(res.speedup) and res.regime == "hybrid"
    assert res.landscape is not None and res.landscape.k1.size > 4096
    assert np.all(np.isfinite(res.landscape.speedup))  # benchmarks/ measures the cost


def test_result_reports_theorem_status() -> None:
    sync = optimize_budget(Parameters(0.63, 0.1, 0.7, 0.02), 16, "sync")
    assert sync.theorem3 is not None and sync.theorem3.in_scope
    asyn = optimize_budget(Parameters(0.63, 0.1, 0.7, 0.02), 16, "async")
    assert asyn.theorem3 is None and asyn.theorem4_in_scope
    assert "hybrid" in asyn.message


@pytest.mark.parametrize(
    "kwargs,param",
    [
        ({"M": 0}, "M"),
        ({"alpha1": 1.0}, "alpha1"),
        ({"c2": -0.5}, "c2"),
        ({"mode": "both"}, "mode"),
        ({"c1": 0.0, "mode": "async"}, "c1"),
        ({"M": 16.0}, "M"),
    ],
)
def test_bad_input_names_the_parameter(kwargs, param: str) -> None:
    args = {"alpha1": 0.6, "c1": 0.1, "alpha2": 0.6, "c2": 0.1, "M": 16, "mode": "sync"}
    args.update(kwargs)
    with pytest.raises(ValueError, match=param):
        params = Parameters(args["alpha1"], args["c1"], args["alpha2"], args["c2"])
        optimize_budget(params, args["M"], args["mode"])


@pytest.mark.parametrize(
    "p",
    [
        (0.63, 0.2, 0.7, 0.02, 16, "async"),
        (0.63, 0.2, 0.7, 0.02, 16, "sync"),
        (0.5, 0.4, 0.8, 0.05, 32, "async"),
        (0.8, 0.05, 0.3, 0.3, 8, "sync"),
    ],
)
def test_monte_carlo_method_agrees_with_closed_form(p) -> None:
    from specmodel.optimize.budget import optimize_budget_mc

    res = optimize_budget_mc(Parameters(*p[:4]), p[4], p[5], samples=200_000, seed=3)
    assert res.agrees
    assert all(abs(c.z_score) < 4.5 for c in res.candidates)
    assert res.candidates[0].closed_form == pytest.approx(res.closed_form.speedup)
    kinds = {(c.k1 == 1, c.k2 == 1) for c in res.candidates}
    assert (True, False) in kinds or res.closed_form.token_only.k2 == 1


def test_economical_point_is_the_leanest_near_optimum() -> None:
    res = optimize_budget(Parameters(0.63, 0.34, 0.28, 0.0), 256, "sync", landscape=True)
    eco = res.economical
    assert eco is not None and eco.parallel_dim < res.best.parallel_dim
    assert eco.speedup >= res.speedup * (1 - 1e-3)
    land = res.landscape
    near = land.speedup >= res.speedup * (1 - 1e-3)
    assert eco.parallel_dim == int(land.parallel_dim[near].min())
    res = optimize_budget(Parameters(0.6, 0.2, 0.7, 0.05), 16, "sync", economy_rtol=0.0)
    assert res.economical is None
