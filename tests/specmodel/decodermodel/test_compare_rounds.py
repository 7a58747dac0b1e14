"""``compare_rounds``: predictions held against the mean of interleaved rounds, with
the rounds' spread, the errors' summary, rank correlation and each model's pick."""

from __future__ import annotations

import json

import pytest

from specmodel.formats.run_record import ProblemRun
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
    # the interval of a round this size holds the expectation's (same point, wider)
    with_both = [r for r in s.rows if r.decoder_interval and r.decoder_sample_interval]
    assert with_both
    for r in with_both:
        (lo, hi), (slo, shi) = r.decoder_interval, r.decoder_sample_interval
        assert slo <= lo and hi <= shi
    assert set(s.covered) == {"decoder", "decoder, a run this size"}
    assert s.covered["decoder"][0] <= s.covered["decoder, a run this size"][0]



def test_registered_predictions_are_held_against_the_same_means() -> None:
    """Predictions written before a sweep decoded get their own column, error and
    summary (mean/max |error|, Spearman, pick) beside the model computed now."""
    recs = [_record(ROUND1), _record(ROUND2)]
    reg = {"target": (1.0, None), "sync k1=2 k2=1": (0.5, (0.4, 0.6)),
           "async k1=3 k2=2": (0.7, (0.6, 0.8)), "sync k1=1 k2=3": (1.3, (1.1, 1.5))}
    s = compare_rounds(recs, decoder=False, registered=reg)
    row = next(r for r in s.rows if r.config == "sync k1=2 k2=1")
    assert row.registered_decoder == 0.5 and row.registered_interval == (0.4, 0.6)
    assert row.registered_error == pytest.approx(0.5 / 0.45 - 1)
    spec = [r for r in s.rows if r.config != "target"]
    assert s.mean_abs_error["registered"] == pytest.approx(
        sum(abs(r.registered_error) for r in spec) / 3)
    assert s.recommended["registered"] == "sync k1=1 k2=3" == s.best_measured
    assert s.spearman["registered"] == pytest.approx(1.0)
    assert "registered_decoder" in s.models
    # the intervals' claim, counted: 0.45, 0.775 and 1.15 lie inside
    assert s.covered == {"registered": (3, 3)}
    narrow = {**reg, "async k1=3 k2=2": (0.7, (0.65, 0.75))}
    assert compare_rounds(recs, decoder=False, registered=narrow).covered == {
        "registered": (2, 3)}
    # a registration that also wrote the interval of a run of the sweep's size
    sized = {**narrow, "async k1=3 k2=2": (0.7, (0.65, 0.75), (0.6, 0.8)),
             "sync k1=2 k2=1": (0.5, (0.4, 0.6), (0.3, 0.7))}
    got = compare_rounds(recs, decoder=False, registered=sized)
    assert got.covered == {"registered": (2, 3), "registered, a run this size": (2, 2)}
    row = next(r for r in got.rows if r.config == "async k1=3 k2=2")
    assert row.registered_sample_interval == (0.6, 0.8)
    plain = compare_rounds(recs, decoder=False)
    assert plain.covered == {}
    assert plain.mean_abs_error["registered"] is None
    assert all(r.registered_decoder is None for r in plain.rows)


def test_registered_predictions_are_checked() -> None:
    recs = [_record(ROUND1), _record(ROUND2)]
    with pytest.raises(ValueError, match=r"registered: \['sync k1=9 k2=1'\] are not"):
        compare_rounds(recs, decoder=False, registered={"sync k1=9 k2=1": (1.0, None)})
    with pytest.raises(ValueError, match="positive finite"):
        compare_rounds(recs, decoder=False, registered={"sync k1=2 k2=1": (float("nan"),
                                                                            None)})

def _problem(tokens: int, target: float, draft: float, verify: float) -> dict:
    return {"problem": 0, "output": "x", "steps": [], "drafted_steps": 0,
            "accepted_steps": 0, "wasted_draft_steps": 0, "target_steps": 1,
            "target_batches": 1, "output_tokens": tokens, "seconds": target + draft + verify,
            "draft_seconds": draft, "target_seconds": target, "verify_seconds": verify,
            "correct": False, "finished": "end"}


def test_rows_say_where_the_time_went_measured_and_simulated() -> None:
    """Seconds per output token inside each model's calls: pooled over the rounds'
    problems, and as the decoder model simulates them (absolute costs)."""
    recs = []
    for scale in (1.0, 3.0):
        rec = _record(ROUND1)
        cfg = next(c for c in rec.configs if c.label == "sync k1=2 k2=1")
        probs = [_problem(100, 20 * scale, 4.0, 1.0), _problem(50, 10 * scale, 2.0, 0.5)]
        cfg = cfg.model_copy(update={"problems": [ProblemRun.model_validate(p)
                                                  for p in probs]})
        recs.append(rec.model_copy(update={"configs": [
            cfg if c.label == cfg.label else c for c in rec.configs]}))
    s = compare_rounds(recs)
    row = next(r for r in s.rows if r.config == "sync k1=2 k2=1")
    assert row.measured_split["target"] == pytest.approx((30 + 90) / 300)
    assert row.measured_split["draft"] == pytest.approx(12 / 300)
    assert row.measured_split["verify"] == pytest.approx(3 / 300)
    assert row.measured_split["total"] == pytest.approx((30 + 90 + 12 + 3) / 300)
    assert set(row.decoder_split) == {"total", "target", "draft", "verify"}
    assert row.decoder_split["target"] > 0 and row.decoder_split["draft"] > 0
    # sync runs one model at a time: the parts add up to the whole
    parts = sum(row.decoder_split[k] for k in ("target", "draft", "verify"))
    assert parts == pytest.approx(row.decoder_split["total"], rel=1e-6)
    assert s.rows[0].measured_split == {}  # no problems recorded for it
    assert row.rows_per_batch == pytest.approx(1.0)  # each problem: 1 step in 1 call
    assert row.decoder_rows_per_batch is not None and row.decoder_rows_per_batch > 1
    # the acceptance the model expects the run to meet, beside the run's own
    assert row.decoder_step_acceptance is not None and 0 < row.decoder_step_acceptance < 1
    assert s.rows[0].decoder_step_acceptance is None  # the target alone judges nothing


def test_the_baseline_speed_compares_absolute_costs_with_the_run() -> None:
    """The target alone's measured seconds per token over the decoder model's: the
    calibration's absolute costs checked against the sweep's machine state."""
    recs = []
    for seconds in (20.0, 30.0):
        rec = _record(ROUND1)
        base = next(c for c in rec.configs if c.label == "target")
        probs = [ProblemRun.model_validate(_problem(100, seconds, 0.0, 0.0))]
        recs.append(rec.model_copy(update={"configs": [
            base.model_copy(update={"problems": probs}) if c is base else c
            for c in rec.configs]}))
    s = compare_rounds(recs)
    row = s.rows[0]
    assert row.measured_split["total"] == pytest.approx(50 / 200)
    assert s.baseline_speed == pytest.approx(row.measured_split["total"]
                                             / row.decoder_split["total"])
    assert compare_rounds([_record(ROUND1)], decoder=False).baseline_speed is None


@pytest.mark.usefixtures("quick_decoder_model")
def test_validate_says_how_the_calibrations_absolute_costs_held(capsys) -> None:
    """`specmodel validate` on a committed held-out round: the target alone's measured
    time per token over the decoder model's, printed as the summary computes it."""
    from pathlib import Path

    from cli.main import main
    from specmodel.formats.calibration import load_calibration
    from specmodel.formats.run_record import load_run_record
    from specmodel.prediction import baseline_speed

    results = Path(__file__).resolve().parents[3] / "benchmarks" / "results"
    record, cal = results / "heldout_05b_round1.run.json", results / "heldout_05b_calibration.json"
    speed = baseline_speed(compare(load_run_record(record), load_calibration(cal)))
    assert speed is not None and 0.3 < speed < 3
    assert main(["validate", str(record), "--calibration", str(cal)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"the target alone ran at {speed:.0%} of the time per token" in out


@pytest.mark.usefixtures("quick_decoder_model")
def test_validate_takes_the_prompt_length_a_record_lacks(tmp_path, capsys) -> None:
    """A record without its prompts' length: validate says the decoder model assumed one
    and `--prompt-tokens` gives it (the decoder column changes); a record that stores it
    refuses a different one."""
    from pathlib import Path

    from cli.main import main
    from specmodel.formats.jsonio import write_json_atomic
    from specmodel.formats.run_record import load_run_record

    results = Path(__file__).resolve().parents[3] / "benchmarks" / "results"
    record, cal = results / "heldout_05b_round1.run.json", results / "heldout_05b_calibration.json"
    args = ["validate", str(record), "--calibration", str(cal), "--json"]
    assert main(args) == 0
    assumed = json.loads(capsys.readouterr().out)
    assert main([*args, "--prompt-tokens", "72"]) == 0
    given = json.loads(capsys.readouterr().out)
    spec = [i for i, r in enumerate(assumed) if r["k1"] > 1]
    assert any(assumed[i]["predicted_decoder"] != given[i]["predicted_decoder"] for i in spec)
    assert main(args[:-1]) == 0
    assert "does not store its prompts' length" in " ".join(capsys.readouterr().out.split())
    assert main([*args[:-1], "--prompt-tokens", "72"]) == 0
    assert "does not store" not in capsys.readouterr().out
    rec = load_run_record(record)
    stored = tmp_path / "stored.run.json"
    write_json_atomic(rec.model_copy(update={"settings": rec.settings.model_copy(
        update={"prompt_tokens": 72.0})}), stored)
    assert main(["validate", str(stored), "--calibration", str(cal), "--prompt-tokens",
                 "90"]) == 2
    assert "stores its mean prompt length" in capsys.readouterr().err
    assert main(["validate", str(record), "--prompt-tokens", "0"]) == 2
    assert "--prompt-tokens must be > 0" in capsys.readouterr().err
