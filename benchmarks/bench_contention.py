"""How much slower each model runs beside the other: the two ways of measuring it.

The ``engine_costs`` phase (and ``specmodel profile contention``) measures it the
decoder's way (:func:`profiler.engine_costs.measure_contention`): a call of each model
alone, then one of each submitted together to two worker threads, as the async decoder
(:mod:`profiler.decoder.asynchronous`) starts a draft step and a target step; the
shorter call runs wholly beside the longer, the longer only while the shorter runs,
and each slowdown is that of the overlapped work (the factor the decoder model applies,
:func:`profiler.engine_costs.overlap_slowdown`).  Calibrations written before
2026-11-24 measured it beside a loop: each model's call while the other wrote calls back
to back in a second thread, over alone — the whole call slowed.  This benchmark times
both, interleaved, ``--repeats`` rounds (calls of ``--tokens`` tokens after a
``--context``-token prompt).

Usage::

    python -m benchmarks.bench_contention --trio 1.5b --repeats 3 --out contention_15b
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from benchmarks.bench_heldout import TRIOS  # noqa: E402
from benchmarks.harness import print_table, printer, write_json  # noqa: E402


def beside_a_loop(engine: Any, other: Any, prompt: str, other_prompt: str,
                 tokens: int) -> float:
    """``engine``'s call time while ``other`` writes calls back to back in a second
    thread (the measurement of calibrations before 2026-11-24)."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            other.generate_exact([other_prompt], tokens)

    worker = threading.Thread(target=loop, name="bench-loop", daemon=True)
    worker.start()
    try:
        time.sleep(0.05)
        return engine.generate_exact([prompt], tokens)
    finally:
        stop.set()
        worker.join()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trio", choices=sorted(TRIOS), default="1.5b")
    ap.add_argument("--context", type=int, default=64,
                    help="prompt tokens (default 64, the phase's smallest context)")
    ap.add_argument("--tokens", type=int, default=32,
                    help="tokens per call (default 32, the phase's long call)")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved rounds (default 3)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", required=True, help="results name (benchmarks/results/NAME.json)")
    a = ap.parse_args(argv)
    if a.repeats < 1 or a.tokens < 1 or a.context < 1:
        ap.error("--repeats, --tokens and --context must be >= 1")

    from profiler.engine_costs import context_prompt, measure_contention
    from profiler.engines import HFEngine
    from profiler.packs import resolve_model

    names = TRIOS[a.trio]
    target = HFEngine(resolve_model(names["target"]), threads=a.threads)
    draft = HFEngine(resolve_model(names["draft"]), threads=a.threads)
    tp, _ = context_prompt(target, a.context)
    dp, _ = context_prompt(draft, a.context)
    target.generate_exact([tp], 2)  # warm-up
    draft.generate_exact([dp], 2)
    say = printer("contention")
    rounds: list[dict[str, float]] = []
    for r in range(a.repeats):
        paired_t, paired_d = measure_contention(target, draft, context=a.context,
                                                tokens=a.tokens, repeats=1)
        t_alone = target.generate_exact([tp], a.tokens)
        d_alone = draft.generate_exact([dp], a.tokens)
        loop_t = beside_a_loop(target, draft, tp, dp, a.tokens) / t_alone
        loop_d = beside_a_loop(draft, target, dp, tp, a.tokens) / d_alone
        rounds.append({"paired_target_slowdown": paired_t.value,
                       "paired_draft_slowdown": paired_d.value,
                       "loop_target_slowdown": loop_t, "loop_draft_slowdown": loop_d,
                       "target_alone_s": t_alone, "draft_alone_s": d_alone})
        say(r + 1, a.repeats, f"target x{paired_t.value:.2f} paired, x{loop_t:.2f} beside "
                              f"a loop; draft x{paired_d.value:.2f} paired, x{loop_d:.2f} "
                              "beside a loop")

    def col(key: str) -> list[float]:
        return [x[key] for x in rounds]

    rows = []
    for label, key in (("target, paired calls", "paired_target_slowdown"),
                       ("target, beside a loop", "loop_target_slowdown"),
                       ("draft, paired calls", "paired_draft_slowdown"),
                       ("draft, beside a loop", "loop_draft_slowdown")):
        v = col(key)
        rows.append([label, f"{statistics.median(v):.3f}", f"{min(v):.3f}-{max(v):.3f}"])
    print_table(f"slowdown beside the other model ({names['target']} / {names['draft']}, "
                f"{a.tokens} tokens after {a.context}, {a.repeats} rounds)",
                ["measured", "median", "range"], rows)
    write_json(a.out, {"trio": a.trio, "target": names["target"], "draft": names["draft"],
                       "context": a.context, "tokens": a.tokens, "threads": a.threads,
                       "rounds": rounds})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
