"""Closed forms of Cascade Speculative Drafting (Chen et al., "Cascade Speculative
Drafting for Even Faster LLM Inference"): the probability generating function of
one speculative-decoding call, the expected walltime improvement factor (EWIF) of
plain speculative decoding, of the vertical cascade and of the horizontal cascade,
and the standardized walltime improvement (SWI) metric.

Conventions (binding for this module):

* ``k`` counts the **draft tokens** proposed per speculative-decoding call (the
  cascade paper's ``k``, Leviathan's ``γ``).  One call yields between 1 and
  ``k + 1`` tokens.  The Lookahead Reasoning paper's ``k_LR`` (target positions
  verified in parallel) is ``k + 1``.
* ``alpha`` is the probability that the reviewer accepts one draft token,
  i.i.d. over tokens (the papers' EWIF assumption), in the open interval (0, 1).
* Costs ``c`` are the time of one run of a draft model over one run of the target
  model, ``c >= 0``.  A target call costs 1.
* The EWIF is expected tokens per target call over expected time per target call,
  in units of one target run: the speedup over plain autoregressive decoding.

Every function validates its input through :mod:`specmodel.validation` and raises
``ValueError`` naming the parameter.  Numerics stay finite and accurate as
``alpha -> 1`` (``expm1``/``log1p`` forms) and for ``k``, ``n`` in the thousands.
Errors found in the paper are listed in ``docs/errata_cascade.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from specmodel.closedform.geometric import geometric_sum
from specmodel.validation import (
    check_cost,
    check_cost_vector,
    check_nonnegative_int,
    check_positive_int,
    check_positive_int_array,
    check_probability,
    check_probability_vector,
    scalar_or_array,
)

__all__ = [
    "ewif_horizontal",
    "ewif_horizontal_gradient",
    "ewif_speculative",
    "ewif_vertical",
    "expected_tokens",
    "expected_tokens_horizontal",
    "expected_tokens_vertical",
    "pgf",
    "pgf_coefficients",
    "swi",
    "vertical_break_even_c_d2",
]


def _check_real_array(name: str, value: object) -> np.ndarray:
    """A real scalar or array, finite (no NaN, no infinity), as float64."""
    if isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    try:
        arr = np.asarray(value)
    except Exception as exc:  # pragma: no cover - exotic objects
        raise ValueError(f"{name} must be a real number or array, got {value!r}") from exc
    if arr.dtype.kind not in "iuf":
        raise ValueError(f"{name} must be a real number or array, got {value!r}")
    arr = arr.astype(np.float64)
    if np.isnan(arr).any():
        raise ValueError(f"{name} must be a number, got NaN")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite, got {value!r}")
    return arr


def _power_sum(y: np.ndarray, k: np.ndarray) -> np.ndarray:
    """``S_k(y) = sum_{i=0}^{k} y**i = (1 - y**(k+1)) / (1 - y)`` for real ``y``.

    ``y > 0``: ``expm1((k+1) log y) / expm1(log y)`` (no cancellation near 1);
    ``y = 1``: ``k + 1`` (the polynomial form); ``y <= 0``: the direct quotient,
    whose denominator is >= 1.  Overflows to ``±inf`` for ``|y| > 1`` and huge k.
    """
    y = np.asarray(y, dtype=np.float64)
    kk = np.asarray(k, dtype=np.float64)
    y, kk = np.broadcast_arrays(y, kk)
    out = np.empty(y.shape, dtype=np.float64)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        pos = y > 0.0
        one = y == 1.0
        u = np.log(np.where(pos & ~one, y, 0.5))
        direct_pos = np.expm1((kk + 1.0) * u) / np.expm1(u)
        ynp = np.where(pos, 0.0, y)
        direct_neg = (1.0 - ynp ** (kk + 1.0)) / (1.0 - ynp)
    out[...] = np.where(pos, direct_pos, direct_neg)
    out[one] = kk[one] + 1.0
    return out


def pgf(alpha: float, k: int, x: float | np.ndarray) -> float | np.ndarray:
    """Probability generating function of the tokens one speculative call yields.

    ``phi_{alpha,k}(x) = 1 + (x - 1) (1 - alpha**(k+1) x**(k+1)) / (1 - alpha x)``
    (eq. 1 of the cascade paper; its appendix's last line, eq. 6, prints ``x + ...``
    instead of ``1 + ...``, which is wrong).  ``k`` = draft tokens per call; the call
    yields ``i`` tokens (``1 <= i <= k + 1``) with probability ``p_i`` of
    :func:`pgf_coefficients`, and ``phi(x) = sum_i p_i x**i``.

    Valid for any finite real ``x`` (scalar or array): at ``alpha * x = 1`` the
    quotient is replaced by its polynomial value ``k + 1`` (eq. 3/4), near it an
    ``expm1`` form avoids cancellation.  May overflow to ``±inf`` for
    ``|alpha x| > 1`` and large ``k``.
    """
    a = check_probability("alpha", alpha)
    kk = check_positive_int("k", k)
    xx = _check_real_array("x", x)
    s = _power_sum(a * xx, np.asarray(kk))
    with np.errstate(over="ignore", invalid="ignore"):
        out = 1.0 + (xx - 1.0) * s
    out = np.where(xx == 1.0, 1.0, out)
    return scalar_or_array(out)


def pgf_coefficients(alpha: float, k: int) -> np.ndarray:
    """``p_0 .. p_{k+1}``: P(one speculative call yields ``i`` tokens), ``k`` = drafts.

    ``p_0 = 0``; ``p_i = alpha**(i-1) (1 - alpha)`` for ``1 <= i <= k`` (``i - 1``
    drafts accepted, then a rejection and the target's correction token);
    ``p_{k+1} = alpha**k`` (all drafts accepted plus the bonus token).  Sums to 1.
    """
    a = check_probability("alpha", alpha)
    kk = check_positive_int("k", k)
    p = np.zeros(kk + 2, dtype=np.float64)
    i = np.arange(1, kk + 1)
    p[1 : kk + 1] = (1.0 - a) * np.exp((i - 1) * np.log(a))
    p[kk + 1] = math.exp(kk * math.log(a))
    return p


def expected_tokens(alpha: float, k: int | np.ndarray) -> float | np.ndarray:
    """Expected tokens per speculative call, ``phi'(1) = (1 - alpha**(k+1)) / (1 - alpha)``.

    ``k`` = draft tokens per call (int or integer array).  This is the derivative of
    the PGF at 1; the paper's Corollary 4.2 writes ``phi(1)``, which is 1 for every
    PGF (erratum).  Tends to ``k + 1`` as alpha -> 1 and to 1 as alpha -> 0.
    """
    a = check_probability("alpha", alpha)
    kk = check_positive_int_array("k", k)
    return geometric_sum(a, kk + 1)


def ewif_speculative(alpha: float, c: float, k: int | np.ndarray) -> float | np.ndarray:
    """EWIF of plain speculative decoding (Corollary 4.2, right-hand side).

    ``(1 - alpha**(k+1)) / ((1 - alpha) (c k + 1))`` with ``k`` = draft tokens per call
    (Leviathan's ``γ``) and ``c`` = draft-run cost over target-run cost.  It is at most
    ``1 / (1 - alpha)``; it tends to ``1 / (1 + c k)`` as alpha -> 0 and to
    ``(k + 1) / (1 + c k)`` as alpha -> 1.  It is Leviathan's speedup
    :func:`specmodel.closedform.token_level.g_leviathan` with γ = k >= 1, and is computed by it.
    """
    from specmodel.closedform.token_level import g_leviathan

    return g_leviathan(alpha, c, check_positive_int_array("k", k))


def _vertical_tokens(a: float, ap: float, kk: np.ndarray, nn: np.ndarray) -> np.ndarray:
    # 1 - phi(alpha) = (1 - alpha) S_k(alpha alpha'), exactly, and lies in (0, 1).
    one_minus_phi = (1.0 - a) * _power_sum(np.asarray(a * ap), kk)
    with np.errstate(divide="ignore"):  # phi(alpha) rounds to 0 when alpha ~ 0: log1p(-1)
        one_minus_phi_n = -np.expm1(nn * np.log1p(-one_minus_phi))
    # (1 - alpha phi^n) / (1 - alpha) = 1 + alpha (1 - phi^n) / (1 - alpha)
    return 1.0 + a * one_minus_phi_n / (1.0 - a)


def expected_tokens_vertical(
    alpha: float, alpha_prime: float, k: int | np.ndarray, n: int | np.ndarray
) -> float | np.ndarray:
    """Expected tokens per target call of the two-level vertical cascade (Theorem 4.3).

    The target ``M_t`` reviews the block produced by ``n`` calls of ``M_d1``, each
    call being speculative decoding of ``M_d1`` with ``M_d2`` drafting ``k`` tokens
    (acceptance ``alpha_prime``).  The block length ``J`` has PGF
    ``phi_{alpha',k}(x)**n``; the target accepts each block token with probability
    ``alpha`` until the first rejection and adds one token, so the expectation is
    ``E[(1 - alpha**(J+1)) / (1 - alpha)] = (1 - alpha phi**n(alpha)) / (1 - alpha)``.

    Computed as ``1 + alpha (1 - phi**n) / (1 - alpha)`` with
    ``1 - phi(alpha) = (1 - alpha) sum_{i=0}^{k} (alpha alpha')**i``, stable as
    alpha -> 1 (limit ``1 + n (1 - alpha'**(k+1)) / (1 - alpha')``).
    """
    a = check_probability("alpha", alpha)
    ap = check_probability("alpha_prime", alpha_prime)
    kk = check_positive_int_array("k", k)
    nn = check_positive_int_array("n", n)
    return scalar_or_array(_vertical_tokens(a, ap, kk, nn))


def ewif_vertical(
    alpha: float,
    alpha_prime: float,
    c_d1: float,
    c_d2: float,
    k: int | np.ndarray,
    n: int | np.ndarray,
) -> float | np.ndarray:
    """EWIF of the vertical cascade M_t <- M_d1 <- M_d2 (Theorem 4.3, eq. 2).

    ``(1 - alpha phi**n(alpha)) / ((1 - alpha) (1 + n c_d1 + n k c_d2))`` with
    ``phi = phi_{alpha',k}``; ``alpha`` = acceptance of ``M_d1``'s tokens by ``M_t``,
    ``alpha_prime`` = acceptance of ``M_d2``'s drafts by ``M_d1``, ``k`` = drafts of
    ``M_d2`` per ``M_d1`` call, ``n`` = ``M_d1`` calls per target review.  One target
    call runs ``M_d1`` ``n`` times and ``M_d2`` ``n k`` times.  Checked symbolically
    and by simulation: the formula is right under the paper's i.i.d. model with a
    fixed ``n`` (Algorithm 1 instead stops ``M_d1`` once the block reaches a length).
    """
    a = check_probability("alpha", alpha)
    ap = check_probability("alpha_prime", alpha_prime)
    c1 = check_cost("c_d1", c_d1)
    c2 = check_cost("c_d2", c_d2)
    kk = check_positive_int_array("k", k)
    nn = check_positive_int_array("n", n)
    tokens = _vertical_tokens(a, ap, kk, nn)
    return scalar_or_array(tokens / (1.0 + nn * c1 + nn * kk * c2))


def vertical_break_even_c_d2(
    alpha: float,
    alpha_prime: float,
    c_d1: float,
    k: int,
    n: int,
    reference: float | None = None,
) -> float:
    """The ``c_d2`` below which the vertical cascade beats a reference EWIF.

    With ``reference=None`` the reference is plain speculative decoding of ``M_t``
    with ``M_d1`` drafting ``n`` tokens, ``ewif_speculative(alpha, c_d1, n)`` (the
    comparison in the proof of Corollary 4.4); then the threshold is

    ``c* = (1 + n c_d1) (E_v - E_s) / (n k E_s)``, ``E_v`` = expected tokens of the
    cascade, ``E_s = (1 - alpha**(n+1)) / (1 - alpha)``,

    which is > 0 for every admissible input (``phi_{alpha',k}(alpha) < alpha``) but
    tends to 0 as ``alpha_prime -> 0``: "``c_d2 << 1``" alone does not make the
    cascade win.  ``E_v - E_s`` is evaluated without cancellation.  With a given
    ``reference`` EWIF (e.g. the best plain speculative decoding over its ``k``),
    ``c* = (E_v / reference - 1 - n c_d1) / (n k)``, which may be negative (then no
    ``c_d2 >= 0`` wins).  The cascade's EWIF is strictly larger than the reference
    iff ``c_d2 < c*``.
    """
    a = check_probability("alpha", alpha)
    ap = check_probability("alpha_prime", alpha_prime)
    c1 = check_cost("c_d1", c_d1)
    kk = check_positive_int("k", k)
    nn = check_positive_int("n", n)
    e_v = float(_vertical_tokens(a, ap, np.asarray(kk), np.asarray(nn)))
    if reference is not None:
        ref = check_cost("reference", reference, positive=True)
        return (e_v / ref - 1.0 - nn * c1) / (nn * kk)
    e_s = float(geometric_sum(a, nn + 1))
    # alpha - phi(alpha) = (1 - alpha) alpha alpha' S_{k-1}(alpha alpha'); then
    # E_v - E_s = alpha (alpha^n - phi^n) / (1 - alpha)
    #           = alpha^(n+1) (1 - (1 - delta/alpha)^n) / (1 - alpha).
    delta_over_alpha = (1.0 - a) * ap * float(_power_sum(np.asarray(a * ap), np.asarray(kk - 1)))
    log_head = (nn + 1) * math.log(a)
    diff = math.exp(log_head) * -math.expm1(nn * math.log1p(-delta_over_alpha)) / (1.0 - a)
    return (1.0 + nn * c1) * diff / (nn * kk * e_s)


def expected_tokens_horizontal(alphas: Sequence[float] | np.ndarray) -> float:
    """Expected tokens per target call with position-dependent acceptance (Theorem 4.5).

    ``alphas[i-1]`` = probability that draft position ``i`` is accepted given that
    positions ``1 .. i-1`` were; ``k = len(alphas)`` drafts.  The expectation is
    ``sum_{i=0}^{k} prod_{j=1}^{i} alpha_j`` (the ``i = 0`` term is the target's own
    token).
    """
    al = check_probability_vector("alphas", alphas)
    return float(1.0 + np.cumprod(al).sum())


def ewif_horizontal(
    alphas: Sequence[float] | np.ndarray, costs: Sequence[float] | np.ndarray
) -> float:
    """EWIF of the horizontal cascade (Theorem 4.5).

    ``T = sum_{i=0}^{k} prod_{j=1}^{i} alpha_j / (1 + sum_{i=1}^{k} c_i)``: draft
    position ``i`` (1-based) is produced by a model of cost ``costs[i-1]`` and accepted
    with conditional probability ``alphas[i-1]``; ``k = len(alphas)`` = draft tokens
    per call.  With all ``alpha_i = alpha`` and ``c_i = c`` it equals
    :func:`ewif_speculative`.
    """
    al = check_probability_vector("alphas", alphas)
    cs = check_cost_vector("costs", costs, al.size)
    return float((1.0 + np.cumprod(al).sum()) / (1.0 + cs.sum()))


def ewif_horizontal_gradient(
    alphas: Sequence[float] | np.ndarray, costs: Sequence[float] | np.ndarray
) -> np.ndarray:
    """``dT / d alpha_l`` for ``l = 1 .. k`` (Corollary 4.6), costs held fixed.

    ``dT/d alpha_l = sum_{i=l}^{k} prod_{j=1, j != l}^{i} alpha_j / (1 + sum_i c_i)``,
    returned as an array of length ``k`` (entry ``l - 1``).  Computed as
    ``sum_{i>=l} P_i / alpha_l`` with ``P_i = prod_{j<=i} alpha_j`` (a suffix sum of
    positive terms, no cancellation).  The paper's expression is correct.
    """
    al = check_probability_vector("alphas", alphas)
    cs = check_cost_vector("costs", costs, al.size)
    prefix = np.cumprod(al)
    suffix = np.cumsum(prefix[::-1])[::-1]
    return suffix / al / (1.0 + cs.sum())


def _count_vector(name: str, values: object) -> list[int]:
    if isinstance(values, str | bytes):
        raise ValueError(f"{name} must be a sequence of integers >= 0, got {values!r}")
    if np.ndim(values) == 0:
        return [check_nonnegative_int(name, values)]
    if np.ndim(values) != 1:
        raise ValueError(f"{name} must be a 1-D sequence of integers >= 0, got {values!r}")
    return [
        check_nonnegative_int(f"{name}[{i}]", v.item() if isinstance(v, np.generic) else v)
        for i, v in enumerate(list(values))  # type: ignore[call-overload]
    ]


def swi(
    n_tokens: int,
    target_runs: int,
    draft_runs: Sequence[int] | np.ndarray | int,
    draft_costs: Sequence[float] | np.ndarray | float,
) -> float:
    """Standardized walltime improvement (Section 5.1) from counted model runs.

    ``SWI = n / (count(M_t) + sum_i count(M_d_i) c_i)``: ``n_tokens`` tokens generated
    (>= 1), ``target_runs`` runs of the target (>= 0), ``draft_runs[i]`` runs of draft
    model ``i`` (>= 0) whose cost relative to one target run is ``draft_costs[i]``
    (>= 0; a statistical drafter such as Max-Gram has cost ~0).  A scalar
    ``draft_runs``/``draft_costs`` stands for one draft model.  The total cost must be
    > 0.  For the simulated processes of :mod:`specmodel.montecarlo.cascade` the SWI
    of the total counts equals their EWIF estimate.
    """
    n = check_positive_int("n_tokens", n_tokens)
    t = check_nonnegative_int("target_runs", target_runs)
    runs = _count_vector("draft_runs", draft_runs)
    if isinstance(draft_costs, str | bytes) or np.ndim(draft_costs) > 1:
        raise ValueError(f"draft_costs must be a sequence of costs, got {draft_costs!r}")
    if np.ndim(draft_costs) == 0:
        costs = [check_cost("draft_costs", draft_costs)]
    else:
        costs = [
            check_cost(f"draft_costs[{i}]", c)
            for i, c in enumerate(list(draft_costs))  # type: ignore[arg-type]
        ]
    if len(costs) != len(runs):
        raise ValueError(
            f"draft_costs must hold one cost per entry of draft_runs ({len(runs)}), "
            f"got {len(costs)}"
        )
    total = t + math.fsum(r * c for r, c in zip(runs, costs, strict=True))
    if total <= 0.0:
        raise ValueError(
            "target_runs and draft_runs must give a total cost > 0, got 0 "
            "(no target run and no costed draft run)"
        )
    return n / total
