"""Measure token-level speculation on vLLM: α2 overall and by draft position, and c2.

vLLM's spec-decode counters (``llm.get_metrics()``) give the number of drafts,
draft tokens, accepted tokens, and accepted tokens per draft position.  The
per-position counts are marginal (position i is counted when positions 0..i
were all accepted), so the conditional acceptance at position i is
``count[i] / count[i − 1]`` with ``count[−1]`` = drafts.  The i.i.d. α2 is the
rate that reproduces the mean accepted length per draft,
``α(1 − α^γ)/(1 − α) = accepted / drafts``.

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
from dataclasses import dataclass
from typing import Any

from profiler.progress import ProgressCallback, no_progress
from profiler.step_profile import wilson

__all__ = ["TokenSummary", "fit_iid_alpha", "measure_token_speculation", "summarize_counters"]


def fit_iid_alpha(mean_accepted: float, gamma: int) -> float:
    """The α whose truncated geometric mean α(1 − α^γ)/(1 − α) equals ``mean_accepted``."""
    if gamma < 1:
        raise ValueError(f"gamma must be >= 1, got {gamma}")
    if not 0.0 < mean_accepted < gamma:
        raise ValueError(f"mean_accepted must lie in (0, {gamma}), got {mean_accepted}")
    from specmodel.closedform.solve import bisect_boundary
    from specmodel.closedform.token_level import expected_accepted_drafts

    return bisect_boundary(lambda a: expected_accepted_drafts(a, gamma) < mean_accepted,
                           1e-12, 1 - 1e-12, rtol=0.0)


@dataclass(frozen=True)
class TokenSummary:
    """Token-level numbers from vLLM's counters and a timed comparison."""

    gamma: int
    """Draft tokens per iteration (num_speculative_tokens)."""
    drafts: int
    """Iterations that proposed a draft."""
    draft_tokens: int
    """Draft tokens proposed."""
    accepted_tokens: int
    """Draft tokens accepted."""
    accepted_per_position: list[int]
    """Marginal accepted counts at draft positions 0..γ−1."""
    conditional_acceptance: list[float]
    """count[i] / count[i−1] (count[−1] = drafts)."""
    alpha2: float
    """i.i.d. rate reproducing accepted / drafts."""
    first_position_ci95: tuple[float, float]
    """Wilson 95 % interval of the acceptance at position 0."""
    speedup: float | None
    """Measured wall-time speedup of speculation over plain greedy decoding."""
    c2: float | None
    """Effective draft cost solving g_token(α2, c2, γ + 1) = speedup."""

    def token_section(self, prompt_lookup_min: int, prompt_lookup_max: int) -> dict[str, Any]:
        """The calibration's ``token`` object."""
        rates = [min(max(r, 1e-6), 1 - 1e-6) for r in self.conditional_acceptance]
        return {
            "alpha2": self.alpha2,
            "c2": self.c2 if self.c2 is not None else 0.0,
            "method": "ngram",
            "acceptance_by_position": rates,
            "prompt_lookup_min": prompt_lookup_min,
            "prompt_lookup_max": prompt_lookup_max,
            "num_speculative_tokens": self.gamma,
            "samples": self.draft_tokens,
        }


def _solve_c2(alpha2: float, gamma: int, speedup: float) -> float:
    from specmodel.closedform.token_level import g_token

    lo, hi = 0.0, 1.0
    while g_token(alpha2, hi, gamma + 1) > speedup:
        hi *= 2.0
        if hi > 1e6:
            raise ValueError(f"speedup {speedup} is too low to fit c2")
    if g_token(alpha2, 0.0, gamma + 1) < speedup:
        return 0.0  # faster than free drafting predicts: report the boundary
    from specmodel.closedform.solve import bisect_boundary

    return bisect_boundary(lambda c: g_token(alpha2, c, gamma + 1) > speedup, lo, hi, rtol=0.0)


def summarize_counters(
    counters: dict[str, Any], gamma: int, speedup: float | None = None
) -> TokenSummary:
    """Turn vLLM's spec-decode counters into acceptance estimates."""
    drafts = int(counters["num_drafts"])
    draft_tokens = int(counters["num_draft_tokens"])
    accepted = int(counters["num_accepted_tokens"])
    per_pos = [int(x) for x in counters["num_accepted_tokens_per_pos"]][:gamma]
    if drafts < 1:
        raise ValueError("no drafts were proposed: nothing to measure (try longer outputs)")
    prev = [drafts, *per_pos[:-1]]
    cond = [c / p if p else 0.0 for c, p in zip(per_pos, prev, strict=True)]
    alpha2 = fit_iid_alpha(min(max(accepted / drafts, 1e-9), gamma - 1e-9), gamma)
    c2 = None if speedup is None else _solve_c2(alpha2, gamma, speedup)
    return TokenSummary(
        gamma,
        drafts,
        draft_tokens,
        accepted,
        per_pos,
        cond,
        alpha2,
        wilson(per_pos[0], drafts) if per_pos else (0.0, 1.0),
        speedup,
        c2,
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
) -> tuple[TokenSummary, dict[str, Any]]:
    """Decode ``prompts`` greedily with and without n-gram speculation on vLLM; compare.

    Returns the summary and a record (times, whether outputs matched).  ``threads``
    sets vLLM-CPU's OpenMP threads (``OMP_NUM_THREADS``) unless the environment
    already does.  ``progress(done, total, message)`` reports the four stages (load and decode,
    plain then speculative).
    """
    from profiler.engines import TokenSpeculation, VLLMEngine, counter_delta

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
        speculation=TokenSpeculation("ngram", gamma, prompt_lookup_min, prompt_lookup_max),
    )
    spec.llm.generate(list(prompts[:1]), params, use_tqdm=False)  # warm-up
    say(3, 4, f"n-gram: decoding {len(prompts)} prompts")
    before = spec.spec_decode_metrics()
    t0 = time.perf_counter()
    out = spec.llm.generate(list(prompts), params, use_tqdm=False)
    t_spec = time.perf_counter() - t0
    say(4, 4, f"speedup {t_plain / t_spec:.2f}x")
    counters = counter_delta(spec.spec_decode_metrics(), before)
    same = [a.outputs[0].text == b.outputs[0].text for a, b in zip(ref, out, strict=True)]
    summary = summarize_counters(counters, gamma, t_plain / t_spec)
    record = {
        "engine": "vllm",
        "plain_seconds": t_plain,
        "spec_seconds": t_spec,
        "outputs_identical": same,
        "counters": counters,
        "prompts": len(prompts),
        "max_tokens": max_tokens,
    }
    return summary, record
