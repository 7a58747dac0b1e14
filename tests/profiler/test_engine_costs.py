"""profiler.engine_costs without a model: the cell lines, the intercept fit and the
contention measurement on engines whose call times are known."""

from __future__ import annotations

import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from profiler.engine_costs import (
    CellTiming,
    fit_intercepts,
    measure_contention,
    measure_model,
    model_costs,
)


class _Clock:
    """Call times of a model: overhead + prefill · b · L + per_token(b, L) · n."""

    def __init__(self, over: float, pre: float, per: float):
        self.over, self.pre, self.per = over, pre, per
        self.tokenizer = self
        self.calls: list[tuple[int, int, int]] = []

    # the tokenizer interface context_prompt uses: one token per word
    def __call__(self, text: str, add_special_tokens: bool = False):
        return type("Enc", (), {"input_ids": text.split()})()

    def decode(self, ids, skip_special_tokens: bool = True) -> str:
        return " ".join(ids)

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def seconds(self, b: int, L: int, n: int) -> float:
        return self.over + self.pre * b * L + self.per * (1 + 0.5 * (b - 1)) * n

    def generate_exact(self, prompts: list[str], n: int) -> float:
        b, L = len(prompts), self.count_tokens(prompts[0])
        self.calls.append((b, L, n))
        t = self.seconds(b, L, n)
        time.sleep(t)
        return t


def test_cells_recover_the_slope_and_the_fit_recovers_overhead_and_prefill() -> None:
    eng = _Clock(over=0.004, pre=2e-5, per=0.001)
    cells = measure_model(eng, contexts=[20, 60], widths=[1, 2], tokens=(2, 6), repeats=1)
    assert [(c.batch, c.context) for c in cells] == [(1, 20), (2, 20), (1, 60), (2, 60)]
    for c in cells:
        assert c.per_token == pytest.approx(0.001 * (1 + 0.5 * (c.batch - 1)), rel=1e-9)
    (over, _), (pre, _) = fit_intercepts(cells)
    assert over == pytest.approx(0.004, abs=1e-9) and pre == pytest.approx(2e-5, rel=1e-6)
    costs = model_costs("m", cells)
    assert costs.call_overhead.value == pytest.approx(0.004, abs=1e-9)
    assert costs.decode_points()[(2, 60)] == pytest.approx(0.0015)
    # every cell was warmed at its own shape before it was timed
    assert (2, 60, 2) in eng.calls


def test_repeats_are_passes_over_the_whole_grid() -> None:
    """A slow spell must not land on one cell: every cell is timed once per pass, every
    other pass in reverse order, and each cell's value is the median of its passes."""
    eng = _Clock(over=0.0, pre=0.0, per=1e-4)
    cells = measure_model(eng, contexts=[5, 9], widths=[1, 2], tokens=(2, 4), repeats=3)
    timed = [(b, L) for b, L, n in eng.calls[5:]]  # after the first call and 4 warm-ups
    grid = [(1, 5), (2, 5), (1, 9), (2, 9)]
    passes = [timed[i:i + 8:2] for i in range(0, 24, 8)]
    assert passes == [grid, grid[::-1], grid]
    assert all(c.n == 3 for c in cells)
    assert cells[0].per_token == pytest.approx(1e-4, rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.floats(0, 0.5), st.floats(0, 0.01), st.lists(
    st.tuples(st.integers(1, 8), st.integers(1, 2000)), min_size=3, max_size=9, unique=True))
def test_the_intercept_fit_is_exact_on_exact_lines(over, pre, cells) -> None:
    if len({b * L for b, L in cells}) < 2:
        return
    timed = [CellTiming(b, L, over + pre * b * L + 0.1 * 2, over + pre * b * L + 0.1 * 8,
                        (2, 8), 1) for b, L in cells]
    (o, o_se), (p, p_se) = fit_intercepts(timed)
    assert o == pytest.approx(over, abs=1e-7) and p == pytest.approx(pre, abs=1e-9)
    assert o_se < 1e-6 and p_se < 1e-9


def test_bad_grids_are_refused() -> None:
    eng = _Clock(0, 0, 0.001)
    with pytest.raises(ValueError, match="tokens must be two lengths"):
        measure_model(eng, contexts=[8], widths=[1], tokens=(4, 4))
    with pytest.raises(ValueError, match="contexts and widths"):
        measure_model(eng, contexts=[], widths=[1])
    with pytest.raises(ValueError, match="two distinct b"):
        fit_intercepts([CellTiming(1, 8, 1.0, 2.0, (1, 2), 1)])


class _Pair:
    """Two fake models' shared state: which calls are running, and the work each does.
    Calls that run at the same time progress ``slow[role]`` times slower while both
    run (the decoder model's contention); their times are computed, not slept."""

    def __init__(self, slow: dict[str, float]) -> None:
        self.slow = slow
        self.running: dict[str, float] = {}
        self.lock = threading.Lock()

    def call(self, role: str, work: float) -> float:
        with self.lock:
            self.running[role] = work
        time.sleep(0.05)  # long enough for a call submitted together to start too
        with self.lock:
            other = next((r for r in self.running if r != role), None)
            w_other = self.running.get(other) if other else None
        time.sleep(0.05)
        with self.lock:
            del self.running[role]
        if other is None:
            return work
        mine, theirs = work * self.slow[role], w_other * self.slow[other]
        if mine <= theirs:  # wholly beside the other
            return mine
        # beside it until it ends, then alone at full pace
        return theirs + work - theirs / self.slow[role]


class _PairClock(_Clock):
    """A _Clock of one role of a :class:`_Pair`; step calls (with token speculation)
    do ``step`` seconds of work."""

    def __init__(self, pair: _Pair, role: str, per: float, step: float = 0.0) -> None:
        super().__init__(0.0, 0.0, per)
        self.pair, self.role, self.step = pair, role, step

    def generate_exact(self, prompts: list[str], n: int) -> float:
        return self.pair.call(self.role, self.seconds(len(prompts), 0, n))

    def with_speculation(self, speculation):
        assert speculation.num_speculative_tokens >= 1
        return self

    def generate_steps(self, prefixes, max_tokens):
        from profiler.engines import StepBatch, StepOutput

        t = self.pair.call(self.role, self.step)
        return StepBatch([StepOutput("1. A step.\n", 4, "stop")], t)


@settings(max_examples=200, deadline=None)
@given(st.floats(0.01, 100), st.floats(0.01, 100), st.floats(1.0, 4.0), st.floats(1.0, 4.0))
def test_overlap_slowdown_inverts_the_decoder_models_contention(w_a, w_b, s_a, s_b) -> None:
    """Two calls started together, each slowed while both run: the shorter's slowdown
    is its time over alone, the longer's that of the work it did while they overlapped;
    both recovered exactly from the four times."""
    from profiler.engine_costs import overlap_slowdown

    first_end = min(w_a * s_a, w_b * s_b)
    t_a = w_a * s_a if w_a * s_a <= first_end else first_end + w_a - first_end / s_a
    t_b = w_b * s_b if w_b * s_b <= first_end else first_end + w_b - first_end / s_b
    overlap = min(t_a, t_b)
    assert overlap == pytest.approx(first_end)
    assert overlap_slowdown(w_a, t_a, overlap) == pytest.approx(s_a, rel=1e-6)
    assert overlap_slowdown(w_b, t_b, overlap) == pytest.approx(s_b, rel=1e-6)


def test_overlap_slowdown_refuses_inconsistent_timings() -> None:
    from profiler.engine_costs import overlap_slowdown

    with pytest.raises(ValueError, match="alone must be"):
        overlap_slowdown(0.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="cannot exceed"):
        overlap_slowdown(1.0, 1.0, 2.0)
    with pytest.raises(ValueError, match="inconsistent"):
        overlap_slowdown(1.0, 3.0, 1.5)  # 2 s longer beside a call of 1.5 s


def test_contention_is_measured_the_way_the_decoder_pairs_its_calls() -> None:
    """Paired calls, rounds alone and together: the draft (shorter) runs wholly beside
    the target, the target only while the draft runs; each slowdown is recovered as
    the decoder model applies it, with its spread over the rounds."""
    pair = _Pair({"target": 1.5, "draft": 1.2})
    target = _PairClock(pair, "target", per=0.004)
    draft = _PairClock(pair, "draft", per=0.002)
    slow_t, slow_d = measure_contention(target, draft, context=8, tokens=4, repeats=3)
    assert slow_t.value == pytest.approx(1.5, rel=1e-9) and slow_t.n == 3
    assert slow_d.value == pytest.approx(1.2, rel=1e-9)
    assert slow_t.stderr == pytest.approx(0.0, abs=1e-9)
    # the looping measurement's figure, the target slowed for its whole call, would
    # be (0.024·1.2 + 0.016 − 0.024·1.2/1.5)/0.016 = 1.6: not what the model applies
    with pytest.raises(ValueError, match="repeats and tokens must be >= 1"):
        measure_contention(target, draft, context=8, tokens=4, repeats=0)
    # the worker threads were joined
    assert not any(t.name.startswith("engine-costs-") for t in threading.enumerate())


class _Disturbed(_PairClock):
    """A _PairClock whose calls numbered in ``spoiled`` (1-based) report ``extra``
    seconds more than they took: a third process took the machine during them."""

    def __init__(self, *args, spoiled: set[int], extra: float = 10.0, **kw) -> None:
        super().__init__(*args, **kw)
        self.spoiled, self.extra, self.calls = spoiled, extra, 0

    def generate_exact(self, prompts: list[str], n: int) -> float:
        self.calls += 1
        t = super().generate_exact(prompts, n)
        return t + self.extra if self.calls in self.spoiled else t


def test_a_disturbed_round_is_run_again_and_an_always_disturbed_one_refused() -> None:
    """The target's call beside the draft reports 10 s more than it took (longer beside
    the draft than they overlapped): that round is run again, and the slowdowns are the
    undisturbed rounds'; a machine that disturbs every try gets a one-line refusal."""
    from profiler.engine_costs import RERUNS_PER_ROUND, InconsistentTimingsError

    pair = _Pair({"target": 1.5, "draft": 1.2})
    # calls 1, 2: round 1 alone / together; call 4 is round 2's first try together
    target = _Disturbed(pair, "target", per=0.004, spoiled={4})
    draft = _PairClock(pair, "draft", per=0.002)
    slow_t, slow_d = measure_contention(target, draft, context=8, tokens=4, repeats=2)
    assert target.calls == 2 * 2 + 2  # one round tried twice
    assert slow_t.value == pytest.approx(1.5, rel=1e-9) and slow_t.n == 2
    assert slow_d.value == pytest.approx(1.2, rel=1e-9)
    always = _Disturbed(pair, "target", per=0.004, spoiled=set(range(2, 100, 2)))
    tries = f"{RERUNS_PER_ROUND + 1} tries of one round"
    with pytest.raises(InconsistentTimingsError, match=tries):
        measure_contention(always, draft, context=8, tokens=4, repeats=2)
    assert always.calls == 2 * (RERUNS_PER_ROUND + 1)


def test_speculative_contention_is_those_calls_paired_with_the_others() -> None:
    from profiler.engine_costs import measure_speculative_contention

    pair = _Pair({"target": 1.7, "draft": 1.1})
    target = _PairClock(pair, "target", per=0.001, step=0.05)
    draft = _PairClock(pair, "draft", per=0.001)
    slow = measure_speculative_contention(target, draft, ["a b c", "a b c d e"], k2=3,
                                          max_step_tokens=8)
    assert slow.value == pytest.approx(1.7, rel=1e-9) and slow.n == 2
    with pytest.raises(ValueError, match="k2 must be >= 2"):
        measure_speculative_contention(target, draft, ["a"], k2=1, max_step_tokens=8)


def _measured(per: float, over: float, pre: float, passes: dict[int, tuple[float, float]],
              slowdown: float, date: str, n: int = 3, counted_in: str | None = None):
    """An engine_costs section and its settings whose cells lie exactly on
    over + pre · b · L + n · per · b."""
    from profiler import calibrate
    from specmodel.formats.calibration import EngineCosts, EngineCostsSettings, Measurement

    cells = [CellTiming(b, L, over + pre * b * L + 4 * per * b, over + pre * b * L + 32 * per * b,
                        (4, 32), n) for L in (64, 256) for b in (1, 2)]
    target = model_costs("tgt", cells, slowdown).model_copy(update={
        "speculative_passes": {k: Measurement(value=v, n=6, stderr=se)
                               for k, (v, se) in passes.items()},
        "passes_counted_in": counted_in,
        "speculative_slowdown": Measurement(value=slowdown, n=1)})
    costs = EngineCosts(engine="transformers", device="cpu", dtype="float32", threads=1,
                        tokens=(4, 32), target=target)
    settings = EngineCostsSettings(
        description="engine_costs: measured.", date=date, **calibrate.engine_costs_key(
            target="tgt", draft=None, contexts=[64, 256], widths=[1, 2], tokens=[4, 32],
            repeats=n, threads=1, speculation_k2=sorted(passes), speculation_problems=2,
            seed=1, delimiter="\n"))
    return costs, settings


def test_pooling_averages_cells_refits_and_keeps_the_spread_between_measurements() -> None:
    from profiler.engine_costs import pool_engine_costs

    a = _measured(0.2, 0.05, 0.01, {2: (1.5, 0.1), 3: (1.8, 0.1)}, 1.0,
                  "2026-11-23T18:00:00+00:00", n=3)
    b = _measured(0.3, 0.05, 0.01, {2: (2.0, 0.1), 3: (3.0, 0.2)}, 1.2,
                  "2026-11-23T20:00:00+00:00", n=1)
    costs, settings = pool_engine_costs([a, b])
    pts = costs.target.decode_points()
    assert pts[(1, 64)] == pytest.approx((3 * 0.2 + 1 * 0.3) / 4)
    assert pts[(2, 256)] == pytest.approx(2 * (3 * 0.2 + 1 * 0.3) / 4)
    assert all(p.n == 4 for p in costs.target.points)
    # both measurements lie on the same intercept line: the refit recovers it
    assert costs.target.call_overhead.value == pytest.approx(0.05, abs=1e-9)
    assert costs.target.prefill_per_token.value == pytest.approx(0.01, rel=1e-9)
    k3 = costs.target.speculative_passes[3]
    assert k3.value == pytest.approx(2.4) and k3.n == 12
    assert k3.stderr == pytest.approx(0.6)  # sd(1.8, 3.0)/√2: the spread, not the ±0.1s
    assert costs.target.concurrent_slowdown.value == pytest.approx(1.1)
    assert costs.target.speculative_slowdown.value == pytest.approx(1.1)
    assert costs.target.concurrent_slowdown.stderr == pytest.approx(0.1)  # sd/√2
    assert settings.repeats == 4 and settings.date == "2026-11-23T20:00:00+00:00"
    assert "pooled from 2 measurements" in settings.description
    assert "2026-11-23T18:00:00+00:00: T(1, 64) = 200 ms" in settings.description
    assert costs.target.passes_counted_in == "grid"  # files before 2026-12-03 say nothing


def test_pooled_passes_are_counted_in_plain_calls_only_where_every_one_was() -> None:
    from profiler.engine_costs import pool_engine_costs

    def one(counted_in: str | None, date: str):
        return _measured(0.2, 0.05, 0.01, {3: (1.0, 0.1)}, 1.0, date,
                         counted_in=counted_in)

    plain = [one("plain-calls", "2026-12-03T10:00:00+00:00"),
             one("plain-calls", "2026-12-03T11:00:00+00:00")]
    assert pool_engine_costs(plain)[0].target.passes_counted_in == "plain-calls"
    mixed = [plain[0], one(None, "2026-11-23T18:00:00+00:00")]
    assert pool_engine_costs(mixed)[0].target.passes_counted_in == "grid"


def test_pooling_refuses_other_setups_and_single_measurements() -> None:
    from profiler.engine_costs import pool_engine_costs

    a = _measured(0.2, 0.05, 0.01, {2: (1.5, 0.1)}, 1.0, "2026-11-23T18:00:00+00:00")
    other = (a[0].model_copy(update={"threads": 2}), a[1])
    with pytest.raises(ValueError, match="measurement 2 has threads 2"):
        pool_engine_costs([a, other])
    longer = (a[0], a[1].model_copy(update={"cache_positions": 766}))
    with pytest.raises(ValueError, match="measurement 2 has cache positions 766"):
        pool_engine_costs([a, longer])
    with pytest.raises(ValueError, match="at least two"):
        pool_engine_costs([a])
    from specmodel.formats.calibration import MachineDetails

    def on(cpu: str):
        return (a[0], a[1].model_copy(update={"machine": MachineDetails(
            cpu=cpu, platform="p", python="3.11")}))
    with pytest.raises(ValueError, match="measurement 2 has machine 'Intel Xeon'"):
        pool_engine_costs([on("AMD EPYC"), on("Intel Xeon")])
    assert pool_engine_costs([on("AMD EPYC"), a])[1].machine.cpu == "AMD EPYC"  # one unknown

    def gpu(name: str):  # on a GPU, the GPU is the machine that timed
        return (a[0].model_copy(update={"device": "cuda"}), a[1].model_copy(update={
            "device": "cuda", "machine": MachineDetails(cpu="AMD EPYC", platform="p",
                                                        python="3.11", gpu=name)}))
    with pytest.raises(ValueError, match="measurement 2 has machine 'NVIDIA H100"):
        pool_engine_costs([gpu("NVIDIA H200"), gpu("NVIDIA H100 80GB HBM3")])
    assert pool_engine_costs([gpu("NVIDIA H200"), gpu("NVIDIA H200")])[0].device == "cuda"


def test_profile_pool_engine_costs_writes_a_copy_of_the_first(tmp_path) -> None:
    from cli.main import main
    from profiler.calibrate import PhaseResult, Recorder
    from specmodel.formats.calibration import load_calibration, load_preset

    base = load_preset("measured-qwen2.5-coder-0.5b-smollm2-135m")
    paths = []
    for i, per in enumerate((0.2, 0.4)):
        costs, settings = _measured(per, 0.05, 0.01, {2: (1.5, 0.1)}, 1.0,
                                    f"2026-11-23T1{i}:00:00+00:00")
        path = tmp_path / f"m{i}.json"
        with Recorder(path, base) as rec:
            rec.add(PhaseResult("engine_costs", costs, settings, {"target": "tgt"}))
        paths.append(path)
    out = tmp_path / "pooled.json"
    assert main(["profile", "pool-engine-costs", *map(str, paths), "-o", str(out)]) == 0
    cal = load_calibration(out)
    assert cal.engine_costs.target.decode_points()[(1, 64)] == pytest.approx(0.3)
    assert cal.step == base.step and cal.token == base.token
    assert "pooled from 2" in cal.provenance.settings.phases.engine_costs.description
    assert main(["profile", "pool-engine-costs", str(paths[0]), "-o", str(out)]) == 2
    plain = tmp_path / "plain.json"
    plain.write_text(base.model_dump_json())
    assert main(["profile", "pool-engine-costs", str(plain), str(paths[0]),
                 "-o", str(out)]) == 2


def test_a_cost_probe_times_a_small_grid_of_both_models_for_the_run_record() -> None:
    from profiler.engine_costs import probe_costs
    from specmodel.formats.run_record import CostProbe

    tgt, drf = _Clock(over=0.002, pre=1e-5, per=0.001), _Clock(over=0.001, pre=0.0, per=4e-4)
    for eng in (tgt, drf):
        eng.device, eng.dtype = "cpu", "float32"
    got = probe_costs(tgt, drf, models=("tgt", "drf"), context=30, threads=1,
                      tokens=(2, 6), repeats=1, before="target")
    assert isinstance(got, CostProbe) and got.before == "target"
    assert got.date.startswith("20") and got.costs.tokens == (2, 6)
    assert [(p.batch, p.context) for p in got.costs.target.points] == [(1, 30), (2, 30)]
    assert got.costs.target.decode_points()[(2, 30)] == pytest.approx(0.0015)
    assert got.costs.draft is not None and got.costs.draft.model == "drf"
    assert got.costs.draft.decode_points()[(1, 30)] == pytest.approx(4e-4)
    alone = probe_costs(tgt, None, models=("tgt", None), context=30, threads=1,
                        tokens=(2, 6), repeats=1)
    assert alone.costs.draft is None and alone.before is None
    with pytest.raises(ValueError, match="two distinct batch sizes"):
        probe_costs(tgt, None, models=("tgt", None), context=30, threads=1, widths=(1,))


def test_a_cost_probe_can_pair_the_models_for_their_slowdowns_beside_each_other() -> None:
    """``contention_rounds``: the probe also measures each model's slowdown beside the
    other as the engine_costs phase does (paired calls), into its costs and its text;
    without a draft, or with a negative count, it is refused."""
    from profiler.engine_costs import probe_costs

    pair = _Pair({"target": 1.5, "draft": 1.2})
    tgt, drf = _PairClock(pair, "target", per=0.004), _PairClock(pair, "draft", per=0.002)
    for eng in (tgt, drf):
        eng.device, eng.dtype = "cpu", "float32"
    got = probe_costs(tgt, drf, models=("tgt", "drf"), context=8, threads=1, tokens=(2, 4),
                      repeats=1, contention_rounds=2)
    assert got.costs.contention_method == "paired-calls"
    slow_t, slow_d = got.costs.target.concurrent_slowdown, got.costs.draft.concurrent_slowdown
    assert slow_t.value == pytest.approx(1.5, rel=1e-9) and slow_t.n == 2
    assert slow_d.value == pytest.approx(1.2, rel=1e-9)
    assert got.cells_text().endswith("; beside each other (2 paired rounds): target "
                                     "1.50 ± 0.00×, draft 1.20 ± 0.00×")
    plain = probe_costs(tgt, drf, models=("tgt", "drf"), context=8, threads=1, tokens=(2, 4),
                        repeats=1)
    assert plain.costs.target.concurrent_slowdown is None
    assert "beside" not in plain.cells_text()
    with pytest.raises(ValueError, match="contention_rounds > 0 needs a draft"):
        probe_costs(tgt, None, models=("tgt", None), context=8, threads=1,
                    contention_rounds=1)
    with pytest.raises(ValueError, match="contention_rounds must be >= 0, got -1"):
        probe_costs(tgt, drf, models=("tgt", "drf"), context=8, threads=1,
                    contention_rounds=-1)


class _SpecEngine(_Clock):
    """A model whose step calls cost ``over`` plus ``pre`` per prefilled token plus
    ``per`` per forward (plain) or ``per · mult[k2]`` per prompt-lookup pass
    (speculative, the passes replayed), all times ``pace(prefix)``: a machine whose
    pace moves between the prefixes' calls.  With ``prefix_cache`` its plain calls
    reuse the previous call's prefix (prefilling one token), as the transformers
    engine does; ``spec_pre`` prices the speculative calls' prefill apart (a machine
    noisier than the calls are long).  ``steps`` caps a prefix's step length."""

    def __init__(self, pre: float, per: float, mult: dict[int, float], pace, k2: int = 1,
                 over: float = 0.0, prefix_cache: bool = False, spec_pre: float | None = None,
                 steps: dict[str, int] | None = None):
        super().__init__(over, pre, per)
        self.mult, self.pace, self.k2 = mult, pace, k2
        self.prefix_cache, self.spec_pre, self.steps = prefix_cache, spec_pre, steps or {}
        self.last: str | None = None

    def _copy(self, **change):
        kw = {"k2": self.k2, "over": self.over, "prefix_cache": self.prefix_cache,
              "spec_pre": self.spec_pre, "steps": self.steps, **change}
        return type(self)(self.pre, self.per, self.mult, self.pace, **kw)

    def with_speculation(self, speculation):
        return self._copy(k2=1 if speculation is None else
                          speculation.num_speculative_tokens + 1)

    def with_prefix_cache(self, enabled: bool):
        return self._copy(prefix_cache=enabled)

    def generate_steps(self, prefixes, max_tokens):
        from profiler.engines import StepBatch, StepOutput
        from profiler.ngram_replay import replay_counters

        ctx = prefixes[0].split()
        cap = min(max_tokens, self.steps.get(prefixes[0], max_tokens))
        text = " ".join((ctx[-3:] * 4)[:cap])  # a continuation prompt lookup finds
        n, pace = len(text.split()), self.pace(prefixes[0])
        if self.k2 == 1:
            filled = 1 if self.prefix_cache and self.last == prefixes[0] else len(ctx)
            self.last = prefixes[0]
            t = pace * (self.over + self.pre * filled + self.per * n)
            return StepBatch([StepOutput(text, n, "stop")], t, prompt_tokens=[len(ctx)],
                             prefilled_tokens=filled, iterations=n)
        passes = replay_counters(ctx, text.split(), self.k2 - 1, 3)["num_target_passes"]
        pre = self.pre if self.spec_pre is None else self.spec_pre
        t = pace * (self.over + pre * len(ctx) + self.per * self.mult[self.k2] * passes)
        return StepBatch([StepOutput(text, n, "stop")], t, prompt_tokens=[len(ctx)],
                         prefilled_tokens=len(ctx))


@settings(max_examples=30, deadline=None)
@given(st.floats(0.5, 2.0), st.floats(0.5, 2.0),
       st.lists(st.floats(0.3, 3.0), min_size=4, max_size=4),
       st.floats(0.0, 0.05), st.floats(0.0, 0.01))
def test_a_pass_is_counted_in_the_forward_timed_beside_it(m2, m3, paces, over, pre) -> None:
    """The pass multiplier is recovered exactly whatever pace the machine keeps from one
    prefix to the next and whatever the call overhead and prefill (which the
    measurement is not told): the forward and the prefix's fixed cost are timed beside
    the pass, and the plain calls prefill as the speculative ones do even on an engine
    that reuses a prefix's cache."""
    from profiler.engine_costs import measure_speculative_passes

    prefixes = [f"a b c d e f g {i} x y" for i in range(4)]
    pace = dict(zip(prefixes, paces, strict=True))
    eng = _SpecEngine(pre, 0.01, {2: m2, 3: m3}, pace.__getitem__, over=over,
                      prefix_cache=True)
    got = measure_speculative_passes(eng, prefixes, k2s=[3, 2], max_step_tokens=12)
    assert set(got.passes) == {2, 3} and not got.left_out and got.note() == ""
    assert got.passes[2][0] == pytest.approx(m2) and got.passes[3][0] == pytest.approx(m3)
    assert got.passes[2][2] == got.passes[3][2] == got.prefixes == 4
    assert got.passes[3][1] == pytest.approx(0.0, abs=1e-9)


def test_a_pass_noisier_than_its_calls_is_left_out_not_written() -> None:
    """A speculative call that took less than its prefix's fixed cost (here its prefill
    priced at a tenth: on a loaded machine, noise larger than the passes) gives an
    estimate at or below zero: that k2 is left out with the reason, never written; a
    prefix whose step ends at its first token gives no forward and is passed over."""
    from profiler.engine_costs import measure_speculative_passes

    long_prefix = " ".join(f"w{i}" for i in range(200)) + " a b c"
    short_step = "u v w u v w u v"
    eng = _SpecEngine(0.002, 0.001, {2: 1.0, 3: 1.2}, lambda prefix: 1.0, spec_pre=0.0002,
                      steps={short_step: 1})
    got = measure_speculative_passes(eng, [long_prefix, short_step], k2s=[3],
                                     max_step_tokens=10)
    assert got.passes == {} and set(got.left_out) == {3} and got.prefixes == 1
    assert "no more than their prefixes' fixed cost" in got.left_out[3]
    assert got.skipped == ("prefix 2 passed over: its plain step call ended after 1 "
                           "token(s), so no forward to count a pass in",)
    assert got.note().startswith("k2 = 3 left out: its 1 speculative call(s) took")
    only = measure_speculative_passes(eng, [short_step], k2s=[2, 3], max_step_tokens=10)
    assert only.passes == {} and only.prefixes == 0
    assert only.left_out == {2: "no prefix gave a forward", 3: "no prefix gave a forward"}


def test_a_pass_refuses_bad_input() -> None:
    from dataclasses import replace

    from profiler.engine_costs import measure_speculative_passes

    eng = _SpecEngine(0.002, 0.01, {3: 1.3}, lambda prefix: 1.0)
    prefixes = ["a b c d e f g h i j k l m n o p q r s t", "u v w u v w u v"]
    with pytest.raises(ValueError, match="prefixes must not be empty"):
        measure_speculative_passes(eng, [], k2s=[3], max_step_tokens=8)
    with pytest.raises(ValueError, match="k2s must be integers >= 2"):
        measure_speculative_passes(eng, prefixes, k2s=[1], max_step_tokens=8)
    with pytest.raises(ValueError, match="max_step_tokens must be >= 2"):
        measure_speculative_passes(eng, prefixes, k2s=[3], max_step_tokens=1)

    class _Uncounted(_SpecEngine):
        def generate_steps(self, prefixes, max_tokens):
            return replace(super().generate_steps(prefixes, max_tokens), iterations=None)

    bare = _Uncounted(0.0, 0.01, {3: 1.0}, lambda prefix: 1.0)
    with pytest.raises(ValueError, match="reported no forwards"):
        measure_speculative_passes(bare, prefixes, k2s=[3], max_step_tokens=8)


def test_the_phase_writes_only_the_passes_it_counted_and_says_why_not_the_others(
    monkeypatch,
) -> None:
    """The engine_costs phase's speculation step (``profiler.calibrate._with_speculation``):
    a k2 left out is absent from the costs and named in the note; where every k2 is
    left out, the costs hold no passes (and say nothing counted them), never a value
    the calibration format would refuse."""
    from profiler import calibrate
    from profiler.engine_costs import CellTiming, model_costs

    long_prefix = " ".join(f"w{i}" for i in range(200)) + " a b c"
    monkeypatch.setattr(calibrate, "_speculation_prefixes",
                        lambda engine, problems, seed, max_step_tokens, dataset="":
                        [long_prefix])
    cells = [CellTiming(b, 16, 0.01 + 1e-4 * b * 16, 0.01 + 1e-4 * b * 16 + 0.02, (2, 6), 1)
             for b in (1, 2)]
    costs = model_costs("tgt", cells)
    noisy = _SpecEngine(0.002, 0.001, {2: 1.0, 3: 1.2}, lambda prefix: 1.0,
                        spec_pre=0.0002)
    got, note = calibrate._with_speculation(noisy, costs, [2, 3], 1, 0, 10, None)
    assert got.speculative_passes is None and got.passes_counted_in is None
    assert note.startswith("k2 = 2 left out: ") and "; k2 = 3 left out: " in note
    clean = _SpecEngine(0.002, 0.001, {2: 1.0, 3: 1.2}, lambda prefix: 1.0)
    got, note = calibrate._with_speculation(clean, costs, [2, 3], 1, 0, 10, None)
    assert note == "" and got.passes_counted_in == "plain-calls"
    assert {k: round(m.value, 9) for k, m in got.speculative_passes.items()} == {2: 1.0,
                                                                                 3: 1.2}
