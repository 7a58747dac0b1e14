"""The hybrid of step-level and token-level speculation, and Theorem 3's conditions.

``h(k1, k2) = f(k1) · g(k2)`` where f is the step-level speedup (sync or async,
:mod:`specmodel.closedform.step_level`) and g the token-level speedup in the parallel
(k) convention (:mod:`specmodel.closedform.token_level`).  The product form assumes that
token-level speculation speeds up the target's and the draft's step generation
by the same factor (so c1 is unchanged), that steps are long enough for the
per-step token process to reach its stationary rate, and that the cost of a
batch is flat up to the budget.  The budget constraint is
``ParallelDim_f(k1) · k2 <= M``.

Theorem 3 (sync): with ``D_i(M) = (1 + α_i^{M/2})(1 − c_i + c_i M/2)/(1 − c_i + c_i M)``
condition (7) is ``(1+α1)/(1+c1) >= D_2(M)`` — equivalently
``h(2, M/2) >= h(1, M)`` — and (8) is ``(1+α2)/(1+c2) >= D_1(M)``, equivalently
``h(M/2, 2) >= h(M, 1)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from specmodel.closedform.step_level import check_mode, f_step
from specmodel.closedform.token_level import g_token
from specmodel.parameters import Parameters
from specmodel.validation import (
    check_budget,
    check_cost,
    check_positive_int_array,
    check_probability,
)

__all__ = [
    "THEOREM3_CONSTANT",
    "Regime",
    "Theorem3Conditions",
    "h",
    "regime_of",
    "theorem3_conditions",
    "theorem3_d",
    "theorem4_in_scope",
]

Regime = Literal["hybrid", "token-only", "step-only", "none"]
"""Which levels a configuration uses: both, k1 = 1, k2 = 1, or neither."""

THEOREM3_CONSTANT = 1.157
"""The bound of condition (6), from Lemma 6 (max of F(y) ≈ 1.156228)."""


def h(
    mode: str,
    alpha1: float,
    c1: float,
    alpha2: float,
    c2: float,
    k1: int | np.ndarray,
    k2: int | np.ndarray,
) -> float | np.ndarray:
    """Hybrid speedup f(k1)·g(k2) (``k1``, ``k2`` broadcast as NumPy arrays)."""
    m = check_mode(mode)
    f = np.asarray(f_step(m, alpha1, c1, check_positive_int_array("k1", k1)))
    g = np.asarray(g_token(alpha2, c2, check_positive_int_array("k2", k2)))
    out = f * g
    return float(out) if np.ndim(out) == 0 else out


def regime_of(k1: int, k2: int) -> Regime:
    """'hybrid' if both k1, k2 >= 2; 'token-only' if only k2; 'step-only' if only k1."""
    if k1 >= 2 and k2 >= 2:
        return "hybrid"
    if k2 >= 2:
        return "token-only"
    if k1 >= 2:
        return "step-only"
    return "none"


def theorem3_d(alpha: float, c: float, M: int) -> float:
    """D(M) = (1 + α^{M/2})(1 − c + cM/2)/(1 − c + cM), the right side of (7)/(8)."""
    a = check_probability("alpha", alpha)
    cc = check_cost("c", c)
    m = check_budget("M", M)
    return (1.0 + a ** (m / 2.0)) * (1.0 - cc + cc * m / 2.0) / (1.0 - cc + cc * m)


@dataclass(frozen=True)
class Theorem3Conditions:
    """The hypotheses and conditions of Theorem 3 for given parameters."""

    r1: float
    """(1 + α1)/(1 + c1) = f_sync(2)/f_sync(1)."""
    r2: float
    """(1 + α2)/(1 + c2) = g(2)/g(1)."""
    d1: float
    """D_1(M), the right side of (8)."""
    d2: float
    """D_2(M), the right side of (7)."""
    condition6: bool
    """min(r1, r2) > 1.157."""
    budget_ok: bool
    """M >= 4 and M even."""
    condition7: bool
    """r1 >= D_2(M): some hybrid beats token-only at full budget."""
    condition8: bool
    """r2 >= D_1(M): some hybrid beats step-only at full budget."""

    @property
    def in_scope(self) -> bool:
        """True when the theorem's hypotheses (6) and the budget condition hold."""
        return self.condition6 and self.budget_ok

    @property
    def predicted_regime(self) -> Regime:
        """What the theorem predicts: hybrid if (7) and (8), else the single method."""
        if self.condition7 and self.condition8:
            return "hybrid"
        if not self.condition7:
            return "token-only"
        return "step-only"


def theorem3_conditions(params: Parameters, M: int) -> Theorem3Conditions:
    """Evaluate (6), (7), (8) and the budget hypotheses of Theorem 3 (sync)."""
    a1, cc1, a2, cc2 = params.alpha1, params.c1, params.alpha2, params.c2
    m = check_budget("M", M)
    r1 = (1.0 + a1) / (1.0 + cc1)
    r2 = (1.0 + a2) / (1.0 + cc2)
    d1 = theorem3_d(a1, cc1, m)
    d2 = theorem3_d(a2, cc2, m)
    return Theorem3Conditions(
        r1=r1,
        r2=r2,
        d1=d1,
        d2=d2,
        condition6=min(r1, r2) > THEOREM3_CONSTANT,
        budget_ok=m >= 4 and m % 2 == 0,
        condition7=r1 >= d2,
        condition8=r2 >= d1,
    )


def theorem4_in_scope(params: Parameters, M: int) -> bool:
    """Theorem 4's hypotheses: 0.52 < α1, α2 < 0.8, 0 < c1 < 1/3, c2 < 1/5, M >= 16 even.

    c1 = 0 is outside: the async speedup it is about is undefined there (the
    optimizer rejects it), so the theorem cannot be in scope.
    """
    a1, cc1, a2, cc2 = params.alpha1, params.c1, params.alpha2, params.c2
    m = check_budget("M", M)
    return (
        0.52 < a1 < 0.8
        and 0.52 < a2 < 0.8
        and 0.0 < cc1 < 1.0 / 3.0
        and cc2 < 1.0 / 5.0
        and m >= 16
        and m % 2 == 0
    )
