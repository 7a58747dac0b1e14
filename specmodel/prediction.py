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
from typing import Any

from pydantic import BaseModel

from specmodel.config import SpecConfig
from specmodel.formats.calibration import Calibration
from specmodel.formats.run_record import RunRecord

__all__ = ["MODELS", "ValidationRow", "calibration_mismatches", "compare", "predict"]

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


class ValidationRow(BaseModel):
    """One configuration: predicted against measured."""

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
    measured_speedup: float
    """Tokens/s of this configuration over the baseline's, same run."""
    error: float | None
    """predicted / measured − 1."""
    predicted_priced: float | None
    """Priced by the measured T(b), when the calibration has it."""
    priced_error: float | None
    """predicted_priced / measured − 1."""
    predicted_decoder: float | None = None
    """The decoder model's speedup (None when it could not be computed)."""
    decoder_error: float | None = None
    """predicted_decoder / measured − 1."""
    decoder_interval: tuple[float, float] | None = None
    """The decoder model's 95 % interval (simulation and calibration uncertainty)."""
    step_acceptance: float | None
    """Measured accepted / judged draft steps."""
    accuracy: float
    """Fraction of final answers right."""
    models: dict[str, str] = MODELS
    """The model behind each predicted number."""


def _rel_error(pred: float | None, measured: float) -> float | None:
    if pred is None or measured <= 0 or not math.isfinite(pred):
        return None
    return pred / measured - 1.0


def calibration_mismatches(record: RunRecord, calibration: Calibration | None = None) -> list[str]:
    """Where the calibration was measured on other models than the run.

    Compares the target, draft and verifier the calibration names (its
    provenance) with the run's; a calibration that names none is not checked.
    α1 belongs to one draft, target and verifier together, so a prediction from
    another verifier's α1 is no test of the model.
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
    return out


def compare(record: RunRecord, calibration: Calibration | None = None, *,
            decoder: bool = True, seed: int = 0) -> list[ValidationRow]:
    """Predicted against measured speedup for every configuration of ``record``.

    ``calibration`` replaces the record's own (to predict the same run from
    another calibration).  ``decoder`` adds the decoder model's prediction
    (:func:`decoder_prediction`).
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
    rows = []
    for c in record.configs:
        s = c.config
        measured = c.totals.tokens_per_second / base_tps
        try:
            closed, priced = predict(cal, s)
        except ValueError:
            closed, priced = None, None
        dec = decoder_prediction(cal, s, seed=seed, record=record) if decoder else None
        rows.append(
            ValidationRow(
                config=c.label,
                mode=s.mode,
                k1=s.k1,
                k2=s.k2,
                width=s.width,
                predicted_speedup=closed,
                measured_speedup=measured,
                error=_rel_error(closed, measured),
                predicted_priced=priced,
                priced_error=_rel_error(priced, measured),
                predicted_decoder=None if dec is None else dec.speedup,
                decoder_error=None if dec is None else _rel_error(dec.speedup, measured),
                decoder_interval=None if dec is None else dec.interval,
                step_acceptance=c.totals.step_acceptance,
                accuracy=c.totals.accuracy,
            )
        )
    return rows


def decoder_prediction(cal: Calibration, config: SpecConfig, *, seed: int = 0,
                       problems: int = 200, draws: int = 16, draw_problems: int = 50,
                       record: RunRecord | None = None) -> Any:
    """The decoder model's :class:`~specmodel.decodermodel.DecoderPrediction` for one
    configuration from a calibration, or None where the models cannot be built.

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

    try:
        syn = record.settings.synthetic if record is not None else None
        arch = (syn.architectures or {}) if syn is not None else {}
        names = {p.architecture.name for p in cal.hardware or []}
        if syn is not None and arch.get("target") in names:
            drafter = (config.token.model if config.k2 > 1
                       and config.token.method == "draft_model" else None)
            costs = CostModel.from_calibration(
                cal, target_architecture=arch["target"],
                draft_architecture=arch.get("draft"),
                token_drafter_architecture=arch.get(drafter, drafter) if drafter else None,
                engine=EngineBehaviour.synthetic(syn.context_bucket, syn.prefill))
            return predict(config, AcceptanceModel.from_calibration(cal), costs,
                           Workload.of(config, syn.prompt_tokens), problems=problems,
                           draws=draws, draw_problems=draw_problems, seed=seed)
        return predict_calibrated(cal, config, problems=problems, draws=draws,
                                  draw_problems=draw_problems, seed=seed)
    except ValueError:
        return None
