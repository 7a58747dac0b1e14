"""Verifiers that need no model: exact match, the numbers check, the registry."""

from __future__ import annotations

import pytest

from profiler.verifiers import JUDGE_PROMPT, ExactMatch, numbers_agree, numbers_in
from specmodel.config import VerifierSpec


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


def test_the_registry_builds_every_verifier_kind() -> None:
    from profiler.verifiers import VERIFIERS
    from specmodel.config import VERIFIER_KINDS

    assert tuple(VERIFIERS) == VERIFIER_KINDS


@pytest.mark.parametrize(
    ("spec", "built"),
    [
        (VerifierSpec(kind="exact"), ("exact",)),
        (VerifierSpec(kind="embedding", threshold=0.8),
         ("embedding", "/packs/minilm-l6-v2", 0.8, 2)),
        (VerifierSpec(kind="embedding", model="other-emb"),
         ("embedding", "/packs/other-emb", 0.9, 2)),
        (VerifierSpec(kind="judge"), ("judge", "/packs/qwen2.5-coder-0.5b", 2)),
        (VerifierSpec(kind="judge", model="big-judge"), ("judge", "/packs/big-judge", 2)),
    ],
)
def test_make_verifier_builds_what_the_spec_names(monkeypatch, spec, built) -> None:
    import profiler.packs
    import profiler.verifiers as v

    monkeypatch.setattr(profiler.packs, "resolve_model", lambda name: f"/packs/{name}")
    monkeypatch.setattr(v, "EmbeddingVerifier", lambda model, *, threshold, threads: (
        "embedding", model, threshold, threads))
    monkeypatch.setattr(v, "JudgeVerifier", lambda model, *, threads: ("judge", model, threads))
    out = v.make_verifier(spec, threads=2)
    assert (("exact",) if isinstance(out, ExactMatch) else out) == built
