"""``bench_length_scale.scaled``: every step length the acceptance model holds scaled,
its probabilities kept."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from benchmarks.bench_length_scale import scaled
from specmodel.decodermodel.acceptance import AcceptanceModel, StepLengths


@given(factor=st.floats(0.1, 3.0),
       lengths=st.lists(st.integers(1, 60), min_size=1, max_size=6, unique=True))
def test_every_length_scales_and_no_weight_moves(factor, lengths) -> None:
    hist = StepLengths.histogram({n: i + 1 for i, n in enumerate(lengths)})
    pairs = tuple((n, n + 1, 1.0) for n in lengths)
    answers = (tuple((n, n) for n in lengths),)
    acc = AcceptanceModel(alpha1=0.4, alpha2=0.5, target_steps=hist, draft_steps=hist,
                          step_length_pairs=pairs, step_length_answers=answers)
    out = scaled(acc, factor)

    def n(v: int) -> int:
        return max(1, round(v * factor))

    assert out.target_steps.values == tuple(n(v) for v in hist.values)
    assert out.target_steps.weights == hist.weights == out.draft_steps.weights
    assert out.step_length_pairs == tuple((n(t), n(d), w) for t, d, w in pairs)
    assert out.step_length_answers == (tuple((n(t), n(d)) for t, d in answers[0]),)
    assert out.alpha1 == acc.alpha1  # nothing else moves
    assert scaled(acc, 1.0) == acc
