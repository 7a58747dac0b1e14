"""``bench_schedule_audit``: the forward log attributes every forward, by kind, by rows
and by whether the other model ran beside it; the decoder model's iterations by rows
are its own counters; the split by role prices the run's own forwards.  A live run on
tiny architectures checks what holds whatever the timing: the target alone runs
exactly one b = 1 decode forward per token and one prefill per problem, measured and
simulated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.bench_schedule_audit import (
    ForwardLog,
    _overlap,
    busy_share,
    main,
    measured_mix,
    model_mix,
    replay,
    replay_split,
    role_split,
)

# profiling passes here run on real decoders with a short burn-in and contention
pytestmark = pytest.mark.usefixtures("quick_profiling")

TINY = {"model_type": "qwen2", "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "vocab_size": 512}


def test_overlap_and_the_measured_mix() -> None:
    assert _overlap((0.0, 1.0), [(0.5, 2.0)]) == pytest.approx(0.5)
    assert _overlap((0.0, 1.0), [(-1.0, 0.2), (0.4, 0.6), (3.0, 4.0)]) == pytest.approx(0.4)
    assert _overlap((0.0, 1.0), []) == 0.0
    log = [("target", "decode", 1, 1, 64, 0.0, 1.0),   # alone
           ("target", "decode", 3, 1, 64, 1.0, 2.0),   # beside the draft's forward
           ("draft", "decode", 1, 1, 64, 1.0, 2.1),    # beside the target's two forwards
           ("target", "decode", 5, 1, 64, 2.0, 3.0),   # 10 % beside; pooled into b = 4
           ("target", "prefill", 1, 32, 0, 3.0, 3.5),  # not a decode iteration
           ("target", "verify", 2, 3, 64, 3.5, 4.5)]   # a token-speculation pass
    assert busy_share([{"seconds": 5.0, "log": log}]) == pytest.approx(4.5 / 5.0)
    assert busy_share([{"seconds": 5.0, "log": log},  # a gap of 1 s between two forwards
                       {"seconds": 3.0, "log": [log[0], (*log[1][:5], 2.0, 3.0)]}]
                      ) == pytest.approx((4.5 + 2.0) / 8.0)
    assert busy_share([{"seconds": 0.0, "log": []}]) is None
    mix = measured_mix([{"tokens": 4, "log": log}], lambda role, b, q, L: 0.5)
    assert mix["iterations_per_token"] == {"1": 0.25, "2": 0.25, "3": 0.25, "4": 0.25}
    ratio = mix["price_ratio"]
    assert ratio["target alone"]["measured_over_price"] == pytest.approx(2.0)
    assert ratio["target beside"]["forwards_per_token"] == pytest.approx(0.25)
    assert ratio["target part"]["forwards_per_token"] == pytest.approx(0.25)
    assert ratio["draft beside"]["measured_over_price"] == pytest.approx(1.1 / 0.5)
    assert model_mix({"output_tokens": 10.0, "target_iterations_b1": 4.0,
                      "target_iterations_b2": 2.0, "target_iterations_b6": 1.0,
                      "draft_iterations_b1": 9.0}) == {"1": 0.4, "2": 0.2, "4": 0.1}
    split = role_split([{"tokens": 4, "log": log, "target_seconds": 5.0,
                         "draft_seconds": 1.2}], lambda role, b, q, L: 0.1 * q,
                       {"output_tokens": 2.0, "target_seconds": 0.01})
    t, d = split["target"], split["draft"]
    assert t["model"] == pytest.approx(5.0) and d["model"] is None
    assert t["calls"] == pytest.approx(1250.0) and d["calls"] == pytest.approx(300.0)
    assert t["forwards"] == pytest.approx(1e3 * 4.5 / 4)
    assert t["priced"] == pytest.approx(1e3 * (0.3 + 3.2 + 0.3) / 4)
    assert t["by_kind"]["prefill"] == {"forwards_per_token": 0.25,
                                       "priced": pytest.approx(800.0),
                                       "forwards": pytest.approx(125.0)}
    assert set(d["by_kind"]) == {"decode"}


def test_replay_runs_each_role_alone_in_order_or_grouped() -> None:
    """Each role's logged forwards run again as the run ran them: a prefill as a prefill,
    captured (on CUDA) up to PREFILL_GRAPH_TOKENS tokens, eager beyond."""
    log = [("target", "decode", 2, 1, 64, 0.0, 0.3),
           ("draft", "decode", 1, 1, 64, 0.1, 0.2),
           ("target", "prefill", 1, 32, 0, 0.3, 0.5),
           ("target", "prefill", 2, 1024, 0, 0.5, 0.55),
           ("target", "decode", 1, 1, 64, 0.55, 0.6)]
    calls: list[tuple[str, int, int, int, bool, bool]] = []
    runners = {role: (lambda b, q, L, graph, prefill=False, role=role:
                      calls.append((role, b, q, L, graph, prefill)) or 0.001 * b)
               for role in ("target", "draft")}
    got = replay(log, runners, "in_order")  # the seconds each runner says its forward took
    assert got == {"target": pytest.approx(0.006), "draft": pytest.approx(0.001)}
    assert calls == [("target", 2, 1, 64, True, False), ("target", 1, 32, 0, True, True),
                     ("target", 2, 1024, 0, False, True), ("target", 1, 1, 64, True, False),
                     ("draft", 1, 1, 64, True, False)]
    calls.clear()
    replay(log, runners, "grouped")  # by kind, then rows, new tokens and context
    assert calls == [("target", 1, 1, 64, True, False), ("target", 2, 1, 64, True, False),
                     ("target", 1, 32, 0, True, True), ("target", 2, 1024, 0, False, True),
                     ("draft", 1, 1, 64, True, False)]
    with pytest.raises(ValueError, match="how must be one of"):
        replay(log, runners, "sorted")
    log = [("target", "decode", 2, 1, 64, 0.0, 0.3),
           ("draft", "decode", 1, 1, 64, 0.1, 0.2),
           ("target", "prefill", 1, 32, 0, 0.3, 0.5),
           ("target", "decode", 1, 1, 64, 0.5, 0.6)]
    run = {"tokens": 2, "log": log,
           "replay": {"in_order": {"target": 0.4, "draft": 0.05},
                      "grouped": {"target": 0.2, "draft": 0.1}}}
    split = replay_split([run], lambda role, b, q, L: 0.1 * b)
    assert split["target"] == {"in_run": pytest.approx(300.0), "in_order": pytest.approx(200.0),
                               "grouped": pytest.approx(100.0), "priced": pytest.approx(200.0)}
    assert split["draft"]["in_run"] == pytest.approx(50.0)
    assert split["draft"]["priced"] == pytest.approx(50.0)


class _FakeCuda:
    """Stands in for ``torch`` on CUDA: a device clock the forwards advance, and timing
    events that read it when recorded."""

    def __init__(self) -> None:
        self.now = 5.0
        """The device's clock, seconds."""
        self.synchronized = 0
        fake = self

        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                assert enable_timing
                self.t: float | None = None

            def record(self) -> None:
                self.t = fake.now

            def synchronize(self) -> None:
                assert self.t is not None

            def elapsed_time(self, other: Event) -> float:  # milliseconds
                assert self.t is not None and other.t is not None
                return 1e3 * (other.t - self.t)

        class Cuda:
            @staticmethod
            def synchronize() -> None:
                fake.synchronized += 1

        Cuda.Event = Event  # type: ignore[attr-defined]
        self.cuda = Cuda


class _FakeForwards:
    """A synthetic engine's ``_Forwards`` on CUDA: ``run`` launches a forward that keeps
    the device 1 ms per row (after 0.5 ms on the host the device does not see) and,
    asked, returns the events around it."""

    def __init__(self, torch: _FakeCuda) -> None:
        self.torch, self.stream = torch, object()

    def run(self, b: int, q: int, L: int, graph: bool = True, *, prefill: bool = False,
            events: bool = False) -> tuple | None:
        self.torch.now += 0.0005  # binding, launching: not the forward's
        start = self.torch.cuda.Event(enable_timing=True)
        start.record()
        self.torch.now += 0.001 * b
        end = self.torch.cuda.Event(enable_timing=True)
        end.record()
        return (start, end) if events else None


def test_on_cuda_the_log_times_forwards_on_the_device() -> None:
    """On CUDA a call only launches its forward: the log times it by the events the
    engine records around it on its stream (not the host clock around the call), on the
    host clock's scale, after waiting for the device; the replay runner likewise."""
    torch = _FakeCuda()
    fwd = _FakeForwards(torch)
    log = ForwardLog()
    log.wrap(fwd, "target")
    assert torch.synchronized == 1  # before the reference event
    assert fwd.run(2, 1, 64) is None  # what the engine sees is unchanged
    fwd.run(1, 32, 0, prefill=True)
    assert fwd.run(3, 4, 64, events=True) is not None
    rows = log.take()
    assert torch.synchronized == 2
    assert [r[:5] for r in rows] == [("target", "decode", 2, 1, 64),
                                     ("target", "prefill", 1, 32, 0),
                                     ("target", "verify", 3, 4, 64)]
    assert [r[6] - r[5] for r in rows] == pytest.approx([0.002, 0.001, 0.003])
    assert [rows[i + 1][5] - rows[i][6] for i in range(2)] == pytest.approx([0.0005] * 2)
    assert log.take() == []
    assert log.runners["target"](4, 1, 64, True) == pytest.approx(0.004)


def _audit_tiny(tmp_path: Path, *options: str) -> dict:
    """The audit of two short problems on tiny random-weight architectures (target: 2
    layers of width 64, draft: 1), with ``options``; its summary JSON."""
    target = tmp_path / "tiny.json"
    target.write_text(json.dumps(TINY))
    draft = tmp_path / "tiny1.json"
    draft.write_text(json.dumps({**TINY, "num_hidden_layers": 1}))
    out = tmp_path / "audit.json"
    assert main(["--target", str(target), "--draft", str(draft), "--problems", "2",
                 "--max-steps", "3", "--max-step-tokens", "16", "--profile-repeats", "1",
                 *options, "--out", str(out)]) == 0
    return json.loads(out.read_text())


@pytest.mark.live
def test_audit_on_tiny_architectures(tmp_path: Path) -> None:
    """One audit of every configuration but one (chosen with --configs), replayed."""
    chosen = ["target", "token k2=2", "async k1=3 k2=1", "sync k1=3 k2=2", "async k1=3 k2=2",
              "async k1=3 k2=1 continuous", "async k1=3 k2=2 continuous"]
    got = _audit_tiny(tmp_path, "--k2", "2", "--configs", ",".join(chosen), "--replay")
    assert got["machine"]["cores"] >= 1 and got["draws"] == "position"
    assert got["device"] == "cpu" and got["dtype"] == "float32" and got["replay"] is True
    assert got["device_description"]["type"] == "cpu"
    rows = {r["config"]: r for r in got["rows"]}
    assert set(rows) == set(chosen)  # sync k1=3 k2=1 left out
    assert set(rows["target"]["replay"]) == {"target"}
    cont = rows["async k1=3 k2=1 continuous"]["replay"]
    assert set(cont) == {"target", "draft"}
    for v in cont.values():
        assert all(v[k] > 0 for k in ("in_run", "in_order", "grouped", "priced"))
    assert all(0 < r["busy_share"] <= 1 for r in rows.values())
    # the one-time setup (binding new shapes) is a share of the wall time; less it, the
    # forwards fill more of what is left, and the baseline's speedup stays 1
    for r in rows.values():
        assert 0 <= r["setup_share"] < 1
        assert r["busy_share"] <= r["busy_share_less_setup"] + 1e-12
    assert rows["target"]["speedup_less_setup"] == pytest.approx(1.0)
    with pytest.raises(SystemExit, match="--configs must include 'target'"):
        main(["--configs", "async k1=3 k2=1", "--k2", "1"])
    base = rows["target"]
    assert base["iterations_per_token"] == {"1": pytest.approx(1.0)}
    assert base["model_iterations_per_token_at_run_acceptance"] == {"1": pytest.approx(1.0)}
    assert base["speedup"] == pytest.approx(1.0)
    tokens = base["tokens_per_step"] * 3 * 2  # 3 steps of 2 problems
    kinds = base["time_split"]["target"]["by_kind"]
    assert kinds["decode"]["forwards_per_token"] == pytest.approx(1.0)
    assert kinds["prefill"]["forwards_per_token"] == pytest.approx(2 / tokens)  # the prompts
    assert set(base["time_split"]) == {"target"}
    for name, r in rows.items():
        split = r["time_split"]
        assert all(v["priced"] > 0 and v["forwards"] > 0 and v["calls"] > 0
                   for v in split.values()), name
        if "k1=3" in name:
            assert 0 <= r["step_acceptance_run"] <= 1
            assert r["model_speedup_at_run_acceptance"] > 0
            assert sum(r["iterations_per_token"].values()) > 0
            assert r["price_ratio"]  # every forward priced
            assert set(split) == {"target", "draft"} and split["draft"]["model"] > 0
        if "k2=2" in name:  # token speculation: passes with a verification forward
            assert "verify" in split["target"]["by_kind"], name
    assert max(int(b) for b in rows["async k1=3 k2=1 continuous"][
        "model_iterations_per_token_at_run_acceptance"]) >= 2  # rows batched
    # on the problems' own draws the model plays what the run played wherever the
    # schedule does not depend on timing: the target alone and sync, iteration for
    # iteration; the async ones it prices
    for name in ("target", "sync k1=3 k2=2"):
        assert rows[name]["model_iterations_per_token_on_draws"] == pytest.approx(
            rows[name]["iterations_per_token"]), name
    assert all(r["model_speedup_on_draws"] > 0 for r in rows.values())
    assert got["profile_passes"] == 2  # before the round and after it
    # the lean audit a short GPU call runs: the target and continuous async, profiled
    # before the round only
    lean = _audit_tiny(tmp_path, "--k2", "1", "--configs",
                       "target,async k1=3 k2=1 continuous", "--no-profile-after")
    assert lean["profile_passes"] == 1
    assert {r["config"] for r in lean["rows"]} == {"target", "async k1=3 k2=1 continuous"}
    assert main(["--problems", "0"]) == 2
