"""The profiler's estimators (specmodel.stats and the shared ratio estimator): properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from specmodel.closedform.token_level import expected_accepted_drafts, g_token
from specmodel.montecarlo.estimate import ratio_estimate
from specmodel.stats import (
    conditional_acceptance,
    conformal_bound,
    conformal_rank,
    fit_iid_alpha,
    jeffreys_rate,
    solve_effective_c2,
    summarize_counters,
    track_interval,
    wilson,
)

counts = st.integers(1, 10_000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n)))
alphas = st.floats(0.02, 0.98)
gammas = st.integers(1, 12)


@given(counts)
def test_wilson_contains_the_rate_and_lies_in_the_unit_interval(xn) -> None:
    x, n = xn
    lo, hi = wilson(x, n)
    assert 0.0 <= lo <= x / n <= hi <= 1.0
    assert lo < hi


@given(st.floats(0.0, 1.0), st.integers(1, 2000))
def test_wilson_narrows_with_n(p, n) -> None:
    lo1, hi1 = wilson(round(p * n), n)
    lo4, hi4 = wilson(round(p * 4 * n), 4 * n)
    assert hi4 - lo4 < hi1 - lo1


@given(counts, st.floats(0.5, 4.0))
def test_wilson_widens_with_z(xn, z) -> None:
    x, n = xn
    lo, hi = wilson(x, n, z)
    lo2, hi2 = wilson(x, n, z * 1.5)
    assert lo2 <= lo and hi <= hi2


def test_wilson_edges_and_bad_input() -> None:
    assert wilson(0, 5)[0] == 0.0 and wilson(5, 5)[1] == 1.0
    assert wilson(30, 40) == pytest.approx((0.5981, 0.8581), abs=1e-4)  # textbook value
    for args, name in (((1, 0), "n"), ((-1, 5), "successes"), ((6, 5), "successes"),
                       ((1.5, 5), "successes"), ((1, 5, 0.0), "z"), ((1, 5, math.nan), "z")):
        with pytest.raises(ValueError, match=name):
            wilson(*args)


@given(counts)
def test_jeffreys_rate_lies_strictly_inside_and_near_the_raw_rate(xn) -> None:
    x, n = xn
    r = jeffreys_rate(x, n)
    assert 0.0 < r < 1.0
    assert abs(r - x / n) <= 0.5 / (n + 1) + 1e-12


@given(alphas, gammas)
def test_fit_iid_alpha_recovers_alpha_from_exact_geometric_counts(alpha, gamma) -> None:
    # Exact marginal counts of an i.i.d. acceptance: count[i] = drafts * alpha^(i + 1).
    drafts = 10**9
    per_pos = [round(drafts * alpha ** (i + 1)) for i in range(gamma)]
    assume(per_pos[-1] >= 1)
    mean = sum(per_pos) / drafts
    assert fit_iid_alpha(mean, gamma) == pytest.approx(alpha, abs=1e-6)
    assert fit_iid_alpha(expected_accepted_drafts(alpha, gamma), gamma) == pytest.approx(
        alpha, abs=1e-9)
    cond = conditional_acceptance(drafts, per_pos)
    assert cond == pytest.approx([alpha] * gamma, abs=1.0 / per_pos[-1])  # rounding of counts


def test_fit_iid_alpha_names_bad_input() -> None:
    for args, name in (((5.0, 4), "mean_accepted"), ((0.0, 4), "mean_accepted"),
                       ((math.nan, 4), "mean_accepted"), ((1.0, 0), "gamma"),
                       ((1.0, 2.5), "gamma")):
        with pytest.raises(ValueError, match=name):
            fit_iid_alpha(*args)


@given(st.integers(1, 10_000), st.lists(st.floats(0.0, 1.0), min_size=1, max_size=8))
def test_conditional_acceptance_of_marginal_counts_lies_in_the_unit_interval(drafts,
                                                                             fractions) -> None:
    per_pos, prev = [], drafts
    for f in fractions:
        prev = math.floor(prev * f)
        per_pos.append(prev)
    cond = conditional_acceptance(drafts, per_pos)
    assert len(cond) == len(per_pos) and all(0.0 <= c <= 1.0 for c in cond)
    # The product of the conditionals is the marginal rate of the last position.
    assert math.prod(cond) == pytest.approx(per_pos[-1] / drafts, abs=1e-12)


def test_conditional_acceptance_names_bad_counts() -> None:
    assert conditional_acceptance(10, [0, 0]) == [0.0, 0.0]
    with pytest.raises(ValueError, match=r"accepted_per_position\[1\] must lie in \[0, 3\]"):
        conditional_acceptance(10, [3, 4])
    with pytest.raises(ValueError, match="drafts"):
        conditional_acceptance(0, [])
    with pytest.raises(ValueError, match=r"accepted_per_position\[0\]"):
        conditional_acceptance(10, [-1])


@given(alphas, gammas, st.floats(0.0, 5.0))
def test_effective_c2_inverts_g_token(alpha, gamma, c2) -> None:
    speedup = float(g_token(alpha, c2, gamma + 1))
    fitted = solve_effective_c2(alpha, gamma, speedup)
    assert g_token(alpha, fitted, gamma + 1) == pytest.approx(speedup, rel=1e-9)
    assert fitted == pytest.approx(c2, rel=1e-6, abs=1e-9)


@given(alphas, gammas)
def test_a_speedup_beyond_free_drafting_gives_the_boundary(alpha, gamma) -> None:
    free = float(g_token(alpha, 0.0, gamma + 1))
    assert solve_effective_c2(alpha, gamma, free * 1.01) == 0.0


def test_effective_c2_names_bad_input() -> None:
    for args, name in (((1.0, 4, 1.2), "alpha2"), ((0.5, 0, 1.2), "gamma"),
                       ((0.5, 4, 0.0), "speedup"), ((0.5, 4, math.inf), "speedup")):
        with pytest.raises(ValueError, match=name):
            solve_effective_c2(*args)


@given(alphas, gammas, st.integers(50, 5000), st.floats(0.3, 3.0))
def test_summarize_counters_is_consistent(alpha, gamma, drafts, speedup) -> None:
    per_pos = [math.floor(drafts * alpha ** (i + 1)) for i in range(gamma)]
    accepted = sum(per_pos)
    assume(accepted > 0)
    s = summarize_counters({"num_drafts": drafts, "num_draft_tokens": gamma * drafts,
                            "num_accepted_tokens": accepted,
                            "num_accepted_tokens_per_pos": per_pos}, gamma, speedup)
    assert s.accepted_per_position == per_pos and s.gamma == gamma
    assert expected_accepted_drafts(s.alpha2, gamma) == pytest.approx(accepted / drafts,
                                                                       rel=1e-6)
    lo, hi = s.first_position_ci95
    assert lo <= per_pos[0] / drafts <= hi
    assert s.c2 is not None and s.c2 >= 0.0


@given(st.integers(0, 2**32 - 1), st.floats(0.05, 2.0), st.integers(20, 400))
def test_ratio_estimator_agrees_with_a_seeded_simulation(seed, ratio, n) -> None:
    # Pairs (draft time, target time) with E[draft] = ratio * E[target]: the ratio of sums
    # lies within a few standard errors of the true ratio.
    rng = np.random.default_rng(seed)
    target = rng.gamma(4.0, 0.25, n)
    draft = ratio * target * rng.lognormal(-0.02, 0.2, n)  # E[lognormal] = 1
    est = ratio_estimate(draft, target)
    assert est.n == n and est.stderr > 0
    assert est.agrees_with(ratio, z=6.0)


def test_ratio_estimator_coverage_over_many_runs() -> None:
    # Calibration of the delta-method SE: about 95 % of 2-sigma intervals cover the truth.
    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(2000):
        target = rng.exponential(1.0, 60) + 0.5
        draft = 0.3 * target + rng.normal(0.0, 0.1, 60)
        hits += ratio_estimate(draft, target).agrees_with(0.3, z=1.96)
    assert 0.92 <= hits / 2000 <= 0.97


def test_ratio_estimator_names_bad_input() -> None:
    with pytest.raises(ValueError, match="same length"):
        ratio_estimate([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="at least 2"):
        ratio_estimate([1.0], [1.0])
    with pytest.raises(ValueError, match="denominator"):
        ratio_estimate([1.0, 2.0], [0.0, 0.0])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.booleans(), min_size=2, max_size=60))
def test_clustered_rate_of_single_trials_is_the_binomial_with_m_minus_1(verdicts) -> None:
    """Clusters of one trial each are independent trials: the cluster-robust variance is
    r (1 − r) / (m − 1), the binomial's with one degree of freedom spent on the rate."""
    from specmodel.stats import clustered_rate

    m = len(verdicts)
    r, se = clustered_rate([int(v) for v in verdicts], [1] * m)
    assert r == pytest.approx(sum(verdicts) / m)
    assert se * se == pytest.approx(r * (1 - r) / (m - 1), abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 20), st.floats(0, 1)), min_size=2, max_size=15),
       st.randoms(use_true_random=False))
def test_clustered_rate_is_pooled_and_order_free(clusters, rnd) -> None:
    from specmodel.stats import clustered_rate, effective_samples

    trials = [n for n, _ in clusters]
    successes = [round(n * p) for n, p in clusters]
    r, se = clustered_rate(successes, trials)
    assert r == pytest.approx(sum(successes) / sum(trials))
    order = list(range(len(clusters)))
    rnd.shuffle(order)
    r2, se2 = clustered_rate([successes[i] for i in order], [trials[i] for i in order])
    assert (r2, se2) == pytest.approx((r, se))
    n_eff = effective_samples(r, se, sum(trials))
    assert 1 <= n_eff <= sum(trials)
    # every cluster at the pooled rate: nothing varies between problems
    same, se0 = clustered_rate([n // 2 for n in (2, 4, 6)], [2, 4, 6])
    assert same == 0.5 and se0 == 0.0 and effective_samples(same, se0, 12) == 12


def test_clustered_rate_estimates_the_spread_of_alike_verdicts() -> None:
    """Seeded Monte-Carlo: 20 problems × 10 verdicts, each problem's rate drawn from
    Beta(1, 1) (verdicts of one problem alike). The cluster-robust variance, averaged
    over 3000 replications, matches the pooled rate's variance across them (its
    standard error: a few %), and is ≈ 4× the binomial's — which treats the 200
    verdicts as independent."""
    import numpy as np

    from specmodel.stats import clustered_rate, effective_samples

    rng = np.random.default_rng(7)
    rates, variances, effs = [], [], []
    for _ in range(3000):
        k = rng.binomial(10, rng.beta(1.0, 1.0, size=20))
        r, se = clustered_rate(k.tolist(), [10] * 20)
        rates.append(r)
        variances.append(se * se)
        effs.append(effective_samples(r, se, 200))
    true_var = float(np.var(rates, ddof=1))
    assert float(np.mean(variances)) == pytest.approx(true_var, rel=0.08)
    # design effect 1 + (n − 1) ICC = 1 + 9 / 3 = 4 for Beta(1, 1): 200 / 4 = 50 pairs
    assert 40 < float(np.median(effs)) < 62
    assert true_var > 3 * 0.25 / 200


def test_clustered_rate_and_effective_samples_name_bad_input() -> None:
    from specmodel.stats import clustered_rate, effective_samples

    with pytest.raises(ValueError, match="at least 2 clusters"):
        clustered_rate([1, 0], [3, 0])
    with pytest.raises(ValueError, match="one entry per cluster"):
        clustered_rate([1], [3, 4])
    with pytest.raises(ValueError, match="successes must lie in"):
        clustered_rate([4, 1], [3, 4])
    with pytest.raises(ValueError, match="rate must lie in"):
        effective_samples(1.5, 0.1, 10)
    with pytest.raises(ValueError, match="stderr must be"):
        effective_samples(0.5, float("nan"), 10)
    assert effective_samples(0.0, 0.1, 10) == 10


@given(st.lists(st.floats(0, 10, allow_nan=False), min_size=19, max_size=200),
       st.sampled_from([0.8, 0.9, 0.95]))
def test_conformal_bound_is_the_order_statistic_the_level_needs(res, level) -> None:
    q = conformal_bound(res, level)
    assert q in res
    k = math.ceil(level * (len(res) + 1))
    assert sum(r <= q for r in res) >= k
    assert sum(r < q for r in res) < k


def test_conformal_bound_covers_a_new_exchangeable_draw() -> None:
    # seeded: over 4000 trials of 19 past draws and one new one, the new one falls at or
    # under the bound with probability >= 0.95 (exactly 19/20 for continuous draws)
    rng = np.random.default_rng(7)
    draws = rng.exponential(size=(4000, 20))
    inside = np.mean([d[19] <= conformal_bound(d[:19]) for d in draws])
    se = math.sqrt(0.95 * 0.05 / 4000)
    assert abs(inside - 0.95) < 4 * se


@given(st.integers(0, 500), st.sampled_from([0.5, 0.8, 0.9, 0.95, 0.99]))
def test_the_bound_exists_from_the_least_count_its_message_names(n, level) -> None:
    k = conformal_rank(n, level)
    assert k == math.ceil(level * (n + 1))
    if k <= n:
        assert conformal_bound([float(i) for i in range(n)], level) == k - 1
    else:
        with pytest.raises(ValueError, match="too few") as got:
            conformal_bound([0.1] * n, level)
        least = int(str(got.value).rsplit(" ", 1)[1].rstrip(")"))
        assert conformal_rank(least, level) <= least  # enough
        assert conformal_rank(least - 1, level) > least - 1  # and the least


def test_conformal_bound_rejects_what_it_cannot_bound() -> None:
    with pytest.raises(ValueError, match="too few"):
        conformal_bound([0.1] * 18)
    with pytest.raises(ValueError, match="level must lie in"):
        conformal_bound([0.1] * 40, level=1.0)
    with pytest.raises(ValueError, match="finite"):
        conformal_bound([0.1] * 30 + [math.nan])


@given(st.floats(0.01, 10), st.floats(0, 2))
def test_track_interval_is_the_point_times_and_over_the_factor(point, q) -> None:
    lo, hi = track_interval(point, q)
    assert lo <= point <= hi
    assert hi / point == pytest.approx(math.exp(q)) and point / lo == pytest.approx(math.exp(q))


def test_track_interval_rejects_what_it_cannot_place() -> None:
    with pytest.raises(ValueError, match="point"):
        track_interval(0.0, 0.1)
    with pytest.raises(ValueError, match="quantile_log"):
        track_interval(1.0, -0.1)
