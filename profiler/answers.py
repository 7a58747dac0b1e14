"""The target's whole greedy answers, step by step, from the records that hold them.

Under greedy decoding the passes prompt lookup makes on an answer follow from the answer
alone (:mod:`profiler.ngram_replay`), so any record of the target's answers serves its
replay: a steps phase's pairs record (the target's step at every index of each problem)
and a run record's target-alone configuration (``specmodel decode --k1 1 --k2 1``, which
can answer more problems than the steps phase, at the cost of the target alone).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from profiler.problems import DEFAULT_DATASET

__all__ = ["Answer", "AnswerSettings", "pairs_answers", "run_answers"]


@dataclass(frozen=True)
class AnswerSettings:
    """How a record's answers were decoded: what a replay of them depends on."""

    target: str
    """The model that wrote them (pack name or folder, as the record names it)."""
    seed: int
    """The dataset's seed their problems come from."""
    delimiter: str
    """The text that ends a step."""
    max_step_tokens: int
    """Token cap per step."""
    max_steps: int
    """Steps per problem at most."""
    dataset: str = DEFAULT_DATASET
    """The reasoning-gym dataset their problems come from."""


@dataclass(frozen=True)
class Answer:
    """One problem's answer by the target."""

    seed: int
    """The dataset's seed of its problem."""
    problem: int
    """The problem's index among that seed's problems."""
    prompt: str
    """The prompt it continues (:func:`profiler.problems.format_prompt`)."""
    steps: tuple[str, ...]
    """Its steps in order, as the decoder's step calls wrote them."""
    dataset: str = DEFAULT_DATASET
    """The reasoning-gym dataset of its problem."""

    @property
    def key(self) -> tuple[str, int, int]:
        """(dataset, seed, problem): which problem it answers."""
        return self.dataset, self.seed, self.problem


def pairs_answers(path: str | Path) -> tuple[AnswerSettings, list[Answer]]:
    """The target's answers in a steps-phase pairs record, in problem order."""
    from profiler.problems import format_prompt, load_problems
    from profiler.step_profile import read_record

    got = read_record(path)
    if not got.pairs or got.key is None:
        raise ValueError(f"record {path}: no step pairs with their settings (missing, or "
                         "not a pairs record)")
    key = got.key
    steps: dict[int, dict[int, str]] = {}
    for p in got.pairs:
        steps.setdefault(p.problem, {})[p.step] = p.target_text
    seed, dataset = int(key["seed"]), str(key.get("dataset", DEFAULT_DATASET))
    problems = load_problems(int(key["problems"]), seed, dataset)
    settings = AnswerSettings(str(key["target"]), seed, str(key["delimiter"]),
                              int(key["max_step_tokens"]), int(key["steps_per_problem"]),
                              dataset)
    return settings, [Answer(seed, i, format_prompt(problems[i]),
                             tuple(s[k] for k in sorted(s)), dataset)
                      for i, s in sorted(steps.items())]


def run_answers(path: str | Path) -> tuple[AnswerSettings, list[Answer]]:
    """The answers of a run record's target-alone configuration (k1 = k2 = 1), in problem
    order.  A record without one, or of the synthetic engine (whose texts are drawn, not
    written by a model), is a ValueError naming it."""
    from profiler.problems import format_prompt, load_problems
    from specmodel.formats.run_record import load_run_record

    rec = load_run_record(path)
    if rec.settings.engine == "synthetic":
        raise ValueError(f"run record {path}: the synthetic engine's texts are not a "
                         "model's answers")
    if rec.settings.seed is None:
        raise ValueError(f"run record {path}: its problems' seed is not recorded (dataset "
                         f"{rec.settings.dataset!r})")
    base = next((c for c in rec.configs if c.config.k1 == 1 and c.config.k2 == 1), None)
    if base is None or not base.problems:
        raise ValueError(f"run record {path}: no target-alone configuration (k1 = k2 = 1) "
                         "with answers")
    cfg, seed, dataset = base.config, rec.settings.seed, rec.settings.dataset
    problems = load_problems(max(p.problem for p in base.problems) + 1, seed, dataset)
    settings = AnswerSettings(rec.models["target"], seed, cfg.step_delimiter,
                              cfg.max_step_tokens, cfg.max_steps, dataset)
    return settings, [Answer(seed, p.problem, format_prompt(problems[p.problem]),
                             tuple(s.text for s in p.steps), dataset)
                      for p in sorted(base.problems, key=lambda p: p.problem)]
