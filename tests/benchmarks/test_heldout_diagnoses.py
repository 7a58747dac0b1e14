"""``bench_heldout --report``'s diagnoses (``--acceptance-as-run``, ``--lengths-as-run``):
the step lengths it reads from the first round and the table of the decoder model at
what the rounds decoded (on the committed seed-26 round; nothing is written)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from benchmarks.bench_heldout import RESULTS, print_diagnoses, run_lengths_of
from specmodel.formats.calibration import load_calibration
from specmodel.formats.run_record import load_run_record
from specmodel.run_lengths import run_lengths


def test_run_lengths_of_the_first_round(capsys) -> None:
    cal = load_calibration(RESULTS / "heldout_05b_profile_run30_epyc1203.json")
    rec = load_run_record(RESULTS / "heldout_05b_s26_epyc1204_round1.run.json")
    got = run_lengths_of(cal, run_lengths(rec))
    assert got["config"] == "sync k1=2 k2=1" and len(got["answers"]) == 3
    steps = sum(len(a) for a in got["answers"])
    assert got["mean_target_step"] == pytest.approx(
        sum(t for a in got["answers"] for t, _ in a) / steps)
    assert got["calibration_mean_target_step"] == cal.step.step_tokens_mean
    assert got["padding_ratio"] > got["calibration_padding_ratio"] > 1
    out = " ".join(capsys.readouterr().out.split())
    assert f"3 problems, {steps} steps" in out and "padding ratio" in out


def _row(config: str, k1: int, measured: float, **preds: float | None) -> SimpleNamespace:
    fields = {"registered_decoder": None, "decoder_at_run_acceptance": None,
              "decoder_at_run_lengths": None, "decoder_at_run_lengths_and_acceptance": None}
    fields.update(preds)
    errors = {k.replace("_decoder", "_error") if k == "registered_decoder" else f"{k}_error":
              None if v is None else v / measured - 1 for k, v in fields.items()}
    return SimpleNamespace(config=config, k1=k1, k2=1, measured_mean=measured,
                           **fields, **errors)


def test_print_diagnoses_gives_each_column_and_its_mean_error(capsys) -> None:
    rows = [_row("target", 1, 1.0, registered_decoder=1.0),
            _row("sync k1=2 k2=1", 2, 0.5, registered_decoder=0.6,
                 decoder_at_run_acceptance=0.55, decoder_at_run_lengths=0.45,
                 decoder_at_run_lengths_and_acceptance=0.5)]
    print_diagnoses(rows, acceptance=True, lengths=True)
    out = capsys.readouterr().out
    assert "target " not in out  # the speculative rows only
    assert "at run lengths" in out and "at both" in out
    assert "registered: mean |error| 20.0%" in out
    assert "at run lengths: mean |error| 10.0%" in out
    assert "at both: mean |error| 0.0%" in out
    print_diagnoses(rows, acceptance=False, lengths=True)
    out = capsys.readouterr().out
    assert "at run α1" not in out and "at both" not in out
