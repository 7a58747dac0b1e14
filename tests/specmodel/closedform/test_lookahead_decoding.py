"""Lookahead decoding (Eq. 5, 7) and SemanticSpec's acceptance, against their processes."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from specmodel.closedform.lookahead_decoding import (
    PAPER_FIG4B_ALPHA,
    PAPER_FIG4B_F,
    best_lookahead_config,
    expected_accepted_tokens,
    step_compression_ratio,
    tokens_per_step,
)
from specmodel.closedform.semantic_speculation import (
    expected_semantic_acceptance,
    output_distribution,
    sequence_acceptance_probability,
)
from specmodel.closedform.token_level import expected_tokens_per_iteration
from specmodel.montecarlo.lookahead_decoding import (
    simulate_lookahead_decoding,
    simulate_semantic_speculation,
)

sp = pytest.importorskip("sympy")


@pytest.mark.parametrize("gamma,b", [(1, 1), (2, 2), (3, 2), (2, 3)])
def test_eq5_by_exhaustive_enumeration(gamma: int, b: int) -> None:
    """Sum over every accept/reject pattern of b speculations: E[max prefix] + 1 = Eq. 5."""
    a = sp.symbols("a", positive=True)
    total = 0
    for pattern in itertools.product([0, 1], repeat=gamma * b):
        prob, best = 1, 0
        for j in range(b):
            bits = pattern[j * gamma : (j + 1) * gamma]
            prob *= sp.Mul(*[a if x else 1 - a for x in bits])
            prefix = next((i for i, x in enumerate(bits) if not x), gamma)
            best = max(best, prefix)
        total += prob * (best + 1)
    eq5 = (gamma + 1) - sum((1 - a**i) ** b for i in range(1, gamma + 1))
    assert sp.expand(total - eq5) == 0
    assert float(eq5.subs(a, 0.37)) == pytest.approx(expected_accepted_tokens(0.37, gamma, b))


@given(st.floats(1e-4, 1 - 1e-9), st.integers(0, 300))
def test_b_one_is_speculative_decoding(alpha: float, gamma: int) -> None:
    assert expected_accepted_tokens(alpha, gamma, 1) == pytest.approx(
        expected_tokens_per_iteration(alpha, gamma), rel=1e-10
    )


@given(st.floats(1e-4, 1 - 1e-6), st.integers(0, 200), st.integers(1, 5000))
def test_monotone_and_bounded(alpha: float, gamma: int, b: int) -> None:
    e = expected_accepted_tokens(alpha, gamma, b)
    assert 1.0 <= e <= gamma + 1 + 1e-9 and math.isfinite(e)
    assert expected_accepted_tokens(alpha, gamma, b + 1) >= e - 1e-12
    assert expected_accepted_tokens(alpha, gamma + 1, b) >= e - 1e-12
    assert expected_accepted_tokens(min(alpha * 1.01, 1 - 1e-9), gamma, b) >= e - 1e-12


@pytest.mark.parametrize("alpha,gamma,b", [(0.425, 4, 1), (0.425, 4, 8), (0.7, 6, 3),
                                           (0.2, 10, 64), (0.9, 3, 2)])
def test_eq5_against_simulation(alpha: float, gamma: int, b: int) -> None:
    est = simulate_lookahead_decoding(alpha, gamma, b, n_steps=200_000, seed=5)
    assert est.agrees_with(expected_accepted_tokens(alpha, gamma, b))


def test_scaling_law_linear_in_log_b() -> None:
    """Fig. 4(b): with γ large, S grows by a constant per doubling of b (α = 0.425, f = 3.106)."""
    s = [step_compression_ratio(PAPER_FIG4B_ALPHA, 60, 2**j, PAPER_FIG4B_F) for j in range(6, 14)]
    steps = np.diff(s)
    expected = math.log(2) / -math.log(PAPER_FIG4B_ALPHA) / PAPER_FIG4B_F
    assert np.allclose(steps, expected, rtol=0.02)
    assert step_compression_ratio(0.5, 4, 4, 1.0) == expected_accepted_tokens(0.5, 4, 4)


def test_tokens_per_step_and_best_config() -> None:
    assert tokens_per_step(5, 4, 5) == 30
    cfg = best_lookahead_config(0.425, 64)
    assert cfg is not None and cfg.tokens_per_step <= 64 and cfg.window == cfg.guesses
    brute = max(
        step_compression_ratio(0.425, n - 1, b, PAPER_FIG4B_F)
        for n in range(2, 33) for b in range(1, 33) if 2 * b * (n - 1) <= 64
    )
    assert cfg.speedup == pytest.approx(brute)
    assert best_lookahead_config(0.425, 1) is None


@given(st.lists(st.floats(0.0, 1.0), min_size=2, max_size=6),
       st.lists(st.floats(0.01, 1.0), min_size=2, max_size=6))
def test_semantic_acceptance_is_one_minus_tv(praw, qraw) -> None:
    n = min(len(praw), len(qraw))
    p = np.array(praw[:n]) + 1e-3
    q = np.array(qraw[:n])
    p, q = p / p.sum(), q / q.sum()
    acc = expected_semantic_acceptance(p, q)
    assert acc == pytest.approx(1 - 0.5 * np.abs(p - q).sum())
    assert 0 <= acc <= 1 + 1e-12
    assert expected_semantic_acceptance(p, p) == pytest.approx(1.0)
    assert np.allclose(output_distribution(p, q, "residual"), p)


def test_paper_resampling_is_not_lossless() -> None:
    p, q = [0.5, 0.3, 0.2], [0.2, 0.3, 0.5]
    est, emp = simulate_semantic_speculation(p, q, n_draws=400_000, seed=2)
    assert est.agrees_with(expected_semantic_acceptance(p, q))
    paper = output_distribution(p, q, "target")
    assert np.allclose(emp, paper, atol=0.004)
    assert not np.allclose(paper, p, atol=0.05)  # regenerating from p on reject skews the output
    _, emp2 = simulate_semantic_speculation(p, q, n_draws=400_000, seed=3, resample="residual")
    assert np.allclose(emp2, p, atol=0.004)


@pytest.mark.parametrize(
    "call,param",
    [
        (lambda: expected_accepted_tokens(1.0, 3, 2), "alpha"),
        (lambda: expected_accepted_tokens(0.5, -1, 2), "gamma"),
        (lambda: expected_accepted_tokens(0.5, 3, 0), "b"),
        (lambda: step_compression_ratio(0.5, 3, 2, 0.5), "f"),
        (lambda: tokens_per_step(4, 1, 4), "N"),
        (lambda: sequence_acceptance_probability(0.5, 0.0), "q"),
        (lambda: expected_semantic_acceptance([0.5, 0.6], [0.5, 0.5]), "p_probs"),
        (lambda: output_distribution([1.0], [1.0], "magic"), "resample"),
    ],
)
def test_bad_input_names_the_parameter(call, param: str) -> None:
    with pytest.raises(ValueError, match=param):
        call()
