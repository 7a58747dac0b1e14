"""Token-speculation passes without a draft (``token.draft_rate``): prompt lookup
proposes nothing where no n-gram of the context matches, and such a pass writes one
token.  The decoder model scales the per-draft acceptance at position 0 by the share of
passes that drafted, so tokens per pass are rate · E[accepted + 1 | draft] + (1 − rate)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specmodel.config import SpecConfig
from specmodel.decodermodel import AcceptanceModel, CostModel, EngineBehaviour, Workload, predict
from specmodel.formats.calibration import load_preset
from specmodel.montecarlo.acceptance import sample_accepted_prefix

MEASURED = "measured-qwen2.5-coder-0.5b-smollm2-135m"


def _tokens_per_pass(profile: list[float], gamma: int) -> float:
    """E[accepted + 1] of one pass: 1 + Σ_j Π_{i ≤ j} p_i (the last rate repeats)."""
    e, surv = 1.0, 1.0
    for j in range(gamma):
        surv *= profile[min(j, len(profile) - 1)]
        e += surv
    return e


@settings(max_examples=60, deadline=None)
@given(rate=st.floats(0.05, 1.0),
       profile=st.lists(st.floats(0.01, 0.99), min_size=1, max_size=4),
       gamma=st.integers(1, 6))
def test_tokens_per_pass_mix_drafted_and_undrafted_passes(rate: float, profile: list[float],
                                                          gamma: int) -> None:
    acc = AcceptanceModel(0.5, profile[0], token_by_position=tuple(profile),
                          token_draft_rate=rate)
    per_pass = acc.token_profile().tolist()
    want = rate * _tokens_per_pass(profile, gamma) + (1 - rate)
    assert _tokens_per_pass(per_pass, gamma) == pytest.approx(want, rel=1e-12)
    assert acc.tokens_per_pass(gamma + 1) == pytest.approx(want, rel=1e-12)


def test_the_simulated_passes_agree_with_the_mixture() -> None:
    acc = AcceptanceModel(0.5, 0.4, token_by_position=(0.4, 0.6, 0.6), token_draft_rate=0.7)
    x = sample_accepted_prefix(np.random.default_rng(3), acc.token_profile(), 2, 200_000) + 1
    want = 0.7 * _tokens_per_pass([0.4, 0.6, 0.6], 2) + 0.3
    assert abs(x.mean() - want) < 4 * x.std() / np.sqrt(x.size)


def test_every_pass_drafting_leaves_the_profile_and_the_iid_model_as_they_were() -> None:
    acc = AcceptanceModel(0.5, 0.4, token_by_position=(0.4, 0.6))
    assert acc.token_profile().tolist() == [0.4, 0.6] and acc.token_draft_rate == 1
    iid = AcceptanceModel.iid(0.6, 0.5)
    assert iid.is_iid and iid.token_profile().tolist() == [0.5]
    half = dataclasses.replace(iid, token_draft_rate=0.5)
    assert not half.is_iid and half.token_profile().tolist() == [0.25, 0.5]
    for bad in (0.0, 1.5, -0.1):
        with pytest.raises(ValueError, match="token_draft_rate"):
            dataclasses.replace(iid, token_draft_rate=bad)


def test_the_calibrations_draft_rate_reaches_the_model_with_its_uncertainty() -> None:
    cal = load_preset(MEASURED)
    acc = AcceptanceModel.from_calibration(cal)
    assert acc.token_draft_rate == pytest.approx(251 / 380) and acc.token_passes == 380
    assert not any("without a draft" in m for m in acc.missing)
    draws = [acc.resampled(np.random.default_rng(s)).token_draft_rate for s in range(200)]
    sd = (acc.token_draft_rate * (1 - acc.token_draft_rate) / 380) ** 0.5
    assert abs(np.mean(draws) - acc.token_draft_rate) < 4 * sd / np.sqrt(200)
    assert 0.5 * sd < np.std(draws) < 2 * sd
    unmeasured = cal.model_copy(update={"token": cal.token.model_copy(
        update={"draft_rate": None, "target_passes": None})})
    plain = AcceptanceModel.from_calibration(unmeasured)
    assert plain.token_draft_rate == 1
    assert any("without a draft: not measured" in m for m in plain.missing)
    model_drafter = unmeasured.model_copy(update={"token": unmeasured.token.model_copy(
        update={"method": "draft_model", "draft_model": "x"})})
    assert not any("without a draft" in m
                   for m in AcceptanceModel.from_calibration(model_drafter).missing)


def test_passes_without_a_draft_slow_token_speculation_down() -> None:
    """Fewer tokens per pass, more passes: the token-only speedup falls."""
    acc = AcceptanceModel.iid(0.3, 0.6, step_tokens=20)
    cfg = SpecConfig(k1=1, k2=3, max_steps=8, max_step_tokens=40)
    work = Workload(8, 40, prompt_tokens=100)
    cm = CostModel.flat(0.3, c2=0.1).replace(engine=EngineBehaviour())
    every = predict(cfg, acc, cm, work, problems=60, draws=0).speedup
    some = predict(cfg, dataclasses.replace(acc, token_draft_rate=0.6), cm, work,
                   problems=60, draws=0).speedup
    assert some < every


# -- rates measured at each k2 itself (token.rates_by_k2) ----------------------------


@settings(max_examples=60, deadline=None)
@given(base=st.lists(st.floats(0.01, 0.99), min_size=1, max_size=4),
       own=st.lists(st.floats(0.01, 0.99), min_size=1, max_size=5),
       rate=st.floats(0.05, 1.0), own_rate=st.floats(0.05, 1.0),
       shift=st.floats(-2, 2))
def test_a_k2_measured_itself_draws_its_own_rates(base: list[float], own: list[float],
                                                  rate: float, own_rate: float,
                                                  shift: float) -> None:
    """A configuration whose k2 has its own rates takes them (and their draft rate);
    every other k2 reads the γ profile as before, and a problem's shift moves both."""
    k2 = len(own) + 1
    plain = AcceptanceModel(0.5, base[0], token_by_position=tuple(base), token_draft_rate=rate)
    acc = dataclasses.replace(plain, token_by_k2={k2: (tuple(own), own_rate)})
    assert not acc.is_iid
    assert acc.tokens_per_pass(k2) == pytest.approx(
        own_rate * _tokens_per_pass(own, k2 - 1) + (1 - own_rate), rel=1e-12)
    for other in (1, k2 + 1, k2 + 3):
        assert acc.tokens_per_pass(other) == pytest.approx(plain.tokens_per_pass(other))
    assert acc.token_profile(shift).tolist() == plain.token_profile(shift).tolist()
    moved = AcceptanceModel(0.5, own[0], token_by_position=tuple(own),
                            token_draft_rate=own_rate).token_profile(shift)
    assert acc.token_profile(shift, k2=k2) == pytest.approx(moved, rel=1e-12)


def test_rates_by_k2_are_validated_and_resampled_with_the_pooled_rates() -> None:
    acc = AcceptanceModel(0.5, 0.4, token_by_position=(0.4, 0.6, 0.6, 0.6),
                          token_draft_rate=0.7, token_samples=500, token_passes=400,
                          token_by_k2={3: ((0.45, 0.62), 0.75), 2: ((0.5,), 0.8)})
    draw = acc.resampled(np.random.default_rng(5))
    ratio = draw.alpha2 / acc.alpha2
    moved = draw.token_draft_rate / acc.token_draft_rate
    assert draw.token_by_k2[3][0] == pytest.approx((0.45 * ratio, 0.62 * ratio))
    assert draw.token_by_k2[3][1] == pytest.approx(min(1.0, 0.75 * moved))
    assert draw.token_by_k2[2][1] == pytest.approx(min(1.0, 0.8 * moved))
    for bad, match in (({1: ((), 0.5)}, "token_by_k2"), ({3: ((0.5,), 0.5)}, "token_by_k2"),
                       ({3: ((0.5, 1.5), 0.5)}, r"token_by_k2\[3\]\[1\]"),
                       ({2: ((0.5,), 0.0)}, "draft rate")):
        with pytest.raises(ValueError, match=match):
            dataclasses.replace(acc, token_by_k2=bad)


def test_the_calibrations_rates_by_k2_reach_the_model() -> None:
    from specmodel.formats.calibration import TokenPassRates

    cal = load_preset(MEASURED)
    rates = TokenPassRates(acceptance_by_position=[0.52, 0.66], draft_rate=0.75,
                           target_passes=300, samples=420)
    with_k2 = cal.model_copy(update={"token": type(cal.token).model_validate(
        {**cal.token.model_dump(), "rates_by_k2": {3: rates.model_dump()}})})
    acc = AcceptanceModel.from_calibration(with_k2)
    assert acc.token_by_k2 == {3: ((0.52, 0.66), 0.75)}
    assert acc.tokens_per_pass(3) == pytest.approx(0.75 * (1 + 0.52 + 0.52 * 0.66) + 0.25)
    assert acc.to_dict()["token_by_k2"] == {3: {"by_position": [0.52, 0.66],
                                                "draft_rate": 0.75}}
    with pytest.raises(ValueError, match="rates_by_k2 needs keys k2 >= 2"):
        type(cal.token).model_validate({**cal.token.model_dump(),
                                        "rates_by_k2": {4: rates.model_dump()}})
