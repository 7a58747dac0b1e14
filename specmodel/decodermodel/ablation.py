"""The decoder model with its assumptions relaxed one at a time (issue 12's ablation).

Starting from the papers' idealisation (flat costs with a draft forward c1, i.i.d.
acceptance, constant step lengths, the papers' engine), each step adds one thing the
full model (:meth:`CostModel.from_calibration`, :meth:`AcceptanceModel.from_calibration`)
prices, in :data:`STEPS` order, until the full model is reached.  Evaluated on the same
runs, the change in error from one step to the next is what that assumption was
worth.  Pure: the variants are cost and acceptance models; the benchmark
(``benchmarks/bench_ablation.py``) simulates them against run records.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from specmodel.decodermodel.acceptance import AcceptanceModel, StepLengths
from specmodel.decodermodel.costs import CostModel, Surface

__all__ = ["STEPS", "Variant", "variants"]

STEPS: tuple[tuple[str, str], ...] = (
    ("papers", "the papers' idealisation played by the simulator: flat T, draft c1, "
               "i.i.d. acceptance, constant steps, the papers' engine"),
    ("schedule", "+ the decoder's own schedule (a batch runs to its longest member, KV "
                 "reuse only on single-prefix calls, token speculation one prefix at a "
                 "time)"),
    ("T(b)", "+ the batch cost T(b) of each model (measured at the shortest context)"),
    ("context", "+ the context length: T(b, L)"),
    ("prefill", "+ prefill of every uncached prompt token"),
    ("overhead", "+ the fixed per-call overhead"),
    ("verifier", "+ the verifier's cost per judged pair"),
    ("token passes", "+ a token-speculation pass priced as measured through the engine "
                     "(instead of by c2)"),
    ("step lengths", "+ the measured spread of target and draft step lengths (jointly, "
                     "per prefix, where measured)"),
    ("acceptance", "+ position-dependent acceptance (by depth, by token position and "
                   "the passes that draft nothing, verdict correlation, the problems' spread "
                   "of step and token acceptance, token rates measured at each k2, "
                   "measured best-of-W and repeated "
                   "branches, draft and target steps that end the answer)"),
    ("length verdicts", "+ the verdict's dependence on the two steps' lengths from one "
                        "prefix (an accepted draft step is about as long as the target's)"),
    ("answer position", "+ step acceptance along the answer (each step index's offset)"),
    ("concurrency", "+ the slowdown of each model while the other runs (async)"),
)
"""(name, what it adds), in the order they are added; the last is the full model."""

Variant = tuple[str, CostModel, AcceptanceModel]
"""(step name, its cost model, its acceptance model)."""


def _at_shortest_context(s: Surface) -> Surface:
    """The surface with its L dependence removed: each width's time at the shortest
    measured context."""
    L0 = min(L for _, L, _ in s.points)
    bs = sorted({b for b, _, _ in s.points})
    return Surface.from_points({(b, 0): s.time(b, L0) for b in bs})


def variants(cal: Any) -> list[Variant]:
    """One (name, costs, acceptance) per :data:`STEPS` entry, cumulative; the last is
    the full model of ``cal``."""
    full_c = CostModel.from_calibration(cal)
    full_a = AcceptanceModel.from_calibration(cal)
    t1 = full_c.target_decode.time(1, 0)
    d1 = full_c.draft_decode.time(1, 0)
    c1 = d1 / t1 if t1 > 0 else cal.step.c1
    ideal_c = replace(CostModel.flat(c1, c2=full_c.token_draft_per_forward),  # c2 as f·g
                      target_decode=Surface.flat(t1), draft_decode=Surface.flat(d1),
                      unit=full_c.unit)
    ideal_a = replace(full_a, step_by_depth=None, token_by_position=None,
                      branch_by_width={}, verdict_correlation=0.0, draft_end_rate=0.0,
                      target_end_rate=0.0, duplicate_branch_rate=0.0,
                      step_length_pairs=None, problem_spread=(), token_draft_rate=1.0,
                      length_effect=None, index_shift=(), token_problem_spread=(),
                      token_by_k2={}, step_length_answers=None,
                      target_steps=StepLengths.constant(full_a.target_steps.mean),
                      draft_steps=StepLengths.constant(full_a.draft_steps.mean))
    steps: dict[str, dict[str, Any]] = {
        "schedule": {"engine": full_c.engine},
        "T(b)": {"target_decode": _at_shortest_context(full_c.target_decode),
                 "draft_decode": _at_shortest_context(full_c.draft_decode)},
        "context": {"target_decode": full_c.target_decode,
                    "draft_decode": full_c.draft_decode},
        "prefill": {"prefill_per_token": full_c.prefill_per_token,
                    "draft_prefill_per_token": full_c.draft_prefill_per_token},
        "overhead": {"call_overhead": full_c.call_overhead,
                     "draft_call_overhead": full_c.draft_call_overhead},
        "verifier": {"verifier_per_pair": full_c.verifier_per_pair,
                     "verifier_per_batch": full_c.verifier_per_batch},
        "token passes": {"pass_multipliers": full_c.pass_multipliers},
        "concurrency": {"contention": full_c.contention,
                        "draft_contention": full_c.draft_contention,
                        "speculative_contention": full_c.speculative_contention},
    }
    acc_steps: dict[str, dict[str, Any]] = {
        "step lengths": {"target_steps": full_a.target_steps,
                         "draft_steps": full_a.draft_steps,
                         "step_length_pairs": full_a.step_length_pairs,
                         "step_length_answers": full_a.step_length_answers},
        "acceptance": {"step_by_depth": full_a.step_by_depth,
                       "token_by_position": full_a.token_by_position,
                       "branch_by_width": full_a.branch_by_width,
                       "verdict_correlation": full_a.verdict_correlation,
                       "draft_end_rate": full_a.draft_end_rate,
                       "target_end_rate": full_a.target_end_rate,
                       "duplicate_branch_rate": full_a.duplicate_branch_rate,
                       "problem_spread": full_a.problem_spread,
                       "token_problem_spread": full_a.token_problem_spread,
                       "token_draft_rate": full_a.token_draft_rate,
                       "token_by_k2": full_a.token_by_k2},
        "length verdicts": {"length_effect": full_a.length_effect},
        "answer position": {"index_shift": full_a.index_shift},
    }
    out: list[Variant] = [("papers", ideal_c, ideal_a)]
    costs, acc = ideal_c, ideal_a
    for name, _ in STEPS[1:]:
        if name in steps:
            costs = replace(costs, **steps[name])
        else:
            acc = replace(acc, **acc_steps[name])
        out.append((name, costs, acc))
    return out

