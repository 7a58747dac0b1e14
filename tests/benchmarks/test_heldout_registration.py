"""``bench_heldout``'s registrations: predictions written before a sweep decodes are
never overwritten, a further one gets its own tag, and the report refuses one made for
other problems (on the committed seed-3 registrations; nothing is written)."""

from __future__ import annotations

import argparse
from types import SimpleNamespace

import pytest

from benchmarks.bench_heldout import (
    RESULTS,
    calibration_problems,
    decoded_since,
    load_registration,
    main,
    print_decoded_since,
    profiled_problems,
    registered_predictions,
    registered_times,
    registration_name,
)

# profiling passes here run on real decoders with a short burn-in and contention
pytestmark = pytest.mark.usefixtures("quick_profiling")

CAL = "benchmarks/results/heldout_15b_calibration_recal.json"


def _args(**changes) -> argparse.Namespace:
    base = {"trio": "1.5b", "dataset": "gsm_symbolic", "problems": 6, "seed": 3,
            "max_steps": 12, "max_step_tokens": 48, "registered": None}
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
    plain_reg = load_registration(_args(), "heldout_15b_s3")
    again_reg = load_registration(_args(registered="passes"), "heldout_15b_s3")
    assert plain_reg is not None and again_reg is not None
    (plain_at, plain), (again_at, again) = (registered_predictions(r, "target")
                                            for r in (plain_reg, again_reg))
    assert plain_at < again_at  # ISO times of one zone order as strings
    assert plain["target"] == again["target"] == (1.0, None, None)
    # registrations before 2026-11-24 evening wrote no interval of a run of n problems
    assert plain["token k2=3"][2] is None
    assert set(plain) == set(again) and len(plain) == 7
    assert plain["token k2=3"][0] != again["token k2=3"][0]  # the draft rate moved it
    assert plain["async k1=2 k2=1"][0] == again["async k1=2 k2=1"][0]  # k2 = 1: unchanged
    # and before 2026-11-28 evening no time per token
    assert registered_times(plain_reg, "target") is None
    assert load_registration(_args(), "no_such_sweep") is None
    with pytest.raises(SystemExit, match=r"no heldout_15b_s3\.registered-nope\.json"):
        load_registration(_args(registered="nope"), "heldout_15b_s3")
    with pytest.raises(SystemExit, match="registered for other settings"):
        load_registration(_args(seed=2), "heldout_15b_s3")
    # written before --dataset: of gsm_symbolic, so another dataset's report refuses it
    assert "dataset" not in plain_reg
    with pytest.raises(SystemExit, match=r"'dataset': \('gsm_symbolic', 'leg_counting'\)"):
        load_registration(_args(dataset="leg_counting"), "heldout_15b_s3")


def test_a_registration_for_another_dataset_holds_only_its_own_sweep() -> None:
    reg = load_registration(_args(trio="0.5b", dataset="leg_counting", problems=3, seed=1),
                            "heldout_05b_leg_s1_epyc1204")
    assert reg is not None and reg["dataset"] == "leg_counting"
    with pytest.raises(SystemExit, match="registered for other settings"):
        load_registration(_args(trio="0.5b", problems=3, seed=1),
                          "heldout_05b_leg_s1_epyc1204")


def test_an_unknown_dataset_is_refused_before_anything_loads(capsys) -> None:
    code = main(["--trio", "0.5b", "--dataset", "leg_countng", "--seed", "1", "--out",
                 "no_such_sweep", "--calibration",
                 "benchmarks/results/heldout_05b_profile_run30_epyc1203.json", "--register"])
    err = capsys.readouterr().err
    assert code == 2 and "--dataset 'leg_countng'" in err and "leg_counting" in err
    assert not (RESULTS / "no_such_sweep.registered.json").exists()


def test_the_calibrations_own_problems_are_held_out_only_on_their_own_dataset(capsys) -> None:
    from specmodel.formats.calibration import load_calibration

    cal = load_calibration("benchmarks/results/heldout_05b_profile_run30_epyc1203.json")
    assert calibration_problems(cal) == {("gsm_symbolic", 1, 30), ("gsm_symbolic", 1, 6),
                                         ("gsm_symbolic", 1, 2)}
    # steps and tokens on leg_counting (seed 2), the engine costs kept: gsm_symbolic seed 1
    legs = load_calibration("benchmarks/results/leg_05b_calibration_epyc1204.json")
    assert calibration_problems(legs) == {("leg_counting", 2, 10), ("leg_counting", 2, 6),
                                          ("gsm_symbolic", 1, 2)}
    code = main(["--trio", "0.5b", "--seed", "1", "--out", "no_such_sweep", "--calibration",
                 "benchmarks/results/heldout_05b_profile_run30_epyc1203.json", "--register"])
    err = capsys.readouterr().err
    assert code == 2 and "3 of the 3 gsm_symbolic problems (index 0, 1, 2)" in err
    assert not (RESULTS / "no_such_sweep.registered.json").exists()


def test_a_neighbouring_seed_is_not_held_out_where_the_dataset_shares_its_problems(
        capsys) -> None:
    """leg_counting draws item i from seed + i: seed 11's first problem is the tenth of the
    calibration's ten of seed 2, seed 12's are none of them; gsm_symbolic's seed 2 is held
    out of seed 1's thirty."""
    def register(seed: int, dataset: str, calibration: str) -> tuple[int, str]:
        code = main(["--trio", "0.5b", "--seed", str(seed), "--dataset", dataset,
                     "--out", "no_such_sweep", "--calibration", calibration,
                     "--register", "--problems", "3"])
        return code, capsys.readouterr().err

    legs = "benchmarks/results/leg_05b_calibration_epyc1204.json"
    code, err = register(11, "leg_counting", legs)
    assert code == 2 and "1 of the 3 leg_counting problems (index 0)" in err
    assert "10 leg_counting of seed 2" in err
    args = _args(seed=12, dataset="leg_counting", problems=3)
    from specmodel.formats.calibration import load_calibration

    assert profiled_problems(args, load_calibration(legs)) == []
    gsm = load_calibration("benchmarks/results/heldout_05b_profile_run30_epyc1203.json")
    assert profiled_problems(_args(seed=2, dataset="gsm_symbolic", problems=6), gsm) == []
    assert not (RESULTS / "no_such_sweep.registered.json").exists()


def test_a_registration_gives_the_time_per_token_of_each_row_and_the_target() -> None:
    """``registered_times``: each row's registered milliseconds per output token and the
    target alone's (the mean of the rows' baselines, each simulated apart)."""
    reg = {"rows": [
        {"config": "a", "decoder_ms_per_token": {"total": 300.0, "target": 200.0},
         "decoder_baseline_ms_per_token": 100.0},
        {"config": "b", "decoder_ms_per_token": {"total": 150.0},
         "decoder_baseline_ms_per_token": 110.0},
        {"config": "c", "decoder_ms_per_token": None, "decoder_baseline_ms_per_token": None}]}
    assert registered_times(reg, "target") == {"a": 300.0, "b": 150.0, "target": 105.0}
    assert registered_times({"rows": reg["rows"][2:]}, "target") is None


def test_decoded_since_counts_the_runs_a_registration_preceded(capsys) -> None:
    def config(label: str, *times: str | None) -> SimpleNamespace:
        return SimpleNamespace(label=label, problems=[SimpleNamespace(finished_at=t)
                                                      for t in times])

    rounds = [SimpleNamespace(configs=[config("target", "2026-11-24T10:00:00+00:00"),
                                       config("sync", "2026-11-24T09:00:00+00:00", None)]),
              SimpleNamespace(configs=[config("target", "2026-11-24T11:00:00"),
                                       config("sync", "2026-11-24T12:00:00+00:00")])]
    since = decoded_since(rounds, "2026-11-24T09:30:00+00:00")
    assert since == {"target": {"after": 2, "before": 0, "undated": 0},
                     "sync": {"after": 1, "before": 1, "undated": 1}}
    print_decoded_since("T", since)
    out = capsys.readouterr().out
    assert "sync: 1 of 3 problem runs decoded before it, 1 of unknown time" in out
    assert "target" not in out
    print_decoded_since("T", decoded_since(rounds[1:], "2026-11-24T09:30:00+00:00"))
    assert "every problem run of the sweep decoded after it" in capsys.readouterr().out
    print_decoded_since("T", {"sync": {"after": 0, "before": 0, "undated": 4}})
    assert "carry no decode times" in capsys.readouterr().out


def test_report_round_names_its_range(capsys) -> None:
    code = main(["--trio", "1.5b", "--problems", "6", "--seed", "3", "--out",
                 "heldout_15b_s3", "--calibration", CAL, "--report", "--report-round", "3"])
    assert code == 2
    assert "--report-round goes with --report and takes 1 to --rounds (2), got 3" in (
        capsys.readouterr().err)


@pytest.mark.parametrize("args, said", [
    (["--keep-times"], "--keep-times goes with --costs-at-run-time"),
    (["--probe-contention", "-1"], "--probe-contention takes a number of rounds >= 0, got -1"),
    (["--modes", "async,tree"], "--modes takes token, sync and/or async"),
])
def test_probe_and_mode_options_are_checked_before_anything_loads(capsys, args, said) -> None:
    code = main(["--trio", "1.5b", "--problems", "6", "--seed", "3", "--out",
                 "heldout_15b_s3", "--calibration", CAL, "--report", *args])
    assert code == 2 and said in capsys.readouterr().err


def test_modes_pick_the_sweeps_configurations_by_what_they_speculate() -> None:
    from benchmarks.bench_heldout import configurations, mode_of

    got = {c.label: mode_of(c) for c in configurations(
        "1.5b", max_steps=12, max_step_tokens=48, delimiter="\n", threshold=0.85)}
    assert got == {"token k2=3": "token", "sync k1=2 k2=1": "sync", "async k1=2 k2=1": "async",
                   "sync k1=2 k2=3": "sync", "async k1=2 k2=3": "async",
                   "sync k1=2 k2=1 W=2": "sync"}
