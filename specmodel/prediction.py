"""Prediction held against measurement: what ``specmodel validate`` shows.

For every configuration of a run record (:mod:`specmodel.formats.run_record`):

* ``measured_speedup`` = tokens per second of the configuration / tokens per
  second of the baseline (target-only, k1 = k2 = 1) in the same run;
* ``predicted_speedup`` = the papers' closed form as it stands,
  f(k1)·g(k2) (``specmodel.closedform.hybrid.h``; g alone for k1 = 1, f alone for k2 = 1),
  which assumes a flat batch cost, a free verifier and i.i.d. acceptance;
* ``predicted_priced`` = the same configuration priced by the calibration's
  measured T(b) (``specmodel.optimize.pricing``), when the calibration has one;
* ``predicted_decoder`` = the decoder model (:mod:`specmodel.decodermodel`): a
  Monte-Carlo of the decoder's own schedule, each engine and verifier call priced by
  the calibration's costs, with a 95 % interval (``decoder_interval``);
* ``error`` = predicted / measured − 1 (positive: the model over-predicts).

``models`` in every row names the model behind each number (the ``--json`` rows carry it).

Pure (no torch): ``specmodel validate`` answers in a few seconds (the decoder model
simulates a few thousand problems per configuration).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from specmodel.config import SpecConfig
from specmodel.formats.calibration import Calibration, MachineDetails, Measurement
from specmodel.formats.run_record import CostProbe, RunRecord, SyntheticAcceptance

__all__ = ["DRIFT_TOLERANCE", "MODELS", "ConfigComparison", "CostDrift", "RoundsRow",
           "RoundsSummary", "ValidationRow", "at_run_acceptance", "at_run_lengths",
           "baseline_speed", "calibration_at_run_time", "calibration_mismatches",
           "cost_drift", "compare", "compare_rounds", "draws_predictions", "predict",
           "reproduces_on_draws", "tokens_per_second_less_setup"]

MODELS = {
    "predicted_speedup": "papers' f(k1)·g(k2) (flat batch cost, free verifier, i.i.d.)",
    "predicted_priced": "f·g priced by the calibration's measured T(b)",
    "predicted_decoder": "decoder model: Monte-Carlo of the decoder's schedule, each call "
                         "priced (specmodel.decodermodel)",
}
"""Which model produced each predicted number of a :class:`ValidationRow`."""


def predict(cal: Calibration, config: SpecConfig) -> tuple[float, float | None]:
    """(closed-form speedup f(k1)·g(k2), the same priced by the calibration's T(b) or None).

    With ``width`` W > 1 (sync multi-branch drafting) f is
    :func:`specmodel.closedform.step_level.f_sync_multibranch` with the independent-branch
    acceptance 1 − (1 − α1)^W (an upper bound: real branches are correlated) and a
    flat draft batch, priced by :func:`specmodel.optimize.pricing.cost_aware_multibranch_speedup`.
    """
    from specmodel.closedform.hybrid import h
    from specmodel.optimize.pricing import cost_aware_multibranch_speedup, cost_aware_speedup

    params = cal.parameters()
    k1, k2, width = config.k1, config.k2, config.width
    m = config.mode if k1 > 1 else "sync"  # without step speculation the mode does not matter
    curve = cal.batch_cost_curve()
    priced = None
    if width > 1 and k1 > 1:
        from specmodel.closedform.step_level import f_sync_multibranch
        from specmodel.closedform.token_level import g_token

        f = f_sync_multibranch(params.alpha1, params.c1, k1, width).speedup
        if curve is not None:
            priced = cost_aware_multibranch_speedup(params, k1, k2, width, curve)[0]
        return f * float(g_token(params.alpha2, params.c2, k2)), priced
    closed = float(h(m, params.alpha1, params.c1, params.alpha2, params.c2, k1, k2))
    if curve is not None:
        priced = cost_aware_speedup(params, m, k1, k2, curve)[0]
    return closed, priced


class ConfigComparison(BaseModel):
    """One configuration's predictions beside what was measured: the fields a single
    run (:class:`ValidationRow`) and several rounds of it (:class:`RoundsRow`) share.
    Each error is a prediction over the measured speedup (the rounds' mean in
    :class:`RoundsRow`) minus one."""

    config: str
    """The configuration's label."""
    mode: str
    """sync or async."""
    k1: int
    """Target steps in parallel."""
    k2: int
    """Target positions per token pass."""
    width: int = 1
    """Draft branches per position."""
    predicted_speedup: float | None
    """The papers' closed form f(k1)·g(k2) (None where it is undefined, e.g. async with c1 ≥ 1)."""
    error: float | None
    """predicted_speedup / measured − 1."""
    predicted_priced: float | None
    """f·g priced by the calibration's measured T(b), when it has one."""
    priced_error: float | None
    """predicted_priced / measured − 1."""
    predicted_decoder: float | None = None
    """The decoder model's speedup (None when it could not be computed)."""
    decoder_error: float | None = None
    """predicted_decoder / measured − 1."""
    decoder_interval: tuple[float, float] | None = None
    """The decoder model's 95 % interval (simulation and calibration uncertainty)."""
    decoder_sample_interval: tuple[float, float] | None = None
    """The decoder model's 95 % interval of what a run of this many problems measures
    (calibration uncertainty and the problem-to-problem spread of the sample)."""
    step_acceptance: float | None
    """Measured accepted / judged draft steps, over all rounds (None without step
    speculation)."""
    measured_split: dict[str, float] = {}
    """Where the run's time went: seconds per output token in all, inside target, draft
    and verifier calls (keys ``total``, ``target``, ``draft``, ``verify``; in async the
    three overlap, so they may sum to more than the total), pooled over the rounds."""
    decoder_split: dict[str, float] = {}
    """The same as the decoder model simulates it (absolute costs only; empty else)."""
    rows_per_batch: float | None = None
    """Measured target steps per target call (how full the sync batches were)."""
    decoder_rows_per_batch: float | None = None
    """The same as the decoder model simulates it."""
    decoder_step_acceptance: float | None = None
    """Accepted / judged draft steps as the decoder model simulates them (None without
    step speculation): what the model expects the run to accept, beside
    ``step_acceptance``."""
    decoder_at_run_acceptance: float | None = None
    """The decoder model with every step rate moved by one logit offset so that it
    accepts as the run did (``step_acceptance``;
    :meth:`~specmodel.decodermodel.AcceptanceModel.step_shifted`, :func:`at_run_acceptance`):
    a diagnosis, not a prediction — it uses what the run decoded.  What is left of the
    error here is the schedule's and the costs'; the rest of ``decoder_error`` is the
    acceptance the run happened to draw.  None unless asked for, or without step
    speculation."""
    decoder_at_run_acceptance_error: float | None = None
    """decoder_at_run_acceptance / measured − 1."""
    decoder_at_run_step_acceptance: float | None = None
    """Accepted / judged draft steps as the shifted decoder model simulates them (close
    to ``step_acceptance`` by construction; shown so that it can be checked)."""
    decoder_at_run_lengths: float | None = None
    """The decoder model with the calibration's step lengths replaced by the ones the
    run's problems wrote, read back from its calls (:func:`at_run_lengths`: each
    problem's target and draft tokens at every step index, as the calibration's answers
    hold them): a diagnosis, not a prediction.  Between it and ``predicted_decoder`` is
    what the held-out answers' lengths — their mean and how long and short steps follow
    each other, which sets how long a batched call runs — did to the prediction (the
    target alone's price per token moves with them too, so every row moves).  None
    unless asked for."""
    decoder_at_run_lengths_error: float | None = None
    """decoder_at_run_lengths / measured − 1."""
    decoder_at_run_lengths_step_acceptance: float | None = None
    """Accepted / judged draft steps as the decoder model at the run's lengths simulates
    them (the verdicts go with the lengths, so this moves too)."""
    decoder_at_run_lengths_and_acceptance: float | None = None
    """The decoder model at the run's step lengths with its step rates then moved to the
    run's acceptance (:func:`at_run_lengths` with the run's verdicts): what is left of
    its error is the schedule's and the costs'.  None unless both are asked for."""
    decoder_at_run_lengths_and_acceptance_error: float | None = None
    """decoder_at_run_lengths_and_acceptance / measured − 1."""
    decoder_on_draws: float | None = None
    """The decoder model on the run's own draws (a synthetic-acceptance run drawn by
    position: every step length, pass list and verdict uniform read from the sample the
    run met, :class:`~specmodel.decodermodel.DrawnSample`), each problem decoded once,
    priced as ``predicted_decoder`` is.  Nothing in it is fitted to the run (the draws
    are functions of its seed and prompts), but it is known only once the prompts are:
    what is left of the error here is the schedule's and the costs', the rest of
    ``decoder_error`` the sample.  None unless asked for, and for several branches (the
    sample holds one draft per position)."""
    decoder_on_draws_error: float | None = None
    """decoder_on_draws / measured − 1."""
    decoder_on_draws_split: dict[str, float] = {}
    """``decoder_split`` of the model on the run's draws: seconds per output token in all
    and inside each role's calls, each call at its price without contention (the
    forwards it plays, priced alone).  Beside ``measured_split`` it says by how much a
    role's calls took longer than their forwards' price — for a timing-free row the
    price's error alone, in async also what running beside the other model cost."""


class ValidationRow(ConfigComparison):
    """One configuration of one run: predicted against measured."""

    measured_speedup: float
    """Tokens/s of this configuration over the baseline's, same run."""
    measured_speedup_less_setup: float | None = None
    """The same with each problem's one-time setup (``ProblemRun.setup_seconds``:
    binding and capturing forwards of new shapes, which a serving engine does at
    start-up and the decoder model does not price) taken out of both configurations'
    wall time; None where the record does not carry it."""
    accuracy: float
    """Fraction of final answers right."""
    models: dict[str, str] = MODELS
    """The model behind each predicted number."""


def tokens_per_second_less_setup(problems: Sequence[Any]) -> float | None:
    """Output tokens per second of wall time less the one-time setup inside it
    (``ProblemRun.setup_seconds``) over ``problems``; None where a problem does not
    carry its setup, or nothing is left of the wall time."""
    if not problems or any(p.setup_seconds is None for p in problems):
        return None
    wall = sum(p.seconds - p.setup_seconds for p in problems)
    return None if wall <= 0 else sum(p.output_tokens for p in problems) / wall


def _rel_error(pred: float | None, measured: float) -> float | None:
    if pred is None or measured <= 0 or not math.isfinite(pred):
        return None
    return pred / measured - 1.0


def calibration_mismatches(record: RunRecord, calibration: Calibration | None = None) -> list[str]:
    """Where the calibration was measured on other models, or its engine's calls in
    another way, than the run.

    Compares the target, draft and verifier the calibration names (its
    provenance) with the run's; a calibration that names none is not checked.
    α1 belongs to one draft, target and verifier together, so a prediction from
    another verifier's α1 is no test of the model.  For a run on the engine whose
    calls the calibration's ``engine_costs`` priced, also the device, the dtype and
    how the forwards ran (the decode path), where both say; and which CPU (on a GPU,
    which GPU), where both say (the engine costs' phase, or for a file from before
    phases recorded their machine, the provenance's).
    """
    cal = calibration or record.calibration
    if cal is None:
        return []
    named = cal.provenance.models
    out = []
    for role in ("target", "draft", "verifier"):
        theirs, ours = named.get(role), record.models.get(role)
        if theirs and ours and theirs != ours:
            out.append(f"{role}: the calibration measured {theirs}, the run used {ours}")
    costs, run = cal.engine_costs, record.settings
    if costs is not None and run.engine == costs.engine:
        for what, theirs, ours in (("device", costs.device, run.device),
                                   ("dtype", costs.dtype, run.dtype),
                                   ("execution", costs.execution, run.execution)):
            if theirs and ours and theirs != ours:
                out.append(f"engine costs: the calibration timed {what} {theirs}, the "
                           f"run used {ours}")
        timed_on = _engine_costs_machine(cal)
        on_gpu = costs.device == "cuda" and run.device == "cuda"
        on_cpu = costs.device in (None, "cpu") and run.device in (None, "cpu")
        ran_on = (None if record.machine is None else
                  record.machine.gpu if on_gpu else record.machine.cpu)
        if (on_gpu or on_cpu) and timed_on is not None and ran_on is not None:
            theirs = timed_on.gpu if on_gpu else timed_on.cpu
            if theirs is not None and theirs != ran_on:
                kind = "GPU" if on_gpu else "CPU"
                out.append(f"engine costs: the calibration timed them on {theirs}, the run "
                           f"ran on {ran_on} (another {kind} prices batches and passes "
                           "differently: profile engine-costs there)")
    return out


def _engine_costs_machine(cal: Calibration) -> MachineDetails | None:
    """The machine the calibration's engine costs were timed on:
    its phase's, else (a file from before phases recorded theirs) the provenance's last
    measured machine; None where neither says."""
    phase = cal.phase_settings("engine_costs")
    if phase is not None and phase.machine is not None:
        return phase.machine
    details = getattr(cal.provenance.settings, "machine_details", None)
    return None if phase is None else details


def compare(record: RunRecord, calibration: Calibration | None = None, *,
            decoder: bool = True, seed: int = 0,
            prompt_tokens: float | None = None,
            acceptance_as_run: bool = False,
            on_draws: Mapping[str, Any] | None = None,
            lengths: Any = None) -> list[ValidationRow]:
    """Predicted against measured speedup for every configuration of ``record``.

    ``calibration`` replaces the record's own (to predict the same run from
    another calibration).  ``decoder`` adds the decoder model's prediction
    (:func:`decoder_prediction`), with the run's mean prompt length
    (``prompt_tokens``, else the record's ``settings.prompt_tokens``, else assumed);
    ``acceptance_as_run`` also the decoder model at each configuration's measured step
    acceptance (:func:`at_run_acceptance`, a diagnosis); ``on_draws`` (the decoder model
    on the run's own draws, :func:`draws_predictions`) fills ``decoder_on_draws``;
    ``lengths`` (the step lengths the run's problems wrote, read from the record's calls
    by :func:`specmodel.run_lengths.run_lengths`) the decoder model at them
    (:func:`at_run_lengths`, a diagnosis), with ``acceptance_as_run`` also at both.
    """
    cal = calibration or record.calibration
    if cal is None:
        raise ValueError("calibration must be given: the run record carries none")
    base = [c for c in record.configs if c.label == record.baseline]
    if not base:
        raise ValueError(
            f"baseline {record.baseline!r} is not among the configurations "
            f"{[c.label for c in record.configs]}"
        )
    base_tps = base[0].totals.tokens_per_second
    if base_tps <= 0:
        raise ValueError("the baseline produced no tokens: no speedup can be measured")
    base_steady = tokens_per_second_less_setup(base[0].problems)
    if not decoder:
        lengths = None
    rows = []
    for c in record.configs:
        s = c.config
        measured = c.totals.tokens_per_second / base_tps
        steady = tokens_per_second_less_setup(c.problems)
        try:
            closed, priced = predict(cal, s)
        except ValueError:
            closed, priced = None, None
        dec = (decoder_prediction(cal, s, seed=seed, record=record,
                                  prompt_tokens=prompt_tokens,
                                  sample_problems=c.totals.problems or None)
               if decoder else None)
        shifted = (at_run_acceptance(cal, s, c.totals.accepted_steps,
                                     c.totals.drafted_steps, seed=seed, record=record,
                                     prompt_tokens=prompt_tokens)
                   if acceptance_as_run and dec is not None else None)
        by_lengths = _by_run_lengths(cal, s, lengths, c.totals.accepted_steps,
                                     c.totals.drafted_steps, both=acceptance_as_run,
                                     measured=measured, seed=seed, record=record,
                                     prompt_tokens=prompt_tokens)
        drawn = None if on_draws is None else on_draws.get(c.label)
        rows.append(
            ValidationRow(
                config=c.label,
                mode=s.mode,
                k1=s.k1,
                k2=s.k2,
                width=s.width,
                predicted_speedup=closed,
                measured_speedup=measured,
                measured_speedup_less_setup=(None if steady is None or not base_steady
                                             else steady / base_steady),
                error=_rel_error(closed, measured),
                predicted_priced=priced,
                priced_error=_rel_error(priced, measured),
                predicted_decoder=None if dec is None else dec.speedup,
                decoder_error=None if dec is None else _rel_error(dec.speedup, measured),
                decoder_interval=None if dec is None else dec.interval,
                decoder_sample_interval=None if dec is None else dec.sample_interval,
                step_acceptance=c.totals.step_acceptance,
                accuracy=c.totals.accuracy,
                measured_split=split_of(c.problems),
                rows_per_batch=_rows_per_batch(c.problems),
                decoder_rows_per_batch=(
                    None if dec is None or not dec.counters.get("target_batches") else
                    dec.counters["target_steps"] / dec.counters["target_batches"]),
                decoder_step_acceptance=_step_rate(dec),
                decoder_split={} if dec is None else decoder_time_split(dec),
                **_shifted_fields(shifted, measured),
                **by_lengths,
                decoder_on_draws=None if drawn is None else drawn.speedup,
                decoder_on_draws_split={} if drawn is None else decoder_time_split(drawn),
                decoder_on_draws_error=(None if drawn is None else
                                        _rel_error(drawn.speedup, measured)),
            )
        )
    return rows


def _timing_free(config: SpecConfig) -> bool:
    """A schedule that does not depend on timing: the target alone, or sync with one
    branch (what :func:`reproduces_on_draws` checks)."""
    return (config.k1 == 1 or config.mode == "sync") and config.width == 1


def draws_predictions(record: RunRecord, sample: Any, *,
                      timing_free_only: bool = False) -> dict[str, Any]:
    """The decoder model on a synthetic run's own draws ``sample``
    (:class:`~specmodel.decodermodel.DrawnSample`,
    :func:`profiler.engines.synthetic.record_draws`), priced with the record's
    calibration: configuration label → its prediction, for every configuration with one
    branch per position (the sample holds one draft per position), or with
    ``timing_free_only`` only those :func:`reproduces_on_draws` checks.  Each is priced
    once, for :func:`compare` (``on_draws``) and :func:`reproduces_on_draws` alike; a
    ValueError where the calibration cannot price the draws."""
    if record.calibration is None:
        raise ValueError("the run record carries no calibration to decode its draws with")
    return {x.label: decoder_prediction(record.calibration, x.config, record=record,
                                        sample=sample, draws=1)
            for x in record.configs
            if x.config.width == 1 and (_timing_free(x.config) or not timing_free_only)}


def reproduces_on_draws(record: RunRecord, on_draws: Mapping[str, Any]) -> bool:
    """Whether the decoder model on a synthetic run's own draws (``on_draws``, from
    :func:`draws_predictions`) decodes every configuration of ``record`` whose schedule
    does not depend on timing (the target alone, sync with one branch) exactly as the
    run did: its output tokens, judged and accepted draft steps.  The check that the
    draws rebuilt after the run are the ones its engines drew."""
    for x in record.configs:
        if not _timing_free(x.config):
            continue
        got = on_draws.get(x.label)
        if got is None:
            return False
        n = len(x.problems)
        c = [round(got.counters.get(k, 0.0) * n)
             for k in ("output_tokens", "drafted_steps", "accepted_steps")]
        t = x.totals
        if c != [t.output_tokens, t.drafted_steps, t.accepted_steps]:
            return False
    return True


def _step_rate(dec: Any) -> float | None:
    """Accepted / judged draft steps of a decoder-model prediction (None: none judged)."""
    judged = dec.counters.get("drafted_steps") if dec is not None else None
    return dec.counters["accepted_steps"] / judged if judged else None


def at_run_acceptance(cal: Calibration, config: SpecConfig, accepted: int, judged: int, *,
                      tries: int = 4, tolerance: float = 0.005, problems: int = 2000,
                      **kwargs: Any) -> Any:
    """The decoder model's prediction of ``config`` with every step rate moved by one
    logit offset so that it accepts ``accepted`` of ``judged`` draft steps as a run did
    (None where the run judged none or the model judges nothing).  The model is first
    simulated as it stands; the offset starts at logit(run) − logit(model), the run's
    rate smoothed by half a verdict each way, and is corrected by the same difference
    until the shifted model's simulated rate is within ``tolerance`` of the run's (at
    most ``tries`` simulations in all; with rates by depth, ends or a judge the mix of
    depths moves with the rate).  Each simulates ``problems`` problems with one draw of
    the calibration (no interval): the diagnosis is a difference of a few per cent, so
    its simulation error has to be smaller than the predictions' default.  A diagnosis,
    not a prediction: it uses what the run decoded.  ``kwargs`` go to
    :func:`decoder_prediction`."""
    if judged < 0:
        raise ValueError(f"judged must be >= 0, got {judged}")
    if tries < 1:
        raise ValueError(f"tries must be >= 1, got {tries}")
    if not 0 < tolerance < 1:
        raise ValueError(f"tolerance must be in (0, 1), got {tolerance}")
    if judged == 0:
        return None
    if not 0 <= accepted <= judged:
        raise ValueError(f"accepted must be in [0, judged={judged}], got {accepted}")
    from specmodel.decodermodel.acceptance import logit

    target = (accepted + 0.5) / (judged + 1)
    kwargs = {**kwargs, "problems": problems, "draws": 1}
    offset = 0.0
    got = decoder_prediction(cal, config, **kwargs)
    for _ in range(tries - 1):
        model = _step_rate(got)
        if model is None:
            return None
        if abs(model - target) <= tolerance:
            break
        offset += logit(target) - logit(min(max(model, 1e-9), 1 - 1e-9))
        got = decoder_prediction(cal, config, step_offset=offset, **kwargs)
    return got


def at_run_lengths(cal: Calibration, config: SpecConfig, lengths: Any,
                   acceptance: tuple[int, int] | None = None, *, problems: int = 2000,
                   **kwargs: Any) -> Any:
    """The decoder model's prediction of ``config`` with the calibration's step lengths
    replaced by a run's (``lengths``, :func:`specmodel.run_lengths.run_lengths`;
    :func:`specmodel.run_lengths.with_run_lengths`); with ``acceptance`` = (accepted,
    judged) also its step rates moved to that acceptance (:func:`at_run_acceptance`).
    One calibration draw, ``problems`` simulated problems, as :func:`at_run_acceptance`.
    None where the model cannot be built, or ``acceptance`` judged none.  A diagnosis,
    not a prediction: it uses what the run decoded.  ``kwargs`` go to
    :func:`decoder_prediction`."""
    from specmodel.run_lengths import with_run_lengths

    moved = with_run_lengths(cal, lengths)
    if acceptance is not None:
        return at_run_acceptance(moved, config, *acceptance, problems=problems, **kwargs)
    return decoder_prediction(moved, config, **{**kwargs, "problems": problems, "draws": 1})


def _by_run_lengths(cal: Calibration, config: SpecConfig, lengths: Any, accepted: int,
                    judged: int, *, both: bool, measured: float,
                    **kwargs: Any) -> dict[str, Any]:
    """The ``decoder_at_run_lengths*`` fields of one row: the decoder model at the run's
    step lengths, and with ``both`` (and draft steps judged) at its acceptance too; {}
    without ``lengths``."""
    if lengths is None:
        return {}
    at_lengths = at_run_lengths(cal, config, lengths, **kwargs)
    moved = (at_run_lengths(cal, config, lengths, (accepted, judged), **kwargs)
             if both and judged > 0 else None)
    out: dict[str, Any] = {}
    if at_lengths is not None:
        out |= {"decoder_at_run_lengths": at_lengths.speedup,
                "decoder_at_run_lengths_error": _rel_error(at_lengths.speedup, measured),
                "decoder_at_run_lengths_step_acceptance": _step_rate(at_lengths)}
    if moved is not None:
        out |= {"decoder_at_run_lengths_and_acceptance": moved.speedup,
                "decoder_at_run_lengths_and_acceptance_error":
                    _rel_error(moved.speedup, measured)}
    return out


def _shifted_fields(shifted: Any, measured: float) -> dict[str, Any]:
    """The ``decoder_at_run_*`` fields of a row from :func:`at_run_acceptance`'s result."""
    if shifted is None:
        return {}
    return {"decoder_at_run_acceptance": shifted.speedup,
            "decoder_at_run_acceptance_error": _rel_error(shifted.speedup, measured),
            "decoder_at_run_step_acceptance": _step_rate(shifted)}


_PARTS = ("target", "draft", "verify")
"""The decoder's timed call kinds (its counters ``<part>_seconds``)."""


def decoder_time_split(dec: Any) -> dict[str, float]:
    """Seconds per output token of a decoder-model prediction, in total and by call kind
    (:func:`time_split` of its counters); {} when it predicts no absolute time."""
    if dec.tokens_per_second is None:
        return {}
    tokens = dec.counters.get("output_tokens", 0.0)
    return time_split(tokens, tokens / dec.tokens_per_second,
                      {k: dec.counters.get(f"{k}_seconds", 0.0) for k in _PARTS})


def busy_over_price(measured: dict[str, float], priced: dict[str, float]
                    ) -> dict[str, float]:
    """For each role (``target``, ``draft``): the run's time inside its calls over the
    price of the forwards the model plays (``measured_split`` over a ``decoder_split`` —
    on a synthetic run's own draws, the same forwards), each a time per output token;
    roles either side lacks or that took no time are left out."""
    return {k: measured[k] / priced[k] for k in ("target", "draft")
            if measured.get(k) and priced.get(k)}


def split_of(problems: list[Any]) -> dict[str, float]:
    """Where measured problems' time went: :func:`time_split` of their decoder counters
    (seconds per output token in all and inside each role's calls)."""
    return time_split(sum(p.output_tokens for p in problems), sum(p.seconds for p in problems),
                      {k: sum(getattr(p, f"{k}_seconds") for p in problems) for k in _PARTS})


def _rows_per_batch(problems: list[Any]) -> float | None:
    """Target steps per target call over ``problems`` (None without a call)."""
    calls = sum(p.target_batches for p in problems)
    return sum(p.target_steps for p in problems) / calls if calls else None


def time_split(tokens: float, seconds: float, parts: dict[str, float]) -> dict[str, float]:
    """Seconds per output token in all (``total``) and inside each part's calls; empty
    when no token was written."""
    if tokens <= 0:
        return {}
    return {"total": seconds / tokens, **{k: v / tokens for k, v in parts.items()}}


def decoder_prediction(cal: Calibration, config: SpecConfig, *, seed: int = 0,
                       problems: int = 200, draws: int = 16, draw_problems: int = 50,
                       record: RunRecord | None = None,
                       prompt_tokens: float | None = None,
                       sample_problems: int | None = None,
                       synthetic: SyntheticAcceptance | None = None,
                       step_offset: float = 0.0, sample: Any = None) -> Any:
    """The decoder model's :class:`~specmodel.decodermodel.DecoderPrediction` for one
    configuration from a calibration, or None where the models cannot be built.
    ``synthetic``: the settings of a synthetic-acceptance run not (yet) recorded — what
    ``record.settings.synthetic`` says of a recorded one (a prediction registered before
    the run).  ``step_offset``: every step rate moved by this much on the logit scale
    (:meth:`~specmodel.decodermodel.AcceptanceModel.step_shifted`; 0: the calibration's).
    ``sample``: the sweep's own draws (:class:`~specmodel.decodermodel.DrawnSample`, from
    :func:`profiler.engines.synthetic.position_draws`), for a synthetic run priced by
    its hardware profiles: the prediction decodes the sweep's problems as they will be
    drawn instead of fresh draws from the laws (a ValueError without such profiles).

    For a synthetic-acceptance run (``record.settings.synthetic``) whose calibration
    carries hardware profiles of the run's architectures (written by the run's separate
    profiling pass, :func:`profiler.engines.synthetic.profile_costs`), the costs come
    from those profiles and the engine is the synthetic engine's
    (:meth:`~specmodel.decodermodel.EngineBehaviour.synthetic`), with the run's prompt
    length; otherwise from the calibration alone (:func:`predict_calibrated`)."""
    from specmodel.decodermodel import (
        AcceptanceModel,
        CostModel,
        EngineBehaviour,
        Workload,
        predict,
        predict_calibrated,
    )

    syn = record.settings.synthetic if record is not None else synthetic
    arch = (syn.architectures or {}) if syn is not None else {}
    names = {p.architecture.name for p in cal.hardware or []}
    profiled = syn is not None and arch.get("target") in names
    if sample is not None and not profiled:
        raise ValueError("sample: a sweep's own draws need a synthetic run priced by "
                         "hardware profiles of its architectures")
    try:
        if profiled:
            assert syn is not None
            drafter = (config.token.model if config.k2 > 1
                       and config.token.method == "draft_model" else None)
            costs = CostModel.from_calibration(
                cal, target_architecture=arch["target"],
                draft_architecture=arch.get("draft"),
                token_drafter_architecture=arch.get(drafter, drafter) if drafter else None,
                engine=EngineBehaviour.synthetic(syn.context_bucket, syn.prefill))
            acc = AcceptanceModel.from_calibration(cal).step_shifted(step_offset)
            return predict(config, acc, costs,
                           Workload.of(config, syn.prompt_tokens, sample), problems=problems,
                           draws=draws, draw_problems=draw_problems, seed=seed,
                           sample_problems=sample_problems)
        if prompt_tokens is None and record is not None:
            prompt_tokens = record.settings.prompt_tokens
        if prompt_tokens is None and syn is not None:
            prompt_tokens = syn.prompt_tokens
        return predict_calibrated(
            cal, config, problems=problems, draws=draws, draw_problems=draw_problems,
            seed=seed, prompt_tokens=None if prompt_tokens is None else round(prompt_tokens),
            sample_problems=sample_problems, step_offset=step_offset)
    except ValueError:
        return None


class RoundsRow(ConfigComparison):
    """One configuration measured in several rounds (interleaved runs of the same
    sweep): each model's prediction against the mean measured speedup, with the
    measurement's own spread beside it."""

    measured: list[float]
    """The measured speedup of every round (each over the baseline of its own round)."""
    measured_mean: float
    """Their mean: what each prediction is held against."""
    measured_spread: float
    """(max − min) / mean of the rounds' speedups: the measurement's own spread."""
    ms_per_token: list[float]
    """Measured ms per generated token of every round."""
    registered_decoder: float | None = None
    """The decoder model's speedup as registered before the sweep decoded (None when
    :func:`compare_rounds` was given no registered predictions, or none for this row)."""
    registered_interval: tuple[float, float] | None = None
    """Its registered 95 % interval."""
    registered_sample_interval: tuple[float, float] | None = None
    """Its registered 95 % interval of what a run of the sweep's size measures (None
    where the registration predates it)."""
    registered_error: float | None = None
    """registered_decoder / measured_mean − 1."""


class RoundsSummary(BaseModel):
    """The errors, rankings and recommendations of a multi-round sweep
    (:func:`compare_rounds`).  The baseline (speedup 1 by definition) is in ``rows``
    but not in the error statistics; rankings and recommendations cover every row."""

    rows: list[RoundsRow]
    """One per configuration, in the first round's order."""
    rounds: int
    """How many run records (rounds) were compared."""
    mean_abs_error: dict[str, float | None]
    """Model ("f·g", "priced", "decoder") → mean |error| over the speculative rows."""
    max_abs_error: dict[str, float | None]
    """Model → the largest |error| over the speculative rows."""
    spearman: dict[str, float | None]
    """Model → Spearman rank correlation of its predictions with the mean measured
    speedups over every row that model predicts (None with fewer than three)."""
    best_measured: str
    """The configuration with the highest mean measured speedup."""
    recommended: dict[str, str | None]
    """Model → the configuration it predicts fastest among those run."""
    recommended_vs_best: dict[str, float | None]
    """Model → its recommendation's mean measured speedup ÷ the best measured."""
    models: dict[str, str] = {**MODELS, "registered_decoder":
                              "decoder model as registered before the sweep decoded"}
    """The model behind each predicted number."""
    covered: dict[str, tuple[int, int]] = {}
    """Interval ("decoder", "decoder, a run this size", "registered") → (speculative
    rows whose mean measured speedup lies inside that 95 % interval, speculative rows
    with one): how far the interval's claim held on these runs."""
    baseline_speed: float | None = None
    """The target alone's measured time per output token (pooled over the rounds) over
    the decoder model's for it (None without both): 1 when the calibration's absolute
    costs hold at run time; below 1 when the machine ran faster during the sweep than
    during the calibration. Speedups are ratios, so a uniform drift cancels; a drift of
    b = 1 decoding alone does not."""


_SUMMARY_KEYS = (("f·g", "predicted_speedup", "error"),
                 ("priced", "predicted_priced", "priced_error"),
                 ("decoder", "predicted_decoder", "decoder_error"),
                 ("registered", "registered_decoder", "registered_error"))


def compare_rounds(records: list[RunRecord], calibration: Calibration | None = None, *,
                   decoder: bool = True, seed: int = 0,
                   prompt_tokens: float | None = None,
                   registered: Mapping[str, tuple[Any, ...]] | None = None,
                   acceptance_as_run: bool = False,
                   lengths: Any = None) -> RoundsSummary:
    """Predicted against the mean measured speedup over several rounds of one sweep.

    Every record must hold the same configurations (the baseline included); each
    round's speedup is over its own baseline.  The predictions (one calibration, the
    first record's unless ``calibration`` is given) are computed once; errors are
    against the mean of the rounds, with their spread beside it.  ``registered`` maps a
    configuration's label to the decoder model's (speedup, 95 % interval[, 95 % interval
    of a run of the sweep's size]) as written before the sweep decoded (each interval
    may be None): held against the same means in their own column, beside the decoder
    model computed now.  ``acceptance_as_run``: also the decoder model at each
    configuration's step acceptance pooled over the rounds (:func:`at_run_acceptance`);
    ``lengths``: also at these step lengths (the first round's problems',
    :func:`specmodel.run_lengths.run_lengths`; :func:`at_run_lengths`; with
    ``acceptance_as_run`` also at both).
    """
    if not records:
        raise ValueError("records must not be empty")
    registered = registered or {}
    unknown = sorted(set(registered) - {c.label for c in records[0].configs})
    if unknown:
        raise ValueError(f"registered: {unknown} are not configurations of the records "
                         f"({[c.label for c in records[0].configs]})")
    for label, reg in registered.items():
        value = reg[0]
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"registered[{label!r}]: a speedup must be a positive finite "
                             f"number, got {value}")
    first = compare(records[0], calibration, decoder=decoder, seed=seed,
                    prompt_tokens=prompt_tokens)
    labels = [r.config for r in first]
    rounds = [first] + [compare(rec, calibration or records[0].calibration, decoder=False)
                        for rec in records[1:]]
    for i, rows in enumerate(rounds[1:], start=2):
        if sorted(r.config for r in rows) != sorted(labels):
            raise ValueError(f"records: round {i} holds {sorted(r.config for r in rows)}, "
                             f"round 1 {sorted(labels)}; every round must run the same "
                             "configurations")
    if not decoder:
        lengths = None
    out = []
    for row in first:
        measured = [next(r for r in rows if r.config == row.config).measured_speedup
                    for rows in rounds]
        mean = sum(measured) / len(measured)
        runs = [next(c for c in rec.configs if c.label == row.config) for rec in records]
        judged = sum(c.totals.drafted_steps for c in runs)
        accepted = sum(c.totals.accepted_steps for c in runs)
        cal0 = calibration or records[0].calibration
        assert cal0 is not None  # compare() checked it
        shifted = None
        if acceptance_as_run and row.predicted_decoder is not None:
            shifted = at_run_acceptance(cal0, runs[0].config, accepted, judged, seed=seed,
                                        record=records[0], prompt_tokens=prompt_tokens)
        reg = registered.get(row.config)
        by_lengths = _by_run_lengths(cal0, runs[0].config, lengths, accepted, judged,
                                     both=acceptance_as_run, measured=mean, seed=seed,
                                     record=records[0], prompt_tokens=prompt_tokens)
        out.append(RoundsRow(
            config=row.config, mode=row.mode, k1=row.k1, k2=row.k2, width=row.width,
            measured=measured, measured_mean=mean,
            measured_spread=(max(measured) - min(measured)) / mean if mean > 0 else 0.0,
            predicted_speedup=row.predicted_speedup, predicted_priced=row.predicted_priced,
            predicted_decoder=row.predicted_decoder, decoder_interval=row.decoder_interval,
            decoder_sample_interval=row.decoder_sample_interval,
            error=_rel_error(row.predicted_speedup, mean),
            priced_error=_rel_error(row.predicted_priced, mean),
            decoder_error=_rel_error(row.predicted_decoder, mean),
            step_acceptance=accepted / judged if judged else None,
            ms_per_token=[1e3 * c.totals.seconds / max(1, c.totals.output_tokens)
                          for c in runs],
            measured_split=split_of([p for c in runs for p in c.problems]),
            decoder_split=row.decoder_split,
            rows_per_batch=_rows_per_batch([p for c in runs for p in c.problems]),
            decoder_rows_per_batch=row.decoder_rows_per_batch,
            decoder_step_acceptance=row.decoder_step_acceptance,
            registered_decoder=reg[0] if reg else None,
            registered_interval=reg[1] if reg else None,
            registered_sample_interval=reg[2] if reg and len(reg) > 2 else None,
            registered_error=_rel_error(reg[0], mean) if reg else None,
            **_shifted_fields(shifted, mean), **by_lengths))
    return _summarize(out, len(records))


def baseline_speed(rows: Sequence[ValidationRow | RoundsRow]) -> float | None:
    """The target alone's measured seconds per output token over the decoder model's
    (:attr:`RoundsSummary.baseline_speed`), from the rows' time splits; None when the
    rows lack the baseline or either time."""
    base = next((r for r in rows if r.k1 == 1 and r.k2 == 1 and r.width == 1), None)
    if base is None or not base.measured_split.get("total") \
            or not base.decoder_split.get("total"):
        return None
    return base.measured_split["total"] / base.decoder_split["total"]


def _summarize(rows: list[RoundsRow], rounds: int) -> RoundsSummary:
    from scipy.stats import spearmanr

    spec = [r for r in rows if r.k1 > 1 or r.k2 > 1]
    best = max(rows, key=lambda r: r.measured_mean)
    mean_abs, max_abs, rho, rec, rec_vs = {}, {}, {}, {}, {}
    for name, pred, err in _SUMMARY_KEYS:
        errs = [abs(getattr(r, err)) for r in spec if getattr(r, err) is not None]
        mean_abs[name] = sum(errs) / len(errs) if errs else None
        max_abs[name] = max(errs) if errs else None
        have = [r for r in rows if getattr(r, pred) is not None]
        if len(have) >= 3:
            value = spearmanr([getattr(r, pred) for r in have],
                              [r.measured_mean for r in have]).statistic
            rho[name] = None if not math.isfinite(value) else float(value)
        else:
            rho[name] = None
        pick = max(have, key=lambda r: getattr(r, pred)) if have else None
        rec[name] = None if pick is None else pick.config
        rec_vs[name] = (None if pick is None or best.measured_mean <= 0
                        else pick.measured_mean / best.measured_mean)
    covered = {}
    for name, field_name in (("decoder", "decoder_interval"),
                             ("decoder, a run this size", "decoder_sample_interval"),
                             ("registered", "registered_interval"),
                             ("registered, a run this size",
                              "registered_sample_interval")):
        held = [(getattr(r, field_name), r.measured_mean) for r in spec
                if getattr(r, field_name) is not None]
        if held:
            covered[name] = (sum(lo <= m <= hi for (lo, hi), m in held), len(held))
    return RoundsSummary(rows=rows, rounds=rounds, mean_abs_error=mean_abs,
                         max_abs_error=max_abs, spearman=rho, best_measured=best.config,
                         recommended=rec, recommended_vs_best=rec_vs, covered=covered,
                         baseline_speed=baseline_speed(rows))


DRIFT_TOLERANCE = 1.25
"""How far (as a ratio, either way) a cost probe may read the machine from the
calibration's engine costs before :meth:`CostDrift.summary` says the calibration is
not this machine's.  A two-pass probe on these 2-core VMs moves by 10-20 % within
minutes (docs/results.md, seed 19), so smaller departures are the probe's own noise;
seed 21's VM read the target 1.5-1.9x the calibration's."""


class CostDrift(BaseModel):
    """The engines' call costs measured while a run ran (its cost probes) over the
    calibration's, per model: 1 where the calibration's costs held at run time."""

    target: float
    """The target's time per token at run time over the calibration's (geometric mean
    over every cell of every probe)."""
    target_range: tuple[float, float]
    """The smallest and largest of the target's cell ratios (the probes' spread)."""
    draft: float | None = None
    """The same for the step draft (None: no probe or no calibration cost of it)."""
    draft_range: tuple[float, float] | None = None
    """The draft's smallest and largest cell ratio."""
    probes: int
    """Probes it rests on."""
    cells: int
    """Target cells it rests on (probes × cells per probe)."""
    target_by_batch: dict[int, float] = Field(default_factory=dict)
    """The target's ratio at each batch size the probes timed (geometric mean over
    their cells of that size): where it moves with the size, a batch got cheaper or
    dearer against one sequence between the calibration and the run."""
    draft_by_batch: dict[int, float] = Field(default_factory=dict)
    """The same for the step draft (empty without its ratios)."""
    target_contention: Measurement | None = None
    """The target's slowdown beside the draft's calls as the probes that paired the two
    models measured it (pooled over them: :meth:`Measurement.pooled`; None: no probe
    did)."""
    target_contention_calibrated: float | None = None
    """The calibration's figure for the same slowdown (None: not measured there)."""
    draft_contention: Measurement | None = None
    """The draft's slowdown beside the target's calls, as the probes measured it."""
    draft_contention_calibrated: float | None = None
    """The calibration's figure for it."""

    def departures(self, tolerance: float = DRIFT_TOLERANCE) -> list[str]:
        """What of the machine at run time lies more than ``tolerance`` times (either
        way) from the calibration's costs: the target's time per token, the draft's,
        the draft's relative to the target's (every speculative configuration pays
        it: a drift both models share cancels in the speedups, this one does not) and
        the target's batch of the largest size probed relative to one sequence (what
        batching saves).  Empty: the calibration's costs are this machine's within the
        tolerance.  Pure; ``tolerance`` must be a finite number > 1."""
        if not (math.isfinite(tolerance) and tolerance > 1):
            raise ValueError(f"tolerance must be a finite number > 1, got {tolerance}")

        def off(r: float) -> bool:
            return not 1 / tolerance <= r <= tolerance

        found = []
        if off(self.target):
            found.append(f"the target's time per token x{self.target:.2f}")
        if self.draft is not None:
            if off(self.draft):
                found.append(f"the draft's x{self.draft:.2f}")
            if off(self.draft / self.target):
                found.append(f"the draft relative to the target x{self.draft / self.target:.2f}")
        if len(self.target_by_batch) >= 2:
            one, *_, big = sorted(self.target_by_batch)
            r = self.target_by_batch[big] / self.target_by_batch[one]
            if off(r):
                found.append(f"a batch of {big} relative to one sequence x{r:.2f}")
        return found

    def summary(self) -> str:
        """One sentence: each model's cost at run time over the calibration's, with the
        range of its cells, and where the probes paired the models, each one's slowdown
        beside the other against the calibration's (what ``validate`` and the held-out
        report print); where the machine departs from the calibration by more than
        :data:`DRIFT_TOLERANCE` (:meth:`departures`), what departs and what to do."""
        draft = ("" if self.draft is None or self.draft_range is None else
                 f", the draft's x{self.draft:.2f} (cells {self.draft_range[0]:.2f}-"
                 f"{self.draft_range[1]:.2f})")
        sizes = ("" if len(self.target_by_batch) < 2 else " (by batch size: " + ", ".join(
            f"b = {b} x{r:.2f}" for b, r in sorted(self.target_by_batch.items())) + ")")
        beside = []
        for role, got, cal in (
                ("target", self.target_contention, self.target_contention_calibrated),
                ("draft", self.draft_contention, self.draft_contention_calibrated)):
            if got is not None:
                se = "" if got.stderr is None else f" ± {got.stderr:.2f}"
                was = "not calibrated" if cal is None else f"calibration {cal:.2f}x"
                beside.append(f"{role} {got.value:.2f}{se}x ({was})")
        paired = self.target_contention or self.draft_contention
        contention = ("" if paired is None else
                      f"; beside each other ({paired.n} paired round"
                      f"{'s' * (paired.n != 1)}): " + ", ".join(beside))
        away = self.departures()
        advice = ("" if not away else
                  "; this machine is not the calibration's (" + ", ".join(away) +
                  f", beyond x{DRIFT_TOLERANCE:g}): time the engine costs here (specmodel "
                  "profile engine-costs) before predicting, or price at run time "
                  "(--costs-at-run-time)")
        return (f"cost probes ({self.probes}, timed beside the run): the target's time per "
                f"token x{self.target:.2f} the calibration's (cells {self.target_range[0]:.2f}-"
                f"{self.target_range[1]:.2f}){sizes}{draft}{contention}{advice}")


def _ratios(calibrated: Any, probed: list[Any]) -> list[tuple[int, float]]:
    """(batch size, time per token over the calibration's surface at its (b, L)) of
    each probe cell."""
    from specmodel.decodermodel.costs import Surface

    surface = Surface.from_points(calibrated.decode_points())
    return [(p.batch, p.per_token / surface.time(p.batch, p.context))
            for m in probed for p in m.points]


def _by_batch(cells: list[tuple[int, float]]) -> dict[int, float]:
    """Batch size → geometric mean of its cells' ratios."""
    sizes: dict[int, list[float]] = {}
    for b, r in cells:
        sizes.setdefault(b, []).append(r)
    return {b: _geomean(rs) for b, rs in sorted(sizes.items())}


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def cost_drift(calibration: Calibration, probes: Sequence[CostProbe]) -> CostDrift | None:
    """How far the engines' costs at run time (``probes``, from
    :attr:`RunRecord.cost_probes`) lay from ``calibration``'s ``engine_costs``: per
    model the geometric mean of probe cell / calibration surface (T(b, L) per token,
    interpolated as the decoder model reads it).  None without probes or without the
    calibration's engine costs.  Pure."""
    ec = calibration.engine_costs
    if not probes or ec is None:
        return None
    for i, probe in enumerate(probes, start=1):
        if probe.costs.target.model != ec.target.model:
            raise ValueError(f"probes: probe {i} timed target {probe.costs.target.model!r}, "
                             f"the calibration's engine costs are of {ec.target.model!r}")
    cells = _ratios(ec.target, [p.costs.target for p in probes])
    drafts = [p.costs.draft for p in probes if p.costs.draft is not None]
    draft_cells = _ratios(ec.draft, drafts) if ec.draft is not None and drafts else []
    target, draft = [r for _, r in cells], [r for _, r in draft_cells]

    def slowdown(m: Any) -> float | None:
        return None if m is None or m.concurrent_slowdown is None else m.concurrent_slowdown.value

    return CostDrift(
        target=_geomean(target), target_range=(min(target), max(target)),
        draft=_geomean(draft) if draft else None,
        draft_range=(min(draft), max(draft)) if draft else None,
        probes=len(probes), cells=len(target), target_by_batch=_by_batch(cells),
        draft_by_batch=_by_batch(draft_cells),
        target_contention=Measurement.pooled_or_none(
            [p.costs.target.concurrent_slowdown for p in probes]),
        target_contention_calibrated=slowdown(ec.target),
        draft_contention=Measurement.pooled_or_none([m.concurrent_slowdown for m in drafts]),
        draft_contention_calibrated=slowdown(ec.draft))


def calibration_at_run_time(calibration: Calibration, probes: Sequence[CostProbe], *,
                            by_batch: bool = True, contention: bool = True,
                            times: bool = True) -> tuple[Calibration, CostDrift]:
    """``calibration`` with its engine costs rescaled to what the run's cost probes
    measured, and the drift applied: each cell of each model's decode surface by the
    probes' ratio at its batch size (beyond the largest size probed, that size's:
    :meth:`~specmodel.formats.calibration.ModelEngineCosts.scaled`), the call overhead
    and prefill by the model's one ratio (:func:`cost_drift`) — a machine whose batches
    moved against one sequence, as this VM's do within hours, is followed where one
    ratio per model is not.  Not ``by_batch``: every time by the model's one ratio.
    Where probes paired the two models' calls and ``contention``, each model's slowdown
    beside the other is theirs (pooled) instead of the calibration's, measured the
    phase's way (``paired-calls``); other ratios (the target's speculative calls'
    slowdown, pass costs in decode forwards) stay the calibration's.  The probes time
    synthetic prompts beside the run, never its problems, so a prediction from this
    calibration still uses nothing the run decoded.  Not ``times``: the calibration's
    times kept, only the slowdowns taken (two short passes of a probe can be as noisy
    as the drift they measure).  Raises ValueError without probes or engine costs."""
    drift = cost_drift(calibration, probes)
    if drift is None:
        raise ValueError("probes: the run record has no cost probes, or the calibration "
                         "has no engine_costs section to rescale")
    if not times and (not contention or drift.target_contention is None):
        raise ValueError("times kept: the probes' slowdowns beside each other are all that "
                         "is left to take, and " + ("contention is off" if not contention
                                                    else "no probe paired the models' calls"))
    assert calibration.engine_costs is not None
    costs = calibration.engine_costs if not times else calibration.engine_costs.scaled(
        drift.target, drift.draft,
        target_by_batch=drift.target_by_batch if by_batch else None,
        draft_by_batch=drift.draft_by_batch if by_batch else None)
    if contention and drift.target_contention is not None:
        costs = costs.model_copy(update={
            "contention_method": "paired-calls",
            "target": costs.target.model_copy(
                update={"concurrent_slowdown": drift.target_contention}),
            "draft": costs.draft if costs.draft is None or drift.draft_contention is None
            else costs.draft.model_copy(update={"concurrent_slowdown": drift.draft_contention})})
    return calibration.model_copy(update={"engine_costs": costs}), drift
