"""The steps phase's draft step lengths and verdict correlation (issue 12), from
hand-made pairs (no models)."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from profiler.step_profile import StepPair, summarize, verdict_correlation
from specmodel.errors import SpecmodelError
from specmodel.formats.calibration import (
    StepLevel,
    load_calibration,
    load_preset,
    save_calibration,
)

MEASURED = "measured-qwen2.5-coder-0.5b-smollm2-135m"


def _pair(problem: int, step: int, accepted: bool, target_tokens: int = 10,
          draft_tokens: int = 9) -> StepPair:
    return StepPair(problem, step, "a\n\n", "b\n\n", target_tokens, draft_tokens,
                    1.0, 0.25, 0.01, accepted)


def _direct_phi(runs: list[list[bool]]) -> float:
    """np.corrcoef over the (step i, step i + 1) pairs of each problem."""
    first = [r[i] for r in runs for i in range(len(r) - 1)]
    second = [r[i + 1] for r in runs for i in range(len(r) - 1)]
    return float(np.corrcoef(np.asarray(first, float), np.asarray(second, float))[0, 1])


def test_summary_holds_the_draft_histogram_and_the_phi_coefficient() -> None:
    runs = [[True, True, False, False, True], [False, False, True], [True, False, True, True]]
    pairs = [_pair(p, s, v, target_tokens=10 + s, draft_tokens=5 + (s + p) % 3)
             for p, run in enumerate(runs) for s, v in enumerate(run)]
    s = summarize(pairs)
    assert s.draft_step_tokens_histogram == dict(sorted(
        Counter(p.draft_tokens for p in pairs).items()))
    assert list(s.draft_step_tokens_histogram) == sorted(s.draft_step_tokens_histogram)
    assert s.step_tokens_histogram == dict(sorted(Counter(p.target_tokens
                                                          for p in pairs).items()))
    assert s.verdict_pairs == 4 + 2 + 3
    assert s.verdict_correlation == pytest.approx(_direct_phi(runs), abs=1e-12)
    sec = s.step_section("exact")
    assert sec.draft_step_tokens_histogram == s.draft_step_tokens_histogram
    assert sec.verdict_correlation == s.verdict_correlation
    assert sec.verdict_pairs == 9


def test_only_consecutive_steps_of_one_problem_are_paired() -> None:
    # problem 0 has steps 0, 1, 3 (step 2 missing): one pair (0, 1); problem 1 step 0 is
    # not paired with problem 0's last step; the order of the pairs does not matter.
    pairs = [_pair(0, 3, False), _pair(1, 0, True), _pair(0, 1, False), _pair(0, 0, True),
             _pair(1, 1, False), _pair(2, 0, False), _pair(2, 1, True), _pair(3, 0, True),
             _pair(3, 1, True)]
    phi, n = verdict_correlation(pairs)
    assert n == 4
    runs = [[True, False], [True, False], [False, True], [True, True]]
    assert phi == pytest.approx(_direct_phi(runs), abs=1e-12)
    assert phi == pytest.approx(-2 / 12**0.5)  # n11 = 1, n10 = 2, n01 = 1, n00 = 0


@pytest.mark.parametrize("runs", [
    [[True, False]],                       # one consecutive pair
    [[True], [False], [True]],             # none
    [[True, True, True], [True, True]],    # every verdict the same
    [[False, False], [False, False, False]],
    [[True, True], [True, False]],         # the earlier verdicts all the same
])
def test_undefined_correlation_is_none(runs: list[list[bool]]) -> None:
    pairs = [_pair(p, s, v) for p, run in enumerate(runs) for s, v in enumerate(run)]
    phi, n = verdict_correlation(pairs)
    assert phi is None
    assert n == sum(len(r) - 1 for r in runs)
    if len(pairs) >= 2:
        s = summarize(pairs)
        assert s.verdict_correlation is None and s.verdict_pairs == n
        assert s.step_section("exact").verdict_correlation is None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.booleans(), min_size=1, max_size=8), min_size=1, max_size=8))
def test_phi_matches_numpy_corrcoef(runs: list[list[bool]]) -> None:
    pairs = [_pair(p, s, v) for p, run in enumerate(runs) for s, v in enumerate(run)]
    phi, n = verdict_correlation(pairs)
    assert n == sum(len(r) - 1 for r in runs)
    first = [r[i] for r in runs for i in range(len(r) - 1)]
    second = [r[i + 1] for r in runs for i in range(len(r) - 1)]
    if n < 2 or len(set(first)) < 2 or len(set(second)) < 2:
        assert phi is None
    else:
        assert phi is not None and -1.0 <= phi <= 1.0
        assert phi == pytest.approx(_direct_phi(runs), abs=1e-9)


@pytest.mark.parametrize("bad", [1.0000001, -1.5, 2.0])
def test_step_level_rejects_a_correlation_outside_minus_one_one(bad: float) -> None:
    with pytest.raises(ValidationError, match="verdict_correlation"):
        StepLevel(alpha1=0.3, c1=0.2, verdict_correlation=bad)
    for edge in (-1.0, 0.0, 1.0):
        assert StepLevel(alpha1=0.3, c1=0.2, verdict_correlation=edge).verdict_correlation \
            == edge
    with pytest.raises(ValidationError, match="verdict_pairs"):
        StepLevel(alpha1=0.3, c1=0.2, verdict_pairs=-1)


def test_an_old_calibration_without_the_fields_loads_and_new_ones_round_trip(
        tmp_path) -> None:
    cal = load_preset(MEASURED)
    path = tmp_path / "old.json"
    save_calibration(cal, path)
    data = json.loads(path.read_text())
    for name in ("draft_step_tokens_histogram", "verdict_correlation", "verdict_pairs"):
        data["step"].pop(name, None)
    path.write_text(json.dumps(data))
    old = load_calibration(path)
    assert old.step.draft_step_tokens_histogram is None
    assert old.step.verdict_correlation is None and old.step.verdict_pairs is None

    step = cal.step.model_copy(update={"draft_step_tokens_histogram": {7: 3, 12: 1},
                                       "verdict_correlation": -0.25, "verdict_pairs": 30})
    new_path = save_calibration(cal.model_copy(update={"step": step}), tmp_path / "new.json")
    back = load_calibration(new_path)
    assert back.step.draft_step_tokens_histogram == {7: 3, 12: 1}
    assert back.step.verdict_correlation == -0.25 and back.step.verdict_pairs == 30

    data["step"]["verdict_correlation"] = 1.5
    path.write_text(json.dumps(data))
    with pytest.raises(SpecmodelError, match="verdict_correlation"):
        load_calibration(path)


def test_the_rate_of_draft_steps_that_end_the_answer() -> None:
    """As the decoder sees a step: the answer mark, nothing written, or a stop before the
    cap without the delimiter (end of sequence); a step cut at the cap goes on."""
    from profiler.step_profile import draft_ends

    def pair(text: str, tokens: int) -> StepPair:
        return StepPair(0, 0, "t\n", text, 5, tokens, 1.0, 0.2, 0.01, False)

    cases = [("1. Add.\n", 6, False), ("#### 42", 3, True), ("\n", 1, True), ("  ", 1, True),
             ("So the answer is 42.", 7, True), ("a long step cut at the cap", 48, False)]
    for text, tokens, ends in cases:
        assert draft_ends(pair(text, tokens), "\n", 48) is ends, text
    pairs = [pair(t, n) for t, n, _ in cases]
    s = summarize(pairs, delimiter="\n", max_step_tokens=48)
    assert s.draft_end_rate == pytest.approx(4 / 6)
    assert s.step_section("exact").draft_end_rate == pytest.approx(4 / 6)
    assert summarize(pairs).draft_end_rate is None  # delimiter and cap unknown


def test_the_rate_of_target_steps_that_end_the_answer() -> None:
    def pair(target: str, tokens: int) -> StepPair:
        return StepPair(0, 0, target, "d\n", tokens, 3, 1.0, 0.2, 0.01, False)

    pairs = [pair("1. Add.\n", 6), pair("#### 42", 3), pair("So it is 42.", 5),
             pair("cut at the cap", 48)]
    s = summarize(pairs, delimiter="\n", max_step_tokens=48)
    assert s.target_end_rate == pytest.approx(2 / 4) and s.draft_end_rate == 0
    assert s.step_section("exact").target_end_rate == pytest.approx(2 / 4)
    # problems that stopped early on an empty step (not recorded): one more end each
    early = [StepPair(1, 0, "1. Add.\n", "d\n", 6, 3, 1.0, 0.2, 0.01, False),
             StepPair(2, 0, "1. Add.\n", "d\n", 6, 3, 1.0, 0.2, 0.01, False),
             StepPair(2, 1, "#### 3", "d\n", 3, 3, 1.0, 0.2, 0.01, False),
             *(StepPair(3, k, "1. Add.\n", "d\n", 6, 3, 1.0, 0.2, 0.01, False)
               for k in range(3))]
    s = summarize(early, delimiter="\n", max_step_tokens=48, steps_per_problem=3)
    # problem 1 ended with an empty step, problem 2 with its answer mark, 3 ran out
    assert s.target_end_rate == pytest.approx(2 / 7)
    assert summarize(early, delimiter="\n", max_step_tokens=48).target_end_rate == \
        pytest.approx(1 / 6)


class _Branching:
    """A scripted draft that samples: greedy 'g<k>' (k: steps so far, each marked §), and
    at a temperature row r of the call seeded s writes 'g<k>' again when (s + r) is even,
    else 'b<k>-<r>'."""

    name = "transformers"

    def __init__(self) -> None:
        self.sampled_calls: list[tuple[int, float, int | None]] = []

    def generate_steps(self, prefixes, max_tokens, *, temperature=0.0, seed=None):
        from profiler.engines import StepBatch, StepOutput

        k = prefixes[0].count("§")
        if temperature == 0:
            texts = [f"g{k}§\n" for _ in prefixes]
        else:
            self.sampled_calls.append((len(prefixes), temperature, seed))
            texts = [f"g{k}§\n" if (seed + r) % 2 == 0 else f"b{k}-{r}§\n"
                     for r in range(len(prefixes))]
        return StepBatch([StepOutput(t, 2, "length") for t in texts], 0.1)

    def count_tokens(self, text: str) -> int:
        return 2


class _Target:
    name = "transformers"

    def generate_steps(self, prefixes, max_tokens, **_):
        from profiler.engines import StepBatch, StepOutput

        k = prefixes[0].count("§")
        text = f"b{k}-0§\n" if k < 3 else ""  # the first sampled branch is what it writes
        return StepBatch([StepOutput(text, 2, "length")], 1.0)

    def count_tokens(self, text: str) -> int:
        return 2


def test_sampled_branches_measure_best_of_w_and_repeats(tmp_path) -> None:
    """W = 3: two sampled branches per prefix in one seeded call; repeats of the greedy
    step or of each other are kept once and not judged; the best of the distinct ones is
    what a W-branch position is accepted at."""
    from profiler.problems import Problem
    from profiler.step_profile import profile_steps, read_pairs
    from profiler.verifiers import ExactMatch

    draft = _Branching()
    pairs = profile_steps(_Target(), draft, ExactMatch(), [Problem(0, "q", "1", "#### 1")],
                          tmp_path / "r.jsonl", steps_per_problem=3, branches=3,
                          branch_temperature=0.7, branch_seed=5)
    assert [c[:2] for c in draft.sampled_calls] == [(2, 0.7)] * 3
    assert len({c[2] for c in draft.sampled_calls}) == 3  # one seed per prefix
    assert read_pairs(tmp_path / "r.jsonl") == pairs  # the branches are in the record
    for p, (_, _, seed) in zip(pairs, draft.sampled_calls, strict=True):
        assert not p.accepted  # the greedy step never matches
        assert len(p.branch_texts) == 2 and p.branch_seconds == 0.1
        repeats = [(seed + r) % 2 == 0 for r in range(2)]
        assert [v is None for v in p.branch_accepted] == repeats
        assert p.distinct_branches == 1 + repeats.count(False)
        # the target writes branch 0's text: accepted when branch 0 was no repeat
        assert p.best_accepted is (not repeats[0])
    s = summarize(pairs, delimiter="\n", max_step_tokens=48, branch_temperature=0.7)
    assert s.duplicate_branch_rate == pytest.approx(3 / 6)  # one repeat per prefix
    assert set(s.branch_counts) == {2}
    n, k = s.branch_counts[2]
    assert n == 3 and k == sum(p.best_accepted for p in pairs)
    section = s.step_section("exact")
    assert section.branch_samples == {2: 3} and section.branch_temperature == 0.7
    assert section.branch_acceptance[2] == pytest.approx((k + 0.5) / (n + 1))
    # a prefix whose sampled steps all repeated the greedy one counts under w = 1
    easy = StepPair(1, 0, "t\n", "t\n", 2, 2, 1.0, 0.2, 0.01, True, ["t\n"], [2], [None],
                    0.1)
    assert summarize([*pairs, easy]).branch_counts == {1: (1, 1), 2: (n, k)}
    plain = summarize([_without_branches(p) for p in pairs])
    assert plain.branch_counts is None and plain.duplicate_branch_rate is None


def _without_branches(p: StepPair) -> StepPair:
    """The pair without its branches (a record from before they were measured)."""
    import dataclasses

    return dataclasses.replace(p, branch_texts=None, branch_tokens=None,
                               branch_accepted=None, branch_seconds=None)


def test_branch_settings_are_validated_and_keyed_only_when_used() -> None:
    from profiler.calibrate import steps_key
    from profiler.step_profile import profile_steps

    base = dict(target="t", draft="d", verifier="exact", threshold=0.9, judge_model="j",
                problems=1, seed=0, steps_per_problem=1, max_step_tokens=8, threads=1,
                delimiter="\n")
    assert "branches" not in steps_key(**base)  # older records keep resuming
    assert steps_key(**base, branches=2)["branches"] == 2
    for bad, named in (({"branches": 0}, "branches must be an integer >= 1"),
                       ({"branches": 2, "branch_temperature": 0.0}, "branch_temperature")):
        with pytest.raises(ValueError, match=named):
            profile_steps(_Target(), _Branching(), None, [], "unused.jsonl", **bad)


def test_answers_are_each_problems_lengths_by_step_index() -> None:
    """The summary keeps each problem's (target, draft) lengths in step order, in
    problem order, whatever order the pairs came in; a problem whose pairs skip a step
    gives no answers; the step section validates them against the problems."""
    from profiler.step_profile import length_answers

    pairs = [_pair(p, s, s % 2 == 0, target_tokens=10 * p + s, draft_tokens=s + 1)
             for p in (1, 0) for s in (2, 0, 1)]
    s = summarize(pairs)
    assert s.length_answers == [[(0, 1), (1, 2), (2, 3)], [(10, 1), (11, 2), (12, 3)]]
    sec = s.step_section("exact")
    assert sec.step_length_answers == s.length_answers
    assert length_answers([_pair(0, 0, True), _pair(0, 2, False)]) is None
    assert length_answers([]) is None
    with pytest.raises(ValidationError, match="one answer per problem"):
        StepLevel.model_validate({**sec.model_dump(), "step_length_answers": [[(1, 1)]]})
    with pytest.raises(ValidationError, match="at least one step"):
        StepLevel.model_validate({**sec.model_dump(), "step_length_answers": [[], [(1, 1)]]})
    with pytest.raises(ValidationError, match="lengths >= 0"):
        StepLevel.model_validate({**sec.model_dump(),
                                  "step_length_answers": [[(-1, 1)], [(1, 1)]]})
