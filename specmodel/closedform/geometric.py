"""The run length of i.i.d. acceptances: X ~ Geometric on {0, 1, 2, ...}.

Every speculative process in this library accepts drafts one after the other,
each with probability ``alpha`` independently, until the first rejection.  The
number of consecutive acceptances X before that rejection has
``P(X = k) = alpha**k * (1 - alpha)``.  This module holds the expectations of X
that the closed forms rest on, written so that they stay accurate as
``alpha -> 1`` and for ``k`` in the thousands (``expm1``/``log`` instead of
``1 - alpha**k``).  ``k`` may be an int or an integer NumPy array.

Conventions: ``k`` here is a plain positive integer (a window length); the
token- and step-level modules say what it counts.
"""

from __future__ import annotations

import numpy as np

from specmodel.validation import check_positive_int_array, check_probability, scalar_or_array

__all__ = [
    "expected_batches",
    "expected_run_length",
    "expected_run_mod",
    "expected_truncated_run",
    "geometric_sum",
    "one_minus_power",
    "run_length_pmf",
]


def one_minus_power(alpha: float, k: int | np.ndarray) -> float | np.ndarray:
    """``1 - alpha**k`` computed as ``-expm1(k * log(alpha))`` (no cancellation near 1)."""
    a = check_probability("alpha", alpha)
    kk = check_positive_int_array("k", k)
    return scalar_or_array(-np.expm1(kk * np.log(a)))


def geometric_sum(alpha: float, k: int | np.ndarray) -> float | np.ndarray:
    """``sum_{i=0}^{k-1} alpha**i = (1 - alpha**k) / (1 - alpha)`` = E[min(X, k-1) + 1].

    Tends to ``k`` as alpha -> 1 and to ``1 / (1 - alpha)`` as k -> infinity.
    """
    a = check_probability("alpha", alpha)
    kk = check_positive_int_array("k", k)
    out = -np.expm1(kk * np.log(a)) / (1.0 - a)
    return scalar_or_array(np.where(kk == 1, 1.0, out))


def expected_run_length(alpha: float) -> float:
    """E[X] = alpha / (1 - alpha): consecutive acceptances before the first rejection."""
    a = check_probability("alpha", alpha)
    return a / (1.0 - a)


def expected_truncated_run(alpha: float, k: int | np.ndarray) -> float | np.ndarray:
    """E[min(X, k)] = alpha (1 - alpha**k) / (1 - alpha): accepted drafts out of k."""
    a = check_probability("alpha", alpha)
    kk = check_positive_int_array("k", k)
    return scalar_or_array(a * -np.expm1(kk * np.log(a)) / (1.0 - a))


def expected_batches(alpha: float, k: int | np.ndarray) -> float | np.ndarray:
    """E[ceil((X + 1) / k)] = 1 / (1 - alpha**k) (Appendix C, step 2 of the LR paper)."""
    a = check_probability("alpha", alpha)
    kk = check_positive_int_array("k", k)
    return scalar_or_array(1.0 / -np.expm1(kk * np.log(a)))


def expected_run_mod(alpha: float, k: int | np.ndarray) -> float | np.ndarray:
    """E[X mod k] = (alpha - alpha**(k+1) - k (1-alpha) alpha**k) / ((1-alpha)(1-alpha**k)).

    Evaluated as ``1/expm1(u) - k/expm1(k u)`` with ``u = -log(alpha)``, and by its
    Bernoulli series ``(k-1)/2 - (k**2-1) u/12`` when ``k u`` is tiny, so that it
    stays exact to rounding as alpha -> 1 (where it tends to (k-1)/2).
    """
    a = check_probability("alpha", alpha)
    kk = check_positive_int_array("k", k).astype(np.float64)
    u = -np.log(a)
    ku = kk * u
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        direct = 1.0 / np.expm1(u) - kk / np.expm1(ku)
    series = (kk - 1.0) / 2.0 - (kk * kk - 1.0) * u / 12.0
    out = np.where(ku < 1e-4, series, direct)
    # k = 1: X mod 1 = 0 exactly.
    out = np.where(kk == 1.0, 0.0, out)
    return scalar_or_array(out)


def run_length_pmf(alpha: float, k: int) -> np.ndarray:
    """P(X = i) for i = 0..k-1, the head of the distribution (for tests and plots)."""
    a = check_probability("alpha", alpha)
    n = int(check_positive_int_array("k", k))
    i = np.arange(n)
    return (1.0 - a) * a**i
