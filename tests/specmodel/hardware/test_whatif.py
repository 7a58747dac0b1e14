"""The what-if (specmodel.hardware.whatif): reductions to the closed forms, invariants,
validation."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specmodel.closedform.hybrid import h
from specmodel.hardware.costmodel import (
    HARDWARE_PRESETS,
    PRESET_DEVICES,
    load_coefficients,
    preset_for_device,
)
from specmodel.hardware.whatif import what_if

T, D = "deepseek-r1-distill-qwen-32b", "deepseek-r1-distill-qwen-1.5b"
alphas = st.floats(0.05, 0.95)


@settings(max_examples=25, deadline=None)
@given(alphas, st.floats(0.01, 0.9), alphas, st.floats(0.0, 0.5))
def test_flat_curve_and_forced_costs_reduce_to_the_closed_forms(a1, c1, a2, c2) -> None:
    r = what_if(T, D, alpha1=a1, alpha2=a2, c1=c1, c2=c2, flat=True, k1=4, k2=3, budget=8)
    p = r.predictions
    assert p["SD"].speedup == pytest.approx(float(h("sync", a1, c1, a2, c2, 1, 3)), rel=1e-9)
    assert p["LR sync"].speedup == pytest.approx(float(h("sync", a1, c1, a2, c2, 5, 1)),
                                                 rel=1e-9)
    assert p["LR+SD async"].speedup == pytest.approx(
        float(h("async", a1, c1, a2, c2, 4, 3)), rel=1e-9)


@settings(max_examples=25, deadline=None)
@given(alphas, st.floats(0.02, 0.9), alphas, st.floats(0.0, 0.5), st.integers(1, 24))
def test_within_budget_is_each_methods_closed_form_optimum(a1, c1, a2, c2, M) -> None:
    """With the flat curve each method's row is its f·g maximum over the (k1, k2) whose
    ParallelDim_f(k1)·k2 fits M, found here by brute force; best is the largest of them
    (or the target alone)."""
    from specmodel.closedform.step_level import async_knee

    r = what_if(T, D, alpha1=a1, alpha2=a2, c1=c1, c2=c2, flat=True, budget=M)
    knee = async_knee(c1)
    families = {
        "SD": [("sync", 1, b) for b in range(2, M + 1)],
        "LR sync": [("sync", a, 1) for a in range(2, M + 1)],
        "LR async": [("async", a, 1) for a in range(2, min(M, knee) + 1)],
        "LR+SD sync": [("sync", a, b) for a in range(2, M + 1) for b in range(2, M // a + 1)],
        "LR+SD async": [("async", a, b) for a in range(2, min(M, knee) + 1)
                        for b in range(2, M // a + 1)],
    }
    for name, points in families.items():
        if not points:
            assert name not in r.within_budget
            continue
        row = r.within_budget[name]
        top = max(float(h(m, a1, c1, a2, c2, a, b)) for m, a, b in points)
        assert row.speedup == pytest.approx(top, rel=1e-9)
        assert row.parallel_dim <= M and row.method == name
    tops = [p.speedup for p in r.within_budget.values()] + [1.0]
    assert r.speedup("best") == pytest.approx(max(tops), rel=1e-9)
    # the fixed rows say the budget they use, fitting it or not
    assert r.predictions["LR+SD sync"].parallel_dim == 7 * 9
    assert r.predictions["LR+SD async"].parallel_dim == min(6, knee) * 9


def test_speedups_fall_with_context() -> None:
    prev = None
    for L in (256, 1024, 4096, 16384):
        s = what_if(T, D, alpha1=0.63, alpha2=0.28, context=L, token_drafter="ngram")
        cur = (s.speedup("SD"), s.speedup("LR async"), s.speedup("LR+SD async"))
        if prev is not None:
            assert all(c <= p + 1e-12 for c, p in zip(cur, prev, strict=True))
        prev = cur


def test_c1_tends_to_the_weight_ratio_at_short_context() -> None:
    from specmodel.hardware.shape import load_shape

    r = what_if(T, D, alpha1=0.6, alpha2=0.3, context=0, step_tokens=64)
    ratio = load_shape(D).weight_bytes() / load_shape(T).weight_bytes()
    assert ratio < r.costs["c1"] < 3 * ratio  # weights plus per-layer cost of 28 layers


@settings(max_examples=15, deadline=None)
@given(alphas, alphas, st.sampled_from([1024, 4096, 16384]))
def test_two_devices_at_least_one_and_shared_at_least_unshared(a1, a2, L) -> None:
    kw = {"alpha1": a1, "alpha2": a2, "context": L, "token_drafter": "ngram"}
    two = what_if(T, D, placement="two-devices", **kw)
    one = what_if(T, D, placement="one-device", **kw)
    assert two.speedup("best") >= one.speedup("best") - 1e-12
    shared = what_if(T, D, shared_prefix=True, **kw)
    unshared = what_if(T, D, shared_prefix=False, **kw)
    for m in ("LR async", "LR+SD async", "best"):
        assert shared.speedup(m) >= unshared.speedup(m) - 1e-12


def test_result_serialises_and_names_its_models() -> None:
    import json

    r = what_if(T, D, alpha1=0.63, alpha2=0.28, device="h200", judge="qwen2.5-7b")
    d = json.loads(json.dumps(r.to_dict()))
    assert "transferred to h200" in d["predictions"]["best"]["model"]
    assert d["costs"]["judge_s"] > 0


@pytest.mark.parametrize("name", HARDWARE_PRESETS)
def test_presets_load_and_name_their_device(name) -> None:
    c, dev, data = load_coefficients(name)
    assert c.extended and "held_out_error" in data and data["dtype"] in ("bfloat16",
                                                                         "float32")
    assert dev.name == PRESET_DEVICES[name] and preset_for_device(dev.name) == name
    assert c.multiquery_units >= 1


def test_what_if_prices_a_device_with_its_own_preset() -> None:
    """On this CPU the what-if uses the CPU's own fitted preset in float32; on a device
    without one it transfers the H100's."""
    cpu = what_if("qwen2.5-1.5b", "qwen2.5-0.5b", alpha1=0.6, alpha2=0.3, device="cpu-epyc",
                  context=1024)
    assert "cost model cpu-epyc-eager (measured on cpu-epyc)" in cpu.predictions["SD"].model
    assert "transferred" not in cpu.costs["model"] and cpu.inputs["dtype"] == "float32"
    a100 = what_if(T, D, alpha1=0.6, alpha2=0.3, device="a100-80gb-sxm")
    assert "h100-sxm-graph" in a100.costs["model"] and "transferred" in a100.costs["model"]
    assert a100.inputs["dtype"] == "bfloat16"


@pytest.mark.parametrize(("kw", "name"), [
    ({"alpha1": 1.0}, "alpha1"), ({"alpha2": 0.0}, "alpha2"), ({"context": -1}, "context"),
    ({"concurrency": 0}, "concurrency"), ({"placement": "three"}, "placement"),
    ({"overlap": 1.5}, "overlap"), ({"budget": 0}, "budget"), ({"k1": 0}, "k1"),
    ({"device": "tpu"}, "device"), ({"target": "nope"}, "target"),
    ({"shared_prefix": 1}, "shared_prefix"), ({"c1": -0.1}, "c1"),
    ({"attention_layout": "paged"}, "attention_layout"), ({"dtype": "int4"}, "dtype"),
    ({"preset": "tpu-graph"}, "preset"),
])
def test_bad_inputs_name_the_parameter(kw, name) -> None:
    args = {"target": T, "draft": D, "alpha1": 0.6, "alpha2": 0.3, **kw}
    with pytest.raises(ValueError, match=name):
        what_if(**args)


def test_packed_attention_never_prices_verification_higher() -> None:
    """One block per KV head reads each cache once in fewer waves: V(q) and the branch
    curve can only get cheaper than with one block per query head."""
    kw = {"alpha1": 0.63, "alpha2": 0.28, "context": 16384, "concurrency": 4}
    gqa = what_if(T, D, **kw)
    packed = what_if(T, D, attention_layout="packed", **kw)
    for key, v in gqa.costs["verify_cost"].items():
        assert packed.costs["verify_cost"][key] <= v * (1 + 1e-12)
    assert packed.costs["verify_cost"]["V(8)/T(1)"] < gqa.costs["verify_cost"]["V(8)/T(1)"]
    assert packed.inputs["attention_layout"] == "packed"


# -- the decoder model priced by predicted profiles ------------------------------------
FAST = {"screen_problems": 6, "problems": 12, "draws": 0, "refine": 2}


def test_decoder_what_if_prices_the_decoder_by_predicted_profiles() -> None:
    from specmodel.formats.calibration import load_preset
    from specmodel.hardware.whatif import what_if_decoder

    cal = load_preset("lr-paper-gsm8k-deepseek")
    r = what_if_decoder(cal, T, D, context=1024, token_drafter="ngram", budget=6,
                        search=FAST)
    assert r.best.budget_used <= 6 and r.best.speedup == max(c.speedup for c in r.refined)
    assert r.sources["target_decode"].startswith("predicted: hardware profile")
    assert r.sources["draft_decode"].startswith("predicted: hardware profile")
    assert r.gaps[0].startswith("engine call costs: the forwards predicted")
    assert not any(g.startswith("engine call costs (") for g in r.gaps)
    assert r.baseline_tokens_per_second is not None and r.baseline_tokens_per_second > 0
    # the calibration given is left as it was
    assert cal.hardware == load_preset("lr-paper-gsm8k-deepseek").hardware


def test_decoder_what_if_sharing_a_device_never_speeds_async_up() -> None:
    from specmodel.formats.calibration import load_preset
    from specmodel.hardware.whatif import what_if_decoder

    cal = load_preset("lr-paper-gsm8k-deepseek")
    kw = {"context": 1024, "token_drafter": "ngram", "budget": 4, "search": FAST}
    two = {c.label: c.speedup for c in what_if_decoder(
        cal, T, D, placement="two-devices", **kw).screened}
    one = {c.label: c.speedup for c in what_if_decoder(
        cal, T, D, placement="one-device", **kw).screened}
    assert set(one) == set(two)
    for label, s in one.items():  # the same draws; only the contention differs
        if label.startswith("async"):
            assert s <= two[label] + 1e-12, label
        else:
            assert s == pytest.approx(two[label], rel=1e-12), label


def test_decoder_what_if_takes_measured_asymmetric_contention() -> None:
    """On one GPU the two models' slowdowns default to the kernels model's (the draft's
    far above the target's), 2 - overlap where the overlap model is asked for; measured
    ones (the target's and the draft's apart) go into the predicted profiles, and a
    draft slowed more slows only the async rows."""
    from specmodel.formats.calibration import load_preset
    from specmodel.hardware.whatif import decoder_costs, what_if_decoder

    cal = load_preset("lr-paper-gsm8k-deepseek")
    kw = {"context": 1024, "token_drafter": "ngram", "budget": 4,
          "placement": "one-device"}

    def slowdowns(**more) -> dict[str, dict[str, float]]:
        dc = decoder_costs(cal, T, D, **kw, **more)
        return {p.architecture.name: p.concurrent for p in dc.calibration.hardware
                if p.concurrent}

    assert slowdowns(contention_model="overlap") == {T: {D: pytest.approx(1.9)},
                                                     D: {T: pytest.approx(1.9)}}
    kernels = slowdowns()
    assert 1.0 < kernels[T][D] < 1.3 < 2.0 < kernels[D][T] < 4.0
    assert (kernels[T][D] - 1) * (kernels[D][T] - 1) == pytest.approx(0.25)
    assert slowdowns(concurrent=2.15, concurrent_draft=3.49) == {T: {D: 2.15}, D: {T: 3.49}}
    assert slowdowns(concurrent=2.15) == {T: {D: 2.15}, D: {T: 2.15}}
    sources = decoder_costs(cal, T, D, concurrent=2.15, concurrent_draft=3.49,
                            **kw).costs.sources
    assert sources["contention"].startswith("given: 2.15× (the target's slowdown")
    assert sources["draft_contention"].startswith("given: 3.49× (the draft's slowdown")
    assert decoder_costs(cal, T, D, contention_model="overlap",
                         **kw).costs.sources["contention"].startswith("predicted: 1.9×")
    same = {c.label: c.speedup for c in what_if_decoder(
        cal, T, D, concurrent=2.15, search=FAST, **kw).screened}
    slower = {c.label: c.speedup for c in what_if_decoder(
        cal, T, D, concurrent=2.15, concurrent_draft=3.49, search=FAST, **kw).screened}
    assert any(slower[k] < same[k] for k in same if k.startswith("async"))
    assert "contention as given" in what_if_decoder(
        cal, T, D, concurrent=2.15, search=FAST, **kw).gaps[0]
    for label, s in slower.items():
        if label.startswith("async"):
            assert s <= same[label] + 1e-12, label
        else:
            assert s == pytest.approx(same[label], rel=1e-12), label
    with pytest.raises(ValueError, match=r"concurrent_draft must lie in \[1.0, inf\)"):
        decoder_costs(cal, T, D, concurrent_draft=0.5, **kw)


def test_decoder_what_if_draft_drafts_tokens_at_the_targets_widths() -> None:
    from specmodel.formats.calibration import load_preset
    from specmodel.hardware.whatif import what_if_decoder

    cal = load_preset("lr-paper-gsm8k-deepseek")
    r = what_if_decoder(cal, T, D, context=512, token_drafter="same", budget=4, search=FAST)
    assert r.sources["token_drafter_decode"].startswith("predicted: hardware profile of")


@pytest.mark.parametrize(("kwargs", "named"), [
    ({"calibration": None}, "calibration must be a Calibration"),
    ({"placement": "x"}, "placement must be one of"),
    ({"budget": 0}, "budget must be"),
    ({"context": -1}, "context must be"),
    ({"contexts": 0}, "contexts must be"),
])
def test_decoder_what_if_bad_input(kwargs, named) -> None:
    from specmodel.formats.calibration import load_preset
    from specmodel.hardware.whatif import what_if_decoder

    args = {"calibration": load_preset("lr-paper-gsm8k-deepseek"), **kwargs}
    cal = args.pop("calibration")
    with pytest.raises(ValueError) as e:
        what_if_decoder(cal, T, D, **args)
    assert named in str(e.value)


def test_decoder_costs_price_a_judge_per_pair_and_cover_further_configs() -> None:
    from specmodel.formats.calibration import load_preset
    from specmodel.hardware.costmodel import Workload, predict_seconds
    from specmodel.hardware.shape import load_shape
    from specmodel.hardware.whatif import decoder_costs

    cal = load_preset("lr-paper-gsm8k-deepseek")
    dc = decoder_costs(cal, T, D, context=1024, token_drafter="ngram", budget=2,
                       judge="qwen2.5-7b", configs=[("async", 6, 9, 1)])
    want = predict_seconds(load_shape("qwen2.5-7b"), Workload(1, 256, 0, logits="last"),
                           load_coefficients("h100-sxm-graph")[0])
    assert dc.costs.verifier_per_pair == pytest.approx(want, rel=1e-12)
    assert dc.costs.sources["verifier_per_pair"].startswith("predicted: one 256-token")
    assert dc.prompt_tokens == 1024
    prof = next(p for p in dc.calibration.hardware if p.architecture.name == T)
    assert {q for _, q, _ in prof.forward_points()} >= {9}  # k2 = 9 beyond the budget
    assert max(b for b, _ in prof.decode_surface()) >= 6
