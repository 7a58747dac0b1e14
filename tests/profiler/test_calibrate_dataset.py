"""``--dataset`` of the profile phases: the resume keys, the settings, the CLI (no models)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import profiler.calibrate as calibrate
from profiler.calibrate import Recorder
from profiler.problems import Problem
from profiler.step_profile import RECORD_KIND, check_record, read_record
from profiler.verifiers import ExactMatch
from specmodel.formats.calibration import (
    EngineCostsSettings,
    StepsSettings,
    TokensSettings,
    load_calibration,
)
from tests.profiler.test_calibrate import MEASUREMENT, RUN, ScriptedEngine
from tests.profiler.test_calibrate import fake_phases as fake_phases  # a fixture

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
OLD_PAIRS = RESULTS / "heldout_05b_profile_run_xeon.pairs.jsonl"
"""A committed pairs record, written before the dataset was a setting."""
OLD_CALIBRATION = RESULTS / "heldout_05b_profile_run_xeon.json"
"""A committed calibration with steps, tokens and engine_costs phases, from before."""

STEPS = dict(target="tgt", draft="drf", verifier="exact", threshold=0.9, judge_model="judge",
             problems=2, seed=0, steps_per_problem=3, max_step_tokens=48, threads=1,
             delimiter="\n\n")


def _old_steps_options(key: dict) -> dict:
    """steps_key's options for the settings an old record's header key holds."""
    return dict(target=key["target"], draft=key["draft"], verifier=key["verifier_kind"],
                threshold=key["threshold"], judge_model=key["judge_model"] or "judge",
                problems=key["problems"], seed=key["seed"],
                steps_per_problem=key["steps_per_problem"],
                max_step_tokens=key["max_step_tokens"], threads=key["threads"],
                delimiter=key["delimiter"], branches=key.get("branches") or 1,
                branch_temperature=key.get("branch_temperature") or 0.8)


def test_the_default_dataset_leaves_every_key_as_it_was() -> None:
    kw = dict(contexts=[64], widths=[1, 2], tokens=[4, 16], repeats=1, threads=1,
              target="tgt", draft=None)
    for key, named in (
            (calibrate.steps_key, STEPS),
            (calibrate.tokens_key, dict(model="m", engine="transformers", problems=2, seed=0,
                                        max_tokens=8, num_speculative_tokens=2,
                                        prompt_lookup_min=1, prompt_lookup_max=3,
                                        threads=1)),
            (calibrate.engine_costs_key, {**kw, "speculation_k2": [2, 3]})):
        default = key(**named)
        assert "dataset" not in default
        assert key(**named, dataset="gsm_symbolic") == default
        other = key(**named, dataset="leg_counting")
        assert other == {**default, "dataset": "leg_counting"}
    # without speculative step calls no problem is loaded: the dataset is not a setting
    assert (calibrate.engine_costs_key(**kw, dataset="leg_counting")
            == calibrate.engine_costs_key(**kw))


def test_an_old_pairs_record_resumes_at_the_default_dataset_only(monkeypatch,
                                                                  tmp_path) -> None:
    """The committed record's header key (no dataset) is what steps_key gives today for
    its settings at the default dataset; another dataset is refused naming it."""
    old = read_record(OLD_PAIRS).key
    assert old is not None and "dataset" not in old
    monkeypatch.setattr(calibrate, "key_versions", lambda engine="transformers": old["versions"])
    options = _old_steps_options(old)
    assert calibrate.steps_key(**options) == old
    record = tmp_path / "old.pairs.jsonl"
    shutil.copyfile(OLD_PAIRS, record)
    assert check_record(record, calibrate.steps_key(**options)).pairs
    with pytest.raises(ValueError, match="dataset = 'gsm_symbolic', not 'leg_counting'"):
        check_record(record, calibrate.steps_key(**options, dataset="leg_counting"))


def test_a_record_of_another_dataset_is_not_resumed_at_the_default(tmp_path) -> None:
    record = tmp_path / "r.jsonl"
    other = calibrate.steps_key(**STEPS, dataset="leg_counting")
    record.write_text(json.dumps({"kind": RECORD_KIND, "version": 1, "key": other}) + "\n")
    assert check_record(record, other).key == other
    with pytest.raises(ValueError, match="dataset = 'leg_counting', not 'gsm_symbolic'"):
        check_record(record, calibrate.steps_key(**STEPS))


def test_old_settings_load_as_gsm_symbolic_and_resume_at_it_only(monkeypatch,
                                                                  tmp_path) -> None:
    cal = load_calibration(OLD_CALIBRATION)
    phases = cal.provenance.settings.phases
    raw = json.loads(OLD_CALIBRATION.read_text())["provenance"]["settings"]["phases"]
    for name, kind in (("steps", StepsSettings), ("tokens", TokensSettings),
                       ("engine_costs", EngineCostsSettings)):
        assert "dataset" not in raw[name]
        assert getattr(phases, name).dataset == "gsm_symbolic"
        settings = kind.model_validate(raw[name])
        assert settings.dataset == "gsm_symbolic"
        # the default is not written (old files are written back as they were), another is
        assert "dataset" not in json.loads(settings.model_dump_json())
        other = settings.model_copy(update={"dataset": "leg_counting"})
        assert json.loads(other.model_dump_json())["dataset"] == "leg_counting"
        assert kind.model_validate_json(other.model_dump_json()) == other
    tok, steps = phases.tokens, phases.steps
    tokens = dict(model=tok.model, engine=tok.engine, problems=tok.problems, seed=tok.seed,
                  max_tokens=tok.max_tokens, num_speculative_tokens=tok.num_speculative_tokens,
                  prompt_lookup_min=tok.prompt_lookup_min,
                  prompt_lookup_max=tok.prompt_lookup_max, threads=tok.threads)
    out = tmp_path / "cal.json"
    shutil.copyfile(OLD_CALIBRATION, out)
    with Recorder(out, cal, resume=True) as rec:
        for phase, key, options in (("tokens", calibrate.tokens_key, tokens),
                                    ("steps", calibrate.steps_key,
                                     _old_steps_options(steps.model_dump()))):
            versions = getattr(phases, phase).versions
            monkeypatch.setattr(calibrate, "key_versions",
                                lambda engine="transformers", v=versions: v)
            assert rec.finished(phase, **key(**options))
            with pytest.raises(ValueError,
                               match="dataset = 'gsm_symbolic', not 'time_intervals'"):
                rec.finished(phase, **key(**options, dataset="time_intervals"))


@pytest.mark.parametrize("command", [
    [*RUN],
    ["profile", "steps", "--target", "tgt", "--draft", "drf", "--verifier", "exact"],
    ["profile", "tokens", "--model", "tgt", "--engine", "transformers"],
    ["profile", "engine-costs", "--target", "tgt"],
])
def test_an_unknown_dataset_is_one_line_before_any_model_loads(
        command, fake_phases, monkeypatch, tmp_path, capsys) -> None:
    import profiler.packs
    from cli.main import main

    def no_model(name, *_, **__):
        raise AssertionError(f"model {name} looked up")

    monkeypatch.setattr(profiler.packs, "check_model", no_model)
    monkeypatch.setattr(profiler.packs, "resolve_model", no_model)
    out = tmp_path / "x.json"
    assert main([*command, "-o", str(out), "--dataset", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--dataset 'nope' is not a reasoning-gym dataset" in err
    assert fake_phases == [] and not out.exists()


def test_profile_run_hands_the_dataset_to_every_phase_and_resumes_by_it(
        fake_phases, monkeypatch, tmp_path, capsys) -> None:
    from cli.main import main

    got: dict[str, str] = {}

    def seeing(name: str):
        phase = getattr(calibrate, name)

        def seen(**options):
            got[name] = options["dataset"]
            return phase(**options)
        return seen

    for name in ("steps_phase", "tokens_phase", "engine_costs_phase"):
        monkeypatch.setattr(calibrate, name, seeing(name))
    out = tmp_path / "cal.json"
    assert main([*RUN, "-o", str(out), "--dataset", "leg_counting"]) == 0
    assert got == dict.fromkeys(("steps_phase", "tokens_phase", "engine_costs_phase"),
                                "leg_counting")
    # the fakes record the default dataset: a resume at another one is refused, naming it
    capsys.readouterr()
    assert main([*RUN, "-o", str(out), "--resume", "--dataset", "leg_counting"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "dataset = 'gsm_symbolic', not 'leg_counting'" in err
    assert main([*RUN, "-o", str(out), "--resume"]) == 0


def _fake_loading(monkeypatch) -> list[tuple]:
    """load_problems replaced: records (n, seed, dataset) and gives ``n`` tiny problems."""
    import profiler.problems

    calls: list[tuple] = []

    def load_problems(n, seed=0, dataset="gsm_symbolic"):
        calls.append((n, seed, dataset))
        return [Problem(i, f"q{i}", "1", "#### 1", dataset=dataset) for i in range(n)]

    monkeypatch.setattr(profiler.problems, "load_problems", load_problems)
    return calls


def test_the_steps_phase_measures_and_records_the_datasets_problems(monkeypatch,
                                                                     tmp_path) -> None:
    import profiler.engines
    import profiler.packs
    import profiler.verifiers

    calls = _fake_loading(monkeypatch)
    scripts = {"tgt": ["a <s>", "#### 1 <s>"], "drf": ["a <s>", "#### 2 <s>"]}
    monkeypatch.setattr(profiler.packs, "resolve_model", lambda name, cache_dir=None: name)
    seconds = {"tgt": 1.0, "drf": 0.25}
    monkeypatch.setattr(profiler.engines, "HFEngine", lambda model, **_: ScriptedEngine(
        scripts[str(model)], seconds[str(model)]))
    monkeypatch.setattr(profiler.verifiers, "make_verifier", lambda spec, **_: ExactMatch())
    record = tmp_path / "r.pairs.jsonl"
    got = calibrate.steps_phase(**{**STEPS, "problems": 2, "steps_per_problem": 2},
                                record=record, dataset="leg_counting")
    assert calls == [(2, 0, "leg_counting")]
    assert got.settings.dataset == "leg_counting"
    assert "from 2 leg_counting problems (seed 0)" in got.settings.description
    assert read_record(record).key["dataset"] == "leg_counting"
    with pytest.raises(ValueError, match="dataset = 'leg_counting', not 'gsm_symbolic'"):
        calibrate.steps_phase(**{**STEPS, "problems": 2, "steps_per_problem": 2},
                              record=record, resume=True)


def test_the_tokens_phase_decodes_the_datasets_prompts(monkeypatch) -> None:
    import profiler.engines
    import profiler.ngram_replay
    import profiler.packs

    calls = _fake_loading(monkeypatch)
    prompts: list[list[str]] = []
    monkeypatch.setattr(profiler.packs, "resolve_model", lambda name, cache_dir=None: name)
    monkeypatch.setattr(profiler.engines, "HFEngine", lambda model, **_: object())
    monkeypatch.setattr(profiler.ngram_replay, "measure_hf_token_speculation",
                        lambda engine, p, **_: (prompts.append(p), (None, MEASUREMENT))[1])
    got = calibrate.tokens_phase("m", engine="transformers", problems=3, seed=4,
                                 num_speculative_tokens=2, dataset="time_intervals")
    assert calls == [(3, 4, "time_intervals")] and len(prompts[0]) == 3
    assert got.settings.dataset == "time_intervals"
    assert "over 3 time_intervals prompts (seed 4)" in got.settings.description


def test_the_speculative_calls_take_step_prefixes_of_the_dataset(monkeypatch) -> None:
    import profiler.engine_costs

    calls = _fake_loading(monkeypatch)
    monkeypatch.setattr(profiler.engine_costs, "step_prefixes",
                        lambda engine, prompts, **_: [f"{len(prompts)} prompts"])
    assert calibrate._speculation_prefixes(None, 2, 5, 16, dataset="leg_counting") == [
        "2 prompts"]
    assert calls == [(2, 5, "leg_counting")]
    assert "step prefixes of 2 leg_counting problems (seed 5)" in calibrate._passes_how(
        2, 5, "leg_counting")
