"""Synthetic-acceptance engine: real forwards of a random-weight decoder, decisions drawn
from a calibration.

:class:`SyntheticEngine` implements the :class:`~profiler.engines.base.Engine`
protocol on :class:`profiler.hardware.ReferenceDecoder` (any architecture, random
weights, nothing downloaded).  It does not read its logits: what it *writes* is
drawn from a calibration's acceptance model, what it *costs* is the real forwards
a real engine would run for that output:

* a step's length is drawn from the calibration's step-length histogram
  (``step.step_tokens_histogram``), else a geometric law with its mean
  (``step.step_tokens_mean``, else :data:`DEFAULT_STEP_TOKENS`), capped by
  ``max_tokens``;
* plain decoding runs one decode forward (b = the batch's prefixes, q = 1) per token
  until the longest step of the batch is done (a padded batch, as the transformers
  engine runs it);
* token-level speculation (k2 = γ + 1) runs passes: γ draft forwards (the drafter's
  architecture for ``draft_model``; free for ``ngram``) and one verify forward of
  q = k2 tokens per sequence; the draft tokens accepted in a pass are drawn from the
  calibration's token acceptance by position (conditional), else α2 i.i.d.; a pass
  writes accepted + 1 tokens.  Where the calibration measured that only a share of
  passes carries a draft (``token.draft_rate``), the others draft nothing and write one
  token (they still run the pass's forwards: an upper bound on their cost).  The
  counters are vLLM's (num_drafts, …) and the passes (num_target_passes, as the
  transformers replay counts them);
* a prefix the engine has not seen is prefilled first (one forward over its uncached
  tokens, their count rounded up to a power of two; prefix caching at step
  boundaries; on CUDA a captured graph up to :data:`PREFILL_GRAPH_TOKENS` tokens in
  the batch, eager beyond).

What a step writes is drawn from a random stream keyed by ``draws``: ``position`` (the
default) keys it by the problem's prompt and the step's position after it, so every
configuration of a sweep, the target alone included, meets the same target step (and
the same draft step) at each position — common random numbers, which take the
step-length draws out of the difference between two configurations' speedups;
``prefix`` keys it by the whole prefix (what runs recorded before ``draws`` existed
did).  Either law is the calibration's; only the coupling between runs differs.

The context L of a forward is the batch's longest prefix in synthetic tokens (the
prompt's words count as its tokens), bucketed upward to ``context_bucket`` so that a
forward is reused.  On CUDA every distinct (b, q, L) forward is captured once as a
CUDA graph and replayed (a bounded LRU of graphs); on the CPU it runs eagerly.  The
clock is read after the engine's stream has synchronized.

The text is synthetic words (``t17``: a target's token, ``d17``: a draft's), the
first word of a step carrying its draft depth (``d17/2``: the third draft step in a
row), which :class:`profiler.verifiers.SyntheticVerifier` reads to draw the step
verdict at that depth.  Everything is a function of the engine's seed and the prefix
(and the sampling seed for sampled branches): deterministic, like greedy decoding.

No torch at import; torch is imported when an engine is built.
"""

from __future__ import annotations

import bisect
import copy
import hashlib
import math
import random
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from profiler.engines.base import (
    STEP_DELIMITER,
    EngineError,
    RunningBatch,
    StepBatch,
    StepOutput,
    StepRequest,
    check_step_request,
    counter_delta,
)
from specmodel.config import DECODER_TOKEN_METHODS, TokenSpeculation
from specmodel.hardware.predicted import (
    DEFAULT_CONTEXT_BUCKET,
    forward_grid,
    profile_points,
)
from specmodel.hardware.predicted import bucket as _bucket

if TYPE_CHECKING:
    from specmodel.decodermodel.draws import DrawnSample
    from specmodel.formats.calibration import Calibration, StepLevel, TokenLevel
    from specmodel.formats.run_record import RunRecord
    from specmodel.hardware.shape import Shape

__all__ = [
    "DEFAULT_STEP_TOKENS",
    "DRAWS",
    "ContinuousServer",
    "ROLES",
    "StepAcceptance",
    "StepLengths",
    "SyntheticEngine",
    "TokenAcceptance",
    "draft_depth",
    "draw_plan",
    "load_acceptance",
    "measure_contention",
    "measure_costs",
    "merge_profiles",
    "architectures",
    "position_draws",
    "position_key",
    "record_draws",
    "synthetic_execution",
    "cost_point",
    "prepare_run",
    "profile_costs",
    "scalar_costs",
    "step_law_histogram",
    "uniform",
    "with_costs",
]

DEFAULT_STEP_TOKENS = 24.0
"""Mean step length (tokens) when a calibration has neither histogram nor mean."""
DRAWS = ("position", "prefix")
"""What keys a step's random stream (see the module docstring); the first is the default."""
ROLES = ("target", "draft")
"""What an engine plays: its words are ``t…`` (target) or ``d…`` (draft)."""
_TAG = {"target": "t", "draft": "d"}
_DEPTH_WORD = re.compile(r"^([td])\d+/(\d+)$")


# --- acceptance models ------------------------------------------------------------------
def load_acceptance(name_or_path: str | Path) -> Calibration:
    """A calibration by file path (an existing file) or preset name; one-line errors."""
    from specmodel.formats.calibration import list_presets, load_calibration, load_preset

    text = str(name_or_path)
    if Path(text).is_file():
        return load_calibration(text)
    if text in list_presets():
        return load_preset(text)
    raise ValueError(f"acceptance must be a calibration file or one of the presets "
                     f"{', '.join(list_presets())}; {text!r} is neither")


def uniform(*parts: object) -> float:
    """A uniform number in [0, 1) that is a fixed function of ``parts`` (BLAKE2b)."""
    h = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(h, "big") / 2.0**64


def _rng(*parts: object) -> random.Random:
    h = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=16).digest()
    return random.Random(int.from_bytes(h, "big"))


@dataclass(frozen=True)
class StepLengths:
    """The step-length law: a histogram, or a geometric law with a mean (support >= 1)."""

    lengths: tuple[int, ...]
    """Histogram lengths (empty: geometric)."""
    cumulative: tuple[int, ...]
    """Cumulative counts of ``lengths``."""
    mean: float
    """The law's mean (tokens)."""
    source: str
    """Where the law came from, as the run record says it."""

    @classmethod
    def from_step(cls, step: StepLevel) -> StepLengths:
        """The calibration's histogram, else its mean (geometric), else the default mean."""
        hist = {int(k): int(v) for k, v in (step.step_tokens_histogram or {}).items()
                if int(k) >= 1 and int(v) > 0}
        if hist:
            lengths = tuple(sorted(hist))
            cum, total = [], 0
            for n in lengths:
                total += hist[n]
                cum.append(total)
            mean = sum(n * hist[n] for n in lengths) / total
            return cls(lengths, tuple(cum), mean,
                       f"histogram ({total} steps, {len(lengths)} lengths, mean {mean:.1f})")
        if step.step_tokens_mean is not None:
            m = max(1.0, float(step.step_tokens_mean))
            return cls((), (), m, f"geometric, mean {m:.1f} (step_tokens_mean; no histogram)")
        return cls((), (), DEFAULT_STEP_TOKENS,
                   f"geometric, mean {DEFAULT_STEP_TOKENS:g} (default: the calibration has "
                   "no step lengths)")

    def draw(self, rng: random.Random) -> int:
        """One step length (>= 1)."""
        if self.lengths:
            i = bisect.bisect_right(self.cumulative, rng.randrange(self.cumulative[-1]))
            return self.lengths[i]
        if self.mean <= 1.0:
            return 1
        p = 1.0 / self.mean
        return 1 + int(math.log(1.0 - rng.random()) / math.log(1.0 - p))


@dataclass(frozen=True)
class StepAcceptance:
    """Step acceptance by draft depth (conditional on the shallower drafts accepted), or α1
    at every depth; a depth beyond the list takes its last rate."""

    rates: tuple[float, ...]
    """Acceptance at depth 0, 1, …"""
    source: str
    """Where the rates came from."""

    @classmethod
    def from_step(cls, step: StepLevel) -> StepAcceptance:
        if step.acceptance_by_position:
            r = tuple(float(x) for x in step.acceptance_by_position)
            return cls(r, "by depth " + ", ".join(f"{x:.3f}" for x in r)
                       + " (acceptance_by_position, conditional)")
        return cls((float(step.alpha1),), f"alpha1 {step.alpha1:.3f} at every depth")

    def rate(self, depth: int) -> float:
        return self.rates[min(max(depth, 0), len(self.rates) - 1)]


@dataclass(frozen=True)
class TokenAcceptance:
    """Token acceptance by draft position (conditional), or α2 i.i.d., per draft; and the
    share of passes that carry a draft (the others write one token)."""

    rates: tuple[float, ...]
    """Acceptance at draft position 0, 1, … (the last repeats)."""
    source: str
    """Where the rates came from."""
    draft_rate: float = 1.0
    """The share of passes with a draft (the calibration's ``token.draft_rate``; 1 where
    it has none)."""

    @classmethod
    def from_token(cls, token: TokenLevel) -> TokenAcceptance:
        rate = float(token.draft_rate) if token.draft_rate is not None else 1.0
        passes = "" if rate == 1 else f"; {rate:.3f} of the passes draft (draft_rate)"
        if token.acceptance_by_position:
            r = tuple(float(x) for x in token.acceptance_by_position)
            return cls(r, "by position " + ", ".join(f"{x:.3f}" for x in r)
                       + " (acceptance_by_position, conditional)" + passes, rate)
        return cls((float(token.alpha2),), f"alpha2 {token.alpha2:.3f} i.i.d." + passes, rate)

    def drafts(self, rng: random.Random) -> bool:
        """Whether a pass carries a draft (no draw where every pass does)."""
        return self.draft_rate >= 1 or rng.random() < self.draft_rate

    def draw(self, rng: random.Random, gamma: int) -> int:
        """Draft tokens accepted in one pass of ``gamma`` (stops at the first rejection)."""
        a = 0
        while a < gamma and rng.random() < self.rates[min(a, len(self.rates) - 1)]:
            a += 1
        return a


def draft_depth(step_text: str) -> int:
    """The draft depth a synthetic step's first word carries (0 when it carries none)."""
    words = step_text.split(maxsplit=1)
    m = _DEPTH_WORD.match(words[0]) if words else None
    return int(m.group(2)) if m else 0


# --- forwards -----------------------------------------------------------------------------
PREFILL_GRAPH_TOKENS = 512
"""Prefill batches of at most this many tokens (rows × new tokens) run as captured
graphs on CUDA, larger ones eagerly.  vLLM V1 serves batches with prefills through
piecewise CUDA graphs (attention outside them) up to its largest capture size, 512
tokens by default; a whole-forward graph is the nearer of our two paths to that (the
runs of 2026-11-27 prefilled every batch eagerly, which the profiles priced as graphs)."""


def prefill_graph(b: int, q: int) -> bool:
    """Whether a prefill of ``b`` rows × ``q`` new tokens runs as a captured graph on
    CUDA (:data:`PREFILL_GRAPH_TOKENS`)."""
    return b * q <= PREFILL_GRAPH_TOKENS


_CAPTURE_LOCK = threading.Lock()
"""One CUDA graph capture at a time in the process (the async decoder runs two engines)."""


def _captured(torch: Any, stream: Any, fn: Callable[[], Any]) -> Callable[[], None]:
    """``fn`` (a bound forward) captured as a CUDA graph on ``stream`` after two eager
    warm-ups there; returns its replay (launch it inside ``torch.cuda.stream(stream)``).
    The replay holds ``fn``: the static buffers bind() allocated outside the graph's
    memory pool (the KV cache, the inputs) are read by every replay, so they live
    exactly as long as the graph does."""
    with _CAPTURE_LOCK:
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(2):
                fn()
        stream.synchronize()
        cuda_graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(cuda_graph, stream=stream, capture_error_mode="thread_local"):
            fn()
        stream.synchronize()

    def replay(graph: Any = cuda_graph, forward: Any = fn) -> None:
        graph.replay()

    return replay


class _Forwards:
    """One architecture's forwards, bound once per (b, q, L) and kept in a bounded LRU:
    CUDA graphs replayed on the engine's own stream on CUDA, eager functions on the CPU."""

    def __init__(self, model: str, device: str, dtype: str, seed: int, *,
                 max_entries: int, memory_fraction: float) -> None:
        import torch

        from profiler.hardware import ReferenceDecoder
        from specmodel.hardware.shape import load_shape

        self.torch, self.device = torch, device
        self.shape = load_shape(model)
        self.decoder = ReferenceDecoder(self.shape, device, dtype, seed)
        self.max_entries = max_entries
        self.cache: OrderedDict[tuple[int, int, int, bool], tuple[Any, int]] = OrderedDict()
        self.bytes = 0
        self.max_bytes: int | None = None
        self.stream = None
        self.build_seconds = 0.0
        """Time spent binding and capturing (outside any timed forward's share)."""
        self.lock = threading.Lock()
        if device == "cuda":
            self.stream = torch.cuda.Stream()
            free, _ = torch.cuda.mem_get_info()
            self.max_bytes = int(memory_fraction * free)

    def _build(self, b: int, q: int, L: int, graph: bool) -> tuple[Any, int]:
        from profiler.hardware import Point

        point = Point("decode" if q == 1 else "verify", b, q, L)
        need = self.decoder.buffer_bytes(point)
        while self.cache and (len(self.cache) >= self.max_entries or (
                self.max_bytes is not None and self.bytes + need > self.max_bytes)):
            self.sync()  # nothing of the evicted forward may still be running
            _, (_, n) = self.cache.popitem(last=False)
            self.bytes -= n
        fn = self.decoder.bind(point)
        if self.device != "cuda" or not graph:
            return fn, need
        assert self.stream is not None
        return _captured(self.torch, self.stream, fn), need

    def run(self, b: int, q: int, L: int, graph: bool = True, *,
            prefill: bool = False, events: bool = False) -> tuple[Any, Any] | None:
        """One forward of b sequences × q new tokens over an L-token context (on CUDA a
        captured graph's replay, or eager with ``graph`` False); ``prefill`` says that it
        prefills uncached tokens (for whoever logs the forwards: it runs the same).

        ``events`` (CUDA only): returns a pair of timing CUDA events recorded on the
        engine's stream just before and just after the forward itself (binding and
        capturing a new shape fall outside them), which time it on the device without
        waiting for it; otherwise None."""
        key = (b, q, L, graph)
        entry = self.cache.get(key)
        if entry is None:
            # the forwards already launched finish before the clock of the setup starts:
            # their time is the step's, not the setup's (which the step's time excludes)
            self.sync()
            t0 = time.perf_counter()
            entry = self._build(b, q, L, graph)
            self.cache[key] = entry
            self.bytes += entry[1]
            self.build_seconds += time.perf_counter() - t0
        else:
            self.cache.move_to_end(key)
        if self.stream is None:
            entry[0]()
            return None
        with self.torch.cuda.stream(self.stream):
            if not events:
                entry[0]()
                return None
            start = self.torch.cuda.Event(enable_timing=True)
            end = self.torch.cuda.Event(enable_timing=True)
            start.record()
            entry[0]()
            end.record()
        return start, end

    def sync(self) -> None:
        """Wait for the forwards launched so far (this engine's stream only)."""
        if self.stream is not None:
            self.stream.synchronize()

    def clear(self) -> None:
        """Drop every bound forward and its buffers (after the launched ones finish),
        returning their memory to the device; the next use of a shape binds it again."""
        self.sync()
        self.cache.clear()
        self.bytes = 0
        if self.device == "cuda":
            self.torch.cuda.empty_cache()

    def time_forward(self, b: int, q: int, L: int, repeats: int = 5) -> float:
        """Median seconds of one forward (bound and warmed first)."""
        with self.torch.inference_mode():
            self.run(b, q, L)
            self.run(b, q, L)
            self.sync()
            out = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                self.run(b, q, L)
                self.sync()
                out.append(time.perf_counter() - t0)
        out.sort()
        return out[len(out) // 2]


def _check_method(speculation: TokenSpeculation | None) -> None:
    if speculation is not None and speculation.method not in DECODER_TOKEN_METHODS:
        raise EngineError(f"token method {speculation.method!r} does not run on the synthetic "
                          f"engine (it runs {', '.join(DECODER_TOKEN_METHODS)})")


@dataclass
class _Plan:
    """What one sequence of a batch will write: its words and its speculation passes."""

    words: list[str]
    finished: Literal["stop", "length"]
    passes: list[int]
    """Tokens written by each pass (token speculation; empty without)."""


def draw_plan(rng: random.Random, *, role: str, lengths: StepLengths, cap: int,
              depth: int, vocab: int, gamma: int = 0,
              token_acceptance: TokenAcceptance | None = None,
              counters: dict[str, Any] | None = None) -> _Plan:
    """What one step of ``role`` writes, drawn from ``rng`` (the step's keyed stream): its
    length from ``lengths`` (capped at ``cap``: then it finishes on "length"), its words
    (the first carrying the draft ``depth``), and with token speculation (``gamma`` > 0)
    the tokens each pass writes, accepted drafts drawn from ``token_acceptance``;
    ``counters`` (vLLM's names) are advanced where given.  The one place a synthetic
    step is drawn: the engine writes it, :func:`position_draws` tabulates it."""
    n = lengths.draw(rng)
    finished: Literal["stop", "length"] = "stop"
    if n > cap:
        n, finished = cap, "length"
    tag = _TAG[role]
    words = [f"{tag}{rng.randrange(vocab)}" for _ in range(n)]
    words[0] += f"/{depth}"
    passes: list[int] = []
    if gamma > 0:
        if token_acceptance is None:
            raise ValueError("token_acceptance is required with gamma > 0")
        c = counters if counters is not None else _zero_counters(gamma)
        done = 0
        while done < n:
            c["num_target_passes"] += 1
            if not token_acceptance.drafts(rng):  # no draft: one token
                passes.append(1)
                done += 1
                continue
            a = token_acceptance.draw(rng, gamma)
            c["num_drafts"] += 1
            c["num_draft_tokens"] += gamma
            c["num_accepted_tokens"] += a
            for j in range(a):
                c["num_accepted_tokens_per_pos"][j] += 1
            passes.append(min(a + 1, n - done))
            done += a + 1
    return _Plan(words, finished, passes)


def trailing_steps(prefix: str, delimiter: str) -> tuple[list[str], list[str]]:
    """``prefix`` cut at its delimiters into (the pieces before its trailing run of
    synthetic steps, the first word of each of those steps, last first); empty pieces
    are skipped."""
    pieces = prefix.split(delimiter)
    firsts: list[str] = []
    i = len(pieces) - 1
    while i >= 0:
        words = pieces[i].split(maxsplit=1)
        if words:
            if _DEPTH_WORD.match(words[0]) is None:
                break
            firsts.append(words[0])
        i -= 1
    return pieces[:i + 1], firsts


def position_key(prefix: str, delimiter: str) -> tuple[str, int]:
    """(the prompt: ``prefix`` before its synthetic steps, how many steps follow it): what
    keys a step's draws under ``draws`` "position"."""
    head, firsts = trailing_steps(prefix, delimiter)
    return delimiter.join(head), len(firsts)


def synthetic_execution(device: str) -> str:
    """The engine's ``execution`` (what produced its numbers) on ``device``."""
    return "reference decoder, CUDA graphs" if device == "cuda" else "reference decoder, eager"


class SyntheticEngine:
    """An architecture with random weights whose output is drawn from ``acceptance``
    (see the module docstring)."""

    name = "synthetic"

    def __init__(
        self,
        model: str | Path,
        *,
        acceptance: Calibration,
        role: str = "target",
        threads: int = 1,
        delimiter: str = STEP_DELIMITER,
        speculation: TokenSpeculation | None = None,
        device: str = "cpu",
        dtype: str = "float32",
        seed: int = 0,
        context_bucket: int = DEFAULT_CONTEXT_BUCKET,
        prefill: bool = True,
        max_graphs: int = 64,
        memory_fraction: float = 0.4,
        draws: str = DRAWS[0],
    ) -> None:
        from profiler.hardware import check_device

        if draws not in DRAWS:
            raise ValueError(f"draws must be one of {', '.join(DRAWS)}, got {draws!r}")
        if role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        if not delimiter:
            raise ValueError("delimiter must be a non-empty string")
        if context_bucket < 1:
            raise ValueError(f"context_bucket must be >= 1, got {context_bucket}")
        _check_method(speculation)
        check_device(device, dtype)
        import torch

        if device == "cpu":
            torch.set_num_threads(threads)
        self.model, self.role, self.delimiter = str(model), role, delimiter
        self.device, self.dtype, self.seed = device, dtype, seed
        self.execution = synthetic_execution(device)
        self.context_bucket, self.prefill = context_bucket, prefill
        self.draws = draws
        self.acceptance = acceptance
        self.lengths = StepLengths.from_step(acceptance.step)
        self.token_acceptance = TokenAcceptance.from_token(acceptance.token)
        self._opts = {"max_entries": max_graphs, "memory_fraction": memory_fraction}
        self._fwd = _Forwards(self.model, device, dtype, seed, **self._opts)
        self.shape = self._fwd.shape
        self.speculation: TokenSpeculation | None = None
        self._drafter: _Forwards | None = None
        self._drafters: dict[str, _Forwards] = {}
        self._known: OrderedDict[bytes, None] = OrderedDict()
        self._set_speculation(speculation)

    # -- protocol ------------------------------------------------------------------------
    def count_tokens(self, text: str) -> int:
        """Synthetic tokens are words: whitespace-separated pieces."""
        return len(text.split())

    def with_speculation(self, speculation: TokenSpeculation | None) -> SyntheticEngine:
        """The same forwards (and prefix cache) with other token speculation."""
        if speculation == self.speculation:
            return self
        _check_method(speculation)
        other = copy.copy(self)
        other._set_speculation(speculation)
        return other

    def setup_clocks(self) -> dict[int, float]:
        """Seconds spent so far binding (on CUDA: capturing) forwards of new shapes, by
        set of forwards (keyed by identity: copies of the engine with other token
        speculation, and a draft engine sharing a token drafter, share them) — one-time
        setup that a call's time excludes and a problem's wall clock does not."""
        return {id(f): f.build_seconds for f in (self._fwd, *self._drafters.values())}

    def spec_decode_metrics(self) -> dict[str, Any]:
        """Cumulative counters (vLLM's names); {} without token speculation."""
        if self.speculation is None:
            return {}
        c = self._counters
        return {k: list(v) if isinstance(v, list) else v for k, v in c.items()}

    def generate_steps(
        self, prefixes: Sequence[str], max_tokens: int, *, temperature: float = 0.0,
        seed: int | None = None,
    ) -> StepBatch:
        """One drawn step per prefix; the real forwards of the padded batch, timed."""
        prompts, cap, temp = check_step_request(prefixes, max_tokens, temperature)
        before = self.spec_decode_metrics()
        plans = [self._plan(p, cap, temp, seed, i) for i, p in enumerate(prompts)]
        contexts = [self.count_tokens(p) for p in prompts]
        uncached = [self._uncached(p) for p in prompts] if self.prefill else [0] * len(prompts)
        b = len(prompts)
        with self._timed() as clock:
            base = max(contexts)
            self._prefill(b, base, max(uncached))
            if self.speculation is None:
                for t in range(max(len(p.words) for p in plans)):
                    self._fwd.run(b, 1, self._bucket(base + t))
            else:
                self._passes(plans, base, b)
        seconds = max(clock[0], 1e-9)
        outputs = [self._output(p, plan) for p, plan in zip(prompts, plans, strict=True)]
        return StepBatch(outputs, seconds,
                         counter_delta(self.spec_decode_metrics(), before) if before else {})

    def serve(self) -> ContinuousServer:
        """This model's running batch, served continuously (:class:`ContinuousServer`)."""
        return ContinuousServer(self)

    def forget(self) -> None:
        """Forget every cached prefix (a new problem starts cold, as the decoder model
        assumes; shared with every :meth:`with_speculation` copy)."""
        self._known.clear()

    # -- helpers -----------------------------------------------------------------------------
    def _set_speculation(self, speculation: TokenSpeculation | None) -> None:
        self.speculation = speculation
        self._drafter = None
        self._counters = _zero_counters(speculation.num_speculative_tokens if speculation
                                        else 0)
        if speculation is None or speculation.method != "draft_model":
            return
        arch = speculation.drafter.model
        assert arch  # TokenDrafter requires a model for draft_model
        if arch not in self._drafters:  # shared by every copy: built and captured once
            self._drafters[arch] = _Forwards(arch, self.device, self.dtype, self.seed + 1,
                                             **self._opts)
        self._drafter = self._drafters[arch]

    def release_forwards(self) -> None:
        """Drop the engine's bound (on CUDA: captured) forwards and their buffers, its
        token drafters' too; they are bound again when next run (outside the steps'
        timed share)."""
        for fwd in (self._fwd, *self._drafters.values()):
            fwd.clear()

    def _bucket(self, L: int) -> int:
        return _bucket(L, self.context_bucket)

    @contextmanager
    def _timed(self) -> Iterator[list[float]]:
        """Time the forwards run inside (in inference mode): from after the engine's
        stream has synchronized to after it and the token drafter's have, less the
        one-time binding and capture of new forwards (setup, not the step's).  The
        seconds are the yielded list's one item once the block ends."""
        fwd, drafter = self._fwd, self._drafter

        def built() -> float:
            return fwd.build_seconds + (drafter.build_seconds if drafter else 0.0)

        out = [0.0]
        fwd.sync()
        b0, t0 = built(), time.perf_counter()
        with fwd.torch.inference_mode():
            yield out
            fwd.sync()
            if drafter is not None:
                drafter.sync()
        out[0] = time.perf_counter() - t0 - (built() - b0)

    def _prefill(self, b: int, base: int, todo: int) -> None:
        """One forward of ``b`` rows × ``todo`` uncached tokens (rounded up to a power
        of two) before a context of ``base`` (nothing when ``todo`` is 0): on CUDA a
        captured graph when the batch holds at most :data:`PREFILL_GRAPH_TOKENS` tokens,
        else eager."""
        if todo > 0:
            q = 1 << (todo - 1).bit_length()
            self._fwd.run(b, q, self._bucket(base - todo), prefill_graph(b, q),
                          prefill=True)

    def _output(self, prefix: str, plan: _Plan) -> StepOutput:
        """The step ``plan`` wrote after ``prefix``; both prefixes are cached now."""
        text = " ".join(plan.words) + self.delimiter
        self._remember(prefix)
        self._remember(prefix + text)
        return StepOutput(text, len(plan.words), plan.finished)

    def _plan(self, prefix: str, cap: int, temp: float, seed: int | None, i: int) -> _Plan:
        sampled = temp > 0
        # not the architecture: two targets of one acceptance write the same steps
        key = (("position", *position_key(prefix, self.delimiter))
               if self.draws == "position" else (prefix,))
        depth = self._depth(prefix) if self.role == "draft" else 0
        gamma = self.speculation.num_speculative_tokens if self.speculation else 0
        return draw_plan(_rng(self.seed, self.role, sampled and seed, sampled and i, *key),
                         role=self.role, lengths=self.lengths, cap=cap, depth=depth,
                         vocab=self.shape.vocab_size, gamma=gamma,
                         token_acceptance=self.token_acceptance, counters=self._counters)

    def _passes(self, plans: list[_Plan], base: int, b: int) -> None:
        """Token-speculation passes of the padded batch: γ draft forwards (draft_model)
        and one verify forward of k2 tokens per sequence, per pass."""
        done = [0] * len(plans)
        for j in range(max(len(p.passes) for p in plans)):
            self._pass(b, base + max(done))
            for i, p in enumerate(plans):
                if j < len(p.passes):
                    done[i] += p.passes[j]

    def _pass(self, b: int, at: int) -> None:
        """One token-speculation pass of ``b`` rows whose longest context is ``at``: γ
        draft forwards (draft_model) and one verify forward of k2 tokens per row."""
        assert self.speculation is not None
        gamma = self.speculation.num_speculative_tokens
        if self._drafter is not None:
            for t in range(gamma):
                self._drafter.run(b, 1, self._bucket(at + t))
        self._fwd.run(b, gamma + 1, self._bucket(at))

    def _depth(self, prefix: str) -> int:
        """Draft steps in a row at the end of ``prefix`` (the depth of the next draft)."""
        depth = 0
        for first in trailing_steps(prefix, self.delimiter)[1]:
            if not first.startswith(_TAG["draft"]):
                break
            depth += 1
        return depth

    @staticmethod
    def _key(text: str) -> bytes:
        return hashlib.blake2b(text.encode(), digest_size=16).digest()

    def _remember(self, text: str) -> None:
        self._known[self._key(text)] = None
        self._known.move_to_end(self._key(text))
        while len(self._known) > 4096:
            self._known.popitem(last=False)

    def _uncached(self, prefix: str) -> int:
        """Tokens of ``prefix`` after its longest step-boundary prefix this engine has seen."""
        d = self.delimiter
        cuts = [len(prefix)]
        i = prefix.rfind(d)
        while i >= 0:
            cuts.append(i + len(d))
            i = prefix.rfind(d, 0, i)
        for cut in cuts:
            if self._key(prefix[:cut]) in self._known:
                return self.count_tokens(prefix[cut:])
        return self.count_tokens(prefix)

    # -- costs -----------------------------------------------------------------------------
    def time_forward(self, batch: int, new_tokens: int, context: int,
                     repeats: int = 5) -> float:
        """Median seconds of one target forward (b, q, L bucketed), warmed first."""
        return self._fwd.time_forward(batch, new_tokens, self._bucket(context), repeats)

    def time_draft_forward(self, batch: int, context: int, repeats: int = 5) -> float:
        """Median seconds of one token-drafter decode forward (0 without a draft model)."""
        if self._drafter is None:
            return 0.0
        return self._drafter.time_forward(batch, 1, self._bucket(context), repeats)

    def prepare(self, batches: Sequence[int], contexts: Sequence[int]) -> float:
        """Bind (and on CUDA capture) the decode and speculation forwards of ``batches`` at
        the buckets of ``contexts`` before anything is timed; the seconds it took."""
        t0 = time.perf_counter()
        buckets = sorted({self._bucket(L) for L in contexts})
        q = 1 if self.speculation is None else self.speculation.num_speculative_tokens + 1
        with self._fwd.torch.inference_mode():
            for b in sorted(set(batches)):
                for L in buckets:
                    self._fwd.run(b, 1, L)
                    if q > 1:
                        self._fwd.run(b, q, L)
                    if self._drafter is not None:
                        self._drafter.run(b, 1, L)
        self._fwd.sync()
        return time.perf_counter() - t0

    def describe(self) -> dict[str, Any]:
        """What the run record says about this engine's synthetic output."""
        return {
            "step_lengths": self.lengths.source,
            "token_acceptance": self.token_acceptance.source,
            "context_bucket": self.context_bucket,
            "prefill": self.prefill,
            "execution": "cuda graphs" if self.device == "cuda" else "eager",
            "draws": self.draws,
        }


@dataclass(eq=False)
class _Request(StepRequest):
    """One step in a :class:`ContinuousServer`'s batch: its drawn plan and progress."""

    plan: _Plan | None = None
    context: int = 0
    """Prefix tokens."""
    written: int = 0
    """Tokens written so far."""
    passes: int = 0
    """Token-speculation passes run so far."""

    def done(self) -> bool:
        assert self.plan is not None
        if self.plan.passes:
            return self.passes >= len(self.plan.passes)
        return self.written >= len(self.plan.words)


class ContinuousServer(RunningBatch):
    """A :class:`SyntheticEngine`'s running batch, served continuously on a thread of its
    own (:class:`profiler.engines.base.StepServer`).  At each forward boundary the
    server drops cancelled steps, admits every step submitted since the last one (their
    uncached tokens prefilled by one forward of the new rows, as a call prefills; their
    prefixes cached from then on, as vLLM's prefix caching keeps computed blocks), then
    runs one decode forward of every active row at the batch's longest context (with
    token speculation: one pass, γ draft forwards and a verify forward of k2 tokens per
    row, each row advancing by its own pass); a row whose step is written leaves and
    its future gets the step.  A step's words, length and passes are drawn at
    submission, as :meth:`SyntheticEngine.generate_steps` draws them."""

    name = "synthetic-serve"

    def __init__(self, engine: SyntheticEngine) -> None:
        super().__init__()
        self.engine = engine
        self._active: list[_Request] = []
        self._launch()

    def _request(self, prefix: str, max_tokens: int) -> _Request:
        eng = self.engine
        return _Request(prefix, max_tokens, plan=eng._plan(prefix, max_tokens, 0.0, None, 0),
                        context=eng.count_tokens(prefix))

    def _busy(self) -> bool:
        return any(not r.future.cancelled() for r in self._active)

    def _shutdown(self) -> list[StepRequest]:
        left, self._active = self._active, []
        return list(left)

    def _iterate(self, new: list[StepRequest]) -> None:
        eng = self.engine
        admit = [r for r in new if isinstance(r, _Request) and not r.future.cancelled()]
        rows = [r for r in self._active if not r.future.cancelled()] + admit

        with eng._timed() as clock:
            if admit and eng.prefill:
                eng._prefill(len(admit), max(r.context for r in admit),
                             max(eng._uncached(r.prefix) for r in admit))
            for r in admit:  # their KV exists now: a row admitted later reuses it
                eng._remember(r.prefix)
            if rows:
                at = max(r.context + r.written for r in rows)
                if eng.speculation is None:
                    eng._fwd.run(len(rows), 1, eng._bucket(at))
                    for r in rows:
                        r.written += 1
                else:
                    eng._pass(len(rows), at)
                    for r in rows:
                        assert r.plan is not None
                        if r.passes < len(r.plan.passes):
                            r.written += r.plan.passes[r.passes]
                            r.passes += 1
        self.busy_seconds += max(clock[0], 0.0)
        self._active = []
        for r in rows:
            if r.done():
                assert r.plan is not None
                r.finish(eng._output(r.prefix, r.plan))
            else:
                self._active.append(r)


def _zero_counters(gamma: int) -> dict[str, Any]:
    return {"num_drafts": 0, "num_draft_tokens": 0, "num_accepted_tokens": 0,
            "num_accepted_tokens_per_pos": [0] * gamma, "num_target_passes": 0}


# --- what the synthetic engines cost, as a calibration ----------------------------------
def cost_point(configs: Sequence[Any], prompt_tokens: int) -> tuple[int, int, int]:
    """Where :func:`prepare_run` times a run's scalar costs: (the context halfway from the
    prompt to the longest answer, the widest batch — a sync tree's nodes or k1·k2 — and
    the largest k2) of ``configs`` from prompts of ``prompt_tokens``."""
    longest = prompt_tokens + max(c.max_steps * c.max_step_tokens for c in configs)
    widest = max(1, *(max(sum(c.width ** i for i in range(c.k1)), c.k1 * c.k2)
                      for c in configs))
    return (prompt_tokens + longest) // 2, widest, max(c.k2 for c in configs)


def scalar_costs(T: dict[int, float], draft_T1: float | None, *, context: int, k2: int = 1,
                 V: float | None = None, drafter_T1: float = 0.0) -> dict[str, Any]:
    """The model's cost inputs from forward times at ``context``: T(b), c1 =
    T_draft(1) / T(1) (None without a draft), and for k2 > 1 the effective
    c2 = (V(k2) + γ·T_drafter(1) − T(1)) / (γ·T(1)) of the target's token speculation
    (one pass costs 1 + γ·c2 target forwards, as g assumes)."""
    out: dict[str, Any] = {"context": context, "T": T, "draft_T1": draft_T1,
                           "c1": None if draft_T1 is None else draft_T1 / T[1], "c2": None}
    if k2 > 1:
        if V is None:
            raise ValueError("V must be given for k2 > 1")
        gamma = k2 - 1
        out.update(V=V, drafter_T1=drafter_T1,
                   c2=max(0.0, (V + gamma * drafter_T1 - T[1]) / (gamma * T[1])))
    return out


def measure_costs(target: SyntheticEngine, draft: SyntheticEngine | None, *, context: int,
                  widths: Sequence[int] = (1,), k2: int = 1, repeats: int = 5
                  ) -> dict[str, Any]:
    """The model's cost inputs (:func:`scalar_costs`), timed on the engines' own forwards
    at ``context``: T(b) of the target (decode, b sequences) for ``widths``, the draft's
    T(1), and for k2 > 1 the verification V(k2) and the token drafter's forward."""
    widths = sorted({1, *widths})
    T = {b: target.time_forward(b, 1, context, repeats) for b in widths}
    draft_T1 = draft.time_forward(1, 1, context, repeats) if draft is not None else None
    if k2 <= 1:
        return scalar_costs(T, draft_T1, context=target._bucket(context))
    V = target.time_forward(1, k2, context, repeats)
    drafter = target.time_draft_forward(1, context, repeats)
    return scalar_costs(T, draft_T1, context=target._bucket(context), k2=k2, V=V,
                        drafter_T1=drafter)


def prepare_run(target: SyntheticEngine, draft: SyntheticEngine | None,
                configs: Sequence[Any], prompt_tokens: int) -> dict[str, Any]:
    """Bind (on CUDA: capture) every decode and speculation forward that ``configs``
    (:class:`~specmodel.config.SpecConfig`) will run from prompts of ``prompt_tokens``,
    so that no timed step pays for it, then time the costs (:func:`measure_costs`, at
    the middle of the contexts, for the widest configuration and the largest k2)."""
    longest = prompt_tokens + max(c.max_steps * c.max_step_tokens for c in configs)
    contexts = [*range(prompt_tokens, longest + 1, target.context_bucket), longest]
    t0 = time.perf_counter()
    for cfg in configs:
        tree = sum(cfg.width ** i for i in range(cfg.k1))  # sync tree nodes (W = 1: k1)
        target.with_speculation(cfg.token_speculation()).prepare(range(1, tree + 1), contexts)
        if draft is not None and cfg.k1 > 1:
            draft.prepare(range(1, cfg.width ** (cfg.k1 - 1) + 1), contexts)
    deepest = max(configs, key=lambda c: c.k2)
    context, widest, _ = cost_point(configs, prompt_tokens)
    costs = measure_costs(target.with_speculation(deepest.token_speculation()), draft,
                          context=context, widths=range(1, widest + 1), k2=deepest.k2)
    costs["prepare_seconds"] = time.perf_counter() - t0
    return costs


def measure_contention(target: str, draft: str, *, context: int, device: str = "cpu",
                       dtype: str = "float32", threads: int = 1, seconds: float = 1.0,
                       forwards: int = 150, rounds: int = 3, seed: int = 0,
                       decoders: tuple[Any, Any] | None = None,
                       graphs: bool | None = None) -> tuple[float, float]:
    """(target's, draft's) slowdown when their decode forwards (b = 1 at ``context``) run
    at the same time in two threads of this process (as the async decoder's workers do),
    on fresh random-weight decoders (or ``decoders``, reference decoders of the two
    already built, whose weights are reused): the median forward time together over
    alone.  On CUDA each side runs as the engines run it (``graphs``, the default
    there): a captured graph replayed on its own stream, each forward timed to its own
    stream's completion (not the device's, which would wait for the other side's work
    too); ``graphs`` False runs eager forwards timed to the device's completion (how
    the runs of 2026-11-27 measured it).  Each phase (target alone, draft
    alone, both) lasts ``seconds`` or until each side has run ``forwards`` forwards,
    whichever comes first; the phases are interleaved ``rounds`` times."""
    import statistics

    import torch

    from profiler.hardware import Point, ReferenceDecoder
    from specmodel.hardware.shape import load_shape

    if graphs is None:
        graphs = device == "cuda"
    if graphs and device != "cuda":
        raise ValueError(f"graphs needs device cuda, got device {device!r}")
    if device == "cpu":
        torch.set_num_threads(threads)
    sides: list[tuple[Callable[[], Any], Callable[[], None]]] = []  # (forward, its sync)
    with torch.inference_mode():
        for i, arch in enumerate((target, draft)):
            dec = (decoders[i] if decoders is not None and decoders[i] is not None
                   else ReferenceDecoder(load_shape(arch), device, dtype, seed + i))
            fn = dec.bind(Point("decode", 1, 1, context))
            if not graphs:
                sides.append((fn, torch.cuda.synchronize if device == "cuda"
                              else (lambda: None)))
                continue
            stream = torch.cuda.Stream()
            replay = _captured(torch, stream, fn)

            def on_stream(replay: Any = replay, stream: Any = stream) -> None:
                with torch.cuda.stream(stream):
                    replay()

            sides.append((on_stream, stream.synchronize))

    def loop(side: tuple[Callable[[], Any], Callable[[], None]], until: float,
             out: list[float], stop: threading.Event, count: list[int], sides: int) -> None:
        fn, sync = side
        with torch.inference_mode():
            for _ in range(2):
                fn()
            sync()
            n = 0  # at least one timed call, however long the warm-up took
            while n == 0 or (not stop.is_set() and time.perf_counter() < until):
                t0 = time.perf_counter()
                fn()
                sync()
                out.append(time.perf_counter() - t0)
                n += 1
                if n == forwards:
                    count[0] += 1  # (the GIL makes this safe enough for a stop flag)
                    if count[0] >= sides:
                        stop.set()

    alone: list[list[float]] = [[], []]
    both: list[list[float]] = [[], []]
    for _ in range(rounds):
        for i, side in enumerate(sides):
            loop(side, time.perf_counter() + seconds, alone[i], threading.Event(), [0], 1)
        stop, count = threading.Event(), [0]
        until = time.perf_counter() + seconds
        th = [threading.Thread(target=loop, args=(side, until, both[i], stop, count, 2))
              for i, side in enumerate(sides)]
        for t in th:
            t.start()
        for t in th:
            t.join()
    ratio = [statistics.median(both[i]) / statistics.median(alone[i]) for i in range(2)]
    return ratio[0], ratio[1]


def profile_costs(target: SyntheticEngine, draft: SyntheticEngine | None,
                  configs: Sequence[Any], prompt_tokens: int, *, repeats: int = 5,
                  warmup: int = 1, contention_seconds: float = 1.0,
                  progress: Any = None, share_weights: bool | None = None,
                  contention_graphs: bool | None = None, sweeps: int = 1) -> list[Any]:
    """Hardware profiles (:class:`~specmodel.formats.hardware.HardwareProfile`) of the
    forwards ``configs`` can run, measured by :func:`profiler.hardware.measure` on fresh
    random-weight decoders of the same architectures (not the run's), or with
    ``share_weights`` (the default on CUDA) on the run engines' own weights with fresh
    buffers (a second copy of a 32B model's weights does not fit beside the first on
    an 80 GB GPU): for the target
    T(b, L) and F(b, q, L) for verification (q = k2) and prefill (q a power of two) at
    every bucketed context; for the step draft T(b, L) and its prefills; for each token
    drafter T(b, L); and the target's and the draft's slowdown when both run at once
    (``concurrent``, :func:`measure_contention`, with ``graphs`` =
    ``contention_graphs``).  The decoder model
    (:meth:`specmodel.decodermodel.CostModel.from_calibration`) prices a run from them.
    ``sweeps`` (at most ``repeats``): 1 times each architecture's points in alternating
    chunks of decode and verification forwards, each chunk on a freshly built decoder and
    each point's repeats back to back; more times all of an architecture's points, in
    the same order, on one decoder in that many passes, each timing its share of every
    point's repeats (:func:`profiler.hardware.measure`'s ``sweeps``)."""
    from profiler.hardware import Point, measure, read_config
    from specmodel.formats.hardware import HardwareProfile

    dev = {"device": target.device, "dtype": target.dtype,
           "path": "graph" if target.device == "cuda" else "eager",
           "repeats": repeats, "warmup": warmup, "threads": 1, "seed": target.seed + 7}
    if target.device == "cpu":
        import torch

        dev["threads"] = torch.get_num_threads()
    jobs = [(arch, [[Point(*p) for p in pts_d], [Point(*p) for p in pts_v]])
            for arch, pts_d, pts_v in profile_points(
                target.model, None if draft is None else draft.model, configs,
                prompt_tokens, context_bucket=target.context_bucket,
                prefill=target.prefill)]
    if share_weights is None:
        share_weights = target.device == "cuda"
    own = {}
    if share_weights:  # and room for the profile's buffers: the engines' forwards go
        for e in (target, draft):
            if e is not None:
                e.release_forwards()
                own[e.model] = e._fwd.decoder
    out = []
    for arch, (pts_d, pts_v) in jobs:
        shape, config = read_config(arch)
        # decode forwards are many and cheap: more repeats for a stable mean; decode and
        # verification in alternating chunks, so that a burst of load on a shared
        # machine does not fall on one kind only
        data = None
        chunks = max(1, min(len(pts_d), len(pts_v), 4))
        order = [(sub, rep) for c in range(chunks)
                 for sub, rep in ((pts_d[c::chunks], 4 * repeats), (pts_v[c::chunks], repeats))
                 if sub]
        if sweeps > 1:  # one decoder, every point in each pass
            data = measure(shape, config, [p for sub, _ in order for p in sub],
                           **dev, runner=own.get(arch), sweeps=sweeps,
                           point_repeats=[rep for sub, rep in order for _ in sub])
        else:
            for sub, rep in order:
                more = measure(shape, config, sub, **{**dev, "repeats": rep},
                               runner=own.get(arch))
                if data is None:
                    data = more
                else:
                    data["points"] += more["points"]
                    data["measure_seconds"] += more["measure_seconds"]
        assert data is not None
        pts = [*pts_d, *pts_v]
        out.append(data)
        if progress is not None:
            progress(f"profiled {shape.name}: {len(pts)} forwards in "
                     f"{data['measure_seconds']:.1f} s")
    if draft is not None and len(out) > 1:
        ctx = forward_grid(configs, prompt_tokens, target.context_bucket)["contexts"]
        mid = ctx[len(ctx) // 2]
        tc, dc = measure_contention(target.model, draft.model, context=mid,
                                    device=target.device, dtype=target.dtype,
                                    threads=dev["threads"], seconds=contention_seconds,
                                    decoders=(own.get(target.model), own.get(draft.model))
                                    if own else None, graphs=contention_graphs)
        out[0]["concurrent"] = {out[1]["architecture"]["name"]: round(tc, 4)}
        out[1]["concurrent"] = {out[0]["architecture"]["name"]: round(dc, 4)}
        if progress is not None:
            progress(f"contention (both decoding at once, L = {mid}): target {tc:.3f}×, "
                     f"draft {dc:.3f}×")
    return [HardwareProfile.model_validate(d) for d in out]


def position_draws(acceptance: Calibration, *, seed: int, prompts: Sequence[str],
                   target: str | Path | Shape, draft: str | Path | Shape, steps: int,
                   cap: int, gammas: Sequence[int] = (), delimiter: str = STEP_DELIMITER,
                   source: str | None = None) -> DrawnSample:
    """The draws a sweep of synthetic engines with position draws (seed ``seed``, the
    architectures ``target`` and ``draft`` — names, ``config.json`` files or shapes —
    both greedy) meets on ``prompts``, as the decoder model takes them
    (:class:`~specmodel.decodermodel.DrawnSample`): at each of
    ``steps`` positions the target's and the draft's step length (capped at ``cap``),
    with token speculation of each γ in ``gammas`` both roles' passes, and the uniform of
    :class:`profiler.verifiers.SyntheticVerifier` (seed ``seed``) for the draft drafted
    there at every depth 0 … position.  Drawn by :func:`draw_plan` from the streams the
    engines key, so nothing runs and nothing is timed."""
    from specmodel.decodermodel.draws import DrawnProblem, DrawnSample
    from specmodel.hardware.shape import Shape, load_shape

    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    if cap < 1:
        raise ValueError(f"cap must be >= 1, got {cap}")
    if not prompts:
        raise ValueError("prompts must hold at least one prompt")
    bad = [g for g in gammas if g < 1]
    if bad:
        raise ValueError(f"gammas must be >= 1, got {bad[0]}")
    lengths = StepLengths.from_step(acceptance.step)
    token = TokenAcceptance.from_token(acceptance.token)
    vocab = {role: (arch.vocab_size if isinstance(arch, Shape) else
                    load_shape(str(arch)).vocab_size)
             for role, arch in (("target", target), ("draft", draft))}

    def plan(role: str, head: str, pos: int, depth: int = 0, gamma: int = 0) -> _Plan:
        return draw_plan(_rng(seed, role, False, False, "position", head, pos), role=role,
                         lengths=lengths, cap=cap, depth=depth, vocab=vocab[role],
                         gamma=gamma, token_acceptance=token)

    def text(p: _Plan) -> str:
        return " ".join(p.words) + delimiter

    problems = []
    for prompt in prompts:
        head = position_key(prompt, delimiter)[0]
        tl, dl, us = [], [], []
        passes: dict[str, dict[int, list[tuple[int, ...]]]] = {
            "target": {g: [] for g in gammas}, "draft": {g: [] for g in gammas}}
        for pos in range(steps):
            t = plan("target", head, pos)
            drafts = [plan("draft", head, pos, d) for d in range(pos + 1)]  # by depth
            tl.append(len(t.words))
            dl.append(len(drafts[0].words))
            us.append(tuple(uniform("verify", seed, text(t), text(d)) for d in drafts))
            for role, table in passes.items():
                for g in gammas:
                    table[g].append(tuple(plan(role, head, pos, 0, g).passes))
        problems.append(DrawnProblem(
            tuple(tl), tuple(dl), tuple(us),
            {g: tuple(v) for g, v in passes["target"].items()},
            {g: tuple(v) for g, v in passes["draft"].items()}))
    return DrawnSample(tuple(problems), source or (
        f"synthetic engines' position draws: seed {seed}, {len(prompts)} prompts, "
        f"{steps} positions of <= {cap} tokens, step lengths {lengths.source}"))


def record_draws(record: RunRecord, prompts: Sequence[str] | None = None
                 ) -> DrawnSample | None:
    """The draws a synthetic-acceptance run met (:func:`position_draws`), rebuilt from what
    its record ``record`` stores: the synthetic settings' seed, acceptance and
    architectures, the configurations' step limits, delimiter and token-speculation
    depths, and the problems' prompts (``prompts`` for a record from before they were
    stored).  None when the run did not draw by position (its draws depend on the
    prefixes it met, so nothing but the run knows them).

    The acceptance is the one the engines read (``settings.synthetic.acceptance``, a
    preset or a file) where it can be loaded, else the record's calibration; the
    architectures' vocabularies come from the record's hardware profiles, else from the
    embedded architectures.  Whether the rebuilt draws are the run's is what
    :func:`specmodel.prediction.reproduces_on_draws` checks.  One-line ValueErrors name
    what is missing."""
    syn = record.settings.synthetic
    if syn is None:
        raise ValueError("the run record is not a synthetic-acceptance run (its settings "
                         "have no synthetic section): it has no draws to rebuild")
    if syn.draws != "position":
        return None
    if prompts is None:
        prompts = record.settings.prompts
    if not prompts:
        raise ValueError("the run record does not store its problems' prompts (a record "
                         "from before they were stored): its draws cannot be rebuilt")
    try:
        acceptance = load_acceptance(syn.acceptance)
    except ValueError:
        if record.calibration is None:
            raise ValueError(f"the run's acceptance {syn.acceptance!r} cannot be loaded and "
                             "the record carries no calibration") from None
        acceptance = record.calibration
    profiled = {h.architecture.name: h.architecture.shape()
                for h in (record.calibration.hardware if record.calibration else None) or []}
    arch = syn.architectures or {}
    shapes: dict[str, Any] = {}
    for role in ROLES:
        name = arch.get(role)
        if name is None:
            raise ValueError(f"the run record names no {role} architecture "
                             "(settings.synthetic.architectures)")
        shapes[role] = profiled.get(name, name)

    def one(what: str, values: set[Any]) -> Any:
        if len(values) != 1:
            raise ValueError(f"the run's configurations differ in {what} "
                             f"({sorted(map(str, values))}): one sample cannot hold them")
        return values.pop()

    configs = [c.config for c in record.configs]
    return position_draws(
        acceptance, seed=syn.seed, prompts=list(prompts), target=shapes["target"],
        draft=shapes["draft"], steps=one("max_steps", {c.max_steps for c in configs}),
        cap=one("max_step_tokens", {c.max_step_tokens for c in configs}),
        gammas=sorted({c.k2 - 1 for c in configs if c.k2 > 1}),
        delimiter=one("step_delimiter", {c.step_delimiter for c in configs}))


def architectures(target: SyntheticEngine | str, draft: SyntheticEngine | str | None,
                  configs: Sequence[Any]) -> dict[str, str]:
    """Role → the architecture name its hardware profile carries: ``target``, ``draft``
    (engines, or the architectures they are built from) and each token drafter by its
    model (what the run record's synthetic settings keep)."""
    from specmodel.hardware.shape import load_shape

    def name(x: SyntheticEngine | str) -> str:
        return load_shape(x).name if isinstance(x, str) else x.shape.name

    out = {"target": name(target)}
    if draft is not None:
        out["draft"] = name(draft)
    for m in forward_grid(configs, 1, DEFAULT_CONTEXT_BUCKET)["drafters"]:
        out[m] = load_shape(m).name
    return out


def merge_profiles(passes: Sequence[Sequence[Any]]) -> list[Any]:
    """Profiles of the same architectures measured in several passes (each a
    :func:`profile_costs` list) as one list: per point, the median over the passes of
    their means and medians, the smallest minimum and largest maximum, the forwards
    summed; ``concurrent`` the median over the passes.  Passes taken at different times
    (before, between and after a run's rounds) describe a shared machine's average state
    better than one pass (its load drifts)."""
    import statistics

    from specmodel.formats.hardware import HardwareProfile

    first = passes[0]
    out = []
    for i, prof in enumerate(first):
        same = [p[i] for p in passes]
        rows: dict[tuple[Any, ...], list[Any]] = {}
        for p in same:
            for pt in p.points:
                rows.setdefault((pt.kind, pt.batch, pt.new_tokens, pt.context,
                                 pt.shared_prefix), []).append(pt)
        points = []
        for pts in rows.values():
            timed = [p for p in pts if p.ms is not None]
            if not timed:
                points.append(pts[0].model_dump(mode="json"))
                continue
            med = statistics.median(p.ms[0] for p in timed)
            lo, hi = min(p.ms[1] for p in timed), max(p.ms[2] for p in timed)
            means = [p.mean_ms for p in timed if p.mean_ms is not None]
            points.append({**timed[0].model_dump(mode="json"),
                           "ms": [med, min(lo, med), max(hi, med)],
                           "n": sum(p.n or 0 for p in timed) or None,
                           "mean_ms": statistics.median(means) if means else None})
        conc: dict[str, float] | None = None
        if all(p.concurrent for p in same):
            conc = {k: statistics.median(p.concurrent[k] for p in same)
                    for k in same[0].concurrent or {}}
        out.append(HardwareProfile.model_validate({
            **prof.model_dump(mode="json"), "points": points, "concurrent": conc,
            "measure_seconds": sum(p.measure_seconds for p in same),
            "date": same[-1].date}))
    return out


def step_law_histogram(step: StepLevel, top: int = 1 << 20) -> dict[int, int] | None:
    """The synthetic engine's step-length law as a histogram (counts out of ``top``) when
    the calibration has none (a geometric law with its mean, as :class:`StepLengths`
    draws it), so a model reading the calibration draws the same lengths; None when it
    has one."""
    law = StepLengths.from_step(step)
    if law.lengths:
        return None
    if law.mean <= 1.0:
        return {1: top}
    p = 1.0 / law.mean
    out, k = {}, 1
    while True:
        c = round(top * p * (1 - p) ** (k - 1))
        if c < 1 and k > law.mean:
            break
        if c >= 1:
            out[k] = c
        k += 1
    return out


def with_costs(calibration: Calibration, costs: dict[str, Any], what: str,
               models: dict[str, str] | None = None, hardware: Sequence[Any] = ()
               ) -> Calibration:
    """``calibration`` (the acceptance) with c1, c2 and T(b) replaced by ``costs``
    (:func:`measure_costs`), so that its prediction prices the synthetic run's own
    forwards; c1 is kept below 1 (the format's bound) and the provenance says so;
    ``models`` (role -> architecture) replaces the provenance's models; ``hardware``
    (:func:`profile_costs`) is added to its hardware profiles; the step-length law the
    engine draws is written as a histogram when the calibration has none
    (:func:`step_law_histogram`)."""
    from specmodel.formats.calibration import Calibration as Cal
    from specmodel.formats.hardware import HardwareProfile

    data = calibration.model_dump(mode="json")
    notes = []
    hist = step_law_histogram(calibration.step)
    if hist is not None:
        data["step"]["step_tokens_histogram"] = {str(k): v for k, v in hist.items()}
        law = StepLengths.from_step(calibration.step).source
        notes.append(f"step lengths: the engine's law ({law}) as a histogram")
    if costs.get("c1") is not None:
        c1 = min(float(costs["c1"]), 0.999)
        data["step"]["c1"] = c1
        notes.append(f"c1 {costs['c1']:.4f}" + (" (kept at 0.999)" if c1 != costs["c1"] else ""))
    if costs.get("c2") is not None:
        data["token"]["c2"] = float(costs["c2"])
        notes.append(f"c2 {costs['c2']:.4f} (verify forward {costs['V'] * 1e3:.2f} ms)")
    data["batch_cost"] = {"points": [{"batch": b, "time": t} for b, t in
                                     sorted(costs["T"].items())], "unit": "s/step"}
    notes.append("T(b) " + ", ".join(f"{b}: {t * 1e3:.2f} ms" for b, t in
                                     sorted(costs["T"].items())))
    if hardware:
        keys = {p.key() for p in hardware}
        data["hardware"] = [p for p in data.get("hardware") or []
                            if HardwareProfile.model_validate(p).key() not in keys] + [
            p.model_dump(mode="json") for p in hardware]
        notes.append("hardware profiles of " + ", ".join(
            p.architecture.name for p in hardware) + " (separate decoders, before the run)")
    data["name"] = f"{calibration.name}+synthetic-costs"
    prov = data["provenance"]
    if models is not None:
        prov["models"] = dict(models)
    prov["description"] = (
        f"acceptance (α1, α2, by position, step lengths) of calibration {calibration.name}; "
        f"costs measured on the synthetic engines' forwards ({what}, context "
        f"{costs['context']}): " + "; ".join(notes) + ". " + prov["description"])
    return Cal.model_validate(data)
