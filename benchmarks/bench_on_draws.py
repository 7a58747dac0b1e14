"""The decoder model on the committed synthetic sweeps' own draws: how much of its error
the sample each sweep met explains.

A sweep with position draws meets one fixed sample of the step-length and verdict laws,
known from its seed before anything runs (:func:`benchmarks.bench_synthetic.sweep_draws`).
For every committed summary named (default: every one drawn by position whose round
records are committed), this prices each speculative configuration twice with the same
costs and compares both with the measured mean speedup:

* ``run``: the run's own profiling passes merged (the summary's ``decoder`` column), on
  fresh draws from the laws and on the sweep's draws;
* ``registered``: for a sweep held against a registration measured here
  (``--predict-here``, its profiles kept), those profiles, both ways
  (:func:`benchmarks.bench_synthetic.priced_by_profiles`, as ``--passes-of`` reprices it);
* ``draws_in_run``: a diagnosis, not a prediction — the run's profiles on its draws with
  the step draft's slowdown beside the target replaced by the one the run itself shows
  (:func:`benchmarks.bench_synthetic.in_run_draft_slowdown`: the draft's seconds per
  step in the async rows over the sync rows', pooled over the async rows). It asks how
  much of what the draws leave is the draft's contention, which the profiling passes
  measure apart from the schedule;
* ``busy_over_price``: per configuration and role, the round's time inside that role's
  calls over the price of the forwards the model plays on the draws, each alone
  (:func:`specmodel.prediction.busy_over_price`): the prices' error where the schedule
  does not depend on timing, in async also what running beside the other model cost.

``reproduces`` says whether the draws give the decoder model exactly the round's output
tokens, judged and accepted drafts for the target alone and every sync row (whose
schedule does not depend on timing): the check that the engines drew as the table does.
A retrodiction: the method was written after these runs (2026-11-28), though nothing in
it is fitted to them — the draws are functions of each sweep's seed and prompts.

    python -m benchmarks.bench_on_draws [SUMMARY ...] [--out PATH]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def _records(summary: dict[str, Any], path: Path) -> list[Path]:
    out = []
    for r in summary.get("records") or []:
        p = Path(r)
        if not p.exists():  # written elsewhere (a GPU machine's $OUT): committed beside it
            p = path.parent / p.name
        out.append(p)
    return out


def on_draws(path: Path) -> dict[str, Any] | None:
    """One committed sweep (summary JSON) priced by its own profiles on the laws and on
    its draws, with its here-registration both ways where it has one; None when it did
    not draw by position or its round records are not committed."""
    import json

    from benchmarks.bench_synthetic import (
        held_against,
        held_registration,
        in_run_draft_slowdown,
        priced_by_profiles,
        recorded_draws,
        speculative,
    )
    from specmodel.formats.run_record import RunRecord
    from specmodel.prediction import (
        busy_over_price,
        decoder_prediction,
        decoder_time_split,
        draws_predictions,
        reproduces_on_draws,
        split_of,
    )

    summary = json.loads(path.read_text(encoding="utf-8"))
    records = _records(summary, path)
    if not records or not all(p.exists() for p in records):
        return None
    raw = records[0].read_text(encoding="utf-8")
    rec = RunRecord.model_validate_json(raw)
    reg = summary.get("registration") or {}
    sample = recorded_draws(rec, summary, prompt_words=reg.get("prompt_words", 0))
    if sample is None:
        return None
    configs = [c.config for c in rec.configs]
    measured = {r["config"]: r["measured_mean"] for r in summary["rows"] if speculative(r)}
    by_label = {c.label: c for c in configs}
    slowdowns = list(in_run_draft_slowdown(json.loads(raw)).values())
    slowdown = statistics.fmean(slowdowns) if slowdowns else None
    run: dict[str, dict[str, float | None]] = {"law": {}, "draws": {}}
    busy: dict[str, dict[str, float]] = {}
    rounds = {c.label: c for c in rec.configs}
    pricings: list[tuple[str, Any, Any]] = [("law", rec, None), ("draws", rec, sample)]
    if slowdown is not None:
        run["draws_in_run"] = {}
        pricings.append(("draws_in_run", with_draft_slowdown(rec, slowdown), sample))
    drawn = draws_predictions(rec, sample)  # one branch per position, priced once
    for label in measured:
        for key, r, s in pricings:
            if key == "draws_in_run" and by_label[label].mode != "async":
                run[key][label] = run["draws"][label]  # no draft beside the target
                continue
            got = (drawn[label] if key == "draws" and label in drawn else
                   decoder_prediction(r.calibration, by_label[label], record=r, sample=s,
                                      draws=1))
            run[key][label] = None if got is None else got.speedup
            if key == "draws" and got is not None:
                busy[label] = busy_over_price(split_of(rounds[label].problems),
                                              decoder_time_split(got))
    out: dict[str, Any] = {
        "sweep": (str(path.resolve().relative_to(RESULTS))
                  if path.resolve().is_relative_to(RESULTS) else path.name),
        "device": summary["device"],
        "machine": (summary.get("machine") or {}).get("cpu"),
        "problems": summary["problems"], "seed": rec.settings.synthetic.seed,
        "rounds": summary.get("rounds"), "measured": measured,
        "reproduces": reproduces_on_draws(rec, drawn),
        "run": {k: held_against(v, measured) for k, v in run.items()},
        "draft_slowdown": {"profiles": _draft_contention(rec), "in_run": slowdown},
        "busy_over_price": busy,
    }
    here = path.with_name(path.stem + "_here.registered.json")
    if here.exists():  # its merged profiles, priced both ways on this same record
        hardware = held_registration(here, path)[0]["hardware"]
        out["registered"] = {"file": here.name,
                             "law": priced_by_profiles(rec, hardware, measured),
                             "draws": priced_by_profiles(rec, hardware, measured, sample)}
    return out


def _draft_contention(rec: Any) -> float | None:
    """The step draft's slowdown beside the target that the run's profiles measured
    (its profile's ``concurrent`` entry for the target; None without one)."""
    arch = rec.settings.synthetic.architectures or {}
    for h in rec.calibration.hardware or []:
        if h.architecture.name == arch.get("draft") and h.concurrent:
            return h.concurrent.get(arch.get("target"))
    return None


def with_draft_slowdown(rec: Any, slowdown: float) -> Any:
    """The run record ``rec`` with its step draft's profile saying that the draft runs
    ``slowdown`` times slower beside the target (the profile's ``concurrent`` entry for
    the target's architecture); ``rec`` itself is left as it is."""
    arch = rec.settings.synthetic.architectures or {}
    hardware = [h.model_copy(update={"concurrent": {**(h.concurrent or {}),
                                                    arch["target"]: slowdown}})
                if h.architecture.name == arch.get("draft") else h
                for h in rec.calibration.hardware or []]
    cal = rec.calibration.model_copy(update={"hardware": hardware})
    return rec.model_copy(update={"calibration": cal})


def default_sweeps() -> list[Path]:
    """Every committed summary whose round records are committed: the CPU sweeps and
    the GPU runs."""
    return sorted([*RESULTS.glob("synthetic_cpu_*_seed*.json"),
                   *RESULTS.glob("gpu/*/run-*/synthetic_gpu_*.json")])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sweeps", type=Path, nargs="*",
                    help="committed sweep summaries (default: every committed one)")
    ap.add_argument("--out", type=Path, default=RESULTS / "on_draws.json")
    a = ap.parse_args(argv)
    from benchmarks.harness import write_json
    from specmodel.formats.jsonio import timestamp

    paths = a.sweeps or [p for p in default_sweeps()
                         if not p.name.endswith((".registered.json", ".run.json"))]
    rows = []
    for p in paths:
        try:
            got = on_draws(p)
        except (OSError, ValueError) as e:
            print(f"error: {p}: {e}", file=sys.stderr)
            return 2
        if got is not None:
            rows.append(got)
    if not rows:
        print("error: no sweep drawn by position with its round records", file=sys.stderr)
        return 2
    _print(rows)
    pooled = {k: [r["run"][k]["mean_abs_error"] for r in rows if k in r["run"]]
              for k in ("law", "draws", "draws_in_run")}
    regs = [r["registered"] for r in rows if "registered" in r]
    summary = {
        "benchmark": "the decoder model on the sweeps' own draws (bench_on_draws.py)",
        "date": timestamp(), "sweeps": rows,
        "mean_of_means": {
            "run, law": statistics.fmean(pooled["law"]),
            "run, draws": statistics.fmean(pooled["draws"]),
            **({} if not pooled["draws_in_run"] else {
                "run, draws, the draft's in-run slowdown":
                    statistics.fmean(pooled["draws_in_run"])}),
            **({} if not regs else {
                "registered, law": statistics.fmean(r["law"]["mean_abs_error"]
                                                    for r in regs),
                "registered, draws": statistics.fmean(r["draws"]["mean_abs_error"]
                                                      for r in regs)})},
        "closer_on_draws": {
            "run": sum(r["run"]["draws"]["mean_abs_error"] < r["run"]["law"]["mean_abs_error"]
                       for r in rows),
            **({} if not regs else {"registered": sum(
                r["draws"]["mean_abs_error"] < r["law"]["mean_abs_error"] for r in regs)})},
        "of": {"run": len(rows), "registered": len(regs),
               "draws_in_run": len(pooled["draws_in_run"])},
    }
    print("mean of the sweeps' mean |error|: " + ", ".join(
        f"{k} {v:.1%}" for k, v in summary["mean_of_means"].items()))
    out = a.out
    write_json(out.name.removesuffix(".json"), summary, out.parent)
    return 0


def _print(rows: list[dict[str, Any]]) -> None:
    def pct(v: float | None) -> str:
        return "-" if v is None else f"{v:.1%}"

    def slow(v: float | None) -> str:
        return "-" if v is None else f"{v:.2f}"

    print(f"{'sweep':<52} {'device':<6} {'n':>3} {'repr':>5} {'run law':>8} "
          f"{'run draws':>9} {'slow':>5} {'in-run':>6} {'+in-run':>8} "
          f"{'reg law':>8} {'reg draws':>9}")
    for r in rows:
        reg = r.get("registered")
        in_run = r["run"].get("draws_in_run")
        print(f"{r['sweep']:<52} {r['device']:<6} {r['problems']:>3} "
              f"{'yes' if r['reproduces'] else 'NO':>5} "
              f"{pct(r['run']['law']['mean_abs_error']):>8} "
              f"{pct(r['run']['draws']['mean_abs_error']):>9} "
              f"{slow(r['draft_slowdown']['profiles']):>5} "
              f"{slow(r['draft_slowdown']['in_run']):>6} "
              f"{pct(in_run and in_run['mean_abs_error']):>8} "
              f"{pct(reg and reg['law']['mean_abs_error']):>8} "
              f"{pct(reg and reg['draws']['mean_abs_error']):>9}")


if __name__ == "__main__":
    sys.exit(main())
