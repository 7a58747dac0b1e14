"""``specmodel decode`` (the real Lookahead Reasoning decoder) and ``specmodel validate``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from cli.common import CalibrationOpt, JsonOut, PresetOpt, unescape
from cli.render import ProgressBar, console, emit_json


def decode(
    config: Annotated[
        Path | None, typer.Option("--config", help="The file `specmodel export` wrote.")
    ] = None,
    mode: Annotated[str | None, typer.Option(help="sync or async (overrides --config).")] = None,
    k1: Annotated[int | None, typer.Option(help="Target steps in parallel (draft steps + 1).")]
    = None,
    k2: Annotated[int | None, typer.Option(help="Token positions per pass (draft tokens + 1).")]
    = None,
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
    engine: Annotated[str, typer.Option(help="transformers or vllm.")] = "transformers",
    problems: Annotated[int, typer.Option(help="gsm_symbolic problems.")] = 4,
    seed: Annotated[int, typer.Option(help="Problem seed.")] = 0,
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
    json_out: JsonOut = False,
) -> None:
    """Run Lookahead Reasoning on real models and write a run record.

    The configuration is the export file's (``--config``) or the defaults; every option
    given on the command line overrides its field, the verifier included.
    """
    from profiler.engines import make_engine
    from profiler.packs import resolve_model
    from profiler.problems import load_problems
    from profiler.runs import run_configurations
    from profiler.verifiers import make_verifier
    from specmodel.config import SpecConfig
    from specmodel.formats.calibration import resolve_calibration
    from specmodel.formats.run_record import RunSettings

    cfg = SpecConfig()
    if config is not None:
        from specmodel.formats.export import load_export

        cfg = load_export(config).config
    changes: dict[str, Any] = {}
    for name, value in (("mode", mode), ("k1", k1), ("k2", k2), ("width", width),
                        ("branch_temperature", branch_temperature), ("max_steps", max_steps),
                        ("max_step_tokens", max_step_tokens)):
        if value is not None:
            changes[name] = value
    if delimiter is not None:
        changes["step_delimiter"] = unescape(delimiter)
    if token_draft is not None:
        changes["token"] = {"method": "draft_model", "model": token_draft}
    ver_changes: dict[str, Any] = {}
    if verifier is not None and verifier != cfg.verifier.kind:
        ver_changes.update(kind=verifier, model=None)  # the old kind's model does not carry
    if threshold is not None:
        ver_changes["threshold"] = threshold
    if judge_model is not None and ver_changes.get("kind", cfg.verifier.kind) == "judge":
        ver_changes["model"] = judge_model
    if ver_changes:
        changes["verifier"] = ver_changes
    if changes:
        cfg = cfg.replace(**changes)
    if cfg.k2 > 1 and cfg.token.method == "draft_model" and cfg.token.model:
        cfg = cfg.replace(token={"model": str(resolve_model(cfg.token.model))})
    cal = None
    if calibration is not None or preset is not None:
        cal = resolve_calibration(calibration, preset)
    if cfg.k1 > 1:
        from profiler.calibrate import check_distinct_models

        check_distinct_models(target, draft)
    from cli.interrupt import saving
    from specmodel.formats.lock import WriteLock

    # The record is locked before any model loads: a second writer is refused at once.
    with WriteLock(output), saving(lambda: _decode_saved(output)):
        probs = load_problems(problems, seed)
        tgt = make_engine(engine, resolve_model(target), threads=threads,
                          delimiter=cfg.step_delimiter)
        drf = ver = None
        if cfg.k1 > 1:
            drf = make_engine(engine, resolve_model(draft), threads=threads,
                              delimiter=cfg.step_delimiter)
            ver = make_verifier(cfg.verifier, threads=threads)
        with _LazyBar() as bar:
            record = run_configurations(
                tgt, drf, ver, [cfg], probs, output,
                models={"target": target, "draft": draft if drf else "",
                        "verifier": ver.name if ver else ""},
                settings=RunSettings(problems=problems, seed=seed, threads=threads,
                                     engine=engine, max_steps=cfg.max_steps,
                                     max_step_tokens=cfg.max_step_tokens,
                                     delimiter=cfg.step_delimiter,
                                     config_file=str(config) if config is not None else None),
                calibration=cal, include_baseline=baseline, resume=resume, progress=bar,
            )
    con = console()
    rows = [{"config": c.label, **c.totals.model_dump()} for c in record.configs]
    base = next((c for c in record.configs if c.label == record.baseline), None)
    for r in rows:
        r["speedup"] = (r["tokens_per_second"] / base.totals.tokens_per_second
                        if base and base.totals.tokens_per_second > 0 else None)
    if json_out:
        emit_json(rows)
        return
    from rich.table import Table

    t = Table(title=f"decode: {problems} gsm_symbolic problems (seed {seed}), {engine}")
    for col in ("config", "tokens", "seconds", "tokens/s", "speedup", "α1 run", "accuracy"):
        t.add_column(col, justify="left" if col == "config" else "right", no_wrap=True)
    for r in rows:
        acc = r["step_acceptance"]
        t.add_row(r["config"], str(r["output_tokens"]), f"{r['seconds']:.1f}",
                  f"{r['tokens_per_second']:.2f}",
                  "-" if r["speedup"] is None else f"{r['speedup']:.3f}",
                  "-" if acc is None else f"{acc:.2f}", f"{r['accuracy']:.2f}")
    con.print(t)
    con.print(f"wrote {output}")


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


def _decode_saved(output: Path) -> str:
    """The interrupt line of ``decode``: the configurations saved and how to go on."""
    from specmodel.formats.run_record import load_run_record

    try:
        labels = [c.label for c in load_run_record(output).configs] if output.is_file() else []
    except ValueError:
        labels = []
    held = (f"{output} holds the finished configurations ({', '.join(labels)})" if labels
            else f"no configuration finished ({output} holds none of this run)")
    return f"{held}; run the same command with --resume to continue"


def validate(
    run_record: Annotated[Path, typer.Argument(help="Run record from `specmodel decode`.")],
    calibration: CalibrationOpt = None,
    preset: PresetOpt = None,
    json_out: JsonOut = False,
) -> None:
    """Predicted against measured speedup for every configuration of a run record."""
    from cli import render
    from specmodel.errors import SpecmodelError
    from specmodel.formats.calibration import resolve_calibration
    from specmodel.formats.run_record import load_run_record
    from specmodel.prediction import calibration_mismatches, compare

    record = load_run_record(run_record)
    cal = None
    if calibration is not None or preset is not None:
        cal = resolve_calibration(calibration, preset)
    elif record.calibration is None:
        raise SpecmodelError(
            "the run record carries no calibration: pass --calibration or --preset"
        )
    rows = compare(record, cal)
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
              else ms(r.config, r.predicted_priced)} for r in rows]
    if json_out:
        render.emit_json([{**r.model_dump(), **t} for r, t in zip(rows, times, strict=True)])
        return

    def fmt(v: float | None, pct: bool = False) -> str:
        if v is None:
            return "-"
        return f"{v:+.1%}" if pct else f"{v:.3f}"

    used = (cal or record.calibration).name  # type: ignore[union-attr]
    render.show(render.table(
        f"{run_record.name}: predicted ({used}) vs measured speedup",
        ("config", "predicted", "measured", "error", "priced", "priced err", "α1 run", "acc"),
        [(r.config, fmt(r.predicted_speedup), fmt(r.measured_speedup), fmt(r.error, True),
          fmt(r.predicted_priced), fmt(r.priced_error, True), fmt(r.step_acceptance),
          f"{r.accuracy:.2f}") for r in rows],
        justify=("left",) + ("right",) * 7, no_wrap=True))
    if base_ms is not None:
        render.show(render.table(
            "ms per generated token (one request at a time)",
            ("config", "measured", "predicted", "priced"),
            [(r.config, *("-" if t[k] is None else f"{t[k]:.1f}" for k in
                          ("measured_ms_per_token", "predicted_ms_per_token",
                           "priced_ms_per_token"))) for r, t in zip(rows, times, strict=True)],
            justify=("left", "right", "right", "right"), no_wrap=True))
    render.dim("speedup = the target alone's time per generated token ÷ the configuration's, "
               "one request at a time; predicted ms/token = the target's measured ms/token "
               "÷ the predicted speedup")
    render.dim("predicted: the papers' f(k1)·g(k2); priced: the same priced by the "
               "calibration's T(b); error = predicted/measured − 1; α1 run: accepted/judged "
               "draft steps in this run; acc: final-answer accuracy")
    m = record.machine
    cpu, cores = (m.cpu, m.cores) if m is not None else ("?", "?")
    render.dim(f"measured {record.created} on {cpu} ({cores} "
               f"cores), engine {record.engine}, models {record.models}")
    for line in calibration_mismatches(record, cal):
        render.line(f"[yellow]note: {line}; the prediction uses the calibration's "
                    "figures.[/yellow]")


def register(app: typer.Typer) -> None:
    """Add ``decode`` and ``validate`` to the app."""
    app.command("decode")(decode)
    app.command("validate")(validate)
