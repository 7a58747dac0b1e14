"""The Lookahead Reasoning paper's theorems and lemmas, tested as stated, in their conditions.

Symbolic checks (sympy) of the identities the closed forms rest on; hypothesis
properties of Lemmas 1–4 and 6 and Theorems 3–4 against the exact integer
optimum.  Theorems 1 and 2 are held against their simulations in
test_step_level.py.  Where the paper's text is wrong the test asserts the truth
and docs/errata.md records it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from specmodel.closedform.hybrid import theorem3_conditions, theorem4_in_scope
from specmodel.closedform.step_level import async_knee, async_s1, async_s2, f_async, f_sync
from specmodel.optimize.budget import optimize_budget
from specmodel.optimize.theorems import lemma1_ratios, theorem_report
from specmodel.parameters import Parameters

sp = pytest.importorskip("sympy")


# --- symbolic ------------------------------------------------------------------------------


@pytest.mark.parametrize("kk", [1, 2, 3, 5])
def test_appendix_c_expectations_and_s2(kk: int) -> None:
    from specmodel.symbolic.lr import (
        a,
        expected_batches_series,
        expected_mod_series,
        expected_one_plus_x,
        s2_from_expectations,
        s2_paper,
    )

    assert sp.cancel(expected_one_plus_x() - 1 / (1 - a)) == 0
    assert sp.cancel(expected_batches_series(kk) - 1 / (1 - a**kk)) == 0
    closed = (a - a ** (kk + 1) - kk * (1 - a) * a**kk) / ((1 - a) * (1 - a**kk))
    assert sp.cancel(expected_mod_series(kk) - closed) == 0
    assert sp.cancel(s2_from_expectations(kk) - s2_paper(kk)) == 0


def test_s2_equals_s1_at_one_over_c() -> None:
    """Lemma 2's last step: S2(1/c) = S1 (the two cases meet at the knee)."""
    from specmodel.symbolic.lr import c, s1, s2_paper

    assert sp.simplify(s2_paper(1 / c) - s1()) == 0


def test_unit_values_and_first_ratio() -> None:
    from specmodel.symbolic.lr import a, c, f_sync_expr

    assert sp.simplify(f_sync_expr(1) - 1) == 0
    assert sp.simplify(f_sync_expr(2) / f_sync_expr(1) - (1 + a) / (1 + c)) == 0


def test_lemma3_derivative_sign_function() -> None:
    """g' has the sign of F, and F' = −a^k (ln a)^2 (1 − c + ck) < 0."""
    from specmodel.symbolic.lr import a, c, g_expr, lemma3_f, x

    dg = sp.diff(g_expr(x), x)
    d = (1 - a) * (1 - c + c * x)  # g = N / D with D = d > 0
    assert sp.simplify(dg * d**2 / (1 - a) - lemma3_f(x)) == 0
    assert sp.simplify(sp.diff(lemma3_f(x), x) + a**x * sp.log(a) ** 2 * (1 - c + c * x)) == 0


def test_lemma5_log_derivative_identity() -> None:
    from specmodel.symbolic.lr import log_derivative_identity

    assert log_derivative_identity() == 0


def test_theorem3_proof_identity() -> None:
    """(1 + a^{γ/2})(1 − a2(γ)/2) = F(y), y = 1 − a^{γ/2}: the proof's substitution holds."""
    from specmodel.symbolic.lr import theorem3_identity_gap

    assert theorem3_identity_gap() == 0


def test_lemma6_maximum() -> None:
    """F(y) = 2 − y + (y − 2 + 1/y) ln(1 − y) peaks at y* ≈ 0.5693971022, F ≈ 1.1562281731."""
    from specmodel.symbolic.lr import lemma6_f, y

    f = lemma6_f(y)
    ystar = sp.nsolve(sp.diff(f, y), y, 0.5, prec=30)
    assert float(ystar) == pytest.approx(0.5693971022, abs=1e-9)
    assert float(f.subs(y, ystar)) == pytest.approx(1.1562281731, abs=1e-9)
    # The proof prints F''(y) = (y(1 + y) + 2 ln(1 − y)) / y^3; the true numerator is
    # y(2 + y) + 2 ln(1 − y). The conclusion F'' < 0 still holds: N(y) = y(2 + y) +
    # 2 ln(1 − y) has N(0) = 0 and N'(y) = −2y^2/(1 − y) < 0.
    printed = (y * (1 + y) + 2 * sp.log(1 - y)) / y**3
    true = (y * (2 + y) + 2 * sp.log(1 - y)) / y**3
    assert sp.simplify(sp.diff(f, y, 2) - true) == 0
    assert sp.simplify(sp.diff(f, y, 2) - printed) == 1 / y**2
    n = y * (2 + y) + 2 * sp.log(1 - y)
    assert sp.simplify(sp.diff(n, y) + 2 * y**2 / (1 - y)) == 0


# --- Lemma 6 and Lemma 4 numerically ---------------------------------------------------------


def _lemma6(yv: float) -> float:
    return 2 - yv + (yv - 2 + 1 / yv) * math.log1p(-yv)


@given(st.floats(1e-9, 1 - 1e-9))
def test_lemma6_bound(yv: float) -> None:
    assert _lemma6(yv) < 1.157


def _a(alpha: float, xv: float) -> float:
    return -math.log(alpha) * xv * alpha**xv / (1 - alpha**xv)


@given(st.floats(0.5001, 0.7999), st.floats(1.0, 60.0), st.floats(1e-3, 5.0))
def test_lemma4_monotonicity(alpha: float, xv: float, dx: float) -> None:
    assert _a(alpha, xv + dx) < _a(alpha, xv)
    assume(alpha + 1e-3 < 0.8)
    assert _a(alpha + 1e-3, xv) > _a(alpha, xv)


def test_lemma4_numbers() -> None:
    # 0.2684: the lemma's "≈ 0.26" truncates; the bound it is used for is unaffected.
    assert _a(0.8, 10) == pytest.approx(0.268, abs=0.001)
    assert _a(0.8, 6) == pytest.approx(0.48, abs=0.005)
    assert _a(0.8, 8) == pytest.approx(0.36, abs=0.005)
    assert _a(0.52, 2) == pytest.approx(0.48, abs=0.005)
    assert _a(0.8, 2) == pytest.approx(0.79, abs=0.005)
    # The lemma prints a(0.8, 6) and a(0.8, 8) with a factor 10 in place of x; taken
    # literally those expressions are 0.79 and 0.45, not the 0.48 and 0.36 it states.
    printed6 = -math.log(0.8) * 10 * 0.8**6 / (1 - 0.8**6)
    printed8 = -math.log(0.8) * 10 * 0.8**8 / (1 - 0.8**8)
    assert printed6 == pytest.approx(0.79, abs=0.01) and printed8 == pytest.approx(0.45, abs=0.01)


def test_lemma4_proof_chain_is_reversed_but_claim_true() -> None:
    """Proof of (ii): "−ln α > 1 − α ≥ 1 − α^x" — the last step is false for x > 1."""
    alpha, xv = 0.7, 3.0
    assert 1 - alpha < 1 - alpha**xv  # the printed inequality is the wrong way round
    assert xv * -math.log(alpha) > 1 - alpha**xv  # the claim it was meant to prove holds


# --- Lemma 2 and 3 ------------------------------------------------------------------------


@given(st.floats(0.01, 0.99), st.floats(0.005, 0.99))
def test_lemma2_increasing_then_constant(alpha: float, c: float) -> None:
    knee = async_knee(c)
    assume(knee <= 400)
    ks = np.arange(1, knee + 5)
    f = np.asarray(f_async(alpha, c, ks))
    assert np.all(np.diff(f[:knee]) >= -4e-15 * f[:knee - 1])  # rounding once saturated
    # strictly: the proof's numerator α^γ(1−α)[(−ln α)(1 − cγ) + c(1 − α^γ)] > 0 for γ < 1/c
    g = ks[: knee - 1].astype(float)
    numerator = (-math.log(alpha)) * (1 - c * g) + c * -np.expm1(g * math.log(alpha))
    assert np.all(numerator > 0)
    assert np.allclose(f[knee - 1 :], async_s1(alpha, c), rtol=1e-12)
    assert float(async_s2(alpha, c, knee - 1)) <= async_s1(alpha, c) * (1 + 1e-12)


@given(st.floats(0.02, 0.98), st.floats(0.001, 0.9))
def test_lemma3_for_f_sync(alpha: float, c: float) -> None:
    assume(alpha > c)
    ks = np.arange(1, 300)
    f = np.asarray(f_sync(alpha, c, ks))
    best = int(ks[np.argmax(f)])
    assert best >= 2
    d = np.diff(f)
    assert np.all(d[: best - 1] > -1e-15) and np.all(d[best - 1 :] < 1e-15)


# --- Theorems 3 and 4 against the exact optimum ----------------------------------------------

probs = st.floats(0.01, 0.99)
costs = st.floats(0.0, 0.8)
even_budgets = st.integers(2, 40).map(lambda n: 2 * n)


@st.composite
def _rate_and_cost_in_condition6(draw: st.DrawFn) -> tuple[float, float]:
    """(α, c) with (1 + α)/(1 + c) > 1.157 (Theorem 3's condition (6)), drawn directly
    rather than filtered: most of the unit square is outside it."""
    a = draw(st.floats(0.16, 0.99))
    return a, draw(st.floats(0.0, (1 + a) / 1.1571 - 1))


@given(_rate_and_cost_in_condition6(), _rate_and_cost_in_condition6(), even_budgets)
def test_theorem3_as_stated(step: tuple[float, float], token: tuple[float, float], M: int) -> None:
    (a1, c1), (a2, c2) = step, token
    t = theorem3_conditions(Parameters(a1, c1, a2, c2), M)
    assume(t.in_scope)
    assert t.condition7 or t.condition8  # at least one holds
    res = optimize_budget(Parameters(a1, c1, a2, c2), M, "sync")
    if t.condition7 and t.condition8:
        assert res.regime == "hybrid"
        assert res.speedup > max(res.token_only.speedup, res.step_only.speedup)
    elif not t.condition7:
        assert res.regime == "token-only"
    else:
        assert res.regime == "step-only"


@given(
    st.floats(0.5201, 0.7999), st.floats(0.001, 0.3333), st.floats(0.5201, 0.7999),
    st.floats(0.0, 0.1999), st.integers(8, 128).map(lambda n: 2 * n),
)
def test_theorem4_as_stated(a1: float, c1: float, a2: float, c2: float, M: int) -> None:
    assert theorem4_in_scope(Parameters(a1, c1, a2, c2), M)
    res = optimize_budget(Parameters(a1, c1, a2, c2), M, "async")
    assert res.regime == "hybrid" and res.k1 >= 2 and res.k2 >= 2
    assert res.speedup > max(res.token_only.speedup, res.step_only.speedup)


@given(
    st.floats(0.5001, 0.7999), st.floats(0.001, 0.3333), st.floats(0.5001, 0.7999),
    st.floats(0.0, 0.1999), st.integers(8, 128).map(lambda n: 2 * n),
)
def test_lemma1_as_stated(a1: float, c1: float, a2: float, c2: float, M: int) -> None:
    r = lemma1_ratios(Parameters(a1, c1, a2, c2), M)
    assert r["paper_w2_over_w1"] > 1 and r["paper_wM2_over_wM"] > 1
    # and with the true f_async (S1 from the knee on) the claims still hold
    assert r["true_w2_over_w1"] > 1 and r["true_wM2_over_wM"] > 1


def test_outside_conditions_the_report_gives_the_truth() -> None:
    """Outside (6) a single method can win; the report says so instead of "hybrid"."""
    rep = theorem_report(Parameters(0.6, 0.4, 0.2, 0.3), 8)
    t3 = rep.checks[0]
    assert not t3.in_scope and t3.holds is None and "step-only" in t3.actual
    assert any("Outside Theorem 3" in n for n in rep.notes)
    d = rep.to_dict()
    assert d["budget"] == 8 and isinstance(d["checks"], list)


def test_report_inside_conditions() -> None:
    rep = theorem_report(Parameters(0.6, 0.2, 0.7, 0.05), 16)
    by_name = {c.name: c for c in rep.checks}
    assert by_name["Theorem 3 (sync)"].holds and by_name["Theorem 4 (async)"].holds
    assert by_name["Lemma 2"].holds and by_name["Lemma 1"].holds
    with pytest.raises(ValueError, match="alpha1"):
        theorem_report(Parameters(1.0, 0.2, 0.7, 0.05), 16)


def test_theorem3_strictly_fails_at_a_tie_in_condition_7() -> None:
    """Errata LR-13: (7) holds with equality; the best hybrid ties token-only exactly."""
    from fractions import Fraction as F  # noqa: N817

    from specmodel.closedform.hybrid import theorem3_conditions
    from specmodel.optimize.theorems import theorem_report

    a1, c1, a2, c2 = F(9, 16), F(1, 4), F(1, 2), F(0)
    lhs = (1 + a1) / (1 + c1)
    d2 = (1 + a2**2) * (1 - c2 + 2 * c2) / (1 - c2 + 4 * c2)
    assert lhs == d2 == F(5, 4)  # (7) with equality, in exact arithmetic

    def h(k1: int, k2: int) -> F:
        f = sum(a1**i for i in range(k1)) / (1 - c1 + c1 * k1)
        g = sum(a2**i for i in range(k2)) / (1 - c2 + c2 * k2)
        return f * g

    assert h(2, 2) == h(1, 4) == F(15, 8)
    assert max(h(k1, k2) for k1 in range(1, 5) for k2 in range(1, 5) if k1 * k2 <= 4) == F(15, 8)
    t3 = theorem3_conditions(Parameters(9 / 16, 1 / 4, 1 / 2, 0.0), 4)
    assert t3.in_scope and t3.condition8
    check = theorem_report(Parameters(9 / 16, 1 / 4, 1 / 2, 0.0), 4).checks[0]
    assert "ties hybrid at (k1=2, k2=2)" in check.actual


def test_theorem3_proof_case2_claim_fails_for_the_integer_optimum() -> None:
    """Errata LR-12: in case 2 (γ2* <= M < 2γ2*) condition (7) can fail although (6) holds."""
    from specmodel.closedform.hybrid import theorem3_conditions
    from specmodel.closedform.token_level import optimal_k
    from specmodel.optimize.budget import optimize_budget

    k_star = optimal_k(0.68, 0.12).k
    assert k_star <= 4 < 2 * k_star  # M = 4 is in the proof's case 2
    t3 = theorem3_conditions(Parameters(0.3, 0.1, 0.68, 0.12), 4)
    assert t3.condition6 and not t3.condition7
    assert t3.d2 > 1.157  # the proof's bound D2(γ2*) < 1.157 fails
    assert optimize_budget(Parameters(0.3, 0.1, 0.68, 0.12), 4, "sync").regime == "token-only"


@pytest.mark.parametrize("c1", [0.0, 1.0, 1.5])
def test_report_evaluates_sync_and_leaves_async_out_where_it_is_undefined(c1: float) -> None:
    """Theorem 3 (sync) is defined for every c1 >= 0; Theorem 4 and Lemmas 1–2 (async)
    only for 0 < c1 < 1: outside it they are out of scope, never evaluated."""
    rep = theorem_report(Parameters(0.6, c1, 0.6, 0.1), 16)
    by_name = {c.name: c for c in rep.checks}
    assert [c.name for c in rep.checks][:2] == ["Theorem 3 (sync)", "Theorem 4 (async)"]
    for name in ("Theorem 4 (async)", "Lemma 2", "Lemma 1"):
        assert not by_name[name].in_scope and by_name[name].holds is None
        assert "0 < c1 < 1" in by_name[name].actual
    sync = optimize_budget(Parameters(0.6, c1, 0.6, 0.1), 16, "sync")
    assert f"(k1={sync.k1}, k2={sync.k2})" in by_name["Theorem 3 (sync)"].actual
