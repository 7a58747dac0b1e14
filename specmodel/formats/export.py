"""Export the chosen configuration to a serving engine (vLLM) and to the LR decoder.

The ``speculative_config`` object uses the field names of vLLM's
``vllm.config.SpeculativeConfig`` (``method``, ``num_speculative_tokens``,
``prompt_lookup_max``, ``prompt_lookup_min``, ``model``,
``num_speculative_tokens_per_batch_size``) and can be passed to
``vllm.LLM(speculative_config=...)`` or ``vllm serve --speculative-config`` as it
is.  Conventions: vLLM's ``num_speculative_tokens`` is Leviathan's γ (draft
tokens), i.e. ``k2 − 1`` in this library's parallel convention.

``num_speculative_tokens_per_batch_size`` is vLLM's dynamic schedule, a list of
inclusive ranges ``(range_start, range_end, K)`` starting at batch size 1; it is
written when a measured batch cost curve says K should change with the number
of concurrent requests (K = 0 turns speculation off in that range).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from specmodel.optimize.pricing import BatchSizeDecision
from specmodel.closedform.hybrid import regime_of
from specmodel.optimize.budget import OptimizeResult
from specmodel.validation import check_positive_int

__all__ = [
    "TOKEN_METHODS",
    "ExportBundle",
    "LookaheadReasoningSettings",
    "TokenDrafter",
    "TokenMethod",
    "batch_size_schedule",
    "export_vllm",
]

TokenMethod = Literal["ngram", "draft_model", "eagle", "eagle3", "mtp", "suffix"]
"""Token-level drafters this exporter writes (a subset of vLLM's SpeculativeMethod)."""
TOKEN_METHODS: tuple[str, ...] = ("ngram", "draft_model", "eagle", "eagle3", "mtp", "suffix")

_NEEDS_MODEL = {"draft_model", "eagle", "eagle3"}


@dataclass(frozen=True)
class TokenDrafter:
    """How token-level drafts are produced."""

    method: str = "ngram"
    """One of TOKEN_METHODS (vLLM's method names)."""
    model: str | None = None
    """Draft model path or name (required for draft_model / eagle / eagle3)."""
    prompt_lookup_min: int | None = 1
    """n-gram only: shortest n-gram matched in the prompt (>= 1)."""
    prompt_lookup_max: int | None = 3
    """n-gram only: longest n-gram matched in the prompt (>= prompt_lookup_min)."""

    def __post_init__(self) -> None:
        if self.method not in TOKEN_METHODS:
            allowed = ", ".join(TOKEN_METHODS)
            raise ValueError(f"method must be one of {allowed}, got {self.method!r}")
        if self.method in _NEEDS_MODEL and not self.model:
            raise ValueError(f"model must be given for method {self.method!r}")
        if self.method == "ngram":
            lo = check_positive_int("prompt_lookup_min", self.prompt_lookup_min)
            hi = check_positive_int("prompt_lookup_max", self.prompt_lookup_max)
            if lo > hi:
                raise ValueError(
                    f"prompt_lookup_min must be <= prompt_lookup_max, got {lo} > {hi}"
                )


@dataclass(frozen=True)
class LookaheadReasoningSettings:
    """Settings for this project's Lookahead Reasoning decoder (``specmodel decode``)."""

    mode: str
    """'sync' (Algorithm 1) or 'async'."""
    k1: int
    """Target steps in parallel; sync drafts k1 − 1 steps per cycle, async keeps at
    most k1 target steps in flight."""
    draft_steps: int
    """Draft steps proposed ahead of the last verified step (k1 − 1)."""
    k2: int
    """Target positions per step for token-level speculation inside each step."""
    width: int = 1
    """Draft branches per position (multi-branch drafting); 1 = a single chain."""
    step_delimiter: str = "\n\n"
    """Text that ends a reasoning step."""
    verifier: str = "embedding"
    """Verifier family: 'exact', 'embedding' or 'judge'."""


@dataclass(frozen=True)
class ExportBundle:
    """Everything ``specmodel export --engine vllm`` writes."""

    engine: str
    """Target serving engine ('vllm')."""
    speculative_config: dict[str, Any] | None
    """vLLM's speculative_config, or None when token-level speculation does not pay."""
    lookahead_reasoning: LookaheadReasoningSettings
    """Step-level settings for the project's decoder."""
    prediction: dict[str, Any]
    """What specmodel predicts for this configuration, and from which calibration."""
    notes: list[str] = field(default_factory=list)
    """Caveats (e.g. schedule derived from a measured T(b))."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        d = asdict(self)
        d["lookahead_reasoning"] = asdict(self.lookahead_reasoning)
        return d


def batch_size_schedule(decisions: Sequence[BatchSizeDecision]) -> list[list[int]]:
    """vLLM's ``num_speculative_tokens_per_batch_size`` from per-batch-size decisions.

    Each measured batch size B_i covers [B_i, B_{i+1} − 1]; the last covers only
    itself (vLLM carries the last K forward).  Adjacent ranges with the same K
    are merged.  K is the token-only optimum's draft length (k2 − 1).
    """
    if not decisions:
        raise ValueError("decisions must not be empty")
    ordered = sorted(decisions, key=lambda d: d.serving_batch)
    if ordered[0].serving_batch != 1:
        raise ValueError("decisions must start at serving batch size 1 (vLLM requires it)")
    ranges: list[list[int]] = []
    for i, d in enumerate(ordered):
        hi = ordered[i + 1].serving_batch - 1 if i + 1 < len(ordered) else d.serving_batch
        k = d.token_only.k2 - 1
        if ranges and ranges[-1][2] == k:
            ranges[-1][1] = hi
        else:
            ranges.append([d.serving_batch, hi, k])
    return ranges


def export_vllm(
    result: OptimizeResult,
    drafter: TokenDrafter | None = None,
    *,
    calibration_name: str = "",
    calibration_source: str = "",
    verifier: str = "embedding",
    decisions: Sequence[BatchSizeDecision] | None = None,
) -> ExportBundle:
    """Build the vLLM ``speculative_config`` and the decoder settings for ``result``."""
    drafter = drafter or TokenDrafter()
    if verifier not in ("exact", "embedding", "judge"):
        raise ValueError(f"verifier must be one of exact, embedding, judge, got {verifier!r}")
    notes: list[str] = []
    k1, k2, speedup = result.k1, result.k2, result.speedup
    spec: dict[str, Any] | None = None
    schedule = batch_size_schedule(decisions) if decisions else None
    if decisions:
        # A measured T(b) overrides the flat budget: the decoder runs the priced optimum at
        # one request, vLLM's K follows the per-batch-size schedule.
        first = min(decisions, key=lambda d: d.serving_batch).best
        k1, k2, speedup = first.k1, first.k2, first.speedup
        notes.append(
            f"priced by the measured T(b): (k1, k2) = ({k1}, {k2}) at one request; the "
            f"flat-budget optimum was ({result.k1}, {result.k2})."
        )
    top_k = max(r[2] for r in schedule) if schedule else k2 - 1
    if top_k >= 1:
        spec = {"method": drafter.method, "num_speculative_tokens": top_k}
        if drafter.model:
            spec["model"] = drafter.model
        if drafter.method == "ngram":
            spec["prompt_lookup_max"] = drafter.prompt_lookup_max
            spec["prompt_lookup_min"] = drafter.prompt_lookup_min
        if schedule:
            spec["num_speculative_tokens_per_batch_size"] = schedule
            notes.append(
                "num_speculative_tokens_per_batch_size comes from the calibration's measured "
                "T(b): K per serving batch size is the token-only optimum priced by T(b)."
            )
        if not schedule and top_k != k2 - 1:
            notes.append(
                f"num_speculative_tokens = {top_k} is the schedule's maximum; the flat-budget "
                f"optimum uses {k2 - 1} draft tokens."
            )
    else:
        notes.append("token-level speculation does not pay here: no speculative_config.")
    lr = LookaheadReasoningSettings(
        mode=result.mode, k1=k1, draft_steps=k1 - 1, k2=k2, verifier=verifier
    )
    prediction = {
        "speedup": speedup,
        "priced_by_batch_cost": bool(decisions),
        "regime": regime_of(k1, k2),
        "budget": result.budget,
        "k1": k1,
        "k2": k2,
        "alpha1": result.alpha1,
        "c1": result.c1,
        "alpha2": result.alpha2,
        "c2": result.c2,
        "calibration": calibration_name,
        "calibration_source": calibration_source,
    }
    return ExportBundle("vllm", spec, lr, prediction, notes)
