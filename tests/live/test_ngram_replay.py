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
