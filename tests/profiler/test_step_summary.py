"""Step-profile estimates from recorded pairs (no models)."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from profiler.step_profile import StepPair, read_pairs, summarize
from specmodel.formats.calibration import StepLevel
from specmodel.stats import wilson


def _pair(i: int, accepted: bool, t: float = 1.0, d: float = 0.25) -> StepPair:
    return StepPair(0, i, "a\n\n", "b\n\n", 10 + i % 3, 9, t, d, 0.01, accepted)


def test_summary_numbers() -> None:
    pairs = [_pair(i, i % 4 != 0) for i in range(40)]
    s = summarize(pairs)
    assert s.pairs == 40 and s.accepted == 30
    assert s.alpha1 == pytest.approx(30.5 / 41)
    lo, hi = s.alpha1_ci95
    assert lo < 0.75 < hi
    assert s.c1 == pytest.approx(0.25) and s.c1_stderr == pytest.approx(0.0, abs=1e-12)
    assert s.verifier_cost == pytest.approx(0.01)
    assert sum(s.step_tokens_histogram.values()) == 40
    sec = s.step_section("exact")
    assert isinstance(sec, StepLevel) and sec.samples == 40 and sec.verifier == "exact"
    assert sec.alpha1 == s.alpha1 and sec.c1 == pytest.approx(0.25)


def test_all_or_nothing_still_gives_a_rate_in_the_open_interval() -> None:
    assert 0 < summarize([_pair(i, False) for i in range(5)]).alpha1 < 1
    assert 0 < summarize([_pair(i, True) for i in range(5)]).alpha1 < 1
    assert wilson(0, 5)[0] == 0.0 and wilson(5, 5)[1] == 1.0


def test_truncated_record_is_tolerated(tmp_path) -> None:
    path = tmp_path / "r.jsonl"
    lines = [json.dumps(asdict(_pair(i, True))) for i in range(3)]
    path.write_text("\n".join(lines) + '\n{"problem": 0, "st')  # interrupted mid-write
    assert len(read_pairs(path)) == 3
    with pytest.raises(ValueError, match="pairs"):
        summarize(read_pairs(path)[:1])


def test_a_slower_draft_is_refused() -> None:
    s = summarize([_pair(i, True, t=1.0, d=1.2) for i in range(4)])
    with pytest.raises(ValueError, match="c1"):
        s.step_section("exact")


def test_alike_verdicts_of_one_problem_are_worth_fewer_independent_pairs() -> None:
    """Problems that accept all or nothing: α1's standard error with each problem as one
    cluster is far above the binomial's, and the calibration carries the independent
    pairs it is worth (what the decoder model's calibration uncertainty draws α1 with)."""
    from specmodel.stats import clustered_rate

    pairs = [StepPair(problem, i, "a\n\n", "b\n\n", 10, 9, 1.0, 0.25, 0.01, problem % 2 == 0)
             for problem in range(6) for i in range(8)]
    s = summarize(pairs)
    assert s.problem_verdicts == [(8, 8), (0, 8)] * 3
    assert s.alpha1_clustered_stderr is not None
    _, se = clustered_rate([8, 0, 8, 0, 8, 0], [8] * 6)
    assert s.alpha1_clustered_stderr == pytest.approx(se)
    assert s.alpha1_clustered_stderr > 2 * (0.25 / 48) ** 0.5
    assert s.effective_pairs is not None and 1 <= s.effective_pairs <= 8
    sec = s.step_section("exact")
    assert sec.samples == 48 and sec.problem_verdicts == s.problem_verdicts
    one = summarize([_pair(i, i % 2 == 0) for i in range(10)])  # one problem: no clusters
    assert one.problem_verdicts == [(5, 10)] and one.effective_pairs is None


def test_verdicts_by_step_index_pool_the_problems() -> None:
    """The verdict counts per step index of the answer, summed over problems; a set of
    pairs that skips an index has none (an index's rate would not be defined)."""
    pairs = [StepPair(problem, i, "a\n\n", "b\n\n", 10, 9, 1.0, 0.25, 0.01,
                      i >= 2 or problem == 0)
             for problem in range(3) for i in range(4 if problem else 3)]
    s = summarize(pairs)
    assert s.index_verdicts == [(1, 3), (1, 3), (3, 3), (2, 2)]
    assert s.step_section("exact").index_verdicts == s.index_verdicts
    gap = [p for p in pairs if p.step != 1]
    assert summarize(gap).index_verdicts is None


def test_verdicts_by_the_two_lengths() -> None:
    """The verdict counts per distinct (target, draft) length pair, in the lengths'
    order, matching the joint length counts."""
    pairs = [StepPair(0, i, "a\n", "b\n", 10 + i % 2, 9 + i % 3, 1.0, 0.25, 0.01, i % 3 == 0)
             for i in range(12)]
    s = summarize(pairs)
    assert s.length_verdicts is not None and s.length_pairs is not None
    assert [(t, d, n) for t, d, n, _ in s.length_verdicts] == s.length_pairs
    assert sum(k for *_, k in s.length_verdicts) == s.accepted == 4
    assert (10, 9, 2, 2) in s.length_verdicts  # i = 0, 6: both accepted
    assert s.step_section("exact").step_length_verdicts == s.length_verdicts
