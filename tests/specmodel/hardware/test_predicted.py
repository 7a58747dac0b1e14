"""Predicted hardware profiles (specmodel.hardware.predicted): the cost model's formula at
every point, the measured profile's grid, memory, contention, and what the decoder model
and the CLI do with them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cli.main import main
from specmodel.formats.calibration import load_calibration
from specmodel.formats.hardware import HardwareProfile, load_hardware_profile
from specmodel.hardware.costmodel import (
    PLACEMENTS,
    concurrent_seconds,
    contention,
    load_coefficients,
    predict_seconds,
    resolve_coefficients,
    transfer,
)
from specmodel.hardware.devices import get_device
from specmodel.hardware.predicted import (
    device_preset_of,
    predict_like,
    predict_profile,
    preset_of,
)
from specmodel.hardware.shape import list_architectures, load_shape

ROOT = Path(__file__).resolve().parents[3]
GPU = ROOT / "benchmarks" / "results" / "gpu" / "h100-2026-11-23"
CPU = ROOT / "benchmarks" / "results" / "cpu"

kinds = st.sampled_from(["decode", "verify", "prefill"])


@st.composite
def point_specs(draw: st.DrawFn) -> tuple[str, int, int, int, bool]:
    kind = draw(kinds)
    b = draw(st.integers(1, 64))
    q = 1 if kind == "decode" else draw(st.integers(2, 512))
    L = 0 if kind == "prefill" else draw(st.integers(0, 32768))
    if kind == "prefill":
        b = 1
    shared = kind == "decode" and b > 1 and L > 0 and draw(st.booleans())
    return (kind, b, q, L, shared)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(sorted(list_architectures())), st.lists(point_specs(), min_size=1,
                                                               max_size=6),
       st.sampled_from(["h100-sxm", "h200", "a100-80gb-sxm", "l40s", "cpu-epyc"]))
def test_every_point_is_the_cost_model_formula(arch, points, device) -> None:
    prof = predict_profile(arch, points, device=device)
    coef, dev, dtype, _ = resolve_coefficients(device)
    assert prof.path == "predicted" and prof.dtype == dtype and prof.device.name == device
    assert prof.device.type == ("cpu" if device.startswith("cpu") else "cuda")
    shape = load_shape(arch)
    for spec, rec in zip(points, prof.points, strict=True):
        assert (rec.kind, rec.batch, rec.new_tokens, rec.context, rec.shared_prefix) == spec
        if rec.skipped is not None:
            assert "more than the" in rec.skipped and dev.name in rec.skipped
            continue
        want = predict_seconds(shape, rec.workload(), coef, dtype)
        assert rec.ms is not None and rec.ms[0] == pytest.approx(want * 1e3, rel=1e-12)
        assert rec.ms[0] == rec.ms[1] == rec.ms[2]


def test_a_point_beyond_the_device_memory_is_skipped_with_why() -> None:
    prof = predict_profile("qwen2.5-32b", [("decode", 1, 1, 1024), ("decode", 64, 1, 1 << 20)],
                           device="h100-sxm")
    assert prof.points[0].ms is not None
    assert prof.points[1].ms is None and "80 GB of h100-sxm" in (prof.points[1].skipped or "")
    assert "1 skipped" in prof.summary() and "predicted" in prof.summary()


def test_a_measured_profile_is_predicted_on_its_own_grid() -> None:
    measured = load_hardware_profile(GPU / "qwen2.5-7b.graph.json")
    pred = predict_like(measured)
    assert pred.device.name == "h100-sxm" and pred.dtype == measured.dtype
    assert [(p.kind, p.batch, p.new_tokens, p.context, p.shared_prefix)
            for p in pred.points] == [(p.kind, p.batch, p.new_tokens, p.context,
                                       p.shared_prefix) for p in measured.points]
    # the H100 preset was fitted on this architecture's profile: close on its decode rows
    got, want = pred.decode_surface(), measured.decode_surface()
    errs = sorted(abs(got[k] / want[k] - 1) for k in want if k in got and k[0] <= 32)
    assert errs and errs[len(errs) // 2] < 0.10
    cpu = load_hardware_profile(sorted(CPU.glob("*.eager.pass1.json"))[0])
    assert predict_like(cpu).device.name == "cpu-epyc"
    xeon = cpu.model_copy(update={"device": cpu.device.model_copy(
        update={"name": "Intel(R) Xeon(R) Processor"})})
    assert device_preset_of(xeon) == "cpu-xeon"
    h200 = load_hardware_profile(GPU.parent / "h200-2026-11-23" / "qwen2.5-7b.graph.json")
    assert device_preset_of(h200) == "h200" and predict_like(h200).device.name == "h200"
    b200 = h200.model_copy(update={"device": h200.device.model_copy(
        update={"name": "NVIDIA B200"})})
    assert device_preset_of(b200) == "h100-sxm" and preset_of("cuda", "NVIDIA B200") is None
    assert preset_of("cpu", "AMD EPYC 7B13") == "cpu-epyc"
    with pytest.raises(ValueError, match="kind must be cpu or cuda"):
        preset_of("tpu", "v5e")


def test_keep_concurrent_copies_the_measured_slowdown() -> None:
    measured = load_hardware_profile(GPU / "qwen2.5-7b.graph.json")
    prof = measured.model_copy(update={"concurrent": {"qwen2.5-0.5b": 1.4}})
    assert predict_like(prof).concurrent is None
    assert predict_like(prof, keep_concurrent=True).concurrent == {"qwen2.5-0.5b": 1.4}


def test_predicted_profiles_round_trip_through_a_calibration(tmp_path: Path) -> None:
    prof = predict_profile("qwen2.5-0.5b", [("decode", b, 1, 1024) for b in (1, 2, 4)],
                           device="l40s")
    again = HardwareProfile.model_validate_json(prof.model_dump_json())
    assert again == prof
    path = tmp_path / "p.json"
    path.write_text(prof.model_dump_json())
    assert load_hardware_profile(path).path == "predicted"


@pytest.mark.parametrize(("points", "named"), [
    ([], "points must hold at least one point"),
    ([("encode", 1, 1, 0)], "points[0] kind must be one of decode, verify, prefill"),
    ([("decode", 1, 2, 0)], "points[0]: a decode point has new_tokens 1"),
    ([("verify", 0, 2, 0)], "points[0] batch must be an integer >= 1"),
    ([("verify", 1, 2, -1)], "points[0] context must be an integer >= 0"),
    (["decode"], "points[0] must be (kind, batch, new_tokens, context"),
])
def test_bad_points_are_named(points, named) -> None:
    with pytest.raises(ValueError) as e:
        predict_profile("qwen2.5-0.5b", points)
    assert named in str(e.value)


def test_bad_device_dtype_layout_preset_are_named() -> None:
    pts = [("decode", 1, 1, 0)]
    for kwargs, named in (({"device": "h999"}, "h999"), ({"dtype": "int8"}, "dtype"),
                          ({"layout": "flat"}, "layout must be one of gqa, packed"),
                          ({"preset": "x"}, "preset must be one of")):
        with pytest.raises(ValueError) as e:
            predict_profile("qwen2.5-0.5b", pts, **kwargs)
        assert named in str(e.value)
    with pytest.raises(ValueError, match="profile must be a HardwareProfile"):
        predict_like("qwen2.5-0.5b")  # type: ignore[arg-type]


def test_resolve_coefficients_picks_the_device_preset_and_transfers() -> None:
    h100, h100_dev, _ = load_coefficients("h100-sxm-graph")
    coef, dev, dtype, source = resolve_coefficients("h100-sxm")
    assert coef == h100 and dev == h100_dev and dtype == "bfloat16"
    assert "h100-sxm-graph" in source and "transferred" not in source
    coef, _, _, source = resolve_coefficients("h200")
    assert coef == transfer(h100, h100_dev, get_device("h200"), "bfloat16")
    assert "transferred to h200" in source
    _, _, dtype, source = resolve_coefficients("cpu-epyc")
    assert dtype == "float32" and "cpu-epyc-eager" in source
    given_, _, _, source = resolve_coefficients("h100-sxm", coefficients=h100)
    assert given_ == h100 and source.startswith("given coefficients")


@settings(max_examples=30, deadline=None)
@given(st.floats(0.0, 1.0), st.floats(1e-4, 1.0))
def test_contention_is_concurrent_seconds_of_equal_forwards(overlap, t) -> None:
    slow = contention("one-device", overlap)
    assert slow == pytest.approx(2.0 - overlap)
    assert slow * t == pytest.approx(concurrent_seconds(t, t, "one-device", overlap))
    assert contention("two-devices", overlap) == 1.0
    assert concurrent_seconds(t, t, "two-devices") == pytest.approx(t)


def test_contention_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="placement must be one of"):
        contention("three-devices")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="overlap must lie in"):
        contention("one-device", 1.5)
    assert set(PLACEMENTS) == {"one-device", "two-devices"}


def _run(args: list[str], capsys) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_predicts_a_profile_into_a_calibration(tmp_path: Path, capsys) -> None:
    out = tmp_path / "cal.json"
    code, stdout, _ = _run(["profile", "hardware", "qwen2.5-32b", "--predict-on", "h200",
                            "--contexts", "1024,4096", "--batches", "1,8", "-o", str(out)],
                           capsys)
    assert code == 0, stdout
    assert "predicted" in stdout and f"wrote {out}" in stdout
    prof = (load_calibration(out).hardware or [])[0]
    assert prof.path == "predicted" and prof.device.name == "h200"
    assert prof.dtype == "bfloat16"
    assert {(b, L) for b, L in prof.decode_surface()} == {(1, 1024), (8, 1024), (1, 4096),
                                                          (8, 4096)}


@pytest.mark.parametrize(("extra", "named"), [
    (["--predict-on", "tpu-v9"], "--predict-on must be one of"),
    (["--predict-on", "h100-sxm", "--dtype", "fp8"], "--dtype must be one of"),
])
def test_cli_bad_predict_input_is_one_line_exit_2(tmp_path: Path, capsys, extra, named
                                                  ) -> None:
    out = tmp_path / "cal.json"
    code, _, err = _run(["profile", "hardware", "qwen2.5-0.5b", "-o", str(out), *extra],
                        capsys)
    assert code == 2 and named in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_cli_predict_needs_an_architecture(tmp_path: Path, capsys) -> None:
    gpu = tmp_path / "g.json"
    gpu.write_text(json.dumps(json.loads((GPU / "qwen2.5-7b.graph.json").read_text())))
    code, _, err = _run(["profile", "hardware", "--from", str(gpu), "--predict-on",
                         "h100-sxm", "-o", str(tmp_path / "c.json")], capsys)
    assert code == 2 and "--predict-on predicts ARCH's profile" in err


@st.composite
def spec_configs(draw: st.DrawFn) -> list:
    from specmodel.config import SpecConfig

    out = []
    for _ in range(draw(st.integers(1, 4))):
        mode = draw(st.sampled_from(["sync", "async"]))
        k1 = draw(st.integers(1, 5))
        width = draw(st.integers(1, 2)) if mode == "sync" and k1 > 1 else 1
        out.append(SpecConfig(mode=mode, k1=k1, k2=draw(st.integers(1, 5)), width=width,
                              max_steps=draw(st.integers(1, 8)),
                              max_step_tokens=draw(st.integers(1, 64))))
    return out


@settings(max_examples=40, deadline=None)
@given(spec_configs(), st.integers(1, 3000), st.sampled_from([64, 256]))
def test_the_grid_covers_every_forward_the_configurations_can_run(configs, prompt, g
                                                                  ) -> None:
    from specmodel.hardware.predicted import bucket, forward_grid, profile_points

    grid = forward_grid(configs, prompt, g)
    ctx = grid["contexts"]
    longest = prompt + max((c.max_steps + c.k1) * c.max_step_tokens for c in configs)
    assert ctx[0] == bucket(prompt, g) and ctx[-1] >= longest
    assert all(L % g == 0 for L in ctx) and ctx == sorted(set(ctx))
    for c in configs:  # the widest batch of each: a sync tree's nodes, async's k1
        nodes = sum(c.width ** i for i in range(c.k1)) if c.mode == "sync" else c.k1
        assert grid["target_b"] >= nodes
    assert grid["k2"] == sorted({c.k2 for c in configs if c.k2 > 1})
    (_, dec, ver), *rest = profile_points("qwen2.5-0.5b", "qwen2.5-0.5b-draft", configs,
                                             prompt, context_bucket=g)
    assert set(dec) == {("decode", b, 1, L) for L in ctx
                        for b in range(1, grid["target_b"] + 1)}
    assert {(b, q, L) for _, b, q, L in ver} >= {
        (b, q, L) for L in ctx for b in range(1, grid["target_b"] + 1) for q in grid["k2"]}
    assert bool(rest) == any(c.k1 > 1 for c in configs)


def test_explicit_contexts_replace_the_buckets() -> None:
    from specmodel.config import SpecConfig
    from specmodel.hardware.predicted import forward_grid

    grid = forward_grid([SpecConfig(k1=2)], 100, 256, contexts=[4000, 100, 4000])
    assert grid["contexts"] == [100, 4000]


def test_cpu_names_map_to_the_preset_measured_on_that_cpu() -> None:
    from benchmarks.bench_cpu_costmodel import CPUS
    from specmodel.hardware.costmodel import HARDWARE_PRESETS, PRESET_DEVICES
    from specmodel.hardware.devices import DEVICES
    from specmodel.hardware.predicted import CPU_NAMES, cpu_preset_of

    assert cpu_preset_of("AMD EPYC 7B13") == "cpu-epyc"
    assert cpu_preset_of("Intel(R) Xeon(R) Processor") == "cpu-xeon"
    assert cpu_preset_of("Apple M2") is None
    with pytest.raises(ValueError, match="name"):
        cpu_preset_of(3)  # type: ignore[arg-type]
    # one CPU, one device preset, one coefficient preset, one results folder
    assert {preset for _, preset in CPU_NAMES} == set(CPUS)
    for device, machine in CPUS.items():
        assert device in DEVICES and machine.preset in HARDWARE_PRESETS
        assert PRESET_DEVICES[machine.preset] == device
