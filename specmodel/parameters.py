"""The model's four numbers, validated once: α1, c1, α2, c2.

:class:`Parameters` is built by the calibration (:meth:`Calibration.parameters`)
or from the command line, and taken — always first, always in this order — by
the optimizer (:func:`specmodel.optimize.budget.optimize_budget`), the pricing
by a measured batch cost (:mod:`specmodel.optimize.pricing`), the method
comparison and the theorem checks.  The closed forms themselves
(:mod:`specmodel.closedform`) keep scalar arguments: they are the formulas.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from specmodel.validation import check_cost, check_probability

__all__ = ["Parameters"]


@dataclass(frozen=True)
class Parameters:
    """Acceptance rates and cost ratios of step- and token-level speculation."""

    alpha1: float
    """Probability that the verifier accepts a draft step, in (0, 1)."""
    c1: float
    """Cost of one draft step in units of one target step (>= 0; async needs c1 < 1)."""
    alpha2: float
    """Per-token acceptance rate of token-level speculation, in (0, 1)."""
    c2: float
    """Cost of one draft token in units of one target forward pass (>= 0)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "alpha1", check_probability("alpha1", self.alpha1))
        object.__setattr__(self, "c1", check_cost("c1", self.c1))
        object.__setattr__(self, "alpha2", check_probability("alpha2", self.alpha2))
        object.__setattr__(self, "c2", check_cost("c2", self.c2))

    def replace(self, **overrides: float | None) -> Parameters:
        """A copy with the given numbers replaced (None leaves a number as it is)."""
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})

    def to_dict(self) -> dict[str, float]:
        """``{'alpha1': …, 'c1': …, 'alpha2': …, 'c2': …}``."""
        return asdict(self)

    def describe(self) -> str:
        """One line: ``α1 = 0.63, c1 = 0.3409, α2 = 0.2806, c2 = 0``."""
        return (f"α1 = {self.alpha1:.4g}, c1 = {self.c1:.4g}, α2 = {self.alpha2:.4g}, "
                f"c2 = {self.c2:.4g}")

    @classmethod
    def coerce(cls, value: Any) -> Parameters:
        """``value`` if it is Parameters, else built from a mapping of the four numbers."""
        if isinstance(value, cls):
            return value
        if isinstance(value, dict):
            return cls(**value)
        raise TypeError(f"params must be a specmodel.parameters.Parameters, got "
                        f"{type(value).__name__}")
