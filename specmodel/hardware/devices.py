"""Nominal numbers of the devices a forward can be priced on.

A :class:`Device` holds what a datasheet (or, for the CPUs ``cpu-epyc`` and
``cpu-xeon``, a measurement on that CPU) says: peak memory bandwidth, peak dense matmul
throughput per dtype, memory.
The analytical cost model (:mod:`specmodel.hardware.costmodel`) expresses its fitted
coefficients as efficiencies relative to these numbers, which is what lets
:func:`~specmodel.hardware.costmodel.transfer` move a fit to a device never measured.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["DEVICES", "Device", "get_device", "list_devices"]


@dataclass(frozen=True)
class Device:
    """One accelerator's (or CPU's) nominal numbers."""

    name: str
    """Preset name (``h100-sxm``, ``cpu-xeon``, …)."""
    memory_bandwidth: float
    """Peak memory bandwidth in bytes per second (HBM for a GPU, DRAM for a CPU)."""
    matmul_bf16: float
    """Peak dense (no 2:4 sparsity) matmul throughput in bfloat16/float16, flop/s."""
    matmul_fp32: float
    """Peak matmul throughput in float32, flop/s: plain FP32 (CUDA cores for a GPU, which
    is what ``torch`` uses for float32 GEMMs by default, ``allow_tf32`` being off), not
    TF32 tensor cores."""
    memory: float
    """Memory capacity in bytes."""
    source: str
    """Where each number comes from (a datasheet, or what was measured, how and when)."""
    compute_units: int
    """Parallel units an occupancy-bound kernel fills before its blocks queue in waves:
    streaming multiprocessors of a GPU, cores of a CPU (>= 1)."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"device name must be a non-empty string, got {self.name!r}")
        for key in ("memory_bandwidth", "matmul_bf16", "matmul_fp32", "memory"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) \
                    or v <= 0:
                raise ValueError(f"device {self.name}: {key} must be a finite number > 0, "
                                 f"got {v!r}")
        if isinstance(self.compute_units, bool) or not isinstance(self.compute_units, int) \
                or self.compute_units < 1:
            raise ValueError(f"device {self.name}: compute_units must be an integer >= 1, "
                             f"got {self.compute_units!r}")

    def matmul_throughput(self, dtype: str = "bfloat16") -> float:
        """Peak dense matmul flop/s in ``dtype`` (bfloat16, float16 or float32)."""
        if dtype in ("bfloat16", "float16"):
            return self.matmul_bf16
        if dtype == "float32":
            return self.matmul_fp32
        raise ValueError(f"dtype must be one of bfloat16, float16, float32, got {dtype!r}")

    def to_dict(self) -> dict[str, Any]:
        """The fields, JSON-ready."""
        return asdict(self)


TB = 1e12
GB = 1e9
TFLOPS = 1e12

DEVICES: dict[str, Device] = {
    d.name: d for d in (
        Device("h100-sxm", 3.35 * TB, 989 * TFLOPS, 67 * TFLOPS, 80 * GB,
               "NVIDIA H100 Tensor Core GPU datasheet, SXM5 column: 3.35 TB/s HBM3, "
               "989 TFLOPS dense BF16/FP16 (1,979 with sparsity), 67 TFLOPS FP32 "
               "(TF32 tensor cores: 494.7 dense), 80 GB; 132 SMs (NVIDIA H100 Tensor Core "
               "GPU Architecture whitepaper, H100 SXM5).", compute_units=132),
        Device("h200", 4.8 * TB, 989 * TFLOPS, 67 * TFLOPS, 141 * GB,
               "NVIDIA H200 Tensor Core GPU datasheet, SXM column: 4.8 TB/s HBM3e, "
               "989 TFLOPS dense BF16/FP16 (1,979 with sparsity), 67 TFLOPS FP32, "
               "141 GB; the H100 SXM5's GH100 configuration, 132 SMs.", compute_units=132),
        Device("a100-80gb-sxm", 2.039 * TB, 312 * TFLOPS, 19.5 * TFLOPS, 80 * GB,
               "NVIDIA A100 Tensor Core GPU datasheet, 80GB SXM column: 2,039 GB/s HBM2e, "
               "312 TFLOPS dense BF16/FP16 (624 with sparsity), 19.5 TFLOPS FP32 "
               "(TF32 tensor cores: 156), 80 GB; 108 SMs (NVIDIA A100 Tensor Core GPU "
               "Architecture whitepaper).", compute_units=108),
        Device("l40s", 864 * GB, 362.05 * TFLOPS, 91.6 * TFLOPS, 48 * GB,
               "NVIDIA L40S datasheet: 864 GB/s GDDR6, 362.05 TFLOPS dense BF16/FP16 "
               "(733 with sparsity), 91.6 TFLOPS FP32 (TF32 tensor cores: 183 dense), "
               "48 GB; 142 SMs (AD102 as configured for the L40S).", compute_units=142),
        Device("cpu-epyc", 32.7 * GB, 188 * 1e9, 188 * 1e9, 25.28 * GB,
               "Measured on the machine this project began on (2-core AMD EPYC under "
               "KVM, 25.3 GB RAM from `free -b`; preset `cpu-this` until 2026-11-25), "
               "2026-11-23, NumPy 2.3.5 with "
               "scipy-openblas 0.3.30: memory_bandwidth = best of 10 np.copyto of a "
               "256 MiB float64 array, counting the bytes read plus the bytes written "
               "(32.7 GB/s; median 31.6); matmul_fp32 = best of 10 float32 2048x2048 "
               "@ 2048x2048 products on 2 OpenBLAS threads, 2*n^3 flops (188 GFLOP/s; "
               "median 184).  NumPy has no bfloat16 GEMM, so matmul_bf16 is set to the "
               "float32 number (a CPU bf16 forward upcasts or runs no faster); 2 cores.",
               compute_units=2),
        Device("cpu-xeon", 25.7 * GB, 390 * 1e9, 390 * 1e9, 25.28 * GB,
               "Measured on the 2-core Intel Xeon VM (`Intel(R) Xeon(R) Processor` in "
               "/proc/cpuinfo, 25.3 GB RAM from `free -b`) the project's sessions have "
               "run on since 2026-11-25, that day, NumPy 2.3.5 with scipy-openblas "
               "0.3.31: memory_bandwidth = best of 10 np.copyto of a 256 MiB float64 "
               "array, bytes read plus bytes written (25.7 GB/s; median 25.5); "
               "matmul_fp32 = best of 10 float32 2048x2048 @ 2048x2048 products on 2 "
               "OpenBLAS threads, 2*n^3 flops (390 GFLOP/s; median 388); "
               "`python -m benchmarks.bench_cpu_costmodel --profile` measures both "
               "(benchmarks/results/cpu-xeon/device.json).  matmul_bf16 is set to the "
               "float32 number, as for cpu-epyc; 2 cores.",
               compute_units=2),
    )
}
"""The device presets by name."""


def list_devices() -> list[str]:
    """Names of the device presets."""
    return sorted(DEVICES)


def get_device(name: str) -> Device:
    """The preset called ``name``; an unknown name is a one-line ``ValueError``."""
    if name not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(list_devices())}, got {name!r}")
    return DEVICES[name]
