"""T(b) measured on a real model, and the calibration it produces."""

from __future__ import annotations

import json
import math

import pytest

from tests.conftest import require

pytestmark = pytest.mark.live


def _plausible(points: list[dict]) -> None:
    """Every batch size was timed (a finite time > 0).  How the times order is not
    checked: timing never decides a test on this shared machine (a CI run of
    2026-12-03 read T(16) at 0.63x T(4) on a loaded 2-core VM)."""
    assert points and all(math.isfinite(p["time"]) and p["time"] > 0 for p in points)


def test_profile_batch_cost_writes_a_calibration(smollm_path, tmp_path, capsys) -> None:
    from cli.main import main
    from specmodel.formats.calibration import load_calibration

    out = tmp_path / "cal.json"
    code = main(["profile", "batch-cost", "--model", str(smollm_path), "-o", str(out),
                 "--widths", "1,4,16", "--tokens", "8", "--repeats", "2"])
    assert code == 0
    cal = load_calibration(out)
    assert cal.batch_cost is not None and [p.batch for p in cal.batch_cost.points] == [1, 4, 16]
    _plausible([p.model_dump() for p in cal.batch_cost.points])
    assert "T(1) = " in cal.provenance.description
    assert cal.provenance.settings.phases.batch_cost.widths == [1, 4, 16]
    assert cal.provenance.source == "paper"  # step and token were copied from the preset
    assert "copied from" in cal.provenance.description
    capsys.readouterr()
    code = main(["optimize", "--calibration", str(out), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["cost_aware"]["best"]["speedup"] <= data["speedup"] + 1e-9


@pytest.mark.slow  # a vLLM engine start; vLLM's own path is covered by the engine tests
def test_vllm_batch_cost(smollm_path) -> None:
    require("vllm")
    from profiler.batch_cost import batch_cost_section, measure_batch_cost

    timings = measure_batch_cost(smollm_path, engine="vllm", widths=(1, 4, 16), tokens=8,
                                 repeats=2)
    _plausible([p.model_dump() for p in batch_cost_section(timings).points])
