"""``bench_cpu_costmodel``: a CPU's nominal numbers and GEMM row curve, measured here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.bench_cpu_costmodel import (
    CPUS,
    measure_device,
    measure_gemm_rows,
    row_curve,
    this_cpu,
)
from specmodel.hardware.costmodel import check_row_curve


def test_a_row_curve_is_measured_on_real_products(tmp_path: Path) -> None:
    out = tmp_path / "gemm_rows.json"
    got = measure_gemm_rows(out, repeats=3, shapes=((256, 512), (512, 256)), grid=(1, 2, 4))
    curve = check_row_curve("curve", [tuple(p) for p in got["gemm_row_curve"]])
    assert [m for m, _ in curve] == [1, 2, 4] and curve[0] == (1, 1.0)
    assert json.loads(out.read_text())["by_shape"]["4"] and got["threads"] == 1
    with pytest.raises(ValueError, match="grid must start at 1"):
        measure_gemm_rows(out, grid=(2, 4))


def test_the_device_numbers_are_measured(tmp_path: Path) -> None:
    got = measure_device(tmp_path / "device.json", repeats=1)
    assert got["memory_bandwidth"] > 1e8 and got["matmul_fp32"] > 1e8
    assert got["machine"]["cpu"] and (tmp_path / "device.json").is_file()


def test_each_cpu_reads_its_own_committed_curve() -> None:
    """Both CPUs' curves are on file and valid, and they differ where the docs say: the
    Xeon's library runs up to three rows for the price of one, the EPYC's pays nearly
    a one-row product per row from the start."""
    from specmodel.hardware.costmodel import row_factor

    epyc, xeon = row_curve(CPUS["cpu-epyc"]), row_curve(CPUS["cpu-xeon"])
    assert epyc is not None and check_row_curve("epyc", epyc) == epyc
    assert xeon is not None and check_row_curve("xeon", xeon) == xeon
    assert row_factor(xeon, 3) < 1.2 < 2.5 < row_factor(epyc, 3)


def test_this_cpu_is_named_by_its_model_name(monkeypatch) -> None:
    import profiler.environment as env

    for name, want in (("AMD EPYC 7B13", "cpu-epyc"), ("Intel(R) Xeon(R) Processor",
                                                       "cpu-xeon")):
        monkeypatch.setattr(env, "machine_description", lambda n=name: {"cpu": n})
        assert this_cpu() == want
    monkeypatch.setattr(env, "machine_description", lambda: {"cpu": "Apple M2"})
    with pytest.raises(SystemExit, match="no CPU preset for 'Apple M2'"):
        this_cpu()
