"""``specmodel decode`` (the real Lookahead Reasoning decoder) and ``specmodel validate``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from cli.common import (
    CalibrationOpt,
    JsonOut,
    PresetOpt,
    ProgressBar,
    _console,
    _emit_json,
    unescape,
)


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
    branch_temperature: Annotated[float, typer.Option(
        help="Sampling temperature of the extra branches (width > 1).")] = 0.8,
    token_draft: Annotated[str | None, typer.Option(
        help="Token-level draft model inside each step (pack name or folder; on transformers "
             "any tokenizer). Default: n-gram prompt lookup, or what --config names.")] = None,
    target: Annotated[str, typer.Option(help="Target: pack name or model folder.")]
    = "qwen2.5-coder-0.5b",
    draft: Annotated[str, typer.Option(help="Step draft: pack name or model folder.")]
    = "smollm2-135m",
    verifier: Annotated[str, typer.Option(help="exact, embedding or judge.")] = "embedding",
    threshold: Annotated[float, typer.Option(help="embedding: cosine threshold.")] = 0.9,
    judge_model: Annotated[str, typer.Option(help="judge: model.")] = "qwen2.5-coder-0.5b",
    engine: Annotated[str, typer.Option(help="transformers or vllm.")] = "transformers",
    problems: Annotated[int, typer.Option(help="gsm_symbolic problems.")] = 4,
    seed: Annotated[int, typer.Option(help="Problem seed.")] = 0,
    max_steps: Annotated[int, typer.Option(help="Steps per problem at most.")] = 12,
    max_step_tokens: Annotated[int, typer.Option(help="Token cap per step.")] = 48,
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
    """Run Lookahead Reasoning on real models and write a run record."""
    from dataclasses import replace

    from profiler.decoder import DecoderConfig
    from profiler.engines import make_engine
    from profiler.packs import resolve_model
    from profiler.problems import load_problems
    from profiler.runs import run_configurations
    from profiler.verifiers import make_verifier
    from specmodel.formats.calibration import resolve_calibration

    overrides: dict[str, Any] = {"max_steps": max_steps, "max_step_tokens": max_step_tokens,
                                 "branch_temperature": branch_temperature}
    for name, value in (("mode", mode), ("k1", k1), ("k2", k2), ("width", width)):
        if value is not None:
            overrides[name] = value
    if delimiter is not None:
        overrides["delimiter"] = unescape(delimiter)
    if token_draft is not None:
        overrides.update(token_method="draft_model", token_draft_model=token_draft)
    if config is not None:
        from specmodel.formats.jsonio import read_json_file

        cfg = DecoderConfig.from_export(read_json_file(config, "config file"), **overrides)
    else:
        cfg = DecoderConfig(**overrides)
    if cfg.token_method == "draft_model" and cfg.k2 > 1 and cfg.token_draft_model:
        cfg = replace(cfg, token_draft_model=str(resolve_model(cfg.token_draft_model)))
    cal = None
    if calibration is not None or preset is not None:
        cal = resolve_calibration(calibration, preset)
    probs = load_problems(problems, seed)
    con = _console()
    tgt = make_engine(engine, resolve_model(target), threads=threads, delimiter=cfg.delimiter)
    drf = ver = None
    if cfg.k1 > 1:
        drf = make_engine(engine, resolve_model(draft), threads=threads, delimiter=cfg.delimiter)
        ver = make_verifier(verifier, threshold=threshold, judge_model=judge_model,
                            threads=threads)
    with ProgressBar() as bar:
        record = run_configurations(
            tgt, drf, ver, [cfg], probs, output,
            models={"target": target, "draft": draft if drf else "",
                    "verifier": ver.name if ver else ""},
            settings={"dataset": "gsm_symbolic", "problems": problems, "seed": seed,
                      "threads": threads, "engine": engine, "config_file": str(config or "")},
            calibration=cal, include_baseline=baseline, resume=resume, progress=bar,
        )
    rows = [{"config": c.label, **c.totals.model_dump()} for c in record.configs]
    base = next((c for c in record.configs if c.label == record.baseline), None)
    for r in rows:
        r["speedup"] = (r["tokens_per_second"] / base.totals.tokens_per_second
                        if base and base.totals.tokens_per_second > 0 else None)
    if json_out:
        _emit_json(rows)
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


def validate(
    run_record: Annotated[Path, typer.Argument(help="Run record from `specmodel decode`.")],
    calibration: CalibrationOpt = None,
    preset: PresetOpt = None,
    json_out: JsonOut = False,
) -> None:
    """Predicted against measured speedup for every configuration of a run record."""
    from specmodel.formats.calibration import resolve_calibration
    from specmodel.formats.run_record import calibration_mismatches, compare, load_run_record

    record = load_run_record(run_record)
    cal = None
    if calibration is not None or preset is not None:
        cal = resolve_calibration(calibration, preset)
    elif record.calibration is None:
        raise ValueError(
            "the run record carries no calibration: pass --calibration or --preset"
        )
    rows = compare(record, cal)
    if json_out:
        _emit_json([r.model_dump() for r in rows])
        return
    from rich.table import Table

    used = (cal or record.calibration).name  # type: ignore[union-attr]
    t = Table(title=f"{run_record.name}: predicted ({used}) vs measured speedup")
    for col in ("config", "predicted", "measured", "error", "priced", "priced err",
                "α1 run", "acc"):
        t.add_column(col, justify="left" if col == "config" else "right", no_wrap=True)

    def fmt(v: float | None, pct: bool = False) -> str:
        if v is None:
            return "-"
        return f"{v:+.1%}" if pct else f"{v:.3f}"

    for r in rows:
        t.add_row(r.config, fmt(r.predicted_speedup), fmt(r.measured_speedup),
                  fmt(r.error, True), fmt(r.predicted_priced), fmt(r.priced_error, True),
                  fmt(r.step_acceptance), f"{r.accuracy:.2f}")
    con = _console()
    con.print(t)
    con.print("[dim]predicted: the papers' f(k1)·g(k2); priced: the same priced by the "
              "calibration's T(b); error = predicted/measured − 1; α1 run: accepted/judged "
              "draft steps in this run; acc: final-answer accuracy[/dim]")
    m = record.machine
    con.print(f"[dim]measured {record.created} on {m.get('cpu', '?')} ({m.get('cores', '?')} "
              f"cores), engine {record.engine}, models {record.models}[/dim]")
    for line in calibration_mismatches(record, cal):
        con.print(f"[yellow]note: {line}; the prediction uses the calibration's figures.[/yellow]")


def register(app: typer.Typer) -> None:
    """Add ``decode`` and ``validate`` to the app."""
    app.command("decode")(decode)
    app.command("validate")(validate)
