"""The hybrid h = f·g: closed form against the simulation of token SD inside steps."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from specmodel.closedform.hybrid import h, regime_of, theorem3_conditions, theorem3_d
from specmodel.closedform.step_level import f_async, f_sync
from specmodel.closedform.token_level import g_token, g_token_step
from specmodel.montecarlo.hybrid import simulate_hybrid
from specmodel.montecarlo.step import simulate_async, simulate_sync
from specmodel.montecarlo.token import simulate_token_sd
from specmodel.parameters import Parameters


@given(
    st.floats(0.01, 0.99), st.floats(0.01, 0.9), st.floats(0.01, 0.99), st.floats(0.0, 0.9),
    st.integers(1, 64), st.integers(1, 64), st.sampled_from(["sync", "async"]),
)
def test_h_factorises(a1: float, c1: float, a2: float, c2: float, k1: int, k2: int, mode: str):
    f = f_sync(a1, c1, k1) if mode == "sync" else f_async(a1, c1, k1)
    assert h(mode, a1, c1, a2, c2, k1, k2) == pytest.approx(f * g_token(a2, c2, k2), rel=1e-12)
    assert h(mode, a1, c1, a2, c2, 1, 1) == pytest.approx(1.0)


def test_regime_names() -> None:
    assert [regime_of(*p) for p in [(2, 2), (1, 3), (3, 1), (1, 1)]] == [
        "hybrid", "token-only", "step-only", "none",
    ]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_hybrid_simulation_reduces_to_each_level(mode: str) -> None:
    # k2 = 1: steps take exactly one target-step time, so the hybrid is the step process.
    hyb = simulate_hybrid(mode, 0.6, 0.25, 0.7, 0.05, 3, 1, step_tokens=8, n_cycles=20_000, seed=1)
    ref = (simulate_sync if mode == "sync" else simulate_async)(0.6, 0.25, 3, 200_000, seed=2)
    assert abs(hyb.mean - ref.mean) < 4 * np.hypot(hyb.stderr, ref.stderr)
    # k1 = 1: target-only steps with token SD inside: the finite-step token speedup.
    tok = simulate_hybrid(mode, 0.6, 0.25, 0.7, 0.05, 1, 5, step_tokens=24, n_cycles=20_000, seed=3)
    assert tok.agrees_with(g_token_step(0.7, 0.05, 5, 24))


@pytest.mark.parametrize("k1,k2,length", [(3, 5, 16), (2, 4, 40), (5, 3, 9)])
def test_sync_mean_batch_is_f_times_finite_step_g(k1: int, k2: int, length: int) -> None:
    """With the batch charged its mean step time, sync hybrid = f_sync · g_L exactly."""
    est = simulate_hybrid(
        "sync", 0.6, 0.2, 0.7, 0.05, k1, k2, step_tokens=length, n_cycles=40_000, seed=4,
        batch="mean",
    )
    assert est.agrees_with(f_sync(0.6, 0.2, k1) * g_token_step(0.7, 0.05, k2, length))


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_hybrid_simulation_converges_to_product_for_long_steps(mode: str) -> None:
    """The paper's f·g is the long-step limit; short steps fall below it."""
    a1, c1, a2, c2, k1, k2 = 0.6, 0.2, 0.7, 0.05, 3, 5
    product = h(mode, a1, c1, a2, c2, k1, k2)
    gaps = []
    for length in (16, 128, 1024):
        est = simulate_hybrid(
            mode, a1, c1, a2, c2, k1, k2, step_tokens=length, n_cycles=10_000, seed=5
        )
        gaps.append((product - est.mean) / product)
        assert est.mean < product + 4 * est.stderr
    assert gaps[0] > gaps[1] > gaps[2] - 0.004
    assert gaps[2] < 0.03


def test_token_sd_simulation_matches_hybrid_token_only_long_steps() -> None:
    long = simulate_hybrid(
        "sync", 0.5, 0.1, 0.8, 0.1, 1, 6, step_tokens=4096, n_cycles=2000, seed=6
    )
    free = simulate_token_sd(0.8, 0.1, 6, n_iterations=200_000, seed=7)
    assert abs(long.mean - free.mean) / free.mean < 0.01


def test_theorem3_d_identities() -> None:
    assert theorem3_d(0.6, 0.2, 2) == pytest.approx(1.6 / 1.2)
    cond = theorem3_conditions(Parameters(0.7, 0.1, 0.6, 0.05), 16)
    assert cond.r1 == pytest.approx(f_sync(0.7, 0.1, 2))
    assert cond.r2 == pytest.approx(g_token(0.6, 0.05, 2))
    # (7) <=> h(2, M/2) >= h(1, M)
    assert cond.condition7 == (h("sync", 0.7, 0.1, 0.6, 0.05, 2, 8) >= g_token(0.6, 0.05, 16))
    assert cond.condition8 == (h("sync", 0.7, 0.1, 0.6, 0.05, 8, 2) >= f_sync(0.7, 0.1, 16))


@pytest.mark.parametrize(
    "call,param",
    [
        (lambda: h("sync", 0.5, 0.1, 0.5, 0.1, 0, 2), "k1"),
        (lambda: h("sync", 0.5, 0.1, 0.5, 0.1, 2, 0), "k2"),
        (lambda: h("x", 0.5, 0.1, 0.5, 0.1, 2, 2), "mode"),
        (lambda: theorem3_conditions(Parameters(0.5, 0.1, 0.5, 0.1), 0), "M"),
        (lambda: simulate_hybrid("sync", 0.5, 0.1, 0.5, 0.1, 2, 2, batch="min"), "batch"),
        (lambda: simulate_hybrid("sync", 0.5, 0.1, 0.5, 0.1, 2, 2, step_tokens=0), "step_tokens"),
    ],
)
def test_bad_input_names_the_parameter(call, param: str) -> None:
    with pytest.raises(ValueError, match=param):
        call()
