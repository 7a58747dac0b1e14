"""specmodel profile steps on a real model: a valid calibration, and resume."""

from __future__ import annotations

import pytest

from tests.conftest import require

pytestmark = pytest.mark.live


def test_profile_steps_and_resume(smollm_path, qwen05_path, tmp_path) -> None:
    require("reasoning_gym")
    from cli.main import main
    from profiler.step_profile import read_pairs
    from specmodel.formats.calibration import load_calibration

    out = tmp_path / "cal.json"
    args = ["profile", "steps", "--target", str(qwen05_path), "--draft", str(smollm_path),
            "-o", str(out), "--verifier", "exact", "--problems", "1", "--steps-per-problem",
            "2", "--max-step-tokens", "12"]
    assert main(args) == 0
    cal = load_calibration(out)
    assert 0 < cal.step.alpha1 < 1 and 0 < cal.step.c1 < 1
    assert cal.step.samples == 2 and cal.step.step_tokens_mean > 0
    pairs = read_pairs(out.with_suffix(".pairs.jsonl"))
    assert len(pairs) == 2
    assert all(p.accepted == (p.target_text.split() == p.draft_text.split()) for p in pairs)
    assert cal.provenance.description.startswith("step: 2 target/draft step pairs")
    assert cal.provenance.settings.phases.steps.pairs == 2
    # resume: nothing is measured twice
    assert main([*args, "--resume"]) == 0
    assert len(read_pairs(out.with_suffix(".pairs.jsonl"))) == 2
