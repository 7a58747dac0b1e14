"""One bisection for every monotone equation the library solves."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["bisect_boundary"]


def bisect_boundary(
    below: Callable[[float], bool], lo: float, hi: float, *, rtol: float = 1e-12,
    iterations: int = 200,
) -> float:
    """The point in [lo, hi] where ``below`` turns from True to False.

    ``below`` must be True at ``lo`` side and False at ``hi`` side, and change
    once (a monotone equation ``f(x) = y`` written as ``f(x) < y``).  Stops when
    the bracket is narrower than ``rtol·|hi|`` or after ``iterations`` halvings.
    """
    if not lo < hi:
        raise ValueError(f"lo must be < hi, got lo={lo!r}, hi={hi!r}")
    for _ in range(iterations):
        if hi - lo <= rtol * abs(hi):
            break
        mid = 0.5 * (lo + hi)
        if below(mid):
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)
