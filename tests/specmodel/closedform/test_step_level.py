"""Step-level speculation: f_sync, f_async (the knee), multi-branch, against simulations."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from specmodel.closedform.step_level import (
    async_knee,
    async_s1,
    async_s2,
    branch_acceptance,
    f_async,
    f_step,
    f_sync,
    f_sync_multibranch,
    multibranch_parallel_dim,
    parallel_dim_f,
)
from specmodel.closedform.token_level import g_token
from specmodel.montecarlo.step import (
    async_stage_times,
    simulate_async,
    simulate_async_events,
    simulate_sync,
)
from specmodel.parameters import Parameters

alphas = st.floats(min_value=1e-4, max_value=1 - 1e-9)
c_pos = st.floats(min_value=1e-3, max_value=0.99)
ks = st.integers(min_value=1, max_value=4096)


@given(alphas, st.floats(0.0, 1.0), ks)
def test_f_sync_is_g_in_step_units(alpha: float, c: float, k: int) -> None:
    assert f_sync(alpha, c, k) == pytest.approx(g_token(alpha, c, k), rel=1e-12)


@given(alphas, c_pos)
def test_knee_is_ceil_of_inverse(alpha: float, c: float) -> None:
    knee = async_knee(c)
    assert knee == math.ceil(1 / c) or abs(1 / c - round(1 / c)) < 1e-9
    assert (knee - 1) * c < 1 <= knee * c * (1 + 1e-9)


@pytest.mark.parametrize("n", [2, 3, 4, 5, 7, 10])
def test_knee_exact_for_reciprocals_of_integers(n: int) -> None:
    assert async_knee(1 / n) == n


@given(alphas, c_pos, st.integers(1, 300))
def test_f_async_is_min_of_s1_s2(alpha: float, c: float, k: int) -> None:
    f = f_async(alpha, c, k)
    expected = min(async_s1(alpha, c), async_s2(alpha, c, k))
    assert f == pytest.approx(expected, rel=1e-9)
    assert 1.0 - 1e-12 <= f <= async_s1(alpha, c) * (1 + 1e-12)


@given(alphas, c_pos, st.integers(1, 300))
def test_parallel_dim(alpha: float, c: float, k: int) -> None:
    assert parallel_dim_f("sync", c, k) == k
    assert parallel_dim_f("async", c, k) == min(async_knee(c), k)


@given(alphas, c_pos, st.integers(1, 300))
def test_async_never_slower_than_sync(alpha: float, c: float, k: int) -> None:
    """Overlapping draft and target can only help: f_async(k) >= f_sync(k)."""
    assert f_async(alpha, c, k) >= f_sync(alpha, c, k) * (1 - 1e-12)


def test_stage_time_recurrence_solution() -> None:
    """The recurrence gives the paper's stage times on both sides of the knee."""
    x = np.arange(0, 40)
    for c, k in [(0.3, 3), (0.25, 4), (0.1, 5), (0.3, 4), (0.3, 9), (0.05, 2)]:
        t = async_stage_times(x, c, k)
        depth_limited = -(-(x + 1) // k) + c * (x % k)
        expected = depth_limited if k * c <= 1 else 1 + c * x
        assert np.allclose(t, expected), (c, k)


SPREAD = [
    (0.6, 0.3, 2),
    (0.6, 0.3, 3),  # = floor(1/c): the paper's Theorem 2 case 1 would say S1 here
    (0.6, 0.3, 4),  # = ceil(1/c): S1
    (0.6, 0.3, 7),
    (0.63, 0.2, 5),
    (0.8, 0.1, 6),
    (0.8, 0.1, 14),
    (0.45, 0.5, 2),
    (0.9, 0.05, 12),
]


@pytest.mark.parametrize("alpha,c,k", SPREAD)
def test_async_closed_form_against_event_simulation(alpha: float, c: float, k: int) -> None:
    exact = f_async(alpha, c, k)
    fast = simulate_async(alpha, c, k, n_stages=200_000, seed=1)
    events = simulate_async_events(alpha, c, k, n_stages=20_000, seed=2)
    assert fast.agrees_with(exact), (fast, exact)
    assert events.agrees_with(exact), (events, exact)


def test_paper_floor_boundary_is_wrong_at_floor() -> None:
    """At k1 = floor(1/c1) < 1/c1 the process is depth-limited: S2, not S1."""
    alpha, c, k = 0.6, 0.3, 3
    est = simulate_async(alpha, c, k, n_stages=400_000, seed=9)
    assert est.agrees_with(async_s2(alpha, c, k))
    assert abs(est.z_score(async_s1(alpha, c))) > 10


def test_s2_beyond_knee_overstates() -> None:
    alpha, c, k = 0.8, 0.1, 14
    est = simulate_async(alpha, c, k, n_stages=400_000, seed=4)
    assert async_s2(alpha, c, k) > async_s1(alpha, c)
    assert abs(est.z_score(async_s2(alpha, c, k))) > 6
    assert est.agrees_with(async_s1(alpha, c))


@pytest.mark.parametrize("alpha,c,k", [(0.6, 0.2, 1), (0.6, 0.2, 4), (0.3, 0.5, 3), (0.9, 0.02, 9)])
def test_sync_closed_form_against_simulation(alpha: float, c: float, k: int) -> None:
    assert simulate_sync(alpha, c, k, n_cycles=300_000, seed=5).agrees_with(f_sync(alpha, c, k))


def test_async_with_sampled_durations_is_slower_than_constant() -> None:
    """Beyond the paper: variable step times (same mean) cost the async pipeline speed."""

    def target(rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.exponential(1.0, size=n)

    const = simulate_async_events(0.7, 0.2, 4, n_stages=20_000, seed=3)
    varied = simulate_async_events(0.7, 0.2, 4, n_stages=20_000, seed=3, target_time=target)
    assert varied.mean < const.mean - 4 * math.hypot(varied.stderr, const.stderr)


def test_multibranch_width_one_is_sync_and_width_helps_acceptance() -> None:
    for k in (1, 2, 5):
        mb = f_sync_multibranch(0.6, 0.1, k, 1)
        assert mb.speedup == pytest.approx(f_sync(0.6, 0.1, k))
        assert mb.parallel_dim == k
    assert branch_acceptance(0.63, 2) == pytest.approx(1 - 0.37**2)
    assert multibranch_parallel_dim(3, 2) == 1 + 2 + 4
    wide = f_sync_multibranch(0.6, 0.1, 3, 4, draft_batch_cost=1.0)
    flat = f_sync_multibranch(0.6, 0.1, 3, 4, draft_batch_cost=0.0)
    assert wide.acceptance > 0.6 and wide.speedup < flat.speedup
    measured = f_sync_multibranch(0.63, 0.1, 3, 2, branch_alpha=0.73)
    assert measured.acceptance == 0.73


@given(alphas, c_pos, st.integers(1, 8), st.integers(1, 6))
def test_multibranch_bounds(alpha: float, c: float, k: int, w: int) -> None:
    mb = f_sync_multibranch(alpha, c, k, w)
    assert alpha - 1e-12 <= mb.acceptance <= 1
    assert mb.parallel_dim >= k
    assert 0 < mb.speedup <= k * (1 + 1e-12)


def test_edges_stay_finite() -> None:
    for k in (1, 2, 4096):
        assert math.isfinite(f_async(1 - 1e-12, 1e-4, k))
        assert math.isfinite(f_sync(1 - 1e-12, 0.0, k))
    assert f_async(1 - 1e-12, 0.25, 4096) == pytest.approx(4.0, rel=1e-6)  # 1/c as alpha -> 1
    assert f_step("async", 0.5, 0.25, 2) == f_async(0.5, 0.25, 2)


@pytest.mark.parametrize(
    "call,param",
    [
        (lambda: f_async(0.5, 0.0, 3), "c1"),
        (lambda: f_sync(0.5, -1.0, 3), "c1"),
        (lambda: f_sync(-0.1, 0.1, 3), "alpha1"),
        (lambda: f_async(0.5, 0.1, 0), "k1"),
        (lambda: f_step("fast", 0.5, 0.1, 2), "mode"),
        (lambda: parallel_dim_f("sync", 0.1, np.array([0])), "k1"),
        (lambda: branch_acceptance(0.5, 0), "width"),
        (lambda: simulate_async(0.5, 0.1, 2, n_stages=0), "n_stages"),
    ],
)
def test_bad_input_names_the_parameter(call, param: str) -> None:
    with pytest.raises(ValueError, match=param):
        call()


@pytest.mark.parametrize("c1", [1.0, 1.5, 4.0])
def test_async_closed_form_rejects_a_draft_no_faster_than_the_target(c1: float) -> None:
    from specmodel.closedform.step_level import async_s1, async_s2
    from specmodel.montecarlo.step import simulate_async_events

    for fn in (lambda: f_async(0.6, c1, 3), lambda: async_s1(0.6, c1),
               lambda: async_s2(0.6, c1, 2)):
        with pytest.raises(ValueError, match=r"c1 must be in \(0, 1\)"):
            fn()
    # The process runs at the draft's pace, 1/c1 (S1 would say 1/(1 + α1(c1 − 1)) and miss
    # every stage waiting for the slow draft it verifies).
    est = simulate_async_events(0.6, c1, 3, n_stages=4000, seed=2)
    assert est.mean == pytest.approx(1.0 / c1, rel=1e-9)


def test_theorem4_is_never_in_scope_where_async_is_undefined() -> None:
    from specmodel.closedform.hybrid import theorem4_in_scope

    assert theorem4_in_scope(Parameters(0.6, 0.2, 0.6, 0.1), 16)
    assert not theorem4_in_scope(Parameters(0.6, 0.0, 0.6, 0.1), 16)


@given(st.floats(0.05, 0.95), st.floats(0.01, 6.0), st.integers(1, 12), st.integers(0, 2**16))
def test_recurrence_simulator_is_the_event_simulation(alpha: float, c1: float, k1: int,
                                                      seed: int) -> None:
    """Same seed, same stages: the vectorized recurrence and the event simulation agree
    exactly for every c1, including a draft slower than the target (the stage then waits
    for the rejected draft: s_X + max(1, c1))."""
    fast = simulate_async(alpha, c1, k1, n_stages=300, seed=seed)
    events = simulate_async_events(alpha, c1, k1, n_stages=300, seed=seed)
    assert fast.mean == pytest.approx(events.mean, rel=1e-12)
    if c1 >= 1.0:
        assert fast.mean == pytest.approx(1.0 / c1, rel=1e-12)


@pytest.mark.parametrize("c1,k1", [(1.0, 1), (1.0, 3), (1.5, 1), (1.5, 4), (3.0, 2)])
def test_stage_time_of_a_slow_draft(c1: float, k1: int) -> None:
    """c1 >= 1: s_j = c1·j, and the stage ends when the rejected draft X is done."""
    x = np.arange(0, 30)
    assert np.allclose(async_stage_times(x, c1, k1), c1 * (x + 1))
    assert simulate_async(0.7, c1, k1, n_stages=5000, seed=1).mean == pytest.approx(1 / c1)


def test_async_optimizer_rejects_a_slow_draft_in_one_line() -> None:
    from specmodel.optimize.budget import optimize_budget

    with pytest.raises(ValueError, match=r"c1 must be in \(0, 1\)") as err:
        optimize_budget(Parameters(0.6, 1.5, 0.7, 0.05), 16, "async")
    assert "\n" not in str(err.value)
    # sync is defined for any c1 >= 0: a slow draft makes step-level speculation lose,
    # so the optimum is token-only.
    assert optimize_budget(Parameters(0.6, 1.5, 0.7, 0.05), 16, "sync").k1 == 1
