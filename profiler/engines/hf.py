"""Hugging Face transformers as an engine (:class:`HFEngine`): CPU or CUDA, batched.

Token-level speculation inside a step: n-gram prompt lookup
(``prompt_lookup_num_tokens``) or an assistant model, one prefix at a time
(transformers' assisted generation takes batch size 1); the methods it runs are
:data:`specmodel.config.DECODER_TOKEN_METHODS`.  torch / transformers are
imported inside the class.

Three decode paths (:data:`DECODE_PATHS`, the engine's ``decode_path``; the engine's
``execution`` says which one produced a run's numbers):

``eager``
    transformers' ``generate`` over its dynamic KV cache, every forward eager: on a GPU
    it measures kernel launches and Python as much as the GPU.
``static``
    the same over a ``StaticCache`` the engine keeps per batch size (its length a power
    of two from 256 up to ``max_context``, grown when a call needs more and then kept,
    so that a compiled forward sees few shapes), still eager.
``compiled``
    ``static`` with transformers' own compilation of the decoding forwards
    (``torch.compile``, mode ``reduce-overhead``: CUDA graphs on CUDA; on the CPU
    inductor's kernels, which transformers offers for testing).  Each new batch size or
    cache length compiles once, tens of seconds.

Calls with token speculation run on the dynamic cache on every path: transformers'
assisted generation crops its cache, which a static cache does not do.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from profiler.engines.base import (
    STEP_DELIMITER,
    EngineError,
    StepBatch,
    StepOutput,
    check_step_request,
    cut_at_step,
)
from specmodel.config import DECODER_TOKEN_METHODS, TokenSpeculation

__all__ = ["DECODE_PATHS", "DEFAULT_DECODE_PATH", "HFEngine", "cache_mismatch",
           "check_decode_path", "hf_execution", "static_cache_length"]

DECODE_PATHS = ("eager", "static", "compiled")
"""How :class:`HFEngine` runs a call without token speculation (the module's docstring)."""
DEFAULT_DECODE_PATH = "eager"
"""The decode path an :class:`HFEngine` takes when none is given."""

_STATIC_MIN = 256
"""The shortest static cache the engine allocates (positions)."""


def static_cache_length(positions: int, max_context: int | None = None) -> int:
    """The length of the static cache the engine makes for calls of up to ``positions``
    positions (prompt and new tokens): the next power of two, at least
    :data:`_STATIC_MIN`, at most ``max_context`` when one is given."""
    if positions < 1:
        raise ValueError(f"positions must be >= 1, got {positions}")
    length = max(_STATIC_MIN, 1 << (positions - 1).bit_length())
    return length if max_context is None else min(length, max_context)


def cache_mismatch(phase: Any, length: int | None) -> str | None:
    """Where an ``engine_costs`` phase's settings (``phase``, None: none) timed its
    calls on other static caches than a run's of ``length`` positions (None: the run
    had none), how: "on the eager path", "on static caches of N positions" or "on
    static caches grown as each cell needed (up to N positions)"; None where they match
    or nothing can be said."""
    if phase is None or length is None:
        return None
    if phase.decode_path == "eager":
        return "on the eager path"
    if phase.cache_positions is not None:
        timed = static_cache_length(phase.cache_positions)
        return None if timed == length else f"on static caches of {timed} positions"
    need = static_cache_length(max(phase.contexts) + max(phase.tokens))
    return f"on static caches grown as each cell needed (up to {need} positions)"


def _check_method(speculation: TokenSpeculation | None) -> None:
    if speculation is not None and speculation.method not in DECODER_TOKEN_METHODS:
        raise EngineError(
            f"token method {speculation.method!r} does not run on the transformers engine "
            f"(it runs {', '.join(DECODER_TOKEN_METHODS)}); use the vllm engine for it"
        )


_NEVER = "\x00never\x00"
"""A delimiter no model writes: the exact calls' stopping check runs but never stops."""


class _DelimiterStop:
    """transformers stopping criterion: a row stops once its new text contains the delimiter.

    Cheaper than ``stop_strings``, which rebuilds a vocabulary-wide table on every
    ``generate`` call (about 0.3 s here, the time of several decode steps of a small model).
    """

    def __init__(self, tokenizer: Any, delimiter: str, n_prompt: int, torch: Any) -> None:
        self.tokenizer = tokenizer
        self.delimiter = delimiter
        self.n_prompt = n_prompt
        self.torch = torch

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        new = input_ids[:, self.n_prompt :].tolist()
        done = [self.delimiter in self.tokenizer.decode(row, skip_special_tokens=True)
                for row in new]
        return self.torch.tensor(done, dtype=self.torch.bool, device=input_ids.device)


@dataclass(frozen=True)
class _Assistant:
    """A loaded token-level draft model for transformers' assisted generation."""

    model: Any
    """The draft model."""
    tokenizer: Any
    """Its tokenizer when its vocabulary differs from the target's, else None."""


def check_decode_path(decode_path: str, option: str = "decode_path") -> None:
    """A ValueError naming ``option`` unless ``decode_path`` is one of :data:`DECODE_PATHS`."""
    if decode_path not in DECODE_PATHS:
        raise ValueError(f"{option} must be one of {', '.join(DECODE_PATHS)}, "
                         f"got {decode_path!r}")


def hf_execution(decode_path: str, device: str) -> str:
    """The engine's ``execution`` (what produced its numbers) for a decode path."""
    if decode_path == "eager":
        return (f"transformers generate, eager (dynamic KV cache) on {device}"
                + (": kernel launches and Python as much as the GPU"
                   if device == "cuda" else ""))
    how = ("static KV cache, eager" if decode_path == "static" else
           "static KV cache, decoding forwards compiled by torch.compile (reduce-overhead"
           + (": CUDA graphs)" if device == "cuda" else ", inductor on the CPU)"))
    return (f"transformers generate, {how} on {device}; calls with token speculation "
            f"eager (dynamic KV cache)")


@dataclass
class _StaticCache:
    """A static KV cache the engine reuses for calls of one batch size."""

    cache: Any
    """transformers' ``StaticCache``."""
    length: int
    """Its positions."""
    tokens: list[int] | None = None
    """What the last call left in it when that call had one prefix (its prompt and
    output), else None: the next single-prefix call reuses what it begins with."""


@dataclass
class _Call:
    """What one ``generate`` call wrote and the shape it had."""

    rows: list[list[int]]
    """Each prompt's new token ids (padding included where a row ended early)."""
    prompt_tokens: list[int]
    """Each row's prompt tokens, padding excluded."""
    prefilled: int
    """Tokens the call prefilled: the padded batch less what a reused KV cache held."""


def _common(ids: list[int], cached: list[int] | None) -> int:
    """How many of the ``cached`` tokens ``ids`` begins with, at most ``len(ids) - 1``
    (one token must go through the model); 0 without a cache."""
    if not cached:
        return 0
    common = 0
    for a, b in zip(ids, cached, strict=False):
        if a != b:
            break
        common += 1
    return max(0, min(common, len(ids) - 1))


def _set_length(cache: Any, length: int) -> None:
    """Make a static cache hold its first ``length`` positions: each layer's count of
    what it holds, which is where the next forward writes, set in place (the positions
    beyond are stale and masked until overwritten)."""
    for layer in cache.layers:
        count = getattr(layer, "cumulative_length", None)
        if count is None:
            raise EngineError("this transformers' StaticCache does not count what it holds "
                              "(no cumulative_length): use --decode-path eager")
        if hasattr(count, "fill_"):
            count.fill_(length)
        else:
            layer.cumulative_length = length


class HFEngine:
    """Hugging Face transformers on a device (CPU fp32 by default; CUDA with SDPA
    attention), greedy, batched with left padding.  Step times are read after the
    device has synchronized.  ``decode_path`` (:data:`DECODE_PATHS`): eager over the
    dynamic cache (on a GPU, kernel launches and Python as much as the GPU), static
    (a ``StaticCache``) or compiled (the static cache with transformers' compiled
    decoding forwards: CUDA graphs on CUDA); the module's docstring.  ``tokenizer``: the
    tokenizer's folder when it is not the model's."""

    name = "transformers"

    def __init__(
        self,
        model: str | Path,
        *,
        threads: int = 1,
        speculation: TokenSpeculation | None = None,
        max_context: int = 4096,
        delimiter: str = STEP_DELIMITER,
        prefix_cache: bool = True,
        device: str = "cpu",
        dtype: str = "float32",
        decode_path: str = DEFAULT_DECODE_PATH,
        tokenizer: str | Path | None = None,
    ) -> None:
        _check_method(speculation)
        from profiler.hardware import check_device

        check_device(device, dtype)
        check_decode_path(decode_path)
        if max_context < _STATIC_MIN:
            raise ValueError(f"max_context must be >= {_STATIC_MIN}, got {max_context}")
        try:
            import torch
            from transformers import AutoTokenizer
        except ImportError as e:
            raise EngineError(f"transformers engine not installed: {e}") from e
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        if not delimiter:
            raise ValueError("delimiter must be a non-empty string")
        self.delimiter = delimiter
        torch.set_num_threads(threads)
        self._torch = torch
        self.device, self.dtype = device, dtype
        self.decode_path = decode_path
        """eager, static or compiled (:data:`DECODE_PATHS`)."""
        self.execution = hf_execution(decode_path, device)
        path = Path(model)
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(
                path if tokenizer is None else Path(tokenizer), trust_remote_code=False)
            self.model = self._torch_load(path)
        except Exception as e:
            raise EngineError(f"model {path} will not load: {type(e).__name__}: {e}") from e
        self.model.eval()
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.speculation = speculation
        self.max_context = max_context
        self.prefix_cache = prefix_cache
        """Reuse the KV cache of the previous single-prefix call for a shared prefix."""
        self._prefix: tuple[list[int], Any] | None = None
        self._static: dict[int, _StaticCache] = {}
        """Batch size → the static cache its calls reuse (static and compiled paths)."""
        self._compile: Any = None
        """transformers' ``CompileConfig`` of the compiled path, made on its first call."""
        self._assistant = self._assistant_for(speculation)

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` (no special tokens)."""
        return len(self.tokenizer(text, add_special_tokens=False).input_ids)

    def with_speculation(self, speculation: TokenSpeculation | None) -> HFEngine:
        """The same loaded model with other token-level speculation (no reload; ``self``
        when the speculation is the same)."""
        if speculation == self.speculation:
            return self
        _check_method(speculation)
        other = copy.copy(self)
        other.speculation = speculation
        other._prefix = None
        other._assistant = self._assistant_for(speculation)
        return other

    def with_prefix_cache(self, enabled: bool) -> HFEngine:
        """The same loaded model with the reuse of the previous single-prefix call's KV
        cache on or off (no reload; ``self`` when it is already so)."""
        if enabled == self.prefix_cache:
            return self
        other = copy.copy(self)
        other.prefix_cache = enabled
        other._prefix = None
        return other

    def with_decode_path(self, decode_path: str, *, own_caches: bool = False) -> HFEngine:
        """The same loaded model on another decode path (:data:`DECODE_PATHS`; no reload;
        ``self`` when the path is the same and ``own_caches`` is False).  The static
        caches are shared with ``self`` unless ``own_caches``: then the copy starts with
        none of its own (to time one path at two cache lengths side by side)."""
        check_decode_path(decode_path)
        if decode_path == self.decode_path and not own_caches:
            return self
        other = copy.copy(self)
        other.decode_path = decode_path
        other.execution = hf_execution(decode_path, self.device)
        other._prefix = None
        if own_caches:
            other._static = {}
        return other

    def cache_length(self, batch: int) -> int | None:
        """The length of the static cache this engine holds for calls of ``batch``
        prefixes (None: none yet, or the eager path)."""
        held = self._static.get(batch)
        return None if held is None or self.decode_path == "eager" else held.length

    def prepare(self, batches: Iterable[int], positions: int) -> float:
        """Ready the engine before a run; the seconds it took.

        For every batch size in ``batches``: on the static and compiled paths a static
        cache long enough for ``positions`` (the prompt and new tokens of the longest
        call the run will make), so that no call grows it; on every path a short call of
        that size, so that what a first call of a shape costs once — allocating its
        activations, choosing kernels; on the compiled path transformers compiling the
        decoding forward (and on CUDA recording its graph) — is paid now instead of
        inside the run's first timed call (unprepared, the 1.5B target's first call on
        the 2-core Xeon took 16 s longer than its price, 2026-12-02).  A batch size
        not prepared pays that when it first comes."""
        sizes = sorted(set(batches))
        if not sizes or min(sizes) < 1:
            raise ValueError(f"batches must be integers >= 1, got {sizes}")
        if positions < 1:
            raise ValueError(f"positions must be >= 1, got {positions}")
        t0 = time.perf_counter()
        plain = self if self.speculation is None else self.with_speculation(None)
        for b in sizes:
            if self.decode_path != "eager":
                self._static_cache(b, min(positions, self.max_context))
            # a prefill, then decoding forwards (on the compiled path enough to record)
            plain._generate(["Prepare the decoder."] * b,
                            6 if self.decode_path == "compiled" else 3, exact=True)
        if self.device == "cuda":
            self._torch.cuda.synchronize()
        return time.perf_counter() - t0

    def spec_decode_metrics(self) -> dict[str, Any]:
        """transformers reports no speculation counters: always {}."""
        return {}

    def _assistant_for(self, speculation: TokenSpeculation | None) -> _Assistant | None:
        """The draft model that ``speculation`` names, loaded; None without one.

        A draft whose vocabulary differs from the target's runs as transformers'
        universal assisted decoding (both tokenizers passed to ``generate``): its
        tokens are re-encoded as text for the target, which still verifies every
        position, so greedy output stays the target's own.
        """
        if speculation is None or speculation.method != "draft_model":
            return None
        path = speculation.drafter.model
        assert path  # TokenDrafter requires a model for draft_model
        from transformers import AutoTokenizer

        try:
            tok = AutoTokenizer.from_pretrained(path, trust_remote_code=False)
            model = self._torch_load(path)
        except Exception as e:
            raise EngineError(f"draft model {path} will not load: "
                              f"{type(e).__name__}: {e}") from e
        shared = tok.get_vocab() == self.tokenizer.get_vocab()
        return _Assistant(model, None if shared else tok)

    def _torch_load(self, path: str | Path) -> Any:
        from transformers import AutoModelForCausalLM

        return AutoModelForCausalLM.from_pretrained(
            path, dtype=getattr(self._torch, self.dtype), trust_remote_code=False,
            attn_implementation="sdpa",
        ).to(self.device)

    def _generate(
        self, prompts: list[str], max_tokens: int, temperature: float = 0.0,
        seed: int | None = None, exact: bool = False,
    ) -> _Call:
        enc = self.tokenizer(prompts, return_tensors="pt", padding=True).to(self.device)
        n_prompt = enc.input_ids.shape[1]
        if n_prompt + max_tokens > self.max_context:
            raise EngineError(
                f"prompt of {n_prompt} tokens + {max_tokens} new exceeds the "
                f"context of {self.max_context}"
            )
        kwargs: dict[str, Any] = {
            "max_new_tokens": max_tokens,
            "do_sample": temperature > 0,
            "stopping_criteria": [_DelimiterStop(
                self.tokenizer, _NEVER if exact else self.delimiter, n_prompt, self._torch)],
            "pad_token_id": self.tokenizer.pad_token_id,
        }
        if exact:
            kwargs["min_new_tokens"] = max_tokens
        if temperature > 0:  # plain temperature sampling: no top-k / top-p truncation
            kwargs.update(temperature=temperature, top_k=0, top_p=1.0)
            if seed is not None:
                self._torch.manual_seed(seed)
        spec = self.speculation
        if spec is not None and spec.method == "ngram":
            kwargs["prompt_lookup_num_tokens"] = spec.num_speculative_tokens
            kwargs["max_matching_ngram_size"] = spec.drafter.prompt_lookup_max
        if self._assistant is not None:
            kwargs["assistant_model"] = self._assistant.model
            kwargs["num_assistant_tokens"] = spec.num_speculative_tokens if spec else 4
            if self._assistant.tokenizer is not None:
                kwargs["tokenizer"] = self.tokenizer
                kwargs["assistant_tokenizer"] = self._assistant.tokenizer
        # Not with speculation: transformers' assisted generation handed a reused cache
        # produced different text (SmolLM2, prompt lookup, 2026-11-22).
        reuse = self.prefix_cache and len(prompts) == 1 and spec is None and not exact
        ids = enc.input_ids[0].tolist() if reuse else []
        keep = 0  # prompt tokens a reused cache already holds
        static = self.decode_path != "eager" and spec is None
        if static:
            held = self._static_cache(len(prompts), n_prompt + max_tokens)
            cache, keep = held.cache, _common(ids, held.tokens) if reuse else 0
            held.tokens = None  # this call overwrites what the last one left
            _set_length(cache, keep)
            kwargs["past_key_values"] = cache
            if self.decode_path == "static":
                kwargs["disable_compile"] = True
            else:
                kwargs["compile_config"] = self._compile_config()
        elif reuse and self._prefix is not None:
            (cached, cache), self._prefix = self._prefix, None  # generate extends it
            keep = _common(ids, cached)
            if keep:
                drop = cache.get_seq_length() - keep
                if drop > 0:
                    cache.crop(-drop)
                kwargs["past_key_values"] = cache
        if reuse:
            kwargs["return_dict_in_generate"] = True
        with self._torch.inference_mode():
            out = self.model.generate(**enc, **kwargs)
        if reuse:
            cache = held.cache if static else out.past_key_values
            written = out.sequences[0, : int(cache.get_seq_length())].tolist()
            if static:
                held.tokens = written
            else:
                self._prefix = (written, cache)
            out = out.sequences
        return _Call([row[n_prompt:].tolist() for row in out],
                     [int(n) for n in enc.attention_mask.sum(dim=1).tolist()],
                     len(prompts) * n_prompt - keep)

    def _static_cache(self, batch: int, positions: int) -> _StaticCache:
        """The static cache of calls of ``batch`` prefixes, long enough for
        ``positions`` (prompt and new tokens): the one the last such call used, or a
        longer one (a power of two from :data:`_STATIC_MIN`, at most ``max_context``)
        that replaces it.  Shared with the engine's copies (:meth:`with_speculation`)."""
        held = self._static.get(batch)
        if held is None or held.length < positions:
            from transformers import StaticCache

            length = static_cache_length(positions, self.max_context)
            held = _StaticCache(StaticCache(config=self.model.config, max_cache_len=length),
                                length)
            self._static[batch] = held
        return held

    def _compile_config(self) -> Any:
        """transformers' compilation of the decoding forwards (``reduce-overhead``), on
        the CPU too (its testing switch)."""
        if self._compile is None:
            from transformers import CompileConfig

            config = CompileConfig(mode="reduce-overhead")
            if self.device != "cuda":
                config._compile_all_devices = True
            self._compile = config
        return self._compile

    def generate_exact(self, prompts: Sequence[str], tokens: int) -> float:
        """Seconds of one greedy call that writes exactly ``tokens`` tokens for every
        prompt: the path of :meth:`generate_steps` (tokenizing, the stopping check on
        every token, decoding the rows) with end-of-sequence suppressed, a delimiter
        that never matches, no KV reuse and no token speculation (the ``engine_costs``
        phase times these, :mod:`profiler.engine_costs`)."""
        prompts, cap, _ = check_step_request(prompts, tokens, 0.0)
        plain = self if self.speculation is None else self.with_speculation(None)
        t0 = time.perf_counter()
        rows = plain._generate(prompts, cap, exact=True).rows
        for row in rows:
            self.tokenizer.decode(row, skip_special_tokens=True)
        if self.device == "cuda":
            self._torch.cuda.synchronize()
        seconds = time.perf_counter() - t0
        if any(len(r) != cap for r in rows):
            raise EngineError(f"an exact call wrote {sorted({len(r) for r in rows})} tokens, "
                              f"not {cap}")
        return seconds

    def generate_steps(
        self, prefixes: Sequence[str], max_tokens: int, *, temperature: float = 0.0,
        seed: int | None = None,
    ) -> StepBatch:
        """One step per prefix, greedy or sampled (speculation: one prefix at a time)."""
        prompts, cap, temp = check_step_request(prefixes, max_tokens, temperature)
        t0 = time.perf_counter()
        if self.speculation is None:
            call = self._generate(prompts, cap, temp, seed)
            rows, prompt_tokens, prefilled = call.rows, call.prompt_tokens, call.prefilled
        else:  # one prefix per call: the calls' shapes add up
            rows, prompt_tokens, prefilled = [], [], 0
            for i, p in enumerate(prompts):
                call = self._generate([p], cap, temp, None if seed is None else seed + i)
                rows.append(call.rows[0])
                prompt_tokens += call.prompt_tokens
                prefilled += call.prefilled
        if self.device == "cuda":
            self._torch.cuda.synchronize()
        seconds = time.perf_counter() - t0
        outputs = []
        pad = self.tokenizer.pad_token_id
        eos = self.tokenizer.eos_token_id
        for row in rows:
            ids = [t for t in row if t != pad or t == eos]
            text = self.tokenizer.decode(ids, skip_special_tokens=True)
            step, found = cut_at_step(text, self.delimiter)
            tokens = self.count_tokens(step) if found else len(ids)
            ended = found or (eos in ids) or len(ids) < cap
            outputs.append(StepOutput(step, tokens, "stop" if ended else "length"))
        iterations = max(map(len, rows)) if self.speculation is None else None
        return StepBatch(outputs, seconds, prompt_tokens=prompt_tokens,
                         prefilled_tokens=prefilled, iterations=iterations)
