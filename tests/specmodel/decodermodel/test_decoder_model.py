"""The decoder model's parts: cost surfaces, sources, acceptance, and what the decoder
does that the papers' model does not."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specmodel.config import SpecConfig
from specmodel.decodermodel import (
    MODEL_NAME,
    AcceptanceModel,
    CostModel,
    EngineBehaviour,
    StepLengths,
    Surface,
    Workload,
    predict,
    predict_calibrated,
    simulate,
)
from specmodel.decodermodel.acceptance import fit_length_effect, index_profile, logit_shifted
from specmodel.decodermodel.costs import PASS_FLOOR
from specmodel.formats.calibration import load_preset

MEASURED = "measured-qwen2.5-coder-0.5b-smollm2-135m"


def test_a_surface_is_monotone_and_says_what_it_corrected() -> None:
    s = Surface.from_points({(1, 0): 1.0, (2, 0): 2.0, (4, 0): 1.5, (8, 0): 3.0})
    # T(4) < T(2): both replaced by their mean (the least-squares monotone fit)
    assert [s.time(b) for b in (1, 2, 3, 4, 8)] == pytest.approx([1.0, 1.75, 1.75, 1.75, 3.0])
    assert s.time(16) == pytest.approx(5.5)  # extrapolated from the last two widths
    assert s.time(0.5) == 1.0
    text = " ".join(s.notes)
    assert "monotone fit" in text and "one context length" in text and "extrapolated" in text


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.1, 10.0), min_size=9, max_size=9))
def test_a_surface_is_the_least_squares_monotone_fit_of_a_grid(times: list[float]) -> None:
    """On a 3 × 3 grid the fit is non-decreasing in b and L, keeps the mean (constants
    lie in both orders), leaves monotone data alone, and is no farther from the
    measurements than raising each point to its predecessors (another monotone fit)."""
    pts = {(b, L): times[3 * i + j] for i, b in enumerate((1, 2, 4))
           for j, L in enumerate((0, 100, 200))}
    s = Surface.from_points(pts)
    fit = {k: s.time(*k) for k in pts}
    for (b, L), t in fit.items():
        for (b2, L2), t2 in fit.items():
            if b <= b2 and L <= L2:
                assert t <= t2 * (1 + 1e-6) + 1e-9
    assert sum(fit.values()) == pytest.approx(sum(pts.values()), rel=1e-6)
    raised = {}
    for b in (1, 2, 4):
        for L in (0, 100, 200):
            raised[(b, L)] = max(pts[(b2, L2)] for (b2, L2) in pts if b2 <= b and L2 <= L)
    sq = sum((fit[k] - pts[k]) ** 2 for k in pts)
    assert sq <= sum((raised[k] - pts[k]) ** 2 for k in pts) * (1 + 1e-6) + 1e-9
    mono = Surface.from_points(raised)
    assert all(mono.time(*k) == pytest.approx(v) for k, v in raised.items())
    assert not any("monotone fit" in n for n in mono.notes)


def test_a_surface_interpolates_in_context_and_fills_gaps() -> None:
    pts = {(1, 0): 1.0, (4, 0): 2.0, (1, 1000): 2.0, (2, 1000): 3.0, (4, 1000): 4.0}
    s = Surface.from_points(pts)
    assert s.time(1, 500) == pytest.approx(1.5)
    assert s.time(2, 0) == pytest.approx(4 / 3)  # between b = 1 and 4 at L = 0
    assert s.time(4, 5000) == 4.0  # held at the longest context
    assert any("missing" in n for n in s.notes)
    # never below the shorter context's time at the same batch
    low = Surface.from_points({(1, 0): 2.0, (1, 100): 1.0})
    assert low.time(1, 0) == low.time(1, 100) == pytest.approx(1.5)
    assert any("monotone fit" in n for n in low.notes)
    with pytest.raises(ValueError, match="bad point"):
        Surface.from_points({(0, 0): 1.0})


def test_costs_from_a_calibration_say_what_was_measured_and_what_assumed() -> None:
    cal = load_preset(MEASURED)
    cm = CostModel.from_calibration(cal)
    assert cm.unit == "s"
    assert cm.target_decode.time(1) == pytest.approx(cal.batch_cost.points[0].time)
    assert cm.draft_decode.time(1) == pytest.approx(cal.step.c1 * cm.target_decode.time(1))
    assert cm.sources["target_decode"].startswith("measured")
    assert cm.sources["verifier_per_pair"].startswith("measured")
    for name in ("prefill_per_token", "call_overhead", "contention", "verifier_per_batch"):
        assert cm.sources[name].startswith("assumed"), name
    assert set(cm.measured()) | set(cm.assumed()) <= set(cm.sources)
    assert any("monotone fit" in n for n in cm.notes())  # its T(4) < T(2)
    given = CostModel.from_calibration(cal, prefill_per_token=0.01, contention=1.5)
    assert given.sources["prefill_per_token"].startswith("given")
    assert given.draft_prefill_per_token == pytest.approx(0.01 * cal.step.c1)
    no_cost = cal.model_copy(update={"batch_cost": None})
    flat = CostModel.from_calibration(no_cost)
    assert flat.unit == "T" and flat.sources["target_decode"].startswith("assumed: flat")
    with pytest.raises(ValueError, match="contention"):
        CostModel.flat(0.3).replace(contention=0.5)


def test_acceptance_from_a_calibration_names_what_is_missing() -> None:
    cal = load_preset(MEASURED)
    acc = AcceptanceModel.from_calibration(cal)
    assert acc.alpha1 == cal.step.alpha1 and acc.step_samples == 40
    per_pass = [cal.token.acceptance_by_position[0] * cal.token.draft_rate,
                *cal.token.acceptance_by_position[1:]]
    assert acc.token_profile().tolist() == pytest.approx(per_pass)
    text = " | ".join(acc.missing)
    assert "by depth" in text and "best-of-W" in text and "draft step lengths" in text
    assert not acc.target_steps.is_constant  # the preset has a histogram
    mean_only = cal.model_copy(update={"step": cal.step.model_copy(
        update={"step_tokens_histogram": None})})
    acc_mean = AcceptanceModel.from_calibration(mean_only)
    assert acc_mean.target_steps.values == (21,)
    assert any("spread" in m for m in acc_mean.missing)
    assert acc.step_rate(0, 2) == pytest.approx(1 - (1 - acc.alpha1) ** 2)
    measured_w = dataclasses.replace(acc, branch_by_width={2: 0.15})
    assert measured_w.step_rate(3, 2) == 0.15
    by_depth = dataclasses.replace(acc, step_by_depth=(0.5, 0.3))
    assert [by_depth.step_rate(d) for d in range(4)] == [0.5, 0.3, 0.3, 0.3]
    a, b = (acc.resampled(np.random.default_rng(1)) for _ in range(2))
    assert a == b and a.alpha1 != acc.alpha1 and 0 < a.alpha1 < 1
    lengths = StepLengths.histogram({"3": 1, "40": 3})
    draws = lengths.sample(np.random.default_rng(0), 4000, cap=32)
    assert set(draws.tolist()) == {3, 32} and abs((draws == 3).mean() - 0.25) < 0.03


def _flat_decoder_engine(c1: float, **changes) -> CostModel:
    return CostModel.flat(c1).replace(engine=dataclasses.replace(EngineBehaviour.papers(),
                                                                 **changes))


def test_the_decoders_async_cannot_overlap_target_steps_at_k1_2() -> None:
    """One target worker: at k1 = 2 every position waits for the previous target step,
    so even with free drafts the speedup is exactly 1 (the papers' S2(2) is not)."""
    acc = AcceptanceModel.iid(0.8, 0.5, step_tokens=8)
    cfg = SpecConfig(mode="async", k1=2, max_steps=50, max_step_tokens=64)
    paper = predict(cfg, acc, CostModel.flat(0.2), problems=20, draws=0)
    dec = predict(cfg, acc, _flat_decoder_engine(0.2, async_schedule="decoder"),
                  problems=20, draws=0)
    assert dec.speedup == pytest.approx(1.0, rel=1e-12)
    assert paper.speedup > 1.3


def test_lost_kv_cache_and_overhead_cost_token_speculation() -> None:
    acc = AcceptanceModel.iid(0.3, 0.6, step_tokens=20)
    cfg = SpecConfig(k1=1, k2=3, max_steps=8, max_step_tokens=40)
    work = Workload(8, 40, prompt_tokens=300)
    free = CostModel.flat(0.3, c2=0.1).replace(engine=EngineBehaviour())
    paid = free.replace(prefill_per_token=0.05)
    s_free = predict(cfg, acc, free, work, problems=50, draws=0).speedup
    s_paid = predict(cfg, acc, paid, work, problems=50, draws=0).speedup
    assert s_paid < 0.5 * s_free  # the baseline prefills new tokens only, speculation all
    over = predict(cfg, acc, free.replace(call_overhead=5.0), work, problems=50,
                   draws=0).speedup
    assert over < s_free


def test_contention_slows_async_and_sync_batches_cost_their_longest_member() -> None:
    acc = AcceptanceModel(0.4, 0.5, target_steps=StepLengths.histogram({4: 1, 40: 1}),
                          draft_steps=StepLengths.histogram({4: 1, 40: 1}))
    eng = EngineBehaviour()
    cm = CostModel.flat(0.3).replace(engine=eng)
    a = SpecConfig(mode="async", k1=3, max_steps=12, max_step_tokens=48)
    fast = predict(a, acc, cm, problems=60, draws=0).speedup
    slow = predict(a, acc, cm.replace(contention=1.8), problems=60, draws=0).speedup
    assert slow < fast
    s = SpecConfig(mode="sync", k1=3, max_steps=12, max_step_tokens=48)
    longest = predict(s, acc, cm, problems=60, draws=0).speedup
    mean = predict(s, acc, cm.replace(engine=dataclasses.replace(eng, batch_time="mean")),
                   problems=60, draws=0).speedup
    assert longest < mean


def test_a_calibrated_prediction_has_an_interval_tokens_per_second_and_sources() -> None:
    cal = load_preset(MEASURED)
    cfg = SpecConfig(mode="sync", k1=2, k2=1, max_steps=8, max_step_tokens=40)
    p = predict_calibrated(cal, cfg, problems=60, draws=8, draw_problems=20, seed=3)
    assert p.model == MODEL_NAME and p.draws == 8
    lo, hi = p.interval
    assert lo < p.speedup < hi and hi - lo >= p.simulation_interval[1] - p.simulation_interval[0]
    assert p.tokens_per_second == pytest.approx(p.speedup * p.baseline_tokens_per_second)
    assert p.closed_form is None
    assert p.sources["workload.prompt_tokens"].startswith("assumed")
    assert p.to_dict()["sources"]["cost.prefill_per_token"].startswith("assumed")
    again = predict_calibrated(cal, cfg, problems=60, draws=8, draw_problems=20, seed=3)
    assert again == p  # seeded
    with pytest.raises(ValueError, match="problems"):
        simulate(cfg, AcceptanceModel.from_calibration(cal), CostModel.from_calibration(cal),
                 problems=1)


def test_draft_steps_that_end_the_answer_close_their_branch() -> None:
    """A draft step that ends the answer gets no children and no target step; accepted,
    it ends the problem.  At rate 1 a sync cycle expands only its root and drafts one
    level; async drafts one step ahead; at rate 0 nothing changes (no random draw)."""
    lengths = StepLengths.constant(10)
    acc = AcceptanceModel(0.3, 0.5, target_steps=lengths, draft_steps=lengths)
    ends = dataclasses.replace(acc, draft_end_rate=1.0)
    assert acc.is_iid and not ends.is_iid
    cm = CostModel.flat(0.2).replace(engine=EngineBehaviour())
    work = Workload(12, 48)
    sync = SpecConfig(mode="sync", k1=3, max_steps=12, max_step_tokens=48)
    open_ = simulate(sync, acc, cm, work, problems=40, seed=3).counters
    closed = simulate(sync, ends, cm, work, problems=40, seed=3).counters
    assert closed["target_steps"] == pytest.approx(closed["target_batches"])  # root only
    # one draft level (none in a last cycle of depth 0)
    assert closed["target_batches"] - 1 <= closed["draft_steps"] <= closed["target_batches"]
    assert open_["target_steps"] > 2 * open_["target_batches"]
    # an accepted draft ends the problem early: fewer steps written per problem
    assert closed["output_tokens"] < open_["output_tokens"]
    asy = SpecConfig(mode="async", k1=3, max_steps=12, max_step_tokens=48)
    a_open = simulate(asy, acc, cm, work, problems=40, seed=3).counters
    a_closed = simulate(asy, ends, cm, work, problems=40, seed=3).counters
    assert a_closed["draft_steps"] < a_open["draft_steps"]
    assert a_closed["target_steps"] <= a_open["target_steps"]
    zero = dataclasses.replace(acc, draft_end_rate=0.0)
    assert simulate(sync, zero, cm, work, problems=10, seed=5).counters == \
        simulate(sync, acc, cm, work, problems=10, seed=5).counters
    with pytest.raises(ValueError, match="draft_end_rate"):
        dataclasses.replace(acc, draft_end_rate=1.5)


def test_the_calibrations_end_and_branch_rates_reach_the_model() -> None:
    cal = load_preset(MEASURED)
    measured = {"draft_end_rate": 0.1, "target_end_rate": 0.05,
                "branch_acceptance": {2: 0.3}, "branch_samples": {2: 40},
                "duplicate_branch_rate": 0.4, "branch_temperature": 0.8}
    step = cal.step.model_copy(update=measured)
    acc = AcceptanceModel.from_calibration(cal.model_copy(update={"step": step}))
    assert (acc.draft_end_rate, acc.target_end_rate, acc.duplicate_branch_rate) == \
        (0.1, 0.05, 0.4)
    assert acc.branch_by_width == {2: 0.3} and acc.step_rate(0, 2) == 0.3
    for said in ("end the answer", "best-of-W", "repeated draft branches"):
        assert not any(said in m for m in acc.missing), said
    bare = cal.model_copy(update={"step": cal.step.model_copy(update={
        k: None for k in measured})})
    missing = AcceptanceModel.from_calibration(bare).missing
    for said in ("draft steps that end the answer", "target steps that end the answer",
                 "best-of-W", "repeated draft branches"):
        assert any(said in m for m in missing), said


def test_the_problems_spread_of_acceptance_reaches_the_model() -> None:
    """With per-problem verdict counts α1 is drawn as from the independent pairs they
    are worth (a wider spread than from every pair), each problem gets its logit offset,
    and the chain correlation gives way to the spread; without them the model says so."""
    import numpy as np

    cal = load_preset(MEASURED)
    counts = [(9, 12), (1, 12), (10, 12), (2, 12), (9, 12), (1, 12), (10, 12), (2, 12)]
    spread_cal = cal.model_copy(update={"step": cal.step.model_copy(update={
        "problem_verdicts": counts, "verdict_correlation": 0.3, "verdict_pairs": 80})})
    acc = AcceptanceModel.from_calibration(spread_cal)
    plain = AcceptanceModel.from_calibration(cal)
    assert len(acc.problem_spread) == 8 and not plain.problem_spread
    assert acc.verdict_correlation == 0 and not acc.is_iid
    assert acc.step_samples is not None and acc.step_samples < 96 // 3
    note = "step acceptance by problem: not measured"
    assert any(note in m for m in plain.missing) and not any(note in m for m in acc.missing)
    pooled = (44 + 0.5) / 97
    assert acc.problem_spread[0][0] == pytest.approx(
        math.log(9.5 / 3.5) - math.log(pooled / (1 - pooled)))
    assert [w for _, w in acc.problem_spread] == [12.0] * 8
    wide = dataclasses.replace(plain, step_samples=acc.step_samples)
    rng_a, rng_b = np.random.default_rng(1), np.random.default_rng(1)
    spread_sd = np.std([wide.resampled(rng_a).alpha1 for _ in range(2000)])
    iid_sd = np.std([plain.resampled(rng_b).alpha1 for _ in range(2000)])
    assert spread_sd > 1.5 * iid_sd


def test_simulated_problems_spread_their_acceptance_as_measured() -> None:
    """Seeded: with a two-problem spread (logit ±1.5, equal weights) the simulated
    problems' acceptance splits into an easy and a hard group around the shifted rates,
    and the pooled acceptance is their mean; with no shifts it is α1 (within a few
    standard errors)."""
    lengths = StepLengths.constant(8)
    base = AcceptanceModel(0.5, 0.5, target_steps=lengths, draft_steps=lengths)
    spread = dataclasses.replace(base, problem_spread=((1.5, 1.0), (-1.5, 1.0)))
    cfg = SpecConfig(mode="sync", k1=2, max_steps=40, max_step_tokens=8)
    cm = CostModel.flat(0.2)
    work = Workload.of(cfg, 16)
    from specmodel.decodermodel.simulate import _Run

    rates = []
    r = _Run(cfg, spread, cm, work, np.random.default_rng(4))
    for _ in range(400):
        before = (r.judged, r.accepted)
        r.problem()
        judged = r.judged - before[0]
        rates.append((r.accepted - before[1]) / judged if judged else float("nan"))
    rates = np.asarray(rates)
    hi, lo = logit_shifted(0.5, 1.5), logit_shifted(0.5, -1.5)
    assert hi == pytest.approx(1 / (1 + math.exp(-1.5)))
    easy, hard = rates[rates > 0.5], rates[rates < 0.5]
    assert 150 < len(easy) < 250 and 150 < len(hard) < 250
    assert easy.mean() == pytest.approx(hi, abs=0.05) and hard.mean() == pytest.approx(
        lo, abs=0.05)
    flat = dataclasses.replace(base, problem_spread=((0.0, 1.0), (0.0, 3.0)))
    c = simulate(cfg, flat, cm, work, problems=400, seed=2).counters
    p = c["accepted_steps"] / c["drafted_steps"]
    n = 400 * c["drafted_steps"]
    assert abs(p - 0.5) < 4 * math.sqrt(0.25 / n)
    with pytest.raises(ValueError, match="problem_spread"):
        dataclasses.replace(base, problem_spread=((0.0, 0.0),))


@settings(max_examples=60, deadline=None)
@given(st.floats(0.001, 0.999), st.floats(-6, 6))
def test_logit_shifts_invert_and_keep_order(rate: float, shift: float) -> None:
    moved = logit_shifted(rate, shift)
    assert 0 < moved < 1
    assert logit_shifted(moved, -shift) == pytest.approx(rate, rel=1e-9, abs=1e-12)
    assert (moved >= rate) == (shift >= 0) or moved == pytest.approx(rate)
    assert logit_shifted(rate, 0.0) == rate and logit_shifted(1.0, shift) == 1.0


def test_target_steps_that_end_the_answer_end_the_problem() -> None:
    """At a target end rate h every mode commits fewer steps per problem (a geometric
    answer length capped at max_steps: 1 + … + (1 − h)^(n − 1) target-only steps in the
    baseline); at rate 0 nothing changes (no random draw)."""
    lengths = StepLengths.constant(10)
    acc = AcceptanceModel(0.3, 0.5, target_steps=lengths, draft_steps=lengths)
    cm = CostModel.flat(0.2).replace(engine=EngineBehaviour())
    work = Workload(12, 48)
    h = 0.2
    ends = dataclasses.replace(acc, target_end_rate=h)
    assert not ends.is_iid
    plain = SpecConfig(max_steps=12, max_step_tokens=48)
    base = simulate(plain, ends, cm, work, problems=4000, seed=1).counters
    expected = sum((1 - h) ** i for i in range(12))
    sd = 3.0 / (1 - h) / np.sqrt(4000)  # a generous few standard errors
    assert base["target_steps"] == pytest.approx(expected, abs=5 * sd)
    for cfg in (SpecConfig(mode="sync", k1=3, max_steps=12, max_step_tokens=48),
                SpecConfig(mode="async", k1=3, max_steps=12, max_step_tokens=48)):
        long = simulate(cfg, acc, cm, work, problems=60, seed=2).counters
        short = simulate(cfg, ends, cm, work, problems=60, seed=2).counters
        assert short["output_tokens"] < long["output_tokens"]
    paper = CostModel.flat(0.2)  # the papers' async process
    asy = SpecConfig(mode="async", k1=3, max_steps=12, max_step_tokens=48)
    assert (simulate(asy, ends, paper, work, problems=60, seed=2).counters["output_tokens"]
            < simulate(asy, acc, paper, work, problems=60, seed=2).counters["output_tokens"])
    zero = dataclasses.replace(acc, target_end_rate=0.0)
    assert simulate(plain, zero, cm, work, problems=10, seed=5).counters == \
        simulate(plain, acc, cm, work, problems=10, seed=5).counters
    with pytest.raises(ValueError, match="target_end_rate"):
        dataclasses.replace(acc, target_end_rate=-0.1)


def test_repeated_branches_are_drafted_but_neither_expanded_nor_judged() -> None:
    """W = 2 with every sampled branch a repeat costs the chain's target rows and verdicts
    plus the sampled draft rows; judged positions then have one child, so they are
    accepted at α1, not at the best-of-2 rate."""
    lengths = StepLengths.constant(10)
    acc = AcceptanceModel(0.3, 0.5, target_steps=lengths, draft_steps=lengths,
                          branch_by_width={2: 0.9})
    cm = CostModel.flat(0.2).replace(engine=EngineBehaviour())
    work = Workload(12, 48)
    w2 = SpecConfig(mode="sync", k1=2, width=2, max_steps=12, max_step_tokens=48)
    chain = SpecConfig(mode="sync", k1=2, max_steps=12, max_step_tokens=48)
    distinct = simulate(w2, acc, cm, work, problems=400, seed=4).counters
    repeats = simulate(w2, dataclasses.replace(acc, duplicate_branch_rate=1.0), cm, work,
                       problems=400, seed=4).counters
    one = simulate(chain, acc, cm, work, problems=400, seed=4).counters
    assert repeats["target_steps"] / repeats["target_batches"] == pytest.approx(
        one["target_steps"] / one["target_batches"], rel=0.05)
    assert distinct["target_steps"] / distinct["target_batches"] > \
        repeats["target_steps"] / repeats["target_batches"] + 0.5
    assert repeats["draft_steps"] == pytest.approx(2 * one["draft_steps"], rel=0.1)
    rate = {k: v["accepted_steps"] / v["drafted_steps"]
            for k, v in (("distinct", distinct), ("repeats", repeats))}
    assert rate["distinct"] > 0.8 and rate["repeats"] < 0.45
    # measured at the prefixes where the branches repeated: those are judged at that rate
    easy = dataclasses.replace(acc, branch_by_width={1: 0.7, 2: 0.9},
                               duplicate_branch_rate=1.0)
    assert easy.step_rate(0, 1, tree=True) == 0.7 and easy.step_rate(0) == 0.3
    c = simulate(w2, easy, cm, work, problems=400, seed=4).counters
    assert 0.6 < c["accepted_steps"] / c["drafted_steps"] < 0.8
    c = simulate(chain, easy, cm, work, problems=400, seed=4).counters  # W = 1 keeps α1
    assert c["accepted_steps"] / c["drafted_steps"] < 0.45


def test_cost_uncertainty_widens_the_interval() -> None:
    """Measured costs carry their standard errors; the prediction's draws take them, so a
    token-speculation configuration whose pass cost is uncertain gets a wider interval,
    and a cost model without standard errors draws nothing (the same numbers)."""
    lengths = StepLengths.constant(12)
    acc = AcceptanceModel(0.3, 0.6, target_steps=lengths, draft_steps=lengths,
                          step_samples=400, token_samples=4000)
    cm = CostModel.flat(0.2).replace(engine=EngineBehaviour(), prefill_per_token=0.01,
                                     pass_multipliers=((3, 2.0),))
    unsure = dataclasses.replace(cm, stderrs={"pass_multipliers:3": 0.4,
                                              "prefill_per_token": 0.002})
    cfg = SpecConfig(k1=1, k2=3, max_steps=8, max_step_tokens=40)
    work = Workload(8, 40, prompt_tokens=200)
    sure = predict(cfg, acc, cm, work, problems=60, draws=12, draw_problems=30)
    wide = predict(cfg, acc, unsure, work, problems=60, draws=12, draw_problems=30)
    assert sure.speedup == pytest.approx(wide.speedup)  # the point uses the nominal costs
    span = lambda p: p.interval[1] - p.interval[0]  # noqa: E731
    assert span(wide) > 1.5 * span(sure)
    rng = np.random.default_rng(0)
    drawn = unsure.resampled(rng)
    assert drawn.pass_multipliers[0][1] >= PASS_FLOOR and drawn.prefill_per_token >= 0
    assert drawn.pass_multipliers != unsure.pass_multipliers
    assert cm.resampled(rng) is cm
    assert "prefill_per_token" not in unsure.replace(prefill_per_token=0.02).stderrs
    cal = load_preset(MEASURED)
    assert CostModel.from_calibration(cal).stderrs == {}  # no engine costs in the preset


def test_contention_uncertainty_widens_the_async_interval_and_draws_stay_at_least_1() -> None:
    """A measured slowdown carries its standard error into the async prediction's draws
    (a sync configuration, where the models never run together, barely moves); a drawn
    slowdown is never below 1."""
    lengths = StepLengths.constant(12)
    acc = AcceptanceModel(0.4, 0.6, target_steps=lengths, draft_steps=lengths,
                          step_samples=400, token_samples=4000)
    cm = CostModel.flat(0.2).replace(engine=EngineBehaviour(), contention=1.05,
                                     draft_contention=1.05)
    unsure = dataclasses.replace(cm, stderrs={"contention": 0.1, "draft_contention": 0.1})
    work = Workload(8, 40, prompt_tokens=50)
    span = lambda p: p.interval[1] - p.interval[0]  # noqa: E731
    kw = {"problems": 60, "draws": 12, "draw_problems": 30}
    asy = SpecConfig(mode="async", k1=2, max_steps=8, max_step_tokens=40)
    assert span(predict(asy, acc, unsure, work, **kw)) > 1.5 * span(predict(asy, acc, cm,
                                                                              work, **kw))
    syn = SpecConfig(k1=2, max_steps=8, max_step_tokens=40)
    a, b = predict(syn, acc, unsure, work, **kw), predict(syn, acc, cm, work, **kw)
    assert a.speedup == pytest.approx(b.speedup)  # (the draws' streams differ, no more)
    assert span(a) < 1.2 * span(b)
    # a further spread leaves the other costs' draws as they were
    more = dataclasses.replace(unsure, stderrs={**unsure.stderrs, "call_overhead": 0.01})
    for seed in range(5):
        a, b = (m.resampled(np.random.default_rng(seed)) for m in (unsure, more))
        assert (a.contention, a.draft_contention) == (b.contention, b.draft_contention)
    rng = np.random.default_rng(3)
    draws = [unsure.resampled(rng) for _ in range(200)]
    assert min(d.contention for d in draws) == 1.0  # 1.05 − 0.1 z is often below 1
    assert all(d.draft_contention >= 1.0 for d in draws)


def test_the_interval_of_a_run_of_n_problems_widens_as_n_shrinks() -> None:
    """A run of n problems measures its sample's speedup, not the expectation: its
    interval takes the simulated problem-to-problem spread at that size in place of
    the simulation error, so it contains the expectation's interval, matches it at
    n = the simulated problems, and widens as √(problems / n)."""
    lengths = StepLengths.constant(12)
    acc = AcceptanceModel(0.4, 0.6, target_steps=lengths, draft_steps=lengths,
                          step_samples=400)
    cm = CostModel.flat(0.2)
    cfg = SpecConfig(k1=2, max_steps=8, max_step_tokens=40)
    work = Workload(8, 40, prompt_tokens=50)
    got = {n: predict(cfg, acc, cm, work, problems=80, draws=6, draw_problems=30,
                      sample_problems=n) for n in (80, 20, 5)}
    half = {n: (p.sample_interval[1] - p.sample_interval[0]) / 2 for n, p in got.items()}
    assert got[80].sample_interval == pytest.approx(got[80].interval)
    assert half[5] > half[20] > half[80]
    spread_sq = half[80] ** 2 / 1.96**2 - got[80].stderr ** 2
    assert half[5] == pytest.approx(1.96 * (spread_sq + 16 * got[80].stderr**2) ** 0.5)
    assert got[5].sample_problems == 5 and got[5].to_dict()["sample_problems"] == 5
    assert predict(cfg, acc, cm, work, problems=80, draws=2).sample_interval is None
    with pytest.raises(ValueError, match="sample_problems must be >= 1"):
        predict(cfg, acc, cm, work, problems=80, sample_problems=0)


def test_joint_step_lengths_pair_the_target_and_draft_step_of_one_prefix() -> None:
    """Both first steps from one prefix come from one measured pair; a further call of a
    role on that prefix (a sampled sibling) draws afresh.  With lengths that always
    agree, an async target never waits for a longer draft step, so async runs faster
    than with the same marginals drawn independently."""
    from specmodel.decodermodel.simulate import _PairedLengths

    joint = _PairedLengths([(4, 4, 1.0), (40, 40, 1.0)], np.random.default_rng(0), cap=48)
    for k in range(50):
        p = (0, k)
        assert joint.length(p, 0) == joint.length(p, 1)
    assert {joint.length((0, 1), 1) for _ in range(40)} == {4, 40}  # fresh draws
    lengths = StepLengths.histogram({4: 1, 40: 1})
    indep = AcceptanceModel(0.05, 0.5, target_steps=lengths, draft_steps=lengths)
    paired = dataclasses.replace(indep, step_length_pairs=((4, 4, 1.0), (40, 40, 1.0)))
    assert "joint" not in " ".join(AcceptanceModel.from_calibration(load_preset(
        MEASURED).model_copy(update={"step": load_preset(MEASURED).step.model_copy(
            update={"step_length_pairs": [(4, 4, 1), (40, 40, 1)]})})).missing)
    cm = CostModel.flat(0.9).replace(engine=EngineBehaviour())  # a draft nearly as slow
    work = Workload(12, 48)
    asy = SpecConfig(mode="async", k1=2, max_steps=12, max_step_tokens=48)
    rate = {name: simulate(asy, acc, cm, work, problems=300, seed=1).rate().mean
            for name, acc in (("independent", indep), ("paired", paired))}
    assert rate["paired"] > 1.1 * rate["independent"]
    plain = SpecConfig(max_steps=12, max_step_tokens=48)  # the target alone: same marginal
    base = {name: simulate(plain, acc, cm, work, problems=2000, seed=2).counters[
        "output_tokens"] for name, acc in (("independent", indep), ("paired", paired))}
    assert base["paired"] == pytest.approx(base["independent"], rel=0.05)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(1, 40)), min_size=2, max_size=14)
       .map(lambda xs: [(min(k, n), n) for k, n in xs]))
def test_index_offsets_shrink_towards_zero_and_vanish_for_equal_rates(
        counts: list[tuple[int, int]]) -> None:
    """Each step index's shrunk offset lies between 0 and its raw logit offset from the
    pooled rate, with a posterior spread no larger than its sampling spread; indices
    with one rate between them have no offset at all; one index is no profile."""
    prof = index_profile(counts)
    assert len(prof) == len(counts)
    pooled = (sum(k for k, _ in counts) + 0.5) / (sum(n for _, n in counts) + 1)
    for (k, n), (m, sd) in zip(counts, prof, strict=True):
        p = (k + 0.5) / (n + 1)
        raw = math.log(p / (1 - p)) - math.log(pooled / (1 - pooled))
        assert abs(m) <= abs(raw) + 1e-12 and (m == 0 or (m > 0) == (raw > 0))
        assert 0 <= sd <= math.sqrt(1 / ((n + 1) * p * (1 - p))) + 1e-12
    same = [(3, 10)] * len(counts)
    assert all(abs(m) < 1e-12 and sd == 0 for m, sd in index_profile(same))
    assert index_profile(counts[:1]) == ()
    with pytest.raises(ValueError, match="index verdict counts"):
        index_profile([(3, 2), (1, 2)])


def test_large_index_samples_keep_their_offsets() -> None:
    """Thousands of verdicts per index: the shrunk offsets are the raw ones (the spread
    between indices dwarfs each index's sampling error)."""
    counts = [(200, 1000), (500, 1000), (800, 1000)]
    prof = index_profile(counts)
    pooled = 1500.5 / 3001
    for (k, n), (m, _) in zip(counts, prof, strict=True):
        p = (k + 0.5) / (n + 1)
        raw = math.log(p / (1 - p)) - math.log(pooled / (1 - pooled))
        assert m == pytest.approx(raw, rel=0.01, abs=1e-3)


def test_step_acceptance_along_the_answer_from_a_calibration() -> None:
    """A calibration's counts per step index become the model's offsets (and the missing
    note goes); without them the note names what is assumed; the offsets' posterior
    spread enters the resampled models, centred on the point estimate."""
    cal = load_preset(MEASURED)
    counts = [(1, 10), (2, 10), (8, 10), (9, 10)]
    indexed = cal.model_copy(update={"step": cal.step.model_copy(update={
        "index_verdicts": counts})})
    acc = AcceptanceModel.from_calibration(indexed)
    plain = AcceptanceModel.from_calibration(cal)
    note = "step acceptance along the answer: not measured"
    assert any(note in m for m in plain.missing) and not any(note in m for m in acc.missing)
    assert acc.index_shift == index_profile(counts) and not plain.index_shift
    assert acc.index_offset(0) < 0 < acc.index_offset(3)
    assert acc.index_offset(4) == 0 and acc.index_offset(None) == 0
    assert not acc.is_iid
    draws = np.array([[m for m, _ in acc.resampled(np.random.default_rng(s)).index_shift]
                      for s in range(400)])
    means = np.array([m for m, _ in acc.index_shift])
    sds = np.array([sd for _, sd in acc.index_shift])
    assert np.all(np.abs(draws.mean(axis=0) - means) < 4 * sds / math.sqrt(400))
    assert draws.std(axis=0) == pytest.approx(sds, rel=0.2)
    with pytest.raises(ValueError, match="index_verdicts"):
        type(cal.step).model_validate({**cal.step.model_dump(), "index_verdicts": [(3, 2)]})


def test_hard_openings_lower_the_acceptance_sync_meets() -> None:
    """Seeded: an answer whose first half is hard (logit −2) and second half easy (+2)
    around α = 0.5: a target-only walk would judge each index once (mean rate 0.5), but
    sync k1 = 2 judges one position per step where it rejects and one per two steps where
    it accepts, so it meets hard steps more often — the renewal rate
    Σ_h n_h p_h/(1 + p_h) / Σ_h n_h/(1 + p_h) within a few standard errors (boundary
    steps aside); zero offsets draw exactly what no profile draws."""
    from specmodel.decodermodel.simulate import simulate

    lengths = StepLengths.constant(8)
    base = AcceptanceModel(0.5, 0.5, target_steps=lengths, draft_steps=lengths)
    steps = 40
    cfg = SpecConfig(mode="sync", k1=2, max_steps=steps, max_step_tokens=8)
    cm = CostModel.flat(0.2)
    work = Workload.of(cfg, 16)
    half = steps // 2
    walk = dataclasses.replace(base, index_shift=((-2.0, 0.0),) * half + ((2.0, 0.0),) * half)
    c = simulate(cfg, walk, cm, work, problems=600, seed=3).counters
    met = c["accepted_steps"] / c["drafted_steps"]
    lo, hi = logit_shifted(0.5, -2.0), logit_shifted(0.5, 2.0)
    renewal = (lo / (1 + lo) + hi / (1 + hi)) / (1 / (1 + lo) + 1 / (1 + hi))
    n = 600 * c["drafted_steps"]
    assert renewal < 0.45 and abs(met - renewal) < 0.02 + 4 * math.sqrt(0.25 / n)
    zero = dataclasses.replace(base, index_shift=((0.0, 0.0),) * steps)
    a = simulate(cfg, zero, cm, work, problems=50, seed=5)
    b = simulate(cfg, base, cm, work, problems=50, seed=5)
    assert np.array_equal(a.seconds, b.seconds) and a.counters == b.counters


def _length_cells(rng: np.random.Generator, n: int, a: float, b_ratio: float
                  ) -> list[tuple[int, int, int, int]]:
    """Pairs whose verdicts follow logit p = a + b_ratio·|log((d + 1)/(t + 1))| exactly."""
    cells = []
    for _ in range(n):
        t = int(rng.integers(4, 40))
        d = int(rng.integers(2, 48))
        x = abs(math.log((d + 1) / (t + 1)))
        p = 1 / (1 + math.exp(-(a + b_ratio * x)))
        cells.append((t, d, 1, int(rng.random() < p)))
    return cells


def test_length_effect_recovers_a_known_dependence_and_keeps_the_pooled_rate() -> None:
    """Seeded: 3000 pairs drawn with a known dependence on the lengths' ratio are fitted
    back to its coefficient within a few standard errors (the target length's
    coefficient near 0); over the measured pairs the offsets keep the mean acceptance at
    the pooled rate they are centred on; too few pairs fit nothing."""
    rng = np.random.default_rng(11)
    cells = _length_cells(rng, 3000, 1.0, -3.0)
    alpha = (sum(k for *_, k in cells) + 0.5) / (len(cells) + 1)
    fit = fit_length_effect(cells, alpha)
    assert fit is not None
    se = np.sqrt(np.diag(fit.cov))
    assert abs(fit.coef[1] + 3.0) < 4 * se[1] and abs(fit.coef[0]) < 4 * se[0]
    lg = math.log(alpha / (1 - alpha))
    mean = np.mean([1 / (1 + math.exp(-(lg + fit.offset(t, d)))) for t, d, _, _ in cells])
    assert mean == pytest.approx(alpha, abs=1e-6)
    again = fit.resampled(np.random.default_rng(2), alpha)
    mean2 = np.mean([1 / (1 + math.exp(-(lg + again.offset(t, d)))) for t, d, _, _ in cells])
    assert mean2 == pytest.approx(alpha, abs=1e-6) and again.coef != fit.coef
    assert fit_length_effect(cells[:5], alpha) is None
    with pytest.raises(ValueError, match="penalty"):
        fit_length_effect(cells, alpha, penalty=0)


def test_verdicts_that_follow_the_lengths_commit_the_lengths_that_were_accepted() -> None:
    """Seeded: with a measured length effect (equal lengths accepted, unequal rejected),
    async k1 = 2 meets the pooled acceptance on pairs drawn from the same joint
    distribution, but an accepted draft step is about as long as its target step — so a
    position commits more tokens than where the verdict ignores the lengths (the draft
    steps here are shorter than the target's on average)."""
    from specmodel.decodermodel.simulate import simulate

    rng = np.random.default_rng(5)
    joint = [(int(t), int(t) if rng.random() < 0.5 else max(1, int(t) // 3), 1.0)
             for t in rng.integers(10, 40, size=200)]
    cells = [(t, d, 1, int(t == d)) for t, d, _ in joint]
    alpha = (sum(k for *_, k in cells) + 0.5) / (len(cells) + 1)
    fit = fit_length_effect(cells, alpha)
    assert fit is not None and fit.coef[1] < -1
    lengths = StepLengths.histogram({t: 1 for t, _, _ in joint})
    base = AcceptanceModel(alpha, 0.5, target_steps=lengths, draft_steps=lengths,
                           step_length_pairs=tuple(joint))
    coupled = dataclasses.replace(base, length_effect=fit)
    assert not coupled.is_iid
    cfg = SpecConfig(mode="async", k1=2, max_steps=12, max_step_tokens=48)
    work = Workload.of(cfg, 16)
    cm = CostModel.flat(0.2)
    got = {}
    for name, acc in (("plain", base), ("coupled", coupled)):
        c = simulate(cfg, acc, cm, work, problems=800, seed=4).counters
        got[name] = (c["accepted_steps"] / c["drafted_steps"], c["output_tokens"])
    n = 800 * 10
    for rate, _ in got.values():
        assert abs(rate - alpha) < 0.03 + 4 * math.sqrt(alpha * (1 - alpha) / n)
    assert got["coupled"][1] > 1.05 * got["plain"][1]


def test_token_acceptance_spread_between_problems() -> None:
    """Seeded: with a two-problem token spread (logit ±1.5, equal weights) the
    simulated problems' tokens per second split apart far more than without it, and the
    token profile moves by the drawn offset; a calibration's per-problem counters
    become the spread, with α2's samples counted by problem."""
    from specmodel.decodermodel.simulate import simulate

    lengths = StepLengths.constant(24)
    base = AcceptanceModel(0.5, 0.5, target_steps=lengths, draft_steps=lengths)
    spread = dataclasses.replace(base, token_problem_spread=((1.5, 1.0), (-1.5, 1.0)))
    assert not spread.is_iid
    assert spread.token_profile(1.5)[0] == pytest.approx(logit_shifted(0.5, 1.5))
    cfg = SpecConfig(k2=3, max_steps=8, max_step_tokens=24)
    cm = CostModel.flat(0.2)
    work = Workload.of(cfg, 16)
    sd = {}
    for name, acc in (("plain", base), ("spread", spread)):
        r = simulate(cfg, acc, cm, work, problems=400, seed=6)
        sd[name] = float(np.std(r.tokens / r.seconds))
    assert sd["spread"] > 3 * sd["plain"]
    cal = load_preset(MEASURED)
    counted = cal.model_copy(update={"token": cal.token.model_copy(update={
        "problem_counters": [(30, 100), (70, 100), (20, 100), (80, 100)]})})
    acc = AcceptanceModel.from_calibration(counted)
    assert len(acc.token_problem_spread) == 4
    assert acc.token_samples is not None and acc.token_samples < 400
    with pytest.raises(ValueError, match="token_problem_spread"):
        dataclasses.replace(base, token_problem_spread=((0.0, 0.0),))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.integers(0, 60), min_size=1, max_size=10), min_size=1,
                max_size=4),
       st.integers(4, 48), st.integers(1, 10))
def test_an_answers_lengths_are_taken_by_step_index(answers: list[list[int]], cap: int,
                                                    steps: int) -> None:
    """With recorded answers, a simulated problem takes its target steps' lengths by
    step index from one answer (capped to [1, cap]): the target alone writes exactly that
    answer's first ``steps`` lengths, and past the answer's end draws the pairs; every
    simulated problem is one of the answers, never a mix."""
    from specmodel.decodermodel.simulate import simulate

    pairs = ((7, 7, 1.0),)  # past an answer's end: always 7
    lengths = StepLengths.constant(7)
    acc = AcceptanceModel(0.3, 0.5, target_steps=lengths, draft_steps=lengths,
                          step_length_pairs=pairs,
                          step_length_answers=tuple(tuple((t, t) for t in a)
                                                    for a in answers))
    plain = SpecConfig(max_steps=steps, max_step_tokens=cap)
    work = Workload(steps, cap)

    def total(a: list[int]) -> int:
        return (sum(min(max(t, 1), cap) for t in a[:steps])
                + min(7, cap) * max(0, steps - len(a)))

    totals = [total(a) for a in answers]
    possible = [(x + y) / 2 for x in totals for y in totals]  # two problems' mean
    for seed in range(3):
        got = simulate(plain, acc, CostModel.flat(0.5), work, problems=2, seed=seed)
        assert min(abs(got.counters["output_tokens"] - v) for v in possible) < 1e-9


def test_answers_keep_each_problem_with_its_acceptance_and_its_pattern() -> None:
    """Seeded: a problem is drawn as one measured problem, its acceptance offset and its
    answer together; answers that alternate a long step with a one-token step leave an
    async k1 = 3 target fewer chances to batch a drafted step than the same pairs drawn
    one by one (the step after an accepted short one is long, so its draft is not ready),
    and the target alone writes as many tokens either way."""
    from specmodel.decodermodel.simulate import simulate

    alternating = tuple((40, 40) if i % 2 == 0 else (1, 1) for i in range(12))
    pairs = ((40, 40, 6.0), (1, 1, 6.0))
    lengths = StepLengths.histogram({40: 1, 1: 1})
    base = AcceptanceModel(0.5, 0.5, target_steps=lengths, draft_steps=lengths,
                           step_length_pairs=pairs)
    answered = dataclasses.replace(base, step_length_answers=(alternating, alternating))
    cm = CostModel.flat(0.3).replace(engine=EngineBehaviour())
    cfg = SpecConfig(mode="async", k1=3, max_steps=12, max_step_tokens=48)
    work = Workload(12, 48)
    per_call = {}
    for name, acc in (("drawn", base), ("answers", answered)):
        c = simulate(cfg, acc, cm, work, problems=400, seed=3).counters
        per_call[name] = c["target_steps"] / c["target_batches"]
    assert per_call["answers"] < per_call["drawn"] - 0.02
    plain = SpecConfig(max_steps=12, max_step_tokens=48)
    tokens = {name: simulate(plain, acc, cm, work, problems=1000, seed=5).counters[
        "output_tokens"] for name, acc in (("drawn", base), ("answers", answered))}
    assert tokens["answers"] == pytest.approx(6 * 41)  # the answer itself, every problem
    assert tokens["drawn"] == pytest.approx(6 * 41, rel=0.05)
    with pytest.raises(ValueError, match="needs step_length_pairs"):
        dataclasses.replace(base, step_length_pairs=None, step_length_answers=(alternating,))
    with pytest.raises(ValueError, match="one answer per problem of problem_spread"):
        dataclasses.replace(answered, problem_spread=((0.0, 1.0), (0.5, 1.0), (1.0, 1.0)))
    # tied: a problem drawn as the easy one (logit +3) writes the easy one's answer, so
    # when that answer's steps are the long ones speculation saves far more time
    short, long_ = tuple((2, 2) for _ in range(12)), tuple((30, 30) for _ in range(12))
    sync = SpecConfig(mode="sync", k1=2, max_steps=12, max_step_tokens=48)
    rate = {}
    for name, order in (("easy short", (short, long_)), ("easy long", (long_, short))):
        acc = dataclasses.replace(base, step_length_pairs=((2, 2, 1.0), (30, 30, 1.0)),
                                  problem_spread=((3.0, 12.0), (-3.0, 12.0)),
                                  step_length_answers=order)
        rate[name] = simulate(sync, acc, cm, work, problems=400, seed=7).rate().mean
    assert rate["easy long"] > 1.2 * rate["easy short"]
