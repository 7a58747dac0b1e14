"""simulate_process: each process against its own closed form."""

from __future__ import annotations

import pytest

from specmodel.montecarlo.check import simulate_process
from specmodel.parameters import Parameters

P = Parameters(0.63, 0.34, 0.7, 0.05)


@pytest.mark.parametrize("process,k1,k2", [("token", 1, 4), ("sync", 3, 1), ("async", 3, 1)])
def test_the_papers_processes_agree_with_their_closed_forms(process: str, k1: int,
                                                            k2: int) -> None:
    check = simulate_process(P, process, k1, k2, samples=100_000, seed=1)
    assert abs(check.z) < 4
    assert check.note is None and check.finite_step_model is None
    d = check.to_dict()
    assert d["simulated"] == check.estimate.mean and d["parameters"] == P.to_dict()


def test_the_hybrid_says_what_its_z_measures() -> None:
    check = simulate_process(P, "hybrid", 2, 3, mode="sync", step_tokens=16, samples=20_000)
    assert check.finite_step_model is not None and check.note is not None
    # the finite-step model is closer to the simulated process than the endless product
    assert abs(check.finite_step_model - check.estimate.mean) < abs(
        check.closed_form - check.estimate.mean)


def test_unknown_process_is_named() -> None:
    with pytest.raises(ValueError, match="process"):
        simulate_process(P, "cascade", 1, 2)
