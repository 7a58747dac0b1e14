"""Measured draft step lengths and correlated step verdicts in the decoder model
(issue 12): the acceptance model from a calibration, the Markov draws of the simulator,
and ρ = 0 leaving every seeded result as it was."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specmodel.config import SpecConfig
from specmodel.decodermodel import AcceptanceModel, CostModel, EngineBehaviour, Workload
from specmodel.decodermodel.simulate import _Run, exact_speedup, predict, simulate
from specmodel.formats.calibration import load_preset

MEASURED = "measured-qwen2.5-coder-0.5b-smollm2-135m"


def _with_step(**update):
    cal = load_preset(MEASURED)
    return cal.model_copy(update={"step": cal.step.model_copy(update=update)})


def test_from_calibration_uses_the_draft_histogram_and_the_correlation() -> None:
    old = AcceptanceModel.from_calibration(load_preset(MEASURED))
    assert old.verdict_correlation == 0.0 and old.verdict_samples is None
    assert old.draft_steps == old.target_steps
    text = " | ".join(old.missing)
    assert "draft step lengths: not measured" in text
    assert "consecutive step verdicts: not measured" in text

    acc = AcceptanceModel.from_calibration(_with_step(
        draft_step_tokens_histogram={5: 1, 9: 3}, verdict_correlation=0.4, verdict_pairs=30))
    assert acc.draft_steps.values == (5, 9) and acc.draft_steps.weights == (0.25, 0.75)
    assert acc.target_steps == old.target_steps
    assert acc.verdict_correlation == 0.4 and acc.verdict_samples == 30
    text = " | ".join(acc.missing)
    assert "draft step lengths" not in text and "consecutive step verdicts" not in text
    assert not acc.is_iid
    d = acc.to_dict()
    assert d["verdict_correlation"] == 0.4 and d["verdict_samples"] == 30
    assert d["draft_step_tokens_mean"] == pytest.approx(8.0)

    undefined = AcceptanceModel.from_calibration(_with_step(verdict_pairs=1))
    assert undefined.verdict_correlation == 0.0 and undefined.verdict_samples is None
    assert any("consecutive step verdicts: undefined" in m for m in undefined.missing)


def test_resampling_draws_the_correlation_only_when_its_sample_size_is_known() -> None:
    base = AcceptanceModel.from_calibration(load_preset(MEASURED))
    corr = dataclasses.replace(base, verdict_correlation=0.3, verdict_samples=40)
    a = base.resampled(np.random.default_rng(3))
    b = corr.resampled(np.random.default_rng(3))
    # the rate draws come first and are unchanged; ρ is drawn after them
    assert (a.alpha1, a.alpha2, a.token_by_position) == (b.alpha1, b.alpha2,
                                                         b.token_by_position)
    assert a.verdict_correlation == 0.0
    assert -1 <= b.verdict_correlation <= 1 and b.verdict_correlation != 0.3
    no_n = dataclasses.replace(base, verdict_correlation=0.3)
    assert no_n.resampled(np.random.default_rng(3)).verdict_correlation == 0.3
    rng = np.random.default_rng(0)
    draws = [corr.resampled(rng).verdict_correlation for _ in range(2000)]
    z = np.arctanh(draws)
    assert np.mean(z) == pytest.approx(math.atanh(0.3), abs=4 / math.sqrt(37 * 2000))
    assert np.std(z) == pytest.approx(1 / math.sqrt(37), rel=0.1)


@pytest.mark.parametrize("rho", [-1.01, 1.5, float("nan")])
def test_an_acceptance_model_rejects_a_correlation_outside_minus_one_one(rho) -> None:
    with pytest.raises(ValueError, match="verdict_correlation"):
        AcceptanceModel(0.5, 0.5, verdict_correlation=rho)


@settings(max_examples=100, deadline=None)
@given(st.floats(0.0, 1.0), st.floats(-1.0, 1.0))
def test_next_step_rate_is_a_clipped_markov_chain(p: float, rho: float) -> None:
    acc = AcceptanceModel(0.5, 0.5, verdict_correlation=rho)
    up, down = acc.next_step_rate(p, True), acc.next_step_rate(p, False)
    assert acc.next_step_rate(p, None) == p
    assert 0.0 <= up <= 1.0 and 0.0 <= down <= 1.0
    if 0 <= p + rho * (1 - p) <= 1 and 0 <= p * (1 - rho) <= 1:  # no clip: marginal p
        assert p * up + (1 - p) * down == pytest.approx(p, abs=1e-12)
        assert up - down == pytest.approx(rho, abs=1e-12)  # lag-1 correlation of the chain
    assert AcceptanceModel(0.5, 0.5).next_step_rate(p, True) == p


@pytest.mark.parametrize(("p", "rho"), [(0.6, 0.5), (0.3, -0.3), (0.75, 0.0), (0.5, 0.9)])
def test_the_simulators_verdicts_have_the_marginal_rate_and_lag1_correlation(
        p: float, rho: float) -> None:
    acc = AcceptanceModel(p, 0.5, verdict_correlation=rho)
    cfg = SpecConfig(mode="sync", k1=3, max_steps=10, max_step_tokens=48)
    run = _Run(cfg, acc, CostModel.flat(0.3), Workload.of(cfg), np.random.default_rng(11))
    n = 40_000
    v = np.array([run.judge(0) for _ in range(n)], dtype=np.float64)
    se_mean = math.sqrt(p * (1 - p) / n * (1 + rho) / (1 - rho))
    assert v.mean() == pytest.approx(p, abs=4 * se_mean)
    r1 = np.corrcoef(v[:-1], v[1:])[0, 1]
    assert r1 == pytest.approx(rho, abs=4 * math.sqrt((1 - rho**2) / n) + 1e-3)
    assert run.judged == n and run.accepted == int(v.sum())


def test_the_chain_starts_afresh_with_every_problem() -> None:
    """ρ = 1: within a problem every verdict repeats the first, so a problem is all
    accepted or all rejected; across problems both happen (the chain is reset)."""
    acc = AcceptanceModel(0.5, 0.5, verdict_correlation=1.0)
    acc_iid = AcceptanceModel.iid(0.5, 0.5)
    cfg = SpecConfig(mode="sync", k1=3, max_steps=12, max_step_tokens=48)
    res = simulate(cfg, acc, CostModel.flat(0.3), problems=200, seed=4)
    assert len(np.unique(np.round(res.seconds, 9))) == 2
    iid = simulate(cfg, acc_iid, CostModel.flat(0.3), problems=200, seed=4)
    assert len(np.unique(np.round(iid.seconds, 9))) > 2


def _reference_judge(self, depth: int, width: int = 1, tree: bool = False,
                     index: int | None = None, lengths: tuple[int, int] | None = None) -> bool:
    """``_Run.judge`` as it was before verdict correlation (i.i.d. draws; the models
    compared have no step-index or length offsets)."""
    self.judged += 1
    ok = bool(self.rng.random() < self.acc.step_rate(depth, width, tree))
    self.accepted += ok
    return ok


CONFIGS = [SpecConfig(mode="sync", k1=4, max_steps=16, max_step_tokens=48),
           SpecConfig(mode="sync", k1=3, width=2, max_steps=10, max_step_tokens=48),
           SpecConfig(mode="async", k1=3, max_steps=16, max_step_tokens=48)]


@pytest.mark.parametrize("cfg", CONFIGS)
@pytest.mark.parametrize("engine", [None, EngineBehaviour()])
def test_zero_correlation_reproduces_the_iid_prediction_exactly(
        cfg: SpecConfig, engine, monkeypatch) -> None:
    costs = CostModel.flat(0.3) if engine is None else CostModel.flat(0.3).replace(
        engine=engine)
    acc = dataclasses.replace(AcceptanceModel.from_calibration(load_preset(MEASURED)),
                              verdict_correlation=0.0)
    iid = AcceptanceModel.iid(0.6, 0.5, step_tokens=12)
    now = [predict(cfg, a, costs, problems=30, draws=3, draw_problems=10, seed=7).to_dict()
           for a in (acc, iid)]
    correlated = predict(cfg, dataclasses.replace(iid, verdict_correlation=0.5), costs,
                         problems=30, draws=0, seed=7)
    assert correlated.speedup != now[1]["speedup"]  # ρ ≠ 0 does change the draws
    monkeypatch.setattr(_Run, "judge", _reference_judge)
    before = [predict(cfg, a, costs, problems=30, draws=3, draw_problems=10,
                      seed=7).to_dict() for a in (acc, iid)]
    assert now == before


def test_a_correlation_switches_the_closed_form_off() -> None:
    cfg = SpecConfig(mode="sync", k1=3, max_steps=10, max_step_tokens=48)
    iid = AcceptanceModel.iid(0.6, 0.5, step_tokens=12)
    assert exact_speedup(cfg, iid, CostModel.flat(0.3)) is not None
    assert exact_speedup(cfg, dataclasses.replace(iid, verdict_correlation=0.2),
                         CostModel.flat(0.3)) is None
