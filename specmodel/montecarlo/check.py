"""One simulation held against its closed form: what ``specmodel simulate`` shows.

:func:`simulate_process` runs one of the processes — token-level SD, sync or
async Lookahead Reasoning, or their hybrid with token SD inside finite steps —
for given :class:`~specmodel.parameters.Parameters`, next to the closed form
that describes it, and returns a :class:`ProcessCheck` with the z-score of the
difference.  For the hybrid the closed form is the papers' endless-step product
f·g, so z there measures the product form's model error, not only noise; with
sync steps the finite-step model f_sync·g_L is given as well.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from specmodel.montecarlo.estimate import Estimate
from specmodel.parameters import Parameters
from specmodel.validation import check_samples

__all__ = ["PROCESSES", "Process", "ProcessCheck", "simulate_process"]

Process = Literal["token", "sync", "async", "hybrid"]
"""The processes :func:`simulate_process` runs."""
PROCESSES: tuple[str, ...] = ("token", "sync", "async", "hybrid")
"""The allowed processes."""

_HYBRID_MAX_CYCLES = 50_000
"""The hybrid simulates whole cycles of finite steps: at most this many."""


@dataclass(frozen=True)
class ProcessCheck:
    """A simulated speedup next to the closed form of the same process."""

    process: str
    """token, sync, async or hybrid."""
    k1: int
    """Target steps in parallel."""
    k2: int
    """Target positions per token pass."""
    estimate: Estimate
    """The simulation's mean, standard error and sample count."""
    seed: int
    """The simulation's seed."""
    closed_form: float
    """The closed form's value."""
    formula: str
    """Which closed form, e.g. 'f_async(k1=3)'."""
    params: Parameters
    """α1, c1, α2, c2."""
    step_tokens: int | None = None
    """hybrid: tokens per reasoning step."""
    finite_step_model: float | None = None
    """hybrid, sync: f_sync(k1)·g_L(k2), the finite-step model."""
    note: str | None = None
    """What z means here, when it is not noise alone."""

    @property
    def z(self) -> float:
        """(simulated − closed form) / stderr."""
        return self.estimate.z_score(self.closed_form)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (None fields left out)."""
        out: dict[str, Any] = {
            "process": self.process, "k1": self.k1, "k2": self.k2,
            "simulated": self.estimate.mean, "stderr": self.estimate.stderr,
            "samples": self.estimate.n, "seed": self.seed, "closed_form": self.closed_form,
            "formula": self.formula, "z": self.z, "parameters": self.params.to_dict(),
        }
        for key in ("step_tokens", "finite_step_model", "note"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


def simulate_process(
    params: Parameters,
    process: str,
    k1: int,
    k2: int,
    *,
    mode: str = "async",
    step_tokens: int = 64,
    samples: int = 200_000,
    seed: int = 0,
) -> ProcessCheck:
    """Simulate ``process`` (``mode`` picks the hybrid's step algorithm) and evaluate its
    closed form; ``samples`` counts stages, iterations or cycles (the hybrid at most
    50,000 cycles)."""
    from specmodel.closedform.hybrid import h
    from specmodel.closedform.step_level import check_mode, f_async, f_sync
    from specmodel.closedform.token_level import g_token, g_token_step

    check_samples("samples", samples)  # the memory bound, named as the caller's option
    p = Parameters.coerce(params)
    if process not in PROCESSES:
        raise ValueError(f"process must be one of {', '.join(PROCESSES)}, got {process!r}")
    m = check_mode(mode)
    extra: dict[str, Any] = {}
    if process == "token":
        from specmodel.montecarlo.token import simulate_token_sd

        est = simulate_token_sd(p.alpha2, p.c2, k2, samples, seed)
        exact, label = g_token(p.alpha2, p.c2, k2), f"g(k2={k2})"
    elif process == "sync":
        from specmodel.montecarlo.step import simulate_sync

        est = simulate_sync(p.alpha1, p.c1, k1, samples, seed)
        exact, label = f_sync(p.alpha1, p.c1, k1), f"f_sync(k1={k1})"
    elif process == "async":
        from specmodel.montecarlo.step import simulate_async

        est = simulate_async(p.alpha1, p.c1, k1, samples, seed)
        exact, label = f_async(p.alpha1, p.c1, k1), f"f_async(k1={k1})"
    else:
        from specmodel.montecarlo.hybrid import simulate_hybrid

        est = simulate_hybrid(m, p.alpha1, p.c1, p.alpha2, p.c2, k1, k2, step_tokens=step_tokens,
                              n_cycles=min(samples, _HYBRID_MAX_CYCLES), seed=seed)
        exact = h(m, p.alpha1, p.c1, p.alpha2, p.c2, k1, k2)
        label = f"f_{m}(k1={k1})·g(k2={k2}) (endless-step product)"
        extra["step_tokens"] = step_tokens
        if m == "sync":
            extra["finite_step_model"] = float(f_sync(p.alpha1, p.c1, k1)) * g_token_step(
                p.alpha2, p.c2, k2, step_tokens)
        extra["note"] = (
            f"the closed form is the endless-step product f·g; the simulation has steps of "
            f"{step_tokens} tokens"
            + (" and a sync batch that waits for its slowest step" if m == "sync" else "")
            + ", so z measures the product form's model error, not only noise."
        )
    return ProcessCheck(process, k1, k2, est, seed, float(exact), label, p, **extra)
