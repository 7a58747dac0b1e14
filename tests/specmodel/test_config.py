"""SpecConfig and Parameters: the one run configuration and the one parameter set."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specmodel.config import (
    DECODER_TOKEN_METHODS,
    TOKEN_METHODS,
    SpecConfig,
    TokenDrafter,
    TokenSpeculation,
    VerifierSpec,
    build,
)
from specmodel.errors import SpecmodelError
from specmodel.parameters import Parameters


def test_token_method_names_are_vllms_and_the_decoders_are_among_them() -> None:
    assert TOKEN_METHODS == ("ngram", "draft_model", "eagle", "eagle3", "mtp", "suffix")
    assert set(DECODER_TOKEN_METHODS) <= set(TOKEN_METHODS)


@given(st.integers(1, 50), st.integers(1, 50), st.sampled_from(["sync", "async"]))
def test_labels_and_conventions(k1: int, k2: int, mode: str) -> None:
    c = SpecConfig(mode=mode, k1=k1, k2=k2)
    assert c.draft_steps == k1 - 1 and c.num_speculative_tokens == k2 - 1
    assert (c.label == "target") == (k1 == 1 and k2 == 1)
    if k1 > 1:
        assert c.label == f"{mode} k1={k1} k2={k2}"
    elif k2 > 1:
        assert c.label == f"token k2={k2}"
    spec = c.token_speculation()
    assert (spec is None) == (k2 == 1)
    vllm = c.speculative_config()
    assert (vllm is None) == (k2 == 1)
    if vllm is not None:
        assert vllm["num_speculative_tokens"] == k2 - 1 == spec.num_speculative_tokens
        assert vllm == spec.vllm_config()


@pytest.mark.parametrize(
    "data,where",
    [
        ({"k1": 0}, "k1"),
        ({"k2": "3"}, "k2"),
        ({"k1": 2.0}, "k1"),
        ({"mode": "both"}, "mode"),
        ({"width": 2, "mode": "async"}, "width must be 1 in async mode"),
        ({"branch_temperature": math.inf}, "branch_temperature"),
        ({"step_delimiter": ""}, "step_delimiter"),
        ({"token": {"method": "eagle"}}, "model must be given"),
        ({"token": {"method": "ngram", "prompt_lookup_min": 4}}, "prompt_lookup_min"),
        ({"verifier": {"kind": "exact", "threshold": 1.5}}, "verifier.threshold"),
        ({"verifier": {"kind": "human"}}, "verifier.kind"),
        ({"k4": 1}, "k4: unknown field"),
    ],
)
def test_bad_configurations_name_the_field(data: dict, where: str) -> None:
    with pytest.raises(SpecmodelError, match=where):
        build(SpecConfig, data, "f.json")


def test_replace_merges_nested_sections_and_validates() -> None:
    c = SpecConfig(k2=3, token=TokenDrafter(prompt_lookup_max=4),
                   verifier=VerifierSpec(kind="judge", model="m"))
    d = c.replace(k1=2, token={"prompt_lookup_min": 2}, verifier={"threshold": 0.5})
    assert d.token == TokenDrafter(prompt_lookup_min=2, prompt_lookup_max=4)
    assert d.verifier == VerifierSpec(kind="judge", model="m", threshold=0.5)
    assert (d.k1, d.k2) == (2, 3) and c.k1 == 1
    with pytest.raises(SpecmodelError, match="k2"):
        c.replace(k2=0)


def test_replace_with_another_drafter_or_verifier_starts_from_its_defaults() -> None:
    """The old method's or kind's settings do not carry over (export and decode share it)."""
    c = SpecConfig(k2=3, token=TokenDrafter(prompt_lookup_min=2, prompt_lookup_max=4),
                   verifier=VerifierSpec(kind="embedding", model="minilm", threshold=0.7))
    d = c.replace(token={"method": "draft_model", "model": "smollm2-135m"},
                  verifier={"kind": "judge"})
    assert d.token == TokenDrafter(method="draft_model", model="smollm2-135m")
    assert d.verifier == VerifierSpec(kind="judge")
    same = c.replace(token={"method": "ngram"}, verifier={"kind": "embedding"})
    assert same == c
    with pytest.raises(SpecmodelError, match="token"):
        c.replace(token={"method": "eagle"})  # eagle needs its model


def test_schedule_sets_k_to_its_largest() -> None:
    c = SpecConfig(k2=2)
    spec = c.speculative_config([[1, 3, 4], [4, 8, 0]])
    assert spec["num_speculative_tokens"] == 4
    assert spec["num_speculative_tokens_per_batch_size"] == [[1, 3, 4], [4, 8, 0]]
    assert SpecConfig().speculative_config([[1, 8, 0]]) is None


@pytest.mark.parametrize(
    "name,expected",
    [
        ("exact", VerifierSpec(kind="exact")),
        ("embedding:minilm-l6-v2@0.85+numbers",
         VerifierSpec(kind="embedding", model="minilm-l6-v2", threshold=0.85)),
        ("judge:qwen2.5-coder-1.5b", VerifierSpec(kind="judge", model="qwen2.5-coder-1.5b")),
    ],
)
def test_verifier_names_as_records_store_them(name: str, expected: VerifierSpec) -> None:
    assert VerifierSpec.from_name(name) == expected


def test_legacy_decoder_settings_convert() -> None:
    old = {"mode": "sync", "k1": 2, "k2": 3, "token_method": "ngram", "token_draft_model": None,
           "prompt_lookup_max": 3, "max_step_tokens": 40, "max_steps": 8, "delimiter": "\n",
           "width": 2, "branch_temperature": 0.8}
    c = SpecConfig.from_legacy_decoder(old, "embedding:minilm-l6-v2@0.85+numbers")
    assert (c.k1, c.k2, c.width, c.step_delimiter, c.max_steps) == (2, 3, 2, "\n", 8)
    assert c.verifier.threshold == 0.85
    with pytest.raises(SpecmodelError, match="surprise"):
        SpecConfig.from_legacy_decoder({**old, "surprise": 1})


def test_token_speculation_needs_a_draft_token() -> None:
    with pytest.raises(ValueError, match="num_speculative_tokens"):
        TokenSpeculation(num_speculative_tokens=0)


@pytest.mark.parametrize(
    "args,name",
    [((1.0, 0.2, 0.5, 0.1), "alpha1"), ((0.5, -0.1, 0.5, 0.1), "c1"),
     ((0.5, 0.2, math.nan, 0.1), "alpha2"), ((0.5, 0.2, 0.5, math.inf), "c2")],
)
def test_parameters_name_what_is_wrong(args: tuple, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        Parameters(*args)


def test_parameters_replace_and_serialise() -> None:
    p = Parameters(0.6, 0.2, 0.7, 0.05)
    assert p.replace(c2=None, alpha1=0.5) == Parameters(0.5, 0.2, 0.7, 0.05)
    assert Parameters(**p.to_dict()) == p
    with pytest.raises(ValueError, match="alpha2"):
        p.replace(alpha2=2.0)


def test_continuous_target_batching_is_async_only_and_labelled() -> None:
    from specmodel.config import SpecConfig
    from specmodel.errors import SpecmodelError

    c = SpecConfig(mode="async", k1=3, target_batching="continuous")
    assert c.label == "async k1=3 k2=1 continuous"
    assert SpecConfig(mode="async", k1=3).label == "async k1=3 k2=1"
    assert SpecConfig.model_validate(c.model_dump(mode="json")) == c
    for bad in ({"mode": "sync", "k1": 3}, {"mode": "async", "k1": 1}):
        with pytest.raises(ValueError, match=r"target_batching 'continuous'.*needs mode async"):
            SpecConfig(target_batching="continuous", **bad)
    with pytest.raises(SpecmodelError, match=r"^target_batching 'continuous'"):
        c.replace(mode="sync")  # a check across fields names them, no "(top level)"
