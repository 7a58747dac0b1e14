"""``bench_synthetic --predict-on``: a sweep's decoder-model predictions registered
without hardware (no torch), never overwritten, and refused by a run of other settings."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.bench_synthetic import (
    REGISTERED_KEYS,
    main,
    registration,
    registration_passes,
)

# profiling passes here run on real decoders with a short burn-in and contention
pytestmark = pytest.mark.usefixtures("quick_profiling")

ARGS = ["--predict-on", "cpu-epyc", "--problems", "2", "--max-steps", "3",
        "--max-step-tokens", "16", "--k1", "2", "--k2", "2"]


def test_register_then_refuse_to_overwrite_and_check_settings(tmp_path: Path, capsys
                                                              ) -> None:
    out = tmp_path / "sweep.json"
    assert main([*ARGS, "--out", str(out)]) == 0
    path = tmp_path / "sweep.registered.json"
    reg = json.loads(path.read_text())
    assert reg["device"] == "cpu-epyc" and reg["placement"] == "two-devices"
    assert reg["dtype"] == "float32" and "cpu-epyc-eager" in reg["cost_model"]
    assert {r["config"] for r in reg["rows"]} >= {"target", "sync k1=2 k2=1",
                                                  "async k1=2 k2=2"}
    target = next(r for r in reg["rows"] if r["config"] == "target")
    assert target["predicted_decoder"] == pytest.approx(1.0, abs=0.01)  # simulated too
    assert all(r["predicted_decoder"] > 0 and r["decoder_ms_per_token"]["total"] > 0
               for r in reg["rows"])
    before = path.read_bytes()
    assert main([*ARGS, "--out", str(out)]) == 2
    assert "never overwritten" in capsys.readouterr().err
    assert path.read_bytes() == before

    import argparse
    settings = {k: reg[k] for k in REGISTERED_KEYS}
    got = registration(argparse.Namespace(**settings), path)
    assert got["predictions"]["target"] == pytest.approx(1.0, abs=0.01)
    with pytest.raises(ValueError, match="registered for other settings"):
        registration(argparse.Namespace(**{**settings, "problems": 3}), path)
    with pytest.raises(ValueError, match="cannot read it"):
        registration(argparse.Namespace(**settings), tmp_path / "missing.json")


def test_a_continuous_sweep_is_registered_apart_and_only_async_keeps_async(
        tmp_path: Path) -> None:
    """--continuous adds async and its hybrid with continuous target batching (and is a
    setting a registration must share); --only-async keeps the baseline and async."""
    import argparse

    from benchmarks.bench_synthetic import _configs

    out = tmp_path / "cont.json"
    assert main([*ARGS, "--continuous", "--out", str(out)]) == 0
    reg = json.loads((tmp_path / "cont.registered.json").read_text())
    assert reg["continuous"] is True
    assert {"async k1=2 k2=1 continuous", "async k1=2 k2=2 continuous"} <= {
        r["config"] for r in reg["rows"]}
    settings = {k: reg[k] for k in REGISTERED_KEYS}
    with pytest.raises(ValueError, match="continuous"):
        registration(argparse.Namespace(**{**settings, "continuous": False}),
                     tmp_path / "cont.registered.json")
    a = argparse.Namespace(max_steps=4, max_step_tokens=16, acceptance="x", k1=3, k2=1,
                           continuous=True, only_async=True)
    assert [c.label for c in _configs(a)] == ["target", "async k1=3 k2=1",
                                              "async k1=3 k2=1 continuous"]


def test_a_contention_measured_apart_is_registered_and_slows_the_async_rows(
        tmp_path: Path, capsys) -> None:
    """--concurrent X prices the target's and draft's forwards X times slower while both
    run (measured apart, e.g. two CPU cores sharing caches): recorded, and every async
    row predicted slower than on two devices; sync and the baseline are unchanged."""
    assert main([*ARGS, "--out", str(tmp_path / "free.json")]) == 0
    assert main([*ARGS, "--concurrent", "1.3", "--out", str(tmp_path / "slow.json")]) == 0
    free = json.loads((tmp_path / "free.registered.json").read_text())
    slow = json.loads((tmp_path / "slow.registered.json").read_text())
    assert free["concurrent"] == 1.0 and slow["concurrent"] == 1.3
    got = {r["config"]: r["predicted_decoder"] for r in slow["rows"]}
    for r in free["rows"]:
        if r["config"].startswith("async"):
            assert got[r["config"]] < r["predicted_decoder"]
        else:
            assert got[r["config"]] == pytest.approx(r["predicted_decoder"], rel=1e-9)
    for bad in (["--concurrent", "0.5"], ["--concurrent", "nan"]):
        with pytest.raises(SystemExit):
            main([*ARGS, *bad, "--out", str(tmp_path / "bad.json")])
        assert "--concurrent must be a number >= 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--concurrent", "1.2", "--out", str(tmp_path / "bad.json")])
    assert "without --predict-on" in capsys.readouterr().err


def test_the_drafts_own_contention_is_registered_and_slows_only_async(
        tmp_path: Path, capsys) -> None:
    """--concurrent-draft X slows the draft alone beside the target: recorded beside
    --concurrent's, every async row slower, sync and the baseline unchanged; refused
    below 1 or without --predict-on, naming the option."""
    assert main([*ARGS, "--concurrent", "1.3", "--out", str(tmp_path / "same.json")]) == 0
    assert main([*ARGS, "--concurrent", "1.3", "--concurrent-draft", "3",
                 "--out", str(tmp_path / "draft.json")]) == 0
    same = json.loads((tmp_path / "same.registered.json").read_text())
    draft = json.loads((tmp_path / "draft.registered.json").read_text())
    assert same["concurrent_draft"] == 1.3
    assert draft["concurrent"] == 1.3 and draft["concurrent_draft"] == 3.0
    got = {r["config"]: r["predicted_decoder"] for r in draft["rows"]}
    for r in same["rows"]:
        if r["config"].startswith("async"):
            assert got[r["config"]] < r["predicted_decoder"]
        else:
            assert got[r["config"]] == pytest.approx(r["predicted_decoder"], rel=1e-9)
    with pytest.raises(SystemExit):
        main([*ARGS, "--concurrent-draft", "0.5", "--out", str(tmp_path / "bad.json")])
    assert "--concurrent-draft must be a number >= 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--concurrent-draft", "2", "--out", str(tmp_path / "bad.json")])
    assert "without --predict-on" in capsys.readouterr().err


def test_the_drafts_in_run_slowdown_is_read_from_run_records(tmp_path: Path,
                                                           capsys) -> None:
    """The draft's seconds per draft step in each async configuration over their mean in
    the sync ones, per record and pooled; the committed H100 runs give it; a record
    without both kinds is refused naming the option."""
    from benchmarks.bench_synthetic import ROOT, in_run_draft_slowdown, print_in_run_contention

    def cfg(label: str, mode: str, steps: int, seconds: float) -> dict:
        return {"label": label, "config": {"mode": mode}, "problems": [
            {"draft_steps": steps, "draft_seconds": seconds / 2},
            {"draft_steps": 0, "draft_seconds": seconds / 2}]}

    rec = {"configs": [cfg("target", "sync", 0, 0.0), cfg("sync a", "sync", 10, 1.0),
                       cfg("sync b", "sync", 10, 3.0), cfg("async a", "async", 5, 4.0)]}
    assert in_run_draft_slowdown(rec) == {"async a": pytest.approx(4.0)}
    assert in_run_draft_slowdown({"configs": rec["configs"][:3]}) == {}
    (tmp_path / "r.json").write_text(json.dumps(rec))
    assert print_in_run_contention([tmp_path / "r.json"] * 2) == pytest.approx(4.0)
    assert "mean of 2 async configurations: 4.00x" in capsys.readouterr().out
    (tmp_path / "none.json").write_text(json.dumps({"configs": rec["configs"][:3]}))
    assert main(["--in-run-contention", str(tmp_path / "none.json")]) == 2
    assert "--in-run-contention" in capsys.readouterr().err
    gpu = sorted((ROOT / "benchmarks" / "results" / "gpu").glob("h100-*/run-*/*.run.json"))
    assert gpu and print_in_run_contention(gpu) > 1


def test_band_coverage_counts_the_rounds_inside_the_registered_band(tmp_path: Path,
                                                                    capsys) -> None:
    from benchmarks.bench_synthetic import BAND_COVERS, band_coverage, print_coverage

    run = {"registration": {"rows": [
               {"config": "target", "decoder_sample_interval": [0.99, 1.01]},
               {"config": "async k1=3 k2=1", "decoder_sample_interval": [0.7, 0.8]},
               {"config": "sync k1=3 k2=1", "decoder_sample_interval": None}]},
           "rows": [
               {"config": "target", "k1": 1, "k2": 1, "measured": [1.0, 1.0]},
               {"config": "async k1=3 k2=1", "k1": 3, "k2": 1, "measured": [0.75, 0.81]},
               {"config": "sync k1=3 k2=1", "k1": 3, "k2": 1, "measured": [0.5, 0.5]}]}
    got = band_coverage(run)
    assert got == {"rounds_inside": 1, "rounds": 2,
                   "by_config": {"async k1=3 k2=1": [True, False]}, "band": BAND_COVERS}
    assert band_coverage({"rows": run["rows"]}) is None  # not held against a registration
    paths = []
    for i in range(2):
        paths.append(tmp_path / f"run{i}.json")
        paths[-1].write_text(json.dumps(run))
    assert print_coverage(paths) == {"rounds_inside": 2, "rounds": 4}
    assert "pooled: 2 of 4 rounds inside (50%" in capsys.readouterr().out
    (tmp_path / "plain.json").write_text(json.dumps({"rows": []}))
    assert main(["--coverage", str(tmp_path / "plain.json")]) == 2
    assert "not held against a registration" in capsys.readouterr().err


def test_the_committed_cpu_sweeps_report_their_band_coverage(capsys) -> None:
    """Every committed full sweep held against a registration has a band for each of its
    speculative configurations (the count itself is a measurement, reported in the
    docs, not asserted)."""
    from benchmarks.bench_synthetic import ROOT, band_coverage

    runs = sorted((ROOT / "benchmarks" / "results").glob("synthetic_cpu_full_seed*.json"))
    runs = [p for p in runs if not p.name.endswith((".registered.json", ".run.json"))]
    assert runs
    for path in runs:
        run = json.loads(path.read_text())
        got = band_coverage(run)
        assert got is not None and got["rounds"] == 7 * run["rounds"], path.name


def test_a_registration_carries_the_cost_models_error(tmp_path: Path) -> None:
    """The cost band adds the spread of the speedup over predicted surfaces drawn off by
    the preset's held-out error to the sample band: it contains the sample band, and the
    baseline (priced by the same surfaces as itself: its spread is the simulation's
    noise alone) spreads least."""
    from benchmarks.bench_synthetic import COST_BAND_COVERS, COST_DRAWS, band_coverage

    out = tmp_path / "sweep.json"
    assert main([*ARGS, "--out", str(out)]) == 0
    reg = json.loads(out.with_name("sweep.registered.json").read_text())
    band = reg["cost_band"]
    assert band["preset"] == "cpu-epyc-eager" and band["draws"] == COST_DRAWS
    assert 0.05 < band["relative_sd"] < 0.5 and band["covers"] == COST_BAND_COVERS
    for r in reg["rows"]:
        lo, hi = r["decoder_sample_interval"]
        clo, chi = r["decoder_cost_interval"]
        assert clo <= lo <= r["predicted_decoder"] <= hi <= chi, r["config"]
        assert r["cost_spread"] >= 0
    base = next(r for r in reg["rows"] if r["config"] == "target")  # only simulation noise
    assert base["cost_spread"] < max(r["cost_spread"] for r in reg["rows"]) / 2
    run = {"registration": reg, "rows": [
        {"config": r["config"], "k1": r["k1"], "k2": r["k2"],
         "measured": [r["decoder_cost_interval"][1] + 1e-9, r["predicted_decoder"]]}
        for r in reg["rows"]]}
    got = band_coverage(run)
    assert got["cost_rounds"] == got["rounds"] == 2 * (len(reg["rows"]) - 1)
    assert got["cost_rounds_inside"] == got["cost_rounds"] // 2  # the point in, past out


def test_perturbed_profiles_scale_each_kind_by_one_factor(tmp_path: Path) -> None:
    import argparse

    import numpy as np

    from benchmarks.bench_synthetic import _arch, _configs, cost_error_sd, perturbed
    from specmodel.hardware.predicted import predicted_profiles

    sd, name = cost_error_sd("cpu-xeon")
    assert name == "cpu-xeon-eager" and sd > 0
    a = argparse.Namespace(k1=2, k2=2, max_steps=3, max_step_tokens=16, continuous=False,
                           only_async=False, acceptance="lr-paper-gsm8k-deepseek")
    profs = predicted_profiles(_arch("bench-target", tmp_path), _arch("bench-draft", tmp_path),
                               _configs(a), 30, device="cpu-epyc", dtype="float32")
    got = perturbed(profs, np.random.default_rng(0), 0.2)
    assert len(got) == len(profs)
    for before, after in zip(profs, got, strict=True):
        ratios: dict[str, set[float]] = {}
        for p, q in zip(before.points, after.points, strict=True):
            if p.ms is not None:
                ratios.setdefault(p.kind, set()).update(
                    round(y / x, 9) for x, y in zip(p.ms, q.ms, strict=True))
        assert ratios and all(len(v) == 1 for v in ratios.values())
        assert any(v != {1.0} for v in ratios.values())


def _held(device: str, problems: int, errors: list[float]) -> dict:
    """A sweep summary held against a registration on ``device`` for ``problems``
    problems: one speculative configuration registered at 0.5, measured in one round per
    relative error in ``errors``, and the baseline."""
    return {"registration": {"device": device, "problems": problems, "rows": [
                {"config": "target", "predicted_decoder": 1.0},
                {"config": "async k1=2 k2=1", "predicted_decoder": 0.5}]},
            "rows": [{"config": "target", "k1": 1, "k2": 1, "measured": [1.0, 1.0]},
                     {"config": "async k1=2 k2=1", "k1": 2, "k2": 1,
                      "measured": [0.5 * (1 + e) for e in errors]}]}


def test_the_conformal_bound_and_the_rounds_residuals() -> None:
    import math

    from benchmarks.bench_synthetic import _conformal, track_interval, track_residuals

    assert _conformal([float(i) for i in range(19, 0, -1)]) == 19.0  # n = 19: the largest
    assert _conformal([float(i) for i in range(1, 40)]) == 38.0  # ceil(0.95 * 40) = 38
    with pytest.raises(ValueError, match="18 rounds are too few for a 95% bound"):
        _conformal([0.1] * 18)
    got = track_residuals(_held("cpu-epyc", 2, [0.1, -0.2]))
    assert got == pytest.approx([math.log(1.1), -math.log(0.8)])  # the baseline left out
    lo, hi = track_interval(0.5, math.log(1.25))
    assert (lo, hi) == (pytest.approx(0.4), pytest.approx(0.625))


def test_a_registration_carries_its_track_record(tmp_path: Path, capsys) -> None:
    """--track-record with --predict-on: each row's band is the registered point times
    and over exp(q), q the conformal bound of the named sweeps' rounds, which must have
    been registered on the same preset for as many problems; alone, the band is checked
    on each sweep, made from the others."""
    import math

    from benchmarks.bench_synthetic import TRACK_BAND_COVERS, band_coverage

    paths = []
    for i in range(5):  # 5 sweeps x 5 rounds: relative errors 0.01 ... 0.25
        paths.append(tmp_path / f"past{i}.json")
        paths[-1].write_text(json.dumps(
            _held("cpu-epyc", 2, [0.01 * (1 + 5 * j + i) for j in range(5)])))
    out = tmp_path / "sweep.json"
    assert main([*ARGS, "--track-record", *map(str, paths), "--out", str(out)]) == 0
    reg = json.loads(out.with_name("sweep.registered.json").read_text())
    band = reg["track_band"]
    q = math.log(1.25)  # ceil(0.95 * 26) = 25: the largest of the 25
    assert band["quantile_log"] == pytest.approx(q) and band["rounds"] == 25
    assert band["runs"] == [p.name for p in paths] and band["covers"] == TRACK_BAND_COVERS
    for r in reg["rows"]:
        p = r["predicted_decoder"]
        assert r["decoder_track_interval"] == [pytest.approx(p / 1.25),
                                               pytest.approx(p * 1.25)]
    run = {"registration": reg, "rows": [
        {"config": r["config"], "k1": r["k1"], "k2": r["k2"],
         "measured": [r["predicted_decoder"] * 1.24, r["predicted_decoder"] * 1.26]}
        for r in reg["rows"]]}
    got = band_coverage(run)
    assert got["track_rounds"] == 2 * (len(reg["rows"]) - 1)
    assert got["track_rounds_inside"] == got["track_rounds"] // 2
    # refused: another preset, another number of problems, too few rounds
    other = tmp_path / "xeon.json"
    other.write_text(json.dumps(_held("cpu-xeon", 2, [0.1] * 20)))
    assert main([*ARGS, "--track-record", str(other), "--out", str(tmp_path / "b.json")]) == 2
    assert "registered with device 'cpu-xeon', not 'cpu-epyc'" in capsys.readouterr().err
    assert main([*ARGS, "--track-record", str(paths[0]), "--out",
                 str(tmp_path / "c.json")]) == 2
    assert "5 rounds are too few" in capsys.readouterr().err
    # alone: leave one sweep out (each bound the largest of the other 20 rounds)
    assert main(["--track-record", *map(str, paths)]) == 0
    printed = capsys.readouterr().out
    assert (f"past4.json: bound ±{math.log(1.24):.3f} in log (from 20 rounds of the "
            "others), 4 of 5 rounds inside") in printed  # its 0.25 outside
    assert "past0.json" in printed and "pooled: 24 of 25 rounds" in printed
    assert main(["--track-record", *map(str, paths), str(other)]) == 2
    assert "different device presets" in capsys.readouterr().err


def test_the_committed_epyc_sweeps_check_their_track_record(capsys) -> None:
    """Every committed EPYC sweep of 24 problems, left out in turn, is held against the
    band the others give (the count inside is a measurement, reported in the docs)."""
    from benchmarks.bench_synthetic import ROOT, print_track_record

    res = ROOT / "benchmarks" / "results"
    paths = [res / f"synthetic_cpu_full_seed{s}.json"
             for s in ("19", "20_prefix", "21", "24", "25", "26")]
    got = print_track_record(paths)
    assert got["rounds"] == 6 * 14 and 0 <= got["rounds_inside"] <= got["rounds"]
    assert "from all 84 rounds" in capsys.readouterr().out


def test_a_run_is_held_only_against_a_registration_for_its_own_device() -> None:
    """A registration names the device preset it priced; a run on another device (an H200
    against the H100's registration, a Xeon against the EPYC's, a GPU no preset
    describes) is refused before anything is built, naming both; the preset's old name
    ``cpu-this`` is the EPYC's."""
    from benchmarks.bench_synthetic import check_registered_device

    path = Path("sweep.registered.json")
    h100 = {"type": "cuda", "name": "NVIDIA H100 80GB HBM3"}
    h200 = {"type": "cuda", "name": "NVIDIA H200"}
    epyc = {"type": "cpu", "name": "AMD EPYC 7B13"}
    check_registered_device({"device": "h100-sxm"}, path, "cuda", h100)
    check_registered_device({"device": "h200"}, path, "cuda", h200)
    check_registered_device({"device": "cpu-this"}, path, "cpu", epyc)
    with pytest.raises(ValueError, match="registered on h100-sxm, but this run's device "
                                         "is NVIDIA H200 \\(preset h200\\)"):
        check_registered_device({"device": "h100-sxm"}, path, "cuda", h200)
    with pytest.raises(ValueError, match=r"registered on cpu-epyc.*preset cpu-xeon"):
        check_registered_device({"device": "cpu-epyc"}, path, "cpu",
                                {"type": "cpu", "name": "Intel(R) Xeon(R) Processor"})
    with pytest.raises(ValueError, match="NVIDIA B200 \\(no preset\\)"):
        check_registered_device({"device": "h100-sxm"}, path, "cuda",
                                {"type": "cuda", "name": "NVIDIA B200"})


def test_the_track_record_on_the_runs_own_profiles() -> None:
    """Basis "profiles": each round's error of the decoder model priced by the run's own
    profiling passes (``decoder_errors_by_round``), the baseline left out; a registration
    made from a preset takes its band only from runs registered from a preset."""
    import math

    from benchmarks.bench_synthetic import track_residuals

    run = _held("cpu-epyc", 2, [0.1, -0.2])
    run["rows"][0]["decoder_errors_by_round"] = [0.0, 0.0]
    run["rows"][1]["decoder_errors_by_round"] = [0.05, -0.1]
    assert track_residuals(run, "profiles") == pytest.approx([math.log(1.05),
                                                               -math.log(0.9)])
    assert track_residuals(run) == pytest.approx([math.log(1.1), -math.log(0.8)])
    with pytest.raises(ValueError, match="basis must be one of"):
        track_residuals(run, "preset")


@given(st.integers(min_value=2, max_value=8), st.data())
def test_the_passes_nearest_a_round(n: int, data: st.DataObject) -> None:
    """Passes taken before the first round and after each: round r is preceded by pass r
    and followed by pass r + 1, whatever the run's length."""
    from benchmarks.bench_synthetic import nearest_passes

    passes = list(range(n))
    r = data.draw(st.integers(min_value=0, max_value=n - 2))
    assert nearest_passes(passes, r, "preceding") == [r]
    assert nearest_passes(passes, r, "bracketing") == [r, r + 1]
    with pytest.raises(ValueError, match=r"^r must be in \[0, "):
        nearest_passes(passes, n - 1, "preceding")  # no round follows the last pass
    with pytest.raises(ValueError, match="basis must be one of"):
        nearest_passes(passes, r, "nearest")


def test_each_round_priced_by_its_nearest_passes() -> None:
    """The per-round mean |error| of each basis over the speculative rows: the baseline
    left out, a basis no row carries reported as None."""
    from benchmarks.bench_synthetic import per_round_abs_error

    rows = [{"k1": 1, "k2": 1, "decoder_errors_by_round": [0.5, 0.5],
             "decoder_errors_by_pass": {"preceding": [0.5, 0.5]}},
            {"k1": 2, "k2": 1, "decoder_errors_by_round": [0.1, -0.3],
             "decoder_errors_by_pass": {"preceding": [0.2, None]}},
            {"k1": 1, "k2": 3, "decoder_errors_by_round": [-0.2, 0.0],
             "decoder_errors_by_pass": {"preceding": [-0.4, 0.0]}}]
    got = per_round_abs_error(rows)
    assert got["merged"] == pytest.approx(0.15)
    assert got["preceding"] == pytest.approx(0.2)
    assert got["bracketing"] is None


def test_a_preset_track_record_refuses_a_run_registered_from_a_profile(tmp_path: Path
                                                                       ) -> None:
    from benchmarks.bench_synthetic import track_record

    paths = []
    for i in range(4):
        run = _held("cpu-this" if i == 0 else "cpu-epyc", 2, [0.01 * j for j in range(6)])
        for row in run["rows"]:
            row["decoder_errors_by_round"] = [0.0] * len(row["measured"])
        paths.append(tmp_path / f"run{i}.json")
        paths[-1].write_text(json.dumps(run))
    got = track_record(paths, device="cpu-epyc", problems=2)  # cpu-this is the EPYC's
    assert got["basis"] == "registered" and got["rounds"] == 24
    assert track_record(paths, basis="profiles")["quantile_log"] == 0.0
    here = json.loads(paths[1].read_text())
    here["registration"]["priced_by"] = "profile"
    paths[1].write_text(json.dumps(here))
    with pytest.raises(ValueError, match=r"run1\.json: held against no registration "
                                         "priced by a device preset"):
        track_record(paths)
    assert track_record(paths, basis="profiles")["rounds"] == 24
    # a preset's registration held beside the run's own (measured) one serves instead
    preset = {**here["registration"], "priced_by": "preset"}
    for row in here["rows"]:
        row["registered_by"] = {"p.registered.json": {"predicted": 0.5 if row["k1"] > 1
                                                      else 1.0}}
    here["registrations_also"] = [{"file": "p.registered.json", "registration": preset}]
    paths[1].write_text(json.dumps(here))
    assert track_record(paths, device="cpu-epyc")["rounds"] == 24


def test_the_track_record_of_measured_registrations(tmp_path: Path) -> None:
    """Basis "measured": each round against the registration priced by a profiling pass
    measured before the run — the run's own, else one held beside a preset's; a run held
    against none is refused, naming it; the band says what it covers."""
    import math

    from benchmarks.bench_synthetic import MEASURED_TRACK_COVERS, track_record

    paths = []
    for i in range(4):
        run = _held("cpu-epyc", 2, [0.01 * j for j in range(6)])
        run["registration"]["priced_by"] = "profile"
        paths.append(tmp_path / f"run{i}.json")
        paths[-1].write_text(json.dumps(run))
    got = track_record(paths, device="cpu-epyc", problems=2, basis="measured")
    assert got["rounds"] == 24 and got["covers"] == MEASURED_TRACK_COVERS
    assert got["quantile_log"] == pytest.approx(max(
        abs(math.log(1 + 0.01 * j)) for j in range(6)))
    with pytest.raises(ValueError, match="held against no registration priced by a device"):
        track_record(paths)
    # the run's own registration from the preset, the measured one held beside it
    preset = json.loads(paths[2].read_text())
    measured = {**preset["registration"]}
    preset["registration"]["priced_by"] = "preset"
    for row in preset["rows"]:
        row["registered_by"] = {"m.registered.json": {"predicted": row["measured"][0]}}
    preset["registrations_also"] = [{"file": "m.registered.json",
                                     "registration": measured}]
    paths[2].write_text(json.dumps(preset))
    assert track_record(paths, basis="measured")["rounds"] == 24
    del preset["registrations_also"]
    paths[2].write_text(json.dumps(preset))
    with pytest.raises(ValueError, match=r"run2\.json: held against no registration "
                                         "priced by a measured profiling pass"):
        track_record(paths, basis="measured")


def test_a_registration_on_the_sweeps_own_draws(tmp_path: Path) -> None:
    """--drawn registers the decoder model on the problems the sweep will meet (its
    seed's position draws), says so, and prices the target alone at 1; every row decodes
    its sample the same way each time and the synthetic acceptance is exact, so the
    sample band is the point and only the costs' error is left around it."""
    assert main([*ARGS, "--out", str(tmp_path / "law.json")]) == 0
    assert main([*ARGS, "--drawn", "--out", str(tmp_path / "drawn.json")]) == 0
    law = json.loads((tmp_path / "law.registered.json").read_text())
    drawn = json.loads((tmp_path / "drawn.registered.json").read_text())
    assert law["drawn"] is None and "position draws: seed 0, 2 prompts" in drawn["drawn"]
    rows = {r["config"]: r for r in drawn["rows"]}
    assert rows["target"]["predicted_decoder"] == pytest.approx(1.0)
    assert [r["predicted_decoder"] for r in drawn["rows"]] != [
        r["predicted_decoder"] for r in law["rows"]]
    laws = {r["config"]: r["predicted_decoder"] for r in law["rows"]}
    for r in drawn["rows"][1:]:  # the laws' prediction from the same prices beside it
        assert r["predicted_decoder_law"] == pytest.approx(laws[r["config"]])
        assert r["decoder_sample_interval"] == pytest.approx([r["predicted_decoder"]] * 2)
        lo, hi = r["decoder_cost_interval"]
        assert lo < r["predicted_decoder"] < hi


@pytest.mark.parametrize("args, says", [
    (["--predict-here", "--track-basis", "registered"], "--track-basis registered: a "
     "registration priced by a measured profiling pass"),
    (["--register-first-pass", "--track-basis", "registered"], "(profiles or measured)"),
    (["--predict-on", "cpu-epyc", "--track-basis", "measured"], "registered from a preset"),
    (["--predict-on", "cpu-epyc", "--track-basis", "profiles"], "registered from a preset"),
    (["--predict-here", "--profile-sweeps", "4"], "--profile-sweeps must be between 1 "
     "and --profile-repeats (3), got 4"),
    (["--predict-here", "--predict-on", "cpu-epyc"], "not with --predict-on"),
    (["--predict-here", "--registered", "x.registered.json"], "not with --registered"),
    (["--predict-here", "--placement", "one-device"], "--placement is for --predict-on"),
    (["--register-first-pass", "--predict-here"], "during a run: not with --predict-here"),
    (["--predict-here", "--here-passes", "0"], "--here-passes must be >= 1 (got 0)"),
    (["--predict-here", "--here-gap-s", "-1"], "--here-gap-s a number of seconds >= 0 "
     "(got -1.0)"),
    (["--here-passes", "2"], "are for --predict-here"),
    (["--predict-on", "cpu-epyc", "--here-gap-s", "60"], "are for --predict-here"),
    (["--register-first-pass", "--predict-on", "h100-sxm"], "not with --predict-on"),
    (["--register-first-pass", "--placement", "two-devices"], "--placement is for"),
    (["--drawn"], "--drawn needs --predict-on or --predict-here"),
    (["--drawn", "--predict-on", "cpu-epyc", "--draws", "prefix"],
     "--drawn needs --draws position"),
])
def test_registering_here_refuses_what_it_cannot_mean(args: list[str], says: str, capsys
                                                      ) -> None:
    with pytest.raises(SystemExit) as e:
        main(args)
    assert e.value.code == 2 and says in capsys.readouterr().err


@pytest.mark.live
def test_a_registration_measured_here_is_held_beside_a_presets(tmp_path: Path, capsys
                                                               ) -> None:
    """--predict-here builds the engines, takes one profiling pass and registers from it
    (no round decoded: no run record); a run then holds its measured rounds against both
    registrations, the first as the run's own, the other beside it, and with
    --register-first-pass registers from its own first pass before round 1 as well."""
    small = ["--problems", "2", "--max-steps", "3", "--max-step-tokens", "12", "--k1", "2",
             "--k2", "1", "--only-async", "--profile-repeats", "1"]
    assert main([*small, "--predict-here", "--here-passes", "2", "--here-gap-s", "0.05",
                 "--out", str(tmp_path / "here.json")]) == 0
    here = json.loads((tmp_path / "here.registered.json").read_text())
    assert here["priced_by"] == "profile" and here["device"] in (
        "cpu-epyc", "cpu-xeon", here["measured_on"]["name"])
    assert here["measured_on"]["type"] == "cpu" and here["placement"] == "two-devices"
    assert "2 profiling passes" in here["cost_model"] and "cost_band" not in here
    # registered from the two passes merged: each pass kept, every merged point a mean
    by_pass = here["hardware_by_pass"]
    assert len(by_pass) == 2 and all(len(p) == 2 for p in by_pass)
    for merged, one, two in zip(here["hardware"], *by_pass, strict=True):
        for m, x, y in zip(merged["points"], one["points"], two["points"],
                           strict=True):
            if x["ms"] is not None and y["ms"] is not None:
                assert m["ms"][0] == pytest.approx((x["ms"][0] + y["ms"][0]) / 2)
    assert [h["architecture"]["name"] for h in here["hardware"]] == ["bench-target",
                                                                      "bench-draft"]
    assert all(r["predicted_decoder"] > 0 for r in here["rows"])
    # each pass alone priced too, and how far apart the two put any configuration
    assert all(len(r["predicted_by_pass"]) == 2 for r in here["rows"])
    gap = here["pass_disagreement"]
    assert gap["ratio"] == pytest.approx(max(
        max(r["predicted_by_pass"]) / min(r["predicted_by_pass"]) for r in here["rows"]))
    assert gap["ratio"] == 1.0 or gap["config"] in {r["config"] for r in here["rows"]}
    assert "the 2 passes alone: at most" in capsys.readouterr().out
    assert not list(tmp_path.glob("*.run.json"))
    from specmodel.hardware.predicted import preset_of
    if preset_of("cpu", here["measured_on"]["name"]) is None:
        return  # a CPU without a preset: no preset registration to hold it beside
    assert main([*small, "--predict-on", here["device"], "--out",
                 str(tmp_path / "preset.json")]) == 0
    capsys.readouterr()
    out = tmp_path / "run.json"
    assert main([*small, "--rounds", "1", "--register-first-pass", "--registered",
                 str(tmp_path / "preset.registered.json"),
                 str(tmp_path / "here.registered.json"), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "held against here.registered.json (profile) too" in printed
    assert printed.index("run_first_pass.registered.json before round 1") < printed.index(
        "round 1 [1/")
    first = json.loads((tmp_path / "run_first_pass.registered.json").read_text())
    assert first["priced_by"] == "profile" and "first profiling pass" in first["cost_model"]
    assert first["placement"] == "two-devices"  # each model on its own core
    assert first["registered"] <= json.loads(
        (tmp_path / "run_round1.run.json").read_text())["created"]
    run = json.loads(out.read_text())
    assert run["registration"]["priced_by"] == "preset"
    assert run["interleave"] and json.loads((tmp_path / "run_round1.run.json").read_text()
                                            )["settings"]["order"] == "problems"  # default
    # one round: bracketed by the passes before and after it, the pass before alone too
    assert len(run["profiles_by_pass"]) == 2
    assert all(len(r["decoder_errors_by_pass"][b]) == 1 for r in run["rows"]
               for b in ("preceding", "bracketing"))
    assert set(run["per_round_abs_error"]) == {"merged", "preceding", "bracketing"}
    # the decoder model on the run's own profiles and the sweep's own draws beside it
    assert all(r["decoder_drawn"] > 0 for r in run["rows"])
    # and each role's time in its calls over the price of the forwards played on them
    assert all(r["busy_over_price"]["target"] > 0 for r in run["rows"])
    assert all("draft" in r["busy_over_price"] for r in run["rows"] if r["k1"] > 1)
    assert "target÷price" in printed
    assert run["mean_abs_error"]["decoder on the sweep's draws"] == pytest.approx(
        statistics.fmean(abs(r["decoder_drawn_error"]) for r in run["rows"] if r["k1"] > 1
                         or r["k2"] > 1))
    also, also_first = run["registrations_also"]
    assert also_first["file"] == "run_first_pass.registered.json"
    assert also["file"] == "here.registered.json" and "hardware" not in also["registration"]
    spec = [r for r in run["rows"] if r["k1"] > 1]
    errs = [abs(r["registered_by"]["here.registered.json"]["error"]) for r in spec]
    assert also["mean_abs_error"] == pytest.approx(sum(errs) / len(errs))
    for r in spec:
        got = r["registered_by"]["preset.registered.json"]
        assert got["predicted"] == r["registered"] and got["error"] == r["registered_error"]
    assert also["registered_band_coverage"]["rounds"] == len(spec)
    # the two-pass registration priced again pass by pass on the run held against it
    got = registration_passes(tmp_path / "here.registered.json", out)
    assert len(got["passes"]) == 2 and set(got["measured"]) == {r["config"] for r in spec}
    assert got["reproduced"] is not None and got["reproduced"] < REPRICED
    for p in [*got["passes"], got["merged"], got["median_of_passes"]]:
        errs = [abs(e) for e in p["errors"].values()]
        assert p["mean_abs_error"] == pytest.approx(sum(errs) / len(errs))
    for c, v in got["median_of_passes"]["predictions"].items():  # of two: their mean
        assert v == pytest.approx(sum(p["predictions"][c] for p in got["passes"]) / 2)


REPRICED = 0.03
"""How far a registration measured here, priced again on its run's first round record
(:func:`benchmarks.bench_synthetic.registration_passes`), may lie from its registered
predictions (only the verifier's price differs: the registration's own T(1))."""

RESULTS = Path(__file__).parents[2] / "benchmarks" / "results"


def test_a_committed_registration_priced_again_by_its_pass() -> None:
    """Seed 36's one-pass registration measured here, priced again on the run held
    against it: one pass, the same as merged, close to what was registered; refused for
    a preset registration and for a run not held against it."""
    here = RESULTS / "synthetic_cpu_full_seed36_here.registered.json"
    got = registration_passes(here, RESULTS / "synthetic_cpu_full_seed36.json")
    assert len(got["passes"]) == 1 and got["passes"][0] == got["merged"]
    assert got["median_of_passes"] == got["merged"]  # one pass: nothing to merge
    assert got["reproduced"] < REPRICED and len(got["measured"]) == 7
    run = json.loads((RESULTS / "synthetic_cpu_full_seed36.json").read_text())
    assert run["registration"]["cost_model"] == got["cost_model"]  # the run's own
    assert got["merged"]["mean_abs_error"] == pytest.approx(
        run["mean_abs_error"]["registered"], abs=REPRICED)
    # on the sweep's own draws (known from its seed): the model decodes the recorded
    # round's timing-free rows exactly, and its prediction differs from the laws'
    assert got["draws_reproduce"] is True
    drawn = got["merged_on_draws"]
    assert set(drawn["predictions"]) == set(got["measured"])
    assert drawn["predictions"] != got["merged"]["predictions"]
    with pytest.raises(ValueError, match="not a registration priced by profiling passes"):
        registration_passes(RESULTS / "synthetic_cpu_full_seed36.registered.json",
                            RESULTS / "synthetic_cpu_full_seed36.json")
    with pytest.raises(ValueError, match="was not held against"):
        registration_passes(here, RESULTS / "synthetic_cpu_full_seed35.json")
    assert main(["--passes-of", str(here), str(RESULTS / "synthetic_cpu_full_seed35.json")]
                 ) == 2


def test_a_sweep_is_timed_problem_by_problem_unless_asked_otherwise() -> None:
    """Interleaving is the default (seeds 36 and 37: the rounds agreed within a mean
    |log ratio| of 0.03, against 0.075 timed by configurations); --by-configurations
    restores the order of the sweeps before them."""
    from benchmarks.bench_synthetic import build_parser

    ap = build_parser()
    assert ap.parse_args([]).interleave is True
    assert ap.parse_args(["--interleave"]).interleave is True
    assert ap.parse_args(["--by-configurations"]).interleave is False


def test_the_forward_prices_of_committed_runs_and_the_presets(tmp_path: Path, capsys
                                                             ) -> None:
    """--forward-prices reads each run record's merged passes: the EPYC's 9-token forward
    (3 sequences x 3 tokens) cost 2.7-3.1 x T(1) in seeds 19-34 and 2.2 x from seed 35
    on (what moved the preset's hybrid rows), its other forwards about the same; the
    preset prices each at one ratio; a record without the target's profile is named."""
    from benchmarks.bench_synthetic import forward_prices

    def of(seed: int) -> dict:
        return forward_prices(json.loads(
            (RESULTS / f"synthetic_cpu_full_seed{seed}_round1.run.json").read_text()))

    before, after = of(34), of(35)
    assert before["contexts"] == after["contexts"] == [256, 512, 768, 1024]
    assert before["measured"]["V(3, 3)"] > 2.6 > 2.3 > after["measured"]["V(3, 3)"]
    for k in ("D(3)", "V(1, 3)"):
        assert before["measured"][k] == pytest.approx(after["measured"][k], rel=0.1)
    assert before["preset"] == after["preset"] and before["preset"]["device"] == "cpu-epyc"
    assert 2.3 < before["preset"]["V(3, 3)"] < 2.7
    assert main(["--forward-prices", str(RESULTS / "synthetic_cpu_full_seed35_round1"
                                                   ".run.json")]) == 0
    assert "V(3, 3)/T(1) 2.22" in capsys.readouterr().out
    rec = json.loads((RESULTS / "synthetic_cpu_full_seed35_round1.run.json").read_text())
    rec["calibration"]["hardware"] = []
    (tmp_path / "bare.run.json").write_text(json.dumps(rec))
    assert main(["--forward-prices", str(tmp_path / "bare.run.json")]) == 2
    assert "no profile of the target bench-target" in capsys.readouterr().err


def test_row_times_split_a_speedup_error_into_the_two_times_it_divides(
        tmp_path: Path, capsys) -> None:
    """--row-times on the committed seed-38 sweep: each row's error in a round is its
    measured / priced time over the target alone's, less one, which reproduces the
    registered errors; the target alone ran 11.8 and 4.0 % over its measured-here price
    (the rows 0.4-10.9 % and -6.7 to +2.2 %), so with it priced as it ran the measured
    registration's mean |error| falls from 6.9 to 4.0 %. Each registration held is
    named by what priced it; a summary without its rows' times is refused."""
    import statistics

    from benchmarks.bench_synthetic import print_row_times, registration_kind, row_times

    run = json.loads((RESULTS / "synthetic_cpu_full_seed38.json").read_text())
    got = {g["kind"]: g for g in row_times(run)}
    assert set(got) == {"measured here", "preset", "first pass"}
    here = got["measured here"]
    assert here["registration"] == "the run's registration"
    assert here["baseline"] == pytest.approx([1.118, 1.040], abs=5e-4)
    for g in got.values():
        assert g["reproduced"] < 1e-3 and len(g["errors"]) == 7
        for c, e in g["errors"].items():
            assert e == pytest.approx([r / b - 1 for r, b in zip(
                g["ratios"][c], g["baseline"], strict=True)])
            assert g["errors_at_measured_baseline"][c] == pytest.approx(
                [r - 1 for r in g["ratios"][c]])
    row = next(r for r in run["rows"] if r["config"] == "async k1=3 k2=1")
    assert here["errors"]["async k1=3 k2=1"] == pytest.approx(
        [row["registered"] / m - 1 for m in row["measured"]], abs=1e-3)
    assert here["mean_abs_error"] == pytest.approx(0.069, abs=5e-4)
    assert here["mean_abs_error_at_measured_baseline"] == pytest.approx(0.040, abs=5e-4)
    assert registration_kind({"priced_by": "preset"}) == "preset"
    assert registration_kind(run["registration"]) == "measured here"
    pooled = print_row_times([RESULTS / "synthetic_cpu_full_seed38.json"])
    by = pooled["measured here"]["by_configuration"]
    assert by["target alone (measured / priced - 1)"]["mean"] == pytest.approx(
        statistics.fmean(x - 1 for x in here["baseline"]))
    assert by["async k1=3 k2=1"]["rounds"] == 2 and by["async k1=3 k2=1"]["mean"] == (
        pytest.approx(statistics.fmean(here["errors"]["async k1=3 k2=1"])))
    assert main(["--row-times", str(RESULTS / "synthetic_cpu_full_seed38.json")]) == 0
    out = capsys.readouterr().out
    assert "pooled over 1 sweeps, measured here: mean |error| 6.9%" in out
    del run["rows"][0]["ms_per_token"]
    (tmp_path / "bare.json").write_text(json.dumps(run))
    assert main(["--row-times", str(tmp_path / "bare.json")]) == 2
    assert "--row-times" in capsys.readouterr().err
