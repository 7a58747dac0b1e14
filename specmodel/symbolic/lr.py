"""Symbolic (sympy) derivations behind the Lookahead Reasoning closed forms.

Used by the tests and by ``docs/errata.md``'s commands; never imported on the
CLI's fast path.  Symbols: ``a`` = α ∈ (0, 1), ``c`` = cost ratio, ``k`` (or
``g``) = window length; X ~ Geometric on {0, 1, …}, P(X = i) = a^i (1 − a).
"""

from __future__ import annotations

import sympy as sp

a, c, x, y = sp.symbols("a c x y", positive=True)
k = sp.symbols("k", positive=True, integer=True)
i, m, r = sp.symbols("i m r", nonnegative=True, integer=True)

__all__ = [
    "a",
    "c",
    "k",
    "x",
    "y",
    "pmf",
    "expected_one_plus_x",
    "expected_batches_series",
    "expected_mod_series",
    "s1",
    "s2_paper",
    "s2_from_expectations",
    "f_sync_expr",
    "g_expr",
    "lemma3_f",
    "log_derivative_identity",
    "lemma6_f",
    "theorem3_identity_gap",
]


def _converged(expr: sp.Expr) -> sp.Expr:
    """The branch of a summation valid for |a| < 1 (sympy returns a Piecewise)."""
    return expr.replace(lambda e: isinstance(e, sp.Piecewise), lambda e: e.args[0][0])


def _sum(term: sp.Expr, limits: tuple) -> sp.Expr:
    return _converged(sp.summation(sp.expand(term), limits))


def pmf(n: sp.Expr) -> sp.Expr:
    """P(X = n) = a^n (1 − a)."""
    return a**n * (1 - a)


def expected_one_plus_x() -> sp.Expr:
    """E[1 + X] summed as a series: 1/(1 − a)."""
    return sp.factor(_sum((1 + i) * pmf(i), (i, 0, sp.oo)))


def expected_batches_series(kk: int) -> sp.Expr:
    """E[⌈(X+1)/k⌉] = Σ_m (m+1) P(mk <= X <= (m+1)k − 1) for a concrete k."""
    block = _sum(pmf(m * kk + r), (r, 0, kk - 1))
    return sp.factor(_sum((m + 1) * block, (m, 0, sp.oo)))


def expected_mod_series(kk: int) -> sp.Expr:
    """E[X mod k] = Σ_r r Σ_m P(X = mk + r) for a concrete k."""
    inner = _sum(pmf(m * kk + r), (m, 0, sp.oo))
    return sp.factor(_sum(r * inner, (r, 0, kk - 1)))


def s1() -> sp.Expr:
    """S1 = 1/(c + (1 − c)(1 − a))."""
    return 1 / (c + (1 - c) * (1 - a))


def s2_paper(kk: sp.Expr = k) -> sp.Expr:
    """S2 as printed: (1 − a^k)/((1 − a) + c[a − a^{k+1} − k(1 − a)a^k])."""
    return (1 - a**kk) / ((1 - a) + c * (a - a ** (kk + 1) - kk * (1 - a) * a**kk))


def s2_from_expectations(kk: int) -> sp.Expr:
    """E[1 + X] / (E⌈(X+1)/k⌉ + c E[X mod k]) from the series, for a concrete k."""
    return sp.cancel(
        expected_one_plus_x() / (expected_batches_series(kk) + c * expected_mod_series(kk))
    )


def f_sync_expr(kk: sp.Expr = k) -> sp.Expr:
    """f_sync(k) = (1 − a^k)/((1 − a)(1 − c + ck))."""
    return (1 - a**kk) / ((1 - a) * (1 - c + c * kk))


def g_expr(kk: sp.Expr = k) -> sp.Expr:
    """g(k), the same function of (a, c, k) as f_sync."""
    return f_sync_expr(kk)


def lemma3_f(kk: sp.Expr = x) -> sp.Expr:
    """Lemma 3's F(k) = a^k(−ln a)(1 − c + ck) − c(1 − a^k)."""
    return a**kk * (-sp.log(a)) * (1 - c + c * kk) - c * (1 - a**kk)


def log_derivative_identity() -> sp.Expr:
    """γ f'/f − (a(γ) − cγ/(1 − c + cγ)) for f = f_sync, a(γ) = γ(−ln a)a^γ/(1 − a^γ).

    Simplifies to 0 (Lemma 5, step 2).
    """
    f = f_sync_expr(x)
    lhs = x * sp.diff(f, x) / f
    rhs = x * (-sp.log(a)) * a**x / (1 - a**x) - c * x / (1 - c + c * x)
    return sp.simplify(lhs - rhs)


def lemma6_f(yy: sp.Expr = y) -> sp.Expr:
    """Lemma 6's F(y) = 2 − y + (y − 2 + 1/y) ln(1 − y)."""
    return 2 - yy + (yy - 2 + 1 / yy) * sp.log(1 - yy)


def theorem3_identity_gap() -> sp.Expr:
    """(1 + a^{γ/2})(1 − a2(γ)/2) − F(y) with y = 1 − a^{γ/2}, written in y.

    Theorem 3's proof (Case 2) claims this is 0, where a2(γ) = γ(−ln a)a^γ/(1 − a^γ)
    evaluated at the optimum γ*.  With u = a^{γ/2} = 1 − y, γ ln a = 2 ln(1 − y)
    and a^γ = (1 − y)^2, so a2 = −2 ln(1 − y)(1 − y)^2/(1 − (1 − y)^2).
    """
    u = 1 - y
    a2 = -2 * sp.log(u) * u**2 / (1 - u**2)
    return sp.simplify((1 + u) * (1 - a2 / 2) - lemma6_f(y))
