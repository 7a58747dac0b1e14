"""Sampling the accepted prefix of a window of drafts, verified left to right.

Every speculative process verifies drafts in order and stops at the first
rejection.  With one acceptance rate for every position the accepted length is
a truncated geometric variable and is drawn as one; with a rate per draft
position (acceptance falling with position, as measured in real runs) each
position is drawn as its own Bernoulli trial.
"""

from __future__ import annotations

import numpy as np

from specmodel.validation import check_nonnegative_int, check_probability

__all__ = ["acceptance_profile", "leading_accepts", "sample_accepted_prefix", "sample_run_length"]

_CHUNK_ELEMENTS = 1 << 24
"""Uniform draws held at once by :func:`sample_accepted_prefix` (16 Mi doubles, 128 MiB):
a window of n verifications × w positions is drawn in blocks of rows beyond it."""


def acceptance_profile(name: str, alpha: float | np.ndarray | list[float]) -> np.ndarray:
    """Validate a scalar rate or a per-position vector; return a 1-D float array."""
    arr = np.atleast_1d(np.asarray(alpha, dtype=np.float64))
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a number or a non-empty 1-D sequence")
    for i, a in enumerate(arr):
        check_probability(f"{name}[{i}]" if arr.size > 1 else name, float(a))
    return arr


def sample_accepted_prefix(
    rng: np.random.Generator, alpha: np.ndarray, window: int, n: int
) -> np.ndarray:
    """Accepted drafts out of ``window`` for ``n`` independent verifications.

    ``alpha`` is a profile from :func:`acceptance_profile`: one rate, or the rate
    of draft position i (positions past its end reuse its last entry).
    """
    w = check_nonnegative_int("window", window)
    if w == 0:
        return np.zeros(n, dtype=np.int64)
    if alpha.size == 1:
        x = rng.geometric(1.0 - float(alpha[0]), size=n) - 1
        return np.minimum(x, w)
    rates = alpha[np.minimum(np.arange(w), alpha.size - 1)]
    rows = max(1, _CHUNK_ELEMENTS // w)
    if n <= rows:
        return leading_accepts(rng.random((n, w)) < rates)
    # In row blocks (bounded memory): the same stream, hence the same draws, as one block.
    out = np.empty(n, dtype=np.int64)
    for start in range(0, n, rows):
        stop = min(n, start + rows)
        out[start:stop] = leading_accepts(rng.random((stop - start, w)) < rates)
    return out


def leading_accepts(accept: np.ndarray) -> np.ndarray:
    """Length of the leading run of ``True`` along the last axis (verification stops at the
    first rejection): the number of accepted drafts."""
    width = accept.shape[-1]
    first_reject = np.argmin(accept, axis=-1)
    return np.where(accept.all(axis=-1), width, first_reject).astype(np.int64)


def sample_run_length(rng: np.random.Generator, alpha: np.ndarray, n: int) -> np.ndarray:
    """Unbounded run of acceptances before the first rejection (async stages)."""
    if alpha.size == 1:
        return rng.geometric(1.0 - float(alpha[0]), size=n) - 1
    # Positions past the profile reuse its last rate: geometric tail after the head.
    head = sample_accepted_prefix(rng, alpha, alpha.size, n)
    tail = rng.geometric(1.0 - float(alpha[-1]), size=n) - 1
    return np.where(head == alpha.size, head + tail, head)
