"""The budget-M problem answered by the decoder model: the configuration (mode, k1, k2,
W) the decoder model predicts fastest under a parallelism budget.

Every candidate with ``k1 · k2 · W ≤ budget`` (W > 1 only for sync with k1 ≥ 2, as the
decoder runs branches; k1 = 1 is the same decoder in both modes) is simulated with
few problems (each async candidate once per target batching asked for:
``call`` and/or ``continuous``); the best few are simulated again with more problems and with the
calibration's uncertainty (:func:`~specmodel.decodermodel.simulate.predict`), and the
answer is the best of those.  ``leanest`` is the candidate using the least budget
whose speedup is within ``tolerance`` of the best (what ``export`` writes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from specmodel.config import TARGET_BATCHINGS, SpecConfig

__all__ = ["DecoderCandidate", "DecoderOptimum", "candidates", "optimize_decoder"]


@dataclass(frozen=True)
class DecoderCandidate:
    """One configuration and the decoder model's prediction of it."""

    mode: str
    """sync or async."""
    k1: int
    """Target steps in parallel."""
    k2: int
    """Target positions per token pass."""
    width: int
    """Draft branches per position."""
    speedup: float
    """Predicted speedup over target-only decoding (one request)."""
    interval: tuple[float, float] | None = None
    """95 % interval (the refined candidates only)."""
    tokens_per_second: float | None = None
    """Predicted tokens/s where the costs are in seconds (refined candidates only)."""
    target_batching: str = "call"
    """How async hands the target its steps (:attr:`SpecConfig.target_batching`)."""

    @property
    def budget_used(self) -> int:
        """k1 · k2 · W."""
        return self.k1 * self.k2 * self.width

    def config(self, base: SpecConfig | None = None) -> SpecConfig:
        """This candidate as a configuration (``base``'s other fields)."""
        return (base or SpecConfig()).replace(mode=self.mode, k1=self.k1, k2=self.k2,
                                              width=self.width,
                                              target_batching=self.target_batching)

    @property
    def label(self) -> str:
        """The configuration's label (:attr:`SpecConfig.label`)."""
        return self.config().label

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"label": self.label, "mode": self.mode, "k1": self.k1, "k2": self.k2,
                "width": self.width, "target_batching": self.target_batching,
                "budget_used": self.budget_used,
                "speedup": self.speedup,
                "interval": None if self.interval is None else list(self.interval),
                "tokens_per_second": self.tokens_per_second}


@dataclass(frozen=True)
class DecoderOptimum:
    """The decoder model's answer to the budget-M problem."""

    budget: int
    """The parallelism budget M (k1 · k2 · W ≤ M)."""
    best: DecoderCandidate
    """The fastest refined candidate."""
    leanest: DecoderCandidate
    """The refined candidate using the least budget within ``tolerance`` of ``best``."""
    refined: list[DecoderCandidate]
    """The candidates simulated again with more problems and intervals, best first."""
    screened: list[DecoderCandidate]
    """Every candidate's screening prediction, best first."""
    tolerance: float
    """Relative tolerance of ``leanest``."""
    baseline_tokens_per_second: float | None
    """The target alone's predicted tokens/s (None: relative costs)."""
    sources: dict[str, str] = field(default_factory=dict)
    """Where each cost came from (:attr:`CostModel.sources`)."""
    gaps: list[str] = field(default_factory=list)
    """What the calibration lacks and what the model does instead."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"model": "decoder model", "budget": self.budget,
                "best": self.best.to_dict(), "leanest": self.leanest.to_dict(),
                "tolerance": self.tolerance,
                "baseline_tokens_per_second": self.baseline_tokens_per_second,
                "refined": [c.to_dict() for c in self.refined],
                "screened": [c.to_dict() for c in self.screened],
                "sources": dict(self.sources), "gaps": list(self.gaps)}


def candidates(budget: int, modes: tuple[str, ...] = ("sync", "async"),
               widths: tuple[int, ...] = (1, 2)) -> list[tuple[str, int, int, int]]:
    """Every (mode, k1, k2, W) with k1 · k2 · W ≤ ``budget`` (see the module docstring)."""
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise ValueError(f"budget must be an integer >= 1, got {budget!r}")
    bad = [m for m in modes if m not in ("sync", "async")]
    if bad or not modes:
        raise ValueError(f"modes must be sync and/or async, got {list(modes)}")
    if not widths or min(widths) < 1:
        raise ValueError(f"widths must be integers >= 1, got {list(widths)}")
    out = []
    for k2 in range(1, budget + 1):
        out.append(("sync", 1, k2, 1))
    for mode in modes:
        for k1 in range(2, budget + 1):
            for w in sorted(set(widths)):
                if w > 1 and mode != "sync":
                    continue
                for k2 in range(1, budget // (k1 * w) + 1):
                    out.append((mode, k1, k2, w))
    return out


def optimize_decoder(cal: Any, budget: int, *, base: SpecConfig | None = None,
                     modes: tuple[str, ...] = ("sync", "async"),
                     widths: tuple[int, ...] = (1, 2), prompt_tokens: int | None = None,
                     screen_problems: int = 30, refine: int = 5, problems: int = 150,
                     draws: int = 8, tolerance: float = 0.01, seed: int = 0,
                     costs: Any = None,
                     batchings: tuple[str, ...] = ("call",)) -> DecoderOptimum:
    """The decoder model's best configuration under ``budget`` (module docstring).
    ``costs``: a :class:`~specmodel.decodermodel.costs.CostModel` to price the calls by
    (default: :meth:`CostModel.from_calibration` of ``cal``); ``batchings``: the target
    batchings of the async candidates (``call``, ``continuous``: an engine with a
    running batch)."""
    from specmodel.decodermodel.acceptance import AcceptanceModel
    from specmodel.decodermodel.costs import CostModel
    from specmodel.decodermodel.simulate import Workload, predict

    if refine < 1:
        raise ValueError(f"refine must be >= 1, got {refine}")
    if not 0 <= tolerance < 1:
        raise ValueError(f"tolerance must be in [0, 1), got {tolerance}")
    bad = [b for b in batchings if b not in TARGET_BATCHINGS]
    if bad or not batchings:
        raise ValueError(f"batchings must be call and/or continuous, got {list(batchings)}")
    base = (base or cal.base_config("sync")).replace(target_batching="call")
    acc = AcceptanceModel.from_calibration(cal)
    costs = CostModel.from_calibration(cal) if costs is None else costs
    work = Workload.of(base, prompt_tokens)
    screened = []
    for mode, k1, k2, w in candidates(budget, modes, widths):
        if k1 == k2 == 1:  # the baseline: 1 by definition
            screened.append(DecoderCandidate(mode, 1, 1, 1, 1.0))
            continue
        for b in (sorted(set(batchings)) if mode == "async" and k1 > 1 else ["call"]):
            cfg = base.replace(mode=mode, k1=k1, k2=k2, width=w, target_batching=b)
            p = predict(cfg, acc, costs, work, problems=screen_problems, draws=0, seed=seed)
            screened.append(DecoderCandidate(mode, k1, k2, w, p.speedup, target_batching=b))
    screened.sort(key=lambda c: -c.speedup)
    refined = []
    base_tps = None
    for c in screened[:refine]:
        p = predict(c.config(base), acc, costs, work, problems=problems, draws=draws,
                    draw_problems=max(20, problems // 4), seed=seed)
        base_tps = p.baseline_tokens_per_second
        if c.k1 == c.k2 == 1:
            refined.append(DecoderCandidate(c.mode, 1, 1, 1, 1.0, (1.0, 1.0), base_tps))
            continue
        refined.append(DecoderCandidate(c.mode, c.k1, c.k2, c.width, p.speedup,
                                        p.interval, p.tokens_per_second, c.target_batching))
    refined.sort(key=lambda c: -c.speedup)
    best = refined[0]
    near = [c for c in refined if c.speedup >= best.speedup * (1 - tolerance)]
    leanest = min(near, key=lambda c: (c.budget_used, -c.speedup))
    return DecoderOptimum(budget, best, leanest, refined, screened, tolerance, base_tps,
                          {**costs.sources, "prompt_tokens": work.prompt_source},
                          cal.decoder_gaps())
