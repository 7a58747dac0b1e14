"""Huge inputs are refused (or finish) in bounded memory: the CLI under a 4 GiB
address-space limit (``ulimit -v``) in a subprocess, with a 10 s timeout."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

import pytest

from specmodel.validation import MAX_SAMPLES, MAX_SEARCH_BUDGET

_LIMIT_KIB = 4 * 1024 * 1024  # 4 GiB of address space


def _run_limited(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m cli <args>`` under ``ulimit -v 4194304``, 10 s at most."""
    cmd = " ".join(shlex.quote(a) for a in (sys.executable, "-m", "cli", *args))
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run(["bash", "-c", f"ulimit -v {_LIMIT_KIB} && exec {cmd}"],
                          capture_output=True, text=True, timeout=10, env=env)


@pytest.mark.parametrize(
    "args,limit",
    [
        (("optimize", "--budget", "1000000000"), f"{MAX_SEARCH_BUDGET:,}"),
        (("optimize", "--budget", "1000000000", "--landscape", "--json"),
         f"{MAX_SEARCH_BUDGET:,}"),
        (("optimize", "--budget", "1000000000", "--method", "mc"), f"{MAX_SEARCH_BUDGET:,}"),
        (("optimize", "--budget", "1000000000", "--preset",
          "measured-qwen2.5-coder-0.5b-smollm2-135m"), f"{MAX_SEARCH_BUDGET:,}"),
        (("export", "--budget", "1000000000"), f"{MAX_SEARCH_BUDGET:,}"),
        (("simulate", "--samples", "1000000000"), f"{MAX_SAMPLES:,}"),
        (("simulate", "--process", "token", "--samples", "1000000000"), f"{MAX_SAMPLES:,}"),
        (("simulate", "--process", "hybrid", "--samples", "1000000000"), f"{MAX_SAMPLES:,}"),
        (("optimize", "--method", "mc", "--samples", "1000000000"), f"{MAX_SAMPLES:,}"),
    ],
)
def test_huge_inputs_are_refused_in_bounded_memory(args, limit) -> None:
    res = _run_limited(*args)
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr  # one line, no traceback
    assert "memory bound" in lines[0] and limit in lines[0]
    assert "--budget" in lines[0] or "--samples" in lines[0]


def test_the_largest_budget_runs_under_the_limit() -> None:
    res = _run_limited("optimize", "--budget", str(MAX_SEARCH_BUDGET), "--json")
    assert res.returncode == 0, res.stderr
    assert '"budget": 100000' in res.stdout
