"""Symbolic (sympy) derivations behind :mod:`specmodel.closedform.cascade`.

Used by the tests and by the theorem checks, never on the fast CLI path.  Each
function returns sympy expressions in the module's symbols so that a test can
``simplify`` a difference to zero, or exhibit that it is not zero (an erratum).

Conventions as in :mod:`specmodel.closedform.cascade`: ``k`` = draft tokens per speculative
call; ``alpha`` the reviewer's acceptance; ``x`` the PGF's variable.
"""

from __future__ import annotations

import sympy as sp

__all__ = [
    "alpha",
    "alpha_prime",
    "corollary_42_left_side",
    "corollary_44_gap",
    "corollary_44_proof_fraction_minus_one",
    "expected_tokens_from_pgf",
    "horizontal_ewif",
    "horizontal_gradient_paper",
    "pgf_eq1",
    "pgf_eq3",
    "pgf_eq4",
    "pgf_eq5",
    "pgf_eq6_as_printed",
    "pgf_form_differences",
    "pgf_from_process",
    "t_operator",
    "t_operator_linearity_defect",
    "vertical_expected_tokens_from_process",
    "vertical_expected_tokens_paper",
    "x",
]

alpha = sp.Symbol("alpha", positive=True)
"""Acceptance probability of the reviewer (``M_t``, or ``M_d1`` in the inner call)."""
alpha_prime = sp.Symbol("alpha_prime", positive=True)
"""Acceptance of ``M_d2``'s drafts by ``M_d1`` in the vertical cascade."""
x = sp.Symbol("x")
"""The generating function's variable."""


def _k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    return k


def pgf_eq1(k: int, a: sp.Expr = alpha, var: sp.Expr = x) -> sp.Expr:
    """Eq. (1): ``1 + (x - 1)(1 - a^(k+1) x^(k+1)) / (1 - a x)``."""
    kk = _k(k)
    return 1 + (var - 1) * (1 - a ** (kk + 1) * var ** (kk + 1)) / (1 - a * var)


def pgf_eq3(k: int, a: sp.Expr = alpha, var: sp.Expr = x) -> sp.Expr:
    """Eq. (3): ``a^k x^(k+1) + sum_{i=0}^{k-1} (a^i - a^(i+1)) x^(i+1)``."""
    kk = _k(k)
    return a**kk * var ** (kk + 1) + sum((a**i - a ** (i + 1)) * var ** (i + 1) for i in range(kk))


def pgf_eq4(k: int, a: sp.Expr = alpha, var: sp.Expr = x) -> sp.Expr:
    """Eq. (4): ``x + sum_{i=1}^{k} a^i (x^(i+1) - x^i)``."""
    kk = _k(k)
    return var + sum(a**i * (var ** (i + 1) - var**i) for i in range(1, kk + 1))


def pgf_eq5(k: int, a: sp.Expr = alpha, var: sp.Expr = x) -> sp.Expr:
    """Eq. (5): ``x + (x - 1) sum_{i=1}^{k} a^i x^i``."""
    kk = _k(k)
    return var + (var - 1) * sum(a**i * var**i for i in range(1, kk + 1))


def pgf_eq6_as_printed(k: int, a: sp.Expr = alpha, var: sp.Expr = x) -> sp.Expr:
    """Eq. (6) as the paper prints it: ``x + (x - 1)(1 - a^(k+1) x^(k+1)) / (1 - a x)``.

    Wrong: it differs from eq. (5) by ``x - 1`` (the sum from ``i = 1`` is the
    geometric quotient minus its ``i = 0`` term).
    """
    kk = _k(k)
    return var + (var - 1) * (1 - a ** (kk + 1) * var ** (kk + 1)) / (1 - a * var)


def pgf_from_process(k: int, a: sp.Expr = alpha, var: sp.Expr = x) -> sp.Expr:
    """The PGF built from the process: ``i`` drafts accepted then a rejection, or all.

    ``sum_{i=0}^{k-1} a^i (1 - a) x^(i+1) + a^k x^(k+1)``.
    """
    kk = _k(k)
    return sum(a**i * (1 - a) * var ** (i + 1) for i in range(kk)) + a**kk * var ** (kk + 1)


def pgf_form_differences(k: int) -> dict[str, sp.Expr]:
    """Each printed form minus the process's PGF, simplified (0 where the form is right)."""
    truth = pgf_from_process(k)
    forms = {
        "eq1": pgf_eq1(k),
        "eq3": pgf_eq3(k),
        "eq4": pgf_eq4(k),
        "eq5": pgf_eq5(k),
        "eq6": pgf_eq6_as_printed(k),
    }
    return {name: sp.factor(sp.cancel(sp.together(f - truth))) for name, f in forms.items()}


def expected_tokens_from_pgf(k: int) -> sp.Expr:
    """``phi'(1)`` of eq. (1): the expected tokens per call, simplified."""
    phi = pgf_eq1(k)
    return sp.simplify(sp.limit(sp.diff(phi, x), x, 1))


def corollary_42_left_side(k: int) -> sp.Expr:
    """``phi(1)`` as Corollary 4.2 writes it: identically 1 (erratum)."""
    return sp.simplify(sp.limit(pgf_eq1(k), x, 1))


def t_operator(f: sp.Expr, a: sp.Expr = alpha, var: sp.Expr = x) -> sp.Expr:
    """The proof of Theorem 4.3's operator ``T_a(f) = (1 - a f(a)) / (1 - a)``."""
    return (1 - a * f.subs(var, a)) / (1 - a)


def t_operator_linearity_defect(j: int) -> sp.Expr:
    """``T(2 x^j) - 2 T(x^j)``: nonzero, so ``T`` is affine, not linear (erratum)."""
    return sp.simplify(t_operator(2 * x**j) - 2 * t_operator(x**j))


def _truncated_tokens(j: int, a: sp.Expr) -> sp.Expr:
    """E[min(X, j) + 1] from the pmf: the target reviews ``j`` tokens i.i.d. w.p. ``a``."""
    return sum((i + 1) * a**i * (1 - a) for i in range(j)) + (j + 1) * a**j


def vertical_expected_tokens_from_process(k: int, n: int) -> sp.Expr:
    """Expected tokens per target call of the vertical cascade, from first principles.

    Expands ``phi_{alpha',k}(x)^n`` (from the process PGF) into the law of the block
    length ``J``; for each ``j`` the target's expected output ``E[min(X, j) + 1]`` is
    written from its own pmf, then averaged over ``J``.  No operator ``T`` is used.
    """
    kk = _k(k)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    block = sp.Poly(sp.expand(pgf_from_process(kk, alpha_prime) ** n), x)
    total = sp.Integer(0)
    for (j,), pj in block.terms():
        total += pj * _truncated_tokens(j, alpha)
    return sp.expand(total)


def vertical_expected_tokens_paper(k: int, n: int) -> sp.Expr:
    """Theorem 4.3's numerator over ``1 - alpha``: ``(1 - alpha phi^n(alpha)) / (1 - alpha)``."""
    phi = pgf_eq1(_k(k), alpha_prime)
    return t_operator(phi**n)


def corollary_44_gap(k: int) -> sp.Expr:
    """``alpha - phi_{alpha',k}(alpha)``, factored: ``(1-alpha) sum_{i=1}^k (alpha alpha')^i``."""
    return sp.factor(sp.cancel(alpha - pgf_eq1(_k(k), alpha_prime, alpha)))


def corollary_44_proof_fraction_minus_one(k: int) -> sp.Expr:
    """``(1 - (a a')^(k+1)) / (1 - a a') - 1``: the proof claims < 0, it is > 0 (erratum)."""
    y = alpha * alpha_prime
    kk = _k(k)
    return sp.expand(sp.cancel((1 - y ** (kk + 1)) / (1 - y) - 1))


def horizontal_ewif(k: int) -> tuple[sp.Expr, tuple[sp.Symbol, ...], tuple[sp.Symbol, ...]]:
    """Theorem 4.5's ``T`` for ``k`` positions, with its symbols ``alpha_i`` and ``c_i``."""
    kk = _k(k)
    al = sp.symbols(f"alpha_1:{kk + 1}", positive=True)
    cs = sp.symbols(f"c_1:{kk + 1}", nonnegative=True)
    num = sum(sp.prod(al[:i]) for i in range(kk + 1))
    return num / (1 + sum(cs)), tuple(al), tuple(cs)


def horizontal_gradient_paper(k: int, position: int) -> sp.Expr:
    """Corollary 4.6's ``dT/d alpha_l`` as printed, ``l = position`` (1-based)."""
    kk = _k(k)
    lp = position
    if isinstance(lp, bool) or not isinstance(lp, int) or not 1 <= lp <= kk:
        raise ValueError(f"position must be an integer in [1, {kk}], got {lp!r}")
    _, al, cs = horizontal_ewif(kk)
    num = sum(sp.prod([al[j - 1] for j in range(1, i + 1) if j != lp]) for i in range(lp, kk + 1))
    return num / (1 + sum(cs))
