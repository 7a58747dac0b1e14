"""The prediction's track record on real models: every held-out sweep, its registered
prediction against what the sweep measured, read from the committed summaries.

Each sweep of ``bench_heldout`` decoded problems its calibration had not profiled, after
the decoder model's prediction of every configuration was committed
(``<name>.registered[-TAG].json``); its report (``<name>[_TAG].json``) holds the rounds
against that registration.  :data:`SWEEPS` names, for every sweep, the report of the
registration the sweep was run to test, and the reports of the other registrations
committed before it decoded.  Nothing is re-run or re-priced: the errors, rankings and
interval coverage are the reports' own, and each report's mean and max |error| are
recomputed from its rows as a check that the two agree.

Usage::

    python -m benchmarks.bench_track_record
    python -m benchmarks.bench_track_record --figure figures/track_record

It prints the sweeps' table and the pooled statistics, writes
``benchmarks/results/track_record.json``, and with ``--figure STEM`` the registered
against the measured speedup of every configuration of every tested registration
(``STEM.html``, PNG where a browser renders it).  docs/results.md's first table is this
table, with what each miss came from.

``bench_heldout --register`` states the band every committed sweep gives now
(:func:`current_band`) around each registered point (``decoder_track_interval``), and
its report counts the rounds that fell inside (``track_band_coverage``).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from benchmarks.bench_synthetic import TRACK_LEVEL, speculative  # noqa: E402
from benchmarks.harness import RESULTS, percent, print_table, write_json  # noqa: E402

DEFAULT_DATASET = "gsm_symbolic"
"""The calibrations' own dataset; reports written before ``--dataset`` lack the field."""


@dataclass(frozen=True)
class Sweep:
    """One held-out sweep of ``bench_heldout`` and the registration it tested."""

    report: str
    """The report (summary) of the tested registration, a name under benchmarks/results."""
    registration: str
    """What the tested registration was made from, in words."""
    others: tuple[tuple[str, str], ...] = ()
    """(report, what it was made from) of the other registrations committed before the
    sweep decoded, held against the same rounds."""
    rows: str = "every configuration"
    """Which configurations the sweep decoded (some decoded a subset)."""


SWEEPS: tuple[Sweep, ...] = (
    Sweep("heldout_05b_s3", "verdicts by lengths and index"),
    Sweep("heldout_15b_s3_vs_registered", "before the whole sweep",
          (("heldout_15b_s3", "verdicts, before round 2"),)),
    Sweep("heldout_05b_s4_static", "static path, its costs",
          (("heldout_05b_s4_static_eager_costs", "eager-path costs"),)),
    Sweep("heldout_05b_s5_static", "costs timed on the run's cache",
          (("heldout_05b_s5_static_grown_costs", "grown caches"),
           ("heldout_05b_s5_static_eager_costs", "eager-path costs"))),
    Sweep("heldout_05b_s6_xeon", "costs timed on the Xeon",
          (("heldout_05b_s6_xeon_epyc_costs", "the EPYC's costs"),)),
    Sweep("heldout_05b_s7_xeon", "step lengths by answer",
          (("heldout_05b_s7_xeon_pairs", "pooled lengths"),)),
    Sweep("heldout_05b_s8_xeon_token_answers", "token rates from the whole answers",
          (("heldout_05b_s8_xeon", "tokens phase's rates"),)),
    Sweep("heldout_05b_s9_xeon", "token rates at each k2",
          (("heldout_05b_s9_xeon_token-answers", "token rates from the whole answers"),
           ("heldout_05b_s9_xeon_tokens-phase", "tokens phase's rates"),
           ("heldout_05b_s9_xeon_s7-costs", "seed 7's costs"))),
    Sweep("heldout_05b_s10_xeon", "token rates at each k2, again",
          (("heldout_05b_s10_xeon_tokens-phase", "tokens phase's rates"),)),
    Sweep("heldout_05b_s11_xeon", "one profile run, pass as measured",
          (("heldout_05b_s11_xeon_pass-clamped", "pass clamped"),
           ("heldout_05b_s11_xeon_lineage", "seed 9's costs"))),
    Sweep("heldout_05b_s12_xeon", "one profile run, pass as measured, again",
          (("heldout_05b_s12_xeon_pass-clamped", "pass clamped"),)),
    Sweep("heldout_05b_s13_xeon", "thirty calibration problems",
          (("heldout_05b_s13_xeon_ten-problems", "ten problems"),)),
    Sweep("heldout_15b_s14_xeon", "thirty calibration problems",
          (("heldout_15b_s14_xeon_ten-problems", "ten problems"),)),
    Sweep("heldout_15b_s15_epyc", "thirty problems, the EPYC's costs",
          (("heldout_15b_s15_epyc_ten-problems", "ten problems"),)),
    Sweep("heldout_15b_s16_epyc", "thirty problems, the EPYC's costs",
          (("heldout_15b_s16_epyc_ten-problems", "ten problems"),)),
    Sweep("heldout_15b_s17_xeon", "thirty problems, the Xeon's costs",
          (("heldout_15b_s17_xeon_ten-problems", "ten problems"),)),
    Sweep("heldout_15b_s18_xeon", "thirty problems, the Xeon's costs",
          (("heldout_15b_s18_xeon_ten-problems", "ten problems"),)),
    Sweep("heldout_15b_s19_epyc", "thirty problems, the EPYC's costs",
          (("heldout_15b_s19_epyc_ten-problems", "ten problems"),
           ("heldout_15b_s19_epyc_probed-registration", "costs rescaled by a probe first"))),
    Sweep("heldout_15b_s20_epyc", "thirty problems, the EPYC's costs",
          (("heldout_15b_s20_epyc_contention", "a probe's slowdowns beside each other"),
           ("heldout_15b_s20_epyc_probed-contention", "a probe's times and slowdowns")),
          rows="async configurations and the target alone"),
    Sweep("heldout_15b_s21p3_xeon", "thirty problems, the Xeon's costs"),
    Sweep("heldout_15b_s22_xeon", "thirty problems, costs timed on this VM an hour before",
          (("heldout_15b_s22_xeon_xeon-1129-costs", "the Nov-29 Xeon's costs"),)),
    Sweep("heldout_15b_s23_xeon", "passes counted in forwards timed beside them",
          (("heldout_15b_s23_xeon_grid-passes", "passes counted in the grid's T(1, L)"),),
          rows="token and async configurations and the target alone"),
    Sweep("heldout_05b_s24_xeon1203", "thirty problems, costs timed on this VM an hour before",
          (("heldout_05b_s24_xeon1203_nov29-costs", "the Nov-29 Xeon's costs"),)),
    Sweep("heldout_05b_s25_epyc1203", "thirty problems, costs timed half an hour before"),
    Sweep("heldout_05b_s26_epyc1204", "thirty problems, costs timed three hours before"),
    Sweep("heldout_05b_s27_epyc1204", "thirty problems, costs timed six hours before",
          (("heldout_05b_s27_epyc1204_probed", "costs rescaled by a probe first"),)),
    Sweep("heldout_05b_leg_s1_epyc1204", "thirty gsm_symbolic problems (another workload)",
          (("heldout_05b_leg_s1_epyc1204_probed", "costs rescaled by a probe first"),)),
    Sweep("heldout_05b_ti_s40_epyc1204", "thirty time_intervals problems",
          (("heldout_05b_ti_s40_epyc1204_spread", "the same with the token spread"),
           ("heldout_05b_ti_s40_epyc1204_transfer", "thirty gsm_symbolic problems"))),
    Sweep("heldout_05b_leg_s3_epyc1204_transfer", "thirty gsm_symbolic problems "
          "(another workload)",
          (("heldout_05b_leg_s3_epyc1204", "ten leg_counting problems (seed 2)"),)),
    Sweep("heldout_05b_ti_s43_epyc1204", "thirty time_intervals problems, with the token "
          "spread",
          (("heldout_05b_ti_s43_epyc1204_probed", "the same, costs rescaled by a probe first"),
           ("heldout_05b_ti_s43_epyc1204_transfer", "thirty gsm_symbolic problems"),
           ("heldout_05b_ti_s43_epyc1204_transfer-probed",
            "thirty gsm_symbolic problems, costs rescaled by a probe first"))),
    Sweep("heldout_05b_s28_xeon1204", "thirty problems, costs timed on the 12-03 Xeon VM",
          (("heldout_05b_s28_xeon1204_probed", "the same, costs rescaled by a probe first"),)),
)
"""Every held-out sweep whose registration is committed with its report, in the order
they ran.  Left out: the first sweep of each trio (seed 2), registered in an earlier
format or changed while its first round was read (docs/results.md).  Whether a
registration's calibration profiled any of its sweep's problems is not declared here
but checked (:func:`registration_summary`): leg_counting seed 3's ten-problem
leg_counting registration (``heldout_05b_leg_s3_epyc1204``) is listed as another
registration and shows as profiled."""


def load_report(name: str) -> dict[str, Any]:
    """A committed report of ``bench_heldout`` (``benchmarks/results/<name>.json``)."""
    path = RESULTS / f"{name}.json"
    if not path.is_file():
        raise SystemExit(f"{path.name}: no such report under {RESULTS}")
    report = json.loads(path.read_text(encoding="utf-8"))
    if "rows" not in report or "mean_abs_error" not in report:
        raise SystemExit(f"{path.name}: not a bench_heldout report (no rows or errors)")
    return report


def registered_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The report's speculative rows with a registered prediction: configuration,
    registered and measured speedups (each round's and their mean), the error and the
    registered 95 % intervals."""
    out = []
    for r in report["rows"]:
        if not speculative(r) or r.get("registered_decoder") is None:
            continue
        out.append({"config": r["config"], "registered": r["registered_decoder"],
                    "measured_mean": r["measured_mean"], "measured": r["measured"],
                    "error": r["registered_error"],
                    "interval": r.get("registered_interval"),
                    "sample_interval": r.get("registered_sample_interval")})
    return out


def decoded_dates(report: dict[str, Any]) -> tuple[str | None, str | None]:
    """The first and last problem's end time (ISO, UTC) over the report's round records
    (None where the records predate ``finished_at``)."""
    stamps = []
    for rec in report.get("records") or []:
        path = ROOT / rec
        if not path.is_file():
            continue
        run = json.loads(path.read_text(encoding="utf-8"))
        stamps += [p["finished_at"] for c in run.get("configs", [])
                   for p in c.get("problems", []) if p.get("finished_at")]
    return (min(stamps), max(stamps)) if stamps else (None, None)


def registration_of(report: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The name and content of the registration a report was held against: the sweep's
    name (its round records' stem) with ``.registered`` and the report's tag
    (``registered_from``)."""
    records = report.get("records") or []
    if not records:
        raise SystemExit("a report without round records names no registration")
    base = re.sub(r"_round\d+\.run\.json$", "", Path(records[0]).name)
    tag = report.get("registered_from")
    path = RESULTS / f"{base}.registered{'' if tag is None else '-' + tag}.json"
    if not path.is_file():
        raise SystemExit(f"{path.name}: the registration of {base} is not committed")
    return path.stem, json.loads(path.read_text(encoding="utf-8"))


def profiled_by(registration: dict[str, Any]) -> list[int]:
    """Indices of the sweep's problems that the registration's calibration profiled too
    (compared by text, :func:`benchmarks.bench_heldout.profiled_problems`)."""
    from types import SimpleNamespace

    from benchmarks.bench_heldout import profiled_problems
    from specmodel.formats.calibration import load_calibration

    sweep = SimpleNamespace(problems=registration["problems"], seed=registration["seed"],
                            dataset=registration.get("dataset", DEFAULT_DATASET))
    cal = load_calibration(ROOT / registration["calibration"])
    return [p.index for p in profiled_problems(sweep, cal)]


def registration_summary(name: str, what: str) -> dict[str, Any]:
    """One registration's outcome on its sweep, from its report, with mean and max
    |error| recomputed from the rows (refused if they disagree with the report's), and
    whether its calibration profiled any of the sweep's problems."""
    report = load_report(name)
    reg_name, reg = registration_of(report)
    profiled = profiled_by(reg)
    rows = registered_rows(report)
    if not rows:
        raise SystemExit(f"{name}.json: no registered prediction in its rows")
    errs = [abs(r["error"]) for r in rows]
    mean, top = statistics.fmean(errs), max(errs)
    stated = report["mean_abs_error"].get("registered")
    if stated is None or abs(stated - mean) > 1e-9:
        raise SystemExit(f"{name}.json: mean |error| {mean} from the rows, the report "
                         f"says {stated}")
    covered = report.get("covered", {})
    return {"report": name, "registration": what, "registration_file": reg_name,
            "calibration": reg["calibration"], "registered_at": reg["registered"],
            "held_out": not profiled, "profiled_problems": profiled,
            "mean_abs_error": mean, "max_abs_error": top,
            "spearman": report["spearman"].get("registered"),
            "recommended": report["recommended"].get("registered"),
            "recommended_vs_best": report["recommended_vs_best"].get("registered"),
            "best_measured": report["best_measured"],
            "covered": covered.get("registered"),
            "covered_run_size": covered.get("registered, a run this size"),
            "rows": rows}


def sweep_summary(sweep: Sweep) -> dict[str, Any]:
    """A sweep's setup and its registrations' outcomes; each registration says whether
    it was written before the sweep's first problem ended (None where the round records
    predate the problems' end times)."""
    report = load_report(sweep.report)
    tested = registration_summary(sweep.report, sweep.registration)
    others = [registration_summary(n, w) for n, w in sweep.others]
    if not tested["held_out"]:
        raise SystemExit(f"{sweep.report}: its calibration profiled problems "
                         f"{tested['profiled_problems']} of the sweep: not a held-out test")
    first, last = decoded_dates(report)
    for reg in (tested, *others):
        reg["before_the_first_problem"] = (
            None if first is None else
            datetime.fromisoformat(reg["registered_at"]) < datetime.fromisoformat(first))
    machine = (report.get("decoded_on") or [None])[0] or report["machine"]["cpu"]
    return {"trio": report["trio"], "dataset": report.get("dataset", DEFAULT_DATASET),
            "seed": report["seed"], "problems": report["problems"],
            "rounds": report["rounds"], "machine": machine,
            "decoded_from": first, "decoded_to": last,
            "rows_decoded": sweep.rows,
            "tested": tested,
            "others": others}


def pooled(sweeps: list[dict[str, Any]]) -> dict[str, Any]:
    """Statistics over the tested registrations: per sweep (mean |error| within 10 %,
    recommendation within 5 % of the best measured) and per configuration (|error|,
    the registered interval's coverage)."""
    tested = [s["tested"] for s in sweeps]
    means = [t["mean_abs_error"] for t in tested]
    rows = [r for t in tested for r in t["rows"]]
    errs = [abs(r["error"]) for r in rows]

    def inside(key: str) -> list[int]:
        held = [r for r in rows if r[key] is not None]
        return [sum(r[key][0] <= r["measured_mean"] <= r[key][1] for r in held), len(held)]

    shares = [t["recommended_vs_best"] for t in tested if t["recommended_vs_best"] is not None]
    return {"sweeps": len(sweeps), "configurations": len(rows),
            "mean_of_mean_abs_error": statistics.fmean(means),
            "median_of_mean_abs_error": statistics.median(means),
            "sweeps_within_10pct": sum(m <= 0.10 for m in means),
            "sweeps_max_within_20pct": sum(t["max_abs_error"] <= 0.20 for t in tested),
            "configurations_within_10pct": sum(e <= 0.10 for e in errs),
            "median_abs_error": statistics.median(errs),
            "recommended_within_5pct_of_best": sum(v >= 0.95 for v in shares),
            "recommended_the_best": sum(v >= 1.0 - 1e-12 for v in shares),
            "inside_registered_interval": inside("interval"),
            "inside_run_size_interval": inside("sample_interval")}


def round_residuals(tested: dict[str, Any]) -> list[float]:
    """``|log(measured / registered)|`` of every round of a registration's speculative
    configurations (``tested``: :func:`registration_summary`)."""
    return [abs(math.log(m / r["registered"])) for r in tested["rows"] for m in r["measured"]]


def track_band(sweeps: list[dict[str, Any]], level: float = TRACK_LEVEL) -> dict[str, Any]:
    """The track-record band checked as it would have been used, in the order the sweeps
    ran: each sweep's rounds against the conformal bound (:func:`conformal_bound`) of
    every earlier sweep's round residuals (:func:`round_residuals`), once they are enough
    for ``level``; the band every committed sweep gives now.  A registered speedup ``p``
    then claims the next round within [p·exp(−q), p·exp(q)] at ``level``, as far as that
    round is exchangeable with the past ones (same kind of machine, models, workload)."""
    from specmodel.stats import conformal_bound, conformal_rank

    history: list[float] = []
    checks = []
    for s in sweeps:
        res = round_residuals(s["tested"])
        if conformal_rank(len(history), level) <= len(history):
            q = conformal_bound(history, level)
            checks.append({"sweep": _sweep_label(s), "bound_log": q,
                           "factor": math.exp(q), "from_rounds": len(history),
                           "inside": sum(r <= q for r in res), "rounds": len(res)})
        history += res
    q_all = conformal_bound(history, level)
    return {"level": level, "checks": checks,
            "inside": sum(c["inside"] for c in checks),
            "rounds": sum(c["rounds"] for c in checks),
            "bound_log_now": q_all, "factor_now": math.exp(q_all),
            "rounds_now": len(history)}


TRACK_BAND_COVERS = (
    "every source of error at once, as it showed in the committed held-out sweeps' "
    "rounds (bench_track_record): the registered speedup times and over exp(q), q the "
    "conformal bound of |log(measured round / registered)| over them; it holds for a new "
    "round as far as that round is exchangeable with theirs (the same kind of 2-core CPU "
    "VM, trios and problem sets); checked in the order the sweeps ran, such bands held "
    "fewer rounds than they claim, because later sweeps met larger drifts")
"""What a registration's track-record band accounts for."""


def current_band(level: float = TRACK_LEVEL) -> dict[str, Any]:
    """The track-record band every committed sweep of :data:`SWEEPS` gives now, for a
    registration to state beside its point predictions: the conformal bound in log, its
    factor, the level, how many rounds and which reports it was made of, what it covers
    (a row's band is :func:`specmodel.stats.track_interval` of its point and
    ``quantile_log``)."""
    band = track_band([sweep_summary(s) for s in SWEEPS], level)
    return {"quantile_log": band["bound_log_now"], "factor": band["factor_now"],
            "level": level, "rounds": band["rounds_now"],
            "reports": [s.report for s in SWEEPS],
            "checked_in_run_order": {"inside": band["inside"], "rounds": band["rounds"]},
            "covers": TRACK_BAND_COVERS}


def band_coverage(registration: dict[str, Any], rows: list[Any]) -> dict[str, Any] | None:
    """How many measured rounds of the speculative configurations (``rows``: a report's
    :class:`~specmodel.prediction.RoundsRow`) fell inside the registration's track-record
    band (``decoder_track_interval``); None for a registration that states none."""
    bands = {r["config"]: r.get("decoder_track_interval") for r in registration["rows"]}
    by_config = {r.config: [lo <= m <= hi for m in r.measured] for r in rows
                 if (r.k1 > 1 or r.k2 > 1) and bands.get(r.config)
                 for lo, hi in [bands[r.config]]}
    if not by_config:
        return None
    return {"rounds_inside": sum(sum(v) for v in by_config.values()),
            "rounds": sum(len(v) for v in by_config.values()),
            "factor": registration["track_band"]["factor"], "by_config": by_config}


def _sweep_label(s: dict[str, Any]) -> str:
    trio = s["trio"].upper()
    data = "" if s["dataset"] == DEFAULT_DATASET else f"{s['dataset']} "
    return f"{trio} {data}seed {s['seed']}"


def table(sweeps: list[dict[str, Any]], p: dict[str, Any], band: dict[str, Any]) -> None:
    """Print the sweeps' table, their pooled statistics (``p``, :func:`pooled`) and the
    track-record band checked in run order (``band``, :func:`track_band`)."""
    rows = []
    for s in sweeps:
        t = s["tested"]
        day = (s["decoded_from"] or "")[:10] or f"after {t['registered_at'][:10]}"
        rows.append([_sweep_label(s), s["machine"].split(",")[0], day,
                     f"{s['problems']} x {s['rounds']}", t["registration"],
                     f"{percent(t['mean_abs_error'])} / {percent(t['max_abs_error'])}",
                     "-" if t["spearman"] is None else f"{t['spearman']:.2f}",
                     f"{t['recommended']} ({percent(t['recommended_vs_best'])})",
                     "; ".join(f"{o['registration']} {percent(o['mean_abs_error'])}"
                               + ("" if o["held_out"] else " (not held out)")
                               for o in s["others"]) or "-"])
    print_table("Registered before decoding, held against the sweep (mean of its rounds)",
                ["sweep", "machine", "decoded", "problems x rounds", "registration tested",
                 "mean / max |err|", "Spearman", "recommended (share of best)",
                 "other registrations, mean |err|"], rows)
    n = p["sweeps"]
    print(f"\n{n} sweeps, {p['configurations']} configurations: mean |error| per sweep "
          f"{percent(p['mean_of_mean_abs_error'])} on average (median "
          f"{percent(p['median_of_mean_abs_error'])}), within 10 % on "
          f"{p['sweeps_within_10pct']} of {n}, max within 20 % on "
          f"{p['sweeps_max_within_20pct']} of {n}; per configuration median |error| "
          f"{percent(p['median_abs_error'])}, within 10 % on "
          f"{p['configurations_within_10pct']} of {p['configurations']}; the "
          f"recommendation the best measured on {p['recommended_the_best']}, within 5 % of "
          f"it on {p['recommended_within_5pct_of_best']}; the registered 95 % interval "
          f"held the measured mean on {p['inside_registered_interval'][0]} of "
          f"{p['inside_registered_interval'][1]}, the interval of a run this size on "
          f"{p['inside_run_size_interval'][0]} of {p['inside_run_size_interval'][1]}")
    print_table(f"Track-record band, in the order the sweeps ran (claims {band['level']:.0%} "
                "of rounds)", ["sweep", "from rounds", "band (x/÷)", "rounds inside"],
                [[c["sweep"], c["from_rounds"], f"{c['factor']:.3f}",
                  f"{c['inside']} of {c['rounds']}"] for c in band["checks"]])
    print(f"\npooled: {band['inside']} of {band['rounds']} rounds inside "
          f"({band['inside'] / max(band['rounds'], 1):.0%}); from all {band['rounds_now']} "
          f"rounds now: x/÷ {band['factor_now']:.3f}")


def figure(sweeps: list[dict[str, Any]], p: dict[str, Any], stem: str) -> list[Path]:
    """The tested registrations' predicted against measured speedup, one marker per
    configuration and sweep, a trace per trio and dataset (``p``: :func:`pooled`, for
    the subtitle)."""
    import plotly.graph_objects as go

    from specmodel.figures import predicted_against_measured, write_figure

    fig = go.Figure()
    groups: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for s in sweeps:
        key = f"{s['trio'].upper()} trio, {s['dataset']}"
        groups.setdefault(key, []).extend((_sweep_label(s), r) for r in s["tested"]["rows"])
    points = []
    for key, rows in groups.items():
        xs = [r["measured_mean"] for _, r in rows]
        ys = [r["registered"] for _, r in rows]
        points += [*xs, *ys]
        fig.add_trace(go.Scatter(
            x=xs, y=ys, mode="markers", name=key,
            text=[f"{label}: {r['config']} ({r['error']:+.1%})" for label, r in rows],
            marker={"size": 8, "symbol": "circle" if "gsm" in key else "diamond"}))
    predicted_against_measured(
        fig, points,
        title="Registered before decoding against measured speedup, real models on 2-core "
              f"CPUs<br><sup>{p['sweeps']} held-out sweeps of bench_heldout, "
              f"{p['configurations']} configurations; per sweep mean |error| "
              f"{percent(p['median_of_mean_abs_error'])} in median</sup>",
        measured="measured speedup over the target alone (mean of the rounds)",
        predicted="registered prediction (decoder model)")
    return write_figure(fig, stem, plotlyjs="directory")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="track_record",
                    help="result name under benchmarks/results (NAME.json)")
    ap.add_argument("--figure", default=None, metavar="STEM",
                    help="also write the figure STEM.html (and STEM.png)")
    a = ap.parse_args(argv)
    sweeps = [sweep_summary(s) for s in SWEEPS]
    p, band = pooled(sweeps), track_band(sweeps)
    table(sweeps, p, band)
    write_json(a.out, {"benchmark": "registered predictions against held-out sweeps "
                                    "(bench_track_record.py)",
                       "pooled": p, "track_band": band, "sweeps": sweeps})
    if a.figure:
        for path in figure(sweeps, p, a.figure):
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
