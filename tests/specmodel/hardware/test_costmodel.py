"""The analytical cost model (specmodel.hardware.costmodel) and the device presets."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.bench_hardware_costmodel import (
    SHARED_FILE,
    default_split,
    evaluate,
    load_shared_floor,
)
from specmodel.hardware.costmodel import (
    CostCoefficients,
    Workload,
    concurrent_seconds,
    features,
    fit,
    kernel_wait_contention,
    predict_seconds,
    relative_errors,
    transfer,
)
from specmodel.hardware.devices import DEVICES, get_device
from specmodel.hardware.shape import Shape, load_shape

SMALL = Shape("small", 896, 4864, 24, 14, 2, 64, 151936, True, True)
LARGE = Shape("large", 5120, 27648, 64, 40, 8, 128, 151936, False, True)
TRUE = CostCoefficients(overhead_s=2e-4, per_layer_s=3e-5, weight_bandwidth=2.9e12,
                        kv_bandwidth=3.0e11, matmul_throughput=6e14)
H100 = get_device("h100-sxm")

batches = st.integers(1, 256)
contexts = st.integers(0, 32_768)
qs = st.integers(1, 64)
shapes = st.sampled_from([SMALL, LARGE, load_shape("qwen2.5-7b")])


def synthetic_rows(c: CostCoefficients) -> list:
    rows = []
    for shape in (SMALL, LARGE, load_shape("qwen3-1.7b")):
        for b, q, L in ((1, 1, 0), (4, 1, 1024), (16, 4, 4096), (1, 512, 0), (64, 1, 2048),
                        (8, 8, 16_384)):
            w = Workload(b, q, L)
            rows.append((shape, w, predict_seconds(shape, w, c)))
    return rows


def test_fit_recovers_known_coefficients_from_synthetic_rows() -> None:
    got = fit(synthetic_rows(TRUE))
    np.testing.assert_allclose(got.vector(), TRUE.vector(), rtol=1e-6)


def test_bounded_fit_recovers_coefficients_within_the_device() -> None:
    got = fit(synthetic_rows(TRUE), device=H100)
    np.testing.assert_allclose(got.vector(), TRUE.vector(), rtol=1e-6)
    assert all(e <= 1 + 1e-9 for e in got.efficiencies(H100).values())


def test_max_fit_recovers_max_coefficients() -> None:
    true = CostCoefficients(2e-4, 3e-5, 2.9e12, 3.0e11, 6e14, combine="max")
    got = fit(synthetic_rows(true), combine="max")
    errs = relative_errors(synthetic_rows(true), got)
    assert np.max(np.abs(errs)) < 1e-4


def test_bounded_fit_prices_unidentified_compute_at_peak() -> None:
    decode_only = [(s, w, t) for s, w, t in synthetic_rows(TRUE) if w.q == 1]
    c = fit([(s, w, predict_seconds(s, w, CostCoefficients(2e-4, 3e-5, 2.9e12, 3e11,
                                                           math.inf)))
             for s, w, _ in decode_only], device=H100)
    assert c.matmul_throughput <= H100.matmul_bf16 * (1 + 1e-9)


@given(shapes, batches, qs, contexts)
def test_time_increases_with_b_L_and_q(shape, b, q, L) -> None:
    t = predict_seconds(shape, Workload(b, q, L), TRUE)
    assert predict_seconds(shape, Workload(b + 1, q, L), TRUE) > t
    assert predict_seconds(shape, Workload(b, q + 1, L), TRUE) > t
    assert predict_seconds(shape, Workload(b, q, L + 1), TRUE) > t


@given(shapes, batches, qs, contexts, st.sampled_from(["all", "last"]))
def test_shared_prefix_costs_no_more_and_equal_at_b1(shape, b, q, L, logits) -> None:
    shared = predict_seconds(shape, Workload(b, q, L, True, logits), TRUE)
    unshared = predict_seconds(shape, Workload(b, q, L, False, logits), TRUE)
    assert shared <= unshared * (1 + 1e-12)
    one = Workload(1, q, L, True, logits), Workload(1, q, L, False, logits)
    assert features(shape, one[0]) == features(shape, one[1])


@given(shapes, batches, qs, contexts)
def test_last_logits_cost_no_more_than_all(shape, b, q, L) -> None:
    f_all = features(shape, Workload(b, q, L, logits="all"))
    f_last = features(shape, Workload(b, q, L, logits="last"))
    assert f_last.matmul_flops <= f_all.matmul_flops
    assert (f_last.matmul_flops == f_all.matmul_flops) == (q == 1)


def test_features_count_bytes_and_flops() -> None:
    f = features(LARGE, Workload(3, 2, 100))
    kv = LARGE.kv_bytes_per_token("bfloat16")
    assert f.weight_bytes == LARGE.weight_bytes("bfloat16")
    assert f.kv_read_bytes == 3 * 102 * kv and f.kv_write_bytes == 6 * kv
    assert f.matmul_flops == 6 * LARGE.matmul_flops_per_token
    assert f.attention_flops == 6 * 102 * LARGE.attention_flops_per_token_per_position
    shared = features(LARGE, Workload(3, 2, 100, shared_prefix=True))
    assert shared.kv_read_bytes == 100 * kv + 6 * kv


@given(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1))
def test_concurrency_rules(a, b, overlap) -> None:
    assert concurrent_seconds(a, b, "two-devices") == max(a, b)
    one = concurrent_seconds(a, b, "one-device", overlap)
    assert one == pytest.approx(a + b - overlap * min(a, b))
    assert max(a, b) - 1e-12 <= one <= a + b + 1e-12
    assert concurrent_seconds(a, b) == pytest.approx(a + b - 0.1 * min(a, b))


times = st.floats(1e-5, 10.0)
layers = st.integers(1, 128)


@given(times, layers, times, layers, st.floats(0.01, 100.0))
def test_kernel_wait_contention(t_a, n_a, t_b, n_b, scale) -> None:
    """Each side waits half the other's kernel: slowdowns above 1, the shorter-kernelled
    side slowed more, the two excesses multiplying to 1/4, alike models 1.5 each, and
    only the ratio of times per layer counts (the unit and a common scale drop out)."""
    a = kernel_wait_contention(t_a, n_a, t_b, n_b)
    b = kernel_wait_contention(t_b, n_b, t_a, n_a)
    assert a > 1.0 and b > 1.0
    assert (a - 1.0) * (b - 1.0) == pytest.approx(0.25)
    assert (a >= b) == (t_a / n_a <= t_b / n_b) or a == pytest.approx(b)
    assert kernel_wait_contention(t_a, n_a, t_a, n_a) == pytest.approx(1.5)
    assert kernel_wait_contention(scale * t_a, n_a, scale * t_b, n_b) == pytest.approx(a)
    assert kernel_wait_contention(t_a, 2 * n_a, t_b, 2 * n_b) == pytest.approx(a)


def test_kernel_wait_contention_on_the_h200_measurement() -> None:
    """The forwards one H200 ran on 2026-12-04 (docs/hardware.md, "Measured on an
    H200"): a 32B-shaped target's decode 20.09 ms over 64 layers, a 1.5B-shaped draft's
    2.70 ms over 28; measured beside each other 1.16x and 2.58-2.61x."""
    assert kernel_wait_contention(20.09, 64, 2.70, 28) == pytest.approx(1.154, abs=5e-4)
    assert kernel_wait_contention(2.70, 28, 20.09, 64) == pytest.approx(2.628, abs=5e-4)


@pytest.mark.parametrize("target", sorted(DEVICES))
def test_transfer_keeps_efficiencies(target) -> None:
    moved = transfer(TRUE, H100, get_device(target))
    before, after = TRUE.efficiencies(H100), moved.efficiencies(get_device(target))
    assert after == pytest.approx(before)
    assert (moved.overhead_s, moved.per_layer_s) == (TRUE.overhead_s, TRUE.per_layer_s)
    back = transfer(moved, get_device(target), H100)
    np.testing.assert_allclose(back.vector(), TRUE.vector(), rtol=1e-12)


def test_transfer_to_more_bandwidth_is_faster_for_decode() -> None:
    moved = transfer(TRUE, H100, get_device("h200"))
    w = Workload(8, 1, 4096)
    assert predict_seconds(LARGE, w, moved) < predict_seconds(LARGE, w, TRUE)


@pytest.mark.parametrize(("call", "name"), [
    (lambda: Workload(batch=0), "batch"),
    (lambda: Workload(q=0), "q"),
    (lambda: Workload(context=-1), "context"),
    (lambda: Workload(batch=1.5), "batch"),  # type: ignore[arg-type]
    (lambda: Workload(shared_prefix="yes"), "shared_prefix"),  # type: ignore[arg-type]
    (lambda: Workload(logits="some"), "logits"),  # type: ignore[arg-type]
    (lambda: features(SMALL, Workload(), "int8"), "dtype"),
    (lambda: features("small", Workload()), "shape"),  # type: ignore[arg-type]
    (lambda: features(SMALL, (1, 1, 0)), "workload"),  # type: ignore[arg-type]
    (lambda: CostCoefficients(-1.0, 0.0, 1.0, 1.0, 1.0), "overhead_s"),
    (lambda: CostCoefficients(0.0, math.nan, 1.0, 1.0, 1.0), "per_layer_s"),
    (lambda: CostCoefficients(0.0, 0.0, 0.0, 1.0, 1.0), "weight_bandwidth"),
    (lambda: CostCoefficients(0.0, 0.0, 1.0, -2.0, 1.0), "kv_bandwidth"),
    (lambda: CostCoefficients(0.0, 0.0, 1.0, 1.0, 1.0, combine="min"), "combine"),
    (lambda: predict_seconds(SMALL, Workload(), {"overhead_s": 1}), "coefficients"),
    (lambda: fit([]), "rows"),
    (lambda: fit([(SMALL, Workload(), 0.0)]), "seconds"),
    (lambda: fit([(SMALL, Workload(), 1.0)], combine="sum"), "combine"),
    (lambda: fit([(SMALL, Workload(), 1.0)], device="h100"), "device"),
    (lambda: transfer(TRUE, "h100-sxm", H100), "from_device"),
    (lambda: transfer(TRUE, H100, None), "to_device"),
    (lambda: concurrent_seconds(-1.0, 1.0), "t_draft"),
    (lambda: concurrent_seconds(1.0, math.inf), "t_target"),
    (lambda: concurrent_seconds(1.0, 1.0, "three-devices"), "placement"),
    (lambda: concurrent_seconds(1.0, 1.0, overlap=1.5), "overlap"),
    (lambda: kernel_wait_contention(0.0, 28, 1.0, 64), r"t_self must lie in \(0.0, inf\)"),
    (lambda: kernel_wait_contention(1.0, 28, math.nan, 64), "t_other"),
    (lambda: kernel_wait_contention(1.0, 0, 1.0, 64), "layers_self"),
    (lambda: kernel_wait_contention(1.0, 28, 1.0, 2.5), "layers_other"),
    (lambda: get_device("b200"), "device"),
    (lambda: H100.matmul_throughput("int8"), "dtype"),
])
def test_bad_inputs_raise_value_errors_naming_the_parameter(call, name) -> None:
    with pytest.raises(ValueError, match=name):
        call()


def test_device_presets_are_sane() -> None:
    for d in DEVICES.values():
        assert d.matmul_bf16 >= d.matmul_fp32 > 0 and d.memory_bandwidth > 0 and d.source
    assert get_device("h100-sxm").memory_bandwidth == 3.35e12
    assert get_device("h200").memory == 141e9
    assert "2026-11-23" in get_device("cpu-epyc").source
    assert "2026-11-25" in get_device("cpu-xeon").source


def test_shared_file_rows_load_as_described() -> None:
    rows = load_shared_floor(SHARED_FILE)
    assert len(rows) == 36
    assert {s.head_dim for s, _, _ in rows} == {128}
    assert {s.vocab_size for s, _, _ in rows} == {151936}
    small = next(s for s, _, _ in rows if s.name == "qwen2.5-0.5b")
    assert small.tie_word_embeddings and small.num_key_value_heads == 2


def test_fitted_model_predicts_held_out_h100_rows() -> None:
    """Accuracy as a regression check (not timing): fitted on 0.5b/7b at L=1024, b <= 32,
    the held-out rows of the shared H100 file stay within the issue's targets."""
    result = evaluate(load_shared_floor(SHARED_FILE), default_split, sources=[])
    held = result["held_out"]
    assert held["median_abs_b_le_32"] <= 0.10
    assert held["max_abs_b_le_32"] <= 0.25
    fit_rows, held_sets = default_split(load_shared_floor(SHARED_FILE))
    assert not {id(r) for r in fit_rows} & {id(r) for rs in held_sets.values() for r in rs}


# --- the extended model: kernels priced apart, the multi-query kernel per block and wave

EXT = CostCoefficients(1e-5, 6e-5, 2.7e12, 3.0e12, 7e14, multiquery_cta_bandwidth=8.5e10,
                       multiquery_position_s=5e-9, attention_kernel_s=1.2e-5,
                       activation_bandwidth=1.7e11, gemv_bandwidth=3.1e12)
EXT_WORKLOADS = (Workload(1, 1, 0), Workload(8, 1, 4096), Workload(1, 4, 16_384),
                 Workload(8, 2, 1024), Workload(32, 3, 2048), Workload(1, 2, 256),
                 Workload(8, 1, 4096, shared_prefix=True),
                 Workload(32, 1, 16_384, shared_prefix=True),
                 Workload(1, 2048, 0, logits="last"), Workload(1, 512, 0, logits="last"),
                 Workload(32, 1, 256), Workload(64, 8, 512))


def extended_rows(c: CostCoefficients) -> list:
    return [(s, w, predict_seconds(s, w, c)) for s in (SMALL, LARGE, load_shape("qwen2.5-7b"))
            for w in EXT_WORKLOADS]


def test_extended_additive_fit_recovers_known_coefficients() -> None:
    true = replace(EXT, combine="additive")
    got = fit(extended_rows(true), extended=True)
    assert got.extended and got.combine == "additive"
    np.testing.assert_allclose(got.vector(), true.vector(), rtol=1e-6)


def test_extended_roofline_fit_reproduces_its_rows() -> None:
    rows = extended_rows(replace(EXT, combine="max"))
    got = fit(rows, extended=True, combine="max", device=H100)
    assert got.combine == "max" and got.multiquery_units == H100.compute_units
    assert np.max(np.abs(relative_errors(rows, got))) < 1e-3


@given(shapes, batches, qs, contexts)
def test_extended_gemm_roofline_is_between_max_and_sum(shape, b, q, L) -> None:
    w = Workload(b, q, L)
    f = features(shape, w)
    rest = predict_seconds(shape, w, replace(EXT, weight_bandwidth=math.inf,
                                             matmul_throughput=math.inf))
    memory = (f.weight_bytes - f.gemv_weight_bytes) / EXT.weight_bandwidth
    assert f.gemv_weight_bytes == (f.weight_bytes if b * q == 1 else 0)
    arithmetic = f.matmul_flops / EXT.matmul_throughput
    att = f.attention_flops / EXT.matmul_throughput
    roof = predict_seconds(shape, w, replace(EXT, combine="max"))
    total = predict_seconds(shape, w, replace(EXT, combine="additive"))
    assert roof == pytest.approx(rest + max(memory, arithmetic) + att, rel=1e-9)
    assert total == pytest.approx(rest + memory + arithmetic + att, rel=1e-9)


@given(shapes, st.integers(0, 200), st.integers(2, 16), st.integers(1, 32_768))
def test_multiquery_kernel_costs_whole_waves_of_blocks(shape, k, q, L) -> None:
    """Verification batches whose blocks (b·heads) fill the same number of waves of the
    device's SMs pay the same multi-query time; one block more than a wave pays two."""
    H, units = shape.num_attention_heads, EXT.multiquery_units
    only_mq = CostCoefficients(0.0, 0.0, math.inf, math.inf, math.inf,
                               multiquery_cta_bandwidth=EXT.multiquery_cta_bandwidth,
                               multiquery_position_s=EXT.multiquery_position_s)
    per_wave = predict_seconds(shape, Workload(1, q, L), only_mq)
    b = k + 1
    waves = math.ceil(b * H / units)
    assert predict_seconds(shape, Workload(b, q, L), only_mq) == pytest.approx(
        waves * per_wave, rel=1e-12)
    f = features(shape, Workload(b, q, L))
    assert f.multiquery_cta_bytes == L * shape.head_dim * 2 * 2 * shape.num_hidden_layers
    assert f.multiquery_kv_read_bytes == b * L * shape.kv_bytes_per_token()


@given(shapes, st.integers(1, 16), st.integers(1, 16), qs, contexts)
def test_prefix_groups_read_each_prefix_once(shape, B, w, q, L) -> None:
    grouped = features(shape, Workload(B * w, q, L, shared_prefix=True, prefix_groups=B))
    kv = shape.kv_bytes_per_token()
    assert grouped.kv_read_bytes == (B * L + B * w * q) * kv
    unshared = features(shape, Workload(B * w, q, L))
    if w == 1:  # one sequence per prefix: nothing is shared
        assert grouped == unshared
    elif L > 0:
        assert grouped.multiquery_ctas == B * shape.num_attention_heads
        assert grouped.multiquery_kv_read_bytes == B * L * kv
    if q > 1:  # both read the context with the multi-query kernel; shared, less of it
        assert predict_seconds(shape, Workload(B * w, q, L, True, prefix_groups=B), EXT) \
            <= predict_seconds(shape, Workload(B * w, q, L), EXT) * (1 + 1e-12)


@given(shapes, st.integers(1, 64), st.integers(2, 16), st.integers(1, 32_768), st.booleans())
def test_packed_layout_runs_one_block_per_kv_head(shape, b, q, L, shared) -> None:
    gqa = features(shape, Workload(b, q, L, shared))
    packed = features(shape, Workload(b, q, L, shared, layout="packed"))
    groups = shape.num_attention_heads // shape.num_key_value_heads
    assert gqa.multiquery_ctas == packed.multiquery_ctas * groups
    assert replace(packed, multiquery_ctas=gqa.multiquery_ctas) == gqa
    assert predict_seconds(shape, Workload(b, q, L, shared, layout="packed"), EXT) <= \
        predict_seconds(shape, Workload(b, q, L, shared), EXT) * (1 + 1e-12)


@pytest.mark.parametrize("target", sorted(DEVICES))
def test_transfer_of_the_extended_model_keeps_what_one_sm_does(target) -> None:
    dev = get_device(target)
    moved = transfer(EXT, H100, dev)
    assert moved.efficiencies(dev) == pytest.approx(EXT.efficiencies(H100))
    assert (moved.multiquery_cta_bandwidth, moved.multiquery_position_s,
            moved.attention_kernel_s) == (EXT.multiquery_cta_bandwidth,
                                          EXT.multiquery_position_s, EXT.attention_kernel_s)
    assert moved.multiquery_units == dev.compute_units


@pytest.mark.parametrize(("call", "name"), [
    (lambda: Workload(4, prefix_groups=3, shared_prefix=True), "prefix_groups"),
    (lambda: Workload(4, prefix_groups=2), "prefix_groups"),
    (lambda: Workload(4, prefix_groups=0, shared_prefix=True), "prefix_groups"),
    (lambda: Workload(4, layout="paged"), "layout"),
    (lambda: replace(EXT, multiquery_cta_bandwidth=0.0), "multiquery_cta_bandwidth"),
    (lambda: replace(EXT, multiquery_position_s=-1.0), "multiquery_position_s"),
    (lambda: replace(EXT, activation_bandwidth=-1.0), "activation_bandwidth"),
    (lambda: CostCoefficients.from_vector([1.0] * 7), "x"),
    (lambda: fit([(SMALL, Workload(), 1.0)], multiquery_units=0), "multiquery_units"),
])
def test_extended_bad_inputs_name_the_parameter(call, name) -> None:
    with pytest.raises(ValueError, match=name):
        call()


def test_graph_preset_is_the_benchmark_fit_and_meets_the_targets_held_out() -> None:
    """The what-if preset is what the benchmark fits on the committed H100 profiles (0.5b
    and 7b), and on the architectures it was not fitted to (1.5b, 14b, 32b) every kind
    of forward stays within the issue's targets (median <= 10 %, max <= 25 %) —
    accuracy as a regression check, not timing."""
    from benchmarks.bench_hardware_costmodel import graph_sets, load_graph_profiles
    from specmodel.hardware.costmodel import load_coefficients

    _, fit_all, held = graph_sets(load_graph_profiles())
    preset, device, data = load_coefficients("h100-sxm-graph")
    got = fit(fit_all, device=H100, extended=True, combine=preset.combine)
    assert device == H100 and data["schema_version"] == 2
    np.testing.assert_allclose(got.vector(), preset.vector(), rtol=1e-3, atol=1e-15)
    for name, rows in held.items():
        e = np.abs(relative_errors(rows, preset))
        assert np.median(e) <= 0.10 and np.max(e) <= 0.25, name


@pytest.mark.parametrize("cpu", ["cpu-epyc", "cpu-xeon"])
def test_cpu_preset_is_the_benchmark_fit_of_the_committed_cpu_profiles(cpu) -> None:
    """Each CPU's ``<device>-eager`` preset is what ``benchmarks/bench_cpu_costmodel.py``
    fits on that CPU's committed profiles of its fit architectures, in float32 with one
    thread, and its held-out error is recorded beside it (what it is, not a target: see
    docs/hardware.md)."""
    from benchmarks.bench_cpu_costmodel import (
        CPUS,
        DTYPE,
        THREADS,
        load,
        row_curve,
    )
    from benchmarks.bench_hardware_costmodel import fit_error
    from specmodel.hardware.costmodel import load_coefficients

    machine = CPUS[cpu]
    rows = [r for arch in machine.fit_archs for p in load(machine, arch).values()
            for rs in p.values() for r in rs]
    preset, device, data = load_coefficients(machine.preset)
    assert device.name == cpu and data["dtype"] == DTYPE == "float32"
    folder = f"{machine.results.relative_to(machine.results.parents[2])}/"
    assert data["data"]["files"] and all(f.startswith(folder) for f in data["data"]["files"])
    assert preset.multiquery_units == THREADS
    curve = row_curve(machine)  # measured on that CPU (the curve variant is fitted then)
    got = fit(rows, DTYPE, preset.combine, device=device, extended=True,
              multiquery_units=THREADS, gemm_row_curve=preset.gemm_row_curve,
              fixed_overhead=preset.gemm_row_curve is None)
    with_curve = data["variant"] == "extended, GEMM row curve"
    assert preset.gemm_row_curve == (curve if with_curve else None)
    np.testing.assert_allclose(got.vector(), preset.vector(), rtol=1e-3, atol=1e-15)
    others = [fit(rows, DTYPE, c, device=device, extended=True, multiquery_units=THREADS)
              for c in ("additive", "max")]
    if curve is not None and not with_curve:  # the curve variant was fitted and lost
        others.append(fit(rows, DTYPE, device=device, extended=True,
                          multiquery_units=THREADS, gemm_row_curve=curve,
                          fixed_overhead=False))
    assert all(fit_error(got, rows, DTYPE) <= fit_error(o, rows, DTYPE) for o in others)
    assert {"held out, decode", "held out, all kinds"} <= set(data["held_out_error"])
