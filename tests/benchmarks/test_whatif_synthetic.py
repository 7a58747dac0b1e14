"""``bench_whatif_synthetic``: a committed synthetic run repriced by predicted profiles."""

from __future__ import annotations

import pytest

from benchmarks.bench_whatif_synthetic import _repriced, records, run_name, sweep


def test_a_xeon_run_is_repriced_by_the_xeon_preset() -> None:
    sw = sweep("synthetic_cpu_continuous_seed15", None)
    assert sw["run"] == "synthetic_cpu_continuous_seed15" and sw["seed"] == 15
    assert "Xeon" in sw["cpu"]
    row = sw["rows"]["async k1=3 k2=1 continuous"]
    assert row["measured_rounds"] and row["measured"]["decoder"] > 0
    # predicted profiles differ from the measured ones, contention copied in or not
    assert row["predicted"]["decoder"] != row["predicted + contention"]["decoder"]
    assert set(sw["decode_surfaces"]) == {"bench-target", "bench-draft"}


def test_names_and_titles() -> None:
    assert run_name(0) == "synthetic_cpu" and run_name(3) == "synthetic_cpu_seed3"
    with pytest.raises(SystemExit, match="no records"):
        records("synthetic_cpu_nothing")
    sweeps = [{"cpu": "AMD EPYC", "seed": 2}, {"cpu": "AMD EPYC", "seed": 3},
              {"cpu": "Intel(R) Xeon(R) Processor", "seed": 15}]
    assert _repriced(sweeps) == "AMD EPYC seeds 2, 3; Intel(R) Xeon(R) seed 15"
