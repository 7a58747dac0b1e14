"""SpecConfig → decoder: what the decoder accepts, and every field of an export file
(the verifier included) reaching the decoder through ``specmodel decode --config``.

The engines, the verifier and the problems are scripted (no models); the real
``run_configurations`` runs and writes the run record, so the record's typed
configuration is exactly what the decoder was built with.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from profiler.decoder import LookaheadDecoder
from profiler.verifiers import ExactMatch, Verdict
from specmodel.config import SpecConfig, TokenDrafter, VerifierSpec
from specmodel.formats.export import ExportFile, Prediction, save_export
from specmodel.formats.run_record import load_run_record
from tests.profiler.test_decoder_logic import PROBLEM, Scripted

FULL = SpecConfig(
    mode="sync", k1=3, k2=4, width=2, branch_temperature=0.5,
    token=TokenDrafter(method="draft_model", model="tiny-draft"),
    verifier=VerifierSpec(kind="judge", threshold=0.8, model="tiny-judge"),
    step_delimiter="\n", max_step_tokens=20, max_steps=5,
)
"""Every field away from its default."""


class _Named:
    """A verifier named after the spec it was built from; accepts identical steps."""

    def __init__(self, spec: VerifierSpec) -> None:
        self.spec = spec
        self.name = spec.kind + (f":{spec.model}" if spec.model else "")

    def verify(self, pairs):
        return [Verdict(a == b, None, 0.0) for a, b in pairs]


@pytest.fixture
def scripted_run(monkeypatch):
    """Run ``specmodel decode`` on scripted engines (each with the name and execution the
    real engine would report); return what was built."""
    import profiler.engines
    import profiler.packs
    import profiler.problems
    import profiler.verifiers

    built: dict[str, list] = {"engines": [], "verifiers": [], "datasets": []}

    def make_engine(kind, model, *, threads, delimiter, speculation=None, device="cpu",
                    dtype="float32", options=None):
        built["engines"].append((kind, str(model), delimiter))
        engine = Scripted(frozenset(), kind, delimiter=delimiter)  # named as the real one
        engine.execution = profiler.engines.execution_of(kind, device, options)
        return engine

    def make_verifier(spec, *, threads=1):
        built["verifiers"].append(spec)
        return _Named(spec)

    monkeypatch.setattr(profiler.engines, "make_engine", make_engine)
    monkeypatch.setattr(profiler.verifiers, "make_verifier", make_verifier)
    monkeypatch.setattr(profiler.packs, "resolve_model", lambda name, **_: Path("/packs") / name)
    monkeypatch.setattr(profiler.packs, "check_model", lambda name, **_: "pack")
    def load_problems(n, seed, dataset="gsm_symbolic"):
        built["datasets"].append(dataset)
        return [PROBLEM]

    monkeypatch.setattr(profiler.problems, "load_problems", load_problems)
    return built


def _export(tmp_path: Path, config: SpecConfig) -> Path:
    pred = Prediction(speedup=1.5, model="flat-budget f·g", regime=config.regime, budget=16,
                      k1=config.k1, k2=config.k2, alpha1=0.5, c1=0.2, alpha2=0.5, c2=0.1)
    return save_export(ExportFile(config=config, prediction=pred), tmp_path / "export.json")


def _decode(tmp_path: Path, *args: str) -> tuple[int, Path]:
    from cli.main import main

    out = tmp_path / "run.json"
    return main(["decode", *args, "--problems", "1", "-o", str(out), "--json"]), out


def test_every_field_of_an_export_file_reaches_the_decoder(tmp_path, scripted_run,
                                                          capsys) -> None:
    rc, out = _decode(tmp_path, "--config", str(_export(tmp_path, FULL)))
    assert rc == 0, capsys.readouterr().err
    record = load_run_record(out)
    assert [c.label for c in record.configs] == ["target", FULL.label]
    ran = record.configs[1].config
    # Everything as exported; the token draft's pack name resolved to its folder.
    assert ran == FULL.replace(token={"model": str(Path("/packs") / "tiny-draft")})
    # The verifier built is the one the file names, not the command's default.
    assert scripted_run["verifiers"] == [FULL.verifier]
    assert record.models["verifier"] == "judge:tiny-judge"
    # The baseline shares the step caps and the delimiter; every engine cuts at it.
    base = record.configs[0].config
    assert (base.k1, base.k2, base.max_steps, base.max_step_tokens, base.step_delimiter) == (
        1, 1, 5, 20, "\n")
    assert {d for _, _, d in scripted_run["engines"]} == {"\n"}
    assert record.settings.config_file == str(tmp_path / "export.json")
    # The decoder ran the configuration: with width 2 the sampled branches were drafted.
    assert record.configs[1].problems[0].drafted_steps > 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["config"] for r in rows] == ["target", FULL.label]


def test_command_line_options_override_the_file_only_when_given(tmp_path, scripted_run,
                                                                 capsys) -> None:
    path = str(_export(tmp_path, FULL))
    rc, out = _decode(tmp_path, "--config", path, "--verifier", "embedding", "--threshold",
                      "0.7", "--k2", "1", "--max-steps", "3", "--delimiter", "\\n\\n",
                      "--no-baseline")
    assert rc == 0, capsys.readouterr().err
    ran = load_run_record(out).configs[0].config
    # The judge's model does not carry over to another verifier kind.
    assert ran.verifier == VerifierSpec(kind="embedding", threshold=0.7)
    assert (ran.k2, ran.max_steps, ran.step_delimiter) == (1, 3, "\n\n")
    assert (ran.k1, ran.width, ran.branch_temperature, ran.max_step_tokens) == (3, 2, 0.5, 20)
    assert scripted_run["verifiers"] == [ran.verifier]

    rc, out = _decode(tmp_path, "--config", path, "--judge-model", "other-judge",
                      "--token-draft", "other-draft", "--no-baseline")
    assert rc == 0, capsys.readouterr().err
    ran = load_run_record(out).configs[0].config
    assert ran.verifier == VerifierSpec(kind="judge", threshold=0.8, model="other-judge")
    assert ran.token == TokenDrafter(method="draft_model",
                                     model=str(Path("/packs") / "other-draft"))


def test_without_a_file_the_defaults_run(tmp_path, scripted_run, capsys) -> None:
    rc, out = _decode(tmp_path, "--k1", "2", "--verifier", "exact", "--no-baseline")
    assert rc == 0, capsys.readouterr().err
    ran = load_run_record(out).configs[0].config
    assert ran == SpecConfig(k1=2, verifier=VerifierSpec(kind="exact"))
    rc, _ = _decode(tmp_path, "--k1", "2", "--mode", "async", "--width", "2")
    assert rc == 2 and "width" in capsys.readouterr().err


def test_the_dataset_reaches_the_problems_and_the_record(tmp_path, scripted_run,
                                                         capsys) -> None:
    rc, out = _decode(tmp_path, "--k1", "2", "--verifier", "exact", "--no-baseline")
    assert rc == 0, capsys.readouterr().err
    assert load_run_record(out).settings.dataset == "gsm_symbolic"
    rc, out = _decode(tmp_path, "--k1", "2", "--verifier", "exact", "--no-baseline",
                      "--dataset", "leg_counting", "--seed", "4")
    assert rc == 0, capsys.readouterr().err
    assert scripted_run["datasets"] == ["gsm_symbolic", "leg_counting"]
    record = load_run_record(out)
    assert (record.settings.dataset, record.settings.seed) == ("leg_counting", 4)


def test_an_unknown_dataset_is_one_line_before_anything_loads(tmp_path, scripted_run,
                                                               capsys) -> None:
    rc, out = _decode(tmp_path, "--k1", "2", "--dataset", "leg_countin")
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert "--dataset 'leg_countin'" in err and "leg_counting" in err  # the nearest named
    assert scripted_run["engines"] == [] and scripted_run["datasets"] == []
    assert not out.exists()


def test_the_decoder_rejects_a_token_method_it_cannot_run() -> None:
    eagle = SpecConfig(k2=3, token=TokenDrafter(method="eagle", model="m"), step_delimiter="\n",
                       max_steps=20)
    with pytest.raises(ValueError, match="eagle"):
        LookaheadDecoder(Scripted(), None, None, eagle)
    with pytest.raises(ValueError, match="eagle"):
        LookaheadDecoder.for_config(Scripted(), None, None, eagle)
    # Without token speculation the method is never used.
    plain = LookaheadDecoder(Scripted(), None, None, eagle.replace(k2=1))
    assert plain.decode(PROBLEM).correct


def test_the_decoder_needs_a_draft_and_a_verifier_for_step_speculation() -> None:
    with pytest.raises(ValueError, match="draft and verifier"):
        LookaheadDecoder(Scripted(), None, ExactMatch(), SpecConfig(k1=2))
    with pytest.raises(TypeError, match="SpecConfig"):
        LookaheadDecoder(Scripted(), None, None, {"k1": 1})  # type: ignore[arg-type]


def test_for_config_gives_the_target_its_token_speculation() -> None:
    target = Scripted()
    config = SpecConfig(k2=3, step_delimiter="\n", max_steps=20)
    dec = LookaheadDecoder.for_config(target, None, None, config)
    assert dec.target is not target
    assert dec.target.speculation == config.token_speculation()
    assert dec.target.speculation.num_speculative_tokens == 2
    run = dec.decode(PROBLEM)
    # The engine's counters are recorded as what grew during the problem.
    assert run.spec_metrics == {"drafts": len(run.steps)}
    same = LookaheadDecoder.for_config(target, None, None, config.replace(k2=1))
    assert same.target is target  # no speculation asked, none given


def test_the_transformers_engine_names_a_token_method_it_cannot_run() -> None:
    from profiler.engines import EngineError, HFEngine
    from specmodel.config import TokenSpeculation

    eagle = TokenSpeculation(drafter=TokenDrafter(method="eagle", model="m"),
                             num_speculative_tokens=2)
    with pytest.raises(EngineError, match="token method 'eagle'"):
        HFEngine("/nonexistent", speculation=eagle)  # rejected before any model loads


def test_a_run_resumes_only_on_the_decode_path_it_was_measured_on(tmp_path) -> None:
    """The engine's execution (its decode path) is in the resume key: a record measured
    on one path is refused, the field named, when resumed on another; on the same path
    the finished configurations are kept."""
    from profiler.runs import run_configurations

    target = Scripted(frozenset(), delimiter="\n")
    draft = Scripted(frozenset(), delimiter="\n")
    out = tmp_path / "run.json"
    sync = SpecConfig(mode="sync", k1=2, step_delimiter="\n", max_steps=4)
    settings = {"engine": "transformers", "problems": 1, "max_steps": 4, "delimiter": "\n",
                "execution": "transformers eager (dynamic KV cache)"}

    def run(execution: str) -> None:
        run_configurations(target, draft, _Named(sync.verifier), [sync], [PROBLEM], out,
                           models={"target": "t", "draft": "d"}, resume=True,
                           settings={**settings, "execution": execution})

    run(settings["execution"])
    first = load_run_record(out)
    run(settings["execution"])  # nothing left to do: the record is kept as it is
    assert load_run_record(out).configs == first.configs
    with pytest.raises(ValueError, match="execution"):
        run("transformers static KV cache, eager")


def test_decode_resume_settles_before_any_model_loads(tmp_path, scripted_run, capsys) -> None:
    """``decode --resume`` reads its record before any engine is built: a record that
    holds every configuration of the run is printed as it stands, with nothing decoded
    and no model loaded; one measured on another decode path (the engine's execution,
    known from the options) is refused then, the field named; one that lacks the run's
    configuration loads the models and decodes only that."""
    out = tmp_path / "run.json"
    args = ["--k1", "2", "--verifier", "exact"]
    assert _decode(tmp_path, *args)[0] == 0
    rows = json.loads(capsys.readouterr().out)
    first = out.read_text()
    (tmp_path / "first.json").write_text(first)
    assert len(scripted_run["engines"]) == 2  # the target and the step draft

    assert _decode(tmp_path, *args, "--resume")[0] == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == rows  # the record's rows, as decode printed them
    assert "already holds every configuration of this run: nothing decoded, no model " \
           "loaded" in " ".join(captured.err.split())
    assert len(scripted_run["engines"]) == 2 and out.read_text() == first

    assert _decode(tmp_path, *args, "--decode-path", "static", "--resume")[0] == 2
    err = " ".join(capsys.readouterr().err.split())
    assert err.startswith(f"error: --resume: {out} was measured with execution = ")
    assert "static KV cache" in err and len(scripted_run["engines"]) == 2

    assert _decode(tmp_path, *args, "--mode", "async", "--resume")[0] == 0
    capsys.readouterr()
    assert len(scripted_run["engines"]) == 4  # loaded: async k1=2 was not in the record
    resumed = load_run_record(out).configs
    assert [c.label for c in resumed] == ["target", "async k1=2 k2=1"]
    assert resumed[0] == load_run_record(tmp_path / "first.json").configs[0]  # kept


def test_a_configurations_last_problem_is_reported_once_the_record_holds_it(tmp_path) -> None:
    """A sweep paused at the report of a configuration's last problem and stopped there
    resumes without decoding that configuration again: by then the record holds it."""
    import dataclasses

    from profiler.runs import run_configurations

    target = Scripted(frozenset(), delimiter="\n")
    draft = Scripted(frozenset(), delimiter="\n")
    out = tmp_path / "run.json"
    configs = [SpecConfig(mode="sync", k1=2, step_delimiter="\n", max_steps=4),
               SpecConfig(mode="async", k1=2, step_delimiter="\n", max_steps=4)]
    settings = {"engine": "transformers", "problems": 2, "max_steps": 4, "delimiter": "\n"}
    second = dataclasses.replace(PROBLEM, index=1)
    seen: list[tuple[str, set[str]]] = []

    def progress(done: int, total: int, message: str) -> None:
        held = ({c.label for c in load_run_record(out).configs} if out.is_file() else set())
        seen.append((message, held))

    run_configurations(target, draft, _Named(configs[0].verifier), configs,
                       [PROBLEM, second], out, models={"target": "t", "draft": "d"},
                       settings=settings, progress=progress)
    labels = [c.label for c in load_run_record(out).configs]
    assert len(seen) == 2 * len(labels)
    for i, (message, held) in enumerate(seen):
        label = labels[i // 2]
        assert message.startswith(f"{label}: problem ")
        assert (label in held) == (i % 2 == 1)  # the last problem's report: written
