"""Async Lookahead Reasoning: draft and target at the same time, on two worker threads.

Each engine keeps its own threads (torch releases the GIL).  A target step
starts as soon as its prefix exists: whenever the target worker is free it takes
every position whose prefix is known (the committed prefix plus the drafts so
far) and has no target step yet, as one batch, up to k1 positions ahead; the
draft runs ahead of the committed prefix by at most k1 − 1 steps.  The verifier
judges position by position in order; on a rejection the target's step is
committed, the speculative chain is dropped and every job still running on it is
discarded when it returns (a running generate call cannot be interrupted, so its
time is spent, and counted: leaving the worker pools waits for it).

With ``target_batching`` ``continuous`` (:class:`ContinuousScheduler`) the target is
an engine's running batch (:meth:`profiler.engines.base.ContinuousEngine.serve`)
rather than a worker taking one call at a time: each position whose prefix is known
is submitted on its own as soon as it is, joins the batch at the engine's next
forward and returns when its step is written; on a rejection the steps of the dropped
chain are cancelled and leave the batch at the next forward.
"""

from __future__ import annotations

from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any

from profiler.decoder.records import StepRecord, Tally, ends_answer, finish_reason
from profiler.engines import StepOutput, init_worker_thread

if TYPE_CHECKING:
    from profiler.decoder.core import Finish, LookaheadDecoder

__all__ = ["AsyncScheduler", "ContinuousScheduler", "run_async"]


class AsyncScheduler:
    """The state of one async problem: the committed steps, the speculative chain after
    them, the target steps known ahead, and the jobs in flight (tagged with the chain's
    epoch, so a job on a dropped chain is recognised when it returns)."""

    def __init__(self, dec: LookaheadDecoder, prompt: str, tally: Tally) -> None:
        self.dec = dec
        self.cfg = dec.config
        self.tally = tally
        self.steps: list[StepRecord] = []
        """Committed steps."""
        self.committed = prompt
        """The prompt and the committed steps' text."""
        self.chain: list[StepOutput] = []
        """Draft steps after the committed prefix, in order."""
        self.targets: dict[int, StepOutput] = {}
        """Absolute position -> the target's step there, known ahead of commitment."""
        self.epoch = 0
        """Counts dropped chains; a job from an older epoch is discarded."""
        self.draft_job: tuple[int, Future[StepOutput]] | None = None
        self.target_job: tuple[int, list[int], Future[list[StepOutput]]] | None = None

    def prefix_at(self, pos: int) -> str:
        """The text before position ``pos`` (committed prefix plus drafts)."""
        return self.committed + "".join(d.text for d in self.chain[: pos - len(self.steps)])

    def run(self) -> tuple[list[StepRecord], Finish]:
        """Decode until the answer ends or ``max_steps``."""
        # Leaving the pools waits for jobs still running on a dropped chain: the engines
        # are busy until then, so that time belongs to this problem.
        with (
            ThreadPoolExecutor(1, "lr-draft", initializer=init_worker_thread) as dpool,
            ThreadPoolExecutor(1, "lr-target", initializer=init_worker_thread) as tpool,
        ):
            while True:
                self._submit(dpool, tpool)
                live = [j[-1] for j in (self.draft_job, self.target_job) if j is not None]
                wait(live, return_when=FIRST_COMPLETED)
                self._collect()
                done = self._resolve()
                if done is not None:
                    return self.steps, done
                if len(self.steps) >= self.cfg.max_steps:
                    return self.steps, "max_steps"

    def _chain_closed(self) -> bool:
        """Whether the last draft step ends the answer (nothing is drafted after it)."""
        return bool(self.chain) and ends_answer(self.chain[-1], self.cfg.step_delimiter)

    def _submit_draft(self, dpool: ThreadPoolExecutor) -> None:
        """Start a draft job when the draft worker is free and the chain may grow."""
        cfg, chain = self.cfg, self.chain
        base = len(self.steps)
        room = cfg.max_steps - base
        if self.draft_job is None and not self._chain_closed() and len(chain) < min(
                cfg.k1 - 1, room - 1):
            prefix = self.prefix_at(base + len(chain))
            self.draft_job = (self.epoch, dpool.submit(
                lambda p: self.dec.draft_steps([p], self.tally)[0], prefix))

    def _target_positions(self) -> list[int]:
        """Positions whose prefix is known, up to k1 ahead, with no target step yet."""
        base = len(self.steps)
        last = base + len(self.chain) - (1 if self._chain_closed() else 0)
        return [q for q in range(base, min(last, base + self.cfg.k1 - 1) + 1)
                if q not in self.targets]

    def _submit(self, dpool: ThreadPoolExecutor, tpool: ThreadPoolExecutor) -> None:
        """Start a draft job and a target job when their worker is free and work exists."""
        self._submit_draft(dpool)
        if self.target_job is None:
            todo = self._target_positions()
            if todo:
                prefixes = [self.prefix_at(q) for q in todo]
                self.target_job = (self.epoch, todo,
                                   tpool.submit(self.dec.target_steps, prefixes, self.tally))

    def _collect_draft(self) -> None:
        """Take the finished draft job; keep its step only if its chain is current."""
        if self.draft_job is not None and self.draft_job[1].done():
            e, fut = self.draft_job
            self.draft_job = None
            out = fut.result()
            if e == self.epoch:
                self.chain.append(out)

    def _collect(self) -> None:
        """Take finished jobs; keep their results only if their chain is still current."""
        self._collect_draft()
        if self.target_job is not None and self.target_job[2].done():
            e, todo, tfut = self.target_job
            self.target_job = None
            outs = tfut.result()
            if e == self.epoch:
                self.targets.update(zip(todo, outs, strict=True))

    def _resolve(self) -> Finish | None:
        """Judge and commit positions in order while their target step is known; why the
        answer ended, or None to go on."""
        dec, steps, chain, targets = self.dec, self.steps, self.chain, self.targets
        while len(steps) in targets:
            pos = len(steps)
            t_out = targets.pop(pos)
            if chain:
                d = chain[0]
                if dec.verify_one(t_out.text, d.text, self.tally):
                    chain.pop(0)
                    self.committed += d.text
                    if dec.commit(steps, d, "draft"):
                        return finish_reason(d)
                    continue
                chain.clear()
                targets.clear()
                self.epoch += 1
            elif (self.cfg.k1 > 1 and self.draft_job is not None
                  and self.draft_job[0] == self.epoch):
                targets[pos] = t_out  # its draft is on the way: wait for it
                break
            self.committed += t_out.text
            if dec.commit(steps, t_out, "target"):
                return finish_reason(t_out)
        return None


class ContinuousScheduler(AsyncScheduler):
    """The async scheduler with the target's steps batched continuously: every position
    whose prefix is known, up to k1 ahead, has its own step in the target's running
    batch (module docstring).  Judging, committing and the draft worker are
    :class:`AsyncScheduler`'s."""

    def __init__(self, dec: LookaheadDecoder, prompt: str, tally: Tally) -> None:
        super().__init__(dec, prompt, tally)
        self.in_flight: dict[int, tuple[int, Future[StepOutput]]] = {}
        """Absolute position -> (epoch, its step in the target's batch)."""

    def run(self) -> tuple[list[StepRecord], Finish]:
        """Decode until the answer ends or ``max_steps``."""
        serve = getattr(self.dec.target, "serve", None)
        assert serve is not None  # LookaheadDecoder checks it
        server: Any = serve()
        try:
            with (server,
                  ThreadPoolExecutor(1, "lr-draft", initializer=init_worker_thread) as dpool):
                while True:
                    self._submit_continuous(dpool, server)
                    live: list[Future[Any]] = [f for _, f in self.in_flight.values()]
                    if self.draft_job is not None:
                        live.append(self.draft_job[1])
                    wait(live, return_when=FIRST_COMPLETED)
                    self._collect_continuous()
                    done = self._resolve()
                    if done is None and len(self.steps) >= self.cfg.max_steps:
                        done = "max_steps"
                    if done is not None:
                        for _, fut in self.in_flight.values():
                            server.cancel(fut)
                        return self.steps, done
        finally:  # the server's forwards are the target's time, wasted ones included
            self.tally.target_seconds += server.busy_seconds

    def _submit_continuous(self, dpool: ThreadPoolExecutor, server: Any) -> None:
        """Cancel the steps of dropped chains; start the draft job as
        :meth:`AsyncScheduler._submit` does and a target step for every position whose
        prefix is known and has neither a target step nor one in flight."""
        for q, (e, fut) in list(self.in_flight.items()):
            if e != self.epoch:
                server.cancel(fut)
                del self.in_flight[q]
        self._submit_draft(dpool)
        for q in self._target_positions():
            if q not in self.in_flight:
                self.in_flight[q] = (self.epoch, server.submit(self.prefix_at(q),
                                                               self.cfg.max_step_tokens))
                self.tally.target_batches += 1

    def _collect_continuous(self) -> None:
        """Take the finished draft job and target steps of the current chain."""
        self._collect_draft()
        for q, (e, fut) in list(self.in_flight.items()):
            if fut.done() and not fut.cancelled():
                del self.in_flight[q]
                out = fut.result()
                self.tally.target_steps += 1
                if e == self.epoch:
                    self.targets[q] = out


def run_async(
    dec: LookaheadDecoder, prompt: str, tally: Tally
) -> tuple[list[StepRecord], Finish]:
    """Decode from ``prompt`` with the async scheduler its configuration names."""
    if dec.config.target_batching == "continuous":
        return ContinuousScheduler(dec, prompt, tally).run()
    return AsyncScheduler(dec, prompt, tally).run()
