"""The speed probe in a hardware profile: what a profile with one must hold, and
:meth:`HardwareProfile.at_probe`'s scaling, as properties."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from specmodel.formats.hardware import HardwareProfile

ARCH = {"name": "t", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
        "vocab_size": 512, "tie_word_embeddings": True, "attention_bias": False}
times = st.floats(min_value=0.01, max_value=1e4, allow_nan=False)


def profile(ms: list[float], probes: list[float] | None, final: float | None,
            skipped_at: int | None = None) -> dict[str, Any]:
    """A profile of decode points b = 1.. with median ``ms`` (min = max = median)."""
    points: list[dict[str, Any]] = []
    for i, t in enumerate(ms):
        p: dict[str, Any] = {"kind": "decode", "batch": i + 1, "new_tokens": 1,
                             "context": 16, "ms": [t, t, t], "n": 1, "mean_ms": t}
        if probes is not None:
            p["probe_ms"] = probes[i]
        points.append(p)
    if skipped_at is not None:
        points.insert(skipped_at, {"kind": "decode", "batch": 99, "new_tokens": 1,
                                   "context": 16, "skipped": "needs more memory"})
    out = {"architecture": ARCH, "device": {"type": "cpu", "name": "x"},
           "dtype": "float32", "path": "eager", "path_description": "d", "repeats": 1,
           "warmup": 0, "seed": 0, "versions": {}, "date": "2026-11-27",
           "setup_seconds": 0, "measure_seconds": 0, "points": points}
    if final is not None:
        out["probe"] = {"description": "p", "final_ms": final}
    return out


@given(st.lists(st.tuples(times, times), min_size=1, max_size=8), times, times,
       st.integers(0, 8))
def test_each_point_is_scaled_by_the_probe_around_it(pairs, final, ref, skip) -> None:
    """A timed point's times are multiplied by ref over the mean of the probe before it
    and the next one (the final probe after the last); skipped points are untouched and
    do not count as neighbours; the scaling is linear in ref."""
    ms, probes = [t for t, _ in pairs], [p for _, p in pairs]
    prof = HardwareProfile.model_validate(
        profile(ms, probes, final, skipped_at=min(skip, len(ms))))
    scaled = prof.at_probe(ref, window=0)
    after = [*probes[1:], final]
    for p, q, before, nxt in zip(prof.timed(), scaled.timed(), probes, after, strict=True):
        f = ref / ((before + nxt) / 2)
        assert q.ms == pytest.approx([v * f for v in p.ms])
        assert q.mean_ms == pytest.approx(p.mean_ms * f)
        assert q.probe_ms == p.probe_ms
    assert [p for p in scaled.points if p.skipped] == [p for p in prof.points if p.skipped]
    twice = prof.at_probe(2 * ref, window=0)
    for a, b in zip(scaled.timed(), twice.timed(), strict=True):
        assert b.ms[0] == pytest.approx(2 * a.ms[0])
    assert "scaled to the speed" in scaled.path_description


@given(st.lists(st.tuples(times, times), min_size=1, max_size=12), times, times,
       st.integers(0, 6))
def test_a_window_takes_the_median_of_the_probes_around_each_point(pairs, final, ref,
                                                                   w) -> None:
    """With a window w, point j is scaled by ref over the median of the probe times
    j - w .. j + 1 + w (clipped to the profile): the two neighbours and w on each side."""
    import statistics

    ms, probes = [t for t, _ in pairs], [p for _, p in pairs]
    prof = HardwareProfile.model_validate(profile(ms, probes, final))
    seq = [*probes, final]
    for j, (p, q) in enumerate(zip(prof.timed(), prof.at_probe(ref, window=w).timed(),
                                   strict=True)):
        f = ref / statistics.median(seq[max(0, j - w):j + w + 2])
        assert q.ms[0] == pytest.approx(p.ms[0] * f)


@given(st.lists(times, min_size=1, max_size=8), times)
def test_a_steady_machine_is_left_as_measured(ms, c) -> None:
    """Where the probe took the same time throughout, scaling to that time changes
    nothing."""
    prof = HardwareProfile.model_validate(profile(ms, [c] * len(ms), c))
    for w in (0, 1, 2, 5):
        for a, b in zip(prof.timed(), prof.at_probe(c, window=w).timed(), strict=True):
            assert b.ms == pytest.approx(a.ms)


def test_a_profile_is_probed_throughout_or_not_at_all() -> None:
    with pytest.raises(ValidationError, match="no probe record"):
        HardwareProfile.model_validate(profile([1.0], [2.0], None))
    with pytest.raises(ValidationError, match="probe_ms on every timed point"):
        bad = profile([1.0, 2.0], [2.0, 2.0], 2.0)
        del bad["points"][1]["probe_ms"]
        HardwareProfile.model_validate(bad)
    with pytest.raises(ValidationError, match="a skipped point has no probe_ms"):
        bad = profile([1.0], [2.0], 2.0, skipped_at=0)
        bad["points"][0]["probe_ms"] = 2.0
        HardwareProfile.model_validate(bad)
    plain = HardwareProfile.model_validate(profile([1.0], None, None))
    with pytest.raises(ValueError, match="ran no speed probe"):
        plain.at_probe(1.0)
    probed = HardwareProfile.model_validate(profile([1.0], [2.0], 2.0))
    for bad_ref in (0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="reference_ms must be a time > 0"):
            probed.at_probe(bad_ref)
    for bad_window in (-1, 1.5, True):
        with pytest.raises(ValueError, match="window must be an integer >= 0"):
            probed.at_probe(1.0, window=bad_window)  # type: ignore[arg-type]
