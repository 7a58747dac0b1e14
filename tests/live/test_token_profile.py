"""specmodel profile tokens on vLLM-CPU with a real model."""

from __future__ import annotations

import pytest

from tests.conftest import require

pytestmark = pytest.mark.live


@pytest.mark.slow  # about 35 s; vLLM's counters are profiled in CI by the server loop
def test_profile_tokens_writes_a_calibration(smollm_path, tmp_path) -> None:
    require("vllm")
    require("reasoning_gym")
    from cli.main import main
    from specmodel.formats.calibration import load_calibration

    out = tmp_path / "cal.json"
    assert main(["profile", "tokens", "--model", str(smollm_path), "-o", str(out),
                 "--problems", "2", "--max-tokens", "32"]) == 0
    cal = load_calibration(out)
    tok = cal.token
    assert 0 < tok.alpha2 < 1 and tok.c2 >= 0
    assert tok.acceptance_by_position is not None and len(tok.acceptance_by_position) == 4
    measurement = cal.provenance.settings.phases.tokens.measurement
    assert measurement.engine == "vllm"
    assert all(measurement.outputs_identical)  # speculation is lossless under greedy
    assert measurement.counters.num_drafts > 0
