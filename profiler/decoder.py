"""The Lookahead Reasoning decoder on real engines: sync (Algorithm 1) and async.

Conventions (the library's, see ``specmodel.closedform.step_level``): ``k1`` is the number
of target steps run in parallel, i.e. draft steps + 1 (``k1 = 1`` is plain
step-by-step target decoding); ``k2`` is the number of target positions verified
per token-speculation pass, i.e. draft tokens + 1 (``k2 = 1`` turns token-level
speculation off).

**Sync** (Algorithm 1).  From the committed prefix P the draft writes γ = k1 − 1
steps d1..dγ one after another; the target expands the γ + 1 prefixes
P, P+d1, …, P+d1..dγ in one batch; the verifier compares target step t_i with
d_i; the longest accepted run d1..d_{j} is kept, followed by the target's own
step t_{j+1} (its correction, or the bonus step when every draft was accepted).

**Async.**  Draft and target run at the same time on two worker threads (each
engine keeps its own threads; torch releases the GIL).  A target step starts as
soon as its prefix exists: whenever the target worker is free it takes every
position whose prefix is known (the committed prefix plus the drafts so far) and
has no target step yet, as one batch; the draft runs ahead of the committed
prefix by at most k1 − 1 steps.  The verifier judges position by position in
order; on a rejection the target's step is committed, the speculative chain is
dropped and every job still running on it is discarded when it returns (a
running generate call cannot be interrupted, so its time is spent).

With the exact-match verifier every committed step is the target's own greedy
step, so the output equals step-by-step greedy decoding of the target (up to
numerical ties between batched and single evaluation).  Token-level speculation
(n-gram prompt lookup or a draft model, through the engine) is lossless under
greedy decoding.

A problem ends when a committed step contains ``####`` (the answer mark of the
GSM8K format), when the target ends its sequence or writes an empty step, or
after ``max_steps`` steps.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from profiler.engines import (
    STEP_DELIMITER,
    Engine,
    StepOutput,
    TokenSpeculation,
    counter_delta,
    init_worker_thread,
)
from profiler.problems import Problem, extract_answer, format_prompt, score_answer
from profiler.verifiers import Verifier

__all__ = [
    "ANSWER_MARK",
    "DecoderConfig",
    "LookaheadDecoder",
    "ProblemRun",
    "RunTotals",
    "StepRecord",
    "totals",
]

ANSWER_MARK = "####"
"""Marks the final answer in the GSM8K format; the step that writes it ends decoding."""


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return value


@dataclass(frozen=True)
class DecoderConfig:
    """What the decoder runs: the optimizer's (k1, k2) and the step settings."""

    mode: Literal["sync", "async"] = "sync"
    """Algorithm 1 (sync) or the asynchronous variant."""
    k1: int = 1
    """Target steps in parallel = draft steps + 1 (1: no step-level speculation)."""
    k2: int = 1
    """Target positions per token-speculation pass = draft tokens + 1 (1: off)."""
    token_method: Literal["ngram", "draft_model"] = "ngram"
    """Token-level speculation inside each step (used when k2 > 1)."""
    token_draft_model: str | None = None
    """Path of the token-level draft model (token_method 'draft_model')."""
    prompt_lookup_max: int = 3
    """n-gram: longest match."""
    max_step_tokens: int = 48
    """Token cap per step."""
    max_steps: int = 12
    """Steps per problem at most."""
    delimiter: str = STEP_DELIMITER
    """Text that ends a step."""
    width: int = 1
    """Draft branches per position (multi-branch drafting, sync only); 1: a single chain."""
    branch_temperature: float = 0.8
    """Sampling temperature of the draft's extra branches (branch 0 is always greedy)."""

    def __post_init__(self) -> None:
        if self.mode not in ("sync", "async"):
            raise ValueError(f"mode must be 'sync' or 'async', got {self.mode!r}")
        _positive_int("k1", self.k1)
        _positive_int("k2", self.k2)
        _positive_int("max_step_tokens", self.max_step_tokens)
        _positive_int("max_steps", self.max_steps)
        _positive_int("prompt_lookup_max", self.prompt_lookup_max)
        if self.token_method not in ("ngram", "draft_model"):
            raise ValueError(
                f"token_method must be 'ngram' or 'draft_model', got {self.token_method!r}"
            )
        if self.token_method == "draft_model" and self.k2 > 1 and not self.token_draft_model:
            raise ValueError("token_draft_model must be given for token_method 'draft_model'")
        if not self.delimiter:
            raise ValueError("delimiter must be a non-empty string")
        _positive_int("width", self.width)
        if self.width > 1 and self.mode != "sync":
            raise ValueError(
                f"width must be 1 in {self.mode} mode, got {self.width}: multi-branch drafting "
                "is defined for sync Lookahead Reasoning (specmodel.closedform.step_level.f_sync_multibranch)"
            )
        if not 0.0 < self.branch_temperature <= 10.0:
            raise ValueError(
                f"branch_temperature must be in (0, 10], got {self.branch_temperature!r}"
            )

    @property
    def label(self) -> str:
        """Short name, e.g. 'sync k1=3 k2=4'."""
        if self.k1 == 1 and self.k2 == 1:
            return "target"
        if self.k1 == 1:
            return f"token k2={self.k2}"
        tail = f" W={self.width}" if self.width > 1 else ""
        return f"{self.mode} k1={self.k1} k2={self.k2}{tail}"

    def token_speculation(self) -> TokenSpeculation | None:
        """The engine's token speculation for this k2 (None when k2 = 1)."""
        if self.k2 == 1:
            return None
        return TokenSpeculation(
            method=self.token_method,
            num_speculative_tokens=self.k2 - 1,
            prompt_lookup_max=self.prompt_lookup_max,
            draft_model=self.token_draft_model,
        )

    @classmethod
    def from_export(cls, data: dict[str, Any], **overrides: Any) -> DecoderConfig:
        """From the file ``specmodel export`` writes (its ``lookahead_reasoning`` and
        ``speculative_config`` sections); ``overrides`` replace fields."""
        try:
            lr = data["lookahead_reasoning"]
            spec = data.get("speculative_config") or {}
        except (KeyError, TypeError) as e:
            raise ValueError(f"not an export file: missing {e}") from e
        method = spec.get("method", "ngram")
        kwargs: dict[str, Any] = {
            "mode": lr["mode"],
            "k1": int(lr["k1"]),
            "k2": int(lr["k2"]),
            "width": int(lr.get("width", 1)),
            "delimiter": lr.get("step_delimiter", STEP_DELIMITER),
            "token_method": "draft_model" if method == "draft_model" else "ngram",
            "token_draft_model": spec.get("model"),
            "prompt_lookup_max": int(spec.get("prompt_lookup_max", 3)),
        }
        if method not in ("ngram", "draft_model") and int(lr["k2"]) > 1:
            raise ValueError(
                f"speculative_config.method must be 'ngram' or 'draft_model' for the decoder, "
                f"got {method!r}"
            )
        kwargs.update(overrides)
        return cls(**kwargs)


@dataclass(frozen=True)
class StepRecord:
    """One committed step."""

    text: str
    """The step's text."""
    source: Literal["draft", "target"]
    """Whether the verifier's accepted draft or the target's own step was kept."""
    tokens: int
    """Tokens of the step under the tokenizer of the model that wrote it."""


@dataclass
class ProblemRun:
    """What happened on one problem."""

    problem: int
    """Problem index."""
    output: str
    """The generated answer (everything after the prompt)."""
    steps: list[StepRecord]
    """Committed steps in order."""
    drafted_steps: int
    """Draft steps judged by the verifier."""
    accepted_steps: int
    """Draft steps the verifier accepted."""
    wasted_draft_steps: int
    """Draft steps generated but never judged (the chain was dropped first)."""
    target_steps: int
    """Target steps generated (all positions of all batches, used or not)."""
    target_batches: int
    """Target engine calls."""
    output_tokens: int
    """Tokens of ``output`` under the target's tokenizer."""
    seconds: float
    """Wall time of the whole problem."""
    draft_seconds: float
    """Time inside draft calls (overlaps target time in async mode)."""
    target_seconds: float
    """Time inside target calls."""
    verify_seconds: float
    """Time inside the verifier."""
    answer: str | None
    """The final answer extracted from the output."""
    correct: bool
    """reasoning-gym's scorer gives full credit."""
    finished: Literal["answer", "end", "max_steps"]
    """Why decoding stopped."""
    spec_metrics: dict[str, Any] = field(default_factory=dict)
    """Token-speculation counters from the engine, when it reports them."""

    @property
    def acceptance(self) -> float | None:
        """Accepted / drafted steps (None when nothing was drafted)."""
        return self.accepted_steps / self.drafted_steps if self.drafted_steps else None


@dataclass(frozen=True)
class RunTotals:
    """Totals over the problems of one configuration."""

    problems: int
    """Problems decoded."""
    output_tokens: int
    """Output tokens (target tokenizer)."""
    seconds: float
    """Total wall time."""
    tokens_per_second: float
    """output_tokens / seconds."""
    drafted_steps: int
    """Draft steps judged."""
    accepted_steps: int
    """Draft steps accepted."""
    step_acceptance: float | None
    """accepted / drafted."""
    accuracy: float
    """Fraction of problems answered right."""


def totals(runs: Sequence[ProblemRun]) -> RunTotals:
    """Sum a configuration's problem runs."""
    if not runs:
        raise ValueError("runs must not be empty")
    tok = sum(r.output_tokens for r in runs)
    sec = sum(r.seconds for r in runs)
    drafted = sum(r.drafted_steps for r in runs)
    acc = sum(r.accepted_steps for r in runs)
    return RunTotals(
        problems=len(runs),
        output_tokens=tok,
        seconds=sec,
        tokens_per_second=tok / sec if sec > 0 else 0.0,
        drafted_steps=drafted,
        accepted_steps=acc,
        step_acceptance=acc / drafted if drafted else None,
        accuracy=sum(r.correct for r in runs) / len(runs),
    )


def _ends(step: StepOutput, delimiter: str) -> bool:
    """Whether a step ends the answer: the answer mark, end of sequence, or nothing written."""
    if ANSWER_MARK in step.text or not step.text.strip():
        return True
    return step.finished == "stop" and not step.text.endswith(delimiter)


@dataclass
class _Node:
    """A node of the sync draft tree: the root (the committed prefix) or a draft step."""

    parent: int
    """Index of the parent node (-1 for the root)."""
    step: StepOutput | None
    """The draft step that leads here (None at the root)."""
    prefix: str
    """The text up to and including this node."""

    def open(self, delimiter: str) -> bool:
        """Whether something follows this node (a draft that ends the answer is closed)."""
        return self.step is None or not _ends(self.step, delimiter)


@dataclass
class _Tally:
    seed: int = 0
    samples: int = 0
    drafted: int = 0
    accepted: int = 0
    draft_calls: int = 0
    target_steps: int = 0
    target_batches: int = 0
    draft_seconds: float = 0.0
    target_seconds: float = 0.0
    verify_seconds: float = 0.0


class LookaheadDecoder:
    """Lookahead Reasoning with real engines.

    ``target`` must already carry the token-level speculation the configuration
    asks for (see :meth:`for_config`); ``draft`` may be None when ``k1 = 1``.
    """

    def __init__(
        self,
        target: Engine,
        draft: Engine | None,
        verifier: Verifier | None,
        config: DecoderConfig,
    ) -> None:
        if config.k1 > 1 and (draft is None or verifier is None):
            raise ValueError("draft and verifier must be given when k1 > 1")
        self.target = target
        self.draft = draft
        self.verifier = verifier
        self.config = config

    @classmethod
    def for_config(
        cls, target: Any, draft: Engine | None, verifier: Verifier | None, config: DecoderConfig
    ) -> LookaheadDecoder:
        """Give ``target`` the configuration's token speculation (engines that support
        ``with_speculation`` share their loaded weights) and build the decoder."""
        spec = config.token_speculation()
        if getattr(target, "speculation", None) != spec:
            if not hasattr(target, "with_speculation"):
                raise ValueError(
                    f"the {target.name} engine fixes token speculation when it is built: build "
                    f"it with speculation={spec!r} for k2 = {config.k2}"
                )
            target = target.with_speculation(spec)
        return cls(target, draft, verifier, config)

    # -- one problem ------------------------------------------------------------

    def decode(self, problem: Problem) -> ProblemRun:
        """Decode one problem and record what happened."""
        prompt = format_prompt(problem)
        tally = _Tally(seed=problem.index * 1_000_003)
        metrics_before = self._spec_metrics()
        t0 = time.perf_counter()
        if self.config.k1 == 1:
            steps, finished = self._plain(prompt, tally)
        elif self.config.mode == "sync":
            steps, finished = self._sync(prompt, tally)
        else:
            steps, finished = self._async(prompt, tally)
        seconds = time.perf_counter() - t0
        output = "".join(s.text for s in steps)
        return ProblemRun(
            problem=problem.index,
            output=output,
            steps=steps,
            drafted_steps=tally.drafted,
            accepted_steps=tally.accepted,
            wasted_draft_steps=tally.draft_calls - tally.drafted,
            target_steps=tally.target_steps,
            target_batches=tally.target_batches,
            output_tokens=self.target.count_tokens(output),
            seconds=seconds,
            draft_seconds=tally.draft_seconds,
            target_seconds=tally.target_seconds,
            verify_seconds=tally.verify_seconds,
            answer=extract_answer(output),
            correct=score_answer(problem, output),
            finished=finished,
            spec_metrics=counter_delta(self._spec_metrics(), metrics_before),
        )

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

    def _spec_metrics(self) -> dict[str, Any]:
        get = getattr(self.target, "spec_decode_metrics", None)
        return get() if callable(get) else {}

    # -- engines, timed ---------------------------------------------------------

    def _target(self, prefixes: list[str], tally: _Tally) -> list[StepOutput]:
        batch = self.target.generate_steps(prefixes, self.config.max_step_tokens)
        tally.target_seconds += batch.seconds
        tally.target_steps += batch.batch
        tally.target_batches += 1
        return batch.outputs

    def _draft(
        self, prefixes: list[str], tally: _Tally, temperature: float = 0.0,
        seed: int | None = None,
    ) -> list[StepOutput]:
        assert self.draft is not None
        if temperature > 0:
            batch = self.draft.generate_steps(prefixes, self.config.max_step_tokens,
                                              temperature=temperature, seed=seed)
        else:
            batch = self.draft.generate_steps(prefixes, self.config.max_step_tokens)
        tally.draft_seconds += batch.seconds
        tally.draft_calls += batch.batch
        return batch.outputs

    def _verify(self, target_step: str, draft_step: str, tally: _Tally) -> bool:
        assert self.verifier is not None
        verdict = self.verifier.verify([(target_step, draft_step)])[0]
        tally.verify_seconds += verdict.seconds
        tally.drafted += 1
        tally.accepted += verdict.accepted
        return verdict.accepted

    def _commit(self, steps: list[StepRecord], out: StepOutput, source: str) -> bool:
        steps.append(StepRecord(out.text, source, out.tokens))  # type: ignore[arg-type]
        return _ends(out, self.config.delimiter)

    # -- the algorithms ---------------------------------------------------------

    def _plain(self, prompt: str, tally: _Tally) -> tuple[list[StepRecord], str]:
        steps: list[StepRecord] = []
        prefix = prompt
        while len(steps) < self.config.max_steps:
            out = self._target([prefix], tally)[0]
            prefix += out.text
            if self._commit(steps, out, "target"):
                return steps, _why(out)
        return steps, "max_steps"

    def _sync(self, prompt: str, tally: _Tally) -> tuple[list[StepRecord], str]:
        """Algorithm 1, with a draft tree of width W (a chain when W = 1).

        Each cycle drafts the tree level by level (depth k1 − 1): every open node at
        one depth gets W children, the greedy draft step and W − 1 sampled ones
        (identical siblings are kept once).  The target expands the root and every
        open draft node as one batch; the verifier judges every (parent's target
        step, child) pair as one batch; from the root the walk follows the first
        accepted child (the greedy one first) and commits the accepted drafts and
        the target's step at the last accepted node.
        """
        cfg = self.config
        steps: list[StepRecord] = []
        prefix = prompt
        while len(steps) < cfg.max_steps:
            depth = min(cfg.k1 - 1, cfg.max_steps - len(steps) - 1)
            tree = [_Node(-1, None, prefix)]
            level = [0]
            for _ in range(depth):
                level = self._draft_level(tree, level, tally)
                if not level:
                    break
            expand = [i for i, n in enumerate(tree) if n.open(cfg.delimiter)]
            outs = dict(zip(expand, self._target([tree[i].prefix for i in expand], tally),
                            strict=True))
            path, node = self._walk(tree, outs, tally)
            for i in path:
                d = tree[i].step
                assert d is not None
                prefix += d.text
                if self._commit(steps, d, "draft"):
                    return steps, _why(d)
            if node in outs:
                prefix += outs[node].text
                if self._commit(steps, outs[node], "target"):
                    return steps, _why(outs[node])
        return steps, "max_steps"

    def _draft_level(self, tree: list[_Node], level: list[int], tally: _Tally) -> list[int]:
        """Draft W children of every open node of ``level`` into ``tree``; the new level."""
        cfg = self.config
        parents = [i for i in level if tree[i].open(cfg.delimiter)]
        if not parents:
            return []
        kids: dict[int, list[StepOutput]] = {i: [] for i in parents}
        for i, d in zip(parents, self._draft([tree[i].prefix for i in parents], tally),
                        strict=True):
            kids[i].append(d)
        if cfg.width > 1:
            reps = [i for i in parents for _ in range(cfg.width - 1)]
            tally.samples += 1
            sampled = self._draft([tree[i].prefix for i in reps], tally,
                                  temperature=cfg.branch_temperature,
                                  seed=tally.seed + tally.samples)
            for i, d in zip(reps, sampled, strict=True):
                if all(d.text != k.text for k in kids[i]):
                    kids[i].append(d)
        new = []
        for i in parents:
            for d in kids[i]:
                tree.append(_Node(i, d, tree[i].prefix + d.text))
                new.append(len(tree) - 1)
        return new

    def _walk(
        self, tree: list[_Node], outs: dict[int, StepOutput], tally: _Tally
    ) -> tuple[list[int], int]:
        """Verify every edge of the tree as one batch; follow accepted children from the root.

        Returns the accepted draft nodes in order and the node the walk stopped at.
        A position counts once in the tally, however many branches it had.
        """
        edges = list(range(1, len(tree)))
        if not edges:
            return [], 0
        assert self.verifier is not None
        pairs = []
        for i in edges:
            step = tree[i].step
            assert step is not None
            pairs.append((outs[tree[i].parent].text, step.text))
        verdicts = self.verifier.verify(pairs)
        tally.verify_seconds += sum(v.seconds for v in verdicts)
        accepted = {i for i, v in zip(edges, verdicts, strict=True) if v.accepted}
        path: list[int] = []
        node = 0
        while True:
            children = [i for i in edges if tree[i].parent == node]
            if not children:
                break
            tally.drafted += 1
            nxt = next((i for i in children if i in accepted), None)
            if nxt is None:
                break
            tally.accepted += 1
            path.append(nxt)
            node = nxt
        return path, node

    def _async(self, prompt: str, tally: _Tally) -> tuple[list[StepRecord], str]:
        """Draft and target on two threads; see the module docstring."""
        cfg = self.config
        steps: list[StepRecord] = []
        committed = prompt
        chain: list[StepOutput] = []  # drafts after the committed prefix
        targets: dict[int, StepOutput] = {}  # absolute position -> target step
        epoch = 0
        draft_job: tuple[int, Future[StepOutput]] | None = None
        target_job: tuple[int, list[int], Future[list[StepOutput]]] | None = None

        def prefix_at(pos: int) -> str:
            return committed + "".join(d.text for d in chain[: pos - len(steps)])

        # Leaving the pools waits for jobs still running on a dropped chain: the engines
        # are busy until then, so that time belongs to this problem.
        with (
            ThreadPoolExecutor(1, "lr-draft", initializer=init_worker_thread) as dpool,
            ThreadPoolExecutor(1, "lr-target", initializer=init_worker_thread) as tpool,
        ):
            while True:
                base = len(steps)
                chain_closed = bool(chain) and _ends(chain[-1], cfg.delimiter)
                room = cfg.max_steps - base
                if (
                    draft_job is None
                    and not chain_closed
                    and len(chain) < min(cfg.k1 - 1, room - 1)
                ):
                    draft_job = (
                        epoch,
                        dpool.submit(lambda p: self._draft([p], tally)[0],
                                     prefix_at(base + len(chain))),
                    )
                if target_job is None:
                    last = base + len(chain) - (1 if chain_closed else 0)
                    todo = [
                        q for q in range(base, min(last, base + cfg.k1 - 1) + 1) if q not in targets
                    ]
                    if todo:
                        prefixes = [prefix_at(q) for q in todo]
                        target_job = (epoch, todo, tpool.submit(self._target, prefixes, tally))
                live = [j[-1] for j in (draft_job, target_job) if j is not None]
                wait(live, return_when=FIRST_COMPLETED)
                if draft_job is not None and draft_job[1].done():
                    e, fut = draft_job
                    draft_job = None
                    out = fut.result()
                    if e == epoch:
                        chain.append(out)
                if target_job is not None and target_job[2].done():
                    e, todo, tfut = target_job
                    target_job = None
                    outs = tfut.result()
                    if e == epoch:
                        targets.update(zip(todo, outs, strict=True))
                # Resolve positions in order while their target step is known.
                while len(steps) in targets:
                    pos = len(steps)
                    t_out = targets.pop(pos)
                    if chain:
                        d = chain[0]
                        if self._verify(t_out.text, d.text, tally):
                            chain.pop(0)
                            committed += d.text
                            if self._commit(steps, d, "draft"):
                                return steps, _why(d)
                            continue
                        chain.clear()
                        targets.clear()
                        epoch += 1
                    elif cfg.k1 > 1 and draft_job is not None and draft_job[0] == epoch:
                        targets[pos] = t_out  # its draft is on the way: wait for it
                        break
                    committed += t_out.text
                    if self._commit(steps, t_out, "target"):
                        return steps, _why(t_out)
                if len(steps) >= cfg.max_steps:
                    return steps, "max_steps"


def _why(step: StepOutput) -> Literal["answer", "end"]:
    return "answer" if ANSWER_MARK in step.text else "end"


def run_to_dict(run: ProblemRun) -> dict[str, Any]:
    """A JSON-ready dict of one problem run."""
    return asdict(run)
