"""Memory bounds of the searches and the simulators: refused beyond a named maximum,
unchanged below it."""

from __future__ import annotations

import numpy as np
import pytest

from specmodel.formats.calibration import load_preset
from specmodel.montecarlo import acceptance
from specmodel.optimize.budget import budget_landscape, optimize_budget, optimize_budget_mc
from specmodel.optimize.pricing import BatchCostCurve, optimize_cost_aware, price_budget
from specmodel.validation import MAX_SAMPLES, MAX_SEARCH_BUDGET, check_samples

P = load_preset("lr-paper-gsm8k-deepseek").parameters()
CURVE = BatchCostCurve.from_points([(1, 1.0), (8, 2.0)])


@pytest.mark.parametrize(
    "call",
    [
        lambda M: optimize_budget(P, M, "sync"),
        lambda M: optimize_budget(P, M, "async", landscape=True),
        lambda M: budget_landscape(P, M, "sync"),
        lambda M: optimize_budget_mc(P, M, "async", samples=100),
        lambda M: optimize_cost_aware(P, M, "sync", CURVE),
        lambda M: price_budget(P, M, "async", CURVE),
    ],
)
def test_budgets_beyond_the_bound_are_refused_naming_it(call) -> None:
    with pytest.raises(ValueError, match=r"^M must be an integer in \[1, 100,000\] \(memory "
                                         r"bound of the search\), got 1000000000$"):
        call(10**9)
    with pytest.raises(ValueError, match="memory bound"):
        call(MAX_SEARCH_BUDGET + 1)


def test_the_largest_budget_is_solved() -> None:
    res = optimize_budget(P, MAX_SEARCH_BUDGET, "sync")
    assert res.budget == MAX_SEARCH_BUDGET and res.best.parallel_dim <= MAX_SEARCH_BUDGET


def test_samples_beyond_the_bound_are_refused_naming_it() -> None:
    assert check_samples("n", MAX_SAMPLES) == MAX_SAMPLES
    with pytest.raises(ValueError, match=r"^n must be an integer in \[2, 10,000,000\] "
                                         r"\(memory bound\), got 10000001$"):
        check_samples("n", MAX_SAMPLES + 1)


def test_block_sampling_draws_the_same_stream(monkeypatch) -> None:
    """Drawn in row blocks, the accepted prefixes equal those of one block."""
    alpha = np.array([0.9, 0.7, 0.5])
    whole = acceptance.sample_accepted_prefix(np.random.default_rng(7), alpha, 5, 1001)
    monkeypatch.setattr(acceptance, "_CHUNK_ELEMENTS", 64)  # 12 rows per block
    blocks = acceptance.sample_accepted_prefix(np.random.default_rng(7), alpha, 5, 1001)
    assert np.array_equal(whole, blocks)
