"""The decoder model priced without hardware, held against measured synthetic runs.

``bench_synthetic`` measured sync / async / hybrid speedups of the real decoder on this
CPU and held them against the decoder model priced from *measured* hardware profiles
of the run's architectures.  Here the same records are predicted again with every
measured profile replaced by the analytical cost model's prediction of the same points
(:func:`specmodel.hardware.predicted.predict_like`, preset ``cpu-epyc-eager``, which was
fitted on other architectures: SmolLM2-135M and Qwen2.5-1.5B profiles, never on the
synthetic runs' 8- and 2-layer shapes).  Nothing is re-run: the records are the
committed ones.  Three pricings of each record, side by side:

* ``measured``: the record's own calibration (merged profiling passes of the run);
* ``predicted``: every profile predicted, the two models' contention assumed 1 (what a
  what-if without hardware knows);
* ``predicted + contention``: the same with the measured contention copied in (the one
  number the cost model does not predict), to show which of the two errors is which.

Usage::

    python -m benchmarks.bench_whatif_synthetic            # seeds 2-7 (quiet machine)
    python -m benchmarks.bench_whatif_synthetic --seeds 0,1,2,3,4,5,6,7
    python -m benchmarks.bench_whatif_synthetic --figure figures/whatif_synthetic

``--figure STEM`` also writes the predictions against the measurements as a plotly
figure (``STEM.html``, PNG where a browser renders it), with every registered sweep of
``benchmarks/results/*.registered.json`` that has its run beside it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from benchmarks.harness import RESULTS, percent, print_table, write_json  # noqa: E402

VARIANTS = ("measured", "predicted", "predicted + contention")


def run_name(seed: int) -> str:
    """The result name of a committed ``bench_synthetic`` seed of the first sweeps (the
    full sweep, without ``--continuous``)."""
    return "synthetic_cpu" if seed == 0 else f"synthetic_cpu_seed{seed}"


def records(name: str) -> list[Path]:
    """The round records of one committed ``bench_synthetic`` run (its result name)."""
    stem = name
    out = sorted(RESULTS.glob(f"{stem}_round*.run.json"))
    if not out:
        raise SystemExit(f"no records {stem}_round*.run.json in {RESULTS}")
    return out


def repriced(cal: Any, variant: str, preset: str | None) -> Any:
    """``cal`` with its hardware profiles as ``variant`` prices them."""
    from specmodel.hardware.predicted import predict_like

    if variant == "measured":
        return cal
    hardware = [predict_like(p, preset=preset,
                             keep_concurrent=variant == "predicted + contention")
                for p in cal.hardware or []]
    return cal.model_copy(update={"hardware": hardware})


def sweep(name: str, preset: str | None) -> dict[str, Any]:
    """Every variant's decoder-model predictions of one run's rounds."""
    from specmodel.formats.run_record import load_run_record
    from specmodel.prediction import compare_rounds

    paths = records(name)
    recs = [load_run_record(p) for p in paths]
    cal = recs[0].calibration
    assert cal is not None
    seed = recs[0].settings.synthetic.seed if recs[0].settings.synthetic else None
    out: dict[str, Any] = {"run": name, "seed": seed,
                           "cpu": recs[0].machine.cpu if recs[0].machine else None,
                           "records": [str(p.relative_to(ROOT)) for p in paths],
                           "rows": {}}
    priced = {variant: repriced(cal, variant, preset) for variant in VARIANTS}
    for variant in VARIANTS:
        summary = compare_rounds(recs, priced[variant])
        for r in summary.rows:
            if r.k1 == 1 and r.k2 == 1:
                continue  # the baseline
            row = out["rows"].setdefault(r.config, {"measured_rounds": r.measured,
                                                    "measured_mean": r.measured_mean})
            row[variant] = {"decoder": r.predicted_decoder, "error": r.decoder_error}
    prof = {p.architecture.name: p for p in cal.hardware or []}
    pred = {p.architecture.name: p for p in priced["predicted"].hardware or []}
    t1 = {}
    for name, p in prof.items():
        meas, guess = p.decode_surface(), pred[name].decode_surface()
        t1[name] = {"measured_ms": {f"{b},{L}": v * 1e3 for (b, L), v in meas.items()},
                    "predicted_ms": {f"{b},{L}": guess[(b, L)] * 1e3 for (b, L) in meas
                                     if (b, L) in guess}}
    out["decode_surfaces"] = t1
    out["concurrent"] = {name: p.concurrent for name, p in prof.items()}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="2,3,4,5,6,7",
                    help="bench_synthetic seeds whose committed records to reprice")
    ap.add_argument("--runs", default=None,
                    help="instead of --seeds: result names of committed bench_synthetic "
                         "runs (e.g. synthetic_cpu_continuous_seed14,...)")
    ap.add_argument("--preset", default=None,
                    help="cost-model preset (default: the one measured on the records' "
                         "CPU, cpu-epyc-eager for seeds 0-7)")
    ap.add_argument("--out", default="whatif_synthetic",
                    help="result name under benchmarks/results (NAME.json)")
    ap.add_argument("--figure", default=None, metavar="STEM",
                    help="also write the figure STEM.html (and STEM.png)")
    a = ap.parse_args(argv)
    seeds = [int(s) for s in a.seeds.split(",") if s.strip()]
    names = ([n.strip() for n in a.runs.split(",") if n.strip()] if a.runs
             else [run_name(s) for s in seeds])
    sweeps = [sweep(n, a.preset) for n in names]
    table, errs = [], {v: [] for v in VARIANTS}
    for sw in sweeps:
        for cfg, row in sw["rows"].items():
            cells = [sw["run"], cfg, ", ".join(f"{m:.3f}" for m in row["measured_rounds"])]
            for v in VARIANTS:
                d = row[v]
                cells += [None if d["decoder"] is None else f"{d['decoder']:.3f}",
                          percent(d["error"], signed=True)]
                if d["error"] is not None:
                    errs[v].append(abs(d["error"]))
            table.append(cells)
    cols = ["run", "configuration", "measured (rounds)"]
    for v in VARIANTS:
        cols += [v, "err"]
    print_table("Decoder model priced by measured vs predicted profiles", cols, table)
    summary = {v: {"mean_abs_error": statistics.fmean(e) if e else None,
                   "max_abs_error": max(e) if e else None, "n": len(e)}
               for v, e in errs.items()}
    print_table("Mean |error| over the speculative configurations", ["pricing", "n", "mean",
                                                                     "max"],
                [[v, s["n"], percent(s["mean_abs_error"]), percent(s["max_abs_error"])]
                 for v, s in summary.items()])
    # the decode surfaces the predictions stand on: predicted / measured per architecture
    surf = []
    for sw in sweeps:
        for name, d in sw["decode_surfaces"].items():
            ratios = [d["predicted_ms"][k] / d["measured_ms"][k] - 1
                      for k in d["predicted_ms"]]
            surf.append([sw["run"], name, len(ratios),
                         percent(statistics.median(abs(r) for r in ratios)),
                         percent(max(ratios, key=abs), signed=True),
                         percent(statistics.fmean(ratios), signed=True)])
    print_table("Predicted against measured decode T(b, L) of the runs' profiles",
                ["run", "architecture", "points", "median |err|", "max err", "mean err"],
                surf)
    write_json(a.out, {"benchmark": "decoder model priced without hardware "
                                    "(bench_whatif_synthetic.py)",
                       "runs": names, "preset": a.preset or "the records' CPU's own",
                       "summary": summary, "sweeps": sweeps})
    if a.figure:
        for path in figure(sweeps, a.figure):
            print(f"wrote {path}")
    return 0


def registered_runs() -> list[tuple[str, list[tuple[str, float, float]]]]:
    """Every committed registered sweep whose run is committed too: (name, [(configuration,
    measured mean speedup, registered speedup)])."""
    import json

    out = []
    for reg_path in sorted(RESULTS.glob("*.registered.json")):
        run_path = reg_path.with_name(reg_path.name.replace(".registered", ""))
        if not run_path.is_file():
            continue
        run = json.loads(run_path.read_text(encoding="utf-8"))
        if "rows" not in run or not any("registered" in r for r in run["rows"]):
            continue
        out.append((run_path.stem, [(r["config"], r["measured_mean"], r["registered"])
                                    for r in run["rows"] if r.get("registered") is not None
                                    and (r["k1"] > 1 or r["k2"] > 1)]))
    return out


def _repriced(sweeps: list[dict[str, Any]]) -> str:
    """The repriced runs in words, seeds grouped by CPU (``AMD EPYC seeds 2, 3``)."""
    by_cpu: dict[str, list[str]] = {}
    for sw in sweeps:
        by_cpu.setdefault(" ".join(str(sw["cpu"]).split()[:2]), []).append(str(sw["seed"]))
    return "; ".join(f"{cpu} seed{'s' if len(seeds) > 1 else ''} {', '.join(seeds)}"
                     for cpu, seeds in by_cpu.items())


def figure(sweeps: list[dict[str, Any]], stem: str) -> list[Path]:
    """Predicted against measured speedup: the decoder model priced by the runs' own
    profiles and by predicted ones (the repriced seeds), and the registered sweeps."""
    import plotly.graph_objects as go

    from specmodel.figures import predicted_against_measured, write_figure

    fig = go.Figure()
    top, low = 0.0, float("inf")
    for v, symbol in (("measured", "circle"), ("predicted", "diamond")):
        xs, ys, text = [], [], []
        for sw in sweeps:
            for cfg, row in sw["rows"].items():
                if row[v]["decoder"] is None:
                    continue
                xs.append(row["measured_mean"])
                ys.append(row[v]["decoder"])
                text.append(f"{sw['run']}: {cfg}")
        top, low = max([top, *xs, *ys]), min([low, *xs, *ys])
        name = ("decoder model, the runs' measured profiles" if v == "measured" else
                "decoder model, predicted profiles (no hardware run)")
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="markers", name=name, text=text,
                                 marker={"symbol": symbol, "size": 9}))
    for name, rows in registered_runs():
        xs = [m for _, m, _ in rows]
        ys = [r for _, _, r in rows]
        top, low = max([top, *xs, *ys]), min([low, *xs, *ys])
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="markers", text=[c for c, _, _ in rows],
                                 name=f"registered before the run: {name}",
                                 marker={"symbol": "x", "size": 11}))
    predicted_against_measured(
        fig, [low, top],
        title="Predicted against measured speedup, CPU synthetic-acceptance runs<br><sup>"
              "bench_synthetic on 2-core CPU VMs; repriced: " + _repriced(sweeps) +
              "; registered sweeps</sup>",
        measured="measured speedup (mean of the rounds)", predicted="predicted speedup")
    return write_figure(fig, stem, plotlyjs="directory")


if __name__ == "__main__":
    raise SystemExit(main())
