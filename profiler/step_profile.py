"""Measure the step level on real models: α1, c1, the verifier's cost, step lengths.

Protocol: for each problem the target decodes its own greedy trajectory step by
step; at every prefix the draft proposes its step from the same prefix, both
are timed (batch of one), and the verifier judges the pair.  Every pair is
appended to a JSONL file as soon as it is measured, so an interrupted run keeps
what it measured and ``resume=True`` continues where it stopped.

Estimates (``summarize``, with the estimators of :mod:`specmodel.stats`): α1 =
accepted / pairs with a Wilson 95 % interval (the calibration stores the
Jeffreys-smoothed (x + ½)/(n + 1) so that 0 or n acceptances still give a rate
in (0, 1)); c1 = Σ draft time / Σ target time with its delta-method standard
error (the ratio estimator of specmodel.montecarlo.estimate); the verifier's
cost in target-step units; the step-length histogram of the target.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from profiler.engines import Engine
from profiler.problems import Problem, format_prompt
from profiler.progress import ProgressCallback, no_progress
from profiler.verifiers import Verifier
from specmodel.stats import jeffreys_rate, wilson

if TYPE_CHECKING:
    from specmodel.formats.calibration import StepLevel

__all__ = ["StepPair", "StepSummary", "profile_steps", "read_pairs", "summarize"]


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


def read_pairs(path: str | Path) -> list[StepPair]:
    """Pairs recorded so far (a truncated last line from an interrupted run is skipped)."""
    p = Path(path)
    if not p.is_file():
        return []
    out = []
    for line in p.read_text(encoding="utf-8").splitlines():
        try:
            out.append(StepPair(**json.loads(line)))
        except (json.JSONDecodeError, TypeError):
            continue
    return out


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
) -> list[StepPair]:
    """Run the protocol, appending each pair to ``record`` (JSONL) as it is measured.

    ``progress(done, total, message)`` is called after every pair, with
    ``total = len(problems) * steps_per_problem``; the steps a problem does not
    take (its target finished earlier) count as done when it finishes, and with
    ``resume=True`` the recorded pairs count as done at once.  A resumed run
    rebuilds each problem's prefix from the recorded target steps (greedy
    decoding is deterministic) instead of decoding them again.
    """
    for name, value in (("steps_per_problem", steps_per_problem),
                        ("max_step_tokens", max_step_tokens)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    path = Path(record)
    path.parent.mkdir(parents=True, exist_ok=True)
    done = read_pairs(path) if resume else []
    if not resume and path.exists():
        path.unlink()
    recorded = {(p.problem, p.step): p for p in done}
    say = progress or no_progress
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
        )


def summarize(pairs: Sequence[StepPair]) -> StepSummary:
    """α1, c1, verifier cost and step lengths with their uncertainty."""
    from specmodel.montecarlo.estimate import ratio_estimate

    n = len(pairs)
    if n < 2:
        raise ValueError(f"pairs must hold at least 2 measurements, got {n}")
    x = sum(p.accepted for p in pairs)
    c1 = ratio_estimate([p.draft_seconds for p in pairs], [p.target_seconds for p in pairs])
    mean_target = sum(p.target_seconds for p in pairs) / n
    hist = Counter(p.target_tokens for p in pairs)
    return StepSummary(
        pairs=n,
        accepted=x,
        alpha1=jeffreys_rate(x, n),
        alpha1_ci95=wilson(x, n),
        c1=c1.mean,
        c1_stderr=c1.stderr,
        verifier_cost=sum(p.verify_seconds for p in pairs) / n / mean_target,
        step_tokens_mean=sum(p.target_tokens for p in pairs) / n,
        step_tokens_histogram=dict(sorted(hist.items())),
    )
