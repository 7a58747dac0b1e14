"""The run configuration: one object from ``optimize`` to ``export`` to ``decode``.

:class:`SpecConfig` says everything a speculative decoding run is set to: the
Lookahead Reasoning algorithm (mode, k1, width), token-level speculation inside
each step (k2 and the :class:`TokenDrafter`), the step verifier
(:class:`VerifierSpec`), and how steps are cut.  ``optimize`` returns one inside
its result, ``export`` writes it (with its vLLM view), ``decode`` runs it, the
run record stores it, and the engines take their token-level settings from it
(:meth:`SpecConfig.token_speculation`).  Unknown keys are rejected with the
field named; numbers given as strings are rejected, not coerced.

Conventions (the library's): ``k1`` counts target steps run in parallel, i.e.
draft steps + 1 (1 = no step-level speculation); ``k2`` counts target positions
verified per token-speculation pass, i.e. draft tokens + 1 (1 = off).  vLLM's
``num_speculative_tokens`` is Leviathan's γ = ``k2 − 1``.

vLLM's ``speculative_config`` is built in one place,
:meth:`TokenSpeculation.vllm_config`, with the field names of vLLM's
``vllm.config.SpeculativeConfig`` (``method``, ``num_speculative_tokens``,
``prompt_lookup_max``, ``prompt_lookup_min``, ``model``,
``num_speculative_tokens_per_batch_size``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from specmodel.errors import SpecmodelError, describe_validation_error

__all__ = [
    "DECODER_TOKEN_METHODS",
    "MODES",
    "STEP_DELIMITER",
    "TARGET_BATCHINGS",
    "TOKEN_METHODS",
    "VERIFIER_KINDS",
    "Mode",
    "SpecConfig",
    "TargetBatching",
    "TokenDrafter",
    "TokenMethod",
    "TokenSpeculation",
    "VerifierKind",
    "VerifierSpec",
    "build",
]

Mode = Literal["sync", "async"]
TargetBatching = Literal["call", "continuous"]
"""Lookahead Reasoning's algorithm: sync (Algorithm 1) or async."""
MODES: tuple[str, ...] = get_args(Mode)
"""The allowed modes."""
TARGET_BATCHINGS: tuple[str, ...] = get_args(TargetBatching)
"""The allowed target batchings of async (:attr:`SpecConfig.target_batching`)."""

TokenMethod = Literal["ngram", "draft_model", "eagle", "eagle3", "mtp", "suffix"]
"""Token-level drafters (a subset of vLLM's ``SpeculativeMethod`` names)."""
TOKEN_METHODS: tuple[str, ...] = get_args(TokenMethod)
"""The allowed token methods, in the order of :data:`TokenMethod`."""
DRAFT_MODEL_METHODS = frozenset({"draft_model", "eagle", "eagle3"})
"""Token methods that need a draft model."""
DECODER_TOKEN_METHODS: tuple[str, ...] = ("ngram", "draft_model")
"""Token methods this project's decoder runs inside each step (the others are vLLM's)."""

VerifierKind = Literal["exact", "embedding", "judge", "synthetic"]
"""Step verifier families: the Lookahead Reasoning paper's three, and ``synthetic``
(accepts with a calibration's step acceptance, no text compared; for synthetic-acceptance
runs on random-weight models, :mod:`profiler.engines.synthetic`)."""
VERIFIER_KINDS: tuple[str, ...] = get_args(VerifierKind)
"""The allowed verifier families."""

STEP_DELIMITER = "\n\n"
"""Where a reasoning step ends (the Lookahead Reasoning paper's choice)."""


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class TokenDrafter(_Config):
    """How token-level drafts are produced."""

    method: TokenMethod = "ngram"
    """One of :data:`TOKEN_METHODS` (vLLM's method names)."""
    model: str | None = None
    """Draft model path or name (required for draft_model / eagle / eagle3)."""
    prompt_lookup_min: int = Field(1, ge=1)
    """n-gram: shortest n-gram matched in the context (>= 1)."""
    prompt_lookup_max: int = Field(3, ge=1)
    """n-gram: longest n-gram matched in the context (>= prompt_lookup_min)."""

    @model_validator(mode="after")
    def _consistent(self) -> TokenDrafter:
        if self.method in DRAFT_MODEL_METHODS and not self.model:
            raise ValueError(f"model must be given for method {self.method!r}")
        if self.prompt_lookup_min > self.prompt_lookup_max:
            raise ValueError(
                f"prompt_lookup_min must be <= prompt_lookup_max, got "
                f"{self.prompt_lookup_min} > {self.prompt_lookup_max}"
            )
        return self


class TokenSpeculation(_Config):
    """Token-level speculation as an engine runs it: a drafter and γ draft tokens."""

    drafter: TokenDrafter = TokenDrafter()
    """How the draft tokens are made."""
    num_speculative_tokens: int = Field(ge=1)
    """Draft tokens per iteration (γ; the library's k2 − 1)."""

    @property
    def method(self) -> str:
        """The drafter's method."""
        return self.drafter.method

    def vllm_config(self, schedule: Sequence[Sequence[int]] | None = None) -> dict[str, Any]:
        """vLLM's ``speculative_config`` (the only place it is built).

        ``schedule`` is vLLM's dynamic ``num_speculative_tokens_per_batch_size``
        (inclusive ranges ``[start, end, K]`` from batch size 1); it is written as
        given.
        """
        d = self.drafter
        out: dict[str, Any] = {"method": d.method,
                               "num_speculative_tokens": self.num_speculative_tokens}
        if d.model:
            out["model"] = d.model
        if d.method == "ngram":
            out["prompt_lookup_max"] = d.prompt_lookup_max
            out["prompt_lookup_min"] = d.prompt_lookup_min
        if schedule:
            out["num_speculative_tokens_per_batch_size"] = [list(r) for r in schedule]
        return out


class VerifierSpec(_Config):
    """Which step verifier judges draft steps, and its settings."""

    kind: VerifierKind = "embedding"
    """exact (lossless), embedding (cosine similarity + numbers check), judge (an LLM) or
    synthetic (a calibration's acceptance, drawn at random)."""
    threshold: float = Field(0.9, gt=0, le=1, allow_inf_nan=False)
    """embedding: the cosine similarity a draft step must reach."""
    model: str | None = None
    """The verifier's model (pack name or folder): the judge LLM, or the sentence-embedding
    model; None = the default (MiniLM for embedding, Qwen2.5-Coder-0.5B for judge).
    synthetic: the calibration (file or preset name) whose step acceptance it draws."""

    @classmethod
    def from_name(cls, name: str) -> VerifierSpec:
        """From the name a verifier reports (e.g. ``'embedding:minilm-l6-v2@0.85+numbers'``,
        ``'judge:qwen2.5-coder-1.5b'``, ``'exact'``), as run records and calibrations
        store it; the model is the name's folder part."""
        m = re.fullmatch(r"(exact|embedding|judge|synthetic)(?::([^@+]+))?(?:@([0-9.]+))?(?:\+.*)?",
                         name.strip())
        if m is None:
            raise SpecmodelError(
                f"verifier name must look like exact, embedding:MODEL@THRESHOLD, "
                f"judge:MODEL or synthetic:CALIBRATION, got {name!r}"
            )
        kind, model, threshold = m.groups()
        kw: dict[str, Any] = {"kind": kind}
        if model and kind != "exact":
            kw["model"] = model
        if threshold and kind == "embedding":
            kw["threshold"] = float(threshold)
        return cls(**kw)


class SpecConfig(_Config):
    """A speculative decoding configuration, complete: what optimize chooses, export
    writes, decode runs and a run record stores."""

    mode: Mode = "sync"
    """Lookahead Reasoning algorithm: sync (Algorithm 1) or async."""
    k1: int = Field(1, ge=1)
    """Target steps in parallel = draft steps + 1 (1: no step-level speculation); async keeps
    at most k1 target steps in flight."""
    k2: int = Field(1, ge=1)
    """Target positions per token-speculation pass = draft tokens + 1 (1: off)."""
    width: int = Field(1, ge=1)
    """Draft branches per position (multi-branch drafting, sync only); 1: a single chain."""
    branch_temperature: float = Field(0.8, gt=0, le=10, allow_inf_nan=False)
    """Sampling temperature of the extra draft branches (branch 0 is always greedy)."""
    token: TokenDrafter = TokenDrafter()
    """How token-level drafts are made inside each step (used when k2 > 1)."""
    verifier: VerifierSpec = VerifierSpec()
    """The step verifier (used when k1 > 1)."""
    step_delimiter: str = Field(STEP_DELIMITER, min_length=1)
    """Text that ends a reasoning step."""
    max_step_tokens: int = Field(48, ge=1)
    """Token cap per step."""
    max_steps: int = Field(12, ge=1)
    """Steps per problem at most."""
    target_batching: TargetBatching = "call"
    """How async hands the target its steps.  ``call``: one generate call at a time,
    taking every position whose prefix is known when the target is free (the call runs
    to its longest step).  ``continuous``: each target step joins the engine's running
    batch at the next forward as soon as its prefix exists and leaves it when it ends
    (continuous batching, as a serving engine runs requests); a step on a dropped chain
    leaves at the next forward.  Needs an engine that batches continuously."""

    @model_validator(mode="after")
    def _continuous_needs_async(self) -> SpecConfig:
        if self.target_batching == "continuous" and (self.mode != "async" or self.k1 < 2):
            raise ValueError(
                f"target_batching 'continuous' schedules async Lookahead Reasoning's target "
                f"steps: it needs mode async and k1 >= 2, got mode {self.mode} k1={self.k1}")
        return self

    @model_validator(mode="after")
    def _width_needs_sync(self) -> SpecConfig:
        if self.width > 1 and self.mode != "sync":
            raise ValueError(
                f"width must be 1 in {self.mode} mode, got {self.width}: multi-branch drafting "
                "is defined for sync Lookahead Reasoning "
                "(specmodel.closedform.step_level.f_sync_multibranch)"
            )
        return self

    @property
    def draft_steps(self) -> int:
        """Draft steps proposed ahead of the last verified step (k1 − 1)."""
        return self.k1 - 1

    @property
    def num_speculative_tokens(self) -> int:
        """Draft tokens per token-speculation pass (γ = k2 − 1; vLLM's name)."""
        return self.k2 - 1

    @property
    def regime(self) -> str:
        """'hybrid', 'token-only', 'step-only' or 'none'."""
        from specmodel.closedform.hybrid import regime_of

        return regime_of(self.k1, self.k2)

    @property
    def label(self) -> str:
        """Short name, e.g. 'target', 'token k2=3', 'sync k1=3 k2=4 W=2'."""
        if self.k1 == 1 and self.k2 == 1:
            return "target"
        if self.k1 == 1:
            return f"token k2={self.k2}"
        tail = f" W={self.width}" if self.width > 1 else ""
        tail += " continuous" if self.target_batching == "continuous" else ""
        return f"{self.mode} k1={self.k1} k2={self.k2}{tail}"

    def token_speculation(self) -> TokenSpeculation | None:
        """What the engine runs inside each step (None when k2 = 1)."""
        if self.k2 == 1:
            return None
        return TokenSpeculation(drafter=self.token, num_speculative_tokens=self.k2 - 1)

    def speculative_config(
        self, schedule: Sequence[Sequence[int]] | None = None
    ) -> dict[str, Any] | None:
        """vLLM's ``speculative_config`` for this configuration, or None when no token is
        drafted.  With a per-batch-size ``schedule`` K is the schedule's largest."""
        top = max(r[2] for r in schedule) if schedule else self.k2 - 1
        if top < 1:
            return None
        spec = TokenSpeculation(drafter=self.token, num_speculative_tokens=top)
        return spec.vllm_config(schedule)

    def replace(self, **changes: Any) -> SpecConfig:
        """A copy with ``changes`` applied and validated.  A nested section given as a dict
        merges into the current one while it keeps the same drafter method (token) or
        verifier kind; a dict naming another method or kind starts from that section's
        defaults, since the old drafter's or verifier's settings do not carry over."""
        data = self.model_dump()
        for key, switch in (("token", "method"), ("verifier", "kind")):
            new = changes.get(key)
            if isinstance(new, dict):
                same = new.get(switch, data[key][switch]) == data[key][switch]
                changes[key] = {**data[key], **new} if same else new
        return build(SpecConfig, {**data, **changes})

    @classmethod
    def from_legacy_decoder(cls, data: dict[str, Any], verifier: str | None = None) -> SpecConfig:
        """From the settings a version-1 run record stored (the old decoder dataclass:
        mode, k1, k2, width, token_method, token_draft_model, prompt_lookup_max,
        max_step_tokens, max_steps, delimiter, branch_temperature); ``verifier`` is the
        record's verifier name, when it names one."""
        known = {"mode", "k1", "k2", "width", "token_method", "token_draft_model",
                 "prompt_lookup_max", "max_step_tokens", "max_steps", "delimiter",
                 "branch_temperature"}
        extra = sorted(set(data) - known)
        if extra:
            raise SpecmodelError(f"config: unknown field {extra[0]!r} in a version-1 record")
        token: dict[str, Any] = {"method": data.get("token_method", "ngram")}
        if data.get("token_draft_model"):
            token["model"] = data["token_draft_model"]
        if "prompt_lookup_max" in data:
            token["prompt_lookup_max"] = data["prompt_lookup_max"]
        kw: dict[str, Any] = {k: data[k] for k in ("mode", "k1", "k2", "width", "max_step_tokens",
                                                   "max_steps", "branch_temperature")
                              if k in data}
        if token["method"] != "draft_model" or "model" in token:  # else: k2 = 1, unused
            kw["token"] = token
        if "delimiter" in data:
            kw["step_delimiter"] = data["delimiter"]
        if verifier:
            kw["verifier"] = VerifierSpec.from_name(verifier).model_dump()
        return build(cls, kw)


def build(cls: type[_Config], data: Any, origin: str = "") -> Any:
    """Validate ``data`` as ``cls``; a failure is one :class:`SpecmodelError` line naming the
    field (``origin`` prefixes it, e.g. the file)."""
    try:
        return cls.model_validate(data)
    except ValidationError as e:
        raise SpecmodelError(describe_validation_error(e, origin)) from e
