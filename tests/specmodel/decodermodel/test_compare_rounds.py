"""``compare_rounds``: predictions held against the mean of interleaved rounds, with
the rounds' spread, the errors' summary, rank correlation and each model's pick."""

from __future__ import annotations

import pytest

from specmodel.prediction import compare, compare_rounds

from .test_validate_rows import _record

ROUND1 = {("sync", 1, 1): 5.0, ("sync", 2, 1): 2.0, ("async", 3, 2): 4.0,
          ("sync", 1, 3): 6.0}
ROUND2 = {("sync", 1, 1): 4.0, ("sync", 2, 1): 2.0, ("async", 3, 2): 3.0,
          ("sync", 1, 3): 4.4}


def test_errors_are_against_the_mean_of_the_rounds_with_their_spread() -> None:
    recs = [_record(ROUND1), _record(ROUND2)]
    s = compare_rounds(recs, decoder=False)
    assert s.rounds == 2 and [r.config for r in s.rows] == [r.config for r in compare(recs[0])]
    row = next(r for r in s.rows if r.config == "sync k1=2 k2=1")
    assert row.measured == pytest.approx([0.4, 0.5])
    assert row.measured_mean == pytest.approx(0.45)
    assert row.measured_spread == pytest.approx(0.1 / 0.45)
    assert row.error == pytest.approx(row.predicted_speedup / 0.45 - 1)
    assert row.ms_per_token == pytest.approx([1e3 / 2.0, 1e3 / 2.0])
    base = s.rows[0]
    assert base.measured == pytest.approx([1.0, 1.0]) and base.measured_spread == 0
    spec = [r for r in s.rows if r.config != "target"]
    assert s.mean_abs_error["f·g"] == pytest.approx(sum(abs(r.error) for r in spec) / 3)
    assert s.max_abs_error["f·g"] == pytest.approx(max(abs(r.error) for r in spec))
    assert s.mean_abs_error["decoder"] is None and s.spearman["decoder"] is None
    assert s.best_measured == "sync k1=1 k2=3"
    assert -1 <= s.spearman["f·g"] <= 1
    pick = s.recommended["f·g"]
    best = max(r.measured_mean for r in s.rows)
    chosen = next(r for r in s.rows if r.config == pick)
    assert s.recommended_vs_best["f·g"] == pytest.approx(chosen.measured_mean / best)


def test_rounds_must_hold_the_same_configurations() -> None:
    other = {k: v for k, v in ROUND2.items() if k != ("async", 3, 2)}
    with pytest.raises(ValueError, match="round 2 holds"):
        compare_rounds([_record(ROUND1), _record(other)], decoder=False)
    with pytest.raises(ValueError, match="records must not be empty"):
        compare_rounds([])


def test_the_decoder_model_is_summarised_when_asked() -> None:
    s = compare_rounds([_record(ROUND1), _record(ROUND2)])
    assert s.mean_abs_error["decoder"] is not None
    assert s.spearman["decoder"] is not None
    assert s.recommended["decoder"] in {r.config for r in s.rows}
