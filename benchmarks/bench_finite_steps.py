"""How far the papers' product f·g is from the hybrid simulated with finite steps.

Runs token-level SD inside every reasoning step of L tokens (``simulate_hybrid``)
for several L and compares with f·g and with f_sync·g_L (the finite-step token
model).  Usage: ``python -m benchmarks.bench_finite_steps``.
"""

from __future__ import annotations

from benchmarks.harness import print_table, write_json
from specmodel.closedform.hybrid import h
from specmodel.closedform.step_level import f_sync
from specmodel.closedform.token_level import g_token_step
from specmodel.montecarlo.hybrid import simulate_hybrid

PARAMS = {"alpha1": 0.6, "c1": 0.2, "alpha2": 0.7, "c2": 0.05, "k1": 3, "k2": 5}
CYCLES = 20_000
SEED = 1


def main() -> None:
    p = PARAMS
    rows, records = [], []
    for length in (8, 16, 32, 64, 128, 512):
        for mode, batch in (("sync", "max"), ("sync", "mean"), ("async", "max")):
            est = simulate_hybrid(
                mode, p["alpha1"], p["c1"], p["alpha2"], p["c2"], p["k1"], p["k2"],
                step_tokens=length, n_cycles=CYCLES, seed=SEED, batch=batch,
            )
            product = h(mode, p["alpha1"], p["c1"], p["alpha2"], p["c2"], p["k1"], p["k2"])
            finite = (
                f_sync(p["alpha1"], p["c1"], p["k1"])
                * g_token_step(p["alpha2"], p["c2"], p["k2"], length)
                if mode == "sync"
                else None
            )
            label = f"{mode}/{batch}" if mode == "sync" else mode
            gap = (est.mean - product) / product
            rows.append([length, label, est.mean, est.stderr, product, f"{gap:+.1%}",
                         "-" if finite is None else round(finite, 4)])
            records.append({"step_tokens": length, "mode": mode, "batch": batch,
                            "simulated": est.mean, "stderr": est.stderr, "n": est.n,
                            "product_fg": product, "f_times_gL": finite, "relative_gap": gap})
    print_table(
        f"hybrid with token SD inside L-token steps ({CYCLES} cycles, seed {SEED}, {PARAMS})",
        ["L", "process", "simulated", "stderr", "f*g", "gap", "f_sync*g_L"],
        rows,
    )
    write_json("finite_steps", {"params": PARAMS, "cycles": CYCLES, "seed": SEED,
                                "rows": records})


if __name__ == "__main__":
    main()
