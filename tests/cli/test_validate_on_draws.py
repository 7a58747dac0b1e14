"""``specmodel validate --on-draws`` refuses, in one line naming the option, what has no
draws to rebuild; a record that stores its prompts is checked end to end in
``tests/profiler/test_synthetic_engine.py`` (a real synthetic decode)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.main import main

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"


@pytest.mark.parametrize(("record", "extra", "named"), [
    ("synthetic_cpu_full_seed17_round1.run.json", [], "drew its steps by prefix"),
    ("synthetic_cpu_k4x4_seed44_round1.run.json", [], "does not store its problems' prompts"),
    ("heldout_05b_round1.run.json", [], "not a synthetic-acceptance run"),
    ("synthetic_cpu_k4x4_seed44_round1.run.json", ["--preset", "lr-paper-gsm8k-deepseek"],
     "cannot be combined with --calibration, --preset"),
    ("synthetic_cpu_k4x4_seed44_round1.run.json", ["--costs-at-run-time"],
     "--costs-at-run-time"),
])
def test_on_draws_refuses_what_has_no_draws(capsys, record: str, extra: list[str],
                                            named: str) -> None:
    code = main(["validate", str(RESULTS / record), "--on-draws", *extra])
    out, err = capsys.readouterr()
    text = " ".join((out + err).split())
    assert code == 2, text
    assert "--on-draws" in text and named in text and "Traceback" not in text
    assert len([ln for ln in (out + err).strip().splitlines() if ln.strip()]) <= 2


@pytest.mark.parametrize(("record", "config"), [
    ("validate_on_draws_sync_k3.run.json", "sync k1=3 k2=1"),
    ("validate_on_draws_continuous_k3.run.json", "async k1=3 k2=1 continuous")])
def test_on_draws_of_committed_decodes(capsys, record: str, config: str) -> None:
    """Two committed `specmodel decode --engine synthetic` runs (12 problems, EPYC,
    2026-11-28) that store their prompts: the draws rebuilt from the record reproduce the
    target alone (and the sync run) exactly, and each configuration gets its price on
    them beside its price on the laws."""
    assert main(["validate", str(RESULTS / record), "--on-draws", "--json"]) == 0
    rows = {r["config"]: r for r in json.loads(capsys.readouterr().out)}
    assert set(rows) == {"target", config}
    assert all(r["draws_reproduce_run"] is True for r in rows.values())
    assert rows["target"]["decoder_on_draws"] == pytest.approx(1.0)
    spec = rows[config]
    assert spec["decoder_on_draws"] is not None and spec["predicted_decoder"] is not None
    assert spec["decoder_on_draws_error"] == pytest.approx(
        spec["decoder_on_draws"] / spec["measured_speedup"] - 1)
    assert set(spec["decoder_on_draws_split"]) >= {"total", "target", "draft"}
    assert main(["validate", str(RESULTS / record), "--on-draws"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "on the run's draws" in out and "target ÷ price" in out


def test_busy_over_price_is_each_roles_ratio() -> None:
    from specmodel.prediction import busy_over_price

    got = busy_over_price({"total": 3.0, "target": 2.4, "draft": 0.6, "verify": 0.0},
                          {"total": 2.5, "target": 2.0, "draft": 0.5, "verify": 0.0})
    assert got == pytest.approx({"target": 1.2, "draft": 1.2})
    assert busy_over_price({"target": 1.0, "draft": 0.0}, {"target": 2.0}) == {"target": 0.5}
    assert busy_over_price({}, {"target": 1.0}) == {}
