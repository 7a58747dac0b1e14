"""The estimators that turn measured counts and times into the model's numbers.

Pure functions of counts (no models, no I/O), used by the profiler's phases:

* :func:`wilson` — the Wilson score interval of a binomial proportion;
* :func:`jeffreys_rate` — the smoothed rate (x + ½)/(n + 1), always inside (0, 1),
  which the calibration stores so that 0 or n successes still give a usable α;
* :func:`fit_iid_alpha` — the i.i.d. acceptance α whose truncated geometric mean
  α(1 − α^γ)/(1 − α) equals the mean accepted draft tokens per draft;
* :func:`conditional_acceptance` — per-position conditional acceptance from
  marginal per-position counts (position i is counted when 0..i were accepted);
* :func:`solve_effective_c2` — the draft cost c2 for which ``g_token(α2, c2, γ + 1)``
  equals a measured speedup;
* :func:`conformal_bound` (at rank :func:`conformal_rank`) — the split-conformal bound
  of a set of residuals, which a new residual exchangeable with them exceeds with
  probability at most 1 − level (the track-record bands of the benchmarks), and
  :func:`track_interval`, the band such a bound in log puts around a predicted speedup;
* :func:`summarize_counters` — all of the above from spec-decode counters
  (vLLM's, or those of :func:`profiler.ngram_replay.replay_counters`), as a
  :class:`TokenSummary`.

The ratio-of-sums estimator with its delta-method standard error (c1 = Σ draft
time / Σ target time) is :func:`specmodel.montecarlo.estimate.ratio_estimate`,
shared with the Monte-Carlo simulators.  Every function rejects what it cannot
handle with a ValueError naming the parameter and the allowed range.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from specmodel.validation import (
    check_nonnegative_int,
    check_positive_int,
    check_positive_real,
    check_probability,
)

__all__ = [
    "TokenSummary",
    "clustered_rate",
    "conditional_acceptance",
    "conformal_bound",
    "conformal_rank",
    "effective_samples",
    "fit_iid_alpha",
    "jeffreys_rate",
    "solve_effective_c2",
    "summarize_counters",
    "track_interval",
    "wilson",
]


def _check_count(successes: object, n: object) -> tuple[int, int]:
    nn = check_positive_int("n", n)
    x = check_nonnegative_int("successes", successes)
    if x > nn:
        raise ValueError(f"successes must lie in [0, n] = [0, {nn}], got {x}")
    return x, nn


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion ``successes / n``, clipped to [0, 1].

    ``n`` >= 1, ``successes`` in [0, n], ``z`` > 0 (1.96: a 95 % interval).
    """
    x, nn = _check_count(successes, n)
    zz = check_positive_real("z", z)
    p = x / nn
    den = 1 + zz * zz / nn
    centre = (p + zz * zz / (2 * nn)) / den
    half = zz * math.sqrt(p * (1 - p) / nn + zz * zz / (4 * nn * nn)) / den
    # At 0 or n successes the exact bound is 0 or 1 (rounding would leave 1e-17 off it).
    lo = 0.0 if x == 0 else max(0.0, centre - half)
    hi = 1.0 if x == nn else min(1.0, centre + half)
    return lo, hi


def clustered_rate(successes: Sequence[int], trials: Sequence[int]) -> tuple[float, float]:
    """(rate, stderr) of the pooled rate Σ successes / Σ trials over clusters (e.g. the
    step verdicts of each problem) whose trials need not be independent: the ratio
    estimator's cluster-robust standard error, sqrt(Σ (k_i − r·n_i)² / (m (m − 1) n̄²))
    over the m clusters with n̄ trials on average.  Needs at least two clusters; a
    cluster with no trials counts as none."""
    if len(successes) != len(trials):
        raise ValueError(f"successes and trials must have one entry per cluster, got "
                         f"{len(successes)} and {len(trials)}")
    pairs = [_check_count(k, n) for k, n in zip(successes, trials, strict=True) if n != 0]
    m = len(pairs)
    if m < 2:
        raise ValueError(f"trials must hold at least 2 clusters with trials, got {m}")
    total = sum(n for _, n in pairs)
    rate = sum(k for k, _ in pairs) / total
    mean_n = total / m
    var = sum((k - rate * n) ** 2 for k, n in pairs) / (m * (m - 1) * mean_n * mean_n)
    return rate, math.sqrt(var)


def effective_samples(rate: float, stderr: float, n: int) -> int:
    """How many independent trials a binomial rate ``rate`` would need to have standard
    error ``stderr`` — rate (1 − rate) / stderr², rounded, between 1 and ``n`` (the trials
    actually made: clustering never claims more certainty than independence); ``n`` when
    the rate is 0 or 1 or ``stderr`` is 0 (nothing to scale)."""
    nn = check_positive_int("n", n)
    if not 0 <= rate <= 1:
        raise ValueError(f"rate must lie in [0, 1], got {rate}")
    if not (stderr >= 0 and math.isfinite(stderr)):
        raise ValueError(f"stderr must be a finite number >= 0, got {stderr}")
    var = rate * (1 - rate)
    if var == 0 or stderr == 0:
        return nn
    return max(1, min(nn, round(var / (stderr * stderr))))


def conformal_rank(n: int, level: float = 0.95) -> int:
    """The rank ceil(level·(n + 1)) of the split-conformal bound among ``n`` residuals
    (:func:`conformal_bound`); the bound exists where it is at most ``n``."""
    nn = check_nonnegative_int("n", n)
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    return math.ceil(level * (nn + 1))


def conformal_bound(residuals: Sequence[float], level: float = 0.95) -> float:
    """The split-conformal bound of ``residuals``: their ``conformal_rank``-th smallest
    (:func:`conformal_rank`), which a new residual exchangeable with them exceeds with
    probability at most 1 − ``level``.  Raises ValueError for a level outside (0, 1), a
    residual that is not finite, or fewer residuals than the level needs."""
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    values = [float(r) for r in residuals]
    if not all(math.isfinite(r) for r in values):
        raise ValueError("residuals must be finite numbers")
    n = len(values)
    k = conformal_rank(n, level)
    if k > n:
        least = math.ceil(level / (1 - level))  # the rank's own test decides an edge
        if least > 1 and conformal_rank(least - 1, level) <= least - 1:
            least -= 1
        raise ValueError(f"{n} residuals are too few for a {level:.0%} bound (it needs at "
                         f"least {least})")
    return sorted(values)[k - 1]


def track_interval(point: float, quantile_log: float) -> list[float]:
    """The band a bound on |log(measured / predicted)| (``quantile_log``, e.g. a
    :func:`conformal_bound`) puts around a predicted ``point``: ``point`` times and over
    ``exp(quantile_log)``."""
    check_positive_real("point", point)
    if not (quantile_log >= 0 and math.isfinite(quantile_log)):
        raise ValueError(f"quantile_log must be a finite number >= 0, got {quantile_log}")
    return [point * math.exp(-quantile_log), point * math.exp(quantile_log)]


def jeffreys_rate(successes: int, n: int) -> float:
    """The smoothed rate (successes + ½)/(n + 1): inside (0, 1) even for 0 or n successes."""
    x, nn = _check_count(successes, n)
    return (x + 0.5) / (nn + 1)


def fit_iid_alpha(mean_accepted: float, gamma: int) -> float:
    """The α whose truncated geometric mean α(1 − α^γ)/(1 − α) equals ``mean_accepted``.

    ``gamma`` >= 1 draft tokens per draft; ``mean_accepted`` in (0, γ).
    """
    g = check_positive_int("gamma", gamma)
    m = check_positive_real("mean_accepted", mean_accepted)
    if not m < g:
        raise ValueError(f"mean_accepted must lie in (0, {g}), got {mean_accepted}")
    from specmodel.closedform.solve import bisect_boundary
    from specmodel.closedform.token_level import expected_accepted_drafts

    return bisect_boundary(lambda a: expected_accepted_drafts(a, g) < m, 1e-12, 1 - 1e-12,
                           rtol=0.0)


def conditional_acceptance(drafts: int, accepted_per_position: Sequence[int]) -> list[float]:
    """Conditional acceptance ``count[i] / count[i − 1]`` (``count[−1]`` = ``drafts``) from
    marginal per-position counts; a position after one never accepted gets 0.

    ``drafts`` >= 1; the counts are integers with drafts >= count[0] >= count[1] >= … >= 0.
    """
    d = check_positive_int("drafts", drafts)
    counts = [check_nonnegative_int(f"accepted_per_position[{i}]", c)
              for i, c in enumerate(accepted_per_position)]
    prev = [d, *counts[:-1]]
    for i, (c, p) in enumerate(zip(counts, prev, strict=True)):
        if c > p:
            raise ValueError(f"accepted_per_position[{i}] must lie in [0, {p}] (marginal counts "
                             f"do not increase, starting from drafts = {d}), got {c}")
    return [c / p if p else 0.0 for c, p in zip(counts, prev, strict=True)]


def solve_effective_c2(alpha2: float, gamma: int, speedup: float) -> float:
    """The c2 >= 0 for which ``g_token(alpha2, c2, gamma + 1)`` equals ``speedup``.

    A speedup above what free drafting predicts gives the boundary c2 = 0; a
    slowdown gives c2 > 1.  ``alpha2`` in (0, 1), ``gamma`` >= 1, ``speedup`` > 0.
    """
    a = check_probability("alpha2", alpha2)
    g = check_positive_int("gamma", gamma)
    s = check_positive_real("speedup", speedup)
    from specmodel.closedform.solve import bisect_boundary
    from specmodel.closedform.token_level import g_token

    hi = 1.0
    while g_token(a, hi, g + 1) > s:
        hi *= 2.0
        if hi > 1e6:
            raise ValueError(f"speedup must be large enough to fit c2 <= 1e6, got {speedup}")
    if g_token(a, 0.0, g + 1) < s:
        return 0.0  # faster than free drafting predicts: report the boundary
    return bisect_boundary(lambda c: g_token(a, c, g + 1) > s, 0.0, hi, rtol=0.0)


@dataclass(frozen=True)
class TokenSummary:
    """Token-level numbers from spec-decode counters and a timed comparison."""

    gamma: int
    """Draft tokens per iteration (num_speculative_tokens)."""
    drafts: int
    """Iterations that proposed a draft."""
    draft_tokens: int
    """Draft tokens proposed."""
    accepted_tokens: int
    """Draft tokens accepted."""
    accepted_per_position: list[int]
    """Marginal accepted counts at draft positions 0..γ−1."""
    conditional_acceptance: list[float]
    """count[i] / count[i−1] (count[−1] = drafts)."""
    alpha2: float
    """i.i.d. rate reproducing accepted / drafts."""
    first_position_ci95: tuple[float, float]
    """Wilson 95 % interval of the acceptance at position 0."""
    speedup: float | None
    """Measured wall-time speedup of speculation over plain greedy decoding."""
    c2: float | None
    """Effective draft cost solving g_token(α2, c2, γ + 1) = speedup."""
    target_passes: int | None = None
    """Verification passes of the target, with or without a draft (None: the counters
    lack them; vLLM's count drafts only)."""

    @property
    def draft_rate(self) -> float | None:
        """The fraction of the target's passes on which the drafter proposed a draft
        (``drafts / target_passes``; prompt lookup proposes nothing where no n-gram of
        the context matches, and such a pass writes one token); None without passes."""
        if self.target_passes is None:
            return None
        return self.drafts / self.target_passes


def summarize_counters(
    counters: Mapping[str, Any], gamma: int, speedup: float | None = None
) -> TokenSummary:
    """Acceptance estimates (and, given the measured ``speedup``, the effective c2) from
    spec-decode counters: ``num_drafts``, ``num_draft_tokens``, ``num_accepted_tokens`` and
    the marginal ``num_accepted_tokens_per_pos`` (only the first ``gamma`` are used), and
    ``num_target_passes`` where the counters have it (the passes with and without a
    draft: :attr:`TokenSummary.draft_rate`)."""
    g = check_positive_int("gamma", gamma)
    drafts = int(counters["num_drafts"])
    draft_tokens = int(counters["num_draft_tokens"])
    accepted = int(counters["num_accepted_tokens"])
    per_pos = [int(x) for x in counters["num_accepted_tokens_per_pos"]][:g]
    if drafts < 1:
        raise ValueError("no drafts were proposed: nothing to measure (try longer outputs)")
    passes = counters.get("num_target_passes")
    if passes is not None and int(passes) < drafts:
        raise ValueError(f"num_target_passes ({passes}) must be at least num_drafts ({drafts}): "
                         "a draft is verified in a pass")
    cond = conditional_acceptance(drafts, per_pos)
    alpha2 = fit_iid_alpha(min(max(accepted / drafts, 1e-9), g - 1e-9), g)
    c2 = None if speedup is None else solve_effective_c2(alpha2, g, speedup)
    return TokenSummary(
        gamma=g,
        drafts=drafts,
        draft_tokens=draft_tokens,
        accepted_tokens=accepted,
        accepted_per_position=per_pos,
        conditional_acceptance=cond,
        alpha2=alpha2,
        first_position_ci95=wilson(per_pos[0], drafts) if per_pos else (0.0, 1.0),
        speedup=speedup,
        c2=c2,
        target_passes=None if passes is None else int(passes),
    )
