"""The analytical cost model (specmodel.hardware.costmodel) and the device presets."""

from __future__ import annotations

import math

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
    assert "2026-11-23" in get_device("cpu-this").source


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
