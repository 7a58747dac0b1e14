"""``bench_cpu_costmodel``: a CPU's nominal numbers and GEMM row curve, measured here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.bench_cpu_costmodel import (
    CPUS,
    HELD_ARCHS,
    compare_windows,
    load,
    measure_device,
    measure_gemm_rows,
    noise_by_arch,
    pass_spread,
    probe_reference,
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


def test_probe_windows_are_compared_on_the_committed_epyc_passes() -> None:
    """The EPYC's passes 5 and 6 ran the speed probe: each window's scaling gives a noise
    floor by architecture pooled over kinds (the same points as the per-kind spread),
    the times as measured come first, and a window wider than any profile is one
    factor per profile (every point of a profile scaled alike)."""
    cpu = CPUS["cpu-epyc"]
    ref = probe_reference(cpu)
    assert ref is not None and 5 < ref < 50  # ms, the probe's median on that VM
    arch = cpu.fit_archs[0]
    got = compare_windows(cpu, (*cpu.fit_archs, *HELD_ARCHS), ref, [0, 10_000])
    assert [x["window"] for x in got] == [None, 0, 10_000]
    measured = {arch: load(cpu, arch)}
    per_kind = pass_spread(measured)
    pooled = noise_by_arch(measured)
    assert pooled[arch]["n"] == sum(v["n"] for v in per_kind.values()) == pooled["all"]["n"]
    assert got[0]["noise"][arch] == pytest.approx(pooled[arch])
    one = load(cpu, arch, ref, 10_000)
    for k, rows in one.items():  # one factor per profile: ratios to as measured constant
        for kind, r in rows.items():
            f = {round(t / t0, 9) for (_, _, t), (_, _, t0) in
                 zip(r, measured[arch][k][kind], strict=True)}
            assert len(f) == 1, (k, kind)
    for x in got:
        assert x["summary"]["fit (all kinds)"]["n"] > 0 and x["variant"]
