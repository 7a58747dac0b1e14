"""What the verifier and the token drafter accept, and how long steps are:
:class:`AcceptanceModel` (pure, no torch).

* step acceptance by depth — the probability that the draft step at depth j of a run is
  accepted given the earlier ones were (``step_by_depth``), else i.i.d. α1;
* best-of-W acceptance — measured per number of distinct branches
  (``branch_by_width``, by the steps phase with sampled branches) when given, else
  independent branches 1 − (1 − α)^W (an assumption: real branches are correlated, so
  it is an upper bound); and how often a sampled branch repeats an earlier sibling
  (``duplicate_branch_rate``: the decoder keeps it once, so it costs its draft row but
  no target row and no verdict);
* the lag-1 correlation ρ of consecutive step verdicts of one problem
  (``verdict_correlation``, measured by the steps phase; 0: independent verdicts): the
  simulator draws them as a two-state Markov chain with the depth's rate p as its
  marginal, P(accept | accepted before) = p + ρ(1 − p), P(accept | rejected before) =
  p(1 − ρ), clipped to [0, 1] (:meth:`AcceptanceModel.next_step_rate`);
* the spread of step acceptance between problems (``problem_spread``, from the
  calibration's per-problem verdict counts): a simulated problem draws one calibration
  problem (weighted by its judged pairs) and shifts every step rate of the problem by
  that problem's logit offset from the pooled rate, so easy and hard problems alternate
  as in real text (the measured lag-1 correlation of verdicts is then taken as this
  spread, not drawn again as a chain); α1's calibration uncertainty then counts each
  problem as one cluster (:func:`specmodel.stats.clustered_rate`);
* how acceptance moves along an answer (``index_shift``, from the calibration's verdict
  counts per step index): the judged step at index i of its answer has its rate moved
  by that index's logit offset from the pooled rate, shrunk towards 0 by an empirical
  Bayes estimate of the offsets' true spread (a handful of pairs per index says little
  on its own; :func:`index_profile`) — with the problem's own offset, additively on the
  logit scale; past the last measured index, no offset;
* how the verdict goes with the two steps' lengths (``length_effect``, a logistic fit to
  the calibration's verdicts by (target, draft) length, :func:`fit_length_effect`): a
  draft step much shorter or longer than the target's from the same prefix is seldom
  judged equivalent, so an accepted draft step is about as long as the target's, and a
  rejected position commits the target's step — which sets the tokens a position
  commits (drawing the lengths independently of the verdict had the 1.5B trio's
  accepted draft steps 1 token shorter than measured and its rejected target steps 1
  token shorter, 4–5 % fewer tokens per async position);
* step lengths of the target and of the draft (:class:`StepLengths`: a histogram, else a
  fixed mean; the draft's own histogram when measured, else the target's), and their
  joint distribution from one prefix when measured (``step_length_pairs``: the two
  lengths are correlated — both models write the same kind of line — which matters
  wherever one model waits for the other);
* token acceptance by draft position (conditional), else i.i.d. α2, per draft, and its
  spread between problems (``token_problem_spread``, from whole answers replayed problem
  by problem: an answer that repeats itself drafts and accepts far more — each
  simulated problem moves every position's rate by one measured problem's logit
  offset, and α2's uncertainty counts problems as clusters); and the
  share of token-speculation passes that carry a draft (``token_draft_rate``: prompt
  lookup proposes nothing where no n-gram of the context matches, and such a pass
  writes one token — 0.66–0.71 of the passes drafted in the measured calibrations, so
  counting every pass as a draft overstates tokens per pass by 9–13 %);
* the rate of draft steps that end the answer (``draft_end_rate``): such a step closes
  its branch (nothing is drafted after it, the target does not expand it) and, if
  accepted, ends the problem;
* the rate of target steps that end the answer (``target_end_rate``): committing one ends
  the problem (0: every problem runs to ``max_steps``).

:meth:`AcceptanceModel.from_calibration` names every part it had to assume
(:attr:`AcceptanceModel.missing`); :meth:`AcceptanceModel.resampled` draws the rates
from their Beta posteriors given the calibration's sample sizes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from specmodel.validation import check_positive_int, check_probability

__all__ = ["AcceptanceModel", "LengthEffect", "StepLengths", "draw_indices",
           "fit_length_effect", "index_profile", "logit", "logit_shifted"]


def draw_indices(rng: np.random.Generator, cum: np.ndarray, n: int) -> np.ndarray:
    """``n`` indices drawn from the categorical distribution whose cumulative weights are
    ``cum`` (non-decreasing, last entry the total)."""
    return np.minimum(np.searchsorted(cum, rng.random(n) * cum[-1], side="right"),
                      len(cum) - 1)


@dataclass(frozen=True)
class StepLengths:
    """A distribution of step lengths in tokens."""

    values: tuple[int, ...]
    """Possible lengths."""
    weights: tuple[float, ...]
    """Their probabilities (normalised)."""

    @classmethod
    def constant(cls, tokens: float) -> StepLengths:
        """Every step has ``tokens`` tokens (rounded, at least 1)."""
        return cls((max(1, round(float(tokens))),), (1.0,))

    @classmethod
    def histogram(cls, counts: Mapping[int | str, int]) -> StepLengths:
        """From {length: count}."""
        items = sorted((int(k), int(v)) for k, v in counts.items() if int(v) > 0)
        if not items or any(k < 1 for k, _ in items):
            raise ValueError(f"a step-length histogram needs positive lengths, got {counts}")
        total = sum(v for _, v in items)
        return cls(tuple(k for k, _ in items), tuple(v / total for _, v in items))

    @property
    def is_constant(self) -> bool:
        """One length only."""
        return len(self.values) == 1

    @property
    def mean(self) -> float:
        """Expected length."""
        return float(np.dot(self.values, self.weights))

    def sample(self, rng: np.random.Generator, n: int, cap: int | None = None) -> np.ndarray:
        """``n`` lengths, each at most ``cap``."""
        if self.is_constant:
            out = np.full(n, self.values[0], dtype=np.int64)
        else:
            idx = draw_indices(rng, np.cumsum(self.weights), n)
            out = np.asarray(self.values, dtype=np.int64)[idx]
        return np.minimum(out, cap) if cap is not None else out


@dataclass(frozen=True)
class LengthEffect:
    """The logit offset of a draft step's acceptance by the two lengths from its prefix:
    ``coef · (x − center) + intercept`` with x = (log(t + 1), |log((d + 1)/(t + 1))|)
    for target and draft lengths t, d (:func:`fit_length_effect`)."""

    coef: tuple[float, float]
    """Coefficients of log(t + 1) and of |log((d + 1)/(t + 1))| (logit per unit)."""
    center: tuple[float, float]
    """The features' means over the measured pairs."""
    cov: tuple[tuple[float, float], tuple[float, float]]
    """Covariance of ``coef`` (the penalised fit's inverse information)."""
    intercept: float
    """Offset that keeps the mean acceptance over the measured pairs at the pooled rate
    (the offsets spread the rates, which on the logit scale would move their mean)."""
    rows: tuple[tuple[float, float, float], ...]
    """The measured pairs' centred features and weights, (x1, x2, pairs): what
    ``intercept`` is solved over again when the coefficients are redrawn."""

    def offset(self, target_tokens: int, draft_tokens: int) -> float:
        """The logit offset for a draft step of ``draft_tokens`` whose target step from
        the same prefix has ``target_tokens``."""
        x1, x2 = _length_features(target_tokens, draft_tokens)
        return (self.coef[0] * (x1 - self.center[0]) + self.coef[1] * (x2 - self.center[1])
                + self.intercept)

    def resampled(self, rng: np.random.Generator, alpha: float) -> LengthEffect:
        """The coefficients drawn from their normal posterior, the intercept solved again
        so the measured pairs' mean acceptance stays at ``alpha``."""
        coef = tuple(float(c) for c in rng.multivariate_normal(self.coef, self.cov))
        return replace(self, coef=(coef[0], coef[1]),
                       intercept=_centring(alpha, coef, self.rows))


def _length_features(t: int, d: int) -> tuple[float, float]:
    lt = math.log(max(t, 0) + 1.0)
    return lt, abs(math.log(max(d, 0) + 1.0) - lt)


def _logistic(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def logit(p: float) -> float:
    """log(p / (1 − p)) for 0 < p < 1."""
    return math.log(p / (1.0 - p))


def _centring(alpha: float, coef: Sequence[float],
              rows: Sequence[tuple[float, float, float]]) -> float:
    """The intercept c with Σ w σ(logit α + coef·x + c) / Σ w = α over ``rows``
    (x centred; bisection on a monotone function)."""
    x = np.asarray([(a, b) for a, b, _ in rows], dtype=np.float64)
    w = np.asarray([n for _, _, n in rows], dtype=np.float64)
    base = logit(alpha) + x @ np.asarray(coef, dtype=np.float64)
    lo, hi = -30.0, 30.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if float(np.dot(w, _logistic(base + mid))) / w.sum() < alpha:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def fit_length_effect(cells: Sequence[tuple[int, int, int, int]], alpha: float,
                      penalty: float = 1.0) -> LengthEffect | None:
    """The verdict's dependence on the two lengths from (target tokens, draft tokens,
    pairs, accepted) cells: a logistic regression of the verdict on the centred
    features log(t + 1) and |log((d + 1)/(t + 1))|, fitted by Newton's method with a
    ridge ``penalty`` on each coefficient in units of its feature's standard deviation
    (a weak N(0, 1/penalty) prior: a few dozen pairs cannot separate the verdicts
    completely), its intercept then re-solved so the pairs' mean acceptance is ``alpha``
    (the model's pooled rate).  None with under 8 pairs, or when a feature does not
    vary (nothing to fit)."""
    check_probability("alpha", alpha)
    if not penalty > 0:
        raise ValueError(f"penalty must be > 0, got {penalty}")
    rows = [(*_length_features(t, d), float(n), float(k)) for t, d, n, k in cells]
    w = np.asarray([r[2] for r in rows])
    if w.sum() < 8:
        return None
    x = np.asarray([(r[0], r[1]) for r in rows])
    y = np.asarray([r[3] for r in rows])
    center = (x * w[:, None]).sum(axis=0) / w.sum()
    xc = x - center
    sd = np.sqrt((xc**2 * w[:, None]).sum(axis=0) / w.sum())
    if not np.all(sd > 1e-9):
        return None
    design = np.column_stack([np.ones(len(rows)), xc])
    ridge = np.diag([0.0, penalty * sd[0] ** 2, penalty * sd[1] ** 2])
    beta = np.zeros(3)
    info = np.eye(3)
    for _ in range(50):
        p = _logistic(design @ beta)
        grad = design.T @ (y - w * p) - ridge @ beta
        info = design.T @ (design * (w * p * (1 - p))[:, None]) + ridge
        step = np.linalg.solve(info, grad)
        beta = beta + step
        if float(np.max(np.abs(step))) < 1e-10:
            break
    cov = np.linalg.inv(info)[1:, 1:]
    coef = (float(beta[1]), float(beta[2]))
    centred = tuple((float(a), float(b), float(n)) for (a, b), n in zip(xc, w, strict=True))
    return LengthEffect(coef=coef, center=(float(center[0]), float(center[1])),
                        cov=((float(cov[0, 0]), float(cov[0, 1])),
                             (float(cov[1, 0]), float(cov[1, 1]))),
                        intercept=_centring(alpha, coef, centred), rows=centred)


@dataclass(frozen=True)
class AcceptanceModel:
    """Step and token acceptance and step lengths (see the module docstring)."""

    alpha1: float
    """Step acceptance, i.i.d. (also the rate past the last measured depth)."""
    alpha2: float
    """Token acceptance, i.i.d."""
    step_by_depth: tuple[float, ...] | None = None
    """Conditional step acceptance at depth 0, 1, … of a run (None: i.i.d. α1)."""
    token_by_position: tuple[float, ...] | None = None
    """Conditional token acceptance at draft position 0, 1, … (None: i.i.d. α2)."""
    branch_by_width: Mapping[int, float] = field(default_factory=dict)
    """Measured acceptance of the best of W distinct draft branches, W → rate."""
    target_steps: StepLengths = field(default_factory=lambda: StepLengths.constant(32))
    """Target step lengths."""
    draft_steps: StepLengths = field(default_factory=lambda: StepLengths.constant(32))
    """Draft step lengths."""
    step_samples: int | None = None
    """Independent judged pairs α1's uncertainty is worth: from the calibration's
    per-problem verdict counts where it has them (the problem-clustered standard error,
    :func:`specmodel.stats.effective_samples`), else its pairs (None: unknown, no
    calibration uncertainty)."""
    token_samples: int | None = None
    """Drafted tokens behind α2."""
    token_draft_rate: float = 1.0
    """The fraction of token-speculation passes that carry a draft (prompt lookup finds
    no n-gram match on the others, which write one token); ``token_by_position`` and
    α2 are per draft (1: every pass drafts)."""
    token_passes: int | None = None
    """Passes behind ``token_draft_rate`` (None: unknown, kept as it is by
    :meth:`resampled`)."""
    token_by_k2: Mapping[int, tuple[tuple[float, ...], float]] = field(default_factory=dict)
    """k2 → (acceptance by draft position 0 … k2 − 2, the fraction of passes that draft)
    measured at that k2 itself (the token section's ``rates_by_k2``): a configuration
    with that k2 draws its passes from these, any other k2 from
    :attr:`token_by_position` and :attr:`token_draft_rate` (empty: every k2 from
    those)."""
    missing: tuple[str, ...] = ()
    """The parts that were not measured and what is used instead."""
    verdict_correlation: float = 0.0
    """Lag-1 correlation ρ ∈ [-1, 1] of consecutive step verdicts of one problem (0:
    independent verdicts, the i.i.d. draws)."""
    verdict_samples: int | None = None
    """Consecutive verdict pairs behind ``verdict_correlation`` (None: unknown, ρ is kept
    as it is by :meth:`resampled`)."""
    draft_end_rate: float = 0.0
    """Probability that a draft step ends the answer (the answer mark, the end of the
    sequence, or nothing written): the decoder drafts nothing after it and gives it no
    target step, and accepting it ends the problem (0: every draft step goes on)."""
    target_end_rate: float = 0.0
    """Probability that a committed target step ends the answer, ending the problem (0:
    problems run to ``max_steps``)."""
    duplicate_branch_rate: float = 0.0
    """Probability that a sampled draft branch is identical to an earlier sibling (kept
    once: drafted, but neither expanded nor judged; 0: every branch is distinct)."""
    problem_spread: tuple[tuple[float, float], ...] = ()
    """Between-problem spread of step acceptance: per calibration problem (logit of its
    Jeffreys-smoothed rate − logit of the pooled α1, its judged pairs as weight); a
    simulated problem draws one by weight and shifts its step rates by it
    (:func:`logit_shifted`).  Empty: one rate for every problem."""
    token_problem_spread: tuple[tuple[float, float], ...] = ()
    """Between-problem spread of token acceptance, as :attr:`problem_spread` for steps
    (from the token section's ``problem_counters``): a simulated problem draws one
    measured problem by weight and moves every position's token rate by its logit
    offset (empty: one rate for every problem)."""
    step_length_pairs: tuple[tuple[int, int, float], ...] | None = None
    """The joint distribution of (target, draft) step lengths from one prefix, as
    (target tokens, draft tokens, weight): the simulator draws both steps of a prefix
    from one pair (None: ``target_steps`` and ``draft_steps`` drawn independently)."""
    length_effect: LengthEffect | None = None
    """How a draft step's acceptance goes with its length and the target's from the same
    prefix (:func:`fit_length_effect`; applied to positions drafted with one branch;
    None: the verdict independent of the lengths)."""
    step_length_answers: tuple[tuple[tuple[int, int], ...], ...] | None = None
    """(target tokens, draft tokens) at each step index of each calibration problem's
    answer, in the order of :attr:`problem_spread` when that is measured: a simulated
    problem takes its lengths by step index from the answer of the problem whose
    acceptance offset it drew (drawn by the answers' lengths when no spread is
    measured), so consecutive steps keep their measured pattern; past the answer's last
    step, and for a further call of a role from one prefix, a pair is drawn from
    :attr:`step_length_pairs`, which it needs (None: every step's pair drawn
    independently)."""
    index_shift: tuple[tuple[float, float], ...] = ()
    """Per step index 0, 1, … of the answer: (logit offset of step acceptance from the
    pooled rate, its posterior standard deviation) (:func:`index_profile`); the step at
    index i is judged at its rate moved by offset i, and past the last index by none.
    Empty: one rate along the answer."""

    def __post_init__(self) -> None:
        check_probability("alpha1", self.alpha1)
        check_probability("alpha2", self.alpha2)
        for name in ("step_by_depth", "token_by_position"):
            v = getattr(self, name)
            if v is not None:
                if len(v) == 0:
                    raise ValueError(f"{name} must not be empty")
                for i, a in enumerate(v):
                    check_probability(f"{name}[{i}]", a, closed=True)
        for w, a in self.branch_by_width.items():
            check_probability(f"branch_by_width[{w}]", a, closed=True)
        for name in ("draft_end_rate", "target_end_rate", "duplicate_branch_rate"):
            check_probability(name, getattr(self, name), closed=True)
        if not check_probability("token_draft_rate", self.token_draft_rate, closed=True) > 0:
            raise ValueError(f"token_draft_rate must lie in (0, 1], got {self.token_draft_rate}")
        for k2, (prof, rate) in self.token_by_k2.items():
            if not (isinstance(k2, int) and k2 >= 2 and len(prof) == k2 - 1):
                raise ValueError(f"token_by_k2 needs keys k2 >= 2, each with k2 - 1 rates, "
                                 f"got k2 = {k2!r} with {len(prof)}")
            for i, a in enumerate(prof):
                check_probability(f"token_by_k2[{k2}][{i}]", a, closed=True)
            if not check_probability(f"token_by_k2[{k2}] draft rate", rate, closed=True) > 0:
                raise ValueError(f"token_by_k2[{k2}] draft rate must lie in (0, 1], got {rate}")
        rho = self.verdict_correlation
        if not (isinstance(rho, (int, float)) and not isinstance(rho, bool)
                and -1.0 <= rho <= 1.0):
            raise ValueError(f"verdict_correlation must lie in [-1, 1], got {rho!r}")
        for i, (shift, weight) in enumerate(self.problem_spread):
            if not (math.isfinite(shift) and math.isfinite(weight) and weight > 0):
                raise ValueError(f"problem_spread[{i}] must be a finite shift and a weight "
                                 f"> 0, got ({shift}, {weight})")
        for i, (shift, weight) in enumerate(self.token_problem_spread):
            if not (math.isfinite(shift) and math.isfinite(weight) and weight > 0):
                raise ValueError(f"token_problem_spread[{i}] must be a finite shift and a "
                                 f"weight > 0, got ({shift}, {weight})")
        answers = self.step_length_answers
        if answers is not None:
            if not self.step_length_pairs:
                raise ValueError("step_length_answers needs step_length_pairs (the pairs "
                                 "drawn past an answer's end)")
            if not answers or any(not a for a in answers):
                raise ValueError("step_length_answers must hold at least one answer of at "
                                 "least one step")
            if any(t < 0 or d < 0 for a in answers for t, d in a):
                raise ValueError("step_length_answers needs lengths >= 0")
            if self.problem_spread and len(self.problem_spread) != len(answers):
                raise ValueError(f"step_length_answers must hold one answer per problem of "
                                 f"problem_spread ({len(self.problem_spread)}), got "
                                 f"{len(answers)}")
        for i, (shift, sd) in enumerate(self.index_shift):
            if not (math.isfinite(shift) and math.isfinite(sd) and sd >= 0):
                raise ValueError(f"index_shift[{i}] must be a finite shift and a standard "
                                 f"deviation >= 0, got ({shift}, {sd})")

    # -- construction ------------------------------------------------------------

    @classmethod
    def iid(cls, alpha1: float, alpha2: float, step_tokens: int = 32) -> AcceptanceModel:
        """The papers' model: i.i.d. rates, constant step lengths."""
        lengths = StepLengths.constant(step_tokens)
        return cls(alpha1, alpha2, target_steps=lengths, draft_steps=lengths)

    @classmethod
    def from_calibration(cls, cal: Any) -> AcceptanceModel:
        """From a :class:`~specmodel.formats.calibration.Calibration`, naming what is missing."""
        step, tok = cal.step, cal.token
        missing = []
        if step.acceptance_by_position is None:
            missing.append("step acceptance by depth: not measured; i.i.d. α1")
        branch_rates = getattr(step, "branch_acceptance", None)
        if not branch_rates:
            missing.append("best-of-W acceptance: not measured; independent branches "
                           "1 − (1 − α)^W (an upper bound)")
        dup = getattr(step, "duplicate_branch_rate", None)
        if dup is None:
            missing.append("repeated draft branches: not measured; every branch distinct")
        rho = getattr(step, "verdict_correlation", None)
        if rho is None:
            why = ("not measured" if getattr(step, "verdict_pairs", None) is None
                   else "undefined in the measurement (too few consecutive pairs, or "
                        "every verdict the same)")
            missing.append(f"correlation of consecutive step verdicts: {why}; "
                           "independent verdicts (conditional rates by depth only)")
        if step.step_tokens_histogram:
            lengths = StepLengths.histogram(step.step_tokens_histogram)
        elif step.step_tokens_mean is not None:
            lengths = StepLengths.constant(step.step_tokens_mean)
            missing.append("step-length spread: only the mean was measured; constant steps")
        else:
            lengths = StepLengths.constant(32)
            missing.append("step lengths: not measured; assumed 32 tokens")
        joint = getattr(step, "step_length_pairs", None)
        if not joint and step.step_tokens_histogram:
            missing.append("joint lengths of the target's and the draft's step from one "
                           "prefix: not measured; drawn independently")
        draft_hist = getattr(step, "draft_step_tokens_histogram", None)
        if draft_hist:
            draft_lengths = StepLengths.histogram(draft_hist)
        else:
            draft_lengths = lengths
            missing.append("draft step lengths: not measured apart; the target's "
                           "distribution")
        end_rate = getattr(step, "draft_end_rate", None)
        if end_rate is None:
            missing.append("draft steps that end the answer: not measured; none (every "
                           "draft step is followed and gets its target step)")
        target_end = getattr(step, "target_end_rate", None)
        if target_end is None:
            missing.append("target steps that end the answer: not measured; problems run "
                           "to max_steps")
        if tok.acceptance_by_position is None:
            missing.append("token acceptance by position: not measured; i.i.d. α2")
        draft_rate = getattr(tok, "draft_rate", None)
        if draft_rate is None and tok.method == "ngram":
            missing.append("token-speculation passes without a draft: not measured; every "
                           "pass drafts (tokens per pass an upper bound)")
        spread, effective = _problem_spread(getattr(step, "problem_verdicts", None))
        token_spread, token_effective = _problem_spread(
            getattr(tok, "problem_counters", None))
        if not token_spread:
            missing.append("token acceptance by problem: not measured; one rate for every "
                           "problem, and α2's uncertainty treats every draft token as "
                           "independent (token rows' intervals too narrow)")
        if not spread:
            missing.append("step acceptance by problem: not measured; one rate for every "
                           "problem, and α1's uncertainty treats every judged pair as "
                           "independent (the interval may be too narrow)")
        else:
            rho = None  # the problems' spread is what the lag-1 correlation measured
        answers = getattr(step, "step_length_answers", None) if joint else None
        if joint and not answers:
            missing.append("lengths of an answer's consecutive steps: not recorded; each "
                           "step's pair of lengths drawn independently")
        cells = getattr(step, "step_length_verdicts", None)
        length_effect = (fit_length_effect(cells, step.alpha1) if cells else None)
        if length_effect is None:
            missing.append("acceptance by the steps' lengths: not measured; a draft step's "
                           "verdict independent of its and the target's length")
        by_index = index_profile(getattr(step, "index_verdicts", None) or ())
        if not by_index:
            missing.append("step acceptance along the answer: not measured; one rate at "
                           "every step index")
        return cls(
            alpha1=step.alpha1, alpha2=tok.alpha2,
            step_by_depth=(tuple(step.acceptance_by_position)
                           if step.acceptance_by_position else None),
            token_by_position=(tuple(tok.acceptance_by_position)
                               if tok.acceptance_by_position else None),
            target_steps=lengths, draft_steps=draft_lengths,
            step_samples=effective or step.samples,
            token_samples=(min(token_effective, tok.samples) if token_effective and tok.samples
                           else token_effective or tok.samples),
            token_problem_spread=token_spread,
            token_draft_rate=float(draft_rate) if draft_rate is not None else 1.0,
            token_passes=getattr(tok, "target_passes", None),
            token_by_k2={int(k2): (tuple(r.acceptance_by_position), float(r.draft_rate))
                         for k2, r in (getattr(tok, "rates_by_k2", None) or {}).items()},
            problem_spread=spread,
            index_shift=by_index,
            length_effect=length_effect,
            verdict_correlation=float(rho) if rho is not None else 0.0,
            verdict_samples=(getattr(step, "verdict_pairs", None)
                             if rho is not None else None),
            draft_end_rate=float(end_rate or 0.0),
            target_end_rate=float(target_end or 0.0),
            branch_by_width={int(w): float(a) for w, a in (branch_rates or {}).items()},
            duplicate_branch_rate=float(dup or 0.0),
            step_length_pairs=(tuple((int(t), int(d), float(n)) for t, d, n in joint)
                               if joint else None),
            step_length_answers=(tuple(tuple((int(t), int(d)) for t, d in a)
                                       for a in answers) if answers else None),
            missing=tuple(missing),
        )

    # -- queries -------------------------------------------------------------------

    @property
    def is_iid(self) -> bool:
        """No position or depth dependence, no measured branch acceptance, uncorrelated
        step verdicts, distinct branches, no step that ends the answer and a draft in
        every token-speculation pass."""
        return (self.step_by_depth is None and self.token_by_position is None
                and self.token_draft_rate == 1 and not self.token_by_k2
                and not self.branch_by_width and self.verdict_correlation == 0
                and not self.problem_spread and not any(m for m, _ in self.index_shift)
                and self.length_effect is None and not self.token_problem_spread
                and self.draft_end_rate == 0 and self.target_end_rate == 0
                and self.duplicate_branch_rate == 0)

    def step_rate(self, depth: int, width: int = 1, tree: bool = False) -> float:
        """Acceptance of the best of ``width`` distinct draft steps at ``depth`` (0-based);
        ``tree``: the position was drafted with several branches (W > 1), so the rate
        measured for ``width`` distinct ones applies — one included, where the sampled
        branches all repeated the greedy step."""
        if (tree or width > 1) and width in self.branch_by_width:
            return float(self.branch_by_width[width])
        prof = self.step_by_depth
        a = self.alpha1 if prof is None else prof[min(depth, len(prof) - 1)]
        if width == 1:
            return float(a)
        return float(-math.expm1(width * math.log1p(-a))) if a < 1 else 1.0

    def index_offset(self, index: int | None) -> float:
        """The logit offset of step acceptance at step ``index`` of the answer (0 past
        the last measured index, without a profile, or for ``index`` None)."""
        if index is None or not 0 <= index < len(self.index_shift):
            return 0.0
        return self.index_shift[index][0]

    def length_offset(self, lengths: tuple[int, int] | None) -> float:
        """The logit offset of a draft step's acceptance given (target tokens, draft
        tokens) from its prefix (0 without a length effect or for ``lengths`` None)."""
        if lengths is None or self.length_effect is None:
            return 0.0
        return self.length_effect.offset(*lengths)

    def next_step_rate(self, rate: float, previous: bool | None) -> float:
        """Acceptance of a step verdict whose marginal rate is ``rate`` given the
        previous verdict of the same problem (None: none yet, or ρ = 0: ``rate``):
        ``rate + ρ(1 − rate)`` after an acceptance, ``rate(1 − ρ)`` after a rejection,
        clipped to [0, 1] — a two-state Markov chain with marginal ``rate`` and lag-1
        correlation ρ (where the clip does not bind)."""
        rho = self.verdict_correlation
        if previous is None or rho == 0:
            return rate
        p = rate + rho * (1.0 - rate) if previous else rate * (1.0 - rho)
        return min(1.0, max(0.0, p))

    def token_profile(self, shift: float = 0.0, k2: int | None = None) -> np.ndarray:
        """Per-position token acceptance of a token-speculation pass of ``k2`` − 1 draft
        tokens (one entry when i.i.d.; its last rate repeats past its end): per draft,
        each rate moved by ``shift`` on the logit scale (a problem's offset,
        :attr:`token_problem_spread`), with position 0 scaled by the fraction of passes
        that draft where some carry none (such a pass writes one token, as one whose
        first draft token is rejected).  The rates measured at ``k2`` itself
        (:attr:`token_by_k2`) where there are any, else :attr:`token_by_position` and
        :attr:`token_draft_rate` (``k2`` None: those)."""
        own = self.token_by_k2.get(k2) if k2 is not None else None
        if own is not None:
            rates, draft_rate = list(own[0]), own[1]
        else:
            prof = self.token_by_position
            rates = list(prof if prof is not None else (self.alpha2,))
            draft_rate = self.token_draft_rate
        if shift:
            rates = [logit_shifted(r, shift) for r in rates]
        if draft_rate < 1:
            rates = [rates[0] * draft_rate, *(rates[1:] or rates)]
        return np.asarray(rates, dtype=np.float64)

    def tokens_per_pass(self, k2: int) -> float:
        """Expected tokens one token-speculation pass of k2 − 1 draft tokens writes:
        :func:`~specmodel.closedform.cascade.expected_tokens_horizontal` over
        :meth:`token_profile` (its last rate repeats)."""
        from specmodel.closedform.cascade import expected_tokens_horizontal

        gamma = check_positive_int("k2", k2) - 1
        if gamma == 0:
            return 1.0
        prof = self.token_profile(k2=k2)
        return expected_tokens_horizontal(prof[np.minimum(np.arange(gamma), prof.size - 1)])

    def step_shifted(self, offset: float) -> AcceptanceModel:
        """This model with every step rate moved by ``offset`` on the logit scale
        (:func:`logit_shifted`): α1, the rates by depth and the best-of-W rates; the
        offsets of problems, indices and lengths then move the shifted rates, and token
        acceptance and step lengths are kept.  0 gives the model itself.  What
        ``validate --acceptance-as-run`` uses to ask the decoder model how fast a run
        that accepted as this one did would have been."""
        if not math.isfinite(offset):
            raise ValueError(f"offset must be a finite logit shift, got {offset}")
        if offset == 0:
            return self
        by_depth = self.step_by_depth
        return replace(
            self, alpha1=logit_shifted(self.alpha1, offset),
            step_by_depth=(None if by_depth is None else
                           tuple(logit_shifted(a, offset) for a in by_depth)),
            branch_by_width={w: logit_shifted(a, offset)
                             for w, a in self.branch_by_width.items()},
            missing=(*self.missing, f"step rates moved by {offset:+.3f} on the logit "
                                    "scale (the acceptance a run measured)"))

    def resampled(self, rng: np.random.Generator) -> AcceptanceModel:
        """The rates drawn from their Beta posteriors (Jeffreys prior) given the sample
        sizes; rates without a sample size are kept.  A profile is scaled by the ratio of
        its resampled i.i.d. rate (one draw per level keeps its shape).  The verdict
        correlation, when its pair count n > 3 is known, is drawn on Fisher's z scale,
        tanh(atanh ρ + N(0, 1/(n − 3))); then the length effect's coefficients and each
        step index's offset from their normal posteriors (these last, so the earlier
        draws do not change)."""
        out = self
        if self.step_samples:
            a1 = _beta(rng, self.alpha1, self.step_samples)
            ratio = a1 / self.alpha1
            prof = (None if self.step_by_depth is None else
                    _times(self.step_by_depth, ratio))
            br = {w: _capped(a, ratio) for w, a in self.branch_by_width.items()}
            out = replace(out, alpha1=a1, step_by_depth=prof, branch_by_width=br)
        if self.token_samples:
            a2 = _beta(rng, self.alpha2, self.token_samples)
            ratio = a2 / self.alpha2
            prof = (None if self.token_by_position is None else
                    _times(self.token_by_position, ratio))
            by_k2 = {k2: (_times(rates, ratio), rate)
                     for k2, (rates, rate) in self.token_by_k2.items()}
            out = replace(out, alpha2=a2, token_by_position=prof, token_by_k2=by_k2)
        if self.token_passes and self.token_draft_rate < 1:
            drawn = max(1e-9, _beta(rng, self.token_draft_rate, self.token_passes))
            moved = drawn / self.token_draft_rate  # every k2's rate moves with it
            out = replace(out, token_draft_rate=drawn, token_by_k2={
                k2: (rates, min(1.0, rate * moved))
                for k2, (rates, rate) in out.token_by_k2.items()})
        if self.verdict_samples is not None and self.verdict_samples > 3:
            out = replace(out, verdict_correlation=_fisher(
                rng, self.verdict_correlation, self.verdict_samples))
        if self.length_effect is not None:
            out = replace(out, length_effect=self.length_effect.resampled(rng, out.alpha1))
        if self.index_shift:
            z = rng.normal(size=len(self.index_shift))
            out = replace(out, index_shift=tuple(
                (m + sd * float(e), sd) for (m, sd), e in zip(self.index_shift, z,
                                                              strict=True)))
        return out

    def to_dict(self) -> dict[str, Any]:
        """For JSON."""
        return {"alpha1": self.alpha1, "alpha2": self.alpha2,
                "step_by_depth": self.step_by_depth,
                "token_by_position": self.token_by_position,
                "branch_by_width": dict(self.branch_by_width),
                "target_step_tokens_mean": self.target_steps.mean,
                "draft_step_tokens_mean": self.draft_steps.mean,
                "verdict_correlation": self.verdict_correlation,
                "verdict_samples": self.verdict_samples,
                "draft_end_rate": self.draft_end_rate,
                "target_end_rate": self.target_end_rate,
                "duplicate_branch_rate": self.duplicate_branch_rate,
                "step_samples": self.step_samples, "token_samples": self.token_samples,
                "token_draft_rate": self.token_draft_rate, "token_passes": self.token_passes,
                "token_by_k2": {k2: {"by_position": list(rates), "draft_rate": rate}
                                for k2, (rates, rate) in self.token_by_k2.items()},
                "index_shift": [list(x) for x in self.index_shift],
                "step_length_answers": (None if self.step_length_answers is None
                                        else len(self.step_length_answers)),
                "token_problem_spread": [list(x) for x in self.token_problem_spread],
                "length_effect": (None if self.length_effect is None else
                                  {"coef": list(self.length_effect.coef),
                                   "center": list(self.length_effect.center),
                                   "intercept": self.length_effect.intercept}),
                "missing": list(self.missing)}


def logit_shifted(rate: float, shift: float) -> float:
    """``rate`` moved by ``shift`` on the logit scale (a problem easier or harder than
    the pool by that much); 0 and 1 stay."""
    if shift == 0 or rate <= 0 or rate >= 1:
        return rate
    return 1.0 / (1.0 + math.exp(-(logit(rate) + shift)))


def index_profile(counts: Sequence[tuple[int, int]]) -> tuple[tuple[float, float], ...]:
    """Per step index: (logit offset of its acceptance from the pooled rate, posterior
    standard deviation), from (accepted, judged) counts per index (empty with fewer than
    two indices).  Each index's raw offset y = logit((k + ½)/(n + 1)) − logit(pooled)
    has sampling variance v ≈ 1/((n + 1) p (1 − p)); the offsets' true spread τ² is
    estimated by moments, max(0, mean(y² − v)), and each offset shrunk to y τ²/(τ² + v)
    with variance τ² v/(τ² + v) — the normal-normal empirical Bayes estimate, so an index
    judged a few times moves its rate only as far as the spread of all of them
    supports."""
    if len(counts) < 2:
        return ()
    k = [int(a) for a, _ in counts]
    n = [int(b) for _, b in counts]
    if any(b < 1 or not 0 <= a <= b for a, b in zip(k, n, strict=True)):
        raise ValueError(f"index verdict counts need 0 <= accepted <= judged and judged >= 1, "
                         f"got {list(counts)}")
    pooled = (sum(k) + 0.5) / (sum(n) + 1)

    rates = [(a + 0.5) / (b + 1) for a, b in zip(k, n, strict=True)]
    y = [logit(p) - logit(pooled) for p in rates]
    v = [1.0 / ((b + 1) * p * (1.0 - p)) for b, p in zip(n, rates, strict=True)]
    tau2 = max(0.0, sum(a * a - b for a, b in zip(y, v, strict=True)) / len(y))
    return tuple((a * tau2 / (tau2 + b), math.sqrt(tau2 * b / (tau2 + b)))
                 for a, b in zip(y, v, strict=True))


def _problem_spread(counts: Sequence[tuple[int, int]] | None
                    ) -> tuple[tuple[tuple[float, float], ...], int | None]:
    """(problem spread, effective samples) from per-problem (accepted, out of) counts —
    a step section's ``problem_verdicts`` or a token section's ``problem_counters``
    (both empty/None with fewer than two problems)."""
    from specmodel.stats import clustered_rate, effective_samples

    counts = counts or []
    if len(counts) < 2:
        return (), None
    k = [int(a) for a, _ in counts]
    n = [int(b) for _, b in counts]
    raw, se = clustered_rate(k, n)
    pooled = (sum(k) + 0.5) / (sum(n) + 1)

    spread = tuple((logit((a + 0.5) / (b + 1)) - logit(pooled), float(b))
                   for a, b in zip(k, n, strict=True))
    return spread, effective_samples(raw, se, sum(n))


def _fisher(rng: np.random.Generator, rho: float, n: int) -> float:
    """A correlation drawn around ``rho`` with Fisher's z standard error 1/sqrt(n − 3)."""
    z = math.atanh(min(max(rho, -1 + 1e-9), 1 - 1e-9))
    return float(math.tanh(z + float(rng.normal()) / math.sqrt(n - 3)))


def _capped(rate: float, ratio: float) -> float:
    """One rate scaled by ``ratio`` and kept below 1 (a resampled rate:
    :meth:`AcceptanceModel.resampled`)."""
    return min(1 - 1e-9, rate * ratio)


def _times(rates: Sequence[float], ratio: float) -> tuple[float, ...]:
    """A profile of rates, each scaled by :func:`_capped`."""
    return tuple(_capped(p, ratio) for p in rates)


def _beta(rng: np.random.Generator, rate: float, n: int) -> float:
    k = rate * n
    x = float(rng.beta(k + 0.5, n - k + 0.5))
    return min(max(x, 1e-9), 1 - 1e-9)
