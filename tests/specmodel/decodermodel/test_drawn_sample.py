"""The decoder model on a sweep's own draws (:class:`DrawnSample`, ``Workload.sample``):
the records' validation, and what a schedule must do with given lengths and verdict
uniforms whatever they are (property tests): uniforms at or above every rate reject
every draft, so each position commits the target's own step; uniforms of 0 accept
every draft; the target alone writes the sample's target steps; every mode decodes
the sample the same way each time it meets it, so predict has no simulation error."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specmodel.config import SpecConfig
from specmodel.decodermodel import (
    AcceptanceModel,
    CostModel,
    DrawnProblem,
    DrawnSample,
    EngineBehaviour,
    StepLengths,
    Surface,
    Workload,
    predict,
    simulate,
)
from specmodel.decodermodel.simulate import SimResult

FLAT = Surface.from_points({(b, 0): 1 + 0.25 * (b - 1) for b in range(1, 9)})
COSTS = CostModel(target_decode=FLAT, draft_decode=Surface.from_points({(1, 0): 0.25}),
                  engine=EngineBehaviour.synthetic(context_bucket=0, prefill=False))
ACC = AcceptanceModel(0.6, 0.5, target_steps=StepLengths.constant(4),
                      draft_steps=StepLengths.constant(4), step_by_depth=(0.7, 0.5))
CAP = 16


def _problem(target: list[int], draft: list[int], u: float | list[list[float]]
             ) -> DrawnProblem:
    us = ([[u] * (pos + 1) for pos in range(len(target))] if isinstance(u, float) else u)
    return DrawnProblem(tuple(target), tuple(draft), tuple(tuple(x) for x in us))


def _cfg(mode: str, k1: int, steps: int, batching: str = "call") -> SpecConfig:
    return SpecConfig(mode=mode, k1=k1, max_steps=steps, max_step_tokens=CAP,
                      verifier={"kind": "exact"}, target_batching=batching)


lengths = st.lists(st.integers(1, CAP), min_size=2, max_size=8)
CONFIGS = [("sync", 3, "call"), ("async", 3, "call"), ("async", 2, "continuous"),
           ("sync", 1, "call")]


def _decode_one(target: list[int], data: st.DataObject, u: float, how: tuple
                ) -> tuple[SimResult, list[int]]:
    """(the simulation of twice one drawn problem with ``target`` lengths, draft lengths
    drawn from ``data`` and every verdict uniform ``u``, under ``how``; the draft's)."""
    draft = data.draw(st.lists(st.integers(1, CAP), min_size=len(target),
                               max_size=len(target)))
    sample = DrawnSample((_problem(target, draft, u),), "test")
    cfg = _cfg(how[0], how[1], len(target), how[2])
    return simulate(cfg, ACC, COSTS, Workload(len(target), CAP, 10, sample=sample),
                    problems=2), draft


@settings(max_examples=40, deadline=None)
@given(lengths, st.data(), st.sampled_from(CONFIGS))
def test_rejecting_uniforms_commit_the_targets_own_steps(target: list[int], data,
                                                         how: tuple) -> None:
    sim, _ = _decode_one(target, data, 0.999, how)
    assert list(sim.tokens) == [sum(target)] * 2
    assert sim.counters["accepted_steps"] == 0
    assert sim.seconds[0] == sim.seconds[1]  # the same problem, decoded the same way


@settings(max_examples=40, deadline=None)
@given(lengths, st.data(), st.sampled_from(CONFIGS[:3]))
def test_accepting_uniforms_commit_every_judged_draft(target: list[int], data,
                                                      how: tuple) -> None:
    sim, draft = _decode_one(target, data, 0.0, how)
    c = sim.counters
    assert c["accepted_steps"] == c["drafted_steps"] > 0
    if how[0] == "sync":  # rounds of k1 − 1 accepted drafts and the target's step after
        k = how[1]
        want = sum(draft[i] if i % k < k - 1 and i < len(target) - 1 else target[i]
                   for i in range(len(target)))
        assert sim.tokens[0] == want


def test_a_verdict_reads_its_depths_uniform() -> None:
    """Sync k1 = 3 over 3 positions: the draft at position 1 is judged at depth 1, so only
    that depth's uniform decides it (depth 0's says reject, depth 1's accept)."""
    us = [[0.0], [0.99, 0.1], [0.99, 0.99, 0.99]]
    sample = DrawnSample((_problem([4, 4, 4], [2, 3, 5], us),), "test")
    sim = simulate(_cfg("sync", 3, 3), ACC, COSTS, Workload(3, CAP, 10, sample=sample),
                   problems=2)
    # round 1 drafts positions 0 and 1: both accepted (depth 0: 0.0 < 0.7; depth 1:
    # 0.1 < 0.5), then the target's step at position 2
    assert sim.tokens[0] == 2 + 3 + 4
    assert sim.counters["accepted_steps"] == 2


def test_predict_on_a_sample_decodes_it_once_and_has_no_simulation_error() -> None:
    sample = DrawnSample((_problem([4, 8, 2], [4, 2, 9], 0.3),
                          _problem([1, 16, 3], [5, 5, 5], 0.6)), "test")
    got = predict(_cfg("async", 3, 3), ACC, COSTS, Workload(3, CAP, 10, sample=sample),
                  draws=1)
    assert got.problems == 2 and got.stderr == 0
    assert got.interval == got.simulation_interval == (got.speedup, got.speedup)
    again = predict(_cfg("async", 3, 3), ACC, COSTS, Workload(3, CAP, 10, sample=sample),
                    draws=1, seed=9)
    assert again.speedup == got.speedup  # nothing is drawn


@pytest.mark.parametrize(("kw", "match"), [
    ({"target": (), "draft": (), "verdicts": ()}, "target must name at least one"),
    ({"target": (0, 2), "draft": (1, 2), "verdicts": ((0.1,), (0.1, 0.2))},
     "target must be >= 1"),
    ({"target": (1, 2), "draft": (1,), "verdicts": ((0.1,), (0.1, 0.2))},
     "the same positions"),
    ({"target": (1,), "draft": (1,), "verdicts": ((1.0,),)}, r"uniform in \[0, 1\)"),
    ({"target": (3,), "draft": (1,), "verdicts": ((0.5,),),
      "target_passes": {2: ((1, 1),)}}, "summing to the step's 3"),
    ({"target": (3,), "draft": (1,), "verdicts": ((0.5,),),
      "target_passes": {0: ((3,),)}}, "gamma >= 1"),
])
def test_drawn_problem_refuses_inconsistent_draws(kw: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        DrawnProblem(**kw)


def test_drawn_lookups_name_what_is_missing() -> None:
    p = _problem([3, 4], [2, 2], 0.5)
    assert p.length(0, 1) == 4 and p.length(1, 0) == 2 and p.uniform(1, 1) == 0.5
    with pytest.raises(ValueError, match=r"position must be in \[0, 1\]"):
        p.length(0, 2)
    with pytest.raises(ValueError, match=r"depth must be in \[0, 0\]"):
        p.uniform(0, 1)
    with pytest.raises(ValueError, match="no passes of gamma = 2"):
        p.passes(0, 0, 2)
    with pytest.raises(ValueError, match="at least one problem"):
        DrawnSample((), "test")
    sample = DrawnSample((p,), "test")
    with pytest.raises(ValueError, match="workload takes up to 3"):
        sample.covers(3, 3)
    with pytest.raises(ValueError, match="no passes of gamma = 1 for the target"):
        sample.covers(2, 2, (1, 0))
    with pytest.raises(ValueError, match="prefix caching at step boundaries"):
        simulate(_cfg("sync", 3, 2), ACC,
                 CostModel(target_decode=FLAT, draft_decode=FLAT,
                           engine=EngineBehaviour.papers()),
                 Workload(2, CAP, 10, sample=sample))
