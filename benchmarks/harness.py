"""Shared benchmark harness: time a callable, print a table, write JSON with the machine.

Benchmarks compare ratios measured side by side in one run (these machines are
shared and noisy); absolute times are recorded with the machine description but
never asserted.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from specmodel.formats.jsonio import timestamp

RESULTS = Path(__file__).resolve().parent / "results"


def machine() -> dict[str, Any]:
    """What ran the benchmark: CPU, cores, memory, Python, NumPy, the date."""
    import numpy as np

    from profiler.environment import machine_description

    return {
        **machine_description(),
        "numpy": np.__version__,
        "date": timestamp(),
    }


def best_of(fn: Callable[[], Any], repeat: int = 5, number: int = 1) -> dict[str, float]:
    """Best and median wall time of ``number`` calls, over ``repeat`` rounds (seconds per call)."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return {"best_s": min(times), "median_s": statistics.median(times), "repeat": repeat}


def print_table(title: str, columns: list[str], rows: list[list[Any]]) -> None:
    """A plain fixed-width table (benchmarks must run without rich)."""
    cells = [[_fmt(v) for v in row] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    print(f"\n{title}")
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for r in cells:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)))


def percent(v: float | None, digits: int = 1, signed: bool = False) -> str:
    """``v`` as a percentage for a table ('-' for None), e.g. '+12.5%'."""
    if v is None:
        return "-"
    return f"{v:{'+' if signed else ''}.{digits}%}"


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def write_json(name: str, payload: dict[str, Any], folder: Path = RESULTS) -> Path:
    """Write ``<folder>/<name>.json`` (default ``results/``) atomically, with the machine
    description."""
    from specmodel.formats.jsonio import write_json_atomic

    path = write_json_atomic({"machine": machine(), **payload}, folder / f"{name}.json")
    print(f"\nwrote {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}")
    return path


def git_commit() -> str | None:
    """The repository's HEAD commit (None outside a git checkout): what a registration
    was made with."""
    import subprocess

    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=RESULTS.parent.parent,
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def registered_row(config: Any, got: Any) -> dict[str, Any]:
    """One configuration's registered row: the decoder model's speedup and intervals
    (``got``, a :class:`~specmodel.decodermodel.DecoderPrediction` or None), and where
    its costs are absolute its milliseconds per output token, in all and by call kind,
    and the target alone's."""
    from specmodel.prediction import decoder_time_split

    base = None if got is None else got.baseline_tokens_per_second
    return {"config": config.label, "mode": config.mode, "k1": config.k1, "k2": config.k2,
            "width": config.width,
            "predicted_decoder": None if got is None else got.speedup,
            "decoder_interval": None if got is None else list(got.interval),
            "decoder_sample_interval": (None if got is None or got.sample_interval is None
                                        else list(got.sample_interval)),
            "decoder_ms_per_token": None if got is None
            else {k: v * 1e3 for k, v in decoder_time_split(got).items()},
            "decoder_baseline_ms_per_token": None if not base else 1e3 / base}


def add_trio_arguments(ap: argparse.ArgumentParser, *, problems: int, seed: int,
                       max_step_tokens: int) -> None:
    """The options every real-model benchmark shares: the models, the verifier, the step
    delimiter, the problems and the threads (defaults: this project's measured trio)."""
    ap.add_argument("--target", default="qwen2.5-coder-0.5b", help="Target pack or folder.")
    ap.add_argument("--draft", default="smollm2-135m", help="Step draft pack or folder.")
    ap.add_argument("--verifier", default="embedding", help="exact, embedding or judge.")
    ap.add_argument("--threshold", type=float, default=0.85, help="Embedding threshold.")
    ap.add_argument("--delimiter", default="\\n", help="Step delimiter (escapes decoded).")
    ap.add_argument("--problems", type=int, default=problems, help="gsm_symbolic problems.")
    ap.add_argument("--seed", type=int, default=seed, help="Problem seed.")
    ap.add_argument("--max-step-tokens", type=int, default=max_step_tokens,
                    help="Token cap per step.")
    ap.add_argument("--threads", type=int, default=1, help="CPU threads per model.")


def printer(label: str = "") -> Callable[[int, int, str], None]:
    """A progress callback (done, total, message) that prints one line per report."""
    head = f"{label} " if label else ""
    return lambda done, total, message: print(f"  [{head}{done}/{total}] {message}", flush=True)
