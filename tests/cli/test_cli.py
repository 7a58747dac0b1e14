"""The command line: fields, overrides, errors as one line with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cli.main import main
from specmodel.formats.calibration import DEFAULT_PRESET, load_preset
from specmodel.optimize.budget import optimize_budget
from specmodel.parameters import Parameters


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
    ref = optimize_budget(cal.parameters(), 16, "async")
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
    ref = optimize_budget(Parameters(0.7, 0.1, 0.6, 0.05), 32, "sync")
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
        (["optimize", "--alpha1", "1.5"], "--alpha1"),
        (["optimize", "--budget", "0"], "--budget"),
        (["optimize", "--c2", "-1"], "--c2"),
        (["optimize", "--calibration", "/nonexistent/cal.json"], "does not exist"),
        (["optimize", "--preset", "nope"], "preset"),
        (["optimize", "--mode", "fast"], "--mode"),
        (["simulate", "--k1", "0"], "--k1"),
        (["theorems", "--alpha2", "0"], "--alpha2"),
        (["export", "--engine", "sglang"], "--engine"),
        (["export", "--verifier", "oracle"], "--verifier"),
        (["compare", "--alpha-prime", "0.8"], "--c-d2"),
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
    code, out, _ = run(["export", "--budget", "16", "-o", str(target)], capsys)
    data = json.loads(target.read_text())
    assert code == 0 and data["engine"] == "vllm" and DEFAULT_PRESET in out
    assert data["speculative_config"]["num_speculative_tokens"] == data["prediction"]["k2"] - 1
    assert data["config"]["verifier"]["kind"] == "judge"  # the default preset's
    assert "lookahead_reasoning" not in data


def test_export_file_loads_back_to_the_optimized_config(tmp_path, capsys) -> None:
    from specmodel.formats.export import load_export

    target = tmp_path / "cfg.json"
    code, _, _ = run(["export", "--budget", "16", "--mode", "sync", "--verifier", "embedding",
                      "--prompt-lookup-max", "4", "-o", str(target)], capsys)
    assert code == 0
    cal = load_preset(DEFAULT_PRESET)
    base = cal.base_config("sync").replace(
        token={"prompt_lookup_max": 4}, verifier={"kind": "embedding", "model": None,
                                                  "threshold": 0.9})
    res = optimize_budget(cal.parameters(), 16, "sync", base=base)
    # export writes what optimize shows as the leanest point within its tolerance.
    ref = res.economical if res.economical is not None else res.best
    loaded = load_export(target)
    assert loaded.config == res.config.replace(k1=ref.k1, k2=ref.k2)
    assert (loaded.config.k1, loaded.config.k2, loaded.config.mode) == (ref.k1, ref.k2, "sync")
    assert loaded.config.verifier.kind == "embedding" and loaded.config.verifier.model is None
    assert loaded.speculative_config == {"method": "ngram",
                                         "num_speculative_tokens": ref.k2 - 1,
                                         "prompt_lookup_max": 4, "prompt_lookup_min": 1}
    # Printed instead of written: the same file content.
    code, out, err = run(["export", "--budget", "16", "--mode", "sync", "--verifier",
                          "embedding", "--prompt-lookup-max", "4"], capsys)
    assert code == 0 and json.loads(out) == json.loads(target.read_text())
    assert DEFAULT_PRESET in err  # which calibration: on stderr, stdout stays JSON


def test_export_token_method_replaces_the_drafter(capsys) -> None:
    code, out, _ = run(["export", "--token-method", "draft_model", "--draft-model", "m/small"],
                       capsys)
    data = json.loads(out)
    assert code == 0 and data["config"]["token"]["method"] == "draft_model"
    spec = data["speculative_config"]
    assert spec is None or (spec["model"] == "m/small" and "prompt_lookup_max" not in spec)
    code, _, err = run(["export", "--token-method", "eagle"], capsys)
    assert code == 2 and "model" in err and len(err.strip().splitlines()) == 1
    assert "--token-method/--draft-model" in err
    for args, option in ((["--token-method", "bogus"], "--token-method:"),
                         (["--prompt-lookup-max", "0"], "--prompt-lookup-max:")):
        code, _, err = run(["export", *args], capsys)
        assert code == 2 and option in err and "token." not in err, err


def test_optimize_json_contains_the_configuration(capsys) -> None:
    code, out, _ = run(["optimize", "--preset", "measured-qwen2.5-coder-0.5b-smollm2-135m",
                        "--mode", "sync", "--budget", "12", "--json"], capsys)
    data = json.loads(out)
    cal = load_preset("measured-qwen2.5-coder-0.5b-smollm2-135m")
    ref = optimize_budget(cal.parameters(), 12, "sync", base=cal.base_config("sync"))
    # The preset has a T(b): the headline (and its configuration) is the priced optimum.
    assert code == 0 and data["model"] == "priced by the measured T(b)"
    assert data["config"] == ref.config.replace(k1=data["k1"], k2=data["k2"]).model_dump()
    assert data["flat_budget"]["config"] == ref.config.model_dump()
    cfg = data["config"]
    assert (cfg["mode"], cfg["k1"], cfg["k2"]) == ("sync", data["k1"], data["k2"])
    assert cfg["verifier"]["kind"] == "embedding" and cfg["token"]["method"] == "ngram"


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
    ref = optimize_budget(Parameters(0.7, 0.2, 0.7, 0.1), 16, "async")
    assert f"k1={ref.k1}, k2={ref.k2}" in checks["Theorem 4 (async)"]["actual"]
    assert isinstance(data["notes"], list) and data["notes"]
    assert data["calibration"]["source"] == "user"


def test_theorems_take_a_preset_and_overrides(capsys) -> None:
    from specmodel.optimize.theorems import theorem_report

    name = "lr-paper-gsm8k-qwen3"
    code, out, _ = run(["theorems", "--preset", name, "--budget", "24", "--json"], capsys)
    data = json.loads(out)
    cal = load_preset(name)
    ref = theorem_report(cal.parameters(), 24).to_dict()
    assert code == 0 and data["calibration"]["name"] == name
    assert {k: data[k] for k in ref} == json.loads(json.dumps(ref))
    code, out, _ = run(["theorems", "--preset", name, "--alpha1", "0.5", "--json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["alpha1"] == 0.5 and data["c1"] == cal.step.c1
    assert data["calibration"]["overridden"] == ["alpha1"]
    code, out, _ = run(["theorems"], capsys)  # no numbers: the default calibration
    assert code == 0 and DEFAULT_PRESET in out and "Theorem 3 (sync)" in out


def test_theorems_rich_prints_notes_and_rejects_bad_input(capsys) -> None:
    code, out, _ = run(["theorems", "--alpha1", "0.63", "--c1", "0.34", "--alpha2", "0.28",
                        "--c2", "0", "--budget", "16"], capsys)
    assert code == 0 and "Theorem 4 (async)" in out and "•" in out
    code, _, err = run(["theorems", "--alpha1", "0", "--c1", "0.3", "--alpha2", "0.5",
                        "--c2", "0.1"], capsys)
    assert code == 2 and "alpha1" in err and "Traceback" not in err


def test_optimize_rich_reports_sync_theorem3_and_the_optimum(capsys) -> None:
    ref = optimize_budget(Parameters(0.7, 0.1, 0.6, 0.05), 16, "sync")
    code, out, _ = run(["optimize", "--mode", "sync", "--alpha1", "0.7", "--c1", "0.1",
                        "--alpha2", "0.6", "--c2", "0.05"], capsys)
    assert code == 0 and "command line" in out and "embedded default" not in out
    assert "Theorem 3 (sync)" in out and f"{ref.speedup:.3f}x" in out
    assert ref.message.split(":")[0] in out


def test_calibration_and_preset_are_exclusive(tmp_path, capsys) -> None:
    code, _, err = run(["optimize", "--calibration", str(tmp_path / "a.json"),
                        "--preset", DEFAULT_PRESET], capsys)
    assert code == 2 and "exclusive" in err and "--preset" in err


def test_preset_option_selects_another_calibration(capsys) -> None:
    code, out, _ = run(["optimize", "--preset", "lr-paper-gsm8k-qwen3", "--json"], capsys)
    data = json.loads(out)
    cal = load_preset("lr-paper-gsm8k-qwen3")
    assert code == 0 and data["calibration"]["name"] == "lr-paper-gsm8k-qwen3"
    assert not data["calibration"]["default"] and data["calibration"]["source"] == "paper"
    assert data["parameters"] == cal.parameters().to_dict()


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


def test_an_error_names_the_option_the_user_typed(capsys) -> None:
    # The library says "alpha1 …"/"c1 …"; the user typed --alpha1/--c1.
    code, _, err = run(["optimize", "--alpha1", "1.2"], capsys)
    assert code == 2 and err.startswith("error: --alpha1 must lie in the open interval (0, 1)")
    code, _, err = run(["optimize", "--mode", "async", "--c1", "1.5"], capsys)
    assert code == 2 and err.startswith("error: --c1 must be in (0, 1) for async")
    code, _, err = run(["simulate", "--process", "token", "--k2", "0"], capsys)
    assert code == 2 and "'--k2'" in err
    code, _, err = run(["optimize", "--budget", "-3"], capsys)
    assert code == 2 and "'--budget'" in err and "M " not in err


def test_validation_errors_and_missing_modules_are_one_line(capsys, monkeypatch) -> None:
    import specmodel.optimize.theorems as theorems_mod
    from specmodel.config import SpecConfig

    def broken_import(*_: object, **__: object) -> None:
        raise ModuleNotFoundError("No module named 'plotly'", name="plotly")

    def broken_model(*_: object, **__: object) -> None:
        SpecConfig.model_validate({"k1": 0})  # a pydantic ValidationError, not wrapped

    monkeypatch.setattr(theorems_mod, "theorem_report", broken_import)
    code, _, err = run(["theorems"], capsys)
    assert code == 2 and err == 'error: No module named \'plotly\' (install it with: pip ' \
        'install -e ".[plot]")\n'
    monkeypatch.setattr(theorems_mod, "theorem_report", broken_model)
    code, _, err = run(["theorems"], capsys)
    assert code == 2 and err.startswith("error: k1: ") and len(err.splitlines()) == 1


def test_shared_options_are_declared_once_and_resolved_alike(capsys) -> None:
    import typer.main

    from cli.main import app

    group = typer.main.get_command(app)
    shared = {"--calibration", "--preset", "--alpha1", "--c1", "--alpha2", "--c2"}
    for name in ("optimize", "simulate", "theorems", "compare", "export", "plot"):
        opts = {o for p in group.commands[name].params for o in p.opts}
        assert shared <= opts, name
    for name in ("optimize", "theorems", "compare", "export", "plot"):
        opts = {o for p in group.commands[name].params for o in p.opts}
        assert "--budget" in opts, name
    args = ["--preset", "lr-paper-gsm8k-qwen3", "--c2", "0.01", "--json"]
    sources = []
    for cmd in (["optimize"], ["simulate", "--samples", "1000"], ["theorems"], ["compare"]):
        code, out, _ = run(cmd + args, capsys)
        assert code == 0
        sources.append(json.loads(out)["calibration"])
    assert all(s == sources[0] for s in sources)
    assert sources[0]["overridden"] == ["c2"] and sources[0]["name"] == "lr-paper-gsm8k-qwen3"


# --- serving units, one consistent answer, CLI polish (issue 15) ---------------------------


def _steep(tmp_path):
    from specmodel.formats.calibration import Calibration, save_calibration

    data = load_preset(DEFAULT_PRESET).model_dump(exclude_none=True)
    data["name"] = "steep"
    data["provenance"] = {"source": "user", "description": "a CPU-like T(b)"}
    data["batch_cost"] = {"points": [{"batch": b, "time": t} for b, t in
                                     [(1, 0.1), (2, 0.13), (4, 0.2), (8, 0.36), (16, 0.68)]]}
    return save_calibration(Calibration.model_validate(data), tmp_path / "steep.json")


def test_optimize_leads_with_the_priced_answer_at_a_concurrency(tmp_path, capsys) -> None:
    from specmodel.optimize.pricing import BatchCostCurve, optimize_cost_aware

    path = _steep(tmp_path)
    code, out, _ = run(["optimize", "-c", str(path), "--concurrency", "2", "--json"], capsys)
    data = json.loads(out)
    curve = BatchCostCurve.from_points([(1, 0.1), (2, 0.13), (4, 0.2), (8, 0.36), (16, 0.68)])
    params = load_preset(DEFAULT_PRESET).parameters()
    best = optimize_cost_aware(params, 16, "async", curve, 2)
    assert code == 0 and data["model"] == "priced by the measured T(b)"
    assert (data["concurrency"], data["k1"], data["k2"]) == (2, best.k1, best.k2)
    assert data["speedup"] == pytest.approx(best.speedup)
    # T(2) = 0.13 s/step: ms/token = 130 / speedup, tokens/s = 2 · speedup / 0.13.
    assert data["serving"]["ms_per_token"] == pytest.approx(130 / best.speedup)
    assert data["serving"]["tokens_per_second"] == pytest.approx(2 * best.speedup / 0.13)
    flat = optimize_budget(params, 16, "async")
    assert (data["flat_budget"]["k1"], data["flat_budget"]["k2"]) == (flat.k1, flat.k2)
    # The text: one optimum line, the flat model labelled as a comparison, and a
    # paying sentence that agrees with the table.
    code, out, _ = run(["optimize", "-c", str(path), "-N", "2"], capsys)
    assert code == 0 and out.count("optimum (") == 1 and "flat-budget f·g optimum" in out
    assert "ms/token" in out and "speedup = " in out
    pays = [d["serving_batch"] for d in data["cost_aware"]["by_batch_size"] if d["pays"]]
    assert data["cost_aware"]["pays_at"] == pays
    assert ("Speculation pays at batch sizes" in out) == bool(pays and len(pays) < 5)


def test_export_writes_what_optimize_leads_with(tmp_path, capsys) -> None:
    path = _steep(tmp_path)
    _, out, _ = run(["optimize", "-c", str(path), "-N", "2", "--json"], capsys)
    opt = json.loads(out)
    code, out, _ = run(["export", "-c", str(path), "-N", "2"], capsys)
    exp = json.loads(out)
    assert code == 0 and (exp["config"]["k1"], exp["config"]["k2"]) == (opt["k1"], opt["k2"])
    assert exp["prediction"]["model"] == opt["model"]
    assert exp["prediction"]["speedup"] == pytest.approx(opt["speedup"])


def test_concurrency_without_batch_cost_is_refused_naming_the_option(capsys) -> None:
    for cmd in ("optimize", "export"):
        code, _, err = run([cmd, "--concurrency", "4"], capsys)
        assert code == 2 and "--concurrency" in err and "flat-budget" in err
    code, _, err = run(["optimize", "--concurrency", "0"], capsys)
    assert code == 2 and "--concurrency" in err
    code, _, err = run(["simulate", "--samples", "1"], capsys)
    assert code == 2 and "--samples" in err and "n_" not in err


def test_optimize_json_says_which_model_without_batch_cost(capsys) -> None:
    code, out, _ = run(["optimize", "--budget", "16", "--json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["model"] == "flat-budget f·g" and (data["k1"], data["k2"]) == (3, 5)


def test_version(capsys) -> None:
    from specmodel import __version__

    code, out, _ = run(["--version"], capsys)
    assert code == 0 and out.strip() == f"specmodel {__version__}"


def test_python_m_specmodel_runs_the_cli() -> None:
    from specmodel import __version__

    done = subprocess.run([sys.executable, "-m", "specmodel", "--version"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stdout.strip() == f"specmodel {__version__}"
    done = subprocess.run([sys.executable, "-c", "import sys, specmodel; "
                           "print('typer' in sys.modules)"],
                          capture_output=True, text=True, check=False)
    assert done.stdout.strip() == "False"


def test_optimize_what_if_from_architectures(capsys) -> None:
    code, out, _ = run(["optimize", "--budget", "16", "--target-arch", "qwen2.5-32b",
                        "--draft-arch", "qwen2.5-1.5b", "--context", "4096", "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert set(data["predictions"]) >= {"SD", "LR sync", "LR async", "best"}
    best = data["predictions"]["best"]
    within = data["within_budget"]
    assert set(within) == {"SD", "LR sync", "LR async", "LR+SD sync", "LR+SD async"}
    assert all(p["parallel_dim"] <= 16 for p in within.values())
    assert best["speedup"] == pytest.approx(max(p["speedup"] for p in within.values()))
    # the paper's setting (6 speculative steps, k2 = 9) does not fit M = 16 for LR+SD
    assert data["predictions"]["LR+SD async"]["parallel_dim"] == 54
    assert "cost model" in data["costs"]["model"] and data["inputs"]["device"] == "h100-sxm"
    cal = load_preset(DEFAULT_PRESET)
    assert data["inputs"]["alpha1"] == pytest.approx(cal.parameters().alpha1)
    code, out, _ = run(["optimize", "--target-arch", "qwen2.5-32b", "--draft-arch",
                        "qwen2.5-1.5b"], capsys)
    assert code == 0 and "What-if" in out and "flat f·g" in out
    assert "the best of each method within it" in out and "LR paper's setting" in out
    assert "54 > M" in out  # LR+SD async at the paper's setting, outside the budget
    code, out, _ = run(["optimize", "--target-arch", "qwen2.5-32b", "--draft-arch",
                        "qwen2.5-1.5b", "--attention-layout", "packed", "--json"], capsys)
    assert code == 0 and json.loads(out)["inputs"]["attention_layout"] == "packed"


def test_optimize_what_if_with_the_decoder_model(capsys) -> None:
    code, out, _ = run(["optimize", "--budget", "4", "--preset", "lr-paper-gsm8k-deepseek",
                        "--target-arch", "qwen2.5-32b", "--draft-arch", "qwen2.5-1.5b",
                        "--context", "1024", "--token-drafter", "ngram", "--decoder",
                        "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    dec = data["decoder_model"]
    assert dec["model"] == "decoder model" and dec["budget"] == 4
    assert dec["sources"]["target_decode"].startswith("predicted:")
    assert "best" in data["predictions"]  # the what-if's table is still there
    # a what-if weighs continuous target batching by default (a serving engine's running
    # batch); --target-batching call leaves it out
    assert {c["target_batching"] for c in dec["screened"]} == {"call", "continuous"}
    code, out, _ = run(["optimize", "--budget", "4", "--preset", "lr-paper-gsm8k-deepseek",
                        "--target-arch", "qwen2.5-32b", "--draft-arch", "qwen2.5-1.5b",
                        "--context", "1024", "--token-drafter", "ngram", "--decoder",
                        "--target-batching", "call", "--json"], capsys)
    assert code == 0 and {c["target_batching"] for c in json.loads(out)["decoder_model"][
        "screened"]} == {"call"}
    # measured contention replaces the placement's, and the sources say it was given
    code, out, _ = run(["optimize", "--budget", "2", "--preset", "lr-paper-gsm8k-deepseek",
                        "--target-arch", "qwen2.5-32b", "--draft-arch", "qwen2.5-1.5b",
                        "--context", "1024", "--token-drafter", "ngram", "--decoder",
                        "--contention", "1.17", "--json"], capsys)
    sources = json.loads(out)["decoder_model"]["sources"]
    assert code == 0 and sources["contention"].startswith("given: 1.17×")
    assert sources["draft_contention"].startswith("given: 1.17×")
    # on one GPU the kernels model by default; --contention overlap asks for 2 - overlap
    for asked, model in ((None, "kernels"), ("overlap", "overlap")):
        code, out, _ = run(["optimize", "--budget", "2", "--preset", "lr-paper-gsm8k-deepseek",
                            "--target-arch", "qwen2.5-32b", "--draft-arch", "qwen2.5-1.5b",
                            "--context", "1024", "--token-drafter", "ngram", "--decoder",
                            "--placement", "one-device", "--json",
                            *([] if asked is None else ["--contention", asked])], capsys)
        sources = json.loads(out)["decoder_model"]["sources"]
        assert code == 0 and f"by the {model} model" in sources["contention"]
        assert f"by the {model} model" in sources["draft_contention"]
    code, _, err = run(["optimize", "--alpha1", "0.6", "--c1", "0.1", "--alpha2", "0.3",
                        "--c2", "0", "--target-arch", "qwen2.5-32b", "--draft-arch",
                        "qwen2.5-1.5b", "--decoder"], capsys)
    assert code == 2 and "--decoder needs a calibration" in err
    code, _, err = run(["optimize", "--target-arch", "qwen2.5-32b", "--draft-arch",
                        "qwen2.5-1.5b", "--decoder", "--concurrency", "2"], capsys)
    assert code == 2 and "--concurrency 1" in err


@pytest.mark.parametrize(("args", "named"), [
    (["--target-arch", "qwen2.5-32b"], "--target-arch and --draft-arch go together"),
    (["--target-arch", "nope", "--draft-arch", "qwen2.5-1.5b"], "--target-arch must be"),
    (["--target-arch", "qwen2.5-32b", "--draft-arch", "qwen2.5-1.5b", "--device", "tpu"],
     "--device must be one of"),
    (["--target-arch", "qwen2.5-32b", "--draft-arch", "qwen2.5-1.5b", "--context", "-1"],
     "--context must be"),
    (["--target-arch", "qwen2.5-32b", "--draft-arch", "qwen2.5-1.5b", "--placement", "x"],
     "--placement must be one of"),
    (["--target-arch", "qwen2.5-32b", "--draft-arch", "qwen2.5-1.5b", "--attention-layout",
      "paged"], "--attention-layout must be one of"),
    (["--target-arch", "qwen2.5-32b", "--draft-arch", "qwen2.5-1.5b", "--contention", "2"],
     "--contention prices a what-if with"),
    (["--preset", "lr-paper-gsm8k-deepseek", "--target-arch", "qwen2.5-32b", "--draft-arch",
      "qwen2.5-1.5b", "--decoder", "--contention", "0.5,2"],
     "--contention must be TARGET or TARGET,DRAFT (numbers >= 1), or kernels or overlap; "
     "got '0.5,2'"),
    (["--preset", "lr-paper-gsm8k-deepseek", "--target-arch", "qwen2.5-1.5b", "--draft-arch",
      "qwen2.5-0.5b", "--decoder", "--device", "cpu-epyc", "--placement", "one-device",
      "--contention", "kernels"], "--contention 'kernels' models one GPU's two streams"),
    (["--preset", "lr-paper-gsm8k-deepseek", "--target-arch", "qwen2.5-32b", "--draft-arch",
      "qwen2.5-1.5b", "--decoder", "--placement", "one-device", "--contention", "2,x"],
     "--contention must be TARGET or TARGET,DRAFT"),
])
def test_optimize_what_if_bad_input(capsys, args, named) -> None:
    code, _, err = run(["optimize", *args], capsys)
    assert code == 2 and named in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("args,option", [
    (["decode", "--k2", "0"], "--k2:"), (["decode", "--k1", "0"], "--k1:"),
    (["decode", "--width", "0"], "--width:"), (["decode", "--mode", "bad"], "--mode:"),
    (["decode", "--k1", "2", "--threshold", "2"], "--threshold:"),
    (["profile", "engine-costs", "--target", "t", "-o", "x.json", "--cost-repeats", "0"],
     "--cost-repeats must be >= 1"),
    (["profile", "engine-costs", "--target", "t", "-o", "x.json", "--max-step-tokens", "1"],
     "--max-step-tokens must be >= 2 where speculative step calls are timed"),
    (["profile", "run", "--target", "t", "--draft", "d", "-o", "x.json",
      "--max-step-tokens", "1"], "--max-step-tokens must be >= 2 where speculative"),
    (["profile", "passes", "none.json", "-o", "x.json", "--max-step-tokens", "1"],
     "--max-step-tokens must be >= 2 where speculative"),
    (["profile", "engine-costs", "--target", "t", "-o", "x.json", "--device", "tpu"],
     "--device must be one of cpu, cuda, got 'tpu'"),
    (["profile", "engine-costs", "--target", "t", "-o", "x.json", "--dtype", "int8"],
     "--dtype must be one of float32, bfloat16, float16, got 'int8'"),
    (["decode", "--device", "tpu", "-o", "x.json"], "--device must be one of cpu, cuda"),
    (["profile", "hardware", "-o", "x.json", "qwen2.5-0.5b", "--path", "bogus"],
     "--path must be auto or one of"),
    (["profile", "run", "--target", "t", "--draft", "d", "-o", "x.json",
      "--speculation-problems", "0"], "--speculation-problems must be >= 1"),
    (["profile", "engine-costs", "--target", "t", "-o", "x.json", "--cache-positions",
      "1024"], "--cache-positions is for the static and compiled decode paths"),
    (["profile", "engine-costs", "--target", "t", "-o", "x.json", "--decode-path", "static",
      "--cache-positions", "500"], "--cache-positions must be >= 528 (the longest context"),
    (["profile", "run", "--target", "t", "--draft", "d", "-o", "x.json", "--decode-path",
      "compiled", "--cache-positions", "0"], "--cache-positions must be >= 1"),
    (["profile", "run", "--target", "t", "--draft", "d", "-o", "x.json", "--token-rates",
      "both"], "--token-rates must be one of answers, prompts, got 'both'"),
    (["profile", "run", "--target", "t", "--draft", "d", "-o", "x.json", "--token-rates",
      "answers", "--token-engine", "vllm"], "use --token-rates prompts with --token-engine vllm"),
    (["profile", "run", "--target", "t", "--draft", "d", "-o", "x.json", "--answers",
      "none.run.json"], "--answers: none.run.json is not a file"),
    (["profile", "run", "--target", "t", "--draft", "d", "-o", "x.json", "--no-tokens",
      "--answers", "."], "--answers joins the token replay, which --no-tokens skips"),
    (["simulate", "--seed", "-1"], "--seed"),
    (["profile", "tokens", "--model", "nope", "-o", "x.json"], "--model must be a pack"),
    (["profile", "run", "--target", "nope-t", "--draft", "nope-d", "-o", "x.json"],
     "--target must be a pack"),
    (["decode", "--target", "nope-t", "-o", "x.json", "--problems", "1"],
     "--target must be a pack"),
    (["decode", "--k1", "2", "--draft", "nope-d", "--verifier", "exact", "-o", "x.json",
      "--problems", "1"], "--draft must be a pack"),
    (["decode", "--interleave", "--resume", "-o", "x.json"],
     "--resume cannot continue an --interleave run"),
])
def test_bad_values_name_the_option_typed(args, option, capsys, tmp_path, monkeypatch) -> None:
    """Refused in one error line naming the option, not the field (a phase's progress
    bar may stand before it)."""
    monkeypatch.chdir(tmp_path)
    code, _, err = run(args, capsys)
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and len(errors) == 1 and option in errors[0], err
