"""The decoder's core: :class:`LookaheadDecoder` runs one problem with the algorithm its
:class:`~specmodel.config.SpecConfig` names, through timed engine and verifier calls
that keep the problem's :class:`~profiler.decoder.records.Tally`.

The algorithms live beside it: target-only decoding here (:meth:`LookaheadDecoder.plain`),
Algorithm 1 and the multi-branch tree in :mod:`profiler.decoder.sync`, the
asynchronous scheduler in :mod:`profiler.decoder.asynchronous`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Literal

from profiler.decoder.asynchronous import run_async
from profiler.decoder.records import (
    ProblemRun,
    StepRecord,
    Tally,
    ends_answer,
    finish_reason,
)
from profiler.decoder.sync import run_sync
from profiler.engines import Engine, StepOutput, counter_delta
from profiler.problems import Problem, final_answer, format_prompt, score_answer
from profiler.verifiers import Verifier
from specmodel.config import DECODER_TOKEN_METHODS, SpecConfig
from specmodel.formats.jsonio import timestamp

__all__ = ["Finish", "LookaheadDecoder"]

Finish = Literal["answer", "end", "max_steps"]
"""Why decoding a problem stopped."""


class LookaheadDecoder:
    """Lookahead Reasoning with real engines.

    ``target`` must already carry the token-level speculation the configuration
    asks for (see :meth:`for_config`); ``draft`` and ``verifier`` may be None when
    ``k1 = 1``.  A configuration with k2 > 1 must use a token method this decoder
    runs (:data:`specmodel.config.DECODER_TOKEN_METHODS`).
    """

    def __init__(
        self,
        target: Engine,
        draft: Engine | None,
        verifier: Verifier | None,
        config: SpecConfig,
    ) -> None:
        if not isinstance(config, SpecConfig):
            raise TypeError(f"config must be a SpecConfig, got {type(config).__name__}")
        if config.k2 > 1 and config.token.method not in DECODER_TOKEN_METHODS:
            raise ValueError(
                f"token.method {config.token.method!r} cannot run inside the decoder's steps "
                f"(k2 = {config.k2}): it runs {', '.join(DECODER_TOKEN_METHODS)}"
            )
        if config.k1 > 1 and (draft is None or verifier is None):
            raise ValueError("draft and verifier must be given when k1 > 1")
        if config.target_batching == "continuous" and not callable(
                getattr(target, "serve", None)):
            raise ValueError(
                f"target_batching 'continuous' needs an engine that batches continuously "
                f"(vLLM and the synthetic engine do); the {target.name} engine runs one call at a "
                "time")
        self.target = target
        self.draft = draft
        self.verifier = verifier
        self.config = config

    @classmethod
    def for_config(
        cls, target: Engine, draft: Engine | None, verifier: Verifier | None, config: SpecConfig
    ) -> LookaheadDecoder:
        """Give ``target`` the configuration's token speculation (an engine that can share
        its loaded weights does; vLLM builds a second engine) and build the decoder."""
        decoder = cls(target, draft, verifier, config)  # checks the configuration first
        decoder.target = target.with_speculation(config.token_speculation())
        return decoder

    # -- one problem ------------------------------------------------------------

    def decode(self, problem: Problem) -> ProblemRun:
        """Decode one problem and record what happened."""
        prompt = format_prompt(problem)
        metrics_before = self.target.spec_decode_metrics()
        setup_before = self._setup_clocks()
        tally = Tally(seed=problem.index * 1_000_003)
        t0 = tally.started
        if self.config.k1 == 1:
            steps, finished = self.plain(prompt, tally)
        elif self.config.mode == "sync":
            steps, finished = run_sync(self, prompt, tally)
        else:
            steps, finished = run_async(self, prompt, tally)
        seconds = time.perf_counter() - t0
        setup_after = self._setup_clocks()
        output = "".join(s.text for s in steps)
        return ProblemRun(
            problem=problem.index,
            output=output,
            steps=steps,
            drafted_steps=tally.drafted,
            accepted_steps=tally.accepted,
            wasted_draft_steps=tally.draft_calls - tally.drafted,
            draft_steps=tally.draft_calls,
            draft_ends=tally.draft_ends,
            target_steps=tally.target_steps,
            target_batches=tally.target_batches,
            output_tokens=self.target.count_tokens(output),
            seconds=seconds,
            draft_seconds=tally.draft_seconds,
            target_seconds=tally.target_seconds,
            verify_seconds=tally.verify_seconds,
            setup_seconds=None if setup_after is None or setup_before is None else max(
                0.0, sum(v - setup_before.get(k, 0.0) for k, v in setup_after.items())),
            answer=final_answer(problem, output),
            correct=score_answer(problem, output),
            finished=finished,
            spec_metrics=counter_delta(self.target.spec_decode_metrics(), metrics_before),
            finished_at=timestamp(),
            calls=sorted(tally.calls, key=lambda c: c.start),
        )

    def _setup_clocks(self) -> dict[int, float] | None:
        """The target's and the draft's one-time setup clocks (binding and capturing
        forwards of new shapes), by set of forwards so that shared ones count once;
        None when neither engine reports them."""
        engines = [e for e in (self.target, self.draft)
                   if e is not None and callable(getattr(e, "setup_clocks", None))]
        if not engines:
            return None
        clocks: dict[int, float] = {}
        for e in engines:
            clocks.update(e.setup_clocks())
        return clocks

    def run(
        self,
        problems: Sequence[Problem],
        progress: Callable[[int, int, str], None] | None = None,
    ) -> list[ProblemRun]:
        """Decode every problem in order; ``progress(done, total, message)`` after each."""
        out = []
        for i, p in enumerate(problems):
            out.append(self.decode(p))
            if progress is not None:
                r = out[-1]
                progress(
                    i + 1,
                    len(problems),
                    f"problem {p.index}: {r.output_tokens} tokens "
                    f"in {r.seconds:.1f} s, {'right' if r.correct else 'wrong'}",
                )
        return out

    # -- engines and verifier, timed into the tally ------------------------------

    def target_steps(self, prefixes: list[str], tally: Tally) -> list[StepOutput]:
        """The target's step for each prefix, as one batch."""
        began = time.perf_counter()
        batch = self.target.generate_steps(prefixes, self.config.max_step_tokens)
        tally.log("target", batch, began)
        tally.target_seconds += batch.seconds
        tally.target_steps += batch.batch
        tally.target_batches += 1
        return batch.outputs

    def draft_steps(
        self, prefixes: list[str], tally: Tally, temperature: float = 0.0,
        seed: int | None = None,
    ) -> list[StepOutput]:
        """The draft's step for each prefix, greedy or sampled at ``temperature``."""
        assert self.draft is not None
        began = time.perf_counter()
        if temperature > 0:
            batch = self.draft.generate_steps(prefixes, self.config.max_step_tokens,
                                              temperature=temperature, seed=seed)
        else:
            batch = self.draft.generate_steps(prefixes, self.config.max_step_tokens)
        tally.log("draft", batch, began, sampled=temperature > 0)
        tally.draft_seconds += batch.seconds
        tally.draft_calls += batch.batch
        tally.draft_ends += sum(ends_answer(o, self.config.step_delimiter)
                                for o in batch.outputs)
        return batch.outputs

    def verify_one(self, target_step: str, draft_step: str, tally: Tally) -> bool:
        """Judge one draft step against the target's; counts one drafted position."""
        assert self.verifier is not None
        verdict = self.verifier.verify([(target_step, draft_step)])[0]
        tally.verify_seconds += verdict.seconds
        tally.drafted += 1
        tally.accepted += verdict.accepted
        return verdict.accepted

    def verify_many(self, pairs: list[tuple[str, str]], tally: Tally) -> list[bool]:
        """Judge (target step, draft step) pairs as one batch (positions are counted by
        the caller: several branches may share one)."""
        assert self.verifier is not None
        verdicts = self.verifier.verify(pairs)
        tally.verify_seconds += sum(v.seconds for v in verdicts)
        return [v.accepted for v in verdicts]

    def commit(self, steps: list[StepRecord], out: StepOutput,
               source: Literal["draft", "target"]) -> bool:
        """Append a committed step; whether it ends the answer."""
        steps.append(StepRecord(text=out.text, source=source, tokens=out.tokens))
        return ends_answer(out, self.config.step_delimiter)

    def ends(self, step: StepOutput) -> bool:
        """Whether ``step`` ends the answer under this configuration's delimiter."""
        return ends_answer(step, self.config.step_delimiter)

    # -- target only --------------------------------------------------------------

    def plain(self, prompt: str, tally: Tally) -> tuple[list[StepRecord], Finish]:
        """Target-only decoding, one step at a time (k1 = 1; the baseline)."""
        steps: list[StepRecord] = []
        prefix = prompt
        while len(steps) < self.config.max_steps:
            out = self.target_steps([prefix], tally)[0]
            prefix += out.text
            if self.commit(steps, out, "target"):
                return steps, finish_reason(out)
        return steps, "max_steps"
