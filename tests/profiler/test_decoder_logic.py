"""The decoder's algorithms on scripted engines: what each cycle sends, keeps and counts.

The real engines are exercised in tests/live/test_decoder.py; here two scripted
engines make every branch of the algorithms reachable on purpose.  The target's
step after n committed lines is ``t{n}``; the greedy draft is right except at
the positions listed in ``wrong`` (where it writes ``x{n}``), and a sampled
draft is always right, so a second branch repairs exactly those positions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from profiler.decoder import LookaheadDecoder
from profiler.engines import StepBatch, StepOutput
from profiler.problems import Problem, format_prompt
from profiler.verifiers import ExactMatch
from specmodel.config import SpecConfig, TokenSpeculation

PROBLEM = Problem(index=0, question="What is 6 times 7?", answer="42",
                  answer_cot="6 * 7 = 42\n#### 42")
LAST = 7
"""The target writes the answer as its step after LAST committed lines."""


def _lines(prefix: str) -> int:
    return prefix[len(format_prompt(PROBLEM)):].count("\n")


@dataclass
class Scripted:
    """An engine whose step depends only on how many lines follow the prompt."""

    wrong: frozenset[int] = frozenset()
    name: str = "scripted"
    delimiter: str = "\n"
    speculation: TokenSpeculation | None = None
    calls: list[tuple[int, float]] = field(default_factory=list)

    def step(self, n: int, temperature: float) -> str:
        if n == LAST:
            return "#### 42\n"
        return f"x{n}\n" if n in self.wrong and temperature == 0 else f"t{n}\n"

    def generate_steps(self, prefixes, max_tokens, *, temperature=0.0, seed=None) -> StepBatch:
        self.calls.append((len(prefixes), temperature))
        outs = [StepOutput(self.step(_lines(p), temperature), 1, "stop") for p in prefixes]
        return StepBatch(outs, 0.001 * len(prefixes))

    def count_tokens(self, text: str) -> int:
        return text.count("\n")

    def with_speculation(self, speculation: TokenSpeculation | None) -> Scripted:
        return self if speculation == self.speculation else Scripted(
            self.wrong, self.name, self.delimiter, speculation)

    def spec_decode_metrics(self) -> dict:
        return {"drafts": len(self.calls)} if self.speculation else {}


def _config(mode: str = "sync", **kw) -> SpecConfig:
    return SpecConfig(mode=mode, step_delimiter="\n", **{"max_steps": 20, **kw})


def _decode(config: SpecConfig, wrong: set[int]) -> tuple:
    target, draft = Scripted(), Scripted(frozenset(wrong))
    dec = LookaheadDecoder(target, draft if config.k1 > 1 else None,
                           ExactMatch() if config.k1 > 1 else None, config)
    return dec.decode(PROBLEM), target, draft


REFERENCE = "".join(f"t{n}\n" for n in range(LAST)) + "#### 42\n"


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("k1", [1, 2, 3, 5])
@pytest.mark.parametrize("wrong", [set(), {0}, {1, 2}, {0, 1, 2, 3, 4, 5, 6}])
def test_exact_match_output_is_the_target_s_whatever_the_draft(mode, k1, wrong) -> None:
    run, _, _ = _decode(_config(mode, k1=k1), wrong)
    assert run.output == REFERENCE and run.finished == "answer" and run.correct
    assert run.finished_at is not None and run.finished_at.endswith("+00:00")
    assert run.accepted_steps <= run.drafted_steps
    if k1 > 1:
        # Every committed step that is not the target's is an accepted draft.
        assert sum(s.source == "draft" for s in run.steps) == run.accepted_steps


def test_sync_chain_counts_positions_and_batches() -> None:
    run, target, draft = _decode(_config(k1=3), {1})
    # Cycle 1: drafts t0, x1; target expands 3 prefixes; t0 accepted, x1 rejected -> t0 t1.
    # Then cycles from line 2: t2 t3 (+t4), t5 t6 (+#### at LAST, the bonus step).
    assert [s.source for s in run.steps[:2]] == ["draft", "target"]
    assert target.calls[0] == (3, 0.0)
    assert all(temp == 0.0 for _, temp in draft.calls)  # W = 1 never samples
    assert run.drafted_steps == 2 + 2 + 2 and run.accepted_steps == 1 + 2 + 2
    assert run.target_batches == 3


def test_two_branches_repair_what_the_greedy_draft_gets_wrong() -> None:
    chain, _, _ = _decode(_config(k1=3), {0, 3})
    tree, target, draft = _decode(_config(k1=3, width=2), {0, 3})
    assert tree.output == chain.output == REFERENCE
    # The sampled branch is right where the greedy one is wrong: every position accepted.
    assert tree.accepted_steps == tree.drafted_steps > 0
    assert chain.accepted_steps < chain.drafted_steps
    assert (tree.target_batches, chain.target_batches) == (3, 4)
    # Each draft level is one greedy batch and one sampled batch (W − 1 copies per parent).
    assert any(temp > 0 for _, temp in draft.calls)
    # Identical siblings are kept once, so a target batch is at most 1 + W + W^2 = 7 wide
    # and here, where the branches differ only at wrong positions, narrower.
    assert max(b for b, _ in target.calls) < 7


def test_tree_depth_and_width_bound_the_target_batch() -> None:
    run, target, _ = _decode(_config(k1=3, width=3), set(range(LAST)))
    assert run.output == REFERENCE
    # Greedy branches are always wrong, sampled ones always right and identical to each
    # other: two children per node; 1 + 2 + 4 nodes at most in a target batch.
    assert target.calls[0][0] == 1 + 2 + 4


def test_max_steps_caps_the_output() -> None:
    run, _, _ = _decode(_config(k1=4, width=2, max_steps=3), set())
    assert len(run.steps) == 3 and run.finished == "max_steps"


def test_totals_are_the_run_record_s() -> None:
    from profiler.decoder import totals
    from specmodel.formats.run_record import Totals

    runs = [_decode(_config(k1=3), {1})[0], _decode(_config(k1=3), set())[0]]
    t = totals(runs)
    assert isinstance(t, Totals) and t.problems == 2
    assert t.drafted_steps == sum(r.drafted_steps for r in runs)
    assert t.step_acceptance == pytest.approx(t.accepted_steps / t.drafted_steps)
    assert t.accuracy == 1.0
    assert t.tokens_per_second == pytest.approx(t.output_tokens / t.seconds)
    with pytest.raises(ValueError, match="runs"):
        totals([])


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_run_counts_draft_steps_that_end_the_answer(mode) -> None:
    """The draft writes the answer mark at line LAST, like the target: that draft step
    ends the answer (nothing is drafted after it); the run record counts it."""
    run, _, draft = _decode(_config(mode, k1=3), set())
    assert run.draft_steps == sum(b for b, _ in draft.calls)
    assert run.draft_ends is not None and 1 <= run.draft_ends <= run.draft_steps
    plain, _, _ = _decode(_config(mode, k1=1), set())
    assert (plain.draft_steps, plain.draft_ends) == (0, 0)


@dataclass
class Shaped(Scripted):
    """A scripted engine that reports its calls' shapes, as the transformers engine does."""

    def generate_steps(self, prefixes, max_tokens, *, temperature=0.0, seed=None) -> StepBatch:
        batch = super().generate_steps(prefixes, max_tokens, temperature=temperature)
        return StepBatch(batch.outputs, batch.seconds, prompt_tokens=[len(p) for p in prefixes],
                         prefilled_tokens=sum(map(len, prefixes)), iterations=2)


@pytest.mark.parametrize(("mode", "width"), [("sync", 1), ("sync", 2), ("async", 1)])
def test_every_engine_call_is_logged_in_the_order_it_began(mode, width) -> None:
    target, draft = Shaped(), Shaped(frozenset({1, 3}))
    config = _config(mode, k1=3, width=width)
    run = LookaheadDecoder(target, draft, ExactMatch(), config).decode(PROBLEM)
    calls = run.calls
    assert [c.start for c in calls] == sorted(c.start for c in calls)
    assert all(c.start >= 0 and c.seconds > 0 for c in calls)
    tcalls = [c for c in calls if c.role == "target"]
    dcalls = [c for c in calls if c.role == "draft"]
    assert len(tcalls) == run.target_batches == len(target.calls)
    assert sum(c.rows for c in tcalls) == run.target_steps
    assert sum(c.rows for c in dcalls) == run.draft_steps
    assert sum(c.seconds for c in tcalls) == pytest.approx(run.target_seconds)
    assert sum(c.sampled for c in dcalls) == sum(t > 0 for _, t in draft.calls)
    assert (width > 1) == any(c.sampled for c in dcalls)
    for c in calls:  # the engine's shape, passed through
        assert c.prompt_tokens is not None and len(c.prompt_tokens) == c.rows
        assert c.prefilled_tokens == sum(c.prompt_tokens) and c.iterations == 2
        assert c.step_tokens == [1] * c.rows


def test_an_engine_that_reports_no_shape_logs_its_calls_without_one() -> None:
    run, target, _ = _decode(_config(k1=2), {0})
    assert len(run.calls) == len(target.calls) + run.draft_steps
    assert all(c.prompt_tokens is None and c.iterations is None for c in run.calls)
