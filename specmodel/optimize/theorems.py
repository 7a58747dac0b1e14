"""Check the Lookahead Reasoning paper's theorems for given parameters.

:func:`theorem_report` says, for (α1, c1, α2, c2, M): whether each theorem's
hypotheses hold, what it predicts, what the exact optimum actually is (from
:func:`specmodel.optimize.budget.optimize_budget`), and whether the prediction is
right — inside the stated conditions the theorems are tested to hold; outside
them the report gives the true optimum rather than what a theorem would
suggest.  Lemmas 1–3 are checked numerically on the integer grid.  No sympy:
this runs in milliseconds for the CLI.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from specmodel.closedform.hybrid import theorem3_conditions, theorem4_in_scope
from specmodel.closedform.step_level import async_knee, async_s2, f_async, f_sync
from specmodel.closedform.token_level import g_token, optimal_k
from specmodel.optimize.budget import optimize_budget
from specmodel.parameters import Parameters
from specmodel.validation import check_budget

__all__ = ["TheoremCheck", "TheoremReport", "theorem_report", "lemma1_ratios"]


@dataclass(frozen=True)
class TheoremCheck:
    """One theorem or lemma for the given parameters."""

    name: str
    """Which statement ('Theorem 3', 'Lemma 2', …)."""
    in_scope: bool
    """Whether its hypotheses hold for these parameters."""
    prediction: str
    """What it claims here (empty when out of scope and it claims nothing)."""
    actual: str
    """What is actually true (from the exact optimizer or the closed forms)."""
    holds: bool | None
    """Prediction == actual when in scope; None when out of scope."""
    detail: dict[str, Any] = field(default_factory=dict)
    """The numbers behind the verdict."""


@dataclass(frozen=True)
class TheoremReport:
    """All checks for one parameter set."""

    params: Parameters
    """α1, c1, α2, c2."""
    budget: int
    """Parallelism budget M."""
    checks: list[TheoremCheck]
    """Theorem 3, Theorem 4, Lemmas 1–3."""
    notes: list[str]
    """Human-readable conclusions."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (the parameters flattened first, as the CLI prints them)."""
        d = asdict(self)
        return {**d.pop("params"), **d}


def _tie(res: Any, regime: str) -> tuple[int, int] | None:
    """A point of ``regime`` whose speedup equals the optimum (rel. 1e-12) when the optimizer
    reported another regime; None otherwise."""
    land = res.landscape
    if land is None or res.regime == regime:
        return None
    from specmodel.closedform.hybrid import regime_of

    for k1, k2, hv in zip(land.k1.tolist(), land.k2.tolist(), land.speedup.tolist(),
                           strict=True):
        if regime_of(k1, k2) == regime and abs(hv - res.speedup) <= 1e-12 * res.speedup:
            return k1, k2
    return None


def lemma1_ratios(params: Parameters, M: int) -> dict[str, float]:
    """Lemma 1's w(2)/w(1) and w(M/2)/w(M), w(γ) = f(γ)·g(M/γ), M even.

    ``paper_*`` uses the lemma's f (the S2 formula at every γ); ``true_*`` uses
    f_async, which is S1 from ⌈1/c1⌉ on.
    """
    m = check_budget("M", M)
    if m % 2 or m < 4:
        raise ValueError(f"M must be an even integer >= 4 for Lemma 1, got {m}")
    alpha1, c1, alpha2, c2 = params.alpha1, params.c1, params.alpha2, params.c2
    g = lambda k: float(g_token(alpha2, c2, k))  # noqa: E731
    s2 = lambda k: float(async_s2(alpha1, c1, k))  # noqa: E731
    fa = lambda k: float(f_async(alpha1, c1, k))  # noqa: E731
    return {
        "paper_w2_over_w1": s2(2) * g(m // 2) / (s2(1) * g(m)),
        "paper_wM2_over_wM": s2(m // 2) * g(2) / (s2(m) * g(1)),
        "true_w2_over_w1": fa(2) * g(m // 2) / (fa(1) * g(m)),
        "true_wM2_over_wM": fa(m // 2) * g(2) / (fa(m) * g(1)),
    }


def theorem_report(params: Parameters, M: int) -> TheoremReport:
    """Theorems 3 and 4 and Lemmas 1–3 of the LR paper for these parameters.

    c1 may be any cost >= 0: the sync statements (Theorem 3, Lemma 3) are
    evaluated for every c1, the async ones (Theorem 4, Lemmas 1 and 2) only for
    0 < c1 < 1, where the async speedup is defined (see
    :func:`specmodel.closedform.step_level.check_async_c1`); elsewhere they are reported out
    of scope with the reason.
    """
    a1, cc1, a2, cc2 = params.alpha1, params.c1, params.alpha2, params.c2
    m = check_budget("M", M)
    checks: list[TheoremCheck] = []
    notes: list[str] = []

    # Theorem 3 (sync).
    t3 = theorem3_conditions(params, m)
    sync = optimize_budget(params, m, "sync", landscape=True)
    pred3 = t3.predicted_regime if (t3.condition7 or t3.condition8) else "(7) or (8)"
    holds3 = (t3.condition7 or t3.condition8) and pred3 == sync.regime if t3.in_scope else None
    actual3 = f"{sync.regime} at (k1={sync.k1}, k2={sync.k2}), {sync.speedup:.4f}x"
    tie = _tie(sync, pred3)
    if tie is not None:  # the claimed regime reaches the optimum too, but does not beat it
        actual3 += f"; ties {pred3} at (k1={tie[0]}, k2={tie[1]})"
    checks.append(
        TheoremCheck(
            "Theorem 3 (sync)",
            t3.in_scope,
            pred3 if t3.in_scope else "",
            actual3,
            holds3,
            {
                "condition6": t3.condition6,
                "budget_even_ge_4": t3.budget_ok,
                "condition7": t3.condition7,
                "condition8": t3.condition8,
                "r1": t3.r1,
                "r2": t3.r2,
                "D1": t3.d1,
                "D2": t3.d2,
                "token_only": sync.token_only.speedup,
                "step_only": sync.step_only.speedup,
            },
        )
    )
    if t3.in_scope:
        notes.append(
            f"Theorem 3 applies: it predicts {pred3}; the exact sync optimum is "
            f"{sync.regime} (k1={sync.k1}, k2={sync.k2})."
        )
    else:
        why = [] if t3.condition6 else ["(6) fails: min((1+α)/(1+c)) <= 1.157"]
        if not t3.budget_ok:
            why.append("M must be even and >= 4")
        notes.append(
            f"Outside Theorem 3's conditions ({'; '.join(why)}); the exact sync optimum "
            f"is {sync.regime} at (k1={sync.k1}, k2={sync.k2}), {sync.speedup:.4f}x."
        )

    if not 0.0 < cc1 < 1.0:
        why_async = f"async is defined for 0 < c1 < 1 only, c1 = {cc1!r}"
        for label in ("Theorem 4 (async)", "Lemma 2"):
            checks.append(TheoremCheck(label, False, "", why_async, None, {}))
        _lemma3_checks(checks, a1, cc1, a2, cc2)
        checks.append(TheoremCheck("Lemma 1", False, "", why_async, None, {}))
        notes.append(f"Outside Theorem 4's conditions: {why_async}.")
        return TheoremReport(params, m, checks, notes)

    # Theorem 4 (async).
    in4 = theorem4_in_scope(params, m)
    asyn = optimize_budget(params, m, "async")
    checks.append(
        TheoremCheck(
            "Theorem 4 (async)",
            in4,
            "hybrid" if in4 else "",
            f"{asyn.regime} at (k1={asyn.k1}, k2={asyn.k2}), {asyn.speedup:.4f}x",
            (asyn.regime == "hybrid") if in4 else None,
            {
                "knee_ceil_1_over_c1": async_knee(cc1),
                "token_only": asyn.token_only.speedup,
                "step_only": asyn.step_only.speedup,
            },
        )
    )
    notes.append(
        ("Theorem 4 applies" if in4 else "Outside Theorem 4's conditions")
        + f"; the exact async optimum is {asyn.regime} at (k1={asyn.k1}, k2={asyn.k2}), "
        f"{asyn.speedup:.4f}x."
    )

    # Lemma 2: f_async strictly increasing to ⌈1/c1⌉, constant after.
    knee = async_knee(cc1)
    ks = np.arange(1, knee + 4)
    fa = np.asarray(f_async(a1, cc1, ks))
    inc = bool(np.all(np.diff(fa[:knee]) > 0))
    flat = bool(np.allclose(fa[knee - 1 :], fa[knee - 1], rtol=1e-12))
    checks.append(
        TheoremCheck(
            "Lemma 2",
            True,
            f"f_async increases on 1..{knee}, constant after",
            "as claimed" if inc and flat else "not as claimed",
            inc and flat,
            {"f_async": fa.tolist(), "s2_at_knee_plus_1": float(async_s2(a1, cc1, knee + 1))},
        )
    )

    _lemma3_checks(checks, a1, cc1, a2, cc2)

    # Lemma 1 (async, paper's f) when its hypotheses hold.
    in1 = 0.5 < a1 < 0.8 and 0.5 < a2 < 0.8 and cc1 < 1 / 3 and cc2 < 0.2 and m >= 16 and m % 2 == 0
    if m >= 4 and m % 2 == 0:
        r = lemma1_ratios(params, m)
        claim = r["paper_w2_over_w1"] > 1 and r["paper_wM2_over_wM"] > 1
        true = r["true_w2_over_w1"] > 1 and r["true_wM2_over_wM"] > 1
        checks.append(
            TheoremCheck(
                "Lemma 1",
                in1,
                "w(2) > w(1) and w(M/2) > w(M)" if in1 else "",
                "both hold with the true f_async" if true else "fails with the true f_async",
                (claim and true) if in1 else None,
                r,
            )
        )
    return TheoremReport(params, m, checks, notes)


def _lemma3_checks(
    checks: list[TheoremCheck], a1: float, cc1: float, a2: float, cc2: float
) -> None:
    """Lemma 3: g (and f_sync) unimodal with integer optimum >= 2 when alpha > c."""
    for label, a, c, fn in (
        ("Lemma 3 (g)", a2, cc2, g_token),
        ("Lemma 3 (f_sync)", a1, cc1, f_sync),
    ):
        in3 = a > c and c > 0
        if in3:
            best = optimal_k(a, c)
            kk = np.arange(1, max(best.k * 4, 16))
            vals = np.asarray(fn(a, c, kk))
            sign_changes = int(
                np.count_nonzero(np.diff(np.sign(np.diff(vals)[np.diff(vals) != 0])))
            )
            ok = best.k >= 2 and sign_changes <= 1
            checks.append(
                TheoremCheck(
                    label,
                    True,
                    "unimodal, integer optimum >= 2",
                    f"optimum k = {best.k}",
                    ok,
                    {"k_star": best.k},
                )
            )
        else:
            checks.append(TheoremCheck(label, False, "", "alpha <= c or c = 0", None, {}))
