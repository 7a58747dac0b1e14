"""``bench_hf_paths``: the transformers engine's decode paths timed through its own
calls, on a random-weight folder it writes (config, weights, a word-level tokenizer)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
TINY = {"model_type": "qwen2", "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "vocab_size": 512}


@pytest.fixture
def tiny_engine(tmp_path: Path):
    """The transformers engine on a random-weight folder of the tiny architecture."""
    require("torch")
    require("transformers")
    from benchmarks.bench_hf_paths import random_model_folder
    from profiler.engines import HFEngine

    arch = tmp_path / "tiny.json"
    arch.write_text(json.dumps(TINY))
    model, tokenizer = random_model_folder(str(arch), tmp_path, dtype="float32")
    return HFEngine(model, tokenizer=tokenizer)


def test_random_folder_loads_as_an_engine(tiny_engine) -> None:
    from benchmarks.bench_hf_paths import prompts_of

    engine = tiny_engine
    assert len(engine.tokenizer) == TINY["vocab_size"]
    prompts = prompts_of(engine, 2, 20, seed=0)
    assert [engine.count_tokens(p) for p in prompts] == [20, 20]  # one word, one token
    assert engine.generate_exact(prompts, 5) > 0


def test_the_compiled_path_writes_what_eager_does(tiny_engine) -> None:
    """transformers' compiled decoding forwards over the static cache (inductor on the
    CPU, a few seconds for this tiny shape) write the eager path's greedy tokens, and
    transformers did compile (SmolLM2 in the slow live test)."""
    from benchmarks.bench_hf_paths import prompts_of

    eager = tiny_engine
    compiled = eager.with_decode_path("compiled")
    assert compiled.model is eager.model and eager.decode_path == "eager"
    prompt = prompts_of(eager, 1, 24, seed=3)[0]
    for engine in (eager, compiled):  # a chain: the second call reuses the first's cache
        text = prompt
        for _ in range(2):
            text += " " + engine.generate_steps([text], 12).outputs[0].text
        if engine is eager:
            expected = text
    assert text == expected
    assert hasattr(eager.model, "_compiled_call")  # transformers did compile


def test_prepare_compiles_before_the_run(tiny_engine) -> None:
    """``prepare``: static caches as long as the run needs and, on the compiled path,
    each batch size compiled ahead, so that the run's own calls compile nothing."""
    import torch

    from benchmarks.bench_hf_paths import prompts_of

    # eager: each batch size run once (its first-call costs paid), no static cache
    assert tiny_engine.prepare([1, 2], 300) > 0 and not tiny_engine._static
    compiled = tiny_engine.with_decode_path("compiled")
    assert compiled.prepare([2, 1], 300) > 0
    assert {b: held.length for b, held in compiled._static.items()} == {1: 512, 2: 512}
    graphs = dict(torch._dynamo.utils.counters["stats"])
    prompts = prompts_of(compiled, 2, 40, seed=5)
    compiled.generate_steps(prompts, 16)
    compiled.generate_steps(prompts[:1], 16)
    assert dict(torch._dynamo.utils.counters["stats"]) == graphs  # nothing compiled
    assert compiled._static[1].length == 512  # and no cache grew
    with pytest.raises(ValueError, match="batches must be integers >= 1"):
        compiled.prepare([0], 300)


def test_decode_prepares_both_engines_for_the_run(tiny_engine, capsys) -> None:
    """``decode --decode-path``: the target prepared for its batches 1 … k1, the draft for
    one prefix, both for the run's longest call, before anything is timed."""
    from cli.decode import _prepare_paths
    from profiler.problems import format_prompt, load_problems
    from profiler.runs import prompt_lengths
    from specmodel.config import SpecConfig

    cfg = SpecConfig(k1=2, max_steps=3, max_step_tokens=8)
    probs = load_problems(2, 0)
    target = tiny_engine.with_decode_path("compiled")
    draft = tiny_engine.with_decode_path("static")
    target._static = {}  # copies share their caches; these are two engines' own
    _prepare_paths(target, draft, cfg, prompt_lengths(target, probs), None)
    longest = max(tiny_engine.count_tokens(format_prompt(p)) for p in probs) + 4 * 8 + 64
    assert sorted(target._static) == [1, 2] and sorted(draft._static) == [1]
    assert all(h.length >= longest for h in (*target._static.values(), draft._static[1]))
    assert f"compiled decode path prepared for calls of up to {longest} positions" in (
        capsys.readouterr().err)


def test_a_sweep_is_prepared_for_its_widest_and_longest_configuration(tiny_engine) -> None:
    """``prepare_engines`` (``bench_heldout --decode-path``): the target for 1 … the
    largest k1 × width of the sweep, the draft for 1 … its largest width, the caches for
    the longest step caps; engines on the eager path get no static cache, only each
    batch size run once; an empty sweep or problem list is refused."""
    from profiler.problems import format_prompt, load_problems
    from profiler.runs import prepare_engines, prompt_lengths
    from specmodel.config import SpecConfig

    sweep = [SpecConfig(k1=1, max_steps=2, max_step_tokens=8),
             SpecConfig(k1=2, width=2, max_steps=3, max_step_tokens=8, mode="sync"),
             SpecConfig(k1=3, max_steps=2, max_step_tokens=16)]
    probs = load_problems(2, 0)
    target = tiny_engine.with_decode_path("static")
    draft = tiny_engine.with_decode_path("static")
    target._static, draft._static = {}, {}  # copies share their caches: their own here
    lengths = prompt_lengths(target, probs)
    assert lengths == [tiny_engine.count_tokens(format_prompt(p)) for p in probs]
    positions, seconds = prepare_engines(target, draft, sweep, lengths)
    prompt = max(lengths)
    assert positions == prompt + 3 * 16 + 64 and seconds >= 0
    assert sorted(target._static) == [1, 2, 3, 4] and sorted(draft._static) == [1, 2]
    assert all(h.length >= positions for e in (target, draft) for h in e._static.values())
    eager = tiny_engine.with_decode_path("eager")
    judged: list = []

    class Verifier:  # its first call is made before the clock too
        def verify(self, pairs):
            judged.extend(pairs)

    assert prepare_engines(eager, None, sweep, lengths, Verifier())[1] > 0
    assert not getattr(eager, "_static", None) and len(judged) == 1
    with pytest.raises(ValueError, match="configs must not be empty"):
        prepare_engines(target, draft, [], lengths)
    with pytest.raises(ValueError, match="lengths must not be empty"):
        prepare_engines(target, draft, sweep, [])
    with pytest.raises(ValueError, match="problems must not be empty"):
        prompt_lengths(target, [])


def test_the_prepared_caches_are_held_against_the_engine_costs(tiny_engine) -> None:
    """``prepared_message`` (what ``decode`` and ``bench_heldout`` print): the cache length
    the run prepared, and a note where the calibration's engine costs were timed on the
    eager path, on caches grown cell by cell, or on another length; none where they
    were timed on this one."""
    from profiler.runs import prepared_message
    from specmodel.formats.calibration import load_calibration, load_preset

    engine = tiny_engine.with_decode_path("static", own_caches=True)
    engine.prepare([1], 766)
    line = prepared_message(engine, 766, 0.3)
    assert line == ("static decode path prepared for calls of up to 766 positions (static "
                    "caches of 1024) in 0.3 s (not timed)")
    grown = load_calibration(RESULTS / "heldout_05b_calibration_static.json")
    assert line + ("; note: the calibration's engine costs were timed on static caches "
                   "grown as each cell needed (up to 512 positions), this run's caches have "
                   "1024 (profile engine-costs --decode-path static --cache-positions 766 "
                   "times them on these)") == prepared_message(engine, 766, 0.3, grown)
    def timed(**update: Any) -> Any:  # the calibration, its engine-costs settings updated
        prov = grown.provenance
        phases = prov.settings.phases
        phases = phases.model_copy(update={
            "engine_costs": phases.engine_costs.model_copy(update=update)})
        return grown.model_copy(update={"provenance": prov.model_copy(update={
            "settings": prov.settings.model_copy(update={"phases": phases})})})

    assert "timed on the eager path, this run's caches have 1024" in prepared_message(
        engine, 766, 0.3, timed(decode_path="eager"))
    assert prepared_message(engine, 766, 0.3, timed(cache_positions=700)) == line
    assert ("timed on static caches of 2048 positions, this run's caches have 1024" in
            prepared_message(engine, 766, 0.3, timed(cache_positions=1500)))
    preset = load_preset("measured-qwen2.5-coder-0.5b-smollm2-135m")  # no provenance phases
    assert prepared_message(engine, 766, 0.3, preset) == line


def _tiny_bench(tmp_path: Path) -> tuple[Any, Path, Path]:
    """(the benchmark's main, the tiny architecture written out, a JSON to write)."""
    require("torch")
    require("transformers")
    from benchmarks.bench_hf_paths import main

    arch = tmp_path / "tiny.json"
    arch.write_text(json.dumps(TINY))
    return main, arch, tmp_path / "hf.json"


def _quick(arch: Path, out: Path, *more: str) -> list[str]:
    """The benchmark's arguments for a few short calls on one thread."""
    return ["--arch", str(arch), "--tokens", "4", "--prompt-tokens", "16", "--repeats", "2",
            "--threads", "1", "--out", str(out), *more]


def test_a_static_path_is_timed_at_two_cache_lengths_side_by_side(tmp_path: Path) -> None:
    """--cache-positions: the static path once on caches grown as the calls need and
    once on caches prepared for longer calls (each its own), both beside eager, each
    row naming its cache's length; sizes that give one length twice, or a negative one,
    are refused."""
    main, arch, out = _tiny_bench(tmp_path)
    assert main(_quick(arch, out, "--paths", "eager,static", "--batches", "1",
                       "--cache-positions", "0,600")) == 0
    got = json.loads(out.read_text())
    rows = {r["label"]: r for r in got["rows"]}
    assert set(rows) == {"eager", "static@grown", "static@1024"}
    assert rows["static@grown"]["cache_length"] == 256
    assert rows["static@1024"]["cache_length"] == 1024
    assert rows["eager"]["cache_length"] is None and got["cache_positions"] == [0, 600]
    assert all(r["over_eager"] is not None for r in rows.values())
    with pytest.raises(ValueError, match="the same cache length twice"):
        main(["--arch", str(arch), "--paths", "static", "--batches", "1", "--tokens", "2",
              "--prompt-tokens", "8", "--repeats", "1", "--cache-positions", "600,700",
              "--out", str(tmp_path / "x.json")])
    with pytest.raises(SystemExit):
        main(["--arch", str(arch), "--cache-positions", "-5", "--out", str(out)])


def test_every_path_is_timed_against_eager(tmp_path: Path, capsys) -> None:
    main, arch, out = _tiny_bench(tmp_path)
    assert main(_quick(arch, out, "--paths", "static,eager,compiled", "--batches", "1,2")) == 0
    got = json.loads(out.read_text())
    rows = {(r["path"], r["batch"]): r for r in got["rows"]}
    assert set(rows) == {(p, b) for p in ("eager", "static", "compiled") for b in (1, 2)}
    said = {"eager": "eager (dynamic KV cache)", "static": "static KV cache, eager",
            "compiled": "compiled by torch.compile"}
    for (path, _), r in rows.items():
        assert len(r["ms_per_step"]) == 2 and r["min_ms"] <= r["median_ms"] <= r["max_ms"]
        assert r["first_call_s"] > 0 and said[path] in r["execution"]
        assert r["prompt_tokens"] == 16
        if path == "eager":
            assert r["over_eager"] == pytest.approx(1.0)
        else:
            assert r["over_eager"] > 0 and r["over_eager_range"][0] <= r["over_eager"]
    assert "ms per decoding step" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--arch", str(arch), "--paths", "graphs"])


class _Failing:
    """An engine whose compiled path fails on its first call (what a GPU that cannot
    compile would do), for the benchmark's bookkeeping alone."""

    execution = "eager"

    def __init__(self, path: str = "eager") -> None:
        self.decode_path, self.execution = path, path
        self.tokenizer = [0] * 100

    def cache_length(self, batch: int) -> None:
        return None

    def with_decode_path(self, path: str) -> _Failing:
        return _Failing(path)

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def generate_exact(self, prompts: list[str], tokens: int) -> float:
        if self.decode_path == "compiled":
            raise RuntimeError("no compiler here")
        return {"eager": 0.02, "static": 0.03}[self.decode_path] * tokens


def test_a_path_that_fails_is_kept_with_its_error(monkeypatch) -> None:
    import benchmarks.bench_hf_paths as bench

    monkeypatch.setattr(bench, "prompts_of", lambda engine, b, n, seed: ["w " * n] * b)
    rows = bench.measure(_Failing(), paths=["eager", "static", "compiled"], batches=[1],
                         tokens=4, prompt_tokens=8, repeats=3)
    got = {r["path"]: r for r in rows}
    assert got["compiled"]["error"] == "RuntimeError: no compiler here"
    assert got["compiled"]["median_ms"] is None and got["compiled"]["first_call_s"] is None
    assert got["eager"]["median_ms"] == pytest.approx(20.0) and got["eager"]["error"] is None
    assert got["static"]["over_eager"] == pytest.approx(1.5)
