"""The hardware profile: measured cost surfaces of one architecture on one device.

Written by ``specmodel profile hardware`` (measured by :func:`profiler.hardware.measure`,
or read from a file that ``python -m profiler.hardware`` wrote on a machine without
specmodel's other dependencies, or predicted without hardware by the analytical cost
model, :func:`specmodel.hardware.predicted.predict_profile`, path ``predicted``) and
stored in a calibration's ``hardware`` list.
Each point is one timed forward: ``batch`` sequences, ``new_tokens`` each, over a
cached context of ``context`` tokens (shared by the batch or not) — T(b, L) decode,
V(q, L) verification, P(n) prefill — or a point the device could not hold, with why.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from specmodel.formats.jsonio import read_json_file
from specmodel.hardware.shape import Shape

if TYPE_CHECKING:
    from specmodel.hardware.costmodel import Workload

__all__ = ["ArchitectureRecord", "CostPointRecord", "DeviceRecord", "HardwareProfile",
           "PROBE_WINDOW", "SpeedProbeRecord", "load_hardware_profile"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class ArchitectureRecord(_Strict):
    """The measured architecture (the fields of :class:`specmodel.hardware.shape.Shape`)."""

    name: str = Field(min_length=1)
    """Architecture name."""
    hidden_size: int = Field(ge=1)
    """Model width."""
    intermediate_size: int = Field(ge=1)
    """Gated MLP width."""
    num_hidden_layers: int = Field(ge=1)
    """Decoder layers."""
    num_attention_heads: int = Field(ge=1)
    """Query heads."""
    num_key_value_heads: int = Field(ge=1)
    """Key/value heads."""
    head_dim: int = Field(ge=1)
    """Width of one head."""
    vocab_size: int = Field(ge=1)
    """Vocabulary."""
    tie_word_embeddings: bool
    """LM head tied to the embedding."""
    attention_bias: bool
    """Q/K/V projection biases."""

    def shape(self) -> Shape:
        """The :class:`Shape` (for the analytical cost model)."""
        return Shape(**self.model_dump())


class DeviceRecord(_Strict):
    """The device a profile was measured on."""

    type: Literal["cpu", "cuda"]
    """cpu or cuda."""
    name: str
    """GPU name (e.g. 'NVIDIA H100 80GB HBM3') or CPU model."""
    memory_bytes: int | None = Field(default=None, ge=1)
    """Device memory (GPU) or RAM (CPU)."""
    compute_capability: str | None = None
    """CUDA compute capability, e.g. '9.0'."""
    multiprocessors: int | None = Field(default=None, ge=1)
    """Streaming multiprocessors (GPU) or logical cores (CPU)."""
    driver: str | None = None
    """NVIDIA driver version."""
    cuda_runtime: str | None = None
    """The CUDA version torch was built with."""
    threads: int | None = Field(default=None, ge=1)
    """CPU threads used (CPU only)."""


class CostPointRecord(_Strict):
    """One timed forward, or one the device could not hold."""

    kind: Literal["decode", "verify", "prefill"]
    """decode (1 new token per sequence), verify (q > 1 new tokens, logits at each) or
    prefill (n prompt tokens, logits at the last)."""
    batch: int = Field(ge=1)
    """Sequences b."""
    new_tokens: int = Field(ge=1)
    """New tokens per sequence q."""
    context: int = Field(ge=0)
    """Cached tokens per sequence L."""
    shared_prefix: bool = False
    """The batch shares its L-token prefix (attention to it read once)."""
    ms: list[float] | None = Field(default=None, min_length=3, max_length=3)
    """[median, min, max] of the forward's time in milliseconds."""
    n: int | None = Field(default=None, ge=1)
    """Timed forwards behind ``ms``."""
    mean_ms: float | None = Field(default=None, gt=0)
    """The mean of the same forwards' times (what a loop of them costs on average,
    preemptions included); None in profiles written before it was recorded."""
    skipped: str | None = None
    """Why the point was not timed (memory, an attention backend that cannot run it)."""
    probe_ms: float | None = Field(default=None, gt=0)
    """The profile's speed probe (:class:`SpeedProbeRecord`) timed right before this
    point, in milliseconds; None where the profile ran no probe or the point was
    skipped."""

    @model_validator(mode="after")
    def _timed_or_skipped(self) -> CostPointRecord:
        if (self.ms is None) == (self.skipped is None):
            raise ValueError("a point has either ms (and n) or skipped, not both or neither")
        if self.skipped is not None and self.probe_ms is not None:
            raise ValueError("a skipped point has no probe_ms")
        if self.ms is not None:
            med, lo, hi = self.ms
            if not 0 < lo <= med <= hi:
                raise ValueError(f"ms must be [median, min, max] with 0 < min <= median <= "
                                 f"max, got {self.ms}")
        return self

    @property
    def seconds(self) -> float | None:
        """The median time in seconds (None when skipped)."""
        return None if self.ms is None else self.ms[0] / 1e3

    def workload(self, layout: Literal["gqa", "packed"] = "gqa") -> Workload:
        """The forward as the analytical cost model counts it
        (:class:`specmodel.hardware.costmodel.Workload`; a prefill's logits at the last
        token only)."""
        from specmodel.hardware.costmodel import Workload

        return Workload(batch=self.batch, q=self.new_tokens, context=self.context,
                        shared_prefix=self.shared_prefix,
                        logits="last" if self.kind == "prefill" else "all", layout=layout)


PROBE_WINDOW = 2
"""Probe times taken on each side of a point's two neighbouring probes when a profile is
scaled to one speed (:meth:`HardwareProfile.at_probe`): the median of six probes.  On
the 2-core EPYC VM (2026-11-27, passes 5 and 6, the three fit architectures of
``bench_cpu_costmodel``) the same point's pass-to-pass change was 6.0-6.8 % in median
by architecture with 2, against 6.3-9.0 % with the two neighbours alone (0), 6.5-8.0 %
with 5, 8.3-9.3 % with one factor per profile and 7.7-17.0 % as measured: one probe
is itself noisy (median of 5 calls of about 15 ms), the machine's drift slower."""


class SpeedProbeRecord(_Strict):
    """A fixed forward, the same for every architecture, timed beside each point
    (:class:`profiler.hardware.SpeedProbe`): how fast the machine ran at that moment."""

    description: str = Field(min_length=1)
    """What the probe times, in words."""
    final_ms: float = Field(gt=0)
    """The probe timed once more after the last point, in milliseconds (the time after
    the last point, as each point's ``probe_ms`` is the time before it)."""


class HardwareProfile(_Strict):
    """Cost surfaces of one architecture on one device, one execution path."""

    architecture: ArchitectureRecord
    """The architecture measured (random weights: latency does not depend on values)."""
    device: DeviceRecord
    """The device, its driver and runtime."""
    dtype: Literal["float32", "bfloat16", "float16"]
    """Weights' and activations' dtype."""
    path: Literal["graph", "eager", "transformers", "transformers-static",
                  "transformers-graph", "predicted"]
    """How forwards ran: graph (reference decoder as a CUDA graph), eager (the reference
    decoder op by op), transformers (transformers' own model, eager, its dynamic KV
    cache), transformers-static (the same over its StaticCache) or transformers-graph
    (that captured as a CUDA graph); ``predicted``: none ran, the times are the
    analytical cost model's (``path_description`` names its coefficients and the
    device)."""
    path_description: str
    """What that path measures, in words."""
    attention: Literal["auto", "flash", "efficient", "cudnn", "math"] = "auto"
    """The SDPA backend (auto: torch's choice per call)."""
    layout: Literal["gqa", "packed"] = "gqa"
    """How forwards with several queries per sequence (verify, shared prefix) attend to the
    cached context: SDPA with ``enable_gqa`` (gqa) or query heads packed per KV head."""
    repeats: int = Field(ge=1)
    """Timed forwards per point."""
    warmup: int = Field(ge=0)
    """Untimed forwards (or replays) before timing (before each sweep's share)."""
    sweeps: int = Field(default=1, ge=1)
    """Passes over the points the repeats were spread across (1: each point's repeats back
    to back, as every profile written before it existed): with several, each pass timed
    its share of every point's repeats, so that a slow spell of a shared machine fell on
    one share of several points, not on every repeat of one."""
    burn_in_seconds: float = Field(default=0.0, ge=0)
    """Seconds of untimed forwards of the first point right after the model was built,
    before any point is timed (0: none — profiles written before it existed): a freshly
    built decoder's first few dozen forwards ran up to 10 % slower on the CPU, which fell
    on the point timed first."""
    seed: int
    """Seed of the random weights and inputs."""
    versions: dict[str, str]
    """Package versions (torch, transformers, specmodel where installed)."""
    date: str
    """When the measurement finished (ISO 8601, UTC)."""
    setup_seconds: float = Field(ge=0)
    """Time to build the model."""
    measure_seconds: float = Field(ge=0)
    """Time to measure every point."""
    points: list[CostPointRecord] = Field(min_length=1)
    """The timed (or skipped) forwards."""
    concurrent: dict[str, float] | None = None
    """Architecture name → how many times slower this architecture's decode forwards
    (b = 1) ran while that architecture's ran at the same time in another thread of the
    same process on the same device (median over median; the async decoder's two workers);
    None if not measured."""
    probe: SpeedProbeRecord | None = None
    """The speed probe timed before every timed point (their ``probe_ms``) and after the
    last; None where none ran (every profile written before it existed)."""

    @model_validator(mode="after")
    def _probed_throughout(self) -> HardwareProfile:
        probed = [p.probe_ms is not None for p in self.timed()]
        if self.probe is None and any(probed):
            raise ValueError("points have probe_ms but the profile has no probe record")
        if self.probe is not None and not all(probed):
            raise ValueError("a profile with a probe has probe_ms on every timed point")
        return self

    def probe_times(self) -> list[float]:
        """Every time the speed probe took in this profile, in order, milliseconds (empty
        where none ran)."""
        if self.probe is None:
            return []
        return [p.probe_ms for p in self.timed() if p.probe_ms is not None] + [
            self.probe.final_ms]

    def at_probe(self, reference_ms: float, window: int | None = None) -> HardwareProfile:
        """The same profile with every timed point's times scaled to the speed at which
        the probe takes ``reference_ms``: each point's ``ms`` and ``mean_ms`` times
        ``reference_ms`` over the median of the probe's times around it — the one just
        before it and the one just after (the next point's ``probe_ms``, or
        ``final_ms``), and ``window`` more on each side (:data:`PROBE_WINDOW` by
        default; 0: the mean of the two neighbours).  A machine whose speed drifted
        between points, or between profiles, is compared at one speed;
        ``path_description`` records what was done."""
        import statistics

        if self.probe is None:
            raise ValueError(f"the profile of {self.architecture.name} ran no speed probe: "
                             "nothing to scale by")
        if not (isinstance(reference_ms, int | float) and reference_ms > 0):
            raise ValueError(f"reference_ms must be a time > 0, got {reference_ms!r}")
        w = PROBE_WINDOW if window is None else window
        if not isinstance(w, int) or isinstance(w, bool) or w < 0:
            raise ValueError(f"window must be an integer >= 0, got {window!r}")
        times = self.probe_times()
        return self.scaled(lambda j, _: reference_ms / statistics.median(
            times[max(0, j - w):j + w + 2])).model_copy(update={
            "path_description": f"{self.path_description}; times scaled "
            f"to the speed at which the probe takes {reference_ms:.3f} ms (the median of "
            f"the probe's times within {w} point(s) of each neighbour)"})

    def scaled(self, factor: Callable[[int, CostPointRecord], float]) -> HardwareProfile:
        """The same profile with the ``j``-th timed point's ``ms`` and ``mean_ms``
        multiplied by ``factor(j, point)`` (points not timed kept as they are)."""
        points = list(self.points)
        timed = [i for i, p in enumerate(points) if p.ms is not None]
        for j, i in enumerate(timed):
            p = points[i]
            assert p.ms is not None
            f = factor(j, p)
            points[i] = p.model_copy(update={
                "ms": [v * f for v in p.ms],
                "mean_ms": None if p.mean_ms is None else p.mean_ms * f})
        return self.model_copy(update={"points": points})

    def key(self) -> tuple[str, str, str, str, str, str]:
        """What makes two profiles the same measurement slot: architecture, device name,
        dtype, path, attention backend, layout."""
        return (self.architecture.name, self.device.name, self.dtype, self.path,
                self.attention, self.layout)

    def timed(self, kind: str | None = None, *, shared_prefix: bool | None = None
              ) -> list[CostPointRecord]:
        """The timed points, optionally of one kind and sharing mode."""
        return [p for p in self.points if p.ms is not None
                and (kind is None or p.kind == kind)
                and (shared_prefix is None or p.shared_prefix == shared_prefix)]

    def decode_surface(self, *, shared_prefix: bool = False,
                       statistic: Literal["median", "mean"] = "median"
                       ) -> dict[tuple[int, int], float]:
        """(b, L) → seconds of one decode forward, from the timed decode points (their
        median, or their mean where recorded)."""
        return {(p.batch, p.context): _stat(p, statistic) for p in self.timed(
            "decode", shared_prefix=shared_prefix) if p.ms is not None}

    def forward_points(self, statistic: Literal["median", "mean"] = "median"
                       ) -> dict[tuple[int, int, int], float]:
        """(b, q, L) → seconds of the timed forwards with q > 1 new tokens per sequence and
        logits at each (verify points, unshared; median, or mean where recorded)."""
        return {(p.batch, p.new_tokens, p.context): _stat(p, statistic) for p in self.timed(
            "verify", shared_prefix=False) if p.ms is not None}

    def has_means(self) -> bool:
        """Whether every timed point recorded its mean."""
        return all(p.mean_ms is not None for p in self.timed())

    def contexts(self) -> list[int]:
        """The context lengths with timed (unshared) decode points."""
        return sorted({L for _, L in self.decode_surface()})

    def batch_curve(self, context: int, *, shared_prefix: bool = False) -> list[tuple[int, float]]:
        """[(b, seconds)] of decode at one context, by batch."""
        surface = self.decode_surface(shared_prefix=shared_prefix)
        return sorted((b, t) for (b, ctx), t in surface.items() if ctx == context)

    def summary(self) -> str:
        """One line: architecture, device, path, points."""
        skipped = sum(p.skipped is not None for p in self.points)
        done = "predicted" if self.path == "predicted" else "timed"
        return (f"{self.architecture.name} on {self.device.name} ({self.dtype}, {self.path}"
                f"{'' if self.attention == 'auto' else ', ' + self.attention}"
                f"{'' if self.layout == 'gqa' else ', ' + self.layout}): "
                f"{len(self.points) - skipped} points {done}"
                f"{f', {skipped} skipped' if skipped else ''}")


def _stat(p: CostPointRecord, statistic: str) -> float:
    assert p.ms is not None
    if statistic == "mean" and p.mean_ms is not None:
        return p.mean_ms / 1e3
    return p.ms[0] / 1e3


def load_hardware_profile(path: str | Path) -> HardwareProfile:
    """Read and validate a profile file (what ``python -m profiler.hardware`` writes)."""
    from specmodel.formats.calibration import validate_file_data

    data: Any = read_json_file(path, "hardware profile")
    return validate_file_data(HardwareProfile, data, f"hardware profile {path} is invalid")
