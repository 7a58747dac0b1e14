"""Measure token-level speculation on vLLM: α2 overall and by draft position, and c2.

vLLM's spec-decode counters (``llm.get_metrics()``) give the number of drafts,
draft tokens, accepted tokens, and accepted tokens per draft position.  The
per-position counts are marginal (position i is counted when positions 0..i
were all accepted), so the conditional acceptance at position i is
``count[i] / count[i − 1]`` with ``count[−1]`` = drafts.  The i.i.d. α2 is the
rate that reproduces the mean accepted length per draft,
``α(1 − α^γ)/(1 − α) = accepted / drafts``.

The estimators are :mod:`specmodel.stats`'s (:func:`~specmodel.stats.summarize_counters`).
c2 is *effective*: the same prompts are decoded greedily with and without
speculation (the outputs must be identical), the measured speedup s is set
equal to ``g_token(α2, c2, γ + 1)`` and solved for c2.  It therefore carries the
real cost of drafting and of verifying γ + 1 positions on this engine; on a CPU,
where a wider verification pass is not free, it can exceed 1 (speculation
slows decoding down).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from profiler.progress import ProgressCallback, no_progress
from specmodel.stats import TokenSummary, summarize_counters

if TYPE_CHECKING:
    from specmodel.formats.calibration import TokenLevel, TokenMeasurement

__all__ = ["measure_token_speculation", "token_section"]


def token_section(summary: TokenSummary, prompt_lookup_min: int,
                  prompt_lookup_max: int) -> TokenLevel:
    """The calibration's ``token`` section for n-gram speculation measured as ``summary``
    (rates of 0 or 1 at a position are clipped into (0, 1); an unmeasured c2 is 0; the
    draft rate where the counters have the target's passes)."""
    from specmodel.formats.calibration import TokenLevel

    rates = [min(max(r, 1e-6), 1 - 1e-6) for r in summary.conditional_acceptance]
    return TokenLevel(
        alpha2=summary.alpha2,
        c2=summary.c2 if summary.c2 is not None else 0.0,
        method="ngram",
        acceptance_by_position=rates,
        prompt_lookup_min=prompt_lookup_min,
        prompt_lookup_max=prompt_lookup_max,
        num_speculative_tokens=summary.gamma,
        samples=summary.draft_tokens,
        draft_rate=summary.draft_rate,
        target_passes=summary.target_passes,
    )


def measure_token_speculation(
    model: str,
    prompts: Sequence[str],
    *,
    gamma: int = 4,
    prompt_lookup_min: int = 1,
    prompt_lookup_max: int = 3,
    max_tokens: int = 64,
    max_model_len: int = 1024,
    threads: int | None = None,
    progress: ProgressCallback | None = None,
) -> tuple[TokenSummary, TokenMeasurement]:
    """Decode ``prompts`` greedily with and without n-gram speculation on vLLM; compare.

    Returns the summary and the measurement (times, counters, whether outputs matched).  ``threads``
    sets vLLM-CPU's OpenMP threads (``OMP_NUM_THREADS``) unless the environment
    already does.  ``progress(done, total, message)`` reports the four stages (load and decode,
    plain then speculative).
    """
    from profiler.engines import VLLMEngine, counter_delta
    from specmodel.config import TokenDrafter, TokenSpeculation
    from specmodel.formats.calibration import SpecDecodeCounters, TokenMeasurement

    if not prompts:
        raise ValueError("prompts must not be empty")
    say = progress or no_progress
    say(0, 4, "plain: loading vLLM")
    plain = VLLMEngine(model, max_model_len=max_model_len, threads=threads)
    params = plain.sampling_params(temperature=0.0, max_tokens=max_tokens)
    plain.llm.generate(list(prompts[:1]), params, use_tqdm=False)  # warm-up
    say(1, 4, f"plain: decoding {len(prompts)} prompts")
    t0 = time.perf_counter()
    ref = plain.llm.generate(list(prompts), params, use_tqdm=False)
    t_plain = time.perf_counter() - t0
    del plain
    say(2, 4, "n-gram: loading vLLM")
    spec = VLLMEngine(
        model,
        max_model_len=max_model_len,
        threads=threads,
        speculation=TokenSpeculation(
            drafter=TokenDrafter(method="ngram", prompt_lookup_min=prompt_lookup_min,
                                 prompt_lookup_max=prompt_lookup_max),
            num_speculative_tokens=gamma),
    )
    spec.llm.generate(list(prompts[:1]), params, use_tqdm=False)  # warm-up
    say(3, 4, f"n-gram: decoding {len(prompts)} prompts")
    before = spec.spec_decode_metrics()
    t0 = time.perf_counter()
    out = spec.llm.generate(list(prompts), params, use_tqdm=False)
    t_spec = time.perf_counter() - t0
    say(4, 4, f"speedup {t_plain / t_spec:.2f}x")
    delta = counter_delta(spec.spec_decode_metrics(), before)
    counters = SpecDecodeCounters(
        num_drafts=int(delta["num_drafts"]),
        num_draft_tokens=int(delta["num_draft_tokens"]),
        num_accepted_tokens=int(delta["num_accepted_tokens"]),
        num_accepted_tokens_per_pos=[int(x) for x in delta["num_accepted_tokens_per_pos"]],
    )
    same = [a.outputs[0].text == b.outputs[0].text for a, b in zip(ref, out, strict=True)]
    summary = summarize_counters(counters.model_dump(), gamma, t_plain / t_spec)
    measurement = TokenMeasurement(
        engine="vllm",
        plain_seconds=t_plain,
        spec_seconds=t_spec,
        outputs_identical=same,
        counters=counters,
        prompts=len(prompts),
        max_tokens=max_tokens,
    )
    return summary, measurement
