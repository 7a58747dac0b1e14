"""Cost surfaces of a model architecture on a device, with random weights.

What an engine call costs depends on what it does: ``b`` sequences, ``q`` new tokens
each, over a cached context of ``L`` tokens, with or without a prefix shared by the
batch.  :func:`measure` times one forward of each requested :class:`Point` —
T(b, L) decode (q = 1), V(q, L) verification of q tokens, P(n) prefill (b = 1,
q = n) — for an architecture built from its ``config.json`` alone: latency does not
depend on weight values, so nothing is downloaded and any size can be measured.

Five execution paths, each named in the result (never mixed in one profile):

``graph``
    The reference decoder (:class:`ReferenceDecoder`, below) captured as one CUDA
    graph per point and replayed; each replay is timed with CUDA events.  It measures
    the GPU, as serving engines (vLLM's CUDA graphs) run it.  CUDA only.
``eager``
    The same reference decoder run op by op; the clock reads after a device
    synchronize.  On a GPU this measures kernel launches and Python as much as the GPU.
``transformers``
    Hugging Face transformers' ``AutoModelForCausalLM.from_config`` (random weights,
    SDPA attention, its dynamic KV cache), eager, synchronized.  On a GPU it is
    launch-bound; it is here to show what an eager engine costs.
``transformers-static``
    The same model over transformers' ``StaticCache`` (preallocated to the point's
    context plus its new tokens, written at fixed cache positions: the cache that
    transformers' ``generate(cache_implementation="static")`` decodes with), eager.
``transformers-graph``
    ``transformers-static`` captured as one CUDA graph per point and replayed, timed by
    CUDA events as ``graph`` is: transformers' own model on the static-cache / CUDA-graph
    path that its ``generate`` reaches by compiling the forward
    (``torch.compile(mode="reduce-overhead")``), without the compiler's kernel fusion.
    CUDA only.  Beside ``graph`` it checks the reference decoder against a real
    implementation of the same shape on the GPU.

The reference decoder is the Llama / Qwen2 / Qwen3 layer: RMSNorm, one fused QKV
projection (with Q/K/V biases where the architecture has them), rotary embedding,
grouped-query attention by ``scaled_dot_product_attention`` over the KV cache, the
output projection, RMSNorm, the gated SiLU MLP, and after the last layer the final
norm and the LM head.  Attention over the cached context and over the call's own new
tokens are two kernels whose outputs are summed (the cost of cascade attention; the
values are not a softmax merge — weights are random, only time is measured); a decode
step (q = 1) attends once over L + 1 keys.  With ``shared_prefix`` the b sequences'
queries attend to one copy of the L-token prefix in a single kernel (shared-prefix /
cascade attention), then each to its own new tokens.

Standard library plus torch (and transformers for its path), imported inside the
functions: GPU machines that lack pydantic and NumPy run this module as a script
(``python -m profiler.hardware``); :mod:`cli.profile` wraps the same :func:`measure`
into a calibration.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from profiler.environment import machine_description, package_versions
from specmodel.formats.jsonio import timestamp
from specmodel.hardware.shape import DTYPE_BYTES, Shape, load_shape

__all__ = ["DEVICES", "KINDS", "PATHS", "Point", "ReferenceDecoder", "default_points",
           "measure", "resolve_path"]

DEVICES = ("cpu", "cuda")
"""Devices a profile runs on."""
PATHS = ("graph", "eager", "transformers", "transformers-static", "transformers-graph")
"""Execution paths (see the module docstring)."""
KINDS = ("decode", "verify", "prefill")
"""What a timed forward does: one new token per sequence, q > 1 new tokens per
sequence with logits at every position, or n prompt tokens with logits at the last."""
ATTENTION = ("auto", "flash", "efficient", "cudnn", "math")
"""``scaled_dot_product_attention`` backends: auto lets torch choose per call; the others
force one (a point it cannot run is kept as skipped, with torch's reason)."""
LAYOUTS = ("gqa", "packed")
"""How a forward with several queries per sequence attends to the cached context (see
:meth:`ReferenceDecoder.bind`)."""
PATH_DESCRIPTIONS = {
    "graph": "reference decoder (RMSNorm, fused QKV, rotary, GQA SDPA, O, gated MLP, LM "
             "head) captured as one CUDA graph per point; CUDA-event timing of each replay",
    "eager": "reference decoder run op by op; perf_counter after a device synchronize",
    "transformers": "transformers AutoModelForCausalLM.from_config (random weights, sdpa, "
                    "DynamicCache), eager; perf_counter after a device synchronize",
    "transformers-static": "transformers AutoModelForCausalLM.from_config (random weights, "
                           "sdpa, StaticCache at fixed cache positions), eager; "
                           "perf_counter after a device synchronize",
    "transformers-graph": "transformers AutoModelForCausalLM.from_config (random weights, "
                          "sdpa, StaticCache at fixed cache positions) captured as one CUDA "
                          "graph per point; CUDA-event timing of each replay",
}
"""What each path measures, as written into the profile."""
TRANSFORMERS_PATHS = ("transformers", "transformers-static", "transformers-graph")
"""The paths that time transformers' own model (the others time the reference decoder)."""
GRAPH_PATHS = ("graph", "transformers-graph")
"""The paths captured as CUDA graphs (CUDA only)."""


@dataclass(frozen=True)
class Point:
    """One forward to time."""

    kind: str
    """decode, verify or prefill (:data:`KINDS`)."""
    batch: int
    """Sequences in the forward (b)."""
    new_tokens: int
    """New tokens per sequence (q; 1 for decode)."""
    context: int
    """Tokens already cached per sequence (L)."""
    shared_prefix: bool = False
    """Whether the b sequences share their L-token prefix (attention to it read once)."""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        for name in ("batch", "new_tokens"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
        if not isinstance(self.context, int) or self.context < 0:
            raise ValueError(f"context must be an integer >= 0, got {self.context!r}")
        if self.kind == "decode" and self.new_tokens != 1:
            raise ValueError(f"a decode point has new_tokens 1, got {self.new_tokens}")
        if self.kind == "prefill" and self.batch != 1:
            raise ValueError(f"a prefill point has batch 1, got {self.batch}")
        if self.shared_prefix and self.context == 0:
            raise ValueError("shared_prefix needs a context >= 1")

    @property
    def logits(self) -> str:
        """Which positions get logits: 'all' (decode, verify) or 'last' (prefill)."""
        return "last" if self.kind == "prefill" else "all"


def default_points(
    contexts: Iterable[int], batches: Iterable[int], *, verify_tokens: Iterable[int] = (),
    verify_batches: Iterable[int] = (1,), prefill_tokens: Iterable[int] = (),
    shared_batches: Iterable[int] = (),
) -> list[Point]:
    """The grid ``profile hardware`` times: decode T(b, L) for every batch and context;
    verification V(q, L) for each q at ``verify_batches``; prefill P(n) of a fresh
    prompt; and decode with a shared prefix at ``shared_batches`` (b > 1) and every
    context."""
    contexts = sorted(set(contexts))
    points = [Point("decode", b, 1, L) for L in contexts for b in sorted(set(batches))]
    points += [Point("verify", b, q, L) for L in contexts for b in sorted(set(verify_batches))
               for q in sorted(set(verify_tokens))]
    points += [Point("decode", b, 1, L, shared_prefix=True) for L in contexts if L > 0
               for b in sorted(set(shared_batches)) if b > 1]
    points += [Point("prefill", 1, n, 0) for n in sorted(set(prefill_tokens))]
    return points


# --- device -----------------------------------------------------------------------------
def _torch() -> Any:
    try:
        import torch
    except ImportError as e:  # pragma: no cover - the live extra installs torch
        raise ValueError(f"profile hardware needs torch: {e}") from e
    return torch


def check_device(device: str, dtype: str) -> None:
    """Refuse an unknown device or dtype, CUDA when torch sees none, and a dtype the
    device cannot run — one line naming the problem."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}, got {device!r}")
    if dtype not in DTYPE_BYTES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPE_BYTES)}, got {dtype!r}")
    torch = _torch()
    if device == "cuda":
        if not torch.cuda.is_available():
            why = ("this torch is built without CUDA" if torch.version.cuda is None
                   else "no GPU is visible")
            raise ValueError(f"device cuda was asked but CUDA is not available ({why}, "
                             f"torch {torch.__version__})")
        if dtype == "bfloat16" and not torch.cuda.is_bf16_supported():
            raise ValueError(f"dtype bfloat16 is not supported by "
                             f"{torch.cuda.get_device_name()}; use float16 or float32")


def check_options(device: str, dtype: str, path: str, attention: str) -> str:
    """Every option of a measurement checked before any model is built (one line naming
    the problem); returns the resolved path."""
    check_device(device, dtype)
    resolved = resolve_path(path, device)
    if attention not in ATTENTION:
        raise ValueError(f"attention must be one of {', '.join(ATTENTION)}, got {attention!r}")
    if attention != "auto" and resolved in TRANSFORMERS_PATHS:
        raise ValueError("attention backends are forced on the reference decoder only "
                         "(path graph or eager)")
    return resolved


def resolve_path(path: str, device: str) -> str:
    """``auto`` → graph on CUDA, eager on CPU; a graph path on CPU is refused."""
    if path == "auto":
        return "graph" if device == "cuda" else "eager"
    if path not in PATHS:
        raise ValueError(f"path must be auto or one of {', '.join(PATHS)}, got {path!r}")
    if path in GRAPH_PATHS and device != "cuda":
        raise ValueError(f"path {path} captures CUDA graphs and needs device cuda; use "
                         f"{'eager' if path == 'graph' else 'transformers-static'} or "
                         "transformers on the CPU")
    return path


def device_description(device: str, threads: int) -> dict[str, Any]:
    """The device, its driver and runtime, as recorded in a profile."""
    torch = _torch()
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        driver = None
        try:
            out = subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                capture_output=True, text=True, timeout=20, check=False)
            driver = out.stdout.strip().splitlines()[0] if out.stdout.strip() else None
        except (OSError, subprocess.SubprocessError):
            pass
        return {"type": "cuda", "name": props.name, "memory_bytes": int(props.total_memory),
                "compute_capability": f"{props.major}.{props.minor}",
                "multiprocessors": int(props.multi_processor_count), "driver": driver,
                "cuda_runtime": torch.version.cuda, "threads": None}
    machine = machine_description()
    return {"type": "cpu", "name": machine["cpu"], "memory_bytes":
            int(machine["memory_gib"] * 2**30) if machine["memory_gib"] else None,
            "compute_capability": None, "multiprocessors": machine["cores"], "driver": None,
            "cuda_runtime": None, "threads": threads}


# --- the reference decoder ----------------------------------------------------------------
class ReferenceDecoder:
    """A decoder of ``shape`` with random weights on ``device`` (see the module
    docstring for the layer); :meth:`bind` builds the static buffers of one point and
    returns the forward to time."""

    def __init__(self, shape: Shape, device: str, dtype: str, seed: int = 0) -> None:
        torch = _torch()
        self.torch, self.shape, self.device = torch, shape, device
        self.dtype = getattr(torch, dtype)
        gen = torch.Generator(device=device).manual_seed(seed)
        s = shape

        def weight(*size: int) -> Any:
            return torch.empty(size, device=device, dtype=self.dtype).normal_(
                0.0, 0.02, generator=gen)

        def ones(n: int) -> Any:
            return torch.ones(n, device=device, dtype=self.dtype)

        qkv = s.q_width + 2 * s.kv_width
        self.embed = weight(s.vocab_size, s.hidden_size)
        self.layers = [{
            "norm1": ones(s.hidden_size), "qkv": weight(qkv, s.hidden_size),
            "qkv_bias": weight(qkv) if s.attention_bias else None,
            "o": weight(s.hidden_size, s.q_width), "norm2": ones(s.hidden_size),
            "gate_up": weight(2 * s.intermediate_size, s.hidden_size),
            "down": weight(s.hidden_size, s.intermediate_size),
        } for _ in range(s.num_hidden_layers)]
        self.norm = ones(s.hidden_size)
        self.head = self.embed if s.tie_word_embeddings else weight(s.vocab_size, s.hidden_size)

    def buffer_bytes(self, point: Point) -> int:
        """Bytes of the point's KV cache and largest activations (an estimate for the
        memory check before allocating)."""
        s, el = self.shape, self.embed.element_size()
        per_token = s.kv_bytes_per_token("float32") // 4 * el
        ctx = point.context if point.shared_prefix else point.batch * (point.context + 1)
        cache = (ctx + point.batch * point.new_tokens) * per_token
        rows = point.batch * point.new_tokens
        act = rows * (2 * s.intermediate_size + s.vocab_size + 4 * s.hidden_size) * el * 2
        return cache + act

    def bind(self, point: Point, layout: str = "gqa") -> Callable[[], Any]:
        """Allocate the point's caches and inputs; the returned function runs one
        forward (no allocation outside what the forward itself needs).

        ``layout`` is how the q >= 2 and shared-prefix forwards attend to the cached
        context: ``gqa`` (SDPA with ``enable_gqa``, query heads as heads) or ``packed``
        (each KV head's group of query heads packed into the query length of one head,
        as decode-optimized kernels do); both compute the same values."""
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
        torch, s = self.torch, self.shape
        F = torch.nn.functional
        b, q, L = point.batch, point.new_tokens, point.context
        H, KV, hd, d = s.num_attention_heads, s.num_key_value_heads, s.head_dim, s.hidden_size
        dev, dt = self.device, self.dtype
        one_pass = q == 1 and not point.shared_prefix  # decode: one kernel over L + 1 keys
        ctx_len = L + 1 if one_pass else L
        ctx_batch = 1 if point.shared_prefix else b
        def filled(*size: int) -> Any:  # random cached keys/values (values are not timed)
            return torch.empty(size, device=dev, dtype=dt).normal_()

        caches = [(filled(ctx_batch, KV, ctx_len, hd), filled(ctx_batch, KV, ctx_len, hd))
                  for _ in range(s.num_hidden_layers)]
        own = None if one_pass else [
            (torch.zeros(b, KV, q, hd, device=dev, dtype=dt),
             torch.zeros(b, KV, q, hd, device=dev, dtype=dt))
            for _ in range(s.num_hidden_layers)]
        ids = torch.randint(0, s.vocab_size, (b, q), device=dev)
        pos = torch.arange(L, L + q, device=dev, dtype=torch.float32)
        inv = 1.0 / (10000.0 ** (torch.arange(0, hd, 2, device=dev, dtype=torch.float32) / hd))
        ang = torch.outer(pos, inv)
        cos = torch.cat([ang.cos(), ang.cos()], -1).to(dt)
        sin = torch.cat([ang.sin(), ang.sin()], -1).to(dt)
        half = hd // 2
        last = point.logits == "last"
        eps = 1e-6

        def rope(x: Any) -> Any:
            rot = torch.cat([-x[..., half:], x[..., :half]], -1)
            return x * cos + rot * sin

        def attend(qh: Any, i: int) -> Any:
            kc, vc = caches[i]
            if one_pass:
                return F.scaled_dot_product_attention(qh, kc, vc, enable_gqa=True)
            ok, ov = own[i]
            out = F.scaled_dot_product_attention(qh, ok, ov, is_causal=q > 1, enable_gqa=True)
            if L == 0:
                return out
            return out + context(qh, kc, vc)

        def context(qh: Any, kc: Any, vc: Any) -> Any:
            """Attention of every new token to the cached context (all of it visible)."""
            if layout == "packed":  # each KV head's g query heads as g·q rows of one head
                g = H // KV
                qp = qh.reshape(b, KV, g * q, hd)
                if point.shared_prefix:
                    qp = qp.permute(1, 0, 2, 3).reshape(1, KV, b * g * q, hd)
                    o = F.scaled_dot_product_attention(qp, kc, vc)
                    o = o.reshape(KV, b, g * q, hd).permute(1, 0, 2, 3)
                else:
                    o = F.scaled_dot_product_attention(qp, kc, vc)
                return o.reshape(b, H, q, hd)
            if point.shared_prefix:  # every sequence's queries against one prefix copy
                folded = qh.permute(1, 0, 2, 3).reshape(1, H, b * q, hd)
                pre = F.scaled_dot_product_attention(folded, kc, vc, enable_gqa=True)
                return pre.reshape(H, b, q, hd).permute(1, 0, 2, 3)
            return F.scaled_dot_product_attention(qh, kc, vc, enable_gqa=True)

        def forward() -> Any:
            x = F.embedding(ids, self.embed)
            for i, layer in enumerate(self.layers):
                h = F.rms_norm(x, (d,), layer["norm1"], eps)
                qkv = F.linear(h, layer["qkv"], layer["qkv_bias"])
                qh, k, v = qkv.split([s.q_width, s.kv_width, s.kv_width], dim=-1)
                qh = rope(qh.view(b, q, H, hd).transpose(1, 2))
                k = rope(k.view(b, q, KV, hd).transpose(1, 2))
                v = v.view(b, q, KV, hd).transpose(1, 2)
                if one_pass:
                    caches[i][0][:, :, L:].copy_(k)
                    caches[i][1][:, :, L:].copy_(v)
                else:
                    own[i][0].copy_(k)
                    own[i][1].copy_(v)
                a = attend(qh, i).transpose(1, 2).reshape(b, q, s.q_width)
                x = x + F.linear(a, layer["o"])
                h = F.rms_norm(x, (d,), layer["norm2"], eps)
                gate, up = F.linear(h, layer["gate_up"]).chunk(2, dim=-1)
                x = x + F.linear(F.silu(gate) * up, layer["down"])
            x = F.rms_norm(x[:, -1:] if last else x, (d,), self.norm, eps)
            return F.linear(x, self.head)

        return forward


# --- timing -------------------------------------------------------------------------------
def _sync(torch: Any, device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _time_eager(torch: Any, device: str, fn: Callable[[], Any], warmup: int,
                repeats: int) -> list[float]:
    for _ in range(warmup):
        fn()
    _sync(torch, device)
    out = []
    for _ in range(repeats):
        _sync(torch, device)
        t0 = time.perf_counter()
        fn()
        _sync(torch, device)
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def _time_graph(torch: Any, fn: Callable[[], Any], warmup: int, repeats: int) -> list[float]:
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(max(warmup, 2)):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    for _ in range(warmup):
        graph.replay()
    torch.cuda.synchronize()
    out = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end))
    del graph
    return out


def _attention_context(torch: Any, attention: str) -> Any:
    """A context forcing the SDPA backend (a no-op for auto)."""
    import contextlib

    if attention == "auto":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    names = {"flash": "FLASH_ATTENTION", "efficient": "EFFICIENT_ATTENTION",
             "cudnn": "CUDNN_ATTENTION", "math": "MATH"}
    return sdpa_kernel(getattr(SDPBackend, names[attention]))


def _bind(runner: Any, point: Point, layout: str) -> Callable[[], Any]:
    """``point``'s forward on ``runner`` (the reference decoder takes the layout)."""
    return (runner.bind(point, layout) if isinstance(runner, ReferenceDecoder)
            else runner.bind(point))


def _too_big(torch: Any, runner: Any, point: Point, device: str,
             margin: float) -> tuple[int, int] | None:
    """(bytes ``point`` needs, bytes free) where it needs more than ``margin`` of the
    device's free memory; None where it fits or either is unknown."""
    free = _free_bytes(torch, device)
    need = (ReferenceDecoder.buffer_bytes(runner, point)
            if isinstance(runner, ReferenceDecoder) else None)
    if free is not None and need is not None and need > margin * free:
        return need, free
    return None


def _time_point(torch: Any, runner: Any, point: Point, path: str, device: str,
                warmup: int, repeats: int, layout: str) -> list[float]:
    fn = _bind(runner, point, layout)
    return (_time_graph(torch, fn, warmup, repeats) if path in GRAPH_PATHS
            else _time_eager(torch, device, fn, warmup, repeats))


BURN_IN_SECONDS = 0.5
"""Untimed forwards before a profile's first timed point, in seconds: on a 2-core Intel
Xeon VM the same point timed three times in a row right after a fresh build
(bench-target, b = 1, L = 256, 1 + 12 forwards each, five builds, 2026-11-25) took
9.2–10.3, then 8.5–9.7, then 8.4–9.0 ms (median); with this burn-in, within 2 %."""


def _burn_in(torch: Any, runner: Any, points: list[Point], device: str, seconds: float,
             layout: str, margin: float) -> float:
    """Run the first point that fits in memory untimed for ``seconds`` (eagerly; at
    least one forward); the seconds spent (0 when ``seconds`` is 0 or no point fits)."""
    if seconds <= 0:
        return 0.0
    for point in points:
        if _too_big(torch, runner, point, device, margin) is not None:
            continue
        try:
            fn = _bind(runner, point, layout)
            t0 = time.perf_counter()
            while True:
                fn()
                _sync(torch, device)
                if time.perf_counter() - t0 >= seconds:
                    return time.perf_counter() - t0
        except (RuntimeError, ValueError):  # the timing loop reports it for the point
            return 0.0
    return 0.0


PROBE_FEATURES = 4096
"""In and out features of the speed probe's weight (64 MiB in float32: larger than the
last-level caches of the CPUs measured, so one row streams it from memory as a model's
decode forward streams its weights)."""
PROBE_ROWS = (1, 4)
"""Rows of the probe's two products: a decode-like product of one row, and a few."""
PROBE_REPEATS = 5
"""Timed repeats of the probe (after one untimed); its time is their median."""


class SpeedProbe:
    """A fixed forward, the same for every architecture, timed right before each point
    of a profile and once after the last: ``torch.nn.functional.linear`` of
    :data:`PROBE_ROWS` rows over a :data:`PROBE_FEATURES`-square random weight, in the
    profile's dtype on its device.  On a shared VM whose speed drifts by tens of
    percent between minutes, the probe's times beside a point say how fast the machine
    was when the point was timed, so profiles measured at different moments can be
    compared at one speed (:meth:`specmodel.formats.hardware.HardwareProfile.at_probe`)."""

    def __init__(self, torch: Any, device: str, dtype: str, seed: int = 0) -> None:
        self.torch, self.device = torch, device
        kind = getattr(torch, dtype)
        gen = torch.Generator(device=device).manual_seed(seed + 1)
        n = PROBE_FEATURES
        self.weight = torch.empty(n, n, device=device, dtype=kind).normal_(0, 0.02,
                                                                           generator=gen)
        self.inputs = [torch.empty(m, n, device=device, dtype=kind).normal_(generator=gen)
                       for m in PROBE_ROWS]

    def description(self, dtype: str) -> str:
        """What the probe times, in words (written into the profile)."""
        return (f"median of {PROBE_REPEATS} (after 1 untimed) of torch.nn.functional."
                f"linear on {' and '.join(map(str, PROBE_ROWS))} rows over a "
                f"{PROBE_FEATURES}x{PROBE_FEATURES} {dtype} weight, before each point "
                "and after the last")

    def __call__(self) -> float:
        """The probe's time now, in milliseconds."""
        linear = self.torch.nn.functional.linear

        def run() -> None:
            for x in self.inputs:
                linear(x, self.weight)

        return statistics.median(_time_eager(self.torch, self.device, run, 1, PROBE_REPEATS))


def _free_bytes(torch: Any, device: str) -> int | None:
    if device == "cuda":
        free, _ = torch.cuda.mem_get_info()
        return int(free)
    return None


def _is_oom(torch: Any, e: BaseException) -> bool:
    oom = getattr(torch.cuda, "OutOfMemoryError", ())
    return (bool(oom) and isinstance(e, oom)) or "out of memory" in str(e).lower()


class _TransformersRunner:
    """transformers' own model from the config (random weights), over its dynamic KV
    cache or, with ``static``, over a ``StaticCache`` at fixed cache positions (what a
    CUDA graph can capture)."""

    def __init__(self, config: dict[str, Any], device: str, dtype: str, seed: int,
                 static: bool = False) -> None:
        torch = _torch()
        try:
            from transformers import AutoConfig, AutoModelForCausalLM
        except ImportError as e:
            raise ValueError(f"path transformers needs the transformers package: {e}") from e
        fields = {k: v for k, v in config.items() if not k.startswith("_")}
        model_type = fields.pop("model_type", None)
        if model_type is None:
            raise ValueError("path transformers needs model_type in the config")
        cfg = AutoConfig.for_model(model_type, **fields)
        cfg._attn_implementation = "sdpa"
        torch.manual_seed(seed)
        previous = torch.get_default_dtype()
        torch.set_default_dtype(getattr(torch, dtype))
        try:
            with torch.device(device):
                self.model = AutoModelForCausalLM.from_config(cfg)
        finally:
            torch.set_default_dtype(previous)
        self.model.eval()
        self.torch, self.device, self.vocab = torch, device, cfg.vocab_size
        self.config, self.static = cfg, static

    def bind(self, point: Point) -> Callable[[], Any]:
        torch = self.torch
        if point.shared_prefix:
            raise ValueError("path transformers has no shared-prefix attention")
        if self.static:
            return self._bind_static(point)
        b, q, L = point.batch, point.new_tokens, point.context
        cache = None
        if L:
            prompt = torch.randint(0, self.vocab, (b, L), device=self.device)
            cache = self.model.model(input_ids=prompt, use_cache=True).past_key_values
        ids = torch.randint(0, self.vocab, (b, q), device=self.device)
        keep = "last" if point.logits == "last" else "all"

        def forward() -> Any:
            if cache is not None:  # every timed forward sees the same L cached tokens
                extra = cache.get_seq_length() - L
                if extra > 0:
                    cache.crop(-extra)
            kwargs: dict[str, Any] = {"input_ids": ids, "use_cache": cache is not None}
            if cache is not None:
                kwargs["past_key_values"] = cache
            if keep == "last":
                kwargs["logits_to_keep"] = 1
            return self.model(**kwargs).logits

        return forward

    def _bind_static(self, point: Point) -> Callable[[], Any]:
        """The forward over a ``StaticCache`` of L + q positions: the L cached tokens
        written once, then every forward writes its q tokens at positions L … L + q − 1
        (the same slots each time — where the cache counts what it holds, the count is
        set back to L first — so every timed forward sees the same L cached tokens and a
        CUDA graph can replay it)."""
        torch = self.torch
        try:
            from transformers import StaticCache
        except ImportError as e:  # pragma: no cover - transformers 4.38+ has it
            raise ValueError(f"path transformers-static needs transformers' StaticCache: "
                             f"{e}") from e
        b, q, L = point.batch, point.new_tokens, point.context
        cache = StaticCache(config=self.config, max_cache_len=L + q)
        if L:
            prompt = torch.randint(0, self.vocab, (b, L), device=self.device)
            self.model.model(input_ids=prompt, past_key_values=cache, use_cache=True,
                             cache_position=torch.arange(L, device=self.device))
        ids = torch.randint(0, self.vocab, (b, q), device=self.device)
        position = torch.arange(L, L + q, device=self.device)
        keep = 1 if point.logits == "last" else 0  # 0: logits at every position

        def forward() -> Any:
            for layer in getattr(cache, "layers", ()):  # transformers 5 counts the tokens
                written = getattr(layer, "cumulative_length", None)  # each layer holds:
                if isinstance(written, torch.Tensor):  # back to L, in place (a graph
                    written.fill_(L)  # replays the fill with the forward)
            return self.model(input_ids=ids, past_key_values=cache, use_cache=True,
                              cache_position=position, logits_to_keep=keep).logits

        return forward


def sweep_repeats(repeats: int, sweeps: int) -> list[int]:
    """How many of a point's ``repeats`` each of ``sweeps`` passes over the points times:
    as even shares as whole forwards allow, the larger first (``sweeps`` at most
    ``repeats``: every pass times each point at least once)."""
    if not (isinstance(sweeps, int) and 1 <= sweeps <= repeats):
        raise ValueError(f"sweeps must be an integer in [1, repeats = {repeats}], "
                         f"got {sweeps!r}")
    base, extra = divmod(repeats, sweeps)
    return [base + (s < extra) for s in range(sweeps)]


def measure(
    shape: Shape, config: dict[str, Any], points: Iterable[Point], *, device: str = "cpu",
    dtype: str = "float32", path: str = "auto", repeats: int = 10, warmup: int = 3,
    threads: int = 1, seed: int = 0, memory_margin: float = 0.9, attention: str = "auto",
    layout: str = "gqa", burn_in: float = BURN_IN_SECONDS, probe: bool = False,
    progress: Callable[[int, int, dict[str, Any]], None] | None = None,
    runner: ReferenceDecoder | None = None, sweeps: int = 1,
    point_repeats: Sequence[int] | None = None,
) -> dict[str, Any]:
    """Time one forward per point; return the profile as a JSON-ready dict (validated
    by :class:`specmodel.formats.hardware.HardwareProfile`).

    Each timed point has ``ms`` = [median, min, max] over ``repeats`` forwards after
    ``warmup``; a point that does not fit in the device's memory is kept with
    ``skipped`` saying why.  ``config`` is the parsed ``config.json`` (the
    transformers path builds its model from it).  Before any point is timed the first
    point's forward runs untimed for ``burn_in`` seconds (:data:`BURN_IN_SECONDS`): a
    freshly built decoder's first forwards are slower, and would bias whichever point
    comes first.  ``runner``: a reference decoder already built for ``shape`` on
    ``device`` in ``dtype`` whose weights the points reuse instead of fresh ones (a
    forward's time does not depend on the weights' values; on a GPU a second copy of a
    large model's weights may not fit beside the first); ``path`` must then be the
    reference decoder's.  With ``probe``, a :class:`SpeedProbe` is timed before every timed
    point (its ``probe_ms``, the median where it was timed in several sweeps) and once
    after the last (the profile's ``probe``).  ``sweeps``: the points are timed in that
    many passes over the list, each timing its share of the ``repeats`` (after
    ``warmup`` forwards of its own), so that a point's repeats are spread over the whole
    measurement instead of back to back: a slow spell of a shared machine lasting a second
    or two then falls on one share of several points, which their medians reject, not on
    every repeat of one point (:func:`sweep_repeats`).  ``point_repeats``: each point's
    own number of repeats in place of ``repeats`` (the profile's ``repeats`` is then the
    largest; each row's ``n`` says how many it took)."""
    path = check_options(device, dtype, path, attention)
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    points = list(points)
    if not points:
        raise ValueError("points must name at least one forward to time")
    for name, v, lo in (("repeats", repeats, 1), ("warmup", warmup, 0), ("threads", threads, 1),
                        ("sweeps", sweeps, 1)):
        if not isinstance(v, int) or v < lo:
            raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")
    if point_repeats is None:
        point_repeats = [repeats] * len(points)
    point_repeats = list(point_repeats)
    if len(point_repeats) != len(points) or not all(
            isinstance(r, int) and r >= 1 for r in point_repeats):
        raise ValueError(f"point_repeats must be {len(points)} integers >= 1 (one per "
                         f"point), got {point_repeats!r}")
    repeats = max(point_repeats)
    shares = [sweep_repeats(r, sweeps) for r in point_repeats]
    if not (isinstance(burn_in, int | float) and 0 <= burn_in <= 600):
        raise ValueError(f"burn_in must be seconds in [0, 600], got {burn_in!r}")
    torch = _torch()
    if device == "cpu":
        torch.set_num_threads(threads)
    if runner is not None:
        if path in TRANSFORMERS_PATHS:
            raise ValueError(f"runner (a reference decoder) cannot time the {path} path")
        if (runner.shape.to_dict() != shape.to_dict() or runner.device != device
                or runner.dtype != getattr(torch, dtype)):
            raise ValueError(f"runner must be a reference decoder of {shape.name} on "
                             f"{device} in {dtype}")
    started = time.perf_counter()
    if runner is None:
        runner = (_TransformersRunner(config, device, dtype, seed,  # type: ignore[assignment]
                                      static=path != "transformers")
                  if path in TRANSFORMERS_PATHS
                  else ReferenceDecoder(shape, device, dtype, seed))
    speed = SpeedProbe(torch, device, dtype, seed) if probe else None
    build_s = time.perf_counter() - started
    rows: list[dict[str, Any]] = [asdict(point) for point in points]
    samples: list[list[float]] = [[] for _ in points]
    probes: list[list[float]] = [[] for _ in points]
    with torch.inference_mode():
        burned = _burn_in(torch, runner, points, device, burn_in, layout, memory_margin)
        for sweep in range(sweeps):
            for i, point in enumerate(points):
                row = rows[i]
                if sweep == 0:
                    big = _too_big(torch, runner, point, device, memory_margin)
                    if big is not None:
                        row["skipped"] = (f"needs about {big[0] / 2**30:.1f} GiB, "
                                          f"{big[1] / 2**30:.1f} GiB free")
                if "skipped" not in row:
                    try:
                        if speed is not None:
                            probes[i].append(speed())
                        with _attention_context(torch, attention):
                            samples[i] += _time_point(torch, runner, point, path, device,
                                                      warmup, shares[i][sweep], layout)
                    except (RuntimeError, ValueError) as e:
                        first = str(e).strip().splitlines()[0][:160] if str(e).strip() else ""
                        if _is_oom(torch, e):
                            row["skipped"] = f"out of memory: {first}"
                        elif "no available kernel" in str(e).lower():
                            row["skipped"] = f"attention {attention} cannot run it: {first}"
                        elif path == "transformers-graph":  # its forward, not ours: a
                            # step CUDA graphs cannot capture is kept with the reason
                            row["skipped"] = (f"transformers' forward as a CUDA graph: "
                                              f"{type(e).__name__}: {first}")
                        else:
                            raise
                if device == "cuda":
                    torch.cuda.empty_cache()
                if sweep == sweeps - 1:
                    if "skipped" not in row:
                        ms = samples[i]
                        if probes[i]:
                            row["probe_ms"] = statistics.median(probes[i])
                        row["ms"] = [statistics.median(ms), min(ms), max(ms)]
                        row["n"] = len(ms)
                        row["mean_ms"] = statistics.fmean(ms)
                    if progress is not None:
                        progress(i + 1, len(points), row)
        final = None if speed is None else {"description": speed.description(dtype),
                                            "final_ms": speed()}
    versions = package_versions(("specmodel", "torch", "transformers"))
    return {
        "architecture": shape.to_dict(),
        "device": device_description(device, threads),
        "dtype": dtype,
        "path": path,
        "path_description": PATH_DESCRIPTIONS[path],
        "attention": attention,
        "layout": layout,
        "repeats": repeats,
        "warmup": warmup,
        "sweeps": sweeps,
        "burn_in_seconds": round(burned, 3),
        "seed": seed,
        "versions": versions,
        "date": timestamp(),
        "setup_seconds": round(build_s, 3),
        "measure_seconds": round(time.perf_counter() - started - build_s, 3),
        "points": rows,
        **({} if final is None else {"probe": final}),
    }


def read_config(name_or_path: str) -> tuple[Shape, dict[str, Any]]:
    """The shape and the raw ``config.json`` of an embedded architecture or a file."""
    shape = load_shape(name_or_path)
    from specmodel.hardware.shape import list_architectures

    if str(name_or_path) in list_architectures():
        from importlib import resources

        text = (resources.files("specmodel") / "presets" / "architectures"
                / f"{name_or_path}.json").read_text(encoding="utf-8")
    else:
        p = Path(name_or_path)
        text = (p / "config.json" if p.is_dir() else p).read_text(encoding="utf-8")
    return shape, json.loads(text)


def _ints(text: str, name: str) -> list[int]:
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError as e:
        raise ValueError(f"{name} must be comma-separated integers, got {text!r}") from e


def main(argv: list[str] | None = None) -> int:
    """``python -m profiler.hardware ARCH ... --out FILE``: the measurement alone, for
    machines without specmodel's other dependencies; the file is a profile that
    ``specmodel profile hardware --from FILE`` puts into a calibration."""
    ap = argparse.ArgumentParser(prog="python -m profiler.hardware", description=__doc__
                                 .split("\n\n")[0])
    ap.add_argument("architecture")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--path", default="auto")
    ap.add_argument("--contexts", default="256,1024,4096,16384")
    ap.add_argument("--batches", default="1,2,4,8,16,32,64")
    ap.add_argument("--verify-tokens", default="2,4,8,16")
    ap.add_argument("--verify-batches", default="1,8")
    ap.add_argument("--prefill", default="128,512,2048")
    ap.add_argument("--shared-batches", default="8,32")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--sweeps", type=int, default=1,
                    help="passes over the points the repeats are spread across (1 to "
                         "--repeats)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--attention", default="auto", choices=ATTENTION)
    ap.add_argument("--layout", default="gqa", choices=LAYOUTS)
    ap.add_argument("--probe", action="store_true",
                    help="time a fixed speed probe before every point and after the last")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    try:
        shape, config = read_config(a.architecture)
        pts = default_points(
            _ints(a.contexts, "--contexts"), _ints(a.batches, "--batches"),
            verify_tokens=_ints(a.verify_tokens, "--verify-tokens"),
            verify_batches=_ints(a.verify_batches, "--verify-batches"),
            prefill_tokens=_ints(a.prefill, "--prefill"),
            shared_batches=_ints(a.shared_batches, "--shared-batches"))

        def show(i: int, n: int, row: dict[str, Any]) -> None:
            what = row.get("ms", [math.nan])[0] if "ms" in row else row["skipped"]
            print(f"[{i}/{n}] {row['kind']} b={row['batch']} q={row['new_tokens']} "
                  f"L={row['context']}{' shared' if row['shared_prefix'] else ''}: {what}",
                  flush=True)

        profile = measure(shape, config, pts, device=a.device, dtype=a.dtype, path=a.path,
                          repeats=a.repeats, warmup=a.warmup, threads=a.threads, progress=show,
                          sweeps=a.sweeps,
                          attention=a.attention, layout=a.layout, probe=a.probe)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    Path(a.out).write_text(json.dumps(profile, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
