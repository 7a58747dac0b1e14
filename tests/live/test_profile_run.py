"""specmodel profile run: T(b), steps and tokens into one calibration, resumable."""

from __future__ import annotations

import json
import math

import pytest

from tests.conftest import require

pytestmark = pytest.mark.live


@pytest.mark.slow  # about 1 minute; each phase has its own live test in CI
def test_profile_run_measures_everything_and_resumes(
    smollm_path, qwen05_path, tmp_path, capsys, monkeypatch
) -> None:
    require("reasoning_gym")
    from cli.main import main
    from specmodel.formats.calibration import load_calibration

    out = tmp_path / "trio.json"
    args = ["profile", "run", "--target", str(qwen05_path), "--draft", str(smollm_path),
            "-o", str(out), "--verifier", "exact", "--problems", "2", "--steps-per-problem",
            "2", "--max-step-tokens", "12", "--delimiter", "\\n", "--widths", "1,2",
            "--batch-tokens", "4", "--repeats", "2", "--token-engine", "transformers",
            "--token-problems", "2", "--max-tokens", "24", "--num-speculative-tokens", "3",
            "--contexts", "16,48", "--cost-widths", "1,2", "--cost-tokens", "2,4",
            "--cost-repeats", "1"]
    assert main(args) == 0
    captured = capsys.readouterr()
    assert "step pairs" in captured.err and "4/4" in captured.err  # the progress bars
    # the token rates from the steps phase's whole answers (or, where fewer than two of
    # them draft, the tokens phase's kept and said so)
    assert "token rates (answers): " in captured.out or "tokens phase's kept" in captured.out
    cal = load_calibration(out)
    assert 0 < cal.step.alpha1 < 1 and 0 < cal.step.c1 < 1
    assert 0 < cal.token.alpha2 < 1 and cal.token.c2 >= 0
    assert cal.step.samples == 4 and cal.token.num_speculative_tokens == 3
    assert [p.batch for p in cal.batch_cost.points] == [1, 2]
    assert all(p.time > 0 and p.n == 2 for p in cal.batch_cost.points)
    prov = cal.provenance
    assert prov.source == "measured" and "copied from" not in prov.description
    phases = prov.settings.phases
    assert set(phases.finished()) == {"batch_cost", "steps", "tokens", "engine_costs"}
    assert cal.engine_costs is not None and cal.engine_costs.draft is not None
    assert cal.engine_costs.execution == "transformers generate, eager (dynamic KV cache) on cpu"
    assert cal.schema_version == 2
    assert prov.settings.versions["torch"].startswith("2.13")
    assert prov.machine and prov.date and prov.engine.startswith("transformers")
    assert prov.settings.machine_details.cores >= 1
    assert phases.steps.pairs == 4 and phases.steps.alpha1_ci95 is not None
    assert phases.tokens.measurement.engine == "transformers"
    assert all(phases.tokens.measurement.outputs_identical)
    assert phases.batch_cost.widths == [1, 2] and phases.batch_cost.repeats == 2
    assert "c1 = " in prov.description and "Wilson 95% CI" in prov.description
    assert prov.models["target"] == str(qwen05_path) and prov.models["draft"] == str(smollm_path)
    assert phases.steps.delimiter == "\n"
    assert (cal.token.rates_by_k2 is None) == (cal.token.problem_counters is None)
    assert cal.name == f"measured-{qwen05_path.name}-{smollm_path.name}"
    # --resume: every phase is in the file, nothing is measured again.
    before = out.read_text()

    def boom(*_a, **_k):
        raise AssertionError("a finished phase was measured again")

    import profiler.calibrate as calibrate

    for name in ("batch_cost_phase", "steps_phase", "tokens_phase", "engine_costs_phase"):
        monkeypatch.setattr(calibrate, name, boom)
    capsys.readouterr()
    assert main([*args, "--resume"]) == 0
    assert ("batch_cost, engine_costs, steps, tokens already measured"
            in capsys.readouterr().out)
    assert out.read_text() == before
    # The calibration drives the optimizer.
    assert main(["optimize", "--budget", "16", "--calibration", str(out), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["k1"] >= 1 and data["k2"] >= 1 and data["model"] == "decoder model"
    assert "cost_aware" in data["comparisons"]  # the engine costs were measured
    assert data["calibration"]["name"] == cal.name and data["calibration"]["file"] == str(out)
    assert main(["optimize", "--budget", "16", "--calibration", str(out)]) == 0
    assert f"calibration '{cal.name}' (measured)" in capsys.readouterr().out



@pytest.mark.parametrize(("decode_path", "cache", "dtype"),
                         [("eager", None, "bfloat16"), ("static", 300, "float32")])
def test_profile_engine_costs_prices_the_engine_and_feeds_the_decoder_model(
    smollm_path, tmp_path, capsys, decode_path, cache, dtype
) -> None:
    """The target alone here (the draft's cells run the same code, and the contention
    has an offline test); the slow ``profile run`` test above measures both.  On the
    static decode path too, every cell on caches made for 300 positions (512, the
    engine's power of two) first: the calibration says which path and cache its calls
    ran on; the eager case in bfloat16 (``--dtype``), which the calibration records."""
    from cli.main import main
    from specmodel.config import SpecConfig
    from specmodel.decodermodel import CostModel, predict_calibrated
    from specmodel.formats.calibration import load_calibration

    out = tmp_path / "costs.json"
    args = ["profile", "engine-costs", "--target", str(smollm_path), "-o", str(out),
            "--contexts", "16,48", "--cost-widths", "1,2", "--cost-tokens", "2,5",
            "--cost-repeats", "1", "--preset", "measured-qwen2.5-coder-0.5b-smollm2-135m",
            "--speculation-k2", "3", "--speculation-problems", "1", "--seed", "1",
            "--delimiter", "\\n", "--max-step-tokens", "16", "--decode-path", decode_path,
            "--device", "cpu", "--dtype", dtype]
    if cache is not None:
        args += ["--cache-positions", str(cache)]
    assert main(args) == 0
    assert "engine costs:" in capsys.readouterr().out
    cal = load_calibration(out)
    ec = cal.engine_costs
    assert ec is not None and ec.engine == "transformers" and ec.tokens == (2, 5)
    assert ec.draft is None and ec.target.concurrent_slowdown is None
    m = ec.target
    assert len(m.points) == 4 and all(p.per_token > 0 and p.n == 1 for p in m.points)
    assert {p.context for p in m.points} == {16, 48}  # the prompts are cut exactly
    assert {p.batch for p in m.points} == {1, 2}
    assert m.call_overhead.value >= 0 and m.prefill_per_token.value >= 0
    spec = m.speculative_passes
    if spec is None:  # one short prefix on a loaded machine: the pass left out, and said so
        assert m.passes_counted_in is None
        assert "prompt-lookup passes not measured: k2 = 3 left out" in (
            cal.provenance.description)
    else:  # timing never decides a test: either outcome is the measurement's to report
        assert set(spec) == {3} and spec[3].value > 0 and spec[3].n >= 1
        assert m.passes_counted_in == "plain-calls"
        assert "counted in forwards timed beside them" in CostModel.from_calibration(
            cal).sources["pass_multipliers"]
    phase = cal.provenance.settings.phases.engine_costs
    assert phase.contexts == [16, 48] and phase.widths == [1, 2] and phase.repeats == 1
    assert phase.speculation_k2 == [3] and phase.speculation_seed == 1
    assert phase.delimiter == "\n" and phase.decode_path == decode_path
    said = {"eager": "eager (dynamic KV cache) on cpu", "static": "static KV cache, eager on cpu"}
    assert said[decode_path] in ec.execution and said[decode_path] in phase.description
    assert phase.cache_positions == cache
    assert ec.device == phase.device == "cpu" and ec.dtype == phase.dtype == dtype
    assert f"transformers calls in {dtype} (" in phase.description
    assert phase.machine.gpu is None
    assert ("on static caches of 512 positions made before the first cell" in
            phase.description) == (cache is not None)
    assert "intercepts fitted as overhead + prefill" in cal.provenance.description
    costs = CostModel.from_calibration(cal)
    assert costs.unit == "s" and costs.sources["target_decode"].startswith(
        "measured: engine_costs of")
    assert costs.sources["draft_decode"].startswith("measured: c1")  # no draft measured
    # the measured multiplier, kept below 1 (a pass on the dynamic cache can cost less
    # than a static-path forward), at least PASS_FLOOR
    from specmodel.decodermodel.costs import PASS_FLOOR

    if spec is not None:
        assert costs.pass_multiplier(3) == pytest.approx(max(PASS_FLOOR, spec[3].value))
    pred = predict_calibrated(cal, SpecConfig(k1=2, max_steps=4, max_step_tokens=16),
                              problems=20, draws=2)
    assert pred.speedup > 0 and pred.tokens_per_second is not None
    gaps = cal.decoder_gaps()
    assert not any(g.startswith("engine call costs") for g in gaps)
    assert any(g.startswith("the draft's engine call costs") for g in gaps)


def _made_up_engine_costs(tmp_path, target: str, draft: str) -> tuple:
    """A calibration whose engine costs name a real target and draft, every figure made
    up (the speculative passes 1.5 forwards at k2 = 3): (its file, the section, its
    phase settings)."""
    from profiler import calibrate
    from specmodel.formats.calibration import (
        EngineCallPoint,
        EngineCosts,
        EngineCostsSettings,
        Measurement,
        ModelEngineCosts,
        load_preset,
    )

    def costs(model: str, speculative: bool) -> ModelEngineCosts:
        return ModelEngineCosts(
            model=model, points=[EngineCallPoint(batch=b, context=16, per_token=0.01 * b,
                                                 intercept=0.02, n=1) for b in (1, 2)],
            call_overhead=Measurement(value=0.02, n=2),
            prefill_per_token=Measurement(value=1e-4, n=2),
            concurrent_slowdown=1.9,  # a bare number, as files before paired calls hold
            speculative_passes={3: Measurement(value=1.5, n=3)} if speculative else None,
            speculative_slowdown=1.8 if speculative else None)

    section = EngineCosts(engine="transformers", device="cpu", dtype="float32", threads=1,
                          tokens=(2, 5), target=costs(target, True),
                          draft=costs(draft, False))
    settings = EngineCostsSettings(
        description="engine_costs: made up.", date="2026-11-20T10:00:00+00:00",
        **calibrate.engine_costs_key(target=target, draft=draft, contexts=[16],
                                     widths=[1, 2], tokens=[2, 5], repeats=1, threads=1,
                                     speculation_k2=[3], speculation_problems=1, seed=1,
                                     delimiter="\n"))
    src = tmp_path / "made.json"
    with calibrate.Recorder(src, load_preset("measured-qwen2.5-coder-0.5b-smollm2-135m")) as rec:
        rec.add(calibrate.PhaseResult("engine_costs", section, settings,
                                      {"target": target, "draft": draft}, "made up"))
    return src, section, settings


def test_profile_contention_measures_the_slowdowns_again_on_real_models(
    qwen05_path, smollm_path, tmp_path, capsys
) -> None:
    """A calibration whose engine costs name a real target and draft (every other figure
    made up): `profile contention` measures both slowdowns and the speculative step
    calls' by paired calls on the real models, and keeps everything else."""
    from cli.main import main
    from specmodel.decodermodel import CostModel
    from specmodel.formats.calibration import load_calibration

    src, section, settings = _made_up_engine_costs(tmp_path, str(qwen05_path),
                                                   str(smollm_path))
    out = tmp_path / "paired.json"
    assert load_calibration(src).engine_costs.contention_method == "beside-a-loop"
    assert main(["profile", "contention", str(src), "-o", str(out), "--repeats", "2",
                 "--max-step-tokens", "8"]) == 0
    assert "contention measured again" in capsys.readouterr().out
    cal = load_calibration(out)
    ec = cal.engine_costs
    assert ec.contention_method == "paired-calls"
    # what the slowdowns read is timing (a clean CI measured a speculative call beside
    # the draft at 0.24x its time alone on a loaded VM; the cost model keeps a slowdown
    # below 1 at 1): only that each is a measured ratio with its count
    for m in (ec.target.concurrent_slowdown, ec.draft.concurrent_slowdown):
        assert m.n == 2 and m.stderr is not None and 0 < m.value < math.inf
    spec = ec.target.speculative_slowdown
    assert spec is not None and 1 <= spec.n <= 3 and 0 < spec.value < math.inf  # 0, 4, 8
    # everything else as it was
    assert ec.target.points == section.target.points
    assert ec.target.speculative_passes == section.target.speculative_passes
    assert ec.draft.call_overhead == section.draft.call_overhead
    phase = cal.provenance.settings.phases.engine_costs
    assert phase.description.startswith("engine_costs: made up. (Slowdowns beside")
    assert "measured beside a loop: target 1.90x (n = 1)" in phase.description
    assert phase.date > settings.date
    model = CostModel.from_calibration(cal)
    assert model.contention == pytest.approx(max(1.0, ec.target.concurrent_slowdown.value))
    assert "paired calls, n = 2" in model.sources["contention"]
    assert model.stderrs["contention"] == pytest.approx(ec.target.concurrent_slowdown.stderr)


def test_profile_passes_measures_the_pass_again_against_forwards_timed_beside_it(
    qwen05_path, smollm_path, tmp_path, capsys
) -> None:
    """`profile passes` times the real target's speculative step calls beside plain ones
    on the phase's step prefixes and replaces the made-up pass (at the k2 asked), keeping
    every other figure; the description says what it replaced."""
    from cli.main import main
    from specmodel.formats.calibration import load_calibration

    src, section, settings = _made_up_engine_costs(tmp_path, str(qwen05_path),
                                                   str(smollm_path))
    out = tmp_path / "passes.json"
    assert main(["profile", "passes", str(src), "-o", str(out), "--speculation-k2", "2,3",
                 "--max-step-tokens", "8"]) == 0
    assert "passes measured again: prompt-lookup passes: " in capsys.readouterr().out
    cal = load_calibration(out)
    ec = cal.engine_costs
    spec = ec.target.speculative_passes
    # a k2 whose pass the noise put at or below zero is left out, and the description
    # says so (timing decides which; the measurement counted at least one)
    assert spec and set(spec) <= {2, 3} and ec.target.passes_counted_in == "plain-calls"
    assert not any(g.startswith("prompt-lookup passes") for g in cal.decoder_gaps())
    assert any(g.startswith("prompt-lookup passes: counted in the grid's T(1, L)")
               for g in load_calibration(src).decoder_gaps())
    for m in spec.values():
        assert 1 <= m.n <= 3 and 0 < m.value < math.inf  # steps 0, 4, 8
    assert ec.target.points == section.target.points
    assert ec.target.concurrent_slowdown == section.target.concurrent_slowdown
    assert ec.target.speculative_slowdown == section.target.speculative_slowdown
    assert ec.draft == section.draft
    phase = cal.provenance.settings.phases.engine_costs
    assert phase.speculation_k2 == [2, 3] and phase.date > settings.date
    assert phase.description.startswith("engine_costs: made up. (Prompt-lookup passes "
                                        "measured again on ")
    assert all(f"k2 = {k2} left out" in phase.description for k2 in {2, 3} - set(spec))
    assert "they replace: 1.50 +/- 0.00 (k2 = 3, 3 calls).)" in phase.description
    assert main(["profile", "passes", str(src), "-o", str(tmp_path / "x.json"),
                 "--speculation-k2", "1"]) == 2
    assert "--speculation-k2 must be integers >= 2" in capsys.readouterr().err
