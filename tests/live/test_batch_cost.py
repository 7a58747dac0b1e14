"""T(b) measured on a real model, and the calibration it produces."""

from __future__ import annotations

import itertools
import json

import pytest

from tests.conftest import require

pytestmark = pytest.mark.live


def _plausible(points: list[dict]) -> None:
    times = [p["time"] for p in points]
    assert all(t > 0 for t in times)
    assert times[-1] > times[0]  # on a CPU a batch of 16 costs more than a single sequence
    for prev, cur in itertools.pairwise(times):
        assert cur >= 0.75 * prev  # non-decreasing within noise


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
