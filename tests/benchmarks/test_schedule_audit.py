"""``bench_schedule_audit``: the forward log attributes every decode forward, by rows and
by whether the other model ran beside it; the decoder model's iterations by rows are
its own counters.  A live run on tiny architectures checks what holds whatever the
timing: the target alone runs exactly one b = 1 forward per token, measured and
simulated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.bench_schedule_audit import _overlap, main, measured_mix, model_mix

TINY = {"model_type": "qwen2", "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "vocab_size": 512}


def test_overlap_and_the_measured_mix() -> None:
    assert _overlap((0.0, 1.0), [(0.5, 2.0)]) == pytest.approx(0.5)
    assert _overlap((0.0, 1.0), [(-1.0, 0.2), (0.4, 0.6), (3.0, 4.0)]) == pytest.approx(0.4)
    assert _overlap((0.0, 1.0), []) == 0.0
    log = [("target", 1, 64, 0.0, 1.0),   # alone
           ("target", 3, 64, 1.0, 2.0),   # beside the draft's forward
           ("draft", 1, 64, 1.0, 2.1),    # beside the target's two forwards
           ("target", 5, 64, 2.0, 3.0)]   # 10 % beside; pooled into the last rows
    mix = measured_mix([{"tokens": 4, "log": log}], lambda role, b, L: 0.5)
    assert mix["iterations_per_token"] == {"1": 0.25, "3": 0.25, "4": 0.25}
    ratio = mix["price_ratio"]
    assert ratio["target alone"]["measured_over_price"] == pytest.approx(2.0)
    assert ratio["target beside"]["forwards_per_token"] == pytest.approx(0.25)
    assert ratio["target part"]["forwards_per_token"] == pytest.approx(0.25)
    assert ratio["draft beside"]["measured_over_price"] == pytest.approx(1.1 / 0.5)
    assert model_mix({"output_tokens": 10.0, "target_iterations_b1": 4.0,
                      "target_iterations_b2": 2.0, "target_iterations_b6": 1.0,
                      "draft_iterations_b1": 9.0}) == {"1": 0.4, "2": 0.2, "4": 0.1}


@pytest.mark.live
def test_audit_on_tiny_architectures(tmp_path: Path) -> None:
    target = tmp_path / "tiny.json"
    target.write_text(json.dumps(TINY))
    draft = tmp_path / "tiny1.json"
    draft.write_text(json.dumps({**TINY, "num_hidden_layers": 1}))
    out = tmp_path / "audit.json"
    assert main(["--target", str(target), "--draft", str(draft), "--problems", "2",
                 "--max-steps", "3", "--max-step-tokens", "16", "--profile-repeats", "1",
                 "--out", str(out)]) == 0
    got = json.loads(out.read_text())
    rows = {r["batching"]: r for r in got["rows"]}
    assert set(rows) == {"target", "call", "continuous"}
    base = rows["target"]
    assert base["iterations_per_token"] == {"1": pytest.approx(1.0)}
    assert base["model_iterations_per_token_at_run_acceptance"] == {"1": pytest.approx(1.0)}
    assert base["speedup"] == pytest.approx(1.0)
    for name in ("call", "continuous"):
        r = rows[name]
        assert 0 <= r["step_acceptance_run"] <= 1
        assert r["model_speedup_at_run_acceptance"] > 0
        assert sum(r["iterations_per_token"].values()) > 0
        assert r["price_ratio"]  # every forward priced
    assert max(int(b) for b in rows["continuous"][
        "model_iterations_per_token_at_run_acceptance"]) >= 2  # rows batched
    assert main(["--problems", "0"]) == 2
