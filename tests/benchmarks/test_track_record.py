"""``bench_track_record``: every held-out sweep's registration against its rounds, read
from the committed reports, and the track-record band checked in the order they ran."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.bench_track_record import (
    SWEEPS,
    Sweep,
    pooled,
    round_residuals,
    sweep_summary,
    track_band,
)
from specmodel.stats import conformal_bound


@pytest.fixture(scope="module")
def sweeps() -> list[dict]:
    return [sweep_summary(s) for s in SWEEPS]


def test_every_sweep_is_held_out_and_its_report_agrees_with_its_rows(sweeps) -> None:
    # sweep_summary refuses a report whose mean |error| differs from its rows' and a
    # tested registration whose calibration profiled any of the sweep's problems
    assert len(sweeps) == len(SWEEPS)
    for s in sweeps:
        t = s["tested"]
        assert t["held_out"] and t["profiled_problems"] == []
        assert t["rows"] and all(r["registered"] > 0 and r["measured_mean"] > 0
                                 for r in t["rows"])
        assert t["max_abs_error"] >= t["mean_abs_error"] > 0
        # written before the sweep's first problem ended, where the records date it
        assert t["before_the_first_problem"] is not False
        assert (t["before_the_first_problem"] is None) == (s["decoded_from"] is None)


def test_the_leg_counting_calibration_that_saw_the_problems_is_flagged(sweeps) -> None:
    leg3 = next(s for s in sweeps if s["dataset"] == "leg_counting" and s["seed"] == 3)
    (ten,) = leg3["others"]
    assert not ten["held_out"] and ten["profiled_problems"] == [0, 1, 2]
    with pytest.raises(SystemExit, match="not a held-out test"):
        sweep_summary(Sweep("heldout_05b_leg_s3_epyc1204", "ten leg_counting problems"))


def test_the_docs_table_numbers(sweeps) -> None:
    # the first table of docs/results.md, e.g. seed 27 and time_intervals seed 40
    by = {(s["trio"], s["dataset"], s["seed"]): s["tested"] for s in sweeps}
    s27 = by[("0.5b", "gsm_symbolic", 27)]
    assert round(100 * s27["mean_abs_error"], 1) == 6.2
    assert round(100 * s27["max_abs_error"], 1) == 12.9
    ti = by[("0.5b", "time_intervals", 40)]
    assert round(100 * ti["mean_abs_error"], 1) == 15.6 and ti["recommended"] == "target"


def test_pooled_counts(sweeps) -> None:
    p = pooled(sweeps)
    assert p["sweeps"] == len(sweeps)
    assert p["configurations"] == sum(len(s["tested"]["rows"]) for s in sweeps)
    assert 0 <= p["sweeps_within_10pct"] <= p["sweeps"]
    inside, held = p["inside_run_size_interval"]
    assert 0 <= inside <= held <= p["configurations"]


def test_the_band_in_run_order_uses_only_earlier_rounds(sweeps) -> None:
    band = track_band(sweeps)
    history: list[float] = []
    checks = iter(band["checks"])
    for s in sweeps:
        res = round_residuals(s["tested"])
        if len(history) >= 19:
            c = next(checks)
            assert c["from_rounds"] == len(history)
            assert c["bound_log"] == conformal_bound(history)
            assert c["inside"] == sum(r <= c["bound_log"] for r in res)
        history += res
    assert next(checks, None) is None
    assert band["rounds_now"] == len(history)
    assert band["factor_now"] == pytest.approx(math.exp(conformal_bound(history)))


def _sweep(errors: list[list[float]]) -> dict:
    rows = [{"config": f"c{i}", "registered": 1.0, "measured": [1.0 + e for e in rounds],
             "measured_mean": 1.0 + sum(rounds) / len(rounds)}
            for i, rounds in enumerate(errors)]
    return {"trio": "0.5b", "dataset": "gsm_symbolic", "seed": 1, "tested": {"rows": rows}}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.lists(st.floats(-0.5, 0.5), min_size=1, max_size=2),
                         min_size=1, max_size=8), min_size=2, max_size=12))
def test_band_counts_are_consistent(errs) -> None:
    made = [_sweep(e) for e in errs]
    total = sum(len(r) for e in errs for r in e)
    if total < 19:
        with pytest.raises(ValueError, match="too few"):
            track_band(made)
        return
    band = track_band(made)
    assert band["rounds_now"] == total
    assert 0 <= band["inside"] <= band["rounds"] <= total
    assert all(c["from_rounds"] >= 19 for c in band["checks"])


def test_the_band_now_is_the_bound_of_every_committed_round(sweeps) -> None:
    from benchmarks.bench_track_record import current_band

    band = current_band()
    every = [x for s in sweeps for x in round_residuals(s["tested"])]
    assert band["rounds"] == len(every)
    assert band["quantile_log"] == conformal_bound(every)
    assert band["factor"] == pytest.approx(math.exp(band["quantile_log"]))
    assert band["reports"] == [s.report for s in SWEEPS]
    got = band["checked_in_run_order"]
    assert 0 < got["inside"] <= got["rounds"] < band["rounds"]


def test_band_coverage_counts_the_rounds_of_speculative_rows() -> None:
    from types import SimpleNamespace

    from benchmarks.bench_track_record import band_coverage

    reg = {"track_band": {"factor": 1.25},
           "rows": [{"config": "target", "decoder_track_interval": None},
                    {"config": "a", "decoder_track_interval": [0.4, 0.6]},
                    {"config": "b", "decoder_track_interval": [0.8, 1.25]},
                    {"config": "c", "decoder_track_interval": None}]}

    def row(config: str, measured: list[float], k1: int = 2) -> SimpleNamespace:
        return SimpleNamespace(config=config, k1=k1, k2=1, measured=measured)

    got = band_coverage(reg, [row("target", [1.0, 1.0], k1=1), row("a", [0.5, 0.7]),
                              row("b", [1.0, 0.81]), row("c", [0.3])])
    assert got["by_config"] == {"a": [True, False], "b": [True, True]}
    assert (got["rounds_inside"], got["rounds"], got["factor"]) == (3, 4, 1.25)
    assert band_coverage({"rows": [{"config": "a"}]}, [row("a", [0.5])]) is None


def test_a_registration_states_the_band_around_each_point(monkeypatch, capsys) -> None:
    from types import SimpleNamespace

    import benchmarks.bench_heldout as heldout
    from specmodel.formats.calibration import load_calibration

    monkeypatch.setattr(heldout, "prompt_tokens", lambda a: 64.0)  # no tokenizer here
    a = SimpleNamespace(trio="0.5b", calibration="c.json", dataset="gsm_symbolic",
                        problems=3, seed=99, max_steps=12, max_step_tokens=48,
                        decode_path="static", costs_at_run_time=False)
    cal = load_calibration("benchmarks/results/heldout_05b_profile_run30_epyc1203.json")
    configs = heldout.configurations("0.5b", max_steps=12, max_step_tokens=48,
                                     delimiter="\n", threshold=0.85)[:2]
    reg = heldout.register(a, cal, configs)
    band = reg["track_band"]
    assert band["rounds"] > 300 and band["factor"] > 1
    for r in reg["rows"]:
        lo, hi = r["decoder_track_interval"]
        assert lo * band["factor"] == pytest.approx(r["predicted_decoder"])
        assert hi == pytest.approx(r["predicted_decoder"] * band["factor"])
    assert "track-record band: x/÷" in capsys.readouterr().out
