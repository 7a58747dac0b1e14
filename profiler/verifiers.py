"""Step verifiers: is a draft step an acceptable substitute for the target's step?

The LR paper's three families, each reporting its own cost:

* :class:`ExactMatch` — equal after whitespace normalisation (lossless; the LR
  decoder then reproduces the target's greedy output).
* :class:`EmbeddingVerifier` — cosine similarity of sentence embeddings
  (all-MiniLM-L6-v2 from its pack) above a threshold, **and** the numbers in the
  two steps agree: cosine alone accepts steps that differ only in a number.
* :class:`JudgeVerifier` — an LLM judge with the paper's Appendix A prompt; one
  forward pass, accept when the reply starts like "aligned".
* :class:`SyntheticVerifier` — no text compared: accepts with a calibration's step
  acceptance (by draft depth, else α1), drawn reproducibly; for synthetic-acceptance
  runs (:mod:`profiler.engines.synthetic`).

:func:`make_verifier` builds the one a :class:`specmodel.config.VerifierSpec` names,
through the registry :data:`VERIFIERS`.  torch / transformers are imported inside
the classes.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from specmodel.config import VERIFIER_KINDS, VerifierSpec

__all__ = [
    "DEFAULT_EMBEDDING_MODEL",
    "DEFAULT_JUDGE_MODEL",
    "JUDGE_PROMPT",
    "VERIFIERS",
    "EmbeddingVerifier",
    "ExactMatch",
    "JudgeVerifier",
    "SyntheticVerifier",
    "Verdict",
    "Verifier",
    "VerifierBuilder",
    "make_verifier",
    "numbers_agree",
    "numbers_in",
]

JUDGE_PROMPT = (
    "Evaluate whether the following two reasoning steps (s1 and s2) convey exactly the same "
    "meaning. Focus on semantic similarity rather than exact wording.\n"
    "Compare the main ideas, key points, overall message, logical structure, and numerical "
    "calculations/results of both reasoning steps.\n"
    "If the reasoning steps convey essentially the same meaning and generate same calculation "
    "results, respond with [aligned]. If the reasoning steps express different meanings, "
    "respond with [unaligned]. If it is too hard to determine, respond with [unaligned]\n"
    "Please directly provide the final result in [aligned] or [unaligned].\n"
    "Reasoning step 1 (s1):\n<start_s1>\n{s1}\n<end_s1>\n"
    "Reasoning step 2 (s2):\n<start_s2>\n{s2}\n<end_s2>"
)
"""The LR paper's Appendix A judge prompt (user turn)."""
JUDGE_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
"""The system turn of Appendix A."""

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


@dataclass(frozen=True)
class Verdict:
    """One verification."""

    accepted: bool
    """Whether the draft step is accepted."""
    score: float | None
    """Similarity (embedding) or judge margin; None for exact match."""
    seconds: float
    """Time spent on this pair (batch time divided evenly over the batch)."""


class Verifier(Protocol):
    """What the profiler and the decoder need from a verifier."""

    name: str
    """Family and model, e.g. 'embedding:minilm-l6-v2@0.90+numbers'."""

    def verify(self, pairs: Sequence[tuple[str, str]]) -> list[Verdict]:
        """Verdicts for (target step, draft step) pairs."""
        ...


def _normalise(text: str) -> str:
    return " ".join(text.split())


def numbers_in(text: str) -> Counter[str]:
    """The numbers written in ``text`` (thousands separators dropped, 3.0 → 3)."""
    out: Counter[str] = Counter()
    for m in _NUMBER.findall(text):
        v = m.replace(",", "")
        if "." in v:
            v = v.rstrip("0").rstrip(".")
        out[v] += 1
    return out


def numbers_agree(a: str, b: str) -> bool:
    """True when both steps write the same numbers (as sets; repetition may differ)."""
    return set(numbers_in(a)) == set(numbers_in(b))


class ExactMatch:
    """Accept only identical steps (after whitespace normalisation)."""

    name = "exact"

    def verify(self, pairs: Sequence[tuple[str, str]]) -> list[Verdict]:
        """Exact comparison; costs microseconds."""
        out = []
        for target, draft in pairs:
            t0 = time.perf_counter()
            ok = _normalise(target) == _normalise(draft)
            out.append(Verdict(ok, None, time.perf_counter() - t0))
        return out


class EmbeddingVerifier:
    """Cosine similarity of mean-pooled sentence embeddings, plus a numbers check."""

    def __init__(
        self,
        model: str | Path,
        *,
        threshold: float = 0.9,
        check_numbers: bool = True,
        threads: int = 1,
    ) -> None:
        if not 0.0 < threshold < 1.0:
            raise ValueError(f"threshold must lie in (0, 1), got {threshold}")
        import torch
        from transformers import AutoModel, AutoTokenizer

        torch.set_num_threads(threads)
        self._torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(model, trust_remote_code=False)
        self.model = AutoModel.from_pretrained(model, trust_remote_code=False).eval()
        self.threshold = threshold
        self.check_numbers = check_numbers
        self.name = f"embedding:{Path(model).name}@{threshold:.2f}" + (
            "+numbers" if check_numbers else ""
        )

    def embed(self, texts: Sequence[str]) -> Any:
        """L2-normalised mean-pooled embeddings, one row per text."""
        torch = self._torch
        enc = self.tokenizer(
            list(texts), padding=True, truncation=True, max_length=256, return_tensors="pt"
        )
        with torch.inference_mode():
            hidden = self.model(**enc).last_hidden_state
        mask = enc.attention_mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, dim=-1)

    def verify(self, pairs: Sequence[tuple[str, str]]) -> list[Verdict]:
        """Accept when cosine >= threshold and (if enabled) the numbers agree."""
        if not pairs:
            return []
        t0 = time.perf_counter()
        a = self.embed([p[0] for p in pairs])
        b = self.embed([p[1] for p in pairs])
        cos = (a * b).sum(-1).tolist()
        each = (time.perf_counter() - t0) / len(pairs)
        out = []
        for (target, draft), c in zip(pairs, cos, strict=True):
            ok = c >= self.threshold and (not self.check_numbers or numbers_agree(target, draft))
            out.append(Verdict(ok, float(c), each))
        return out


class JudgeVerifier:
    """An LLM judge with the Appendix A prompt: one forward pass per pair."""

    def __init__(self, model: str | Path, *, threads: int = 1) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        torch.set_num_threads(threads)
        self._torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(model, trust_remote_code=False)
        self.model = AutoModelForCausalLM.from_pretrained(
            model, dtype=torch.float32, trust_remote_code=False
        ).eval()
        self.name = f"judge:{Path(model).name}"
        vocab = self.tokenizer.convert_ids_to_tokens(list(range(len(self.tokenizer))))
        texts = [self.tokenizer.convert_tokens_to_string([t]).strip().lower() for t in vocab]
        # first tokens that can begin "aligned" vs "unaligned"
        self._yes = [
            i for i, t in enumerate(texts) if t and ("aligned".startswith(t) or t.startswith("ali"))
        ]
        self._no = [
            i
            for i, t in enumerate(texts)
            if t and ("unaligned".startswith(t) or t.startswith("unal"))
        ]
        if not self._yes or not self._no:
            raise ValueError(f"the judge's tokenizer cannot spell aligned/unaligned: {model}")

    def prompt(self, s1: str, s2: str) -> str:
        """The full judge prompt for one pair, ending where the reply starts ("[")."""
        messages = [
            {"role": "system", "content": JUDGE_SYSTEM},
            {"role": "user", "content": JUDGE_PROMPT.format(s1=s1.strip(), s2=s2.strip())},
        ]
        text = self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=True
        )
        return text + "["

    def verify(self, pairs: Sequence[tuple[str, str]]) -> list[Verdict]:
        """Accept when the most likely first reply token begins 'aligned'."""
        torch = self._torch
        out = []
        for target, draft in pairs:
            t0 = time.perf_counter()
            ids = self.tokenizer(self.prompt(target, draft), return_tensors="pt").input_ids
            with torch.inference_mode():
                logits = self.model(ids).logits[0, -1]
            yes = float(logits[self._yes].max())
            no = float(logits[self._no].max())
            top = int(logits.argmax())
            accepted = top in self._yes or (top not in self._no and yes > no)
            out.append(Verdict(accepted, yes - no, time.perf_counter() - t0))
        return out


VERIFIER_COSTS = ("auto", "free", "calibration")
"""How a :class:`SyntheticVerifier` costs: auto (the calibration's measured verifier cost
when it has one, else free), free, or calibration (its ``step.verifier_cost``)."""


class SyntheticVerifier:
    """Accept a draft step with a calibration's step acceptance.

    The depth of a draft (0: the first draft after the committed prefix's last target
    step; the synthetic engine writes it into the step's first word,
    :func:`profiler.engines.synthetic.draft_depth`) picks the conditional rate of
    ``step.acceptance_by_position`` when the calibration has one, else α1.  The verdict
    is a fixed function of the seed and the two texts (call order does not matter).

    Cost: free, or a fixed time per pair — ``step.verifier_cost`` (in target steps) ×
    the target's step time, which :meth:`price` sets once the target is known; the
    verifier sleeps that long, so it costs wall-clock time like a real one.
    """

    def __init__(self, calibration: Any, *, source: str, seed: int = 0,
                 cost: str = "auto") -> None:
        from profiler.engines.synthetic import StepAcceptance

        if cost not in VERIFIER_COSTS:
            raise ValueError(f"verifier cost must be one of {', '.join(VERIFIER_COSTS)}, "
                             f"got {cost!r}")
        measured = calibration.step.verifier_cost
        if cost == "calibration" and measured is None:
            raise ValueError(f"verifier cost calibration: calibration {calibration.name} has "
                             "no step.verifier_cost; use free")
        self.cost = "calibration" if cost == "calibration" or (
            cost == "auto" and measured is not None) else "free"
        """free or calibration (resolved)."""
        self.verifier_cost = float(measured) if self.cost == "calibration" else 0.0
        """Target steps per pair."""
        self.pair_seconds = 0.0
        """Seconds per pair (set by :meth:`price`)."""
        self.acceptance = StepAcceptance.from_step(calibration.step)
        self.seed = seed
        self.calibration = calibration.name
        self.name = f"synthetic:{source}"

    def price(self, target_step_seconds: float) -> float:
        """Set the time per pair from the target's step time; returns it (0 when free)."""
        self.pair_seconds = self.verifier_cost * max(0.0, float(target_step_seconds))
        return self.pair_seconds

    def verify(self, pairs: Sequence[tuple[str, str]]) -> list[Verdict]:
        """Draw a verdict per pair at its draft's depth."""
        from profiler.engines.synthetic import draft_depth, uniform

        out = []
        for target, draft in pairs:
            p = self.acceptance.rate(draft_depth(draft))
            u = uniform("verify", self.seed, target, draft)
            out.append(Verdict(u < p, p, self.pair_seconds))
        if self.pair_seconds > 0 and pairs:
            time.sleep(self.pair_seconds * len(pairs))
        return out


VerifierBuilder = Callable[[VerifierSpec, int], Verifier]
"""``builder(spec, threads) -> Verifier``."""

DEFAULT_EMBEDDING_MODEL = "minilm-l6-v2"
"""The sentence-embedding model when a :class:`VerifierSpec` names none (a pack name)."""
DEFAULT_JUDGE_MODEL = "qwen2.5-coder-0.5b"
"""The judge LLM when a :class:`VerifierSpec` names none (a pack name)."""


def _exact(spec: VerifierSpec, threads: int) -> Verifier:
    return ExactMatch()


def _embedding(spec: VerifierSpec, threads: int) -> Verifier:
    from profiler.packs import resolve_model

    return EmbeddingVerifier(resolve_model(spec.model or DEFAULT_EMBEDDING_MODEL),
                             threshold=spec.threshold, threads=threads)


def _judge(spec: VerifierSpec, threads: int) -> Verifier:
    from profiler.packs import resolve_model

    return JudgeVerifier(resolve_model(spec.model or DEFAULT_JUDGE_MODEL), threads=threads)


def _synthetic(spec: VerifierSpec, threads: int) -> Verifier:
    from profiler.engines.synthetic import load_acceptance

    if not spec.model:
        raise ValueError("the synthetic verifier needs its calibration as verifier.model "
                         "(a calibration file or preset)")
    return SyntheticVerifier(load_acceptance(spec.model), source=spec.model)


VERIFIERS: dict[str, VerifierBuilder] = {"exact": _exact, "embedding": _embedding,
                                         "judge": _judge, "synthetic": _synthetic}
"""Verifier kind (:data:`specmodel.config.VERIFIER_KINDS`) → builder."""
assert tuple(VERIFIERS) == VERIFIER_KINDS, "every verifier kind needs a builder"


def make_verifier(spec: VerifierSpec, *, threads: int = 1) -> Verifier:
    """Build the verifier ``spec`` names: exact match, the embedding verifier (its model,
    MiniLM by default, at its threshold) or the LLM judge (its model, Qwen2.5-Coder-0.5B
    by default), or the synthetic verifier (``spec.model``: its calibration); models
    are pack names or folders."""
    builder = VERIFIERS.get(spec.kind)
    if builder is None:  # unreachable for a validated VerifierSpec
        raise ValueError(f"verifier must be one of {', '.join(VERIFIERS)}, got {spec.kind!r}")
    return builder(spec, threads)
