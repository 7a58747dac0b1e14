"""Problems of any reasoning-gym dataset, and how their answers are read and scored."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from profiler.problems import (
    DEFAULT_DATASET,
    Problem,
    check_dataset,
    extract_answer,
    final_answer,
    load_problems,
    score_answer,
    shared_problems,
)

pytest.importorskip("reasoning_gym")


def test_the_default_workload_is_gsm_symbolic() -> None:
    got = load_problems(2, seed=3)
    assert DEFAULT_DATASET == "gsm_symbolic"
    assert [p.dataset for p in got] == ["gsm_symbolic"] * 2
    assert all(p.answer_cot.rstrip().split("####")[-1].strip() == p.answer for p in got)


def test_another_dataset_is_deterministic_and_scored_by_its_own_scorer() -> None:
    got = load_problems(3, seed=5, dataset="leg_counting")
    assert got == load_problems(3, seed=5, dataset="leg_counting")
    assert got != load_problems(3, seed=6, dataset="leg_counting")
    assert all(p.dataset == "leg_counting" and "legs" in p.question for p in got)
    assert all(p.answer_cot == "" for p in got)  # only gsm_symbolic carries one
    p = got[0]
    assert score_answer(p, f"Adding them up: {p.answer} legs.")
    assert score_answer(p, f"so 3 + 4 = 7\n#### {p.answer}")
    assert not score_answer(p, f"#### {int(p.answer) + 1}")
    assert not score_answer(p, "I cannot count them.")


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(["leg_counting", "time_intervals"]), st.integers(0, 40),
       st.integers(1, 6), st.integers(0, 40), st.integers(1, 6))
def test_neighbouring_seeds_share_problems_and_the_check_finds_them(
        dataset: str, seed: int, n: int, other: int, m: int) -> None:
    """These datasets draw item i from seed + i: two draws share exactly the problems
    whose seed + index both cover, and :func:`shared_problems` names those."""
    held = load_problems(n, seed, dataset)
    shared = shared_problems(held, [(dataset, other, m), ("gsm_symbolic", seed, n)])
    assert [p.index for p in shared] == [i for i in range(n) if other <= seed + i < other + m]


def test_gsm_symbolic_seeds_are_not_shifted() -> None:
    held = load_problems(3, 2)
    assert shared_problems(held, [("gsm_symbolic", 1, 30), ("leg_counting", 2, 10)]) == []
    assert shared_problems(held, [("gsm_symbolic", 2, 1)]) == held[:1]


def test_an_answer_that_is_not_a_number_is_read_as_text() -> None:
    p = load_problems(1, seed=1, dataset="time_intervals")[0]
    assert ":" in p.answer  # HH:MM:SS
    assert final_answer(p, f"The start is 18:54.\n#### {p.answer}\n") == p.answer
    assert score_answer(p, f"Step one.\nSo the duration is\n{p.answer}")
    assert not score_answer(p, "#### 00:00:01")


@pytest.mark.parametrize("name", ["gsm_symbolic", "leg_counting", "time_intervals"])
def test_known_datasets_pass_the_check(name: str) -> None:
    assert check_dataset(name) == name


def test_an_unknown_dataset_names_the_option_and_the_nearest() -> None:
    with pytest.raises(ValueError, match=r"--dataset 'gsm_symbolik'.*gsm_symbolic"):
        check_dataset("gsm_symbolik", "--dataset")
    with pytest.raises(ValueError, match="dataset 'nope' is not a reasoning-gym dataset"):
        load_problems(1, dataset="nope")


@given(st.integers(-10**6, 10**6), st.text(alphabet="abc .\n", max_size=30))
def test_a_numeric_answer_is_the_last_number_after_the_mark(n: int, noise: str) -> None:
    text = f"12 apples and 7 pears{noise}\n#### {n:,}"
    assert extract_answer(text) == str(n)
    assert extract_answer(f"{noise} so {n}") == str(n)
    problem = Problem(0, "q", str(n), "")
    assert score_answer(problem, text)  # no dataset entry: the numbers compared


@given(st.lists(st.text(alphabet="xyz :", min_size=1, max_size=8).filter(str.strip),
                min_size=1, max_size=5))
def test_a_text_answer_is_the_last_line_or_the_line_after_the_mark(lines: list[str]) -> None:
    assert extract_answer("\n".join(lines) + "\n\n", numeric=False) == lines[-1].strip()
    marked = "\n".join(["reasoning", "####", *lines])
    assert extract_answer(marked, numeric=False) == lines[0].strip()
    assert extract_answer("  \n", numeric=False) is None
