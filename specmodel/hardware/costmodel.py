"""The analytical cost of one forward: a roofline of its kernels fitted to measured times.

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
forward the phases do not overlap — every layer's GEMMs stream their weights, then the
attention kernel reads the KV cache, then the next layer's GEMMs start.  The sum is the
serial-phases bound, the max the perfect-overlap bound; ``combine="max"`` fits the
latter so the two can be compared (``benchmarks/bench_hardware_costmodel.py`` does,
on measured H100 data).

The extended model (``fit(..., extended=True)``, ten coefficients) prices the kernels
of a forward apart, each by what bounds it, and adds them:

    T = overhead + layers·per_layer + extra_kernels·per_kernel
        + GEMMs:      max(weight_bytes/BW_w, matmul_flops/FLOPS)   (combine="max")
                      or, for a forward of one token, weight_bytes/BW_gemv
        + decode KV:  kv_bytes/BW_kv          (a split-KV decode kernel: near peak)
        + attention:  attention_flops/FLOPS
        + multi-query attention:  waves·(block_bytes/BW_block + positions·per_position)
        + activations: activation_bytes/BW_act

A GEMM is either bandwidth- or compute-bound (all of a forward's GEMMs have the same
b·q rows, hence one arithmetic intensity), so its two costs take the larger, while
kernels that follow one another add; a one-row product is a GEMV, a different kernel
with its own bandwidth (on this CPU twice the GEMMs').  The multi-query kernel that reads a
verification's cached context or a shared prefix runs one block per (sequence, query
head): with fewer blocks than SMs it is bound by what one SM pulls (each query head
reading its KV head's L positions), and more blocks queue in
``waves = ceil(blocks / SMs)``.

Standard library, NumPy and SciPy only (no torch).
Standard library, NumPy and SciPy only (no torch).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from itertools import pairwise
from typing import Any, Literal

import numpy as np

from specmodel.hardware.devices import Device
from specmodel.hardware.shape import Shape, dtype_bytes

__all__ = [
    "COMBINES",
    "EXTENDED_TERMS",
    "LAYOUTS",
    "LOGITS",
    "PLACEMENTS",
    "CostCoefficients",
    "Features",
    "RowCurve",
    "Workload",
    "CONTENTION_MODELS",
    "concurrent_seconds",
    "contention",
    "kernel_wait_contention",
    "load_coefficients",
    "preset_for_device",
    "seconds_of",
    "features",
    "fit",
    "predict_seconds",
    "relative_errors",
    "resolve_coefficients",
    "check_row_curve",
    "row_factor",
    "transfer",
]

LAYOUTS = ("gqa", "packed")
"""How a multi-query attention kernel maps grouped query heads to blocks (the same
names as ``profiler.hardware``'s ``--layout``)."""
LOGITS = ("all", "last")
"""Which positions' logits a forward computes: every new token's, or the last one's."""
COMBINES = ("additive", "max")
"""How the memory and compute terms combine (see the module docstring)."""
PLACEMENTS = ("one-device", "two-devices")
"""Where a draft and a target forward run in :func:`concurrent_seconds`."""
CONTENTION_MODELS = ("kernels", "overlap")
"""How two models' forwards on one device slow each other: ``kernels``, captured graphs
on two streams interleaving kernel by kernel (:func:`kernel_wait_contention`, the two
sides unequal); ``overlap``, two bandwidth-bound streams overlapping by a fixed share
(:func:`contention`, ``2 − overlap`` for both)."""

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
    """Whether the sequences share their L-token prefix and its attention reads it once
    per group of sharers (cascade / shared-prefix attention kernels)."""
    logits: Literal["all", "last"] = "all"
    """Whose logits the LM head computes: every new token's (``all``, what verification
    needs) or each sequence's last one (``last``, what a prefill needs)."""
    prefix_groups: int = 1
    """With ``shared_prefix``: how many distinct prefixes the batch holds, its sequences
    split evenly among them (B requests each expanding w branches over its own context:
    ``batch = B·w``, ``prefix_groups = B``).  Must divide ``batch``; 1 without a shared
    prefix."""
    layout: Literal["gqa", "packed"] = "gqa"
    """How the multi-query kernel (a verification's cached context, a shared prefix)
    maps grouped query heads to blocks: ``gqa``, one block per query head (PyTorch SDPA
    with ``enable_gqa``, the profiled reference decoder); ``packed``, one block per KV
    head with its group's query rows packed together (what decode-optimized kernels
    do), so each KV head's cache is read once and fewer blocks fill the SMs."""

    def __post_init__(self) -> None:
        _check_int("batch", self.batch, 1)
        _check_int("q", self.q, 1)
        _check_int("context", self.context, 0)
        if not isinstance(self.shared_prefix, bool | np.bool_):
            raise ValueError(f"shared_prefix must be True or False, got {self.shared_prefix!r}")
        _check_choice("logits", self.logits, LOGITS)
        _check_choice("layout", self.layout, LAYOUTS)
        g = _check_int("prefix_groups", self.prefix_groups, 1)
        if self.batch % g:
            raise ValueError(f"prefix_groups must divide batch ({self.batch}), got {g}")
        if g > 1 and not self.shared_prefix:
            raise ValueError(f"prefix_groups must be 1 without a shared prefix, got {g}")

    @property
    def new_tokens(self) -> int:
        """Tokens the forward processes: b·q."""
        return self.batch * self.q


RowCurve = tuple[tuple[int, float], ...]
"""A measured GEMM row curve: (rows M, time of a weight product of M rows over that of
one row), M increasing from 1 (factor 1)."""


def check_row_curve(name: str, curve: object) -> RowCurve:
    """``curve`` as a :data:`RowCurve` (pairs of an integer M >= 1, increasing, and a
    finite factor > 0; the first M is 1 with factor 1); anything else is a one-line
    ``ValueError`` naming ``name``."""
    try:
        pairs = tuple((m, f) for m, f in curve)  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a sequence of (rows, factor) pairs, "
                         f"got {curve!r}") from None
    out = []
    for i, (m, f) in enumerate(pairs):
        rows = _check_int(f"{name}[{i}] rows", m, 1)
        if out and rows <= out[-1][0]:
            raise ValueError(f"{name}[{i}] rows must be increasing, got {m!r} after "
                             f"{out[-1][0]}")
        out.append((rows, _check_real(f"{name}[{i}] factor", f, strict=True)))
    if not out or out[0] != (1, 1.0):
        raise ValueError(f"{name} must start at (1, 1.0), got {out[:1]!r}")
    return tuple(out)


def row_factor(curve: RowCurve, rows: int) -> float:
    """The curve's factor at ``rows`` (>= 1): linear between its measured rows; beyond
    the last, that factor grown in proportion to the rows (products that wide are
    compute-bound)."""
    rows = _check_int("rows", rows, 1)
    last_m, last_f = curve[-1]
    if rows >= last_m:
        return last_f * rows / last_m
    for (m0, f0), (m1, f1) in pairwise(curve):
        if m0 <= rows <= m1:
            return f0 + (f1 - f0) * (rows - m0) / (m1 - m0)
    return curve[0][1]


@dataclass(frozen=True)
class Features:
    """The counts a forward's time is priced from (bytes, flops, layers)."""

    weight_bytes: float
    """Weights streamed once per forward (:meth:`Shape.weight_bytes`)."""
    kv_read_bytes: float
    """KV cache read by attention: b·(L+q) tokens' keys and values unshared; with shared
    prefixes each group's L tokens once plus the b·q new tokens' own."""
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
    prefix read once for the several queries of its group.  Decode (q = 1, unshared)
    reads its cache with a split-KV decode kernel instead; the two reach very different
    bandwidths."""
    multiquery_ctas: int = 0
    """Independent (sequence or prefix, head) pairs the multi-query kernel parallelises
    over — its thread blocks: b·heads for a verification, groups·heads for shared
    prefixes (query heads in the ``gqa`` layout, KV heads ``packed``)."""
    multiquery_cta_bytes: float = 0.0
    """Bytes one of those blocks reads, summed over the layers: its KV head's keys and
    values over the L cached positions (L·head_dim·2·dtype bytes per layer).  In the
    ``gqa`` layout query heads that share a KV head each read it again (through the L2
    cache)."""
    multiquery_positions: float = 0.0
    """Cached positions one block walks, summed over the layers (L·layers)."""
    extra_attention_kernels: int = 0
    """Attention kernels beyond one per layer: a verification or a shared-prefix forward
    attends to the cached context and to its own new tokens with two kernels (summed),
    so ``layers`` extra; 0 otherwise."""
    activation_bytes: float = 0.0
    """A proxy for the element-wise traffic (norms, rotary, activation, residuals) that
    grows with the tokens processed: b·q·layers·(hidden + intermediate)·dtype bytes."""
    gemv_weight_bytes: float = 0.0
    """The part of :attr:`weight_bytes` streamed by one-row products (GEMV kernels):
    all of it when the forward processes one token (b·q = 1), else none."""
    gemm_rows: int = 0
    """Rows of the forward's layer weight products: the b·q tokens it processes (what a
    :attr:`CostCoefficients.gemm_row_curve` is read at)."""
    head_weight_bytes: float = 0.0
    """The LM head's part of :attr:`weight_bytes`."""
    head_rows: int = 0
    """Rows of the LM head's product: the positions whose logits are needed."""

    @property
    def kv_bytes(self) -> float:
        """KV bytes moved: read plus written."""
        return self.kv_read_bytes + self.kv_write_bytes

    @property
    def flops(self) -> float:
        """All arithmetic: matmul plus attention flops."""
        return self.matmul_flops + self.attention_flops

    def vector(self, extended: bool = False, units: float = 132.0,
               row_curve: RowCurve | None = None) -> np.ndarray:
        """The regressors the model prices.  Five-term model: 1, layers, weight bytes,
        KV bytes, flops (in the order of :meth:`CostCoefficients.vector`).  Extended
        (:data:`EXTENDED_TERMS`): 1, layers, weight bytes, matmul flops, the KV bytes the
        decode kernel moves (all but the multi-query kernel's), attention flops, and
        for the multi-query kernel waves·block bytes and waves·positions, where
        ``waves = ceil(multiquery_ctas / units)`` (``units``: the device's SMs), then
        extra attention kernels, activation bytes and the GEMV weight bytes (the GEMM
        weight bytes exclude them).  With a ``row_curve`` (extended only) every weight
        product is priced as one-row products slowed by the curve's factor at
        :attr:`gemm_rows` (:func:`row_factor`; the LM head's at :attr:`head_rows`): the
        last column carries the weight bytes times those factors, and the GEMM
        weight-byte and matmul-flop columns are 0 (the measured curve holds the
        products' arithmetic as well)."""
        if not extended:
            return np.array([1.0, self.layers, self.weight_bytes, self.kv_bytes,
                             self.flops])
        waves = math.ceil(self.multiquery_ctas / units) if self.multiquery_ctas else 0
        gemm, flops, gemv = (self.weight_bytes - self.gemv_weight_bytes, self.matmul_flops,
                             self.gemv_weight_bytes)
        if row_curve is not None:
            gemm, flops = 0.0, 0.0
            body = self.weight_bytes - self.head_weight_bytes
            gemv = (body * row_factor(row_curve, max(self.gemm_rows, 1))
                    + self.head_weight_bytes * row_factor(row_curve, max(self.head_rows, 1)))
        return np.array([1.0, self.layers, gemm,
                         flops, self.kv_bytes - self.multiquery_kv_read_bytes,
                         self.attention_flops, waves * self.multiquery_cta_bytes,
                         waves * self.multiquery_positions,
                         float(self.extra_attention_kernels), self.activation_bytes,
                         gemv])

    def to_dict(self) -> dict[str, Any]:
        """The fields, JSON-ready."""
        return asdict(self)


EXTENDED_TERMS = ("fixed", "layers", "weight bytes", "matmul flops", "decode KV bytes",
                  "attention flops", "multi-query block bytes", "multi-query positions",
                  "extra attention kernels", "activation bytes", "GEMV weight bytes")
"""The extended model's regressors (:meth:`Features.vector` with ``extended``)."""


def features(shape: Shape, workload: Workload, dtype: str = "bfloat16") -> Features:
    """The bytes and flops of one forward of ``shape`` over ``workload`` in ``dtype``."""
    shape = _check_shape(shape)
    if not isinstance(workload, Workload):
        raise ValueError(f"workload must be a Workload, got {type(workload).__name__}")
    el = dtype_bytes(dtype)  # validates dtype
    b, q, L = workload.batch, workload.q, workload.context
    g = workload.prefix_groups
    kv_token = shape.kv_bytes_per_token(dtype)
    new = b * q
    # shared: each prefix once plus the new tokens' own; unshared: every sequence's all
    kv_read = (g * L + new) * kv_token if workload.shared_prefix else b * (L + q) * kv_token
    head_flops = 2 * shape.vocab_size * shape.hidden_size
    body_flops = shape.matmul_flops_per_token - head_flops
    logit_rows = new if workload.logits == "all" else b
    matmul = new * body_flops + logit_rows * head_flops
    attention = new * (L + q) * shape.attention_flops_per_token_per_position
    layers = shape.num_hidden_layers
    heads = shape.num_attention_heads if workload.layout == "gqa" else \
        shape.num_key_value_heads  # blocks per cache the multi-query kernel reads
    readers = g if workload.shared_prefix and b > g else b  # caches the context lives in
    multiquery = L > 0 and (readers < b or q > 1)
    mq_bytes = readers * L * kv_token if multiquery else 0
    return Features(
        weight_bytes=float(shape.weight_bytes(dtype)), kv_read_bytes=float(kv_read),
        kv_write_bytes=float(new * kv_token), matmul_flops=float(matmul),
        attention_flops=float(attention), layers=layers,
        multiquery_kv_read_bytes=float(mq_bytes),
        multiquery_ctas=readers * heads if multiquery else 0,
        multiquery_cta_bytes=float(L * kv_token / shape.num_key_value_heads
                                   if multiquery else 0),
        multiquery_positions=float(L * layers if multiquery else 0),
        extra_attention_kernels=layers if multiquery else 0,
        activation_bytes=float(new * layers * (shape.hidden_size + shape.intermediate_size)
                               * el),
        gemv_weight_bytes=float(shape.weight_bytes(dtype) if new == 1 else 0),
        gemm_rows=new, head_weight_bytes=float(shape.embedding_params * el),
        head_rows=logit_rows)


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
    GEMMs (decode attention with grouped-query heads can be far below it).  Extended
    model: the decode kernel's bytes only."""
    matmul_throughput: float
    """Effective arithmetic throughput for the matmul and attention flops, flop/s."""
    combine: Literal["additive", "max"] = "additive"
    """Five-term model: ``additive``, the memory and compute terms add; ``max``, a
    forward pays the larger of (weight + KV time) and compute time.  Extended model: how
    the GEMMs' weight streaming and their arithmetic combine (``max``: the roofline of
    each GEMM — every GEMM of a forward has the same b·q rows, so the same arithmetic
    intensity); the other kernels add either way."""
    multiquery_cta_bandwidth: float | None = None
    """Extended model only (None: the five-term model, every KV byte at
    :attr:`kv_bandwidth`): bytes/s at which one block of the multi-query attention kernel
    (a verification's cached context, a shared prefix) streams its KV head's cache.
    Such a kernel runs one block per (sequence, query head) and, with fewer blocks than
    the device has SMs, is bound by what one SM can pull, not by the device's
    bandwidth; more blocks queue in waves of :attr:`multiquery_units`."""
    multiquery_position_s: float = 0.0
    """Extended model only: seconds per cached position per layer per wave of the
    multi-query kernel beyond its bytes (its per-tile loop latency: the same at every
    head dimension)."""
    attention_kernel_s: float = 0.0
    """Extended model only: seconds per extra attention kernel per layer (a
    verification or shared-prefix forward runs two attention kernels per layer)."""
    activation_bandwidth: float = math.inf
    """Extended model only: bytes/s of :attr:`Features.activation_bytes` (the
    element-wise traffic that grows with the tokens of a forward; ``inf``: free)."""
    gemv_bandwidth: float | None = None
    """Extended model only: the bandwidth at which one-row products (a forward of one
    token) stream the weights, bytes/s; None: :attr:`weight_bandwidth`."""
    multiquery_units: float = 132.0
    """Blocks the device runs at once in the multi-query kernel: its SMs (132 on an
    H100; :func:`transfer` takes the target device's
    :attr:`~specmodel.hardware.devices.Device.compute_units`)."""
    gemm_row_curve: RowCurve | None = None
    """Extended model only: the weight products' time by rows, measured on the device
    (:data:`RowCurve`); None: the roofline of bytes and flops.  A CPU's GEMM library
    picks its kernel by row count, so a product's time is a step function of the rows
    no bandwidth or throughput expresses (on the Intel Xeon VM one thread prices 1-3
    rows alike, 4-6 rows twice that, 8 three times).  With it every weight product is
    priced at :attr:`gemv_bandwidth` times the curve's factor."""

    def __post_init__(self) -> None:
        _check_real("overhead_s", self.overhead_s)
        _check_real("per_layer_s", self.per_layer_s)
        for key in ("weight_bandwidth", "kv_bandwidth", "matmul_throughput",
                    "activation_bandwidth"):
            _check_real(key, getattr(self, key), strict=True, allow_inf=True)
        if self.gemv_bandwidth is not None:
            _check_real("gemv_bandwidth", self.gemv_bandwidth, strict=True, allow_inf=True)
        _check_choice("combine", self.combine, COMBINES)
        if self.multiquery_cta_bandwidth is not None:
            _check_real("multiquery_cta_bandwidth", self.multiquery_cta_bandwidth,
                        strict=True, allow_inf=True)
        _check_real("multiquery_position_s", self.multiquery_position_s)
        _check_real("attention_kernel_s", self.attention_kernel_s)
        _check_real("multiquery_units", self.multiquery_units, strict=True)
        if self.gemm_row_curve is not None:
            if self.multiquery_cta_bandwidth is None:
                raise ValueError("gemm_row_curve needs the extended model "
                                 "(multiquery_cta_bandwidth set), got the five-term one")
            object.__setattr__(self, "gemm_row_curve",
                               check_row_curve("gemm_row_curve", self.gemm_row_curve))

    @property
    def extended(self) -> bool:
        """Whether this is the extended model (multi-query kernel priced apart)."""
        return self.multiquery_cta_bandwidth is not None

    def vector(self) -> np.ndarray:
        """Five-term model: overhead, per-layer, and the reciprocals of the weight, KV
        and matmul throughputs (seconds per byte, per flop).  Extended, ten entries:
        those five, 1/multi-query block bandwidth, seconds per multi-query position,
        seconds per extra attention kernel, 1/activation bandwidth, 1/GEMV bandwidth."""
        base = [self.overhead_s, self.per_layer_s, 1.0 / self.weight_bandwidth,
                1.0 / self.kv_bandwidth, 1.0 / self.matmul_throughput]
        if self.multiquery_cta_bandwidth is None:
            return np.array(base)
        return np.array([*base, 1.0 / self.multiquery_cta_bandwidth,
                         self.multiquery_position_s, self.attention_kernel_s,
                         1.0 / self.activation_bandwidth, 1.0 / self.gemv_weight_bandwidth])

    @property
    def gemv_weight_bandwidth(self) -> float:
        """The bandwidth of one-row products: :attr:`gemv_bandwidth`, else the GEMMs'."""
        return self.weight_bandwidth if self.gemv_bandwidth is None else self.gemv_bandwidth

    @classmethod
    def from_vector(cls, x: Sequence[float], combine: str = "additive",
                    multiquery_units: float = 132.0,
                    gemm_row_curve: RowCurve | None = None) -> CostCoefficients:
        """The inverse of :meth:`vector` (a zero reciprocal becomes ``inf``, a negative
        time 0); 5 entries for the five-term model, 10 for the extended one."""
        if len(x) not in (5, 10):
            raise ValueError(f"x must have 5 or 10 entries, got {len(x)}")

        def inv(v: float) -> float:
            return math.inf if v <= 0 else 1.0 / float(v)

        base = (max(float(x[0]), 0.0), max(float(x[1]), 0.0), inv(x[2]), inv(x[3]),
                inv(x[4]))
        if len(x) == 5:
            return cls(*base, combine=combine)  # type: ignore[arg-type]
        return cls(*base, combine=combine,  # type: ignore[arg-type]
                   multiquery_cta_bandwidth=inv(x[5]),
                   multiquery_position_s=max(float(x[6]), 0.0),
                   attention_kernel_s=max(float(x[7]), 0.0), activation_bandwidth=inv(x[8]),
                   gemv_bandwidth=inv(x[9]), multiquery_units=multiquery_units,
                   gemm_row_curve=gemm_row_curve)

    def efficiencies(self, device: Device, dtype: str = "bfloat16") -> dict[str, float]:
        """The throughputs that scale with the device, as fractions of ``device``'s
        nominal numbers (matmul against its peak in ``dtype``).  The multi-query block
        bandwidth is one SM's and is not among them."""
        device = _check_device("device", device)
        out = {"weight_bandwidth": self.weight_bandwidth / device.memory_bandwidth,
               "kv_bandwidth": self.kv_bandwidth / device.memory_bandwidth,
               "matmul_throughput": self.matmul_throughput / device.matmul_throughput(dtype)}
        if self.extended:
            out["activation_bandwidth"] = self.activation_bandwidth / device.memory_bandwidth
            out["gemv_bandwidth"] = self.gemv_weight_bandwidth / device.memory_bandwidth
        return out

    @classmethod
    def from_efficiencies(cls, device: Device, *, overhead_s: float, per_layer_s: float,
                          weight_bandwidth: float, kv_bandwidth: float,
                          matmul_throughput: float, dtype: str = "bfloat16",
                          combine: str = "additive",
                          multiquery_cta_bandwidth: float | None = None,
                          multiquery_position_s: float = 0.0,
                          attention_kernel_s: float = 0.0,
                          activation_bandwidth: float = math.inf,
                          gemv_bandwidth: float | None = None,
                          multiquery_units: float | None = None) -> CostCoefficients:
        """Coefficients whose weight, KV, matmul, activation and GEMV throughputs are the
        given fractions (> 0, ``inf`` allowed) of ``device``'s nominal numbers; the
        multi-query block bandwidth is absolute (bytes/s of one SM) and
        ``multiquery_units`` defaults to the device's SMs."""
        device = _check_device("device", device)
        effs = {"weight_bandwidth": weight_bandwidth, "kv_bandwidth": kv_bandwidth,
                "matmul_throughput": matmul_throughput,
                "activation_bandwidth": activation_bandwidth}
        if gemv_bandwidth is not None:
            effs["gemv_bandwidth"] = gemv_bandwidth
        for key, v in effs.items():
            _check_real(key, v, strict=True, allow_inf=True)
        bw = device.memory_bandwidth
        units = device.compute_units if multiquery_units is None else multiquery_units
        return cls(overhead_s, per_layer_s, weight_bandwidth * bw, kv_bandwidth * bw,
                   matmul_throughput * device.matmul_throughput(dtype),
                   combine=combine,  # type: ignore[arg-type]
                   multiquery_cta_bandwidth=multiquery_cta_bandwidth,
                   multiquery_position_s=multiquery_position_s,
                   attention_kernel_s=attention_kernel_s,
                   activation_bandwidth=activation_bandwidth * bw,
                   gemv_bandwidth=None if gemv_bandwidth is None else gemv_bandwidth * bw,
                   multiquery_units=units)

    def to_dict(self) -> dict[str, Any]:
        """The fields, JSON-ready (``inf`` as the string ``"inf"``)."""
        return {k: ("inf" if isinstance(v, float) and math.isinf(v) else v)
                for k, v in asdict(self).items()}


def _times(V: np.ndarray, x: np.ndarray, combine: str) -> np.ndarray:
    """Seconds of the forwards whose regressors are the rows of ``V`` (5 columns: the
    five-term model; 11: the extended one, :data:`EXTENDED_TERMS`) under the
    coefficient vector ``x`` (:meth:`CostCoefficients.vector`) — the model's one
    formula, used to predict and to fit."""
    fixed = V[:, 0] * x[0] + V[:, 1] * x[1]
    if V.shape[1] == 5:
        memory = V[:, 2] * x[2] + V[:, 3] * x[3]
        compute = V[:, 4] * x[4]
        if combine == "max":
            return fixed + np.maximum(memory, compute)
        return fixed + memory + compute
    weights, arithmetic = V[:, 2] * x[2], V[:, 3] * x[4]
    gemm = np.maximum(weights, arithmetic) if combine == "max" else weights + arithmetic
    rest = (V[:, 4] * x[3] + V[:, 5] * x[4] + V[:, 6] * x[5] + V[:, 7] * x[6]
            + V[:, 8] * x[7] + V[:, 9] * x[8] + V[:, 10] * x[9])
    return fixed + gemm + rest


def _linear_design(V: np.ndarray) -> np.ndarray:
    """The columns the additive model is linear in, one per coefficient: the extended
    model's matmul and attention flops share the matmul throughput."""
    if V.shape[1] == 5:
        return V
    return np.column_stack([V[:, 0], V[:, 1], V[:, 2], V[:, 4], V[:, 3] + V[:, 5],
                            V[:, 6], V[:, 7], V[:, 8], V[:, 9], V[:, 10]])


def _seconds(f: Features, c: CostCoefficients) -> float:
    v = f.vector(extended=c.extended, units=c.multiquery_units, row_curve=c.gemm_row_curve)
    return float(_times(v[None, :], c.vector(), c.combine)[0])


def predict_seconds(shape: Shape, workload: Workload, coefficients: CostCoefficients,
                    dtype: str = "bfloat16") -> float:
    """Predicted seconds of one forward of ``shape`` over ``workload`` in ``dtype``."""
    if not isinstance(coefficients, CostCoefficients):
        raise ValueError(f"coefficients must be CostCoefficients, got "
                         f"{type(coefficients).__name__}")
    return _seconds(features(shape, workload, dtype), coefficients)


def _check_rows(rows: Iterable[Row], dtype: str, extended: bool = False,
                units: float = 132.0, row_curve: RowCurve | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    X, t = [], []
    for i, row in enumerate(rows):
        if not isinstance(row, tuple | list) or len(row) != 3:
            raise ValueError(f"rows[{i}] must be a (Shape, Workload, seconds) triple")
        shape, workload, seconds = row
        t.append(_check_real(f"rows[{i}] seconds", seconds, strict=True))
        X.append(features(shape, workload, dtype).vector(extended, units, row_curve))
    if not X:
        raise ValueError("rows must hold at least one measurement, got none")
    return np.array(X), np.array(t)


def fit(rows: Iterable[Row], dtype: str = "bfloat16",
        combine: Literal["additive", "max"] = "additive",
        device: Device | None = None, extended: bool = False,
        multiquery_units: float | None = None,
        gemm_row_curve: RowCurve | None = None,
        fixed_overhead: bool = True) -> CostCoefficients:
    """Coefficients that minimise the squared relative error over ``rows`` of
    (Shape, Workload, measured seconds), all non-negative.

    ``additive``: :func:`scipy.optimize.nnls` on the regressors divided by the measured
    time (so every row weighs by its relative error), columns scaled to unit norm for
    conditioning.  ``max``: the same objective, non-linear, by
    :func:`scipy.optimize.least_squares` with non-negative bounds, started from the
    additive fit and a few variants of it.  With fewer rows than coefficients (or
    collinear regressors) the least-squares solution is not unique; NNLS returns one of
    them.

    With ``device``, no throughput may exceed the device's nominal number (every
    efficiency <= 1): the reciprocals are bounded below by the nominal ones (NNLS on
    the excess over that bound).  This matters for a term the rows cannot identify —
    decode rows are bandwidth-bound, so an unbounded fit gives the matmul term zero
    weight (infinite throughput) and would price a prefill's or a wide verification's
    arithmetic at nothing; bounded, it is priced at the device's peak.

    ``extended``: the ten-coefficient model (multi-query kernel priced per block and
    wave, extra attention kernels, activation traffic; :attr:`CostCoefficients.combine`
    then applies to the GEMMs alone).  Its rows must include verification or
    shared-prefix forwards and forwards of many tokens, or those terms are not
    identified (NNLS leaves them at their bounds).  ``multiquery_units``: the SMs the
    waves are counted in (default: ``device``'s, else 132).  ``gemm_row_curve``
    (extended only): the device's measured weight-product time by rows
    (:attr:`CostCoefficients.gemm_row_curve`), kept in the result.
    ``fixed_overhead=False`` holds :attr:`CostCoefficients.overhead_s` at 0: where every
    cost is per operation (eager PyTorch on a CPU: no graph or launch to pay once) and
    the fit rows' architectures have about as many layers each, a fixed cost and a
    per-layer one are not told apart, and the fit may put per-layer cost into a fixed
    one that a shallow architecture then pays in full.
    """
    from scipy.optimize import least_squares, nnls

    combine = _check_choice("combine", combine, COMBINES)  # type: ignore[assignment]
    if device is not None:
        device = _check_device("device", device)
    units = _check_real("multiquery_units", multiquery_units if multiquery_units is not None
                        else (device.compute_units if device is not None else 132.0),
                        strict=True)
    if gemm_row_curve is not None:
        if not extended:
            raise ValueError("gemm_row_curve needs extended=True")
        gemm_row_curve = check_row_curve("gemm_row_curve", gemm_row_curve)
    V, t = _check_rows(rows, dtype, extended, units, gemm_row_curve)
    X = _linear_design(V)
    lower = np.zeros(X.shape[1])
    if device is not None:
        bw, peak = 1.0 / device.memory_bandwidth, 1.0 / device.matmul_throughput(dtype)
        lower[2:5] = [bw, bw, peak]
        if extended:
            lower[5] = bw  # one block cannot outrun the device
            lower[8] = bw
            lower[9] = bw
    A = X / t[:, None]
    if not fixed_overhead:
        A[:, 0] = 0.0  # NNLS leaves the coefficient of a zero column at 0
    scale = np.linalg.norm(A, axis=0)
    scale[scale == 0] = 1.0
    rhs = np.ones(len(t)) - A @ lower
    z, _ = nnls(A / scale, rhs, maxiter=50 * A.shape[1])
    if combine == "additive":
        return CostCoefficients.from_vector(lower + z / scale, multiquery_units=units,
                                            gemm_row_curve=gemm_row_curve)

    keep = np.ones_like(z)
    if not fixed_overhead:
        keep[0] = 0.0

    def residual(zz: np.ndarray) -> np.ndarray:
        return _times(V, lower + keep * zz / scale, "max") / t - 1.0

    # The max is not linear: start from the additive fit and from variants whose
    # compute term is large enough to bind on some rows; keep the best.
    memory = np.zeros_like(z)
    memory[[2, 3]] = 1.0
    compute = np.zeros_like(z)
    compute[4] = 1.0
    compute_start = np.median(1.0 / X[:, 4]) * scale[4] * 0.5
    raised = z.copy()
    raised[4] = max(z[4], compute_start)
    best = None
    for start in (z, z * (1 - 0.5 * compute), z * (1 - 0.5 * memory + compute), raised):
        r = least_squares(residual, np.maximum(start, 1e-12), bounds=(0, np.inf))
        if best is None or r.cost < best.cost:
            best = r
    assert best is not None
    return CostCoefficients.from_vector(lower + keep * best.x / scale, combine="max",
                                        multiquery_units=units,
                                        gemm_row_curve=gemm_row_curve)


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
    the nominal numbers; the fixed, per-layer and per-kernel costs are kept as they are,
    and so are the multi-query kernel's per-block bandwidth and per-position cost (what
    one SM pulls is bound by its latency and the loads it keeps in flight, not by the
    device's bandwidth), its waves counted in ``to_device``'s SMs, and the GEMM row
    curve (the kernel library's choice by rows) is kept too.

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
    carried = CostCoefficients.from_efficiencies(
        to_device, overhead_s=coefficients.overhead_s, per_layer_s=coefficients.per_layer_s,
        dtype=dtype, combine=coefficients.combine,
        multiquery_cta_bandwidth=coefficients.multiquery_cta_bandwidth,
        multiquery_position_s=coefficients.multiquery_position_s,
        attention_kernel_s=coefficients.attention_kernel_s,
        multiquery_units=float(to_device.compute_units), **eff)
    return replace(carried, gemm_row_curve=coefficients.gemm_row_curve)


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


def contention(placement: Literal["one-device", "two-devices"] = "one-device",
               overlap: float = 0.10) -> float:
    """How many times slower each of two models' forwards run while both run at once.

    ``two-devices``: 1 (each on its own device).  ``one-device``: ``2 − overlap`` — two
    bandwidth-bound streams sharing a device that overlaps them only by ``overlap``
    finish together in ``(2 − overlap)`` times one alone (:func:`concurrent_seconds`
    for equal forwards), so each runs that many times slower while the other runs.  The
    decoder model's ``contention`` (and a hardware profile's ``concurrent``) in these
    terms."""
    placement = _check_choice("placement", placement, PLACEMENTS)  # type: ignore[assignment]
    o = _check_real("overlap", overlap, high=1.0)
    return 1.0 if placement == "two-devices" else 2.0 - o


def kernel_wait_contention(t_self: float, layers_self: int, t_other: float,
                           layers_other: int) -> float:
    """How many times slower a model's forward runs on one GPU while another model's
    forward runs beside it, each a captured graph replayed on its own stream.

    The two streams' kernels take the GPU in turn: each kernel of this model is issued
    while one of the other's holds the SMs and waits, on average, for half of it.  With
    alike kernels in both models' layers (a decoder layer is the same dozen kernels in
    either, sized by its width), a kernel's time is proportional to its model's time per
    layer, so the slowdown is ``1 + ½ · (t_other / layers_other) / (t_self /
    layers_self)``: a short draft beside a long target waits much, the target hardly.
    ``t_self`` and ``t_other`` are the forwards' times alone (any one unit), ``layers_*``
    their decoder layers.  Measured on an H200 (2026-12-04, docs/hardware.md, "Measured
    on an H200"): a 32B-shaped target beside a 1.5B-shaped draft ran 1.16× slower
    (this gives 1.15×), the draft beside the target 2.54–2.61× (2.63×), and two
    0.5B-shaped models beside each other 1.40–1.44× (1.5×)."""
    a = _check_real("t_self", t_self, strict=True)
    b = _check_real("t_other", t_other, strict=True)
    n_a = _check_int("layers_self", layers_self, 1)
    n_b = _check_int("layers_other", layers_other, 1)
    return 1.0 + 0.5 * (b / n_b) / (a / n_a)


def seconds_of(f: Features, coefficients: CostCoefficients) -> float:
    """Predicted seconds of a forward already counted (:func:`features`, possibly
    edited: e.g. B requests each with w branches sharing their own prefix)."""
    if not isinstance(f, Features):
        raise ValueError(f"f must be Features, got {type(f).__name__}")
    if not isinstance(coefficients, CostCoefficients):
        raise ValueError(f"coefficients must be CostCoefficients, got "
                         f"{type(coefficients).__name__}")
    return _seconds(f, coefficients)


HARDWARE_PRESETS = ("h100-sxm-graph", "cpu-epyc-eager", "cpu-xeon-eager")
"""Fitted coefficient presets (``specmodel/presets/hardware/NAME.json``): the H100 one
(reference decoder as CUDA graphs, bf16) and one per CPU the project has run on (the
same decoder op by op, float32, one thread)."""
PRESET_DEVICES = {"h100-sxm-graph": "h100-sxm", "cpu-epyc-eager": "cpu-epyc",
                  "cpu-xeon-eager": "cpu-xeon"}
"""The device each preset was measured on (its JSON says the same; a test checks)."""


def preset_for_device(device: str) -> str | None:
    """The preset measured on ``device`` (a device preset name), or None."""
    return next((p for p, d in PRESET_DEVICES.items() if d == device), None)


def load_coefficients(name: str = "h100-sxm-graph") -> tuple[CostCoefficients, Device,
                                                            dict[str, Any]]:
    """A fitted-coefficient preset: (coefficients, the device they were measured on,
    the preset's JSON: dtype, data, held-out error, caveat).  Written by
    ``benchmarks/bench_hardware_costmodel.py`` and ``benchmarks/bench_cpu_costmodel.py``."""
    import json
    from importlib import resources

    from specmodel.hardware.devices import get_device

    if name not in HARDWARE_PRESETS:
        raise ValueError(f"name must be one of {', '.join(HARDWARE_PRESETS)}, got {name!r}")
    path = resources.files("specmodel") / "presets" / "hardware" / f"{name}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    raw = {k: (math.inf if v == "inf" else v) for k, v in data["coefficients"].items()}
    if raw.get("gemm_row_curve") is not None:
        raw["gemm_row_curve"] = tuple((int(m), float(f)) for m, f in raw["gemm_row_curve"])
    return CostCoefficients(**raw), get_device(data["device"]), data


def resolve_coefficients(device: Device | str, *, preset: str | None = None,
                         coefficients: CostCoefficients | None = None,
                         coefficients_device: Device | str | None = None
                         ) -> tuple[CostCoefficients, Device, str, str]:
    """The coefficients that price forwards on ``device``: (coefficients, the device,
    the dtype their preset was measured in, where they came from in words).

    ``coefficients`` if given (measured on ``coefficients_device``, by default
    ``device``; dtype bfloat16), else the ``preset``'s, else the preset measured on
    ``device`` (:func:`preset_for_device`), else ``h100-sxm-graph``; carried by
    :func:`transfer` when measured on another device."""
    from specmodel.hardware.devices import get_device

    dev = get_device(device) if isinstance(device, str) else _check_device("device", device)
    if preset is not None:
        _check_choice("preset", preset, HARDWARE_PRESETS)
    dtype = "bfloat16"
    if coefficients is None:
        name = preset if preset is not None else (preset_for_device(dev.name)
                                                  or "h100-sxm-graph")
        coef, measured_on, data = load_coefficients(name)
        dtype = data.get("dtype", "bfloat16")
        source = f"cost model {name} (measured on {measured_on.name})"
    else:
        if not isinstance(coefficients, CostCoefficients):
            raise ValueError("coefficients must be CostCoefficients, got "
                             f"{type(coefficients).__name__}")
        coef = coefficients
        measured_on = (get_device(coefficients_device) if isinstance(coefficients_device, str)
                       else _check_device("coefficients_device", coefficients_device)
                       if coefficients_device is not None else dev)
        source = f"given coefficients (measured on {measured_on.name})"
    if measured_on.name != dev.name:
        coef = transfer(coef, measured_on, dev, dtype)
        source += f", transferred to {dev.name} (efficiencies kept)"
    return coef, dev, dtype, source
