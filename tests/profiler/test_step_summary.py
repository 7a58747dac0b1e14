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
