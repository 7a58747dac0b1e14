"""The profile-sweeps benchmark's summary: spreads over passes, per point and per
configuration (pure arithmetic on recorded passes; the benchmark itself times real
forwards and is run by hand, its results in docs/hardware.md)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.bench_profile_sweeps import log_sd, main, summarise


@given(st.lists(st.floats(0.01, 100), min_size=2, max_size=20), st.floats(0.1, 10))
def test_log_sd_is_scale_free(values: list[float], scale: float) -> None:
    """The spread of log(values) is unchanged by a common factor, zero for equal values,
    and the sample standard deviation of the logs."""
    assert log_sd([v * scale for v in values]) == pytest.approx(log_sd(values), abs=1e-9)
    assert log_sd([values[0]] * len(values)) == pytest.approx(0.0, abs=1e-12)
    logs = [math.log(v) for v in values]
    mean = sum(logs) / len(logs)
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1))
    assert log_sd(values) == pytest.approx(sd, rel=1e-9, abs=1e-12)
    assert log_sd(values[:1]) == 0.0


def test_summary_of_recorded_passes() -> None:
    """Per kind of pass: the median and largest point spread, each configuration's
    predictions and spread (the baseline left out), their mean spread and range."""
    def one(point_ms: float, pred: float, seconds: float) -> dict:
        return {"points": {"t: decode b=1 q=1 L=256": point_ms, "t: verify b=1 q=2 L=256": 20.0},
                "predicted": {"target": 1.0, "token k2=2": pred}, "seconds": seconds}

    got = summarise({1: [one(10.0, 0.8, 30.0), one(15.0, 0.6, 31.0)],
                     3: [one(10.0, 0.7, 28.0), one(10.0, 0.7, 29.0)]})
    one_sweep, three = got["1"], got["3"]
    assert one_sweep["passes"] == 2 and one_sweep["seconds"] == [30.0, 31.0]
    assert one_sweep["point_log_sd_max"] == pytest.approx(math.log(1.5) / math.sqrt(2))
    assert one_sweep["point_log_sd_median"] == pytest.approx(math.log(1.5) / math.sqrt(2) / 2)
    assert list(one_sweep["predicted"]) == ["token k2=2"]
    assert one_sweep["predicted_range_mean"] == pytest.approx(0.8 / 0.6 - 1)
    assert three["predicted_log_sd_mean"] == 0.0 and three["point_log_sd_max"] == 0.0


@pytest.mark.parametrize("args, says", [
    (["--passes", "1"], "--passes must be at least 2, got 1"),
    (["--sweeps", "1"], "--sweeps must be between 2 and --profile-repeats (3), got 1"),
    (["--sweeps", "4"], "--sweeps must be between 2 and --profile-repeats (3), got 4"),
])
def test_bad_options_name_themselves(args: list[str], says: str, capsys) -> None:
    with pytest.raises(SystemExit) as e:
        main(args)
    assert e.value.code == 2 and says in capsys.readouterr().err
