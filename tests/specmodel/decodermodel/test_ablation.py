"""The ablation's variants: cumulative, in STEPS order, from the papers' idealisation
(where the simulator equals the closed forms) to the full model."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specmodel.config import SpecConfig
from specmodel.decodermodel import AcceptanceModel, Workload, predict
from specmodel.decodermodel.ablation import STEPS, variants
from specmodel.decodermodel.costs import PASS_FLOOR, CostModel

from .test_search import _calibration

CFG = SpecConfig(mode="async", k1=2, k2=2, max_steps=6, max_step_tokens=32)


def test_variants_run_from_the_papers_idealisation_to_the_full_model() -> None:
    cal = _calibration()
    vs = variants(cal)
    assert [name for name, _, _ in vs] == [name for name, _ in STEPS]
    first_costs, first_acc = vs[0][1], vs[0][2]
    assert first_costs.target_decode.is_flat and first_costs.draft_decode.is_flat
    assert first_costs.prefill_per_token == 0 and first_costs.call_overhead == 0
    assert first_acc.is_iid and first_acc.target_steps.is_constant
    full = CostModel.from_calibration(cal)
    last_costs, last_acc = vs[-1][1], vs[-1][2]
    for name in ("prefill_per_token", "draft_prefill_per_token", "call_overhead",
                 "draft_call_overhead", "verifier_per_pair", "contention",
                 "draft_contention", "target_decode", "draft_decode", "engine"):
        assert getattr(last_costs, name) == getattr(full, name), name
    assert last_acc == AcceptanceModel.from_calibration(cal)
    work = Workload.of(CFG, 100)
    a = predict(CFG, last_acc, last_costs, work, problems=60, draws=0, seed=3).speedup
    b = predict(CFG, last_acc, full, work, problems=60, draws=0, seed=3).speedup
    assert a == pytest.approx(b, rel=1e-12)


def test_each_step_changes_only_what_it_adds() -> None:
    vs = variants(_calibration())
    names = [n for n, _, _ in vs]
    i = names.index("prefill")
    before, after = vs[i - 1][1], vs[i][1]
    assert before.prefill_per_token == 0 and after.prefill_per_token > 0
    assert before.target_decode == after.target_decode and before.engine == after.engine
    j = names.index("concurrency")
    assert vs[j - 1][1].contention == 1.0 and vs[j][1].contention > 1.0


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.integers(2, 9), st.floats(PASS_FLOOR, 5.0), min_size=1,
                       max_size=4),
       st.integers(2, 16))
def test_pass_multipliers_interpolate_through_the_measured_values(measured, k2) -> None:
    """Through every measured value, below one forward too (a pass on another path than
    the forward it is counted in), never below PASS_FLOOR however far it extrapolates."""
    costs = CostModel.flat(0.3).replace(pass_multipliers=tuple(sorted(measured.items())))
    for k, m in measured.items():
        assert costs.pass_multiplier(k) == pytest.approx(m)
    assert costs.pass_multiplier(1) is None
    assert costs.pass_multiplier(k2) >= PASS_FLOOR
    ks = sorted(measured)
    if ks[0] <= k2 <= ks[-1]:  # between measured points: between their values
        lo = max(k for k in [1, *ks] if k <= k2)
        hi = min(k for k in ks if k >= k2)
        vals = [measured.get(lo, 1.0), measured[hi]]
        assert min(vals) - 1e-9 <= costs.pass_multiplier(k2) <= max(vals) + 1e-9


def test_a_costlier_measured_pass_makes_token_speculation_slower() -> None:
    acc = AcceptanceModel.iid(0.6, 0.5, step_tokens=24)
    cfg = SpecConfig(k2=3, max_steps=6, max_step_tokens=32)
    work = Workload.of(cfg, 100)
    base = CostModel.flat(0.3, c2=0.25)
    cheap = base.replace(pass_multipliers=((3, 1.5),))
    dear = base.replace(pass_multipliers=((3, 3.0),))
    s = [predict(cfg, acc, c, work, problems=200, draws=0, seed=1).speedup
         for c in (base, cheap, dear)]
    assert s[0] == pytest.approx(s[1], rel=1e-9)  # m = 1 + c2·(k2 − 1): the c2 price
    assert s[2] < s[1]
    # a pass measured below one forward (0.85 on the Xeon's static path) is priced so
    below = predict(cfg, acc, base.replace(pass_multipliers=((3, 0.85),)), work,
                    problems=200, draws=0, seed=1).speedup
    assert below > s[1]


def test_async_token_speculation_takes_the_contention_measured_on_such_calls() -> None:
    from specmodel.decodermodel import AcceptanceModel, EngineBehaviour

    acc = AcceptanceModel.iid(0.3, 0.5, step_tokens=24)
    base = CostModel.flat(0.5, c2=0.25, engine=EngineBehaviour()).replace(contention=1.1)
    hybrid = SpecConfig(mode="async", k1=2, k2=3, max_steps=6, max_step_tokens=32)
    steps_only = hybrid.replace(k2=1)
    work = Workload.of(hybrid, 100)
    spec = base.replace(speculative_contention=2.0)
    pred = {(cfg.k2, c is spec): predict(cfg, acc, c, work, problems=200, draws=0,
                                         seed=2).speedup
            for cfg in (hybrid, steps_only) for c in (base, spec)}
    assert pred[(3, True)] < pred[(3, False)]  # the hybrid's target calls are slowed more
    assert pred[(1, True)] == pytest.approx(pred[(1, False)], rel=1e-12)  # k2 = 1: unchanged


def test_the_answers_and_the_rates_of_each_k2_enter_with_their_steps() -> None:
    """A calibration with the answers' step lengths and token rates measured at each k2
    (the Xeon's 0.5B calibration with both): the idealisation has neither, the step
    lengths step adds the answers, the acceptance step the rates by k2, and the last
    variant is the full model."""
    from pathlib import Path

    from specmodel.formats.calibration import load_calibration

    cal = load_calibration(Path(__file__).resolve().parents[3] / "benchmarks" / "results"
                           / "heldout_05b_calibration_xeon_s7_costs_token_k2.json")
    vs = {name: acc for name, _, acc in variants(cal)}
    assert vs["papers"].is_iid and vs["papers"].step_length_answers is None
    assert not vs["papers"].token_by_k2
    assert vs["step lengths"].step_length_answers is not None
    assert not vs["step lengths"].token_by_k2 and sorted(vs["acceptance"].token_by_k2) == [
        2, 3, 4, 5]
    assert vs[STEPS[-1][0]] == AcceptanceModel.from_calibration(cal)
