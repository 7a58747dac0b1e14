"""The price of one engine call (:func:`call_price`, the decoder model's formula) and the
audit of a run's logged calls against it (:mod:`specmodel.call_audit`)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specmodel.call_audit import call_audit, overlap_shares
from specmodel.decodermodel.costs import CostModel, Surface, call_price
from specmodel.formats.calibration import (
    EngineCallPoint,
    EngineCosts,
    Measurement,
    ModelEngineCosts,
    load_preset,
)
from specmodel.formats.run_record import CallRecord, load_run_record

PRESET = "lr-paper-gsm8k-deepseek"


def _costs(model: str, per_token: float, prefill: float, overhead: float) -> ModelEngineCosts:
    """Costs flat in the context: per_token·b per decode iteration of b rows."""
    return ModelEngineCosts(
        model=model, points=[EngineCallPoint(batch=b, context=L, per_token=per_token * b,
                                             intercept=overhead + prefill * b * L, n=2)
                             for b in (1, 2, 3) for L in (64, 512)],
        call_overhead=Measurement(value=overhead, n=6, stderr=1e-4),
        prefill_per_token=Measurement(value=prefill, n=6, stderr=1e-6),
        concurrent_slowdown=1.5)


ENGINE = EngineCosts(engine="transformers", device="cpu", dtype="float32", threads=1,
                     tokens=(4, 16), target=_costs("tgt", 0.1, 1e-3, 0.05),
                     draft=_costs("drf", 0.02, 2e-4, 0.01))
CAL = load_preset(PRESET).model_copy(update={"engine_costs": ENGINE})


@given(b=st.integers(1, 8), ctx=st.lists(st.integers(1, 4000), min_size=8, max_size=8),
       prefilled=st.integers(0, 10_000), iterations=st.integers(0, 64),
       prefill=st.floats(0, 1e-2), overhead=st.floats(0, 1))
def test_call_price_is_overhead_plus_prefill_plus_iterations_at_the_mean_context(
        b, ctx, prefilled, iterations, prefill, overhead) -> None:
    surface = Surface.from_points([(1, 64, 0.1), (1, 4096, 0.2), (8, 64, 0.4),
                                   (8, 4096, 0.9)])
    contexts = ctx[:b]
    p = call_price(surface, prefill, overhead, contexts, prefilled, iterations)
    assert p.overhead == overhead
    assert p.prefill == pytest.approx(prefill * prefilled)
    assert p.decode == pytest.approx(iterations * surface.time(b, sum(contexts) / b))
    assert p.total == pytest.approx(p.overhead + p.prefill + p.decode)
    q = call_price(surface, prefill, overhead, contexts, prefilled, iterations,
                   per_iteration=0.5)
    assert q.decode == pytest.approx(0.5 * iterations)


def test_call_price_rejects_an_empty_batch_and_negative_counts() -> None:
    s = Surface.flat()
    with pytest.raises(ValueError, match="contexts must hold at least one prefix"):
        call_price(s, 0.0, 0.0, [], 0, 1)
    with pytest.raises(ValueError, match="prefilled and iterations must be >= 0"):
        call_price(s, 0.0, 0.0, [10], -1, 1)


def _call(role: str, start: float, seconds: float, **kw) -> CallRecord:
    return CallRecord(role=role, start=start, seconds=seconds, rows=kw.pop("rows", 1),
                      step_tokens=kw.pop("step_tokens", [5]), **kw)


@given(st.lists(st.tuples(st.sampled_from(["target", "draft"]), st.floats(0, 100),
                          st.floats(0, 10)), max_size=8))
def test_overlap_shares_are_shares(spans) -> None:
    calls = [_call(r, s, d) for r, s, d in spans]
    shares = overlap_shares(calls)
    assert len(shares) == len(calls)
    assert all(0.0 <= x <= 1.0 for x in shares)
    if len({r for r, _, _ in spans}) < 2:  # one model only: nothing ran beside it
        assert all(x == 0.0 for x in shares)


def test_overlap_shares_by_hand() -> None:
    calls = [_call("target", 0.0, 4.0), _call("draft", 1.0, 2.0), _call("draft", 3.0, 2.0),
             _call("target", 10.0, 1.0)]
    assert overlap_shares(calls) == [pytest.approx(0.75), 1.0, pytest.approx(0.5), 0.0]


def _problem(calls: list[dict]) -> dict:
    return {"problem": 0, "output": "t\n", "steps": [], "drafted_steps": 1,
            "accepted_steps": 0, "wasted_draft_steps": 0, "target_steps": 2,
            "target_batches": 1, "output_tokens": 5, "seconds": 10.0, "draft_seconds": 1.0,
            "target_seconds": 8.0, "verify_seconds": 0.0, "correct": True,
            "finished": "answer", "calls": calls}


def _record(tmp_path, configs: list[tuple[str, dict, list[list[dict]]]]) -> str:
    data = {"schema_version": 1, "kind": "specmodel-run",
            "created": "2026-12-02T00:00:00+00:00", "engine": "transformers",
            "calibration": load_preset(PRESET).model_dump(exclude_none=True),
            "baseline": "target",
            "configs": [{"label": label, "config": cfg,
                         "totals": {"problems": len(probs), "output_tokens": 5,
                                    "seconds": 10.0, "tokens_per_second": 0.5,
                                    "accuracy": 1.0},
                         "problems": [_problem(c) for c in probs]}
                        for label, cfg, probs in configs]}
    p = tmp_path / "run.json"
    p.write_text(json.dumps(data))
    return str(p)


SHAPED = {"prompt_tokens": [100, 120], "prefilled_tokens": 240, "iterations": 10}


def test_audit_prices_each_logged_call_at_its_own_shape(tmp_path) -> None:
    target = {"role": "target", "start": 0.0, "seconds": 3.0, "rows": 2,
              "step_tokens": [8, 9], **SHAPED}
    draft = {"role": "draft", "start": 3.0, "seconds": 0.5, "rows": 1, "step_tokens": [7],
             "prompt_tokens": [100], "prefilled_tokens": 20, "iterations": 9}
    speculating = {"role": "target", "start": 4.0, "seconds": 1.0, "rows": 1,
                   "step_tokens": [6], "prompt_tokens": [110], "prefilled_tokens": 110}
    rec = load_run_record(_record(tmp_path, [
        ("target", {"k1": 1, "k2": 1}, [[]]),
        ("sync k1=2 k2=1", {"k1": 2, "k2": 1}, [[target, draft, speculating],
                                                [target, draft]])]))
    audit = call_audit(rec, CAL)
    assert audit.calibration == CAL.name
    assert audit.unlogged == ["target"]
    assert audit.unpriced == {"sync k1=2 k2=1": 1}
    groups = {(g.role, g.rows): g for g in audit.groups}
    t = groups[("target", 2)]
    # 0.05 s overhead, 240 tokens at 1 ms, 10 iterations of two rows at 0.2 s: 2.29 s.
    assert (t.calls, t.measured) == (2, 6.0)
    assert t.overhead == pytest.approx(0.1) and t.prefill == pytest.approx(0.48)
    assert t.decode == pytest.approx(4.0) and t.beside == 0.0 and t.overlap == 0.0
    assert t.priced == pytest.approx(2 * 2.29) and t.ratio == pytest.approx(6.0 / 4.58)
    assert (t.context, t.prefilled, t.iterations, t.longest_step) == (110, 240, 10, 9)
    d = groups[("draft", 1)]
    assert d.priced == pytest.approx(2 * (0.01 + 20 * 2e-4 + 9 * 0.02))
    # The one formula: the cost model's own roles priced the same way.
    surface, prefill, over = CostModel.from_calibration(CAL).role_costs("target")
    assert call_price(surface, prefill, over, [100, 120], 240, 10).total == pytest.approx(2.29)
    assert json.loads(json.dumps(audit.to_dict()))["groups"][0]["ratio"] == pytest.approx(
        audit.groups[0].ratio)


def test_a_call_beside_the_other_model_is_priced_with_its_slowdown(tmp_path) -> None:
    target = {"role": "target", "start": 0.0, "seconds": 4.0, "rows": 2,
              "step_tokens": [8, 9], **SHAPED}
    draft = {"role": "draft", "start": 2.0, "seconds": 2.0, "rows": 1, "step_tokens": [7],
             "prompt_tokens": [100], "prefilled_tokens": 20, "iterations": 9}
    rec = load_run_record(_record(tmp_path, [
        ("target", {"k1": 1, "k2": 1}, [[]]),
        ("async k1=2 k2=1", {"mode": "async", "k1": 2, "k2": 1}, [[target, draft]])]))
    groups = {g.role: g for g in call_audit(rec, CAL).groups}
    # Half of the target's call ran beside the draft (slowdown 1.5): +25 % of its price.
    assert groups["target"].overlap == pytest.approx(0.5)
    assert groups["target"].beside == pytest.approx(2.29 * 0.5 * 0.5)
    assert groups["draft"].overlap == 1.0
    draft_price = 0.01 + 20 * 2e-4 + 9 * 0.02
    assert groups["draft"].beside == pytest.approx(draft_price * 0.5)


def test_audit_needs_a_calibration_in_seconds(tmp_path) -> None:
    rec = load_run_record(_record(tmp_path, [("target", {"k1": 1, "k2": 1}, [[]])]))
    with pytest.raises(ValueError, match="not seconds"):
        call_audit(rec, load_preset(PRESET))


def test_cli_prints_the_audit_and_its_json(tmp_path, capsys) -> None:
    from cli.main import main
    from specmodel.formats.calibration import save_calibration

    target = {"role": "target", "start": 0.0, "seconds": 3.0, "rows": 2,
              "step_tokens": [8, 9], **SHAPED}
    path = _record(tmp_path, [("target", {"k1": 1, "k2": 1}, [[]]),
                              ("sync k1=2 k2=1", {"k1": 2, "k2": 1}, [[target]])])
    cal = str(save_calibration(CAL, tmp_path / "cal.json"))
    assert main(["audit-calls", path, "-c", cal]) == 0
    out = capsys.readouterr().out
    assert "1.310" in out  # 3 s measured over 2.29 s priced
    assert "no calls logged: target" in out
    assert main(["audit-calls", path, "-c", cal, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["groups"][0]["priced"] == pytest.approx(2.29)
    # the record's own calibration holds no engine costs; a record without calls
    assert main(["audit-calls", path]) == 2
    assert "not seconds" in capsys.readouterr().err
    bare = _record(tmp_path, [("target", {"k1": 1, "k2": 1}, [[]])])
    assert main(["audit-calls", bare, "-c", cal]) == 2
    assert "no configuration logged a call" in capsys.readouterr().err


def test_a_run_with_its_calls_at_their_price(tmp_path) -> None:
    """Each configuration's wall time with every call replaced by its price (verifier
    and the host between calls as measured), and the speedups both ways."""
    plain = {"role": "target", "start": 0.0, "seconds": 2.0, "rows": 1, "step_tokens": [10],
             "prompt_tokens": [100], "prefilled_tokens": 100, "iterations": 10}
    target = {"role": "target", "start": 1.0, "seconds": 3.0, "rows": 2,
              "step_tokens": [8, 9], **SHAPED}
    draft = {"role": "draft", "start": 0.0, "seconds": 1.0, "rows": 1, "step_tokens": [7],
             "prompt_tokens": [100], "prefilled_tokens": 20, "iterations": 9}
    rec = load_run_record(_record(tmp_path, [
        ("target", {"k1": 1, "k2": 1}, [[plain]]),
        ("sync k1=2 k2=1", {"k1": 2, "k2": 1}, [[draft, target]])]))
    audit = call_audit(rec, CAL)
    runs = {r.config: r for r in audit.runs}
    base, sync = runs["target"], runs["sync k1=2 k2=1"]
    # the problem: 10 s of wall, 8 s in the target's calls (_problem's fields)
    assert (base.wall, base.calls, base.verify, base.outside) == (10.0, 2.0, 0.0, 8.0)
    assert base.priced == pytest.approx(0.05 + 0.1 + 10 * 0.1)
    assert base.priced_wall == pytest.approx(1.15 + 8.0)
    assert not sync.concurrent and sync.calls == 4.0
    assert sync.priced == pytest.approx(2.29 + 0.01 + 20 * 2e-4 + 9 * 0.02)
    measured, at_prices = audit.speedups()["sync k1=2 k2=1"]
    assert measured == pytest.approx(1.0)  # the same tokens and wall in both records
    assert at_prices == pytest.approx(base.priced_wall / sync.priced_wall)
    assert audit.to_dict()["speedups"]["target"] == {"measured": 1.0, "priced_calls": 1.0,
                                                     "at_baseline_pace": 1.0}
    # the pace: measured over priced seconds of the calls priced; the speedup at the
    # baseline's pace takes the drift between the two turns out
    assert base.pace == pytest.approx(2.0 / 1.15)
    assert sync.pace == pytest.approx(4.0 / sync.priced)
    assert audit.at_baseline_pace()["sync k1=2 k2=1"] == pytest.approx(
        measured * sync.pace / base.pace)
    assert audit.to_dict()["runs"][1]["pace"] == pytest.approx(sync.pace)
    # overlapping calls: no wall time priced
    draft["seconds"] = 2.0
    rec = load_run_record(_record(tmp_path, [
        ("target", {"k1": 1, "k2": 1}, [[plain]]),
        ("async k1=2 k2=1", {"mode": "async", "k1": 2, "k2": 1}, [[draft, target]])]))
    audit = call_audit(rec, CAL)
    assert audit.runs[1].concurrent and audit.runs[1].priced_wall is None
    assert audit.speedups()["async k1=2 k2=1"][1] is None
    # async: the pace prices the share each call ran beside the other model
    groups = {g.role: g for g in audit.groups}
    assert audit.runs[1].pace == pytest.approx(
        5.0 / (groups["target"].priced + groups["draft"].priced))
    assert groups["target"].beside > 0 and groups["draft"].beside > 0
    assert audit.at_baseline_pace()["async k1=2 k2=1"] == pytest.approx(
        audit.speedups()["async k1=2 k2=1"][0] * audit.runs[1].pace / audit.runs[0].pace)


def test_a_configuration_with_no_call_priced_has_no_pace(tmp_path) -> None:
    """Calls with token speculation inside (no shape) give no pace, and no speedup at
    the baseline's pace; a baseline without one gives none for any configuration."""
    plain = {"role": "target", "start": 0.0, "seconds": 2.0, "rows": 1, "step_tokens": [10],
             "prompt_tokens": [100], "prefilled_tokens": 100, "iterations": 10}
    spec = {"role": "target", "start": 0.0, "seconds": 1.5, "rows": 1, "step_tokens": [10]}
    rec = load_run_record(_record(tmp_path, [
        ("target", {"k1": 1, "k2": 1}, [[plain]]),
        ("token k2=3", {"k1": 1, "k2": 3}, [[spec]])]))
    audit = call_audit(rec, CAL)
    assert audit.runs[1].pace is None and audit.runs[0].pace is not None
    assert audit.at_baseline_pace() == {"target": 1.0, "token k2=3": None}
    rec = load_run_record(_record(tmp_path, [
        ("target", {"k1": 1, "k2": 1}, [[spec]]),
        ("sync k1=2 k2=1", {"k1": 2, "k2": 1}, [[plain]])]))
    assert call_audit(rec, CAL).at_baseline_pace() == {}


def test_the_held_out_report_sets_the_rounds_calls_at_their_price(tmp_path, capsys) -> None:
    """``bench_heldout --report``: the speedups at prices averaged over the rounds that
    logged calls, beside the measured and the decoder model's; rounds without calls are
    left out, and none at all prints nothing."""
    from benchmarks.bench_heldout import calls_at_prices

    plain = {"role": "target", "start": 0.0, "seconds": 2.0, "rows": 1, "step_tokens": [10],
             "prompt_tokens": [100], "prefilled_tokens": 100, "iterations": 10}
    target = {"role": "target", "start": 1.0, "seconds": 3.0, "rows": 2,
              "step_tokens": [8, 9], **SHAPED}
    logged = load_run_record(_record(tmp_path, [
        ("target", {"k1": 1, "k2": 1}, [[plain]]),
        ("sync k1=2 k2=1", {"k1": 2, "k2": 1}, [[target]])]))
    (tmp_path / "old").mkdir()
    old = load_run_record(_record(tmp_path / "old", [("target", {"k1": 1, "k2": 1}, [[]])]))
    got = calls_at_prices(CAL, [logged, old], {"sync k1=2 k2=1": 0.9})
    rows = {r["config"]: r for r in got["rows"]}
    base = 1.15 + 8.0  # the baseline's call at its price, the rest of its wall as measured
    assert rows["sync k1=2 k2=1"]["at_prices"] == pytest.approx(base / (2.29 + 7.0))
    assert rows["sync k1=2 k2=1"]["decoder"] == 0.9 and rows["target"]["decoder"] is None
    # the speedup at the baseline's pace: measured x its pace / the baseline's
    pace = {"target": 2.0 / 1.15, "sync": 3.0 / 2.29}
    assert rows["sync k1=2 k2=1"]["at_base_pace"] == pytest.approx(
        rows["sync k1=2 k2=1"]["measured"] * pace["sync"] / pace["target"])
    assert got["measured_over_priced"]["target b=2"] == pytest.approx(3.0 / 2.29)
    assert "1 round(s) logged calls" in capsys.readouterr().out
    assert calls_at_prices(CAL, [old], {}) is None
