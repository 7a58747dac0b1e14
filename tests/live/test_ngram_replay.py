"""The prompt-lookup replay counts exactly what transformers does: same forward passes."""

from __future__ import annotations

import pytest

from profiler.engines import HFEngine
from profiler.ngram_replay import measure_hf_token_speculation, replay_counters
from profiler.problems import format_prompt, load_problems

pytestmark = pytest.mark.live


def test_replay_matches_transformers_prompt_lookup(smollm_path) -> None:
    engine = HFEngine(smollm_path, threads=1)
    torch = engine._torch
    calls: list[int] = []
    engine.model.register_forward_hook(lambda *_: calls.append(1))
    for p in load_problems(2, seed=0):
        enc = engine.tokenizer([format_prompt(p)], return_tensors="pt")
        n = enc.input_ids.shape[1]
        with torch.inference_mode():
            plain = engine.model.generate(**enc, max_new_tokens=40, do_sample=False)[0, n:]
            calls.clear()
            spec = engine.model.generate(**enc, max_new_tokens=40, do_sample=False,
                                         prompt_lookup_num_tokens=3,
                                         max_matching_ngram_size=2)[0, n:]
        assert spec.tolist() == plain.tolist()
        c = replay_counters(enc.input_ids[0].tolist(), plain.tolist(), 3, 2)
        # One target forward pass per verification pass, as the replay counts them.
        assert len(calls) == c["num_target_passes"]
        assert c["num_drafts"] > 0


@pytest.mark.slow  # the timed plain-vs-speculative run; the exact replay is tested above
def test_measure_hf_token_speculation(smollm_path) -> None:
    engine = HFEngine(smollm_path, threads=1)
    prompts = [format_prompt(p) for p in load_problems(2, seed=1)]
    summary, record = measure_hf_token_speculation(engine, prompts, gamma=3,
                                                   prompt_lookup_max=2, max_tokens=32)
    assert all(record.outputs_identical)
    assert 0 < summary.alpha2 < 1
    assert summary.speedup is not None and summary.speedup > 0
    assert summary.c2 is not None and summary.c2 >= 0
    assert len(summary.conditional_acceptance) == 3
    assert record.counters.num_drafts == summary.drafts


def test_token_spread_replays_the_calibrations_whole_answers(tmp_path) -> None:
    """`profile token-spread` on the committed 0.5B calibration: prompt lookup replayed
    on the 10 whole answers of its steps phase's pairs record gives per-problem counts
    that add up to the replay of all of them, every other number of the calibration
    kept; the decoder model then draws token acceptance per problem, and α2's
    uncertainty counts the problems as clusters."""
    from pathlib import Path

    from cli.main import main
    from specmodel.decodermodel import AcceptanceModel
    from specmodel.formats.calibration import load_calibration

    results = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
    src = results / "heldout_05b_calibration_verdicts.json"
    out = tmp_path / "spread.json"
    assert main(["profile", "token-spread", str(src), "-o", str(out), "--record",
                 str(results / "heldout_05b_calibration_whole.pairs.jsonl")]) == 0
    old, new = load_calibration(src), load_calibration(out)
    before, after = old.token.model_dump(), new.token.model_dump()
    assert [k for k in before if before[k] != after[k]] == ["problem_counters"]
    counts = new.token.problem_counters
    assert counts is not None and len(counts) == 10
    assert all(0 <= k <= n for k, n in counts)
    assert new.step == old.step and new.engine_costs == old.engine_costs
    phase = new.provenance.settings.phases.tokens
    assert "Spread between problems added" in phase.description
    acc = AcceptanceModel.from_calibration(new)
    assert len(acc.token_problem_spread) == 10
    assert acc.token_samples is not None and acc.token_samples < old.token.samples
    assert not any("token acceptance by problem" in m for m in acc.missing)
    assert main(["profile", "token-spread", str(src), "-o", str(tmp_path / "x.json"),
                 "--record", str(results / "heldout_15b_calibration.pairs.jsonl")]) == 2


def test_token_rates_from_the_whole_answers(tmp_path) -> None:
    """`profile token-spread --rates-from-answers`: the token section's rates become the
    replay's summed over the 10 whole answers (the same problem counters as without the
    option, which add up to its drafted tokens), c2 and the rest of the calibration kept;
    the decoder model then writes the replay's tokens per pass."""
    from pathlib import Path

    from cli.main import main
    from specmodel.decodermodel import AcceptanceModel
    from specmodel.formats.calibration import load_calibration

    results = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
    src = results / "heldout_05b_calibration_spread.json"
    out = tmp_path / "rates.json"
    assert main(["profile", "token-spread", str(src), "-o", str(out), "--record",
                 str(results / "heldout_05b_calibration_whole.pairs.jsonl"),
                 "--rates-from-answers"]) == 0
    old, new = load_calibration(src), load_calibration(out)
    t = new.token
    assert t.problem_counters == old.token.problem_counters
    assert t.samples == sum(n for _, n in t.problem_counters)
    assert t.c2 == old.token.c2 and t.num_speculative_tokens == old.token.num_speculative_tokens
    assert t.draft_rate is not None and t.target_passes is not None
    assert t.target_passes > old.token.target_passes  # whole answers, not 96 tokens
    assert t.alpha2 != old.token.alpha2
    assert new.step == old.step and new.engine_costs == old.engine_costs
    assert "Rates from that replay" in new.provenance.settings.phases.tokens.description
    per_pass = AcceptanceModel.from_calibration(new).tokens_per_pass(3)
    assert per_pass > AcceptanceModel.from_calibration(old).tokens_per_pass(3)
    # every shorter draft replayed again: its own rates, the longest the pooled ones
    by_k2 = t.rates_by_k2
    assert by_k2 is not None and sorted(by_k2) == [2, 3, 4, 5]
    assert by_k2[5].acceptance_by_position == t.acceptance_by_position
    assert by_k2[5].draft_rate == t.draft_rate and by_k2[5].samples == t.samples
    assert all(len(r.acceptance_by_position) == k2 - 1 for k2, r in by_k2.items())
    assert [by_k2[k].target_passes for k in (2, 3, 4, 5)] == sorted(
        (by_k2[k].target_passes for k in (2, 3, 4, 5)), reverse=True)
    # each k2's rates account for the same answers: tokens per pass × passes is the
    # answers' token count at every k2 (within the product form's small bias)
    acc = AcceptanceModel.from_calibration(new)
    written = [acc.tokens_per_pass(k) * by_k2[k].target_passes for k in (2, 3, 4, 5)]
    assert max(written) / min(written) < 1.03
    assert "rates_by_k2: k2 = 2" in new.provenance.settings.phases.tokens.description


def test_profile_run_derives_token_rates_from_the_answers_once(tmp_path) -> None:
    """`profile run`'s step after its steps and tokens phases, on the committed 0.5B
    calibration (tokens phase of 6 prompts, no spread) and its pairs record: 'answers'
    takes the rates and each k2's from the whole answers; a resume that measured nothing
    again leaves them; 'prompts' restores the tokens phase's rates with the spread kept,
    nothing of the earlier derivation left; a phase measured again derives afresh."""
    from pathlib import Path

    from cli.profile import _rates_from_replay
    from profiler.calibrate import Recorder, rederive_tokens
    from specmodel.formats.calibration import load_calibration

    results = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
    src = load_calibration(results / "heldout_05b_calibration_verdicts.json")
    pairs = results / "heldout_05b_calibration_whole.pairs.jsonl"
    assert src.token.problem_counters is None and src.token.rates_by_k2 is None
    with Recorder(tmp_path / "run.json", src) as rec:
        _rates_from_replay(rec, pairs, "answers", remeasured=False)
        answers = rec.calibration.token
        assert answers.rates_by_k2 is not None and sorted(answers.rates_by_k2) == [2, 3, 4, 5]
        assert answers.problem_counters is not None and len(answers.problem_counters) == 10
        assert answers.c2 == src.token.c2 and answers.alpha2 != src.token.alpha2
        once = rec.calibration
        _rates_from_replay(rec, pairs, "answers", remeasured=False)
        assert rec.calibration is once  # a resume: already derived so
        _rates_from_replay(rec, pairs, "prompts", remeasured=False)
        prompts = rec.calibration.token
        assert prompts.rates_by_k2 is None
        assert prompts.problem_counters == answers.problem_counters
        measured = rederive_tokens(src).section
        assert prompts.alpha2 == measured.alpha2
        assert prompts.acceptance_by_position == measured.acceptance_by_position
        desc = rec.calibration.provenance.settings.phases.tokens.description
        assert "Rates from that replay" not in desc
        assert desc.count("Spread between problems added") == 1
        _rates_from_replay(rec, pairs, "answers", remeasured=True)
        assert rec.calibration.token == answers
        assert rec.calibration.step == src.step
        assert rec.calibration.engine_costs == src.engine_costs
    assert load_calibration(tmp_path / "run.json").token == answers


def test_token_spread_adds_the_target_alone_answers_of_run_records(tmp_path) -> None:
    """`profile token-spread --answers`: a run record's target-alone answers (3 problems
    of seed 2) join the steps phase's 10 in the replay, each problem once however often
    it is given, and the description names the record; answers of another target, or
    cut with another token cap, are refused naming the option's record (exit 2); and
    `profile run`'s derivation with them is not skipped on a resume, nor kept by a
    resume without them."""
    import json
    from pathlib import Path

    from cli.main import main
    from cli.profile import _rates_from_replay
    from profiler.answers import run_answers
    from profiler.calibrate import Recorder
    from specmodel.formats.calibration import load_calibration

    results = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
    src = results / "heldout_05b_calibration_spread.json"
    pairs = results / "heldout_05b_calibration_whole.pairs.jsonl"
    run = results / "heldout_05b_round1.run.json"
    cut, answers = run_answers(run)
    assert (cut.seed, cut.max_step_tokens, cut.max_steps, cut.delimiter) == (2, 48, 12, "\n")
    assert [a.problem for a in answers] == [0, 1, 2] and all(a.steps for a in answers)
    alone = tmp_path / "alone.json"
    assert main(["profile", "token-spread", str(src), "-o", str(alone), "--record",
                 str(pairs), "--rates-from-answers"]) == 0
    both = tmp_path / "both.json"
    assert main(["profile", "token-spread", str(src), "-o", str(both), "--record",
                 str(pairs), "--rates-from-answers", "--answers", str(run),
                 "--answers", str(results / "heldout_05b_round2.run.json")]) == 0
    a, b = load_calibration(alone).token, load_calibration(both).token
    assert a.problem_counters is not None and b.problem_counters is not None
    assert len(a.problem_counters) == 10 and len(b.problem_counters) == 13
    assert b.problem_counters[:10] == a.problem_counters
    assert b.samples == sum(n for _, n in b.problem_counters) > a.samples
    phase = load_calibration(both).provenance.settings.phases.tokens
    assert f"3 answers of run record {run}" in phase.description
    assert "0 answers of run record" in phase.description
    assert phase.answer_records == [str(run), str(results / "heldout_05b_round2.run.json")]
    assert load_calibration(alone).provenance.settings.phases.tokens.answer_records is None
    assert main(["profile", "token-spread", str(src), "-o", str(tmp_path / "x.json"),
                 "--record", str(pairs), "--answers",
                 str(results / "heldout_15b_round1.run.json")]) == 2
    recut = json.loads(run.read_text())
    for c in recut["configs"]:
        c["config"]["max_step_tokens"] = 40
    other = tmp_path / "cap40.run.json"
    other.write_text(json.dumps(recut))
    assert main(["profile", "token-spread", str(src), "-o", str(tmp_path / "x.json"),
                 "--record", str(pairs), "--answers", str(other)]) == 2
    assert main(["profile", "token-spread", str(src), "-o", str(tmp_path / "x.json"),
                 "--record", str(pairs), "--answers", str(tmp_path / "none.json")]) == 2
    assert not (tmp_path / "x.json").exists()
    with Recorder(tmp_path / "run.json", load_calibration(src)) as rec:
        _rates_from_replay(rec, pairs, "answers", [run], remeasured=False)
        first = rec.calibration
        assert len(first.token.problem_counters or []) == 13
        _rates_from_replay(rec, pairs, "answers", [run], remeasured=False)
        assert rec.calibration is not first  # derived again: the records may have grown
        assert rec.calibration.token == first.token
        _rates_from_replay(rec, pairs, "answers", remeasured=False)
        assert rec.calibration.token == a  # the steps phase's answers alone again
        phase = rec.calibration.provenance.settings.phases.tokens
        assert phase.answer_records is None and "answers of run record" not in (
            phase.description)


def test_first_problems_derives_the_ten_problem_calibration_from_the_thirty(
        tmp_path, capsys) -> None:
    """`profile first-problems --problems 10` on the thirty-problem 1.5B calibration
    writes the ten-problem variant's step and token sections (a script made it, from the
    EPYC's ten-problem record): steps from the first ten problems' pairs, token rates
    replayed on their ten answers alone; engine costs kept.  A token section that took
    run records' answers too is refused (exit 2)."""
    from pathlib import Path

    from cli.main import main
    from profiler.calibrate import Recorder, token_spread
    from specmodel.formats.calibration import load_calibration

    results = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
    src = results / "heldout_15b_calibration30_xeon.json"
    pairs = results / "heldout_15b_profile_run30_xeon.pairs.jsonl"
    out = tmp_path / "ten.json"
    assert main(["profile", "first-problems", str(src), "-o", str(out), "--problems", "10",
                 "--record", str(pairs)]) == 0
    assert "first 10 of 30 problems" in capsys.readouterr().out
    got, ten = load_calibration(out), load_calibration(
        results / "heldout_15b_calibration10_xeon.json")
    thirty = load_calibration(src)
    assert got.step == ten.step and got.token == ten.token
    assert got.engine_costs == thirty.engine_costs and got.batch_cost == thirty.batch_cost
    assert got.token.problem_counters is not None and len(got.token.problem_counters) == 10
    assert got.token.rates_by_k2 is not None
    phase = got.provenance.settings.phases.tokens
    assert "(its first 10 problems)" in phase.description
    assert phase.answer_records is None
    with Recorder(tmp_path / "with-run.json", thirty) as rec:
        rec.add(token_spread(thirty, pairs, rates_from_answers=True,
                             answers=[results / "answers_15b_seed1_30.run.json"]))
    assert main(["profile", "first-problems", str(tmp_path / "with-run.json"), "-o",
                 str(tmp_path / "x.json"), "--problems", "10", "--record", str(pairs)]) == 2
    assert "run records too" in " ".join(capsys.readouterr().err.split())
    assert not (tmp_path / "x.json").exists()
