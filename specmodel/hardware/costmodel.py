"""The analytical cost of one forward: an additive roofline fitted to measured times.

A forward of a decoder (:class:`~specmodel.hardware.shape.Shape`) over a
:class:`Workload` (b sequences, q new tokens each, an L-token KV cache per sequence or
one shared prefix) costs

    T = overhead + layers·per_layer + weight_bytes/BW_w + kv_bytes/BW_kv + flops/FLOPS

— a fixed launch/synchronisation cost, a per-layer cost (kernel launches, norms,
small ops), the weights streamed once, the KV cache read (and the new tokens' keys
and values written), and the matmul plus attention arithmetic.  The five
coefficients (:class:`CostCoefficients`) are fitted by non-negative least squares on
the relative error (:func:`fit`) and read as efficiencies of a :class:`Device`'s
nominal numbers, so :func:`transfer` can carry them to a device never measured.

Why additive and not ``max(bytes/BW, flops/FLOPS)``: in a decode or verification
forward the phases do not overlap perfectly — every layer's GEMMs stream their
weights, then the attention kernel reads the KV cache, then the next layer's GEMMs
start; within a GEMM a bandwidth-bound kernel still pays part of its arithmetic, and
at the sizes of speculative decoding (b·q up to a few hundred rows) neither term
dominates the other by a wide margin.  The sum is the serial-phases bound, the max the
perfect-overlap bound; ``combine="max"`` fits the latter so the two can be compared
(``benchmarks/bench_hardware_costmodel.py`` does, on measured H100 data).

Standard library, NumPy and SciPy only (no torch).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from specmodel.hardware.devices import Device
from specmodel.hardware.shape import Shape, dtype_bytes

__all__ = [
    "COMBINES",
    "LOGITS",
    "PLACEMENTS",
    "CostCoefficients",
    "Features",
    "Workload",
    "concurrent_seconds",
    "load_coefficients",
    "seconds_of",
    "features",
    "fit",
    "predict_seconds",
    "relative_errors",
    "transfer",
]

LOGITS = ("all", "last")
"""Which positions' logits a forward computes: every new token's, or the last one's."""
COMBINES = ("additive", "max")
"""How the memory and compute terms combine (see the module docstring)."""
PLACEMENTS = ("one-device", "two-devices")
"""Where a draft and a target forward run in :func:`concurrent_seconds`."""

Row = tuple[Shape, "Workload", float]
"""A measurement: the shape, the workload and the measured seconds of one forward."""


def _check_int(name: str, value: object, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def _check_real(name: str, value: object, *, low: float = 0.0, high: float = math.inf,
                allow_inf: bool = False, strict: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer |
                                                 np.floating):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    x = float(value)
    finite_ok = math.isfinite(x) or (allow_inf and x == math.inf)
    in_range = (x > low if strict else x >= low) and x <= high
    if not finite_ok or not in_range:
        lo = f"({low}" if strict else f"[{low}"
        hi = "inf]" if allow_inf and high == math.inf else (
            "inf)" if high == math.inf else f"{high}]")
        raise ValueError(f"{name} must lie in {lo}, {hi}, got {value!r}")
    return x


def _check_choice(name: str, value: object, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
    return str(value)


def _check_shape(value: object) -> Shape:
    if not isinstance(value, Shape):
        raise ValueError(f"shape must be a Shape, got {type(value).__name__}")
    return value


def _check_device(name: str, value: object) -> Device:
    if not isinstance(value, Device):
        raise ValueError(f"{name} must be a Device, got {type(value).__name__}")
    return value


@dataclass(frozen=True)
class Workload:
    """What one forward computes."""

    batch: int = 1
    """b: sequences in the batch (>= 1)."""
    q: int = 1
    """New tokens per sequence (>= 1): 1 is a decode step, q > 1 the verification of q
    tokens; a prefill of n tokens is ``batch=1, q=n``."""
    context: int = 0
    """L: tokens already in each sequence's KV cache (>= 0)."""
    shared_prefix: bool = False
    """Whether the b sequences share their L-token prefix and its attention reads it
    once for all of them (cascade / shared-prefix attention kernels)."""
    logits: Literal["all", "last"] = "all"
    """Whose logits the LM head computes: every new token's (``all``, what verification
    needs) or each sequence's last one (``last``, what a prefill needs)."""

    def __post_init__(self) -> None:
        _check_int("batch", self.batch, 1)
        _check_int("q", self.q, 1)
        _check_int("context", self.context, 0)
        if not isinstance(self.shared_prefix, bool | np.bool_):
            raise ValueError(f"shared_prefix must be True or False, got {self.shared_prefix!r}")
        _check_choice("logits", self.logits, LOGITS)

    @property
    def new_tokens(self) -> int:
        """Tokens the forward processes: b·q."""
        return self.batch * self.q


@dataclass(frozen=True)
class Features:
    """The counts a forward's time is priced from (bytes, flops, layers)."""

    weight_bytes: float
    """Weights streamed once per forward (:meth:`Shape.weight_bytes`)."""
    kv_read_bytes: float
    """KV cache read by attention: b·(L+q) tokens' keys and values unshared; with a
    shared prefix L tokens once plus the b·q new tokens' own."""
    kv_write_bytes: float
    """Keys and values of the b·q new tokens written to the cache."""
    matmul_flops: float
    """Weight-matmul flops: b·q tokens through every layer, the LM head only for the
    positions whose logits are needed."""
    attention_flops: float
    """QKᵀ and PV flops: b·q·(L+q)·:attr:`Shape.attention_flops_per_token_per_position`
    (computed, not skipped, when the prefix is shared)."""
    layers: int
    """Decoder layers (each pays the per-layer overhead)."""
    multiquery_kv_read_bytes: float = 0.0
    """The part of :attr:`kv_read_bytes` read by a multi-query attention kernel: the
    cached context of a verification (q > 1, each sequence its own cache) or a shared
    prefix read once for b > 1 queries.  Decode (q = 1, unshared) reads its cache with a
    split-KV decode kernel instead; the two reach very different bandwidths."""
    multiquery_ctas: int = 0
    """Independent (sequence, query head) pairs the multi-query kernel parallelises over:
    b·heads for a verification, heads for a shared prefix (one sequence)."""
    extra_attention_kernels: int = 0
    """Attention kernels beyond one per layer: a verification or a shared-prefix forward
    attends to the cached context and to its own new tokens with two kernels (summed),
    so ``layers`` extra; 0 otherwise."""

    @property
    def kv_bytes(self) -> float:
        """KV bytes moved: read plus written."""
        return self.kv_read_bytes + self.kv_write_bytes

    @property
    def flops(self) -> float:
        """All arithmetic: matmul plus attention flops."""
        return self.matmul_flops + self.attention_flops

    def vector(self, extended: bool = False, units: float = 132.0) -> np.ndarray:
        """The regressors of the additive model, in the order of
        :meth:`CostCoefficients.vector`: 1, layers, weight bytes, KV bytes, flops; with
        ``extended``, the KV bytes exclude the multi-query kernel's, and two regressors
        follow: those bytes divided by the kernel's occupancy
        ``min(1, multiquery_ctas / units)`` (``units``: the device's parallel units,
        132 SMs on an H100), and the extra attention kernels."""
        if not extended:
            return np.array([1.0, self.layers, self.weight_bytes, self.kv_bytes,
                             self.flops])
        return np.array([1.0, self.layers, self.weight_bytes,
                         self.kv_bytes - self.multiquery_kv_read_bytes, self.flops,
                         self.multiquery_scaled_bytes(units),
                         float(self.extra_attention_kernels)])

    def multiquery_scaled_bytes(self, units: float = 132.0) -> float:
        """Multi-query KV bytes over the kernel's occupancy ``min(1, ctas/units)``."""
        if self.multiquery_kv_read_bytes <= 0:
            return 0.0
        occupancy = min(1.0, max(self.multiquery_ctas, 1) / units)
        return self.multiquery_kv_read_bytes / occupancy

    def to_dict(self) -> dict[str, Any]:
        """The fields, JSON-ready."""
        return asdict(self)


def features(shape: Shape, workload: Workload, dtype: str = "bfloat16") -> Features:
    """The bytes and flops of one forward of ``shape`` over ``workload`` in ``dtype``."""
    shape = _check_shape(shape)
    if not isinstance(workload, Workload):
        raise ValueError(f"workload must be a Workload, got {type(workload).__name__}")
    dtype_bytes(dtype)  # validates dtype
    b, q, L = workload.batch, workload.q, workload.context
    kv_token = shape.kv_bytes_per_token(dtype)
    new = b * q
    # shared: the prefix once plus the new tokens' own; unshared: every sequence's all
    kv_read = (L + new) * kv_token if workload.shared_prefix else b * (L + q) * kv_token
    head_flops = 2 * shape.vocab_size * shape.hidden_size
    body_flops = shape.matmul_flops_per_token - head_flops
    logit_rows = new if workload.logits == "all" else b
    matmul = new * body_flops + logit_rows * head_flops
    attention = new * (L + q) * shape.attention_flops_per_token_per_position
    heads = shape.num_attention_heads
    mq_bytes, ctas, extra = 0.0, 0, 0
    if L > 0 and workload.shared_prefix and b > 1:
        mq_bytes, ctas, extra = L * kv_token, heads, shape.num_hidden_layers
    elif L > 0 and q > 1:
        mq_bytes, ctas, extra = b * L * kv_token, b * heads, shape.num_hidden_layers
    return Features(weight_bytes=float(shape.weight_bytes(dtype)), kv_read_bytes=float(kv_read),
                    kv_write_bytes=float(new * kv_token), matmul_flops=float(matmul),
                    attention_flops=float(attention), layers=shape.num_hidden_layers,
                    multiquery_kv_read_bytes=float(mq_bytes), multiquery_ctas=int(ctas),
                    extra_attention_kernels=int(extra))


@dataclass(frozen=True)
class CostCoefficients:
    """The fitted cost of a forward on one device (absolute values; :meth:`efficiencies`
    reads them against a :class:`Device`).  A throughput of ``inf`` means the fit found
    no cost in that term."""

    overhead_s: float
    """Fixed cost of one forward in seconds (graph or kernel launch, synchronisation,
    sampling-side work the measurement includes)."""
    per_layer_s: float
    """Cost per decoder layer in seconds beyond its bytes and flops (launches of the
    layer's kernels, norms, rotary, small element-wise ops)."""
    weight_bandwidth: float
    """Effective bandwidth at which the GEMMs stream the weights, bytes/s."""
    kv_bandwidth: float
    """Effective bandwidth at which attention reads (and writes) the KV cache, bytes/s —
    its own number because attention kernels reach a different fraction of peak than
    GEMMs (decode attention with grouped-query heads is far below it)."""
    matmul_throughput: float
    """Effective arithmetic throughput for the matmul and attention flops, flop/s."""
    combine: Literal["additive", "max"] = "additive"
    """``additive``: the memory and compute terms add; ``max``: a forward pays the larger
    of (weight + KV time) and compute time."""
    multiquery_kv_bandwidth: float | None = None
    """Extended model only (None: the five-term model, every KV byte at
    :attr:`kv_bandwidth`): the bandwidth at which a multi-query attention kernel (a
    verification's cached context, a shared prefix) reads the cache at full occupancy,
    bytes/s; at ``ctas < multiquery_units`` it is scaled by ``ctas/multiquery_units``."""
    attention_kernel_s: float = 0.0
    """Extended model only: seconds per extra attention kernel per layer (a
    verification or shared-prefix forward runs two attention kernels per layer)."""
    multiquery_units: float = 132.0
    """Parallel units that fill the device for the multi-query kernel (the H100's
    132 SMs; a what-if on another device keeps it unless told)."""

    def __post_init__(self) -> None:
        _check_real("overhead_s", self.overhead_s)
        _check_real("per_layer_s", self.per_layer_s)
        for key in ("weight_bandwidth", "kv_bandwidth", "matmul_throughput"):
            _check_real(key, getattr(self, key), strict=True, allow_inf=True)
        _check_choice("combine", self.combine, COMBINES)
        if self.multiquery_kv_bandwidth is not None:
            _check_real("multiquery_kv_bandwidth", self.multiquery_kv_bandwidth,
                        strict=True, allow_inf=True)
        _check_real("attention_kernel_s", self.attention_kernel_s)
        _check_real("multiquery_units", self.multiquery_units, strict=True)

    @property
    def extended(self) -> bool:
        """Whether this is the seven-term model (multi-query kernel priced apart)."""
        return self.multiquery_kv_bandwidth is not None

    def vector(self) -> np.ndarray:
        """The coefficients of :meth:`Features.vector`: overhead, per-layer, and the
        reciprocals of the three throughputs (seconds per byte, per flop); extended,
        also 1/multi-query bandwidth and seconds per extra attention kernel."""
        base = [self.overhead_s, self.per_layer_s, 1.0 / self.weight_bandwidth,
                1.0 / self.kv_bandwidth, 1.0 / self.matmul_throughput]
        if self.multiquery_kv_bandwidth is None:
            return np.array(base)
        return np.array([*base, 1.0 / self.multiquery_kv_bandwidth, self.attention_kernel_s])

    @classmethod
    def from_vector(cls, x: Sequence[float], combine: str = "additive",
                    multiquery_units: float = 132.0) -> CostCoefficients:
        """The inverse of :meth:`vector` (a zero reciprocal becomes ``inf``); 5 entries
        for the five-term model, 7 for the extended one."""
        if len(x) not in (5, 7):
            raise ValueError(f"x must have 5 or 7 entries, got {len(x)}")
        inv = [math.inf if v <= 0 else 1.0 / float(v) for v in x[2:5]]
        if len(x) == 5:
            return cls(max(float(x[0]), 0.0), max(float(x[1]), 0.0), *inv,
                       combine=combine)  # type: ignore[arg-type]
        mq = math.inf if x[5] <= 0 else 1.0 / float(x[5])
        return cls(max(float(x[0]), 0.0), max(float(x[1]), 0.0), *inv,
                   combine=combine, multiquery_kv_bandwidth=mq,  # type: ignore[arg-type]
                   attention_kernel_s=max(float(x[6]), 0.0),
                   multiquery_units=multiquery_units)

    def efficiencies(self, device: Device, dtype: str = "bfloat16") -> dict[str, float]:
        """The throughputs as fractions of ``device``'s nominal numbers (matmul against its
        peak in ``dtype``)."""
        device = _check_device("device", device)
        out = {"weight_bandwidth": self.weight_bandwidth / device.memory_bandwidth,
               "kv_bandwidth": self.kv_bandwidth / device.memory_bandwidth,
               "matmul_throughput": self.matmul_throughput / device.matmul_throughput(dtype)}
        if self.multiquery_kv_bandwidth is not None:
            out["multiquery_kv_bandwidth"] = (self.multiquery_kv_bandwidth
                                              / device.memory_bandwidth)
        return out

    @classmethod
    def from_efficiencies(cls, device: Device, *, overhead_s: float, per_layer_s: float,
                          weight_bandwidth: float, kv_bandwidth: float,
                          matmul_throughput: float, dtype: str = "bfloat16",
                          combine: str = "additive",
                          multiquery_kv_bandwidth: float | None = None,
                          attention_kernel_s: float = 0.0,
                          multiquery_units: float = 132.0) -> CostCoefficients:
        """Coefficients whose throughputs are the given fractions (> 0, ``inf`` allowed)
        of ``device``'s nominal numbers."""
        device = _check_device("device", device)
        effs = {"weight_bandwidth": weight_bandwidth, "kv_bandwidth": kv_bandwidth,
                "matmul_throughput": matmul_throughput}
        if multiquery_kv_bandwidth is not None:
            effs["multiquery_kv_bandwidth"] = multiquery_kv_bandwidth
        for key, v in effs.items():
            _check_real(key, v, strict=True, allow_inf=True)
        mq = (None if multiquery_kv_bandwidth is None
              else multiquery_kv_bandwidth * device.memory_bandwidth)
        return cls(overhead_s, per_layer_s, weight_bandwidth * device.memory_bandwidth,
                   kv_bandwidth * device.memory_bandwidth,
                   matmul_throughput * device.matmul_throughput(dtype),
                   combine=combine, multiquery_kv_bandwidth=mq,  # type: ignore[arg-type]
                   attention_kernel_s=attention_kernel_s, multiquery_units=multiquery_units)

    def to_dict(self) -> dict[str, Any]:
        """The fields, JSON-ready (``inf`` as the string ``"inf"``)."""
        return {k: ("inf" if isinstance(v, float) and math.isinf(v) else v)
                for k, v in asdict(self).items()}


def _seconds(f: Features, c: CostCoefficients) -> float:
    x = c.vector()
    v = f.vector(extended=c.extended, units=c.multiquery_units)
    fixed = x[0] + v[1] * x[1]
    memory = v[2] * x[2] + v[3] * x[3]
    compute = v[4] * x[4]
    if c.extended:
        fixed += v[6] * x[6]
        memory += v[5] * x[5]
    if c.combine == "max":
        return float(fixed + max(memory, compute))
    return float(fixed + memory + compute)


def predict_seconds(shape: Shape, workload: Workload, coefficients: CostCoefficients,
                    dtype: str = "bfloat16") -> float:
    """Predicted seconds of one forward of ``shape`` over ``workload`` in ``dtype``."""
    if not isinstance(coefficients, CostCoefficients):
        raise ValueError(f"coefficients must be CostCoefficients, got "
                         f"{type(coefficients).__name__}")
    return _seconds(features(shape, workload, dtype), coefficients)


def _check_rows(rows: Iterable[Row], dtype: str, extended: bool = False,
                units: float = 132.0) -> tuple[np.ndarray, np.ndarray]:
    X, t = [], []
    for i, row in enumerate(rows):
        if not isinstance(row, tuple | list) or len(row) != 3:
            raise ValueError(f"rows[{i}] must be a (Shape, Workload, seconds) triple")
        shape, workload, seconds = row
        t.append(_check_real(f"rows[{i}] seconds", seconds, strict=True))
        X.append(features(shape, workload, dtype).vector(extended, units))
    if not X:
        raise ValueError("rows must hold at least one measurement, got none")
    return np.array(X), np.array(t)


def fit(rows: Iterable[Row], dtype: str = "bfloat16",
        combine: Literal["additive", "max"] = "additive",
        device: Device | None = None, extended: bool = False,
        multiquery_units: float = 132.0) -> CostCoefficients:
    """Coefficients that minimise the squared relative error over ``rows`` of
    (Shape, Workload, measured seconds), all non-negative.

    ``additive``: :func:`scipy.optimize.nnls` on the regressors divided by the measured
    time (so every row weighs by its relative error), columns scaled to unit norm for
    conditioning.  ``max``: the same objective, non-linear, by
    :func:`scipy.optimize.least_squares` with non-negative bounds, started from the
    additive fit.  With fewer rows than the five coefficients (or collinear
    regressors) the least-squares solution is not unique; NNLS returns one of them.

    With ``device``, no throughput may exceed the device's nominal number (every
    efficiency <= 1): the reciprocals are bounded below by the nominal ones (NNLS on
    the excess over that bound).  This matters for a term the rows cannot identify —
    decode rows are bandwidth-bound, so an unbounded fit gives the matmul term zero
    weight (infinite throughput) and would price a prefill's or a wide verification's
    arithmetic at nothing; bounded, it is priced at the device's peak.

    ``extended``: the seven-term model (:attr:`CostCoefficients.multiquery_kv_bandwidth`,
    :attr:`CostCoefficients.attention_kernel_s`); its rows must include verification or
    shared-prefix forwards, or those two terms are not identified (NNLS leaves them at
    their bounds).  Additive only.
    """
    from scipy.optimize import least_squares, nnls

    combine = _check_choice("combine", combine, COMBINES)  # type: ignore[assignment]
    if extended and combine != "additive":
        raise ValueError("combine must be additive when extended is True, got "
                         f"{combine!r}")
    units = _check_real("multiquery_units", multiquery_units, strict=True)
    X, t = _check_rows(rows, dtype, extended, units)
    lower = np.zeros(X.shape[1])
    if device is not None:
        device = _check_device("device", device)
        lower[2:5] = [1.0 / device.memory_bandwidth, 1.0 / device.memory_bandwidth,
                      1.0 / device.matmul_throughput(dtype)]
        if extended:
            lower[5] = 1.0 / device.memory_bandwidth
    A = X / t[:, None]
    scale = np.linalg.norm(A, axis=0)
    scale[scale == 0] = 1.0
    rhs = np.ones(len(t)) - A @ lower
    z, _ = nnls(A / scale, rhs, maxiter=50 * A.shape[1])
    x = lower + z / scale
    if combine == "additive":
        return CostCoefficients.from_vector(x, multiquery_units=units)

    def residual(zz: np.ndarray) -> np.ndarray:
        xx = lower + zz / scale
        fixed = X[:, 0] * xx[0] + X[:, 1] * xx[1]
        memory = X[:, 2] * xx[2] + X[:, 3] * xx[3]
        return (fixed + np.maximum(memory, X[:, 4] * xx[4])) / t - 1.0

    # The max is not linear: start from the additive fit and from variants whose
    # compute term is large enough to bind on some rows; keep the best.
    compute_start = np.median(1.0 / X[:, 4]) * scale[4] * 0.5
    best = None
    for start in (z, z * np.array([1, 1, 1, 1, 0.5]), z * np.array([1, 1, 0.5, 0.5, 2]),
                  np.concatenate([z[:4], [max(z[4], compute_start)]])):
        r = least_squares(residual, np.maximum(start, 1e-12), bounds=(0, np.inf))
        if best is None or r.cost < best.cost:
            best = r
    assert best is not None
    return CostCoefficients.from_vector(lower + best.x / scale, combine="max")


def relative_errors(rows: Iterable[Row], coefficients: CostCoefficients,
                    dtype: str = "bfloat16") -> np.ndarray:
    """(predicted − measured) / measured for each row."""
    out = []
    for i, (shape, workload, seconds) in enumerate(rows):
        s = _check_real(f"rows[{i}] seconds", seconds, strict=True)
        out.append(predict_seconds(shape, workload, coefficients, dtype) / s - 1.0)
    return np.array(out)


def transfer(coefficients: CostCoefficients, from_device: Device, to_device: Device,
             dtype: str = "bfloat16") -> CostCoefficients:
    """A what-if: the coefficients fitted on ``from_device`` carried to ``to_device`` by
    keeping each throughput's efficiency (fraction of the nominal number) and swapping
    the nominal numbers; the fixed and per-layer overheads are kept as they are.

    This is an extrapolation for a device never measured, not a measurement: real
    efficiencies move with the memory technology, the kernel library and the ratio of
    bandwidth to compute.  Measure the device to replace it.
    """
    if not isinstance(coefficients, CostCoefficients):
        raise ValueError(f"coefficients must be CostCoefficients, got "
                         f"{type(coefficients).__name__}")
    from_device = _check_device("from_device", from_device)
    to_device = _check_device("to_device", to_device)
    eff = coefficients.efficiencies(from_device, dtype)
    return CostCoefficients.from_efficiencies(
        to_device, overhead_s=coefficients.overhead_s, per_layer_s=coefficients.per_layer_s,
        dtype=dtype, combine=coefficients.combine,
        attention_kernel_s=coefficients.attention_kernel_s,
        multiquery_units=coefficients.multiquery_units, **eff)


def concurrent_seconds(t_draft: float, t_target: float,
                       placement: Literal["one-device", "two-devices"] = "one-device",
                       overlap: float = 0.10) -> float:
    """Wall time of a draft forward and a target forward started together.

    ``two-devices``: each on its own device, ``max(t_draft, t_target)``.
    ``one-device``: both on one device, which overlaps them only by ``overlap`` of the
    shorter (both are bandwidth-bound; measured ~10 % on one H100):
    ``t_draft + t_target − overlap·min(t_draft, t_target)``.
    """
    a = _check_real("t_draft", t_draft)
    b = _check_real("t_target", t_target)
    placement = _check_choice("placement", placement, PLACEMENTS)  # type: ignore[assignment]
    o = _check_real("overlap", overlap, high=1.0)
    if placement == "two-devices":
        return max(a, b)
    return a + b - o * min(a, b)


def seconds_of(f: Features, coefficients: CostCoefficients) -> float:
    """Predicted seconds of a forward already counted (:func:`features`, possibly
    edited: e.g. B requests each with w branches sharing their own prefix)."""
    if not isinstance(f, Features):
        raise ValueError(f"f must be Features, got {type(f).__name__}")
    if not isinstance(coefficients, CostCoefficients):
        raise ValueError(f"coefficients must be CostCoefficients, got "
                         f"{type(coefficients).__name__}")
    return _seconds(f, coefficients)


HARDWARE_PRESETS = ("h100-sxm-graph",)
"""Fitted coefficient presets (``specmodel/presets/hardware/NAME.json``)."""


def load_coefficients(name: str = "h100-sxm-graph") -> tuple[CostCoefficients, Device,
                                                            dict[str, Any]]:
    """A fitted-coefficient preset: (coefficients, the device they were measured on,
    the preset's JSON: data, held-out error, caveat).  Written by
    ``benchmarks/bench_hardware_costmodel.py``."""
    import json
    from importlib import resources

    from specmodel.hardware.devices import get_device

    if name not in HARDWARE_PRESETS:
        raise ValueError(f"name must be one of {', '.join(HARDWARE_PRESETS)}, got {name!r}")
    path = resources.files("specmodel") / "presets" / "hardware" / f"{name}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    raw = {k: (math.inf if v == "inf" else v) for k, v in data["coefficients"].items()}
    return CostCoefficients(**raw), get_device(data["device"]), data
