"""Measure the step level on real models: α1, c1, the verifier's cost, step lengths.

Protocol: for each problem the target decodes its own greedy trajectory step by
step; at every prefix the draft proposes its step from the same prefix, both
are timed (batch of one), and the verifier judges the pair.  Every pair is
appended to a JSONL file as soon as it is measured, so an interrupted run keeps
what it measured and ``resume=True`` continues where it stopped.

The record's first line is a header, ``{"kind": "specmodel-step-pairs", "version": 1,
"key": {...}}``, whose key holds every setting that determines the pairs (models and
their pack SHA-256s, engine, verifier, seed (and the dataset where it is not
the default), caps, delimiter, threads, versions: see
:func:`profiler.calibrate.steps_key`).  A resume with another key is refused naming
what differs; a record without a header (written before the key existed) is refused
too, since nothing tells what its pairs were measured with.  A torn last line (a run
killed mid-write) is dropped with a note and the file cut back to its last complete
line before anything is appended; a damaged line elsewhere is an error.  The record is
written under a :class:`specmodel.formats.lock.WriteLock` for the whole run.

Estimates (``summarize``, with the estimators of :mod:`specmodel.stats`): α1 =
accepted / pairs with a Wilson 95 % interval (the calibration stores the
Jeffreys-smoothed (x + ½)/(n + 1) so that 0 or n acceptances still give a rate
in (0, 1)); c1 = Σ draft time / Σ target time with its delta-method standard
error (the ratio estimator of specmodel.montecarlo.estimate); the verifier's
cost in target-step units; the step-length histograms of the target and of the draft;
the lag-1 correlation (phi coefficient) of the verdicts at consecutive steps of one
problem (:func:`verdict_correlation`).
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from profiler.engines import Engine
from profiler.problems import DEFAULT_DATASET, Problem, dataset_key, format_prompt
from profiler.progress import NoteCallback, ProgressCallback, no_progress
from profiler.verifiers import Verifier
from specmodel.formats.lock import WriteLock, resume_mismatch
from specmodel.stats import clustered_rate, effective_samples, jeffreys_rate, wilson

if TYPE_CHECKING:
    from specmodel.formats.calibration import StepLevel

__all__ = ["KEY_DEFAULTS", "RECORD_KIND", "StepPair", "StepSummary", "branch_summary",
           "check_record", "draft_ends", "extends", "profile_steps", "read_pairs", "read_record",
           "step_ends", "summarize", "target_ends", "verdict_correlation"]

RECORD_KIND = "specmodel-step-pairs"
"""The ``kind`` of a pairs record's header line."""
RECORD_VERSION = 1
"""The header's format version."""
KEY_DEFAULTS: dict[str, Any] = {"dataset": DEFAULT_DATASET}
"""Settings a resume key holds only where they are not their default (so that a key
recorded before the setting existed still matches a run at its default): a key without
one counts as holding this value (:func:`specmodel.formats.lock.resume_mismatch`)."""


@dataclass(frozen=True)
class StepPair:
    """One prefix: the target's step, the draft's step, the verdict, the times."""

    problem: int
    """Problem index."""
    step: int
    """Step number within the target's trajectory (0-based)."""
    target_text: str
    """The target's greedy step."""
    draft_text: str
    """The draft's greedy step from the same prefix."""
    target_tokens: int
    """Tokens in the target's step."""
    draft_tokens: int
    """Tokens in the draft's step (draft tokenizer)."""
    target_seconds: float
    """Wall time of the target step."""
    draft_seconds: float
    """Wall time of the draft step."""
    verify_seconds: float
    """Wall time of the verification."""
    accepted: bool
    """The verifier's verdict."""
    branch_texts: list[str] | None = None
    """The draft's sampled steps from the same prefix (``branches`` − 1 of them, at the
    branch temperature; None: not measured)."""
    branch_tokens: list[int] | None = None
    """Their lengths in tokens (draft tokenizer)."""
    branch_accepted: list[bool | None] | None = None
    """The verifier's verdict on each sampled step against the target's; None for one
    identical to the greedy step or to an earlier sampled one (the decoder keeps it
    once, so it is not judged)."""
    branch_seconds: float | None = None
    """Wall time of the sampled draft call (all branches as one batch)."""

    @property
    def distinct_branches(self) -> int:
        """Different draft steps at this prefix: the greedy one and the distinct sampled
        ones (1 when no branches were measured)."""
        return 1 + sum(v is not None for v in (self.branch_accepted or ()))

    @property
    def best_accepted(self) -> bool:
        """Whether the verifier accepted the greedy step or any distinct sampled one."""
        return self.accepted or any(bool(v) for v in (self.branch_accepted or ()))


@dataclass(frozen=True)
class PairsRecord:
    """A pairs record as read: its header key, its pairs, and where it is torn."""

    key: dict[str, Any] | None
    """The header's resume key (None: no header, a record from before the key)."""
    pairs: list[StepPair]
    """The complete pairs, in file order."""
    complete_bytes: int
    """Length of the file up to the end of its last complete line."""
    torn: bool
    """Whether the file ends with a torn line (dropped from ``pairs``)."""


def _parse_line(raw: bytes) -> dict[str, Any] | StepPair:
    data = json.loads(raw.decode("utf-8"))
    if isinstance(data, dict) and data.get("kind") == RECORD_KIND:
        if not isinstance(data.get("key"), dict):
            raise ValueError("header without a key")
        return data
    return StepPair(**data)


def read_record(path: str | Path) -> PairsRecord:
    """Read a pairs record.  A torn last line (no newline, or not a whole record) is
    reported in ``torn``; a damaged line before it is a ValueError naming the line."""
    p = Path(path)
    if not p.is_file():
        return PairsRecord(None, [], 0, False)
    data = p.read_bytes()
    lines = data.split(b"\n")  # the last item: what follows the last newline
    key: dict[str, Any] | None = None
    pairs: list[StepPair] = []
    offset = complete = 0
    torn = False
    for number, raw in enumerate(lines, 1):
        last = number == len(lines)
        end = offset + len(raw) + (0 if last else 1)
        if raw.strip():
            try:
                item = _parse_line(raw)
            except (ValueError, TypeError, UnicodeDecodeError) as e:
                if last or (number == len(lines) - 1 and not lines[-1]):
                    torn = True
                    break
                raise ValueError(f"pairs record {p} is damaged at line {number} ({e}); "
                                 "start over without --resume") from None
            if last:  # a whole record without its newline: torn all the same
                torn = True
                break
            if isinstance(item, StepPair):
                pairs.append(item)
            elif number == 1:
                key = item["key"]
            else:
                raise ValueError(f"pairs record {p} has a second header at line {number}")
        offset = end
        if not last:
            complete = end
    return PairsRecord(key, pairs, complete, torn)


def read_pairs(path: str | Path) -> list[StepPair]:
    """Pairs recorded so far (the header and a torn last line are left out)."""
    return read_record(path).pairs


GROWS = ("problems", "steps_per_problem")
"""The steps settings a record may be extended in (:func:`extends`)."""


def extends(recorded: dict[str, Any], key: dict[str, Any]) -> bool:
    """Whether settings ``key`` only take more problems or more steps per problem than a
    record measured with ``recorded`` (neither fewer, one more): greedy decoding makes
    its pairs the first ones ``key`` measures (the first problems of a seed are the same
    however many are drawn, and each sampled branch's seed depends on its problem and
    step only), so ``--resume`` keeps them and goes on to the later steps of each
    problem and the problems after them."""
    if not all(isinstance(recorded.get(k), int) for k in GROWS):
        return False
    if any(recorded[k] > key.get(k, 0) for k in GROWS) or all(
            recorded[k] == key.get(k) for k in GROWS):
        return False
    same = {k: v for k, v in recorded.items() if k not in GROWS}
    wanted = {k: v for k, v in key.items() if k not in GROWS}
    return resume_mismatch("", same, wanted, KEY_DEFAULTS) is None


def check_record(path: str | Path, key: dict[str, Any]) -> PairsRecord:
    """The record at ``path`` if ``--resume`` may continue it with settings ``key`` (the
    same settings, or only more problems or steps per problem: :func:`extends`); a
    one-line ValueError naming every setting that differs, or saying that the record
    predates the resume key, otherwise."""
    rec = read_record(path)
    if rec.key is not None and extends(rec.key, key):
        return rec
    if rec.key is None and rec.pairs:
        raise ValueError(
            f"--resume: {path} predates the resume key (its pairs record no settings), so "
            "what they were measured with cannot be checked; start over without --resume "
            "or with another --record")
    if rec.key is not None:
        problem = resume_mismatch(path, rec.key, key, KEY_DEFAULTS)
        if problem is not None:
            raise ValueError(problem)
    return rec


def profile_steps(
    target: Engine,
    draft: Engine,
    verifier: Verifier,
    problems: Sequence[Problem],
    record: str | Path,
    *,
    steps_per_problem: int = 4,
    max_step_tokens: int = 48,
    resume: bool = False,
    progress: ProgressCallback | None = None,
    key: dict[str, Any] | None = None,
    note: NoteCallback | None = None,
    branches: int = 1,
    branch_temperature: float = 0.8,
    branch_seed: int = 0,
) -> list[StepPair]:
    """Run the protocol, appending each pair to ``record`` (JSONL) as it is measured.

    ``key`` (the settings that determine the pairs, :func:`profiler.calibrate.steps_key`;
    this function adds ``steps_per_problem``, ``max_step_tokens``, ``problems`` and, where
    the problems are not of the default dataset, their ``dataset``) goes
    into the record's header; ``resume=True`` refuses a record with another key, and
    cuts a torn last line off (telling ``note``).  The record is locked for the whole
    run (:class:`specmodel.formats.lock.WriteLock`): a second writer is refused.

    ``progress(done, total, message)`` is called after every pair, with
    ``total = len(problems) * steps_per_problem``; the steps a problem does not
    take (its target finished earlier) count as done when it finishes, and with
    ``resume=True`` the recorded pairs count as done at once.  A resumed run
    rebuilds each problem's prefix from the recorded target steps (greedy
    decoding is deterministic) instead of decoding them again.

    With ``branches`` W > 1 the draft also samples W − 1 steps from every prefix as one
    batch (at ``branch_temperature``, seeded by ``branch_seed``, the problem and the
    step, so a resumed run draws the same), as the decoder's sync tree does; the
    verifier judges each distinct one against the target's step (what the best of W
    draft branches is accepted at, measured rather than assumed independent).
    """
    if isinstance(branches, bool) or not isinstance(branches, int) or branches < 1:
        raise ValueError(f"branches must be an integer >= 1, got {branches!r}")
    if not branch_temperature > 0:
        raise ValueError(f"branch_temperature must be > 0, got {branch_temperature!r}")
    for name, value in (("steps_per_problem", steps_per_problem),
                        ("max_step_tokens", max_step_tokens)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    path = Path(record)
    path.parent.mkdir(parents=True, exist_ok=True)
    dataset = problems[0].dataset if problems else DEFAULT_DATASET
    full_key = {**(key or {}), "steps_per_problem": steps_per_problem,
                "max_step_tokens": max_step_tokens, "problems": len(problems),
                **dataset_key(dataset)}
    with WriteLock(path):
        return _profile_locked(target, draft, verifier, problems, path, full_key,
                               steps_per_problem, max_step_tokens, resume,
                               progress or no_progress, note,
                               (branches, branch_temperature, branch_seed))


def _start_record(path: Path, key: dict[str, Any], resume: bool,
                  note: NoteCallback | None) -> list[StepPair]:
    """Prepare ``path`` for appending (the lock is held): the pairs to keep."""
    if resume:
        rec = check_record(path, key)
        if rec.torn:
            with open(path, "r+b") as fh:
                fh.truncate(rec.complete_bytes)
                fh.flush()
                os.fsync(fh.fileno())
            if note is not None:
                note(f"{path}: dropped a torn last line (a run killed mid-write); that pair "
                     "is measured again")
        if rec.key is not None and extends(rec.key, key):
            _write_header(path, key, path.read_bytes().partition(b"\n")[2])
            if note is not None:
                note(f"{path}: extended from {rec.key['problems']} problems x "
                     f"{rec.key['steps_per_problem']} steps to {key['problems']} x "
                     f"{key['steps_per_problem']} (its {len(rec.pairs)} pairs kept)")
        if rec.key is not None:
            return rec.pairs
    _write_header(path, key)
    return []


def _write_header(path: Path, key: dict[str, Any], pairs: bytes = b"") -> None:
    """Write ``path`` atomically as the header of ``key`` followed by ``pairs`` (whole
    lines of an existing record, when its header is being replaced)."""
    header = {"kind": RECORD_KIND, "version": RECORD_VERSION, "key": key}
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        fh.write(json.dumps(header).encode("utf-8") + b"\n" + pairs)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _profile_locked(
    target: Engine, draft: Engine, verifier: Verifier, problems: Sequence[Problem],
    path: Path, key: dict[str, Any], steps_per_problem: int, max_step_tokens: int,
    resume: bool, say: ProgressCallback, note: NoteCallback | None,
    branching: tuple[int, float, int] = (1, 0.8, 0),
) -> list[StepPair]:
    branches, temperature, branch_seed = branching
    done = _start_record(path, key, resume, note)
    recorded = {(p.problem, p.step): p for p in done}
    total = len(problems) * steps_per_problem
    count = 0
    pairs = list(done)
    with open(path, "a", encoding="utf-8") as fh:
        for i, prob in enumerate(problems, 1):
            prefix = format_prompt(prob)
            for s in range(steps_per_problem):
                old = recorded.get((prob.index, s))
                if old is not None:
                    t_text = old.target_text
                    count += 1
                    say(count, total, f"problem {prob.index} step {s}: recorded")
                else:
                    t_batch = target.generate_steps([prefix], max_step_tokens)
                    t_out = t_batch.outputs[0]
                    t_text = t_out.text
                    if not t_text.strip():
                        break  # the target has finished this problem
                    d_batch = draft.generate_steps([prefix], max_step_tokens)
                    verdict = verifier.verify([(t_text, d_batch.outputs[0].text)])[0]
                    extra: dict[str, Any] = {}
                    if branches > 1:
                        extra = _branches(draft, verifier, prefix, t_text,
                                          d_batch.outputs[0].text, branches, temperature,
                                          branch_seed * 1_000_000 + prob.index * 1_000 + s,
                                          max_step_tokens)
                    pair = StepPair(
                        prob.index,
                        s,
                        t_text,
                        d_batch.outputs[0].text,
                        t_out.tokens,
                        d_batch.outputs[0].tokens,
                        t_batch.seconds,
                        d_batch.seconds,
                        verdict.seconds,
                        verdict.accepted,
                        **extra,
                    )
                    fh.write(json.dumps(asdict(pair)) + "\n")
                    fh.flush()
                    os.fsync(fh.fileno())
                    pairs.append(pair)
                    count += 1
                    say(count, total, f"problem {prob.index} step {s}: "
                                      f"{'accepted' if pair.accepted else 'rejected'}")
                prefix += t_text
                if "####" in t_text:
                    break
            if count < i * steps_per_problem:  # ended early: its remaining slots are done
                count = i * steps_per_problem
                say(count, total, f"problem {prob.index}: finished")
    return pairs


def _branches(draft: Engine, verifier: Verifier, prefix: str, target_text: str,
              greedy_text: str, branches: int, temperature: float, seed: int,
              max_step_tokens: int) -> dict[str, Any]:
    """The sampled branches at one prefix, as :class:`StepPair` fields."""
    batch = draft.generate_steps([prefix] * (branches - 1), max_step_tokens,
                                 temperature=temperature, seed=seed)
    seen = {greedy_text}
    distinct = []
    for i, out in enumerate(batch.outputs):
        if out.text not in seen:
            seen.add(out.text)
            distinct.append(i)
    verdicts = (verifier.verify([(target_text, batch.outputs[i].text) for i in distinct])
                if distinct else [])
    judged = dict(zip(distinct, (v.accepted for v in verdicts), strict=True))
    return {"branch_texts": [o.text for o in batch.outputs],
            "branch_tokens": [o.tokens for o in batch.outputs],
            "branch_accepted": [judged.get(i) for i in range(len(batch.outputs))],
            "branch_seconds": batch.seconds}


@dataclass(frozen=True)
class StepSummary:
    """The step-level calibration numbers from recorded pairs."""

    pairs: int
    """Pairs measured."""
    accepted: int
    """Pairs the verifier accepted."""
    alpha1: float
    """Jeffreys-smoothed acceptance (accepted + ½)/(pairs + 1), always in (0, 1)."""
    alpha1_ci95: tuple[float, float]
    """Wilson 95 % interval of the raw acceptance."""
    c1: float
    """Σ draft step time / Σ target step time."""
    c1_stderr: float
    """Delta-method standard error of c1."""
    verifier_cost: float
    """Mean verification time / mean target step time."""
    step_tokens_mean: float
    """Mean target step length in tokens."""
    step_tokens_histogram: dict[int, int]
    """Target step length -> count."""
    draft_step_tokens_histogram: dict[int, int] | None = None
    """Draft step length (draft tokenizer) -> count, from the same prefixes."""
    verdict_correlation: float | None = None
    """Lag-1 phi coefficient of consecutive verdicts of one problem (None: undefined)."""
    verdict_pairs: int | None = None
    """Consecutive (step i, step i + 1) pairs behind ``verdict_correlation``."""
    draft_end_rate: float | None = None
    """Fraction of draft steps that end the answer (:func:`draft_ends`; None: the
    delimiter and cap were not given)."""
    target_end_rate: float | None = None
    """Fraction of target steps that end the answer (:func:`target_ends`; None: as for
    ``draft_end_rate``)."""
    branch_counts: dict[int, tuple[int, int]] | None = None
    """{w: (pairs with w distinct draft steps, of which the best was accepted)} over the
    pairs with sampled branches (w = 1: every sampled step repeated the greedy one; None:
    no sampled branches measured)."""
    duplicate_branch_rate: float | None = None
    """Fraction of the sampled draft steps identical to an earlier one at their prefix."""
    branch_temperature: float | None = None
    """Temperature of the sampled branches."""
    length_pairs: list[tuple[int, int, int]] | None = None
    """(target tokens, draft tokens, count) over the pairs (the joint distribution)."""
    length_verdicts: list[tuple[int, int, int, int]] | None = None
    """(target tokens, draft tokens, pairs, accepted) over the pairs (the verdicts by the
    two lengths)."""
    length_answers: list[list[tuple[int, int]]] | None = None
    """(target tokens, draft tokens) at each step index of each problem's answer, in
    problem order (None: built by hand, or a problem's pairs skip an index)."""
    problem_verdicts: list[tuple[int, int]] | None = None
    """(accepted, judged) per problem, in problem order (None: built by hand)."""
    index_verdicts: list[tuple[int, int]] | None = None
    """(accepted, judged) at each step index 0, 1, … of the answer, pooled over the
    problems (None: built by hand, or the pairs skip an index)."""
    alpha1_clustered_stderr: float | None = None
    """Standard error of the raw acceptance with the pairs of one problem as one cluster
    (:func:`specmodel.stats.clustered_rate`; None: fewer than two problems)."""
    effective_pairs: int | None = None
    """Independent pairs that would give that standard error
    (:func:`specmodel.stats.effective_samples`; None: as above)."""

    def step_section(self, verifier_name: str) -> StepLevel:
        """The calibration's ``step`` section (a draft no faster than the target is an error)."""
        from specmodel.formats.calibration import StepLevel

        if self.c1 >= 1.0:
            raise ValueError(
                f"c1 must be < 1 for step-level speculation: the draft is not faster than the "
                f"target (measured c1 = {self.c1:.3f} ± {self.c1_stderr:.3f})"
            )
        return StepLevel(
            alpha1=self.alpha1,
            c1=self.c1,
            verifier_cost=self.verifier_cost,
            verifier=verifier_name,
            step_tokens_mean=self.step_tokens_mean,
            step_tokens_histogram=self.step_tokens_histogram,
            samples=self.pairs,
            problem_verdicts=self.problem_verdicts,
            index_verdicts=self.index_verdicts,
            draft_step_tokens_histogram=self.draft_step_tokens_histogram,
            verdict_correlation=self.verdict_correlation,
            verdict_pairs=self.verdict_pairs,
            draft_end_rate=self.draft_end_rate,
            target_end_rate=self.target_end_rate,
            branch_acceptance=(None if not self.branch_counts else
                               {w: jeffreys_rate(k, n)
                                for w, (n, k) in self.branch_counts.items()}),
            branch_samples=(None if not self.branch_counts else
                            {w: n for w, (n, _) in self.branch_counts.items()}),
            duplicate_branch_rate=self.duplicate_branch_rate,
            branch_temperature=self.branch_temperature,
            step_length_pairs=self.length_pairs,
            step_length_verdicts=self.length_verdicts,
            step_length_answers=self.length_answers,
        )


def step_ends(text: str, tokens: int, delimiter: str, max_step_tokens: int) -> bool:
    """Whether a recorded step ends the answer as the decoder sees it
    (:func:`profiler.decoder.records.ends_answer`): the answer mark, nothing written, or
    a step that stopped before its cap without the delimiter (the end of the sequence)."""
    from profiler.decoder.records import ANSWER_MARK

    if ANSWER_MARK in text or not text.strip():
        return True
    return not text.endswith(delimiter) and tokens < max_step_tokens


def draft_ends(pair: StepPair, delimiter: str, max_step_tokens: int) -> bool:
    """Whether the pair's (greedy) draft step ends the answer (:func:`step_ends`)."""
    return step_ends(pair.draft_text, pair.draft_tokens, delimiter, max_step_tokens)


def target_ends(pair: StepPair, delimiter: str, max_step_tokens: int) -> bool:
    """Whether the pair's target step ends the answer (:func:`step_ends`)."""
    return step_ends(pair.target_text, pair.target_tokens, delimiter, max_step_tokens)


def branch_summary(pairs: Sequence[StepPair]) -> tuple[dict[int, tuple[int, int]], float | None]:
    """From the pairs with sampled branches: {w: (pairs with w distinct draft steps, of
    which the best was accepted)} (w = 1: every sampled step repeated the greedy one —
    such prefixes are the easy ones, so their acceptance differs from α1), and the
    fraction of sampled steps identical
    to the greedy one or an earlier sampled one (None: no branches measured)."""
    counts: dict[int, list[int]] = {}
    sampled = duplicates = 0
    for p in pairs:
        if p.branch_accepted is None:
            continue
        sampled += len(p.branch_accepted)
        duplicates += sum(v is None for v in p.branch_accepted)
        c = counts.setdefault(p.distinct_branches, [0, 0])
        c[0] += 1
        c[1] += p.best_accepted
    return ({w: (n, k) for w, (n, k) in sorted(counts.items())},
            duplicates / sampled if sampled else None)


def _target_end_rate(pairs: Sequence[StepPair], delimiter: str, max_step_tokens: int,
                     steps_per_problem: int | None) -> float:
    """Target steps that end the answer over the target steps taken.  A problem that
    stopped before ``steps_per_problem`` pairs although its last recorded step goes on
    ended with an empty step (the protocol stops there without recording a pair): that
    step counts too, as an end."""
    ended = sum(target_ends(p, delimiter, max_step_tokens) for p in pairs)
    taken = len(pairs)
    if steps_per_problem is not None:
        last: dict[int, StepPair] = {}
        count: Counter[int] = Counter()
        for p in pairs:
            count[p.problem] += 1
            if p.problem not in last or p.step > last[p.problem].step:
                last[p.problem] = p
        empty = sum(1 for k, p in last.items() if count[k] < steps_per_problem
                    and not target_ends(p, delimiter, max_step_tokens))
        ended += empty
        taken += empty
    return ended / taken


def summarize(pairs: Sequence[StepPair], *, delimiter: str | None = None,
              max_step_tokens: int | None = None,
              branch_temperature: float | None = None,
              steps_per_problem: int | None = None) -> StepSummary:
    """α1, c1, verifier cost and step lengths with their uncertainty; with the step
    ``delimiter`` and cap, the rates of draft and target steps that end the answer (with
    ``steps_per_problem``, the empty steps that ended a problem early included); from
    pairs with sampled branches (drawn at ``branch_temperature``), the acceptance of the
    best of w distinct draft steps and the rate of duplicate branches."""
    from specmodel.montecarlo.estimate import ratio_estimate

    n = len(pairs)
    if n < 2:
        raise ValueError(f"pairs must hold at least 2 measurements, got {n}")
    x = sum(p.accepted for p in pairs)
    c1 = ratio_estimate([p.draft_seconds for p in pairs], [p.target_seconds for p in pairs])
    mean_target = sum(p.target_seconds for p in pairs) / n
    hist = Counter(p.target_tokens for p in pairs)
    draft_hist = Counter(p.draft_tokens for p in pairs)
    phi, lag_pairs = verdict_correlation(pairs)
    ends = None if delimiter is None or max_step_tokens is None else (delimiter,
                                                                       max_step_tokens)
    branches, duplicate_rate = branch_summary(pairs)
    by_problem: dict[int, list[int]] = {}
    for p in pairs:
        by_problem.setdefault(p.problem, []).append(bool(p.accepted))
    clustered = eff = None
    if len(by_problem) >= 2:
        _, clustered = clustered_rate([sum(v) for v in by_problem.values()],
                                      [len(v) for v in by_problem.values()])
        eff = effective_samples(x / n, clustered, n)
    return StepSummary(
        pairs=n,
        accepted=x,
        alpha1=jeffreys_rate(x, n),
        alpha1_ci95=wilson(x, n),
        problem_verdicts=[(sum(v), len(v)) for _, v in sorted(by_problem.items())],
        index_verdicts=index_verdicts(pairs),
        alpha1_clustered_stderr=clustered,
        effective_pairs=eff,
        c1=c1.mean,
        c1_stderr=c1.stderr,
        verifier_cost=sum(p.verify_seconds for p in pairs) / n / mean_target,
        step_tokens_mean=sum(p.target_tokens for p in pairs) / n,
        step_tokens_histogram=dict(sorted(hist.items())),
        draft_step_tokens_histogram=dict(sorted(draft_hist.items())),
        verdict_correlation=phi,
        verdict_pairs=lag_pairs,
        draft_end_rate=(None if ends is None else
                        sum(draft_ends(p, *ends) for p in pairs) / n),
        target_end_rate=(None if ends is None else
                         _target_end_rate(pairs, *ends, steps_per_problem)),
        branch_counts=branches or None,
        duplicate_branch_rate=duplicate_rate,
        branch_temperature=branch_temperature if branches else None,
        length_pairs=[(t, d, k) for (t, d), k in sorted(
            Counter((p.target_tokens, p.draft_tokens) for p in pairs).items())],
        length_verdicts=length_verdicts(pairs),
        length_answers=length_answers(pairs),
    )


def length_answers(pairs: Sequence[StepPair]) -> list[list[tuple[int, int]]] | None:
    """(target tokens, draft tokens) at each step index of each problem's answer, in
    problem order (None when a problem's pairs do not run 0, 1, … without a gap: they
    are not consecutive steps of one answer).  A pair recorded twice for one (problem,
    step) counts once (the last), as :func:`verdict_correlation` counts it."""
    by_problem: dict[int, dict[int, tuple[int, int]]] = {}
    for p in pairs:
        by_problem.setdefault(p.problem, {})[p.step] = (p.target_tokens, p.draft_tokens)
    out = []
    for _, steps in sorted(by_problem.items()):
        if sorted(steps) != list(range(len(steps))):
            return None
        out.append([steps[i] for i in range(len(steps))])
    return out or None


def length_verdicts(pairs: Sequence[StepPair]) -> list[tuple[int, int, int, int]]:
    """(target tokens, draft tokens, pairs, accepted) per distinct pair of lengths, in
    order of the lengths."""
    cells: dict[tuple[int, int], list[int]] = {}
    for p in pairs:
        c = cells.setdefault((p.target_tokens, p.draft_tokens), [0, 0])
        c[0] += 1
        c[1] += bool(p.accepted)
    return [(t, d, n, k) for (t, d), (n, k) in sorted(cells.items())]


def index_verdicts(pairs: Sequence[StepPair]) -> list[tuple[int, int]] | None:
    """(accepted, judged) at each step index 0, 1, … of the answer, pooled over the
    problems (None when an index below the last has no pair: the pairs do not come from
    consecutive steps of their answers, so an index's rate is not defined)."""
    by_index: dict[int, list[int]] = {}
    for p in pairs:
        by_index.setdefault(p.step, []).append(bool(p.accepted))
    if not by_index or sorted(by_index) != list(range(max(by_index) + 1)):
        return None
    return [(sum(v), len(v)) for _, v in sorted(by_index.items())]


def verdict_correlation(pairs: Sequence[StepPair]) -> tuple[float | None, int]:
    """(phi, n): the lag-1 correlation of verdicts over the ``n`` pairs (step i, step
    i + 1) of the same problem, phi = (n11·n00 − n10·n01) / sqrt(n1·n0·m1·m0) (the
    Pearson correlation of the two 0/1 verdicts); phi is None when undefined (n < 2,
    or the earlier or the later verdicts all the same).  A pair recorded twice for one
    (problem, step) counts once (the last)."""
    verdicts = {(p.problem, p.step): bool(p.accepted) for p in pairs}
    n11 = n10 = n01 = n00 = 0
    for (problem, step), first in verdicts.items():
        second = verdicts.get((problem, step + 1))
        if second is None:
            continue
        if first:
            n11 += second
            n10 += not second
        else:
            n01 += second
            n00 += not second
    n = n11 + n10 + n01 + n00
    den = (n11 + n10) * (n01 + n00) * (n11 + n01) * (n10 + n00)
    if n < 2 or den == 0:
        return None, n
    phi = (n11 * n00 - n10 * n01) / math.sqrt(den)
    return min(1.0, max(-1.0, phi)), n
