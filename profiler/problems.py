"""GSM8K-style problems from reasoning-gym (``gsm_symbolic``), deterministic and offline."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Problem", "extract_answer", "format_prompt", "load_problems", "score_answer"]


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
    """The reference chain of thought, steps separated by blank lines, ending '#### N'."""
    entry: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """The dataset's own entry (what reasoning-gym's scorer reads)."""


_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def load_problems(n: int, seed: int = 0) -> list[Problem]:
    """``n`` problems of ``gsm_symbolic`` with ``seed`` (needs the reasoning-gym package)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    try:
        import reasoning_gym
    except ImportError as e:
        raise RuntimeError(
            f"reasoning-gym is not installed (pip install reasoning-gym): {e}"
        ) from e
    ds = reasoning_gym.create_dataset("gsm_symbolic", size=n, seed=seed)
    return [
        Problem(i, x["question"], str(x["answer"]), x["metadata"].get("answer_cot", ""), dict(x))
        for i, x in enumerate(ds)
    ]


def format_prompt(problem: Problem) -> str:
    """A plain-text prompt that any model (base or instruct, any tokenizer) continues in steps."""
    return f"Question: {problem.question}\nAnswer: Let's think step by step.\n\n"


@functools.cache
def _scorer() -> Any:
    import reasoning_gym

    return reasoning_gym.create_dataset("gsm_symbolic", size=1, seed=0)


def extract_answer(output: str) -> str | None:
    """The final answer written in ``output``: the number after the last '####', else the last
    number anywhere; None when there is no number."""
    tail = output.split("####")[-1] if "####" in output else output
    found = _NUMBER.findall(tail)
    return found[-1].replace(",", "") if found else None


def score_answer(problem: Problem, output: str) -> bool:
    """Whether ``output``'s final answer is right, by reasoning-gym's own scorer (full credit).

    The answer is taken with :func:`extract_answer`; problems built without a
    dataset entry fall back to comparing the numbers.
    """
    answer = extract_answer(output)
    if answer is None:
        return False
    if problem.entry:
        return _scorer().score_answer(answer, problem.entry) == 1.0
    try:
        return float(answer) == float(problem.answer)
    except ValueError:
        return False
