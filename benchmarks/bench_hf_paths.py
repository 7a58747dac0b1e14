"""What each decode path of the transformers engine costs per decoding step.

The transformers engine (:class:`profiler.engines.HFEngine`) decodes on one of three
paths (``--decode-path``): eager over the dynamic KV cache, eager over a static cache,
or transformers' compiled decoding forwards over the static cache (CUDA graphs on
CUDA).  This times the engine's own exact calls (``generate_exact``: the step's whole
path, tokenizing, the stopping check on every token and decoding the rows included) on
each path, for a few batch sizes, one loaded model serving every path
(``with_decode_path``), the paths interleaved round by round in a rotating order.  The
first call of each (path, batch) is reported apart: on the compiled path it compiles.

On the static paths every forward attends over the whole cache, so a call's cost can
follow the cache's length more than its context.  ``--cache-positions 0,766`` times each
static path at each of those cache sizes side by side (its own caches per size, prepared
by ``HFEngine.prepare`` for calls of that many positions as a decode run prepares them;
0: grown to what the calls need, a power of two from 256), labelled ``static@1024``.

A model folder or pack (``--model``), or an embedded architecture with random weights
(``--arch``: the folder is written to a scratch directory with a generated word-level
tokenizer over the architecture's vocabulary, so nothing is downloaded; the time of a
forward does not depend on the weights' values).

Usage::

    python -m benchmarks.bench_hf_paths --model smollm2-135m                # this CPU
    python -m benchmarks.bench_hf_paths --arch qwen2.5-0.5b --device cuda \\
        --dtype bfloat16 --out results/gpu/hf_paths.json                    # a GPU
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import print_table, write_json


def random_model_folder(arch: str, folder: Path, *, dtype: str, device: str = "cpu",
                        seed: int = 0) -> tuple[Path, Path]:
    """An embedded architecture (or a ``config.json``) as folders the engine loads: the
    model (random weights in ``dtype``, drawn on ``device``, which is faster for a large
    model on a GPU) in ``folder/model`` and, in ``folder/tokenizer``, a word-level
    tokenizer whose words ``t3`` … ``t{vocab-1}`` are the token ids (0–2 its special
    tokens; a folder of its
    own: beside a model's config transformers would load the model type's tokenizer
    class instead)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import AutoConfig, AutoModelForCausalLM, PreTrainedTokenizerFast

    from profiler.hardware import read_config

    _, config = read_config(arch)
    fields = {k: v for k, v in config.items() if not k.startswith("_")}
    cfg = AutoConfig.for_model(fields.pop("model_type"), **fields)
    torch.manual_seed(seed)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(getattr(torch, dtype))
    try:
        with torch.device(device):
            model = AutoModelForCausalLM.from_config(cfg)
    finally:
        torch.set_default_dtype(previous)
    model.save_pretrained(folder / "model")
    del model
    special = ["<unk>", "<eos>", "<pad>"]  # not words: a special token splits any word
    vocab = {w: i for i, w in enumerate(special)}  # it begins
    vocab.update({f"t{i}": i for i in range(len(special), cfg.vocab_size)})
    words = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    words.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    words.decoder = decoders.WordPiece(cleanup=False)  # words joined by spaces, reloaded too
    PreTrainedTokenizerFast(tokenizer_object=words, unk_token="<unk>", pad_token="<pad>",
                            eos_token="<eos>").save_pretrained(folder / "tokenizer")
    return folder / "model", folder / "tokenizer"


def prompts_of(engine: Any, batch: int, tokens: int, seed: int) -> list[str]:
    """``batch`` prompts of about ``tokens`` tokens: random ids from the middle half of
    the tokenizer's vocabulary (away from its special tokens) decoded to text."""
    rng = random.Random(seed)
    vocab = len(engine.tokenizer)
    return [engine.tokenizer.decode([rng.randrange(vocab // 4, 3 * vocab // 4)
                                     for _ in range(tokens)], skip_special_tokens=True)
            for _ in range(batch)]


def variants(engine: Any, paths: list[str], batches: list[int],
             cache_positions: list[int]) -> dict[str, Any]:
    """The engines timed, by label: each path on ``engine``'s model; with
    ``cache_positions``, each static path once per size, on caches of its own prepared
    for calls of that many positions (0: grown as the calls need), labelled
    ``path@length``."""
    out: dict[str, Any] = {}
    for p in paths:
        if p == "eager" or not cache_positions:
            out[p] = engine.with_decode_path(p)
            continue
        for n in cache_positions:
            e = engine.with_decode_path(p, own_caches=True)
            if n > 0:
                e.prepare(batches, n)
            label = f"{p}@{e.cache_length(max(batches)) or 'grown'}"
            if label in out:
                raise ValueError(f"cache_positions {cache_positions} give {p} the same "
                                 "cache length twice")
            out[label] = e
    return out


def measure(engine: Any, *, paths: list[str], batches: list[int], tokens: int,
            prompt_tokens: int, repeats: int, seed: int = 0,
            cache_positions: list[int] | None = None) -> list[dict[str, Any]]:
    """Every (path, batch): the first call's seconds, then ``repeats`` calls in rounds
    (each round every batch, the paths in a rotating order), as ms per decoding step.
    With ``cache_positions`` each static path is timed at each cache size
    (:func:`variants`); every row names its path, its label and its cache's length.
    A (path, batch) whose first call fails (a compilation the machine refuses, say) is
    kept with its ``error`` and not timed; the others go on."""
    engines = variants(engine, paths, batches, cache_positions or [])
    labels = list(engines)
    prompts = {b: prompts_of(engine, b, prompt_tokens, seed + b) for b in batches}
    first: dict[tuple[str, int], float] = {}
    failed: dict[tuple[str, int], str] = {}
    for b in batches:
        for v in labels:
            try:
                first[v, b] = engines[v].generate_exact(prompts[b], tokens)
            except Exception as e:  # reported in its row; the others are measured
                failed[v, b] = f"{type(e).__name__}: {str(e)[:400]}"
    times: dict[tuple[str, int], list[float]] = {k: [] for k in first}
    for r in range(repeats):
        for b in batches:
            for v in labels[r % len(labels):] + labels[: r % len(labels)]:
                if (v, b) in times:
                    times[v, b].append(engines[v].generate_exact(prompts[b], tokens))
    rows = []
    for b in batches:
        counted = statistics.mean(engine.count_tokens(t) for t in prompts[b])
        for v in labels:
            e = engines[v]
            row: dict[str, Any] = {
                "path": e.decode_path, "label": v, "batch": b, "execution": e.execution,
                "cache_length": e.cache_length(b), "prompt_tokens": counted,
                "first_call_s": first.get((v, b)), "error": failed.get((v, b)),
                "ms_per_step": None, "median_ms": None, "min_ms": None, "max_ms": None,
                "over_eager": None, "over_eager_range": None}
            secs, eager = times.get((v, b)), times.get(("eager", b))
            if secs:
                ms = [1000 * s / tokens for s in secs]
                row.update(ms_per_step=ms, median_ms=statistics.median(ms), min_ms=min(ms),
                           max_ms=max(ms))
                if eager:
                    ratios = [s / e for s, e in zip(secs, eager, strict=True)]
                    row.update(over_eager=statistics.median(ratios),
                               over_eager_range=[min(ratios), max(ratios)])
            rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    what = ap.add_mutually_exclusive_group()
    what.add_argument("--model", help="model folder or pack (default smollm2-135m)")
    what.add_argument("--arch", help="embedded architecture or config.json, random weights")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--paths", default="eager,static,compiled")
    ap.add_argument("--batches", default="1,4")
    ap.add_argument("--tokens", type=int, default=32, help="tokens per call (steps)")
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cache-positions", default="",
                    help="comma-separated call lengths the static paths' caches are "
                         "prepared for, each timed side by side (0: grown as needed)")
    ap.add_argument("--out", type=Path, default=None,
                    help="JSON to write (default results/hf_paths_<device>.json)")
    args = ap.parse_args(argv)
    from profiler.engines import HFEngine
    from profiler.engines.hf import DECODE_PATHS, static_cache_length
    from profiler.environment import package_versions

    paths = [p for p in args.paths.split(",") if p]
    bad = [p for p in paths if p not in DECODE_PATHS]
    if bad or not paths:
        ap.error(f"--paths must be some of {', '.join(DECODE_PATHS)}, got {args.paths!r}")
    if "eager" in paths:  # the ratios are to eager: it runs first in every round's order
        paths.remove("eager")
        paths.insert(0, "eager")
    batches = [int(b) for b in args.batches.split(",") if b]
    try:
        cache = [int(n) for n in args.cache_positions.split(",") if n]
    except ValueError:
        cache = [-1]
    if any(n < 0 for n in cache) or len(set(cache)) != len(cache):
        ap.error("--cache-positions must be distinct integers >= 0, got "
                 f"{args.cache_positions!r}")
    with tempfile.TemporaryDirectory() as scratch:
        t0 = time.perf_counter()
        tokenizer = None
        if args.arch:
            folder, tokenizer = random_model_folder(args.arch, Path(scratch),
                                                    dtype=args.dtype, device=args.device)
            source = f"{args.arch}, random weights"
        else:
            from profiler.packs import resolve_model

            source = args.model or "smollm2-135m"
            folder = resolve_model(source, option="--model")
        engine = HFEngine(folder, threads=args.threads, device=args.device, dtype=args.dtype,
                          # room for each cache as the engine rounds it up
                          max_context=max(256, args.prompt_tokens + args.tokens + 64,
                                          *(static_cache_length(n) for n in cache if n)),
                          tokenizer=tokenizer)
        built = time.perf_counter() - t0
        rows = measure(engine, paths=paths, batches=batches, tokens=args.tokens,
                       prompt_tokens=args.prompt_tokens, repeats=args.repeats,
                       cache_positions=cache)
    print_table(f"transformers engine, {source} on {args.device} ({args.dtype}): ms per "
                f"decoding step, {args.tokens} tokens per call, {args.repeats} calls",
                ["path", "batch", "first call s", "median ms", "min", "max", "÷ eager"],
                [[r["label"], r["batch"], f"{r['first_call_s']:.1f}", f"{r['median_ms']:.2f}",
                  f"{r['min_ms']:.2f}", f"{r['max_ms']:.2f}",
                  "-" if r["over_eager"] is None else f"{r['over_eager']:.3f}"]
                 if r["error"] is None else [r["label"], r["batch"], "failed", "-", "-", "-", "-"]
                 for r in rows])
    for r in rows:
        if r["error"] is not None:
            print(f"{r['label']} b={r['batch']} failed: {r['error']}")
    payload = {"model": source, "device": args.device, "dtype": args.dtype,
               "tokens": args.tokens, "prompt_tokens": args.prompt_tokens,
               "repeats": args.repeats, "threads": args.threads, "load_s": built,
               "cache_positions": cache,
               "versions": package_versions(), "rows": rows}
    if args.device == "cuda":
        import torch

        payload["gpu"] = torch.cuda.get_device_name(0)
    out = args.out
    if out is not None:
        write_json(out.stem, payload, out.parent)
    else:
        write_json(f"hf_paths_{args.device}", payload)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
