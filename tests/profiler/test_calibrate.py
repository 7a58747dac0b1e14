"""Phases into one calibration, progress and resume, with fake engines and phases (no models)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

import profiler.calibrate as calibrate
from profiler.calibrate import PhaseResult, Recorder, check_settings
from profiler.engines import StepBatch, StepOutput
from profiler.problems import Problem
from profiler.step_profile import profile_steps, read_pairs
from profiler.verifiers import ExactMatch
from specmodel.formats.calibration import (
    BatchCost,
    BatchCostPoint,
    BatchCostSettings,
    EngineCallPoint,
    EngineCosts,
    EngineCostsSettings,
    Measurement,
    MeasurementSettings,
    ModelEngineCosts,
    SpecDecodeCounters,
    StepLevel,
    StepsSettings,
    TokenLevel,
    TokenMeasurement,
    TokensSettings,
    load_calibration,
    load_preset,
)
from specmodel.formats.jsonio import timestamp


class ScriptedEngine:
    """Steps from a script: prefix -> the next step is ``steps[number of steps so far]``."""

    name = "transformers"

    def __init__(self, steps: list[str], seconds: float) -> None:
        self.steps = steps
        self.seconds = seconds
        self.calls = 0

    def generate_steps(self, prefixes, max_tokens):
        self.calls += 1
        done = prefixes[0].count("<s>")
        text = self.steps[done] if done < len(self.steps) else ""
        return StepBatch([StepOutput(text, len(text.split()), "stop")], self.seconds)

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def _problems(n: int) -> list[Problem]:
    return [Problem(i, f"q{i}", "1", "#### 1") for i in range(n)]


def test_profile_steps_reports_done_of_total_and_resumes_from_the_record(tmp_path) -> None:
    target = ScriptedEngine(["a <s>", "b <s>", "#### 1 <s>"], 1.0)
    draft = ScriptedEngine(["a <s>", "x <s>", "#### 1 <s>"], 0.25)
    record = tmp_path / "pairs.jsonl"
    calls: list[tuple[int, int, str]] = []
    pairs = profile_steps(target, draft, ExactMatch(), _problems(2), record,
                          steps_per_problem=4, progress=lambda *a: calls.append(a))
    # each problem: 3 target steps, the third ends the answer ("####"); slot 4 is skipped
    assert len(pairs) == 6 and [p.accepted for p in pairs[:3]] == [True, False, True]
    assert [c[:2] for c in calls] == [(1, 8), (2, 8), (3, 8), (4, 8), (5, 8), (6, 8), (7, 8),
                                      (8, 8)]
    assert all(c[1] == 8 for c in calls) and calls[-1][0] == 8
    # interrupted after the first problem's pairs: resume measures only what is missing
    lines = record.read_text().splitlines()
    assert json.loads(lines[0])["key"]["steps_per_problem"] == 4  # the header
    record.write_text("\n".join(lines[:5]) + "\n")
    target.calls = draft.calls = 0
    calls.clear()
    again = profile_steps(target, draft, ExactMatch(), _problems(2), record,
                          steps_per_problem=4, resume=True, progress=lambda *a: calls.append(a))
    assert len(again) == 6 and len(read_pairs(record)) == 6
    assert target.calls == 2 and draft.calls == 2  # problem 1, steps 1 and 2 only
    assert [c[0] for c in calls] == sorted(c[0] for c in calls) and calls[-1][0] == 8
    assert sum("recorded" in c[2] for c in calls) == 4


@pytest.mark.parametrize("name", ["steps_per_problem", "max_step_tokens"])
def test_profile_steps_names_the_bad_parameter(tmp_path, name) -> None:
    eng = ScriptedEngine(["a"], 1.0)
    with pytest.raises(ValueError, match=name):
        profile_steps(eng, eng, ExactMatch(), _problems(1), tmp_path / "r.jsonl", **{name: 0})


def test_check_settings_rejects_names_before_anything_loads() -> None:
    check_settings(verifier="exact", token_engine="vllm", threads=1)
    with pytest.raises(ValueError, match="verifier must be one of exact, embedding, judge"):
        check_settings(verifier="bogus")
    with pytest.raises(ValueError, match="token engine must be one of vllm, transformers"):
        check_settings(token_engine="hf")
    with pytest.raises(ValueError, match="threads must be an integer >= 1"):
        check_settings(threads=0)


STEP = StepLevel(alpha1=0.3, c1=0.25, verifier_cost=0.01, verifier="exact",
                 step_tokens_mean=12.0, step_tokens_histogram={12: 4}, samples=4)
TOKEN = TokenLevel(alpha2=0.4, c2=0.2, method="ngram", acceptance_by_position=[0.5, 0.4],
                   num_speculative_tokens=2, prompt_lookup_min=1, prompt_lookup_max=3)
BATCH = BatchCost(points=[BatchCostPoint(batch=1, time=0.1, stderr=0.001, n=2),
                          BatchCostPoint(batch=2, time=0.15, stderr=0.002, n=2)], unit="s/step")
MEASUREMENT = TokenMeasurement(
    engine="transformers", plain_seconds=2.0, spec_seconds=1.5, outputs_identical=[True],
    counters=SpecDecodeCounters(num_drafts=4, num_draft_tokens=8, num_accepted_tokens=3,
                                num_accepted_tokens_per_pos=[2, 1]),
    prompts=1, max_tokens=8)


ENGINE = EngineCosts(
    engine="transformers", device="cpu", dtype="float32", threads=1, tokens=(4, 16),
    target=ModelEngineCosts(
        model="tgt", points=[EngineCallPoint(batch=b, context=L, per_token=0.1 * b,
                                             intercept=0.05 + 1e-3 * b * L, n=2)
                             for b in (1, 2) for L in (64, 256)],
        call_overhead=Measurement(value=0.05, n=4, stderr=0.001),
        prefill_per_token=Measurement(value=1e-3, n=4, stderr=1e-5),
        concurrent_slowdown=1.2))


def _settings(phase: str, options: dict):
    """The typed settings a real phase would record for these options."""
    common = {"description": f"{phase}: measured.", "date": timestamp()}
    if phase == "batch_cost":
        keys = ("model", "engine", "widths", "tokens", "repeats", "threads")
        return BatchCostSettings(**common,
                                 **calibrate.batch_cost_key(**{k: options[k] for k in keys}))
    if phase == "steps":
        keys = ("target", "draft", "verifier", "threshold", "judge_model", "problems", "seed",
                "steps_per_problem", "max_step_tokens", "threads", "delimiter")
        return StepsSettings(**common, **calibrate.steps_key(**{k: options[k] for k in keys}),
                             verifier=options["verifier"], record=str(options["record"]),
                             accepted=3, pairs=4, alpha1_ci95=(0.3, 0.95), c1_stderr=0.01)
    if phase == "engine_costs":
        keys = ("target", "draft", "contexts", "widths", "tokens", "repeats", "threads",
                "speculation_k2", "speculation_problems", "seed", "delimiter")
        return EngineCostsSettings(**common, **calibrate.engine_costs_key(
            **{k: options[k] for k in keys}))
    keys = ("model", "engine", "problems", "seed", "max_tokens", "num_speculative_tokens",
            "prompt_lookup_min", "prompt_lookup_max", "threads")
    return TokensSettings(**common, **calibrate.tokens_key(**{k: options[k] for k in keys}),
                          measurement=MEASUREMENT)


def _fake(phase: str, section, models: dict, log: list[str]):
    def measure(*, progress=None, **options):
        log.append(phase)
        if progress is not None:
            progress(1, 1, f"{phase} done")
        model = options.get("model") or options.get("target")
        return PhaseResult(phase, section, _settings(phase, options),
                           {k: model if v == "model" else options[v] for k, v in models.items()},
                           f"{phase} ok")
    return measure


@pytest.fixture
def fake_phases(monkeypatch):
    """The four phases replaced by instant fakes; model names resolve to themselves."""
    log: list[str] = []
    monkeypatch.setattr(calibrate, "batch_cost_phase",
                        _fake("batch_cost", BATCH, {"target": "model"}, log))
    monkeypatch.setattr(calibrate, "steps_phase",
                        _fake("steps", STEP, {"target": "target", "draft": "draft"}, log))
    monkeypatch.setattr(calibrate, "tokens_phase",
                        _fake("tokens", TOKEN, {"token_target": "model"}, log))
    monkeypatch.setattr(calibrate, "engine_costs_phase",
                        _fake("engine_costs", ENGINE, {"target": "target"}, log))
    import profiler.packs

    monkeypatch.setattr(profiler.packs, "resolve_model", lambda name, cache_dir=None: name)
    monkeypatch.setattr(profiler.packs, "check_model", lambda name, **_: "pack")
    return log


RUN = ["profile", "run", "--target", "tgt", "--draft", "drf", "--verifier", "exact",
       "--widths", "1,2", "--delimiter", "\\n"]


def test_profile_run_writes_each_phase_and_resume_skips_them(fake_phases, tmp_path,
                                                              capsys) -> None:
    from cli.main import main

    out = tmp_path / "cal.json"
    assert main([*RUN, "-o", str(out)]) == 0
    assert fake_phases == ["batch_cost", "steps", "tokens", "engine_costs"]
    cal = load_calibration(out)
    assert cal.step.c1 == 0.25 and cal.token.alpha2 == 0.4 and len(cal.batch_cost.points) == 2
    prov = cal.provenance
    assert prov.source == "measured" and prov.date and prov.machine and prov.engine
    assert prov.models == {"target": "tgt", "draft": "drf", "token_target": "tgt"}
    settings = prov.settings
    assert isinstance(settings, MeasurementSettings)
    assert set(settings.phases.finished()) == {"batch_cost", "steps", "tokens", "engine_costs"}
    assert cal.engine_costs == ENGINE and settings.phases.engine_costs.contexts == [64, 256, 512]
    assert settings.phases.steps.delimiter == "\n" and settings.phases.batch_cost.widths == [1, 2]
    assert settings.phases.tokens.measurement == MEASUREMENT
    assert settings.versions["specmodel"]
    assert settings.machine_details.cores >= 1 and settings.machine_details.platform
    assert all(ph.machine == settings.machine_details for ph in settings.phases.finished()
               .values())  # each phase measured here says so
    assert prov.machine == settings.machine_details.line
    assert settings.base.name == "lr-paper-gsm8k-deepseek" and settings.base.source == "paper"
    assert prov.description == ("batch_cost: measured. steps: measured. tokens: measured. "
                                "engine_costs: measured.")
    assert cal.name == "measured-tgt-drf"
    before = out.read_text()
    capsys.readouterr()
    fake_phases.clear()
    assert main([*RUN, "-o", str(out), "--resume"]) == 0
    assert fake_phases == [] and out.read_text() == before
    assert ("batch_cost, engine_costs, steps, tokens already measured"
            in capsys.readouterr().out)


def test_an_interrupted_run_keeps_its_finished_phases_and_resumes_the_rest(
    fake_phases, tmp_path, monkeypatch, capsys
) -> None:
    from cli.main import main

    out = tmp_path / "cal.json"

    def interrupted(**_settings):
        raise ValueError("interrupted in the steps phase")

    good_steps = calibrate.steps_phase
    monkeypatch.setattr(calibrate, "steps_phase", interrupted)
    assert main([*RUN, "-o", str(out)]) == 2
    assert "interrupted in the steps phase" in capsys.readouterr().err
    saved = json.loads(out.read_text())
    assert set(saved["provenance"]["settings"]["phases"]) == {"batch_cost"}
    monkeypatch.setattr(calibrate, "steps_phase", good_steps)
    fake_phases.clear()
    assert main([*RUN, "-o", str(out), "--resume"]) == 0
    assert fake_phases == ["steps", "tokens", "engine_costs"]
    assert load_calibration(out).provenance.source == "measured"


def test_resume_into_a_file_of_other_models_is_refused(fake_phases, tmp_path, capsys) -> None:
    from cli.main import main

    out = tmp_path / "cal.json"
    assert main([*RUN, "-o", str(out), "--no-tokens"]) == 0
    assert load_calibration(out).provenance.source == "paper"  # token section copied
    capsys.readouterr()
    other = [*RUN, "-o", str(out), "--resume"]
    other[other.index("tgt")] = "other"
    assert main(other) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "measured with model = 'tgt', not 'other'" in err


def test_profile_run_rejects_bad_options_before_measuring(fake_phases, tmp_path,
                                                          capsys) -> None:
    from cli.main import main

    for extra, message in ((["--verifier", "bogus"], "verifier must be one of"),
                           (["--token-engine", "hf"], "token engine must be one of"),
                           (["--widths", "1,x"], "widths must be comma-separated integers")):
        assert main([*RUN, "-o", str(tmp_path / "x.json"), *extra]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1
    assert fake_phases == [] and not (tmp_path / "x.json").exists()


def test_recorder_finished_checks_the_phase_name(tmp_path) -> None:
    rec = Recorder(tmp_path / "c.json", load_preset("lr-paper-gsm8k-deepseek"))
    assert not rec.finished("steps") and rec.done == set()
    with pytest.raises(ValueError, match="phase must be one of batch_cost, steps, tokens"):
        rec.finished("step")


def test_phase_result_section_and_settings_must_match_the_phase() -> None:
    options = {"model": "m", "engine": "transformers", "widths": [1, 2], "tokens": 4,
               "repeats": 2, "threads": 1}
    with pytest.raises(ValueError, match="section of the steps phase must be a StepLevel"):
        PhaseResult("steps", BATCH, _settings("batch_cost", options))
    with pytest.raises(ValueError, match="settings of the batch_cost phase must be a "
                                         "BatchCostSettings"):
        PhaseResult("batch_cost", BATCH, _settings("tokens", {
            **options, "problems": 1, "seed": 0, "max_tokens": 8, "num_speculative_tokens": 2,
            "prompt_lookup_min": 1, "prompt_lookup_max": 3}))


def test_one_phase_into_a_paper_preset_copies_the_rest_and_names_the_base(tmp_path) -> None:
    base = load_preset("lr-paper-gsm8k-deepseek")
    rec = Recorder(tmp_path / "c.json", base)
    options = {"model": "m", "engine": "transformers", "widths": [1, 2], "tokens": 4,
               "repeats": 2, "threads": 1}
    path = rec.add(PhaseResult("batch_cost", BATCH, _settings("batch_cost", options),
                               {"target": "m"}))
    cal = load_calibration(path)
    assert cal == rec.calibration and rec.done == {"batch_cost"}
    assert cal.step == base.step and cal.token == base.token and cal.batch_cost == BATCH
    assert cal.provenance.source == "paper" and cal.name == "measured-m"
    assert cal.provenance.description.endswith(
        "step and token: copied from lr-paper-gsm8k-deepseek (paper), not measured here.")
    assert rec.finished("batch_cost", model="m", widths=[1, 2])
    with pytest.raises(ValueError, match="widths = \\[1, 2\\], not \\[1, 4\\]"):
        rec.finished("batch_cost", widths=[1, 4])
    # resuming into the file picks up what it holds
    again = Recorder(path, base, resume=True)
    assert again.calibration == cal and again.done == {"batch_cost"}


def test_progress_bar_takes_the_library_callback(capsys) -> None:
    from cli.render import ProgressBar

    with ProgressBar(description="step pairs") as bar:
        for i in range(1, 4):
            bar(i, 3, f"pair {i}")
    err = capsys.readouterr().err
    assert "step pairs: pair 3" in err and "3/3" in err


def test_a_phase_into_a_copy_of_a_measured_calibration_keeps_its_phases(
    fake_phases, tmp_path, capsys
) -> None:
    """profile steps --calibration MEASURED -o NEW: the sections it copies keep the record
    of how they were measured; only the steps phase's entry is new."""
    from cli.main import main

    first = tmp_path / "cal.json"
    assert main([*RUN, "-o", str(first)]) == 0
    before = load_calibration(first).provenance.settings.phases
    fake_phases.clear()
    second = tmp_path / "again.json"
    assert main(["profile", "steps", "--target", "tgt", "--draft", "drf", "--verifier",
                 "exact", "--steps-per-problem", "6", "--calibration", str(first), "-o",
                 str(second)]) == 0
    assert fake_phases == ["steps"]
    cal = load_calibration(second)
    phases = cal.provenance.settings.phases
    assert set(phases.finished()) == {"batch_cost", "steps", "tokens", "engine_costs"}
    assert phases.tokens == before.tokens and phases.engine_costs == before.engine_costs
    assert phases.steps.steps_per_problem == 6
    assert "copied from" not in cal.provenance.description
    assert cal.provenance.source == "measured"


def test_rederive_steps_adds_todays_estimators_and_keeps_every_measured_number(
        tmp_path, capsys) -> None:
    """`profile rederive-steps` on a committed calibration: the step section derived
    again from its pairs record equals the measured one but for the verdict counts per
    problem, per step index and per pair of lengths and the answers' lengths in step
    order (the same pairs, one answer per problem) it gains; the phase keeps its date;
    a record of other pairs is refused."""
    from pathlib import Path

    from cli.main import main
    from specmodel.formats.calibration import load_calibration

    results = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
    src = results / "heldout_15b_calibration.json"
    out = tmp_path / "again.json"
    assert main(["profile", "rederive-steps", str(src), "-o", str(out), "--record",
                 str(results / "heldout_15b_calibration.pairs.jsonl")]) == 0
    old, new = load_calibration(src), load_calibration(out)
    before, after = old.step.model_dump(), new.step.model_dump()
    assert [k for k in before if before[k] != after[k]] == [
        "problem_verdicts", "index_verdicts", "step_length_verdicts", "step_length_answers"]
    answers = new.step.step_length_answers
    assert answers is not None and [len(a) for a in answers] == [
        n for _, n in new.step.problem_verdicts or ()]
    assert Counter(tuple(p) for a in answers for p in a) == Counter(
        {(t, d): n for t, d, n in new.step.step_length_pairs or ()})
    cells = new.step.step_length_verdicts
    assert cells is not None and sum(n for _, _, n, _ in cells) == 96
    assert [(t, d, n) for t, d, n, _ in cells] == [tuple(c) for c in new.step.step_length_pairs]
    counts = new.step.problem_verdicts
    assert counts is not None and len(counts) == 10
    assert sum(k for k, _ in counts) == 57 and sum(n for _, n in counts) == 96
    by_index = new.step.index_verdicts
    assert by_index is not None and len(by_index) == 12 and by_index[0] == (7, 10)
    assert sum(k for k, _ in by_index) == 57 and sum(n for _, n in by_index) == 96
    assert new.engine_costs == old.engine_costs and new.token == old.token
    phase = new.provenance.settings.phases.steps
    assert phase.date == old.provenance.settings.phases.steps.date
    assert "Derived again from the record" in phase.description
    assert "48 independent pairs' worth" in phase.description
    other = results / "heldout_05b_calibration_whole.pairs.jsonl"
    assert main(["profile", "rederive-steps", str(src), "-o", str(tmp_path / "x.json"),
                 "--record", str(other)]) == 2
    assert "measured other settings" in " ".join(capsys.readouterr().err.split())
    from specmodel.formats.calibration import load_preset

    plain = tmp_path / "preset.json"
    plain.write_text(load_preset("lr-paper-gsm8k-deepseek").model_dump_json())
    assert main(["profile", "rederive-steps", str(plain), "-o", str(tmp_path / "y.json")]) == 2
    assert "has no steps phase" in " ".join(capsys.readouterr().err.split())


def test_rederive_steps_from_the_first_problems_is_the_calibration_of_fewer(
        tmp_path, capsys) -> None:
    """`rederive_steps(problems=10)` on the thirty-problem 1.5B calibration gives the
    step section its first ten problems gave (the ten-problem variant, derived from the
    EPYC's ten-problem record, whose pairs the thirty-problem record kept); the phase
    says 10 problems and where they came from; a count outside 1..30, or a calibration
    without a steps phase, is refused by `profile first-problems` naming the option
    (exit 2) and nothing is written."""
    from pathlib import Path

    from cli.main import main
    from profiler.calibrate import rederive_steps
    from specmodel.formats.calibration import load_calibration, load_preset

    results = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
    thirty = load_calibration(results / "heldout_15b_calibration30_xeon.json")
    ten = load_calibration(results / "heldout_15b_calibration10_xeon.json")
    pairs = results / "heldout_15b_profile_run30_xeon.pairs.jsonl"
    got = rederive_steps(thirty, pairs, problems=10)
    assert got.section == ten.step
    assert (got.settings.problems, got.settings.pairs, got.settings.accepted) == (10, 96, 57)
    assert "first 10 of 30 problems (96 of 300 pairs)" in got.settings.description
    assert got.settings.date == thirty.provenance.settings.phases.steps.date
    every = rederive_steps(thirty, pairs, problems=30)
    assert every.section == rederive_steps(thirty, pairs).section
    src = results / "heldout_15b_calibration30_xeon.json"
    for bad in ("0", "31"):
        out = tmp_path / f"bad{bad}.json"
        assert main(["profile", "first-problems", str(src), "-o", str(out), "--problems",
                     bad, "--record", str(pairs)]) == 2
        err = " ".join(capsys.readouterr().err.split())
        assert "--problems must be between 1 and the steps phase's 30 problems" in err
        assert not out.exists()
    plain = tmp_path / "preset.json"
    plain.write_text(load_preset("lr-paper-gsm8k-deepseek").model_dump_json())
    assert main(["profile", "first-problems", str(plain), "-o", str(tmp_path / "y.json"),
                 "--problems", "3"]) == 2
    assert "has no steps phase" in " ".join(capsys.readouterr().err.split())


def test_rederive_tokens_adds_the_draft_rate_and_keeps_every_measured_number(
        tmp_path, capsys) -> None:
    """`profile rederive-tokens`: the token section derived again from the tokens
    phase's stored counters equals the measured one but for the share of passes that
    drafted; a section copied from another calibration is derived from that one's
    counters (`--from`, a preset by name), and a copy that differs is refused."""
    from pathlib import Path

    from cli.main import main
    from specmodel.formats.calibration import load_calibration, load_preset

    results = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
    src = results / "heldout_15b_calibration_recal.json"
    out = tmp_path / "again.json"
    assert main(["profile", "rederive-tokens", str(src), "-o", str(out)]) == 0
    old, new = load_calibration(src), load_calibration(out)
    before, after = old.token.model_dump(), new.token.model_dump()
    assert [k for k in before if before[k] != after[k]] == ["draft_rate", "target_passes"]
    assert new.token.draft_rate == pytest.approx(265 / 374) and new.token.target_passes == 374
    assert new.step == old.step and new.engine_costs == old.engine_costs
    phase = new.provenance.settings.phases.tokens
    assert phase.date == old.provenance.settings.phases.tokens.date
    # the measurement's day is its latest phase's, not the day it was derived again
    latest = max(ph.date for ph in new.provenance.settings.phases.finished().values())
    assert new.provenance.date == latest[:10]
    assert "265 of 374 target passes drafted" in phase.description
    copied = results / "heldout_05b_calibration_recal.json"
    assert main(["profile", "rederive-tokens", str(copied), "-o", str(tmp_path / "x.json")]) == 2
    assert "no tokens phase" in " ".join(capsys.readouterr().err.split())
    preset = "measured-qwen2.5-coder-0.5b-smollm2-135m"
    assert main(["profile", "rederive-tokens", str(copied), "-o", str(tmp_path / "y.json"),
                 "--from", preset]) == 0
    got = load_calibration(tmp_path / "y.json")
    assert got.token == load_preset(preset).token
    assert got.step == load_calibration(copied).step
    assert main(["profile", "rederive-tokens", str(copied), "-o", str(tmp_path / "z.json"),
                 "--from", str(src)]) == 2
    assert "not the one" in " ".join(capsys.readouterr().err.split())
    assert main(["profile", "rederive-tokens", str(copied), "-o", str(tmp_path / "w.json"),
                 "--from", "no-such-thing"]) == 2
    assert "--from" in capsys.readouterr().err


def test_measured_on_is_the_latest_phase_day() -> None:
    """The calibration's date is the day its latest phase finished, whatever the offset
    a phase's time was written with; a date without a time counts as UTC."""
    from types import SimpleNamespace

    from profiler.calibrate import measured_on

    phases = [SimpleNamespace(date="2026-11-22T23:30:00-02:00"),
              SimpleNamespace(date="2026-11-23"),
              SimpleNamespace(date="2026-11-23T10:00:00+00:00")]
    assert measured_on(phases) == "2026-11-23"  # 23:30 at −02:00 is 01:30 UTC on the 23rd
    assert measured_on(phases[:1]) == "2026-11-23"
    assert measured_on(phases[1:2]) == "2026-11-23"
    assert len(measured_on([])) == 10  # today


def test_remeasuring_contention_needs_engine_costs_with_a_draft(tmp_path) -> None:
    """`profile contention` says what a calibration lacks before loading any model."""
    from specmodel.formats.calibration import load_calibration

    base = load_preset("measured-qwen2.5-coder-0.5b-smollm2-135m")
    with pytest.raises(ValueError, match="has no engine_costs phase"):
        calibrate.remeasure_contention(base)
    settings = EngineCostsSettings(
        description="engine_costs: measured.", date=timestamp(),
        **calibrate.engine_costs_key(target="tgt", draft=None, contexts=[64, 256],
                                     widths=[1, 2], tokens=[4, 16], repeats=2, threads=1))
    with Recorder(tmp_path / "alone.json", base) as rec:
        rec.add(PhaseResult("engine_costs", ENGINE, settings, {"target": "tgt"}, ""))
    with pytest.raises(ValueError, match="no draft, so no contention"):
        calibrate.remeasure_contention(load_calibration(tmp_path / "alone.json"))


def test_a_derivation_on_another_machine_keeps_the_machine_it_was_measured_on(
        tmp_path, monkeypatch) -> None:
    """A phase derived again (no model timed) keeps the machine its numbers were measured
    on, and so does the provenance; a phase measured afterwards on another machine is
    stamped with that one, and the provenance names both, each with its phases.
    Contention is not measured again on a CPU other than its engine costs'."""
    from pathlib import Path

    from profiler.calibrate import first_problems

    results = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
    thirty = load_calibration(results / "heldout_15b_calibration30_xeon.json")
    xeon = thirty.provenance.machine
    assert "Xeon" in xeon
    elsewhere = {"cpu": "Elsewhere CPU", "cores": 64, "memory_gib": 512.0,
                 "platform": "elsewhere", "python": "3.11.7"}
    monkeypatch.setattr(calibrate, "machine_description", lambda device="cpu": elsewhere)
    with Recorder(tmp_path / "ten.json", thirty) as rec:
        first_problems(rec, 10, results / "heldout_15b_profile_run30_xeon.pairs.jsonl")
    ten = load_calibration(tmp_path / "ten.json")
    assert ten.provenance.machine == xeon
    assert ten.provenance.settings.machine_details == thirty.provenance.settings.machine_details
    assert all(ph.machine is None  # a file from before phases recorded theirs
               for ph in ten.provenance.settings.phases.finished().values())
    with Recorder(tmp_path / "ten.json", ten, resume=True) as rec:
        rec.add(PhaseResult("batch_cost", BATCH, BatchCostSettings(
            description="batch_cost: measured.", date=timestamp(), model="tgt",
            engine="transformers", widths=[1, 2], tokens=4, repeats=2, threads=1),
            {"target": "tgt"}, ""))
    both = load_calibration(tmp_path / "ten.json")
    phases = both.provenance.settings.phases
    assert phases.batch_cost.machine.cpu == "Elsewhere CPU"
    assert both.provenance.machine == (f"Elsewhere CPU, 64 cores, 512.0 GiB (batch_cost); "
                                       f"{xeon} (steps, tokens, engine_costs)")
    assert both.provenance.settings.machine_details.cpu == "Elsewhere CPU"
    measured = thirty.provenance.settings.phases.engine_costs.model_copy(
        update={"machine": thirty.provenance.settings.machine_details})
    cal = thirty.model_copy(update={"provenance": thirty.provenance.model_copy(update={
        "settings": thirty.provenance.settings.model_copy(update={
            "phases": thirty.provenance.settings.phases.model_copy(
                update={"engine_costs": measured})})})})
    with pytest.raises(ValueError, match=r"measured on .*Xeon.*, this is Elsewhere CPU"):
        calibrate.remeasure_contention(cal)


H200 = {"type": "cuda", "name": "NVIDIA H200", "memory_bytes": 141 * 2**30,
        "compute_capability": "9.0", "multiprocessors": 132, "driver": "570.86.15",
        "cuda_runtime": "12.8", "threads": None}


def test_engine_costs_timed_on_a_gpu_record_the_gpu(tmp_path, monkeypatch) -> None:
    """An engine_costs phase whose engines ran on cuda records the GPU (name, and memory,
    compute capability, driver and runtime) beside the host, and the provenance names
    it; contention is not measured again on another GPU."""
    import profiler.hardware as hardware
    from profiler.environment import machine_description

    monkeypatch.setattr(hardware, "device_description", lambda device, threads: H200)
    assert "gpu" not in machine_description()  # the CPU records no GPU
    with pytest.raises(ValueError, match="device must be cpu or cuda, got 'tpu'"):
        machine_description("tpu")
    base = load_preset("measured-qwen2.5-coder-0.5b-smollm2-135m")
    key = calibrate.engine_costs_key(target="tgt", draft="drf", contexts=[64, 256],
                                     widths=[1, 2], tokens=[4, 16], repeats=2, threads=1,
                                     device="cuda", dtype="bfloat16")
    settings = EngineCostsSettings(description="engine_costs: measured.", date=timestamp(),
                                   **key)
    on_gpu = ENGINE.model_copy(update={"device": "cuda", "dtype": "bfloat16",
                                       "draft": ENGINE.target.model_copy(
                                           update={"model": "drf"})})
    with Recorder(tmp_path / "gpu.json", base) as rec:
        rec.add(PhaseResult("engine_costs", on_gpu, settings, {"target": "tgt"}, ""))
    cal = load_calibration(tmp_path / "gpu.json")
    phase = cal.phase_settings("engine_costs")
    assert (phase.device, phase.dtype) == ("cuda", "bfloat16")
    assert phase.machine.gpu == "NVIDIA H200"
    assert phase.machine.gpu_details == ("141 GiB, compute capability 9.0, driver "
                                         "570.86.15, CUDA 12.8")
    assert cal.provenance.machine.endswith(f"; {phase.machine.line} (engine_costs)")
    assert phase.machine.line.startswith("NVIDIA H200 (141 GiB, compute capability 9.0, "
                                         "driver 570.86.15, CUDA 12.8) on ")
    h100 = {**H200, "name": "NVIDIA H100 80GB HBM3"}
    monkeypatch.setattr(hardware, "device_description", lambda device, threads: h100)
    with pytest.raises(ValueError, match="measured on NVIDIA H200, this is NVIDIA H100"):
        calibrate.remeasure_contention(cal)
    cpu = EngineCostsSettings(description="engine_costs: measured.", date=timestamp(),
                              **{**key, "device": "cpu", "dtype": "float32"})
    with Recorder(tmp_path / "cpu.json", base) as rec:  # the CPU's phase names no GPU
        rec.add(PhaseResult("engine_costs", ENGINE, cpu, {"target": "tgt"}, ""))
    assert load_calibration(tmp_path / "cpu.json").phase_settings(
        "engine_costs").machine.gpu is None
