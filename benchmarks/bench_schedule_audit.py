"""Forward audit of the decoder's schedules: where a synthetic run's time went, forward
by forward, beside where the decoder model puts it.

Runs the target alone and the chosen speculative schedules (sync, async with one
target call at a time, async with continuous target batching; ``--configs``) on the
synthetic engines (``bench_synthetic``'s architectures, problems and acceptance),
logging every forward of both models (role, rows, new tokens, context, start and end:
decodes, token verifications and prefills), and profiles the forwards before and after
the rounds as ``bench_synthetic`` does.  For each configuration it sets side by side:

* the measured time per token, and the decoder model's, at the calibration's step
  acceptance and at the acceptance the run drew (:func:`specmodel.prediction.at_run_acceptance`);
* the target's decode iterations per committed step by the rows they ran, measured and
  as the decoder model simulates them at the run's acceptance (its counters
  ``target_iterations_b<b>``);
* each kind of decode forward's measured time over its profiled price (the surface the
  model prices with), alone and beside a forward of the other model;
* per role, per committed token: the model's time inside the role's calls (its
  counters ``<role>_seconds``), the forwards the run ran priced by the same surfaces
  (``priced``), their measured time (``forwards``) and the measured time inside the
  calls (``calls``), with the forwards by kind (decode, verify, prefill);
* the share of the run's time in which a forward of either model ran (what is left,
  the device idled while the host scheduled, drew or waited).

On CUDA (``--device cuda``) every forward is a captured graph's replay that the call
only launches: the log times it by CUDA events recorded on the engine's stream just
around the replay (which wait for nothing), so a forward's time is when it ran on the
device, its wait for the other model's kernels included.  The replay times each forward
by the same events.

So an error of the decoder model splits into the acceptance the run drew, the schedule
(model against ``priced``: how many forwards of which shape), the price of a forward
(``priced`` against ``forwards``) and the time in a call outside its forwards
(``forwards`` against ``calls``).  Timing never decides a test; this is a measurement.

Usage::

    python -m benchmarks.bench_schedule_audit --problems 24 --seed 13 \\
        --out benchmarks/results/schedule_audit_seed13.json
    python -m benchmarks.bench_schedule_audit --device cuda --target qwen2.5-32b \\
        --draft deepseek-r1-distill-qwen-1.5b --problems 3 --seed 0 --k2 1 \\
        --configs "target,sync k1=3 k2=1,async k1=3 k2=1,async k1=3 k2=1 continuous"
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from specmodel.formats.jsonio import timestamp

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

ROWS = (1, 2, 3, 4)
"""Row counts of the target's decode iterations reported one by one (more are pooled
into the last)."""


Forward = tuple[str, str, int, int, int, float, float]
"""A logged forward: (role, kind, rows b, new tokens q, context L, start, end); kind is
decode (q = 1), verify (a token-speculation pass) or prefill (uncached tokens)."""
KINDS = ("decode", "verify", "prefill")


class ForwardLog:
    """Every forward of the engines it wraps (:data:`Forward`), appended by whichever
    thread ran it.

    On the CPU a forward runs while its call lasts, and the host clock times it.  On
    CUDA a call only launches it: the log then asks the engine for CUDA events recorded
    on its stream around the forward itself (``_Forwards.run(events=True)``), which wait
    for nothing, and :meth:`take` turns them into times on the host clock — when the
    forward ran on the device, waiting for the other model's kernels included."""

    def __init__(self) -> None:
        self.rows: list[Any] = []
        self.runners: dict[str, Any] = {}
        """Each role's forward, unlogged and timed alone (``run(b, q, L, graph,
        prefill=…)`` → seconds on the device), for :func:`replay`."""
        self._lock = threading.Lock()
        self._cuda: Any = None
        """On CUDA: (torch, a reference event, the host clock when it completed)."""

    def wrap(self, forwards: Any, role: str) -> None:
        """Log ``forwards.run`` (a synthetic engine's ``_Forwards``) under ``role``."""
        run = forwards.run
        cuda = getattr(forwards, "stream", None) is not None
        if cuda and self._cuda is None:
            torch = forwards.torch
            torch.cuda.synchronize()
            ref = torch.cuda.Event(enable_timing=True)
            ref.record()
            ref.synchronize()
            self._cuda = (torch, ref, time.perf_counter())

        def timed(b: int, q: int, L: int, graph: bool = True, *,
                  prefill: bool = False) -> float:
            if not cuda:
                t0 = time.perf_counter()
                run(b, q, L, graph, prefill=prefill)
                return time.perf_counter() - t0
            start, end = run(b, q, L, graph, prefill=prefill, events=True)
            end.synchronize()
            return start.elapsed_time(end) / 1e3

        self.runners[role] = timed

        def logged(b: int, q: int, L: int, graph: bool = True, *,
                   prefill: bool = False, events: bool = False) -> Any:
            kind = "prefill" if prefill else "decode" if q == 1 else "verify"
            if cuda:
                got = run(b, q, L, graph, prefill=prefill, events=True)
                with self._lock:
                    self.rows.append((role, kind, b, q, L, *got))
                return got if events else None
            t0 = time.perf_counter()
            run(b, q, L, graph, prefill=prefill)
            t1 = time.perf_counter()
            with self._lock:
                self.rows.append((role, kind, b, q, L, t0, t1))
            return None

        forwards.run = logged

    def take(self) -> list[Forward]:
        """The forwards logged since the last take (on CUDA, after waiting for them)."""
        with self._lock:
            out, self.rows = self.rows, []
        if self._cuda is None:
            return out
        torch, ref, host = self._cuda
        torch.cuda.synchronize()
        return [(*r[:5], host + ref.elapsed_time(r[5]) / 1e3,
                 host + ref.elapsed_time(r[6]) / 1e3) for r in out]


def _overlap(a: tuple[float, float], spans: list[tuple[float, float]]) -> float:
    """Seconds of span ``a`` covered by ``spans`` (sorted, not overlapping each other)."""
    s, e = a
    got = 0.0
    for s2, e2 in spans:
        if e2 <= s:
            continue
        if s2 >= e:
            break
        got += min(e, e2) - max(s, s2)
    return got


def busy_share(runs: list[dict[str, Any]]) -> float | None:
    """The share of the runs' time (their ``seconds``) in which a forward of either model
    ran (the union of the logged spans): what is left, the device idled while the host
    scheduled, drew, joined or waited."""
    wall = sum(r["seconds"] for r in runs)
    if wall <= 0:
        return None
    busy = 0.0
    for r in runs:
        end = -float("inf")
        for s, e in sorted((f[5], f[6]) for f in r["log"]):
            if e > end:
                busy += e - max(s, end)
                end = e
    return busy / wall


def _bucket(b: int) -> int:
    return min(b, ROWS[-1])


def measured_mix(runs: list[dict[str, Any]], price: Any) -> dict[str, Any]:
    """Per committed token: the target's decode iterations by rows (a decode forward, or
    with token speculation a pass's verification forward), and the iterations' measured
    time over their price (``price(role, b, q, L)`` seconds) by role and rows, alone or
    beside a forward of the other model (more than 95 % of it covered); prefills are
    not iterations."""
    tokens = sum(r["tokens"] for r in runs)
    by_rows: dict[int, int] = defaultdict(int)
    ratio: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for r in runs:
        log = r["log"]
        spans = {role: sorted((s, e) for ro, _, _, _, _, s, e in log if ro == role)
                 for role in ("target", "draft")}
        for role, kind, b, q, L, s, e in log:
            if kind == "prefill":
                continue
            other = spans["draft" if role == "target" else "target"]
            covered = _overlap((s, e), other) / max(e - s, 1e-12)
            where = "alone" if covered < 0.05 else "beside" if covered > 0.95 else "part"
            for key in (f"{role} {where}", f"{role} b={_bucket(b)}" if role == "target"
                        else None):
                if key is None:
                    continue
                acc = ratio[key]
                acc[0] += e - s
                acc[1] += price(role, b, q, L)
                acc[2] += 1
            if role == "target":
                by_rows[_bucket(b)] += 1
    return {
        "iterations_per_token": {str(b): by_rows[b] / tokens for b in ROWS if by_rows[b]},
        "price_ratio": {k: {"forwards_per_token": v[2] / tokens,
                            "measured_over_price": v[0] / v[1] if v[1] > 0 else None}
                        for k, v in sorted(ratio.items())},
    }


def role_split(runs: list[dict[str, Any]], price: Any, counters: dict[str, float]
               ) -> dict[str, dict[str, Any]]:
    """Per role, ms per committed token: ``model`` (the decoder model's time inside the
    role's calls, its counters ``<role>_seconds``), ``priced`` (the forwards the run ran
    at ``price(role, b, q, L)``), ``forwards`` (their measured time), ``calls`` (the
    measured time inside the role's calls), and ``by_kind``: decode, verify and prefill
    forwards per token with their priced and measured ms per token."""
    tokens = sum(r["tokens"] for r in runs)
    out: dict[str, dict[str, Any]] = {}
    for role in ("target", "draft"):
        kinds = {k: [0, 0.0, 0.0] for k in KINDS}
        for r in runs:
            for ro, kind, b, q, L, s, e in r["log"]:
                if ro == role:
                    acc = kinds[kind]
                    acc[0] += 1
                    acc[1] += price(role, b, q, L)
                    acc[2] += e - s
        if not any(v[0] for v in kinds.values()):
            continue
        per = 1e3 / tokens
        model = counters.get(f"{role}_seconds")
        out[role] = {
            "model": None if model is None else 1e3 * model / counters["output_tokens"],
            "priced": per * sum(v[1] for v in kinds.values()),
            "forwards": per * sum(v[2] for v in kinds.values()),
            "calls": per * sum(r[f"{role}_seconds"] for r in runs),
            "by_kind": {k: {"forwards_per_token": v[0] / tokens, "priced": per * v[1],
                            "forwards": per * v[2]} for k, v in kinds.items() if v[0]},
        }
    return out


REPLAYS = ("in_order", "grouped")
"""How :func:`replay` runs a logged run's forwards again: in the order they ran, or
grouped by shape (each shape's forwards back to back, as a profile times them)."""


def replay(log: list[Forward], runners: dict[str, Any], how: str) -> dict[str, float]:
    """Run the forwards of ``log`` again on the same engines, one role at a time in this
    thread, back to back (no other model beside them, no scheduler between them):
    ``how`` is ``in_order`` or ``grouped`` (:data:`REPLAYS`).  Seconds by role."""
    from profiler.engines.synthetic import prefill_graph

    if how not in REPLAYS:
        raise ValueError(f"how must be one of {', '.join(REPLAYS)}, got {how!r}")
    out: dict[str, float] = {}
    for role, run in runners.items():
        fwds = [(kind, b, q, L) for ro, kind, b, q, L, _, _ in log if ro == role]
        if how == "grouped":
            fwds.sort()
        out[role] = sum(run(b, q, L, kind != "prefill" or prefill_graph(b, q),
                            prefill=kind == "prefill") for kind, b, q, L in fwds)
    return out


def replay_split(runs: list[dict[str, Any]], price: Any) -> dict[str, dict[str, float]]:
    """Per role, ms per committed token: the run's forwards as measured in the run
    (``in_run``), replayed (``in_order``, ``grouped``: the runs' ``replay`` entries) and
    at their profiled price (``priced``)."""
    tokens = sum(r["tokens"] for r in runs)
    out: dict[str, dict[str, float]] = {}
    for role in ("target", "draft"):
        fwds = [f for r in runs for f in r["log"] if f[0] == role]
        if not fwds:
            continue
        per = 1e3 / tokens
        out[role] = {
            "in_run": per * sum(e - s for *_, s, e in fwds),
            **{how: per * sum(r["replay"][how][role] for r in runs) for how in REPLAYS},
            "priced": per * sum(price(role, b, q, L) for _, _, b, q, L, _, _ in fwds),
        }
    return out


def model_mix(counters: dict[str, float]) -> dict[str, float]:
    """The decoder model's target decode iterations per committed token by rows."""
    out: dict[int, float] = defaultdict(float)
    for k, v in counters.items():
        if k.startswith("target_iterations_b"):
            out[_bucket(int(k.rsplit("b", 1)[1]))] += v / counters["output_tokens"]
    return {str(b): out[b] for b in ROWS if out[b]}


def main(argv: list[str] | None = None) -> int:
    from benchmarks.bench_synthetic import add_device_arguments, profile_sweeps_error

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_device_arguments(ap)  # on CUDA the log times each forward by CUDA events
    ap.add_argument("--target", default="bench-target")
    ap.add_argument("--draft", default="bench-draft")
    ap.add_argument("--acceptance", default="lr-paper-gsm8k-deepseek")
    ap.add_argument("--k1", type=int, default=3)
    ap.add_argument("--k2", type=int, default=3,
                    help="tokens per pass of the hybrids' token speculation (1: no hybrid)")
    ap.add_argument("--problems", type=int, default=24)
    ap.add_argument("--max-steps", type=int, default=12)
    ap.add_argument("--max-step-tokens", type=int, default=48)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--draws", default="position", choices=["position", "prefix"],
                    help="what keys a synthetic step's draws (bench_synthetic --draws; "
                         "prefix reproduces the audits before 2026-11-25)")
    ap.add_argument("--profile-repeats", type=int, default=3)
    ap.add_argument("--profile-after", action=argparse.BooleanOptionalAction, default=True,
                    help="profile the forwards again after the last round too, and price "
                         "with both passes merged (--no-profile-after: the pass before "
                         "the rounds alone, when a device's time is short)")
    ap.add_argument("--profile-sweeps", type=int, default=1,
                    help="passes over a profile's points its repeats are spread across "
                         "(bench_synthetic --profile-sweeps)")
    ap.add_argument("--configs", default=None,
                    help="only these configurations (comma-separated labels, e.g. "
                         "'target,async k1=3 k2=1,async k1=3 k2=1 continuous')")
    ap.add_argument("--replay", action="store_true",
                    help="after the rounds, run every logged forward again on the same "
                         "engines, one model at a time, in order and grouped by shape "
                         "(where a forward's price in the run differs from the profile's)")
    ap.add_argument("--out", default=None,
                    help="summary JSON (default: benchmarks/results/schedule_audit.json)")
    a = ap.parse_args(argv)
    for name in ("k1", "k2", "problems", "rounds", "max_steps", "max_step_tokens"):
        if getattr(a, name) < (2 if name == "k1" else 1):
            print(f"error: --{name.replace('_', '-')} must be >= "
                  f"{2 if name == 'k1' else 1}", file=sys.stderr)
            return 2
    if (bad := profile_sweeps_error(a)) is not None:
        print(f"error: {bad}", file=sys.stderr)
        return 2
    from benchmarks.harness import write_json

    out = Path(a.out or ROOT / "benchmarks" / "results" / "schedule_audit.json")
    summary = run(a)
    write_json(out.name.removesuffix(".json"), summary, out.parent)
    return 0


def run(a: argparse.Namespace) -> dict[str, Any]:
    from benchmarks.bench_synthetic import (
        _configs,
        _problems,
        _settings,
        engines,
        profiler,
        run_dtype,
        sweep_draws,
    )
    from profiler.decoder import LookaheadDecoder
    from profiler.engines.synthetic import (
        merge_profiles,
        prepare_run,
        with_costs,
    )
    from profiler.environment import package_versions
    from profiler.hardware import device_description
    from profiler.problems import format_prompt
    from specmodel.decodermodel import CostModel, EngineBehaviour
    from specmodel.prediction import at_run_acceptance, decoder_prediction

    a.threads, a.prefill, a.predict_on = 1, True, None
    dtype = run_dtype(a)
    acc, (target, tgt), (draft, drf) = engines(a, dtype)
    problems = _problems(a.problems, 0)
    lengths = [tgt.count_tokens(format_prompt(p)) for p in problems]
    a.continuous = True
    configs = {c.label: c for c in _configs(a)}
    if a.configs:
        wanted = [x.strip() for x in a.configs.split(",")]
        unknown = [x for x in wanted if x not in configs]
        if unknown or "target" not in wanted:
            raise SystemExit(f"error: --configs must include 'target' and name only "
                             f"{', '.join(configs)}; got {a.configs!r}")
        configs = {k: v for k, v in configs.items() if k in wanted}
    costs = prepare_run(tgt, drf, list(configs.values()), max(lengths))
    syn, ver = _settings(a, acc, lengths, list(configs.values()), target, draft,
                         costs["T"][1])

    profile, contention_forwards = profiler(a, tgt, drf, list(configs.values()),
                                            max(lengths))
    passes = [profile()]
    log = ForwardLog()
    log.wrap(tgt._fwd, "target")
    log.wrap(drf._fwd, "draft")
    runs: dict[str, list[dict[str, Any]]] = defaultdict(list)
    names = list(configs)
    for r in range(a.rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            cfg = configs[name]
            dec = LookaheadDecoder.for_config(tgt, drf if cfg.k1 > 1 else None,
                                              ver if cfg.k1 > 1 else None, cfg)
            for p in problems:
                tgt.forget()
                drf.forget()
                log.take()
                got = dec.decode(p)
                runs[name].append({"round": r + 1, "problem": p.index,
                                   "tokens": got.output_tokens, "seconds": got.seconds,
                                   "steps": len(got.steps), "drafted": got.drafted_steps,
                                   "accepted": got.accepted_steps,
                                   "target_seconds": got.target_seconds,
                                   "draft_seconds": got.draft_seconds,
                                   "setup_seconds": got.setup_seconds or 0.0,
                                   "log": log.take()})
            print(f"  round {r + 1}: {name} done", flush=True)
        if a.profile_after or r < a.rounds - 1:
            passes.append(profile())
    if a.replay:  # problem by problem, configurations interleaved, the order alternating
        with tgt._fwd.torch.inference_mode():
            for i in range(len(problems) * a.rounds):
                order = names if i % 2 == 0 else names[::-1]
                for name in order:
                    x = runs[name][i]
                    x["replay"] = {how: replay(x["log"], log.runners, how)
                                   for how in (REPLAYS if i % 2 == 0 else REPLAYS[::-1])}
        print("  replayed", flush=True)
    cal = with_costs(acc, costs, f"{a.target} / {a.draft} on {a.device} {dtype}",
                     None, merge_profiles(passes))
    arch = syn.architectures or {}
    model_costs = CostModel.from_calibration(
        cal, target_architecture=arch["target"], draft_architecture=arch.get("draft"),
        engine=EngineBehaviour.synthetic(syn.context_bucket, syn.prefill))

    def price(role: str, b: int, q: int, L: int) -> float:
        """The surface the decoder model prices this forward with (decode T(b, L);
        F(b, q, L) for a verification or a prefill)."""
        target = role == "target"
        if q == 1:
            return (model_costs.target_decode if target else model_costs.draft_decode
                    ).time(b, L)
        forwards = model_costs.target_forwards if target else model_costs.draft_forwards
        if forwards is None:
            raise ValueError(f"the profiles have no {role} forwards of q = {q}")
        return forwards.time(b, q, L)

    def ms_per_token(rs: list[dict[str, Any]], less_setup: bool = False) -> float:
        """Milliseconds of the runs' wall time (less their one-time setup) per token."""
        wall = sum(x["seconds"] - (x["setup_seconds"] if less_setup else 0.0) for x in rs)
        return 1e3 * wall / sum(x["tokens"] for x in rs)

    base_ms, base_steady_ms = ms_per_token(runs["target"]), ms_per_token(runs["target"], True)
    kw = {"synthetic": syn, "problems": 2000, "draws": 1}
    # the problems' own draws (position draws): the model decodes the sample the run met
    sample = None if a.draws != "position" else sweep_draws(
        acc, seed=a.seed, problems=a.problems, prompt_words=0, target=target, draft=draft,
        max_steps=a.max_steps, max_step_tokens=a.max_step_tokens,
        configs=list(configs.values()))
    rows = []
    for name, cfg in configs.items():
        rs = runs[name]
        tokens = sum(x["tokens"] for x in rs)
        steps = sum(x["steps"] for x in rs)
        judged = sum(x["drafted"] for x in rs)
        accepted = sum(x["accepted"] for x in rs)
        wall = sum(x["seconds"] for x in rs)
        setup = sum(x["setup_seconds"] for x in rs)
        ms = ms_per_token(rs)
        busy = busy_share(rs)
        pred = decoder_prediction(cal, cfg, **kw)
        shifted = (at_run_acceptance(cal, cfg, accepted, judged, synthetic=syn)
                   if judged else pred)
        mix = measured_mix(rs, price)
        drawn = (None if sample is None else
                 decoder_prediction(cal, cfg, synthetic=syn, sample=sample, draws=1))
        model_ms = {
            key: 1e3 / p.tokens_per_second if p.tokens_per_second else None
            for key, p in (("calibration", pred), ("run_acceptance", shifted))}
        rows.append({
            "config": cfg.label,
            "batching": cfg.target_batching if cfg.k1 > 1 else "-",
            "problems": len(rs), "tokens_per_step": tokens / steps,
            "step_acceptance_run": accepted / judged if judged else None,
            "ms_per_token": ms, "model_ms_per_token": model_ms,
            "speedup": base_ms / ms,
            "model_speedup": pred.speedup, "model_speedup_at_run_acceptance":
                shifted.speedup,
            "iterations_per_token": mix["iterations_per_token"],
            "model_iterations_per_token_at_run_acceptance": model_mix(shifted.counters),
            "model_iterations_per_token_on_draws": (None if drawn is None else
                                                    model_mix(drawn.counters)),
            "model_speedup_on_draws": None if drawn is None else drawn.speedup,
            "model_ms_per_token_on_draws": (1e3 / drawn.tokens_per_second
                                            if drawn and drawn.tokens_per_second else None),
            "price_ratio": mix["price_ratio"],
            "time_split": role_split(rs, price, shifted.counters),
            "busy_share": busy,
            "setup_share": setup / wall if wall > 0 else None,
            "speedup_less_setup": (base_steady_ms / ms_per_token(rs, True)
                                   if wall > setup else None),
            "busy_share_less_setup": (None if busy is None or wall <= setup
                                      else busy * wall / (wall - setup)),
            **({"replay": replay_split(rs, price)} if a.replay else {}),
        })
    _print(rows)
    return {
        "benchmark": "forward audit of the decoder's schedules (bench_schedule_audit.py)",
        "date": timestamp(),
        "versions": package_versions(("specmodel", "torch")),
        "device": a.device, "dtype": dtype,
        "device_description": device_description(a.device, 1),
        "forward_clock": ("CUDA events on each engine's stream around the forward"
                          if a.device == "cuda" else "the host clock around the call"),
        "target": a.target, "draft": a.draft, "acceptance": a.acceptance, "k1": a.k1,
        "k2": a.k2, "configs": list(configs),
        "problems": a.problems, "rounds": a.rounds, "seed": a.seed, "draws": a.draws,
        "replay": a.replay,
        "max_steps": a.max_steps, "max_step_tokens": a.max_step_tokens,
        "prompt_tokens": syn.prompt_tokens, "profile_passes": len(passes),
        "contention": {"target": model_costs.contention,
                       "draft": model_costs.draft_contention},
        "contention_forwards": contention_forwards,
        "rows": rows,
    }


def _print(rows: list[dict[str, Any]]) -> None:
    def f(v: float | None, d: int = 2) -> str:
        return "-" if v is None else f"{v:.{d}f}"

    print("\nconfig                      α1 run  ms/token  model  @run α1  speedup  model  "
          "@run α1  target iterations per token by rows (measured | model @run α1 | "
          "model on the problems' draws)")
    for r in rows:
        mix = " ".join(f"b{b}:{v:.3f}" for b, v in r["iterations_per_token"].items())
        mmix = " ".join(f"b{b}:{v:.3f}" for b, v in
                        r["model_iterations_per_token_at_run_acceptance"].items())
        dmix = " ".join(f"b{b}:{v:.3f}" for b, v in
                        (r.get("model_iterations_per_token_on_draws") or {}).items())
        print(f"{r['config']:<27} {f(r['step_acceptance_run'], 3):>6}  "
              f"{f(r['ms_per_token']):>8}  {f(r['model_ms_per_token']['calibration']):>5}  "
              f"{f(r['model_ms_per_token']['run_acceptance']):>7}  {f(r['speedup'], 3):>7}  "
              f"{f(r['model_speedup'], 3):>5}  {f(r['model_speedup_at_run_acceptance'], 3):>7}"
              f"  {mix} | {mmix} | {dmix or '-'}")
    print("\nshare of the run's time in which a forward ran (either model); the one-time "
          "setup's share (binding and capturing forwards of new shapes); the busy share of "
          "the time less that setup; the speedup less it")
    for r in rows:
        print(f"{r['config']:<27} {f(r['busy_share'], 3)}  {f(r['setup_share'], 3)}  "
              f"{f(r['busy_share_less_setup'], 3)}  {f(r['speedup_less_setup'], 3)}")
    print("\nmeasured / profiled price of the decode forwards (forwards per committed "
          "token)")
    for r in rows:
        parts = [f"{k} {v['measured_over_price']:.3f} ({v['forwards_per_token']:.3f})"
                 for k, v in r["price_ratio"].items() if v["measured_over_price"]]
        print(f"{r['config']:<27} " + "; ".join(parts))
    print("\nms per committed token by role: model (at the run's α1) | the run's forwards "
          "priced | measured forwards | measured calls; forwards by kind (priced/measured)")
    for r in rows:
        for role, v in r["time_split"].items():
            kinds = "; ".join(f"{k} {x['priced']:.2f}/{x['forwards']:.2f}"
                              for k, x in v["by_kind"].items())
            print(f"{r['config']:<27} {role:<6} {f(v['model']):>6} | {v['priced']:6.2f} | "
                  f"{v['forwards']:6.2f} | {v['calls']:6.2f}   {kinds}")
    if any("replay" in r for r in rows):
        print("\nms per committed token of the run's forwards: in the run | replayed in "
              "order | replayed grouped by shape | priced")
        for r in rows:
            for role, v in r.get("replay", {}).items():
                print(f"{r['config']:<27} {role:<6} {v['in_run']:6.2f} | "
                      f"{v['in_order']:6.2f} | {v['grouped']:6.2f} | {v['priced']:6.2f}")


if __name__ == "__main__":
    sys.exit(main())
