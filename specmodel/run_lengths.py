"""The step lengths a run's problems wrote, read back from its call log, and a
calibration that carries them in place of its own.

The decoder model draws each simulated problem's step lengths by step index from one of
the calibration's answers (:attr:`~specmodel.formats.calibration.StepLevel.step_length_answers`:
the target's and the draft's tokens at each index), so that an answer alternating long
lines with short ones keeps its pattern.  A held-out problem set can have a pattern the
calibration's answers seldom show: a two-row sync call runs until its longer row ends,
so a short target step (a ``\\[`` line, 3 tokens) beside a long one from the draft's
prefix costs the batch the long one's iterations for three committed tokens.

:func:`run_lengths` rebuilds the (target, draft) pair at every step index of each
problem from the calls of one synchronous, one-branch configuration of a run record:
at a round that starts at index s, draft call j (one row) wrote the draft's step at
s + j, and row j of the target call that follows (the prefix with the first j drafts)
the target's step at s + j; the committed steps say how many drafts were accepted (a),
so indices s … s + a are on the answer.  Where no draft was asked — the index a
round's accepted drafts led to, or a last step the decoder drafts nothing before — the
draft length is not measured and is set to the target's (counted in
:attr:`RunLengths.filled`).  :func:`with_run_lengths` puts them into a copy
of a calibration — answers, joint pairs, both histograms and the problems' relative
step acceptance — for the decoder model at the run's step lengths
(:func:`specmodel.prediction.at_run_lengths`): a diagnosis, it uses what the run
decoded.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from itertools import pairwise

from specmodel.formats.calibration import Calibration, StepLevel
from specmodel.formats.run_record import ConfigRun, ProblemRun, RunRecord

__all__ = ["RunLengths", "lengths_source", "padding_ratio", "run_lengths",
           "with_run_lengths"]


@dataclass(frozen=True)
class RunLengths:
    """Step lengths by step index of each problem of a run."""

    config: str
    """The configuration whose calls they were read from."""
    answers: tuple[tuple[tuple[int, int], ...], ...]
    """(target tokens, draft tokens) at each step index of each problem's answer, in
    problem order."""
    verdicts: tuple[tuple[int, int], ...]
    """(accepted, judged) draft steps of each problem in that configuration."""
    filled: int
    """Indices whose draft length was not measured (no draft was asked there) and is
    set to the target's."""

    @property
    def steps(self) -> int:
        """Indices in all."""
        return sum(len(a) for a in self.answers)

    @property
    def mean_target_step(self) -> float:
        """The target's mean step in tokens over every index."""
        return sum(t for a in self.answers for t, _ in a) / self.steps

    def to_dict(self) -> dict[str, object]:
        """For JSON."""
        return {"config": self.config, "answers": [list(map(list, a)) for a in self.answers],
                "verdicts": [list(v) for v in self.verdicts], "filled": self.filled,
                "mean_target_step": self.mean_target_step,
                "padding_ratio": padding_ratio(self.answers)}


def padding_ratio(answers: tuple[tuple[tuple[int, int], ...], ...] | list) -> float | None:
    """Mean over consecutive target steps of max(tᵢ, tᵢ₊₁) over the mean tᵢ: the
    iterations a two-row call of a step and its successor runs per token of the first
    (1 for steps of one length; an answer alternating long and short lines reads far
    more).  None with no two consecutive steps."""
    longest = first = 0
    for answer in answers:
        ts = [int(p[0]) for p in answer]
        for a, b in pairwise(ts):
            longest += max(a, b)
            first += a
    return longest / first if first > 0 else None


def _readable(run: ConfigRun) -> bool:
    """Whether :func:`run_lengths` can read step lengths from ``run``'s calls: sync, one
    branch, step speculation."""
    return run.config.mode == "sync" and run.config.width == 1 and run.config.k1 >= 2


def lengths_source(record: RunRecord) -> ConfigRun:
    """The configuration :func:`run_lengths` reads by default: the record's synchronous,
    one-branch configuration with step speculation of the fewest steps in flight (then
    the fewest token positions; record order breaks ties)."""
    usable = [c for c in record.configs if _readable(c)]
    if not usable:
        raise ValueError(f"the record has no synchronous one-branch configuration with "
                         f"k1 >= 2 to read step lengths from "
                         f"({[c.label for c in record.configs]})")
    return min(usable, key=lambda c: (c.config.k1, c.config.k2))


def run_lengths(record: RunRecord, label: str | None = None) -> RunLengths:
    """Each problem's (target, draft) step lengths by index, from the calls of the
    configuration ``label`` (synchronous, one branch; default :func:`lengths_source`).
    A ValueError when the configuration is of another kind, a problem logged no calls,
    or its calls do not match its committed steps."""
    if label is None:
        run = lengths_source(record)
    else:
        found = [c for c in record.configs if c.label == label]
        if not found:
            raise ValueError(f"label {label!r} is not among the configurations "
                             f"{[c.label for c in record.configs]}")
        run = found[0]
        if not _readable(run):
            raise ValueError(f"label {label!r}: step lengths are read from a synchronous "
                             f"one-branch configuration with k1 >= 2, got mode "
                             f"{run.config.mode}, k1 {run.config.k1}, width "
                             f"{run.config.width}")
    answers, filled = [], 0
    for p in run.problems:
        answer, n = _walk(p, run.label)
        answers.append(answer)
        filled += n
    return RunLengths(run.label, tuple(answers),
                      tuple((p.accepted_steps, p.drafted_steps) for p in run.problems), filled)


def _walk(p: ProblemRun, label: str) -> tuple[tuple[tuple[int, int], ...], int]:
    """One problem's pairs by index and how many draft lengths were filled."""
    where = f"{label!r}, problem {p.problem}"
    if not p.calls:
        raise ValueError(f"{where}: the record logged no calls (records from before "
                         "calls were logged cannot give step lengths)")
    if any(c.sampled for c in p.calls):
        raise ValueError(f"{where}: sampled draft calls in a one-branch configuration")
    out: list[tuple[int, int]] = []
    filled = 0
    s = i = 0
    calls, steps = p.calls, p.steps
    while i < len(calls):
        chain: list[int] = []
        while i < len(calls) and calls[i].role == "draft":
            if calls[i].rows != 1 or len(calls[i].step_tokens) != 1:
                raise ValueError(f"{where}: a draft call of {calls[i].rows} rows")
            chain.append(calls[i].step_tokens[0])
            i += 1
        if i == len(calls):
            raise ValueError(f"{where}: draft calls with no target call after them")
        rows = calls[i].step_tokens
        i += 1
        if len(rows) > len(chain) + 1 or not rows:
            raise ValueError(f"{where}: a target call of {len(rows)} rows after "
                             f"{len(chain)} draft calls")
        a = 0
        while s + a < len(steps) and steps[s + a].source == "draft" and a < len(chain):
            a += 1
        for j in range(a + 1):
            if s + j >= len(steps):
                break
            # past the target's rows: an accepted draft that ended the answer
            t = rows[j] if j < len(rows) else chain[j]
            if j < len(chain):
                d = chain[j]
            else:
                d, filled = t, filled + 1
            out.append((t, d))
        s += a + 1
    if s < len(steps):
        raise ValueError(f"{where}: its calls account for {s} of {len(steps)} committed "
                         "steps")
    if not out:
        raise ValueError(f"{where}: no step")
    return tuple(out), filled


def with_run_lengths(cal: Calibration, lengths: RunLengths) -> Calibration:
    """``cal`` with the run's step lengths in place of its own: the answers, the joint
    pairs and both histograms from ``lengths``, and the problems' step acceptance
    relative to each other (their verdicts; the pooled rate stays the calibration's
    α1, which the spread is centred on).  Where a problem judged no draft step the
    spread is left out (one rate for every problem).  Everything else — the rate, its
    profile along the answer, how a verdict goes with the lengths, the costs — is the
    calibration's."""
    pairs = Counter(p for a in lengths.answers for p in a)
    t_hist = Counter(t for a in lengths.answers for t, _ in a)
    d_hist = Counter(d for a in lengths.answers for _, d in a)
    verdicts = ([list(v) for v in lengths.verdicts]
                if all(n > 0 for _, n in lengths.verdicts) else None)
    step = StepLevel.model_validate({
        **cal.step.model_dump(),
        "step_length_answers": [list(map(list, a)) for a in lengths.answers],
        "step_length_pairs": [[t, d, n] for (t, d), n in sorted(pairs.items())],
        "step_tokens_histogram": dict(sorted(t_hist.items())),
        "draft_step_tokens_histogram": dict(sorted(d_hist.items())),
        "step_tokens_mean": sum(t * n for t, n in t_hist.items()) / sum(t_hist.values()),
        "problem_verdicts": verdicts})
    return cal.model_copy(update={"step": step})
