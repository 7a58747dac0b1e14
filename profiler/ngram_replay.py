"""Token-level n-gram speculation measured on transformers, by exact replay.

Under greedy decoding an n-gram proposer (prompt lookup) is a deterministic
function of the context, and the target accepts a draft token exactly when it
equals the target's own greedy token.  So the acceptance counts of prompt lookup
follow from the target's greedy output alone: replay the output position by
position, propose as transformers' ``PromptLookupCandidateGenerator`` does
(longest n-gram first, from ``prompt_lookup_max`` down to 1; the earliest match
in the context that has a continuation; up to γ tokens of that continuation),
and count how many proposed tokens match the output.  The counts have vLLM's
shape (drafts, draft tokens, accepted tokens, marginal accepted per position),
so :func:`specmodel.stats.summarize_counters` turns them into α2, the
acceptance by position and, with a timed comparison, the effective c2.

The timing half runs the same prompts through ``generate`` with and without
``prompt_lookup_num_tokens`` (outputs must be identical) and takes the ratio.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from profiler.progress import ProgressCallback, no_progress
from specmodel.stats import TokenSummary, summarize_counters

if TYPE_CHECKING:
    from specmodel.formats.calibration import TokenMeasurement

__all__ = ["add_counters", "count_steps", "encode_steps", "measure_hf_token_speculation",
           "prompt_lookup_proposal", "replay_counters", "replay_steps"]


def prompt_lookup_proposal(context: Sequence[int], gamma: int, max_ngram: int) -> list[int]:
    """The draft tokens prompt lookup proposes after ``context`` (possibly none)."""
    if gamma < 1 or max_ngram < 1:
        raise ValueError(f"gamma and max_ngram must be >= 1, got {gamma}, {max_ngram}")
    n_ctx = len(context)
    for n in range(min(max_ngram, n_ctx - 1), 0, -1):
        tail = list(context[n_ctx - n :])
        for idx in range(n_ctx - n + 1):
            if list(context[idx : idx + n]) == tail:
                start = idx + n
                if start < n_ctx:
                    return list(context[start : min(start + gamma, n_ctx)])
    return []


def replay_counters(
    prompt_ids: Sequence[int], output_ids: Sequence[int], gamma: int, max_ngram: int
) -> dict[str, Any]:
    """vLLM-style spec-decode counters of prompt lookup on a greedy output.

    Keys: ``num_drafts``, ``num_draft_tokens``, ``num_accepted_tokens``,
    ``num_accepted_tokens_per_pos`` (marginal counts at positions 0..γ−1) and
    ``num_target_passes`` (verification passes, with or without a draft).
    """
    seq = list(prompt_ids) + list(output_ids)
    n_prompt = len(prompt_ids)
    drafts = draft_tokens = accepted = passes = 0
    per_pos = [0] * gamma
    t = 0
    while t < len(output_ids):
        passes += 1
        proposal = prompt_lookup_proposal(seq[: n_prompt + t], gamma, max_ngram)
        a = 0
        if proposal:
            drafts += 1
            draft_tokens += len(proposal)
            truth = output_ids[t : t + len(proposal)]
            while a < len(truth) and proposal[a] == truth[a]:
                per_pos[a] += 1
                a += 1
            accepted += a
        t += a + 1
    return {
        "num_drafts": drafts,
        "num_draft_tokens": draft_tokens,
        "num_accepted_tokens": accepted,
        "num_accepted_tokens_per_pos": per_pos,
        "num_target_passes": passes,
    }


def add_counters(totals: dict[str, Any], more: dict[str, Any]) -> dict[str, Any]:
    """``totals`` with ``more`` added key by key (lists elementwise): counters summed."""
    out = dict(totals)
    for k, v in more.items():
        if isinstance(v, list):
            base = out.get(k) or [0] * len(v)
            out[k] = [a + b for a, b in zip(base, v, strict=True)]
        else:
            out[k] = out.get(k, 0) + v
    return out


def encode_steps(tokenizer: Any, prompt: str, steps: Sequence[tuple[str, bool]]
                 ) -> list[tuple[list[int], list[int]]]:
    """(context ids, step ids) of every step of one decoded answer written with token
    speculation (``(text, True)``) and not empty, in order: the context is the prefix
    before the step — the prompt and the earlier steps, as the decoder's step call saw
    it — and the step's tokens are those the prefix and step encode to beyond the
    prefix (the step's own encoding where the boundary merges tokens).  Encoded once,
    replayed at any γ by :func:`count_steps`."""
    encoded = []
    prefix = prompt
    for text, speculated in steps:
        if speculated:
            ctx = tokenizer(prefix, add_special_tokens=False).input_ids
            full = tokenizer(prefix + text, add_special_tokens=False).input_ids
            ids = (full[len(ctx):] if full[:len(ctx)] == ctx
                   else tokenizer(text, add_special_tokens=False).input_ids)
            if ids:
                encoded.append((list(ctx), list(ids)))
        prefix += text
    return encoded


def count_steps(encoded: Sequence[tuple[Sequence[int], Sequence[int]]], gamma: int,
                max_ngram: int) -> dict[str, Any]:
    """Prompt lookup's counters (:func:`replay_counters`) over the steps of
    :func:`encode_steps`, each replayed against its own context, summed, with the
    steps' tokens as ``output_tokens``."""
    totals: dict[str, Any] = {"num_drafts": 0, "num_draft_tokens": 0,
                              "num_accepted_tokens": 0,
                              "num_accepted_tokens_per_pos": [0] * gamma,
                              "num_target_passes": 0, "output_tokens": 0}
    for ctx, ids in encoded:
        totals = add_counters(totals, {**replay_counters(ctx, ids, gamma, max_ngram),
                                       "output_tokens": len(ids)})
    return totals


def replay_steps(tokenizer: Any, prompt: str, steps: Sequence[tuple[str, bool]], gamma: int,
                 max_ngram: int) -> dict[str, Any]:
    """Prompt lookup's counters over one decoded answer (:func:`encode_steps`, then
    :func:`count_steps`): every step written with token speculation replayed against
    the prefix before it, summed."""
    return count_steps(encode_steps(tokenizer, prompt, steps), gamma, max_ngram)


def measure_hf_token_speculation(
    engine: Any,
    prompts: Sequence[str],
    *,
    gamma: int = 4,
    prompt_lookup_max: int = 3,
    max_tokens: int = 64,
    progress: ProgressCallback | None = None,
) -> tuple[TokenSummary, TokenMeasurement]:
    """Greedy decoding of ``prompts`` on an :class:`~profiler.engines.HFEngine`, with and
    without prompt lookup: the summary and the measurement (times, counters, identity of
    outputs).

    ``progress(done, total, message)`` is called after each prompt.
    """
    from profiler.engines import EngineError
    from specmodel.formats.calibration import SpecDecodeCounters, TokenMeasurement

    if not prompts:
        raise ValueError("prompts must not be empty")
    model, tok, torch = engine.model, engine.tokenizer, engine._torch
    say = progress or no_progress

    def run(prompt: str, lookup: bool) -> tuple[list[int], list[int], float]:
        enc = tok([prompt], return_tensors="pt")
        if enc.input_ids.shape[1] + max_tokens > engine.max_context:
            raise EngineError(f"prompt of {enc.input_ids.shape[1]} tokens + {max_tokens} new "
                              f"exceeds the context of {engine.max_context}")
        kwargs: dict[str, Any] = {"max_new_tokens": max_tokens, "do_sample": False,
                                  "pad_token_id": tok.pad_token_id}
        if lookup:
            kwargs["prompt_lookup_num_tokens"] = gamma
            kwargs["max_matching_ngram_size"] = prompt_lookup_max
        t0 = time.perf_counter()
        with torch.inference_mode():
            out = model.generate(**enc, **kwargs)
        seconds = time.perf_counter() - t0
        n = enc.input_ids.shape[1]
        return enc.input_ids[0].tolist(), out[0, n:].tolist(), seconds

    say(0, len(prompts), "warm-up")
    run(prompts[0], False)  # warm-up
    totals = {"num_drafts": 0, "num_draft_tokens": 0, "num_accepted_tokens": 0,
              "num_accepted_tokens_per_pos": [0] * gamma, "num_target_passes": 0}
    t_plain = t_spec = 0.0
    same = []
    tokens = 0
    for i, p in enumerate(prompts, 1):  # interleaved, so drift in machine load hits both alike
        ids, plain, s_plain = run(p, False)
        _, spec, s_spec = run(p, True)
        t_plain += s_plain
        t_spec += s_spec
        same.append(plain == spec)
        tokens += len(plain)
        c = replay_counters(ids, plain, gamma, prompt_lookup_max)
        totals = add_counters(totals, c)
        say(i, len(prompts), f"prompt {i}: {c['num_accepted_tokens']}/{c['num_draft_tokens']} "
                             "draft tokens accepted")
    summary = summarize_counters(totals, gamma, t_plain / t_spec)
    measurement = TokenMeasurement(
        engine="transformers",
        plain_seconds=t_plain,
        spec_seconds=t_spec,
        outputs_identical=same,
        counters=SpecDecodeCounters.model_validate(totals),
        prompts=len(prompts),
        max_tokens=max_tokens,
        output_tokens=tokens,
    )
    return summary, measurement
