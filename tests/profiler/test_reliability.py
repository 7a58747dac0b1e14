"""Nothing lost, nothing silently wrong (issue 13), offline: the write lock against a real
second process, torn pairs records, resume keyed on every setting, the same model as
target and draft, and Ctrl-C → exit 130 with one line (a real subprocess, a real SIGINT).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import profiler.calibrate as calibrate
from profiler.step_profile import (
    check_record,
    profile_steps,
    read_pairs,
    read_record,
)
from profiler.verifiers import ExactMatch
from specmodel.formats.lock import FileLockedError, WriteLock, lock_path, resume_mismatch
from tests.profiler.test_calibrate import RUN, ScriptedEngine, _problems, fake_phases  # noqa: F401
from tests.profiler.test_decoder_config import scripted_run  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]
"""The repository root: the subprocesses import specmodel, profiler and cli from it."""


def _default_sigint() -> None:
    """In the child: Ctrl-C's default disposition, whatever the test runner inherited (a
    shell's background job starts with SIGINT ignored, and children inherit that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _python(code: str, *args: str, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args], cwd=ROOT,
                            env=env, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=_default_sigint, **kwargs)


HOLD = """
    import sys
    from specmodel.formats.lock import WriteLock
    with WriteLock(sys.argv[1]):
        print("locked", flush=True)
        sys.stdin.read()
"""
"""A second process that holds the write lock of argv[1] until its stdin closes."""


@pytest.fixture
def holder(tmp_path):
    """A real second process holding the write lock of tmp_path/out.json."""
    target = tmp_path / "out.json"
    proc = _python(HOLD, str(target))
    assert proc.stdout.readline().strip() == "locked", proc.stderr.read()
    yield target, proc
    if proc.poll() is None:
        proc.stdin.close()
        proc.wait(timeout=20)


# --- the write lock ---------------------------------------------------------------------


def test_a_second_writer_is_refused_at_once_naming_the_holder(holder) -> None:
    target, proc = holder
    with pytest.raises(FileLockedError) as err:
        WriteLock(target).acquire()
    assert str(err.value) == (f"{target} is being written by another specmodel process "
                              f"(pid {proc.pid}); wait for it or choose another --output")
    proc.stdin.close()
    assert proc.wait(timeout=20) == 0
    assert not lock_path(target).exists()  # released and removed by its holder
    with WriteLock(target) as lock:  # free again
        assert lock.held and lock_path(target).read_text().strip() == str(os.getpid())
    assert not lock_path(target).exists()


def test_a_killed_holder_leaves_no_lock_behind(holder) -> None:
    target, proc = holder
    proc.kill()  # SIGKILL: no cleanup runs, the kernel drops the lock
    proc.wait(timeout=20)
    assert lock_path(target).exists()  # the stale file is there …
    with WriteLock(target):  # … and does not block anyone
        pass


def test_the_lock_is_reentrant_within_one_process(tmp_path) -> None:
    outer = WriteLock(tmp_path / "x.json").acquire()
    with WriteLock(tmp_path / "x.json"):
        assert lock_path(tmp_path / "x.json").exists()
    assert lock_path(tmp_path / "x.json").exists()  # the outer holder still holds it
    outer.release()
    assert not lock_path(tmp_path / "x.json").exists()


@pytest.mark.parametrize("command", [
    ["profile", "batch-cost", "--model", "m"],
    ["profile", "steps", "--target", "tgt", "--draft", "drf", "--verifier", "exact"],
    ["profile", "tokens", "--model", "m"],
    [*RUN],
])
def test_every_profile_command_refuses_a_locked_output(holder, capsys, command,
                                                       fake_phases) -> None:  # noqa: F811
    from cli.main import main

    target, proc = holder
    target.write_text("theirs\n")
    assert main([*command, "-o", str(target)]) == 2
    err = capsys.readouterr().err
    assert err == (f"error: {target} is being written by another specmodel process (pid "
                   f"{proc.pid}); wait for it or choose another --output\n")
    assert target.read_text() == "theirs\n"  # nothing overwritten
    assert fake_phases == []  # nothing measured


def test_decode_refuses_a_locked_record_before_loading_models(holder, scripted_run,  # noqa: F811
                                                              capsys) -> None:
    from cli.main import main

    target, proc = holder
    assert main(["decode", "--k1", "2", "--verifier", "exact", "-o", str(target)]) == 2
    assert f"(pid {proc.pid})" in capsys.readouterr().err
    assert scripted_run["engines"] == []  # refused before any engine was built


def test_a_second_steps_run_never_deletes_the_pairs_being_written(holder) -> None:
    record, proc = holder
    record.write_text('{"kind": "specmodel-step-pairs", "version": 1, "key": {}}\n')
    eng = ScriptedEngine(["a <s>"], 1.0)
    with pytest.raises(FileLockedError, match=f"pid {proc.pid}"):
        profile_steps(eng, eng, ExactMatch(), _problems(1), record)
    assert record.read_text().startswith('{"kind": "specmodel-step-pairs"')
    assert eng.calls == 0


# --- torn records -----------------------------------------------------------------------


def _run(record: Path, *, resume: bool = False, key: dict | None = None, notes=None,
         problems: int = 2, steps: int = 3):
    target = ScriptedEngine(["a <s>", "b <s>", "#### 1 <s>"], 1.0)
    draft = ScriptedEngine(["a <s>", "x <s>", "#### 1 <s>"], 0.25)
    pairs = profile_steps(target, draft, ExactMatch(), _problems(problems), record,
                          steps_per_problem=steps, resume=resume, key=key,
                          note=None if notes is None else notes.append)
    return pairs, target.calls


def _untimed(pairs) -> list[tuple]:
    """The pairs without their wall times (the verifier's time varies run to run)."""
    return [(p.problem, p.step, p.target_text, p.draft_text, p.accepted) for p in pairs]


@pytest.mark.parametrize("torn", ['{"problem": 1, "step": 1, "target_te',  # killed mid-line
                                  '{"problem": 1, "step": 1}\n',  # a broken last record
                                  "partial-without-newline"])
def test_a_torn_last_line_is_dropped_and_never_merged(tmp_path, torn) -> None:
    clean = tmp_path / "clean.jsonl"
    full, _ = _run(clean)
    record = tmp_path / "r.jsonl"
    lines = clean.read_text().splitlines(keepends=True)
    record.write_text("".join(lines[:5]) + torn)  # header + 4 pairs, then the torn line
    rec = read_record(record)
    assert rec.torn and len(rec.pairs) == 4 and read_pairs(record) == full[:4]
    notes: list[str] = []
    pairs, calls = _run(record, resume=True, notes=notes)
    assert _untimed(pairs) == _untimed(full) and calls == 2  # the 2 missing pairs, unmerged
    assert len(notes) == 1 and "dropped a torn last line" in notes[0]
    lines = record.read_text().splitlines()  # every line whole, in order
    assert len(lines) == 7 and lines[:5] == clean.read_text().splitlines()[:5]
    assert _untimed(read_pairs(record)) == _untimed(full)


def test_a_damaged_line_before_the_end_is_an_error(tmp_path) -> None:
    record = tmp_path / "r.jsonl"
    _run(record)
    lines = record.read_text().splitlines()
    lines[2] = lines[2][:10]
    record.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match="damaged at line 3"):
        read_pairs(record)
    with pytest.raises(ValueError, match="damaged at line 3"):
        _run(record, resume=True)


# --- resume keyed on every setting ------------------------------------------------------

STEPS = dict(target="tgt", draft="drf", verifier="embedding", threshold=0.9,
             judge_model="judge", problems=2, seed=0, steps_per_problem=3, max_step_tokens=48,
             threads=1, delimiter="\n\n")


@pytest.mark.parametrize(("setting", "other", "named"), [
    ("seed", 1, "seed = 0, not 1"),
    ("max_step_tokens", 12, "max_step_tokens = 48, not 12"),
    ("steps_per_problem", 2, "steps_per_problem = 3, not 2"),
    ("problems", 1, "problems = 2, not 1"),
    ("verifier", "exact", "verifier_kind = 'embedding', not 'exact'"),
    ("threshold", 0.8, "threshold = 0.9, not 0.8"),
    ("target", "other", "target = 'tgt', not 'other'"),
    ("draft", "smollm2-135m", "draft = 'drf', not 'smollm2-135m'"),
    ("delimiter", "\n", "delimiter = '\\n\\n', not '\\n'"),
    ("threads", 2, "threads = 1, not 2"),
])
def test_a_pairs_record_refuses_a_resume_with_another_setting(tmp_path, setting, other,
                                                              named) -> None:
    record = tmp_path / "r.jsonl"
    _run(record, key=calibrate.steps_key(**STEPS))
    check_record(record, calibrate.steps_key(**STEPS))  # the same settings resume
    with pytest.raises(ValueError) as err:
        check_record(record, calibrate.steps_key(**{**STEPS, setting: other}))
    message = str(err.value)
    assert message.startswith(f"--resume: {record} was measured with ") and named in message
    assert "\n" not in message


def test_a_pairs_record_extends_to_more_steps_per_problem(tmp_path) -> None:
    """Greedy pairs are the first ones a longer run measures: --resume with more steps
    per problem keeps them, measures only the later steps and rewrites the header."""
    full, full_calls = _run(tmp_path / "full.jsonl",
                            key=calibrate.steps_key(**STEPS))  # 3 steps per problem
    record = tmp_path / "r.jsonl"
    short = calibrate.steps_key(**{**STEPS, "steps_per_problem": 1})
    first, _ = _run(record, key=short, steps=1)
    assert len(first) == 2 and read_record(record).key["steps_per_problem"] == 1
    with pytest.raises(ValueError, match="steps_per_problem = 3, not 1"):
        check_record(tmp_path / "full.jsonl", short)  # never fewer
    notes: list[str] = []
    pairs, calls = _run(record, resume=True, key=calibrate.steps_key(**STEPS), notes=notes)
    assert _untimed(sorted(pairs, key=lambda p: (p.problem, p.step))) == _untimed(full)
    assert calls == full_calls - 2  # the 2 recorded steps were not decoded again
    assert notes == [f"{record}: extended from 2 problems x 1 steps to 2 x 3 (its 2 pairs "
                     "kept)"]
    rec = read_record(record)
    assert rec.key["steps_per_problem"] == 3 and len(rec.pairs) == len(full)
    check_record(record, calibrate.steps_key(**STEPS))  # resumes as a 3-step record now
    with pytest.raises(ValueError, match="seed = 0, not 1"):  # nothing else may differ
        check_record(record, calibrate.steps_key(**{**STEPS, "steps_per_problem": 4,
                                                    "seed": 1}))


def test_a_pairs_record_extends_to_more_problems(tmp_path) -> None:
    """The first problems of a seed are the same however many are drawn: --resume with
    more problems keeps the recorded ones, measures only the new problems and rewrites
    the header; more problems and fewer steps is refused."""
    full, full_calls = _run(tmp_path / "full.jsonl", key=calibrate.steps_key(**STEPS))
    record = tmp_path / "r.jsonl"
    one = calibrate.steps_key(**{**STEPS, "problems": 1})
    first, _ = _run(record, key=one, problems=1)
    assert {p.problem for p in first} == {0}
    notes: list[str] = []
    pairs, calls = _run(record, resume=True, key=calibrate.steps_key(**STEPS), notes=notes)
    assert _untimed(sorted(pairs, key=lambda p: (p.problem, p.step))) == _untimed(full)
    assert calls == full_calls - len(first)  # problem 0 was not decoded again
    assert notes == [f"{record}: extended from 1 problems x 3 steps to 2 x 3 (its "
                     f"{len(first)} pairs kept)"]
    assert read_record(record).key["problems"] == 2
    with pytest.raises(ValueError, match="steps_per_problem = 3, not 2"):
        check_record(record, calibrate.steps_key(**{**STEPS, "problems": 3,
                                                    "steps_per_problem": 2}))


def test_profile_run_resume_with_more_steps_per_problem_measures_the_steps_on(
    fake_phases, tmp_path, capsys  # noqa: F811
) -> None:
    from cli.main import main

    out = tmp_path / "cal.json"
    assert main([*RUN, "-o", str(out), "--steps-per-problem", "2"]) == 0
    fake_phases.clear()
    assert main([*RUN, "-o", str(out), "--steps-per-problem", "4", "--resume"]) == 0
    assert fake_phases == ["steps"]  # only the steps phase goes on
    assert "already measured" in capsys.readouterr().out


def test_a_pack_is_keyed_by_its_pinned_sha256_and_versions_by_package(tmp_path) -> None:
    from profiler.packs import PACKS

    key = calibrate.steps_key(**{**STEPS, "draft": "smollm2-135m"})
    assert key["draft_sha256"] == PACKS["smollm2-135m"].sha256 and key["target_sha256"] is None
    assert set(key["versions"]) >= {"specmodel", "torch", "transformers"}
    older = {**key, "draft_sha256": "0" * 64, "versions": {**key["versions"], "torch": "1.0"}}
    message = resume_mismatch("r.jsonl", older, key)
    assert f"draft_sha256 = '{'0' * 64}', not '{key['draft_sha256']}'" in message
    assert f"versions.torch = '1.0', not '{key['versions']['torch']}'" in message


def test_a_pairs_record_from_before_the_key_is_refused(tmp_path) -> None:
    record = tmp_path / "r.jsonl"
    _run(record)
    lines = record.read_text().splitlines(keepends=True)
    record.write_text("".join(lines[1:]))  # the old format: pairs only
    with pytest.raises(ValueError, match=r"predates the resume key .* start over without "
                                         r"--resume"):
        _run(record, resume=True)
    pairs, _ = _run(record)  # starting over works and writes the key
    assert read_record(record).key is not None and len(pairs) == 6


def test_profile_steps_resume_with_another_seed_is_refused_before_models_load(
    tmp_path, capsys
) -> None:
    from cli.main import main

    out = tmp_path / "cal.json"
    record = out.with_suffix(".pairs.jsonl")
    key = calibrate.steps_key(**{**STEPS, "verifier": "exact", "problems": 8,
                                 "steps_per_problem": 4, "seed": 1})
    record.write_text(json.dumps({"kind": "specmodel-step-pairs", "version": 1, "key": key})
                      + "\n")
    rc = main(["profile", "steps", "--target", "tgt", "--draft", "drf", "--verifier", "exact",
               "-o", str(out), "--seed", "2", "--resume"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert f"--resume: {record} was measured with seed = 1, not 2;" in err


@pytest.mark.parametrize(("option", "value", "named"), [
    ("--seed", "3", "(batch_cost phase)"),  # batch_cost does not depend on the seed …
    ("--max-step-tokens", "12", "max_step_tokens = 48, not 12"),
    ("--threshold", "0.8", "threshold = 0.9, not 0.8"),
    ("--repeats", "5", "repeats = 3, not 5"),
    ("--num-speculative-tokens", "2", "num_speculative_tokens = 4, not 2"),
])
def test_profile_run_resume_names_the_setting_that_differs(
    fake_phases, tmp_path, capsys, option, value, named  # noqa: F811
) -> None:
    from cli.main import main

    out = tmp_path / "cal.json"
    run = [*RUN, "--verifier", "embedding", "-o", str(out)]
    assert main(run) == 0
    capsys.readouterr()
    rc = main([*run, option, value, "--resume"])
    err = capsys.readouterr().err
    if option == "--seed":  # … so it resumes; the steps phase is the first that differs
        assert rc == 2 and "(steps phase) was measured with seed = 0, not 3" in err
    else:
        assert rc == 2 and named in err
    assert err.count("\n") == 1


def test_profile_run_refuses_a_phase_from_before_the_key(fake_phases, tmp_path,  # noqa: F811
                                                         capsys) -> None:
    from cli.main import main

    out = tmp_path / "cal.json"
    assert main([*RUN, "-o", str(out), "--no-tokens"]) == 0
    data = json.loads(out.read_text())
    del data["provenance"]["settings"]["phases"]["batch_cost"]["versions"]
    out.write_text(json.dumps(data))
    capsys.readouterr()
    assert main([*RUN, "-o", str(out), "--no-tokens", "--resume"]) == 2
    err = capsys.readouterr().err
    assert "the batch_cost phase of" in err and "predates the resume key" in err


def test_decode_resume_with_other_settings_is_refused(tmp_path, scripted_run,  # noqa: F811
                                                      capsys) -> None:
    from cli.main import main

    out = tmp_path / "run.json"
    base = ["decode", "--k1", "2", "--verifier", "exact", "--problems", "1", "-o", str(out),
            "--json"]
    assert main(base) == 0
    capsys.readouterr()
    assert main([*base, "--resume"]) == 0  # the same settings: nothing to redo
    capsys.readouterr()
    for extra, named in ((["--seed", "4"], "seed = 0, not 4"),
                         (["--max-step-tokens", "30"], "max_step_tokens = 48, not 30"),
                         (["--target", "other"], "models.target = 'qwen2.5-coder-0.5b', not "
                                                 "'other'")):
        assert main([*base, *extra, "--resume"]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: --resume: {out} was measured with ") and named in err
        assert err.count("\n") == 1
    assert len(scripted_run["engines"]) == 2  # the first run's: refused before loading


# --- the same model as target and draft -------------------------------------------------


@pytest.mark.parametrize("command", [
    ["profile", "steps", "--verifier", "exact"],
    ["profile", "run", "--verifier", "exact"],
    ["decode", "--k1", "2", "--verifier", "exact"],
])
def test_the_same_model_as_target_and_draft_is_refused_before_loading(
    tmp_path, capsys, command, scripted_run  # noqa: F811
) -> None:
    from cli.main import main

    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    for target, draft in (("smollm2-135m", "smollm2-135m"),
                          (str(folder), str(tmp_path / "." / "model"))):
        rc = main([*command, "--target", target, "--draft", draft,
                   "-o", str(tmp_path / "o.json")])
        err = capsys.readouterr().err
        assert rc == 2 and err.count("\n") == 1
        assert "draft must be a different model from the target" in err
    assert scripted_run["engines"] == [] and not (tmp_path / "o.json").exists()


# --- Ctrl-C -----------------------------------------------------------------------------

LONG = """
    import sys, time
    from cli.interrupt import saving
    from cli.main import app, main

    @app.command("wait-here")
    def wait_here(saved: str = "", raise_it: bool = False) -> None:
        if raise_it:
            raise KeyboardInterrupt
        with saving(lambda: saved) if saved else open(__import__("os").devnull):
            print("started", flush=True)
            time.sleep(120)

    sys.exit(main(sys.argv[1:]))
"""
"""The real ``main`` with one more command that runs until it is interrupted."""


@pytest.mark.parametrize(("args", "line"), [
    ([], "interrupted"),
    (["--saved", "x.json holds 3 pairs; run it again with --resume"],
     "interrupted: x.json holds 3 pairs; run it again with --resume"),
])
def test_sigint_exits_130_with_one_line(args, line) -> None:
    proc = _python(LONG, "wait-here", *args)
    assert proc.stdout.readline().strip() == "started", proc.stderr.read()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert err == line + "\n"


def test_a_keyboard_interrupt_inside_a_command_exits_130() -> None:
    proc = _python(LONG, "wait-here", "--raise-it")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err == "interrupted\n"


def test_an_interrupted_profile_run_says_what_it_saved_and_resumes(
    fake_phases, tmp_path, monkeypatch, capsys  # noqa: F811
) -> None:
    from cli.main import main

    out = tmp_path / "cal.json"
    good = calibrate.steps_phase

    def interrupted(**options):
        Path(options["record"]).write_text("{}\n")  # some pairs were measured
        raise KeyboardInterrupt

    monkeypatch.setattr(calibrate, "steps_phase", interrupted)
    assert main([*RUN, "-o", str(out)]) == 130
    last = capsys.readouterr().err.splitlines()[-1]
    assert last == (f"interrupted: {out} holds the finished phases (batch_cost), "
                    f"{out.with_suffix('.pairs.jsonl')} the pairs measured so far; run the "
                    "same command with --resume to continue")
    assert not lock_path(out).exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    monkeypatch.setattr(calibrate, "steps_phase", good)
    fake_phases.clear()
    assert main([*RUN, "-o", str(out), "--resume"]) == 0
    assert fake_phases == ["steps", "tokens", "engine_costs"]
