"""Cost probes: the engines' call costs timed beside a run, held against the
calibration's (``cost_drift``), and the calibration rescaled to them
(``calibration_at_run_time``), in the run record, ``validate`` and the rescaled costs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from specmodel.decodermodel.costs import Surface
from specmodel.formats.calibration import (
    Calibration,
    EngineCallPoint,
    Measurement,
    ModelEngineCosts,
    load_calibration,
)
from specmodel.formats.run_record import CostProbe, RunRecord, load_run_record
from specmodel.prediction import calibration_at_run_time, compare, cost_drift

RESULTS = Path(__file__).resolve().parents[3] / "benchmarks" / "results"
CAL = RESULTS / "heldout_05b_calibration.json"


@pytest.fixture(scope="module")
def cal() -> Calibration:
    return load_calibration(CAL)


def _probe_of(m: ModelEngineCosts, factor: float, context: int) -> ModelEngineCosts:
    """Cells b = 1, 2 at ``context``: ``factor`` times what the calibration's surface
    gives there (as a probe on a machine ``factor`` times as slow would time them)."""
    surface = Surface.from_points(m.decode_points())
    return m.model_copy(update={"concurrent_slowdown": None, "points": [
        EngineCallPoint(batch=b, context=context, per_token=factor * surface.time(b, context),
                        intercept=0.1, n=2) for b in (1, 2)]})


def _probe(cal: Calibration, target: float, draft: float | None, context: int = 88
           ) -> CostProbe:
    ec = cal.engine_costs
    assert ec is not None and ec.draft is not None
    return CostProbe(date="2026-11-24T05:00:00+00:00", before="target", costs=ec.model_copy(
        update={"target": _probe_of(ec.target, target, context),
                "draft": None if draft is None else _probe_of(ec.draft, draft, context)}))


def test_scaled_costs_multiply_every_time_and_keep_the_ratios(cal: Calibration) -> None:
    ec = cal.engine_costs
    assert ec is not None and ec.draft is not None
    s = ec.scaled(0.8, 1.25)
    for old, new, f in ((ec.target, s.target, 0.8), (ec.draft, s.draft, 1.25)):
        for p, q in zip(old.points, new.points, strict=True):
            assert q.per_token == pytest.approx(f * p.per_token)
            assert q.intercept == pytest.approx(f * p.intercept)
        assert new.call_overhead.value == pytest.approx(f * old.call_overhead.value)
        assert new.prefill_per_token.value == pytest.approx(f * old.prefill_per_token.value)
        assert new.prefill_per_token.stderr == pytest.approx(f * old.prefill_per_token.stderr)
        assert new.concurrent_slowdown == old.concurrent_slowdown
        assert new.speculative_passes == old.speculative_passes
    assert ec.scaled(0.8).draft == ec.draft
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="factor must be a finite number > 0"):
            ec.target.scaled(bad)


@settings(max_examples=40, deadline=None)
@given(target=st.floats(0.2, 5.0), draft=st.floats(0.2, 5.0), context=st.integers(1, 2000))
def test_the_drift_is_the_probes_time_over_the_calibrations(target: float, draft: float,
                                                             context: int) -> None:
    c = load_calibration(CAL)
    d = cost_drift(c, [_probe(c, target, draft, context), _probe(c, target, draft, 64)])
    assert d is not None and d.probes == 2 and d.cells == 4
    assert d.target == pytest.approx(target, rel=1e-9)
    assert d.draft == pytest.approx(draft, rel=1e-9)
    assert d.target_range == pytest.approx((target, target), rel=1e-9)


def test_the_drift_is_a_geometric_mean_with_its_range(cal: Calibration) -> None:
    d = cost_drift(cal, [_probe(cal, 0.5, None), _probe(cal, 2.0, None)])
    assert d is not None
    assert d.target == pytest.approx(1.0) and d.target_range == pytest.approx((0.5, 2.0))
    assert d.draft is None and d.draft_range is None


def test_no_probes_or_no_engine_costs_give_no_drift(cal: Calibration) -> None:
    assert cost_drift(cal, []) is None
    bare = cal.model_copy(update={"engine_costs": None})
    assert cost_drift(bare, [_probe(cal, 1.0, 1.0)]) is None
    with pytest.raises(ValueError, match="no cost probes"):
        calibration_at_run_time(cal, [])


def test_a_probe_of_another_target_is_refused(cal: Calibration) -> None:
    p = _probe(cal, 1.0, 1.0)
    other = p.model_copy(update={"costs": p.costs.model_copy(update={
        "target": p.costs.target.model_copy(update={"model": "another-model"})})})
    with pytest.raises(ValueError, match="probe 1 timed target 'another-model'"):
        cost_drift(cal, [other])


@pytest.mark.usefixtures("quick_decoder_model")
def test_the_rescaled_calibration_prices_the_target_alone_by_the_drift(
        cal: Calibration) -> None:
    """The baseline is the target alone: its predicted time per token moves by exactly
    the target's drift (the same Monte-Carlo seed draws the same steps)."""
    record = load_run_record(RESULTS / "heldout_05b_round1.run.json")
    rescaled, drift = calibration_at_run_time(cal, [_probe(cal, 0.7, 1.1)])
    assert drift.target == pytest.approx(0.7)
    before = compare(record, cal)[0]
    after = compare(record, rescaled)[0]
    assert before.config == after.config == "target"
    assert after.decoder_split["total"] == pytest.approx(0.7 * before.decoder_split["total"],
                                                         rel=1e-6)
    assert rescaled.step == cal.step and rescaled.token == cal.token


def test_records_keep_their_probes_and_older_records_have_none(cal: Calibration,
                                                               tmp_path: Path) -> None:
    record = load_run_record(RESULTS / "heldout_05b_round1.run.json")
    assert record.cost_probes == []
    probed = record.model_copy(update={"cost_probes": [_probe(cal, 0.9, 1.0)]})
    path = tmp_path / "probed.run.json"
    path.write_text(probed.model_dump_json())
    again = load_run_record(path)
    assert again.cost_probes == probed.cost_probes
    assert RunRecord.model_validate(json.loads(path.read_text())).cost_probes[0].before \
        == "target"


@pytest.mark.usefixtures("quick_decoder_model")
def test_validate_prints_the_drift_and_prices_with_it_when_asked(cal: Calibration,
                                                                 tmp_path: Path,
                                                                 capsys) -> None:
    from cli.main import main

    record = load_run_record(RESULTS / "heldout_05b_round1.run.json")
    path = tmp_path / "probed.run.json"
    path.write_text(record.model_copy(update={"cost_probes": [_probe(cal, 0.8, 1.0)]})
                    .model_dump_json())
    assert main(["validate", str(path), "--calibration", str(CAL), "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main(["validate", str(path), "--calibration", str(CAL), "--json",
                 "--costs-at-run-time"]) == 0
    rescaled = json.loads(capsys.readouterr().out)
    # only the target got faster: every speculative configuration's speedup changes
    assert all(a["predicted_decoder"] != b["predicted_decoder"]
               for a, b in zip(plain[1:], rescaled[1:], strict=True))
    assert main(["validate", str(path), "--calibration", str(CAL)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "cost probes (1, timed beside the run): the target's time per token x0.80" in out
    assert main(["validate", str(RESULTS / "heldout_05b_round1.run.json"), "--calibration",
                 str(CAL), "--costs-at-run-time"]) == 2
    assert "--costs-at-run-time: the run record has no cost probes" in " ".join(
        capsys.readouterr().err.split())


# -- each batch size by its own ratio (the default; --drift-uniform: one per model) ---


def _probe_by_batch(cal: Calibration, one: float, two: float, context: int = 88
                    ) -> CostProbe:
    """A probe whose b = 1 cells run ``one`` and b = 2 cells ``two`` times the
    calibration's surface (a machine whose batch of two got cheaper or dearer)."""
    ec = cal.engine_costs
    assert ec is not None

    def cells(m: ModelEngineCosts) -> ModelEngineCosts:
        surface = Surface.from_points(m.decode_points())
        return m.model_copy(update={"concurrent_slowdown": None, "points": [
            EngineCallPoint(batch=b, context=context, per_token=f * surface.time(b, context),
                            intercept=0.1, n=2) for b, f in ((1, one), (2, two))]})

    return CostProbe(date="2026-11-24T05:00:00+00:00", before="target", costs=ec.model_copy(
        update={"target": cells(ec.target),
                "draft": None if ec.draft is None else cells(ec.draft)}))


@settings(max_examples=30, deadline=None)
@given(one=st.floats(0.3, 3.0), two=st.floats(0.3, 3.0))
def test_the_drift_by_batch_size_is_each_sizes_own_ratio(one: float, two: float) -> None:
    c = load_calibration(CAL)
    d = cost_drift(c, [_probe_by_batch(c, one, two), _probe_by_batch(c, one, two, 64)])
    assert d is not None
    assert d.target_by_batch == pytest.approx({1: one, 2: two}, rel=1e-9)
    assert d.draft_by_batch == pytest.approx({1: one, 2: two}, rel=1e-9)
    assert d.target == pytest.approx((one * two) ** 0.5, rel=1e-9)
    assert ("b = 1 x" in d.summary()) and ("b = 2 x" in d.summary())


@settings(max_examples=30, deadline=None)
@given(one=st.floats(0.3, 3.0), ratio=st.floats(0.9, 1.1))
def test_by_batch_each_cell_moves_by_its_sizes_ratio_or_the_nearest_below(
        one: float, ratio: float) -> None:
    """(b = 2 within 10 % of b = 1's ratio: the surface stays monotone in b, so the
    probes read it back exactly; a larger move would be smoothed by its monotone fit.)"""
    two = one * ratio
    c = load_calibration(CAL)
    rescaled, d = calibration_at_run_time(c, [_probe_by_batch(c, one, two)])
    old, new = c.engine_costs, rescaled.engine_costs
    assert old is not None and new is not None
    for p, q in zip(old.target.points, new.target.points, strict=True):
        want = one if p.batch == 1 else two  # b = 3, 4, …: b = 2's ratio
        assert q.per_token == pytest.approx(want * p.per_token, rel=1e-9)
        assert q.intercept == pytest.approx(want * p.intercept, rel=1e-9)
    # the call overhead and prefill by the model's one ratio; the ratios as they were
    assert new.target.call_overhead.value == pytest.approx(
        d.target * old.target.call_overhead.value)
    assert new.target.concurrent_slowdown == old.target.concurrent_slowdown
    # and the probes see the rescaled calibration as the machine they timed
    again = cost_drift(rescaled, [_probe_by_batch(c, one, two)])
    assert again is not None
    assert again.target_by_batch == pytest.approx({1: 1.0, 2: 1.0}, rel=1e-9)
    uniform, _ = calibration_at_run_time(c, [_probe_by_batch(c, one, two)], by_batch=False)
    assert uniform.engine_costs == old.scaled(d.target, d.draft)


def test_by_batch_factors_are_validated_and_below_the_smallest_take_it(
        cal: Calibration) -> None:
    ec = cal.engine_costs
    assert ec is not None
    s = ec.target.scaled(1.0, {2: 0.5, 4: 2.0})
    for p, q in zip(ec.target.points, s.points, strict=True):
        want = 0.5 if p.batch < 4 else 2.0
        assert q.per_token == pytest.approx(want * p.per_token)
    for bad in ({0: 1.0}, {1: 0.0}, {1: float("nan")}):
        with pytest.raises(ValueError, match="by_batch needs batch sizes"):
            ec.target.scaled(1.0, bad)


@pytest.mark.usefixtures("quick_decoder_model")
def test_validate_prices_each_batch_size_unless_drift_uniform(
        cal: Calibration, tmp_path: Path, capsys) -> None:
    from cli.main import main

    record = load_run_record(RESULTS / "heldout_05b_round1.run.json")
    path = tmp_path / "probed.run.json"
    path.write_text(record.model_copy(update={"cost_probes": [_probe_by_batch(cal, 1.0, 0.8)]})
                    .model_dump_json())
    args = ["validate", str(path), "--calibration", str(CAL), "--json", "--costs-at-run-time"]
    assert main(args) == 0
    sized = {r["config"]: r["predicted_decoder"] for r in json.loads(capsys.readouterr().out)}
    assert main([*args, "--drift-uniform"]) == 0
    uniform = {r["config"]: r["predicted_decoder"] for r in json.loads(capsys.readouterr().out)}
    # batches got cheaper against one sequence: a sync configuration (the target batches
    # its k1 steps) gains on the uniform rescale, which slowed the target alone too
    sync = next(k for k in sized if k.startswith("sync"))
    assert sized[sync] > uniform[sync]
    assert main(["validate", str(path), "--calibration", str(CAL), "--drift-uniform"]) == 2
    assert "--drift-uniform goes with --costs-at-run-time" in capsys.readouterr().err
    # --keep-times: nothing to take from probes that paired no calls; one that paired
    # them moves only the async rows (the sync rows never run the two models together)
    assert main([*args, "--keep-times"]) == 2
    assert "--keep-times: times kept" in capsys.readouterr().err
    paired = tmp_path / "paired.run.json"
    paired.write_text(record.model_copy(update={"cost_probes": [
        _paired(_probe_by_batch(cal, 1.0, 0.8), 1.6, 1.2)]}).model_dump_json())
    assert main(["validate", str(paired), "--calibration", str(CAL), "--json"]) == 0
    plain = {r["config"]: r["predicted_decoder"] for r in json.loads(capsys.readouterr().out)}
    assert main(["validate", str(paired), "--calibration", str(CAL), "--json",
                 "--costs-at-run-time", "--keep-times"]) == 0
    slowed = {r["config"]: r["predicted_decoder"] for r in json.loads(capsys.readouterr().out)}
    assert all(slowed[k] == plain[k] for k in plain if k.startswith("sync"))
    # (async k2 = 3's target calls speculate: their slowdown stays the calibration's)
    assert all(slowed[k] < plain[k] for k in plain if k.startswith("async") and "k2=1" in k)
    assert main(["validate", str(paired), "--calibration", str(CAL), "--costs-at-run-time",
                 "--keep-times"]) == 0
    assert "the calibration's times and these slowdowns beside each other" in " ".join(
        capsys.readouterr().out.split())


def test_a_probe_lists_its_cells_in_milliseconds_per_token() -> None:
    """``CostProbe.cells_text``: what ``decode --cost-probe`` and ``bench_heldout`` print,
    here of seed 19's round probe (as that round's log printed it)."""
    (probe,) = load_run_record(RESULTS / "heldout_15b_s19_epyc_round1.run.json").cost_probes
    assert probe.cells_text() == ("target T(1, 87) = 413 ms, T(2, 87) = 848 ms; "
                                  "draft T(1, 87) = 172 ms, T(2, 87) = 324 ms")
    alone = probe.model_copy(update={"costs": probe.costs.model_copy(update={"draft": None})})
    assert alone.cells_text() == "target T(1, 87) = 413 ms, T(2, 87) = 848 ms"


def _paired(probe: CostProbe, target: float, draft: float, n: int = 4,
            stderr: float = 0.03) -> CostProbe:
    """``probe`` as one that also paired the models' calls: slowdowns ``target`` and
    ``draft`` beside each other over ``n`` rounds."""
    c = probe.costs
    assert c.draft is not None
    slow = {role: Measurement(value=v, n=n, stderr=stderr)
            for role, v in (("target", target), ("draft", draft))}
    return probe.model_copy(update={"costs": c.model_copy(update={
        "contention_method": "paired-calls",
        "target": c.target.model_copy(update={"concurrent_slowdown": slow["target"]}),
        "draft": c.draft.model_copy(update={"concurrent_slowdown": slow["draft"]})})})


def test_probes_that_paired_the_models_give_the_slowdowns_at_run_time(cal: Calibration
                                                                     ) -> None:
    """The drift pools the probes' slowdowns beside each other and holds them against
    the calibration's; the rescaled calibration takes them (``paired-calls``), keeps the
    rest of its ratios, and its async prediction moves while sync's cannot."""
    ec = cal.engine_costs
    assert ec is not None and ec.draft is not None
    probes = [_paired(_probe(cal, 1.0, 1.0), 1.3, 1.1),
              _paired(_probe(cal, 1.0, 1.0, 64), 1.5, 1.3, n=2)]
    d = cost_drift(cal, probes)
    assert d is not None and d.target_contention is not None
    assert d.target_contention.value == pytest.approx((4 * 1.3 + 2 * 1.5) / 6)
    assert d.target_contention.n == 6 and d.draft_contention is not None
    assert d.draft_contention.value == pytest.approx((4 * 1.1 + 2 * 1.3) / 6)
    assert d.target_contention_calibrated == ec.target.concurrent_slowdown.value
    assert d.draft_contention_calibrated == ec.draft.concurrent_slowdown.value
    assert (f"beside each other (6 paired rounds): target 1.37 ± "
            f"{d.target_contention.stderr:.2f}x (calibration "
            f"{ec.target.concurrent_slowdown.value:.2f}x), draft 1.17") in d.summary()
    rescaled, _ = calibration_at_run_time(cal, probes)
    new = rescaled.engine_costs
    assert new is not None and new.draft is not None
    assert new.contention_method == "paired-calls"
    assert new.target.concurrent_slowdown == d.target_contention
    assert new.draft.concurrent_slowdown == d.draft_contention
    assert new.target.speculative_slowdown == ec.target.speculative_slowdown
    kept, _ = calibration_at_run_time(cal, probes, contention=False)
    assert kept.engine_costs is not None
    assert kept.engine_costs.target.concurrent_slowdown == ec.target.concurrent_slowdown
    assert kept.engine_costs.contention_method == ec.contention_method
    # times kept: the calibration's every time, the probes' slowdowns
    slowed, _ = calibration_at_run_time(cal, [_paired(_probe(cal, 1.3, 0.8), 1.3, 1.1)],
                                        times=False)
    assert slowed.engine_costs is not None
    assert slowed.engine_costs.target.points == ec.target.points
    assert slowed.engine_costs.draft.call_overhead == ec.draft.call_overhead
    assert slowed.engine_costs.target.concurrent_slowdown.value == pytest.approx(1.3)
    with pytest.raises(ValueError, match="no probe paired the models' calls"):
        calibration_at_run_time(cal, [_probe(cal, 1.0, 1.0)], times=False)
    with pytest.raises(ValueError, match="contention is off"):
        calibration_at_run_time(cal, probes, times=False, contention=False)
    # probes without pairs leave the calibration's slowdowns and say nothing of them
    plain = cost_drift(cal, [_probe(cal, 1.0, 1.0)])
    assert plain is not None and plain.target_contention is None
    assert "beside each other" not in plain.summary()
    # the model reads them: async slower beside a slower draft, sync untouched
    from specmodel.config import SpecConfig
    from specmodel.prediction import decoder_prediction

    def speedup(c: Calibration, mode: str) -> float:
        cfg = SpecConfig(mode=mode, k1=2, k2=1, max_steps=12, max_step_tokens=48)
        return decoder_prediction(c, cfg, prompt_tokens=88, problems=40).speedup

    assert speedup(rescaled, "async") < speedup(kept, "async")
    assert speedup(rescaled, "sync") == pytest.approx(speedup(kept, "sync"), rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0.5, 3.0), st.integers(1, 20),
                          st.one_of(st.none(), st.floats(0.0, 0.5))), min_size=1, max_size=6))
@example([(1.0, 1, 6.078652723966323e-187)])  # a tiny stderr kept (its square underflows)
def test_pooled_measurements_weigh_by_n_and_keep_the_spread_between_them(
        parts: list[tuple[float, int, float | None]]) -> None:
    """``Measurement.pooled``: the n-weighted mean, over all the observations, with a
    standard error no smaller than the spread between the measurements over √k or the
    combined standard errors; one measurement pools to itself."""
    import math
    import statistics

    ms = [Measurement(value=v, n=n, stderr=se) for v, n, se in parts]
    got = Measurement.pooled(ms)
    n = sum(m.n for m in ms)
    assert got.n == n
    assert got.value == pytest.approx(sum(m.value * m.n for m in ms) / n, rel=1e-12)
    within = math.sqrt(sum((m.n * (m.stderr or 0)) ** 2 for m in ms)) / n
    between = statistics.stdev([m.value for m in ms]) / math.sqrt(len(ms)) if len(ms) > 1 else 0
    assert (got.stderr or 0.0) == pytest.approx(max(within, between), rel=1e-9, abs=1e-15)
    if len(ms) == 1:
        assert got.value == pytest.approx(ms[0].value)
        assert got.stderr == (None if not ms[0].stderr else pytest.approx(ms[0].stderr))
    with pytest.raises(ValueError, match="at least one measurement"):
        Measurement.pooled([])
    # pooled_or_none: the entries given, None where none was
    assert Measurement.pooled_or_none([None, *ms, None]) == got
    assert Measurement.pooled_or_none([None]) is None


@settings(max_examples=60, deadline=None)
@given(target=st.floats(0.3, 3.0), draft=st.floats(0.3, 3.0),
       tolerance=st.floats(1.01, 2.0))
def test_departures_name_what_lies_beyond_the_tolerance(target: float, draft: float,
                                                        tolerance: float) -> None:
    """A probe reading the machine ``target`` and ``draft`` times the calibration: each
    ratio, and the draft's relative to the target's, is named exactly when it lies
    outside [1/tolerance, tolerance]; the summary says so at the default tolerance."""
    from specmodel.prediction import DRIFT_TOLERANCE

    c = load_calibration(CAL)
    d = cost_drift(c, [_probe(c, target, draft)])
    assert d is not None and d.draft is not None

    def off(r: float) -> bool:
        return not 1 / tolerance <= r <= tolerance

    found = d.departures(tolerance)
    assert any(f.startswith("the target's") for f in found) == off(d.target)
    assert any(f.startswith("the draft's") for f in found) == off(d.draft)
    assert any(f.startswith("the draft relative") for f in found) == off(d.draft / d.target)
    assert not any(f.startswith("a batch") for f in found)  # both sizes drift alike
    stale = bool(d.departures(DRIFT_TOLERANCE))
    assert ("is not the calibration's" in d.summary()) == stale
    if stale:
        assert "specmodel profile engine-costs" in d.summary()


def test_departures_see_a_batch_that_got_dearer(cal: Calibration) -> None:
    """Seed 21's VM read the target 1.5-1.9x the calibration: named.  A machine whose
    batch of two costs 1.5x what it did relative to one sequence is named too, though
    one sequence costs the calibration's."""
    d = cost_drift(cal, [_probe(cal, 1.77, 2.09)])
    assert d is not None
    assert d.departures() == ["the target's time per token x1.77", "the draft's x2.09"]
    probe = _probe(cal, 1.0, 1.0)
    cells = [p.model_copy(update={"per_token": (1.5 if p.batch == 2 else 1.0) * p.per_token})
             for p in probe.costs.target.points]
    batchy = probe.model_copy(update={"costs": probe.costs.model_copy(update={
        "target": probe.costs.target.model_copy(update={"points": cells})})})
    d = cost_drift(cal, [batchy])
    assert d is not None
    assert d.departures() == ["a batch of 2 relative to one sequence x1.50"]
    calm = cost_drift(cal, [_probe(cal, 1.1, 0.95)])
    assert calm is not None and calm.departures() == []
    assert "not the calibration's" not in calm.summary()
    for bad in (1.0, 0.5, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="tolerance must be a finite number > 1"):
            d.departures(bad)
