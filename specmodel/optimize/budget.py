"""The budget-M problem: max f(k1)·g(k2) subject to ParallelDim_f(k1)·k2 <= M.

Solved exactly over the integers.  For each k1 the best k2 is the unconstrained
integer optimum of g clipped to ``M // ParallelDim_f(k1)`` (g is unimodal in k2,
Lemma 3), so the search costs O(M) evaluations; for async, k1 beyond ⌈1/c1⌉
changes neither f nor the parallel dimension and is not searched.  The whole
landscape (every feasible (k1, k2)) is returned on request.  Budgets are bounded by
:data:`~specmodel.validation.MAX_SEARCH_BUDGET` (100,000): the landscape holds
O(M log M) points, and a larger M is refused with a message naming the bound.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from specmodel.closedform.hybrid import Regime, Theorem3Conditions, regime_of, theorem3_conditions
from specmodel.closedform.hybrid import theorem4_in_scope as _theorem4_in_scope
from specmodel.closedform.step_level import (
    async_knee,
    check_async_c1,
    check_mode,
    f_step,
    parallel_dim_f,
)
from specmodel.closedform.token_level import g_token, optimal_k
from specmodel.config import SpecConfig
from specmodel.parameters import Parameters
from specmodel.validation import MAX_SEARCH_BUDGET, check_budget, check_cost

__all__ = ["BudgetPoint", "Landscape", "OptimizeResult", "budget_landscape", "optimize_budget"]

_TIE_RTOL = 1e-12


@dataclass(frozen=True)
class BudgetPoint:
    """One feasible configuration of the budget problem."""

    k1: int
    """Target steps in parallel (step level; 1 = no step-level speculation)."""
    k2: int
    """Target positions per step verified in parallel (token level; 1 = none)."""
    speedup: float
    """Predicted speedup h(k1, k2) over target-only autoregressive decoding."""
    parallel_dim: int
    """ParallelDim_f(k1) · k2, the budget this point uses."""

    @property
    def regime(self) -> Regime:
        """'hybrid', 'token-only', 'step-only' or 'none'."""
        return regime_of(self.k1, self.k2)

    def to_dict(self) -> dict[str, Any]:
        """``{k1, k2, speedup, parallel_dim, regime}``."""
        return {"k1": self.k1, "k2": self.k2, "speedup": self.speedup,
                "parallel_dim": self.parallel_dim, "regime": self.regime}


@dataclass(frozen=True)
class Landscape:
    """Every feasible (k1, k2) under the budget, as flat arrays."""

    k1: np.ndarray
    """k1 of each point."""
    k2: np.ndarray
    """k2 of each point."""
    speedup: np.ndarray
    """h(k1, k2) of each point."""
    parallel_dim: np.ndarray
    """Budget used by each point."""

    def to_dict(self) -> dict[str, list[Any]]:
        """The four arrays as lists."""
        return {"k1": self.k1.tolist(), "k2": self.k2.tolist(),
                "speedup": self.speedup.tolist(), "parallel_dim": self.parallel_dim.tolist()}


@dataclass(frozen=True)
class OptimizeResult:
    """Result of :func:`optimize_budget` (after SciPy's ``OptimizeResult``)."""

    mode: str
    """'sync' or 'async'."""
    budget: int
    """The parallelism budget M."""
    params: Parameters
    """α1, c1, α2, c2 the optimum was solved for."""
    best: BudgetPoint
    """The optimum."""
    token_only: BudgetPoint
    """Best point with k1 = 1."""
    step_only: BudgetPoint
    """Best point with k2 = 1."""
    theorem3: Theorem3Conditions | None
    """Theorem 3's conditions (sync mode), else None."""
    theorem4_in_scope: bool
    """Whether Theorem 4's hypotheses hold (async mode; False for sync)."""
    message: str
    """Why the winning regime wins, in one or two sentences."""
    landscape: Landscape | None = field(default=None, repr=False)
    """All feasible points, when requested."""
    economical: BudgetPoint | None = None
    """The point using the least budget whose speedup is within ``economy_rtol`` of the
    optimum (None when that is the optimum itself)."""
    config: SpecConfig = field(default_factory=SpecConfig)
    """The run configuration of the optimum: the ``base`` configuration given to
    :func:`optimize_budget` (its token drafter, verifier, step settings) with this mode,
    k1 and k2 — what ``export`` writes and ``decode`` runs."""

    @property
    def regime(self) -> Regime:
        """Regime of the optimum."""
        return self.best.regime

    @property
    def k1(self) -> int:
        """k1 of the optimum."""
        return self.best.k1

    @property
    def k2(self) -> int:
        """k2 of the optimum."""
        return self.best.k2

    @property
    def speedup(self) -> float:
        """Speedup of the optimum."""
        return self.best.speedup

    def to_dict(self, *, landscape: bool = False) -> dict[str, Any]:
        """JSON-serialisable form: the optimum, the comparison points, the theorem status,
        the parameters and the configuration (the landscape only when asked)."""
        out: dict[str, Any] = {
            "mode": self.mode,
            "budget": self.budget,
            "k1": self.k1,
            "k2": self.k2,
            "speedup": self.speedup,
            "regime": self.regime,
            "parallel_dim": self.best.parallel_dim,
            "token_only": self.token_only.to_dict(),
            "step_only": self.step_only.to_dict(),
            "economical": None if self.economical is None else self.economical.to_dict(),
            "parameters": self.params.to_dict(),
            "message": self.message,
        }
        if self.theorem3 is not None:
            t = self.theorem3
            out["theorem3"] = {
                "in_scope": t.in_scope,
                "condition6": t.condition6,
                "condition7": t.condition7,
                "condition8": t.condition8,
                "predicted_regime": t.predicted_regime,
            }
        else:
            out["theorem4_in_scope"] = self.theorem4_in_scope
        out["config"] = self.config.model_dump()
        if landscape and self.landscape is not None:
            out["landscape"] = self.landscape.to_dict()
        return out


def check_parameters(params: Parameters, M: int, mode: str) -> tuple[Parameters, int, str]:
    """Validated (params, M, mode); async needs 0 < c1 < 1 (``check_async_c1``); M is at
    most :data:`~specmodel.validation.MAX_SEARCH_BUDGET` (the search's memory bound)."""
    p = Parameters.coerce(params)
    m = check_mode(mode)
    if m == "async":
        check_async_c1(p.c1)
    return p, check_budget("M", M, maximum=MAX_SEARCH_BUDGET), m


def _k1_range(mode: str, c1: float, M: int) -> np.ndarray:
    top = M if mode == "sync" else min(M, async_knee(c1))
    return np.arange(1, top + 1, dtype=np.int64)


def _best_k2(alpha2: float, c2: float, caps: np.ndarray) -> np.ndarray:
    """Best k2 <= cap for each cap (unimodality of g)."""
    if c2 == 0.0:
        return caps.copy()
    kstar = optimal_k(alpha2, c2).k
    return np.minimum(caps, kstar)


def _pick(k1: np.ndarray, k2: np.ndarray, h: np.ndarray, pd: np.ndarray) -> int:
    """Index of the best point; ties (to 1e-12) go to less budget, then fewer steps."""
    top = h.max()
    near = np.flatnonzero(h >= top * (1.0 - _TIE_RTOL))
    order = np.lexsort((k1[near], pd[near]))
    return int(near[order[0]])


def budget_landscape(params: Parameters, M: int, mode: str = "async") -> Landscape:
    """Every (k1, k2) with ParallelDim_f(k1)·k2 <= M and its speedup (O(M log M) points)."""
    p, budget, m = check_parameters(params, M, mode)
    a1, cc1, a2, cc2 = p.alpha1, p.c1, p.alpha2, p.c2
    k1 = _k1_range(m, cc1, budget)
    pd1 = np.asarray(parallel_dim_f(m, cc1, k1))
    caps = budget // pd1
    k1s = np.repeat(k1, caps)
    starts = np.repeat(np.cumsum(caps) - caps, caps)
    k2s = np.arange(k1s.size, dtype=np.int64) - starts + 1
    f = np.asarray(f_step(m, a1, cc1, k1))
    g = np.asarray(g_token(a2, cc2, np.arange(1, int(caps.max()) + 1, dtype=np.int64)))
    hs = np.repeat(f, caps) * g[k2s - 1]
    return Landscape(k1s, k2s, hs, np.repeat(pd1, caps) * k2s)


def optimize_budget(
    params: Parameters,
    M: int,
    mode: str = "async",
    *,
    base: SpecConfig | None = None,
    landscape: bool = False,
    economy_rtol: float = 1e-3,
) -> OptimizeResult:
    """Solve max h(k1, k2) s.t. ParallelDim_f(k1)·k2 <= M exactly over integers.

    Returns the optimum with the best token-only (k1 = 1) and step-only (k2 = 1)
    points for comparison, the theorem conditions for these parameters, the
    optimum's run configuration (``base`` — by default :class:`SpecConfig`'s
    defaults — with this mode, k1 and k2), and the whole landscape when
    ``landscape=True``.
    """
    p, budget, m = check_parameters(params, M, mode)
    a1, cc1, a2, cc2 = p.alpha1, p.c1, p.alpha2, p.c2
    rtol = check_cost("economy_rtol", economy_rtol)

    k1 = _k1_range(m, cc1, budget)
    pd1 = np.asarray(parallel_dim_f(m, cc1, k1))
    caps = budget // pd1
    k2 = _best_k2(a2, cc2, caps)
    f = np.asarray(f_step(m, a1, cc1, k1))
    g = np.asarray(g_token(a2, cc2, k2))
    hv = f * g
    pd = pd1 * k2
    i = _pick(k1, k2, hv, pd)
    best = BudgetPoint(int(k1[i]), int(k2[i]), float(hv[i]), int(pd[i]))
    token_only = BudgetPoint(1, int(k2[0]), float(hv[0]), int(pd[0]))
    j = _pick(k1, np.ones_like(k1), f, pd1)
    step_only = BudgetPoint(int(k1[j]), 1, float(f[j]), int(pd1[j]))

    economical = _leanest_near(k1, pd1, k2, f, a2, cc2, best.speedup * (1.0 - rtol))
    if economical is None:  # rounding made the shortcut ambiguous: search every point
        economical = _leanest_in(budget_landscape(p, budget, m),
                                 best.speedup * (1.0 - rtol))
    if economical.parallel_dim >= best.parallel_dim:
        economical = None
    t3 = theorem3_conditions(p, budget) if m == "sync" else None
    t4 = m == "async" and _theorem4_in_scope(p, budget)
    message = _explain(best, token_only, step_only, m, cc1)
    land = budget_landscape(p, budget, m) if landscape else None
    config = (base or SpecConfig()).replace(mode=m, k1=best.k1, k2=best.k2)
    return OptimizeResult(m, budget, p, best, token_only, step_only, t3, t4, message, land,
                          economical, config)


def _leanest_in(land: Landscape, threshold: float) -> BudgetPoint:
    """Least-budget point of a landscape with speedup >= threshold (ties: fewer steps)."""
    idx = np.flatnonzero(land.speedup >= threshold)
    e = int(idx[np.lexsort((land.k1[idx], land.parallel_dim[idx]))[0]])
    return BudgetPoint(int(land.k1[e]), int(land.k2[e]), float(land.speedup[e]),
                       int(land.parallel_dim[e]))


def _leanest_near(
    k1: np.ndarray,
    pd1: np.ndarray,
    best_k2: np.ndarray,
    f: np.ndarray,
    alpha2: float,
    c2: float,
    threshold: float,
) -> BudgetPoint | None:
    """:func:`_leanest_in` without the landscape, in O(M).

    g increases up to its optimum (Lemma 3), so for each k1 the leanest k2 reaching
    the threshold is the first k2 <= best_k2(k1) with f(k1)·g(k2) >= threshold: a
    binary search on the running maximum of g.  Returns None when floating-point
    rounding leaves the first such k2 in doubt; the caller then searches every point.
    """
    top = int(best_k2.max())
    g = np.asarray(g_token(alpha2, c2, np.arange(1, top + 1, dtype=np.int64)))
    run = np.maximum.accumulate(g)
    i = np.minimum(np.searchsorted(run, threshold / f, side="left"), best_k2 - 1)
    ok = f * g[i] >= threshold
    first = (i == 0) | (f * run[np.maximum(i - 1, 0)] < threshold)
    if not np.all(first[ok]) or np.any((~ok) & (f * run[best_k2 - 1] >= threshold)):
        return None
    k2 = i[ok] + 1
    pd = pd1[ok] * k2
    speed = f[ok] * g[i[ok]]
    e = int(np.lexsort((k1[ok], pd))[0])
    return BudgetPoint(int(k1[ok][e]), int(k2[e]), float(speed[e]), int(pd[e]))


def _explain(best: BudgetPoint, tok: BudgetPoint, step: BudgetPoint, mode: str, c1: float) -> str:
    reg = best.regime
    if reg == "hybrid":
        gain = best.speedup / max(tok.speedup, step.speedup)
        return (
            f"hybrid wins: {best.speedup:.3f}x beats token-only {tok.speedup:.3f}x and "
            f"step-only {step.speedup:.3f}x "
            f"({(gain - 1) * 100:.1f}% over the better single method)."
        )
    if reg == "token-only":
        return (
            f"token-only wins: spending budget on steps costs more than it gains "
            f"(best step-only {step.speedup:.3f}x)."
        )
    if reg == "step-only":
        extra = (
            f" async saturates at ceil(1/c1) = {async_knee(c1)} steps in flight."
            if mode == "async"
            else ""
        )
        return f"step-only wins: token speculation does not pay at this budget.{extra}"
    return "no speculation pays: every configuration is slower than target-only decoding."


@dataclass(frozen=True)
class MonteCarloPoint:
    """A configuration evaluated by simulation next to its closed form."""

    k1: int
    """Target steps in parallel."""
    k2: int
    """Target positions per step."""
    closed_form: float
    """h(k1, k2) from the closed forms."""
    simulated: float
    """The simulated speedup f_MC · g_MC."""
    stderr: float
    """Standard error of ``simulated`` (delta method over the two estimates)."""

    @property
    def z_score(self) -> float:
        """(simulated − closed form) / stderr."""
        return (self.simulated - self.closed_form) / self.stderr if self.stderr else 0.0


@dataclass(frozen=True)
class MonteCarloOptimizeResult:
    """Result of :func:`optimize_budget_mc`."""

    closed_form: OptimizeResult
    """The exact closed-form optimum the candidates came from."""
    best: MonteCarloPoint
    """The candidate with the highest simulated speedup."""
    candidates: tuple[MonteCarloPoint, ...]
    """Every simulated candidate, best closed form first."""
    agrees: bool
    """True when the simulated best is the closed-form optimum or statistically tied
    with it (within ``z`` standard errors of the difference)."""
    samples: int
    """Simulated stages per level per candidate."""
    seed: int = 0
    """The seed of the first candidate's simulations (candidate j uses seed + 2j, + 2j + 1)."""

    def to_dict(self) -> dict[str, Any]:
        """The simulated best and every candidate next to its closed form."""
        b = self.best
        return {
            "samples": self.samples,
            "seed": self.seed,
            "agrees": self.agrees,
            "best": {"k1": b.k1, "k2": b.k2, "simulated": b.simulated, "stderr": b.stderr},
            "candidates": [
                {"k1": c.k1, "k2": c.k2, "closed_form": c.closed_form,
                 "simulated": c.simulated, "stderr": c.stderr, "z": c.z_score}
                for c in self.candidates
            ],
        }


def optimize_budget_mc(
    params: Parameters,
    M: int,
    mode: str = "async",
    *,
    base: SpecConfig | None = None,
    samples: int = 200_000,
    seed: int = 0,
    candidates: int = 6,
    z: float = 4.0,
) -> MonteCarloOptimizeResult:
    """Solve the budget problem by Monte-Carlo and hold it against the closed form.

    The closed-form landscape nominates the ``candidates`` best points plus the
    best token-only and step-only points; each is then simulated as the papers'
    processes (the step process — sync cycles or async stages — and token-level
    SD, each ``samples`` long, seeded), and the simulated speedup f_MC · g_MC
    decides.  Use :func:`specmodel.montecarlo.hybrid.simulate_hybrid` for the
    finite-step process that the product form ignores.
    """
    from specmodel.montecarlo.step import simulate_async, simulate_sync
    from specmodel.montecarlo.token import simulate_token_sd
    from specmodel.validation import check_positive_int, check_samples

    n = check_samples("samples", samples)
    top = check_positive_int("candidates", candidates)
    res = optimize_budget(params, M, mode, base=base, landscape=True)
    land = res.landscape
    assert land is not None
    order = np.argsort(-land.speedup, kind="stable")
    picks: list[tuple[int, int]] = []
    for i in order:
        p = (int(land.k1[i]), int(land.k2[i]))
        if p not in picks:
            picks.append(p)
        if len(picks) >= top:
            break
    for p in ((res.token_only.k1, res.token_only.k2), (res.step_only.k1, res.step_only.k2)):
        if p not in picks:
            picks.append(p)
    step_sim = simulate_sync if res.mode == "sync" else simulate_async
    points = []
    for j, (k1, k2) in enumerate(picks):
        f = step_sim(res.params.alpha1, res.params.c1, k1, n, seed=seed + 2 * j)
        g = simulate_token_sd(res.params.alpha2, res.params.c2, k2, n, seed=seed + 2 * j + 1)
        value = f.mean * g.mean
        se = value * float(np.hypot(f.stderr / f.mean, g.stderr / g.mean))
        exact = float(land.speedup[(land.k1 == k1) & (land.k2 == k2)][0])
        points.append(MonteCarloPoint(k1, k2, exact, value, se))
    best = max(points, key=lambda p: p.simulated)
    opt = points[0]
    diff_se = float(np.hypot(best.stderr, opt.stderr))
    agrees = best is opt or best.simulated - opt.simulated <= z * diff_se
    return MonteCarloOptimizeResult(res, best, tuple(points), agrees, n, seed)
