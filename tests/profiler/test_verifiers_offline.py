"""Verifiers that need no model: exact match and the numbers check."""

from __future__ import annotations

from profiler.verifiers import JUDGE_PROMPT, ExactMatch, numbers_agree, numbers_in


def test_exact_match_normalises_whitespace_only() -> None:
    v = ExactMatch().verify([("a  b\n\n", "a b"), ("3 + 4 = 7", "3 + 4 = 8")])
    assert [x.accepted for x in v] == [True, False]
    assert all(x.seconds >= 0 and x.score is None for x in v)


def test_numbers_check() -> None:
    assert numbers_in("1,000 apples cost 3.50 and 3.0 more") == {"1000": 1, "3.5": 1, "3": 1}
    assert numbers_agree("so 3 + 4 = 7", "adding 4 to 3 gives 7")
    assert not numbers_agree("so 3 + 4 = 7", "so 3 + 4 = 8")
    assert numbers_agree("no numbers here", "none here either")


def test_judge_prompt_is_the_papers() -> None:
    text = JUDGE_PROMPT.format(s1="A", s2="B")
    assert "respond with [aligned]" in text and "<start_s1>\nA\n<end_s1>" in text
    assert text.endswith("<end_s2>")
