"""Run records (version 2 typed end to end, version 1 migrated on load) and the
predicted-against-measured comparison (no models)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specmodel.closedform.hybrid import h
from specmodel.closedform.token_level import g_token
from specmodel.config import SpecConfig, VerifierSpec
from specmodel.errors import SpecmodelError
from specmodel.formats.calibration import load_preset
from specmodel.formats.run_record import RunRecord, load_run_record
from specmodel.prediction import compare, predict

PRESET = "lr-paper-gsm8k-deepseek"


def _config(label: str, mode: str, k1: int, k2: int, tps: float, acc: float | None = None,
            width: int = 1):
    return {
        "label": label,
        "config": {"mode": mode, "k1": k1, "k2": k2, "width": width},
        "totals": {"problems": 2, "output_tokens": int(tps * 10), "seconds": 10.0,
                   "tokens_per_second": tps, "accuracy": 0.5, "step_acceptance": acc},
        "problems": [],
    }


def _record(configs, calibration=True):
    """A version-1 record (what every committed run record is)."""
    return {
        "schema_version": 1,
        "kind": "specmodel-run",
        "created": "2026-11-22T00:00:00+00:00",
        "engine": "transformers",
        "calibration": load_preset(PRESET).model_dump(exclude_none=True) if calibration else None,
        "baseline": "target",
        "configs": configs,
    }


def _v2(data):
    """A version-1 record migrated, as version-2 data."""
    from specmodel.formats.run_record import migrate_version1

    return migrate_version1(data)


def _write(tmp_path, data) -> str:
    p = tmp_path / "run.json"
    p.write_text(json.dumps(data))
    return str(p)


def test_compare_measures_against_the_baseline_and_predicts_the_closed_form(tmp_path) -> None:
    rec = load_run_record(_write(tmp_path, _record([
        _config("target", "sync", 1, 1, 10.0),
        _config("token k2=3", "sync", 1, 3, 12.0),
        _config("sync k1=3 k2=1", "sync", 3, 1, 8.0, 0.4),
        _config("async k1=3 k2=4", "async", 3, 4, 15.0, 0.5),
    ])))
    rows = {r.config: r for r in compare(rec)}
    cal = load_preset(PRESET)
    a1, c1, a2, c2 = cal.step.alpha1, cal.step.c1, cal.token.alpha2, cal.token.c2
    assert rows["target"].measured_speedup == 1.0
    assert rows["target"].predicted_speedup == pytest.approx(1.0)
    assert rows["token k2=3"].measured_speedup == pytest.approx(1.2)
    assert rows["token k2=3"].predicted_speedup == pytest.approx(float(g_token(a2, c2, 3)))
    assert rows["sync k1=3 k2=1"].predicted_speedup == pytest.approx(
        float(h("sync", a1, c1, a2, c2, 3, 1)))
    r = rows["async k1=3 k2=4"]
    assert r.measured_speedup == pytest.approx(1.5)
    assert r.predicted_speedup == pytest.approx(float(h("async", a1, c1, a2, c2, 3, 4)))
    assert r.error == pytest.approx(r.predicted_speedup / 1.5 - 1)
    assert r.step_acceptance == 0.5
    assert r.predicted_priced is None  # the preset has no T(b)


@given(tps=st.floats(0.1, 100), base=st.floats(0.1, 100))
def test_error_is_relative_to_the_measurement(tps: float, base: float) -> None:
    rec = RunRecord.model_validate(_v2(_record([_config("target", "sync", 1, 1, base),
                                            _config("token k2=2", "sync", 1, 2, tps)])))
    row = compare(rec, decoder=False)[1]  # the decoder model has its own tests
    assert row.measured_speedup == pytest.approx(tps / base)
    assert row.error == pytest.approx(row.predicted_speedup * base / tps - 1)


def test_priced_prediction_uses_the_calibrations_batch_cost() -> None:
    cal = load_preset(PRESET).model_copy(deep=True)
    data = cal.model_dump(exclude_none=True)
    data["batch_cost"] = {"points": [{"batch": 1, "time": 1.0}, {"batch": 2, "time": 1.5},
                                     {"batch": 4, "time": 2.5}]}
    from specmodel.formats.calibration import Calibration

    priced_cal = Calibration.model_validate(data)
    closed, priced = predict(priced_cal, SpecConfig(k1=2))
    assert priced is not None and priced < closed  # a wider batch is not free
    closed_w, priced_w = predict(priced_cal, SpecConfig(k1=2, width=2))
    assert priced_w is not None and priced_w < closed_w


def test_missing_baseline_and_missing_calibration_are_clear_errors(tmp_path) -> None:
    rec = RunRecord.model_validate(_v2(_record([_config("token k2=2", "sync", 1, 2, 5.0)])))
    with pytest.raises(ValueError, match="baseline"):
        compare(rec)
    rec = RunRecord.model_validate(_v2(_record([_config("target", "sync", 1, 1, 5.0)], False)))
    with pytest.raises(ValueError, match="calibration"):
        compare(rec)


@pytest.mark.parametrize(
    ("payload", "match"),
    [
        ("not json", "not valid JSON"),
        (json.dumps({"kind": "other"}), "not a specmodel run record"),
        (json.dumps({"kind": "specmodel-run", "schema_version": 9}), "schema_version"),
        (json.dumps({"kind": "specmodel-run", "schema_version": 1, "created": "x",
                     "engine": "e", "configs": []}), "configs"),
    ],
)
def test_bad_run_records_are_rejected(tmp_path, payload: str, match: str) -> None:
    p = tmp_path / "bad.json"
    p.write_text(payload)
    with pytest.raises(ValueError, match=match):
        load_run_record(p)


def test_validate_command_prints_the_comparison(tmp_path, capsys) -> None:
    from cli.main import main

    path = _write(tmp_path, _record([_config("target", "sync", 1, 1, 10.0),
                                     _config("sync k1=2 k2=1", "sync", 2, 1, 9.0, 0.3)]))
    assert main(["validate", path, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["config"] for r in rows] == ["target", "sync k1=2 k2=1"]
    for r in rows:
        assert {"config", "predicted_speedup", "measured_speedup", "error"} <= set(r)
    assert rows[1]["measured_speedup"] == pytest.approx(0.9)
    assert main(["validate", path]) == 0
    assert "sync k1=2" in capsys.readouterr().out
    assert main(["validate", str(tmp_path / "missing.json")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_multi_branch_configurations_are_predicted_by_the_multibranch_model(tmp_path) -> None:
    from specmodel.closedform.step_level import f_sync_multibranch

    cal = load_preset(PRESET)
    a1, c1, a2, c2 = cal.step.alpha1, cal.step.c1, cal.token.alpha2, cal.token.c2
    closed, priced = predict(cal, SpecConfig(k1=3, k2=2, width=2))
    assert closed == pytest.approx(
        f_sync_multibranch(a1, c1, 3, 2).speedup * g_token(a2, c2, 2), rel=1e-12)
    assert priced is None  # the preset has no T(b)
    # Width 1 is the chain: the same number as without the argument.
    assert predict(cal, SpecConfig(k1=3, k2=2, width=1)) == predict(cal, SpecConfig(k1=3, k2=2))
    rows = compare(load_run_record(_write(tmp_path, _record([
        _config("target", "sync", 1, 1, 5.0),
        _config("sync k1=3 k2=1 W=2", "sync", 3, 1, 6.0, 0.8, width=2),
    ]))))
    assert rows[1].width == 2
    assert rows[1].predicted_speedup == pytest.approx(f_sync_multibranch(a1, c1, 3, 2).speedup)
    with pytest.raises(ValueError, match="width"):  # multi-branch is sync only
        SpecConfig(mode="async", k1=3, width=2)


def test_a_calibration_from_other_models_is_named(tmp_path, capsys) -> None:
    from cli.main import main
    from specmodel.prediction import calibration_mismatches

    data = _record([_config("target", "sync", 1, 1, 10.0)])
    data["calibration"]["provenance"]["models"] = {"target": "t", "draft": "d",
                                                   "verifier": "embedding:x@0.85"}
    data["models"] = {"target": "t", "draft": "d", "verifier": "judge:y"}
    record = load_run_record(_write(tmp_path, data))
    assert calibration_mismatches(record) == [
        "verifier: the calibration measured embedding:x@0.85, the run used judge:y"]
    assert main(["validate", _write(tmp_path, data)]) == 0
    assert "the run used judge:y" in capsys.readouterr().out
    data["models"]["verifier"] = "embedding:x@0.85"
    assert calibration_mismatches(load_run_record(_write(tmp_path, data))) == []
    # a calibration that names no models (the paper presets) is not checked
    data["calibration"]["provenance"]["models"] = {}
    data["models"]["draft"] = "other"
    assert calibration_mismatches(load_run_record(_write(tmp_path, data))) == []


V1_CONFIG = {"mode": "async", "k1": 2, "k2": 3, "token_method": "draft_model",
             "token_draft_model": "/models/d", "prompt_lookup_max": 4, "max_step_tokens": 64,
             "max_steps": 24, "delimiter": "\n", "width": 1, "branch_temperature": 0.5}
"""Every field the version-1 decoder settings had."""
V1_PROBLEM = {"problem": 3, "output": "t0\n#### 7\n",
              "steps": [{"text": "t0\n", "source": "draft", "tokens": 2},
                        {"text": "#### 7\n", "source": "target", "tokens": 3}],
              "drafted_steps": 1, "accepted_steps": 1, "wasted_draft_steps": 0,
              "target_steps": 2, "target_batches": 1, "output_tokens": 5, "seconds": 1.5,
              "draft_seconds": 0.5, "target_seconds": 1.0, "verify_seconds": 0.01,
              "answer": None, "correct": False, "finished": "answer", "spec_metrics": {}}


def _v1_file(tmp_path):
    data = _record([_config("target", "sync", 1, 1, 10.0),
                    {**_config("async k1=2 k2=3", "async", 2, 3, 12.0, 0.5),
                     "config": V1_CONFIG, "problems": [V1_PROBLEM]}])
    data["models"] = {"target": "t", "draft": "d", "verifier": "embedding:minilm-l6-v2@0.85"}
    data["settings"] = {"dataset": "gsm_symbolic", "problems": 2, "seed": 0, "threads": 1,
                        "engine": "transformers", "max_steps": 24, "note": "by hand"}
    data["configs"][1]["totals"].update(drafted_steps=1, accepted_steps=1)
    return _write(tmp_path, data)


def test_a_version_1_record_loads_migrated(tmp_path) -> None:
    rec = load_run_record(_v1_file(tmp_path))
    assert rec.schema_version == 2
    cfg = rec.configs[1].config
    assert cfg == SpecConfig(
        mode="async", k1=2, k2=3, token={"method": "draft_model", "model": "/models/d",
                                         "prompt_lookup_max": 4},
        max_step_tokens=64, max_steps=24, step_delimiter="\n", branch_temperature=0.5,
        verifier={"kind": "embedding", "model": "minilm-l6-v2", "threshold": 0.85})
    assert cfg.verifier == VerifierSpec.from_name(rec.models["verifier"])
    assert rec.configs[0].config.label == "target"
    # Settings the typed format names are typed; the rest is kept where version 1 had it.
    assert (rec.settings.problems, rec.settings.max_steps) == (2, 24)
    assert rec.settings.legacy == {"note": "by hand"}
    run = rec.configs[1].problems[0]
    assert run.steps[0].source == "draft" and run.acceptance == 1.0 and run.answer is None
    assert rec.configs[1].totals.drafted_steps == 1


def test_a_version_2_record_round_trips(tmp_path) -> None:
    from specmodel.formats.jsonio import write_json_atomic

    rec = load_run_record(_v1_file(tmp_path))
    path = write_json_atomic(rec, tmp_path / "v2.json")
    written = json.loads(path.read_text())
    assert written["schema_version"] == 2
    assert written["configs"][1]["config"]["token"]["method"] == "draft_model"
    again = load_run_record(path)
    assert again == rec
    assert [r.model_dump() for r in compare(again)] == [r.model_dump() for r in compare(rec)]


@pytest.mark.parametrize(
    "where",
    ["", "settings", "configs.1", "configs.1.config", "configs.1.config.verifier",
     "configs.1.totals", "configs.1.problems.0", "configs.1.problems.0.steps.0"],
)
def test_an_unknown_key_is_rejected_naming_the_field(tmp_path, where: str) -> None:
    from specmodel.formats.jsonio import write_json_atomic

    data = json.loads(write_json_atomic(load_run_record(_v1_file(tmp_path)),
                                        tmp_path / "v2.json").read_text())
    node = data
    for part in filter(None, where.split(".")):
        node = node[int(part)] if part.isdigit() else node[part]
    node["colour"] = 1
    dotted = f"{where}.colour" if where else "colour"
    with pytest.raises(SpecmodelError, match=rf"run.json: {re.escape(dotted)}: unknown field"):
        load_run_record(_write(tmp_path, data))


def test_a_version_1_config_with_an_unknown_key_names_it(tmp_path) -> None:
    data = _record([{**_config("target", "sync", 1, 1, 10.0),
                     "config": {"mode": "sync", "k1": 1, "k2": 1, "colour": "red"}}])
    with pytest.raises(SpecmodelError, match=r"configs\.0\.config: unknown field 'colour'"):
        load_run_record(_write(tmp_path, data))


def test_the_committed_run_records_load(tmp_path) -> None:
    from pathlib import Path

    results = Path(__file__).resolve().parents[3] / "benchmarks" / "results"
    records = [p for p in sorted(results.glob("*.json"))
               if '"specmodel-run"' in p.read_text(encoding="utf-8")[:200000]]
    assert records
    for p in records:
        data = json.loads(p.read_text(encoding="utf-8"))
        data.pop("calibration", None)  # the calibration format is tested on its own
        rec = load_run_record(_write(tmp_path, data))
        assert [c.label for c in rec.configs] == [c["label"] for c in data["configs"]]
        for c, raw in zip(rec.configs, data["configs"], strict=True):
            assert c.config.label == c.label
            assert c.totals.tokens_per_second == raw["totals"]["tokens_per_second"]


# --- consistency on load ------------------------------------------------------------


def _good_configs():
    return [_config("target", "sync", 1, 1, 10.0), _config("token k2=2", "sync", 1, 2, 12.0)]


@pytest.mark.parametrize(
    ("patch", "match"),
    [
        # a stored rate that output_tokens / seconds contradicts (the 183021× speedup)
        (lambda c: c[1]["totals"].update(tokens_per_second=1830210.0),
         r"configs\.1\.totals\.tokens_per_second: 1830210\.0 disagrees with output_tokens"),
        (lambda c: c[1]["totals"].update(tokens_per_second=12.0 * (1 + 1e-5)),
         r"configs\.1\.totals\.tokens_per_second"),
        (lambda c: c[1].update(label="target"), r"configs\.1\.label: 'target' is duplicated"),
        (lambda c: c[1]["config"].update(k1=10**9),
         r"configs\.1\.label: 'token k2=2' contradicts its config, whose label is "
         r"'sync k1=1000000000 k2=2'"),
        (lambda c: c[0].update(label="token k2=1"),
         r"configs\.0\.label: 'token k2=1' contradicts its config"),
        (lambda c: c[1]["totals"].update(seconds=0.0), r"configs\.1\.totals\.seconds"),
    ],
)
def test_inconsistent_records_name_the_file_and_field(tmp_path, patch, match) -> None:
    configs = _good_configs()
    patch(configs)
    with pytest.raises(SpecmodelError, match=r"run\.json: " + match) as err:
        load_run_record(_write(tmp_path, _record(configs)))
    assert "\n" not in str(err.value)


def test_rounding_of_the_rate_is_accepted(tmp_path) -> None:
    configs = _good_configs()
    configs[1]["totals"]["tokens_per_second"] = 12.0 * (1 + 1e-9)
    assert len(load_run_record(_write(tmp_path, _record(configs))).configs) == 2


@pytest.mark.parametrize(
    ("patch", "match"),
    [
        (lambda d: d["configs"][1]["totals"].update(seconds="10.0"),
         r"configs\.1\.totals\.seconds: Input should be a valid number"),
        (lambda d: d["configs"][1]["totals"].update(output_tokens="120"),
         r"configs\.1\.totals\.output_tokens: Input should be a valid integer"),
        (lambda d: d["configs"][1]["totals"].update(output_tokens=120.0),
         r"configs\.1\.totals\.output_tokens: Input should be a valid integer"),
        (lambda d: d.pop("schema_version"), r"schema_version: field required"),
        (lambda d: d["calibration"].pop("schema_version"),
         r"calibration: schema_version: field required"),
        (lambda d: d["calibration"]["step"].update(verifier_cost=float("inf")),
         r"not valid JSON: Infinity is not a JSON number"),
        (lambda d: d["calibration"]["step"].update(alpha1="0.5"),
         r"calibration\.step\.alpha1: Input should be a valid number"),
    ],
)
def test_strict_types_and_required_version(tmp_path, patch, match) -> None:
    data = _record(_good_configs())
    patch(data)
    p = tmp_path / "run.json"
    p.write_text(json.dumps(data))
    with pytest.raises(SpecmodelError, match=match) as err:
        load_run_record(p)
    assert str(p) in str(err.value) and "\n" not in str(err.value)


def test_a_missing_baseline_is_refused_only_when_required(tmp_path) -> None:
    """``decode --no-baseline`` writes records without the baseline: they load; a reader
    that needs the baseline asks for it."""
    path = _write(tmp_path, _record(_good_configs()[1:]))
    assert [c.label for c in load_run_record(path).configs] == ["token k2=2"]
    with pytest.raises(SpecmodelError, match=r"run\.json: baseline: 'target' is not the "
                                             r"label of any configuration"):
        load_run_record(path, require_baseline=True)


def test_engine_costs_timed_another_way_are_named() -> None:
    """A run on the engine the calibration's engine costs priced, on another device,
    dtype or decode path, is named; what either side leaves unsaid is not checked."""
    from specmodel.prediction import calibration_mismatches

    record = load_run_record(Path(__file__).resolve().parents[3] / "benchmarks" / "results"
                             / "heldout_05b_s3_round1.run.json")
    costs = record.calibration.engine_costs
    assert costs is not None and record.settings.engine == costs.engine == "transformers"
    assert calibration_mismatches(record) == []  # written before either said how it ran
    eager = "transformers generate, eager (dynamic KV cache) on cpu"
    compiled = ("transformers generate, static KV cache, decoding forwards compiled by "
                "torch.compile (reduce-overhead, inductor on the CPU) on cpu; calls with "
                "token speculation eager (dynamic KV cache)")
    cal = record.calibration.model_copy(update={"engine_costs": costs.model_copy(
        update={"execution": eager})})
    run = record.model_copy(update={"settings": record.settings.model_copy(update={
        "device": "cpu", "dtype": costs.dtype, "execution": compiled})})
    assert calibration_mismatches(run, cal) == [
        f"engine costs: the calibration timed execution {eager}, the run used {compiled}"]
    run = run.model_copy(update={"settings": run.settings.model_copy(update={
        "device": "cuda", "execution": eager})})
    assert calibration_mismatches(run, cal) == [
        "engine costs: the calibration timed device cpu, the run used cuda"]
    synthetic = run.model_copy(update={"settings": run.settings.model_copy(update={
        "engine": "synthetic"})})
    assert calibration_mismatches(synthetic, cal) == []  # its costs are not engine_costs'


def test_engine_costs_timed_on_another_cpu_are_named() -> None:
    """A CPU run priced by engine costs timed on another CPU is named: the phase's own
    machine where it recorded one, else (older files) the provenance's."""
    from specmodel.formats.calibration import MachineDetails
    from specmodel.prediction import calibration_mismatches

    record = load_run_record(Path(__file__).resolve().parents[3] / "benchmarks" / "results"
                             / "heldout_05b_s3_round1.run.json")
    cal = record.calibration
    assert cal.phase_settings("engine_costs").machine is None  # before phases recorded it
    here = cal.provenance.settings.machine_details.cpu
    assert record.machine.cpu == here and calibration_mismatches(record) == []
    elsewhere = record.model_copy(update={"machine": record.machine.model_copy(
        update={"cpu": "Intel Xeon Processor"})})
    assert calibration_mismatches(elsewhere) == [
        f"engine costs: the calibration timed them on {here}, the run ran on Intel Xeon "
        "Processor (another CPU prices batches and passes differently: profile "
        "engine-costs there)"]
    settings = cal.provenance.settings
    phase = cal.phase_settings("engine_costs").model_copy(update={"machine": MachineDetails(
        cpu="Intel Xeon Processor", platform="p", python="3.11")})
    timed_there = cal.model_copy(update={"provenance": cal.provenance.model_copy(update={
        "settings": settings.model_copy(update={"phases": settings.phases.model_copy(
            update={"engine_costs": phase})})})})
    assert calibration_mismatches(elsewhere, timed_there) == []  # the phase's own machine


def test_engine_costs_timed_on_another_gpu_are_named() -> None:
    """A GPU run priced by engine costs timed on another GPU is named (the host CPUs are
    not compared: the GPU did the work); costs timed on the CPU for a run on cuda are the
    device mismatch."""
    from specmodel.formats.calibration import MachineDetails
    from specmodel.prediction import calibration_mismatches

    record = load_run_record(Path(__file__).resolve().parents[3] / "benchmarks" / "results"
                             / "heldout_05b_s3_round1.run.json")
    cal = record.calibration
    settings = cal.provenance.settings

    def costs_on(gpu: str | None, device: str = "cuda"):
        phase = cal.phase_settings("engine_costs").model_copy(update={
            "device": device, "machine": MachineDetails(cpu="AMD EPYC", platform="p",
                                                        python="3.11", gpu=gpu)})
        return cal.model_copy(update={
            "engine_costs": cal.engine_costs.model_copy(update={"device": device}),
            "provenance": cal.provenance.model_copy(update={
                "settings": settings.model_copy(update={"phases": settings.phases.model_copy(
                    update={"engine_costs": phase})})})})

    run = record.model_copy(update={
        "settings": record.settings.model_copy(update={"device": "cuda"}),
        "machine": record.machine.model_copy(update={"cpu": "Intel Xeon", "gpu": "NVIDIA H200"})})
    assert calibration_mismatches(run, costs_on("NVIDIA H200")) == []
    assert calibration_mismatches(run, costs_on("NVIDIA H100 80GB HBM3")) == [
        "engine costs: the calibration timed them on NVIDIA H100 80GB HBM3, the run ran on "
        "NVIDIA H200 (another GPU prices batches and passes differently: profile "
        "engine-costs there)"]
    assert calibration_mismatches(run, costs_on(None)) == []  # a GPU not recorded
    assert calibration_mismatches(run, costs_on(None, "cpu")) == [
        "engine costs: the calibration timed device cpu, the run used cuda"]
