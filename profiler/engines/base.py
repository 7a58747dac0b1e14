"""What every engine is: the :class:`Engine` protocol, its step records, and helpers.

An engine generates one reasoning step for each prefix of a batch.  A step ends
at the step delimiter (kept in the text) or at a token cap.  Generation is greedy
unless a temperature is given (the decoder samples the extra branches of
multi-branch drafting).  Token-level speculation inside a step is the engine's
(:class:`specmodel.config.TokenSpeculation`); :meth:`Engine.with_speculation`
gives the same model with other speculation.  No torch / transformers / vllm here.
"""

from __future__ import annotations

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
