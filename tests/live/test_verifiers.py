"""Verifiers on real models: the embedding verifier's numbers check, the judge's one pass."""

from __future__ import annotations

import math

import pytest

pytestmark = pytest.mark.live

PARAPHRASE = ("First, Tom has 3 apples and buys 4 more, so 3 + 4 = 7 apples.",
              "Tom starts with 3 apples; adding the 4 he buys gives 7 apples.")
CHANGED_NUMBER = ("First, Tom has 3 apples and buys 4 more, so 3 + 4 = 7 apples.",
                  "First, Tom has 3 apples and buys 4 more, so 3 + 4 = 8 apples.")
UNRELATED = ("The box holds 12 pens, so 3 boxes hold 36 pens.",
             "We need to find the color of the sky.")


def test_embedding_verifier(minilm_path) -> None:
    from profiler.verifiers import EmbeddingVerifier

    v = EmbeddingVerifier(minilm_path, threshold=0.8)
    para, changed, unrelated = v.verify([PARAPHRASE, CHANGED_NUMBER, UNRELATED])
    assert para.accepted and not unrelated.accepted
    # cosine alone would accept the changed number; the numbers check rejects it
    assert changed.score > 0.9 and not changed.accepted
    assert unrelated.score < 0.5 and para.seconds > 0
    loose = EmbeddingVerifier(minilm_path, threshold=0.8, check_numbers=False)
    assert loose.verify([CHANGED_NUMBER])[0].accepted


def test_judge_one_forward_pass(smollm_path) -> None:
    from profiler.verifiers import JudgeVerifier

    judge = JudgeVerifier(smollm_path)
    first = judge.verify([PARAPHRASE, UNRELATED])
    again = judge.verify([PARAPHRASE, UNRELATED])
    assert [v.accepted for v in first] == [v.accepted for v in again]  # deterministic
    assert all(math.isfinite(v.score) and v.seconds > 0 for v in first)
    assert judge.prompt("a", "b").endswith("[")
