"""A sample's own draws: what each problem of a synthetic-acceptance sweep will meet.

A synthetic engine with position draws (:mod:`profiler.engines.synthetic`) writes at
each position of a problem a step whose length (and, with token speculation, whose
passes) is a fixed function of the seed, the prompt, the role and the position, and the
verifier's verdict on a draft is a fixed function of the two steps' texts, so of the
position and the draft's depth.  A sweep of a few problems therefore meets one fixed
sample of the laws, the same in every round and every configuration.  The decoder
model, drawing fresh steps from the laws, predicts the laws' expectation; a sweep of
three or twenty-four problems measures its own sample.  :class:`DrawnSample` hands the
model that sample: simulated problem i decodes the sample's problem i mod n with the
sample's lengths and the sample's uniforms for its verdicts (a prediction conditioned
on the sweep's workload, which is known from the seed before anything runs; no timing
enters it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["DrawnProblem", "DrawnSample"]


def _lengths(name: str, values: tuple[int, ...]) -> None:
    if not values:
        raise ValueError(f"{name} must name at least one position")
    bad = [v for v in values if v < 1]
    if bad:
        raise ValueError(f"{name} must be >= 1 at every position, got {bad[0]}")


@dataclass(frozen=True)
class DrawnProblem:
    """One problem's draws, by position after the prompt (0: the first step)."""

    target: tuple[int, ...]
    """The target's step length (tokens, capped) at each position."""
    draft: tuple[int, ...]
    """The draft's step length (tokens, capped) at each position."""
    verdicts: tuple[tuple[float, ...], ...]
    """The verifier's uniform in [0, 1) for the draft at each position, by its depth
    (drafts in a row before it): the draft is accepted when it is below the depth's rate."""
    target_passes: Mapping[int, tuple[tuple[int, ...], ...]] = field(default_factory=dict)
    """With token speculation, γ → the tokens each of the target's passes writes at each
    position (their sum is the step's length)."""
    draft_passes: Mapping[int, tuple[tuple[int, ...], ...]] = field(default_factory=dict)
    """The same for the draft, where the draft speculates too."""

    def __post_init__(self) -> None:
        _lengths("target", self.target)
        _lengths("draft", self.draft)
        n = len(self.target)
        if len(self.draft) != n or len(self.verdicts) != n:
            raise ValueError(f"target, draft and verdicts must cover the same positions, "
                             f"got {n}, {len(self.draft)} and {len(self.verdicts)}")
        for pos, us in enumerate(self.verdicts):
            if not us or any(not 0 <= u < 1 for u in us):
                raise ValueError(f"verdicts[{pos}] must hold at least one uniform in "
                                 f"[0, 1), got {us}")
        for name, table, lengths in (("target_passes", self.target_passes, self.target),
                                     ("draft_passes", self.draft_passes, self.draft)):
            for gamma, rows in table.items():
                if gamma < 1 or len(rows) != n:
                    raise ValueError(f"{name}[{gamma}] must cover the {n} positions for a "
                                     f"gamma >= 1, got {len(rows)}")
                for pos, (row, m) in enumerate(zip(rows, lengths, strict=True)):
                    if sum(row) != m or any(a < 1 for a in row):
                        raise ValueError(f"{name}[{gamma}][{pos}] must be passes of >= 1 "
                                         f"token summing to the step's {m}, got {row}")

    @property
    def positions(self) -> int:
        """How many positions the draws cover."""
        return len(self.target)

    def length(self, role: int, pos: int) -> int:
        """The step length of ``role`` (0: target, 1: draft) at position ``pos``."""
        self._check(pos)
        return (self.target, self.draft)[role][pos]

    def uniform(self, pos: int, depth: int) -> float:
        """The verdict's uniform for the draft at ``pos`` drafted at ``depth``."""
        self._check(pos)
        us = self.verdicts[pos]
        if not 0 <= depth < len(us):
            raise ValueError(f"depth must be in [0, {len(us) - 1}] at position {pos}, "
                             f"got {depth}")
        return us[depth]

    def passes(self, role: int, pos: int, gamma: int) -> tuple[int, ...]:
        """The tokens each token-speculation pass of ``role`` writes at ``pos``."""
        self._check(pos)
        table = (self.target_passes, self.draft_passes)[role]
        if gamma not in table:
            raise ValueError(f"the draws hold no passes of gamma = {gamma} for the "
                             f"{('target', 'draft')[role]}; they hold {sorted(table)}")
        return table[gamma][pos]

    def _check(self, pos: int) -> None:
        if not 0 <= pos < self.positions:
            raise ValueError(f"position must be in [0, {self.positions - 1}], got {pos}")


@dataclass(frozen=True)
class DrawnSample:
    """A sweep's problems, each as it will be drawn (:class:`DrawnProblem`)."""

    problems: tuple[DrawnProblem, ...]
    """The sweep's problems in order."""
    source: str
    """Where the draws came from (engine, law, seed, prompts)."""

    def __post_init__(self) -> None:
        if not self.problems:
            raise ValueError("problems must hold at least one problem")

    def __len__(self) -> int:
        return len(self.problems)

    def covers(self, steps: int, depth: int, gammas: tuple[int, int] = (0, 0)) -> None:
        """Raise unless every problem covers ``steps`` positions, verdicts to ``depth``
        drafts in a row (capped by the position) and the (target, draft) passes of
        ``gammas`` (0: none needed)."""
        for i, p in enumerate(self.problems):
            if p.positions < steps:
                raise ValueError(f"problem {i}'s draws cover {p.positions} positions; "
                                 f"the workload takes up to {steps}")
            for pos, us in enumerate(p.verdicts[:steps]):
                if len(us) < min(depth, pos + 1):
                    raise ValueError(f"problem {i}'s draws at position {pos} hold "
                                     f"verdicts to depth {len(us) - 1}; the configuration "
                                     f"drafts to depth {min(depth, pos + 1) - 1}")
            for role, g in enumerate(gammas):
                table = (p.target_passes, p.draft_passes)[role]
                if g and g not in table:
                    raise ValueError(f"problem {i}'s draws hold no passes of gamma = {g} "
                                     f"for the {('target', 'draft')[role]}")
