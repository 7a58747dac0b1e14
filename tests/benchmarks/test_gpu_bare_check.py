"""The GPU scripts run from what a lent GPU machine has (torch, transformers and NumPy,
plus the wheels of ``benchmarks/gpu/wheels.txt``): ``benchmarks/gpu/bare_check.sh``
rebuilds such an install on this CPU and runs every command of the GPU sweep on tiny
architectures.  It installs a fresh virtual environment (a few minutes, the package
registries), so it is ``slow``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_gpu_sweep_runs_from_a_bare_install(tmp_path: Path) -> None:
    got = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "gpu" / "bare_check.sh")],
        env={**os.environ, "WORK": str(tmp_path), "PY": sys.executable,
             "PYTHONPATH": ""},
        capture_output=True, text=True, timeout=1800)
    assert got.returncode == 0, got.stdout[-3000:] + got.stderr[-3000:]
    assert "bare check passed" in got.stdout
    for name in ("tiny.packed.json", "sweep.registered.json", "sweep.json"):
        assert (tmp_path / name).is_file(), name
