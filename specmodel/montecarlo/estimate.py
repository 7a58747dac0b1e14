"""Monte-Carlo estimates with their standard errors.

A speedup is a ratio of sums (tokens or steps produced over time spent), so its
estimate is the ratio estimator ``R = sum(num) / sum(den)`` over independent
stages, with the delta-method standard error
``se(R) = sqrt(var(num - R den) / n) / mean(den)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Estimate", "mean_estimate", "ratio_estimate"]


@dataclass(frozen=True)
class Estimate:
    """A Monte-Carlo estimate of one number."""

    mean: float
    """The point estimate."""
    stderr: float
    """Its standard error (one sigma)."""
    n: int
    """Independent samples (stages, iterations or runs) it rests on."""

    def z_score(self, value: float) -> float:
        """(mean - value) / stderr; infinite if the estimate has no spread but differs."""
        diff = self.mean - float(value)
        if self.stderr == 0.0:
            return 0.0 if diff == 0.0 else math.copysign(math.inf, diff)
        return diff / self.stderr

    def agrees_with(self, value: float, z: float = 4.0, rtol: float = 1e-12) -> bool:
        """True when ``value`` lies within ``z`` standard errors (plus rounding)."""
        tol = z * self.stderr + rtol * max(1.0, abs(float(value)))
        return abs(self.mean - float(value)) <= tol

    def __str__(self) -> str:
        return f"{self.mean:.6g} ± {self.stderr:.2g} (n={self.n})"


def mean_estimate(samples: np.ndarray) -> Estimate:
    """Sample mean with standard error ``std / sqrt(n)``."""
    x = np.asarray(samples, dtype=np.float64).ravel()
    n = x.size
    if n < 2:
        raise ValueError(f"samples must hold at least 2 values, got {n}")
    return Estimate(float(x.mean()), float(x.std(ddof=1) / math.sqrt(n)), n)


def ratio_estimate(numerator: np.ndarray, denominator: np.ndarray) -> Estimate:
    """Ratio of sums over i.i.d. pairs, with its delta-method standard error."""
    num = np.asarray(numerator, dtype=np.float64).ravel()
    den = np.asarray(denominator, dtype=np.float64).ravel()
    if num.shape != den.shape:
        raise ValueError(
            f"numerator and denominator must have the same length, got {num.size} and {den.size}"
        )
    n = num.size
    if n < 2:
        raise ValueError(f"numerator must hold at least 2 values, got {n}")
    mean_den = float(den.mean())
    if mean_den <= 0.0:
        raise ValueError("denominator must have a positive mean")
    r = float(num.sum() / den.sum())
    resid = num - r * den
    se = float(math.sqrt(resid.var(ddof=1) / n) / mean_den)
    return Estimate(r, se, n)
