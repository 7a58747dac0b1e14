"""Hardware profiles predicted by the analytical cost model, without hardware.

A measured :class:`~specmodel.formats.hardware.HardwareProfile` holds the times of real
forwards of one architecture on one device.  :func:`predict_profile` writes the same
record for any architecture on any device preset with the times the fitted cost model
(:mod:`specmodel.hardware.costmodel`) gives, path ``predicted``: a calibration holding
such profiles feeds the decoder model (:class:`specmodel.decodermodel.CostModel`) as a
measured one does, so the decoder's real schedule is priced for a model and a device
nobody ran.  :func:`predict_like` predicts the points of a measured profile (the same
grid), which is how a prediction is held against its measurement.

What a predicted profile does not have: ``concurrent`` (the slowdown of two models
decoding at once on one device) is not predicted; the decoder model then assumes 1
(each model on its own device, or cores that do not contend) unless told otherwise.
Points whose weights and KV cache exceed the device's memory are written as skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from specmodel.formats.hardware import CostPointRecord, HardwareProfile
from specmodel.formats.jsonio import timestamp
from specmodel.hardware.costmodel import (
    LAYOUTS,
    CostCoefficients,
    features,
    resolve_coefficients,
    seconds_of,
)
from specmodel.hardware.devices import Device
from specmodel.hardware.shape import Shape, dtype_bytes, load_shape

__all__ = ["PointSpec", "predict_like", "predict_profile"]

PointSpec = tuple[str, int, int, int, bool]
"""(kind, batch, new tokens, context, shared prefix) of one forward to price."""
KINDS = ("decode", "verify", "prefill")


def _point(i: int, spec: object) -> PointSpec:
    if not isinstance(spec, tuple | list) or len(spec) not in (4, 5):
        raise ValueError(f"points[{i}] must be (kind, batch, new_tokens, context[, "
                         f"shared_prefix]), got {spec!r}")
    kind, b, q, L, *rest = spec
    shared = bool(rest[0]) if rest else False
    if kind not in KINDS:
        raise ValueError(f"points[{i}] kind must be one of {', '.join(KINDS)}, got {kind!r}")
    for name, v, low in (("batch", b, 1), ("new_tokens", q, 1), ("context", L, 0)):
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise ValueError(f"points[{i}] {name} must be an integer >= {low}, got {v!r}")
    if kind == "decode" and q != 1:
        raise ValueError(f"points[{i}]: a decode point has new_tokens 1, got {q}")
    return (kind, b, q, L, shared)


def predict_profile(architecture: Shape | str, points: Iterable[PointSpec], *,
                    device: Device | str = "h100-sxm", dtype: str | None = None,
                    preset: str | None = None,
                    coefficients: CostCoefficients | None = None,
                    coefficients_device: Device | str | None = None,
                    layout: Literal["gqa", "packed"] = "gqa") -> HardwareProfile:
    """The profile of ``architecture`` (a :class:`Shape` or an embedded name / config
    path) on ``device`` at ``points``, each forward priced by the cost model.

    Coefficients as :func:`~specmodel.hardware.costmodel.resolve_coefficients` chooses
    them (``preset``, else the preset measured on ``device``, else the H100's, carried
    to ``device``); ``dtype`` defaults to the preset's.  ``layout``: the multi-query
    attention layout priced (as ``profile hardware --layout``)."""
    shape = architecture if isinstance(architecture, Shape) else load_shape(architecture)
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    specs = [_point(i, p) for i, p in enumerate(points)]
    if not specs:
        raise ValueError("points must hold at least one point")
    coef, dev, preset_dtype, source = resolve_coefficients(
        device, preset=preset, coefficients=coefficients,
        coefficients_device=coefficients_device)
    dt = preset_dtype if dtype is None else dtype
    dtype_bytes(dt)  # validates it
    rows = []
    for kind, b, q, L, shared in specs:
        rec = CostPointRecord(kind=kind, batch=b, new_tokens=q, context=L,  # type: ignore[arg-type]
                              shared_prefix=shared, skipped="(pricing)")
        f = features(shape, rec.workload(layout), dt)
        need = f.weight_bytes + f.kv_read_bytes
        if need > dev.memory:
            rows.append(rec.model_copy(update={"skipped": (
                f"weights and KV cache need {need / 1e9:.1f} GB, more than the "
                f"{dev.memory / 1e9:.0f} GB of {dev.name}")}))
            continue
        ms = 1e3 * seconds_of(f, coef)
        rows.append(CostPointRecord(kind=kind, batch=b, new_tokens=q,  # type: ignore[arg-type]
                                    context=L, shared_prefix=shared, ms=[ms, ms, ms]))
    from specmodel import __version__

    cpu = dev.name.startswith("cpu")
    return HardwareProfile(
        architecture=shape.to_dict(),  # type: ignore[arg-type]
        device={"type": "cpu" if cpu else "cuda", "name": dev.name,  # type: ignore[arg-type]
                "memory_bytes": int(dev.memory), "multiprocessors": dev.compute_units},
        dtype=dt,  # type: ignore[arg-type]
        path="predicted",
        path_description=(f"predicted, no forward run: {source}; {dt}, {layout} "
                          "multi-query layout"),
        layout=layout, repeats=1, warmup=0, seed=0,
        versions={"specmodel": __version__}, date=timestamp(), setup_seconds=0.0,
        measure_seconds=0.0, points=rows)


def predict_like(profile: HardwareProfile, *, device: Device | str | None = None,
                 dtype: str | None = None, preset: str | None = None,
                 coefficients: CostCoefficients | None = None,
                 coefficients_device: Device | str | None = None,
                 keep_concurrent: bool = False) -> HardwareProfile:
    """The prediction of ``profile``'s points (timed and skipped alike) for its
    architecture, dtype and layout on ``device`` (by default the preset device whose
    type matches the profile's: ``cpu-this`` for a CPU profile, ``h100-sxm`` else).
    ``keep_concurrent`` copies the profile's measured ``concurrent`` slowdowns (the one
    thing the cost model does not predict) into the prediction."""
    if not isinstance(profile, HardwareProfile):
        raise ValueError(f"profile must be a HardwareProfile, got {type(profile).__name__}")
    dev = device if device is not None else (
        "cpu-this" if profile.device.type == "cpu" else "h100-sxm")
    points: Sequence[PointSpec] = [(p.kind, p.batch, p.new_tokens, p.context,
                                    p.shared_prefix) for p in profile.points]
    out = predict_profile(profile.architecture.shape(), points, device=dev,
                          dtype=dtype or profile.dtype, preset=preset,
                          coefficients=coefficients,
                          coefficients_device=coefficients_device, layout=profile.layout)
    if keep_concurrent and profile.concurrent:
        out = out.model_copy(update={"concurrent": dict(profile.concurrent)})
    return out
