"""A synthetic run priced without hardware: the forwards it can run
(specmodel.hardware.predicted.profile_points, what profile_costs measures), predicted by
the cost model (predicted_profiles), fed to the decoder model as a measured profile is — for a run
recorded (its record's settings) or not yet run (a registration).  No torch."""

from __future__ import annotations

from pathlib import Path

import pytest

from profiler.engines.synthetic import architectures
from specmodel.config import SpecConfig
from specmodel.formats.run_record import load_run_record
from specmodel.hardware.costmodel import kernel_wait_contention
from specmodel.hardware.predicted import (
    DEFAULT_CONTEXT_BUCKET,
    contention_model_of,
    decode_t1,
    predicted_profiles,
    profile_points,
)
from specmodel.prediction import decoder_prediction

# profiling passes here run on real decoders with a short burn-in and contention
pytestmark = pytest.mark.usefixtures("quick_profiling")

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
COMMON = {"max_steps": 4, "max_step_tokens": 16}


def test_the_grid_covers_every_width_context_and_q() -> None:
    cfgs = [SpecConfig(mode="sync", k1=3, k2=3, **COMMON), SpecConfig(k2=2, **COMMON)]
    grid = profile_points("qwen2.5-7b", "qwen2.5-0.5b", cfgs, 40)
    (t, tdec, tver), (d, ddec, dver) = grid
    assert (t, d) == ("qwen2.5-7b", "qwen2.5-0.5b")
    ctx = sorted({L for _, _, _, L in tdec})
    assert all(L % DEFAULT_CONTEXT_BUCKET == 0 for L in ctx)
    assert ctx[0] >= 40 and ctx[-1] >= 40 + (4 + 3) * 16  # prompt .. steps + k1 in flight
    assert {b for _, b, _, _ in tdec} == {1, 2, 3}  # sync W = 1: k1 nodes
    assert {q for k, _, q, L in tver if L in ctx} >= {2, 3}  # every k2 at every context
    assert any(L == 0 for _, _, _, L in tver)  # prefills from scratch
    assert {b for _, b, _, _ in ddec} == {1}
    assert all(k == "verify" and q >= 2 for k, _, q, _ in dver)
    # without a step draft (k1 = 1 everywhere) the draft is not profiled
    assert len(profile_points("qwen2.5-7b", "qwen2.5-0.5b", cfgs[1:], 40)) == 1


@pytest.mark.parametrize(("placement", "model", "slow"), [
    ("one-device", "overlap", 1.9), ("two-devices", None, 1.0), ("two-devices", "kernels", 1.0)])
def test_predicted_profiles_carry_the_placements_contention(placement, model, slow) -> None:
    cfgs = [SpecConfig(mode="async", k1=2, k2=2, **COMMON)]
    t, d = predicted_profiles("qwen2.5-32b", "deepseek-r1-distill-qwen-1.5b", cfgs, 30,
                              device="h100-sxm", placement=placement, overlap=0.10,
                              contention_model=model)
    names = architectures("qwen2.5-32b", "deepseek-r1-distill-qwen-1.5b", cfgs)
    assert (t.architecture.name, d.architecture.name) == (names["target"], names["draft"])
    assert t.concurrent == {d.architecture.name: pytest.approx(slow)}
    assert d.concurrent == {t.architecture.name: pytest.approx(slow)}
    assert t.path == d.path == "predicted" and t.dtype == "bfloat16"


def test_a_contention_measured_apart_overrides_the_placements() -> None:
    cfgs = [SpecConfig(mode="async", k1=2, k2=1, **COMMON)]
    t, d = predicted_profiles("qwen2.5-1.5b", "qwen2.5-0.5b", cfgs, 30, device="cpu-xeon",
                              placement="two-devices", concurrent=1.3)
    assert t.concurrent == {d.architecture.name: 1.3}
    assert d.concurrent == {t.architecture.name: 1.3}
    for bad in (0.9, float("inf"), True, "1.2"):
        with pytest.raises(ValueError, match="concurrent"):
            predicted_profiles("qwen2.5-1.5b", "qwen2.5-0.5b", cfgs, 30, device="cpu-xeon",
                               concurrent=bad)
    # the draft's own slowdown where it differs (one GPU: short forwards beside long)
    t, d = predicted_profiles("qwen2.5-32b", "deepseek-r1-distill-qwen-1.5b", cfgs, 30,
                              device="h100-sxm", concurrent=2.15, concurrent_draft=3.49)
    assert t.concurrent == {d.architecture.name: 2.15}
    assert d.concurrent == {t.architecture.name: 3.49}
    t, d = predicted_profiles("qwen2.5-32b", "deepseek-r1-distill-qwen-1.5b", cfgs, 30,
                              device="h100-sxm", overlap=0.10, concurrent_draft=3.0,
                              contention_model="overlap")
    assert t.concurrent == {d.architecture.name: pytest.approx(1.9)}
    assert d.concurrent == {t.architecture.name: 3.0}
    with pytest.raises(ValueError, match="concurrent_draft"):
        predicted_profiles("qwen2.5-32b", "deepseek-r1-distill-qwen-1.5b", cfgs, 30,
                           device="h100-sxm", concurrent_draft=0.5)


def test_a_registration_prices_as_the_record_would() -> None:
    rec = load_run_record(sorted(RESULTS.glob("synthetic_cpu_seed2_round1.run.json"))[0])
    cal = rec.calibration
    assert cal is not None and rec.settings.synthetic is not None
    cfg = next(c.config for c in rec.configs if c.config.k1 > 1)
    a = decoder_prediction(cal, cfg, record=rec, draws=4, problems=40)
    b = decoder_prediction(cal, cfg, synthetic=rec.settings.synthetic, draws=4, problems=40)
    assert a is not None and b is not None and a.speedup == b.speedup
    # the same run priced by profiles the cost model predicted for its own grid
    from specmodel.hardware.predicted import predict_like

    pred = cal.model_copy(update={"hardware": [predict_like(p) for p in cal.hardware or []]})
    c = decoder_prediction(pred, cfg, record=rec, draws=4, problems=40)
    assert c is not None and 0.0 < c.speedup < 10.0 and c.speedup != a.speedup


def test_one_gpu_prices_contention_by_the_kernels_model_by_default() -> None:
    """On a GPU preset the two models' slowdowns on one device come from their predicted
    decode forwards and layers (the short draft waits far more than the target); on a
    CPU preset from 2 - overlap; the kernels model on a CPU is refused, naming it."""
    cfgs = [SpecConfig(mode="async", k1=2, k2=2, **COMMON)]
    for device in ("h100-sxm", "h200"):
        t, d = predicted_profiles("qwen2.5-32b", "deepseek-r1-distill-qwen-1.5b", cfgs, 30,
                                  device=device)
        tl, dl = t.architecture.num_hidden_layers, d.architecture.num_hidden_layers
        want_t = kernel_wait_contention(decode_t1(t), tl, decode_t1(d), dl)
        want_d = kernel_wait_contention(decode_t1(d), dl, decode_t1(t), tl)
        assert t.concurrent == {d.architecture.name: pytest.approx(want_t)}
        assert d.concurrent == {t.architecture.name: pytest.approx(want_d)}
        # near what one H200 measured for these shapes (1.16 and 2.58-2.61, L = 768)
        assert 1.08 < want_t < 1.2 and 2.4 < want_d < 3.3
    t, d = predicted_profiles("qwen2.5-1.5b", "qwen2.5-0.5b", cfgs, 30, device="cpu-xeon",
                              placement="one-device")
    assert t.concurrent == {d.architecture.name: pytest.approx(1.9)}
    assert contention_model_of("cpu-xeon") == "overlap" == contention_model_of("h200",
                                                                               "overlap")
    assert contention_model_of("h100-sxm") == "kernels"
    with pytest.raises(ValueError, match="'kernels' models one GPU's two streams; cpu-xeon"):
        predicted_profiles("qwen2.5-1.5b", "qwen2.5-0.5b", cfgs, 30, device="cpu-xeon",
                           contention_model="kernels")
    with pytest.raises(ValueError, match="contention_model must be one of kernels, overlap"):
        contention_model_of("h200", "streams")
    with pytest.raises(ValueError, match="has no timed decode forward of one sequence"):
        decode_t1(t.model_copy(update={"points": [p for p in t.points
                                                  if p.kind != "decode"]}))
