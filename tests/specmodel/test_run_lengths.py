"""A run's step lengths read back from its call log (:mod:`specmodel.run_lengths`) and the
decoder model at them (``validate --lengths-as-run``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cli.main import main
from specmodel.config import SpecConfig
from specmodel.formats.calibration import load_calibration
from specmodel.formats.run_record import RunRecord, load_run_record
from specmodel.prediction import at_run_lengths, compare, decoder_prediction
from specmodel.run_lengths import (
    RunLengths,
    lengths_source,
    padding_ratio,
    run_lengths,
    with_run_lengths,
)

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
CALIBRATION = RESULTS / "heldout_05b_profile_run30_epyc1203.json"
"""A profiled calibration with its answers' step lengths (thirty problems)."""
SEED26 = RESULTS / "heldout_05b_s26_epyc1204_round1.run.json"
"""A held-out sweep's round with every call logged."""


def sync_log(pairs: list[tuple[int, int]], verdicts: list[bool], k1: int,
             off_path: int = 99) -> tuple[list[dict], list[dict], int, int, int]:
    """The steps and calls the synchronous decoder logs for an answer whose target and
    draft write ``pairs`` at each index along it, judging its drafts by ``verdicts`` in
    turn (steps off the answer write ``off_path`` tokens).  Also (accepted, judged,
    expected filled) — the draft lengths never asked for."""
    steps, calls = [], []
    s = accepted = judged = filled = 0
    verdict = iter(verdicts)
    while s < len(pairs):
        depth = min(k1 - 1, len(pairs) - s - 1)
        a, on = 0, True
        for _ in range(depth):
            ok = next(verdict, False)
            judged += 1 if on else 0
            if on and ok:
                a += 1
            elif on:
                on = False
        accepted += a
        # draft j runs from the prefix with the first j drafts: on the answer for j <= a
        for j in range(depth):
            calls.append({"role": "draft", "start": 0.0, "seconds": 1.0, "rows": 1,
                          "step_tokens": [pairs[s + j][1] if j <= a else off_path]})
        rows = [pairs[s + j][0] if j <= a else off_path for j in range(depth + 1)]
        calls.append({"role": "target", "start": 0.0, "seconds": 1.0, "rows": len(rows),
                      "step_tokens": rows})
        steps += [{"text": "d\n", "source": "draft", "tokens": pairs[s + j][1]}
                  for j in range(a)]
        steps.append({"text": "t\n", "source": "target", "tokens": pairs[s + a][0]})
        filled += a == depth  # no draft asked where the accepted ones led (or none)
        s += a + 1
    return steps, calls, accepted, judged, filled


def record_of(problems: list[tuple[list[dict], list[dict], int, int]], k1: int = 2,
              mode: str = "sync", width: int = 1) -> RunRecord:
    def problem(i: int, steps: list[dict], calls: list[dict], acc: int, jud: int) -> dict:
        return {"problem": i, "output": "x", "steps": steps, "drafted_steps": jud,
                "accepted_steps": acc, "wasted_draft_steps": 0, "target_steps": 1,
                "target_batches": 1, "output_tokens": 10, "seconds": 1.0,
                "draft_seconds": 0.1, "target_seconds": 0.8, "verify_seconds": 0.0,
                "correct": False, "finished": "max_steps", "calls": calls}

    def totals(n: int) -> dict:
        return {"problems": n, "output_tokens": 10 * n, "seconds": float(n),
                "tokens_per_second": 10.0, "accuracy": 0.0}

    label = f"{mode} k1={k1} k2=1" + (f" W={width}" if width > 1 else "")
    return RunRecord.model_validate({
        "schema_version": 2, "kind": "specmodel-run", "created": "2026-12-04T00:00:00+00:00",
        "engine": "transformers", "baseline": "target",
        "configs": [
            {"label": "target", "config": {"k1": 1, "k2": 1}, "totals": totals(len(problems)),
             "problems": []},
            {"label": label, "config": {"mode": mode, "k1": k1, "k2": 1, "width": width},
             "totals": totals(len(problems)),
             "problems": [problem(i, *p) for i, p in enumerate(problems)]}]})


lengths_st = st.integers(1, 48)


@given(pairs=st.lists(st.tuples(lengths_st, lengths_st), min_size=1, max_size=14),
       verdicts=st.lists(st.booleans(), max_size=30), k1=st.integers(2, 4))
@settings(max_examples=150, deadline=None)
def test_the_walk_recovers_every_pair_on_the_answer(pairs, verdicts, k1) -> None:
    steps, calls, acc, jud, filled = sync_log(pairs, verdicts, k1)
    got = run_lengths(record_of([(steps, calls, acc, jud)], k1=k1))
    assert got.config == f"sync k1={k1} k2=1"
    (answer,) = got.answers
    assert len(answer) == len(pairs) == len(steps)
    assert [t for t, _ in answer] == [t for t, _ in pairs]  # every target length
    wrong = [i for i, (p, q) in enumerate(zip(answer, pairs, strict=True)) if p != q]
    assert len(wrong) <= got.filled == filled
    assert all(answer[i][1] == answer[i][0] for i in wrong)  # filled with the target's
    assert got.verdicts == ((acc, jud),)


def test_the_walk_by_hand_and_a_draft_that_ends_the_answer() -> None:
    # k1 = 2: index 0 rejected, 1 accepted (2 then led to: its draft never asked),
    # 3 a draft that ends the answer, accepted (no target row for it).
    steps = [{"text": "a\n", "source": "target", "tokens": 41},
             {"text": "b\n", "source": "draft", "tokens": 3},
             {"text": "c\n", "source": "target", "tokens": 15},
             {"text": "d", "source": "draft", "tokens": 2}]
    calls = [{"role": "draft", "start": 0, "seconds": 1, "rows": 1, "step_tokens": [19]},
             {"role": "target", "start": 0, "seconds": 1, "rows": 2, "step_tokens": [41, 42]},
             {"role": "draft", "start": 0, "seconds": 1, "rows": 1, "step_tokens": [3]},
             {"role": "target", "start": 0, "seconds": 1, "rows": 2, "step_tokens": [3, 15]},
             {"role": "draft", "start": 0, "seconds": 1, "rows": 1, "step_tokens": [2]},
             {"role": "target", "start": 0, "seconds": 1, "rows": 1, "step_tokens": [5]}]
    got = run_lengths(record_of([(steps, calls, 2, 3)]))
    assert got.answers == (((41, 19), (3, 3), (15, 15), (5, 2)),)
    assert got.filled == 1 and got.steps == 4
    assert padding_ratio(got.answers) == pytest.approx((41 + 15 + 15) / (41 + 3 + 15))


def test_a_log_that_does_not_match_its_steps_is_refused() -> None:
    steps, calls, acc, jud, _ = sync_log([(5, 6), (7, 8), (9, 9)], [False, False], 2)
    with pytest.raises(ValueError, match="account for 2 of 3 committed steps"):
        run_lengths(record_of([(steps, calls[:-1], acc, jud)]))
    with pytest.raises(ValueError, match="logged no calls"):
        run_lengths(record_of([(steps, [], acc, jud)]))
    with pytest.raises(ValueError, match="draft calls with no target call"):
        run_lengths(record_of([(steps, calls[:2] + calls[2:3], acc, jud)]))
    two = [dict(c, rows=3, step_tokens=[5, 6, 7]) if c["role"] == "target" else c
           for c in calls]
    with pytest.raises(ValueError, match="a target call of 3 rows after 1 draft calls"):
        run_lengths(record_of([(steps, two, acc, jud)]))


def test_only_a_synchronous_one_branch_configuration_is_read() -> None:
    steps, calls, acc, jud, _ = sync_log([(5, 6), (7, 8)], [True], 2)
    for mode, width in (("async", 1), ("sync", 2)):
        rec = record_of([(steps, calls, acc, jud)], mode=mode, width=width)
        with pytest.raises(ValueError, match="no synchronous one-branch configuration"):
            lengths_source(rec)
        label = rec.configs[1].label
        with pytest.raises(ValueError, match=f"label {label!r}: step lengths are read from"):
            run_lengths(rec, label)
    with pytest.raises(ValueError, match="label 'nope' is not among"):
        run_lengths(record_of([(steps, calls, acc, jud)]), "nope")


@given(st.lists(st.lists(lengths_st, min_size=1, max_size=10), min_size=1, max_size=4))
def test_padding_ratio_is_at_least_one_and_one_for_steps_of_one_length(answers) -> None:
    got = padding_ratio([[(t, 1) for t in a] for a in answers])
    if all(len(a) < 2 for a in answers):
        assert got is None
        return
    assert got >= 1.0
    assert padding_ratio([[(a[0], 1)] * len(a) for a in answers]) in (None, 1.0)


def test_with_run_lengths_carries_them_and_keeps_the_rest() -> None:
    cal = load_calibration(CALIBRATION)
    lengths = RunLengths("sync k1=2 k2=1", (((41, 19), (3, 3)), ((11, 16), (25, 1), (3, 18))),
                         ((1, 2), (0, 3)), 0)
    got = with_run_lengths(cal, lengths)
    assert got.step.step_length_answers == [[(41, 19), (3, 3)], [(11, 16), (25, 1), (3, 18)]]
    assert got.step.problem_verdicts == [(1, 2), (0, 3)]
    assert got.step.step_tokens_histogram == {3: 2, 11: 1, 25: 1, 41: 1}
    assert got.step.draft_step_tokens_histogram == {1: 1, 3: 1, 16: 1, 18: 1, 19: 1}
    assert got.step.step_tokens_mean == pytest.approx(83 / 5)
    assert sum(n for *_, n in got.step.step_length_pairs) == 5
    assert got.step.alpha1 == cal.step.alpha1 and got.engine_costs == cal.engine_costs
    assert got.step.step_length_verdicts == cal.step.step_length_verdicts
    unjudged = RunLengths("x", lengths.answers, ((1, 2), (0, 0)), 0)
    assert with_run_lengths(cal, unjudged).step.problem_verdicts is None


def test_at_its_own_answers_the_model_is_the_calibrations() -> None:
    """A calibration's own answers and verdicts put back give the same prediction: the
    copy changes nothing else (its pairs and histograms are the answers' counts)."""
    cal = load_calibration(CALIBRATION)
    own = RunLengths("own", tuple(tuple(map(tuple, a)) for a in cal.step.step_length_answers),
                     tuple(map(tuple, cal.step.problem_verdicts)), 0)
    cfg = SpecConfig(mode="sync", k1=2, k2=1)
    same = at_run_lengths(cal, cfg, own, problems=300, prompt_tokens=73)
    plain = decoder_prediction(cal, cfg, problems=300, draws=1, prompt_tokens=73)
    assert same.speedup == pytest.approx(plain.speedup, rel=1e-12)


def _small(tmp_path: Path) -> Path:
    """Seed 26's first round, the target alone and sync (2, 1), two problems."""
    data = json.loads(SEED26.read_text())
    data["configs"] = [dict(c, problems=c["problems"][:2],
                            totals=dict(c["totals"], problems=2))
                       for c in data["configs"] if c["label"] in ("target", "sync k1=2 k2=1")]
    out = tmp_path / "small.run.json"
    out.write_text(json.dumps(data))
    return out


def test_compare_at_the_run_lengths_on_a_real_record(tmp_path) -> None:
    rec = load_run_record(_small(tmp_path))
    cal = load_calibration(CALIBRATION)
    rows = {r.config: r for r in compare(rec, cal, lengths=run_lengths(rec),
                                         acceptance_as_run=True)}
    sync = rows["sync k1=2 k2=1"]
    assert sync.decoder_at_run_lengths is not None and sync.decoder_at_run_lengths > 0
    assert sync.decoder_at_run_lengths_error == pytest.approx(
        sync.decoder_at_run_lengths / sync.measured_speedup - 1)
    assert 0 < sync.decoder_at_run_lengths_step_acceptance < 1
    assert sync.decoder_at_run_lengths_and_acceptance is not None
    assert rows["target"].decoder_at_run_lengths_and_acceptance is None  # judged none
    assert all(r.decoder_at_run_lengths is None for r in compare(rec, cal))


def test_validate_lengths_as_run_prints_its_table(tmp_path, capsys) -> None:
    assert main(["validate", str(_small(tmp_path)), "-c", str(CALIBRATION),
                 "--lengths-as-run"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "at the step lengths the run's problems wrote" in out
    assert "lengths read from 'sync k1=2 k2=1': 2 problems, 24 steps" in out


def test_validate_lengths_as_run_without_a_sync_configuration_exits_2(tmp_path,
                                                                       capsys) -> None:
    data = json.loads(SEED26.read_text())
    data["configs"] = [c for c in data["configs"] if c["label"] in ("target", "token k2=3")]
    path = tmp_path / "token.run.json"
    path.write_text(json.dumps(data))
    code = main(["validate", str(path), "-c", str(CALIBRATION), "--lengths-as-run"])
    out, err = capsys.readouterr()
    text = " ".join((out + err).split())
    assert code == 2, text
    assert "--lengths-as-run: the record has no synchronous one-branch" in text
    assert "Traceback" not in text
