"""``bench_step_pool``: draft-step acceptance pooled over held-out run records."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.bench_step_pool import pool
from specmodel.formats.run_record import load_run_record

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"


def test_pooled_counts_are_the_records_totals_and_the_model_is_weighted() -> None:
    runs = [(RESULTS / "heldout_05b_s11_xeon_round1.run.json",
             RESULTS / "heldout_05b_s11_xeon.json"),
            (RESULTS / "heldout_05b_s12_xeon_round1.run.json", None)]
    rows = {r["config"]: r for r in pool(runs)}
    recs = [load_run_record(p) for p, _ in runs]
    assert "token k2=3" not in rows and "target" not in rows  # no draft steps judged
    for label, row in rows.items():
        totals = [next(c for c in r.configs if c.label == label).totals for r in recs]
        assert row["accepted"] == sum(t.accepted_steps for t in totals)
        assert row["judged"] == sum(t.drafted_steps for t in totals)
        assert row["problems"] == 6 and row["sets"] == 2
        assert abs(row["rate"] - row["accepted"] / row["judged"]) < 1e-12
        assert row["clustered_stderr"] > 0
        summary = {r["config"]: r for r in json.loads(runs[0][1].read_text())["rows"]}
        assert row["model_sets"] == 1  # only the first record has a summary
        assert abs(row["model"] - summary[label]["decoder_step_acceptance"]) < 1e-12
