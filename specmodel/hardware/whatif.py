"""What-if: speculative decoding predicted from architectures, a device and a context.

No hardware is run.  The fitted cost model (:mod:`specmodel.hardware.costmodel`,
coefficients of a preset such as ``h100-sxm-graph``, carried to another device by
:func:`~specmodel.hardware.costmodel.transfer`) prices every forward; the project's
optimizers turn the prices and the acceptance rates into speedups:

* ``c1`` = draft decode step / target decode step at (concurrency B, context L), both one
  token per sequence (a reasoning step of S tokens costs S of them for both models);
  with a judge model, each target step is lengthened by one judge forward (a prefill of
  ``judge_tokens``) and ``c1`` is taken against that longer step;
* ``c2`` = token drafter forward / target forward (0 for n-gram drafting);
* the batch cost of the target verifying k1 branches × k2 positions per request, at
  context L: ``T(B·k1 branches, q = k2) / T(B, q = 1)`` (branches sharing their
  request's prefix when ``shared_prefix``), fed to
  :func:`specmodel.optimize.pricing.cost_aware_speedup` as a curve;
* placement: on two devices the draft runs beside the target; on one device the two
  share it and overlap only by ``overlap`` (10 % measured on an H100), so async LR is
  priced as sync LR with a draft cost of (1 − overlap)·c1 (the device cannot run both),
  while sync LR is sequential on either placement.

Every number of the result names its model (``"closed form f·g (flat T(b))"``,
``"cost-aware (priced T(b))"``, ``"cost model <preset> on <device>"``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from specmodel.closedform.hybrid import h as h_closed
from specmodel.closedform.step_level import async_knee, parallel_dim_f
from specmodel.hardware.costmodel import (
    LAYOUTS,
    PLACEMENTS,
    CostCoefficients,
    Workload,
    features,
    resolve_coefficients,
    seconds_of,
)
from specmodel.hardware.devices import Device
from specmodel.hardware.shape import Shape, dtype_bytes, load_shape
from specmodel.optimize.pricing import BatchCostCurve, cost_aware_speedup
from specmodel.parameters import Parameters

__all__ = ["MODELS", "DecoderCosts", "Prediction", "WhatIf", "costs", "decoder_costs",
           "what_if", "what_if_decoder"]

MODELS = {
    "closed": "closed form f·g (flat T(b), the papers' assumption)",
    "priced": "cost-aware (T(b) and V(q) priced by the cost model)",
}
MAX_BUDGET = 256


def _shape(name: str, value: object) -> Shape:
    if isinstance(value, Shape):
        return value
    if isinstance(value, str):
        try:
            return load_shape(value)
        except ValueError as e:
            msg = str(e).removeprefix("architecture ")
            raise ValueError(f"{name} {msg}") from e
    raise ValueError(f"{name} must be a Shape or an architecture name, got {value!r}")


def _int(name: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer in [{low}, {high}], got {value!r}")
    return value


def _real(name: str, value: object, low: float, high: float, *, open_: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    ok = low < value < high if open_ else low <= value <= high
    if not ok:
        b = "()" if open_ else "[]"
        raise ValueError(f"{name} must lie in {b[0]}{low}, {high}{b[1]}, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class Prediction:
    """One predicted configuration."""

    method: str
    """'SD', 'LR sync', 'LR async', 'LR+SD sync', 'LR+SD async' or 'best'."""
    mode: str
    """'sync' or 'async' (SD alone: 'sync', k1 = 1)."""
    k1: int
    """Parallel target steps (drafts + 1)."""
    k2: int
    """Verified positions per token pass (γ + 1)."""
    speedup: float
    """Predicted speedup over the target alone at the same concurrency."""
    model: str
    """Which model produced ``speedup``."""
    flat_speedup: float
    """The closed form f·g at the same (k1, k2) and c1, c2 (flat batch cost)."""
    parallel_dim: int
    """The budget it uses, ParallelDim_f(k1)·k2 (async: steps in flight capped at the
    knee ⌈1/c1⌉); above the what-if's budget for a fixed setting that does not fit it."""

    def to_dict(self) -> dict[str, Any]:
        """Every field by name."""
        return asdict(self)


@dataclass(frozen=True)
class WhatIf:
    """Costs and predictions for one (architectures, device, context) what-if."""

    inputs: dict[str, Any]
    """What was asked (names, device, L, concurrency, placement, α's, budget)."""
    costs: dict[str, Any]
    """Seconds of the forwards, c1, c2, T(b)/T(1), V(q)/T(1), each with its model."""
    predictions: dict[str, Prediction]
    """By method: SD, LR sync/async, LR+SD sync/async at the fixed (k1, k2) asked for
    (by default the LR paper's, whatever the budget), and the best under the budget."""
    within_budget: dict[str, Prediction] = field(default_factory=dict)
    """By method: the best (k1, k2) of each of SD, LR sync/async and LR+SD sync/async
    whose budget fits the what-if's; a method with no point that fits is absent."""
    notes: list[str] = field(default_factory=list)
    """Assumptions a reader must know."""

    def speedup(self, method: str) -> float:
        """The predicted speedup of ``method`` at the fixed (k1, k2), or "best"."""
        return self.predictions[method].speedup

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"inputs": self.inputs, "costs": self.costs,
                "predictions": {k: v.to_dict() for k, v in self.predictions.items()},
                "within_budget": {k: v.to_dict() for k, v in self.within_budget.items()},
                "notes": list(self.notes)}


METHODS = ("SD", "LR sync", "LR async", "LR+SD sync", "LR+SD async")
"""The methods a what-if predicts, each a family of (mode, k1, k2)."""


def method_of(mode: str, k1: int, k2: int) -> str | None:
    """The method (:data:`METHODS`) a (mode, k1, k2) belongs to: k1 = 1 is token
    speculation alone (SD, sync; in async one step in flight is the same schedule), k2 = 1
    step speculation alone; None for the target alone (k1 = k2 = 1)."""
    if k1 == 1:
        return "SD" if k2 > 1 else None
    lr = "LR" if k2 == 1 else "LR+SD"
    return f"{lr} {mode}"


def _placement(value: object) -> str:
    if value not in PLACEMENTS:
        raise ValueError(f"placement must be one of {', '.join(PLACEMENTS)}, got {value!r}")
    return str(value)


def _token_drafter(value: Shape | str, draft: Shape) -> Shape | None:
    """The token drafter's shape: ``same`` (the step draft), ``ngram`` (None: free) or an
    architecture."""
    if value == "ngram":
        return None
    return draft if value == "same" else _shape("token_drafter", value)


def _branch_seconds(shape: Shape, c: CostCoefficients, B: int, w: int, q: int, L: int,
                    shared: bool, layout: str = "gqa", dtype: str = "bfloat16") -> float:
    """B requests, each expanding w branches of q new tokens over its own L-token
    context; with ``shared`` each request's branches read its prefix once."""
    unshared = seconds_of(features(shape, Workload(B * w, q, L, layout=layout), dtype), c)
    if shared and w > 1 and L > 0:
        f = features(shape, Workload(B * w, q, L, shared_prefix=True, prefix_groups=B,
                                     layout=layout), dtype)
        # a shared prefix can always be read per branch: the cheaper of the two kernels
        return min(unshared, seconds_of(f, c))
    return unshared


def costs(target: Shape, draft: Shape, coefficients: CostCoefficients, *, context: int,
          concurrency: int = 1, token_drafter: Shape | None = None,
          judge: Shape | None = None, judge_tokens: int = 256,
          step_tokens: int = 64, dtype: str = "bfloat16") -> dict[str, float]:
    """Seconds per forward and the ratios c1, c2 (see the module docstring)."""
    B, L = concurrency, context

    def t(shape: Shape, w: Workload) -> float:
        return seconds_of(features(shape, w, dtype), coefficients)

    t_t = t(target, Workload(B, 1, L))
    t_d = t(draft, Workload(B, 1, L))
    t_tok = 0.0 if token_drafter is None else t(token_drafter, Workload(B, 1, L))
    t_j = 0.0 if judge is None else t(judge, Workload(B, judge_tokens, 0, logits="last"))
    step_t = step_tokens * t_t + t_j
    return {"target_step_token_s": t_t, "draft_token_s": t_d, "token_drafter_s": t_tok,
            "judge_s": t_j, "target_step_s": step_t, "draft_step_s": step_tokens * t_d,
            "c1": step_tokens * t_d / step_t, "c2": t_tok / t_t,
            "judge_factor": step_tokens * t_t / step_t}


def what_if(target: Shape | str, draft: Shape | str, *, alpha1: float, alpha2: float,
            device: Device | str = "h100-sxm", context: int = 4096, concurrency: int = 1,
            placement: Literal["one-device", "two-devices"] = "two-devices",
            overlap: float = 0.10, shared_prefix: bool = True,
            attention_layout: Literal["gqa", "packed"] = "gqa",
            token_drafter: Shape | str | Literal["same", "ngram"] = "same",
            coefficients: CostCoefficients | None = None,
            coefficients_device: Device | str | None = None,
            preset: str | None = None, dtype: str | None = None, budget: int = 16,
            k1: int = 6, k2: int = 9,
            judge: Shape | str | None = None, judge_tokens: int = 256,
            step_tokens: int = 64, c1: float | None = None, c2: float | None = None,
            flat: bool = False) -> WhatIf:
    """Predict SD alone, LR alone (sync, async), LR+SD and the best (mode, k1, k2) under
    ``budget`` for ``draft`` speculating for ``target`` on ``device`` at ``context``.

    ``coefficients`` default to the ``preset``'s, transferred from the device they were
    measured on to ``device``; without a ``preset``, the one measured on ``device``
    (:func:`~specmodel.hardware.costmodel.preset_for_device`), else ``h100-sxm-graph``.
    ``dtype``: the weights' and cache's dtype, by default the preset's (bfloat16 with
    given coefficients).  ``k1``, ``k2``: the fixed configuration of the per-method
    predictions (the LR paper's defaults: 6 speculative steps, 8 speculative tokens ->
    k2 = 9); ``budget``: M of the search for the best.  ``c1``/``c2`` override the
    priced ratios and ``flat`` replaces T(b), V(q) by the flat curve (what the closed
    forms assume) — for tests and comparisons.  ``attention_layout``: how verification
    and shared-prefix forwards map grouped query heads to the attention kernel's blocks
    (:attr:`~specmodel.hardware.costmodel.Workload.layout`; ``gqa`` is the kernel the
    preset was measured with).
    """
    tgt = _shape("target", target)
    drf = _shape("draft", draft)
    a1 = _real("alpha1", alpha1, 0.0, 1.0, open_=True)
    a2 = _real("alpha2", alpha2, 0.0, 1.0, open_=True)
    L = _int("context", context, 0, 1 << 20)
    B = _int("concurrency", concurrency, 1, 4096)
    _placement(placement)
    o = _real("overlap", overlap, 0.0, 1.0)
    if not isinstance(shared_prefix, bool):
        raise ValueError(f"shared_prefix must be True or False, got {shared_prefix!r}")
    if attention_layout not in LAYOUTS:
        raise ValueError(f"attention_layout must be one of {', '.join(LAYOUTS)}, "
                         f"got {attention_layout!r}")
    M = _int("budget", budget, 1, MAX_BUDGET)
    kk1 = _int("k1", k1, 1, MAX_BUDGET)
    kk2 = _int("k2", k2, 1, MAX_BUDGET)
    jt = _int("judge_tokens", judge_tokens, 1, 1 << 16)
    st = _int("step_tokens", step_tokens, 1, 1 << 16)
    if not isinstance(device, Device | str):
        raise ValueError(f"device must be a Device or a device name, got {device!r}")
    coef, dev, preset_dtype, coef_source = resolve_coefficients(
        device, preset=preset, coefficients=coefficients,
        coefficients_device=coefficients_device)
    tok = _token_drafter(token_drafter, drf)
    jdg = None if judge is None else _shape("judge", judge)
    dt = preset_dtype if dtype is None else dtype
    dtype_bytes(dt)  # validates it

    cs = costs(tgt, drf, coef, context=L, concurrency=B, token_drafter=tok, judge=jdg,
               judge_tokens=jt, step_tokens=st, dtype=dt)
    cc1 = cs["c1"] if c1 is None else _real("c1", c1, 0.0, math.inf)
    cc2 = cs["c2"] if c2 is None else _real("c2", c2, 0.0, math.inf)
    jf = cs["judge_factor"] if c1 is None else 1.0

    # batch cost curves, one per k2: width B·j·k2 -> T(B·j branches, q = k2)
    t_base = _branch_seconds(tgt, coef, B, 1, 1, L, False, dtype=dt)
    widths = sorted({*range(1, M + 1), kk1})

    def curve(q: int) -> BatchCostCurve:
        if flat:
            return BatchCostCurve.flat()
        pts = [(B, t_base)] + [(B * j * q, _branch_seconds(tgt, coef, B, j, q, L,
                                                           shared_prefix, attention_layout,
                                                           dt))
                               for j in widths if B * j * q != B]
        return BatchCostCurve.from_points(pts)

    curves = {q: curve(q) for q in sorted({*range(1, M + 1), kk2})}
    one_device = placement == "one-device"

    model = MODELS["closed"] if flat else MODELS["priced"] + f"; {coef_source}"

    def predict(name: str, mode: str, k1_: int, k2_: int) -> Prediction:
        """``name``'s prediction at (mode, k1, k2), in the mode actually priced (async on
        one device runs as sync with the draft's cost less the overlap)."""
        eff_mode, c1_eff = mode, cc1
        if mode == "async" and one_device and k1_ > 1:
            eff_mode, c1_eff = "sync", (1.0 - o) * cc1
        used = k2_ * (k1_ if eff_mode == "sync" or c1_eff <= 0.0
                      else int(parallel_dim_f(eff_mode, min(c1_eff, 0.999999), k1_)))
        if eff_mode == "async" and c1_eff >= 1.0:
            return Prediction(name, eff_mode, k1_, k2_, 0.0, model, 0.0, used)
        p = Parameters(a1, c1_eff, a2, cc2)
        s, _ = cost_aware_speedup(p, eff_mode, k1_, k2_, curves[k2_], 1 if flat else B)
        factor = jf if k1_ > 1 else 1.0
        flat_s = float(h_closed(eff_mode, a1, c1_eff, a2, cc2, k1_, k2_))
        return Prediction(name, eff_mode, k1_, k2_, s * factor, model, flat_s * factor,
                          used)

    preds: dict[str, Prediction] = {
        name: predict(name, mode, a, b)
        for name, mode, a, b in (("SD", "sync", 1, kk2), ("LR sync", "sync", kk1 + 1, 1),
                                 ("LR async", "async", kk1, 1),
                                 ("LR+SD sync", "sync", kk1 + 1, kk2),
                                 ("LR+SD async", "async", kk1, kk2))}

    best: Prediction | None = None
    within: dict[str, Prediction] = {}
    for mode in ("sync", "async"):
        for b_ in range(1, M + 1):
            top = M // b_
            if mode == "async" and cc1 > 0 and not one_device:
                top = min(top, max(1, async_knee(min(cc1, 0.999999))))
            for a_ in range(1, top + 1):
                cand = predict("best", mode, a_, b_)
                if best is None or cand.speedup > best.speedup * (1 + 1e-12):
                    best = cand
                name = method_of(mode, a_, b_)
                if name is None or (name == "SD" and mode == "async"):
                    continue
                if name not in within or cand.speedup > within[name].speedup * (1 + 1e-12):
                    within[name] = replace(cand, method=name)
    assert best is not None
    preds["best"] = best

    curve_rows = {f"T({j})/T(1)": _branch_seconds(tgt, coef, B, j, 1, L, shared_prefix,
                                                  attention_layout, dt) / t_base
                  for j in (2, 4, 8, 16, 32) if j <= max(M, 8)}
    verify_rows = {f"V({q})/T(1)": _branch_seconds(tgt, coef, B, 1, q, L, False,
                                                   attention_layout, dt) / t_base
                   for q in (2, 4, 8, 16)}
    cost_model = f"{coef_source}"
    notes = [
        "c1 is the ratio of per-token decode forwards at (concurrency, context); a real "
        "engine adds scheduling, sampling and step-boundary overheads that the cost "
        "model (forwards of a reference decoder) does not see.",
        f"Step length assumed: {st} tokens (the judge's forward is amortised over it).",
    ]
    if placement == "one-device":
        notes.append("Async LR on one device is priced as sync LR with draft cost "
                     "(1 - overlap)·c1: the device runs draft and target forwards one "
                     "after the other.")
    if flat:
        notes.append("flat=True: T(b) and V(q) are the flat curve (the closed forms).")
    return WhatIf(
        inputs={"target": tgt.name, "draft": drf.name,
                "token_drafter": "ngram" if tok is None else tok.name,
                "judge": None if jdg is None else jdg.name, "device": dev.name,
                "context": L, "concurrency": B, "placement": placement, "overlap": o,
                "shared_prefix": shared_prefix, "attention_layout": attention_layout,
                "dtype": dt,
                "alpha1": a1, "alpha2": a2, "budget": M,
                "k1": kk1, "k2": kk2, "judge_tokens": jt, "step_tokens": st,
                "coefficients": coef.to_dict()},
        costs={**cs, "c1": cc1, "c2": cc2, "c1_forced": c1 is not None,
               "c2_forced": c2 is not None, "batch_cost": curve_rows,
               "verify_cost": verify_rows, "model": cost_model},
        predictions=preds, within_budget={m: within[m] for m in METHODS if m in within},
        notes=notes)


@dataclass(frozen=True)
class DecoderCosts:
    """What the decoder model needs to price a what-if: the calibration holding the
    predicted profiles, the run configuration before k1 and k2 are chosen, the cost model
    and the request's starting context."""

    calibration: Any
    """The calibration given, its hardware profiles replaced by the predicted ones."""
    base: Any
    """The :class:`~specmodel.config.SpecConfig` the candidates vary (its token drafter
    the what-if's)."""
    costs: Any
    """The :class:`~specmodel.decodermodel.costs.CostModel`."""
    prompt_tokens: int
    """The request's context when decoding starts (the what-if's L)."""
    contention: str = "contention from the placement"
    """Where the two models' slowdown beside each other came from, in words (given,
    the placement's, or the contention model that priced it on one device)."""


def decoder_costs(calibration: Any, target: Shape | str, draft: Shape | str, *,
                  device: Device | str = "h100-sxm", context: int = 4096,
                  placement: Literal["one-device", "two-devices"] = "two-devices",
                  overlap: float = 0.10,
                  token_drafter: Shape | str | Literal["same", "ngram"] = "same",
                  judge: Shape | str | None = None, judge_tokens: int = 256,
                  preset: str | None = None, dtype: str | None = None, budget: int = 16,
                  configs: Sequence[tuple[str, int, int, int]] = (),
                  contexts: int = 5, concurrent: float | None = None,
                  concurrent_draft: float | None = None,
                  contention_model: Literal["kernels", "overlap"] | None = None,
                  ) -> DecoderCosts:
    """The decoder model's costs for ``draft`` speculating for ``target`` on ``device``,
    one request whose context starts at ``context`` tokens — hardware profiles the
    analytical cost model predicts (:func:`~specmodel.hardware.predicted.
    predicted_profiles`) for every forward the candidates of ``budget`` and the further
    ``configs`` ((mode, k1, k2, W) each) can run, no hardware run; the acceptance and
    step lengths stay ``calibration``'s.

    The engine is one with prefix caching at step boundaries, prefills of uncached
    tokens in one forward and batched token speculation, a batch returning when its
    longest member ends (:meth:`~specmodel.decodermodel.EngineBehaviour.synthetic`, as
    vLLM runs the decoder's calls); the two models' forwards contend as their
    ``placement`` and ``contention_model`` say
    (:func:`~specmodel.hardware.predicted.predicted_profiles`: on one GPU by default
    the ``kernels`` model, captured graphs on two streams, the draft slowed far more
    than the target), or by ``concurrent`` (the target's slowdown beside the draft,
    >= 1) and ``concurrent_draft`` (the draft's, by default ``concurrent``) where they
    were measured (one H200, 2026-12-04, graphs on two streams: 1.16 and 2.61 for a
    32B-shaped target and a 1.5B-shaped draft; two cores of the EPYC about 1.17;
    docs/hardware.md).  The profiles are predicted at
    ``contexts`` context lengths from ``context`` to the longest answer the calibration's
    step limits allow, interpolated between.  A ``judge`` costs one prefill of
    ``judge_tokens`` per judged pair; without one the calibration's verifier cost holds.
    """
    from specmodel.config import TokenDrafter
    from specmodel.decodermodel.costs import CostModel, EngineBehaviour
    from specmodel.decodermodel.search import candidates
    from specmodel.formats.calibration import Calibration
    from specmodel.hardware.predicted import (
        DEFAULT_CONTEXT_BUCKET,
        contention_model_of,
        longest_context,
        predicted_profiles,
    )

    if not isinstance(calibration, Calibration):
        raise ValueError(f"calibration must be a Calibration, got "
                         f"{type(calibration).__name__}")
    tgt = _shape("target", target)
    drf = _shape("draft", draft)
    L = _int("context", context, 0, 1 << 20)
    M = _int("budget", budget, 1, MAX_BUDGET)
    n_ctx = _int("contexts", contexts, 1, 64)
    jt = _int("judge_tokens", judge_tokens, 1, 1 << 16)
    _placement(placement)
    o = _real("overlap", overlap, 0.0, 1.0)
    tok_shape = _token_drafter(token_drafter, drf)
    jdg = None if judge is None else _shape("judge", judge)
    base = calibration.base_config("sync").replace(
        token=({"method": "ngram"} if tok_shape is None else
               TokenDrafter(method="draft_model", model=tok_shape.name).model_dump()))
    grid = [base.replace(mode=m, k1=k1, k2=k2, width=w)
            for m, k1, k2, w in [*candidates(M), *configs]]
    top = longest_context(grid, L)
    ctx = sorted({L + round(i * (top - L) / max(1, n_ctx - 1)) for i in range(n_ctx)})
    names = {tgt.name: tgt, drf.name: drf, **({} if tok_shape is None
                                              else {tok_shape.name: tok_shape})}
    profiles = predicted_profiles(tgt.name, drf.name, grid, L, device=device,
                                  dtype=dtype, prefill=True, placement=placement,
                                  overlap=o, preset=preset, contexts=ctx, shapes=names,
                                  concurrent=concurrent, concurrent_draft=concurrent_draft,
                                  contention_model=contention_model)
    keys = {p.key() for p in profiles}
    cal = calibration.model_copy(update={"hardware": [
        p for p in calibration.hardware or [] if p.key() not in keys] + profiles})
    costs = CostModel.from_calibration(
        cal, target_architecture=tgt.name, draft_architecture=drf.name,
        token_drafter_architecture=None if tok_shape is None else tok_shape.name,
        engine=EngineBehaviour.synthetic(DEFAULT_CONTEXT_BUCKET, prefill=True))
    draft_slowdown = concurrent if concurrent_draft is None else concurrent_draft
    given = {key: f"given: {v:g}× ({who}'s slowdown beside the {other}, not predicted)"
             for key, v, who, other in (
                 ("contention", concurrent, "the target", "draft"),
                 ("draft_contention", draft_slowdown, "the draft", "target"))
             if v is not None and key in costs.sources}
    how_contention = ("contention as given" if draft_slowdown is not None
                      else "contention from the placement")
    if placement == "one-device" and concurrent is None:
        model = contention_model_of(device, contention_model)
        how = (" by the kernels model: graphs on two streams of one GPU, each kernel "
               "waiting half a kernel of the other" if model == "kernels" else
               f" by the overlap model: 2 − overlap ({o:g})")
        given.update({key: costs.sources[key] + how
                      for key in ("contention", "draft_contention")
                      if key in costs.sources and key not in given})
        if concurrent_draft is None:
            how_contention = f"contention by the {model} model"
    if given:
        costs = replace(costs, sources={**costs.sources, **given})
    if jdg is not None:
        coef, _, preset_dtype, source = resolve_coefficients(device, preset=preset)
        t_j = seconds_of(features(jdg, Workload(1, jt, 0, logits="last"),
                                  dtype or preset_dtype), coef)
        costs = replace(costs, verifier_per_pair=t_j, sources={
            **costs.sources, "verifier_per_pair": f"predicted: one {jt}-token prefill of "
            f"the judge {jdg.name} per judged pair ({t_j * 1e3:.2f} ms; {source})"})
    return DecoderCosts(cal, base, costs, L, how_contention)


def what_if_decoder(calibration: Any, target: Shape | str, draft: Shape | str, *,
                    seed: int = 0, search: dict[str, Any] | None = None,
                    **options: Any) -> Any:
    """The budget-M answer of the decoder model (the project's decoder's own schedule,
    every engine call priced) with the costs of :func:`decoder_costs` (``options``: its
    keyword arguments) — a :class:`~specmodel.decodermodel.search.DecoderOptimum` whose
    ``sources`` say where each cost came from.  ``search``: further options of
    :func:`~specmodel.decodermodel.search.optimize_decoder` (e.g. ``screen_problems``).
    """
    from specmodel.decodermodel.search import optimize_decoder

    dc = decoder_costs(calibration, target, draft, **options)
    out = optimize_decoder(dc.calibration, options.get("budget", 16), base=dc.base,
                           prompt_tokens=dc.prompt_tokens, seed=seed, costs=dc.costs,
                           **(search or {}))
    gaps = [g for g in out.gaps if not g.startswith("engine call costs")]
    gaps.insert(0, "engine call costs: the forwards predicted by the cost model (no per-call "
                   f"overhead; prefills priced as forwards; {dc.contention})")
    return replace(out, gaps=gaps)
