"""Token-level estimates from vLLM's counters (no model)."""

from __future__ import annotations

import pytest

from profiler.token_profile import token_section
from specmodel.closedform.token_level import expected_accepted_drafts, g_token
from specmodel.formats.calibration import TokenLevel
from specmodel.stats import fit_iid_alpha, summarize_counters


def test_iid_fit_inverts_the_mean() -> None:
    for alpha in (0.1, 0.5, 0.9):
        mean = expected_accepted_drafts(alpha, 4)
        assert fit_iid_alpha(mean, 4) == pytest.approx(alpha, abs=1e-9)
    with pytest.raises(ValueError, match="mean_accepted"):
        fit_iid_alpha(5.0, 4)


def test_counters_to_conditional_rates_and_c2() -> None:
    counters = {"num_drafts": 100, "num_draft_tokens": 400, "num_accepted_tokens": 120,
                "num_accepted_tokens_per_pos": [60, 36, 18, 6]}
    s = summarize_counters(counters, 4, speedup=1.3)
    assert s.conditional_acceptance == pytest.approx([0.6, 0.6, 0.5, 1 / 3])
    assert expected_accepted_drafts(s.alpha2, 4) == pytest.approx(1.2, rel=1e-9)
    assert g_token(s.alpha2, s.c2, 5) == pytest.approx(1.3, rel=1e-9)
    lo, hi = s.first_position_ci95
    assert lo < 0.6 < hi
    sec = token_section(s, 1, 3)
    assert isinstance(sec, TokenLevel) and sec.method == "ngram"
    assert sec.num_speculative_tokens == 4 and sec.samples == 400
    assert sec.acceptance_by_position == pytest.approx([0.6, 0.6, 0.5, 1 / 3])
    assert (sec.prompt_lookup_min, sec.prompt_lookup_max) == (1, 3) and sec.c2 == s.c2


def test_rates_of_zero_or_one_are_clipped_into_the_open_interval() -> None:
    counters = {"num_drafts": 10, "num_draft_tokens": 20, "num_accepted_tokens": 10,
                "num_accepted_tokens_per_pos": [10, 0]}
    s = summarize_counters(counters, 2)
    assert s.conditional_acceptance == [1.0, 0.0] and s.c2 is None
    sec = token_section(s, 1, 3)
    assert all(0 < r < 1 for r in sec.acceptance_by_position) and sec.c2 == 0.0


def test_slowdown_gives_a_large_effective_cost() -> None:
    counters = {"num_drafts": 50, "num_draft_tokens": 200, "num_accepted_tokens": 20,
                "num_accepted_tokens_per_pos": [10, 6, 3, 1]}
    s = summarize_counters(counters, 4, speedup=0.7)
    assert s.c2 > 0 and g_token(s.alpha2, s.c2, 5) == pytest.approx(0.7, rel=1e-9)
    with pytest.raises(ValueError, match="no drafts"):
        summarize_counters({**counters, "num_drafts": 0}, 4)


def test_the_share_of_passes_that_drafted_comes_from_the_replayed_passes() -> None:
    """transformers' replay counts every pass, drafted or not: the summary and the token
    section carry drafts / passes; vLLM's counters (no passes) leave it absent."""
    counters = {"num_drafts": 251, "num_draft_tokens": 1001, "num_accepted_tokens": 198,
                "num_accepted_tokens_per_pos": [93, 48, 34, 23], "num_target_passes": 380}
    s = summarize_counters(counters, 4)
    assert s.target_passes == 380 and s.draft_rate == pytest.approx(251 / 380)
    sec = token_section(s, 1, 3)
    assert sec.draft_rate == pytest.approx(251 / 380) and sec.target_passes == 380
    vllm = {k: v for k, v in counters.items() if k != "num_target_passes"}
    assert summarize_counters(vllm, 4).draft_rate is None
    assert token_section(summarize_counters(vllm, 4), 1, 3).draft_rate is None
    with pytest.raises(ValueError, match=r"num_target_passes .* at least num_drafts"):
        summarize_counters({**counters, "num_target_passes": 250}, 4)


def test_a_draft_rate_comes_with_its_passes() -> None:
    base = {"alpha2": 0.4, "c2": 0.0}
    assert TokenLevel(**base, draft_rate=0.7, target_passes=10).draft_rate == 0.7
    for bad in ({"draft_rate": 0.7}, {"target_passes": 10}):
        with pytest.raises(ValueError, match="given together"):
            TokenLevel(**base, **bad)
    for rate in (0.0, 1.2):
        with pytest.raises(ValueError):
            TokenLevel(**base, draft_rate=rate, target_passes=10)
