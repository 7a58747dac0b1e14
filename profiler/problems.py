"""Problems from reasoning-gym, deterministic and offline: GSM8K-style ``gsm_symbolic`` by
default, or any other of its datasets (``dataset``), so that a calibration can be held
against the workload it will serve.

Every dataset gets the same plain prompt (the question, then "Answer: Let's think step by
step."), and every answer is scored by the dataset's own scorer on the final answer
:func:`extract_answer` takes from the output.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from specmodel.formats import DEFAULT_DATASET

__all__ = ["DEFAULT_DATASET", "Problem", "check_dataset", "dataset_key", "extract_answer",
           "final_answer", "format_prompt", "load_problems", "score_answer",
           "shared_problems"]


@dataclass(frozen=True)
class Problem:
    """One problem."""

    index: int
    """Position in the seeded dataset."""
    question: str
    """The problem text."""
    answer: str
    """The reference final answer."""
    answer_cot: str
    """The reference chain of thought, steps separated by blank lines, ending '#### N'
    (gsm_symbolic's; empty for datasets that give none)."""
    entry: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """The dataset's own entry (what reasoning-gym's scorer reads)."""
    dataset: str = DEFAULT_DATASET
    """The reasoning-gym dataset it comes from (whose scorer judges its answers)."""


_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def check_dataset(dataset: str, option: str = "dataset") -> str:
    """``dataset`` when reasoning-gym knows it; a ValueError naming ``option`` and the
    nearest names otherwise (needs the reasoning-gym package)."""
    import difflib

    known = _datasets()
    if dataset not in known:
        near = difflib.get_close_matches(dataset, known, n=3) or sorted(known)[:5]
        raise ValueError(f"{option} {dataset!r} is not a reasoning-gym dataset "
                         f"({len(known)} are; nearest: {', '.join(near)})")
    return dataset


def dataset_key(dataset: str) -> dict[str, str]:
    """A resume key's or record header's ``dataset`` entry: none at the default, so that
    a key written before the setting existed matches a run at it
    (:data:`profiler.step_profile.KEY_DEFAULTS`)."""
    return {} if dataset == DEFAULT_DATASET else {"dataset": dataset}


@functools.cache
def _datasets() -> tuple[str, ...]:
    try:
        from reasoning_gym.factory import DATASETS
    except ImportError as e:
        raise RuntimeError(
            f"reasoning-gym is not installed (pip install reasoning-gym): {e}"
        ) from e
    return tuple(sorted(DATASETS))


def load_problems(n: int, seed: int = 0, dataset: str = DEFAULT_DATASET) -> list[Problem]:
    """``n`` problems of the reasoning-gym ``dataset`` with ``seed`` (needs the
    reasoning-gym package)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    check_dataset(dataset)
    import reasoning_gym

    ds = reasoning_gym.create_dataset(dataset, size=n, seed=seed)
    return [
        Problem(i, x["question"], str(x["answer"]), x["metadata"].get("answer_cot", ""),
                dict(x), dataset)
        for i, x in enumerate(ds)
    ]


def shared_problems(problems: Sequence[Problem],
                    drawn: Iterable[tuple[str, int, int]]) -> list[Problem]:
    """The problems of ``problems`` that another draw holds too: each of ``drawn`` is a
    (dataset, seed, n), the ``n`` problems :func:`load_problems` gives for them.

    A seed does not name a set of problems apart from the others: most reasoning-gym
    datasets (leg_counting, time_intervals, …) draw item i from seed + i, so seed 3's
    first problem is seed 2's second; gsm_symbolic does not.  Problems are therefore
    compared by their dataset and text, never by their seeds."""
    mine = {p.dataset for p in problems}
    seen = {(p.dataset, p.question)
            for dataset, seed, n in drawn if dataset in mine and n > 0
            for p in load_problems(n, seed, dataset)}
    return [p for p in problems if (p.dataset, p.question) in seen]


def format_prompt(problem: Problem) -> str:
    """A plain-text prompt that any model (base or instruct, any tokenizer) continues in steps."""
    return f"Question: {problem.question}\nAnswer: Let's think step by step.\n\n"


@functools.cache
def _scorer(dataset: str) -> Any:
    import reasoning_gym

    return reasoning_gym.create_dataset(dataset, size=1, seed=0)


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def extract_answer(output: str, numeric: bool = True) -> str | None:
    """The final answer written in ``output``.

    ``numeric``: the number after the last '####', else the last number anywhere; None
    when there is no number.  Otherwise (a reference answer that is not a number, as in
    reasoning-gym's word and time datasets): the first line after the last '####', else
    the last non-empty line, stripped; None when nothing was written.
    """
    tail = output.split("####")[-1] if "####" in output else output
    if numeric:
        found = _NUMBER.findall(tail)
        return found[-1].replace(",", "") if found else None
    lines = [ln.strip() for ln in tail.splitlines() if ln.strip()]
    if not lines:
        return None
    return lines[0] if "####" in output else lines[-1]


def final_answer(problem: Problem, output: str) -> str | None:
    """The final answer ``output`` gives to ``problem``: :func:`extract_answer`, as a number
    when the problem's reference answer is one."""
    return extract_answer(output, _number(problem.answer) is not None)


def score_answer(problem: Problem, output: str) -> bool:
    """Whether ``output``'s final answer is right, by reasoning-gym's own scorer for the
    problem's dataset (full credit).

    The answer is taken with :func:`extract_answer` (as a number when the reference
    answer is one); problems built without a dataset entry fall back to comparing the
    numbers, or the texts.
    """
    answer = final_answer(problem, output)
    if answer is None:
        return False
    if problem.entry:
        return _scorer(problem.dataset).score_answer(answer, problem.entry) == 1.0
    if _number(problem.answer) is not None:
        return _number(answer) == _number(problem.answer)
    return answer == problem.answer.strip()
