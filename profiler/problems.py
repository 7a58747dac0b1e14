"""GSM8K-style problems from reasoning-gym (``gsm_symbolic``), deterministic and offline."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Problem", "load_problems", "format_prompt", "score_answer"]


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
        Problem(i, x["question"], str(x["answer"]), x["metadata"].get("answer_cot", ""))
        for i, x in enumerate(ds)
    ]


def format_prompt(problem: Problem) -> str:
    """A plain-text prompt that any model (base or instruct, any tokenizer) continues in steps."""
    return f"Question: {problem.question}\nAnswer: Let's think step by step.\n\n"


def score_answer(problem: Problem, output: str) -> bool:
    """True when the last number written in ``output`` (after '####' if present) is the answer."""
    tail = output.split("####")[-1] if "####" in output else output
    found = re.findall(r"-?\d[\d,]*(?:\.\d+)?", tail)
    if not found:
        return False
    try:
        return float(found[-1].replace(",", "")) == float(problem.answer)
    except ValueError:
        return False
