"""``specmodel decode`` (the real Lookahead Reasoning decoder) and ``specmodel validate``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from cli.common import (
    CalibrationOpt,
    JsonOut,
    PresetOpt,
    check_device_options,
    options_named,
    unescape,
)
from cli.render import ProgressBar, console, emit_json, table
from specmodel.formats import DEFAULT_DATASET

_DECODE_OPTIONS = {
    "mode": "--mode", "k1": "--k1", "k2": "--k2", "width": "--width",
    "branch_temperature": "--branch-temperature", "max_steps": "--max-steps",
    "max_step_tokens": "--max-step-tokens", "step_delimiter": "--delimiter",
    "verifier.threshold": "--threshold", "verifier.kind": "--verifier",
    "verifier.model": "--judge-model", "token.model": "--token-draft",
    "target_batching": "--target-batching"}
"""The configuration's fields as ``decode``'s options name them."""


def decode(
    config: Annotated[
        Path | None, typer.Option("--config", help="The file `specmodel export` wrote.")
    ] = None,
    mode: Annotated[str | None, typer.Option(help="sync or async (overrides --config).")] = None,
    k1: Annotated[int | None, typer.Option(help="Target steps in parallel (draft steps + 1).")]
    = None,
    k2: Annotated[int | None, typer.Option(help="Token positions per pass (draft tokens + 1).")]
    = None,
    target_batching: Annotated[str | None, typer.Option(
        help="async: call (one target call at a time) or continuous (each target step joins "
             "the engine's running batch when its prefix exists; vllm and synthetic). "
             "Default: call, or what --config names.")] = None,
    width: Annotated[int | None, typer.Option(
        help="Draft branches per position (sync multi-branch drafting; overrides --config).")]
    = None,
    branch_temperature: Annotated[float | None, typer.Option(
        help="Sampling temperature of the extra branches (width > 1). Default: 0.8, or what "
             "--config names.")] = None,
    token_draft: Annotated[str | None, typer.Option(
        help="Token-level draft model inside each step (pack name or folder; on transformers "
             "any tokenizer). Default: n-gram prompt lookup, or what --config names.")] = None,
    target: Annotated[str, typer.Option(help="Target: pack name or model folder.")]
    = "qwen2.5-coder-0.5b",
    draft: Annotated[str, typer.Option(help="Step draft: pack name or model folder.")]
    = "smollm2-135m",
    verifier: Annotated[str | None, typer.Option(
        help="exact, embedding or judge. Default: embedding, or what --config names.")] = None,
    threshold: Annotated[float | None, typer.Option(
        help="embedding: cosine threshold. Default: 0.9, or what --config names.")] = None,
    judge_model: Annotated[str | None, typer.Option(
        help="judge: model. Default: qwen2.5-coder-0.5b, or what --config names.")] = None,
    engine: Annotated[str, typer.Option(
        help="transformers, vllm or synthetic (random-weight architectures whose decisions "
             "are drawn from --acceptance).")] = "transformers",
    device: Annotated[str, typer.Option(help="cpu or cuda, for every engine.")] = "cpu",
    dtype: Annotated[str, typer.Option(
        help="float32, bfloat16 or float16, for every engine.")] = "float32",
    decode_path: Annotated[str | None, typer.Option(
        help="transformers: eager (dynamic KV cache), static (a static KV cache) or "
             "compiled (the static cache with transformers' compiled decoding forwards: "
             "CUDA graphs on cuda; each new shape compiles once). Default: eager.")]
    = None,
    acceptance: Annotated[str | None, typer.Option(
        help="synthetic: the calibration (file or preset) whose step acceptance, token "
             "acceptance and step lengths the run draws; --target, --draft and "
             "--token-draft are then architecture names or config.json paths.")] = None,
    verifier_cost: Annotated[str | None, typer.Option(
        help="synthetic: the verifier's cost: free, calibration (its verifier_cost × the "
             "target's step time) or auto (calibration when it has one). Default: auto.")]
    = None,
    problems: Annotated[int, typer.Option(help="Problems of --dataset.")] = 4,
    seed: Annotated[int, typer.Option(min=0, help="Problem seed.")] = 0,
    dataset: Annotated[str, typer.Option(
        help="The reasoning-gym dataset the problems come from (gsm_symbolic, "
             "leg_counting, time_intervals, …); its own scorer judges the answers.")]
    = DEFAULT_DATASET,
    max_steps: Annotated[int | None, typer.Option(
        help="Steps per problem at most. Default: 12, or what --config names.")] = None,
    max_step_tokens: Annotated[int | None, typer.Option(
        help="Token cap per step. Default: 48, or what --config names.")] = None,
    delimiter: Annotated[
        str | None, typer.Option(help="Text that ends a step (escapes like \\n decoded).")
    ] = None,
    threads: Annotated[int, typer.Option(help="CPU threads per model.")] = 1,
    baseline: Annotated[
        bool, typer.Option(help="Also run target-only decoding (speedup 1) on the same problems.")
    ] = True,
    calibration: CalibrationOpt = None,
    preset: PresetOpt = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="Run record to write.")]
    = Path("run.json"),
    resume: Annotated[bool, typer.Option(help="Skip configurations already in OUTPUT.")] = False,
    interleave: Annotated[bool, typer.Option(
        help="Decode problem by problem, the baseline and the configuration on each in "
             "turn, so that a slow spell of a shared machine falls on both alike (OUTPUT "
             "is written at the end; no --resume).")] = False,
    cost_probe: Annotated[bool, typer.Option(
        help="Before decoding, time a few engine-cost cells (b = 1 and 2 at the problems' "
             "prompt length, target and draft; synthetic prose, not the problems) into the "
             "record, so that `specmodel validate --costs-at-run-time` can price with the "
             "calibration's costs rescaled to the machine as it was (--engine transformers)."
    )] = False,
    probe_contention: Annotated[int, typer.Option(
        metavar="ROUNDS",
        help="With --cost-probe: also pair the target's and the draft's calls for ROUNDS "
             "rounds (as the profiler's engine_costs phase does), so the probe holds each "
             "one's slowdown beside the other and `validate --costs-at-run-time` prices "
             "async configurations with it (0: no pairing).")] = 0,
    json_out: JsonOut = False,
) -> None:
    """Run Lookahead Reasoning on real models and write a run record.

    The configuration is the export file's (``--config``) or the defaults; every option
    given on the command line overrides its field, the verifier included.
    """
    from profiler.engines import make_engine
    from profiler.packs import resolve_model
    from profiler.problems import check_dataset, load_problems
    from profiler.runs import (
        baseline_like,
        mean_prompt_tokens,
        prompt_lengths,
        run_configurations,
    )
    from profiler.verifiers import make_verifier
    from specmodel.config import SpecConfig
    from specmodel.formats.calibration import resolve_calibration
    from specmodel.formats.run_record import RunSettings

    if interleave and resume:
        raise ValueError("--resume cannot continue an --interleave run (its record is "
                         "written only at the end): drop one of them")
    check_device_options(device, dtype)
    check_dataset(dataset, "--dataset")
    if cost_probe and engine != "transformers":
        raise ValueError(f"--cost-probe is for --engine transformers only (got --engine "
                         f"{engine}: the probe times the engine's exact-length calls)")
    if probe_contention < 0 or (probe_contention and not cost_probe):
        raise ValueError(f"--probe-contention takes a number of rounds >= 0 and goes with "
                         f"--cost-probe (got --probe-contention {probe_contention}"
                         f"{'' if cost_probe else ' without --cost-probe'})")
    synthetic = engine == "synthetic"
    acc_cal = _check_synthetic_options(engine, acceptance, verifier, verifier_cost)
    _check_decode_path(engine, decode_path)
    cfg = SpecConfig()
    if config is not None:
        from specmodel.formats.export import load_export

        cfg = load_export(config).config
    changes: dict[str, Any] = {}
    for name, value in (("mode", mode), ("k1", k1), ("k2", k2), ("width", width),
                        ("branch_temperature", branch_temperature), ("max_steps", max_steps),
                        ("target_batching", target_batching),
                        ("max_step_tokens", max_step_tokens)):
        if value is not None:
            changes[name] = value
    if delimiter is not None:
        changes["step_delimiter"] = unescape(delimiter)
    if token_draft is not None:
        changes["token"] = {"method": "draft_model", "model": token_draft}
    ver_changes: dict[str, Any] = {}
    if verifier is not None:
        ver_changes["kind"] = verifier
    if threshold is not None:
        ver_changes["threshold"] = threshold
    if judge_model is not None and ver_changes.get("kind", cfg.verifier.kind) == "judge":
        ver_changes["model"] = judge_model
    if synthetic:  # the decisions are the calibration's, whatever --config named
        ver_changes = {"kind": "synthetic", "model": acceptance}
    if ver_changes:
        changes["verifier"] = ver_changes
    if changes:
        with options_named(_DECODE_OPTIONS):  # a bad value names the option typed
            cfg = cfg.replace(**changes)
    if engine == "transformers" and cfg.target_batching == "continuous":
        where = "" if target_batching else " (from --config)"
        raise ValueError(f"--target-batching continuous{where} needs an engine that batches "
                         "continuously, --engine vllm or synthetic (--engine transformers "
                         "runs one call at a time)")
    if not synthetic and cfg.verifier.kind == "synthetic" and cfg.k1 > 1:
        raise ValueError("--verifier synthetic (here from --config) judges the synthetic "
                         "engine's steps: use --engine synthetic --acceptance CALIBRATION")
    if cfg.k2 > 1 and cfg.token.method == "draft_model" and cfg.token.model:
        if synthetic:
            _architecture(cfg.token.model, "--token-draft")
        else:
            cfg = cfg.replace(token={"model": str(resolve_model(cfg.token.model,
                                                              option="--token-draft"))})
    if probe_contention and cfg.k1 == 1:
        raise ValueError(f"--probe-contention {probe_contention} pairs the target's calls "
                         "with the step draft's: it needs a step draft (--k1 >= 2)")
    cal = None
    if calibration is not None or preset is not None:
        cal = resolve_calibration(calibration, preset)
    if synthetic:
        _architecture(target, "--target")
        if cfg.k1 > 1:
            _architecture(draft, "--draft")
    if not synthetic:  # every model argument checked before the first one loads
        from profiler.packs import check_model

        check_model(target, option="--target")
        if cfg.k1 > 1:
            check_model(draft, option="--draft")
    if cfg.k1 > 1:
        from profiler.calibrate import check_distinct_models

        check_distinct_models(target, draft)
    from cli.interrupt import saving
    from specmodel.formats.lock import WriteLock

    what = (f"synthetic acceptance from {acceptance}, {target} / {draft} on {device}"
            if synthetic else engine)
    # The record is locked before any model loads: a second writer is refused at once.
    with WriteLock(output), saving(lambda: _decode_saved(output, interleave)):
        probs = load_problems(problems, seed, dataset)
        where: dict[str, Any] = {"threads": threads, "delimiter": cfg.step_delimiter,
                                 "device": device, "dtype": dtype}

        def opts(role: str) -> dict[str, Any] | None:
            if decode_path is not None:
                return {"decode_path": decode_path}
            return {"acceptance": acc_cal, "role": role, "seed": seed} if synthetic else None

        def settings(**measured: Any) -> RunSettings:
            """The run's settings; ``measured``: what the built engines say."""
            return RunSettings(dataset=dataset, problems=problems, seed=seed,
                               threads=threads, engine=engine,
                               max_steps=cfg.max_steps, max_step_tokens=cfg.max_step_tokens,
                               delimiter=cfg.step_delimiter,
                               config_file=str(config) if config is not None else None,
                               device=device, dtype=dtype, **measured)

        if resume and output.is_file():  # a record of other settings is refused, and a
            # complete one printed, before any model loads
            from profiler.engines import execution_of
            from profiler.runs import resume_before_loading

            held = resume_before_loading(
                output, engine=engine, problems=[p.index for p in probs],
                models={"target": target, "draft": draft if cfg.k1 > 1 else ""},
                settings=settings(execution=execution_of(engine, device, opts("target"))),
                configs=[cfg], include_baseline=baseline)
            if held is not None:
                console(stderr=True).print(
                    f"{output} already holds every configuration of this run: nothing "
                    "decoded, no model loaded", soft_wrap=True)
                _print_record(held, json_out, what, output)
                return
        tgt = make_engine(engine, target if synthetic else
                          resolve_model(target, option="--target"),
                          **where, options=opts("target"))
        drf = ver = None
        if cfg.k1 > 1:
            drf = make_engine(engine, draft if synthetic else
                              resolve_model(draft, option="--draft"),
                              **where, options=opts("draft"))
            if synthetic:
                from profiler.verifiers import SyntheticVerifier

                ver = SyntheticVerifier(acc_cal, source=str(acceptance), seed=seed,
                                        cost=verifier_cost or "auto")
            else:
                ver = make_verifier(cfg.verifier, threads=threads)
        lengths = prompt_lengths(tgt, probs)
        if getattr(tgt, "decode_path", None) is not None:  # the transformers engine
            _prepare_paths(tgt, drf, cfg, lengths, cal, ver)
        probes = []
        if cost_probe:
            from profiler.engine_costs import probe_costs

            first = baseline_like(cfg) if baseline else cfg  # what decodes first
            probes = [probe_costs(tgt, drf, models=(target, draft if drf else None),
                                  context=round(mean_prompt_tokens(lengths)), threads=threads,
                                  contention_rounds=probe_contention,
                                  before=first.label)]
            console(stderr=True).print(f"cost probe: {probes[0].cells_text()}",
                                       soft_wrap=True)
        syn = None
        if synthetic:
            syn, cal = _prepare_synthetic(tgt, drf, ver, cfg, lengths, acc_cal, cal,
                                          str(acceptance), seed, device, dtype)
        with _LazyBar() as bar:
            record = run_configurations(
                tgt, drf, ver, [cfg], probs, output,
                models={"target": target, "draft": draft if drf else "",
                        "verifier": ver.name if ver else ""},
                settings=settings(synthetic=syn, execution=getattr(tgt, "execution", None),
                                  static_cache=(tgt.cache_length(1)
                                                if hasattr(tgt, "cache_length") else None),
                                  prompt_tokens=mean_prompt_tokens(lengths)),
                calibration=cal, include_baseline=baseline, resume=resume, progress=bar,
                interleave=interleave, cost_probes=probes,
            )
    _print_record(record, json_out, what, output)


def _print_record(record: Any, json_out: bool, what: str, output: Path) -> None:
    """``decode``'s table (or JSON rows) of ``record``'s configurations (``what``: the
    engine, in the title), then where it was written."""
    con = console()
    rows = [{"config": c.label, **c.totals.model_dump()} for c in record.configs]
    base = next((c for c in record.configs if c.label == record.baseline), None)
    for r in rows:
        r["speedup"] = (r["tokens_per_second"] / base.totals.tokens_per_second
                        if base and base.totals.tokens_per_second > 0 else None)
    if json_out:
        emit_json(rows)
        return
    s = record.settings
    t = table(f"decode: {s.problems} {s.dataset} problems (seed {s.seed}), {what}",
              ("config", "tokens", "seconds", "tokens/s", "speedup", "α1 run", "accuracy"),
              justify=("left",) + ("right",) * 6, no_wrap=True)
    for r in rows:
        acc = r["step_acceptance"]
        t.add_row(r["config"], str(r["output_tokens"]), f"{r['seconds']:.1f}",
                  f"{r['tokens_per_second']:.2f}",
                  "-" if r["speedup"] is None else f"{r['speedup']:.3f}",
                  "-" if acc is None else f"{acc:.2f}", f"{r['accuracy']:.2f}")
    con.print(t)
    con.print(f"wrote {output}")


def _prepare_paths(tgt: Any, drf: Any, cfg: Any, lengths: list[int], cal: Any,
                   ver: Any = None) -> None:
    """The transformers engines prepared before anything is timed (every batch size run
    once; on ``--decode-path static|compiled`` their static caches too), the verifier's
    first call made (:func:`profiler.runs.prepare_engines`), what was prepared printed
    (:func:`profiler.runs.prepared_message`)."""
    from profiler.runs import prepare_engines, prepared_message

    positions, seconds = prepare_engines(tgt, drf, [cfg], lengths, ver)
    console(stderr=True).print(prepared_message(tgt, positions, seconds, cal),
                               soft_wrap=True)


def _check_decode_path(engine: str, decode_path: str | None) -> None:
    """``--decode-path`` is the transformers engine's, and one of its paths."""
    if decode_path is None:
        return
    from profiler.engines.hf import check_decode_path

    if engine != "transformers":
        raise ValueError(f"--decode-path is for --engine transformers only (got --engine "
                         f"{engine})")
    check_decode_path(decode_path, "--decode-path")


def _check_synthetic_options(engine: str, acceptance: str | None, verifier: str | None,
                             verifier_cost: str | None) -> Any:
    """The acceptance calibration of ``--engine synthetic`` (None for another engine);
    the options that belong to one and not the other are refused, named."""
    if engine != "synthetic":
        if acceptance is not None:
            raise ValueError(f"--acceptance is for --engine synthetic only (got --engine "
                             f"{engine}: real models decide from real text)")
        if verifier_cost is not None:
            raise ValueError("--verifier-cost is for --engine synthetic only")
        if verifier == "synthetic":
            raise ValueError("--verifier synthetic needs --engine synthetic and --acceptance")
        return None
    if acceptance is None:
        raise ValueError("--acceptance CALIBRATION_FILE_OR_PRESET is required with "
                         "--engine synthetic")
    if verifier is not None and verifier != "synthetic":
        raise ValueError(f"--verifier {verifier} cannot judge synthetic steps: with --engine "
                         "synthetic the verifier is synthetic (leave --verifier out)")
    from profiler.engines.synthetic import load_acceptance
    from profiler.verifiers import VERIFIER_COSTS

    if verifier_cost is not None and verifier_cost not in VERIFIER_COSTS:
        raise ValueError(f"--verifier-cost must be one of {', '.join(VERIFIER_COSTS)}, "
                         f"got {verifier_cost!r}")
    try:
        return load_acceptance(acceptance)
    except ValueError as e:
        raise ValueError(f"--acceptance: {e}") from e


def _architecture(name: str, option: str) -> None:
    """Refuse an architecture that is neither a preset nor a readable config.json."""
    from specmodel.hardware.shape import load_shape

    try:
        load_shape(name)
    except ValueError as e:
        raise ValueError(f"{option}: {e}") from e


def _prepare_synthetic(tgt: Any, drf: Any, ver: Any, cfg: Any, lengths: list[int],
                       acc_cal: Any, cal: Any, acceptance: str, seed: int, device: str,
                       dtype: str) -> tuple[Any, Any]:
    """Bind (capture) the forwards the run will use, time the engines, price the
    verifier; the run record's synthetic settings and its calibration (the one given,
    else the acceptance calibration with the costs measured here).  ``lengths``: the
    problems' prompt lengths (:func:`profiler.runs.prompt_lengths`)."""
    from profiler.engines.synthetic import architectures, prepare_run, profile_costs, with_costs
    from profiler.runs import mean_prompt_tokens
    from specmodel.formats.run_record import SyntheticAcceptance

    prompt = max(lengths)
    costs = prepare_run(tgt, drf, [cfg], prompt)
    step_seconds = tgt.lengths.mean * costs["T"][1]
    if ver is not None:
        ver.price(step_seconds)
    if cal is None:
        models = {"target": tgt.model, "draft": drf.model if drf else "",
                  "verifier": ver.name if ver else ""}
        hardware = profile_costs(tgt, drf if cfg.k1 > 1 else None, [cfg], prompt)
        cal = with_costs(acc_cal, costs, f"{tgt.model} / {drf.model if drf else '-'} on "
                         f"{device} {dtype}", {k: v for k, v in models.items() if v},
                         hardware)
    syn = SyntheticAcceptance(
        acceptance=acceptance, calibration=acc_cal.name,
        step_acceptance=ver.acceptance.source if ver is not None else "-",
        verifier_cost=ver.cost if ver is not None else "free",
        verifier_pair_seconds=ver.pair_seconds if ver is not None else 0.0,
        seed=seed, prompt_tokens=round(mean_prompt_tokens(lengths)),
        architectures=architectures(tgt, drf if cfg.k1 > 1 else None, [cfg]),
        **{k: v for k, v in tgt.describe().items()})
    return syn, cal


class _LazyBar:
    """A progress bar that appears with the first report (a run refused before it
    decodes anything, e.g. a --resume of other settings, prints only its error)."""

    def __init__(self) -> None:
        self._bar: ProgressBar | None = None

    def __call__(self, done: int, total: int, message: str) -> None:
        if self._bar is None:
            self._bar = ProgressBar().__enter__()
        self._bar(done, total, message)

    def __enter__(self) -> _LazyBar:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)


def _decode_saved(output: Path, interleave: bool = False) -> str:
    """The interrupt line of ``decode``: the configurations saved and how to go on."""
    from specmodel.formats.run_record import load_run_record

    if interleave:
        return (f"an --interleave run writes {output} only at its end: nothing of this run "
                "was saved; run the same command again")

    try:
        labels = [c.label for c in load_run_record(output).configs] if output.is_file() else []
    except ValueError:
        labels = []
    held = (f"{output} holds the finished configurations ({', '.join(labels)})" if labels
            else f"no configuration finished ({output} holds none of this run)")
    return f"{held}; run the same command with --resume to continue"


def _fmt(v: float | None, pct: bool = False) -> str:
    """A speedup (3 decimals), or with ``pct`` a signed error in per cent; '-' for None."""
    if v is None:
        return "-"
    return f"{v:+.1%}" if pct else f"{v:.3f}"


def _show_lengths_as_run(rows: list[Any], lengths: Any, cal: Any, *, both: bool) -> None:
    """The table of ``validate --lengths-as-run``."""
    from cli import render
    from specmodel.run_lengths import padding_ratio

    fmt = _fmt
    heads = ("config", "measured", "decoder", "decoder err", "at run lengths", "its α1",
             "its err") + (("at both", "its err") if both else ())
    render.show(render.table(
        "the decoder model at the step lengths the run's problems wrote (a diagnosis: it "
        "uses what the run decoded)", heads,
        [(r.config, fmt(r.measured_speedup), fmt(r.predicted_decoder),
          fmt(r.decoder_error, True), fmt(r.decoder_at_run_lengths),
          fmt(r.decoder_at_run_lengths_step_acceptance),
          fmt(r.decoder_at_run_lengths_error, True),
          *((fmt(r.decoder_at_run_lengths_and_acceptance),
             fmt(r.decoder_at_run_lengths_and_acceptance_error, True)) if both else ()))
         for r in rows if r.k1 > 1 or r.k2 > 1],
        justify=("left",) + ("right",) * (len(heads) - 1), no_wrap=True))
    steps = lengths.steps
    own = cal.step.step_length_answers
    own_ratio = None if not own else padding_ratio(own)
    render.dim(
        f"lengths read from {lengths.config!r}: {len(lengths.answers)} problems, {steps} "
        f"steps of {lengths.mean_target_step:.1f} target tokens on average (calibration "
        f"{cal.step.step_tokens_mean or float('nan'):.1f}); a step beside the next one "
        f"runs {padding_ratio(lengths.answers) or float('nan'):.2f}× its own tokens "
        f"(calibration's answers "
        + ("-" if own_ratio is None else f"{own_ratio:.2f}×")
        + f"); {lengths.filled} draft lengths not measured (no draft asked at that index) "
        "set to the target's"
        + ("; at both: then every step rate moved to the run's acceptance" if both else ""))


def validate(
    run_record: Annotated[Path, typer.Argument(help="Run record from `specmodel decode`.")],
    calibration: CalibrationOpt = None,
    preset: PresetOpt = None,
    json_out: JsonOut = False,
    costs_at_run_time: Annotated[bool, typer.Option(
        "--costs-at-run-time",
        help="Price the decoder model with the calibration's engine costs rescaled to the "
             "record's cost probes (timed beside the run, not on its problems).")] = False,
    drift_uniform: Annotated[bool, typer.Option(
        "--drift-uniform",
        help="With --costs-at-run-time: rescale every cost of a model by one ratio (the "
             "geometric mean of its probe cells) instead of each batch size's cells by the "
             "probes' ratio at that size.")] = False,
    keep_times: Annotated[bool, typer.Option(
        "--keep-times",
        help="With --costs-at-run-time: keep the calibration's times and take only the "
             "probes' slowdowns beside each other (decode --probe-contention).")] = False,
    prompt_tokens: Annotated[float | None, typer.Option(
        "--prompt-tokens",
        help="The run's mean prompt length in the target's tokens, for a record that does "
             "not store it (the decoder model otherwise assumes one; the prefill of every "
             "speculative call depends on it).")] = None,
    acceptance_as_run: Annotated[bool, typer.Option(
        "--acceptance-as-run",
        help="Also run the decoder model with its step rates moved to the acceptance each "
             "configuration measured: a diagnosis (it uses what the run decoded) that "
             "splits the decoder's error into the acceptance the run drew and the rest "
             "(schedule and costs).")] = False,
    lengths_as_run: Annotated[bool, typer.Option(
        "--lengths-as-run",
        help="Also run the decoder model with the calibration's step lengths replaced by "
             "the ones the run's problems wrote (each problem's target and draft tokens "
             "at every step index, read from the calls of its synchronous one-branch "
             "configuration): a diagnosis that shows what the held-out answers' lengths "
             "did to the prediction; with --acceptance-as-run also at both.")] = False,
    on_draws: Annotated[bool, typer.Option(
        "--on-draws",
        help="A synthetic-acceptance run drawn by position: also the decoder model on the "
             "run's own draws (every step length, pass and verdict the run met, rebuilt "
             "from its seed and prompts; nothing runs), and whether they reproduce its "
             "target-alone and sync rows exactly. What is left of the error is the "
             "schedule's and the costs'; the rest is the sample the run drew.")] = False,
) -> None:
    """Predicted against measured speedup for every configuration of a run record."""
    from cli import render
    from specmodel.errors import SpecmodelError
    from specmodel.formats.calibration import resolve_calibration
    from specmodel.formats.run_record import load_run_record
    from specmodel.prediction import (
        baseline_speed,
        calibration_at_run_time,
        calibration_mismatches,
        compare,
        cost_drift,
    )

    if prompt_tokens is not None and not prompt_tokens > 0:
        raise SpecmodelError(f"--prompt-tokens must be > 0, got {prompt_tokens}")
    if on_draws and (calibration is not None or preset is not None or costs_at_run_time):
        raise SpecmodelError("--on-draws prices the run's draws with its own calibration "
                             "(the hardware profiles its passes measured): it cannot be "
                             "combined with --calibration, --preset or --costs-at-run-time")
    record = load_run_record(run_record)
    stored = record.settings.prompt_tokens
    if prompt_tokens is not None and stored is not None and abs(prompt_tokens - stored) > 0.5:
        raise SpecmodelError(f"--prompt-tokens {prompt_tokens}: the record stores its mean "
                             f"prompt length, {stored:.1f} tokens")
    cal = None
    if calibration is not None or preset is not None:
        cal = resolve_calibration(calibration, preset)
    elif record.calibration is None:
        raise SpecmodelError(
            "the run record carries no calibration: pass --calibration or --preset"
        )
    for flag, given in (("--drift-uniform", drift_uniform), ("--keep-times", keep_times)):
        if given and not costs_at_run_time:
            raise SpecmodelError(f"{flag} goes with --costs-at-run-time")
    drift = cost_drift(cal or record.calibration, record.cost_probes)  # type: ignore[arg-type]
    if costs_at_run_time:
        if drift is None:
            raise SpecmodelError(
                "--costs-at-run-time: the run record has no cost probes, or the calibration "
                "has no engine_costs section to rescale")
        try:
            cal, drift = calibration_at_run_time(
                cal or record.calibration,  # type: ignore[arg-type]
                record.cost_probes, by_batch=not drift_uniform, times=not keep_times)
        except ValueError as e:
            if not keep_times:
                raise
            raise SpecmodelError(f"--keep-times: {e}") from e
    drawn, reproduces = _run_draws(record) if on_draws else (None, None)
    lengths = None
    if lengths_as_run:
        from specmodel.run_lengths import run_lengths

        try:
            lengths = run_lengths(record)
        except ValueError as e:
            raise SpecmodelError(f"--lengths-as-run: {e}") from e
    rows = compare(record, cal, prompt_tokens=prompt_tokens,
                   acceptance_as_run=acceptance_as_run, on_draws=drawn, lengths=lengths)
    # Absolute times: a request's ms per generated token, measured (seconds / tokens of
    # each configuration's run) and predicted (the baseline's measured ms/token ÷ the
    # predicted speedup).
    runs = {c.label: c.totals for c in record.configs}
    base = runs.get(record.baseline)
    base_ms = (1e3 * base.seconds / base.output_tokens
               if base is not None and base.output_tokens > 0 else None)

    def ms(label: str, speedup: float | None = None) -> float | None:
        if speedup is not None:
            return None if base_ms is None or speedup <= 0 else base_ms / speedup
        t = runs.get(label)
        return None if t is None or t.output_tokens == 0 else 1e3 * t.seconds / t.output_tokens

    times = [{"measured_ms_per_token": ms(r.config),
              "predicted_ms_per_token": None if r.predicted_speedup is None
              else ms(r.config, r.predicted_speedup),
              "priced_ms_per_token": None if r.predicted_priced is None
              else ms(r.config, r.predicted_priced),
              "decoder_ms_per_token": None if r.predicted_decoder is None
              else ms(r.config, r.predicted_decoder)} for r in rows]
    if json_out:
        out = [{**r.model_dump(), **t} for r, t in zip(rows, times, strict=True)]
        if on_draws:  # the check beside every row, so that a reader needs no other field
            out = [{**r, "draws_reproduce_run": reproduces} for r in out]
        render.emit_json(out)
        return

    fmt = _fmt
    used = (cal or record.calibration).name  # type: ignore[union-attr]
    render.show(render.table(
        f"{run_record.name}: predicted ({used}) vs measured speedup",
        ("config", "predicted", "measured", "error", "priced", "priced err", "decoder",
         "95 % (run)", "decoder err", "α1 run", "α1 model", "acc"),
        [(r.config, fmt(r.predicted_speedup), fmt(r.measured_speedup), fmt(r.error, True),
          fmt(r.predicted_priced), fmt(r.priced_error, True), fmt(r.predicted_decoder),
          "-" if r.decoder_sample_interval is None else
          f"{r.decoder_sample_interval[0]:.2f}-{r.decoder_sample_interval[1]:.2f}",
          fmt(r.decoder_error, True), fmt(r.step_acceptance),
          fmt(r.decoder_step_acceptance), f"{r.accuracy:.2f}") for r in rows],
        justify=("left",) + ("right",) * 11, no_wrap=True))
    steady = [r for r in rows if r.measured_speedup_less_setup is not None]
    if steady:
        render.show(render.table(
            "less the one-time setup inside the wall time (binding and capturing forwards "
            "of new shapes, which a serving engine does at start-up)",
            ("config", "measured", "less setup", "decoder", "decoder err"),
            [(r.config, fmt(r.measured_speedup), fmt(r.measured_speedup_less_setup),
              fmt(r.predicted_decoder),
              fmt(None if r.predicted_decoder is None else
                  r.predicted_decoder / r.measured_speedup_less_setup - 1, True))
             for r in steady],
            justify=("left",) + ("right",) * 4, no_wrap=True))
    if acceptance_as_run:
        shown = [r for r in rows if r.step_acceptance is not None]
        render.show(render.table(
            "the decoder model at each configuration's measured step acceptance "
            "(a diagnosis: it uses what the run decoded)",
            ("config", "α1 run", "α1 model", "decoder err", "at run α1", "its α1",
             "its err"),
            [(r.config, fmt(r.step_acceptance), fmt(r.decoder_step_acceptance),
              fmt(r.decoder_error, True), fmt(r.decoder_at_run_acceptance),
              fmt(r.decoder_at_run_step_acceptance),
              fmt(r.decoder_at_run_acceptance_error, True)) for r in shown],
            justify=("left",) + ("right",) * 6, no_wrap=True))
        render.dim("at run α1: every step rate of the decoder model moved by one logit "
                   "offset until it accepts as the run did (its α1); what is left of its "
                   "error is the schedule's and the costs', the rest of the decoder's error "
                   "the acceptance the run happened to draw")
    if lengths is not None:
        _show_lengths_as_run(rows, lengths, cal or record.calibration, both=acceptance_as_run)
    if on_draws:
        from specmodel.prediction import busy_over_price

        def over(r: Any, role: str) -> str:
            got = busy_over_price(r.measured_split, r.decoder_on_draws_split).get(role)
            return "-" if got is None else f"{got:.2f}"

        render.show(render.table(
            "the decoder model on the run's own draws (the sample it met, rebuilt from "
            "its seed and prompts)",
            ("config", "measured", "decoder", "decoder err", "on draws", "draws err",
             "target ÷ price", "draft ÷ price"),
            [(r.config, fmt(r.measured_speedup), fmt(r.predicted_decoder),
              fmt(r.decoder_error, True), fmt(r.decoder_on_draws),
              fmt(r.decoder_on_draws_error, True), over(r, "target"), over(r, "draft"))
             for r in rows],
            justify=("left",) + ("right",) * 7, no_wrap=True))
        render.dim("target ÷ price, draft ÷ price: the run's time inside that role's calls "
                   "over the price of the forwards the model plays on these draws, each "
                   "alone (no contention): for the target alone and sync the prices' "
                   "error; in async also what running beside the other model cost")
        drawn = [abs(r.decoder_on_draws_error) for r in rows
                 if r.decoder_on_draws_error is not None and r.config != record.baseline]
        laws = [abs(r.decoder_error) for r in rows
                if r.decoder_error is not None and r.config != record.baseline]
        if drawn and laws:
            render.dim(f"mean |error| over the {len(drawn)} speculative configurations: "
                       f"{sum(laws) / len(laws):.1%} on fresh draws from the laws, "
                       f"{sum(drawn) / len(drawn):.1%} on the run's draws")
        if reproduces:
            render.dim("on these draws the decoder model decodes the target alone and "
                       "every sync configuration exactly as the run did (output tokens, "
                       "judged and accepted draft steps): they are the run's draws")
        else:
            render.line("[yellow]note: on these draws the decoder model does not decode "
                        "the target alone and the sync configurations as the run did: "
                        "the rebuilt draws are not the run's (another acceptance file or "
                        "architecture than it read?), so the on-draws column is not the "
                        "run's sample[/yellow]")
    if base_ms is not None:
        render.show(render.table(
            "ms per generated token (one request at a time)",
            ("config", "measured", "predicted", "priced", "decoder"),
            [(r.config, *("-" if t[k] is None else f"{t[k]:.1f}" for k in
                          ("measured_ms_per_token", "predicted_ms_per_token",
                           "priced_ms_per_token", "decoder_ms_per_token")))
             for r, t in zip(rows, times, strict=True)],
            justify=("left", "right", "right", "right", "right"), no_wrap=True))
    render.dim("speedup = the target alone's time per generated token ÷ the configuration's, "
               "one request at a time; predicted ms/token = the target's measured ms/token "
               "÷ the predicted speedup")
    render.dim("predicted: the papers' f(k1)·g(k2); priced: the same priced by the "
               "calibration's T(b); decoder: a Monte-Carlo of the decoder's own schedule "
               "with each call priced (prefill, overhead and contention assumed where the "
               "calibration has no measurement), 95 % (run): its interval for a run of "
               "this many problems; error = predicted/measured − 1; α1 run: "
               "accepted/judged draft steps in this run, α1 model: as the decoder model "
               "expects them; acc: final-answer accuracy")
    speed = baseline_speed(rows)
    if speed is not None:
        render.dim(f"the target alone ran at {speed:.0%} of the time per token the decoder "
                   "model gives it: the calibration's absolute costs against this run's "
                   "machine state (a drift that is the same for every call cancels in the "
                   "speedups)")
    if drift is not None:
        render.dim(drift.summary()
                   + ("; the decoder column prices with the calibration's times and "
                      "these slowdowns beside each other" if keep_times else
                      "; the decoder column prices with costs rescaled to them"
                      if costs_at_run_time else
                      "; --costs-at-run-time prices the decoder model with them"))
    syn = record.settings.synthetic
    known = stored if stored is not None else (None if syn is None else syn.prompt_tokens)
    if known is None and prompt_tokens is None and any(
            r.predicted_decoder is not None for r in rows):
        from specmodel.decodermodel import Workload

        render.line("[yellow]note: the run record does not store its prompts' length: the "
                    f"decoder model assumed {Workload.prompt_tokens} tokens (every "
                    "speculative call prefills its whole prefix, so this matters); "
                    "--prompt-tokens gives it.[/yellow]")
    m = record.machine
    cpu, cores = (m.cpu, m.cores) if m is not None else ("?", "?")
    render.dim(f"measured {record.created} on {cpu} ({cores} "
               f"cores), engine {record.engine}"
               + (f" ({record.settings.execution})" if record.settings.execution else "")
               + f", models {record.models}")
    for line in calibration_mismatches(record, cal):
        render.line(f"[yellow]note: {line}; the prediction uses the calibration's "
                    "figures.[/yellow]")
    from profiler.engines.hf import cache_mismatch

    priced_by = cal or record.calibration
    timed = cache_mismatch(None if priced_by is None else priced_by.phase_settings(
        "engine_costs"), record.settings.static_cache)
    if timed is not None:
        render.line(f"[yellow]note: engine costs: the calibration timed its calls {timed}, "
                    f"the run's static caches had {record.settings.static_cache}; every "
                    "forward attends over its whole cache, so the absolute times are priced "
                    "for another length (profile engine-costs --cache-positions).[/yellow]")


def _run_draws(record: Any) -> tuple[dict[str, Any], bool]:
    """``validate --on-draws``: the decoder model on the run's own draws
    (:func:`specmodel.prediction.draws_predictions`, each configuration priced once) and
    whether they reproduce its timing-free rows; one-line errors naming the option."""
    from profiler.engines.synthetic import record_draws
    from specmodel.errors import SpecmodelError
    from specmodel.prediction import draws_predictions, reproduces_on_draws

    try:
        sample = record_draws(record)
    except ValueError as e:
        raise SpecmodelError(f"--on-draws: {e}") from e
    if sample is None:
        raise SpecmodelError("--on-draws: the run drew its steps by prefix "
                             "(settings.synthetic.draws), so its draws depend on what it "
                             "decoded and cannot be rebuilt; runs drawn by position can")
    try:
        drawn = draws_predictions(record, sample)
    except ValueError as e:
        raise SpecmodelError(f"--on-draws: {e}") from e
    return drawn, reproduces_on_draws(record, drawn)


def audit_calls(
    run_record: Annotated[Path, typer.Argument(help="Run record from `specmodel decode`.")],
    calibration: CalibrationOpt = None,
    preset: PresetOpt = None,
    json_out: JsonOut = False,
) -> None:
    """Every engine call a run logged, against the decoder model's price of that call.

    Each call is priced by the calibration's engine costs (overhead, prefill
    of the tokens it prefilled, decode of the tokens it generated at T(b, L)) at the rows
    and prefix lengths it really had, grouped by configuration, model and rows. It
    separates the price of a call from the schedule and the step lengths the model
    plays. Calls with token speculation inside are counted, not priced."""
    from cli import render
    from specmodel.call_audit import call_audit
    from specmodel.errors import SpecmodelError
    from specmodel.formats.calibration import resolve_calibration
    from specmodel.formats.run_record import load_run_record

    record = load_run_record(run_record)
    cal = (resolve_calibration(calibration, preset)
           if calibration is not None or preset is not None else record.calibration)
    if cal is None:
        raise SpecmodelError("the run record carries no calibration: pass --calibration or "
                             "--preset")
    try:
        audit = call_audit(record, cal)
    except ValueError as e:
        raise SpecmodelError(str(e)) from e
    if json_out:
        render.emit_json(audit.to_dict())
        return
    if not audit.groups:
        raise SpecmodelError(f"{run_record}: no configuration logged a call that can be "
                             "priced (records from before calls were logged, or token "
                             "speculation in every call)")
    render.show(render.table(
        f"{run_record.name}: logged engine calls against their price ({audit.calibration})",
        ("config", "model", "rows", "calls", "meas. s", "priced s", "÷ priced",
         "overhead s", "prefill s", "decode s", "beside s", "overlap", "context",
         "generated", "longest step"),
        [(g.config, g.role + (" sampled" if g.sampled else ""), str(g.rows), str(g.calls),
          f"{g.measured:.1f}", f"{g.priced:.1f}", f"{g.ratio:.3f}", f"{g.overhead:.1f}",
          f"{g.prefill:.1f}", f"{g.decode:.1f}", f"{g.beside:.1f}", f"{g.overlap:.0%}",
          f"{g.context:.0f}", f"{g.iterations:.1f}", f"{g.longest_step:.1f}")
         for g in audit.groups],
        justify=("left", "left") + ("right",) * 13))
    render.dim("priced: the decoder model's price of each call (call_price) at the rows, "
               "prefix tokens, prefilled tokens and generated tokens the call had; beside: "
               "the calibration's slowdown on the share of a call that ran beside a call of "
               "the other model; context: prefix tokens per row; generated: tokens the "
               "batch generated per call (the longest row's); longest step: the longest "
               "row's step tokens, what the model counts as the call's iterations")
    speedups = audit.speedups()
    paced = audit.at_baseline_pace()

    def opt(v: float | None, fmt: str) -> str:
        return "-" if v is None else format(v, fmt)

    render.show(render.table(
        "each configuration's run with its calls at their price",
        ("config", "tokens", "wall s", "in calls s", "priced s", "verifier s", "outside s",
         "pace", "speedup", "at base pace", "at prices"),
        [(r.config, str(r.tokens), f"{r.wall:.1f}", f"{r.calls:.1f}", opt(r.priced, ".1f"),
          f"{r.verify:.1f}", "-" if r.concurrent else f"{r.outside:.1f}",
          opt(r.pace, ".3f"), opt(speedups.get(r.config, (None, None))[0], ".3f"),
          opt(paced.get(r.config), ".3f"),
          opt(speedups.get(r.config, (None, None))[1], ".3f")) for r in audit.runs],
        justify=("left",) + ("right",) * 10))
    render.dim("pace: measured ÷ priced seconds of the configuration's priced calls (the "
               "slowdown beside the other model priced in); at base pace: the measured "
               "speedup had its calls run at the baseline's pace — the machine's drift "
               "between the configurations' turns taken out")
    render.dim("at prices: the speedup over the target alone had every call taken its price "
               "and all else (verifier, the host between calls) been as measured — between "
               "it and the measured speedup, the price of calls; between it and the "
               "decoder model's prediction (validate), the schedule, step lengths and "
               "acceptance the model drew; '-' where the two models' calls overlapped "
               "(async) or a call was not priced")
    for label, n in audit.unpriced.items():
        render.dim(f"{label}: {n} call(s) not priced (token speculation inside, or no "
                   "shape reported)")
    if audit.unlogged:
        render.dim(f"no calls logged: {', '.join(audit.unlogged)}")


def register(app: typer.Typer) -> None:
    """Add ``decode``, ``validate`` and ``audit-calls`` to the app."""
    app.command("decode")(decode)
    app.command("validate")(validate)
    app.command("audit-calls")(audit_calls)
