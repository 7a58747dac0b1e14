"""The benchmark helpers that turn runs into tables (no models)."""

from __future__ import annotations

import argparse

from benchmarks.bench_accuracy import paired
from benchmarks.harness import add_trio_arguments, percent, printer


def _p(i: int, answer: str | None, correct: bool) -> dict:
    return {"problem": i, "answer": answer, "correct": correct}


def test_paired_counts_every_outcome_once_by_problem_index() -> None:
    base = [_p(0, "1", True), _p(1, "2", True), _p(2, "3", False), _p(3, None, False)]
    other = [_p(3, "9", True), _p(2, "3", False), _p(1, "5", False), _p(0, "1", True)]
    out = paired(base, other)
    assert out == {"both_right": 1, "target_only_right": 1, "lr_only_right": 1,
                   "both_wrong": 1, "same_answer": 2, "problems": 4}


def test_percent_and_the_shared_options(capsys) -> None:
    assert percent(None) == "-"
    assert percent(0.125) == "12.5%" and percent(0.125, 0) == "12%"
    assert percent(-0.5, signed=True) == "-50.0%" and percent(0.5, signed=True) == "+50.0%"
    ap = argparse.ArgumentParser()
    add_trio_arguments(ap, problems=3, seed=7, max_step_tokens=9)
    args = ap.parse_args(["--verifier", "exact"])
    assert (args.problems, args.seed, args.max_step_tokens, args.verifier) == (3, 7, 9, "exact")
    assert args.delimiter == "\\n"  # escaped on the command line, decoded by the benchmark
    printer("x")(1, 2, "done")
    assert capsys.readouterr().out == "  [x 1/2] done\n"


def test_sync_walk_skips_the_position_after_an_acceptance() -> None:
    """sync k1 = 2 on a fixed trajectory: an accepted draft step brings the target's next
    step with it, so that position is never judged (hard stretches weigh more)."""
    from benchmarks.bench_trajectory_acceptance import sync_walk

    assert sync_walk([]) == (0, 0)
    assert sync_walk([False] * 5) == (0, 5)
    assert sync_walk([True] * 6) == (3, 3)
    assert sync_walk([True, True, False, True, False]) == (2, 3)
    assert sync_walk([False, True, True, True]) == (2, 3)
