"""A run's engine calls against the price the decoder model gives each one.

The real decoder logs every target and draft call it makes
(:class:`~specmodel.formats.run_record.CallRecord`: rows, each row's prefix tokens, the
tokens it prefilled, the tokens the batch generated, its wall time).  The decoder
model prices a call by one formula (:func:`~specmodel.decodermodel.costs.call_price`:
overhead, prefill, decode iterations at T(b, L̄)).  Priced with the calibration's engine
costs at the shape the call really had, each logged call tells whether the model's
price of that kind of call is right — apart from whether the model plays the right
calls (the schedule) and draws the right step lengths (the acceptance model).

A call that ran beside a call of the other model (async) is priced with the
calibration's slowdown for the share of its time the two overlapped.  Calls with token
speculation inside (k2 > 1: their passes are not one token each) and calls whose
engine does not report its shape are counted, not priced.  :func:`call_audit` groups
the calls by configuration, role, rows and whether the batch was a sampled draft
branch, and sets side by side:

* measured seconds against priced (overhead, prefill and decode apart);
* the tokens the batch generated against the longest row's step — the iterations the
  model counts (a row that ends its step inside a token, or a stop found a token late,
  makes the batch run longer than its steps);

and per configuration its pace — the measured over the priced seconds of the calls it
could price — and its measured speedup at the baseline's pace (configurations decoded
one after another on a shared machine can meet different paces: one round of seed 24
ran its first three configurations at 1.04–1.18× their price and the rest at
0.87–0.95×); and per configuration whose calls never overlapped, the speedup it would
have measured had every call taken its price (all else — the verifier, the host between calls — as
measured): what is left between that and the measured speedup is the price of calls;
between it and the decoder model's prediction, the schedule, the step lengths and the
acceptance the model drew instead of the run's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from specmodel.formats.calibration import Calibration
from specmodel.formats.run_record import CallRecord, RunRecord

__all__ = ["CallAudit", "CallGroup", "RunPriced", "call_audit", "overlap_shares"]


@dataclass(frozen=True)
class CallGroup:
    """The priced calls of one kind in one configuration."""

    config: str
    """The configuration's label."""
    role: str
    """'target' or 'draft'."""
    rows: int
    """Prefixes per call."""
    sampled: bool
    """Sampled draft branches (the extra branches of a draft tree)."""
    calls: int
    """Calls priced."""
    measured: float
    """Their measured seconds, summed."""
    overhead: float
    """Priced seconds of the calls' fixed overhead."""
    prefill: float
    """Priced seconds of their prefill."""
    decode: float
    """Priced seconds of their decode iterations (at the measured iterations)."""
    beside: float
    """Priced seconds added for running beside the other model (its slowdown on the
    overlapped share of each call)."""
    overlap: float
    """Share of the measured time in which a call of the other model ran too."""
    context: float
    """Mean prefix tokens per row."""
    prefilled: float
    """Mean tokens prefilled per call."""
    iterations: float
    """Mean tokens the batch generated per call."""
    longest_step: float
    """Mean of the longest row's step tokens per call (what the model counts as its
    iterations)."""

    @property
    def priced(self) -> float:
        """Priced seconds in all."""
        return self.overhead + self.prefill + self.decode + self.beside

    @property
    def ratio(self) -> float:
        """Measured over priced seconds."""
        return self.measured / self.priced if self.priced > 0 else float("nan")

    def to_dict(self) -> dict[str, Any]:
        """Fields and the derived priced total and ratio, for JSON."""
        return {**asdict(self), "priced": self.priced, "ratio": self.ratio}


@dataclass(frozen=True)
class RunPriced:
    """One configuration's run with each logged call's time replaced by its price."""

    config: str
    """The configuration's label."""
    tokens: int
    """Output tokens of its problems."""
    wall: float
    """Their measured wall time."""
    calls: float
    """Measured time inside its engine calls."""
    priced: float | None
    """The same calls priced (None where some call could not be)."""
    verify: float
    """Measured time inside the verifier."""
    concurrent: bool
    """Calls of the two models overlapped (async): the calls' times do not add up to
    the wall time, so no wall time is priced."""
    paced_measured: float = 0.0
    """Measured seconds of the calls that could be priced (all but those with token
    speculation inside)."""
    paced_priced: float = 0.0
    """Their price, the slowdown beside the other model included."""

    @property
    def pace(self) -> float | None:
        """How fast the machine ran this configuration's priced calls: their measured
        over their priced seconds (None where none was priced).  Configurations decoded
        one after another on a shared machine can run at different paces; for an async
        one it also holds the error of the calibration's slowdown beside the other
        model."""
        return self.paced_measured / self.paced_priced if self.paced_priced > 0 else None

    @property
    def outside(self) -> float:
        """Measured wall time outside engine and verifier calls (the host between calls;
        meaningful only where no calls overlapped)."""
        return self.wall - self.calls - self.verify

    @property
    def priced_wall(self) -> float | None:
        """The wall time had every call taken its price, all else as measured (None where
        calls overlapped or some call could not be priced)."""
        if self.concurrent or self.priced is None:
            return None
        return self.priced + self.verify + self.outside

    def to_dict(self) -> dict[str, Any]:
        """Fields and the derived outside and priced wall time, for JSON."""
        return {**asdict(self), "outside": self.outside, "priced_wall": self.priced_wall,
                "pace": self.pace}


@dataclass(frozen=True)
class CallAudit:
    """Every configuration's logged engine calls against their price."""

    calibration: str
    """Name of the calibration whose costs priced the calls."""
    groups: list[CallGroup] = field(default_factory=list)
    """One per configuration, role, rows and sampling, in the record's order."""
    unpriced: dict[str, int] = field(default_factory=dict)
    """Configuration → calls logged but not priced (token speculation inside, or no
    shape reported)."""
    unlogged: list[str] = field(default_factory=list)
    """Configurations whose problems logged no call (records from before calls were
    logged)."""
    runs: list[RunPriced] = field(default_factory=list)
    """Per configuration that logged calls, its run with the calls priced."""
    baseline: str | None = None
    """The record's target-alone configuration."""

    def at_baseline_pace(self) -> dict[str, float | None]:
        """Configuration → its measured speedup had its calls run at the baseline's
        pace (measured speedup × its :attr:`RunPriced.pace` / the baseline's): what is
        left once the machine's drift between the configurations' turns is taken out
        (None where either pace is unknown; empty without a logged baseline)."""
        base = next((r for r in self.runs if r.config == self.baseline), None)
        if base is None or base.pace is None:
            return {}
        paces = {r.config: r.pace for r in self.runs}
        return {k: None if paces.get(k) is None else m * paces[k] / base.pace
                for k, (m, _) in self.speedups().items()}

    def speedups(self) -> dict[str, tuple[float, float | None]]:
        """Configuration → (measured speedup, speedup had every call taken its price),
        both over the baseline's run the same way (empty without a logged baseline)."""
        base = next((r for r in self.runs if r.config == self.baseline), None)
        if base is None or base.tokens == 0:
            return {}
        out = {}
        for r in self.runs:
            if r.tokens == 0:
                continue
            measured = (r.tokens / r.wall) / (base.tokens / base.wall)
            pw, bw = r.priced_wall, base.priced_wall
            out[r.config] = (measured, None if pw is None or bw is None
                             else (r.tokens / pw) / (base.tokens / bw))
        return out

    def to_dict(self) -> dict[str, Any]:
        """For JSON."""
        paced = self.at_baseline_pace()
        return {"calibration": self.calibration, "baseline": self.baseline,
                "groups": [g.to_dict() for g in self.groups],
                "runs": [r.to_dict() for r in self.runs],
                "speedups": {k: {"measured": m, "priced_calls": p,
                                 "at_baseline_pace": paced.get(k)}
                             for k, (m, p) in self.speedups().items()},
                "unpriced": dict(self.unpriced), "unlogged": list(self.unlogged)}


def overlap_shares(calls: Sequence[CallRecord]) -> list[float]:
    """For each call, the share of its time in which a call of the other role ran (the
    calls of one problem; 0 for a call of no duration)."""
    out = []
    for c in calls:
        end = c.start + c.seconds
        beside = 0.0
        for o in calls:
            if o.role != c.role:
                beside += max(0.0, min(end, o.start + o.seconds) - max(c.start, o.start))
        out.append(min(1.0, beside / c.seconds) if c.seconds > 0 else 0.0)
    return out


def call_audit(record: RunRecord, calibration: Calibration | None = None) -> CallAudit:
    """Price every logged call of ``record`` with ``calibration``'s engine costs (the
    record's own calibration by default); a ValueError where there is none or its
    costs are not in seconds."""
    from specmodel.decodermodel.costs import CostModel, call_price

    cal = calibration or record.calibration
    if cal is None:
        raise ValueError("calibration must be given: the run record carries none")
    costs = CostModel.from_calibration(cal)
    if costs.unit != "s":
        raise ValueError(f"calibration {cal.name!r}: its costs are relative to one target "
                         "forward, not seconds; a call's measured time needs an engine_costs "
                         "section (profile engine-costs)")
    slowdown = {"target": costs.contention,
                "draft": costs.contention if costs.draft_contention is None
                else costs.draft_contention}
    audit = CallAudit(cal.name, baseline=record.baseline)
    for c in record.configs:
        if not any(p.calls for p in c.problems):
            audit.unlogged.append(c.label)
            continue
        acc: dict[tuple[str, int, bool], dict[str, float]] = {}
        priced_calls: float | None = 0.0
        paced = [0.0, 0.0]  # measured and priced seconds of the calls priced
        concurrent = False
        for p in c.problems:
            shares = overlap_shares(p.calls)
            concurrent = concurrent or any(x > 0 for x in shares)
            for call, share in zip(p.calls, shares, strict=True):
                if (call.prompt_tokens is None or call.prefilled_tokens is None
                        or call.iterations is None):
                    audit.unpriced[c.label] = audit.unpriced.get(c.label, 0) + 1
                    priced_calls = None
                    continue
                surface, prefill, over = costs.role_costs(call.role)
                price = call_price(surface, prefill, over, call.prompt_tokens,
                                   call.prefilled_tokens, call.iterations)
                if priced_calls is not None:
                    priced_calls += price.total
                beside = price.total * (slowdown[call.role] - 1) * share
                paced[0] += call.seconds
                paced[1] += price.total + beside
                g = acc.setdefault((call.role, call.rows, call.sampled), dict.fromkeys(
                    ("calls", "measured", "overhead", "prefill", "decode", "beside",
                     "overlap", "context", "prefilled", "iterations", "longest"), 0.0))
                g["calls"] += 1
                g["measured"] += call.seconds
                g["overhead"] += price.overhead
                g["prefill"] += price.prefill
                g["decode"] += price.decode
                g["beside"] += beside
                g["overlap"] += share * call.seconds
                g["context"] += sum(call.prompt_tokens) / call.rows
                g["prefilled"] += call.prefilled_tokens
                g["iterations"] += call.iterations
                g["longest"] += max(call.step_tokens, default=0)
        for (role, rows, sampled), g in acc.items():
            n = g["calls"]
            audit.groups.append(CallGroup(
                config=c.label, role=role, rows=rows, sampled=sampled, calls=int(n),
                measured=g["measured"], overhead=g["overhead"], prefill=g["prefill"],
                decode=g["decode"], beside=g["beside"],
                overlap=g["overlap"] / g["measured"] if g["measured"] > 0 else 0.0,
                context=g["context"] / n, prefilled=g["prefilled"] / n,
                iterations=g["iterations"] / n, longest_step=g["longest"] / n))
        audit.runs.append(RunPriced(
            config=c.label, tokens=sum(p.output_tokens for p in c.problems),
            wall=sum(p.seconds for p in c.problems),
            calls=sum(k.seconds for p in c.problems for k in p.calls),
            priced=priced_calls, verify=sum(p.verify_seconds for p in c.problems),
            concurrent=concurrent, paced_measured=paced[0], paced_priced=paced[1]))
    return audit
