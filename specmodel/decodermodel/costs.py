"""What each engine call of the decoder costs: :class:`CostModel` (pure, no torch).

An engine call (:meth:`profiler.engines.Engine.generate_steps`) of ``b`` prefixes at
context ``L`` that writes steps of ``n_i`` tokens costs

    call_overhead + prefill(new tokens) + decode(b, L) · n_longest

— the fixed per-call overhead, the prefill of the tokens the engine has not cached
(``prefill_per_token`` per token of the padded batch), and one decode forward of the
whole batch per token of its longest member (transformers keeps every row in the batch
until the last one stops).  With token-level speculation (k2 > 1) a step takes
passes instead of tokens; a pass costs ``c2·(k2 − 1)·decode(1, L) + decode(b, L)``
(``token_draft_per_forward`` = c2, the measured effective cost of one drafted token in
target forwards, which also absorbs the verification forward's extra width).

Decode is a surface T(b, L) (:class:`Surface`), interpolated monotonically: from a
:class:`~specmodel.formats.hardware.HardwareProfile`'s decode points, or the
calibration's T(b) (no L dependence), or flat.  The draft's decode is its own surface
or the target's scaled by c1.  The verifier costs ``verifier_per_pair`` per judged pair
and ``verifier_per_batch`` per call.  ``contention`` ≥ 1 multiplies each model's time
while both run at once (async on shared cores or one device).

:class:`EngineBehaviour` holds what the engine does that the papers' model does not:
the KV-cache reuse of a single-prefix call (so target-only decoding prefills only the
new tokens, and every batched or speculative call prefills its whole prefix), token
speculation one prefix at a time, and token speculation on the target only.

Every field's origin is in :attr:`CostModel.sources` ("measured: …" or "assumed: …").
"""

from __future__ import annotations

import bisect
import itertools
import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Literal

import numpy as np

__all__ = ["PASS_FLOOR", "CallPrice", "CostModel", "EngineBehaviour", "Forwards", "Surface",
           "call_price"]

PASS_FLOOR = 0.5
"""The least a token-speculation pass is priced at, in decode forwards T(1, L): a pass
reads every weight once, as a forward does, and a measured or drawn multiplier below
half of one is taken for noise (the lowest measured: 0.78, at k2 = 3 on an Intel
Xeon's static path, counted in the grid's T(1, L))."""


@dataclass(frozen=True)
class Surface:
    """Time of one decode forward of ``b`` sequences at context ``L``, T(b, L).

    Built from points (b, L) → time; made non-decreasing in b at every L and in L at
    every b by isotonic regression (the least-squares monotone fit: measured points that
    violate the order are replaced by their mean, not raised to the highest of them, so
    noise does not bias the surface upward; said so in :attr:`notes`) — in L only where
    :attr:`monotone_in_b` is False.  Between points:
    linear in b, then linear in L between the two nearest measured context lengths.
    Below the first b or L: the first value.  Above the widest b: linear extrapolation
    from the last two widths (never decreasing), said in :attr:`notes`.  Above the
    longest L: held at the longest (said so).
    """

    points: tuple[tuple[int, int, float], ...]
    """(b, L, time) as given."""
    notes: tuple[str, ...] = ()
    """What was corrected or will be extrapolated."""
    monotone_in_b: bool = True
    """Whether the fit makes the time non-decreasing in b (a decode forward's).  False
    keeps the measured order across b and orders only in L: a forward of a few tokens
    per sequence can run a narrower batch on a slower kernel (on the 2-core CPU one
    sequence × 3 tokens measured 12–19 % slower than two in 7 of 8 profiled cells), and
    pooling it with the wider batch would price the run's own shape low."""

    @classmethod
    def flat(cls, time: float = 1.0) -> Surface:
        """Every batch and context costs ``time`` (the papers' assumption)."""
        return cls(((1, 0, float(time)),))

    @classmethod
    def from_points(cls, points: Mapping[tuple[int, int], float] | list[tuple[int, int, float]],
                    name: str = "T", *, monotone_in_b: bool = True) -> Surface:
        """From {(b, L): time} or [(b, L, time)]; validates and notes irregularities."""
        items = (list(points.items()) if isinstance(points, Mapping)
                 else [((b, L), t) for b, L, t in points])
        if not items:
            raise ValueError(f"{name}: a cost surface needs at least one point")
        pts = []
        for (b, L), t in items:
            if int(b) < 1 or int(L) < 0 or not (math.isfinite(float(t)) and float(t) > 0):
                raise ValueError(f"{name}: bad point b={b}, L={L}, time={t}")
            pts.append((int(b), int(L), float(t)))
        pts.sort()
        notes = []
        contexts = sorted({L for _, L, _ in pts})
        widths = sorted({b for b, _, _ in pts})
        if len(contexts) == 1:
            notes.append(f"{name}: measured at one context length (L = {contexts[0]}); "
                         "the cost does not grow with context in this model")
        missing = [(b, L) for b in widths for L in contexts
                   if not any(p[0] == b and p[1] == L for p in pts)]
        if missing:
            notes.append(f"{name}: {len(missing)} (b, L) grid points missing "
                         f"(e.g. {missing[:3]}); interpolated from their neighbours in b")
        s = cls(tuple(pts), monotone_in_b=monotone_in_b)
        fixed = s._monotone_fixes()
        if fixed:
            order = "b or L" if monotone_in_b else "L; its measured order in b is kept"
            notes.append(f"{name}: {fixed} point(s) out of order (T must not decrease in "
                         f"{order}) replaced by the least-squares monotone fit")
        if len(widths) >= 2:
            notes.append(f"{name}: batches beyond b = {widths[-1]} are extrapolated "
                         "linearly from the last two widths")
        return cls(tuple(pts), tuple(notes), monotone_in_b)

    # -- evaluation ------------------------------------------------------------------

    @cached_property
    def _compiled(self) -> tuple[list[int], list[tuple[list[float], list[float]]]]:
        """The measured contexts and, at each, its (widths, times) made monotone."""
        contexts = sorted({L for _, L, _ in self.points})
        fitted = _isotonic_grid(self.points, in_b=self.monotone_in_b)
        order_b = np.maximum.accumulate if self.monotone_in_b else np.asarray
        curves: list[tuple[list[float], list[float]]] = []
        for L in contexts:
            bs = [float(b) for b, c, _ in self.points if c == L]
            # off a full grid the fit orders only measured neighbours: enforce the rest
            ts = list(order_b([fitted[(b, c)] for b, c, _ in self.points if c == L]))
            if curves:  # not below the shorter context's curve at the same b
                ts = list(order_b(np.maximum(ts, [_interp_b(curves[-1], b) for b in bs])))
            curves.append((bs, [float(t) for t in ts]))
        return contexts, curves

    def _monotone_fixes(self) -> int:
        contexts, curves = self._compiled
        raw = {(b, L): t for b, L, t in self.points}
        fixed = 0
        for L, (bs, ts) in zip(contexts, curves, strict=True):
            for b, t in zip(bs, ts, strict=True):
                if abs(t - raw[(int(b), L)]) > 1e-9 * raw[(int(b), L)]:
                    fixed += 1
        return fixed

    def time(self, b: float, L: float = 0.0) -> float:
        """T(b, L)."""
        contexts, curves = self._compiled
        ctx = L
        if len(contexts) == 1 or ctx <= contexts[0]:
            return _interp_b(curves[0], b)
        if ctx >= contexts[-1]:
            return _interp_b(curves[-1], b)
        j = bisect.bisect_left(contexts, ctx)
        lo, hi = contexts[j - 1], contexts[j]
        t0 = _interp_b(curves[j - 1], b)
        t1 = _interp_b(curves[j], b)
        return t0 + (ctx - lo) / (hi - lo) * (t1 - t0)

    @property
    def is_flat(self) -> bool:
        """Whether every batch and context costs the same."""
        return len({t for _, _, t in self.points}) == 1

    def scaled(self, factor: float) -> Surface:
        """The same surface times ``factor`` (the draft's surface from the target's)."""
        return Surface(tuple((b, L, t * factor) for b, L, t in self.points), self.notes,
                       self.monotone_in_b)


@dataclass(frozen=True)
class Forwards:
    """Time of one forward of ``b`` sequences × ``q`` new tokens (logits at each) at
    context ``L``, F(b, q, L): verification of q tokens, or a prefill of q tokens.

    One :class:`Surface` per measured q, ordered in L but keeping the measured order in b
    (:attr:`Surface.monotone_in_b`: these are the exact shapes a run's engine executes,
    and a few tokens per sequence can be slower for one sequence than for two); between
    two measured q linear in q; below the smallest q its time; above the largest q
    linear extrapolation from the last two (never decreasing)."""

    by_q: tuple[tuple[int, Surface], ...]
    """(q, its T(b, L) surface), by q."""

    @classmethod
    def from_points(cls, points: Mapping[tuple[int, int, int], float], name: str = "F"
                    ) -> Forwards:
        """From {(b, q, L): seconds}."""
        if not points:
            raise ValueError(f"{name}: forwards need at least one point")
        qs = sorted({q for _, q, _ in points})
        return cls(tuple((q, Surface.from_points(
            {(b, L): t for (b, qq, L), t in points.items() if qq == q}, f"{name}(q={q})",
            monotone_in_b=False)) for q in qs))

    def time(self, b: float, q: float, L: float = 0.0) -> float:
        """F(b, q, L)."""
        qs = [q_ for q_, _ in self.by_q]
        if q <= qs[0] or len(qs) == 1:
            return self.by_q[0][1].time(b, L) if q <= qs[0] else self.by_q[-1][1].time(b, L)
        if q >= qs[-1]:
            (q0, s0), (q1, s1) = self.by_q[-2], self.by_q[-1]
            t0, t1 = s0.time(b, L), s1.time(b, L)
            return t1 + max(0.0, (t1 - t0) / (q1 - q0)) * (q - q1)
        j = bisect.bisect_left(qs, q)
        (q0, s0), (q1, s1) = self.by_q[j - 1], self.by_q[j]
        if q == q1:
            return s1.time(b, L)
        t0, t1 = s0.time(b, L), s1.time(b, L)
        return t0 + (q - q0) / (q1 - q0) * (t1 - t0)


def _isotonic(values: list[float]) -> list[float]:
    """The non-decreasing sequence nearest ``values`` in least squares (pool adjacent
    violators: a run that decreases is replaced by its mean)."""
    blocks: list[list[float]] = []  # [mean, count]
    for v in values:
        blocks.append([float(v), 1.0])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, n2 = blocks.pop()
            m1, n1 = blocks[-1]
            blocks[-1] = [(m1 * n1 + m2 * n2) / (n1 + n2), n1 + n2]
    return [m for m, n in blocks for _ in range(int(n))]


def _isotonic_grid(points: tuple[tuple[int, int, float], ...], sweeps: int = 200, *,
                   in_b: bool = True) -> dict[tuple[int, int], float]:
    """Times non-decreasing in b at every measured L (unless ``in_b`` is False) and in L
    at every measured b, nearest the measured ones in least squares: Dykstra's
    alternating projections onto the orders (each projection one :func:`_isotonic` per
    row or column)."""
    x = {(b, L): t for b, L, t in points}
    chains = [[(b, L) for b, L, _ in points if c == L] for c in sorted({p[1] for p in points})]
    columns = [sorted(((b, L) for b, L, _ in points if b == w), key=lambda k: k[1])
               for w in sorted({p[0] for p in points})]
    orders = [chains, columns] if in_b else [columns]
    residual = [dict.fromkeys(x, 0.0) for _ in orders]
    for _ in range(sweeps):
        before = dict(x)
        for k, order in enumerate(orders):
            shifted = {key: x[key] + residual[k][key] for key in x}
            for chain in order:
                for key, v in zip(chain, _isotonic([shifted[key] for key in chain]),
                                  strict=True):
                    x[key] = v
            residual[k] = {key: shifted[key] - x[key] for key in x}
        if max(abs(x[k] - before[k]) for k in x) <= 1e-12 * max(x.values()):
            break
    return x


def _interp_b(curve: tuple[list[float], list[float]], b: float) -> float:
    """Piecewise linear in b; the first value below; linear (never decreasing) above."""
    bs, ts = curve
    if b <= bs[0]:
        return ts[0]
    if b >= bs[-1]:
        if len(bs) < 2:
            return ts[-1]
        slope = max(0.0, (ts[-1] - ts[-2]) / (bs[-1] - bs[-2]))
        return ts[-1] + slope * (b - bs[-1])
    j = bisect.bisect_left(bs, b)
    w = (b - bs[j - 1]) / (bs[j] - bs[j - 1])
    return ts[j - 1] + w * (ts[j] - ts[j - 1])


@dataclass(frozen=True)
class EngineBehaviour:
    """What the engine does beyond one forward per token (defaults: the decoder's
    transformers engine, :class:`profiler.engines.hf.HFEngine`)."""

    prefix_cache: bool = True
    """A single-prefix call without token speculation reuses the KV cache of the previous
    such call for their shared prefix (prefills only the new tokens); batched and
    speculative calls prefill their whole (left-padded) prefixes."""
    speculation_batched: bool = False
    """Token speculation runs the batch as one (False: one prefix after another, as
    transformers' assisted generation takes batch size 1)."""
    batch_time: Literal["longest", "mean"] = "longest"
    """A batch decodes until its longest member stops (transformers), or costs its mean
    member (the papers: one batch costs one step)."""
    draft_token_speculation: bool = False
    """The step draft also runs token speculation (the papers' h assumes it; the decoder
    gives token speculation to the target only)."""
    branches_one_call: bool = False
    """Sync with W > 1: the W children of a level are drafted in one call (the papers'
    multi-branch model); the decoder makes two, the greedy children then the sampled."""
    async_schedule: Literal["decoder", "paper"] = "decoder"
    """decoder: one target worker that takes every known position as one batch (the
    decoder's scheduler); paper: each target step starts when its prefix exists, up to
    k1 in flight, each on its own (the papers' process)."""

    step_cache: bool = False
    """Every call (batched and speculative ones included) reuses the KV cache of the
    longest step-boundary prefix the engine has seen in the problem (prefix caching, as
    the synthetic engine and vLLM do); ``prefix_cache`` is then moot."""
    prefill: Literal["per_token", "one_forward", "none"] = "per_token"
    """How the uncached tokens are prefilled: ``per_token`` (``prefill_per_token`` per
    token of the padded batch), ``one_forward`` (one forward of the batch × the most
    uncached tokens rounded up to a power of two, priced by the engine's
    :class:`Forwards`; the synthetic engine) or ``none``."""
    context_bucket: int = 0
    """0: a call's forwards are priced at its prefixes' mean starting context; > 0: each
    forward at the batch's longest prefix plus the tokens written so far, rounded up to
    a multiple of this (the synthetic engine)."""

    @classmethod
    def synthetic(cls, context_bucket: int = 256, prefill: bool = True) -> EngineBehaviour:
        """The synthetic-acceptance engine (:class:`profiler.engines.synthetic.SyntheticEngine`):
        prefix caching at step boundaries, uncached tokens prefilled by one forward, token
        speculation batched (the padded batch's passes), each forward at its own bucketed
        context, the batch running to its longest member."""
        return cls(prefix_cache=True, speculation_batched=True, batch_time="longest",
                   draft_token_speculation=False, branches_one_call=False,
                   async_schedule="decoder", step_cache=True,
                   prefill="one_forward" if prefill else "none",
                   context_bucket=context_bucket)

    @classmethod
    def papers(cls) -> EngineBehaviour:
        """The papers' idealisation (with which the closed forms hold)."""
        return cls(prefix_cache=True, speculation_batched=True, batch_time="mean",
                   draft_token_speculation=True, branches_one_call=True,
                   async_schedule="paper")


@dataclass(frozen=True)
class CostModel:
    """Prices of the decoder's engine and verifier calls (see the module docstring).

    ``unit`` is "s" when the times are absolute seconds (then the predictor also gives
    tokens/s), "T" when they are relative to one target decode forward.
    """

    target_decode: Surface
    """T(b, L): one target decode forward of b sequences at context L."""
    draft_decode: Surface
    """The step draft's decode forward."""
    prefill_per_token: float = 0.0
    """Target prefill time per new prompt token (of the padded batch)."""
    draft_prefill_per_token: float = 0.0
    """Draft prefill time per new prompt token."""
    call_overhead: float = 0.0
    """Fixed time of every engine call (tokenizing, generate's setup)."""
    draft_call_overhead: float | None = None
    """The step draft's fixed time per call (None: ``call_overhead``)."""
    verifier_per_pair: float = 0.0
    """The verifier's time per judged (target step, draft step) pair."""
    verifier_per_batch: float = 0.0
    """The verifier's fixed time per call."""
    token_draft_per_forward: float = 0.0
    """Token speculation: one drafted token's cost in decode forwards of the engine that
    drafts it (c2)."""
    contention: float = 1.0
    """Each model's time is multiplied by this while both run at once (async)."""
    draft_contention: float | None = None
    """The step draft's slowdown while both run (None: ``contention``); ``contention`` is
    then the target's."""
    target_forwards: Forwards | None = None
    """F(b, q, L) of the target: its verification forwards (token speculation is then
    priced γ drafter forwards + F(b, k2, L) per pass instead of by c2) and its prefill
    forwards (``EngineBehaviour.prefill`` = one_forward)."""
    draft_forwards: Forwards | None = None
    """F(b, q, L) of the step draft (its prefill forwards)."""
    token_drafter_decode: Surface | None = None
    """The token-level drafter's decode forward (with ``target_forwards``; None: the
    drafter is free, e.g. n-gram)."""
    speculative_contention: float | None = None
    """The target's slowdown in async while the draft runs when its calls carry token
    speculation (k2 > 1), measured on such calls (None: ``contention``)."""
    pass_multipliers: tuple[tuple[int, float], ...] | None = None
    """(k2, one token-speculation pass of the target in decode forwards T(1, L)) as
    measured through the engine (``engine_costs``); a pass of b prefixes then costs
    T(b, L) + (m(k2) − 1)·T(1, L) instead of the c2 price.  None: priced by c2."""
    unit: Literal["s", "T"] = "T"
    """Absolute seconds, or units of one target decode forward."""
    engine: EngineBehaviour = field(default_factory=EngineBehaviour)
    """What the engine does besides forwards."""
    sources: Mapping[str, str] = field(default_factory=dict)
    """Field name → where the value came from ("measured: …" / "assumed: …")."""
    stderrs: Mapping[str, float] = field(default_factory=dict)
    """Standard errors of measured scalar costs: a field name (``prefill_per_token``,
    ``call_overhead`` and the draft's) or ``pass_multipliers:K2`` → its standard error;
    :meth:`resampled` draws the costs from them."""

    def __post_init__(self) -> None:
        for name in ("prefill_per_token", "draft_prefill_per_token", "call_overhead",
                     "verifier_per_pair", "verifier_per_batch", "token_draft_per_forward"):
            v = float(getattr(self, name))
            if not (math.isfinite(v) and v >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
        if self.draft_call_overhead is not None and not (
                math.isfinite(self.draft_call_overhead) and self.draft_call_overhead >= 0):
            raise ValueError("draft_call_overhead must be a finite number >= 0, got "
                             f"{self.draft_call_overhead!r}")
        for name in ("contention", "draft_contention", "speculative_contention"):
            v = getattr(self, name)
            if v is not None and not (math.isfinite(v) and v >= 1.0):
                raise ValueError(f"{name} must be >= 1, got {v!r}")
        if self.engine.context_bucket < 0:
            raise ValueError(f"context_bucket must be >= 0, got {self.engine.context_bucket}")

    def pass_multiplier(self, k2: int) -> float | None:
        """m(k2) from :attr:`pass_multipliers`: linear in k2 between measured values and
        from m(1) = 1 below the first, extended with the last two's slope above the last
        (at least :data:`PASS_FLOOR`); None when not measured or k2 = 1.  Below 1 is
        kept: the two run on different paths (assisted generation's passes on the
        dynamic cache, a static-path forward over the whole static cache).  Files before
        2026-12-03 counted a pass in the grid's T(1, L), so the machine's pace since the
        grid moved it: 0.78–0.94 at k2 = 2 and 3 on the Intel Xeon VMs, where passes
        against forwards timed beside them read 0.96 and 1.01."""
        if self.pass_multipliers is None or k2 <= 1:
            return None
        pts = [(1, 1.0), *sorted(self.pass_multipliers)]
        for (k0, m0), (k1, m1) in itertools.pairwise(pts):
            if k2 <= k1:
                return max(PASS_FLOOR, m0 + (m1 - m0) * (k2 - k0) / (k1 - k0))
        (k0, m0), (k1, m1) = pts[-2], pts[-1]
        return max(PASS_FLOOR, m1 + (m1 - m0) / (k1 - k0) * (k2 - k1))

    def role_costs(self, role: Literal["target", "draft"]) -> tuple[Surface, float, float]:
        """(T(b, L), prefill per token, overhead per call) of the target's or the step
        draft's engine calls."""
        if role == "target":
            return self.target_decode, self.prefill_per_token, self.call_overhead
        if role == "draft":
            over = (self.call_overhead if self.draft_call_overhead is None
                    else self.draft_call_overhead)
            return self.draft_decode, self.draft_prefill_per_token, over
        raise ValueError(f"role must be 'target' or 'draft', got {role!r}")

    # -- construction ----------------------------------------------------------------

    @classmethod
    def flat(cls, c1: float, *, c2: float = 0.0, engine: EngineBehaviour | None = None
             ) -> CostModel:
        """The papers' costs: flat T = 1, a draft forward c1, nothing else."""
        srcs = {k: "assumed: the papers' idealisation" for k in _FIELDS}
        return cls(Surface.flat(1.0), Surface.flat(c1), token_draft_per_forward=c2,
                   engine=engine or EngineBehaviour.papers(), sources=srcs)

    @classmethod
    def from_calibration(
        cls,
        cal: Any,
        *,
        target_architecture: str | None = None,
        draft_architecture: str | None = None,
        token_drafter_architecture: str | None = None,
        prefill_per_token: float | None = None,
        call_overhead: float | None = None,
        contention: float | None = None,
        engine: EngineBehaviour | None = None,
    ) -> CostModel:
        """Price the decoder from a :class:`~specmodel.formats.calibration.Calibration`.

        Decode: the hardware profile of ``target_architecture`` (its T(b, L)) if the
        calibration has one, else its T(b) (no L dependence), else flat.  The draft:
        its own profile (``draft_architecture``) or the target's surface × c1.  The
        verifier: ``verifier_cost`` × the target's step time (T(1) × the mean step
        length), else free.  Prefill, overhead and contention: as given, else from the
        calibration's ``engine_costs`` (schema 2, ``profile run``'s engine_costs phase),
        else assumed (0, 0, 1), each source saying which.

        With ``engine_costs`` (and no ``target_architecture``) the target's and the
        draft's decode are their T(b, L) per token written, measured through the
        transformers engine's calls, and each model has its own fitted prefill per
        token, per-call overhead and slowdown while the other runs.

        From the hardware profiles also, where measured: each model's forwards of q > 1
        tokens (:class:`Forwards`: verification and prefill), the token drafter's decode
        (``token_drafter_architecture``) and the contention of the target and the draft
        running at once (each profile's ``concurrent`` entry for the other).
        """
        src: dict[str, str] = {}
        stderrs: dict[str, float] = {}
        step, tok = cal.step, cal.token
        ec = getattr(cal, "engine_costs", None) if target_architecture is None else None
        if ec is not None:
            target = Surface.from_points(ec.target.decode_points(), "target T(b, L)")
            unit: Literal["s", "T"] = "s"
            src["target_decode"] = _engine_source(ec, ec.target, "per token written")
        else:
            target, unit = _surface_of(cal, target_architecture, "target", src,
                                       "target_decode")
        draft = None
        if ec is not None and ec.draft is not None:
            draft = Surface.from_points(ec.draft.decode_points(), "draft T(b, L)")
            src["draft_decode"] = _engine_source(ec, ec.draft, "per token written")
        if draft_architecture is not None:
            prof = _profile(cal, draft_architecture)
            if prof is not None and prof.decode_surface():
                draft = Surface.from_points(prof.decode_surface(statistic=_stat(prof)),
                                            "draft T(b, L)")
                if unit != "s":
                    raise ValueError("the draft has a measured surface in seconds but the "
                                     "target's costs are relative: give the target's too")
                src["draft_decode"] = (f"{_how(prof)}: hardware profile of "
                                       f"{draft_architecture} ({prof.summary()})")
        if draft is None:
            draft = target.scaled(step.c1)
            src["draft_decode"] = (f"measured: c1 = {step.c1:.4g} (calibration step.c1) × "
                                   "the target's surface; assumed: the draft's cost grows "
                                   "with b and L as the target's")
        mean_tokens = step.step_tokens_mean
        if mean_tokens is None and step.step_tokens_histogram:
            h = step.step_tokens_histogram
            mean_tokens = sum(int(k) * v for k, v in h.items()) / sum(h.values())
        step_time = target.time(1, 0) * (mean_tokens or 1.0)
        if step.verifier_cost is not None:
            per_pair = step.verifier_cost * step_time
            src["verifier_per_pair"] = (
                f"measured: verifier_cost = {step.verifier_cost:.4g} target steps per pair "
                f"(calibration) × a target step of {mean_tokens or 1:.3g} tokens")
        else:
            per_pair = 0.0
            src["verifier_per_pair"] = "assumed: free (the calibration has no verifier_cost)"
        src["verifier_per_batch"] = "assumed: 0 (not measured: the verifier's per-call cost)"
        src["token_draft_per_forward"] = (
            f"measured: c2 = {tok.c2:.4g} (calibration token.c2, effective: absorbs the "
            "verification forward's extra width)")

        def given(name: str, value: float | None, default: float, what: str) -> float:
            if value is None:
                src[name] = f"assumed: {default:g} ({what} not measured by the calibration)"
                return default
            src[name] = f"given: {value:g}"
            return float(value)

        fwd: dict[str, Any] = {}
        for key, arch in (("target_forwards", target_architecture),
                          ("draft_forwards", draft_architecture)):
            prof = _profile(cal, arch)
            if prof is not None and prof.forward_points():
                fwd[key] = Forwards.from_points(prof.forward_points(_stat(prof)),
                                                f"{arch} F(b, q, L)")
                src[key] = (f"{_how(prof)}: hardware profile of {arch}, forwards of q > 1 "
                            f"tokens ({len(prof.forward_points())} points)")
        if token_drafter_architecture is not None:
            prof = _profile(cal, token_drafter_architecture)
            if prof is not None and prof.decode_surface():
                fwd["token_drafter_decode"] = Surface.from_points(
                    prof.decode_surface(statistic=_stat(prof)), "token drafter T(b, L)")
                src["token_drafter_decode"] = (
                    f"{_how(prof)}: hardware profile of {token_drafter_architecture}")
            else:
                src["token_drafter_decode"] = (
                    f"missing: no hardware profile of {token_drafter_architecture}; "
                    "its forwards are free")
        if contention is None:
            tp, dp = _profile(cal, target_architecture), _profile(cal, draft_architecture)
            tc = (tp.concurrent or {}).get(draft_architecture) if tp is not None else None
            dc = (dp.concurrent or {}).get(target_architecture) if dp is not None else None
            if tc is not None and dc is not None:
                contention = max(1.0, float(tc))
                fwd["draft_contention"] = max(1.0, float(dc))
                src["draft_contention"] = (
                    f"{_how(dp)}: {dc:.3g}× (hardware profile of {draft_architecture}, "
                    f"concurrent with {target_architecture}; below 1 kept at 1)")
        pre = given("prefill_per_token", prefill_per_token, 0.0, "prefill")
        src["draft_prefill_per_token"] = (
            "assumed: c1 × the target's prefill per token" if pre > 0
            else src["prefill_per_token"])
        over = given("call_overhead", call_overhead, 0.0, "per-call overhead")
        cont = given("contention", contention, 1.0, "the concurrency slowdown")
        draft_pre = pre * step.c1
        if ec is not None:
            fits = _engine_fits(ec, prefill_per_token is None, call_overhead is None,
                                contention is None, src, stderrs)
            pre = fits.get("prefill_per_token", pre)
            over = fits.get("call_overhead", over)
            cont = fits.get("contention", cont)
            draft_pre = fits.get("draft_prefill_per_token", pre * step.c1)
            fwd.update({k: v for k, v in fits.items()
                        if k in ("draft_call_overhead", "draft_contention",
                                 "speculative_contention", "pass_multipliers")})
        if "draft_contention" in fwd and ec is None:
            how = _how(_profile(cal, target_architecture))
            src["contention"] = (f"{how}: {cont:.3g}× (hardware profile of "
                                 f"{target_architecture}, concurrent with "
                                 f"{draft_architecture}; below 1 kept at 1)")
        eng = engine or EngineBehaviour()
        src["engine"] = ("decoder's transformers engine: KV reuse on single-prefix calls, "
                         "token speculation one prefix at a time and on the target only, "
                         "a batch runs until its longest member stops"
                         if eng == EngineBehaviour() else
                         "synthetic engine: prefix caching at step boundaries, prefill "
                         "forwards, batched token speculation, bucketed contexts"
                         if eng.step_cache else f"given: {eng}")
        return cls(target, draft, prefill_per_token=pre, draft_prefill_per_token=draft_pre,
                   call_overhead=over, verifier_per_pair=per_pair, verifier_per_batch=0.0,
                   token_draft_per_forward=tok.c2, contention=cont, unit=unit, engine=eng,
                   sources=src, stderrs=stderrs, **fwd)

    def resampled(self, rng: np.random.Generator) -> CostModel:
        """The measured scalar costs drawn from normal distributions with their
        :attr:`stderrs` (the calibration's uncertainty; times clamped at 0, a pass at
        :data:`PASS_FLOOR` forwards, a slowdown at 1), each from its own stream under one draw of
        ``rng``, so that a seed gives one draw and a cost's draw does not depend on which
        others have standard errors; costs without a standard error, and the decode
        surfaces, are kept."""
        if not self.stderrs:
            return self
        changes: dict[str, Any] = {}
        passes = dict(self.pass_multipliers or ())
        root = int(rng.integers(2**63))
        for key in sorted(self.stderrs):
            se = float(self.stderrs[key])
            # each cost its own stream: a further measured spread leaves the others' draws
            z = float(np.random.default_rng([root, zlib.crc32(key.encode())])
                      .standard_normal())
            if key.startswith("pass_multipliers:"):
                k2 = int(key.split(":", 1)[1])
                if k2 in passes:
                    passes[k2] = max(PASS_FLOOR, passes[k2] + z * se)
            elif getattr(self, key, None) is not None:
                floor = 1.0 if key.endswith("contention") else 0.0
                changes[key] = max(floor, float(getattr(self, key)) + z * se)
        if self.pass_multipliers is not None:
            changes["pass_multipliers"] = tuple(sorted(passes.items()))
        return replace(self, **changes)

    def replace(self, **changes: Any) -> CostModel:
        """A copy with fields changed (their sources marked "given")."""
        src = dict(self.sources)
        for k, v in changes.items():
            src[k] = f"given: {v}" if not isinstance(v, Surface | EngineBehaviour) else "given"
        se = {k: v for k, v in self.stderrs.items() if k.split(":", 1)[0] not in changes}
        return replace(self, sources=src, stderrs=se, **changes)

    # -- queries -----------------------------------------------------------------

    def measured(self) -> dict[str, str]:
        """The fields whose values were measured."""
        return {k: v for k, v in self.sources.items() if v.startswith("measured")}

    def assumed(self) -> dict[str, str]:
        """The fields whose values were assumed."""
        return {k: v for k, v in self.sources.items() if v.startswith("assumed")}

    def notes(self) -> list[str]:
        """Everything the surfaces corrected or extrapolate."""
        return [*self.target_decode.notes, *self.draft_decode.notes]

    @property
    def papers_idealisation(self) -> bool:
        """Whether the closed forms hold: flat surfaces, nothing but forwards priced, no
        contention, the papers' engine."""
        return (self.target_decode.is_flat and self.draft_decode.is_flat
                and self.prefill_per_token == 0 and self.draft_prefill_per_token == 0
                and self.call_overhead == 0 and self.verifier_per_pair == 0
                and self.verifier_per_batch == 0 and self.contention == 1.0
                and self.draft_contention in (None, 1.0) and self.target_forwards is None
                and self.draft_forwards is None and self.token_drafter_decode is None
                and self.pass_multipliers is None and self.speculative_contention is None
                and self.engine == EngineBehaviour.papers())

    def to_dict(self) -> dict[str, Any]:
        """Numbers and sources, for JSON."""
        return {
            "unit": self.unit,
            "target_decode_b1": self.target_decode.time(1, 0),
            "draft_decode_b1": self.draft_decode.time(1, 0),
            "prefill_per_token": self.prefill_per_token,
            "call_overhead": self.call_overhead,
            "verifier_per_pair": self.verifier_per_pair,
            "verifier_per_batch": self.verifier_per_batch,
            "token_draft_per_forward": self.token_draft_per_forward,
            "contention": self.contention,
            "draft_contention": self.draft_contention,
            "engine": {k: getattr(self.engine, k) for k in self.engine.__dataclass_fields__},
            "sources": dict(self.sources),
            "notes": self.notes(),
        }


@dataclass(frozen=True)
class CallPrice:
    """What one engine call of whole steps costs, by part (:func:`call_price`)."""

    overhead: float
    """The engine's fixed time per call."""
    prefill: float
    """Prefilling the tokens the call had not cached."""
    decode: float
    """Its decode iterations (or token-speculation passes)."""

    @property
    def total(self) -> float:
        """The call's time."""
        return self.overhead + self.prefill + self.decode


def call_price(decode: Surface, prefill_per_token: float, overhead: float,
               contexts: Sequence[float], prefilled: float, iterations: float, *,
               per_iteration: float | None = None) -> CallPrice:
    """The price of one call of ``len(contexts)`` prefixes whose tokens are ``contexts``:
    ``overhead``, plus ``prefilled`` prompt tokens at ``prefill_per_token`` each (the
    padded batch's, less a reused cache), plus ``iterations`` decode iterations at T(b,
    L̄), the batch's decode forward at its mean context (``per_iteration`` instead where
    an iteration is something else, e.g. a token-speculation pass).  The one formula of
    an engine call both the decoder model's simulation and the audit of a run's recorded
    calls (:mod:`specmodel.call_audit`) use."""
    if not contexts:
        raise ValueError("contexts must hold at least one prefix")
    if prefilled < 0 or iterations < 0:
        raise ValueError(f"prefilled and iterations must be >= 0, got {prefilled}, "
                         f"{iterations}")
    b = len(contexts)
    per = decode.time(b, sum(contexts) / b) if per_iteration is None else per_iteration
    return CallPrice(overhead, prefill_per_token * prefilled, iterations * per)


_FIELDS = ("target_decode", "draft_decode", "prefill_per_token", "draft_prefill_per_token",
           "call_overhead", "verifier_per_pair", "verifier_per_batch",
           "token_draft_per_forward", "contention", "engine")
"""The fields every cost model names a source for."""


def _engine_source(ec: Any, m: Any, what: str) -> str:
    """The source line of a number from a calibration's ``engine_costs``."""
    return (f"measured: engine_costs of {m.model} ({ec.engine} on {ec.device}, "
            f"{ec.threads} thread(s), {len(m.points)} (b, L) cells; {what})")


def _slowdown(ec: Any, m: Any, meas: Any, key: str, what: str, out: dict[str, Any],
              src: dict[str, str], stderrs: dict[str, float]) -> None:
    """A measured slowdown beside the other model into ``out[key]`` (below 1 kept at 1),
    its source and, where known, its standard error."""
    se = "" if meas.stderr is None else f" ± {meas.stderr:.2g}"
    how = {"paired-calls": "paired calls", "beside-a-loop": "beside a loop"}
    out[key] = max(1.0, float(meas.value))
    src[key] = _engine_source(ec, m, f"{meas.value:.3g}{se}× {what} ("
                                     f"{how[ec.contention_method]}, n = {meas.n}); below 1 "
                                     "kept at 1")
    if meas.stderr:
        stderrs[key] = float(meas.stderr)


def _engine_fits(ec: Any, prefill: bool, overhead: bool, contention: bool,
                 src: dict[str, str], stderrs: dict[str, float]) -> dict[str, Any]:
    """The call costs of ``engine_costs`` that were not given explicitly (the target's
    and the draft's fits, the target's speculative calls), each with its source in
    ``src`` and its standard error, where known, in ``stderrs``."""
    out: dict[str, Any] = {}

    def fit(m: Any, name: str, key: str) -> float:
        meas = getattr(m, name)
        se = "" if meas.stderr is None else f" ± {meas.stderr:.3g}"
        src[key] = _engine_source(ec, m, f"fit {meas.value:.4g}{se} s")
        if meas.stderr:
            stderrs[key] = float(meas.stderr)
        return float(meas.value)

    roles = [(ec.target, "")] + ([(ec.draft, "draft_")] if ec.draft is not None else [])
    for m, role in roles:
        if prefill:
            out[role + "prefill_per_token"] = fit(m, "prefill_per_token",
                                                  role + "prefill_per_token")
        if overhead:
            out[role + "call_overhead"] = fit(m, "call_overhead", role + "call_overhead")
        if contention and m.concurrent_slowdown is not None:
            _slowdown(ec, m, m.concurrent_slowdown, role + "contention",
                      "slower while the other model generates", out, src, stderrs)
    t = ec.target
    if contention and t.speculative_slowdown is not None:
        _slowdown(ec, t, t.speculative_slowdown, "speculative_contention",
                  "slower (speculative step calls) while the other model generates",
                  out, src, stderrs)
    if t.speculative_passes:
        sp = sorted(t.speculative_passes.items())
        out["pass_multipliers"] = tuple((k, m.value) for k, m in sp)
        stderrs.update({f"pass_multipliers:{k}": float(m.stderr) for k, m in sp if m.stderr})
        src["pass_multipliers"] = _engine_source(
            ec, t, "a prompt-lookup pass = " + ", ".join(f"{m.value:.3g} (k2 = {k})"
                                                         for k, m in sp)
            + " decode forwards, passes replayed, counted in "
            + ("forwards timed beside them" if t.passes_counted_in == "plain-calls"
               else "the grid's T(1, L)"))
    return out


def _stat(prof: Any) -> Literal["median", "mean"]:
    """The mean forward time where the profile recorded it (what a run of forwards costs
    on average), else the median."""
    return "mean" if prof.has_means() else "median"


def _how(prof: Any) -> str:
    """How a hardware profile's times came about: ``predicted`` (the analytical cost
    model, :mod:`specmodel.hardware.predicted`) or ``measured``."""
    return "predicted" if prof is not None and prof.path == "predicted" else "measured"


def _profile(cal: Any, architecture: str | None) -> Any:
    if architecture is None:
        return None
    for p in cal.hardware or []:
        if p.architecture.name == architecture:
            return p
    return None


def _surface_of(cal: Any, architecture: str | None, role: str, src: dict[str, str],
                key: str) -> tuple[Surface, Literal["s", "T"]]:
    prof = _profile(cal, architecture)
    if prof is not None and prof.decode_surface():
        stat = _stat(prof)
        s = Surface.from_points(prof.decode_surface(statistic=stat), f"{role} T(b, L)")
        src[key] = f"{_how(prof)}: hardware profile ({prof.summary()}; {stat} times)"
        return s, "s"
    if architecture is not None:
        src[key + "_profile"] = (f"missing: no hardware profile of {architecture} in the "
                                 "calibration; using its T(b)")
    if cal.batch_cost is not None:
        pts = [(p.batch, 0, p.time) for p in cal.batch_cost.points]
        s = Surface.from_points(pts, f"{role} T(b)")
        absolute = cal.batch_cost.unit == "s/step"
        src[key] = ("measured: calibration batch_cost T(b) "
                    f"({len(pts)} widths, {cal.batch_cost.unit}); assumed: no growth with "
                    "context length")
        return s, "s" if absolute else "T"
    src[key] = "assumed: flat (the calibration has no T(b) and no hardware profile)"
    return Surface.flat(1.0), "T"
