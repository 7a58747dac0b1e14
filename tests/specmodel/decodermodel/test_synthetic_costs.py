"""The decoder model's costs for the synthetic-acceptance engine: forwards of q tokens,
prefix caching at step boundaries with prefill forwards, bucketed contexts, per-model
contention, and costs read from hardware profiles (measured apart from the run)."""

from __future__ import annotations

import pytest

from specmodel.config import SpecConfig
from specmodel.decodermodel import (
    AcceptanceModel,
    CostModel,
    EngineBehaviour,
    Surface,
    Workload,
    simulate,
)
from specmodel.decodermodel.costs import Forwards
from specmodel.formats.calibration import Calibration, load_preset
from specmodel.formats.hardware import HardwareProfile


def test_forwards_interpolate_in_q() -> None:
    f = Forwards.from_points({(1, 2, 0): 2.0, (1, 4, 0): 4.0, (2, 4, 0): 6.0,
                              (1, 8, 0): 10.0, (2, 8, 0): 12.0, (2, 2, 0): 3.0})
    assert f.time(1, 4, 0) == pytest.approx(4.0)
    assert f.time(1, 3, 0) == pytest.approx(3.0)  # linear between q = 2 and 4
    assert f.time(2, 6, 0) == pytest.approx(9.0)
    assert f.time(1, 1, 0) == pytest.approx(2.0)  # below the smallest q: its time
    assert f.time(1, 16, 0) == pytest.approx(10.0 + 1.5 * 8)  # extrapolated from the last two
    with pytest.raises(ValueError):
        Forwards.from_points({})


def test_forwards_keep_a_measured_slower_narrow_batch() -> None:
    """One sequence × 3 tokens measured slower than two (a kernel choice, seen in 7 of 8
    cells of the CPU profiles): the forwards keep it, where a decode surface pools it."""
    pts = {(1, 3, 256): 23.4, (2, 3, 256): 20.2, (3, 3, 256): 24.3,
           (1, 3, 512): 25.6, (2, 3, 512): 21.6, (3, 3, 512): 26.5}
    f = Forwards.from_points(pts)
    for (b, q, L), t in pts.items():
        assert f.time(b, q, L) == pytest.approx(t)
    assert f.time(1.5, 3, 256) == pytest.approx((23.4 + 20.2) / 2)  # linear between
    # still ordered in L: a longer context is never cheaper at the same b
    g = Forwards.from_points({(1, 3, 256): 24.0, (1, 3, 512): 22.0, (2, 3, 256): 20.0,
                              (2, 3, 512): 21.0})
    assert g.time(1, 3, 256) == pytest.approx(23.0) == g.time(1, 3, 512)
    assert g.time(2, 3, 256) == pytest.approx(20.0)
    decode = Surface.from_points({(b, L): t for (b, _, L), t in pts.items()})
    assert decode.time(1, 256) == pytest.approx(decode.time(2, 256))  # pooled: monotone
    assert decode.scaled(2.0).time(1, 256) == pytest.approx(2 * decode.time(1, 256))
    assert not f.by_q[0][1].scaled(0.5).monotone_in_b


def _costs(**kw: object) -> CostModel:
    """Decode 1 per forward at every b and L; a forward of q tokens costs q (b = 1) or
    q + 1 (b = 2); the draft's forwards 0.1."""
    fw = Forwards.from_points({(b, q, L): float(q + b - 1) for b in (1, 2)
                               for q in (2, 4, 8, 16, 32, 64) for L in (0, 256)})
    base = dict(target_decode=Surface.flat(1.0), draft_decode=Surface.flat(0.1),
                target_forwards=fw, draft_forwards=Forwards.from_points(
                    {(1, q, 0): 0.1 for q in (2, 64)}),
                engine=EngineBehaviour.synthetic(256), unit="s")
    base.update(kw)
    return CostModel(**base)  # type: ignore[arg-type]


def test_baseline_prefills_its_prompt_once() -> None:
    """Steps of 4 tokens: the first call prefills the 10-token prompt as one forward of
    q = 16, then every call decodes 4 forwards (its own step is cached)."""
    acc = AcceptanceModel.iid(0.5, 0.5, step_tokens=4)
    cfg = SpecConfig(max_steps=3, max_step_tokens=48)
    sim = simulate(cfg, acc, _costs(), Workload.of(cfg, 10), problems=2)
    assert list(sim.tokens) == [12, 12]
    assert list(sim.seconds) == pytest.approx([16 + 12, 16 + 12])


def test_sync_prefills_the_uncached_drafts() -> None:
    """Sync k1 = 2, every draft accepted, steps of 4: the target's batch of 2 prefixes
    prefills the draft step it has not seen (4 tokens: q = 4, b = 2 → 5) each cycle."""
    acc = AcceptanceModel.iid(1 - 1e-12, 0.5, step_tokens=4)
    cfg = SpecConfig(mode="sync", k1=2, max_steps=4, max_step_tokens=48, verifier={
        "kind": "exact"})
    sim = simulate(cfg, acc, _costs(), Workload.of(cfg, 10), problems=2)
    # cycle 1: draft prefills the prompt (q = 16: 0.1) + 4 decodes (0.4); target batch of
    # 2: prompt + draft uncached (14 → q = 16 at b = 2: 17) + 4 decodes (4)
    # cycle 2: draft: the target's step (4 → q = 4: 0.1) + 0.4; target: its own last
    # step is cached, the new draft step is not (4 → q = 4 at b = 2: 5) + 4 decodes
    assert sim.counters["target_batches"] == 2
    assert sim.seconds[0] == pytest.approx(0.5 + 21 + 0.5 + 9)


def test_bucketed_context_and_longest_member() -> None:
    """Each forward is priced at its own bucketed context: decode costs 1 below 256
    tokens and 3 above; a 300-token step from a 10-token prompt crosses the bucket."""
    dec = Surface.from_points({(1, 256): 1.0, (1, 512): 3.0})
    acc = AcceptanceModel.iid(0.5, 0.5, step_tokens=300)
    cfg = SpecConfig(max_steps=1, max_step_tokens=300)
    sim = simulate(cfg, acc, _costs(target_decode=dec), Workload.of(cfg, 10), problems=2)
    # forwards at 10 + s for s < 300: 247 of them at bucket 256 (L <= 256), 53 at 512
    assert sim.seconds[0] == pytest.approx(16 + 247 * 1.0 + 53 * 3.0)


def test_draft_contention_slows_the_draft_only() -> None:
    acc = AcceptanceModel.iid(0.6, 0.5, step_tokens=8)
    cfg = SpecConfig(mode="async", k1=3, max_steps=12, max_step_tokens=48,
                     verifier={"kind": "exact"})
    work = Workload.of(cfg, 10)
    plain = simulate(cfg, acc, _costs(), work, problems=50, seed=3)
    slow = simulate(cfg, acc, _costs(draft_contention=3.0), work, problems=50, seed=3)
    both = simulate(cfg, acc, _costs(contention=1.5, draft_contention=3.0), work,
                    problems=50, seed=3)
    assert plain.seconds.sum() < slow.seconds.sum() < both.seconds.sum()
    with pytest.raises(ValueError, match="draft_contention"):
        _costs(draft_contention=0.5)


def test_papers_idealisation_excludes_the_new_costs() -> None:
    flat = CostModel.flat(0.2)
    assert flat.papers_idealisation
    assert not flat.replace(draft_contention=2.0).papers_idealisation
    assert not flat.replace(target_forwards=Forwards.from_points(
        {(1, 2, 0): 1.0})).papers_idealisation


def _profile(name: str, scale: float, concurrent: dict[str, float]) -> dict:
    pts = []
    for L in (256, 512):
        for b in (1, 2):
            t = scale * (1 + 0.5 * (b - 1)) * (1 + L / 1024)
            pts.append({"kind": "decode", "batch": b, "new_tokens": 1, "context": L,
                        "ms": [t, t * 0.9, t * 2], "n": 5, "mean_ms": t * 1.1})
            pts.append({"kind": "verify", "batch": b, "new_tokens": 4, "context": L,
                        "ms": [2 * t, 2 * t * 0.9, 4 * t], "n": 5, "mean_ms": 2.2 * t})
    return {"architecture": {"name": name, "hidden_size": 64, "intermediate_size": 128,
                             "num_hidden_layers": 2, "num_attention_heads": 4,
                             "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 512,
                             "tie_word_embeddings": True, "attention_bias": True},
            "device": {"type": "cpu", "name": "test"}, "dtype": "float32", "path": "eager",
            "path_description": "eager", "repeats": 5, "warmup": 1, "seed": 0,
            "versions": {}, "date": "2026-11-23T00:00:00+00:00", "setup_seconds": 0.0,
            "measure_seconds": 0.0, "points": pts, "concurrent": concurrent}


def test_cost_model_from_hardware_profiles() -> None:
    cal = load_preset("lr-paper-gsm8k-deepseek")
    data = cal.model_dump(mode="json")
    data["hardware"] = [_profile("tgt", 10.0, {"drf": 1.2}),
                        _profile("drf", 1.0, {"tgt": 1.7})]
    cal = Calibration.model_validate(data)
    assert isinstance(cal.hardware[0], HardwareProfile)
    costs = CostModel.from_calibration(cal, target_architecture="tgt",
                                       draft_architecture="drf",
                                       engine=EngineBehaviour.synthetic(256))
    assert costs.unit == "s"
    # the mean (recorded) is used, not the median
    assert costs.target_decode.time(1, 256) == pytest.approx(10.0 * 1.25 * 1.1e-3)
    assert costs.draft_decode.time(2, 512) == pytest.approx(1.5 * 1.5 * 1.1e-3)
    assert costs.target_forwards is not None and costs.draft_forwards is not None
    assert costs.target_forwards.time(2, 4, 512) == pytest.approx(2.2 * 10 * 1.5 * 1.5e-3)
    assert costs.contention == pytest.approx(1.2)
    assert costs.draft_contention == pytest.approx(1.7)
    assert costs.sources["draft_contention"].startswith("measured")
    assert costs.sources["target_forwards"].startswith("measured")
    # a token drafter without a profile: said so, and free
    c2 = CostModel.from_calibration(cal, target_architecture="tgt",
                                    token_drafter_architecture="nope")
    assert c2.token_drafter_decode is None
    assert c2.sources["token_drafter_decode"].startswith("missing")
