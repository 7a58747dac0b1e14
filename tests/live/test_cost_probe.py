"""An engine-cost probe on a real model: what `bench_heldout --cost-probe` stores in a
run record, and the drift it gives against a calibration measured at the same moment."""

from __future__ import annotations

import pytest

from tests.conftest import require

pytestmark = pytest.mark.live


def test_a_probe_on_a_real_model_times_its_cells_and_reads_back_as_no_drift(
        smollm_path, tmp_path) -> None:
    require("transformers")
    from profiler.engine_costs import probe_costs
    from profiler.engines import HFEngine
    from specmodel.formats.calibration import load_preset
    from specmodel.formats.run_record import CostProbe, load_run_record
    from specmodel.prediction import calibration_at_run_time, cost_drift

    engine = HFEngine(smollm_path, threads=1)
    probe = probe_costs(engine, None, models=("smollm2-135m", None), context=24, threads=1,
                        tokens=(2, 6), repeats=1, before="target")
    points = probe.costs.target.points
    assert [(p.batch, p.context) for p in points] == [(1, 24), (2, 24)]
    assert all(p.per_token > 0 for p in points)
    assert probe.costs.device == "cpu" and probe.costs.draft is None
    # a calibration whose engine costs are the probe's own cells: no drift, exactly —
    # where the cells grow with b; a timing that came out lower at b = 2 than at b = 1
    # is averaged by the monotone surface the drift reads, so there only the rescaled
    # calibration reads back as no drift (timing must not decide the test)
    cal = load_preset("measured-qwen2.5-coder-0.5b-smollm2-135m").model_copy(
        update={"engine_costs": probe.costs})
    drift = cost_drift(cal, [probe])
    assert drift is not None and drift.draft is None
    if points[0].per_token <= points[1].per_token:
        assert drift.target == pytest.approx(1.0, rel=1e-12)
        assert drift.target_by_batch == pytest.approx({1: 1.0, 2: 1.0}, rel=1e-12)
    rescaled, _ = calibration_at_run_time(cal, [probe], by_batch=False)
    assert rescaled.engine_costs == probe.costs.scaled(drift.target)
    assert cost_drift(rescaled, [probe]).target == pytest.approx(1.0, rel=1e-12)
    # the decoder's run writer stores it in the record, and a resumed run keeps it
    from profiler.problems import load_problems
    from profiler.runs import run_configurations
    from specmodel.config import SpecConfig

    cfg = SpecConfig(max_steps=1, max_step_tokens=6)
    path = tmp_path / "probed.run.json"
    kw = {"models": {"target": "smollm2-135m"}, "settings": {"problems": 1, "seed": 0}}
    run_configurations(engine, None, None, [cfg], load_problems(1, 0), path,
                       cost_probes=[probe], **kw)
    assert load_run_record(path).cost_probes == [CostProbe.model_validate(probe.model_dump())]
    later = probe.model_copy(update={"before": None})
    run_configurations(engine, None, None, [cfg, cfg.replace(k2=2)],
                       load_problems(1, 0), path, resume=True, cost_probes=[later], **kw)
    kept = load_run_record(path)
    assert [p.before for p in kept.cost_probes] == ["target", None]
    assert len(kept.configs) == 2


@pytest.mark.usefixtures("quick_cost_probe", "quick_decoder_model")
def test_a_registration_from_a_probe_prices_with_the_costs_it_rescales(
        smollm_path, monkeypatch) -> None:
    """``bench_heldout --register --costs-at-run-time``: one probe taken before anything
    decodes, stored in the registration, and every row predicted from the calibration's
    costs rescaled by it; with ``--probe-contention`` the probe pairs the two models'
    calls and the rows take its slowdowns (SmolLM2, loaded twice, stands in for both
    models of the trio)."""
    require("transformers")
    import argparse

    from benchmarks import bench_heldout
    from profiler.engines import HFEngine
    from specmodel.formats.calibration import load_calibration
    from specmodel.formats.run_record import CostProbe
    from specmodel.prediction import calibration_at_run_time, decoder_prediction

    engine, other = HFEngine(smollm_path, threads=1), HFEngine(smollm_path, threads=1)
    cal = load_calibration("benchmarks/results/heldout_05b_calibration_xeon_s9_costs.json")
    configs = bench_heldout.configurations("0.5b", max_steps=12, max_step_tokens=48,
                                           delimiter="\n", threshold=0.85)[:2]
    monkeypatch.setattr(bench_heldout, "load_trio", lambda a, c, cfgs: bench_heldout._Trio(
        engine, other, None, [], 40.0, []))
    a = argparse.Namespace(trio="0.5b", calibration="cal.json", dataset="gsm_symbolic",
                           problems=3, seed=19,
                           max_steps=12, max_step_tokens=48, decode_path="static", threads=1,
                           costs_at_run_time=True, drift_uniform=False, probe_contention=0,
                           keep_times=False)
    reg = bench_heldout.register(a, cal, configs)
    probe = CostProbe.model_validate(reg["cost_probe"])
    assert probe.before == "registration" and reg["prompt_tokens"] == 40.0
    assert [(p.batch, p.context) for p in probe.costs.target.points] == [(1, 40), (2, 40)]
    assert "rescaled by cost_probe, each batch size by its own" in reg["costs"]
    rescaled, drift = calibration_at_run_time(cal, [probe])
    assert drift.target != 1.0  # SmolLM2 is not the 0.5B target: the costs did move
    assert _priced_rows(reg) == [bench_heldout.registered_row(c, decoder_prediction(
        rescaled, c, prompt_tokens=40.0, sample_problems=3)) for c in configs]
    # --probe-contention: the probe pairs the models; async rows price its slowdowns
    configs = bench_heldout.configurations("0.5b", max_steps=12, max_step_tokens=48,
                                           delimiter="\n", threshold=0.85)[1:3]
    paired = bench_heldout.register(argparse.Namespace(**{**vars(a), "probe_contention": 1}),
                                    cal, configs)
    probe = CostProbe.model_validate(paired["cost_probe"])
    slow = probe.costs.target.concurrent_slowdown
    assert slow is not None and slow.n == 1 and slow.value > 0
    assert probe.costs.draft is not None and probe.costs.draft.concurrent_slowdown is not None
    assert "slowdown beside the other the probe's paired calls" in paired["costs"]
    rescaled, drift = calibration_at_run_time(cal, [probe])
    assert drift.target_contention == slow
    assert rescaled.engine_costs.target.concurrent_slowdown == slow
    assert _priced_rows(paired) == [bench_heldout.registered_row(c, decoder_prediction(
        rescaled, c, prompt_tokens=40.0, sample_problems=3)) for c in configs]


def _priced_rows(reg: dict) -> list[dict]:
    """A registration's rows without the track-record band each carries (checked here:
    the registered point times and over the registration's band factor)."""
    factor = reg["track_band"]["factor"]
    for r in reg["rows"]:
        lo, hi = r["decoder_track_interval"]
        assert lo * factor == pytest.approx(r["predicted_decoder"])
        assert hi == pytest.approx(r["predicted_decoder"] * factor)
    return [{k: v for k, v in r.items() if k != "decoder_track_interval"}
            for r in reg["rows"]]
