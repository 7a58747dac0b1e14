"""The decoder model reduces to the papers' closed forms under the papers' assumptions.

With i.i.d. acceptance, constant step lengths, flat costs, a free verifier, no overhead,
no contention and the papers' engine, :func:`exact_speedup` is f·g exactly and the
Monte-Carlo agrees with it within a few standard errors (plus 0.3 % for the end of
each finite problem, where the depth shrinks).
"""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specmodel.closedform.hybrid import h
from specmodel.closedform.step_level import (
    async_knee,
    f_async,
    f_sync,
    f_sync_multibranch,
)
from specmodel.closedform.token_level import g_token, g_token_step
from specmodel.config import SpecConfig
from specmodel.decodermodel import (
    AcceptanceModel,
    CostModel,
    EngineBehaviour,
    exact_speedup,
    predict,
)

alphas = st.floats(0.05, 0.95)
costs = st.floats(0.05, 0.6)
token_costs = st.floats(0.0, 0.3)


def _cfg(mode: str, k1: int, k2: int, width: int = 1, max_steps: int = 600,
         max_step_tokens: int = 64) -> SpecConfig:
    return SpecConfig(mode=mode, k1=k1, k2=k2, width=width, max_steps=max_steps,
                      max_step_tokens=max_step_tokens)


@given(a1=alphas, c1=costs, a2=alphas, c2=token_costs, k1=st.integers(1, 8),
       k2=st.integers(1, 6), mode=st.sampled_from(["sync", "async"]),
       n=st.integers(1, 40))
def test_exact_path_is_the_papers_h(a1, c1, a2, c2, k1, k2, mode, n) -> None:
    acc = AcceptanceModel.iid(a1, a2, step_tokens=n)
    cm = CostModel.flat(c1, c2=c2)
    cfg = _cfg(mode, k1, k2)
    endless = exact_speedup(cfg, acc, cm, endless_steps=True)
    assert endless == pytest.approx(float(h(mode, a1, c1, a2, c2, k1, k2)), rel=1e-9)
    finite = exact_speedup(cfg, acc, cm)
    f = 1.0 if k1 == 1 else float(f_sync(a1, c1, k1) if mode == "sync"
                                  else f_async(a1, c1, k1))
    if mode == "async" and k1 > 1 and k2 > 1:
        assert finite is None  # random target durations: Theorem 2 does not hold
    else:
        g = 1.0 if k2 == 1 else g_token_step(a2, c2, k2, n)
        assert finite == pytest.approx(f * g, rel=1e-9)
    if k2 == 1:
        assert finite == pytest.approx(f, rel=1e-9)
    if k1 == 1:
        assert endless == pytest.approx(float(g_token(a2, c2, k2)), rel=1e-9)


@given(a1=alphas, c1=costs, k1=st.integers(2, 5), width=st.integers(2, 3))
def test_exact_path_is_the_multibranch_model(a1, c1, k1, width) -> None:
    acc = AcceptanceModel.iid(a1, 0.5, step_tokens=8)
    got = exact_speedup(_cfg("sync", k1, 1, width), acc, CostModel.flat(c1))
    assert got == pytest.approx(f_sync_multibranch(a1, c1, k1, width).speedup, rel=1e-9)


def test_async_exact_path_has_the_knee() -> None:
    a1, c1 = 0.7, 0.3
    acc = AcceptanceModel.iid(a1, 0.5)
    knee = async_knee(c1)
    values = [exact_speedup(_cfg("async", k, 1), acc, CostModel.flat(c1))
              for k in range(1, knee + 3)]
    assert values[knee - 1] == pytest.approx(1 / (c1 + (1 - c1) * (1 - a1)), rel=1e-12)
    assert values[knee - 1] == values[knee] == values[knee + 1]  # flat past ⌈1/c1⌉
    assert all(x < y for x, y in itertools.pairwise(values[:knee]))


def test_exact_path_refuses_what_the_closed_forms_do_not_cover() -> None:
    acc = AcceptanceModel.iid(0.6, 0.5, step_tokens=8)
    cfg = _cfg("sync", 3, 1)
    assert exact_speedup(cfg, acc, CostModel.flat(0.2).replace(call_overhead=0.1)) is None
    assert exact_speedup(cfg, acc, CostModel.flat(0.2).replace(
        engine=EngineBehaviour())) is None  # the decoder's engine
    by_depth = AcceptanceModel(0.6, 0.5, step_by_depth=(0.6, 0.4))
    assert exact_speedup(cfg, by_depth, CostModel.flat(0.2)) is None


def _agrees(pred, exact: float) -> bool:
    return abs(pred.speedup - exact) <= 4.0 * pred.stderr + 3e-3 * exact


@settings(max_examples=4, deadline=None)
@given(a1=alphas, c1=costs, a2=alphas, c2=token_costs, k1=st.integers(1, 4),
       k2=st.integers(1, 3), width=st.integers(1, 2), n=st.integers(4, 12),
       seed=st.integers(0, 2**16))
def test_sync_simulation_agrees_with_the_closed_form(a1, c1, a2, c2, k1, k2, width, n,
                                                      seed) -> None:
    acc = AcceptanceModel.iid(a1, a2, step_tokens=n)
    cm = CostModel.flat(c1, c2=c2)
    cfg = _cfg("sync", k1, k2, width if k1 > 1 else 1)
    exact = exact_speedup(cfg, acc, cm)
    assert exact is not None
    pred = predict(cfg, acc, cm, problems=8, draws=0, seed=seed)
    assert _agrees(pred, exact), (pred.speedup, pred.stderr, exact)


@settings(max_examples=4, deadline=None)
@given(a1=alphas, c1=costs, k1=st.integers(1, 7), n=st.integers(4, 12),
       seed=st.integers(0, 2**16))
def test_async_simulation_agrees_with_the_corrected_theorem_2(a1, c1, k1, n, seed) -> None:
    acc = AcceptanceModel.iid(a1, 0.5, step_tokens=n)
    cm = CostModel.flat(c1)
    cfg = _cfg("async", k1, 1)
    exact = exact_speedup(cfg, acc, cm)
    assert exact is not None
    pred = predict(cfg, acc, cm, problems=8, draws=0, seed=seed)
    assert _agrees(pred, exact), (pred.speedup, pred.stderr, exact)


def test_token_only_simulation_agrees_with_g() -> None:
    a2, c2, k2 = 0.6, 0.1, 4
    acc = AcceptanceModel.iid(0.5, a2, step_tokens=400)
    cm = CostModel.flat(0.3, c2=c2)
    cfg = _cfg("sync", 1, k2, max_steps=40, max_step_tokens=512)
    pred = predict(cfg, acc, cm, problems=10, draws=0)
    exact = exact_speedup(cfg, acc, cm)
    assert exact == pytest.approx(g_token_step(a2, c2, k2, 400), rel=1e-12)
    assert _agrees(pred, exact)
    assert math.isclose(exact, float(g_token(a2, c2, k2)), rel_tol=5e-3)  # long steps: g
