"""SemanticSpec: sequence-level acceptance on semantic probabilities.

A drafted sequence whose meaning is s is accepted with probability
``min(1, p(s)/q(s))`` where p and q are the target's and the draft's
probabilities of that meaning (SemanticSpec, Algorithm 1, lines 8–9).  Over
semantic classes this accepts with probability ``Σ_s min(p(s), q(s)) = 1 − TV(p, q)``.

On a rejection the paper regenerates from the target, i.e. draws from p.  The
output is then distributed as ``q·min(1, p/q) + (1 − Σ min(p, q))·p``, which is
p only when q is proportional to p on the support of p (q = λ·p there, e.g. p = q,
or p = (1, 0) against q = (½, ½)) and not p otherwise; it is always p when the
rejection resamples from the residual ``max(0, p − q)/Σ max(0, p − q)`` (the
speculative-sampling correction).  Both are
implemented (``resample="target"`` / ``"residual"``); see docs/errata.md.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from specmodel.validation import check_probability

__all__ = [
    "sequence_acceptance_probability",
    "expected_semantic_acceptance",
    "output_distribution",
    "check_distribution",
]


def sequence_acceptance_probability(p: float, q: float) -> float:
    """min(1, p/q) for a drafted meaning with target probability p and draft probability q > 0."""
    pp = check_probability("p", p, closed=True)
    qq = check_probability("q", q, closed=True)
    if qq == 0.0:
        raise ValueError("q must be > 0: the draft produced this meaning")
    return min(1.0, pp / qq)


def check_distribution(name: str, probs: Sequence[float] | np.ndarray) -> np.ndarray:
    """Validate a probability vector over semantic classes (entries in [0, 1], sum 1)."""
    arr = np.asarray(probs, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence of probabilities")
    for i, v in enumerate(arr):
        check_probability(f"{name}[{i}]", float(v), closed=True)
    if abs(arr.sum() - 1.0) > 1e-9:
        raise ValueError(f"{name} must sum to 1, got {arr.sum()!r}")
    return arr


def expected_semantic_acceptance(
    p_probs: Sequence[float] | np.ndarray, q_probs: Sequence[float] | np.ndarray
) -> float:
    """E_q[min(1, p/q)] = Σ min(p, q) = 1 − TV(p, q) over semantic classes."""
    p = check_distribution("p_probs", p_probs)
    q = check_distribution("q_probs", q_probs)
    if p.shape != q.shape:
        raise ValueError(
            f"p_probs and q_probs must have the same length, got {p.size} and {q.size}"
        )
    return float(np.minimum(p, q).sum())


def output_distribution(
    p_probs: Sequence[float] | np.ndarray,
    q_probs: Sequence[float] | np.ndarray,
    resample: str = "target",
) -> np.ndarray:
    """Distribution of the emitted meaning after one accept/reject step.

    ``resample="target"`` is the paper's rule (draw from p on a rejection);
    ``"residual"`` draws from the normalized ``max(0, p − q)`` and is lossless.
    """
    p = check_distribution("p_probs", p_probs)
    q = check_distribution("q_probs", q_probs)
    if p.shape != q.shape:
        raise ValueError(
            f"p_probs and q_probs must have the same length, got {p.size} and {q.size}"
        )
    accepted = np.minimum(p, q)
    reject = 1.0 - accepted.sum()
    if resample == "target":
        return accepted + reject * p
    if resample == "residual":
        resid = np.maximum(p - q, 0.0)
        total = resid.sum()
        return accepted + (resid / total * reject if total > 0 else 0.0)
    raise ValueError(f"resample must be 'target' or 'residual', got {resample!r}")
