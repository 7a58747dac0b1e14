"""Synthetic-acceptance runs: the engine's draws, the synthetic verifier, and
``specmodel decode --engine synthetic`` end to end (tiny random-weight architectures on
the CPU; nothing is downloaded)."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

from cli.main import main
from profiler.engines import make_engine
from profiler.engines.synthetic import (
    StepLengths,
    SyntheticEngine,
    draft_depth,
)
from profiler.verifiers import SyntheticVerifier, make_verifier
from specmodel.config import TokenDrafter, TokenSpeculation, VerifierSpec
from specmodel.formats.calibration import Calibration, load_preset, save_calibration
from specmodel.formats.run_record import load_run_record

# profiling passes here run on real decoders with a short burn-in and contention
pytestmark = pytest.mark.usefixtures("quick_profiling")

TINY = {"model_type": "qwen2", "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "vocab_size": 512}
"""The test architecture: hidden 64, 2 layers, 4 heads, 2 KV heads, vocabulary 512."""


def within(observed: float, p: float, n: int, sigmas: float = 4.0) -> bool:
    """Whether a proportion over ``n`` draws is within ``sigmas`` standard errors of p."""
    return abs(observed - p) <= sigmas * math.sqrt(p * (1 - p) / n) + 1e-12


def calibration(**step_token: dict) -> Calibration:
    """The measured preset with ``step`` / ``token`` fields replaced."""
    data = load_preset("measured-qwen2.5-coder-0.5b-smollm2-135m").model_dump(mode="json")
    for section, changes in step_token.items():
        data[section].update(changes)
    return Calibration.model_validate(data)


@pytest.fixture
def arch(tmp_path: Path) -> str:
    p = tmp_path / "tiny.json"
    p.write_text(json.dumps(TINY))
    return str(p)


@pytest.fixture
def arch2(tmp_path: Path) -> str:
    p = tmp_path / "tiny1.json"
    p.write_text(json.dumps({**TINY, "num_hidden_layers": 1}))
    return str(p)


# --- step lengths -----------------------------------------------------------------------
def test_step_lengths_law() -> None:
    cal = calibration(step={"step_tokens_histogram": {"4": 1, "9": 3}})
    law = StepLengths.from_step(cal.step)
    rng = random.Random(1)
    draws = [law.draw(rng) for _ in range(20000)]
    assert set(draws) == {4, 9}
    assert within(draws.count(4) / len(draws), 0.25, len(draws))
    assert "histogram" in law.source
    geo = StepLengths.from_step(calibration(step={"step_tokens_histogram": None,
                                                  "step_tokens_mean": 12.0}).step)
    g = [geo.draw(rng) for _ in range(20000)]
    sd = math.sqrt(12.0 * 11.0)  # geometric on {1, 2, …} with mean m: variance m(m − 1)
    assert abs(sum(g) / len(g) - 12.0) < 4 * sd / math.sqrt(len(g))
    assert min(g) >= 1 and "geometric" in geo.source


def test_engine_steps_follow_histogram_and_are_deterministic(arch: str) -> None:
    cal = calibration(step={"step_tokens_histogram": {"3": 1, "6": 1}})
    eng = SyntheticEngine(arch, acceptance=cal, seed=3)
    prefixes = [f"Question {i}: how many?\n\n" for i in range(160)]
    lengths = []
    for i in range(0, len(prefixes), 16):
        batch = eng.generate_steps(prefixes[i:i + 16], 48)
        assert batch.seconds > 0 and batch.batch == 16
        for out in batch.outputs:
            assert out.text.endswith("\n\n") and out.finished == "stop"
            assert out.tokens == eng.count_tokens(out.text)
            lengths.append(out.tokens)
    assert set(lengths) == {3, 6}
    assert within(lengths.count(3) / len(lengths), 0.5, len(lengths))
    moved = Path(arch).with_name("elsewhere.json")
    moved.write_text(Path(arch).read_text())
    again = SyntheticEngine(str(moved), acceptance=cal, seed=3).generate_steps(prefixes[:4], 48)
    assert [o.text for o in again.outputs] == [
        o.text for o in eng.generate_steps(prefixes[:4], 48).outputs]
    capped = eng.generate_steps(prefixes[:8], 4).outputs
    assert all(o.tokens <= 4 for o in capped)
    assert {o.finished for o in capped if o.tokens == 4} == {"length"}
    sampled = eng.generate_steps(prefixes[:1] * 3, 48, temperature=0.8, seed=5).outputs
    assert len({o.text for o in sampled}) == 3  # branches of one prefix differ


def test_draft_depth_counts_drafts_in_a_row(arch: str) -> None:
    cal = calibration()
    tgt = SyntheticEngine(arch, acceptance=cal, role="target")
    drf = SyntheticEngine(arch, acceptance=cal, role="draft")
    prefix = "Question: q\n\n"
    t = tgt.generate_steps([prefix], 48).outputs[0].text
    d0 = drf.generate_steps([prefix + t], 48).outputs[0].text
    d1 = drf.generate_steps([prefix + t + d0], 48).outputs[0].text
    assert (draft_depth(t), draft_depth(d0), draft_depth(d1)) == (0, 0, 1)
    assert draft_depth("no synthetic words") == 0


def test_position_draws_give_every_history_the_same_step_at_a_position(arch: str) -> None:
    """With draws keyed by position (the default) the step a role writes after a prompt's
    n-th step is the same whatever those steps were (common random numbers across
    configurations, the draft's depth word aside); keyed by the whole prefix it is a
    fresh draw; the law is the calibration's either way."""
    cal = calibration(step={"step_tokens_histogram": {"2": 1, "5": 1, "9": 1},
                            "acceptance_by_position": None})
    lengths: dict[str, list[int]] = {"position": [], "prefix": []}
    for draws in ("position", "prefix"):
        tgt = SyntheticEngine(arch, acceptance=cal, role="target", seed=2, draws=draws)
        drf = SyntheticEngine(arch, acceptance=cal, role="draft", seed=2, draws=draws)
        assert tgt.describe()["draws"] == draws
        same = 0
        for i in range(60):
            p = f"Question {i}: how many?\n\n"
            t = tgt.generate_steps([p], 48).outputs[0].text
            d = drf.generate_steps([p], 48).outputs[0].text
            after_t = tgt.generate_steps([p + t], 48).outputs[0].text
            after_d = tgt.generate_steps([p + d], 48).outputs[0].text
            same += after_t == after_d
            d1 = drf.generate_steps([p + d], 48).outputs[0].text  # depth 1
            d0 = drf.generate_steps([p + t], 48).outputs[0].text  # depth 0
            assert (draft_depth(d1), draft_depth(d0)) == (1, 0)
            if draws == "position":
                assert d1.split()[1:] == d0.split()[1:]  # the same step but its depth word
            lengths[draws] += [len(after_t.split()), len(after_d.split())]
        assert same == (60 if draws == "position" else 0)
    for got in lengths.values():  # the histogram's law: 2, 5, 9 a third each
        assert set(got) == {2, 5, 9}
        assert within(got.count(2) / len(got), 1 / 3, len(got) // 2)
    assert SyntheticEngine(arch, acceptance=cal).draws == "position"
    with pytest.raises(ValueError, match="draws must be one of position, prefix"):
        SyntheticEngine(arch, acceptance=cal, draws="problem")
    old = load_run_record(Path(__file__).parents[2] / "benchmarks" / "results"
                          / "synthetic_cpu_full_seed17_round1.run.json")
    assert old.settings.synthetic is not None and old.settings.synthetic.draws == "prefix"


# --- the synthetic verifier ---------------------------------------------------------------
def test_verifier_alpha1_and_depth() -> None:
    cal = calibration(step={"alpha1": 0.3, "acceptance_by_position": None})
    ver = SyntheticVerifier(cal, source="x", seed=1)
    pairs = [(f"t{i}/0 t1\n\n", f"d{i}/0 d2\n\n") for i in range(4000)]
    verdicts = ver.verify(pairs)
    rate = sum(v.accepted for v in verdicts) / len(verdicts)
    assert within(rate, 0.3, len(pairs))
    assert [v.accepted for v in ver.verify(pairs[:50])] == [v.accepted for v in verdicts[:50]]
    assert ver.cost == "calibration" and ver.price(0.01) > 0  # the preset has a verifier cost
    by_depth = SyntheticVerifier(
        calibration(step={"acceptance_by_position": [0.8, 0.5, 0.2]}), source="x")
    for depth, p in ((0, 0.8), (1, 0.5), (2, 0.2), (5, 0.2)):
        pairs = [(f"t{i}/0\n\n", f"d{i}/{depth}\n\n") for i in range(3000)]
        rate = sum(v.accepted for v in by_depth.verify(pairs)) / len(pairs)
        assert within(rate, p, len(pairs)), (depth, rate)
    free = SyntheticVerifier(cal, source="x", cost="free")
    assert free.price(1.0) == 0.0 and free.cost == "free"


def test_verifier_registry(tmp_path: Path) -> None:
    path = tmp_path / "cal.json"
    save_calibration(calibration(), path)
    ver = make_verifier(VerifierSpec(kind="synthetic", model=str(path)))
    assert isinstance(ver, SyntheticVerifier) and ver.name == f"synthetic:{path}"
    assert VerifierSpec.from_name(ver.name).kind == "synthetic"
    with pytest.raises(ValueError, match=r"verifier\.model"):
        make_verifier(VerifierSpec(kind="synthetic"))


# --- token speculation --------------------------------------------------------------------
@pytest.mark.parametrize("rates", [[0.7, 0.5, 0.3], None])
def test_token_counters_follow_acceptance(arch: str, arch2: str, rates: list | None) -> None:
    cal = calibration(token={"acceptance_by_position": rates, "alpha2": 0.6},
                      step={"step_tokens_histogram": {"40": 1}})
    method = "ngram" if rates else "draft_model"
    spec = TokenSpeculation(drafter=TokenDrafter(method=method, model=arch2 if rates is None
                                                 else None), num_speculative_tokens=3)
    eng = make_engine("synthetic", arch, speculation=spec,
                      options={"acceptance": cal, "seed": 7})
    for i in range(0, 48, 8):
        batch = eng.generate_steps([f"Q{j}\n\n" for j in range(i, i + 8)], 48)
        assert batch.spec_metrics["num_drafts"] > 0
    m = eng.spec_decode_metrics()
    assert m["num_draft_tokens"] == 3 * m["num_drafts"]
    pos = m["num_accepted_tokens_per_pos"]
    assert sum(pos) == m["num_accepted_tokens"] and len(pos) == 3
    expected = rates or [0.6, 0.6, 0.6]
    reached = [m["num_drafts"], *pos[:2]]
    for i, p in enumerate(expected):
        assert within(pos[i] / reached[i], p, reached[i]), (i, pos, reached)
    assert eng.with_speculation(None).spec_decode_metrics() == {}



def test_only_the_calibrations_share_of_passes_drafts(arch: str) -> None:
    """With ``token.draft_rate`` a pass carries a draft at that rate (the others write
    one token, as the decoder model prices them); the counters count both."""
    cal = calibration(token={"acceptance_by_position": [0.5, 0.5], "alpha2": 0.5,
                             "draft_rate": 0.4, "target_passes": 100},
                      step={"step_tokens_histogram": {"40": 1}})
    spec = TokenSpeculation(drafter=TokenDrafter(method="ngram"), num_speculative_tokens=2)
    eng = make_engine("synthetic", arch, speculation=spec,
                      options={"acceptance": cal, "seed": 3})
    assert "0.400 of the passes draft" in eng.describe()["token_acceptance"]
    for i in range(0, 32, 8):
        eng.generate_steps([f"Q{j}\n\n" for j in range(i, i + 8)], 48)
    m = eng.spec_decode_metrics()
    assert within(m["num_drafts"] / m["num_target_passes"], 0.4, m["num_target_passes"])
    every = make_engine("synthetic", arch, speculation=spec, options={
        "acceptance": calibration(token={"draft_rate": None, "target_passes": None}),
        "seed": 3})
    every.generate_steps(["Q\n\n"] * 4, 48)
    got = every.spec_decode_metrics()
    assert got["num_drafts"] == got["num_target_passes"] > 0

# --- the command line ---------------------------------------------------------------------
def _decode(args: list[str], capsys) -> tuple[int, str]:
    code = main(["decode", *args])
    out, err = capsys.readouterr()
    return code, out + err


@pytest.mark.parametrize("extra", [["--mode", "sync", "--k1", "3", "--width", "2"],
                                   ["--mode", "async", "--k1", "3"],
                                   ["--mode", "async", "--k1", "2", "--k2", "3"],
                                   ["--mode", "sync", "--k1", "2", "--interleave"]],
                         ids=["sync", "async", "hybrid", "interleaved"])
def test_decode_synthetic_writes_a_record(arch: str, arch2: str, tmp_path: Path, capsys,
                                          extra: list[str]) -> None:
    out = tmp_path / "run.json"
    code, text = _decode(["--engine", "synthetic", "--acceptance", "lr-paper-gsm8k-deepseek",
                          "--target", arch, "--draft", arch2, "--problems", "2",
                          "--max-steps", "4", "--max-step-tokens", "24", "-o", str(out),
                          *extra], capsys)
    assert code == 0, text
    rec = load_run_record(out, require_baseline=True)
    assert rec.engine == "synthetic"
    assert rec.settings.order == ("problems" if "--interleave" in extra else "configurations")
    syn = rec.settings.synthetic
    assert syn is not None and syn.calibration == "lr-paper-gsm8k-deepseek"
    assert "geometric" in syn.step_lengths  # the paper preset has no histogram
    assert syn.draws == "position"  # what keyed the draws is recorded
    assert rec.settings.device == "cpu" and rec.models["verifier"].startswith("synthetic:")
    assert rec.settings.execution == "reference decoder, eager"
    assert rec.settings.prompt_tokens is not None and rec.settings.prompt_tokens > 10
    assert rec.calibration is not None and rec.calibration.name.endswith("+synthetic-costs")
    spec = rec.configs[-1]
    assert spec.totals.drafted_steps > 0
    if "--k2" in extra:
        assert sum(p.spec_metrics.get("num_drafts", 0) for p in spec.problems) > 0
    # the costs the decoder model prices the run with: profiled apart, before the run
    assert syn.prompt_tokens and syn.architectures and "target" in syn.architectures
    assert {p.architecture.name for p in rec.calibration.hardware or []} >= {
        syn.architectures["target"], syn.architectures["draft"]}
    code = main(["validate", str(out), "--json"])
    rows = json.loads(capsys.readouterr().out)
    assert code == 0 and {r["config"] for r in rows} == {c.label for c in rec.configs}
    assert all(r["predicted_decoder"] is not None for r in rows)
    # the record stores its prompts, so the sample the run met can be rebuilt after it:
    # the decoder model on it decodes the target alone and sync (one branch) as the run did
    from profiler.problems import format_prompt, load_problems

    assert rec.settings.prompts == [format_prompt(p) for p in
                                    load_problems(2, rec.settings.seed or 0)]
    code = main(["validate", str(out), "--json", "--on-draws"])
    drawn = json.loads(capsys.readouterr().out)
    assert code == 0 and all(r["draws_reproduce_run"] is True for r in drawn)
    for r in drawn:
        if "--width" in extra and r["k1"] > 1:  # one draft per position in the sample
            assert r["decoder_on_draws"] is None
            continue
        assert r["decoder_on_draws_error"] == pytest.approx(
            r["decoder_on_draws"] / r["measured_speedup"] - 1)
    code = main(["validate", str(out), "--on-draws"])
    text = capsys.readouterr().out
    assert code == 0 and "on the run's own draws" in text and "exactly as the run did" in text
    # the synthetic engine reports its one-time setup: validate shows the speedup less it
    assert all(p.setup_seconds is not None for c in rec.configs for p in c.problems)
    assert "less the one-time setup" in text
    assert all(r["measured_speedup_less_setup"] is not None for r in rows)
    if extra == ["--mode", "async", "--k1", "3"]:
        # --resume of the whole record: the synthetic engine's draws are made once it is
        # built, so it is built, the record compared whole, and nothing decoded again
        before = out.read_text()
        code, text = _decode(["--engine", "synthetic", "--acceptance",
                              "lr-paper-gsm8k-deepseek", "--target", arch, "--draft", arch2,
                              "--problems", "2", "--max-steps", "4", "--max-step-tokens",
                              "24", "-o", str(out), *extra, "--resume"], capsys)
        assert code == 0, text
        assert "no model loaded" not in text and out.read_text() == before


@pytest.mark.parametrize(("args", "named"), [
    (["--acceptance", "lr-paper-gsm8k-deepseek"], "--acceptance"),
    (["--engine", "synthetic"], "--acceptance"),
    (["--engine", "synthetic", "--acceptance", "nope"], "--acceptance"),
    (["--engine", "synthetic", "--acceptance", "lr-paper-gsm8k-deepseek",
      "--verifier", "exact", "--k1", "2"], "--verifier"),
    (["--engine", "synthetic", "--acceptance", "lr-paper-gsm8k-deepseek",
      "--verifier-cost", "dear"], "--verifier-cost"),
    (["--verifier", "synthetic", "--k1", "2"], "--verifier synthetic"),
    (["--engine", "synthetic", "--acceptance", "lr-paper-gsm8k-deepseek",
      "--target", "BROKEN"], "intermediate_size"),
    (["--engine", "synthetic", "--acceptance", "lr-paper-gsm8k-deepseek",
      "--target", "ARCH", "--device", "tpu"], "device"),
    (["--engine", "synthetic", "--acceptance", "lr-paper-gsm8k-deepseek",
      "--target", "ARCH", "--dtype", "int8"], "dtype"),
    (["--mode", "async", "--k1", "2", "--target-batching", "continuous"],
     "--target-batching continuous needs an engine that batches continuously"),
    (["--engine", "synthetic", "--acceptance", "lr-paper-gsm8k-deepseek", "--target", "ARCH",
      "--decode-path", "static"], "--decode-path is for --engine transformers only"),
    (["--decode-path", "graphs"], "--decode-path must be one of eager, static, compiled"),
    (["--engine", "synthetic", "--acceptance", "lr-paper-gsm8k-deepseek", "--target", "ARCH",
      "--cost-probe"], "--cost-probe is for --engine transformers only"),
    (["--probe-contention", "2"], "--probe-contention 2 without --cost-probe"),
    (["--cost-probe", "--probe-contention", "-1"], "--probe-contention takes a number of "
                                                   "rounds >= 0"),
    (["--cost-probe", "--probe-contention", "2", "--k1", "1", "--k2", "2"],
     "it needs a step draft (--k1 >= 2)"),
    (["--engine", "synthetic", "--acceptance", "lr-paper-gsm8k-deepseek", "--target", "ARCH",
      "--mode", "sync", "--k1", "2", "--target-batching", "continuous"],
     "--target-batching 'continuous' schedules async"),
])
def test_decode_bad_input_exits_2(arch: str, tmp_path: Path, capsys, args: list[str],
                                  named: str) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({k: v for k, v in TINY.items() if k != "intermediate_size"}))
    args = [str(broken) if a == "BROKEN" else arch if a == "ARCH" else a for a in args]
    code, text = _decode([*args, "--problems", "1", "--max-steps", "2",
                          "-o", str(tmp_path / "r.json")], capsys)
    assert code == 2, text
    assert named in text and "Traceback" not in text
    assert len([ln for ln in text.strip().splitlines() if ln.strip()]) <= 2


def test_decode_cuda_absent_exits_2(arch: str, tmp_path: Path, capsys) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    code, text = _decode(["--engine", "synthetic", "--acceptance", "lr-paper-gsm8k-deepseek",
                          "--target", arch, "--device", "cuda", "--problems", "1",
                          "-o", str(tmp_path / "r.json")], capsys)
    assert code == 2 and "CUDA is not available" in text


# --- the decoder model's costs, measured apart from the run -------------------------------
def test_step_law_histogram_is_the_engines_law() -> None:
    from profiler.engines.synthetic import step_law_histogram

    cal = calibration(step={"step_tokens_histogram": None, "step_tokens_mean": 12.0})
    hist = step_law_histogram(cal.step)
    assert hist is not None and min(hist) == 1
    total = sum(hist.values())
    assert sum(k * v for k, v in hist.items()) / total == pytest.approx(12.0, rel=1e-3)
    assert hist[1] / total == pytest.approx(1 / 12, rel=1e-3)  # geometric: P(1) = 1/mean
    assert step_law_histogram(calibration(step={"step_tokens_histogram": {"3": 1}}).step) \
        is None


def test_forget_makes_every_prefix_uncached(arch: str) -> None:
    eng = SyntheticEngine(arch, acceptance=calibration())
    prefix = "Question: q\n\n"
    out = eng.generate_steps([prefix], 48).outputs[0].text
    assert eng._uncached(prefix + out) == 0
    copy = eng.with_speculation(TokenSpeculation(
        drafter=TokenDrafter(method="ngram"), num_speculative_tokens=2))
    eng.forget()  # shared by every copy
    assert copy._uncached(prefix + out) == eng.count_tokens(prefix + out)


def test_profile_costs_feed_the_decoder_model(arch: str, arch2: str) -> None:
    from profiler.engines.synthetic import (
        architectures,
        merge_profiles,
        profile_costs,
        with_costs,
    )
    from specmodel.config import SpecConfig
    from specmodel.decodermodel import CostModel, EngineBehaviour
    from specmodel.hardware.predicted import predicted_profiles, profile_points

    acc = load_preset("lr-paper-gsm8k-deepseek")
    tgt = SyntheticEngine(arch, acceptance=acc, role="target")
    drf = SyntheticEngine(arch2, acceptance=acc, role="draft")
    cfgs = [SpecConfig(mode="async", k1=2, k2=2, max_steps=2, max_step_tokens=8)]
    profs = profile_costs(tgt, drf, cfgs, 5, repeats=1, contention_seconds=0.05)
    names = architectures(tgt, drf, cfgs)
    assert [p.architecture.name for p in profs] == [names["target"], names["draft"]]
    assert architectures(arch, arch2, cfgs) == names  # from the architectures alone
    # what profile_points says and predicted_profiles predicts, no more, no less
    grid = profile_points(arch, arch2, cfgs, 5)
    pred = predicted_profiles(arch, arch2, cfgs, 5, device="cpu-epyc")
    for prof, guess, (_, dec, ver) in zip(profs, pred, grid, strict=True):
        keys = {(p.kind, p.batch, p.new_tokens, p.context) for p in prof.points}
        assert keys == set(dec) | set(ver)
        assert keys == {(p.kind, p.batch, p.new_tokens, p.context) for p in guess.points}
    t = profs[0]
    assert {b for b, _ in t.decode_surface()} == {1, 2}
    assert {q for _, q, _ in t.forward_points()} >= {2, 4, 8}  # k2 and prefills
    assert t.has_means() and t.concurrent is not None and names["draft"] in t.concurrent
    merged = merge_profiles([profs, profs])  # passes at several times: per-point medians
    assert merged[0].decode_surface(statistic="mean") == t.decode_surface(statistic="mean")
    assert merged[0].concurrent == t.concurrent
    assert all(p.n == 2 * q.n for p, q in zip(merged[0].timed(), t.timed(), strict=True))
    cal = with_costs(acc, {"context": 256, "T": {1: 0.01}, "c1": 0.1}, "test",
                     hardware=profs)
    assert cal.step.step_tokens_histogram  # the engine's geometric law, written out
    costs = CostModel.from_calibration(cal, target_architecture=names["target"],
                                       draft_architecture=names["draft"],
                                       engine=EngineBehaviour.synthetic())
    assert costs.target_forwards is not None and costs.draft_contention is not None


def test_profile_costs_on_the_engines_own_weights(arch: str, arch2: str,
                                                 monkeypatch) -> None:
    """``share_weights`` (the default on CUDA) times the same grid on the run engines'
    own decoders: no decoder is built for the profile or the contention, and the
    engines' bound forwards are released first (their buffers' memory is the profile's)."""
    import profiler.hardware as hw
    from profiler.engines.synthetic import profile_costs
    from specmodel.config import SpecConfig

    acc = load_preset("lr-paper-gsm8k-deepseek")
    tgt = SyntheticEngine(arch, acceptance=acc, role="target")
    drf = SyntheticEngine(arch2, acceptance=acc, role="draft")
    cfgs = [SpecConfig(mode="async", k1=2, k2=2, max_steps=2, max_step_tokens=8)]
    fresh = profile_costs(tgt, drf, cfgs, 5, repeats=1, contention_seconds=0.05)
    tgt._fwd.run(1, 1, 16)
    assert tgt._fwd.cache and tgt._fwd.bytes > 0
    built = []
    monkeypatch.setattr(hw.ReferenceDecoder, "__init__", lambda *a, **k: built.append(a))
    shared = profile_costs(tgt, drf, cfgs, 5, repeats=1, contention_seconds=0.05,
                           share_weights=True)
    assert not built and not tgt._fwd.cache and tgt._fwd.bytes == 0
    from profiler.engines.synthetic import measure_contention

    with pytest.raises(ValueError, match="graphs needs device cuda"):
        measure_contention(arch, arch2, context=16, graphs=True, seconds=0.01)
    for a, b in zip(fresh, shared, strict=True):
        assert [(p.kind, p.batch, p.new_tokens, p.context) for p in a.points] == \
            [(p.kind, p.batch, p.new_tokens, p.context) for p in b.points]
        assert all(p.ms is not None for p in b.points) and b.concurrent is not None


def test_profile_costs_in_sweeps(arch: str, arch2: str, monkeypatch) -> None:
    """With sweeps, each architecture's points are timed on one decoder in one call,
    every point in each pass: the grid :func:`profile_points` names, each decode point
    timed 4 × repeats times and each other point repeats times, as without sweeps."""
    import profiler.hardware as hw
    from profiler.engines.synthetic import profile_costs
    from specmodel.config import SpecConfig
    from specmodel.hardware.predicted import profile_points

    acc = load_preset("lr-paper-gsm8k-deepseek")
    tgt = SyntheticEngine(arch, acceptance=acc, role="target")
    drf = SyntheticEngine(arch2, acceptance=acc, role="draft")
    cfgs = [SpecConfig(mode="async", k1=2, k2=2, max_steps=2, max_step_tokens=8)]
    calls = []
    measure = hw.measure
    monkeypatch.setattr(hw, "measure", lambda *a, **k: calls.append(k) or measure(*a, **k))
    swept = profile_costs(tgt, drf, cfgs, 5, repeats=2, contention_seconds=0.05, sweeps=2)
    assert [k["sweeps"] for k in calls] == [2, 2]  # one call per architecture
    for prof, (_, dec, ver) in zip(swept, profile_points(arch, arch2, cfgs, 5), strict=True):
        assert prof.sweeps == 2
        got = {(p.kind, p.batch, p.new_tokens, p.context): p.n for p in prof.points}
        assert got == {**{k: 2 for k in ver}, **{k: 8 for k in dec}}
    with pytest.raises(ValueError, match=r"sweeps must be an integer in \[1, repeats = 2\]"):
        profile_costs(tgt, drf, cfgs, 5, repeats=2, contention_seconds=0.05, sweeps=3)


def _on_stand_in_cuda(fwd: Any) -> tuple[Any, list[Any]]:
    """Make ``fwd`` (a ``_Forwards`` built on the CPU) run as on CUDA, the CUDA calls
    stood in for: (the graph class, whose ``replays`` counts replays, and weak
    references to what each ``bind`` allocated).  Timing events read, when recorded, how
    much work the device has done: replays and eager calls of bound forwards."""
    import contextlib
    import types
    import weakref

    class Buffers:  # what bind() allocates: the KV cache and the inputs
        pass

    alive: list[weakref.ref] = []

    def bind(point):
        buf = Buffers()
        alive.append(weakref.ref(buf))

        def eager() -> Buffers:
            Graph.eager += 1
            return buf

        return eager

    class Stream:
        def wait_stream(self, other) -> None: ...
        def synchronize(self) -> None: ...

    class Graph:
        replays = 0
        eager = 0

        def replay(self) -> None:
            Graph.replays += 1

    class Event:
        def __init__(self, enable_timing: bool = False) -> None:
            self.timing, self.at = enable_timing, None

        def record(self) -> None:
            self.at = Graph.replays + Graph.eager

    cuda = types.SimpleNamespace(
        CUDAGraph=Graph, current_stream=Stream, Event=Event,
        stream=lambda s: contextlib.nullcontext(),
        graph=lambda g, stream=None, capture_error_mode=None: contextlib.nullcontext(),
        empty_cache=lambda: None)
    fwd.torch = types.SimpleNamespace(cuda=cuda)
    fwd.device, fwd.stream = "cuda", Stream()
    fwd.decoder.bind = bind
    return Graph, alive


def test_a_captured_forward_keeps_its_buffers_as_long_as_its_graph(arch: str) -> None:
    """On CUDA a forward's static buffers (allocated by ``bind`` outside the graph's
    memory pool) must live as long as its captured graph: freed earlier, the replays
    read memory the allocator has handed back (an illegal memory access on the H100).
    The CUDA calls are stood in for on the CPU; the lifetimes are Python's."""
    import gc

    from profiler.engines.synthetic import _Forwards

    fwd = _Forwards(arch, "cpu", "float32", 0, max_entries=8, memory_fraction=0.4)
    Graph, alive = _on_stand_in_cuda(fwd)
    fwd.run(2, 1, 64)
    gc.collect()
    assert len(alive) == 1 and alive[0]() is not None  # held while its graph is cached
    fwd.run(2, 1, 64)  # a replay of the cached graph: nothing bound again
    assert len(alive) == 1 and Graph.replays == 2
    fwd.clear()
    gc.collect()
    assert alive[0]() is None  # released with its graph


def test_a_forwards_events_bracket_the_replay_alone(arch: str) -> None:
    """Asked for them, a CUDA forward returns timing events recorded on its stream just
    around its replay: binding and capturing a new shape (two eager warm-ups and the
    captured call) fall before the first; unasked, and on the CPU, it returns None."""
    from profiler.engines.synthetic import _Forwards

    cpu = _Forwards(arch, "cpu", "float32", 0, max_entries=8, memory_fraction=0.4)
    assert cpu.run(1, 1, 16, events=True) is None
    fwd = _Forwards(arch, "cpu", "float32", 0, max_entries=8, memory_fraction=0.4)
    Graph, _ = _on_stand_in_cuda(fwd)
    assert fwd.run(2, 1, 64) is None
    done = Graph.replays + Graph.eager
    start, end = fwd.run(2, 1, 64, events=True)
    assert start.timing and end.timing
    assert (start.at, end.at) == (done, done + 1)
    start, end = fwd.run(1, 2, 64, events=True)  # a new shape: bound, captured, replayed
    assert (start.at, end.at) == (done + 4, done + 5)


# --- continuous batching ------------------------------------------------------------------
@pytest.mark.parametrize("k2", [1, 3], ids=["plain", "token-speculation"])
def test_continuous_server_writes_the_steps_a_call_writes(arch: str, k2: int) -> None:
    """Steps submitted one by one to the running batch (some while others run) are the
    steps a call writes for the same prefixes; a cancelled step never resolves; the
    server's forwards are counted and timed; leaving it cancels what is left."""
    spec = None if k2 == 1 else TokenSpeculation(drafter=TokenDrafter(method="ngram"),
                                                 num_speculative_tokens=k2 - 1)
    cal = calibration(step={"step_tokens_histogram": {"3": 1, "9": 1}})
    eng = SyntheticEngine(arch, acceptance=cal, seed=2, speculation=spec)
    prefixes = [f"Question {i}: how many?\n\n" for i in range(6)]
    want = [o.text for o in eng.generate_steps(prefixes, 48).outputs]
    eng.forget()
    with eng.serve() as server:
        first = [server.submit(p, 48) for p in prefixes[:3]]
        first[0].result(timeout=60)  # the others join a batch already running
        rest = [server.submit(p, 48) for p in prefixes[3:]]
        dropped = server.submit("Question 99: dropped\n\n", 48)
        server.cancel(dropped)
        got = [f.result(timeout=60).text for f in first + rest]
        assert got == want
        assert dropped.cancelled()
        assert server.iterations >= 9 // (1 if k2 == 1 else k2) and server.busy_seconds > 0
        left = server.submit("Question 100: left\n\n", 48)
    assert left.cancelled() or left.done()
    with pytest.raises(RuntimeError, match="closed"):
        server.submit("late\n\n", 48)


def _trio(arch: str, arch2: str) -> tuple[SyntheticEngine, SyntheticEngine,
                                           SyntheticVerifier, Any]:
    """A target, a draft and a verifier on one small step law (steps of 2 or 5 words,
    the first drafts accepted at 0.7, the next at 0.5), and a problem for them."""
    from profiler.problems import Problem

    cal = calibration(step={"step_tokens_histogram": {"2": 1, "5": 1},
                            "acceptance_by_position": [0.7, 0.5]})
    return (SyntheticEngine(arch, acceptance=cal, seed=4),
            SyntheticEngine(arch2, acceptance=cal, role="draft", seed=4),
            SyntheticVerifier(cal, source="test", seed=4),
            Problem(0, "How many apples are left?", "1", ""))


def test_continuous_async_commits_what_call_async_commits(arch: str, arch2: str) -> None:
    """The synthetic engine's steps and verdicts are functions of the texts, so under
    either scheduler every committed step is the target's own step from its prefix or
    the draft's step from it that the verifier accepts against the target's (which
    positions get judged depends on when the draft's steps arrive, so the two schedulers
    may commit different texts); each target step is a request of its own; an engine
    without a running batch is refused."""
    from profiler.decoder import LookaheadDecoder
    from profiler.problems import format_prompt
    from specmodel.config import SpecConfig

    target, draft, ver, problem = _trio(arch, arch2)
    steps = {}
    for batching in ("call", "continuous"):
        cfg = SpecConfig(mode="async", k1=3, max_steps=8, target_batching=batching,
                         verifier={"kind": "synthetic", "model": "x"})
        target.forget()
        draft.forget()
        run = LookaheadDecoder.for_config(target, draft, ver, cfg).decode(problem)
        steps[batching] = [(s.text, s.source) for s in run.steps]
        if batching == "continuous":
            assert run.target_batches >= run.target_steps >= len(
                [s for s in run.steps if s.source == "target"])
            assert run.target_seconds > 0 and run.drafted_steps > 0
    for batching, committed in steps.items():
        assert len(committed) == 8, batching
        prefix = format_prompt(problem)
        for text, source in committed:
            own = target.generate_steps([prefix], 48).outputs[0].text
            if source == "target":
                assert text == own, batching
            else:
                assert text == draft.generate_steps([prefix], 48).outputs[0].text, batching
                assert ver.verify([(own, text)])[0].accepted, batching
            prefix += text
    assert {src for c in steps.values() for _, src in c} == {"target", "draft"}

    class OneCallAtATime:
        name = "transformers"

    with pytest.raises(ValueError, match="batches continuously"):
        LookaheadDecoder(OneCallAtATime(), draft, ver,  # type: ignore[arg-type]
                         SpecConfig(mode="async", k1=2, target_batching="continuous"))


def test_a_row_admitted_to_the_running_batch_caches_its_prefix_at_once(arch: str) -> None:
    """Prefix caching in the running batch: once a row is admitted (and prefilled) its
    prefix is cached, so a row admitted while it still runs prefills only its own new
    tokens (driven one iteration at a time, without the server thread)."""
    from profiler.engines.base import RunningBatch
    from profiler.engines.synthetic import ContinuousServer

    cal = calibration(step={"step_tokens_histogram": {"9": 1}})
    eng = SyntheticEngine(arch, acceptance=cal, seed=2)
    srv = ContinuousServer.__new__(ContinuousServer)
    RunningBatch.__init__(srv)
    srv.engine, srv._active = eng, []
    prompt = "Question: how many apples are left?\n\n"
    first = srv._request(prompt, 48)
    assert eng._uncached(prompt) == eng.count_tokens(prompt)
    srv._iterate([first])
    assert not first.done() and eng._uncached(prompt) == 0
    longer = prompt + "d1/0 d2 d3\n\n"
    assert eng._uncached(longer) == 3  # only the draft step's words


def test_a_failing_forward_fails_every_waiting_step_and_later_submissions(
        arch: str, monkeypatch) -> None:
    """An engine error inside the running batch reaches every step still waiting —
    those the failing iteration was admitting included — so no caller waits for ever,
    and a later submission is refused, naming the error (the server's loop driven on
    this thread, so the failing iteration is the one that admits the steps)."""
    from profiler.engines import EngineError
    from profiler.engines.base import RunningBatch
    from profiler.engines.synthetic import ContinuousServer

    eng = SyntheticEngine(arch, acceptance=calibration(), seed=2)

    def lost(*args, **kw):
        raise RuntimeError("device lost")

    monkeypatch.setattr(eng._fwd, "run", lost)
    srv = ContinuousServer.__new__(ContinuousServer)
    RunningBatch.__init__(srv)
    srv.engine, srv._active = eng, []
    steps = [srv._request(f"Question {i}?\n\n", 48) for i in range(2)]
    srv._pending = list(steps)
    srv._loop()  # takes both, fails admitting them, and returns
    for r in steps:
        with pytest.raises(RuntimeError, match="device lost"):
            r.future.result(timeout=1)
    with pytest.raises(EngineError, match="device lost"):
        srv.submit("Question 9?\n\n", 48)


def test_an_interleaved_run_decodes_what_a_run_by_configurations_does(
        arch: str, arch2: str, tmp_path: Path) -> None:
    """Problem by problem, every configuration on each, a run commits the same steps as
    configuration by configuration (each problem starts from a cold cache with the same
    draws); the record says how it was timed, keeps the configurations' order, and an
    interleaved run is never resumed."""
    from profiler.problems import Problem
    from profiler.runs import run_configurations
    from specmodel.config import SpecConfig

    cal = calibration(step={"step_tokens_histogram": {"2": 1, "5": 1},
                            "acceptance_by_position": [0.7, 0.5]})
    target = SyntheticEngine(arch, acceptance=cal, seed=4)
    draft = SyntheticEngine(arch2, acceptance=cal, role="draft", seed=4)
    ver = SyntheticVerifier(cal, source="test", seed=4)
    problems = [Problem(i, f"How many apples are left in basket {i}?", "1", "")
                for i in range(3)]
    configs = [SpecConfig(mode="sync", k1=k1, max_steps=6,
                          verifier={"kind": "synthetic", "model": "x"}) for k1 in (2, 3)]
    seen: list[str] = []
    records = {}
    for interleave in (False, True):
        seen.clear()
        records[interleave] = run_configurations(
            target, draft, ver, configs, problems, tmp_path / f"run_{interleave}.json",
            models={"target": "t", "draft": "d", "verifier": "v"}, settings={},
            progress=lambda done, total, msg: seen.append(msg.split(":")[0]),
            interleave=interleave)
    by_configs, by_problems = records[False], records[True]
    labels = ["target", "sync k1=2 k2=1", "sync k1=3 k2=1"]
    assert [c.label for c in by_problems.configs] == labels
    assert by_configs.settings.order == "configurations"
    assert by_problems.settings.order == "problems"
    assert load_run_record(tmp_path / "run_True.json").settings.order == "problems"
    # problem 0 forwards, problem 1 backwards, problem 2 forwards
    assert seen == [*labels, *labels[::-1], *labels]
    for a, b in zip(by_configs.configs, by_problems.configs, strict=True):
        assert [[(s.text, s.source) for s in p.steps] for p in a.problems] == [
            [(s.text, s.source) for s in p.steps] for p in b.problems]
        assert a.totals.output_tokens == b.totals.output_tokens
    with pytest.raises(ValueError, match="resume cannot continue an interleaved run"):
        run_configurations(target, draft, ver, configs, problems, tmp_path / "x.json",
                           models={}, settings={}, resume=True, interleave=True)


# --- the sweep's own draws ----------------------------------------------------------------
def test_the_decoder_model_on_the_sweeps_draws_decodes_what_the_decoder_decodes(
        arch: str, arch2: str) -> None:
    """:func:`position_draws` tabulates what the engines will draw (nothing runs), and
    the decoder model handed those draws (``Workload.sample``) decodes a sync sweep
    exactly as the real decoder on the real engines does: the same output tokens,
    accepted and judged drafts, and target decode iterations by the rows they ran —
    with and without token speculation, at rates by depth.  (A sync schedule does not
    depend on timing; async ones do, so they are held against measured runs instead.)"""
    from collections import Counter

    from profiler.decoder import LookaheadDecoder
    from profiler.engines.synthetic import position_draws, with_costs
    from profiler.problems import Problem, format_prompt
    from specmodel.config import SpecConfig
    from specmodel.decodermodel import (
        AcceptanceModel,
        CostModel,
        EngineBehaviour,
        Workload,
        simulate,
    )
    from specmodel.hardware.predicted import predicted_profiles

    data = load_preset("lr-paper-gsm8k-deepseek").model_dump(mode="json")
    data["step"].update(step_tokens_histogram={"2": 1, "5": 2, "9": 1},
                        acceptance_by_position=[0.8, 0.55, 0.4])
    data["token"].update(acceptance_by_position=[0.6, 0.4])
    cal = Calibration.model_validate(data)
    seed, steps, cap = 5, 7, 8
    tgt = SyntheticEngine(arch, acceptance=cal, role="target", seed=seed)
    drf = SyntheticEngine(arch2, acceptance=cal, role="draft", seed=seed)
    ver = SyntheticVerifier(cal, source="test", seed=seed)
    rows: Counter[int] = Counter()
    real = tgt._fwd.run

    def counted(b: int, q: int, L: int, graph: bool = True, *, prefill: bool = False,
                events: bool = False) -> Any:
        if not prefill:
            rows[b] += 1
        return real(b, q, L, graph, prefill=prefill, events=events)

    tgt._fwd.run = counted
    problems = [Problem(i, f"Problem {i}: how many apples are left?", "1", "")
                for i in range(3)]
    cfgs = [SpecConfig(k1=1, max_steps=steps, max_step_tokens=cap),
            SpecConfig(mode="sync", k1=3, max_steps=steps, max_step_tokens=cap,
                       verifier={"kind": "synthetic", "model": "x"}),
            SpecConfig(mode="sync", k1=4, k2=3, max_steps=steps, max_step_tokens=cap,
                       verifier={"kind": "synthetic", "model": "x"},
                       token={"method": "ngram"})]
    sample = position_draws(cal, seed=seed, prompts=[format_prompt(p) for p in problems],
                            target=arch, draft=arch2, steps=steps, cap=cap, gammas=[2])
    assert len(sample) == 3 and sample.problems[0].positions == steps
    assert all(len(us) == pos + 1 for pos, us in enumerate(sample.problems[0].verdicts))
    hardware = predicted_profiles(arch, arch2, cfgs, 12, device="cpu-epyc")
    costs = CostModel.from_calibration(
        with_costs(cal, {"context": 256, "T": {1: 0.01}, "c1": 0.1}, "test", None, hardware),
        target_architecture=hardware[0].architecture.name,
        draft_architecture=hardware[1].architecture.name,
        engine=EngineBehaviour.synthetic())
    for cfg in cfgs:
        rows.clear()
        dec = LookaheadDecoder.for_config(tgt, drf if cfg.k1 > 1 else None,
                                          ver if cfg.k1 > 1 else None, cfg)
        tokens = accepted = judged = 0
        for p in problems:
            tgt.forget()
            drf.forget()
            got = dec.decode(p)
            tokens += got.output_tokens
            accepted += got.accepted_steps
            judged += got.drafted_steps
        sim = simulate(cfg, AcceptanceModel.from_calibration(cal), costs,
                       Workload(steps, cap, 12, sample=sample), problems=6)
        c = {k: v * 3 for k, v in sim.counters.items()}  # 6 problems: the sample twice
        assert c["output_tokens"] == pytest.approx(tokens), cfg.label
        assert c["accepted_steps"] == pytest.approx(accepted), cfg.label
        assert c["drafted_steps"] == pytest.approx(judged), cfg.label
        assert {b: c.get(f"target_iterations_b{b}", 0) for b in rows} == pytest.approx(
            dict(rows)), cfg.label
        assert sum(v for k, v in c.items() if k.startswith("target_iterations_b")) \
            == pytest.approx(sum(rows.values())), cfg.label
    assert judged > accepted > 0
    with pytest.raises(ValueError, match="width must be 1"):
        simulate(SpecConfig(mode="sync", k1=3, width=2, max_steps=steps,
                            max_step_tokens=cap), AcceptanceModel.from_calibration(cal),
                 costs, Workload(steps, cap, 12, sample=sample))
    with pytest.raises(ValueError, match="workload takes up to 9"):
        simulate(SpecConfig(mode="sync", k1=3, max_steps=9, max_step_tokens=cap),
                 AcceptanceModel.from_calibration(cal), costs,
                 Workload(9, cap, 12, sample=sample))


@pytest.mark.parametrize(("mode", "batching"), [("sync", "call"), ("async", "continuous")])
def test_a_problem_records_the_one_time_setup_inside_its_wall_time(
        arch: str, arch2: str, mode: str, batching: str) -> None:
    """A problem's ``setup_seconds`` is what the engines spent binding (on CUDA:
    capturing) forwards of shapes they had not run before: some on a fresh engine, and
    (sync, whose shapes do not depend on timing) none when the same problem runs again
    on shapes already bound; forwards that copies of an engine share are counted once;
    and the speedup less that setup is the tokens over the wall time less it."""
    from profiler.decoder import LookaheadDecoder
    from specmodel.config import SpecConfig
    from specmodel.prediction import tokens_per_second_less_setup

    target, draft, ver, problem = _trio(arch, arch2)
    cfg = SpecConfig(mode=mode, k1=3, max_steps=6, target_batching=batching,
                     verifier={"kind": "synthetic", "model": "x"})
    decoder = LookaheadDecoder.for_config(target, draft, ver, cfg)
    first = decoder.decode(problem)
    assert first.setup_seconds is not None and 0 < first.setup_seconds < first.seconds
    if mode == "sync":
        target.forget()
        draft.forget()
        again = decoder.decode(problem)  # the same shapes: all bound already
        assert again.setup_seconds == 0.0
    # a copy with other token speculation shares the forwards: one clock each
    spec = TokenSpeculation(drafter=TokenDrafter(method="ngram"), num_speculative_tokens=2)
    assert target.with_speculation(spec).setup_clocks() == target.setup_clocks()
    shared = LookaheadDecoder(target, target.with_speculation(spec), ver, cfg)
    assert shared._setup_clocks() == target.setup_clocks()
    steady = tokens_per_second_less_setup([first])
    assert steady == pytest.approx(first.output_tokens / (first.seconds - first.setup_seconds))
