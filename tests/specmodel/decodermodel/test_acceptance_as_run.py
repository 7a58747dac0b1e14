"""The decoder model at a run's own step acceptance (``validate --acceptance-as-run``):
:meth:`AcceptanceModel.step_shifted` moves every step rate by one logit offset, and
:func:`specmodel.prediction.at_run_acceptance` finds the offset at which the simulated
decoder accepts as the run did — a diagnosis that splits the decoder model's error into
the acceptance a run drew and the rest."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specmodel.config import SpecConfig
from specmodel.decodermodel import AcceptanceModel
from specmodel.decodermodel.acceptance import logit_shifted
from specmodel.formats.calibration import load_preset
from specmodel.formats.run_record import load_run_record
from specmodel.prediction import at_run_acceptance, compare, compare_rounds, decoder_prediction

RESULTS = Path(__file__).resolve().parents[3] / "benchmarks" / "results"
SEED12 = [RESULTS / f"synthetic_cpu_continuous_seed12_round{r}.run.json" for r in (1, 2)]
"""A committed synthetic-acceptance sweep (async call and continuous, 24 problems)."""

rates = st.floats(0.02, 0.98)


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


@given(a=rates, b=rates, depth=st.lists(rates, min_size=1, max_size=4),
       branch=rates)
@settings(max_examples=60, deadline=None)
def test_step_shift_moves_every_step_rate_by_one_logit_offset(
        a: float, b: float, depth: list[float], branch: float) -> None:
    acc = AcceptanceModel(alpha1=a, alpha2=0.5, step_by_depth=tuple(depth),
                          branch_by_width={2: branch})
    assert acc.step_shifted(0.0) is acc
    off = _logit(b) - _logit(a)
    got = acc.step_shifted(off)
    assert got.alpha1 == pytest.approx(b, abs=1e-9)  # i.i.d.: onto the target rate
    assert got.alpha2 == acc.alpha2 and got.target_steps == acc.target_steps
    assert got.step_by_depth is not None
    for old, new in zip(depth, got.step_by_depth, strict=True):
        assert _logit(new) - _logit(old) == pytest.approx(off, abs=1e-6)
        assert (new - old) * off >= -1e-12  # moved the offset's way
    assert got.branch_by_width[2] == pytest.approx(logit_shifted(branch, off))
    back = got.step_shifted(-off)
    assert back.alpha1 == pytest.approx(a, abs=1e-9)
    assert any("logit" in m for m in got.missing) == (off != 0)  # it says so


def test_step_shift_refuses_a_non_finite_offset() -> None:
    acc = AcceptanceModel(alpha1=0.6, alpha2=0.5)
    for bad in (math.inf, math.nan):
        with pytest.raises(ValueError, match="offset must be a finite"):
            acc.step_shifted(bad)


def test_at_run_acceptance_simulates_the_runs_rate_and_moves_the_speedup_its_way() -> None:
    """From the paper's preset, async k1 = 3: a run that accepted less than the
    calibration is predicted slower, one that accepted more faster, each shifted model
    accepting within the tolerance of the run's rate; a run that judged nothing has no
    such prediction, and impossible counts are refused."""
    cal = load_preset("lr-paper-gsm8k-deepseek")
    cfg = SpecConfig(mode="async", k1=3, max_steps=12, max_step_tokens=48)
    base = decoder_prediction(cal, cfg, problems=1000, draws=1)
    low = at_run_acceptance(cal, cfg, 40, 100, problems=1000)
    high = at_run_acceptance(cal, cfg, 80, 100, problems=1000)
    for got, rate in ((low, 40.5 / 101), (high, 80.5 / 101)):
        sim = got.counters["accepted_steps"] / got.counters["drafted_steps"]
        assert abs(sim - rate) <= 0.005
    assert low.speedup < base.speedup < high.speedup
    assert at_run_acceptance(cal, cfg, 0, 0) is None
    plain = SpecConfig(max_steps=12, max_step_tokens=48)  # no step speculation: no verdicts
    assert at_run_acceptance(cal, plain, 3, 10) is None
    with pytest.raises(ValueError, match=r"accepted must be in \[0, judged=10\]"):
        at_run_acceptance(cal, cfg, 11, 10)
    for kw, msg in (({"judged": -1}, "judged must be >= 0"),
                    ({"tries": 0}, "tries must be >= 1"),
                    ({"tolerance": 0.0}, r"tolerance must be in \(0, 1\)")):
        args = {"accepted": 0, "judged": 10, **kw}
        with pytest.raises(ValueError, match=msg):
            at_run_acceptance(cal, cfg, **args)


@pytest.mark.usefixtures("quick_decoder_model")
def test_compare_at_run_acceptance_on_a_committed_sweep() -> None:
    """On a committed synthetic sweep (seed 12, 24 problems; its runs accepted 0.55–0.57
    of the draft steps, the calibration 0.63): the shifted decoder model accepts as each
    configuration did, its error is against the same measured speedup, and it is lower
    than the unshifted model's speedup (the run accepted less); without asking, none."""
    rec = load_run_record(SEED12[0])
    plain = {r.config: r for r in compare(rec)}
    rows = {r.config: r for r in compare(rec, acceptance_as_run=True)}
    assert all(r.decoder_at_run_acceptance is None for r in plain.values())
    assert rows["target"].decoder_at_run_acceptance is None  # nothing judged
    spec = [r for r in rows.values() if r.step_acceptance is not None]
    assert {r.config for r in spec} == {"async k1=3 k2=1", "async k1=3 k2=1 continuous"}
    for r in spec:
        assert r.decoder_at_run_acceptance is not None
        assert r.decoder_at_run_step_acceptance == pytest.approx(r.step_acceptance, abs=0.01)
        assert r.decoder_at_run_acceptance_error == pytest.approx(
            r.decoder_at_run_acceptance / r.measured_speedup - 1)
        assert r.step_acceptance < r.decoder_step_acceptance
        assert r.decoder_at_run_acceptance < r.predicted_decoder
        assert r.predicted_decoder == plain[r.config].predicted_decoder  # unchanged
    pooled = compare_rounds([load_run_record(p) for p in SEED12], acceptance_as_run=True)
    for r in pooled.rows:
        if r.step_acceptance is None:
            assert r.decoder_at_run_acceptance is None
        else:
            assert r.decoder_at_run_step_acceptance == pytest.approx(r.step_acceptance,
                                                                     abs=0.01)
            assert r.decoder_at_run_acceptance_error == pytest.approx(
                r.decoder_at_run_acceptance / r.measured_mean - 1)


@pytest.mark.usefixtures("quick_decoder_model")
def test_validate_acceptance_as_run(capsys) -> None:
    """`validate --acceptance-as-run` prints the diagnosis table and puts its fields in
    the JSON rows; without it the JSON fields are null; a synthetic record's prompt
    length (in its synthetic settings) raises no note that one was assumed."""
    from cli.main import main

    args = ["validate", str(SEED12[0])]
    assert main([*args, "--acceptance-as-run"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "at each configuration's measured step acceptance" in out
    assert "does not store its prompts' length" not in out
    assert main([*args, "--acceptance-as-run", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    spec = [r for r in rows if r["step_acceptance"] is not None]
    assert spec and all(r["decoder_at_run_acceptance"] is not None for r in spec)
    assert main([*args, "--json"]) == 0
    assert all(r["decoder_at_run_acceptance"] is None
               for r in json.loads(capsys.readouterr().out))
