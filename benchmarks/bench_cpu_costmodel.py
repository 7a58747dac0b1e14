"""The analytical cost model on this machine's CPU: fitted to measured surfaces of two
architectures, judged on two it never saw, and written as the ``cpu-this-eager`` preset.

Data: ``results/cpu/ARCH.eager.passN.json`` — ``python -m profiler.hardware`` on this
CPU (the reference decoder op by op, float32, random weights, one thread): decode
T(b, L) for b = 1-8 and L = 256-2048, verification V(q, L) of q = 2-8 tokens for 1 and
4 sequences, prefill P(n) of 32-512 tokens and decode of 4 and 8 sequences sharing
their prefix.  ``--profile`` measures them (every architecture once per pass, the
passes one after the other; about 12 minutes a pass); without it the committed files
are fitted and judged (milliseconds).

Fit: SmolLM2-135M (Llama, head dim 64) and Qwen2.5-1.5B (head dim 128), every pass.
Held out: Qwen2.5-0.5B and Qwen3-1.7B.  Between passes the same point is measured
again, which gives the noise floor the model's error is read against.

Usage::

    python -m benchmarks.bench_cpu_costmodel --profile --passes 2   # measure, then fit
    python -m benchmarks.bench_cpu_costmodel                          # fit the files
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.bench_hardware_costmodel import (
    KINDS,
    best_extended,
    err_summary,
    error_summary,
    load_graph_profile,
    print_coefficients,
    write_preset,
)
from benchmarks.harness import RESULTS, percent, print_table, write_json
from specmodel.hardware.costmodel import CostCoefficients, fit
from specmodel.hardware.devices import get_device

CPU_DIR = RESULTS / "cpu"
DEVICE = "cpu-this"
DTYPE = "float32"
THREADS = 1
"""One thread per model, as the project's decoders run on this machine: the blocks of
an attention kernel run one after another (``multiquery_units`` = 1)."""
FIT_ARCHS = ("smollm2-135m", "qwen2.5-1.5b")
HELD_ARCHS = ("qwen2.5-0.5b", "qwen3-1.7b")
GRID = ["--contexts", "256,1024,2048", "--batches", "1,2,4,8", "--verify-tokens", "2,4,8",
        "--verify-batches", "1,4", "--prefill", "32,128,512", "--shared-batches", "4,8",
        "--repeats", "5", "--warmup", "2"]
PRESET_PATH = Path(__file__).resolve().parent.parent / "specmodel" / "presets" / \
    "hardware" / "cpu-this-eager.json"
Row = tuple[Any, Any, float]


def _smollm_folder(tmp: Path) -> str:
    """SmolLM2-135M's ``config.json`` from its pack (the architecture alone, named by
    its folder)."""
    from profiler.packs import resolve_model

    folder = tmp / "smollm2-135m"
    folder.mkdir(parents=True, exist_ok=True)
    src = resolve_model("smollm2-135m") / "config.json"
    (folder / "config.json").write_text(src.read_text(encoding="utf-8"), encoding="utf-8")
    return str(folder)


def profile(passes: int, start: int = 1) -> None:
    """Measure every architecture ``passes`` times into ``results/cpu`` (files numbered
    from ``start``)."""
    CPU_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        source = {"smollm2-135m": _smollm_folder(Path(tmp))}
        for k in range(start, start + passes):
            for arch in (*FIT_ARCHS, *HELD_ARCHS):
                out = CPU_DIR / f"{arch}.eager.pass{k}.json"
                t0 = time.perf_counter()
                cmd = [sys.executable, "-m", "profiler.hardware", source.get(arch, arch),
                       "--device", "cpu", "--dtype", DTYPE, "--path", "eager",
                       "--threads", str(THREADS), *GRID, "--out", str(out)]
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
                print(f"pass {k} {arch}: {time.perf_counter() - t0:.0f} s", flush=True)


def load(arch: str) -> dict[int, dict[str, list[Row]]]:
    """``{pass: {kind: rows}}`` of one architecture, its shape named ``arch``."""
    out = {}
    for path in sorted(CPU_DIR.glob(f"{arch}.eager.pass*.json")):
        k = int(path.name.rsplit("pass", 1)[1].removesuffix(".json"))
        out[k] = {kind: [(replace(s, name=arch), w, t) for s, w, t in rows]
                  for kind, rows in load_graph_profile(path).items()}
    if not out:
        raise SystemExit(f"no profiles of {arch} under {CPU_DIR}: run with --profile")
    return out


SYNTHETIC_SEEDS = (2, 3, 4, 5, 6, 7)
"""The synthetic-acceptance runs on a quiet machine (``results/synthetic_cpu_seedS.json``)
whose merged profiles priced their decode: a third held-out set, measured in other runs
by the same reference decoder on two much smaller shapes (8 and 2 layers, hidden 512 and
256, vocabulary 8192)."""


def synthetic_rows() -> list[Row]:
    """T(b, L) for b = 1-9 of the synthetic benchmark's 8-layer target and T(1, L) of its
    2-layer draft, at the context its decode was priced at, one row per seed."""
    from specmodel.hardware.costmodel import Workload
    from specmodel.hardware.shape import Shape

    rows: list[Row] = []
    for seed in SYNTHETIC_SEEDS:
        path = RESULTS / f"synthetic_cpu_seed{seed}.json"
        if not path.exists():
            continue
        d = json.loads(path.read_text(encoding="utf-8"))
        c, arch = d["costs"], d["architectures"]
        target, draft = Shape(**arch["target"]), Shape(**arch["draft"])
        L = int(c["context"])
        rows += [(target, Workload(int(b), 1, L), t / 1e3) for b, t in c["T_ms"].items()]
        rows.append((draft, Workload(1, 1, L), c["draft_T1_ms"] / 1e3))
    return rows


def pass_spread(data: dict[str, dict[int, dict[str, list[Row]]]]) -> dict[str, Any]:
    """The same point measured in two passes: |t2/t1 − 1| by architecture and kind."""
    out: dict[str, Any] = {}
    for arch, passes in data.items():
        if len(passes) < 2:
            continue
        first, second = passes[min(passes)], passes[max(passes)]
        for kind in KINDS:
            t1 = {(w.batch, w.q, w.context): t for _, w, t in first[kind]}
            r = [t / t1[(w.batch, w.q, w.context)] - 1 for _, w, t in second[kind]
                 if (w.batch, w.q, w.context) in t1]
            if r:
                out[f"{arch} {kind}"] = error_summary(np.array(r))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profile", action="store_true", help="measure before fitting")
    ap.add_argument("--passes", type=int, default=2, help="profiling passes (with --profile)")
    ap.add_argument("--start", type=int, default=1, help="number of the first pass's files")
    a = ap.parse_args()
    if a.passes < 1:
        ap.error(f"--passes must be >= 1, got {a.passes}")
    if a.start < 1:
        ap.error(f"--start must be >= 1, got {a.start}")
    if a.profile:
        profile(a.passes, a.start)
    device = get_device(DEVICE)
    data = {arch: load(arch) for arch in (*FIT_ARCHS, *HELD_ARCHS)}
    fit_rows = [r for arch in FIT_ARCHS for p in data[arch].values() for rows in p.values()
                for r in rows]
    models: dict[str, CostCoefficients] = {
        "5-term, decode fit": fit([r for r in fit_rows if r[1].q == 1
                                   and not r[1].shared_prefix], DTYPE, device=device),
        "extended, additive GEMMs": fit(fit_rows, DTYPE, device=device, extended=True,
                                        multiquery_units=THREADS),
        "extended, roofline GEMMs": fit(fit_rows, DTYPE, "max", device=device,
                                        extended=True, multiquery_units=THREADS),
    }
    sets: dict[str, list[Row]] = {"fit (all kinds)": fit_rows}
    for arch in HELD_ARCHS:
        for kind in KINDS:
            sets[f"{arch} {kind}"] = [r for p in data[arch].values() for r in p[kind]]
    sets["held out, decode"] = [r for arch in HELD_ARCHS for p in data[arch].values()
                                for r in p["decode"]]
    sets["held out, all kinds"] = [r for arch in HELD_ARCHS for p in data[arch].values()
                                   for rows in p.values() for r in rows]
    external = synthetic_rows()
    if external:
        sets["synthetic runs' T(b, 512), seeds 2-7"] = external
    summary: dict[str, dict[str, Any]] = {}
    table = []
    for name, c in models.items():
        summary[name] = {}
        for s, rows in sets.items():
            r = summary[name][s] = err_summary(c, rows, DTYPE)
            table.append([name, s, r["n"], percent(r["median_abs"]), percent(r["max_abs"]),
                          percent(r["mean_signed"], signed=True)])
    print_table(f"CPU eager profiles, float32, {THREADS} thread (fit: {', '.join(FIT_ARCHS)};"
                f" held out: {', '.join(HELD_ARCHS)}): |relative error|",
                ["model", "set", "rows", "median", "max", "mean (signed)"], table)
    print_coefficients(models, device, DTYPE)
    spread = pass_spread(data)
    if spread:
        print_table("Noise floor: the same point in two passes, |t(pass 2)/t(pass 1) − 1|",
                    ["arch, kind", "points", "median", "max", "mean (signed)"],
                    [[k, v["n"], percent(v["median_abs"]), percent(v["max_abs"]),
                      percent(v["mean_signed"], signed=True)] for k, v in spread.items()])
    chosen_name = best_extended(models, fit_rows, DTYPE)
    files = sorted(str(p.relative_to(RESULTS.parent.parent)) for p in CPU_DIR.glob("*.json"))
    first = json.loads(Path(RESULTS.parent.parent / files[0]).read_text(encoding="utf-8"))
    write_preset(
        PRESET_PATH, "cpu-this-eager", device, DTYPE, chosen_name, models[chosen_name],
        data={"files": files,
              "measured": f"{first['device']['name']} ({first['device']['multiprocessors']}"
                          f" cores, shared VM), torch {first['versions'].get('torch')}, "
                          f"{first['date'][:10]}; float32 random weights; reference "
                          f"decoder op by op, {THREADS} thread; median of 5 forwards",
              "fit_rows": f"{', '.join(FIT_ARCHS)}: every kind, every pass",
              "held_out": f"{', '.join(HELD_ARCHS)} (every kind)"},
        held_out_error={s: summary[chosen_name][s] for s in sets if s != "fit (all kinds)"},
        caveat="This machine is shared and noisy (see the noise floor); eager PyTorch "
               "on one thread, not a serving engine.")
    write_json("cpu_costmodel", {
        "device": DEVICE, "dtype": DTYPE, "threads": THREADS, "fit_archs": FIT_ARCHS,
        "held_archs": HELD_ARCHS, "models": {n: c.to_dict() for n, c in models.items()},
        "summary": summary, "pass_spread": spread, "preset": str(PRESET_PATH.name),
        "preset_variant": chosen_name})


if __name__ == "__main__":
    main()
