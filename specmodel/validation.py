"""Input validation shared by every public function of :mod:`specmodel`.

Every check raises :class:`ValueError` whose message names the parameter and the
allowed range, so that the CLI can print it as a one-line error.  Checks accept
Python scalars and NumPy scalars; the ``*_array`` variants also accept arrays and
return them as NumPy arrays.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

__all__ = [
    "MAX_SAMPLES",
    "MAX_SEARCH_BUDGET",
    "check_budget",
    "check_cost",
    "check_nonnegative_int",
    "check_nonnegative_int_array",
    "check_positive_int",
    "check_positive_int_array",
    "check_positive_real",
    "check_probability",
    "check_samples",
    "check_probability_vector",
    "check_cost_vector",
    "scalar_or_array",
]


def _as_real(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    x = float(value)
    if math.isnan(x):
        raise ValueError(f"{name} must be a number, got NaN")
    return x


def check_probability(name: str, value: object, *, closed: bool = False) -> float:
    """Return ``value`` as a float in the open interval (0, 1).

    With ``closed=True`` the endpoints 0 and 1 are allowed (used for measured
    frequencies and SemanticSpec probabilities).
    """
    x = _as_real(name, value)
    if closed:
        if not 0.0 <= x <= 1.0:
            raise ValueError(f"{name} must lie in [0, 1], got {x!r}")
    elif not 0.0 < x < 1.0:
        raise ValueError(f"{name} must lie in the open interval (0, 1), got {x!r}")
    return x


def check_cost(name: str, value: object, *, positive: bool = False) -> float:
    """Return a cost ratio ``value`` as a finite float >= 0 (> 0 with ``positive``)."""
    x = _as_real(name, value)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {x!r}")
    if positive and x <= 0.0:
        raise ValueError(f"{name} must be > 0, got {x!r}")
    if x < 0.0:
        raise ValueError(f"{name} must be >= 0, got {x!r}")
    return x


def check_positive_real(name: str, value: object) -> float:
    """Return ``value`` as a finite float > 0."""
    return check_cost(name, value, positive=True)


def _as_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    return int(value)


def check_positive_int(name: str, value: object) -> int:
    """Return ``value`` as an int >= 1."""
    k = _as_int(name, value)
    if k < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {k}")
    return k


def check_nonnegative_int(name: str, value: object) -> int:
    """Return ``value`` as an int >= 0."""
    k = _as_int(name, value)
    if k < 0:
        raise ValueError(f"{name} must be an integer >= 0, got {k}")
    return k


def _as_int_array(name: str, value: object, minimum: int) -> np.ndarray:
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "iu":
            raise ValueError(f"{name} must be an integer array, got dtype {value.dtype}")
        arr = value.astype(np.int64, copy=False)
        if arr.size and int(arr.min()) < minimum:
            raise ValueError(f"{name} must be integers >= {minimum}, got min {int(arr.min())}")
        return arr
    if minimum >= 1:
        return np.asarray(check_positive_int(name, value), dtype=np.int64)
    return np.asarray(check_nonnegative_int(name, value), dtype=np.int64)


def check_positive_int_array(name: str, value: object) -> np.ndarray:
    """Return an int or an integer array, all >= 1, as an int64 array."""
    return _as_int_array(name, value, 1)


def check_nonnegative_int_array(name: str, value: object) -> np.ndarray:
    """Return an int or an integer array, all >= 0, as an int64 array."""
    return _as_int_array(name, value, 0)


MAX_SEARCH_BUDGET = 100_000
"""The largest budget M the optimizers search (:mod:`specmodel.optimize`): the landscape
holds O(M log M) points (1.2 million at this M, about 0.1 GB), priced once per serving
batch size; budgets beyond it would exhaust memory and time, and no device verifies
100,000 positions per request in parallel."""

MAX_SAMPLES = 10_000_000
"""The largest Monte-Carlo sample count (stages, cycles, iterations, draws): the
simulators hold a few arrays of this length (about 0.5 GB and one second at this
count); beyond it memory and time grow without bound."""


def check_budget(name: str, value: object, *, maximum: int | None = None) -> int:
    """Return a parallelism budget ``M`` as an int >= 1 (and <= ``maximum`` when given:
    the optimizers pass :data:`MAX_SEARCH_BUDGET`)."""
    m = check_positive_int(name, value)
    if maximum is not None and m > maximum:
        raise ValueError(f"{name} must be an integer in [1, {maximum:,}] (memory bound of "
                         f"the search), got {m}")
    return m


def check_samples(name: str, value: object) -> int:
    """Return a Monte-Carlo sample count as an int in [2, :data:`MAX_SAMPLES`] (a
    standard error needs two; more would exhaust memory)."""
    n = _as_int(name, value)
    if n < 2:
        raise ValueError(f"{name} must be an integer >= 2, got {n}")
    if n > MAX_SAMPLES:
        raise ValueError(f"{name} must be an integer in [2, {MAX_SAMPLES:,}] (memory bound), "
                         f"got {n}")
    return n


def check_probability_vector(name: str, values: object) -> np.ndarray:
    """A non-empty 1-D sequence of probabilities in (0, 1), as float64."""
    if isinstance(values, str | bytes) or np.ndim(values) != 1:
        raise ValueError(f"{name} must be a 1-D sequence of probabilities, got {values!r}")
    items = list(values)  # type: ignore[call-overload]
    if not items:
        raise ValueError(f"{name} must hold at least one probability, got an empty sequence")
    return np.array([check_probability(f"{name}[{i}]", a) for i, a in enumerate(items)])


def check_cost_vector(name: str, values: object, length: int) -> np.ndarray:
    """A 1-D sequence of ``length`` costs >= 0, as float64."""
    if isinstance(values, str | bytes) or np.ndim(values) != 1:
        raise ValueError(f"{name} must be a 1-D sequence of costs, got {values!r}")
    items = list(values)  # type: ignore[call-overload]
    if len(items) != length:
        raise ValueError(f"{name} must hold {length} costs (one per draft), got {len(items)}")
    return np.array([check_cost(f"{name}[{i}]", c) for i, c in enumerate(items)])


def scalar_or_array(x: np.ndarray) -> float | np.ndarray:
    """A 0-d result as a Python float, anything else as the array: the shape convention of
    every function that takes ``k`` as an int or an integer array."""
    return float(x) if np.ndim(x) == 0 else x
