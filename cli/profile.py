"""``specmodel profile``: measure on real models and write a calibration."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cli.common import (
    DEVICE_OPTIONS,
    CalibrationOpt,
    PresetOpt,
    check_device_options,
    options_named,
    unescape,
)
from cli.interrupt import saving
from cli.render import ProgressBar, console
from specmodel.formats import DEFAULT_DATASET

if TYPE_CHECKING:
    from profiler.calibrate import PhaseResult, Recorder

profile_app = typer.Typer(help="Measure c, α and T(b) on real models.", no_args_is_help=True)


Model = Annotated[str, typer.Option(help="Target model: pack name or local folder.")]
Output = Annotated[Path, typer.Option("--output", "-o", help="Calibration file to write.")]
Threads = Annotated[int, typer.Option(help="CPU threads per model.")]
Problems = Annotated[int, typer.Option(help="Problems of --dataset.")]
Seed = Annotated[int, typer.Option(min=0, help="Problem seed.")]
Dataset = Annotated[str, typer.Option(
    help="The reasoning-gym dataset whose problems the phase uses (gsm_symbolic, "
         "leg_counting, time_intervals, …); a calibration serves best the workload it "
         "was measured on.")]
Widths = Annotated[str, typer.Option(help="Comma-separated batch widths.")]
Draft = Annotated[str, typer.Option(help="Draft model: pack name or local folder.")]
Record = Annotated[
    Path | None, typer.Option(help="JSONL record of every pair (default: OUTPUT.pairs.jsonl).")
]
VerifierOpt = Annotated[str, typer.Option(help="exact, embedding or judge.")]
Threshold = Annotated[float, typer.Option(help="embedding: cosine threshold.")]
JudgeModel = Annotated[str, typer.Option(help="judge: model.")]
StepsPerProblem = Annotated[int, typer.Option(help="Target steps per problem.")]
MaxStepTokens = Annotated[int, typer.Option(help="Token cap per step.")]
Branches = Annotated[int, typer.Option(
    min=1, help="Draft steps per prefix: the greedy one and BRANCHES − 1 sampled ones, each "
                "distinct one judged (measures the best-of-W acceptance and how often "
                "branches repeat).")]
BranchTemperature = Annotated[float, typer.Option(
    min=0.01, max=10.0, help="Temperature of the sampled branches (the decoder's "
                             "branch_temperature).")]
Delimiter = Annotated[str, typer.Option(help="Text that ends a step (escapes like \\n decoded).")]
Resume = Annotated[bool, typer.Option(help="Continue an interrupted run.")]
MaxTokens = Annotated[int, typer.Option(help="Tokens decoded per prompt.")]
Gamma = Annotated[int, typer.Option(help="γ, draft tokens per pass.")]
LookupMin = Annotated[int, typer.Option(help="n-gram: shortest match.")]
LookupMax = Annotated[int, typer.Option(help="n-gram: longest match.")]


Contexts = Annotated[str, typer.Option(
    help="Engine costs: comma-separated prompt lengths (tokens) timed.")]
CostWidths = Annotated[str, typer.Option(help="Engine costs: comma-separated batch widths.")]
CostTokens = Annotated[str, typer.Option(
    help="Engine costs: the two call lengths (tokens written), short,long.")]
CostRepeats = Annotated[int, typer.Option(help="Engine costs: timed calls per cell and length.")]
CostDecodePath = Annotated[str, typer.Option(
    "--decode-path", help="Engine costs: the transformers engine's decode path the calls "
    "run on, eager (dynamic KV cache), static (a static KV cache) or compiled (with "
    "transformers' compiled decoding forwards); decode a run with the same one.")]
CachePositions = Annotated[int | None, typer.Option(
    help="Engine costs on a static or compiled --decode-path: make every static cache "
    "this many positions long (rounded up to a power of two) before any cell is timed, "
    "so that the cells run on the cache length a run will use (decode prints its "
    "'calls of up to N positions'); default: each cache grown as the cells need.")]
SpeculationK2 = Annotated[str, typer.Option(
    help="Engine costs: k2 values at which the target's speculative step calls are timed "
    "on real step prefixes ('' for none).")]
SpeculationProblems = Annotated[int, typer.Option(
    help="Engine costs: problems of --dataset whose step prefixes the speculative calls "
         "use.")]


def _check_dataset(dataset: str) -> None:
    """``--dataset`` checked against reasoning-gym's names before any model loads (a
    ValueError naming the option, the nearest names, otherwise)."""
    from profiler.problems import check_dataset

    check_dataset(dataset, "--dataset")


def _widths(text: str, option: str = "--widths") -> list[int]:
    try:
        return [int(w) for w in text.split(",") if w.strip()]
    except ValueError as e:
        raise ValueError(f"{option} must be comma-separated integers, got {text!r}") from e


def _recorder(output: Path, calibration: Path | None, preset: str | None,
              resume: bool) -> Recorder:
    from profiler.calibrate import Recorder
    from specmodel.formats.calibration import resolve_calibration

    return Recorder(output, resolve_calibration(calibration, preset), resume=resume)


def _note(message: str) -> None:
    """A note from a measurement (e.g. a torn record line dropped), on the terminal."""
    console().print(f"note: {message}", soft_wrap=True)


def _record_path(output: Path, record: Path | None) -> Path:
    """The pairs record: ``--record``, or OUTPUT.pairs.jsonl."""
    return record or output.with_suffix(".pairs.jsonl")


def _unchanged(output: Path, what: str) -> str:
    """The interrupt line of a one-phase command that saves only when it ends."""
    return (f"{output} is unchanged ({what} is written when the measurement ends); run the "
            "command again")


@contextmanager
def _models_named(**typed: Any) -> Iterator[None]:
    """Re-raise an unknown model naming the option the user typed it in (``typed``:
    parameter → value; ``target`` → ``--target``, ``judge_model`` → ``--judge-model``)."""
    from profiler.packs import UnknownModelError

    try:
        yield
    except UnknownModelError as e:
        for name, value in typed.items():
            if value == e.value:
                raise e.named("--" + name.replace("_", "-")) from e
        raise


def _measure(rec: Recorder, phase: Callable[..., PhaseResult], what: str, **kwargs: Any) -> None:
    """Run one phase under a progress bar, merge it into the calibration and save it."""
    models = {k: v for k, v in kwargs.items() if k in ("target", "draft", "model",
                                                          "judge_model")}
    with ProgressBar(description=what) as bar, _models_named(**models):
        result = phase(progress=bar, **kwargs)
    rec.add(result)
    console().print(f"{what}: {result.summary}; wrote {rec.output}", soft_wrap=True)


@profile_app.command("batch-cost")
def batch_cost(
    model: Model, output: Output,
    engine: Annotated[str, typer.Option(help="transformers or vllm.")] = "transformers",
    widths: Widths = "1,2,4,8,16",
    tokens: Annotated[int, typer.Option(help="Decode steps timed per repeat.")] = 16,
    repeats: Annotated[int, typer.Option(help="Timed repeats per width.")] = 3,
    threads: Threads = 1, calibration: CalibrationOpt = None, preset: PresetOpt = None,
) -> None:
    """Measure the target's T(b) and write it into a copy of a calibration."""
    from profiler.calibrate import batch_cost_phase

    ws = _widths(widths)
    with _recorder(output, calibration, preset, False) as rec, \
            saving(_unchanged(output, "T(b)")):
        _measure(rec, batch_cost_phase, "batch cost", model=model, engine=engine, widths=ws,
                 tokens=tokens, repeats=repeats, threads=threads)


def _measure_steps(
    rec: Recorder, *, target: str, draft: str, output: Path, record: Path | None,
    verifier: str, threshold: float, judge_model: str, problems: int, seed: int,
    steps_per_problem: int, max_step_tokens: int, threads: int, delimiter: str, resume: bool,
    branches: int, branch_temperature: float, dataset: str,
) -> None:
    """The steps phase with the options ``profile steps`` and ``profile run`` share
    (``delimiter`` as typed, escapes not yet decoded; the record defaults to
    OUTPUT.pairs.jsonl)."""
    from profiler.calibrate import steps_key, steps_phase
    from profiler.step_profile import check_record

    if _record_path(output, record).resolve() == output.resolve():
        raise ValueError(f"record must be another file than the calibration, got {output} "
                         "for both")
    settings = dict(target=target, draft=draft, verifier=verifier, threshold=threshold,
                    judge_model=judge_model, problems=problems, seed=seed,
                    steps_per_problem=steps_per_problem, max_step_tokens=max_step_tokens,
                    threads=threads, delimiter=unescape(delimiter), branches=branches,
                    branch_temperature=branch_temperature, dataset=dataset)
    if resume:  # a record of other settings is refused before the progress bar and models
        check_record(_record_path(output, record), steps_key(**settings))
    _measure(rec, steps_phase, "step pairs", **settings,
             record=_record_path(output, record), resume=resume, note=_note)


def _measure_tokens(
    rec: Recorder, *, model: str, engine: str, problems: int, seed: int, max_tokens: int,
    num_speculative_tokens: int, prompt_lookup_min: int, prompt_lookup_max: int, threads: int,
    dataset: str,
) -> None:
    """The tokens phase with the options ``profile tokens`` and ``profile run`` share."""
    from profiler.calibrate import tokens_phase

    _measure(rec, tokens_phase, "tokens", model=model, engine=engine, problems=problems,
             seed=seed, max_tokens=max_tokens, num_speculative_tokens=num_speculative_tokens,
             prompt_lookup_min=prompt_lookup_min, prompt_lookup_max=prompt_lookup_max,
             threads=threads, dataset=dataset)


@profile_app.command("engine-costs")
def engine_costs(
    target: Model, output: Output,
    draft: Annotated[str | None, typer.Option(
        help="Step draft model (pack or folder); its calls and the contention too.")] = None,
    contexts: Contexts = "64,256,512", cost_widths: CostWidths = "1,2,4",
    cost_tokens: CostTokens = "4,16", cost_repeats: CostRepeats = 2,
    speculation_k2: SpeculationK2 = "2,3,5", speculation_problems: SpeculationProblems = 2,
    seed: Seed = 0, delimiter: Delimiter = "\\n\\n", max_step_tokens: MaxStepTokens = 48,
    threads: Threads = 1, calibration: CalibrationOpt = None, preset: PresetOpt = None,
    decode_path: CostDecodePath = "eager", cache_positions: CachePositions = None,
    device: Annotated[str, typer.Option(
        help="cpu or cuda: where both models run (on cuda every timing reads the clock "
             "after the device synchronizes, and the phase records the GPU).")] = "cpu",
    dtype: Annotated[str, typer.Option(
        help="float32, bfloat16 or float16, for both models.")] = "float32",
    dataset: Dataset = DEFAULT_DATASET,
) -> None:
    """Price the decoder's engine calls on this machine into a copy of a calibration.

    Measures T(b, L) per token, prefill, the per-call overhead and the contention of
    two models running together."""
    from profiler.calibrate import check_distinct_models, engine_costs_phase

    check_device_options(device, dtype)
    _check_dataset(dataset)
    if draft is not None:
        check_distinct_models(target, draft)
    kw = _engine_cost_options(contexts, cost_widths, cost_tokens, speculation_k2,
                              cost_repeats, speculation_problems, decode_path,
                              cache_positions)
    _check_pass_tokens(max_step_tokens, kw["speculation_k2"])
    kw.update(device=device, dtype=dtype)
    with _recorder(output, calibration, preset, False) as rec, \
            saving(_unchanged(output, "the engine costs")):
        _measure(rec, engine_costs_phase, "engine costs", target=target, draft=draft,
                 repeats=cost_repeats, threads=threads,
                 speculation_problems=speculation_problems, seed=seed,
                 delimiter=unescape(delimiter), max_step_tokens=max_step_tokens,
                 dataset=dataset, **kw)


@profile_app.command("pool-engine-costs")
def pool_engine_costs(
    calibrations: Annotated[list[Path], typer.Argument(
        help="Calibration files whose engine costs measured one setup (two or more).")],
    output: Output,
) -> None:
    """Pool the engine costs of several calibrations into a copy of the first.

    The same models and engine measured at different times: on a shared machine one
    measurement catches one moment of its load."""
    from profiler.calibrate import PhaseResult, Recorder, engine_costs_summary
    from profiler.engine_costs import pool_engine_costs as pool
    from specmodel.formats.calibration import load_calibration

    cals = [load_calibration(p) for p in calibrations]
    parts = []
    for path, cal in zip(calibrations, cals, strict=True):
        phase = cal.phase_settings("engine_costs")
        if cal.engine_costs is None or phase is None:
            raise ValueError(f"{path} has no engine costs (profile engine-costs writes them)")
        parts.append((cal.engine_costs, phase))
    costs, settings = pool(parts)
    models = {"target": costs.target.model,
              **({"draft": costs.draft.model} if costs.draft is not None else {})}
    summary = engine_costs_summary(costs)
    with Recorder(output, cals[0]) as rec, saving(_unchanged(output, "the pooled costs")):
        rec.add(PhaseResult("engine_costs", costs, settings, models, summary, derived=True))
    console().print(f"engine costs of {len(parts)} calibrations pooled: {summary}; wrote "
                    f"{output}", soft_wrap=True)


PairsRecord = Annotated[Path | None, typer.Option(
    "--record", help="The steps phase's pairs record (default: the path the calibration's "
                     "steps phase names).")]
"""``--record`` of the commands that read a steps phase's pairs record again."""
AnswersOpt = Annotated[list[Path] | None, typer.Option(
    "--answers", help="A run record whose target-alone answers (`specmodel decode --k1 1 "
                      "--k2 1 --no-baseline` on more problems) join the steps phase's in "
                      "the token replay, each problem once; cut as the steps phase's "
                      "(delimiter, --max-step-tokens, steps per problem). Repeatable.")]
"""``--answers`` of the commands that replay prompt lookup on the target's answers."""


def _answer_records(answers: list[Path] | None) -> list[Path]:
    """``--answers`` checked: every path a file."""
    for a in answers or []:
        if not a.is_file():
            raise ValueError(f"--answers: {a} is not a file")
    return list(answers or [])


@profile_app.command("rederive-steps")
def rederive_steps(
    calibration_file: Annotated[Path, typer.Argument(
        help="A profiled calibration whose steps phase to derive again from its pairs "
             "record.")],
    output: Output,
    record: PairsRecord = None,
) -> None:
    """Derive a calibration's step section again from its pairs record, into a copy.

    Uses this version's estimators (e.g. the per-problem verdict counts); no decoding."""
    from profiler.calibrate import rederive_steps as rederive
    from specmodel.formats.calibration import load_calibration

    cal = load_calibration(calibration_file)
    _write_rederived(output, cal, rederive(cal, record), "the step section",
                     "steps phase derived again from its record")


@profile_app.command("rederive-tokens")
def rederive_tokens(
    calibration_file: Annotated[Path, typer.Argument(
        help="A calibration whose token section to derive again from the counters of "
             "the tokens phase that measured it.")],
    output: Output,
    source: Annotated[Path | None, typer.Option(
        "--from", help="The calibration whose tokens phase measured the section, where "
                       "CALIBRATION_FILE copied it (a file, or an embedded preset's "
                       "name).")] = None,
) -> None:
    """Derive a calibration's token section again from its stored counters, into a copy.

    Uses this version's estimators (e.g. the share of passes that drafted); no
    decoding."""
    from profiler.calibrate import rederive_tokens as rederive
    from specmodel.formats.calibration import list_presets, load_calibration, load_preset

    cal = load_calibration(calibration_file)
    if source is None:
        origin = None
    elif str(source) in list_presets() and not source.exists():
        origin = load_preset(str(source))
    else:
        try:
            origin = load_calibration(source)
        except ValueError as e:
            raise ValueError(f"--from: {e} (nor is it a preset: "
                             f"{', '.join(list_presets())})") from e
    _write_rederived(output, cal, rederive(cal, origin), "the token section",
                     "token section derived again from its counters")


@profile_app.command("token-spread")
def token_spread(
    calibration_file: Annotated[Path, typer.Argument(
        help="A calibration with a tokens phase (and a steps phase whose pairs record "
             "holds the target's whole answers).")],
    output: Output,
    record: PairsRecord = None,
    answers: AnswersOpt = None,
    rates_from_answers: Annotated[bool, typer.Option(
        "--rates-from-answers",
        help="Also take the acceptance by position, α2 and the draft rate from that "
             "replay (the decoder's whole answers, step by step) instead of the tokens "
             "phase's first tokens of fewer answers, and replay again at every shorter "
             "draft for the rates of each k2 itself; c2 is kept.")] = False,
) -> None:
    """Add how token acceptance spreads between problems, into a copy.

    Replays prompt lookup on the target's whole answers of the steps phase's pairs
    record (and of --answers' run records), problem by problem; the pooled rates stay
    the tokens phase's unless --rates-from-answers."""
    from profiler.calibrate import token_spread as spread
    from specmodel.formats.calibration import load_calibration

    cal = load_calibration(calibration_file)
    if record is not None and not record.is_file():
        raise ValueError(f"--record: {record} is not a file")
    extra = _answer_records(answers)
    _write_rederived(output, cal, spread(cal, record, rates_from_answers=rates_from_answers,
                                         answers=extra),
                     "the token section",
                     "token rates and spread from the whole answers" if rates_from_answers
                     else "token spread between problems added")


@profile_app.command("first-problems")
def first_problems(
    calibration_file: Annotated[Path, typer.Argument(
        help="A profiled calibration whose step and token sections to derive from the "
             "first problems of its steps phase.")],
    output: Output,
    problems: Annotated[int, typer.Option(
        help="How many of the steps phase's first problems to keep (1 to its count).")],
    record: PairsRecord = None,
) -> None:
    """Derive a calibration's step and token sections from its first N problems alone,
    into a copy.

    What a calibration from fewer problems would have held, without decoding: the step
    section from those problems' pairs; a token section replayed on the steps phase's
    answers, on those answers alone; engine and batch costs kept."""
    from profiler.calibrate import Recorder
    from profiler.calibrate import first_problems as derive
    from specmodel.formats.calibration import load_calibration

    cal = load_calibration(calibration_file)
    with Recorder(output, cal) as rec, saving(_unchanged(output, "each section")):
        done = derive(rec, problems, record, name="--problems")
    measured = cal.phase_settings("steps").problems  # type: ignore[union-attr]  # derive checked it
    console().print(f"first {problems} of {measured} problems: "
                    + "; ".join(f"{d.phase} {d.summary}" for d in done)
                    + f"; wrote {output}", soft_wrap=True)


@profile_app.command("contention")
def contention(
    calibration_file: Annotated[Path, typer.Argument(
        help="A calibration whose engine_costs phase timed a target and a draft.")],
    output: Output,
    repeats: Annotated[int, typer.Option(
        min=1, help="Rounds of paired calls (each: both models alone, then together).")] = 5,
    max_step_tokens: MaxStepTokens = 48,
) -> None:
    """Measure a calibration's contention again, the decoder's way, into a copy.

    A call of each model alone, then one of each submitted together to two worker
    threads, as the async decoder starts a draft and a target step; every other figure
    of the engine costs kept."""
    from profiler.calibrate import remeasure_contention
    from specmodel.formats.calibration import load_calibration

    cal = load_calibration(calibration_file)
    ec = cal.engine_costs
    names = {} if ec is None else {"target": ec.target.model,
                                   **({"draft": ec.draft.model} if ec.draft else {})}
    with ProgressBar(description="contention") as bar, _models_named(**names):
        got = remeasure_contention(cal, repeats=repeats, max_step_tokens=max_step_tokens,
                                   progress=bar)
    _write_rederived(output, cal, got, "the engine costs", "contention measured again")


@profile_app.command("passes")
def passes(
    calibration_file: Annotated[Path, typer.Argument(
        help="A calibration whose engine_costs phase timed the target.")],
    output: Output,
    speculation_k2: Annotated[str, typer.Option(
        help="k2 values at which the target's speculative step calls are timed; default: "
        "those the phase timed, else 2,3,5.")] = "",
    max_step_tokens: MaxStepTokens = 48,
) -> None:
    """Measure a calibration's prompt-lookup pass again, into a copy.

    On the phase's step prefixes, each speculative step call against a plain forward and
    the prefix's fixed cost, both from plain step calls on the same prefix timed just
    before it, so that the machine's pace since the grid was timed cancels; every other
    figure of the engine costs kept."""
    from profiler.calibrate import remeasure_passes
    from specmodel.formats.calibration import load_calibration

    ks = _widths(speculation_k2, "--speculation-k2")
    if ks and min(ks) < 2:
        raise ValueError(f"--speculation-k2 must be integers >= 2, got {speculation_k2!r}")
    _check_pass_tokens(max_step_tokens, True)
    cal = load_calibration(calibration_file)
    ec = cal.engine_costs
    names = {} if ec is None else {"target": ec.target.model}
    with ProgressBar(description="passes") as bar, _models_named(**names):
        got = remeasure_passes(cal, k2s=ks or None, max_step_tokens=max_step_tokens,
                               progress=bar)
    _write_rederived(output, cal, got, "the engine costs", "passes measured again")


def _write_rederived(output: Path, cal: Any, got: Any, section: str, done: str) -> None:
    """``cal`` with the phase ``got`` derived again, written to ``output`` (the
    ``rederive-*`` commands), and one line saying so."""
    from profiler.calibrate import Recorder

    with Recorder(output, cal) as rec, saving(_unchanged(output, section)):
        rec.add(got)
    console().print(f"{done}: {got.summary}; wrote {output}", soft_wrap=True)


def _check_pass_tokens(max_step_tokens: int, timed: Any) -> None:
    """``--max-step-tokens`` leaves a plain forward to count a pass in where
    speculative step calls are ``timed``: at least 2 (a one-token call and a longer one)."""
    if timed and max_step_tokens < 2:
        raise ValueError(f"--max-step-tokens must be >= 2 where speculative step calls are "
                         f"timed (a pass is counted in the forward between a one-token plain "
                         f"call and a longer one), got {max_step_tokens}")


def _engine_cost_options(contexts: str, widths: str, tokens: str, speculation: str,
                         repeats: int, speculation_problems: int,
                         decode_path: str = "eager",
                         cache_positions: int | None = None) -> dict[str, Any]:
    """The engine-cost grid options, decode path and cache positions, parsed, each
    error naming its option."""
    from profiler.calibrate import check_cache_positions
    from profiler.engines.hf import check_decode_path

    check_decode_path(decode_path, "--decode-path")
    for option, value in (("--cost-repeats", repeats),
                          ("--speculation-problems", speculation_problems)):
        if value < 1:
            raise ValueError(f"{option} must be >= 1, got {value}")
    spec = _widths(speculation, "--speculation-k2")
    if spec and min(spec) < 2:
        raise ValueError(f"--speculation-k2 must be integers >= 2, got {speculation!r}")
    out: dict[str, Any] = {"contexts": _widths(contexts, "--contexts"),
                           "widths": _widths(widths, "--cost-widths"),
                           "tokens": _widths(tokens, "--cost-tokens")}
    for option, key in (("--contexts", "contexts"), ("--cost-widths", "widths"),
                        ("--cost-tokens", "tokens")):
        if not out[key] or min(out[key]) < 1:
            raise ValueError(f"{option} must be integers >= 1, got {out[key]}")
    t = out["tokens"]
    if len(t) != 2 or t[0] >= t[1]:
        raise ValueError(f"--cost-tokens must be two lengths short,long with short < long, "
                         f"got {tokens!r}")
    out["speculation_k2"] = spec or None
    out["decode_path"] = decode_path
    if cache_positions is not None and cache_positions < 1:
        raise ValueError(f"--cache-positions must be >= 1, got {cache_positions}")
    check_cache_positions(cache_positions, decode_path, out["contexts"], t,
                          "--cache-positions")
    out["cache_positions"] = cache_positions
    return out


@profile_app.command("steps")
def steps(
    target: Model, draft: Draft, output: Output, record: Record = None,
    verifier: VerifierOpt = "embedding", threshold: Threshold = 0.9,
    judge_model: JudgeModel = "qwen2.5-coder-0.5b", problems: Problems = 8, seed: Seed = 0,
    steps_per_problem: StepsPerProblem = 4, max_step_tokens: MaxStepTokens = 48,
    threads: Threads = 1, delimiter: Delimiter = "\\n\\n", resume: Resume = False,
    branches: Branches = 1, branch_temperature: BranchTemperature = 0.8,
    calibration: CalibrationOpt = None, preset: PresetOpt = None,
    dataset: Dataset = DEFAULT_DATASET,
) -> None:
    """Measure α1, c1, the verifier's cost and step lengths; write them into a calibration."""
    from profiler.calibrate import check_distinct_models, check_settings

    check_settings(verifier=verifier, threads=threads)
    _check_dataset(dataset)
    check_distinct_models(target, draft)
    pairs = _record_path(output, record)
    with _recorder(output, calibration, preset, False) as rec, saving(
            f"the pairs measured so far are in {pairs} ({output} is written when they are "
            "complete); run the same command with --resume to continue"):
        _measure_steps(rec, target=target, draft=draft, output=output, record=record,
                       verifier=verifier, threshold=threshold, judge_model=judge_model,
                       problems=problems, seed=seed, steps_per_problem=steps_per_problem,
                       max_step_tokens=max_step_tokens, threads=threads, delimiter=delimiter,
                       resume=resume, branches=branches,
                       branch_temperature=branch_temperature, dataset=dataset)


@profile_app.command("tokens")
def tokens(
    model: Model, output: Output, problems: Problems = 8, seed: Seed = 0,
    max_tokens: MaxTokens = 96, num_speculative_tokens: Gamma = 4,
    prompt_lookup_min: LookupMin = 1, prompt_lookup_max: LookupMax = 3,
    engine: Annotated[
        str, typer.Option(help="vllm (its spec-decode counters) or transformers (exact replay).")
    ] = "vllm",
    threads: Threads = 1, calibration: CalibrationOpt = None, preset: PresetOpt = None,
    dataset: Dataset = DEFAULT_DATASET,
) -> None:
    """Measure n-gram speculation (α2, by position, effective c2) into a calibration."""
    _check_dataset(dataset)
    with _recorder(output, calibration, preset, False) as rec, \
            saving(_unchanged(output, "the token level")):
        _measure_tokens(rec, model=model, engine=engine, problems=problems, seed=seed,
                        max_tokens=max_tokens, num_speculative_tokens=num_speculative_tokens,
                        prompt_lookup_min=prompt_lookup_min,
                        prompt_lookup_max=prompt_lookup_max, threads=threads,
                        dataset=dataset)


@profile_app.command("run")
def run(
    target: Model, draft: Draft, output: Output, record: Record = None,
    verifier: VerifierOpt = "embedding", threshold: Threshold = 0.9,
    judge_model: JudgeModel = "qwen2.5-coder-0.5b", problems: Problems = 8, seed: Seed = 0,
    steps_per_problem: StepsPerProblem = 4, max_step_tokens: MaxStepTokens = 48,
    delimiter: Delimiter = "\\n\\n", branches: Branches = 1,
    branch_temperature: BranchTemperature = 0.8, widths: Widths = "1,2,4,8",
    batch_tokens: Annotated[int, typer.Option(help="T(b): decode steps timed per repeat.")] = 16,
    repeats: Annotated[int, typer.Option(help="T(b): timed repeats per width.")] = 3,
    token_engine: Annotated[
        str, typer.Option(help="Token phase engine: vllm or transformers.")
    ] = "transformers",
    measure_tokens: Annotated[
        bool, typer.Option("--tokens/--no-tokens", help="Run the token phase.")
    ] = True,
    token_problems: Annotated[int, typer.Option(help="Token phase: prompts.")] = 6,
    max_tokens: MaxTokens = 96, num_speculative_tokens: Gamma = 4,
    prompt_lookup_min: LookupMin = 1, prompt_lookup_max: LookupMax = 3,
    token_rates: Annotated[str | None, typer.Option(
        help="Where the token section's rates come from once the steps and tokens phases "
             "are measured: 'answers' (the default on transformers) replays prompt lookup "
             "on the steps phase's whole target answers, step by step as the decoder's "
             "calls see them, at every k2 from 2 to --num-speculative-tokens + 1; "
             "'prompts' (the default with --token-engine vllm, whose proposer the replay "
             "does not model) keeps the tokens phase's first --max-tokens tokens of "
             "--token-problems prompts. Either way the spread between problems is added "
             "from the same replay and c2 stays the tokens phase's.")] = None,
    answers: AnswersOpt = None,
    measure_engine_costs: Annotated[bool, typer.Option(
        "--engine-costs/--no-engine-costs",
        help="Run the engine-costs phase (what the decoder model prices calls by).")] = True,
    contexts: Contexts = "64,256,512", cost_widths: CostWidths = "1,2,4",
    cost_tokens: CostTokens = "4,16", cost_repeats: CostRepeats = 2,
    speculation_k2: SpeculationK2 = "2,3,5", speculation_problems: SpeculationProblems = 2,
    threads: Threads = 1, resume: Resume = False,
    calibration: CalibrationOpt = None, preset: PresetOpt = None,
    decode_path: CostDecodePath = "eager", cache_positions: CachePositions = None,
    dataset: Dataset = DEFAULT_DATASET,
) -> None:
    """Measure everything (T(b), steps, tokens, engine costs) into one calibration.

    The calibration is saved after each phase."""
    from profiler.calibrate import (
        batch_cost_key,
        batch_cost_phase,
        check_distinct_models,
        check_settings,
        engine_costs_key,
        engine_costs_phase,
        steps_key,
        tokens_key,
    )
    from profiler.packs import check_model, resolve_model

    # Everything that can be checked without measuring is checked before the first phase.
    check_settings(verifier=verifier, token_engine=token_engine if measure_tokens else None,
                   threads=threads)
    _check_dataset(dataset)
    rates = _token_rates_option(token_rates, token_engine)
    if answers and not measure_tokens:
        raise ValueError("--answers joins the token replay, which --no-tokens skips")
    extra = _answer_records(answers)
    check_distinct_models(target, draft)
    ws = _widths(widths)
    grid = _engine_cost_options(contexts, cost_widths, cost_tokens, speculation_k2,
                                cost_repeats, speculation_problems, decode_path,
                                cache_positions)
    _check_pass_tokens(max_step_tokens, grid["speculation_k2"])
    with _models_named(target=target, draft=draft):
        check_model(target)  # both names before either pack is fetched
        check_model(draft)
        resolve_model(target)
        resolve_model(draft)
    expected = {
        "batch_cost": batch_cost_key(model=target, engine="transformers", widths=ws,
                                     tokens=batch_tokens, repeats=repeats, threads=threads),
        "steps": steps_key(target=target, draft=draft, verifier=verifier, threshold=threshold,
                           judge_model=judge_model, problems=problems, seed=seed,
                           steps_per_problem=steps_per_problem,
                           max_step_tokens=max_step_tokens, threads=threads,
                           delimiter=unescape(delimiter), branches=branches,
                           branch_temperature=branch_temperature, dataset=dataset),
        "tokens": tokens_key(model=target, engine=token_engine, problems=token_problems,
                             seed=seed, max_tokens=max_tokens,
                             num_speculative_tokens=num_speculative_tokens,
                             prompt_lookup_min=prompt_lookup_min,
                             prompt_lookup_max=prompt_lookup_max, threads=threads,
                             dataset=dataset),
        "engine_costs": engine_costs_key(target=target, draft=draft, repeats=cost_repeats,
                                         threads=threads, seed=seed,
                                         speculation_problems=speculation_problems,
                                         delimiter=unescape(delimiter), dataset=dataset,
                                         **grid),
    }
    if not measure_tokens:
        del expected["tokens"]
    if not measure_engine_costs:
        del expected["engine_costs"]
    pairs = _record_path(output, record)
    with _recorder(output, calibration, preset, resume) as rec, \
            saving(lambda: _run_saved(rec, output, pairs)):
        done = {ph for ph, key in expected.items() if resume and rec.finished(ph, **key)}
        con = console()
        if done:
            con.print(f"resuming {output}: {', '.join(sorted(done))} already measured",
                      soft_wrap=True)
        if "batch_cost" not in done:
            _measure(rec, batch_cost_phase, "batch cost", model=target, engine="transformers",
                     widths=ws, tokens=batch_tokens, repeats=repeats, threads=threads)
        if "steps" not in done:
            _measure_steps(rec, target=target, draft=draft, output=output, record=record,
                           verifier=verifier, threshold=threshold, judge_model=judge_model,
                           problems=problems, seed=seed, steps_per_problem=steps_per_problem,
                           max_step_tokens=max_step_tokens, threads=threads,
                           delimiter=delimiter, resume=resume, branches=branches,
                           branch_temperature=branch_temperature, dataset=dataset)
        if measure_tokens and "tokens" not in done:
            _measure_tokens(rec, model=target, engine=token_engine, problems=token_problems,
                            seed=seed, max_tokens=max_tokens,
                            num_speculative_tokens=num_speculative_tokens,
                            prompt_lookup_min=prompt_lookup_min,
                            prompt_lookup_max=prompt_lookup_max, threads=threads,
                            dataset=dataset)
        if measure_tokens:
            _rates_from_replay(rec, pairs, rates, extra,
                               remeasured=not {"steps", "tokens"} <= done)
        if measure_engine_costs and "engine_costs" not in done:
            _measure(rec, engine_costs_phase, "engine costs", target=target, draft=draft,
                     repeats=cost_repeats, threads=threads, seed=seed,
                     speculation_problems=speculation_problems,
                     delimiter=unescape(delimiter), max_step_tokens=max_step_tokens,
                     dataset=dataset, **grid)
        cal = rec.calibration
    con.print(f"calibration {cal.name} ({cal.provenance.source}) in {output}", soft_wrap=True)


TOKEN_RATES = ("answers", "prompts")
"""``profile run --token-rates``: from the whole answers' replay or the tokens phase."""


def _token_rates_option(token_rates: str | None, token_engine: str) -> str:
    """``--token-rates`` checked against ``--token-engine`` (None: its default)."""
    if token_rates is None:
        return "prompts" if token_engine == "vllm" else "answers"
    if token_rates not in TOKEN_RATES:
        raise ValueError(f"--token-rates must be one of {', '.join(TOKEN_RATES)}, "
                         f"got {token_rates!r}")
    if token_rates == "answers" and token_engine == "vllm":
        raise ValueError("--token-rates answers replays transformers' prompt lookup, not "
                         "vLLM's n-gram proposer: use --token-rates prompts with "
                         "--token-engine vllm")
    return token_rates


def _rates_from_replay(rec: Recorder, pairs: Path, rates: str,
                       answers: Sequence[Path] = (), *, remeasured: bool) -> None:
    """``profile run``'s derivation after its steps and tokens phases: the spread between
    problems, and with ``rates`` 'answers' the rates, from prompt lookup replayed on the
    steps phase's whole answers and those of the ``answers`` run records
    (:func:`profiler.calibrate.token_spread`).  Skipped on a resume that measured neither
    phase again, adds no run records, and whose token section already holds what
    ``rates`` asks from the steps phase's answers alone; a section derived before is
    first restored from the tokens phase's counters, so that nothing of the earlier
    derivation stays."""
    from profiler.calibrate import rederive_tokens, token_spread

    cal = rec.calibration
    derived = cal.token.problem_counters is not None
    phase = cal.phase_settings("tokens")
    with_records = phase is not None and bool(phase.answer_records)
    if derived and not remeasured and not answers and not with_records and (
            cal.token.rates_by_k2 is not None) == (rates == "answers"):
        return
    if derived:  # the tokens phase's own section again, then derived afresh
        rec.add(rederive_tokens(cal))
    try:
        got = token_spread(rec.calibration, pairs, rates_from_answers=rates == "answers",
                           answers=answers)
    except ValueError as e:  # too few answers that draft: the phases' own numbers stand
        console().print(f"token rates: the tokens phase's kept, no spread ({e})",
                        soft_wrap=True)
        return
    rec.add(got)
    console().print(f"token rates ({rates}): {got.summary}; wrote {rec.output}",
                    soft_wrap=True)


def _run_saved(rec: Recorder, output: Path, pairs: Path) -> str:
    """The interrupt line of ``profile run``: the phases saved, the pairs, how to go on."""
    done = sorted(rec.done)
    held = (f"{output} holds the finished phases ({', '.join(done)})" if done
            else f"no phase finished ({output} is unchanged)")
    extra = f", {pairs} the pairs measured so far" if "steps" not in done and pairs.exists() else ""
    return f"{held}{extra}; run the same command with --resume to continue"


@profile_app.command("vllm-metrics")
def vllm_metrics(
    source: Annotated[str, typer.Argument(
        metavar="URL|FILE",
        help="A running vLLM server (http://HOST:PORT, /metrics implied) or a saved scrape.")],
    output: Output,
    before: Annotated[Path | None, typer.Option(
        help="A scrape saved before the traffic: profile the counters' growth since.")] = None,
    interval: Annotated[float | None, typer.Option(
        help="Scrape URL twice, this many seconds apart (send traffic meanwhile).")] = None,
    export: Annotated[Path | None, typer.Option(
        help="The export file the server runs (its drafter settings).")] = None,
    c2: Annotated[float | None, typer.Option(
        help="Draft-token cost ratio c2 (counters cannot measure it; default: the base's).")
    ] = None,
    model_name: Annotated[str | None, typer.Option(
        help="The model_name label to read, when the server reports several.")] = None,
    save_scrape: Annotated[Path | None, typer.Option(
        help="Write the (last) scrape here, e.g. for the next --before.")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for /metrics.")] = 10.0,
    calibration: CalibrationOpt = None, preset: PresetOpt = None,
) -> None:
    """Token-level calibration (α2, acceptance by position) from a vLLM server's /metrics."""
    from profiler.vllm_metrics import profile_vllm_metrics
    from specmodel.formats.calibration import resolve_calibration, save_calibration

    base = resolve_calibration(calibration, preset)
    result = profile_vllm_metrics(
        source, base, before=before, interval=interval, c2=c2, export=export,
        model_name=model_name, timeout=timeout, save=save_scrape, note=_note)
    save_calibration(result.calibration, output)
    console().print(f"vllm-metrics: {result.line}; wrote {output}", soft_wrap=True)


@profile_app.command("hardware")
def hardware(
    output: Output,
    architecture: Annotated[str | None, typer.Argument(
        metavar="ARCH",
        help="An embedded architecture (e.g. qwen2.5-32b), a config.json or a model folder: "
             "built with random weights, nothing downloaded.")] = None,
    device: Annotated[str, typer.Option(help="cpu or cuda.")] = "cpu",
    dtype: Annotated[str | None, typer.Option(
        help="float32, bfloat16 or float16 (default float32; with --predict-on, the "
             "cost preset's).")] = None,
    path: Annotated[str, typer.Option(
        help="auto (graph on cuda, eager on cpu), graph, eager, transformers, "
             "transformers-static (its StaticCache) or transformers-graph (that captured "
             "as a CUDA graph).")] = "auto",
    predict_on: Annotated[str | None, typer.Option(
        "--predict-on", metavar="DEVICE",
        help="Run nothing: predict the same points on a device preset (h100-sxm, h200, "
             "a100-80gb-sxm, l40s, cpu-epyc, cpu-xeon) with the analytical cost model (path "
             "'predicted'); --device, --path, --attention, --repeats, --warmup, "
             "--threads and --probe do not apply.")] = None,
    attention: Annotated[str, typer.Option(
        help="SDPA backend: auto, flash, efficient, cudnn or math.")] = "auto",
    contexts: Annotated[str, typer.Option(help="Context lengths L (comma-separated).")
                        ] = "256,1024",
    batches: Annotated[str, typer.Option(help="Decode batch sizes b.")] = "1,2,4,8",
    verify_tokens: Annotated[str, typer.Option(
        help="Tokens q verified per sequence (empty: none).")] = "2,4",
    verify_batches: Annotated[str, typer.Option(help="Batch sizes of the verify points.")
                              ] = "1",
    prefill: Annotated[str, typer.Option(help="Prompt lengths n of prefill points.")] = "128",
    shared_batches: Annotated[str, typer.Option(
        help="Batch sizes of decode with a shared prefix (empty: none).")] = "4",
    repeats: Annotated[int, typer.Option(help="Timed forwards per point.")] = 5,
    warmup: Annotated[int, typer.Option(help="Untimed forwards per point.")] = 2,
    sweeps: Annotated[int, typer.Option(
        help="Passes over the points the repeats are spread across (1 to --repeats): each "
        "pass times its share of every point's repeats, so that a slow spell of a shared "
        "machine falls on one share of several points, not on every repeat of one.")] = 1,
    threads: Threads = 1,
    probe: Annotated[bool, typer.Option(
        "--probe", help="Time a fixed speed probe before every point and after the last, "
        "so that profiles measured while the machine's speed drifted can be compared at "
        "one speed.")] = False,
    from_file: Annotated[list[Path] | None, typer.Option(
        "--from", help="Profiles written by `python -m profiler.hardware` elsewhere (e.g. "
        "on a GPU machine): put them into the calibration instead of measuring.")] = None,
    calibration: CalibrationOpt = None, preset: PresetOpt = None,
) -> None:
    """Measure an architecture's cost surfaces on a device into a calibration.

    T(b, L) decode, V(q, L) verification and P(n) prefill, into a calibration (OUTPUT
    gains the profile if it is one already, else it starts from --calibration/--preset)."""
    from profiler.hardware import check_options, default_points, measure, read_config
    from specmodel.formats.calibration import (
        load_calibration,
        resolve_calibration,
        save_calibration,
    )
    from specmodel.formats.hardware import HardwareProfile, load_hardware_profile

    if (architecture is None) == (not from_file):
        raise ValueError("give ARCH to measure, or --from with profile files, not both")
    if from_file and predict_on:
        raise ValueError("--predict-on predicts ARCH's profile: give ARCH, not --from")
    base = (load_calibration(output) if output.is_file() and calibration is None
            and preset is None else resolve_calibration(calibration, preset))
    if not from_file:
        assert architecture is not None
        shape, config = read_config(architecture)
        points = default_points(
            _widths(contexts, "--contexts"), _widths(batches, "--batches"),
            verify_tokens=_widths(verify_tokens, "--verify-tokens"),
            verify_batches=_widths(verify_batches, "--verify-batches"),
            prefill_tokens=_widths(prefill, "--prefill"),
            shared_batches=_widths(shared_batches, "--shared-batches"))
    if from_file:
        profiles = [load_hardware_profile(f) for f in from_file]
    elif predict_on:
        from specmodel.hardware.devices import list_devices
        from specmodel.hardware.predicted import predict_profile
        from specmodel.hardware.shape import DTYPE_BYTES

        if predict_on not in list_devices():
            raise ValueError(f"--predict-on must be one of {', '.join(list_devices())}, "
                             f"got {predict_on!r}")
        if dtype is not None and dtype not in DTYPE_BYTES:
            raise ValueError(f"--dtype must be one of {', '.join(DTYPE_BYTES)}, got "
                             f"{dtype!r}")
        profiles = [predict_profile(shape, [(p.kind, p.batch, p.new_tokens, p.context,
                                             p.shared_prefix) for p in points],
                                    device=predict_on, dtype=dtype)]
    else:
        dtype = dtype or "float32"
        with options_named({**DEVICE_OPTIONS, "path": "--path", "attention": "--attention"}):
            check_options(device, dtype, path, attention)
        if not 1 <= sweeps <= repeats:
            raise ValueError(f"--sweeps must be between 1 and --repeats ({repeats}), "
                             f"got {sweeps}")
        with ProgressBar(description=f"hardware {shape.name}") as bar, \
                saving(_unchanged(output, "the profile")):
            raw = measure(shape, config, points, device=device, dtype=dtype, path=path,
                          repeats=repeats, warmup=warmup, threads=threads, sweeps=sweeps,
                          attention=attention, probe=probe, progress=lambda i, n, row: bar(
                              i, n, f"{row['kind']} b={row['batch']} L={row['context']}"))
        profiles = [HardwareProfile.model_validate(raw)]
    cal = base
    for profile in profiles:
        cal = cal.with_hardware(profile)
    save_calibration(cal, output)
    for profile in profiles:
        _print_profile(profile)
    console().print(f"hardware: {len(profiles)} profile(s); wrote {output}", soft_wrap=True)


def _print_profile(profile: Any) -> None:
    """T(b, L) in ms with T(b)/T(1) per context, and the profile's one-line summary."""
    from cli.render import show, table

    rows = []
    for L in profile.contexts():
        curve = profile.batch_curve(L)
        t1 = dict(curve).get(1)
        rows.append([str(L), "  ".join(
            f"{b}:{t * 1e3:.2f}" + (f" ({t / t1:.2f}x)" if t1 and b > 1 else "")
            for b, t in curve)])
    console().print(profile.summary(), soft_wrap=True)
    if rows:
        show(table(None, ["L", "decode, b: ms (T(b)/T(1))"], rows))


def register(app: typer.Typer) -> None:
    """Add ``profile`` to the app."""
    app.add_typer(profile_app, name="profile")
