"""Compare method families under one parallelism budget and say which wins.

Every family is priced the same way: the target's widest verification (the
positions it processes in one forward pass) must fit in the budget M, and a
pass of any width up to M costs one target step (the papers' flat budget; use
:mod:`specmodel.optimize.pricing` to price a measured T(b)).

* token-only:   k2 positions, ``g(k2)``, width k2.
* step-only:    k1 steps, ``f(k1)``, width ParallelDim_f(k1) (sync and async).
* hybrid:       ``f(k1)·g(k2)``, width ParallelDim_f(k1)·k2 (sync and async).
* cascade:      the vertical cascade (Theorem 4.3): the target reviews the block
  that n calls of the middle draft produce, each call drafting k tokens with a
  cheaper draft; its widest pass is ``n(k + 1) + 1`` positions.  Needs the
  middle draft's acceptance by the cheap draft (α′) and both cost ratios.
* lookahead decoding: window W, n-gram size N, guess set G; a step feeds
  ``(W + G)(N − 1)`` tokens to the target (:mod:`specmodel.closedform.lookahead_decoding`).
  Needs the acceptance rate of one guessed token.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from specmodel.optimize.budget import optimize_budget
from specmodel.parameters import Parameters
from specmodel.validation import check_budget, check_cost, check_probability

__all__ = [
    "CascadeParams",
    "LookaheadParams",
    "MethodResult",
    "MethodComparison",
    "compare_methods",
]


@dataclass(frozen=True)
class CascadeParams:
    """What a vertical cascade needs beyond the token-level numbers."""

    alpha_prime: float
    """Acceptance of the cheapest draft's tokens by the middle draft, in (0, 1)."""
    c_d2: float
    """Cost of one cheapest-draft token in target passes (>= 0)."""


@dataclass(frozen=True)
class LookaheadParams:
    """What lookahead decoding needs."""

    alpha: float
    """Acceptance of one guessed token by the target, in (0, 1)."""
    f: float = 3.106
    """Steps per good speculation (Eq. 7; 3.106 is the paper's Fig. 4(b) value)."""


@dataclass(frozen=True)
class MethodResult:
    """The best configuration of one method family under the budget."""

    method: str
    """Family name, e.g. 'hybrid (async)'."""
    speedup: float
    """Predicted speedup over target-only decoding."""
    width: int
    """Positions the target processes in its widest pass (<= budget)."""
    settings: dict[str, int]
    """The chosen integer settings (k1, k2, n, k, W, N, G …)."""


@dataclass(frozen=True)
class MethodComparison:
    """All families under one budget, best first."""

    budget: int
    """The parallelism budget M."""
    results: tuple[MethodResult, ...]
    """Best configuration per family, sorted by speedup (highest first)."""
    skipped: dict[str, str] = field(default_factory=dict)
    """Families not evaluated and why (e.g. missing parameters)."""

    @property
    def winner(self) -> MethodResult:
        """The family with the highest speedup."""
        return self.results[0]

    def to_dict(self) -> dict[str, Any]:
        """``{budget, winner, results, skipped}``."""
        return {"budget": self.budget, "winner": self.winner.method,
                "results": [asdict(r) for r in self.results], "skipped": dict(self.skipped)}


def _best_cascade(alpha2: float, c2: float, p: CascadeParams, budget: int) -> MethodResult | None:
    from specmodel.closedform.cascade import ewif_vertical

    best: MethodResult | None = None
    for n in range(1, budget):
        for k in range(1, budget):
            width = n * (k + 1) + 1
            if width > budget:
                break
            s = float(ewif_vertical(alpha2, p.alpha_prime, c2, p.c_d2, k, n))
            if best is None or s > best.speedup * (1 + 1e-12):
                best = MethodResult("cascade (vertical)", s, width, {"n": n, "k": k})
    return best


def compare_methods(
    params: Parameters,
    M: int,
    *,
    cascade: CascadeParams | None = None,
    lookahead: LookaheadParams | None = None,
) -> MethodComparison:
    """Best configuration of every method family under budget M, and the winner."""
    p = Parameters.coerce(params)
    check_cost("c1", p.c1, positive=True)
    a2, cc2 = p.alpha2, p.c2
    budget = check_budget("M", M)
    results: list[MethodResult] = []
    skipped: dict[str, str] = {}
    for mode in ("sync", "async"):
        res = optimize_budget(p, budget, mode)
        results.append(
            MethodResult(
                f"hybrid ({mode})", res.speedup, res.best.parallel_dim, {"k1": res.k1, "k2": res.k2}
            )
        )
        results.append(
            MethodResult(
                f"step-only ({mode})",
                res.step_only.speedup,
                res.step_only.parallel_dim,
                {"k1": res.step_only.k1},
            )
        )
        if mode == "sync":
            results.append(
                MethodResult(
                    "token-only",
                    res.token_only.speedup,
                    res.token_only.parallel_dim,
                    {"k2": res.token_only.k2},
                )
            )
    if cascade is None:
        skipped["cascade (vertical)"] = "needs --alpha-prime and --c-d2 (a second, cheaper draft)"
    else:
        cp = CascadeParams(
            check_probability("alpha_prime", cascade.alpha_prime), check_cost("c_d2", cascade.c_d2)
        )
        best = _best_cascade(a2, cc2, cp, budget)
        if best is None:
            skipped["cascade (vertical)"] = f"no cascade fits in M = {budget} (needs M >= 3)"
        else:
            results.append(best)
    if lookahead is None:
        skipped["lookahead decoding"] = "needs --alpha-lookahead (acceptance of a guessed token)"
    else:
        from specmodel.closedform.lookahead_decoding import best_lookahead_config

        ld = best_lookahead_config(
            check_probability("alpha_lookahead", lookahead.alpha), budget, lookahead.f
        )
        if ld is None:
            skipped["lookahead decoding"] = f"no lookahead configuration fits in M = {budget}"
        else:
            results.append(
                MethodResult(
                    "lookahead decoding",
                    ld.speedup,
                    ld.tokens_per_step,
                    {"W": ld.window, "N": ld.ngram, "G": ld.guesses},
                )
            )
    results.sort(key=lambda r: -r.speedup)
    return MethodComparison(budget, tuple(results), skipped)
