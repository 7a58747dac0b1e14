"""Pricing parallelism with a measured batch cost curve T(b) (beyond the papers).

The papers assume a batch of width b <= M costs what a single sequence costs.
On real hardware T(b) grows once the device saturates (on a CPU it grows from
the start).  Given T(b) measured by the profiler, this module prices each
configuration and says where speculation stops paying.

Model (units: one target forward pass at the serving batch size B, T(B)):

* the target verifies ``w`` positions per request per forward pass, so one
  pass costs ``τ_B(w) = T(B·w) / T(B)``;
* a token-level iteration with k2 positions costs ``c2 (k2 − 1) + τ_B(w)``
  (the draft's own cost is taken as flat, c2 per token) and emits
  ``E_2 = (1 − α2^k2)/(1 − α2)`` tokens;
* a target step therefore takes ``t_T = (c2 (k2 − 1) + τ_B(w)) / E_2`` and a
  draft step ``t_D = c1 (1 + c2 (k2 − 1)) / E_2`` of the target-only step time
  (the draft runs its own token-level speculation, as the paper assumes);
* sync: ``h = E_1 / ((k1 − 1) t_D + t_T)`` with ``E_1 = (1 − α1^k1)/(1 − α1)``
  and ``w = k1 k2``;
* async: ``h = f_async(α1, t_D / t_T, k1) / t_T`` with
  ``w = min(⌈t_T / t_D⌉, k1) · k2``, found as the fixed point of that relation
  (τ grows with w, which lowers t_D / t_T and can raise the knee).

With a flat curve (τ ≡ 1) every formula reduces exactly to f(k1)·g(k2).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from specmodel.closedform.geometric import geometric_sum
from specmodel.closedform.step_level import check_async_c1, check_mode, f_async_of, knee_of
from specmodel.parameters import Parameters
from specmodel.validation import (
    MAX_SEARCH_BUDGET,
    check_budget,
    check_cost,
    check_positive_int,
)

__all__ = [
    "SPEEDUP_DEFINITION",
    "BatchCostCurve",
    "BatchSizeDecision",
    "CostAwarePoint",
    "cost_aware_multibranch_speedup",
    "cost_aware_speedup",
    "PricedBudget",
    "ServingPoint",
    "optimize_cost_aware",
    "price_budget",
    "serving_point",
    "speculation_by_batch_size",
]

SPEEDUP_DEFINITION = (
    "speedup = a request's time per generated token, target alone ÷ with speculation, "
    "at N concurrent requests (= the ratio of tokens/s at N)"
)
"""What every speedup of this module (and of ``specmodel optimize``) means."""


@dataclass(frozen=True)
class BatchCostCurve:
    """Measured time of one target forward pass as a function of batch width."""

    widths: tuple[int, ...]
    """Batch widths b at which T was measured, strictly increasing, starting anywhere >= 1."""
    times: tuple[float, ...]
    """T(b) for each width (any time unit), non-decreasing within measurement noise."""
    seconds_per_step: bool = False
    """True when ``times`` are absolute seconds per decode step (a calibration's
    ``batch_cost`` in unit 's/step'): then :func:`serving_point` gives ms/token and
    tokens/s; False for relative or unknown units."""

    @classmethod
    def from_points(
        cls, points: Sequence[tuple[int, float]], *, seconds_per_step: bool = False
    ) -> BatchCostCurve:
        """Build from (b, T(b)) pairs; validates widths and times."""
        if len(points) < 1:
            raise ValueError("points must hold at least one (width, time) pair")
        pts = sorted((check_positive_int("width", b), check_cost("time", t, positive=True))
                     for b, t in points)
        widths = tuple(p[0] for p in pts)
        if len(set(widths)) != len(widths):
            raise ValueError(f"points must have distinct widths, got {widths}")
        return cls(widths, tuple(p[1] for p in pts), seconds_per_step)

    @classmethod
    def flat(cls) -> BatchCostCurve:
        """The papers' assumption: every width costs the same."""
        return cls((1,), (1.0,))

    def time(self, b: float | np.ndarray) -> float | np.ndarray:
        """T(b) by linear interpolation; constant below the first point, linear
        extrapolation (never decreasing) from the last two points above the last."""
        x = np.asarray(b, dtype=np.float64)
        w = np.asarray(self.widths, dtype=np.float64)
        t = np.maximum.accumulate(np.asarray(self.times, dtype=np.float64))
        out = np.interp(x, w, t)
        if w.size >= 2:
            slope = max(0.0, (t[-1] - t[-2]) / (w[-1] - w[-2]))
            out = np.where(x > w[-1], t[-1] + slope * (x - w[-1]), out)
        return float(out) if out.ndim == 0 else out

    def relative(self, serving_batch: int, width: float | np.ndarray) -> float | np.ndarray:
        """τ_B(w) = T(B·w) / T(B)."""
        bb = check_positive_int("serving_batch", serving_batch)
        base = float(self.time(bb))
        out = np.asarray(self.time(np.asarray(width, dtype=np.float64) * bb)) / base
        return float(out) if out.ndim == 0 else out

    @property
    def max_width(self) -> int:
        """The widest measured batch."""
        return self.widths[-1]


def cost_aware_speedup(
    params: Parameters,
    mode: str,
    k1: int,
    k2: int,
    curve: BatchCostCurve,
    serving_batch: int = 1,
) -> tuple[float, int]:
    """Speedup of (k1, k2) priced by ``curve`` at ``serving_batch`` requests.

    Returns ``(speedup, width)`` where width is the positions per request the
    target verifies per pass (ParallelDim_f · k2).
    """
    p = Parameters.coerce(params)
    m = check_mode(mode)
    a1, a2, cc2 = p.alpha1, p.alpha2, p.c2
    cc1 = check_async_c1(p.c1) if m == "async" else p.c1
    kk1 = check_positive_int("k1", k1)
    kk2 = check_positive_int("k2", k2)
    bb = check_positive_int("serving_batch", serving_batch)
    speed, width = _priced(m, a1, cc1, a2, cc2, np.array([kk1]), np.array([kk2]), curve, bb)
    return float(speed[0]), int(width[0])


def cost_aware_multibranch_speedup(
    params: Parameters,
    k1: int,
    k2: int,
    width: int,
    curve: BatchCostCurve,
    serving_batch: int = 1,
    *,
    branch_alpha: float | None = None,
    draft_batch_cost: float = 0.0,
) -> tuple[float, int]:
    """Sync multi-branch drafting (width W, depth k1 − 1) priced by ``curve``.

    The cycle of :func:`~specmodel.closedform.step_level.f_sync_multibranch` (its
    acceptance, draft levels and ``draft_batch_cost`` β) with token-level
    speculation inside every step as in this module: the draft's levels take
    ``draft_cost · (1 + c2 (k2 − 1)) / E_2`` and the target expands all
    Σ_{j<k1} W^j prefixes, k2 positions each, in one pass of
    ``(c2 (k2 − 1) + τ_B(Σ W^j · k2)) / E_2``.  A flat curve gives exactly
    f_sync_multibranch · g_token; W = 1 gives :func:`cost_aware_speedup` in sync
    mode.  Returns ``(speedup, width)`` with width the positions per request the
    target verifies per pass.
    """
    from specmodel.closedform.step_level import f_sync_multibranch

    p = Parameters.coerce(params)
    a2, cc2 = p.alpha2, p.c2
    kk2 = check_positive_int("k2", k2)
    bb = check_positive_int("serving_batch", serving_batch)
    mb = f_sync_multibranch(p.alpha1, p.c1, k1, width, branch_alpha=branch_alpha,
                            draft_batch_cost=draft_batch_cost)
    e2 = float(geometric_sum(a2, kk2))
    draft_tok = cc2 * (kk2 - 1)
    positions = mb.parallel_dim * kk2
    t_target = (draft_tok + float(curve.relative(bb, positions))) / e2
    t_draft = mb.draft_cost * (1.0 + draft_tok) / e2
    return mb.expected_steps / (t_draft + t_target), positions


def _priced(
    m: str, a1: float, c1: float, a2: float, c2: float, k1: np.ndarray, k2: np.ndarray,
    curve: BatchCostCurve, serving_batch: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Priced speedup and width of every (k1[i], k2[i]), on arguments already validated.

    Vectorized over the points; the async fixed point is iterated for all points
    at once, each point stopping when its width repeats or after k1 + 1 rounds.
    """
    k1 = np.asarray(k1, dtype=np.int64)
    k2 = np.asarray(k2, dtype=np.int64)
    e2 = np.asarray(geometric_sum(a2, k2), dtype=np.float64)
    draft_tok = c2 * (k2 - 1)
    t_draft = c1 * (1.0 + draft_tok) / e2

    def target_time(width: np.ndarray, idx: np.ndarray | slice) -> np.ndarray:
        rel = np.asarray(curve.relative(serving_batch, width), dtype=np.float64)
        return (draft_tok[idx] + rel) / e2[idx]

    if m == "sync":
        width = k1 * k2
        t_target = target_time(width, slice(None))
        return np.asarray(geometric_sum(a1, k1)) / ((k1 - 1) * t_draft + t_target), width
    width = np.minimum(knee_of(np.asarray(c1)), k1) * k2
    t_target = np.empty(k1.size, dtype=np.float64)
    c_eff = np.empty(k1.size, dtype=np.float64)
    active = np.arange(k1.size)
    rounds = 0
    while active.size:
        tt = target_time(width[active], active)
        ce = t_draft[active] / tt
        t_target[active], c_eff[active] = tt, ce
        new = np.minimum(knee_of(ce), k1[active]) * k2[active]
        moved = new != width[active]
        width[active[moved]] = new[moved]
        rounds += 1
        active = active[moved & (rounds < k1[active] + 1)]
    return f_async_of(a1, c_eff, k1) / t_target, width


def _first_best_index(speeds: np.ndarray) -> int:
    """Index of the highest speedup; near-ties (1e-12) keep the earlier point.

    The same choice as scanning in order and replacing the best only when a point
    beats it by more than 1e-12 relative: only a point above every earlier one can
    do that, so the scan runs over those running maxima alone.
    """
    v = np.asarray(speeds, dtype=np.float64)
    if v.size == 0:
        raise ValueError("no configuration to choose from")
    prev_max = np.concatenate(([-np.inf], np.maximum.accumulate(v)[:-1]))
    best = 0
    for i in np.flatnonzero(v > prev_max).tolist():
        if v[i] > v[best] * (1 + 1e-12):
            best = i
    return best


@dataclass(frozen=True)
class CostAwarePoint:
    """The best configuration once batch cost is priced in."""

    k1: int
    """Target steps in parallel."""
    k2: int
    """Target positions per step."""
    speedup: float
    """Predicted speedup over target-only decoding at the same serving batch."""
    width: int
    """Positions per request verified per target pass."""
    flat_speedup: float
    """What the flat-budget model (f·g) predicts for the same point."""

    def to_dict(self) -> dict[str, Any]:
        """``{k1, k2, speedup, width, flat_speedup}``."""
        return asdict(self)


def optimize_cost_aware(
    params: Parameters,
    M: int,
    mode: str,
    curve: BatchCostCurve,
    serving_batch: int = 1,
) -> CostAwarePoint:
    """Maximise the priced speedup over ParallelDim_f(k1)·k2 <= M (exhaustive over the
    O(M log M) feasible points, vectorized)."""
    from specmodel.closedform.hybrid import h  # local: keeps this module's import light
    from specmodel.optimize.budget import budget_landscape, check_parameters

    p, budget, m = check_parameters(params, M, mode)
    a1, cc1, a2, cc2 = p.alpha1, p.c1, p.alpha2, p.c2
    bb = check_positive_int("serving_batch", serving_batch)
    land = budget_landscape(p, budget, m)
    speeds, widths = _priced(m, a1, cc1, a2, cc2, land.k1, land.k2, curve, bb)
    i = _first_best_index(speeds)
    k1, k2 = int(land.k1[i]), int(land.k2[i])
    return CostAwarePoint(k1, k2, float(speeds[i]), int(widths[i]),
                          float(h(m, a1, cc1, a2, cc2, k1, k2)))


@dataclass(frozen=True)
class BatchSizeDecision:
    """What to run at one serving batch size."""

    serving_batch: int
    """Concurrent requests B."""
    best: CostAwarePoint
    """Best (k1, k2) at this batch size."""
    token_only: CostAwarePoint
    """Best token-level-only point (what vLLM's num_speculative_tokens controls)."""

    @property
    def pays(self) -> bool:
        """True when some speculation beats target-only decoding at this batch size."""
        return self.best.speedup > 1.0 + 1e-9 and (self.best.k1, self.best.k2) != (1, 1)

    def to_dict(self) -> dict[str, Any]:
        """``{serving_batch, k1, k2, speedup, pays, token_only_k2}``."""
        return {"serving_batch": self.serving_batch, "k1": self.best.k1, "k2": self.best.k2,
                "speedup": self.best.speedup, "pays": self.pays,
                "token_only_k2": self.token_only.k2}


def speculation_by_batch_size(
    params: Parameters,
    M: int,
    mode: str,
    curve: BatchCostCurve,
    batch_sizes: Sequence[int] | None = None,
) -> list[BatchSizeDecision]:
    """Best configuration per serving batch size; where speculation stops paying.

    ``batch_sizes`` defaults to powers of two up to the widest measured batch.
    """
    p = Parameters.coerce(params)
    if batch_sizes is None:
        top = max(1, curve.max_width)
        batch_sizes = [2**i for i in range(int(math.log2(top)) + 1)]
    out = []
    for b in batch_sizes:
        bb = check_positive_int("batch_sizes", b)
        best = optimize_cost_aware(p, M, mode, curve, bb)
        tok = _best_token_only(p.alpha2, p.c2, M, curve, bb)
        out.append(BatchSizeDecision(bb, best, tok))
    return out


def _best_token_only(
    alpha2: float, c2: float, M: int, curve: BatchCostCurve, serving_batch: int
) -> CostAwarePoint:
    from specmodel.closedform.token_level import g_token

    k2s = np.arange(1, check_budget("M", M, maximum=MAX_SEARCH_BUDGET) + 1, dtype=np.int64)
    e2 = np.asarray(geometric_sum(alpha2, k2s), dtype=np.float64)
    rel = np.asarray(curve.relative(serving_batch, k2s), dtype=np.float64)
    speeds = e2 / (check_cost("c2", c2) * (k2s - 1) + rel)
    i = _first_best_index(speeds)
    k2 = int(k2s[i])
    return CostAwarePoint(1, k2, float(speeds[i]), k2, float(g_token(alpha2, c2, k2)))


@dataclass(frozen=True)
class ServingPoint:
    """A speedup in serving units, from a curve measured in seconds per decode step.

    At concurrency N the target alone emits one token per request every T(N) seconds;
    speculation with speedup s (at that N) emits s times as many in the same time.
    """

    concurrency: int
    """Requests served together, N (the serving batch)."""
    speedup: float
    """Priced speedup at this concurrency (see :data:`SPEEDUP_DEFINITION`)."""
    step_seconds: float
    """T(N): seconds per decode step of the target alone at N requests (measured)."""
    ms_per_token: float
    """Milliseconds per generated token for one request with speculation: 1000·T(N)/s."""
    baseline_ms_per_token: float
    """Milliseconds per generated token for one request, target alone: 1000·T(N)."""
    tokens_per_second: float
    """Generated tokens per second over all N requests with speculation: N·s/T(N)."""
    baseline_tokens_per_second: float
    """Generated tokens per second over all N requests, target alone: N/T(N)."""

    def to_dict(self) -> dict[str, Any]:
        """Every field by name."""
        return asdict(self)


def serving_point(curve: BatchCostCurve, speedup: float, concurrency: int = 1) -> ServingPoint:
    """``speedup`` at ``concurrency`` requests in ms/token and tokens/s.

    Needs ``curve.seconds_per_step`` (absolute times); raises ``ValueError`` otherwise.
    """
    if not curve.seconds_per_step:
        raise ValueError("the batch cost curve has no absolute times (seconds per decode step)")
    n = check_positive_int("concurrency", concurrency)
    s = check_cost("speedup", speedup, positive=True)
    step = float(curve.time(n))
    return ServingPoint(n, s, step, 1e3 * step / s, 1e3 * step, n * s / step, n / step)


def _sizes(sizes: Sequence[int]) -> str:
    return ", ".join(str(b) for b in sizes)


@dataclass(frozen=True)
class PricedBudget:
    """The budget problem priced by a measured T(b): the best point at the serving
    concurrency and the decision at every serving batch size (what ``optimize`` shows and
    ``export`` writes)."""

    best: CostAwarePoint
    """The priced optimum at ``serving_batch`` concurrent requests."""
    by_batch_size: tuple[BatchSizeDecision, ...]
    """The priced optimum at each serving batch size (increasing)."""
    serving_batch: int = 1
    """The concurrency ``best`` was optimized for."""
    serving: ServingPoint | None = None
    """``best`` in ms/token and tokens/s (None when the curve's times are not absolute)."""
    compared: CostAwarePoint | None = None
    """A point to compare against (the flat-budget optimum), priced at ``serving_batch``."""
    serving_by_batch_size: tuple[ServingPoint, ...] = ()
    """Each decision of ``by_batch_size`` in ms/token and tokens/s (empty when the curve's
    times are not absolute)."""

    @property
    def pays_at(self) -> tuple[int, ...]:
        """The serving batch sizes at which some speculation pays."""
        return tuple(d.serving_batch for d in self.by_batch_size if d.pays)

    @property
    def does_not_pay_at(self) -> tuple[int, ...]:
        """The serving batch sizes at which nothing beats target-only decoding."""
        return tuple(d.serving_batch for d in self.by_batch_size if not d.pays)

    @property
    def stops_paying_at(self) -> int | None:
        """The smallest serving batch size from which speculation pays at no larger batch
        size of the table (None: it pays at the largest)."""
        out = None
        for d in reversed(self.by_batch_size):
            if d.pays:
                break
            out = d.serving_batch
        return out

    def pays_summary(self) -> str:
        """One sentence that agrees with the per-batch-size table."""
        on, off = self.pays_at, self.does_not_pay_at
        if not off:
            return f"Speculation pays at every batch size of the table ({_sizes(on)})."
        if not on:
            return f"Speculation pays at no batch size of the table ({_sizes(off)})."
        text = f"Speculation pays at batch sizes {_sizes(on)}, not at {_sizes(off)}"
        stop = self.stops_paying_at
        if stop is not None:
            text += f"; from a batch of {stop} requests on it no longer pays"
        return text + "."

    def to_dict(self) -> dict[str, Any]:
        """``{best, serving_batch, serving, compared, by_batch_size, pays_at,
        does_not_pay_at, stops_paying_at}``."""
        return {"best": self.best.to_dict(),
                "serving_batch": self.serving_batch,
                "serving": None if self.serving is None else self.serving.to_dict(),
                "compared": None if self.compared is None else self.compared.to_dict(),
                "by_batch_size": [
                    {**d.to_dict(), **({} if not self.serving_by_batch_size else {
                        "ms_per_token": sv.ms_per_token,
                        "tokens_per_second": sv.tokens_per_second})}
                    for d, sv in zip(self.by_batch_size,
                                     self.serving_by_batch_size or self.by_batch_size,
                                     strict=True)],
                "pays_at": list(self.pays_at),
                "does_not_pay_at": list(self.does_not_pay_at),
                "stops_paying_at": self.stops_paying_at}


def price_budget(
    params: Parameters,
    M: int,
    mode: str,
    curve: BatchCostCurve,
    serving_batch: int = 1,
    *,
    compare: tuple[int, int] | None = None,
) -> PricedBudget:
    """:func:`optimize_cost_aware` at ``serving_batch`` requests, the decision at every
    batch size (powers of two up to the widest measured batch, plus ``serving_batch``),
    the optimum in serving units when the curve has absolute times, and ``compare``
    (a (k1, k2), e.g. the flat-budget optimum) priced at ``serving_batch``."""
    bb = check_positive_int("serving_batch", serving_batch)
    top = max(1, curve.max_width)
    sizes = sorted({2**i for i in range(int(math.log2(top)) + 1)} | {bb})
    decisions = tuple(speculation_by_batch_size(params, M, mode, curve, sizes))
    best = next(d.best for d in decisions if d.serving_batch == bb)
    serving = serving_point(curve, best.speedup, bb) if curve.seconds_per_step else None
    table = tuple(serving_point(curve, d.best.speedup, d.serving_batch) for d in decisions
                  ) if curve.seconds_per_step else ()
    compared = None
    if compare is not None:
        from specmodel.closedform.hybrid import h

        p = Parameters.coerce(params)
        speed, width = cost_aware_speedup(p, mode, compare[0], compare[1], curve, bb)
        compared = CostAwarePoint(compare[0], compare[1], speed, width,
                                  float(h(mode, p.alpha1, p.c1, p.alpha2, p.c2, *compare)))
    return PricedBudget(best, decisions, bb, serving, compared, table)
