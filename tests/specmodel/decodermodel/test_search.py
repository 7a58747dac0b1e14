"""The decoder model's answer to the budget-M problem (``optimize_decoder``), and
``specmodel optimize`` leading with it when the calibration has engine costs."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specmodel.decodermodel.search import candidates, optimize_decoder
from specmodel.formats.calibration import EngineCosts, load_preset, save_calibration

MEASURED = "measured-qwen2.5-coder-0.5b-smollm2-135m"


def _model(name: str, per: float, over: float, pre: float, slow: float) -> dict:
    pts = [{"batch": b, "context": L, "per_token": per * (1 + 0.8 * (b - 1)) * (1 + L / 4000),
            "intercept": over + pre * b * L, "n": 2} for b in (1, 2, 4) for L in (64, 512)]
    return {"model": name, "points": pts,
            "call_overhead": {"value": over, "n": 6, "stderr": 0.01},
            "prefill_per_token": {"value": pre, "n": 6, "stderr": 1e-4},
            "concurrent_slowdown": slow}


def _calibration(per_draft: float = 0.07):
    ec = EngineCosts.model_validate({
        "engine": "transformers", "device": "cpu", "dtype": "float32", "threads": 1,
        "tokens": (4, 16), "target": _model("tgt", 0.2, 0.05, 0.01, 1.2),
        "draft": _model("drf", per_draft, 0.05, 0.003, 1.2)})
    return load_preset(MEASURED).model_copy(update={"engine_costs": ec})


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 40), st.sampled_from([("sync",), ("async",), ("sync", "async")]),
       st.sampled_from([(1,), (1, 2), (1, 2, 3)]))
def test_candidates_are_every_point_within_the_budget_once(budget, modes, widths) -> None:
    got = candidates(budget, modes, widths)
    assert len(got) == len(set(got))
    assert all(k1 * k2 * w <= budget for _, k1, k2, w in got)
    assert all(w == 1 or (m == "sync" and k1 >= 2) for m, k1, _, w in got)
    assert all(m == "sync" for m, k1, _, _ in got if k1 == 1)  # k1 = 1 is one decoder
    expected = budget + sum(budget // (k1 * w) for m in modes for k1 in range(2, budget + 1)
                            for w in widths if w == 1 or m == "sync")
    assert len(got) == expected


def test_bad_search_inputs_name_the_parameter() -> None:
    for kwargs, msg in (({"budget": 0}, "budget must be an integer >= 1"),
                        ({"budget": 4, "modes": ("both",)}, "modes must be sync"),
                        ({"budget": 4, "widths": (0,)}, "widths must be integers >= 1")):
        with pytest.raises(ValueError, match=msg):
            candidates(**kwargs)


def test_the_best_is_the_fastest_refined_and_the_leanest_is_within_tolerance() -> None:
    cal = _calibration(per_draft=0.01)  # a cheap draft: speculation can pay
    r = optimize_decoder(cal, 6, screen_problems=20, refine=4, problems=60, draws=2)
    assert r.best == max(r.refined, key=lambda c: c.speedup)
    assert r.leanest.speedup >= r.best.speedup * (1 - r.tolerance)
    assert r.leanest.budget_used <= r.best.budget_used
    assert [c.speedup for c in r.screened] == sorted((c.speedup for c in r.screened),
                                                      reverse=True)
    assert len(r.screened) == len(candidates(6))
    assert all(c.interval is not None and c.tokens_per_second is not None for c in r.refined)
    assert r.baseline_tokens_per_second is not None and r.baseline_tokens_per_second > 0
    assert r.sources["target_decode"].startswith("measured: engine_costs")
    assert r.sources["prompt_tokens"].startswith("assumed")
    d = r.to_dict()
    assert d["model"] == "decoder model" and d["best"]["label"] == r.best.label
    base = next(c for c in r.screened if c.k1 == c.k2 == 1)
    assert base.speedup == 1.0


def test_optimize_leads_with_the_decoder_model_when_the_calibration_has_engine_costs(
        tmp_path, capsys) -> None:
    from cli.main import main

    path = save_calibration(_calibration(), tmp_path / "cal.json")
    assert main(["optimize", "--budget", "4", "--calibration", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["model"] == "decoder model"
    best = data["decoder_model"]["best"]
    assert (data["k1"], data["k2"], data["width"]) == (best["k1"], best["k2"], best["width"])
    assert data["comparisons"]["model"] == "priced by the measured T(b)"
    assert main(["optimize", "--budget", "4", "--calibration", str(path)]) == 0
    text = capsys.readouterr().out
    assert text.index("Decoder model: best") < text.index("Comparisons")
    assert text.count("Using calibration") == 1
    assert main(["optimize", "--budget", "4", "--calibration", str(path), "--no-decoder",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["model"] == "priced by the measured T(b)"


def test_optimize_without_engine_costs_says_what_the_decoder_model_misses(capsys) -> None:
    from cli.main import main

    assert main(["optimize", "--budget", "8", "--preset", MEASURED, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["decoder_model"]["used"] is False
    assert any(m.startswith("engine call costs") for m in data["decoder_model"]["missing"])
    assert main(["optimize", "--budget", "8", "--preset", MEASURED]) == 0
    assert "Decoder model (each engine call priced) not used: engine call costs" in \
        capsys.readouterr().out.replace("\n", " ")


def test_export_writes_the_decoder_models_choice(tmp_path, capsys) -> None:
    from cli.main import main
    from specmodel.formats.export import load_export

    path = save_calibration(_calibration(per_draft=0.01), tmp_path / "cal.json")
    assert main(["optimize", "--budget", "4", "--calibration", str(path), "--json"]) == 0
    leanest = json.loads(capsys.readouterr().out)["decoder_model"]["leanest"]
    out = tmp_path / "export.json"
    assert main(["export", "--budget", "4", "--calibration", str(path), "-o", str(out)]) == 0
    exp = load_export(out)
    assert exp.prediction.model == "decoder model"
    c = exp.config
    assert (c.mode if c.k1 > 1 else "sync", c.k1, c.k2, c.width) == (
        leanest["mode"] if leanest["k1"] > 1 else "sync", leanest["k1"], leanest["k2"],
        leanest["width"])
    assert any(n.startswith("decoder model") for n in exp.notes)


def test_continuous_batching_is_weighed_for_async_candidates_only(tmp_path, capsys) -> None:
    """With both batchings every async candidate (k1 >= 2) is screened twice, once per
    batching, and the rest once; the answer is a configuration that runs (continuous
    only in async); export writes the batching of the leanest; a bad value names the
    option."""
    from cli.main import main
    from specmodel.config import SpecConfig

    cal = _calibration(per_draft=0.01)
    r = optimize_decoder(cal, 6, screen_problems=10, refine=3, problems=30, draws=0,
                         batchings=("call", "continuous"))
    n_async = sum(1 for m, k1, _, _ in candidates(6) if m == "async" and k1 >= 2)
    assert len(r.screened) == len(candidates(6)) + n_async
    cont = [c for c in r.screened if c.target_batching == "continuous"]
    assert len(cont) == n_async and all(c.mode == "async" and c.k1 >= 2 for c in cont)
    for c in r.refined:
        cfg = c.config(SpecConfig())
        assert cfg.target_batching == c.target_batching and cfg.label == c.label
        assert c.to_dict()["target_batching"] == c.target_batching
    only = optimize_decoder(cal, 4, screen_problems=10, refine=2, problems=20, draws=0,
                            batchings=("continuous",))
    assert {c.target_batching for c in only.screened if c.mode == "async" and c.k1 > 1} \
        == {"continuous"}
    with pytest.raises(ValueError, match="batchings must be call and/or continuous"):
        optimize_decoder(cal, 4, batchings=("streaming",))
    path = save_calibration(cal, tmp_path / "cal.json")
    out = tmp_path / "export.json"
    assert main(["export", "--calibration", str(path), "--budget", "4", "--target-batching",
                 "continuous", "-o", str(out)]) == 0
    cfg = json.loads(out.read_text())["config"]
    assert cfg["target_batching"] == ("continuous" if cfg["mode"] == "async" and cfg["k1"] > 1
                                      else "call")
    capsys.readouterr()
    assert main(["optimize", "--calibration", str(path), "--target-batching", "streaming"]) == 2
    assert "--target-batching must be one of call, continuous, both" in capsys.readouterr().err
