"""``bench_heldout``'s registrations: predictions written before a sweep decodes are
never overwritten, a further one gets its own tag, and the report refuses one made for
other problems (on the committed seed-3 registrations; nothing is written)."""

from __future__ import annotations

import argparse
from types import SimpleNamespace

import pytest

from benchmarks.bench_heldout import RESULTS, main, registered_predictions, registration_name

CAL = "benchmarks/results/heldout_15b_calibration_recal.json"


def _args(**changes) -> argparse.Namespace:
    base = {"trio": "1.5b", "problems": 6, "seed": 3, "max_steps": 12,
            "max_step_tokens": 48, "registered": None}
    return argparse.Namespace(**{**base, **changes})


def test_a_registration_is_never_overwritten(capsys) -> None:
    before = (RESULTS / "heldout_15b_s3.registered.json").read_bytes()
    code = main(["--trio", "1.5b", "--problems", "6", "--seed", "3", "--out",
                 "heldout_15b_s3", "--calibration", CAL, "--register"])
    assert code == 2 and "never overwritten" in capsys.readouterr().err
    assert (RESULTS / "heldout_15b_s3.registered.json").read_bytes() == before
    assert registration_name("x", None) == "x.registered"
    assert registration_name("x", "passes") == "x.registered-passes"


def test_the_report_reads_the_registration_it_is_told_to() -> None:
    first = SimpleNamespace(baseline="target")
    plain = registered_predictions(_args(), "heldout_15b_s3", first)
    again = registered_predictions(_args(registered="passes"), "heldout_15b_s3", first)
    assert plain is not None and again is not None
    assert plain["target"] == again["target"] == (1.0, None, None)
    # registrations before 2026-11-24 evening wrote no interval of a run of n problems
    assert plain["token k2=3"][2] is None
    assert set(plain) == set(again) and len(plain) == 7
    assert plain["token k2=3"][0] != again["token k2=3"][0]  # the draft rate moved it
    assert plain["async k1=2 k2=1"][0] == again["async k1=2 k2=1"][0]  # k2 = 1: unchanged
    assert registered_predictions(_args(), "no_such_sweep", first) is None
    with pytest.raises(SystemExit, match=r"no heldout_15b_s3\.registered-nope\.json"):
        registered_predictions(_args(registered="nope"), "heldout_15b_s3", first)
    with pytest.raises(SystemExit, match="registered for other settings"):
        registered_predictions(_args(seed=2), "heldout_15b_s3", first)
