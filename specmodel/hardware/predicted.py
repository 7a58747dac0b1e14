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

Which forwards a decoder run can take is :func:`forward_grid` / :func:`profile_points`
(widths, contexts, q of verification and prefill, per architecture): what
``profiler.engines.synthetic.profile_costs`` measures before a synthetic run and
:func:`predicted_profiles` predicts instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from specmodel.formats.hardware import CostPointRecord, HardwareProfile
from specmodel.formats.jsonio import timestamp
from specmodel.hardware.costmodel import (
    CONTENTION_MODELS,
    LAYOUTS,
    CostCoefficients,
    _check_real,
    contention,
    features,
    kernel_wait_contention,
    resolve_coefficients,
    seconds_of,
)
from specmodel.hardware.devices import Device
from specmodel.hardware.shape import Shape, dtype_bytes, load_shape

__all__ = ["CPU_NAMES", "DEFAULT_CONTEXT_BUCKET", "PointSpec", "bucket", "contention_model_of",
           "cpu_preset_of", "decode_t1", "device_preset_of", "forward_grid", "longest_context",
           "predict_like", "predict_profile", "predicted_profiles", "preset_of",
           "profile_points"]

PointSpec = tuple[str, int, int, int, bool]
"""(kind, batch, new tokens, context, shared prefix) of one forward to price."""
KINDS = ("decode", "verify", "prefill")
DEFAULT_CONTEXT_BUCKET = 256
"""Contexts of forwards are rounded up to a multiple of this (tokens): the synthetic
engine's default."""


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


GPU_NAMES = (("H200", "h200"), ("H100", "h100-sxm"), ("A100", "a100-80gb-sxm"),
             ("L40S", "l40s"))
"""(a word of the GPU's name as torch reports it, the device preset)."""
CPU_NAMES = (("EPYC", "cpu-epyc"), ("XEON", "cpu-xeon"))
"""(a word of the CPU's model name as ``/proc/cpuinfo`` gives it, the device preset
measured on that CPU)."""


def cpu_preset_of(name: str) -> str | None:
    """The device preset measured on the CPU whose model name is ``name`` (``AMD EPYC
    7B13`` -> ``cpu-epyc``), or None for a CPU never measured."""
    if not isinstance(name, str):
        raise ValueError(f"name must be a string, got {type(name).__name__}")
    upper = name.upper()
    return next((preset for word, preset in CPU_NAMES if word in upper), None)


def preset_of(kind: str, name: str) -> str | None:
    """The device preset of a device of type ``kind`` (``cpu`` or ``cuda``) called
    ``name`` as the machine reports it: for a CPU, the one measured on that CPU
    (:func:`cpu_preset_of`); for a GPU, the preset whose name the device's name contains
    (``NVIDIA H200`` -> ``h200``); None for a device no preset describes."""
    if kind not in ("cpu", "cuda"):
        raise ValueError(f"kind must be cpu or cuda, got {kind!r}")
    if not isinstance(name, str):
        raise ValueError(f"name must be a string, got {type(name).__name__}")
    if kind == "cpu":
        return cpu_preset_of(name)
    return next((preset for word, preset in GPU_NAMES if word in name.upper()), None)


def device_preset_of(profile: HardwareProfile) -> str:
    """The device preset a measured profile's device corresponds to (:func:`preset_of`);
    for a device no preset describes, ``cpu-epyc`` (where this project began) for a CPU
    and ``h100-sxm`` for a GPU."""
    kind = "cpu" if profile.device.type == "cpu" else "cuda"
    return (preset_of(kind, profile.device.name)
            or ("cpu-epyc" if kind == "cpu" else "h100-sxm"))


def predict_like(profile: HardwareProfile, *, device: Device | str | None = None,
                 dtype: str | None = None, preset: str | None = None,
                 coefficients: CostCoefficients | None = None,
                 coefficients_device: Device | str | None = None,
                 keep_concurrent: bool = False) -> HardwareProfile:
    """The prediction of ``profile``'s points (timed and skipped alike) for its
    architecture, dtype and layout on ``device`` (by default the preset of the device it
    was measured on, :func:`device_preset_of`).
    ``keep_concurrent`` copies the profile's measured ``concurrent`` slowdowns (the one
    thing the cost model does not predict) into the prediction."""
    if not isinstance(profile, HardwareProfile):
        raise ValueError(f"profile must be a HardwareProfile, got {type(profile).__name__}")
    dev = device if device is not None else device_preset_of(profile)
    points: Sequence[PointSpec] = [(p.kind, p.batch, p.new_tokens, p.context,
                                    p.shared_prefix) for p in profile.points]
    out = predict_profile(profile.architecture.shape(), points, device=dev,
                          dtype=dtype or profile.dtype, preset=preset,
                          coefficients=coefficients,
                          coefficients_device=coefficients_device, layout=profile.layout)
    if keep_concurrent and profile.concurrent:
        out = out.model_copy(update={"concurrent": dict(profile.concurrent)})
    return out


def bucket(L: int, g: int) -> int:
    """L rounded up to a multiple of the context bucket ``g``."""
    return max(0, -(-L // g) * g)


def longest_context(configs: Sequence[Any], prompt_tokens: int) -> int:
    """The longest context a decoder run of ``configs`` can reach from prompts of
    ``prompt_tokens``: the prompt, the most steps of the longest length, and k1 steps in
    flight beyond them."""
    k1 = max(c.k1 for c in configs)
    cap = max(c.max_step_tokens for c in configs)
    steps = max(c.max_steps for c in configs)
    return prompt_tokens + (steps + k1) * cap


def forward_grid(configs: Sequence[Any], prompt_tokens: int,
                 context_bucket: int = DEFAULT_CONTEXT_BUCKET,
                 contexts: Sequence[int] | None = None) -> dict[str, Any]:
    """What forwards ``configs`` (:class:`~specmodel.config.SpecConfig`) can run from
    prompts of ``prompt_tokens``: the target's and the step draft's widest batch, the
    contexts (every bucket from the prompt to the longest answer, or ``contexts``), q
    of verification (the k2 > 1) and of prefills (powers of two), the token drafters'
    architectures."""
    k1 = max(c.k1 for c in configs)
    cap = max(c.max_step_tokens for c in configs)
    longest = longest_context(configs, prompt_tokens)
    g = context_bucket
    ctx = sorted(set(contexts)) if contexts else sorted(
        {bucket(L, g) for L in range(max(1, prompt_tokens), longest + g, g)})
    tree = max(sum(c.width ** i for i in range(c.k1)) if c.mode == "sync" else c.k1
               for c in configs)
    draft_b = max([c.width ** (c.k1 - 1) for c in configs if c.k1 > 1] or [1])

    def pow2(n: int) -> int:
        return 1 << (max(1, n) - 1).bit_length()

    prefill_t = [1 << i for i in range(1, pow2(max(prompt_tokens, (k1 - 1) * cap, cap))
                                       .bit_length())]
    prefill_d = [1 << i for i in range(1, pow2(max(prompt_tokens, 2 * cap)).bit_length())]
    k2s = sorted({c.k2 for c in configs if c.k2 > 1})
    drafters = sorted({c.token.model for c in configs
                       if c.k2 > 1 and c.token.method == "draft_model" and c.token.model})
    return {"contexts": ctx, "target_b": tree, "draft_b": draft_b,
            "prefill_target": prefill_t, "prefill_draft": prefill_d, "k2": k2s,
            "drafters": drafters}


def profile_points(target: str, draft: str | None, configs: Sequence[Any],
                   prompt_tokens: int, *, context_bucket: int = DEFAULT_CONTEXT_BUCKET,
                   prefill: bool = True, contexts: Sequence[int] | None = None
                   ) -> list[tuple[str, list[tuple[str, int, int, int]],
                                   list[tuple[str, int, int, int]]]]:
    """The forwards a synthetic run of ``configs`` from prompts of ``prompt_tokens`` can
    run, per architecture: ``[(architecture, decode points, verify points)]``, each
    point ``(kind, b, q, L)``.  The target: T(b, L) and F(b, q, L) for verification
    (q = k2) at every bucketed context, prefills (q a power of two) at the first,
    middle and last context and from scratch (interpolated in L between); the step
    draft (when a configuration drafts steps): T(b, L) and its prefills; each token
    drafter: T(b, L).  What ``profiler.engines.synthetic.profile_costs`` measures and
    :func:`predicted_profiles` predicts."""
    g = forward_grid(configs, prompt_tokens, context_bucket, contexts)
    ctx = g["contexts"]
    bt = range(1, g["target_b"] + 1)
    few = sorted({0, ctx[0], ctx[len(ctx) // 2], ctx[-1]})
    pre_t = g["prefill_target"] if prefill else []
    dec = [("decode", b, 1, L) for L in ctx for b in bt]
    ver = [("verify", b, q, L) for L in ctx for b in bt for q in g["k2"]]
    ver += [("verify", b, q, L) for L in few for b in bt for q in pre_t
            if L == 0 or q not in g["k2"]]
    out = [(target, dec, ver)]
    if draft is not None and any(c.k1 > 1 for c in configs):
        bd = range(1, g["draft_b"] + 1)
        dec = [("decode", b, 1, L) for L in ctx for b in bd]
        ver = [("verify", b, q, L) for L in few for b in bd
               for q in g["prefill_draft"]] if prefill else []
        out.append((draft, dec, ver))
    for arch in g["drafters"]:
        dec = [("decode", b, 1, L) for L in ctx for b in bt]
        have = next((o for o in out if o[0] == arch), None)
        if have is None:
            out.append((arch, dec, []))
        else:  # the step draft drafts tokens too: its decode at the target's widths
            known = set(have[1])
            have[1].extend(p for p in dec if p not in known)
    return out


def predicted_profiles(target: str, draft: str | None, configs: Sequence[Any],
                       prompt_tokens: int, *, device: str = "h100-sxm",
                       dtype: str | None = None,
                       context_bucket: int = DEFAULT_CONTEXT_BUCKET,
                       prefill: bool = True,
                       placement: Literal["one-device", "two-devices"] = "one-device",
                       overlap: float = 0.10, preset: str | None = None,
                       contexts: Sequence[int] | None = None,
                       shapes: Mapping[str, Shape] | None = None,
                       concurrent: float | None = None,
                       concurrent_draft: float | None = None,
                       contention_model: Literal["kernels", "overlap"] | None = None,
                       ) -> list[HardwareProfile]:
    """What ``profiler.engines.synthetic.profile_costs`` would measure, predicted without
    hardware: the same forwards (:func:`profile_points`) priced by the analytical cost
    model on the device preset ``device`` (:func:`predict_profile`), and the target's
    and draft's ``concurrent`` slowdown beside each other.

    That slowdown is 1 when ``placement`` is ``two-devices``.  On one device it is
    ``contention_model``'s: ``kernels``
    (:func:`~specmodel.hardware.costmodel.kernel_wait_contention`, from the two
    predicted decode forwards T(1) at the shortest context and the layers: captured
    graphs on two streams of one GPU, the short draft slowed far more than the target),
    or ``overlap`` (:func:`~specmodel.hardware.costmodel.contention`, ``2 − overlap`` for
    both); by default ``kernels`` on a GPU preset and ``overlap`` on a CPU one (there
    each model has its own cores).  ``concurrent`` (>= 1) replaces both by a slowdown
    measured apart (e.g. two CPU cores that share caches and memory), and
    ``concurrent_draft`` (>= 1) the draft's own where it differs from the target's.
    Architectures are embedded names or config paths, or keys of ``shapes`` (name ->
    :class:`Shape`)."""
    if concurrent is not None:
        concurrent = _check_real("concurrent", concurrent, low=1.0)
    if concurrent_draft is not None:
        concurrent_draft = _check_real("concurrent_draft", concurrent_draft, low=1.0)
    model = contention_model_of(device, contention_model)
    jobs = profile_points(target, draft, configs, prompt_tokens,
                          context_bucket=context_bucket, prefill=prefill, contexts=contexts)
    known = dict(shapes or {})
    out = [predict_profile(known.get(arch, arch), [*dec, *ver], device=device, dtype=dtype,
                           preset=preset)
           for arch, dec, ver in jobs]
    if draft is not None and len(out) > 1:
        t, d = out[0], out[1]
        if concurrent is not None:
            slow_t = slow_d = float(concurrent)
        elif model == "kernels" and placement == "one-device":
            tt, tl = decode_t1(t), t.architecture.num_hidden_layers
            dt, dl = decode_t1(d), d.architecture.num_hidden_layers
            slow_t = kernel_wait_contention(tt, tl, dt, dl)
            slow_d = kernel_wait_contention(dt, dl, tt, tl)
        else:
            slow_t = slow_d = contention(placement, overlap)
        if concurrent_draft is not None:
            slow_d = float(concurrent_draft)
        out[0] = t.model_copy(update={"concurrent": {d.architecture.name: slow_t}})
        out[1] = d.model_copy(update={"concurrent": {t.architecture.name: slow_d}})
    return out


def contention_model_of(device: Device | str,
                        contention_model: str | None = None) -> str:
    """The contention model (:data:`~specmodel.hardware.costmodel.CONTENTION_MODELS`)
    :func:`predicted_profiles` prices two models on one ``device`` by:
    ``contention_model`` where given, else ``kernels`` on a GPU preset and ``overlap``
    on a CPU one; ``kernels`` on a CPU preset is a ValueError (it models one GPU's two
    streams)."""
    if contention_model is not None and contention_model not in CONTENTION_MODELS:
        raise ValueError(f"contention_model must be one of {', '.join(CONTENTION_MODELS)}, "
                         f"got {contention_model!r}")
    name = device.name if isinstance(device, Device) else str(device)
    on_cpu = name.startswith("cpu")
    if contention_model == "kernels" and on_cpu:
        raise ValueError(f"contention_model 'kernels' models one GPU's two streams; {name} "
                         "is a CPU preset (use 'overlap' or a measured slowdown)")
    return contention_model or ("overlap" if on_cpu else "kernels")


def decode_t1(profile: HardwareProfile) -> float:
    """A profile's decode forward of one sequence at its shortest timed context, in
    seconds (what :func:`~specmodel.hardware.costmodel.kernel_wait_contention` compares);
    a profile without one is a ValueError."""
    if not isinstance(profile, HardwareProfile):
        raise ValueError(f"profile must be a HardwareProfile, got {type(profile).__name__}")
    ones = [p for p in profile.points if p.kind == "decode" and p.batch == 1
            and not p.shared_prefix and p.seconds is not None]
    if not ones:
        raise ValueError(f"profile of {profile.architecture.name} has no timed decode "
                         "forward of one sequence")
    return min(ones, key=lambda p: p.context).seconds  # type: ignore[return-value]
