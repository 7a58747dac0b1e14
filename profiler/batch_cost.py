"""Measure the target's batch cost curve T(b): time per decode step as the batch widens.

Each width b decodes exactly ``tokens`` new tokens for b copies of one prompt
(no early stop), ``repeats`` times after one warm-up, and records the time per
decode step (seconds / tokens) with its standard error
(:func:`specmodel.montecarlo.estimate.mean_estimate`).  On a CPU T(b) grows
from b = 1; on a GPU it stays nearly flat until the device saturates.  The
result slots into a calibration's ``batch_cost`` (see specmodel.formats.calibration).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from profiler.progress import ProgressCallback, no_progress
from specmodel.montecarlo.estimate import Estimate, mean_estimate

if TYPE_CHECKING:
    from specmodel.formats.calibration import BatchCost

__all__ = ["BatchTiming", "measure_batch_cost", "batch_cost_section"]


@dataclass(frozen=True)
class BatchTiming:
    """T(b) at one width."""

    batch: int
    """Batch width b."""
    seconds_per_step: float
    """Mean time of one decode step for the whole batch."""
    stderr: float
    """Standard error of the mean over repeats."""
    repeats: int
    """Timed repeats (after one warm-up)."""


def _hf_decoder(model: str | Path, threads: int) -> Callable[[str, int, int], float]:
    from profiler.engines import HFEngine

    engine = HFEngine(model, threads=threads)  # an unloadable model is an EngineError
    tok, lm, torch = engine.tokenizer, engine.model, engine._torch

    def decode(prompt: str, batch: int, tokens: int) -> float:
        ids = tok([prompt] * batch, return_tensors="pt").input_ids
        t0 = time.perf_counter()
        with torch.inference_mode():
            lm.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=tokens,
                min_new_tokens=tokens,
                do_sample=False,
                pad_token_id=tok.pad_token_id,
            )
        return time.perf_counter() - t0

    return decode


def _vllm_decoder(model: str | Path, max_model_len: int) -> Callable[[str, int, int], float]:
    from profiler.engines import VLLMEngine

    engine = VLLMEngine(model, max_model_len=max_model_len)
    sampling = engine.sampling_params

    def decode(prompt: str, batch: int, tokens: int) -> float:
        params = sampling(temperature=0.0, max_tokens=tokens, min_tokens=tokens, ignore_eos=True)
        t0 = time.perf_counter()
        engine.llm.generate([prompt] * batch, params, use_tqdm=False)
        return time.perf_counter() - t0

    return decode


def measure_batch_cost(
    model: str | Path,
    *,
    engine: str = "transformers",
    widths: Sequence[int] = (1, 2, 4, 8, 16),
    tokens: int = 16,
    repeats: int = 3,
    prompt: str = "Question: Tom has 3 apples and buys 4 more. How many apples?\nAnswer:",
    threads: int = 1,
    max_model_len: int = 1024,
    progress: ProgressCallback | None = None,
) -> list[BatchTiming]:
    """T(b) for each width, by timing real decoding on ``engine``.

    ``progress(done, total, message)`` is called before and after each width
    (``total`` = the number of distinct widths).
    """
    if engine not in ("transformers", "vllm"):
        raise ValueError(f"engine must be 'transformers' or 'vllm', got {engine!r}")
    if tokens < 2:
        raise ValueError(f"tokens must be >= 2, got {tokens}")
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    ws = sorted({int(w) for w in widths})
    if not ws or ws[0] < 1:
        raise ValueError(f"widths must be integers >= 1, got {list(widths)}")
    say = progress or no_progress
    say(0, len(ws), f"loading {Path(model).name}")
    decode = (
        _hf_decoder(model, threads)
        if engine == "transformers"
        else _vllm_decoder(model, max_model_len)
    )
    decode(prompt, ws[0], tokens)  # warm-up
    out = []
    for i, w in enumerate(ws):
        say(i, len(ws), f"b={w}: timing {repeats} x {tokens} steps")
        decode(prompt, w, 2)  # warm this width's shapes
        times = [decode(prompt, w, tokens) / tokens for _ in range(repeats)]
        est = mean_estimate(times) if len(times) > 1 else Estimate(times[0], 0.0, 1)
        se = est.stderr
        out.append(BatchTiming(w, est.mean, se, len(times)))
        say(i + 1, len(ws), f"b={w}: {out[-1].seconds_per_step * 1e3:.1f} ms/step ± {se * 1e3:.1f}")
    return out


def batch_cost_section(timings: Sequence[BatchTiming]) -> BatchCost:
    """The calibration's ``batch_cost`` section for these timings."""
    from specmodel.formats.calibration import BatchCost, BatchCostPoint

    return BatchCost(
        points=[BatchCostPoint(batch=t.batch, time=t.seconds_per_step, stderr=t.stderr,
                               n=t.repeats) for t in timings],
        unit="s/step",
    )
