"""Pricing parallelism with a measured T(b): reduction to f·g, monotonicity, break-even."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specmodel.batch_cost import (
    BatchCostCurve,
    cost_aware_speedup,
    optimize_cost_aware,
    speculation_by_batch_size,
)
from specmodel.hybrid import h
from specmodel.optimizer import optimize_budget

CPU_LIKE = BatchCostCurve.from_points([(1, 1.0), (2, 1.3), (4, 2.0), (8, 3.6), (16, 6.8)])


@given(
    st.floats(0.05, 0.95), st.floats(0.02, 0.9), st.floats(0.05, 0.95), st.floats(0.0, 0.5),
    st.integers(1, 12), st.integers(1, 12), st.sampled_from(["sync", "async"]),
)
def test_flat_curve_reduces_to_product(a1, c1, a2, c2, k1, k2, mode) -> None:
    s, width = cost_aware_speedup(mode, a1, c1, a2, c2, k1, k2, BatchCostCurve.flat())
    assert s == pytest.approx(h(mode, a1, c1, a2, c2, k1, k2), rel=1e-10)
    assert width >= k2


@given(st.floats(0.05, 0.95), st.floats(0.02, 0.9), st.floats(0.05, 0.95), st.floats(0.0, 0.5),
       st.integers(1, 8), st.integers(1, 8), st.sampled_from(["sync", "async"]))
def test_rising_cost_never_helps(a1, c1, a2, c2, k1, k2, mode) -> None:
    flat, _ = cost_aware_speedup(mode, a1, c1, a2, c2, k1, k2, BatchCostCurve.flat())
    priced, _ = cost_aware_speedup(mode, a1, c1, a2, c2, k1, k2, CPU_LIKE)
    assert priced <= flat * (1 + 1e-12)


def test_flat_optimum_matches_optimizer() -> None:
    for mode in ("sync", "async"):
        best = optimize_cost_aware(mode, 0.6, 0.2, 0.7, 0.05, 16, BatchCostCurve.flat())
        ref = optimize_budget(0.6, 0.2, 0.7, 0.05, 16, mode)
        assert best.speedup == pytest.approx(ref.speedup, rel=1e-12)


def test_curve_interpolation_and_extrapolation() -> None:
    assert CPU_LIKE.time(3) == pytest.approx(1.65)
    assert CPU_LIKE.time(32) == pytest.approx(6.8 + 0.4 * 16)  # last slope carried on
    assert CPU_LIKE.time(0.5) == pytest.approx(1.0)
    assert CPU_LIKE.relative(2, 4) == pytest.approx(CPU_LIKE.time(8) / CPU_LIKE.time(2))
    noisy = BatchCostCurve.from_points([(1, 1.0), (2, 0.9), (4, 1.5)])
    assert noisy.time(2) >= noisy.time(1)  # a noisy dip is not taken as cheaper


def test_speculation_stops_paying_on_a_steep_curve() -> None:
    decisions = speculation_by_batch_size("async", 0.6, 0.2, 0.7, 0.05, 16, CPU_LIKE)
    assert [d.serving_batch for d in decisions] == [1, 2, 4, 8, 16]
    pays = [d.pays for d in decisions]
    assert pays[0] and not pays[-1]
    # once it stops paying it does not come back on a convex curve
    first_off = pays.index(False)
    assert not any(pays[first_off:])
    assert all(d.best.speedup >= d.token_only.speedup * (1 - 1e-12) for d in decisions)


def test_flat_curve_always_pays() -> None:
    flat = BatchCostCurve.from_points([(1, 1.0), (64, 1.0)])
    assert all(d.pays for d in speculation_by_batch_size("sync", 0.6, 0.2, 0.7, 0.05, 16, flat))


@pytest.mark.parametrize(
    "points,param",
    [
        ([], "points"),
        ([(0, 1.0)], "width"),
        ([(1, -1.0)], "time"),
        ([(1, 1.0), (1, 2.0)], "widths"),
    ],
)
def test_bad_curves_name_the_parameter(points, param) -> None:
    with pytest.raises(ValueError, match=param):
        BatchCostCurve.from_points(points)
