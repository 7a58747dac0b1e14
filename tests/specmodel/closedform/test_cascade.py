"""Cascade Speculative Drafting: closed forms checked symbolically, against a
Monte-Carlo simulation of each process, and by properties over their domain.

Convention throughout: ``k`` = draft tokens per speculative call (Leviathan's γ).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from specmodel.closedform.cascade import (
    ewif_horizontal,
    ewif_horizontal_gradient,
    ewif_speculative,
    ewif_vertical,
    expected_tokens,
    expected_tokens_horizontal,
    expected_tokens_vertical,
    pgf,
    pgf_coefficients,
    swi,
    vertical_break_even_c_d2,
)
from specmodel.montecarlo.cascade import (
    ewif_horizontal_mc,
    ewif_speculative_mc,
    ewif_vertical_mc,
    simulate_horizontal,
    simulate_speculative,
    simulate_vertical,
)
from specmodel.symbolic import cascade as sym

N_MC = 40_000
Z = 4.0

alphas_open = st.floats(min_value=1e-9, max_value=1 - 1e-9)
alphas_mid = st.floats(min_value=0.01, max_value=0.99)
costs = st.floats(min_value=0.0, max_value=2.0)
ks = st.integers(min_value=1, max_value=64)
ns = st.integers(min_value=1, max_value=16)


def naive_vertical_tokens(a: float, ap: float, k: int, n: int) -> float:
    """Theorem 4.3's numerator, transcribed literally (fine away from alpha -> 1)."""
    phi = 1.0 + (a - 1.0) * (1.0 - (a * ap) ** (k + 1)) / (1.0 - a * ap)
    return (1.0 - a * phi**n) / (1.0 - a)


# ---------------------------------------------------------------------------
# (a) symbolic identities
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_pgf_printed_forms_against_the_process(k: int) -> None:
    diffs = sym.pgf_form_differences(k)
    for name in ("eq1", "eq3", "eq4", "eq5"):
        assert diffs[name] == 0, name
    # Eq. (6) as printed drops a term: it is off by exactly x - 1.
    assert sp.simplify(diffs["eq6"] - (sym.x - 1)) == 0


@pytest.mark.parametrize("k", [1, 2, 4])
def test_pgf_value_and_derivative_at_one(k: int) -> None:
    # Corollary 4.2: phi(1) = 1 for every PGF; the expectation is phi'(1).
    assert sym.corollary_42_left_side(k) == 1
    geometric = sum(sym.alpha**i for i in range(k + 1))
    assert sp.simplify(sym.expected_tokens_from_pgf(k) - geometric) == 0


@pytest.mark.parametrize("k", [1, 3, 6])
def test_pgf_numeric_matches_sympy(k: int) -> None:
    expr = sp.lambdify((sym.alpha, sym.x), sym.pgf_eq1(k))
    for a, xv in [(0.3, -1.5), (0.7, 0.25), (0.9, 1.05), (0.55, 2.0)]:
        assert pgf(a, k, xv) == pytest.approx(expr(a, xv), rel=1e-12, abs=1e-12)


def test_t_operator_is_affine_but_exact_on_pgfs() -> None:
    # The proof calls T_alpha linear; T(2 x^j) - 2 T(x^j) = -1 / (1 - alpha) != 0.
    defect = sym.t_operator_linearity_defect(3)
    assert sp.simplify(defect + 1 / (1 - sym.alpha)) == 0
    # ... but T commutes with mixtures (coefficients summing to 1), which PGFs are.
    p = sp.Rational(1, 5)
    mix = p * sym.x**2 + (1 - p) * sym.x**5
    lhs = sym.t_operator(mix)
    rhs = p * sym.t_operator(sym.x**2) + (1 - p) * sym.t_operator(sym.x**5)
    assert sp.simplify(lhs - rhs) == 0
    # and T(x^j) is the expected output when the target reviews j tokens.
    j = 4
    direct = (
        sum((i + 1) * sym.alpha**i * (1 - sym.alpha) for i in range(j)) + (j + 1) * sym.alpha**j
    )
    assert sp.simplify(sym.t_operator(sym.x**j) - direct) == 0


@pytest.mark.parametrize(("k", "n"), [(1, 1), (1, 3), (2, 2), (3, 2), (2, 3)])
def test_theorem_43_expectation_derived_from_the_process(k: int, n: int) -> None:
    from_process = sym.vertical_expected_tokens_from_process(k, n)
    paper = sym.vertical_expected_tokens_paper(k, n)
    assert sp.simplify(from_process - paper) == 0
    f = sp.lambdify((sym.alpha, sym.alpha_prime), from_process)
    for a, ap in [(0.3, 0.8), (0.9, 0.4)]:
        assert expected_tokens_vertical(a, ap, k, n) == pytest.approx(f(a, ap), rel=1e-12)


@pytest.mark.parametrize("k", [1, 2, 4])
def test_corollary_44_gap_and_the_proofs_reversed_inequality(k: int) -> None:
    y = sym.alpha * sym.alpha_prime
    expected_gap = (1 - sym.alpha) * sum(y**i for i in range(1, k + 1))
    assert sp.simplify(sym.corollary_44_gap(k) - expected_gap) == 0
    # The proof claims (1 - y^(k+1)) / (1 - y) < 1; it equals 1 + y + ... + y^k > 1.
    excess = sym.corollary_44_proof_fraction_minus_one(k)
    assert sp.simplify(excess - sum(y**i for i in range(1, k + 1))) == 0
    assert excess.subs({sym.alpha: sp.Rational(1, 2), sym.alpha_prime: sp.Rational(1, 3)}) > 0


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_corollary_46_derivative_is_correct(k: int) -> None:
    T, al, cs = sym.horizontal_ewif(k)
    for pos in range(1, k + 1):
        assert sp.simplify(sp.diff(T, al[pos - 1]) - sym.horizontal_gradient_paper(k, pos)) == 0
    # Special cases printed by the corollary.
    first = sum(sp.prod(al[1:i]) for i in range(1, k + 1)) / (1 + sum(cs))
    last = sp.prod(al[: k - 1]) / (1 + sum(cs))
    assert sp.simplify(sp.diff(T, al[0]) - first) == 0
    assert sp.simplify(sp.diff(T, al[k - 1]) - last) == 0
    # Numeric gradient equals the symbolic one at a point.
    vals = [0.9, 0.7, 0.6, 0.5, 0.3][:k]
    cvals = [0.1, 0.05, 0.02, 0.0, 0.3][:k]
    subs = dict(zip(al, vals, strict=True)) | dict(zip(cs, cvals, strict=True))
    want = [float(sp.diff(T, a).subs(subs)) for a in al]
    np.testing.assert_allclose(ewif_horizontal_gradient(vals, cvals), want, rtol=1e-12)
    assert ewif_horizontal(vals, cvals) == pytest.approx(float(T.subs(subs)), rel=1e-12)


# ---------------------------------------------------------------------------
# (b) closed forms against Monte-Carlo simulations of the processes
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("alpha", "c", "k"),
    [(0.1, 0.0, 1), (0.5, 0.2, 3), (0.7, 0.05, 8), (0.9, 0.01, 20), (0.99, 0.3, 2), (0.62, 1.5, 5)],
)
def test_speculative_matches_simulation(alpha: float, c: float, k: int) -> None:
    sim = simulate_speculative(alpha, c, k, N_MC, seed=11)
    assert sim.ewif.agrees_with(ewif_speculative(alpha, c, k), Z)
    assert sim.tokens_per_call.agrees_with(expected_tokens(alpha, k), Z)
    assert sim.tokens_per_call.agrees_with(float(np.arange(k + 2) @ pgf_coefficients(alpha, k)), Z)
    assert sim.cost_per_call == pytest.approx(1 + c * k)


def test_corollary_42_left_side_disagrees_with_simulation() -> None:
    alpha, c, k = 0.8, 0.05, 6
    est = ewif_speculative_mc(alpha, c, k, N_MC, seed=3)
    as_printed = pgf(alpha, k, 1.0) / (c * k + 1)  # phi(1) / (ck + 1) = 1 / (ck + 1)
    assert as_printed == pytest.approx(1 / (1 + c * k))
    assert not est.agrees_with(as_printed, Z)
    assert est.agrees_with(ewif_speculative(alpha, c, k), Z)


VERTICAL_CASES = [
    # alpha, alpha', c_d1, c_d2, k, n
    (0.8, 0.6, 0.1, 0.01, 3, 4),
    (0.5, 0.9, 0.2, 0.0, 5, 2),
    (0.95, 0.3, 0.05, 0.01, 2, 7),
    (0.2, 0.5, 0.3, 0.05, 1, 1),
    (0.7, 0.05, 0.02, 0.001, 4, 10),
    (0.99, 0.8, 0.01, 0.001, 6, 3),
    (0.6, 0.99, 0.1, 0.02, 8, 2),
    (0.9, 0.7, 0.0, 0.0, 10, 5),
]


@pytest.mark.parametrize(("alpha", "alpha_prime", "c_d1", "c_d2", "k", "n"), VERTICAL_CASES)
def test_vertical_matches_simulation(
    alpha: float, alpha_prime: float, c_d1: float, c_d2: float, k: int, n: int
) -> None:
    sim = simulate_vertical(alpha, alpha_prime, c_d1, c_d2, k, n, N_MC, seed=7)
    assert sim.ewif.agrees_with(ewif_vertical(alpha, alpha_prime, c_d1, c_d2, k, n), Z)
    assert sim.tokens_per_call.agrees_with(naive_vertical_tokens(alpha, alpha_prime, k, n), Z)
    assert sim.cost_per_call == pytest.approx(1 + n * c_d1 + n * k * c_d2)
    # The SWI of the counted runs is the same ratio as the EWIF estimate.
    counted = swi(sim.total_tokens, sim.target_runs, sim.draft_runs, sim.draft_costs)
    assert counted == pytest.approx(sim.ewif.mean, rel=1e-12)
    assert sim.draft_runs == (n * N_MC, n * k * N_MC)


HORIZONTAL_CASES = [
    ([0.9], [0.1]),
    ([0.9, 0.8, 0.7, 0.5], [0.1, 0.05, 0.01, 0.0]),
    ([0.73] * 5 + [0.65] * 3, [248 / 11300] * 5 + [77 / 11300] * 3),
    ([0.3, 0.95, 0.95, 0.95, 0.2, 0.99], [0.5, 0.0, 0.0, 0.0, 0.2, 0.0]),
    (list(np.linspace(0.95, 0.4, 25)), [0.01] * 25),
]


@pytest.mark.parametrize(("alphas", "cost_list"), HORIZONTAL_CASES)
def test_horizontal_matches_simulation(alphas: list[float], cost_list: list[float]) -> None:
    sim = simulate_horizontal(alphas, cost_list, N_MC, seed=5)
    assert sim.ewif.agrees_with(ewif_horizontal(alphas, cost_list), Z)
    assert sim.tokens_per_call.agrees_with(expected_tokens_horizontal(alphas), Z)
    assert ewif_horizontal_mc(alphas, cost_list, N_MC, seed=5) == sim.ewif
    counted = swi(sim.total_tokens, sim.target_runs, sim.draft_runs, sim.draft_costs)
    assert counted == pytest.approx(sim.ewif.mean, rel=1e-12)


def test_simulators_are_seeded() -> None:
    a = ewif_vertical_mc(0.8, 0.6, 0.1, 0.01, 3, 4, 2000, seed=1)
    b = ewif_vertical_mc(0.8, 0.6, 0.1, 0.01, 3, 4, 2000, seed=1)
    c = ewif_vertical_mc(0.8, 0.6, 0.1, 0.01, 3, 4, 2000, seed=2)
    assert a == b
    assert a.mean != c.mean
    assert (
        ewif_speculative_mc(0.5, 0.1, 3, 100, 4) == simulate_speculative(0.5, 0.1, 3, 100, 4).ewif
    )


def test_simulation_chunks_large_k_consistently() -> None:
    # k large enough that the simulator splits the calls into several chunks.
    sim = simulate_speculative(0.999, 0.001, 3000, 3000, seed=9)
    assert sim.ewif.agrees_with(ewif_speculative(0.999, 0.001, 3000), Z)


def test_table_1_is_reproduced() -> None:
    # Leviathan et al.'s T=0 acceptance rates and c = parameter ratio to an 11.3B target.
    c_small, c_base = 77 / 11300, 248 / 11300
    # Every entry to +-0.01 (the paper truncates some values, rounds others).
    assert abs(ewif_speculative(0.65, c_small, 9) - 2.65) <= 0.01
    assert abs(ewif_speculative(0.73, c_base, 8) - 2.96) <= 0.01
    assert abs(ewif_speculative(0.75, c_small, 12) - 3.61) <= 0.01
    assert abs(ewif_speculative(0.80, c_base, 11) - 3.75) <= 0.01

    def horiz(ab: float, as_: float, k1: int, k2: int) -> float:
        return ewif_horizontal([ab] * k1 + [as_] * k2, [c_base] * k1 + [c_small] * k2)

    assert abs(horiz(0.73, 0.65, 5, 3) - 3.03) <= 0.01
    assert abs(horiz(0.80, 0.75, 5, 8) - 3.93) <= 0.01
    best_ende = max((horiz(0.80, 0.75, k1, k2), k1, k2) for k1 in range(1, 20) for k2 in range(30))
    assert best_ende[1:] == (5, 8)
    # The CNNDM cascade entry (k2 = 3) is not the optimum of the same model: k2 = 5 is.
    assert horiz(0.73, 0.65, 5, 5) > horiz(0.73, 0.65, 5, 3) + 0.015
    # The vanilla entries are the optimum over k.
    grid = np.arange(1, 60)
    assert int(np.argmax(ewif_speculative(0.65, c_small, grid))) + 1 == 9
    assert int(np.argmax(ewif_speculative(0.73, c_base, grid))) + 1 == 8
    assert int(np.argmax(ewif_speculative(0.75, c_small, grid))) + 1 == 12
    assert int(np.argmax(ewif_speculative(0.80, c_base, grid))) + 1 == 11


# ---------------------------------------------------------------------------
# (c) properties over the domain
# ---------------------------------------------------------------------------


@given(alphas_open, costs, ks)
def test_speculative_bounds(alpha: float, c: float, k: int) -> None:
    g = ewif_speculative(alpha, c, k)
    assert math.isfinite(g)
    assert g <= 1.0 / (1.0 - alpha) * (1 + 1e-12)
    assert 1.0 / (1.0 + c * k) * (1 - 1e-12) <= g <= (k + 1) / (1.0 + c * k) * (1 + 1e-12)


@given(alphas_open, alphas_open, costs, ks)
def test_speculative_monotone_in_alpha(a1: float, a2: float, c: float, k: int) -> None:
    lo, hi = sorted((a1, a2))
    assert ewif_speculative(lo, c, k) <= ewif_speculative(hi, c, k) * (1 + 1e-12)


@given(alphas_open, costs, costs, ks)
def test_speculative_decreasing_in_cost(alpha: float, c1: float, c2: float, k: int) -> None:
    lo, hi = sorted((c1, c2))
    assert ewif_speculative(alpha, hi, k) <= ewif_speculative(alpha, lo, k) * (1 + 1e-12)


@given(costs, st.integers(min_value=1, max_value=5000))
def test_speculative_edge_values(c: float, k: int) -> None:
    assert ewif_speculative(1e-15, c, k) == pytest.approx(1 / (1 + c * k), rel=1e-12)
    near_one = ewif_speculative(1 - 1e-12, c, k)
    assert math.isfinite(near_one)
    assert near_one == pytest.approx((k + 1) / (1 + c * k), rel=1e-8)


@given(alphas_open, costs, st.integers(min_value=1000, max_value=10**6))
def test_speculative_huge_k_finite(alpha: float, c: float, k: int) -> None:
    g = ewif_speculative(alpha, c, k)
    assert math.isfinite(g)
    assert 0 < g <= min(k + 1, 1 / (1 - alpha)) * (1 + 1e-12)


@given(alphas_open, st.integers(min_value=1, max_value=5000))
def test_pgf_coefficients_are_a_distribution(alpha: float, k: int) -> None:
    p = pgf_coefficients(alpha, k)
    assert p.shape == (k + 2,)
    assert p[0] == 0.0
    assert (p >= 0).all()
    assert p.sum() == pytest.approx(1.0, abs=1e-9)
    assert float(np.arange(k + 2) @ p) == pytest.approx(expected_tokens(alpha, k), rel=1e-9)


@given(alphas_mid, st.integers(min_value=1, max_value=30), st.floats(min_value=-2, max_value=2))
def test_pgf_equals_its_polynomial(alpha: float, k: int, xv: float) -> None:
    p = pgf_coefficients(alpha, k)
    poly = np.polynomial.polynomial.polyval(xv, p)
    scale = float(np.polynomial.polynomial.polyval(abs(xv), p))
    assert abs(pgf(alpha, k, xv) - poly) <= 1e-12 * (k + 2) * max(scale, 1.0)


@given(alphas_mid, st.integers(min_value=1, max_value=200))
def test_pgf_at_the_removable_point(alpha: float, k: int) -> None:
    # alpha x = 1: the quotient is k + 1 (eq. 3/4), and pgf is continuous there.
    x0 = 1.0 / alpha
    at = pgf(alpha, k, x0)
    assert at == pytest.approx(1 + (x0 - 1) * (k + 1), rel=1e-12)
    near = pgf(alpha, k, x0 * (1 + 1e-10))
    assert near == pytest.approx(at, rel=1e-6)


@given(alphas_mid, st.integers(min_value=1, max_value=200))
def test_pgf_one_and_derivative(alpha: float, k: int) -> None:
    # Corollary 4.2 right-hand side: phi'(1) is the expectation; phi(1) = 1.
    assert pgf(alpha, k, 1.0) == 1.0
    h = 1e-6
    deriv = (pgf(alpha, k, 1 + h) - pgf(alpha, k, 1 - h)) / (2 * h)
    assert deriv == pytest.approx(expected_tokens(alpha, k), rel=1e-6)


def test_pgf_accepts_arrays_and_extreme_alpha() -> None:
    xs = np.array([-1.0, 0.0, 0.5, 1.0, 1.5])
    out = pgf(0.6, 4, xs)
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out, [pgf(0.6, 4, v) for v in xs], rtol=1e-15)
    assert out[1] == 0.0  # p_0 = 0
    # alpha -> 1, k in the thousands: still a PGF with the right slope at 1.
    a = 1 - 1e-12
    slope = (pgf(a, 5000, 1 + 1e-9) - pgf(a, 5000, 1 - 1e-9)) / 2e-9
    assert slope == pytest.approx(5001, rel=1e-4)
    assert expected_tokens(a, 5000) == pytest.approx(5001, rel=1e-8)


@given(alphas_open, alphas_open, costs, costs, ks, ns)
def test_vertical_bounds(a: float, ap: float, c1: float, c2: float, k: int, n: int) -> None:
    g = ewif_vertical(a, ap, c1, c2, k, n)
    tokens = expected_tokens_vertical(a, ap, k, n)
    assert math.isfinite(g)
    assert 1 - 1e-12 <= tokens <= min(1 / (1 - a), 1 + n * (k + 1)) * (1 + 1e-12)
    assert g <= 1 / (1 - a) * (1 + 1e-12)
    assert g == pytest.approx(tokens / (1 + n * c1 + n * k * c2), rel=1e-14)


@given(alphas_mid, alphas_mid, ks, ns)
def test_vertical_matches_literal_formula(a: float, ap: float, k: int, n: int) -> None:
    assert expected_tokens_vertical(a, ap, k, n) == pytest.approx(
        naive_vertical_tokens(a, ap, k, n), rel=1e-9
    )


@given(alphas_open, alphas_open, alphas_open, costs, costs, ks, ns)
def test_vertical_monotone(
    a1: float, a2: float, ap: float, c1: float, c2: float, k: int, n: int
) -> None:
    lo, hi = sorted((a1, a2))
    tol = 1 + 1e-12
    assert ewif_vertical(lo, ap, c1, c2, k, n) <= ewif_vertical(hi, ap, c1, c2, k, n) * tol
    assert ewif_vertical(ap, lo, c1, c2, k, n) <= ewif_vertical(ap, hi, c1, c2, k, n) * tol
    assert ewif_vertical(ap, lo, c1 + 0.1, c2, k, n) < ewif_vertical(ap, lo, c1, c2, k, n)
    assert ewif_vertical(ap, lo, c1, c2 + 0.1, k, n) < ewif_vertical(ap, lo, c1, c2, k, n)


@given(alphas_open, costs, costs, st.integers(1, 3000), st.integers(1, 3000))
def test_vertical_edge_values(ap: float, c1: float, c2: float, k: int, n: int) -> None:
    cost = 1 + n * c1 + n * k * c2
    # alpha -> 0: only the target's own token.
    assert ewif_vertical(1e-15, ap, c1, c2, k, n) == pytest.approx(1 / cost, rel=1e-12)
    # alpha -> 1: the whole block plus one token, finite.  At alpha = 1 - eps the
    # tokens fall short of the limit by a relative eps·block/2 to first order (the
    # geometric sum (1 - alpha^(m+1))/(1 - alpha) = (m+1)(1 - eps·m/2 + ...)), which
    # reaches 1e-6 for the largest blocks drawn (n·k up to 9e6).
    eps = 1e-12
    near = ewif_vertical(1 - eps, ap, c1, c2, k, n)
    block = n * float(expected_tokens(ap, k))
    assert math.isfinite(near)
    assert near == pytest.approx((1 + block) / cost, rel=1e-6 + eps * block)


@given(alphas_mid, st.integers(1, 50), st.integers(1, 50))
def test_vertical_with_perfect_inner_drafts_is_plain_sd(a: float, k: int, n: int) -> None:
    # alpha' -> 1: every block has n (k + 1) tokens, i.e. SD with n (k + 1) drafts.
    tokens = expected_tokens_vertical(a, 1 - 1e-13, k, n)
    assert tokens == pytest.approx(expected_tokens(a, n * (k + 1)), rel=1e-9)


@given(alphas_mid, alphas_mid, ks)
def test_corollary_44_phi_below_alpha_as_stated(a: float, ap: float, k: int) -> None:
    assert pgf(ap, k, a) < a


@given(alphas_open, alphas_open, st.integers(1, 10_000))
def test_corollary_44_phi_below_alpha_whole_domain(a: float, ap: float, k: int) -> None:
    # Strict in exact arithmetic; in floating point the gap can round away.
    assert pgf(ap, k, a) <= a


@given(st.floats(0.2, 0.99), alphas_mid, st.floats(0.0, 1.0), ks, st.integers(1, 6))
def test_corollary_44_with_free_second_draft(
    a: float, ap: float, c1: float, k: int, n: int
) -> None:
    # The proof's comparison: with c_d2 = 0 the cascade beats SD with n drafts of M_d1.
    assert ewif_vertical(a, ap, c1, 0.0, k, n) > ewif_speculative(a, c1, n)


@pytest.mark.parametrize(
    ("a", "ap", "c1"), [(0.8, 0.6, 0.05), (0.6, 0.3, 0.2), (0.95, 0.9, 0.01), (0.5, 0.05, 0.5)]
)
def test_corollary_44_best_cascade_beats_best_sd_when_c_d2_is_zero(
    a: float, ap: float, c1: float
) -> None:
    grid = np.arange(1, 80)
    best_sd = float(np.max(ewif_speculative(a, c1, grid)))
    best_cascade = max(float(np.max(ewif_vertical(a, ap, c1, 0.0, k, grid))) for k in range(1, 20))
    assert best_cascade > best_sd


@given(st.floats(0.2, 0.99), alphas_mid, st.floats(0.0, 1.0), ks, st.integers(1, 6))
def test_vertical_break_even_is_the_true_condition(
    a: float, ap: float, c1: float, k: int, n: int
) -> None:
    thr = vertical_break_even_c_d2(a, ap, c1, k, n)
    assert thr > 0
    sd = ewif_speculative(a, c1, n)
    assert ewif_vertical(a, ap, c1, 0.5 * thr, k, n) > sd
    assert ewif_vertical(a, ap, c1, 2.0 * thr, k, n) < sd
    ref = vertical_break_even_c_d2(a, ap, c1, k, n, reference=sd)
    assert ref == pytest.approx(thr, rel=1e-6)


def test_corollary_44_counterexample_small_c_d2_can_lose() -> None:
    # c_d2 = 0.01 << 1, yet with alpha' = 0.05 no vertical cascade beats M_d1 alone.
    a, ap, c1, c2 = 0.8, 0.05, 0.05, 0.01
    grid = np.arange(1, 80)
    sd_all = ewif_speculative(a, c1, grid)
    best_sd, k_sd = float(np.max(sd_all)), int(np.argmax(sd_all)) + 1
    table = np.array([ewif_vertical(a, ap, c1, c2, k, grid) for k in range(1, 40)])
    best_cascade = float(table.max())
    k_best, n_best = np.unravel_index(int(table.argmax()), table.shape)
    k_best, n_best = int(k_best) + 1, int(n_best) + 1
    assert best_cascade < best_sd - 0.1
    # The threshold against the best SD is far below 0.01.
    thr = vertical_break_even_c_d2(a, ap, c1, k_best, n_best, reference=best_sd)
    assert 0 < thr < 0.003
    # The simulated processes agree: the best cascade is slower than the best SD.
    cascade_mc = ewif_vertical_mc(a, ap, c1, c2, k_best, n_best, N_MC, seed=21)
    sd_mc = ewif_speculative_mc(a, c1, k_sd, N_MC, seed=22)
    gap = sd_mc.mean - cascade_mc.mean
    assert gap > Z * math.hypot(sd_mc.stderr, cascade_mc.stderr)


def test_break_even_tends_to_zero_with_alpha_prime() -> None:
    thresholds = [vertical_break_even_c_d2(0.8, ap, 0.05, 2, 6) for ap in (0.5, 0.1, 0.01, 1e-4)]
    assert all(t1 > t2 > 0 for t1, t2 in itertools.pairwise(thresholds))
    assert thresholds[-1] < 1e-4


horizontal_lists = st.integers(1, 40).flatmap(
    lambda k: st.tuples(
        st.lists(alphas_mid, min_size=k, max_size=k), st.lists(costs, min_size=k, max_size=k)
    )
)


@given(alphas_open, costs, ks)
def test_horizontal_reduces_to_speculative(alpha: float, c: float, k: int) -> None:
    assert ewif_horizontal([alpha] * k, [c] * k) == pytest.approx(
        ewif_speculative(alpha, c, k), rel=1e-9
    )


@given(horizontal_lists, st.data())
def test_horizontal_monotone_and_bounded(lists: tuple, data: st.DataObject) -> None:
    al, cs = lists
    k = len(al)
    t = ewif_horizontal(al, cs)
    assert t <= 1 / (1 - max(al)) * (1 + 1e-12)
    assert t <= (k + 1) * (1 + 1e-12)
    i = data.draw(st.integers(0, k - 1))
    up = list(al)
    up[i] = min(0.999, al[i] + 0.005)
    assert ewif_horizontal(up, cs) >= t
    dearer = list(cs)
    dearer[i] += 0.1
    assert ewif_horizontal(al, dearer) < t


@given(horizontal_lists)
def test_horizontal_gradient_matches_finite_differences(lists: tuple) -> None:
    al, cs = lists
    grad = ewif_horizontal_gradient(al, cs)
    assert grad.shape == (len(al),)
    assert (grad > 0).all()
    h = 1e-6
    for i in range(len(al)):
        up, down = list(al), list(al)
        up[i] += h
        down[i] -= h
        fd = (ewif_horizontal(up, cs) - ewif_horizontal(down, cs)) / (2 * h)
        assert grad[i] == pytest.approx(fd, rel=1e-5, abs=1e-9)


@given(horizontal_lists)
def test_horizontal_gradient_equals_corollary_46_as_printed(lists: tuple) -> None:
    al, cs = lists
    k = len(al)
    printed = [
        sum(math.prod(al[j] for j in range(i + 1) if j != pos) for i in range(pos, k))
        / (1 + sum(cs))
        for pos in range(k)
    ]
    np.testing.assert_allclose(ewif_horizontal_gradient(al, cs), printed, rtol=1e-10)


def test_horizontal_huge_k_and_alpha_near_one() -> None:
    k = 5000
    al = np.full(k, 1 - 1e-12)
    t = ewif_horizontal(al, np.zeros(k))
    assert t == pytest.approx(k + 1, rel=1e-6)
    grad = ewif_horizontal_gradient(al, np.full(k, 1e-4))
    assert np.isfinite(grad).all()
    assert grad[0] == pytest.approx(k / 1.5, rel=1e-6)
    decaying = np.linspace(0.99, 0.01, k)
    assert math.isfinite(ewif_horizontal(decaying, np.full(k, 0.001)))


@given(
    st.integers(1, 10**6),
    st.integers(0, 10**5),
    st.lists(st.tuples(st.integers(0, 10**5), costs), min_size=0, max_size=4),
)
def test_swi_definition(n_tok: int, t: int, drafts: list) -> None:
    runs = [r for r, _ in drafts]
    cs = [c for _, c in drafts]
    total = t + sum(r * c for r, c in drafts)
    if total <= 0:
        with pytest.raises(ValueError, match="target_runs"):
            swi(n_tok, t, runs, cs)
    else:
        assert swi(n_tok, t, runs, cs) == pytest.approx(n_tok / total, rel=1e-12)


def test_swi_scalar_draft_and_autoregressive() -> None:
    assert swi(100, 100, [], []) == 1.0  # autoregressive decoding: SWI = 1
    assert swi(300, 100, 400, 0.1) == pytest.approx(300 / 140)
    assert swi(50, 10, np.array([20, 5]), np.array([0.0, 0.2])) == pytest.approx(50 / 11)


# ---------------------------------------------------------------------------
# (d) bad input raises ValueError naming the parameter
# ---------------------------------------------------------------------------

BAD_INPUTS = [
    (pgf, (0.0, 3, 0.5), "alpha"),
    (pgf, (1.0, 3, 0.5), "alpha"),
    (pgf, (float("nan"), 3, 0.5), "alpha"),
    (pgf, (0.5, 0, 0.5), "k"),
    (pgf, (0.5, 2.5, 0.5), "k"),
    (pgf, (0.5, True, 0.5), "k"),
    (pgf, (0.5, 3, float("nan")), "x"),
    (pgf, (0.5, 3, float("inf")), "x"),
    (pgf, (0.5, 3, "1"), "x"),
    (pgf_coefficients, (1.2, 3), "alpha"),
    (pgf_coefficients, (0.5, -1), "k"),
    (expected_tokens, (-0.1, 3), "alpha"),
    (expected_tokens, (0.5, 0), "k"),
    (ewif_speculative, ("0.5", 0.1, 3), "alpha"),
    (ewif_speculative, (0.5, -0.1, 3), "c"),
    (ewif_speculative, (0.5, float("nan"), 3), "c"),
    (ewif_speculative, (0.5, float("inf"), 3), "c"),
    (ewif_speculative, (0.5, 0.1, 3.0), "k"),
    (ewif_speculative, (0.5, 0.1, np.array([1, 0])), "k"),
    (ewif_vertical, (1.0, 0.5, 0.1, 0.01, 2, 2), "alpha"),
    (ewif_vertical, (0.5, 0.0, 0.1, 0.01, 2, 2), "alpha_prime"),
    (ewif_vertical, (0.5, 0.5, -1.0, 0.01, 2, 2), "c_d1"),
    (ewif_vertical, (0.5, 0.5, 0.1, float("nan"), 2, 2), "c_d2"),
    (ewif_vertical, (0.5, 0.5, 0.1, 0.01, 0, 2), "k"),
    (ewif_vertical, (0.5, 0.5, 0.1, 0.01, 2, 0), "n"),
    (expected_tokens_vertical, (0.5, 1.5, 2, 2), "alpha_prime"),
    (vertical_break_even_c_d2, (0.5, 0.5, 0.1, 2, 0), "n"),
    (vertical_break_even_c_d2, (0.5, 0.5, 0.1, 2, 2, 0.0), "reference"),
    (ewif_horizontal, ([], []), "alphas"),
    (ewif_horizontal, ([0.5, 1.0], [0.1, 0.1]), "alphas[1]"),
    (ewif_horizontal, ([0.5, float("nan")], [0.1, 0.1]), "alphas[1]"),
    (ewif_horizontal, ([0.5, 0.6], [0.1]), "costs"),
    (ewif_horizontal, ([0.5, 0.6], [0.1, -0.2]), "costs[1]"),
    (ewif_horizontal, (0.5, [0.1]), "alphas"),
    (ewif_horizontal_gradient, ([0.5], [float("nan")]), "costs[0]"),
    (expected_tokens_horizontal, ([[0.5]],), "alphas"),
    (swi, (0, 1, [1], [0.1]), "n_tokens"),
    (swi, (10, -1, [1], [0.1]), "target_runs"),
    (swi, (10, 1.5, [1], [0.1]), "target_runs"),
    (swi, (10, 1, [-1], [0.1]), "draft_runs[0]"),
    (swi, (10, 1, [1, 2], [0.1]), "draft_costs"),
    (swi, (10, 1, [1], [-0.1]), "draft_costs[0]"),
    (swi, (10, 0, [3], [0.0]), "target_runs"),
    (simulate_speculative, (0.5, 0.1, 3, 1, 0), "n_samples"),
    (simulate_speculative, (0.5, 0.1, 3, 100, -1), "seed"),
    (simulate_speculative, (0.0, 0.1, 3, 100, 0), "alpha"),
    (simulate_vertical, (0.5, 0.5, 0.1, -0.01, 2, 2, 100, 0), "c_d2"),
    (simulate_vertical, (0.5, 0.5, 0.1, 0.01, 2, 2, 10.0, 0), "n_samples"),
    (simulate_horizontal, ([0.5, 0.5], [0.1], 100, 0), "costs"),
    (simulate_horizontal, ([0.5, 1.5], [0.1, 0.1], 100, 0), "alphas[1]"),
]


@pytest.mark.parametrize(("func", "args", "name"), BAD_INPUTS)
def test_bad_input_names_the_parameter(func, args: tuple, name: str) -> None:
    with pytest.raises(ValueError) as info:
        func(*args)
    assert str(info.value).startswith(name), str(info.value)


def test_symbolic_helpers_validate() -> None:
    with pytest.raises(ValueError, match=r"^k "):
        sym.pgf_eq1(0)
    with pytest.raises(ValueError, match=r"^n "):
        sym.vertical_expected_tokens_from_process(2, 0)
    with pytest.raises(ValueError, match=r"^position "):
        sym.horizontal_gradient_paper(3, 4)
