"""The one bisection the library uses for monotone equations."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specmodel.closedform.solve import bisect_boundary


@given(root=st.floats(0.01, 99.0), power=st.floats(0.5, 3.0))
def test_finds_the_root_of_a_monotone_equation(root: float, power: float) -> None:
    x = bisect_boundary(lambda v: v**power < root**power, 0.0, 100.0)
    assert x == pytest.approx(root, rel=1e-10)


def test_rejects_an_empty_bracket() -> None:
    with pytest.raises(ValueError, match="lo must be < hi"):
        bisect_boundary(lambda v: v < 1, 2.0, 1.0)
