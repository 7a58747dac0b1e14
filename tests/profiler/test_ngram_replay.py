"""Replaying prompt lookup on a greedy output: the counters it yields are consistent."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from profiler.ngram_replay import prompt_lookup_proposal, replay_counters
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
