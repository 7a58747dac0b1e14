"""Calibration files: validation, atomic writes, presets and their derivation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specmodel.closedform.step_level import f_async
from specmodel.closedform.token_level import g_token
from specmodel.errors import SpecmodelError
from specmodel.formats.calibration import (
    DEFAULT_PRESET,
    READABLE_SCHEMA_VERSIONS,
    SCHEMA_VERSION,
    Calibration,
    MeasurementSettings,
    PaperDerivation,
    list_presets,
    load_calibration,
    load_preset,
    resolve_calibration,
    save_calibration,
)
from specmodel.formats.paper_presets import PAPER_ROWS, derive_paper_preset


def _minimal() -> dict:
    return {
        "schema_version": 1,
        "name": "t",
        "step": {"alpha1": 0.6, "c1": 0.2},
        "token": {"alpha2": 0.7, "c2": 0.05},
        "provenance": {"source": "user", "description": "test"},
    }


def test_round_trip_and_atomic_write(tmp_path) -> None:
    cal = Calibration.model_validate(
        {**_minimal(), "batch_cost": {"points": [{"batch": 1, "time": 0.1},
                                                 {"batch": 4, "time": 0.2}]}}
    )
    path = save_calibration(cal, tmp_path / "sub" / "cal.json")
    assert load_calibration(path) == cal
    assert [p.name for p in path.parent.iterdir()] == ["cal.json"]  # no temp file left
    curve = cal.batch_cost_curve()
    assert curve.relative(1, 4) == pytest.approx(2.0)


@pytest.mark.parametrize(
    "patch,field",
    [
        ({"step": {"alpha1": 1.2, "c1": 0.2}}, "step.alpha1"),
        ({"token": {"alpha2": 0.7, "c2": -0.1}}, "token.c2"),
        ({"token": {"alpha2": 0.7, "c2": 0.1, "method": "lookahead"}}, "token.method"),
        ({"schema_version": 7}, "schema_version"),
        ({"surprise": 1}, "surprise"),
        ({"batch_cost": {"points": [{"batch": 4, "time": 1.0}, {"batch": 2, "time": 1.0}]}},
         "batch_cost.points"),
    ],
)
def test_invalid_files_name_the_field(tmp_path, patch, field) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**_minimal(), **patch}))
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        load_calibration(path)


def test_presets_load_and_default_exists() -> None:
    names = list_presets()
    assert DEFAULT_PRESET in names and len(names) >= 3
    for name in names:
        cal = load_preset(name)
        assert cal.name == name
        if name.startswith("lr-paper-"):
            assert cal.provenance.source == "paper"
            assert "Table 1" in cal.provenance.description
        else:  # measured on real models: says on what, when, with which versions
            prov = cal.provenance
            assert prov.source == "measured" and prov.machine and prov.date and prov.engine
            assert {"target", "draft", "verifier"} <= set(prov.models)
            assert isinstance(prov.settings, MeasurementSettings)
            assert set(prov.settings.phases.finished()) == {"batch_cost", "steps", "tokens"}
            assert prov.settings.versions["transformers"]
            assert cal.batch_cost is not None and cal.token.acceptance_by_position
    assert resolve_calibration().name == DEFAULT_PRESET
    with pytest.raises(ValueError, match="exclusive"):
        resolve_calibration("x.json", DEFAULT_PRESET)


@pytest.mark.parametrize("row", PAPER_ROWS, ids=lambda r: r.name)
def test_paper_presets_reproduce_the_reported_speedups(row) -> None:
    cal = load_preset(row.name)
    assert cal.model_dump(exclude_none=True) == Calibration.model_validate(
        derive_paper_preset(row)
    ).model_dump(exclude_none=True)
    # The fitted values reproduce the two columns they were fitted to.
    assert g_token(cal.token.alpha2, cal.token.c2, 9) == pytest.approx(row.sd_speedup, rel=1e-5)
    assert f_async(cal.step.alpha1, cal.step.c1, 6) == pytest.approx(row.lr_speedup, rel=1e-5)


def test_save_is_atomic_when_the_rename_fails(tmp_path, monkeypatch) -> None:
    import os

    path = tmp_path / "cal.json"
    first = Calibration.model_validate(_minimal())
    save_calibration(first, path)
    before = path.read_text()

    def broken_replace(src, dst):
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", broken_replace)
    second = Calibration.model_validate({**_minimal(), "name": "other"})
    with pytest.raises(SpecmodelError, match=r"cannot write .*cal\.json: disk gone"):
        save_calibration(second, path)
    assert path.read_text() == before  # the old file is intact
    assert [p.name for p in tmp_path.iterdir()] == ["cal.json"]  # and no temp file remains


def test_saved_file_has_ordinary_permissions(tmp_path) -> None:
    import os
    import stat

    old = os.umask(0o022)
    try:
        path = save_calibration(Calibration.model_validate(_minimal()), tmp_path / "c.json")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644  # not mkstemp's 0600


def test_missing_and_corrupt_files_name_the_file(tmp_path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(ValueError, match=r"nope\.json.*does not exist"):
        load_calibration(missing)
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2")
    with pytest.raises(ValueError, match=r"bad\.json is not valid JSON"):
        load_calibration(bad)
    with pytest.raises(ValueError, match="preset must be one of"):
        load_preset("no-such-preset")


def test_rates_and_optional_fields_are_constrained() -> None:
    from pydantic import ValidationError

    data = _minimal()
    data["step"] = {**data["step"], "acceptance_by_position": [0.7, 1.0]}
    with pytest.raises(ValidationError, match="acceptance_by_position"):
        Calibration.model_validate(data)
    data = _minimal()
    data["token"] = {**data["token"], "prompt_lookup_min": 0}
    with pytest.raises(ValidationError, match="prompt_lookup_min"):
        Calibration.model_validate(data)
    data = _minimal()
    data["provenance"] = {"source": "guess", "description": "x"}
    with pytest.raises(ValidationError, match=r"provenance\.source"):
        Calibration.model_validate(data)


@pytest.mark.parametrize("row", PAPER_ROWS, ids=lambda r: r.name)
def test_paper_c1_is_the_draft_limited_closed_form(row) -> None:
    from specmodel.closedform.step_level import async_knee, f_sync

    cal = load_preset(row.name)
    settings = cal.provenance.settings
    # The async fit lies where f_async = S1 (depth-independent), so c1 has a closed form.
    assert isinstance(settings, PaperDerivation)
    assert async_knee(cal.step.c1) <= 6 == settings.c1_k1
    closed = (1 / row.lr_speedup - (1 - row.alpha1)) / row.alpha1
    assert cal.step.c1 == pytest.approx(closed, abs=1e-6)
    assert f_async(cal.step.alpha1, cal.step.c1, 3) == pytest.approx(row.lr_speedup, rel=1e-5)
    # The recorded sync reading (Algorithm 1, 6 drafts, k1 = 7) reproduces LR alone too.
    c1_sync = settings.c1_if_sync_k1_7
    assert f_sync(row.alpha1, c1_sync, 7) == pytest.approx(row.lr_speedup, rel=1e-5)
    assert c1_sync < cal.step.c1
    # With c2 = 0 and alpha2^9 negligible, alpha2 = 1 - 1/SD.
    assert cal.token.alpha2 == pytest.approx(1 - 1 / row.sd_speedup, abs=1e-4)


def test_preset_files_are_readable_package_data() -> None:
    import stat
    from importlib import resources

    for name in list_presets():
        f = resources.files("specmodel") / "presets" / f"{name}.json"
        mode = stat.S_IMODE(Path(str(f)).stat().st_mode)
        assert mode & 0o044 == 0o044, f"{name}.json is not readable by group/others"
        assert json.loads(f.read_text(encoding="utf-8"))["schema_version"] in (1, 2)


MEASURED = "measured-qwen2.5-coder-0.5b-smollm2-135m"


@pytest.mark.parametrize("name", list_presets())
def test_presets_round_trip_byte_for_byte(tmp_path, name) -> None:
    from importlib import resources

    original = (resources.files("specmodel") / "presets" / f"{name}.json").read_text("utf-8")
    path = save_calibration(load_preset(name), tmp_path / f"{name}.json")
    assert path.read_text(encoding="utf-8") == original


def test_measured_settings_are_typed() -> None:
    settings = load_preset(MEASURED).provenance.settings
    assert isinstance(settings, MeasurementSettings)
    phases = settings.phases
    assert phases.batch_cost.widths == [1, 2, 4, 8] and phases.batch_cost.engine == "transformers"
    assert phases.steps.pairs == 40 and phases.steps.accepted == 4
    assert phases.steps.alpha1_ci95 is None  # written before the interval was recorded
    counters = phases.tokens.measurement.counters
    assert counters.num_accepted_tokens == sum(counters.num_accepted_tokens_per_pos) == 198
    assert settings.base.source == "paper" and settings.machine_details.cores == 2


def test_typed_settings_round_trip(tmp_path) -> None:
    data = json.loads(json.dumps(load_preset(MEASURED).model_dump(mode="json")))
    data["provenance"]["settings"]["phases"]["steps"]["alpha1_ci95"] = [0.04, 0.23]
    data["provenance"]["settings"]["phases"]["steps"]["c1_stderr"] = 0.038
    cal = Calibration.model_validate(data)
    again = load_calibration(save_calibration(cal, tmp_path / "c.json"))
    assert again == cal and again.provenance.settings.phases.steps.alpha1_ci95 == (0.04, 0.23)
    # a hand-written calibration has no settings: they stay empty on disk
    minimal = load_calibration(save_calibration(Calibration.model_validate(_minimal()),
                                                tmp_path / "m.json"))
    assert minimal.provenance.settings == MeasurementSettings()
    assert json.loads((tmp_path / "m.json").read_text())["provenance"]["settings"] == {}


@pytest.mark.parametrize(
    "where,key",
    [
        ((), "threads"),
        (("phases",), "warmup"),
        (("phases", "steps"), "temperature"),
        (("phases", "tokens", "measurement"), "gpu"),
        (("phases", "tokens", "measurement", "counters"), "num_rejected"),
    ],
)
def test_an_unknown_settings_key_is_rejected_naming_it(tmp_path, where, key) -> None:
    data = json.loads(json.dumps(load_preset(MEASURED).model_dump(mode="json")))
    node = data["provenance"]["settings"]
    for step in where:
        node = node[step]
    node[key] = 1
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=rf"provenance\.settings\..*{key}: unknown field"):
        load_calibration(path)


def test_paper_derivation_is_checked_too(tmp_path) -> None:
    data = json.loads(json.dumps(load_preset(DEFAULT_PRESET).model_dump(mode="json")))
    data["provenance"]["settings"]["reported_speedups"]["EAGLE"] = 2.0
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"provenance\.settings\.paper\.reported_speedups"):
        load_calibration(path)
    data["provenance"]["settings"]["reported_speedups"].pop("EAGLE")
    data["provenance"]["settings"]["lr_mode_assumed"] = "guess"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="lr_mode_assumed"):
        load_calibration(path)


@pytest.mark.parametrize(
    "phase,field,value",
    [
        ("batch_cost", "widths", []),
        ("batch_cost", "engine", "tensorrt"),
        ("steps", "accepted", 41),
        ("steps", "threads", 0),
        ("steps", "date", "yesterday"),
        ("tokens", "seed", -1),
    ],
)
def test_phase_settings_are_constrained(tmp_path, phase, field, value) -> None:
    data = json.loads(json.dumps(load_preset(MEASURED).model_dump(mode="json")))
    data["provenance"]["settings"]["phases"][phase][field] = value
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=rf"provenance\.settings\.measurement\.phases\.{phase}"):
        load_calibration(path)


def test_calibrations_of_the_first_profile_commands_still_load() -> None:
    """The calibration inside the committed decoder run (2026-11-22) carries the first
    single-phase profile commands' sections inside a paper derivation."""
    import json
    from pathlib import Path

    from specmodel.formats.calibration import Calibration, LegacyPhaseSettings

    run = Path(__file__).resolve().parents[3] / "benchmarks" / "results" / "decoder_run.json"
    cal = Calibration.model_validate(json.loads(run.read_text())["calibration"])
    settings = cal.provenance.settings
    assert isinstance(settings, LegacyPhaseSettings)
    assert settings.steps is not None and settings.steps.delimiter == "\n"
    assert settings.tokens is not None and settings.tokens.counters["num_drafts"] == 251
    bad = json.loads(run.read_text())["calibration"]
    bad["provenance"]["settings"]["steps"]["sed"] = 1
    with pytest.raises(ValueError, match="sed"):
        Calibration.model_validate(bad)


@pytest.mark.parametrize(
    ("patch", "match"),
    [
        ({"step": {"alpha1": "0.6", "c1": 0.2}},
         r"step\.alpha1: Input should be a valid number"),
        ({"token": {"alpha2": 0.7, "c2": 0.05, "samples": "12"}},
         r"token\.samples: Input should be a valid integer"),
        ({"token": {"alpha2": 0.7, "c2": 0.05, "samples": 12.0}},
         r"token\.samples: Input should be a valid integer"),
        ({"step": {"alpha1": 0.6, "c1": 0.2, "verifier_cost": 1e308 * 10}},
         r"not valid JSON: Infinity is not a JSON number"),
        ({"schema_version": "1"}, r"schema_version: Input should be a valid integer"),
    ],
)
def test_files_are_strict_and_finite(tmp_path, patch, match) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**_minimal(), **patch}))
    with pytest.raises(SpecmodelError, match=match) as err:
        load_calibration(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_a_missing_schema_version_is_an_error_naming_it(tmp_path) -> None:
    data = _minimal()
    del data["schema_version"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    with pytest.raises(SpecmodelError, match=r"old\.json is invalid: schema_version: field "
                                             r"required"):
        load_calibration(path)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_numbers_say_finite(value) -> None:
    for section, field in (("step", "alpha1"), ("step", "verifier_cost"), ("token", "c2")):
        data = _minimal()
        data[section] = {**data[section], field: value}
        with pytest.raises(ValueError, match="finite number") as err:
            Calibration.model_validate(data)
        assert "less than" not in str(err.value)


def test_every_preset_carries_its_schema_version() -> None:
    from importlib import resources

    for name in list_presets():
        text = (resources.files("specmodel") / "presets" / f"{name}.json").read_text()
        assert json.loads(text)["schema_version"] in READABLE_SCHEMA_VERSIONS
        assert load_preset(name).schema_version == SCHEMA_VERSION


def test_a_version_1_file_reads_as_version_2_without_engine_costs(tmp_path) -> None:
    data = _minimal()
    assert data["schema_version"] == 1
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(data))
    cal = load_calibration(path)
    assert cal.schema_version == 2 and cal.engine_costs is None
    assert any(g.startswith("engine call costs") and "not measured" in g
               for g in cal.decoder_gaps())
    out = save_calibration(cal, tmp_path / "v2.json")
    assert json.loads(out.read_text())["schema_version"] == 2


def test_an_unknown_schema_version_names_the_readable_ones() -> None:
    data = {**_minimal(), "schema_version": 3}
    with pytest.raises(ValueError, match=r"schema_version 3 is not supported \(this "
                                         r"specmodel reads 1 and 2\)"):
        Calibration.model_validate(data)


def test_a_bare_slowdown_loads_as_a_measurement_of_one_and_a_bad_one_is_refused() -> None:
    """Calibrations before 2026-11-24 hold the slowdowns beside the other model as bare
    numbers measured beside a loop; they load as n = 1 without a spread."""
    from specmodel.formats.calibration import EngineCosts

    model = {"model": "m", "points": [{"batch": 1, "context": 8, "per_token": 0.1,
                                       "intercept": 0.0, "n": 1}],
             "call_overhead": {"value": 0.0, "n": 1},
             "prefill_per_token": {"value": 0.0, "n": 1}}
    old = EngineCosts.model_validate({
        "engine": "transformers", "device": "cpu", "dtype": "float32", "threads": 1,
        "tokens": [4, 32], "target": {**model, "concurrent_slowdown": 1.2,
                                      "speculative_slowdown": 1.3}})
    assert old.contention_method == "beside-a-loop"
    t = old.target
    assert (t.concurrent_slowdown.value, t.concurrent_slowdown.n,
            t.concurrent_slowdown.stderr) == (1.2, 1, None)
    assert t.speculative_slowdown.value == 1.3
    again = EngineCosts.model_validate_json(old.model_dump_json())
    assert again == old
    for bad, says in ((0.0, "slowdown must be a finite number > 0"),
                      (-1.0, "slowdown must be a finite number > 0"),
                      ({"value": float("inf"), "n": 2}, "finite number")):
        with pytest.raises(ValueError, match=says):
            EngineCosts.model_validate({
                "engine": "transformers", "device": "cpu", "dtype": "float32",
                "threads": 1, "tokens": [4, 32], "target": {**model,
                                                            "concurrent_slowdown": bad}})


def test_passes_counted_in_the_grid_are_a_gap_and_those_counted_beside_them_are_not() -> None:
    """The Dec-03 Xeon calibration counted its passes in the grid's T(1, L) (a file from
    before the marker: it says nothing); the copy whose passes `profile passes` measured
    again counts them in plain calls' forwards, and the cost model says which."""
    from pathlib import Path

    from specmodel.decodermodel.costs import CostModel

    results = Path(__file__).resolve().parents[3] / "benchmarks" / "results"
    grid = load_calibration(results / "heldout_15b_calibration30_xeon1203.json")
    beside = load_calibration(results / "heldout_15b_calibration30_xeon1203_passes.json")
    assert grid.engine_costs.target.passes_counted_in is None
    assert beside.engine_costs.target.passes_counted_in == "plain-calls"
    assert beside.engine_costs.draft.passes_counted_in is None  # no passes measured
    said = "prompt-lookup passes: counted in the grid's T(1, L)"
    assert any(g.startswith(said) for g in grid.decoder_gaps())
    assert not any(g.startswith("prompt-lookup passes") for g in beside.decoder_gaps())
    assert CostModel.from_calibration(grid).sources["pass_multipliers"].endswith(
        "counted in the grid's T(1, L))")
    assert CostModel.from_calibration(beside).sources["pass_multipliers"].endswith(
        "counted in forwards timed beside them)")
    assert beside.engine_costs.target.speculative_passes[3].value > (
        grid.engine_costs.target.speculative_passes[3].value)
