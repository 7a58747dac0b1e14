"""``specmodel validate --on-draws`` refuses, in one line naming the option, what has no
draws to rebuild; a record that stores its prompts is checked end to end in
``tests/profiler/test_synthetic_engine.py`` (a real synthetic decode)."""

from __future__ import annotations

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
