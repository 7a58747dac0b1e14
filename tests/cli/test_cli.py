"""The command line: fields, overrides, errors as one line with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cli.main import main
from specmodel.formats.calibration import DEFAULT_PRESET, load_preset
from specmodel.optimize.budget import optimize_budget


def run(args: list[str], capsys) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_optimize_default_json(capsys) -> None:
    code, out, _ = run(["optimize", "--budget", "16", "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    for key in ("mode", "budget", "k1", "k2", "speedup", "regime", "token_only", "step_only",
                "calibration", "message"):
        assert key in data
    assert data["regime"] in {"hybrid", "token-only", "step-only"}
    assert data["calibration"]["name"] == DEFAULT_PRESET and data["calibration"]["default"]
    cal = load_preset(DEFAULT_PRESET)
    ref = optimize_budget(cal.step.alpha1, cal.step.c1, cal.token.alpha2, cal.token.c2, 16,
                          "async")
    assert (data["k1"], data["k2"]) == (ref.k1, ref.k2)
    assert data["speedup"] == pytest.approx(ref.speedup)


def test_optimize_rich_output_says_which_calibration(capsys) -> None:
    code, out, _ = run(["optimize", "--budget", "16"], capsys)
    assert code == 0
    assert DEFAULT_PRESET in out and "embedded default" in out
    assert "token-only" in out and "step-only" in out


def test_direct_parameters_override(capsys) -> None:
    args = ["optimize", "--budget", "32", "--mode", "sync", "--alpha1", "0.7", "--c1", "0.1",
            "--alpha2", "0.6", "--c2", "0.05", "--json"]
    code, out, _ = run(args, capsys)
    data = json.loads(out)
    ref = optimize_budget(0.7, 0.1, 0.6, 0.05, 32, "sync")
    assert code == 0 and (data["k1"], data["k2"]) == (ref.k1, ref.k2)
    assert data["calibration"]["source"] == "user"
    assert "theorem3" in data
    code, out, _ = run(["optimize", "--alpha2", "0.9", "--json"], capsys)
    data = json.loads(out)
    assert data["parameters"]["alpha2"] == 0.9 and data["calibration"]["overridden"] == ["alpha2"]


def test_monte_carlo_method(capsys) -> None:
    code, out, _ = run(["optimize", "--method", "mc", "--samples", "100000", "--json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["monte_carlo"]["agrees"]
    assert all(abs(c["z"]) < 4.5 for c in data["monte_carlo"]["candidates"])


@pytest.mark.parametrize(
    "args,needle",
    [
        (["optimize", "--alpha1", "1.5"], "alpha1"),
        (["optimize", "--budget", "0"], "--budget"),
        (["optimize", "--c2", "-1"], "c2"),
        (["optimize", "--calibration", "/nonexistent/cal.json"], "does not exist"),
        (["optimize", "--preset", "nope"], "preset"),
        (["optimize", "--mode", "fast"], "--mode"),
        (["simulate", "--k1", "0"], "k1"),
        (["export", "--engine", "sglang"], "engine"),
    ],
)
def test_bad_input_is_one_line_exit_2(args, needle, capsys) -> None:
    code, _, err = run(args, capsys)
    assert code == 2
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert needle in err


def test_corrupt_calibration(tmp_path, capsys) -> None:
    bad = tmp_path / "cal.json"
    bad.write_text("{not json")
    code, _, err = run(["optimize", "--calibration", str(bad)], capsys)
    assert code == 2 and "not valid JSON" in err
    bad.write_text(json.dumps({"name": "x"}))
    code, _, err = run(["optimize", "--calibration", str(bad)], capsys)
    assert code == 2 and "invalid" in err


def test_simulate_agrees_with_closed_form(capsys) -> None:
    for proc in ("token", "sync", "async"):
        code, out, _ = run(["simulate", "--process", proc, "--samples", "200000", "--json"],
                           capsys)
        data = json.loads(out)
        assert code == 0 and abs(data["z"]) < 4.5, data


def test_presets_lists_the_default(capsys) -> None:
    code, out, _ = run(["presets", "--json"], capsys)
    rows = json.loads(out)
    assert code == 0 and any(r["name"] == DEFAULT_PRESET and r["default"] for r in rows)


def test_export_writes_file(tmp_path, capsys) -> None:
    target = tmp_path / "cfg.json"
    code, _, _ = run(["export", "--budget", "16", "-o", str(target)], capsys)
    data = json.loads(target.read_text())
    assert code == 0 and data["engine"] == "vllm"
    assert data["speculative_config"]["num_speculative_tokens"] == data["prediction"]["k2"] - 1
    assert data["lookahead_reasoning"]["verifier"] == "judge"  # the default preset's


def test_console_script_subprocess_is_quiet_on_error() -> None:
    proc = subprocess.run([sys.executable, "-m", "cli", "optimize", "--alpha1", "2"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_compare_names_a_winner(capsys) -> None:
    code, out, _ = run(["compare", "--alpha-lookahead", "0.425", "--json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["winner"] == data["results"][0]["method"]
    assert "cascade (vertical)" in data["skipped"]
    code, _, err = run(["compare", "--alpha-prime", "0.8"], capsys)
    assert code == 2 and "together" in err


def test_measured_batch_cost_is_priced(tmp_path, capsys) -> None:
    from specmodel.formats.calibration import Calibration, save_calibration

    data = load_preset(DEFAULT_PRESET).model_dump(exclude_none=True)
    data["name"] = "steep"
    data["provenance"] = {"source": "user", "description": "a CPU-like T(b)"}
    data["batch_cost"] = {"points": [{"batch": b, "time": t} for b, t in
                                     [(1, 1.0), (2, 1.3), (4, 2.0), (8, 3.6), (16, 6.8)]]}
    path = save_calibration(Calibration.model_validate(data), tmp_path / "steep.json")
    code, out, _ = run(["optimize", "--calibration", str(path), "--json"], capsys)
    ca = json.loads(out)["cost_aware"]
    assert code == 0 and ca["best"]["speedup"] < ca["best"]["flat_speedup"]
    assert ca["stops_paying_at"] == 4
    code, out, _ = run(["export", "--calibration", str(path)], capsys)
    sched = json.loads(out)["speculative_config"]
    assert sched is None or "num_speculative_tokens_per_batch_size" in sched


def test_theorems_json_has_the_report(capsys) -> None:
    args = ["theorems", "--alpha1", "0.7", "--c1", "0.2", "--alpha2", "0.7", "--c2", "0.1",
            "--budget", "16", "--json"]
    code, out, _ = run(args, capsys)
    data = json.loads(out)
    assert code == 0
    assert (data["alpha1"], data["c1"], data["alpha2"], data["c2"], data["budget"]) == (
        0.7, 0.2, 0.7, 0.1, 16)
    checks = {c["name"]: c for c in data["checks"]}
    # Inside both theorems' conditions: each is in scope, predicts hybrid and holds.
    for name in ("Theorem 3 (sync)", "Theorem 4 (async)"):
        assert checks[name]["in_scope"] and checks[name]["prediction"] == "hybrid"
        assert checks[name]["holds"] is True
    ref = optimize_budget(0.7, 0.2, 0.7, 0.1, 16, "async")
    assert f"k1={ref.k1}, k2={ref.k2}" in checks["Theorem 4 (async)"]["actual"]
    assert isinstance(data["notes"], list) and data["notes"]


def test_theorems_rich_prints_notes_and_rejects_bad_input(capsys) -> None:
    code, out, _ = run(["theorems", "--alpha1", "0.63", "--c1", "0.34", "--alpha2", "0.28",
                        "--c2", "0", "--budget", "16"], capsys)
    assert code == 0 and "Theorem 4 (async)" in out and "•" in out
    code, _, err = run(["theorems", "--alpha1", "0", "--c1", "0.3", "--alpha2", "0.5",
                        "--c2", "0.1"], capsys)
    assert code == 2 and "alpha1" in err and "Traceback" not in err


def test_optimize_rich_reports_sync_theorem3_and_the_optimum(capsys) -> None:
    ref = optimize_budget(0.7, 0.1, 0.6, 0.05, 16, "sync")
    code, out, _ = run(["optimize", "--mode", "sync", "--alpha1", "0.7", "--c1", "0.1",
                        "--alpha2", "0.6", "--c2", "0.05"], capsys)
    assert code == 0 and "command line" in out and "embedded default" not in out
    assert "Theorem 3 (sync)" in out and f"{ref.speedup:.3f}x" in out
    assert ref.message.split(":")[0] in out


def test_calibration_and_preset_are_exclusive(tmp_path, capsys) -> None:
    code, _, err = run(["optimize", "--calibration", str(tmp_path / "a.json"),
                        "--preset", DEFAULT_PRESET], capsys)
    assert code == 2 and "exclusive" in err


def test_preset_option_selects_another_calibration(capsys) -> None:
    code, out, _ = run(["optimize", "--preset", "lr-paper-gsm8k-qwen3", "--json"], capsys)
    data = json.loads(out)
    cal = load_preset("lr-paper-gsm8k-qwen3")
    assert code == 0 and data["calibration"]["name"] == "lr-paper-gsm8k-qwen3"
    assert not data["calibration"]["default"] and data["calibration"]["source"] == "paper"
    assert data["parameters"] == {"alpha1": cal.step.alpha1, "c1": cal.step.c1,
                                  "alpha2": cal.token.alpha2, "c2": cal.token.c2}


def test_simulate_hybrid_explains_the_gap(capsys) -> None:
    code, out, _ = run(["simulate", "--process", "hybrid", "--mode", "sync", "--samples",
                        "20000", "--json"], capsys)
    data = json.loads(out)
    # Finite steps and a batch that waits for its slowest step only lose speed.
    assert code == 0 and data["simulated"] < data["closed_form"]
    assert data["simulated"] < data["finite_step_model"] < data["closed_form"]
    assert "model error" in data["note"]


def test_presets_rich_marks_the_default(capsys) -> None:
    from specmodel.formats.calibration import list_presets

    code, out, _ = run(["presets"], capsys)
    assert code == 0 and f"{DEFAULT_PRESET} (default)" in out
    assert all(name in out for name in list_presets())
