"""The analytical cost model on this machine's CPU: fitted to measured surfaces of two
architectures, judged on two it never saw, and written as the CPU's ``<device>-eager``
preset (``cpu-epyc-eager``, ``cpu-xeon-eager``).

Data: ``results/cpu/ARCH.eager.passN.json`` (AMD EPYC) and ``results/cpu-xeon/`` (Intel
Xeon) — ``python -m profiler.hardware`` on that CPU (the reference decoder op by op,
float32, random weights, one thread): decode T(b, L) for b = 1-8 and L = 256-2048,
verification V(q, L) of q = 2-8 tokens for 1 and
4 sequences, prefill P(n) of 32-512 tokens and decode of 4 and 8 sequences sharing
their prefix.  ``--profile`` measures them (every architecture once per pass, the
passes one after the other; 16-26 minutes a pass on the 2-core VMs); without it the committed files
are fitted and judged (milliseconds).  ``--profile`` first measures the CPU's nominal
numbers (``device.json``: the device preset's bandwidth and matmul throughput) and its
GEMM row curve (``gemm_rows.json``: a weight product's time by rows, which the
``extended, GEMM row curve`` variant prices with), and refuses to file profiles under a
CPU other than the one it runs on; ``--row-curve`` measures the curve alone.

Fit: SmolLM2-135M (Llama, head dim 64), Qwen2.5-1.5B (head dim 128) and the small shape
``cpu-small`` (:data:`SMALL_ARCHS`), every pass the CPU's preset uses
(:attr:`CpuMachine.passes`).
Held out: Qwen2.5-0.5B and Qwen3-1.7B.  Between passes the same point is measured
again, which gives the noise floor the model's error is read against.  The profiles run
the speed probe (``--probe``): where every profile of the preset's passes has it, the
same fits on the times scaled to one speed (the probe's median over those files,
:meth:`specmodel.formats.hardware.HardwareProfile.at_probe`) are reported beside the
ones on the times as measured, with both noise floors.  The preset is fitted to the
times as measured (``--at-probe``: to the scaled ones): on the EPYC (passes 5 and 6,
2026-11-27) scaling narrowed the noise floor but widened the held-out error (docs/
hardware.md, "With a speed probe").

Usage::

    python -m benchmarks.bench_cpu_costmodel --profile --passes 2   # measure, then fit
    python -m benchmarks.bench_cpu_costmodel                          # fit the files
    python -m benchmarks.bench_cpu_costmodel --cpu cpu-epyc           # another CPU's
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
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
from benchmarks.harness import (
    RESULTS,
    best_of,
    machine,
    percent,
    print_table,
    write_json,
)
from specmodel.hardware.costmodel import CostCoefficients, fit
from specmodel.hardware.devices import get_device

DTYPE = "float32"
THREADS = 1
"""One thread per model, as the project's decoders run on this machine: the blocks of
an attention kernel run one after another (``multiquery_units`` = 1)."""
FIT_ARCHS = ("smollm2-135m", "qwen2.5-1.5b")
"""The architectures every CPU's preset is fitted on."""
HELD_ARCHS = ("qwen2.5-0.5b", "qwen3-1.7b")
"""The architectures every CPU's preset is judged on, never fitted."""
SMALL_ARCHS = {
    "cpu-small": {"model_type": "llama", "hidden_size": 384, "intermediate_size": 1024,
                  "num_hidden_layers": 4, "num_attention_heads": 6,
                  "num_key_value_heads": 2, "vocab_size": 16384,
                  "tie_word_embeddings": True},
}
"""Shallow, narrow shapes fitted beside the models on a CPU whose preset must price
small models too (4 layers of width 384, about 13 M weights): with only 24-30-layer
models of width 576-2048 in the fit, a per-layer cost fitted there is charged in
full to a 2-layer model of width 256.  None is a shape the preset is judged on."""
GRID = ["--contexts", "256,1024,2048", "--batches", "1,2,4,8", "--verify-tokens", "2,4,8",
        "--verify-batches", "1,4", "--prefill", "32,128,512", "--shared-batches", "4,8",
        "--repeats", "5", "--warmup", "2", "--probe"]
PRESETS_DIR = Path(__file__).resolve().parent.parent / "specmodel" / "presets" / "hardware"
Row = tuple[Any, Any, float]


@dataclass(frozen=True)
class CpuMachine:
    """One CPU this benchmark has measured: where its profiles go and what they fit."""

    device: str
    """The device preset (:mod:`specmodel.hardware.devices`) of this CPU."""
    results: Path
    """Folder of its profiles (``ARCH.eager.passN.json``) and ``device.json``."""
    fit_archs: tuple[str, ...]
    """The architectures its preset is fitted on (:data:`FIT_ARCHS`, and shapes of
    :data:`SMALL_ARCHS` where profiled)."""
    synthetic_runs: tuple[str, ...]
    """Synthetic-acceptance runs decoded on this CPU (``results/NAME.json``) whose
    merged profiles priced their decode: a third held-out set, measured in other runs by
    the same reference decoder on much smaller shapes."""
    passes: tuple[int, ...] | None = None
    """The profiling passes its preset is fitted on and judged with (``None``: every
    pass on file); older passes stay on file for the record."""

    @property
    def preset(self) -> str:
        """The coefficient preset fitted to its profiles."""
        return f"{self.device}-eager"


CPUS = {m.device: m for m in (
    CpuMachine("cpu-epyc", RESULTS / "cpu", (*FIT_ARCHS, "cpu-small"),
               tuple(f"synthetic_cpu_seed{s}" for s in (2, 3, 4, 5, 6, 7)), passes=(5, 6)),
    CpuMachine("cpu-xeon", RESULTS / "cpu-xeon", (*FIT_ARCHS, "cpu-small"),
               tuple(f"synthetic_cpu_continuous_seed{s}" for s in (14, 15))),
)}
"""The CPUs measured so far (the project's shared VMs have run on both)."""


def this_cpu() -> str:
    """The device preset of the CPU this process runs on (by its ``/proc/cpuinfo``
    model name); a CPU with no preset is a one-line ``SystemExit``."""
    from profiler.environment import machine_description
    from specmodel.hardware.predicted import cpu_preset_of

    name = machine_description()["cpu"]
    preset = cpu_preset_of(name)
    if preset is None:
        raise SystemExit(f"no CPU preset for {name!r}: add one to "
                         "specmodel.hardware.predicted.CPU_NAMES and CPUS here")
    return preset


def measure_device(out: Path, repeats: int = 10) -> dict[str, Any]:
    """This CPU's nominal numbers, as the device presets record them: memory bandwidth
    (best of ``repeats`` ``np.copyto`` of a 256 MiB float64 array, bytes read plus
    bytes written) and float32 matmul throughput (best of ``repeats`` 2048 x 2048
    products on every core, 2 n^3 flops); written to ``out`` with the machine."""
    from profiler.environment import package_versions

    src = np.ones(2**25)
    dst = np.empty_like(src)
    a = np.random.default_rng(0).standard_normal((2048, 2048), dtype=np.float32)
    b = a.T.copy()
    a @ b
    copy = best_of(lambda: np.copyto(dst, src), repeats)
    product = best_of(lambda: a @ b, repeats)
    moved, flops = 2 * src.nbytes, 2 * 2048**3
    result = {
        "machine": machine(), "versions": package_versions(),
        "memory_bandwidth": moved / copy["best_s"],
        "memory_bandwidth_median": moved / copy["median_s"],
        "matmul_fp32": flops / product["best_s"],
        "matmul_fp32_median": flops / product["median_s"],
        "method": f"best of {repeats} np.copyto of a 256 MiB float64 array (bytes read + "
                  f"written); best of {repeats} float32 2048x2048 @ 2048x2048, 2 n^3 flops",
    }
    _write(out, result)
    print(f"{result['machine']['cpu']}: {result['memory_bandwidth'] / 1e9:.1f} GB/s "
          f"(median {result['memory_bandwidth_median'] / 1e9:.1f}), "
          f"{result['matmul_fp32'] / 1e9:.0f} GFLOP/s float32 "
          f"(median {result['matmul_fp32_median'] / 1e9:.0f})", flush=True)
    return result


def _write(out: Path, payload: dict[str, Any]) -> None:
    """``payload`` at ``out`` (:func:`benchmarks.harness.write_json`: atomically, with
    the machine and the date)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json(out.stem, payload, out.parent)


def _check_here(cpu: CpuMachine) -> None:
    """Refuse (one-line ``SystemExit``) to measure ``cpu`` on another CPU: its files
    would be filed under the wrong one."""
    here = this_cpu()
    if here != cpu.device:
        raise SystemExit(f"this machine is {here}, not {cpu.device}: its measurements "
                         "would be filed under the wrong CPU")


def _folders(tmp: Path) -> dict[str, str]:
    """Folders holding the ``config.json`` of the architectures that are not embedded
    names (named by their folder): SmolLM2-135M's from its pack, and
    :data:`SMALL_ARCHS`."""
    from profiler.packs import resolve_model

    configs = {"smollm2-135m": (resolve_model("smollm2-135m") / "config.json").read_text(
        encoding="utf-8"), **{k: json.dumps(v) for k, v in SMALL_ARCHS.items()}}
    out = {}
    for name, text in configs.items():
        folder = tmp / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "config.json").write_text(text, encoding="utf-8")
        out[name] = str(folder)
    return out


ROW_GRID = (*range(1, 17), 20, 24, 32, 48, 64, 128, 256, 512)
"""Rows at which the GEMM row curve is measured (every count up to 16: the steps)."""
ROW_SHAPES = ((4096, 11008), (11008, 4096), (8192, 8192))
"""(in, out) features of the weight products the curve is timed on (none of them an
architecture the preset is judged on): 180-256 MB of float32 each, so that one row
streams its weights from memory as a model's forward does.  Matrices that fit in the
caches (4-16 MB) run one row from cache and give the same steps up to 16 rows but
about twice the factor at 512 (39 against 20-22 here, on the Xeon)."""


def measure_gemm_rows(out: Path, repeats: int = 9,
                      shapes: tuple[tuple[int, int], ...] = ROW_SHAPES,
                      grid: tuple[int, ...] = ROW_GRID) -> dict[str, Any]:
    """This CPU's GEMM row curve (:attr:`CostCoefficients.gemm_row_curve`): for each of
    ``shapes``, the median of ``repeats`` float32 ``torch.nn.functional.linear`` calls
    of M rows on :data:`THREADS` thread(s) over that of one row, for M in ``grid``
    (from 1); the curve is the median over the shapes.  Written to ``out``."""
    import statistics

    import torch

    from profiler.environment import package_versions

    torch.set_num_threads(THREADS)
    gen = torch.Generator().manual_seed(0)
    if not grid or grid[0] != 1:
        raise ValueError(f"grid must start at 1 row, got {grid!r}")
    ratios: dict[int, list[float]] = {m: [] for m in grid}
    with torch.inference_mode():
        for k, n in shapes:
            w = torch.randn(n, k, generator=gen)
            times = {}
            for m in grid:
                x = torch.randn(m, k, generator=gen)
                for _ in range(2):
                    torch.nn.functional.linear(x, w)
                times[m] = best_of(lambda x=x, w=w: torch.nn.functional.linear(x, w),
                                   repeats)["median_s"]
            for m in grid:
                ratios[m].append(times[m] / times[1])
    curve = [[m, 1.0 if m == 1 else round(statistics.median(r), 4)]
             for m, r in ratios.items()]
    result = {"machine": machine(), "versions": package_versions(), "threads": THREADS,
              "shapes": [list(s) for s in shapes],
              "method": f"median of {repeats} float32 torch.nn.functional.linear calls of "
                        "M rows over that of one row, per shape; the median over shapes",
              "by_shape": {str(m): [round(v, 4) for v in r] for m, r in ratios.items()},
              "gemm_row_curve": curve}
    _write(out, result)
    print("GEMM row curve: " + ", ".join(f"{m}: {f:.2f}" for m, f in curve), flush=True)
    return result


def row_curve(cpu: CpuMachine) -> tuple[tuple[int, float], ...] | None:
    """The CPU's measured GEMM row curve (``gemm_rows.json``), or None."""
    path = cpu.results / "gemm_rows.json"
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return tuple((int(m), float(f)) for m, f in data["gemm_row_curve"])


def profile(cpu: CpuMachine, passes: int, start: int = 1,
            archs: tuple[str, ...] | None = None) -> None:
    """Measure this CPU's nominal numbers and GEMM row curve, then every architecture
    ``passes`` times into ``cpu.results`` (files numbered from ``start``); with
    ``archs``, those architectures only (the device files are kept)."""
    every = (*cpu.fit_archs, *HELD_ARCHS)
    unknown = sorted(set(archs or ()) - set(every))
    if unknown:
        raise SystemExit(f"--archs must be among {', '.join(every)}, got {unknown}")
    _check_here(cpu)
    if archs is None:  # a whole profile: the device's numbers and curve first
        measure_device(cpu.results / "device.json")
        measure_gemm_rows(cpu.results / "gemm_rows.json")
    with tempfile.TemporaryDirectory() as tmp:
        source = _folders(Path(tmp))
        for k in range(start, start + passes):
            for arch in archs or every:
                out = cpu.results / f"{arch}.eager.pass{k}.json"
                t0 = time.perf_counter()
                cmd = [sys.executable, "-m", "profiler.hardware", source.get(arch, arch),
                       "--device", "cpu", "--dtype", DTYPE, "--path", "eager",
                       "--threads", str(THREADS), *GRID, "--out", str(out)]
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
                print(f"pass {k} {arch}: {time.perf_counter() - t0:.0f} s", flush=True)


def pass_files(cpu: CpuMachine, arch: str = "*") -> list[tuple[int, Path]]:
    """``(pass, path)`` of ``cpu``'s profiles of ``arch`` (every architecture with
    ``*``) in the passes its preset uses (:attr:`CpuMachine.passes`), sorted by path."""
    out = []
    for path in sorted(cpu.results.glob(f"{arch}.eager.pass*.json")):
        k = int(path.stem.rsplit("pass", 1)[1])
        if cpu.passes is None or k in cpu.passes:
            out.append((k, path))
    return out


def probe_reference(cpu: CpuMachine) -> float | None:
    """The median of every speed-probe time (:class:`profiler.hardware.SpeedProbe`) in
    ``cpu``'s profiles of the passes its preset uses: the speed their times are
    compared at; None unless every one of those profiles ran the probe."""
    from specmodel.formats.hardware import load_hardware_profile

    times: list[float] = []
    for _, path in pass_files(cpu):
        got = load_hardware_profile(path).probe_times()
        if not got:
            return None
        times += got
    return float(np.median(times)) if times else None


def load(cpu: CpuMachine, arch: str, probe_ms: float | None = None,
         window: int | None = None) -> dict[int, dict[str, list[Row]]]:
    """``{pass: {kind: rows}}`` of one architecture on ``cpu``, its shape named ``arch``;
    with ``probe_ms`` (:func:`probe_reference`), scaled to the speed at which the
    profiles' speed probe takes that long, by the probe's times within ``window`` points
    (:data:`~specmodel.formats.hardware.PROBE_WINDOW` by default; as measured without
    ``probe_ms``)."""
    out = {}
    for k, path in pass_files(cpu, arch):
        out[k] = {kind: [(replace(s, name=arch), w, t) for s, w, t in rows]
                  for kind, rows in load_graph_profile(path, probe_ms, window).items()}
    if not out:
        raise SystemExit(f"no profiles of {arch} under {cpu.results}: run with --profile")
    return out


def synthetic_rows(cpu: CpuMachine) -> list[Row]:
    """T(b, L) of each synthetic run's target for every batch it priced, and T(1, L) of
    its draft, at the context its decode was priced at."""
    from specmodel.hardware.costmodel import Workload
    from specmodel.hardware.shape import Shape

    rows: list[Row] = []
    for name in cpu.synthetic_runs:
        path = RESULTS / f"{name}.json"
        if not path.exists():
            continue
        d = json.loads(path.read_text(encoding="utf-8"))
        c, arch = d["costs"], d["architectures"]
        target, draft = Shape(**arch["target"]), Shape(**arch["draft"])
        L = int(c["context"])
        rows += [(target, Workload(int(b), 1, L), t / 1e3) for b, t in c["T_ms"].items()]
        rows.append((draft, Workload(1, 1, L), c["draft_T1_ms"] / 1e3))
    return rows


def _pass_changes(data: dict[str, dict[int, dict[str, list[Row]]]]
                  ) -> dict[tuple[str, str], list[float]]:
    """t(last pass)/t(first pass) − 1 of every point measured in both, by (architecture,
    kind)."""
    out: dict[tuple[str, str], list[float]] = {}
    for arch, passes in data.items():
        if len(passes) < 2:
            continue
        first, second = passes[min(passes)], passes[max(passes)]
        for kind in KINDS:
            t1 = {(w.batch, w.q, w.context): t for _, w, t in first[kind]}
            r = [t / t1[(w.batch, w.q, w.context)] - 1 for _, w, t in second[kind]
                 if (w.batch, w.q, w.context) in t1]
            if r:
                out[(arch, kind)] = r
    return out


def pass_spread(data: dict[str, dict[int, dict[str, list[Row]]]]) -> dict[str, Any]:
    """The same point measured in two passes: |t2/t1 − 1| by architecture and kind."""
    return {f"{arch} {kind}": error_summary(np.array(r))
            for (arch, kind), r in _pass_changes(data).items()}


def noise_by_arch(data: dict[str, dict[int, dict[str, list[Row]]]]) -> dict[str, Any]:
    """The same point measured in two passes, |t2/t1 − 1|, pooled over kinds: by
    architecture and over all (``all``)."""
    pooled: dict[str, list[float]] = {}
    for (arch, _), r in _pass_changes(data).items():
        pooled.setdefault(arch, []).extend(r)
        pooled.setdefault("all", []).extend(r)
    return {k: error_summary(np.array(v)) for k, v in pooled.items()}


def compare_windows(cpu: CpuMachine, archs: tuple[str, ...], probe_ms: float,
                    windows: list[int]) -> list[dict[str, Any]]:
    """For each probe window (:meth:`~specmodel.formats.hardware.HardwareProfile.at_probe`)
    and as measured (``window`` None): the noise floor by architecture, and the error of
    the variant the rule picks, fitted to the times so scaled."""
    out = []
    for w in [None, *windows]:
        data = {arch: load(cpu, arch, None if w is None else probe_ms, w) for arch in archs}
        models, sets, summary = evaluate(cpu, data)
        chosen = best_extended(models, sets["fit (all kinds)"], DTYPE)
        out.append({"window": w, "noise": noise_by_arch(data), "variant": chosen,
                    "summary": summary[chosen]})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profile", action="store_true", help="measure before fitting")
    ap.add_argument("--passes", type=int, default=2, help="profiling passes (with --profile)")
    ap.add_argument("--start", type=int, default=1, help="number of the first pass's files")
    ap.add_argument("--cpu", choices=sorted(CPUS), default=None,
                    help="the CPU whose profiles to measure or fit (default: this one)")
    ap.add_argument("--archs", default=None,
                    help="with --profile: only these architectures (comma-separated)")
    ap.add_argument("--at-probe", action="store_true",
                    help="fit the preset to the times scaled to the speed probe's median "
                         "speed (default: as measured)")
    ap.add_argument("--row-curve", action="store_true",
                    help="measure this CPU's GEMM row curve (gemm_rows.json), then fit")
    ap.add_argument("--probe-windows", default=None,
                    help="also compare these speed-probe windows (comma-separated integers "
                         ">= 0; at_probe's window) with the times as measured: the noise "
                         "floor by architecture and the chosen fit's errors at each")
    a = ap.parse_args()
    if a.passes < 1:
        ap.error(f"--passes must be >= 1, got {a.passes}")
    if a.start < 1:
        ap.error(f"--start must be >= 1, got {a.start}")
    windows: list[int] = []
    if a.probe_windows is not None:
        try:
            windows = [int(x) for x in a.probe_windows.split(",")]
        except ValueError:
            windows = [-1]
        if not windows or min(windows) < 0:
            ap.error(f"--probe-windows must be integers >= 0 separated by commas, "
                     f"got {a.probe_windows!r}")
    cpu = CPUS[a.cpu or this_cpu()]
    if a.profile:
        profile(cpu, a.passes, a.start,
                None if a.archs is None else tuple(x.strip() for x in a.archs.split(",")))
    elif a.row_curve:
        _check_here(cpu)
        measure_gemm_rows(cpu.results / "gemm_rows.json")
    device = get_device(cpu.device)
    probe_ms = probe_reference(cpu)
    for flag, asked in (("--at-probe", a.at_probe), ("--probe-windows", bool(windows))):
        if asked and probe_ms is None:
            ap.error(f"{flag}: not every profile of {cpu.device}'s passes ran the probe")
    ref = probe_ms if a.at_probe else None
    archs = (*cpu.fit_archs, *HELD_ARCHS)
    data = {arch: load(cpu, arch, ref) for arch in archs}
    models, sets, summary = evaluate(cpu, data)
    speed = ("as measured" if ref is None
             else f"at the speed where the probe takes {ref:.2f} ms")
    print_table(f"{cpu.device} eager profiles, float32, {THREADS} thread, times {speed} "
                f"(fit: {', '.join(cpu.fit_archs)}; held out: {', '.join(HELD_ARCHS)}): "
                "|relative error|",
                ["model", "set", "rows", "median", "max", "mean (signed)"],
                [[name, s, r["n"], percent(r["median_abs"]), percent(r["max_abs"]),
                  percent(r["mean_signed"], signed=True)]
                 for name, by_set in summary.items() for s, r in by_set.items()])
    print_coefficients(models, device, DTYPE)
    spread = pass_spread(data)
    chosen_name = best_extended(models, sets["fit (all kinds)"], DTYPE)
    other: dict[str, Any] = {}
    this, that = ("at probe", "measured") if a.at_probe else ("measured", "at probe")
    if probe_ms is not None:  # the same fits and noise floor the other way
        o_data = {arch: load(cpu, arch, None if a.at_probe else probe_ms) for arch in archs}
        o_models, o_sets, o_summary = evaluate(cpu, o_data)
        o_chosen = best_extended(o_models, o_sets["fit (all kinds)"], DTYPE)
        other = {"at_probe": not a.at_probe, "variant": o_chosen, "summary": o_summary,
                 "pass_spread": pass_spread(o_data)}
        print_table(f"{chosen_name}, fitted to the times {this} and {that} (fitted "
                    f"{that}, the rule picks {o_chosen}): |relative error|",
                    ["set", f"median {this}", f"median {that}", f"max {this}",
                     f"max {that}"],
                    [[s, percent(r["median_abs"]),
                      percent(o_summary[chosen_name][s]["median_abs"]),
                      percent(r["max_abs"]), percent(o_summary[chosen_name][s]["max_abs"])]
                     for s, r in summary[chosen_name].items()])
    if spread:
        o_spread = other.get("pass_spread", {})
        print_table("Noise floor: the same point in two passes, |t(pass 2)/t(pass 1) − 1|, "
                    f"times {speed}" + (f" (and {that})" if o_spread else ""),
                    ["arch, kind", "points", "median", "max", "mean (signed)"]
                    + ([f"median {that}", f"mean {that}"] if o_spread else []),
                    [[k, v["n"], percent(v["median_abs"]), percent(v["max_abs"]),
                      percent(v["mean_signed"], signed=True)]
                     + ([percent(o_spread[k]["median_abs"]),
                         percent(o_spread[k]["mean_signed"], signed=True)] if o_spread else [])
                     for k, v in spread.items()])
    by_window = compare_windows(cpu, archs, probe_ms, windows) if windows else []
    if by_window:
        print_table("Speed-probe windows: the noise floor (median |t(pass 2)/t(pass 1) − 1|) "
                    "by architecture, and the fit the rule picks at each scaling",
                    ["window", *archs, "all points", "variant", "fit median",
                     "held-out median", "held-out max"],
                    [["as measured" if x["window"] is None else x["window"],
                      *(percent(x["noise"][arch]["median_abs"]) if arch in x["noise"]
                        else "-" for arch in archs),
                      percent(x["noise"]["all"]["median_abs"]), x["variant"],
                      percent(x["summary"]["fit (all kinds)"]["median_abs"]),
                      percent(x["summary"]["held out, all kinds"]["median_abs"]),
                      percent(x["summary"]["held out, all kinds"]["max_abs"])]
                     for x in by_window])
    files = [str(p.relative_to(RESULTS.parent.parent)) for _, p in pass_files(cpu)]
    first = json.loads(Path(RESULTS.parent.parent / files[0]).read_text(encoding="utf-8"))
    write_preset(
        PRESETS_DIR / f"{cpu.preset}.json", cpu.preset, device, DTYPE, chosen_name,
        models[chosen_name],
        data={"files": files,
              "measured": f"{first['device']['name']} ({first['device']['multiprocessors']}"
                          f" cores, shared VM), torch {first['versions'].get('torch')}, "
                          f"{first['date'][:10]}; float32 random weights; reference "
                          f"decoder op by op, {THREADS} thread; median of 5 forwards",
              "fit_rows": f"{', '.join(cpu.fit_archs)}: every kind, every pass",
              "held_out": f"{', '.join(HELD_ARCHS)} (every kind)",
              **({} if ref is None else {"probe_ms": ref, "speed": (
                  "every point's times scaled to the speed at which the profiles' speed "
                  f"probe takes {ref:.3f} ms (the median of its times in these files), by "
                  "the median of the probe's times around the point (PROBE_WINDOW)")})},
        held_out_error={s: summary[chosen_name][s] for s in sets if s != "fit (all kinds)"},
        caveat="This machine is shared and noisy (see the noise floor); eager PyTorch "
               "on one thread, not a serving engine.")
    write_json(f"cpu_costmodel_{cpu.device}", {
        "device": cpu.device, "dtype": DTYPE, "threads": THREADS, "fit_archs": cpu.fit_archs,
        "held_archs": HELD_ARCHS, "probe_ms": probe_ms, "at_probe": a.at_probe,
        "models": {n: c.to_dict() for n, c in models.items()},
        "summary": summary, "pass_spread": spread, "preset": cpu.preset,
        "preset_variant": chosen_name, **({"other_scaling": other} if other else {}),
        **({"probe_windows": by_window} if by_window else {})})


def evaluate(cpu: CpuMachine, data: dict[str, dict[int, dict[str, list[Row]]]]
             ) -> tuple[dict[str, CostCoefficients], dict[str, list[Row]],
                        dict[str, dict[str, Any]]]:
    """Fit every variant to ``data``'s fit architectures and judge each on every set:
    (models, sets, ``{model: {set: error summary}}``)."""
    device = get_device(cpu.device)
    fit_rows = [r for arch in cpu.fit_archs for p in data[arch].values()
                for rows in p.values() for r in rows]
    models: dict[str, CostCoefficients] = {
        "5-term, decode fit": fit([r for r in fit_rows if r[1].q == 1
                                   and not r[1].shared_prefix], DTYPE, device=device),
        "extended, additive GEMMs": fit(fit_rows, DTYPE, device=device, extended=True,
                                        multiquery_units=THREADS),
        "extended, roofline GEMMs": fit(fit_rows, DTYPE, "max", device=device,
                                        extended=True, multiquery_units=THREADS),
    }
    curve = row_curve(cpu)
    if curve is not None:
        models["extended, GEMM row curve"] = fit(fit_rows, DTYPE, device=device,
                                                 extended=True, multiquery_units=THREADS,
                                                 gemm_row_curve=curve, fixed_overhead=False)
    sets: dict[str, list[Row]] = {"fit (all kinds)": fit_rows}
    for arch in HELD_ARCHS:
        for kind in KINDS:
            sets[f"{arch} {kind}"] = [r for p in data[arch].values() for r in p[kind]]
    sets["held out, decode"] = [r for arch in HELD_ARCHS for p in data[arch].values()
                                for r in p["decode"]]
    sets["held out, all kinds"] = [r for arch in HELD_ARCHS for p in data[arch].values()
                                   for rows in p.values() for r in rows]
    external = synthetic_rows(cpu)
    if external:
        sets[f"synthetic runs' T(b, L) ({len(cpu.synthetic_runs)} runs)"] = external
    summary = {name: {s: err_summary(c, rows, DTYPE) for s, rows in sets.items()}
               for name, c in models.items()}
    return models, sets, summary

if __name__ == "__main__":
    main()
