"""Pricing parallelism with a measured T(b): reduction to f·g, monotonicity, break-even."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from specmodel.closedform.hybrid import h
from specmodel.optimize.budget import optimize_budget
from specmodel.optimize.pricing import (
    BatchCostCurve,
    cost_aware_multibranch_speedup,
    cost_aware_speedup,
    optimize_cost_aware,
    speculation_by_batch_size,
)
from specmodel.parameters import Parameters

CPU_LIKE = BatchCostCurve.from_points([(1, 1.0), (2, 1.3), (4, 2.0), (8, 3.6), (16, 6.8)])


@given(
    st.floats(0.05, 0.95), st.floats(0.02, 0.9), st.floats(0.05, 0.95), st.floats(0.0, 0.5),
    st.integers(1, 12), st.integers(1, 12), st.sampled_from(["sync", "async"]),
)
def test_flat_curve_reduces_to_product(a1, c1, a2, c2, k1, k2, mode) -> None:
    s, width = cost_aware_speedup(Parameters(a1, c1, a2, c2), mode, k1, k2, BatchCostCurve.flat())
    assert s == pytest.approx(h(mode, a1, c1, a2, c2, k1, k2), rel=1e-10)
    assert width >= k2


@given(st.floats(0.05, 0.95), st.floats(0.02, 0.9), st.floats(0.05, 0.95), st.floats(0.0, 0.5),
       st.integers(1, 8), st.integers(1, 8), st.sampled_from(["sync", "async"]))
def test_rising_cost_never_helps(a1, c1, a2, c2, k1, k2, mode) -> None:
    flat, _ = cost_aware_speedup(Parameters(a1, c1, a2, c2), mode, k1, k2, BatchCostCurve.flat())
    priced, _ = cost_aware_speedup(Parameters(a1, c1, a2, c2), mode, k1, k2, CPU_LIKE)
    assert priced <= flat * (1 + 1e-12)


@given(st.floats(0.05, 0.95), st.floats(0.02, 0.9), st.floats(0.05, 0.95), st.floats(0.0, 0.5),
       st.integers(1, 6), st.integers(1, 6), st.integers(1, 4), st.floats(0.0, 1.0))
def test_multibranch_pricing_reduces_to_its_product_and_to_the_chain(
    a1, c1, a2, c2, k1, k2, w, beta
) -> None:
    from specmodel.closedform.step_level import f_sync_multibranch
    from specmodel.closedform.token_level import g_token

    params = Parameters(a1, c1, a2, c2)
    flat, positions = cost_aware_multibranch_speedup(params, k1, k2, w, BatchCostCurve.flat(),
                                                     draft_batch_cost=beta)
    mb = f_sync_multibranch(a1, c1, k1, w, draft_batch_cost=beta)
    assert flat == pytest.approx(mb.speedup * g_token(a2, c2, k2), rel=1e-10)
    assert positions == mb.parallel_dim * k2
    priced, _ = cost_aware_multibranch_speedup(params, k1, k2, w, CPU_LIKE, draft_batch_cost=beta)
    assert priced <= flat * (1 + 1e-12)  # a wider batch never costs less than one
    chain, _ = cost_aware_multibranch_speedup(params, k1, k2, 1, CPU_LIKE)
    assert chain == pytest.approx(
        cost_aware_speedup(Parameters(a1, c1, a2, c2), "sync", k1, k2, CPU_LIKE)[0], rel=1e-10)


def test_wider_trees_pay_for_their_batch_on_a_rising_curve() -> None:
    # Same acceptance gain, but the tree's target batch grows as Σ W^j: on a CPU-like
    # curve the priced advantage of W = 2 over W = 1 is below the flat one.
    args = (Parameters(0.3, 0.1, 0.5, 0.05), 3, 2)
    flat = [cost_aware_multibranch_speedup(*args, w, BatchCostCurve.flat())[0] for w in (1, 2)]
    cpu = [cost_aware_multibranch_speedup(*args, w, CPU_LIKE)[0] for w in (1, 2)]
    assert flat[1] > flat[0]
    assert cpu[1] / cpu[0] < flat[1] / flat[0]
    with pytest.raises(ValueError, match="width"):
        cost_aware_multibranch_speedup(*args, 0, CPU_LIKE)


def test_flat_optimum_matches_optimizer() -> None:
    for mode in ("sync", "async"):
        best = optimize_cost_aware(Parameters(0.6, 0.2, 0.7, 0.05), 16, mode, BatchCostCurve.flat())
        ref = optimize_budget(Parameters(0.6, 0.2, 0.7, 0.05), 16, mode)
        assert best.speedup == pytest.approx(ref.speedup, rel=1e-12)


def test_curve_interpolation_and_extrapolation() -> None:
    assert CPU_LIKE.time(3) == pytest.approx(1.65)
    assert CPU_LIKE.time(32) == pytest.approx(6.8 + 0.4 * 16)  # last slope carried on
    assert CPU_LIKE.time(0.5) == pytest.approx(1.0)
    assert CPU_LIKE.relative(2, 4) == pytest.approx(CPU_LIKE.time(8) / CPU_LIKE.time(2))
    noisy = BatchCostCurve.from_points([(1, 1.0), (2, 0.9), (4, 1.5)])
    assert noisy.time(2) >= noisy.time(1)  # a noisy dip is not taken as cheaper


def test_speculation_stops_paying_on_a_steep_curve() -> None:
    decisions = speculation_by_batch_size(Parameters(0.6, 0.2, 0.7, 0.05), 16, "async", CPU_LIKE)
    assert [d.serving_batch for d in decisions] == [1, 2, 4, 8, 16]
    pays = [d.pays for d in decisions]
    assert pays[0] and not pays[-1]
    # once it stops paying it does not come back on a convex curve
    first_off = pays.index(False)
    assert not any(pays[first_off:])
    assert all(d.best.speedup >= d.token_only.speedup * (1 - 1e-12) for d in decisions)


def test_flat_curve_always_pays() -> None:
    flat = BatchCostCurve.from_points([(1, 1.0), (64, 1.0)])
    decisions = speculation_by_batch_size(Parameters(0.6, 0.2, 0.7, 0.05), 16, "sync", flat)
    assert all(d.pays for d in decisions)


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


def _reference_priced(mode, a1, c1, a2, c2, k1, k2, curve, serving_batch):
    """The plain per-point loop the vectorized search replaced (one point at a time)."""
    from specmodel.closedform.geometric import geometric_sum
    from specmodel.closedform.step_level import async_knee, f_async

    e2 = float(geometric_sum(a2, k2))
    draft_tok = c2 * (k2 - 1)
    t_draft = c1 * (1.0 + draft_tok) / e2
    if mode == "sync":
        width = k1 * k2
        t_target = (draft_tok + float(curve.relative(serving_batch, width))) / e2
        return float(geometric_sum(a1, k1)) / ((k1 - 1) * t_draft + t_target), width
    width = min(async_knee(c1), k1) * k2
    for _ in range(k1 + 1):
        t_target = (draft_tok + float(curve.relative(serving_batch, width))) / e2
        c_eff = t_draft / t_target
        new = min(async_knee(c_eff), k1) * k2
        if new == width:
            break
        width = new
    return float(f_async(a1, c_eff, k1)) / t_target, width


def _reference_optimum(mode, a1, c1, a2, c2, M, curve, serving_batch):
    from specmodel.closedform.step_level import async_knee

    best = None
    top = M if mode == "sync" else min(M, async_knee(c1))  # async: k1 beyond the knee adds nothing
    for k1 in range(1, top + 1):
        for k2 in range(1, M // k1 + 1):
            s, w = _reference_priced(mode, a1, c1, a2, c2, k1, k2, curve, serving_batch)
            if best is None or s > best[0] * (1 + 1e-12):
                best = (s, k1, k2, w)
    return best


curves = st.lists(
    st.tuples(st.integers(1, 200), st.floats(0.5, 5.0)), min_size=1, max_size=5,
    unique_by=lambda p: p[0],
).map(BatchCostCurve.from_points)


@given(
    st.sampled_from(["sync", "async"]), st.floats(0.02, 0.98), st.floats(0.01, 0.95),
    st.floats(0.02, 0.98), st.one_of(st.just(0.0), st.floats(0.0, 0.6)),
    st.integers(1, 24), curves, st.integers(1, 8),
)
def test_vectorized_search_matches_the_reference_loop(mode, a1, c1, a2, c2, M, curve, b) -> None:
    best = optimize_cost_aware(Parameters(a1, c1, a2, c2), M, mode, curve, b)
    s, k1, k2, w = _reference_optimum(mode, a1, c1, a2, c2, M, curve, b)
    assert (best.k1, best.k2, best.width) == (k1, k2, w)
    assert best.speedup == pytest.approx(s, rel=1e-12)
    single, width = cost_aware_speedup(Parameters(a1, c1, a2, c2), mode, k1, k2, curve, b)
    assert (single, width) == (pytest.approx(s, rel=1e-12), w)


@given(st.lists(st.sampled_from([1.0, 1.0 + 4e-13, 1.0 + 9e-13, 1.0 + 1.5e-12, 2.0, 0.5]),
                min_size=1, max_size=12))
def test_first_best_is_the_in_order_scan(values: list[float]) -> None:
    """Near-ties (1e-12) keep the earlier point, exactly as a sequential scan does."""
    from specmodel.optimize.pricing import _first_best_index

    best = 0
    for i, v in enumerate(values):
        if v > values[best] * (1 + 1e-12):
            best = i
    assert _first_best_index(np.array(values)) == best


def test_search_scales_to_thousands() -> None:
    """M in the thousands: the whole priced landscape at once (sync: ~M ln M points)."""
    best = optimize_cost_aware(Parameters(0.7, 0.05, 0.8, 0.05), 3000, "sync", CPU_LIKE, 2)
    assert best.k1 * best.k2 <= 3000
    none = cost_aware_speedup(Parameters(0.7, 0.05, 0.8, 0.05), "sync", 1, 1, CPU_LIKE, 2)[0]
    assert best.speedup >= none


# --- serving units, the pays/does-not-pay table, export caps (issue 15) -------------------

SMALL = BatchCostCurve.from_points([(1, 0.1), (2, 0.15), (4, 0.3)], seconds_per_step=True)


def test_serving_point_by_hand() -> None:
    from specmodel.optimize.pricing import serving_point

    sp = serving_point(SMALL, 1.5, 2)
    # T(2) = 0.15 s/step: target alone 150 ms/token, 2/0.15 tokens/s; speculation 1.5x.
    assert sp.step_seconds == pytest.approx(0.15)
    assert sp.baseline_ms_per_token == pytest.approx(150.0)
    assert sp.ms_per_token == pytest.approx(100.0)
    assert sp.baseline_tokens_per_second == pytest.approx(2 / 0.15)
    assert sp.tokens_per_second == pytest.approx(20.0)
    # Between measured widths T is interpolated: T(3) = 0.225.
    assert serving_point(SMALL, 1.0, 3).ms_per_token == pytest.approx(225.0)


def test_serving_point_needs_absolute_times() -> None:
    from specmodel.optimize.pricing import serving_point

    with pytest.raises(ValueError, match="absolute"):
        serving_point(CPU_LIKE, 1.5, 1)
    with pytest.raises(ValueError, match="concurrency"):
        serving_point(SMALL, 1.5, 0)


def test_price_budget_at_a_concurrency_is_the_priced_optimum_there() -> None:
    from specmodel.optimize.pricing import price_budget, serving_point

    p = Parameters(0.6, 0.2, 0.7, 0.05)
    priced = price_budget(p, 16, "async", SMALL, 3, compare=(3, 5))
    assert priced.serving_batch == 3
    assert priced.best == optimize_cost_aware(p, 16, "async", SMALL, 3)
    assert [d.serving_batch for d in priced.by_batch_size] == [1, 2, 3, 4]
    assert priced.serving == serving_point(SMALL, priced.best.speedup, 3)
    assert len(priced.serving_by_batch_size) == 4
    s, w = cost_aware_speedup(p, "async", 3, 5, SMALL, 3)
    assert priced.compared is not None
    assert (priced.compared.speedup, priced.compared.width) == (pytest.approx(s), w)
    assert priced.compared.flat_speedup == pytest.approx(h("async", 0.6, 0.2, 0.7, 0.05, 3, 5))
    # Relative times give no serving units.
    assert price_budget(p, 16, "async", CPU_LIKE).serving is None


def _table(pays: list[bool]):
    from specmodel.optimize.pricing import BatchSizeDecision, CostAwarePoint, PricedBudget

    none = CostAwarePoint(1, 1, 1.0, 1, 1.0)
    tok = CostAwarePoint(1, 2, 1.16, 2, 1.16)
    ds = tuple(BatchSizeDecision(2**i, tok if y else none, tok if y else none)
               for i, y in enumerate(pays))
    return PricedBudget(ds[0].best, ds)


def test_stops_paying_agrees_with_the_table() -> None:
    # The measured preset's shape: no at 1, yes at 2, no at 4 and 8.
    t = _table([False, True, False, False])
    assert (t.pays_at, t.does_not_pay_at, t.stops_paying_at) == ((2,), (1, 4, 8), 4)
    assert t.pays_summary() == ("Speculation pays at batch sizes 2, not at 1, 4, 8; from a "
                                "batch of 4 requests on it no longer pays.")
    assert _table([True, True]).stops_paying_at is None
    assert "every batch size" in _table([True, True]).pays_summary()
    assert _table([False, False]).stops_paying_at == 1
    assert "no batch size" in _table([False, False]).pays_summary()
    assert _table([False, True]).stops_paying_at is None  # the largest pays again


def test_export_caps_what_vllm_cannot_run() -> None:
    from specmodel.formats.export import MAX_SPECULATIVE_TOKENS, export_vllm

    res = optimize_budget(Parameters(0.5, 0.3, 0.99, 0.0), 2000, "async")
    chosen = res.economical if res.economical is not None else res.best
    assert chosen.k2 - 1 > MAX_SPECULATIVE_TOKENS
    out = export_vllm(res)
    assert out.config.k2 - 1 == MAX_SPECULATIVE_TOKENS == 32
    assert out.speculative_config["num_speculative_tokens"] == 32
    assert any("capped at 32" in n for n in out.notes)


def test_export_without_t_b_writes_the_leanest_near_optimal_point() -> None:
    from specmodel.formats.export import export_vllm

    res = optimize_budget(Parameters(0.63, 0.3409, 0.2806, 0.0), 4096, "async")
    assert res.economical is not None
    out = export_vllm(res)
    assert (out.config.k1, out.config.k2) == (res.economical.k1, res.economical.k2)
    assert out.prediction.speedup == pytest.approx(res.economical.speedup)
    assert out.prediction.model == "flat-budget f·g"
