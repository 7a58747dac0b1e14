"""Replaying prompt lookup on a greedy output: the counters it yields are consistent."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from profiler.ngram_replay import (
    add_counters,
    prompt_lookup_proposal,
    replay_counters,
    replay_steps,
)
from specmodel.stats import summarize_counters

tokens = st.lists(st.integers(0, 5), min_size=2, max_size=60)


def test_proposal_takes_the_earliest_continuation_of_the_longest_ngram() -> None:
    ctx = [3, 7, 1, 2, 3, 9, 1, 2, 3]
    assert prompt_lookup_proposal(ctx, 2, 3) == [9, 1]  # earliest match of [1, 2, 3]
    assert prompt_lookup_proposal(ctx, 3, 1) == [7, 1, 2]  # the 1-gram [3]: after the first 3
    assert prompt_lookup_proposal([4, 5, 6], 3, 2) == []  # nothing repeats
    with pytest.raises(ValueError, match="gamma"):
        prompt_lookup_proposal(ctx, 0, 3)


def test_a_repeating_output_is_accepted_in_full() -> None:
    prompt = [1, 2, 3, 4, 5, 6, 7, 8]
    out = [1, 2, 3, 4, 5, 6, 7, 8]
    c = replay_counters(prompt, out, gamma=4, max_ngram=2)
    # Pass 1: no n-gram has a continuation yet, one plain token.  Pass 2: [1] matches at
    # the start, proposes 2 3 4 5, all right.  Pass 3: [5 6] proposes 7 8 1 2; the output
    # ends after 7 8, so 2 accepted.  8 tokens in 3 passes.
    assert c["num_drafts"] == 2 and c["num_draft_tokens"] == 8
    assert c["num_accepted_tokens"] == 6 and c["num_target_passes"] == 3
    assert c["num_accepted_tokens_per_pos"] == [2, 2, 1, 1]


@given(prompt=tokens, out=tokens, gamma=st.integers(1, 5), n=st.integers(1, 3))
def test_counters_are_consistent(prompt, out, gamma, n) -> None:
    c = replay_counters(prompt, out, gamma, n)
    per = c["num_accepted_tokens_per_pos"]
    assert len(per) == gamma
    assert sum(per) == c["num_accepted_tokens"] <= c["num_draft_tokens"]
    assert c["num_draft_tokens"] <= gamma * c["num_drafts"]
    assert all(a >= b for a, b in itertools.pairwise(per))  # marginal counts
    assert c["num_drafts"] <= c["num_target_passes"] <= len(out)
    # Every pass emits its accepted tokens plus one: the output is covered (the last
    # pass may end one token past it).
    assert len(out) <= c["num_target_passes"] + c["num_accepted_tokens"] <= len(out) + 1
    if 0 < c["num_accepted_tokens"] < gamma * c["num_drafts"]:
        s = summarize_counters(c, gamma)
        assert 0 < s.alpha2 < 1


class _Chars:
    """A character-level tokenizer (one id per character) for replaying text."""

    def __call__(self, text: str, add_special_tokens: bool = False):
        return type("Enc", (), {"input_ids": [ord(c) for c in text]})()


def test_an_answers_steps_replay_against_the_prefix_before_each() -> None:
    """Only steps written with speculation count; each is replayed against the prompt and
    every earlier step (speculated or not), and the counts add up."""
    prompt, steps = "ab ab ab\n", [("ab ab\n", True), ("xy xy\n", False), ("ab xy ab\n", True)]
    got = replay_steps(_Chars(), prompt, steps, 2, 3)
    want = add_counters(
        replay_counters([ord(c) for c in prompt], [ord(c) for c in "ab ab\n"], 2, 3),
        replay_counters([ord(c) for c in prompt + "ab ab\nxy xy\n"],
                        [ord(c) for c in "ab xy ab\n"], 2, 3))
    assert got == {**want, "output_tokens": len("ab ab\n") + len("ab xy ab\n")}
    assert got["num_target_passes"] >= got["num_drafts"] > 0
    none = replay_steps(_Chars(), prompt, [("ab\n", False)], 2, 3)
    assert none["num_target_passes"] == 0 and none["output_tokens"] == 0
