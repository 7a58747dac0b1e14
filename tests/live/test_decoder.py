"""The Lookahead Reasoning decoder on real models: lossless with the exact-match verifier.

With exact match every committed step is the target's own greedy step, so sync
and async Lookahead Reasoning, token-level speculation, and their hybrid must
all reproduce step-by-step greedy decoding of the target, step for step.  The
draft (Qwen2.5-Coder-0.5B) differs from the target (SmolLM2-135M), so drafts
are rejected and the correction path runs too.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest

from profiler.decoder import LookaheadDecoder
from profiler.engines import HFEngine
from profiler.problems import load_problems
from profiler.verifiers import ExactMatch
from specmodel.config import SpecConfig
from tests.conftest import require

pytestmark = pytest.mark.live

CAPS = {"max_steps": 4, "max_step_tokens": 16, "step_delimiter": "\n"}


@pytest.fixture(scope="module")
def problems():
    return load_problems(2, seed=3)


@pytest.fixture(scope="module")
def hf_target(smollm_path):
    return HFEngine(smollm_path, threads=1, delimiter="\n")


@pytest.fixture(scope="module")
def reference(hf_target, problems):
    dec = LookaheadDecoder(hf_target, None, None, SpecConfig(**CAPS))
    return [dec.decode(p) for p in problems]


def _steps(run) -> list[str]:
    return [s.text for s in run.steps]


def test_target_only_decoding_is_well_formed(reference) -> None:
    for run in reference:
        assert run.steps and all(s.source == "target" for s in run.steps)
        assert run.output == "".join(_steps(run))
        assert run.target_batches == len(run.steps) and run.drafted_steps == 0
        assert run.output_tokens > 0 and run.seconds > 0
        assert run.finished in ("answer", "end", "max_steps")


@pytest.mark.slow  # about 1 minute: the 0.5B assistant is slower than the 135M target here
def test_token_level_draft_model_with_another_tokenizer_is_lossless(
    hf_target, qwen05_path, problems, reference
) -> None:
    """A token-level draft model with its own tokenizer (Qwen's for a SmolLM2 target):
    transformers' universal assisted decoding, greedy output unchanged."""
    config = SpecConfig(k2=3, token={"method": "draft_model", "model": str(qwen05_path)},
                        **CAPS)
    dec = LookaheadDecoder.for_config(hf_target, None, None, config)
    assert dec.target._assistant is not None and dec.target._assistant.tokenizer is not None
    run = dec.decode(problems[0])  # one problem: the assistant is the slower model here
    assert _steps(run) == _steps(reference[0])
    del dec
    gc.collect()


@pytest.mark.parametrize(
    "config",
    [
        # in CI: async, token-level and sync with two branches; the rest are slow
        pytest.param(SpecConfig(mode="sync", k1=3, **CAPS), marks=pytest.mark.slow),
        SpecConfig(mode="async", k1=3, **CAPS),
        # token-level alone: test_engines.py checks HF prompt lookup is lossless in CI
        pytest.param(SpecConfig(mode="sync", k1=1, k2=3, **CAPS), marks=pytest.mark.slow),
        pytest.param(SpecConfig(mode="sync", k1=2, k2=3, **CAPS), marks=pytest.mark.slow),
        SpecConfig(mode="sync", k1=2, width=2, **CAPS),
    ],
    ids=lambda c: c.label,
)
def test_exact_match_lookahead_reasoning_is_lossless(
    config, hf_target, qwen05_path, problems, reference
) -> None:
    draft = HFEngine(qwen05_path, threads=1, delimiter="\n") if config.k1 > 1 else None
    dec = LookaheadDecoder.for_config(hf_target, draft, ExactMatch() if draft else None, config)
    # one problem with a draft (the 0.5B draft is the slow model here)
    todo = problems[:1] if config.k1 > 1 else problems
    runs = [dec.decode(p) for p in todo]
    for run, ref in zip(runs, reference[: len(todo)], strict=True):
        assert _steps(run) == _steps(ref)
        assert run.output == ref.output
        assert run.accepted_steps <= run.drafted_steps
    if config.k1 > 1:
        drafted = sum(r.drafted_steps for r in runs)
        accepted = sum(r.accepted_steps for r in runs)
        assert drafted > accepted  # a different draft model: rejections were exercised
        sources = {s.source for r in runs for s in r.steps}
        assert "target" in sources
        # Sync expands each cycle's prefixes as one batch: fewer target calls than steps.
        if config.mode == "sync" and accepted:
            assert sum(r.target_batches for r in runs) < sum(len(r.steps) for r in runs)
    del draft
    gc.collect()


def test_vllm_sync_and_async_decoding_are_lossless(smollm_path, qwen05_path, problems) -> None:
    """Sync, async and async with the target's steps in vLLM's running batch
    (continuous) reproduce target-only greedy decoding; with a draft of another model
    the continuous scheduler's rejections cancel running vLLM requests, and the steps
    are still the target's."""
    require("vllm")
    from profiler.engines import VLLMEngine

    target = VLLMEngine(smollm_path, max_model_len=1024, delimiter="\n")
    plain = LookaheadDecoder(target, None, None, SpecConfig(**CAPS))
    draft = HFEngine(smollm_path, threads=1, delimiter="\n")
    ref = plain.decode(problems[0])
    for mode, batching in (("sync", "call"), ("async", "call"), ("async", "continuous")):
        lr = LookaheadDecoder(target, draft, ExactMatch(), SpecConfig(
            mode=mode, k1=3, target_batching=batching, **CAPS))
        run = lr.decode(problems[0])
        assert _steps(run) == _steps(ref), (mode, batching)
        # Same model drafting (vLLM target, transformers draft): drafts are accepted.
        assert run.drafted_steps > 0 and run.accepted_steps >= run.drafted_steps - 1, mode
        if mode == "sync":  # a cycle commits several steps from one target call
            assert run.target_batches < len(run.steps)
        if batching == "continuous":  # one request per target step, timed by the server
            assert run.target_batches >= run.target_steps > 0 and run.target_seconds > 0
    other = HFEngine(qwen05_path, threads=1, delimiter="\n")
    lr = LookaheadDecoder(target, other, ExactMatch(), SpecConfig(
        mode="async", k1=3, target_batching="continuous", **CAPS))
    run = lr.decode(problems[0])
    assert _steps(run) == _steps(ref)
    assert run.accepted_steps < run.drafted_steps  # rejections: dropped chains cancelled
    assert _steps(plain.decode(problems[0])) == _steps(ref)  # the engine is idle again
    del target, plain, lr, other
    gc.collect()


@pytest.mark.usefixtures("quick_cost_probe", "quick_decoder_model")
def test_decode_and_validate_commands(smollm_path, qwen05_path, tmp_path, capsys,
                                      monkeypatch) -> None:
    from cli.main import main
    from specmodel.formats.run_record import load_run_record

    monkeypatch.setenv("SPECMODEL_CACHE", str(smollm_path.parent))
    out = tmp_path / "run.json"
    args = ["decode", "--target", str(smollm_path), "--draft", str(qwen05_path),
            "--verifier", "exact", "--mode", "sync", "--k1", "2", "--k2", "2",
            "--token-draft", str(smollm_path), "--problems", "1",
            "--max-steps", "2", "--max-step-tokens", "8", "--delimiter", "\\n",
            "--preset", "lr-paper-gsm8k-deepseek", "-o", str(out), "--json"]
    assert main([*args, "--cost-probe", "--probe-contention", "1"]) == 0
    captured = capsys.readouterr()
    # the probe paired the target's calls with the draft's: one round, both slowdowns
    assert "; beside each other (1 paired round): target " in " ".join(captured.err.split())
    (probe,) = load_run_record(out).cost_probes
    assert probe.costs.contention_method == "paired-calls"
    assert probe.costs.target.concurrent_slowdown.n == 1
    assert probe.costs.draft.concurrent_slowdown.value > 0
    rows = json.loads(captured.out)
    assert [r["config"] for r in rows] == ["target", "sync k1=2 k2=2"]
    record = json.loads(out.read_text())
    assert record["kind"] == "specmodel-run" and record["versions"]["torch"]
    assert record["machine"]["cores"] >= 1
    assert record["schema_version"] == 2
    ran = record["configs"][1]["config"]
    assert ran["token"] == {"method": "draft_model", "model": str(smollm_path),
                            "prompt_lookup_min": 1, "prompt_lookup_max": 3}
    assert ran["verifier"]["kind"] == "exact" and record["models"]["verifier"] == "exact"
    problem = record["configs"][1]["problems"][0]
    assert {"output", "steps", "accepted_steps", "drafted_steps", "output_tokens", "seconds",
            "correct"} <= set(problem)
    assert main(["validate", str(out), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["measured_speedup"] == 1.0
    assert rows[1]["predicted_speedup"] > 1.0 and rows[1]["measured_speedup"] > 0
    # --resume keeps what is there and runs nothing new: the real engines' name and
    # execution are what the check before loading expects, so no model loads.
    before = out.read_text()
    assert main([*args[:-1], "--resume"]) == 0
    assert "nothing decoded, no model loaded" in " ".join(capsys.readouterr().err.split())
    assert json.loads(out.read_text())["configs"] == json.loads(before)["configs"]


@pytest.mark.usefixtures("quick_decoder_model")
def test_a_static_run_records_its_cache_and_validate_holds_it_against_the_costs(
        smollm_path, tmp_path, capsys) -> None:
    """``decode --decode-path static`` records the length of the static caches its calls
    ran on (prepared for its longest call); ``validate`` notes a calibration whose engine
    costs were timed on other caches (grown cell by cell, or another length) and says
    nothing of one timed on the run's."""
    from cli.main import main
    from specmodel.formats.run_record import load_run_record

    results = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
    out = tmp_path / "static.json"
    assert main(["decode", "--target", str(smollm_path), "--k1", "1", "--k2", "2",
                 "--problems", "1", "--max-steps", "2", "--max-step-tokens", "8",
                 "--delimiter", "\\n", "--decode-path", "static", "-o", str(out)]) == 0
    prepared = " ".join(capsys.readouterr().err.split())
    record = load_run_record(out)
    assert record.settings.static_cache == 256  # a ~90-token prompt and 3 x 8 + 64 more
    assert "(static caches of 256)" in prepared

    def note(calibration: str) -> str:
        assert main(["validate", str(out), "--calibration", str(results / calibration)]) == 0
        said = " ".join(capsys.readouterr().out.split())
        return said[said.find("note: engine costs: the calibration timed its calls"):]

    assert note("heldout_05b_calibration_static.json").startswith(
        "note: engine costs: the calibration timed its calls on static caches grown as "
        "each cell needed (up to 512 positions), the run's static caches had 256")
    assert note("heldout_05b_calibration_static1024.json").startswith(
        "note: engine costs: the calibration timed its calls on static caches of 1024 "
        "positions, the run's static caches had 256")
    # Every call is logged with the shape the engine ran: the first call of a problem
    # prefills its whole prompt, the next only what the reused static cache lacks; a call
    # with token speculation inside (k2 = 2) reports no iterations and is not priced.
    plain, spec = (c.problems[0].calls for c in record.configs)
    assert [c.role for c in plain] == ["target"] * len(plain) and len(plain) == 2
    assert plain[0].prefilled_tokens == plain[0].prompt_tokens[0] > 50
    assert 0 < plain[1].prefilled_tokens < plain[1].prompt_tokens[0]
    assert all(c.iterations >= c.step_tokens[0] for c in plain)
    assert all(c.iterations is None and c.prompt_tokens for c in spec)
    costs = ["--calibration", str(results / "heldout_05b_calibration_static.json")]
    assert main(["audit-calls", str(out), *costs]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "logged engine calls against their price" in said
    assert "token k2=2: 2 call(s) not priced" in said
    assert main(["audit-calls", str(out), *costs, "--json"]) == 0
    audit = json.loads(capsys.readouterr().out)
    (group,) = audit["groups"]  # the target alone's one-row calls, priced
    assert (group["role"], group["rows"], group["calls"]) == ("target", 1, 2)
    assert group["priced"] > 0 and group["iterations"] >= group["longest_step"]
    assert audit["unpriced"] == {"token k2=2": 2}
    assert audit["speedups"]["token k2=2"]["priced_calls"] is None
    # --cost-probe: a probe before the first configuration decodes, kept in the record,
    # and validate --costs-at-run-time prices with the costs it rescales
    eager = tmp_path / "eager.json"
    assert main(["decode", "--target", str(smollm_path), "--k1", "1", "--k2", "2",
                 "--problems", "1", "--max-steps", "2", "--max-step-tokens", "8",
                 "--delimiter", "\\n", "--cost-probe", "-o", str(eager)]) == 0
    assert "cost probe: target T(1, " in capsys.readouterr().err
    probed = load_run_record(eager)
    assert probed.settings.static_cache is None  # the eager path
    (probe,) = probed.cost_probes
    context = round(probed.settings.prompt_tokens)
    assert probe.before == "target" and probe.costs.draft is None
    assert [(p.batch, p.context) for p in probe.costs.target.points] == [(1, context),
                                                                         (2, context)]
    # a calibration of another model is refused, named; one of this model whose costs
    # are twice the probe's reads the machine at half of them
    assert main(["validate", str(eager), *costs, "--costs-at-run-time"]) == 2
    assert "the calibration's engine costs are of 'qwen2.5-coder-0.5b'" in " ".join(
        capsys.readouterr().err.split())
    from specmodel.formats.calibration import load_calibration, save_calibration

    slow = load_calibration(results / "heldout_05b_calibration_static.json").model_copy(
        update={"engine_costs": probe.costs.scaled(2.0)})
    save_calibration(slow, tmp_path / "slow.json")
    assert main(["validate", str(eager), "--calibration", str(tmp_path / "slow.json"),
                 "--costs-at-run-time"]) == 0
    said = " ".join(capsys.readouterr().out.split())
    # half, unless the probe's own b = 2 cell came out cheaper per token than its b = 1
    # (a noisy cell): the calibration's surface must not fall in b, so the least-squares
    # monotone fit gives both cells their mean, 2 (p1 + p2) / 2, and the ratios' geometric
    # mean reads sqrt(p1 p2) / (p1 + p2) (just below half for a small fall)
    one, two = (p.per_token for p in sorted(probe.costs.target.points, key=lambda p: p.batch))
    half = 0.5 if two >= one else (one * two) ** 0.5 / (one + two)
    assert (f"cost probes (1, timed beside the run): the target's time per token "
            f"x{half:.2f} ") in said


def test_a_model_that_will_not_load_is_one_line_and_exit_2(tmp_path, capsys) -> None:
    from cli.main import main

    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text("{}")
    assert main(["decode", "--target", str(bad), "--k1", "1", "--problems", "1",
                 "-o", str(tmp_path / "run.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "will not load" in err[0]


def test_decode_runs_another_datasets_problems_and_scores_them_by_its_scorer(
        smollm_path, tmp_path) -> None:
    """``decode --dataset leg_counting``: the real decoder writes steps for that dataset's
    prompts, the record names the dataset, and each answer is judged by its scorer."""
    from cli.main import main
    from profiler.problems import format_prompt, score_answer
    from specmodel.formats.run_record import load_run_record

    out = tmp_path / "legs.json"
    assert main(["decode", "--target", str(smollm_path), "--k1", "1", "--problems", "2",
                 "--seed", "5", "--dataset", "leg_counting", "--max-steps", "3",
                 "--max-step-tokens", "12", "--delimiter", "\\n", "--no-baseline",
                 "-o", str(out)]) == 0
    record = load_run_record(out)
    assert (record.settings.dataset, record.settings.seed) == ("leg_counting", 5)
    problems = load_problems(2, seed=5, dataset="leg_counting")
    ran = record.configs[0].problems
    assert [p.problem for p in ran] == [0, 1]
    for p, problem in zip(ran, problems, strict=True):
        assert p.steps and p.output_tokens > 0
        assert p.correct == score_answer(problem, p.output)
        assert "legs" in format_prompt(problem)
