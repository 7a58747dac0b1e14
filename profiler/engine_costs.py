"""Price the decoder's engine calls on this machine: the ``engine_costs`` phase.

The decoder model (:mod:`specmodel.decodermodel`) prices a call of the transformers
engine that writes ``n`` tokens for ``b`` prefixes of ``L`` tokens as

    call_overhead + prefill_per_token · b · L + n · T(b, L)

(the engine re-prefills every batched call's whole prefix).  This phase measures each
term through the engine itself (:meth:`profiler.engines.HFEngine.generate_exact`:
tokenizing, ``generate`` with its stopping check on every token, decoding), not
through bare forwards: on a CPU ``generate``'s own work per call and per token is a
real share of a small model's time.

For every context ``L`` and width ``b`` of the grid, calls writing a short and a long
number of tokens are timed ``repeats`` times each, in ``repeats`` passes over the whole
grid (after a warm-up of every cell's shapes; every other pass reversed), so that a
slow spell of a shared machine lands on all cells rather than on a few; the medians
give a line in the number of tokens: its slope is T(b, L)
per token, its intercept what the call costs beyond its tokens.  The intercepts of all
cells are fitted as ``overhead + prefill_per_token · b · L`` by least squares (with
standard errors; values clamped at 0).  Then the contention, the decoder's way: in
each round a call of each model alone, then one of each submitted together to two
worker threads (as the async decoder starts a draft step and a target step); the call
that ends first ran wholly beside the other, the other only while it ran, and each
model's slowdown is that of its overlapped work (:func:`overlap_slowdown`), with its
spread over the rounds.  A round whose timings contradict themselves (the call ran
longer beside the other than they overlapped: a third process took the machine during
it) is run again, up to :data:`RERUNS_PER_ROUND` times.

Last, token speculation as the decoder runs it (prompt lookup inside a step, one
prefix per call, no KV reuse): the target's real step calls with speculation at each
k2, on real step prefixes of the calibration's problems, timed; the passes each call
made are replayed exactly (:func:`profiler.ngram_replay.replay_counters`), and what
the call cost beyond the prefix's fixed cost, per pass, over a plain forward is the
time of one speculative pass in decode forwards (ratio of sums over the prefixes).
The forward and the fixed cost are timed on the same prefix just before, from two
plain step calls without KV reuse (one token, and a whole step), not taken from the
grid (:func:`measure_speculative_passes`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from profiler.progress import ProgressCallback, no_progress

__all__ = ["CellTiming", "context_prompt", "fit_intercepts", "measure_contention",
           "measure_model", "measure_speculative_contention", "measure_speculative_passes",
           "model_costs", "overlap_slowdown", "pool_engine_costs", "probe_costs",
           "step_prefixes", "SpeculativePasses", "InconsistentTimingsError", "RERUNS_PER_ROUND"]

_TEXT = ("Question: A farmer has 17 sheep, buys 5 more and sells 3. Each sheep eats 2 kg "
         "of hay a day. How much hay do the sheep eat in a week?\nAnswer: Let's think step "
         "by step.\n1. The farmer starts with 17 sheep.\n2. After buying 5 more he has "
         "17 + 5 = 22 sheep.\n3. After selling 3 he has 22 - 3 = 19 sheep.\n4. Each sheep "
         "eats 2 kg a day, so 19 sheep eat 19 * 2 = 38 kg a day.\n5. A week has 7 days, so "
         "they eat 38 * 7 = 266 kg in a week.\n")
"""Step-by-step arithmetic prose, repeated to build a prompt of any length."""


@dataclass(frozen=True)
class CellTiming:
    """One (b, L) cell: the median times of its short and long calls."""

    batch: int
    """Prompts per call (copies of one prompt)."""
    context: int
    """Prompt tokens per sequence (as the engine's tokenizer counts them)."""
    short: float
    """Median seconds of the calls writing ``tokens[0]`` tokens."""
    long: float
    """Median seconds of the calls writing ``tokens[1]`` tokens."""
    tokens: tuple[int, int]
    """The two call lengths."""
    n: int
    """Timed calls per length."""

    @property
    def per_token(self) -> float:
        """Seconds per token written (the slope), at least 1 ns."""
        return max(1e-9, (self.long - self.short) / (self.tokens[1] - self.tokens[0]))

    @property
    def intercept(self) -> float:
        """Seconds of the call beyond ``n · per_token`` (may be negative by noise)."""
        return self.short - self.per_token * self.tokens[0]


def context_prompt(engine: Any, tokens: int) -> tuple[str, int]:
    """A prompt of about ``tokens`` tokens for ``engine`` and its exact token count."""
    if tokens < 1:
        raise ValueError(f"tokens must be >= 1, got {tokens}")
    tok = engine.tokenizer
    text = _TEXT
    while engine.count_tokens(text) < tokens + 8:
        text += _TEXT
    ids = tok(text, add_special_tokens=False).input_ids[:tokens]
    prompt = tok.decode(ids, skip_special_tokens=True)
    return prompt, engine.count_tokens(prompt)


def measure_model(engine: Any, *, contexts: Sequence[int], widths: Sequence[int],
                  tokens: tuple[int, int] = (4, 16), repeats: int = 2,
                  progress: ProgressCallback | None = None, label: str = "") -> list[CellTiming]:
    """Time every (context, width) cell of ``engine`` (see the module docstring)."""
    if not 1 <= tokens[0] < tokens[1]:
        raise ValueError(f"tokens must be two lengths 1 <= short < long, got {list(tokens)}")
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    if not contexts or min(contexts) < 1 or not widths or min(widths) < 1:
        raise ValueError(f"contexts and widths must be integers >= 1, got {list(contexts)} "
                         f"and {list(widths)}")
    say = progress or no_progress
    cells = [(L, b) for L in sorted(set(contexts)) for b in sorted(set(widths))]
    first, _ = context_prompt(engine, min(contexts))
    engine.generate_exact([first], 2)  # the process's first call is slower
    prompts = {}
    for L, b in cells:  # each cell's shapes once, outside every timing
        prompts[(L, b)] = context_prompt(engine, L)
        engine.generate_exact([prompts[(L, b)][0]] * b, 2)
    # One repeat = one pass over the whole grid (reversed every other pass), both call
    # lengths of a cell back to back: a slow spell of a shared machine spreads over all
    # cells instead of raising the few measured during it.
    times: dict[tuple[int, int], list[list[float]]] = {c: [[], []] for c in cells}
    total = repeats * len(cells)
    for r in range(repeats):
        for j, (L, b) in enumerate(cells if r % 2 == 0 else cells[::-1]):
            prompt, n_ctx = prompts[(L, b)]
            say(r * len(cells) + j, total, f"{label}pass {r + 1}/{repeats}: b={b} L={n_ctx}")
            lengths = tokens if (r + j) % 2 == 0 else tokens[::-1]
            for n in lengths:
                times[(L, b)][tokens.index(n)].append(engine.generate_exact([prompt] * b, n))
    out = []
    for L, b in cells:
        short, long = (statistics.median(t) for t in times[(L, b)])
        out.append(CellTiming(b, prompts[(L, b)][1], short, long, tuple(tokens), repeats))
    say(total, total, f"{label}{len(cells)} cells × {repeats} passes")
    return out


def fit_intercepts(cells: Sequence[CellTiming]) -> tuple[tuple[float, float],
                                                         tuple[float, float]]:
    """((overhead, its stderr), (prefill per token, its stderr)) by least squares of the
    cells' intercepts on b · L (stderr 0 when the fit has no residual degrees of
    freedom).  Values are not clamped here."""
    import numpy as np

    if len(cells) < 2 or len({c.batch * c.context for c in cells}) < 2:
        raise ValueError("fit_intercepts needs cells of at least two distinct b · L")
    x = np.array([[1.0, c.batch * c.context] for c in cells])
    y = np.array([c.intercept for c in cells])
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    dof = len(cells) - 2
    if dof > 0:
        resid = y - x @ coef
        s2 = float(resid @ resid) / dof
        cov = s2 * np.linalg.inv(x.T @ x)
        se = [math.sqrt(max(0.0, float(cov[0, 0]))), math.sqrt(max(0.0, float(cov[1, 1])))]
    else:
        se = [0.0, 0.0]
    return (float(coef[0]), se[0]), (float(coef[1]), se[1])


class InconsistentTimingsError(ValueError):
    """A paired round's timings contradict each other: the call ran longer beside the
    other than the two overlapped, which only a third party sharing the machine during
    the round can cause."""


RERUNS_PER_ROUND = 3
"""How many times a paired round with :class:`InconsistentTimingsError` is run again before
the measurement gives up (a round disturbed by another process says nothing about the
two models' contention; a machine that disturbs every try cannot measure it)."""


def overlap_slowdown(alone: float, together: float, overlap: float) -> float:
    """How many times slower a call's work ran during the ``overlap`` seconds another
    call ran beside it, the rest of it running at its own pace: a call of ``alone``
    seconds that took ``together`` seconds did ``overlap`` / s of its work in the
    overlap and the rest alone, so s = overlap / (overlap − (together − alone)) — the
    decoder model's contention (work advances 1/s as fast while both models run).  A
    call wholly beside the other (``overlap`` = ``together``) gives together / alone."""
    for name, v in (("alone", alone), ("together", together), ("overlap", overlap)):
        if not (v > 0 and math.isfinite(v)):
            raise ValueError(f"{name} must be a finite number of seconds > 0, got {v}")
    if overlap > together * (1 + 1e-9):
        raise ValueError(f"overlap ({overlap:.4g} s) cannot exceed the call's time "
                         f"together ({together:.4g} s)")
    alone_part = overlap - (together - alone)
    if alone_part <= 0:
        raise InconsistentTimingsError(
            f"the call took {together - alone:.4g} s longer beside the other than alone, "
            f"more than the {overlap:.4g} s they overlapped: the timings are inconsistent "
            "(a machine this noisy cannot measure contention)")
    return overlap / alone_part


def _together(first: Callable[[], float], second: Callable[[], float]) -> tuple[float, float]:
    """The seconds two calls report when submitted together to two worker threads (one
    each, initialised as the async decoder's are)."""
    from profiler.engines import init_worker_thread

    with (ThreadPoolExecutor(1, "engine-costs-a", initializer=init_worker_thread) as pa,
          ThreadPoolExecutor(1, "engine-costs-b", initializer=init_worker_thread) as pb):
        fa, fb = pa.submit(first), pb.submit(second)
        return fa.result(), fb.result()


def _paired_slowdowns(alone: tuple[float, float], together: tuple[float, float]
                      ) -> tuple[float, float]:
    """Both calls' :func:`overlap_slowdown` from one paired round: they overlapped for
    as long as the shorter of them took together."""
    overlap = min(together)
    return (overlap_slowdown(alone[0], together[0], overlap),
            overlap_slowdown(alone[1], together[1], overlap))


def _paired_rounds(one_round: Callable[[], tuple[float, ...]], rounds: int
                   ) -> list[tuple[float, ...]]:
    """``rounds`` results of ``one_round`` (a paired round's slowdowns); a round whose
    timings are inconsistent is run again, up to :data:`RERUNS_PER_ROUND` times, and
    then its last error is raised with the number of tries."""
    out = []
    for _ in range(rounds):
        for attempt in range(RERUNS_PER_ROUND + 1):
            try:
                out.append(one_round())
                break
            except InconsistentTimingsError as e:
                if attempt == RERUNS_PER_ROUND:
                    raise InconsistentTimingsError(
                        f"{e} ({RERUNS_PER_ROUND + 1} tries of one round)") from None
    return out


def _measurement(values: Sequence[float]) -> Any:
    """Mean of per-round values with its standard error
    (:func:`specmodel.montecarlo.estimate.mean_estimate`; none from one round)."""
    from specmodel.formats.calibration import Measurement
    from specmodel.montecarlo.estimate import mean_estimate

    if not values:
        raise ValueError("no rounds to summarise")
    if len(values) == 1:
        return Measurement(value=float(values[0]), n=1)
    est = mean_estimate(values)
    return Measurement(value=est.mean, n=est.n, stderr=est.stderr)


def measure_contention(target: Any, draft: Any, *, context: int, tokens: int = 32,
                       repeats: int = 5) -> tuple[Any, Any]:
    """(target's, draft's) slowdown beside the other model, each a
    :class:`~specmodel.formats.calibration.Measurement` over ``repeats`` rounds: in each,
    one ``tokens``-token call of each model alone after a ``context``-token prompt, then
    one of each submitted together to two worker threads (:func:`_paired_slowdowns`); a
    round with inconsistent timings is run again (:func:`_paired_rounds`)."""
    if repeats < 1 or tokens < 1:
        raise ValueError(f"repeats and tokens must be >= 1, got {repeats} and {tokens}")
    tp, _ = context_prompt(target, context)
    dp, _ = context_prompt(draft, context)

    def one_round() -> tuple[float, float]:
        alone = (target.generate_exact([tp], tokens), draft.generate_exact([dp], tokens))
        both = _together(lambda: target.generate_exact([tp], tokens),
                         lambda: draft.generate_exact([dp], tokens))
        return _paired_slowdowns(alone, both)

    got = _paired_rounds(one_round, repeats)
    return _measurement([r[0] for r in got]), _measurement([r[1] for r in got])


def model_costs(model: str, cells: Sequence[CellTiming],
                concurrent_slowdown: Any | None = None) -> Any:
    """The calibration's :class:`~specmodel.formats.calibration.ModelEngineCosts` of
    one model from its cells."""
    from specmodel.formats.calibration import EngineCallPoint, Measurement, ModelEngineCosts

    (over, over_se), (pre, pre_se) = fit_intercepts(cells)
    return ModelEngineCosts(
        model=model,
        points=[EngineCallPoint(batch=c.batch, context=c.context, per_token=c.per_token,
                                intercept=c.intercept, n=c.n) for c in cells],
        call_overhead=Measurement(value=max(0.0, over), stderr=over_se, n=len(cells)),
        prefill_per_token=Measurement(value=max(0.0, pre), stderr=pre_se, n=len(cells)),
        concurrent_slowdown=concurrent_slowdown)


def probe_costs(target: Any, draft: Any | None, *, models: tuple[str, str | None],
                context: int, threads: int, widths: Sequence[int] = (1, 2),
                tokens: tuple[int, int] = (4, 32), repeats: int = 2,
                contention_rounds: int = 0, before: str | None = None,
                progress: ProgressCallback | None = None) -> Any:
    """A short engine-cost measurement beside a run: the cells ``widths`` × one
    ``context`` of ``target`` (and ``draft``), timed as the ``engine_costs`` phase times
    them (:func:`measure_model`; no speculative calls), as a
    :class:`~specmodel.formats.run_record.CostProbe` for the run record.  ``models``
    names the two models as the calibration does (pack name or folder); ``before`` the
    configuration the probe precedes.  ``contention_rounds`` > 0 (a draft needed) also
    measures each model's slowdown beside the other as the phase does
    (:func:`measure_contention`: that many paired rounds of ``tokens[1]``-token calls
    after ``context`` tokens) into the probe's ``concurrent_slowdown``; 0: none.  The
    prompts are the phase's synthetic prose, never the run's problems."""
    from specmodel.formats.calibration import EngineCosts
    from specmodel.formats.jsonio import timestamp
    from specmodel.formats.run_record import CostProbe

    if len({b * context for b in widths}) < 2:
        raise ValueError(f"widths must give at least two distinct batch sizes (the fit of "
                         f"overhead and prefill needs two), got {list(widths)}")
    if contention_rounds < 0:
        raise ValueError(f"contention_rounds must be >= 0, got {contention_rounds}")
    if contention_rounds and (draft is None or models[1] is None):
        raise ValueError("contention_rounds > 0 needs a draft: the slowdown is each model's "
                         "beside the other's calls")
    kw = {"contexts": [context], "widths": list(widths), "tokens": tokens,
          "repeats": repeats, "progress": progress}
    cells_t = measure_model(target, label="probe target ", **kw)
    cells_d = None if draft is None else measure_model(draft, label="probe draft ", **kw)
    slow_t = slow_d = None
    if contention_rounds:
        if progress is not None:
            progress(0, 1, f"probe contention, {contention_rounds} paired rounds")
        slow_t, slow_d = measure_contention(target, draft, context=context, tokens=tokens[1],
                                            repeats=contention_rounds)
    costs = EngineCosts(
        engine="transformers", device=target.device, dtype=target.dtype, threads=threads,
        tokens=tokens, target=model_costs(models[0], cells_t, slow_t),
        draft=(None if cells_d is None or models[1] is None
               else model_costs(models[1], cells_d, slow_d)),
        contention_method="paired-calls")
    return CostProbe(date=timestamp(), before=before, costs=costs)


def step_prefixes(engine: Any, prompts: Sequence[str], *, steps: Sequence[int],
                  max_step_tokens: int) -> list[str]:
    """Prefixes of real reasoning: each prompt followed by the target's own greedy
    steps, taken after each number of steps in ``steps`` (a prefix that ended its
    answer earlier is not taken again)."""
    out = []
    for prompt in prompts:
        prefix, done = prompt, 0
        for want in sorted(set(steps)):
            ended = False
            while done < want:
                step = engine.generate_steps([prefix], max_step_tokens).outputs[0]
                prefix += step.text
                done += 1
                if not step.text.strip() or step.finished != "stop":
                    ended = True
                    break
            if ended:
                break
            out.append(prefix)
    return out


@dataclass(frozen=True)
class SpeculativePasses:
    """What :func:`measure_speculative_passes` found: the pass at each k2 it could
    count, and why any other was left out."""

    passes: dict[int, tuple[float, float, int]]
    """k2 → (one speculative pass in decode forwards, its standard error over the
    prefixes, prefixes)."""
    left_out: dict[int, str]
    """k2 → why no pass is given for it (no speculative call wrote a token; or, on a
    machine noisier than the calls are long, the calls took no more than their
    prefix's fixed cost, so the estimate came out at or below zero)."""
    prefixes: int
    """Prefixes that gave a reference forward (the others are in :attr:`skipped`)."""
    skipped: tuple[str, ...] = ()
    """Why each prefix that gave no reference forward was passed over."""

    def note(self) -> str:
        """What was left out, in words ("" when nothing was)."""
        parts = [f"k2 = {k2} left out: {why}" for k2, why in sorted(self.left_out.items())]
        return "; ".join(parts + list(self.skipped))


def measure_speculative_passes(
    engine: Any, prefixes: Sequence[str], *, k2s: Sequence[int], max_step_tokens: int,
    prompt_lookup_max: int = 3, progress: ProgressCallback | None = None,
) -> SpeculativePasses:
    """One speculative pass in decode forwards at each of ``k2s``: the engine's step
    calls with prompt-lookup speculation of k2 − 1 tokens on ``prefixes``, each call's
    passes replayed (module docstring).

    Everything a pass is counted against is timed on the same prefix just before it,
    nothing taken from the grid: on each prefix a plain step call (no speculation, no
    KV reuse: it prefills the prefix as the speculative calls do) writing one token
    and one writing up to ``max_step_tokens`` run first; their difference over the
    difference of their forwards is the forward, and the one-token call less one
    forward the prefix's fixed cost (overhead and prefill).  A pass costs what the
    speculative call spent beyond that fixed cost, per pass, over the forward (a
    ratio of sums over the prefixes).  So a machine that ran faster or slower than
    when the grid was timed moves the forward and the pass together, and an overhead
    or prefill the grid's few cells fitted badly (extrapolated to a prefix longer than
    any cell) does not reach the pass (the way before 2026-12-04 took the grid's fitted
    prefill off the speculative call's whole prefix while the plain call reused its
    cache; on a loaded 2-core VM, with four one-repeat cells, it once read −2.72
    forwards).  A prefix whose plain calls give no
    forward (its step ended at the first token, or noise made the longer call no
    longer) is passed over; a k2 whose estimate comes out at or below zero is left
    out, with the reason (:class:`SpeculativePasses`), not written."""
    from profiler.ngram_replay import replay_counters
    from specmodel.config import TokenDrafter, TokenSpeculation

    if not prefixes:
        raise ValueError("prefixes must not be empty")
    if not k2s or min(k2s) < 2:
        raise ValueError(f"k2s must be integers >= 2, got {list(k2s)}")
    if max_step_tokens < 2:
        raise ValueError(f"max_step_tokens must be >= 2 (a forward is the difference of a "
                         f"one-token call and a longer one), got {max_step_tokens}")
    say = progress or no_progress
    tok = engine.tokenizer
    todo = sorted(set(k2s))
    plain = engine.with_speculation(None)
    if getattr(plain, "prefix_cache", False):
        plain = plain.with_prefix_cache(False)
    specs = {k2: engine.with_speculation(TokenSpeculation(
        drafter=TokenDrafter(method="ngram", prompt_lookup_max=prompt_lookup_max),
        num_speculative_tokens=k2 - 1)) for k2 in todo}
    for spec in specs.values():
        spec.generate_steps([prefixes[0]], 4)  # warm-up of the assisted path
    ratios: dict[int, list[tuple[float, float]]] = {k2: [] for k2 in todo}
    skipped: list[str] = []
    for i, prefix in enumerate(prefixes):
        short = plain.generate_steps([prefix], 1)
        ref = plain.generate_steps([prefix], max_step_tokens)
        if not ref.iterations or not short.iterations:
            raise ValueError("the plain step call reported no forwards: the reference "
                             "of a speculative pass needs an engine that counts them")
        more = ref.iterations - short.iterations
        forward = (ref.seconds - short.seconds) / more if more > 0 else 0.0
        if forward <= 0:
            skipped.append(
                f"prefix {i + 1} passed over: its plain step call "
                + (f"ended after {ref.iterations} token(s)" if more <= 0 else
                   f"of {ref.iterations} tokens took {ref.seconds * 1e3:.0f} ms, no longer "
                   f"than the one-token call's {short.seconds * 1e3:.0f} ms")
                + ", so no forward to count a pass in")
            say(i + 1, len(prefixes), skipped[-1])
            continue
        fixed = short.seconds - short.iterations * forward
        ctx = tok(prefix, add_special_tokens=False).input_ids
        for k2, spec in specs.items():
            batch = spec.generate_steps([prefix], max_step_tokens)
            ids = tok(batch.outputs[0].text, add_special_tokens=False).input_ids
            if not ids:
                continue
            passes = replay_counters(ctx, ids, k2 - 1, prompt_lookup_max)[
                "num_target_passes"]
            ratios[k2].append((batch.seconds - fixed, passes * forward))
        say(i + 1, len(prefixes), f"prefix {i + 1}: a plain forward {forward * 1e3:.0f} ms")
    out: dict[int, tuple[float, float, int]] = {}
    left: dict[int, str] = {}
    for k2, got in ratios.items():
        if not got:
            left[k2] = ("no prefix gave a forward" if len(skipped) == len(prefixes) else
                        "no speculative call wrote a token")
            continue
        mean = sum(b for b, _ in got) / sum(f for _, f in got)
        if not (mean > 0 and math.isfinite(mean)):
            left[k2] = (f"its {len(got)} speculative call(s) took no more than their "
                        f"prefixes' fixed cost ({mean:.2f} forwards a pass): noise larger "
                        "than the passes")
            continue
        each = [b / f for b, f in got]
        se = statistics.stdev(each) / math.sqrt(len(each)) if len(each) > 1 else 0.0
        out[k2] = (mean, se, len(each))
    return SpeculativePasses(out, left, len(prefixes) - len(skipped), tuple(skipped))


def measure_speculative_contention(engine: Any, other: Any, prefixes: Sequence[str], *,
                                   k2: int, max_step_tokens: int,
                                   prompt_lookup_max: int = 3) -> Any:
    """How many times slower ``engine``'s step calls with prompt-lookup speculation
    (k2 − 1 tokens) run beside ``other`` (the async decoder's draft beside its target),
    a :class:`~specmodel.formats.calibration.Measurement` over ``prefixes``: each step
    call timed alone, then again submitted together with a ``max_step_tokens``-token
    call of ``other`` (:func:`_paired_slowdowns`; a pair with inconsistent timings is
    run again, :func:`_paired_rounds`)."""
    from specmodel.config import TokenDrafter, TokenSpeculation

    if not prefixes:
        raise ValueError("prefixes must not be empty")
    if k2 < 2:
        raise ValueError(f"k2 must be >= 2, got {k2}")
    spec = engine.with_speculation(TokenSpeculation(
        drafter=TokenDrafter(method="ngram", prompt_lookup_max=prompt_lookup_max),
        num_speculative_tokens=k2 - 1))
    other_prompt, _ = context_prompt(other, 64)
    slow: list[float] = []
    for prefix in prefixes:

        def one_round(p: str = prefix) -> tuple[float, float]:
            alone = (spec.generate_steps([p], max_step_tokens).seconds,
                     other.generate_exact([other_prompt], max_step_tokens))
            both = _together(lambda: spec.generate_steps([p], max_step_tokens).seconds,
                             lambda: other.generate_exact([other_prompt], max_step_tokens))
            return _paired_slowdowns(alone, both)

        slow.append(_paired_rounds(one_round, 1)[0][0])
    return _measurement(slow)


def _pool_model(models: Sequence[Any], tokens: tuple[int, int]) -> Any:
    """One model's :class:`~specmodel.formats.calibration.ModelEngineCosts` pooled over
    several measurements (see :func:`pool_engine_costs`)."""
    from specmodel.formats.calibration import Measurement

    cells: dict[tuple[int, int], list[Any]] = {}
    for m in models:
        for p in m.points:
            cells.setdefault((p.batch, p.context), []).append(p)
    timings = []
    for (b, L), pts in sorted(cells.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        n = sum(p.n for p in pts)
        slope = sum(p.per_token * p.n for p in pts) / n
        icept = sum(p.intercept * p.n for p in pts) / n
        timings.append(CellTiming(b, L, icept + slope * tokens[0], icept + slope * tokens[1],
                                 tokens, n))

    out = model_costs(models[0].model, timings,
                      Measurement.pooled_or_none([m.concurrent_slowdown for m in models]))
    passes: dict[int, list[Any]] = {}
    for m in models:
        for k2, v in (m.speculative_passes or {}).items():
            passes.setdefault(k2, []).append(v)
    return out.model_copy(update={
        "speculative_passes": {k2: Measurement.pooled(vs)
                               for k2, vs in sorted(passes.items())} or None,
        "passes_counted_in": None if not passes else (
            "plain-calls" if all(m.passes_counted_in == "plain-calls"
                                 for m in models if m.speculative_passes) else "grid"),
        "speculative_slowdown": Measurement.pooled_or_none(
            [m.speculative_slowdown for m in models])})


def pool_engine_costs(measured: Sequence[tuple[Any, Any]]) -> tuple[Any, Any]:
    """Several ``engine_costs`` measurements of one setup (the same engine, device,
    dtype, threads, call lengths, execution, static cache positions and models, and
    the same CPU (on a GPU, the same GPU) where both recorded theirs, e.g. taken at
    different times on a shared machine), as one: (EngineCosts, EngineCostsSettings)
    from a list of such pairs.

    Per (b, L) cell the n-weighted mean of the measurements' slopes and intercepts
    (cells measured only by some of them pooled from those), call overhead and prefill
    refitted from the pooled cells; speculative passes (by k2) and slowdowns
    n-weighted, their standard error at least the spread between the measurements
    over √k (:meth:`~specmodel.formats.calibration.Measurement.pooled`).
    The settings are the first's with the union of the grids, the repeats summed, the
    latest date, and a description that gives every measurement's figures beside the
    pooled ones."""
    from specmodel.formats.calibration import EngineCosts

    if len(measured) < 2:
        raise ValueError(f"pooling needs at least two engine-cost measurements, got "
                         f"{len(measured)}")
    first, first_s = measured[0]

    def setup(c: Any, s: Any) -> dict[str, Any]:
        return {"engine": c.engine, "device": c.device, "dtype": c.dtype,
                "threads": c.threads, "call lengths": tuple(c.tokens),
                "contention method": c.contention_method, "execution": c.execution,
                "cache positions": s.cache_positions,
                "machine": None if s.machine is None else s.machine.processor,
                "target": c.target.model, "draft": None if c.draft is None else c.draft.model}

    reference = setup(first, first_s)
    for i, (c, s) in enumerate(measured[1:], start=2):
        for key, value in setup(c, s).items():
            if value != reference[key] and not (
                    key == "machine" and None in (value, reference[key])):
                raise ValueError(f"measurement {i} has {key} {value!r}, measurement 1 "
                                 f"{reference[key]!r}: only measurements of one setup pool")
    tokens = (first.tokens[0], first.tokens[1])
    target = _pool_model([c.target for c, _ in measured], tokens)
    drafts = [c.draft for c, _ in measured if c.draft is not None]
    costs = EngineCosts(engine=first.engine, device=first.device, dtype=first.dtype,
                        threads=first.threads, tokens=tokens, target=target,
                        draft=_pool_model(drafts, tokens) if drafts else None,
                        contention_method=first.contention_method,
                        execution=first.execution)

    def figures(c: Any, s: Any) -> str:
        t = c.target
        L0 = min(p.context for p in t.points)
        t1 = [p.per_token for p in t.points if p.batch == 1 and p.context == L0]
        passes = ", ".join(f"{v.value:.2f} (k2 = {k})"
                           for k, v in sorted((t.speculative_passes or {}).items()))
        return (f"{s.date}: T(1, {L0}) = {t1[0] * 1e3:.0f} ms" if t1 else f"{s.date}:") + (
            f", prefill {t.prefill_per_token.value * 1e3:.2f} ms/token"
            + (f", a pass {passes} decode forwards" if passes else ""))

    t = costs.target
    desc = (f"engine_costs pooled from {len(measured)} measurements of one setup "
            f"({'; '.join(figures(c, s) for c, s in measured)}): per (b, L) cell the "
            "n-weighted mean of their slopes and intercepts, overhead and prefill refitted "
            f"(overhead {t.call_overhead.value * 1e3:.0f} +/- "
            f"{(t.call_overhead.stderr or 0) * 1e3:.0f} ms, prefill "
            f"{t.prefill_per_token.value * 1e3:.2f} +/- "
            f"{(t.prefill_per_token.stderr or 0) * 1e3:.2f} ms per token), pass costs "
            "and slowdowns n-weighted (stderr at least their spread over sqrt(k)). "
            "First measurement's description: " + first_s.description)
    settings = first_s.model_copy(update={
        "description": desc,
        "date": max(s.date for _, s in measured),
        "contexts": sorted({x for _, s in measured for x in s.contexts}),
        "widths": sorted({x for _, s in measured for x in s.widths}),
        "repeats": sum(s.repeats for _, s in measured)})
    return costs, settings
