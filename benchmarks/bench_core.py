"""Throughput of the Monte-Carlo simulators and cost of the closed forms over grids.

Targets from the issue: >= 10 million simulated i.i.d. stages per second on one
core; a full k-grid for M = 4096 in under 10 ms.  Run pinned to one core for the
single-core figure: ``taskset -c 0 python -m benchmarks.bench_core``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.harness import best_of, print_table, write_json
from specmodel.closedform.step_level import f_async, f_sync
from specmodel.closedform.token_level import g_token
from specmodel.montecarlo.hybrid import simulate_hybrid
from specmodel.montecarlo.step import (
    simulate_async,
    simulate_async_events,
    simulate_sync,
)
from specmodel.montecarlo.token import simulate_token_sd
from specmodel.optimize.budget import budget_landscape, optimize_budget
from specmodel.parameters import Parameters


def simulators() -> list[tuple[str, str, int, Callable[[int], Any]]]:
    """(process, unit, samples, run(samples)) for every simulator."""
    sims: list[tuple[str, str, int, Callable[[int], Any]]] = [
        ("token SD, i.i.d. (k=5)", "iterations", 2_000_000,
         lambda n: simulate_token_sd(0.7, 0.05, 5, n, seed=1)),
        ("token SD, per-position (k=5)", "iterations", 500_000,
         lambda n: simulate_token_sd([0.9, 0.8, 0.7, 0.6], 0.05, 5, n, seed=1)),
        ("sync LR (k1=4)", "cycles", 2_000_000, lambda n: simulate_sync(0.6, 0.2, 4, n, seed=1)),
        ("async LR, recurrence (k1=4)", "stages", 1_000_000,
         lambda n: simulate_async(0.6, 0.2, 4, n, seed=1)),
        ("async LR, discrete events (k1=4)", "stages", 20_000,
         lambda n: simulate_async_events(0.6, 0.2, 4, n, seed=1)),
        ("hybrid sync, 64-token steps (3,5)", "cycles", 20_000,
         lambda n: simulate_hybrid("sync", 0.6, 0.2, 0.7, 0.05, 3, 5, step_tokens=64,
                                   n_cycles=n, seed=1)),
    ]
    sims.extend(_optional_simulators())
    return sims


def _optional_simulators() -> list[tuple[str, str, int, Callable[[int], Any]]]:
    out: list[tuple[str, str, int, Callable[[int], Any]]] = []
    try:
        from specmodel.montecarlo import cascade
    except ImportError:
        return out
    out.append(("cascade: plain SD (k=4)", "calls", 1_000_000,
                lambda n: cascade.simulate_speculative(0.7, 0.1, 4, n, seed=1)))
    out.append(("cascade: vertical (k=3, n=2)", "target calls", 200_000,
                lambda n: cascade.simulate_vertical(0.7, 0.8, 0.1, 0.01, 3, 2, n, seed=1)))
    out.append(("cascade: horizontal (4 positions)", "calls", 1_000_000,
                lambda n: cascade.simulate_horizontal([0.9, 0.8, 0.7, 0.6],
                                                      [0.1, 0.1, 0.01, 0.01], n, seed=1)))
    try:
        from specmodel.montecarlo import lookahead_decoding
    except ImportError:
        return out
    out.append(("lookahead decoding (b=8, γ=4)", "steps", 500_000,
                lambda n: lookahead_decoding.simulate_lookahead_decoding(0.4, 4, 8, n, seed=1)))
    return out


def grids() -> list[tuple[str, int, Callable[[], Any]]]:
    """(what, points, evaluate) for the closed forms over grids."""
    k = np.arange(1, 4097, dtype=np.int64)
    land = budget_landscape(Parameters(0.6, 0.1, 0.7, 0.05), 4096, "sync")
    return [
        ("g_token over k = 1..4096", k.size, lambda: g_token(0.7, 0.05, k)),
        ("f_sync over k1 = 1..4096", k.size, lambda: f_sync(0.6, 0.1, k)),
        ("f_async over k1 = 1..4096", k.size, lambda: f_async(0.6, 0.1, k)),
        ("landscape M = 4096, sync (all feasible k1,k2)", int(land.k1.size),
         lambda: budget_landscape(Parameters(0.6, 0.1, 0.7, 0.05), 4096, "sync")),
        ("optimize_budget M = 4096, sync", 4096,
         lambda: optimize_budget(Parameters(0.6, 0.1, 0.7, 0.05), 4096, "sync")),
        ("optimize_budget M = 4096, async", 4096,
         lambda: optimize_budget(Parameters(0.6, 0.1, 0.7, 0.05), 4096, "async")),
    ]


def main() -> None:
    sim_rows, sim_records = [], []
    for name, unit, n, run in simulators():
        t = best_of(lambda run=run, n=n: run(n), repeat=3)
        rate = n / t["best_s"]
        sim_rows.append([name, n, t["best_s"], f"{rate / 1e6:.2f} M {unit}/s"])
        sim_records.append({"process": name, "unit": unit, "samples": n, **t,
                            "per_second": rate})
    print_table("Monte-Carlo throughput (best of 3)", ["process", "samples", "seconds", "rate"],
                sim_rows)

    grid_rows, grid_records = [], []
    for name, points, run in grids():
        t = best_of(run, repeat=7, number=5)
        grid_rows.append([name, points, f"{t['best_s'] * 1e3:.3f} ms"])
        grid_records.append({"what": name, "points": points, **t})
    print_table("Closed forms over grids (best of 7 x 5)", ["evaluation", "points", "time"],
                grid_rows)
    write_json("core", {"simulators": sim_records, "grids": grid_records})


if __name__ == "__main__":
    main()
