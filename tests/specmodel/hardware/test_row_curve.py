"""The GEMM row curve: a device's measured weight-product time by rows, the cost model's
term for a kernel library that picks its kernel by row count (a CPU's)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from specmodel.hardware.costmodel import (
    CostCoefficients,
    Workload,
    check_row_curve,
    features,
    fit,
    load_coefficients,
    predict_seconds,
    relative_errors,
    row_factor,
    transfer,
)
from specmodel.hardware.devices import get_device
from specmodel.hardware.shape import Shape, load_shape

# the Xeon's steps: 1-3 rows alike, 4-6 twice, 7-9 three times, then a blocked kernel
CURVE = ((1, 1.0), (3, 1.05), (4, 2.0), (6, 2.1), (7, 3.0), (9, 3.1), (16, 3.2),
         (64, 4.3), (512, 20.5))
SMALL = Shape("small", 896, 4864, 24, 14, 2, 64, 151936, True, True)
XEON = get_device("cpu-xeon")
TRUE = CostCoefficients(0.0, 4.9e-4, XEON.memory_bandwidth, 7.7e9, 8.4e10,
                        multiquery_cta_bandwidth=2.5e10, activation_bandwidth=1.4e10,
                        gemv_bandwidth=1.6e10, multiquery_units=1.0, gemm_row_curve=CURVE)


@given(st.integers(1, 4096))
def test_row_factor_interpolates_the_measured_rows_and_grows_past_them(rows) -> None:
    f = row_factor(CURVE, rows)
    measured = dict(CURVE)
    if rows in measured:
        assert f == pytest.approx(measured[rows])
    elif rows > 512:
        assert f == pytest.approx(20.5 * rows / 512)
    else:  # between two measured rows: between their factors
        lo = max(m for m in measured if m < rows)
        hi = min(m for m in measured if m > rows)
        assert min(measured[lo], measured[hi]) <= f <= max(measured[lo], measured[hi])


@pytest.mark.parametrize(("curve", "match"), [
    ([], "start at"), ([(2, 1.0)], "start at"), ([(1, 1.0), (1, 2.0)], "increasing"),
    ([(1, 1.0), (2, 0.0)], "factor"), ([(1, 1.0), (2, math.nan)], "factor"),
    ([(1, 1.0), (2.5, 2.0)], "rows"), (3, "pairs"), ([(1, 1.0, 2)], "pairs")])
def test_bad_curves_name_the_problem(curve, match) -> None:
    with pytest.raises(ValueError, match=f"curve.*{match}|{match}"):
        check_row_curve("curve", curve)


def test_bad_rows_and_a_curve_on_the_five_term_model_are_refused() -> None:
    with pytest.raises(ValueError, match="rows must be an integer >= 1"):
        row_factor(CURVE, 0)
    with pytest.raises(ValueError, match="needs the extended model"):
        CostCoefficients(0.0, 1e-4, 1e10, 1e10, 1e11, gemm_row_curve=CURVE)
    with pytest.raises(ValueError, match="extended=True"):
        fit([(SMALL, Workload(1, 1, 256), 0.1)], "float32", gemm_row_curve=CURVE)


def test_the_curve_prices_every_weight_product_at_the_gemv_bandwidth() -> None:
    """Layers at the b·q rows' factor, the LM head at its logit rows', nothing by the
    GEMM bandwidth or the matmul throughput."""
    for b, q, logits in ((1, 1, "last"), (3, 1, "last"), (1, 8, "all"), (1, 512, "last")):
        w = Workload(b, q, 256, logits=logits)
        f = features(SMALL, w, "float32")
        v = f.vector(True, 1.0, CURVE)
        head = SMALL.embedding_params * 4
        rows = b if logits == "last" else b * q
        want = (f.weight_bytes - head) * row_factor(CURVE, b * q) + head * row_factor(CURVE,
                                                                                      rows)
        assert v[2] == v[3] == 0.0 and v[10] == pytest.approx(want)
        plain = f.vector(True, 1.0)
        np.testing.assert_array_equal(np.delete(v, [2, 3, 10]), np.delete(plain, [2, 3, 10]))
    # 1-3 rows cost about one row, 4 rows twice the weights' share
    t = [predict_seconds(SMALL, Workload(b, 1, 256), TRUE, "float32") for b in (1, 3, 4)]
    assert t[1] < 1.1 * t[0] < t[2]


def test_fit_with_a_curve_recovers_known_coefficients() -> None:
    shapes = (SMALL, load_shape("qwen2.5-1.5b"), load_shape("qwen3-1.7b"))
    rows = [(s, w, predict_seconds(s, w, TRUE, "float32")) for s in shapes
            for w in (Workload(1, 1, 256), Workload(2, 1, 1024), Workload(4, 1, 2048),
                      Workload(8, 1, 256), Workload(1, 4, 1024), Workload(4, 8, 2048),
                      Workload(1, 512, 0), Workload(8, 1, 1024, shared_prefix=True))]
    got = fit(rows, "float32", device=XEON, extended=True, multiquery_units=1.0,
              gemm_row_curve=CURVE, fixed_overhead=False)
    assert got.gemm_row_curve == CURVE and got.overhead_s == 0.0
    assert np.max(np.abs(relative_errors(rows, got, "float32"))) < 1e-6


def test_without_a_fixed_overhead_the_fit_keeps_it_at_zero() -> None:
    """A fixed cost is found where the layer counts tell it from a per-layer one; held
    at 0, the per-layer cost carries it instead."""
    true = replace(TRUE, overhead_s=0.01)
    rows = [(s, w, predict_seconds(s, w, true, "float32"))
            for s in (SMALL, load_shape("qwen2.5-1.5b"), load_shape("qwen2.5-7b"))
            for w in (Workload(1, 1, 256), Workload(4, 1, 1024), Workload(1, 8, 256),
                      Workload(1, 512, 0), Workload(8, 1, 1024, shared_prefix=True))]
    free = fit(rows, "float32", device=XEON, extended=True, multiquery_units=1.0,
               gemm_row_curve=CURVE)
    assert free.overhead_s == pytest.approx(0.01, rel=1e-4)
    for combine in ("additive", "max"):
        held = fit(rows, "float32", combine, device=XEON, extended=True,
                   multiquery_units=1.0, gemm_row_curve=CURVE, fixed_overhead=False)
        assert held.overhead_s == 0.0 and held.per_layer_s > true.per_layer_s


def test_the_xeon_preset_carries_its_measured_curve_and_transfer_keeps_it() -> None:
    coef, device, data = load_coefficients("cpu-xeon-eager")
    assert device.name == "cpu-xeon" and data["variant"] == "extended, GEMM row curve"
    curve = coef.gemm_row_curve
    assert curve is not None and curve[0] == (1, 1.0)
    assert row_factor(curve, 3) < 1.2 < 1.8 < row_factor(curve, 4)  # the first step
    assert transfer(coef, device, get_device("cpu-epyc"), "float32").gemm_row_curve == curve
    # the EPYC's curve was measured too (2026-11-26), but its preset is the additive
    # variant, which fitted its profiles better: bytes and flops, no curve
    epyc, _, epyc_data = load_coefficients("cpu-epyc-eager")
    assert epyc.gemm_row_curve is None and epyc_data["variant"] == "extended, additive GEMMs"
