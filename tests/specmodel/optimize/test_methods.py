"""Method families under one budget."""

from __future__ import annotations

import pytest

from specmodel.closedform.cascade import ewif_vertical
from specmodel.closedform.lookahead_decoding import best_lookahead_config
from specmodel.optimize.budget import optimize_budget
from specmodel.optimize.methods import CascadeParams, LookaheadParams, compare_methods
from specmodel.parameters import Parameters


def test_families_are_the_optimizer_points_and_sorted() -> None:
    res = compare_methods(Parameters(0.63, 0.2, 0.7, 0.02), 16)
    names = [r.method for r in res.results]
    assert set(names) == {"hybrid (sync)", "hybrid (async)", "step-only (sync)",
                          "step-only (async)", "token-only"}
    speeds = [r.speedup for r in res.results]
    assert speeds == sorted(speeds, reverse=True)
    ref = optimize_budget(Parameters(0.63, 0.2, 0.7, 0.02), 16, "async")
    by = {r.method: r for r in res.results}
    assert by["hybrid (async)"].speedup == pytest.approx(ref.speedup)
    assert by["token-only"].speedup == pytest.approx(ref.token_only.speedup)
    assert set(res.skipped) == {"cascade (vertical)", "lookahead decoding"}
    assert all(r.width <= 16 for r in res.results)


def test_cascade_and_lookahead_when_parameters_are_given() -> None:
    res = compare_methods(Parameters(0.63, 0.2, 0.7, 0.02), 16, cascade=CascadeParams(0.8, 0.005),
                          lookahead=LookaheadParams(0.425))
    by = {r.method: r for r in res.results}
    cas = by["cascade (vertical)"]
    n, k = cas.settings["n"], cas.settings["k"]
    assert cas.width == n * (k + 1) + 1 <= 16
    assert cas.speedup == pytest.approx(float(ewif_vertical(0.7, 0.8, 0.02, 0.005, k, n)))
    ld = by["lookahead decoding"]
    assert ld.speedup == pytest.approx(best_lookahead_config(0.425, 16).speedup)
    assert res.winner == res.results[0] and not res.skipped


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="alpha_prime"):
        compare_methods(Parameters(0.6, 0.2, 0.7, 0.02), 16, cascade=CascadeParams(1.5, 0.01))
    with pytest.raises(ValueError, match="M"):
        compare_methods(Parameters(0.6, 0.2, 0.7, 0.02), 0)
