"""``bench_synthetic_draws``: the same problems under both keys of the synthetic draws,
counted.  A live run on small architectures checks what holds whatever the timing: the
target alone runs one b = 1 decode forward per committed token under either key, and
every speculative row's counts are in range."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.bench_synthetic_draws import main

# profiling passes here run on real decoders with a short burn-in and contention
pytestmark = pytest.mark.usefixtures("quick_profiling")


@pytest.mark.live
def test_draws_benchmark_counts_both_keys(tmp_path: Path) -> None:
    assert main(["--problems", "2", "--max-steps", "3", "--max-step-tokens", "12",
                 "--out", str(tmp_path / "draws.json")]) == 0
    got = json.loads((tmp_path / "draws.json").read_text())
    rows = {(r["draws"], r["config"]): r for r in got["rows"]}
    configs = ["target", "sync k1=3 k2=1", "async k1=3 k2=1", "async k1=3 k2=1 continuous"]
    assert set(rows) == {(d, c) for d in ("prefix", "position") for c in configs}
    for d in ("prefix", "position"):
        base = rows[(d, "target")]
        assert base["iterations_per_token"] == {"1": pytest.approx(1.0)}
        assert base["step_acceptance"] is None
        for c in configs[1:]:
            r = rows[(d, c)]
            assert 0 <= r["step_acceptance"] <= 1 and 1 <= r["tokens_per_step"] <= 12
            assert sum(r["iterations_per_token"].values()) > 0
    assert main(["--problems", "0"]) == 2
