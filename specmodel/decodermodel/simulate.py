"""A seeded Monte-Carlo that plays the decoder's own algorithms against a
:class:`~specmodel.decodermodel.costs.CostModel` and an
:class:`~specmodel.decodermodel.acceptance.AcceptanceModel`.

Each simulated problem is decoded as :mod:`profiler.decoder` decodes it, call by call,
and each call is priced by the cost model; the predicted speedup is the simulated
tokens/s over the simulated baseline's (target only, k1 = k2 = 1), with a 95 % interval.

**Baseline** (:meth:`LookaheadDecoder.plain`): one target call per step, a single prefix,
so the engine reuses its KV cache and prefills only the new tokens.

**Sync** (:func:`profiler.decoder.sync.run_sync`): each cycle drafts the tree level by
level — one draft call for the open nodes of a level (greedy), plus one sampled call of
W − 1 children per node when W > 1 — to depth ``min(k1 − 1, max_steps − committed − 1)``;
one target call expands every node as one batch (so it costs its longest member, and
with token speculation on transformers its rows run one after another); one verifier
call judges every edge; the walk commits the accepted drafts and the target's step at the
node it stopped at.  A sampled branch identical to a sibling (``duplicate_branch_rate``)
is drafted but kept once, as the decoder keeps it: no node, no target row, no verdict;
a position with w distinct children is accepted at the measured best-of-w rate.

**Async** (:class:`profiler.decoder.asynchronous.AsyncScheduler`): one draft worker and one
target worker, each running one job at a time.  The draft runs at most k1 − 1 steps
ahead; the target worker, whenever free, takes every position whose prefix is known and
has no target step, up to k1 positions ahead, as one batch — so a target step does not
start when its prefix exists (the papers' process) but when the target worker is free.
The verifier judges in order on the main thread (its time passes while the workers run);
a rejection commits the target's step, drops the chain, and jobs still running on it are
discarded when they return, their time spent; the problem ends only when both workers are
idle (leaving the worker pools waits for them).  While both workers run, each runs
``contention`` times slower.

**Async, continuous target batching** (``target_batching`` continuous,
:class:`profiler.decoder.asynchronous.ContinuousScheduler`; any ``async_schedule``): the
draft worker, the verifier and the commits as above, but the target is an engine's
running batch.  Every position whose prefix is known, up to k1 ahead, with neither a
target step nor one in flight, is submitted at once as its own step (its length, and
with token speculation its passes, drawn then).  At each forward boundary the server
drops cancelled steps, admits every step submitted since the last boundary (one prefill
forward of the new rows for their most uncached tokens, then they join, their prefixes
cached from then on — a row admitted while another runs reuses its prefix), and runs one
decode iteration of every active row at their longest context: one forward of b × 1, or
with token speculation γ drafter forwards and one of b × k2, each row advancing by its
next pass; a row whose step is written leaves and its step is delivered at once.  The
server runs on as soon as a forward ends: a step the scheduler submits in answer to
what that forward delivered (or to anything else at that instant) joins at the next
boundary — the real server takes its queue before the woken scheduler can add to it —
and an idle server starts at once on a submission.  No per-call overhead: each
forward's price is its time.  A rejection cancels the dropped chain's steps (they leave
at the next boundary; the forward in progress is spent); the problem ends when the
running draft job and the server's iteration in progress end (the steps still in the
batch are cancelled).  Contention: while the draft job and a forward run at once, each
runs its ``contention`` times slower.  ``target_batches`` and ``target_steps`` count
submitted steps.

**What the papers ignore and this models:** the draft re-prefills the target's step
after every rejection (and every call after a batched one prefills its whole prefix:
transformers reuses its KV cache only across single-prefix calls without token
speculation — so token speculation in the decoder loses the cache on every step); a batch
costs its longest step; token speculation runs one prefix at a time and on the target
only (the draft is not sped up, so c1 grows by g); the last pass of a step overshoots
its delimiter (surplus tokens discarded); problems end after ``max_steps`` steps (the
depth shrinks near the end), or earlier where a committed draft or target step ends the
answer (measured end rates); repeated draft branches; the verifier's time; per-call
overhead; the async target batches (above) and the jobs wasted on dropped chains;
correlated step verdicts (a measured lag-1 correlation ρ makes the verdicts of one
problem a two-state Markov chain with the depth's rate as marginal,
:meth:`AcceptanceModel.next_step_rate`; ρ = 0 draws them independently, exactly as
without it); easy and hard problems, and easy and hard stretches of an answer (each
judged step's rate moved by its problem's and its step index's logit offsets, where
measured), and a verdict that goes with the two steps' lengths (where measured, a
draft step far longer or shorter than the target's is rejected more often, so an
accepted one commits about the target's length); and the pattern of an answer's
consecutive step lengths (where recorded, a simulated problem takes its pairs of
lengths by step index from the measured answer of the problem whose acceptance offset
it drew: answers that alternate long lines with short ones batch and overlap
differently from steps drawn one by one).

**A sweep's own draws** (:attr:`Workload.sample`, :mod:`specmodel.decodermodel.draws`):
instead of drawing from the laws, every step length, token-speculation pass list and
verdict uniform is read from the sample at the step's position (a verdict accepts when
the uniform is below the depth's rate): the model decodes the problems a synthetic
sweep will meet, and where the schedule does not depend on timing (the target alone,
sync) it decodes them exactly as the engines do.

**Closed forms** (:func:`exact_speedup`): with i.i.d. acceptance, constant step lengths,
flat costs, a free verifier, no overhead, no contention and the papers' engine
(:meth:`EngineBehaviour.papers`: batched speculation, the draft sped up too, the async
target steps each on their own) the expected speedup of endless problems is
f_sync / f_sync_multibranch / f_async (with the ⌈1/c1⌉ knee) times g for steps of that
length (:func:`~specmodel.closedform.token_level.g_token_step`, which tends to the
papers' g as steps grow); :func:`exact_speedup` returns it with no simulation.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from specmodel.config import SpecConfig
from specmodel.decodermodel.acceptance import (
    AcceptanceModel,
    StepLengths,
    draw_indices,
    logit_shifted,
)
from specmodel.decodermodel.costs import CostModel, Forwards, Surface, call_price
from specmodel.decodermodel.draws import DrawnProblem, DrawnSample
from specmodel.montecarlo.acceptance import sample_accepted_prefix
from specmodel.montecarlo.estimate import Estimate, ratio_estimate

__all__ = ["DecoderPrediction", "Workload", "exact_speedup", "predict", "simulate"]

MODEL_NAME = "decoder model (Monte-Carlo of the decoder's schedule, priced per call)"


@dataclass(frozen=True)
class Workload:
    """What every simulated problem looks like."""

    max_steps: int
    """Steps per problem at most (the decoder's ``max_steps``); a problem ends earlier
    when a committed step ends the answer (the acceptance model's end rates)."""
    max_step_tokens: int
    """A step's token cap."""
    prompt_tokens: int = 200
    """Tokens of the prompt (the first prefill, and the context of every call)."""
    prompt_source: str = "assumed: 200 tokens (the run record does not store prompts)"
    """Where ``prompt_tokens`` came from."""
    sample: DrawnSample | None = None
    """A synthetic sweep's own draws (:class:`~specmodel.decodermodel.draws.DrawnSample`):
    simulated problem i decodes the sample's problem i mod n, its step lengths, passes
    and verdict uniforms taken from it instead of drawn (None: drawn from the laws).
    Needs an engine with prefix caching at step boundaries (the synthetic engine's) and
    one branch per position."""

    @classmethod
    def of(cls, config: SpecConfig, prompt_tokens: int | None = None,
           sample: DrawnSample | None = None) -> Workload:
        """The configuration's limits, with the prompt length if known (and the sweep's
        own draws, if given)."""
        if prompt_tokens is None:
            return cls(config.max_steps, config.max_step_tokens, sample=sample)
        return cls(config.max_steps, config.max_step_tokens, int(prompt_tokens),
                   f"given: {int(prompt_tokens)} tokens", sample)


# ---------------------------------------------------------------------------------------
# Engines


class _Segments:
    """Token counts of the text segments prefixes are made of (0 is the prompt)."""

    def __init__(self, prompt_tokens: int) -> None:
        self.tokens = [int(prompt_tokens)]
        self._lengths: dict[tuple[int, ...], int] = {}
        """Prefix -> its token count (a segment's count never changes once made)."""

    def new(self, tokens: int) -> int:
        self.tokens.append(int(tokens))
        return len(self.tokens) - 1

    def reset(self) -> None:
        """Back to the prompt alone (a new problem: segment numbers are reused)."""
        del self.tokens[1:]
        self._lengths.clear()

    def length(self, prefix: Sequence[int]) -> int:
        key = tuple(prefix)
        got = self._lengths.get(key)
        if got is None:
            tokens = self.tokens
            got = self._lengths[key] = sum(tokens[i] for i in key)
        return got


class _PairedLengths:
    """Target and draft step lengths drawn together per prefix, from the measured joint
    distribution: the first target call and the first draft call on one prefix get the
    two lengths of one measured pair (a long target step goes with a long draft step);
    any further call of a role on that prefix (a sampled sibling) draws a fresh pair's.
    With the problem's measured ``answer`` (:attr:`AcceptanceModel.step_length_answers`)
    the pair of a prefix at step index i is the answer's i-th, while it has one."""

    def __init__(self, pairs: Sequence[tuple[int, int, float]], rng: np.random.Generator,
                 cap: int) -> None:
        self.t = np.clip(np.asarray([p[0] for p in pairs], dtype=np.int64), 1, cap)
        self.d = np.clip(np.asarray([p[1] for p in pairs], dtype=np.int64), 1, cap)
        w = np.asarray([p[2] for p in pairs], dtype=np.float64)
        self.cum = np.cumsum(w / w.sum())
        self.rng = rng
        self.memo: dict[tuple[int, ...], list[int | None]] = {}
        self._idx: list[int] = []
        self.cap = cap
        self.answer: tuple[tuple[int, int], ...] | None = None
        """The problem's measured answer, by step index (None: every pair drawn)."""

    def _draw(self) -> int:
        if not self._idx:
            self._idx = draw_indices(self.rng, self.cum, 4096).tolist()
        return self._idx.pop()

    def length(self, prefix: tuple[int, ...], role: int) -> int:
        """The step length of ``role`` (0: target, 1: draft) from ``prefix``."""
        slot = self.memo.get(prefix)
        if slot is None:
            pos = len(prefix) - 1
            if self.answer is not None and pos < len(self.answer):
                slot = [min(max(n, 1), self.cap) for n in self.answer[pos]]
            else:
                i = self._draw()
                slot = [int(self.t[i]), int(self.d[i])]
            self.memo[prefix] = slot
        n = slot[role]
        if n is None:
            i = self._draw()
            return int((self.t, self.d)[role][i])
        slot[role] = None
        return n


class _Engine:
    """One engine: prices a call of b prefixes and keeps its single-prefix KV cache."""

    def __init__(self, decode: Surface, prefill: float, costs: CostModel,
                 lengths: StepLengths, k2: int, acc: AcceptanceModel, segs: _Segments,
                 cap: int, rng: np.random.Generator, forwards: Forwards | None = None,
                 drafter: Surface | None = None, *, overhead: float,
                 pass_multiplier: float | None = None) -> None:
        self.decode = decode
        self.pass_multiplier = pass_multiplier
        """A token-speculation pass in decode forwards T(1, L), measured (None: c2)."""
        self.overhead = overhead
        """This engine's fixed time per call (:meth:`CostModel.role_costs`)."""
        self.forwards = forwards
        self.drafter = drafter
        self.known: set[tuple[int, ...]] = set()
        self._memo: dict[tuple[int, int, int], float] = {}
        self._iter_memo: dict[tuple[int, int], float] = {}
        self.prefill = prefill
        self.costs = costs
        self.lengths = lengths
        self.k2 = k2
        self.profile = acc.token_profile(k2=k2)
        self.segs = segs
        self.cap = cap
        self.rng = rng
        self.cache: tuple[int, ...] | None = None
        self._lengths: list[int] = []
        self._emitted: list[int] = []
        self.paired: tuple[_PairedLengths, int] | None = None
        """Joint step lengths and this engine's role in them (None: drawn alone)."""
        self.role = 0
        """0: the target, 1: the draft (which of a drawn problem's tables is this one's)."""
        self.drawn: DrawnProblem | None = None
        """The problem's own draws, when the workload has a sample (None: drawn)."""
        self.calls = 0
        self.rows = 0
        self.seconds = 0.0
        self.iterations: dict[int, int] = {}
        """Decode iterations (one forward, or one token-speculation pass) by the rows
        they ran, on an engine with prefix caching at step boundaries (the synthetic
        engine's): a running batch's or a call's."""

    def step_lengths(self, prefixes: Sequence[tuple[int, ...]]) -> list[int]:
        """The lengths of the steps written from ``prefixes``: the problem's own draws at
        each prefix's position, else a measured pair's, else drawn alone."""
        if self.drawn is not None:
            return [self.drawn.length(self.role, len(p) - 1) for p in prefixes]
        if self.paired is not None:
            joint, role = self.paired
            return [joint.length(p, role) for p in prefixes]
        return self._lengths_of(len(prefixes))

    def _lengths_of(self, b: int) -> list[int]:
        """``b`` step lengths (drawn in blocks: one numpy call per 4096)."""
        if len(self._lengths) < b:
            self._lengths.extend(self.lengths.sample(self.rng, max(4096, b),
                                                     self.cap).tolist())
        out = self._lengths[-b:]
        del self._lengths[-b:]
        return out

    def _new_tokens(self, prefix: tuple[int, ...]) -> int:
        total = self.segs.length(prefix)
        if self.cache is None:
            return total
        common = 0
        for a, b in zip(prefix, self.cache, strict=False):
            if a != b:
                break
            common += 1
        if common == 0:
            return total
        return max(1, total - self.segs.length(prefix[:common]))

    def _passes(self, n: int) -> int:
        """Token-speculation passes to write ``n`` tokens (the last one overshoots)."""
        passes = got = 0
        buf = self._emitted
        while got < n:
            if not buf:
                buf.extend((sample_accepted_prefix(self.rng, self.profile, self.k2 - 1,
                                                   4096) + 1).tolist())
            got += buf.pop()
            passes += 1
        return passes

    def _pass_cost(self, b: int, L: float) -> float:
        if self.pass_multiplier is not None:
            return (self.pass_multiplier - 1) * self.decode.time(1, L) + self.decode.time(b, L)
        return (self.costs.token_draft_per_forward * (self.k2 - 1) * self.decode.time(1, L)
                + self.decode.time(b, L))

    # -- the synthetic engine's calls (EngineBehaviour.step_cache) ---------------------

    def _bucket(self, L: int) -> int:
        g = self.costs.engine.context_bucket
        return -(-L // g) * g if g > 0 else L

    def _fwd(self, b: int, q: int, L: int) -> float:
        """One forward of b × q at bucketed context L (q = 0: the token drafter's decode)."""
        key = (b, q, L)
        t = self._memo.get(key)
        if t is None:
            if q == 1:
                t = self.decode.time(b, L)
            elif q == 0:
                t = 0.0 if self.drafter is None else self.drafter.time(b, L)
            elif self.forwards is not None:
                t = self.forwards.time(b, q, L)
            else:  # no measured forwards: the c2 price of a pass, less its decode
                t = self.decode.time(b, L) + self.costs.token_draft_per_forward * (
                    q - 1) * self.decode.time(1, L)
            self._memo[key] = t
        return t

    def _uncached(self, prefix: tuple[int, ...]) -> int:
        for cut in range(len(prefix), 0, -1):
            if prefix[:cut] in self.known:
                return self.segs.length(prefix) - self.segs.length(prefix[:cut])
        return self.segs.length(prefix)

    def _pass_list(self, n: int, prefix: tuple[int, ...] | None = None) -> list[int]:
        """Tokens each token-speculation pass writes for a step of ``n`` (the last one
        capped at the step's end) from ``prefix``: the problem's own draws at its
        position, else drawn."""
        if self.drawn is not None and prefix is not None:
            return list(self.drawn.passes(self.role, len(prefix) - 1, self.k2 - 1))
        out: list[int] = []
        done = 0
        buf = self._emitted
        while done < n:
            if not buf:
                buf.extend((sample_accepted_prefix(self.rng, self.profile, self.k2 - 1,
                                                   4096) + 1).tolist())
            a = buf.pop()
            out.append(min(a, n - done))
            done += a
        return out

    def _prefill_time(self, prefixes: Sequence[tuple[int, ...]], base: int) -> float:
        """The synthetic engine's prefill before ``prefixes`` (longest ``base`` tokens)
        join: one forward of them × their most uncached tokens rounded up to a power of
        two (``one_forward``), or ``prefill_per_token`` per token of the padded rows."""
        how = self.costs.engine.prefill
        if how == "none":
            return 0.0
        todo = max(self._uncached(p) for p in prefixes)
        if todo <= 0:
            return 0.0
        if how == "one_forward":
            return self._fwd(len(prefixes), 1 << (todo - 1).bit_length(),
                             self._bucket(base - todo))
        return self.prefill * len(prefixes) * todo

    def _iteration(self, b: int, L: int) -> float:
        """One decode iteration of a continuous batch of ``b`` rows whose longest context
        is ``L`` (unbucketed): one forward of b × 1 at the bucketed L, or, with token
        speculation, γ drafter forwards at L + s and one verification forward of b × k2
        (the synthetic engine's pass)."""
        self.iterations[b] = self.iterations.get(b, 0) + 1
        key = (b, L)
        t = self._iter_memo.get(key)
        if t is None:
            if self.k2 > 1:
                t = sum(self._fwd(b, 0, self._bucket(L + s)) for s in range(self.k2 - 1))
                t += self._fwd(b, self.k2, self._bucket(L))
            else:
                t = self._fwd(b, 1, self._bucket(L))
            self._iter_memo[key] = t
        return t

    def _call_steps(self, prefixes: list[tuple[int, ...]], n: list[int],
                    outs: list[tuple[int, int]]) -> float:
        """A call on an engine with prefix caching at step boundaries (the synthetic
        engine): prefill the most uncached tokens, then the padded batch's forwards."""
        b = len(prefixes)
        base = max(self.segs.length(p) for p in prefixes)
        t = self.overhead + self._prefill_time(prefixes, base)
        if self.k2 > 1:
            plans = [self._pass_list(int(k), p) for k, p in zip(n, prefixes, strict=True)]
            done = [0] * b
            for j in range(max(len(p) for p in plans)):
                t += self._iteration(b, base + max(done))
                for i, p in enumerate(plans):
                    if j < len(p):
                        done[i] += p[j]
        else:
            for s in range(int(max(n))):
                t += self._iteration(b, base + s)
        for p, (seg, _) in zip(prefixes, outs, strict=True):
            self.known.add(p)
            self.known.add((*p, seg))
        return t

    def call(self, prefixes: list[tuple[int, ...]]) -> tuple[float, list[tuple[int, int]]]:
        """(seconds, [(segment, tokens)]) of one generate_steps call."""
        b = len(prefixes)
        self.calls += 1
        self.rows += b
        n = self.step_lengths(prefixes)
        outs = [(self.segs.new(t), t) for t in n]
        eng = self.costs.engine
        if eng.step_cache:
            t = self._call_steps(prefixes, n, outs)
            self.seconds += t
            return t, outs
        ctx = [self.segs.length(p) for p in prefixes]
        over = self.overhead
        spec = self.k2 > 1
        if spec and not eng.speculation_batched:  # one prefix after another, no KV reuse
            t = sum(call_price(self.decode, self.prefill, over, [c], c, self._passes(int(k)),
                               per_iteration=self._pass_cost(1, c)).total
                    for c, k in zip(ctx, n, strict=True))
            self.seconds += t
            return t, outs
        if b == 1 and not spec and eng.prefix_cache:
            prefilled = self._new_tokens(prefixes[0])
            self.cache = (*prefixes[0], outs[0][0])
        else:
            prefilled = b * max(ctx)
        units = [self._passes(int(k)) for k in n] if spec else [int(k) for k in n]
        agg = max(units) if eng.batch_time == "longest" else sum(units) / b
        t = call_price(self.decode, self.prefill, over, ctx, prefilled, agg,
                       per_iteration=self._pass_cost(b, sum(ctx) / b) if spec else None
                       ).total
        self.seconds += t
        return t, outs


class _Request:
    """One target step in a continuous batch (:class:`_Server`)."""

    __slots__ = ("cancelled", "ctx", "cum", "end", "epoch", "n", "pos", "prefix", "seg",
                 "start")

    def __init__(self, epoch: int, pos: int, prefix: tuple[int, ...], ctx: int, n: int,
                 seg: int, cum: list[int] | None) -> None:
        self.epoch = epoch
        self.pos = pos
        self.prefix = prefix
        self.ctx = ctx
        """Prefix tokens."""
        self.n = n
        self.seg = seg
        self.cum = cum
        """With token speculation: the tokens written after each pass, from 0 (None: one
        token per iteration)."""
        self.start = 0
        """The server's iteration count when it joined the batch."""
        self.end = 0
        """The iteration count at which its step is written."""
        self.cancelled = False


class _Server:
    """The target engine's running batch, served continuously (async with
    ``target_batching`` continuous; the synthetic engine's ``ContinuousServer``).

    At each iteration boundary it drops cancelled steps, admits every step submitted
    since the last boundary (one prefill forward of the new rows for their most uncached
    tokens, priced as a call's), then runs one decode iteration of every active row
    (:meth:`_Engine._iteration`, at the rows' longest context); a row whose step is
    written then leaves, its step delivered unless cancelled.  The prefill and the
    decode after it are one iteration: the boundary before it is the last point where a
    row joins or leaves.  No per-call overhead: each forward's price is its time.
    """

    def __init__(self, eng: _Engine) -> None:
        self.eng = eng
        self.k = 0
        """Decode iterations run."""
        self.active: list[_Request] = []
        self.pending: list[_Request] = []
        self.left = 0.0
        """Seconds left of the iteration in progress (uncontended)."""
        self.busy = False
        """Whether an iteration is in progress."""
        self.delivered: list[_Request] = []
        """Steps written and not cancelled, not yet taken by the scheduler."""
        self._dirty = False
        self._off = 0
        """Without token speculation: max(ctx − start) over the active rows, so the
        longest context of iteration k is ``_off + k``."""

    def submit(self, epoch: int, pos: int, prefix: tuple[int, ...]) -> _Request:
        """A step from ``prefix``, its length (and passes) drawn now as a call draws them;
        it joins the batch at the next boundary."""
        eng = self.eng
        eng.calls += 1
        eng.rows += 1
        n = int(eng.step_lengths([prefix])[0])
        seg = eng.segs.new(n)
        cum = None
        if eng.k2 > 1:
            cum = [0]
            for a in eng._pass_list(n, prefix):
                cum.append(cum[-1] + a)
        req = _Request(epoch, pos, prefix, eng.segs.length(prefix), n, seg, cum)
        self.pending.append(req)
        return req

    def cancel(self, req: _Request) -> None:
        """Drop ``req``: it leaves the batch at the next boundary."""
        req.cancelled = True
        self._dirty = True

    def kick(self) -> None:
        """An idle server starts at once on what was submitted."""
        if not self.busy and self.pending:
            self._boundary()

    def finish(self) -> bool:
        """The iteration in progress ends: every row advances, written rows leave; then
        the next boundary.  Whether a step was delivered."""
        self.busy = False
        self.left = 0.0
        self.k += 1
        k = self.k
        got = False
        if any(r.end == k for r in self.active):
            known = self.eng.known
            keep = []
            for r in self.active:
                if r.end == k:
                    known.add((*r.prefix, r.seg))
                    if not r.cancelled:
                        self.delivered.append(r)
                        got = True
                else:
                    keep.append(r)
            self.active = keep
            self._off = max((r.ctx - r.start for r in keep), default=0)
        self._boundary()
        return got

    def _boundary(self) -> None:
        """Drop cancelled rows, admit the submitted ones, start one iteration (or idle)."""
        eng = self.eng
        if self._dirty:
            self._dirty = False
            self.active = [r for r in self.active if not r.cancelled]
            self.pending = [r for r in self.pending if not r.cancelled]
            self._off = max((r.ctx - r.start for r in self.active), default=0)
        t = 0.0
        if self.pending:
            new, self.pending = self.pending, []
            t += eng._prefill_time([r.prefix for r in new], max(r.ctx for r in new))
            k = self.k
            for r in new:
                eng.known.add(r.prefix)  # its KV exists from now on (prefix caching)
                r.start = k
                r.end = k + (r.n if r.cum is None else len(r.cum) - 1)
                self._off = max(self._off, r.ctx - k) if self.active else r.ctx - k
                self.active.append(r)
        if not self.active:
            return
        if eng.k2 > 1:
            k = self.k
            L = max(r.ctx + (r.cum or (0,))[k - r.start] for r in self.active)
        else:
            L = self._off + self.k
        t += eng._iteration(len(self.active), L)
        eng.seconds += t
        self.left = t
        self.busy = True


class _AsyncChain:
    """What both async schedules keep and do alike (:meth:`_Run.async_decoder`,
    :meth:`_Run.async_continuous`; as :class:`profiler.decoder.asynchronous.AsyncScheduler`
    serves both target batchings): the committed steps, the chain of drafts after them,
    the target steps known ahead, and judging and committing in order."""

    def __init__(self, run: _Run) -> None:
        self.run = run
        self.k1 = run.cfg.k1
        self.max_steps = run.work.max_steps
        self.committed: tuple[int, ...] = (0,)
        self.steps = 0
        self.tokens = 0
        self.chain: list[tuple[int, int, bool]] = []
        """(segment, tokens, ends the answer) of each draft step after the committed."""
        self.targets: dict[int, tuple[int, int]] = {}
        """Absolute position -> the target's (segment, tokens) there, known ahead."""
        self.epoch = 0
        """Counts dropped chains; a job of an older epoch is discarded."""
        self.streak = 0
        """Drafts accepted in a row (the depth the next verdict is drawn at)."""
        self.ended = False

    @property
    def done(self) -> bool:
        """The answer ended or ``max_steps`` are committed."""
        return self.ended or self.steps >= self.max_steps

    def prefix_at(self, pos: int) -> tuple[int, ...]:
        """The committed prefix plus the drafts before position ``pos``."""
        return (*self.committed, *(s for s, _, _ in self.chain[: pos - self.steps]))

    def _closed(self) -> bool:
        return bool(self.chain) and self.chain[-1][2]

    def draft_from(self) -> tuple[int, ...] | None:
        """The prefix the next draft step continues, when the chain may grow."""
        room = self.max_steps - self.steps
        if not self._closed() and len(self.chain) < min(self.k1 - 1, room - 1):
            return self.prefix_at(self.steps + len(self.chain))
        return None

    def target_positions(self) -> list[int]:
        """Positions whose prefix is known, up to k1 ahead, with no target step yet."""
        base = self.steps
        last = base + len(self.chain) - (1 if self._closed() else 0)
        return [q for q in range(base, min(last, base + self.k1 - 1) + 1)
                if q not in self.targets]

    def resolve(self, spend: Any, draft_epoch: int | None) -> bool:
        """Judge and commit positions in order while their target step is known;
        ``spend(seconds)`` lets the verifier's time pass while the others run;
        ``draft_epoch``: the epoch of the draft job on its way (None: none).  Whether a
        chain was dropped."""
        run = self.run
        dropped = False
        while self.steps in self.targets:
            pos = self.steps
            t_out = self.targets.pop(pos)
            if self.chain:
                spend(run.verify(1))
                if run.judge(self.streak, index=pos, lengths=(t_out[1], self.chain[0][1])):
                    seg, n, ends = self.chain.pop(0)
                    self.committed = (*self.committed, seg)
                    self.tokens += n
                    self.steps += 1
                    self.streak += 1
                    if ends:  # an accepted draft that ends the answer ends it
                        self.ended = True
                        return dropped
                    continue
                self.chain.clear()
                self.targets.clear()
                self.epoch += 1
                dropped = True
            elif self.k1 > 1 and draft_epoch == self.epoch:
                self.targets[pos] = t_out  # its draft is on the way: wait for it
                break
            self.committed = (*self.committed, t_out[0])
            self.tokens += t_out[1]
            self.steps += 1
            self.streak = 0
            if run.target_ends():
                self.ended = True
                break
        return dropped


@dataclass
class _Run:
    cfg: SpecConfig
    acc: AcceptanceModel
    costs: CostModel
    work: Workload
    rng: np.random.Generator
    segs: _Segments = field(init=False)
    target: _Engine = field(init=False)
    draft: _Engine = field(init=False)
    paired: _PairedLengths | None = field(init=False)

    def __post_init__(self) -> None:
        self.segs = _Segments(self.work.prompt_tokens)
        k2 = self.cfg.k2
        cap = self.work.max_step_tokens
        decode, prefill, over = self.costs.role_costs("target")
        self.target = _Engine(decode, prefill, self.costs, self.acc.target_steps, k2,
                              self.acc, self.segs, cap, self.rng, self.costs.target_forwards,
                              self.costs.token_drafter_decode, overhead=over,
                              pass_multiplier=self.costs.pass_multiplier(k2))
        dk2 = k2 if self.costs.engine.draft_token_speculation else 1
        decode, prefill, over = self.costs.role_costs("draft")
        self.draft = _Engine(decode, prefill, self.costs, self.acc.draft_steps, dk2,
                             self.acc, self.segs, cap, self.rng, self.costs.draft_forwards,
                             overhead=over)
        self.draft.role = 1
        self.paired = None
        sample = self.work.sample
        if sample is not None:
            if not self.costs.engine.step_cache:
                raise ValueError("a workload's sample needs an engine with prefix caching "
                                 "at step boundaries (EngineBehaviour.synthetic)")
            if self.cfg.width > 1:
                raise ValueError(f"a workload's sample draws one branch per position; "
                                 f"width must be 1, got {self.cfg.width}")
            sample.covers(self.work.max_steps, self.work.max_steps,
                          (k2 - 1 if k2 > 1 else 0, dk2 - 1 if dk2 > 1 else 0))
        if self.acc.step_length_pairs:
            self.paired = _PairedLengths(self.acc.step_length_pairs, self.rng, cap)
            self.target.paired = (self.paired, 0)
            self.draft.paired = (self.paired, 1)

    shift: float = field(init=False, default=0.0)
    """This problem's logit offset of step acceptance (drawn per problem from
    :attr:`AcceptanceModel.problem_spread`; 0 without one)."""
    judged: int = field(init=False, default=0)
    accepted: int = field(init=False, default=0)
    verify_seconds: float = field(init=False, default=0.0)
    last_verdict: bool | None = field(init=False, default=None)
    solved: int = field(init=False, default=0)
    """Problems begun (which of a sample's problems the next one decodes)."""

    def judge(self, depth: int, width: int = 1, tree: bool = False,
              index: int | None = None, lengths: tuple[int, int] | None = None) -> bool:
        """One position's verdict (counted as the decoder's tally counts it): the best of
        ``width`` distinct children, drafted as a tree of several branches when ``tree``
        (:meth:`AcceptanceModel.step_rate`), at step ``index`` of the answer (its rate
        moved by the problem's offset and the index's,
        :meth:`AcceptanceModel.index_offset`, and, for a position drafted with one
        branch, by the offset of its (target, draft) ``lengths``,
        :meth:`AcceptanceModel.length_offset`).  With a
        verdict correlation ρ ≠ 0 the verdicts of one problem are a Markov chain
        (:meth:`AcceptanceModel.next_step_rate`); with ρ = 0 they are independent draws
        (the same single uniform per verdict either way)."""
        self.judged += 1
        shift = self.shift + self.acc.index_offset(index)
        if not tree and width == 1:
            shift += self.acc.length_offset(lengths)
        rate = logit_shifted(self.acc.step_rate(depth, width, tree), shift)
        if self.acc.verdict_correlation != 0:
            rate = self.acc.next_step_rate(rate, self.last_verdict)
        drawn = self.target.drawn
        u = (self.rng.random() if drawn is None or index is None or width > 1
             else drawn.uniform(index, depth))
        ok = bool(u < rate)
        self.last_verdict = ok
        self.accepted += ok
        return ok

    def draft_ends(self) -> bool:
        """Whether a new draft step ends the answer (no draw when the rate is 0, so the
        random stream is the same as without the rate)."""
        return self._draw(self.acc.draft_end_rate)

    def target_ends(self) -> bool:
        """Whether a committed target step ends the answer (no draw at rate 0)."""
        return self._draw(self.acc.target_end_rate)

    def duplicate(self) -> bool:
        """Whether a sampled draft branch repeats an earlier sibling (no draw at rate 0)."""
        return self._draw(self.acc.duplicate_branch_rate)

    def _draw(self, p: float) -> bool:
        return p > 0 and bool(self.rng.random() < p)

    def counters(self) -> dict[str, float]:
        out = {"target_batches": self.target.calls, "target_steps": self.target.rows,
               "draft_steps": self.draft.rows, "drafted_steps": self.judged,
               "accepted_steps": self.accepted, "target_seconds": self.target.seconds,
               "draft_seconds": self.draft.seconds, "verify_seconds": self.verify_seconds}
        for role, eng in (("target", self.target), ("draft", self.draft)):
            for b, n in sorted(eng.iterations.items()):
                out[f"{role}_iterations_b{b}"] = n
        return out

    def verify(self, pairs: int) -> float:
        t = self.costs.verifier_per_batch + self.costs.verifier_per_pair * pairs
        self.verify_seconds += t
        return t

    # -- one problem: (tokens, seconds) --------------------------------------------

    def problem(self) -> tuple[int, float]:
        sample = self.work.sample
        if sample is not None:
            drawn = sample.problems[self.solved % len(sample)]
            self.target.drawn = self.draft.drawn = drawn
        self.solved += 1
        self.segs.reset()
        self.target.cache = self.draft.cache = None
        self.target.known.clear()
        self.draft.known.clear()
        self.last_verdict = None  # verdicts are correlated within a problem only
        spread = self.acc.problem_spread
        answers = self.acc.step_length_answers if self.paired is not None else None
        which = None  # the calibration problem this one is drawn as
        if spread:  # one draw per problem, only when the spread is measured
            cum = np.cumsum([w for _, w in spread])
            which = int(draw_indices(self.rng, cum, 1)[0])
            self.shift = spread[which][0]
        elif answers:
            which = int(draw_indices(self.rng, np.cumsum([len(a) for a in answers]), 1)[0])
        tspread = self.acc.token_problem_spread
        if tspread:  # this problem's token acceptance: its own profile, fresh draws
            cum = np.cumsum([w for _, w in tspread])
            shift = tspread[int(draw_indices(self.rng, cum, 1)[0])][0]
            for eng in (self.target, self.draft):
                eng.profile = self.acc.token_profile(shift, k2=eng.k2)
                eng._emitted.clear()
        if self.paired is not None:
            self.paired.memo.clear()
            self.paired.answer = None if answers is None or which is None else answers[which]
        if self.cfg.k1 == 1:
            return self.plain()
        if self.cfg.mode == "sync":
            return self.sync()
        if self.cfg.target_batching == "continuous":
            return self.async_continuous()
        if self.costs.engine.async_schedule == "paper":
            return self.async_paper()
        return self.async_decoder()

    def plain(self) -> tuple[int, float]:
        prefix: tuple[int, ...] = (0,)
        t, tokens = 0.0, 0
        for _ in range(self.work.max_steps):
            dt, ((seg, n),) = self.target.call([prefix])
            t += dt
            tokens += n
            prefix = (*prefix, seg)
            if self.target_ends():
                break
        return tokens, t

    def sync(self) -> tuple[int, float]:
        cfg = self.cfg
        w = cfg.width
        prefix: tuple[int, ...] = (0,)
        t, tokens, steps = 0.0, 0, 0
        while steps < self.work.max_steps:
            depth = min(cfg.k1 - 1, self.work.max_steps - steps - 1)
            nodes: list[tuple[int, int, tuple[int, ...]]] = [(-1, 0, prefix)]  # parent, tok
            closed: set[int] = set()  # draft nodes that end the answer
            level = [0]
            for _ in range(depth):
                level = [i for i in level if i not in closed]
                if not level:
                    break
                kids: dict[int, list[tuple[int, int]]] = {i: [] for i in level}
                if w > 1 and self.costs.engine.branches_one_call:
                    reps = [i for i in level for _ in range(w)]
                    dt, outs = self.draft.call([nodes[i][2] for i in reps])
                    t += dt
                    for i, o in zip(reps, outs, strict=True):
                        kids[i].append(o)
                else:
                    dt, outs = self.draft.call([nodes[i][2] for i in level])
                    t += dt
                    for i, o in zip(level, outs, strict=True):
                        kids[i].append(o)
                if w > 1 and not self.costs.engine.branches_one_call:
                    reps = [i for i in level for _ in range(w - 1)]
                    dt, outs = self.draft.call([nodes[i][2] for i in reps])
                    t += dt
                    for i, o in zip(reps, outs, strict=True):
                        kids[i].append(o)
                if w > 1:  # a sampled branch that repeats a sibling is kept once
                    kids = {i: [ks[0], *(k for k in ks[1:] if not self.duplicate())]
                            for i, ks in kids.items()}
                new = []
                for i in level:
                    for seg, n in kids[i]:
                        nodes.append((i, n, (*nodes[i][2], seg)))
                        new.append(len(nodes) - 1)
                        if self.draft_ends():
                            closed.add(new[-1])
                level = new
            expand = [i for i in range(len(nodes)) if i not in closed]
            dt, outs = self.target.call([nodes[i][2] for i in expand])
            touts = dict(zip(expand, outs, strict=True))
            t += dt
            if len(nodes) > 1:
                t += self.verify(len(nodes) - 1)
            node = 0
            for j in range(depth):
                children = [i for i in range(node + 1, len(nodes)) if nodes[i][0] == node]
                pair = (touts[node][1], nodes[children[0]][1]) if children else None
                if not self.judge(j, len(children), w > 1, steps, pair):
                    break
                node = children[0]
                prefix = nodes[node][2]
                tokens += nodes[node][1]
                steps += 1
                if node in closed:  # an accepted draft that ends the answer ends it
                    return tokens, t
            seg, n = touts[node]
            prefix = (*prefix, seg)
            tokens += n
            steps += 1
            if self.target_ends():
                break
        return tokens, t

    def async_paper(self) -> tuple[int, float]:
        """The papers' process: target step j starts when draft j − 1 exists, up to k1 in
        flight, each on its own; a stage ends at the first rejection."""
        k1 = self.cfg.k1
        prefix: tuple[int, ...] = (0,)
        t, tokens, steps = 0.0, 0, 0
        while steps < self.work.max_steps:
            room = self.work.max_steps - steps
            in_flight: list[float] = []
            draft_free = verified = 0.0
            p = prefix
            depth = 0
            while True:
                start = draft_free
                while len(in_flight) >= k1:
                    start = max(start, heapq.heappop(in_flight))
                while in_flight and in_flight[0] <= start:
                    heapq.heappop(in_flight)
                dd, ((dseg, dn),) = self.draft.call([p])
                dt, ((tseg, tn),) = self.target.call([p])
                heapq.heappush(in_flight, start + dt)
                draft_free = start + dd
                verified = max(verified, start + dt, start + dd)
                last = depth == room - 1
                if last or not self.judge(depth, index=steps + depth, lengths=(tn, dn)):
                    prefix = (*p, tseg)
                    tokens += tn
                    steps += depth + 1
                    if self.target_ends():
                        steps = self.work.max_steps
                    break
                p = (*p, dseg)
                tokens += dn
                depth += 1
            t += verified
        return tokens, t

    def _slowdowns(self) -> tuple[float, float]:
        """(target's, draft's) slowdown while both run (async)."""
        c = self.costs
        t_slow = (c.speculative_contention
                  if self.cfg.k2 > 1 and c.speculative_contention is not None
                  else c.contention)
        return t_slow, (t_slow if c.draft_contention is None else c.draft_contention)

    def async_decoder(self) -> tuple[int, float]:
        """The decoder's scheduler (see the module docstring)."""
        st = _AsyncChain(self)
        now = 0.0
        # jobs: [epoch, remaining seconds, payload]
        djob: list[Any] | None = None
        tjob: list[Any] | None = None
        t_slow, d_slow = self._slowdowns()

        def live_jobs() -> list[tuple[list[Any], float]]:
            live = [(j, f) for j, f in ((djob, d_slow), (tjob, t_slow))
                    if j is not None and j[1] > 0]
            return live if len(live) == 2 else [(j, 1.0) for j, _ in live]

        def advance(dt: float) -> None:
            while dt > 1e-15:
                live = live_jobs()
                if not live:
                    return
                step = min(dt, min(j[1] * f for j, f in live))
                for j, f in live:
                    j[1] -= step / f
                dt -= step
                if dt <= 1e-15:
                    return

        def next_done() -> float:
            live = live_jobs()
            if not live:
                return 0.0
            return min(j[1] * f for j, f in live)

        def spend(v: float) -> None:  # the verifier, on the main thread
            nonlocal now
            advance(v)
            now += v

        while True:
            # _submit
            if djob is None and (p := st.draft_from()) is not None:
                dt, (out,) = self.draft.call([p])
                djob = [st.epoch, dt, (*out, self.draft_ends())]
            if tjob is None:
                todo = st.target_positions()
                if todo:
                    dt, outs = self.target.call([st.prefix_at(q) for q in todo])
                    tjob = [st.epoch, dt, (todo, outs)]
            # wait for the first job to finish
            dt = next_done()
            advance(dt)
            now += dt
            # _collect
            if djob is not None and djob[1] <= 1e-12:
                if djob[0] == st.epoch:
                    st.chain.append(djob[2])
                djob = None
            if tjob is not None and tjob[1] <= 1e-12:
                if tjob[0] == st.epoch:
                    st.targets.update(zip(*tjob[2], strict=True))
                tjob = None
            st.resolve(spend, None if djob is None else djob[0])
            if st.done:
                rest = next_done()  # leaving the pools waits for running jobs
                while rest > 0:
                    advance(rest)
                    now += rest
                    for j in (djob, tjob):
                        if j is not None and j[1] <= 1e-12:
                            j[1] = 0.0
                    rest = next_done()
                return st.tokens, now

    def async_continuous(self) -> tuple[int, float]:
        """The decoder's scheduler with the target's steps batched continuously (see the
        module docstring): the draft worker, judging and committing as
        :meth:`async_decoder` (:class:`_AsyncChain`); each position whose prefix is known
        gets its own step in the target's running batch (:class:`_Server`)."""
        st = _AsyncChain(self)
        in_flight: dict[int, _Request] = {}
        now = 0.0
        srv = _Server(self.target)
        djob: list[Any] | None = None  # [epoch, remaining seconds, payload]
        t_slow, d_slow = self._slowdowns()
        inf = math.inf

        def go(limit: float, stop: bool) -> float:
            """Run the draft job and the server for ``limit`` seconds, or, with ``stop``,
            until the draft job ends or the server delivers a step; the seconds that
            passed while something ran."""
            passed = 0.0
            rest = limit
            job: list[Any] = djob if djob is not None else [0, 0.0]
            while True:
                d_on = job[1] > 0
                s_on = srv.busy
                if not (d_on or s_on):
                    return passed
                both = d_on and s_on
                fd = d_slow if both else 1.0
                fs = t_slow if both else 1.0
                td = job[1] * fd if d_on else inf
                ts = srv.left * fs if s_on else inf
                step = min(td, ts, rest)
                passed += step
                rest = 0.0 if step >= rest else rest - step
                event = False
                if d_on:
                    if td <= step + 1e-12:
                        job[1] = 0.0
                        event = True
                    else:
                        job[1] -= step / fd
                if s_on:
                    if ts <= step + 1e-12:
                        event = srv.finish() or event
                    else:
                        srv.left -= step / fs
                if (stop and event) or rest <= 0:
                    return passed

        def spend(v: float) -> None:  # the verifier, on the main thread, while others run
            nonlocal now
            go(v, False)
            now += v

        while True:
            # submit: the draft job as async_decoder; a step for every known position
            if djob is None and (p := st.draft_from()) is not None:
                dt, (out,) = self.draft.call([p])
                djob = [st.epoch, dt, (*out, self.draft_ends())]
            for q in st.target_positions():
                if q not in in_flight:
                    in_flight[q] = srv.submit(st.epoch, q, st.prefix_at(q))
            srv.kick()
            # (a step delivered or a draft ended while the verifier ran is collected
            # below without waiting)
            if not srv.busy and djob is None and not srv.delivered:
                raise RuntimeError("continuous async stalled: nothing runs")  # a bug
            # wait for the draft job or a delivered step
            now += go(inf, True)
            # collect
            if djob is not None and djob[1] <= 0:
                if djob[0] == st.epoch:
                    st.chain.append(djob[2])
                djob = None
            for r in srv.delivered:
                if r.epoch == st.epoch:
                    st.targets[r.pos] = (r.seg, r.n)
                    del in_flight[r.pos]
            srv.delivered.clear()
            if st.resolve(spend, None if djob is None else djob[0]):
                for r in in_flight.values():  # a dropped chain: they leave at the next
                    srv.cancel(r)              # boundary
                in_flight.clear()
            if st.done:
                # the steps still in the batch are cancelled; leaving waits for the
                # running draft job and the server's iteration in progress
                for r in in_flight.values():
                    srv.cancel(r)
                now += go(inf, False)
                return st.tokens, now


# ---------------------------------------------------------------------------------------
# Simulation and prediction


@dataclass(frozen=True)
class SimResult:
    """Per-problem tokens and times of one configuration."""

    tokens: np.ndarray
    """Tokens of each simulated problem."""
    seconds: np.ndarray
    """Its time."""
    counters: dict[str, float] = field(default_factory=dict)
    """Per problem, on average: output_tokens, target_batches, target_steps, draft_steps
    (generated), drafted_steps (judged positions), accepted_steps, and the time inside
    target, draft and verifier calls (target_seconds, draft_seconds, verify_seconds; in
    async they overlap) — the decoder's own counters
    (:class:`profiler.decoder.records.Tally`); on an engine with prefix caching at step
    boundaries (the synthetic engine's) also ``<role>_iterations_b<b>``, the decode
    iterations of the target or the draft that ran b rows (one forward each, or one
    token-speculation pass)."""

    def rate(self) -> Estimate:
        """Tokens per unit time (ratio estimator over problems)."""
        return ratio_estimate(self.tokens, self.seconds)


def simulate(config: SpecConfig, acceptance: AcceptanceModel, costs: CostModel,
             workload: Workload | None = None, problems: int = 200,
             seed: int | np.random.Generator = 0) -> SimResult:
    """Decode ``problems`` simulated problems with ``config`` (with a workload's sample,
    problem i is the sample's problem i mod n)."""
    if problems < 2:
        raise ValueError(f"problems must be >= 2, got {problems}")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    run = _Run(config, acceptance, costs, workload or Workload.of(config), rng)
    out = np.array([run.problem() for _ in range(problems)], dtype=np.float64)
    counters = {k: v / problems for k, v in run.counters().items()}
    counters["output_tokens"] = float(out[:, 0].mean())
    return SimResult(out[:, 0], out[:, 1], counters)


def _speedup(cfg: Estimate, base: Estimate) -> tuple[float, float]:
    r = cfg.mean / base.mean
    rel = math.hypot(cfg.stderr / cfg.mean, base.stderr / base.mean)
    return r, r * rel


@dataclass(frozen=True)
class DecoderPrediction:
    """The decoder model's prediction for one configuration."""

    speedup: float
    """Predicted tokens/s over the baseline's."""
    stderr: float
    """The simulation's standard error of ``speedup``."""
    interval: tuple[float, float]
    """95 % interval: simulation error and calibration uncertainty together."""
    simulation_interval: tuple[float, float]
    """95 % interval of the simulation error alone (speedup ± 1.96 stderr)."""
    tokens_per_second: float | None
    """Predicted tokens/s (when the costs are absolute seconds)."""
    baseline_tokens_per_second: float | None
    """Predicted tokens/s of the target alone (absolute costs only)."""
    closed_form: float | None
    """The exact closed form where it holds for these models, else None."""
    problems: int
    """Simulated problems behind ``speedup``."""
    draws: int
    """Calibration draws behind ``interval``."""
    counters: dict[str, float] = field(default_factory=dict)
    """The decoder's counters per problem, as simulated (:attr:`SimResult.counters`)."""
    model: str = MODEL_NAME
    """Which model produced the numbers."""
    sources: dict[str, str] = field(default_factory=dict)
    """Where each input came from (measured / assumed / given)."""
    missing: tuple[str, ...] = ()
    """What was not measured and what is used instead."""
    sample_interval: tuple[float, float] | None = None
    """95 % interval of the speedup a run of ``sample_problems`` problems would measure:
    ``interval``'s calibration term with the simulated problem-to-problem spread of a
    sample that size in place of the simulation error (configuration and baseline taken
    as independent samples, so it is conservative where they run the same problems);
    None unless asked for."""
    sample_problems: int | None = None
    """The run size behind ``sample_interval``."""

    def to_dict(self) -> dict[str, Any]:
        """For JSON."""
        return {"model": self.model, "speedup": self.speedup, "stderr": self.stderr,
                "interval": list(self.interval),
                "simulation_interval": list(self.simulation_interval),
                "sample_interval": (None if self.sample_interval is None
                                    else list(self.sample_interval)),
                "sample_problems": self.sample_problems,
                "tokens_per_second": self.tokens_per_second,
                "baseline_tokens_per_second": self.baseline_tokens_per_second,
                "closed_form": self.closed_form, "problems": self.problems,
                "draws": self.draws, "counters": dict(self.counters),
                "sources": dict(self.sources),
                "missing": list(self.missing)}


def predict(config: SpecConfig, acceptance: AcceptanceModel, costs: CostModel,
            workload: Workload | None = None, *, problems: int = 400, draws: int = 20,
            draw_problems: int = 100, seed: int = 0,
            sample_problems: int | None = None) -> DecoderPrediction:
    """Predicted speedup of ``config`` with its 95 % interval.

    The point estimate simulates ``problems`` problems of the configuration and of the
    baseline with the nominal models.  Calibration uncertainty: ``draws`` times, the
    acceptance rates are drawn from their Beta posteriors
    (:meth:`AcceptanceModel.resampled`) and the measured scalar costs from their
    standard errors (:meth:`CostModel.resampled`; the baseline is then simulated again
    with the drawn costs), and ``draw_problems`` problems are simulated;
    the interval is the point ± 1.96·sqrt(var(draws) + stderr²) (the draws' spread
    carries their own simulation noise, so this is conservative).  The baseline does
    not depend on acceptance: without cost draws it is simulated once.  With
    ``sample_problems``, also the interval of what a run of that many problems would
    measure (:attr:`DecoderPrediction.sample_interval`): the simulation's standard
    error scaled to that sample, √(problems / sample_problems) · stderr, in its place.

    With a workload's sample (:attr:`Workload.sample`) every simulation decodes the
    sample's problems once each (``problems`` and ``draw_problems`` are its size, at
    least 2): the decode is the sample's own, not a draw from the laws, so there is no
    simulation error (stderr 0) and the intervals carry the calibration draws alone;
    the sample interval is the interval.
    """
    if sample_problems is not None and sample_problems < 1:
        raise ValueError(f"sample_problems must be >= 1, got {sample_problems}")
    work = workload or Workload.of(config)
    if work.sample is not None:
        problems = draw_problems = max(2, len(work.sample))
    ss = np.random.SeedSequence(seed)
    # separate streams: adding a measured spread to one model leaves the other model's
    # draws and the simulations' as they were
    s_base, s_cfg, s_acc, s_cost, s_draw = (np.random.default_rng(s) for s in ss.spawn(5))
    base_cfg = config.replace(k1=1, k2=1, width=1, mode="sync", target_batching="call")
    base = simulate(base_cfg, acceptance, costs, work, problems, s_base).rate()
    sim = simulate(config, acceptance, costs, work, problems, s_cfg)
    cfg = sim.rate()
    r, se = _speedup(cfg, base)
    if work.sample is not None:
        se = 0.0  # the sample's own decode: nothing was drawn
    spread = 0.0
    n_draws = 0
    if draws > 1 and (acceptance.step_samples or acceptance.token_samples or costs.stderrs):
        vals = []
        for _ in range(draws):
            acc = acceptance.resampled(s_acc)
            cst = costs.resampled(s_cost)
            est = simulate(config, acc, cst, work, draw_problems, s_draw).rate()
            ref = base.mean if cst is costs else simulate(
                base_cfg, acc, cst, work, draw_problems, s_draw).rate().mean
            vals.append(est.mean / ref)
        spread = float(np.std(vals, ddof=1))
        n_draws = draws
    half = 1.96 * math.sqrt(spread**2 + se**2)
    sample = None
    if sample_problems is not None:
        half_n = 1.96 * math.sqrt(spread**2 + se**2 * problems / sample_problems)
        sample = (r - half_n, r + half_n)
    absolute = costs.unit == "s"
    try:
        closed = exact_speedup(config, acceptance, costs, work)
    except ValueError:
        closed = None
    src = {f"cost.{k}": v for k, v in costs.sources.items()}
    src["workload.prompt_tokens"] = work.prompt_source
    return DecoderPrediction(
        speedup=r, stderr=se, interval=(r - half, r + half),
        simulation_interval=(r - 1.96 * se, r + 1.96 * se),
        tokens_per_second=cfg.mean if absolute else None,
        baseline_tokens_per_second=base.mean if absolute else None,
        closed_form=closed, problems=problems, draws=n_draws, counters=sim.counters,
        sources=src,
        missing=tuple(acceptance.missing) + tuple(costs.notes()),
        sample_interval=sample, sample_problems=sample_problems)


def exact_speedup(config: SpecConfig, acceptance: AcceptanceModel, costs: CostModel,
                  workload: Workload | None = None, *, endless_steps: bool = False
                  ) -> float | None:
    """The closed form, with no simulation, when the models are the papers' (None otherwise).

    Holds for endless problems (``max_steps`` → ∞) with i.i.d. acceptance, constant
    step lengths (the same for target and draft, not capped), flat costs, a free
    verifier, no overhead, no contention and :meth:`EngineBehaviour.papers`:
    f(k1) · g_step(k2) with f = f_sync (W = 1), f_sync_multibranch (W > 1, the model's
    best-of-W rate) or f_async (the corrected Theorem 2, knee ⌈1/c1⌉), and g_step the
    token-level speedup for steps of that length (→ g as steps grow).  Async with
    k2 > 1 is not closed (random pass counts make the target steps' durations random,
    which Theorem 2 does not cover): None.  With ``endless_steps`` the token factor is
    the papers' g (steps long enough for the token process to be stationary), so the
    result is the papers' h = f·g.  ``target_batching`` is ignored: f_async is the
    papers' process (each target step on its own as soon as its prefix exists), while
    :func:`simulate` plays continuous batching whenever it is configured, so the two
    may differ for such a configuration.
    """
    from specmodel.closedform.step_level import f_async, f_sync, f_sync_multibranch
    from specmodel.closedform.token_level import g_token, g_token_step

    work = workload or Workload.of(config)
    ts, ds = acceptance.target_steps, acceptance.draft_steps
    if not (acceptance.is_iid and costs.papers_idealisation and ts.is_constant
            and acceptance.step_length_pairs is None
            and ds.is_constant and ts.values == ds.values
            and ts.values[0] <= work.max_step_tokens):
        return None
    n = ts.values[0]
    c1 = costs.draft_decode.time(1, 0) / costs.target_decode.time(1, 0)
    k1, k2 = config.k1, config.k2
    if config.mode == "async" and k1 > 1 and k2 > 1 and not endless_steps:
        return None
    c2 = costs.token_draft_per_forward
    if k2 == 1:
        g = 1.0
    elif endless_steps:
        g = float(g_token(acceptance.alpha2, c2, k2))
    else:
        g = g_token_step(acceptance.alpha2, c2, k2, n)
    a1 = acceptance.alpha1
    if k1 == 1:
        f = 1.0
    elif config.mode == "sync" and config.width > 1:
        f = f_sync_multibranch(a1, c1, k1, config.width,
                               branch_alpha=acceptance.step_rate(0, config.width)).speedup
    elif config.mode == "sync":
        f = float(f_sync(a1, c1, k1))
    else:
        f = float(f_async(a1, c1, k1))
    return f * g


def predict_calibrated(cal: Any, config: SpecConfig, *, prompt_tokens: int | None = None,
                       step_offset: float = 0.0, **kwargs: Any) -> DecoderPrediction:
    """:func:`predict` with both models built from a calibration (costs per
    :meth:`CostModel.from_calibration`; ``step_offset``: every step rate moved by this
    much on the logit scale, :meth:`AcceptanceModel.step_shifted`)."""
    acc = AcceptanceModel.from_calibration(cal).step_shifted(step_offset)
    costs = CostModel.from_calibration(cal)
    return predict(config, acc, costs, Workload.of(config, prompt_tokens), **kwargs)
