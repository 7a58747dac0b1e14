"""Sync Lookahead Reasoning (the paper's Algorithm 1), with a draft tree of width W.

Each cycle drafts the tree level by level (depth k1 − 1): every open node at one
depth gets W children, the greedy draft step and W − 1 sampled ones (identical
siblings are kept once).  The target expands the root and every open draft node
as one batch; the verifier judges every (parent's target step, child) pair as one
batch; from the root the walk follows the first accepted child (the greedy one
first) and commits the accepted drafts and the target's step at the last accepted
node.  With W = 1 the tree is Algorithm 1's chain.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from profiler.decoder.records import StepRecord, Tally, ends_answer, finish_reason
from profiler.engines import StepOutput

if TYPE_CHECKING:
    from profiler.decoder.core import Finish, LookaheadDecoder

__all__ = ["run_sync"]


@dataclass
class _Node:
    """A node of the sync draft tree: the root (the committed prefix) or a draft step."""

    parent: int
    """Index of the parent node (-1 for the root)."""
    step: StepOutput | None
    """The draft step that leads here (None at the root)."""
    prefix: str
    """The text up to and including this node."""

    def open(self, delimiter: str) -> bool:
        """Whether something follows this node (a draft that ends the answer is closed)."""
        return self.step is None or not ends_answer(self.step, delimiter)


def run_sync(
    dec: LookaheadDecoder, prompt: str, tally: Tally
) -> tuple[list[StepRecord], Finish]:
    """Decode from ``prompt`` with sync cycles until the answer ends or ``max_steps``."""
    cfg = dec.config
    delim = cfg.step_delimiter
    steps: list[StepRecord] = []
    prefix = prompt
    while len(steps) < cfg.max_steps:
        depth = min(cfg.k1 - 1, cfg.max_steps - len(steps) - 1)
        tree = [_Node(-1, None, prefix)]
        level = [0]
        for _ in range(depth):
            level = _draft_level(dec, tree, level, tally)
            if not level:
                break
        expand = [i for i, n in enumerate(tree) if n.open(delim)]
        outs = dict(zip(expand, dec.target_steps([tree[i].prefix for i in expand], tally),
                        strict=True))
        path, node = _walk(dec, tree, outs, tally)
        for i in path:
            d = tree[i].step
            assert d is not None
            prefix += d.text
            if dec.commit(steps, d, "draft"):
                return steps, finish_reason(d)
        if node in outs:
            prefix += outs[node].text
            if dec.commit(steps, outs[node], "target"):
                return steps, finish_reason(outs[node])
    return steps, "max_steps"


def _draft_level(
    dec: LookaheadDecoder, tree: list[_Node], level: list[int], tally: Tally
) -> list[int]:
    """Draft W children of every open node of ``level`` into ``tree``; the new level."""
    cfg = dec.config
    parents = [i for i in level if tree[i].open(cfg.step_delimiter)]
    if not parents:
        return []
    kids: dict[int, list[StepOutput]] = {i: [] for i in parents}
    for i, d in zip(parents, dec.draft_steps([tree[i].prefix for i in parents], tally),
                    strict=True):
        kids[i].append(d)
    if cfg.width > 1:
        reps = [i for i in parents for _ in range(cfg.width - 1)]
        tally.samples += 1
        sampled = dec.draft_steps([tree[i].prefix for i in reps], tally,
                                  temperature=cfg.branch_temperature,
                                  seed=tally.seed + tally.samples)
        for i, d in zip(reps, sampled, strict=True):
            if all(d.text != k.text for k in kids[i]):
                kids[i].append(d)
    new = []
    for i in parents:
        for d in kids[i]:
            tree.append(_Node(i, d, tree[i].prefix + d.text))
            new.append(len(tree) - 1)
    return new


def _walk(
    dec: LookaheadDecoder, tree: list[_Node], outs: dict[int, StepOutput], tally: Tally
) -> tuple[list[int], int]:
    """Verify every edge of the tree as one batch; follow accepted children from the root.

    Returns the accepted draft nodes in order and the node the walk stopped at.
    A position counts once in the tally, however many branches it had.
    """
    edges = list(range(1, len(tree)))
    if not edges:
        return [], 0
    pairs = []
    for i in edges:
        step = tree[i].step
        assert step is not None
        pairs.append((outs[tree[i].parent].text, step.text))
    verdicts = dec.verify_many(pairs, tally)
    accepted = {i for i, ok in zip(edges, verdicts, strict=True) if ok}
    path: list[int] = []
    node = 0
    while True:
        children = [i for i in edges if tree[i].parent == node]
        if not children:
            break
        tally.drafted += 1
        nxt = next((i for i in children if i in accepted), None)
        if nxt is None:
            break
        tally.accepted += 1
        path.append(nxt)
        node = nxt
    return path, node
