"""What the committed GPU hardware profiles say, as ratios: the cost of parallelism.

Reads every ``benchmarks/results/gpu/<device>-<date>/*.graph.json`` (``specmodel profile
hardware`` / ``python -m profiler.hardware`` on a lent GPU) and prints, per device and
architecture: T(1) at each context, T(b)/T(1) for b = 8 and 64 (each sequence its own
KV cache), the same 8 with a shared prefix, V(q=4)/T(1) (verification of 4 tokens for
one sequence) and the H200/H100 time ratio where both were measured.  Also the SDPA
backend comparison (``attention/``).  Writes ``benchmarks/results/gpu_surfaces.json``.

    python -m benchmarks.bench_gpu_surfaces
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from specmodel.formats.hardware import HardwareProfile, load_hardware_profile

RESULTS = Path(__file__).resolve().parent / "results"
GPU = RESULTS / "gpu"


def _t(profile: HardwareProfile, kind: str, b: int, q: int, L: int,
       shared: bool = False) -> float | None:
    for p in profile.timed(kind, shared_prefix=shared):
        if (p.batch, p.new_tokens, p.context) == (b, q, L):
            return p.ms[0] if p.ms else None
    return None


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round(a / b, 3)


def surfaces(root: Path = GPU) -> list[dict[str, Any]]:
    """One row per (device, architecture, context) of the graph-path profiles."""
    rows = []
    for f in sorted(root.glob("*/*.graph.json")):
        prof = load_hardware_profile(f)
        for L in prof.contexts():
            t1 = _t(prof, "decode", 1, 1, L)
            rows.append({
                "device": prof.device.name, "architecture": prof.architecture.name,
                "context": L, "T1_ms": None if t1 is None else round(t1, 3),
                "T8/T1": _ratio(_t(prof, "decode", 8, 1, L), t1),
                "T64/T1": _ratio(_t(prof, "decode", 64, 1, L), t1),
                "T8shared/T1": _ratio(_t(prof, "decode", 8, 1, L, True), t1),
                "V4/T1": _ratio(_t(prof, "verify", 1, 4, L), t1),
                "file": str(f.relative_to(RESULTS)),
            })
    by = {(r["architecture"], r["context"], r["device"]): r["T1_ms"] for r in rows}
    for r in rows:
        h100 = next((v for (a, ctx, d), v in by.items() if a == r["architecture"]
                     and ctx == r["context"] and "H100" in d), None)
        r["vs_H100"] = (_ratio(r["T1_ms"], h100) if "H100" not in r["device"] else None)
    return rows


def attention_backends(root: Path = GPU) -> list[dict[str, Any]]:
    """The SDPA backend comparison: decode b = 1 and 8 and verify q = 2 per backend."""
    rows = []
    for f in sorted(root.glob("*/attention/*.json")):
        prof = load_hardware_profile(f)
        for L in (1024, 4096):
            t1 = _t(prof, "decode", 1, 1, L)
            rows.append({"device": prof.device.name, "architecture": prof.architecture.name,
                         "attention": prof.attention, "context": L,
                         "T1_ms": None if t1 is None else round(t1, 3),
                         "T8/T1": _ratio(_t(prof, "decode", 8, 1, L), t1),
                         "T8shared/T1": _ratio(_t(prof, "decode", 8, 1, L, True), t1),
                         "V2x8/T1": _ratio(_t(prof, "verify", 8, 2, L), t1)})
    return rows


def _fmt(v: Any) -> str:
    return "-" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))


def _print(rows: list[dict[str, Any]], cols: list[str]) -> None:
    widths = [max(len(c), *(len(_fmt(r.get(c))) for r in rows)) for c in cols]
    print("  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)))
    for r in rows:
        print("  ".join(_fmt(r.get(c)).ljust(w) for c, w in zip(cols, widths, strict=True)))


def main() -> None:
    rows = surfaces()
    att = attention_backends()
    _print(rows, ["device", "architecture", "context", "T1_ms", "T8/T1", "T64/T1",
                  "T8shared/T1", "V4/T1", "vs_H100"])
    print()
    _print(att, ["architecture", "attention", "context", "T1_ms", "T8/T1", "T8shared/T1",
                 "V2x8/T1"])
    out = RESULTS / "gpu_surfaces.json"
    out.write_text(json.dumps({"surfaces": rows, "attention_backends": att}, indent=1) + "\n")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
