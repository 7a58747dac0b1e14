"""Start-up cost of ``specmodel optimize --budget 16`` and the optimizer from M = 16 to 4096.

The whole process is timed against ``python -c pass`` in the same run
(interleaved, so machine noise hits both alike); the optimizer is timed in
process.  The command is timed twice per round: as the environment runs it (where
``PYTHONDONTWRITEBYTECODE`` is set, as on these machines, every run compiles the
project's modules afresh) and with its bytecode cached (``PYTHONPYCACHEPREFIX``, filled
by one warm-up run), as an installed package runs.  The ``specmodel`` first on PATH is
timed: the editable install of the repository's environment, or — run with a regular
install's interpreter first on PATH (``pip install .``, the README's run command, whose
bytecode pip compiles at install) — that one; the JSON names the executable and where
its ``cli`` package was imported from.  ``--against EXE`` times another install's
``specmodel`` (an older version, say) in the same rounds, interleaved, and reports the
paired ratio of the two — the way to compare versions on a machine whose speed drifts.
Usage: ``python -m benchmarks.bench_cli [--out NAME] [--against EXE] [--rounds N]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness import best_of, print_table, write_json
from specmodel.formats.calibration import DEFAULT_PRESET, load_preset
from specmodel.optimize.budget import optimize_budget

ROUNDS = 15


def _time(cmd: list[str], env: dict[str, str] | None = None) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=env)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="cli", help="results/NAME.json (default cli)")
    ap.add_argument("--against", metavar="EXE", default=None,
                    help="another specmodel executable, timed in the same rounds")
    ap.add_argument("--rounds", type=int, default=ROUNDS,
                    help=f"interleaved rounds (default {ROUNDS})")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error(f"--rounds must be at least 1, got {args.rounds}")
    against = None
    if args.against is not None:
        against = shutil.which(args.against)
        if against is None:
            ap.error(f"--against {args.against}: no such executable")
    exe = shutil.which("specmodel")
    optimize_cmd = [exe] if exe else [sys.executable, "-m", "cli"]
    optimize_cmd += ["optimize", "--budget", "16"]
    baseline = [sys.executable, "-c", "pass"]
    a, b, c, d = [], [], [], []
    against_cmd = [against, "optimize", "--budget", "16"] if against else None
    with tempfile.TemporaryDirectory() as cache:
        cached = {**os.environ, "PYTHONPYCACHEPREFIX": cache}
        warm = {k: v for k, v in cached.items() if k != "PYTHONDONTWRITEBYTECODE"}
        subprocess.run(optimize_cmd, check=True, capture_output=True, env=warm)
        if against_cmd:
            subprocess.run(against_cmd, check=True, capture_output=True)
        for _ in range(args.rounds):
            a.append(_time(optimize_cmd))
            b.append(_time(baseline))
            c.append(_time(optimize_cmd, cached))
            if against_cmd:
                d.append(_time(against_cmd))
    ratio = statistics.median(a) / statistics.median(b)
    table = [[" ".join(optimize_cmd[-4:]), statistics.median(a), min(a)],
             ["  the same, bytecode cached", statistics.median(c), min(c)],
             ["python -c pass", statistics.median(b), min(b)],
             ["ratio (median)", ratio, min(a) / min(b)]]
    paired = None
    if against_cmd:
        pairs = sorted(x / y for x, y in zip(a, d, strict=True))
        paired = {"executable": against, "optimize_s": d,
                  "median_paired_ratio": statistics.median(pairs),
                  "paired_ratio_range": [pairs[0], pairs[-1]]}
        table += [[f"{against} (--against)", statistics.median(d), min(d)],
                  ["paired ratio this / --against (median)", statistics.median(pairs),
                   f"{pairs[0]:.3f}-{pairs[-1]:.3f}"]]
    print_table(f"whole-process wall time, {args.rounds} interleaved rounds",
                ["command", "median s", "best s"], table)
    params = load_preset(DEFAULT_PRESET).parameters()
    rows, records = [], []
    for mode in ("sync", "async"):
        for m in (16, 64, 256, 1024, 4096):
            t = best_of(lambda m=m, mode=mode: optimize_budget(params, m, mode),
                        repeat=5, number=20)
            res = optimize_budget(params, m, mode)
            rows.append([mode, m, f"{t['best_s'] * 1e3:.3f} ms", res.k1, res.k2,
                         round(res.speedup, 4)])
            records.append({"mode": mode, "budget": m, **t, "k1": res.k1, "k2": res.k2,
                            "speedup": res.speedup})
    print_table(f"optimize_budget on the default preset ({DEFAULT_PRESET})",
                ["mode", "M", "best time", "k1", "k2", "speedup"], rows)
    python = str(Path(exe).parent / "python") if exe else sys.executable
    where = subprocess.run(  # -P: not from the working directory, as the command runs
        [python, "-P", "-c", "import cli; print(cli.__file__)"],
        capture_output=True, text=True, check=False).stdout.strip()
    write_json(args.out, {"executable": optimize_cmd[0], "cli_module": where,
                          "process": {"optimize_s": a, "optimize_bytecode_cached_s": c,
                                      "python_pass_s": b, "median_ratio": ratio},
                          "against": paired, "optimizer": records})


if __name__ == "__main__":
    main()
