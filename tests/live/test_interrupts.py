"""Ctrl-C and SIGKILL in the middle of a real ``specmodel profile steps``, then ``--resume``:
exit 130 with one line saying what was saved, no lock or temporary file left by the
interrupt, and a resumed calibration and pairs record equal to an uninterrupted run's
(greedy decoding: the same pairs, only their wall times differ).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import require

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]


def _args(target: Path, draft: Path, out: Path) -> list[str]:
    return ["profile", "steps", "--target", str(target), "--draft", str(draft), "-o", str(out),
            "--verifier", "exact", "--problems", "2", "--steps-per-problem", "2",
            "--max-step-tokens", "8"]


def _untimed(pairs) -> list[tuple]:
    return [(p.problem, p.step, p.target_text, p.draft_text, p.target_tokens, p.draft_tokens,
             p.accepted) for p in pairs]


def _start_and_stop(args: list[str], record: Path, sig: int) -> subprocess.CompletedProcess:
    """Run the command in a real process; once its first pair is on disk, send ``sig``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "cli", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if record.is_file() and len(record.read_text().splitlines()) >= 2:  # header + 1 pair
            break
        time.sleep(0.05)
    assert proc.poll() is None, f"finished before it could be interrupted: {proc.stderr.read()}"
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def check_interrupt_and_resume(target: Path, draft: Path, tmp_path: Path) -> None:
    """The whole check, for any target/draft pair of model folders."""
    from cli.main import main
    from profiler.step_profile import read_pairs, read_record
    from specmodel.formats.calibration import load_calibration
    from specmodel.formats.lock import lock_path

    ref = tmp_path / "ref.json"
    assert main(_args(target, draft, ref)) == 0
    ref_cal = load_calibration(ref)
    ref_pairs = read_pairs(ref.with_suffix(".pairs.jsonl"))
    assert len(ref_pairs) == ref_cal.step.samples >= 2

    for name, sig in (("int", signal.SIGINT), ("kill", signal.SIGKILL)):
        out = tmp_path / f"{name}.json"
        record = out.with_suffix(".pairs.jsonl")
        done = _start_and_stop(_args(target, draft, out), record, sig)
        if sig == signal.SIGINT:
            assert done.returncode == 130, done.stderr
            assert done.stderr.splitlines()[-1] == (
                f"interrupted: the pairs measured so far are in {record} ({out} is written when "
                "they are complete); run the same command with --resume to continue")
            assert not lock_path(out).exists() and not lock_path(record).exists()
        else:
            assert done.returncode == -signal.SIGKILL  # its stale lock files block nobody
        assert not out.exists()  # the calibration is written once the pairs are complete
        assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
        partial = read_record(record)
        assert 1 <= len(partial.pairs) < len(ref_pairs)
        assert main([*_args(target, draft, out), "--resume"]) == 0
        cal = load_calibration(out)
        assert cal.step.alpha1 == ref_cal.step.alpha1
        assert cal.step.samples == ref_cal.step.samples
        assert cal.provenance.settings.phases.steps.pairs == len(ref_pairs)
        assert _untimed(read_pairs(record)) == _untimed(ref_pairs)
        assert read_record(record).key == read_record(ref.with_suffix(".pairs.jsonl")).key


@pytest.mark.slow  # about 75 s; the phase/resume logic has offline tests in CI
def test_interrupted_profile_steps_resumes_to_the_uninterrupted_result(
    smollm_path, qwen05_path, tmp_path
) -> None:
    require("reasoning_gym")
    check_interrupt_and_resume(qwen05_path, smollm_path, tmp_path)


def _decode_args(target: Path, draft: Path, out: Path) -> list[str]:
    return ["decode", "--target", str(target), "--draft", str(draft), "--verifier", "exact",
            "--mode", "sync", "--k1", "2", "--problems", "2", "--max-steps", "3",
            "--max-step-tokens", "8", "--delimiter", "\\n", "-o", str(out)]


def _decoded(path: Path) -> list[tuple]:
    """What a run record decoded, without its times: per configuration and problem, the
    output, the committed steps and the verifier's counts."""
    from specmodel.formats.run_record import load_run_record

    return [(c.label, c.config, [(p.problem, p.output, [(s.text, s.source) for s in p.steps],
                                  p.drafted_steps, p.accepted_steps) for p in c.problems])
            for c in load_run_record(path).configs]


def _stop_after_first_configuration(args: list[str], out: Path,
                                    sig: int) -> subprocess.CompletedProcess:
    """Run decode in a real process; once the record holds its first configuration (the
    target-only baseline), send ``sig`` while the next one runs."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "cli", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None and not out.is_file():
        time.sleep(0.05)
    assert proc.poll() is None, f"finished before it could be interrupted: {proc.stderr.read()}"
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


@pytest.mark.slow  # three decodes of two problems on real models: a few minutes here
def test_interrupted_decode_resumes_to_the_uninterrupted_record(
    smollm_path, qwen05_path, tmp_path
) -> None:
    """SIGINT and SIGKILL a real ``specmodel decode`` after its first configuration is
    saved; ``--resume`` runs only what is missing, and the record equals an uninterrupted
    run's (greedy decoding with the exact verifier: the same steps; times differ)."""
    require("reasoning_gym")
    from cli.main import main
    from specmodel.formats.lock import lock_path
    from specmodel.formats.run_record import load_run_record

    ref = tmp_path / "ref.json"
    assert main(_decode_args(smollm_path, qwen05_path, ref)) == 0
    reference = _decoded(ref)
    assert [c[0] for c in reference] == ["target", "sync k1=2 k2=1"]
    for name, sig in (("int", signal.SIGINT), ("kill", signal.SIGKILL)):
        out = tmp_path / f"{name}.json"
        done = _stop_after_first_configuration(_decode_args(smollm_path, qwen05_path, out), out,
                                               sig)
        if sig == signal.SIGINT:
            assert done.returncode == 130, done.stderr
            last = done.stderr.splitlines()[-1]
            assert last.startswith("interrupted:") and str(out) in last and "--resume" in last
            assert not lock_path(out).exists()
        else:
            assert done.returncode == -signal.SIGKILL
        assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
        saved = load_run_record(out)
        assert [c.label for c in saved.configs] == ["target"]  # the finished one, whole
        assert main([*_decode_args(smollm_path, qwen05_path, out), "--resume"]) == 0
        assert _decoded(out) == reference
