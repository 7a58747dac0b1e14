"""Verifiers on real models: the embedding verifier's numbers check, the judge's one pass."""

from __future__ import annotations

import math

import pytest

from tests.conftest import require

pytestmark = pytest.mark.live

PARAPHRASE = ("First, Tom has 3 apples and buys 4 more, so 3 + 4 = 7 apples.",
              "Tom starts with 3 apples; adding the 4 he buys gives 7 apples.")
CHANGED_NUMBER = ("First, Tom has 3 apples and buys 4 more, so 3 + 4 = 7 apples.",
                  "First, Tom has 3 apples and buys 4 more, so 3 + 4 = 8 apples.")
UNRELATED = ("The box holds 12 pens, so 3 boxes hold 36 pens.",
             "We need to find the color of the sky.")


@pytest.fixture(scope="module")
def minilm(tmp_path_factory):
    require("transformers")
    import os
    from pathlib import Path

    from profiler.packs import fetch_pack

    env = os.environ.get("SPECMODEL_CACHE")
    cache = Path(env) if env else tmp_path_factory.mktemp("minilm")
    return fetch_pack("minilm-l6-v2", cache)


def test_embedding_verifier(minilm) -> None:
    from profiler.verifiers import EmbeddingVerifier

    v = EmbeddingVerifier(minilm, threshold=0.8)
    para, changed, unrelated = v.verify([PARAPHRASE, CHANGED_NUMBER, UNRELATED])
    assert para.accepted and not unrelated.accepted
    # cosine alone would accept the changed number; the numbers check rejects it
    assert changed.score > 0.9 and not changed.accepted
    assert unrelated.score < 0.5 and para.seconds > 0
    loose = EmbeddingVerifier(minilm, threshold=0.8, check_numbers=False)
    assert loose.verify([CHANGED_NUMBER])[0].accepted


def test_judge_one_forward_pass(smollm_path) -> None:
    from profiler.verifiers import JudgeVerifier

    judge = JudgeVerifier(smollm_path)
    first = judge.verify([PARAPHRASE, UNRELATED])
    again = judge.verify([PARAPHRASE, UNRELATED])
    assert [v.accepted for v in first] == [v.accepted for v in again]  # deterministic
    assert all(math.isfinite(v.score) and v.seconds > 0 for v in first)
    assert judge.prompt("a", "b").endswith("[")
