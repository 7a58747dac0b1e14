"""``specmodel profile``: measure on real models and write a calibration."""

from __future__ import annotations

import platform
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from cli.common import CalibrationOpt, PresetOpt, _console

profile_app = typer.Typer(help="Measure c, α and T(b) on real models.", no_args_is_help=True)


@profile_app.command("batch-cost")
def batch_cost(
    model: Annotated[str, typer.Option(help="Pack name or local model folder (the target).")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Calibration file to write.")],
    engine: Annotated[str, typer.Option(help="transformers or vllm.")] = "transformers",
    widths: Annotated[str, typer.Option(help="Comma-separated batch widths.")] = "1,2,4,8,16",
    tokens: Annotated[int, typer.Option(help="Decode steps timed per repeat.")] = 16,
    repeats: Annotated[int, typer.Option(help="Timed repeats per width.")] = 3,
    threads: Annotated[int, typer.Option(help="CPU threads (transformers).")] = 1,
    calibration: CalibrationOpt = None,
    preset: PresetOpt = None,
) -> None:
    """Measure the target's T(b) and write it into a copy of a calibration."""
    from profiler.batch_cost import batch_cost_section, measure_batch_cost
    from profiler.packs import resolve_model
    from specmodel.calibration import Calibration, resolve_calibration, save_calibration

    try:
        ws = [int(w) for w in widths.split(",") if w.strip()]
    except ValueError as e:
        raise ValueError(f"widths must be comma-separated integers, got {widths!r}") from e
    base = resolve_calibration(calibration, preset)
    path = resolve_model(model)
    con = _console()
    timings = measure_batch_cost(path, engine=engine, widths=ws, tokens=tokens,
                                 repeats=repeats, threads=threads,
                                 progress=lambda m: con.print(f"[dim]{m}[/dim]"))
    data = base.model_dump(exclude_none=True)
    data["name"] = f"{base.name}+batch-cost"
    data["batch_cost"] = batch_cost_section(timings)
    prov = data["provenance"]
    machine = f"{platform.machine()} {platform.processor() or ''}".strip()
    prov["description"] += (
        f" batch_cost: T(b) measured by `specmodel profile batch-cost` on {model} with "
        f"{engine}, {tokens} decode steps x {repeats} repeats per width, {threads} thread(s)."
    )
    prov["date"] = datetime.now(UTC).date().isoformat()
    prov.setdefault("settings", {})["batch_cost"] = {"model": model, "engine": engine,
                                                     "tokens": tokens, "repeats": repeats,
                                                     "threads": threads, "machine": machine}
    save_calibration(Calibration.model_validate(data), output)
    con.print(f"wrote {output}")


@profile_app.command("steps")
def steps(
    target: Annotated[str, typer.Option(help="Target model: pack name or local folder.")],
    draft: Annotated[str, typer.Option(help="Draft model: pack name or local folder.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Calibration file to write.")],
    record: Annotated[
        Path | None, typer.Option(help="JSONL record of every pair (default: OUTPUT.pairs.jsonl).")
    ] = None,
    verifier: Annotated[str, typer.Option(help="exact, embedding or judge.")] = "embedding",
    threshold: Annotated[float, typer.Option(help="embedding: cosine threshold.")] = 0.9,
    judge_model: Annotated[str, typer.Option(help="judge: model.")] = "qwen2.5-coder-0.5b",
    problems: Annotated[int, typer.Option(help="gsm_symbolic problems.")] = 8,
    seed: Annotated[int, typer.Option(help="Problem seed.")] = 0,
    steps_per_problem: Annotated[int, typer.Option(help="Target steps per problem.")] = 4,
    max_step_tokens: Annotated[int, typer.Option(help="Token cap per step.")] = 48,
    threads: Annotated[int, typer.Option(help="CPU threads per model.")] = 1,
    delimiter: Annotated[
        str, typer.Option(help="Text that ends a step (escapes like \\n are decoded).")
    ] = "\\n\\n",
    resume: Annotated[bool, typer.Option(help="Continue an interrupted run.")] = False,
    calibration: CalibrationOpt = None,
    preset: PresetOpt = None,
) -> None:
    """Measure α1, c1, the verifier's cost and step lengths; write them into a calibration."""
    from profiler.engines import HFEngine
    from profiler.packs import resolve_model
    from profiler.problems import load_problems
    from profiler.step_profile import profile_steps, summarize
    from profiler.verifiers import EmbeddingVerifier, ExactMatch, JudgeVerifier
    from specmodel.calibration import Calibration, resolve_calibration, save_calibration

    base = resolve_calibration(calibration, preset)
    if verifier == "exact":
        ver: object = ExactMatch()
    elif verifier == "embedding":
        ver = EmbeddingVerifier(resolve_model("minilm-l6-v2"), threshold=threshold,
                                threads=threads)
    elif verifier == "judge":
        ver = JudgeVerifier(resolve_model(judge_model), threads=threads)
    else:
        raise ValueError(f"verifier must be exact, embedding or judge, got {verifier!r}")
    con = _console()
    delim = delimiter.encode().decode("unicode_escape")
    tgt = HFEngine(resolve_model(target), threads=threads, delimiter=delim)
    drf = HFEngine(resolve_model(draft), threads=threads, delimiter=delim)
    rec = record or output.with_suffix(".pairs.jsonl")
    pairs = profile_steps(tgt, drf, ver, load_problems(problems, seed), rec,
                          steps_per_problem=steps_per_problem, max_step_tokens=max_step_tokens,
                          resume=resume, progress=lambda m: con.print(f"[dim]{m}[/dim]"))
    summary = summarize(pairs)
    data = base.model_dump(exclude_none=True)
    data["name"] = f"measured-{Path(str(target)).name}-{Path(str(draft)).name}"
    data["step"] = summary.step_section(ver.name)
    prov = data["provenance"]
    prov["description"] = (
        f"step: measured by `specmodel profile steps` (transformers, greedy, {threads} "
        f"thread(s)) on {summary.pairs} target/draft step pairs from {problems} gsm_symbolic "
        f"problems (seed {seed}); alpha1 = ({summary.accepted} + 0.5)/({summary.pairs} + 1), "
        f"Wilson 95% CI of the raw rate {summary.alpha1_ci95[0]:.3f}-{summary.alpha1_ci95[1]:.3f}; "
        f"c1 = {summary.c1:.4f} +/- {summary.c1_stderr:.4f}. token: from {base.name} "
        f"({base.provenance.source}), not measured in this run. " + prov["description"]
    )
    prov["source"] = "measured" if base.provenance.source == "measured" else prov["source"]
    prov["models"] = {"target": target, "draft": draft, "verifier": ver.name}
    prov["engine"] = "transformers"
    prov["date"] = datetime.now(UTC).date().isoformat()
    prov.setdefault("settings", {})["steps"] = {
        "problems": problems, "seed": seed, "steps_per_problem": steps_per_problem,
        "max_step_tokens": max_step_tokens, "threads": threads, "record": str(rec),
        "delimiter": delim,
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
    }
    save_calibration(Calibration.model_validate(data), output)
    con.print(f"α1 = {summary.alpha1:.3f} (raw {summary.accepted}/{summary.pairs}), "
              f"c1 = {summary.c1:.3f} ± {summary.c1_stderr:.3f}; wrote {output}")


@profile_app.command("tokens")
def tokens(
    model: Annotated[str, typer.Option(help="Target model: pack name or local folder.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Calibration file to write.")],
    problems: Annotated[int, typer.Option(help="gsm_symbolic problems used as prompts.")] = 8,
    seed: Annotated[int, typer.Option(help="Problem seed.")] = 0,
    max_tokens: Annotated[int, typer.Option(help="Tokens decoded per prompt.")] = 96,
    num_speculative_tokens: Annotated[int, typer.Option(help="γ, draft tokens.")] = 4,
    prompt_lookup_min: Annotated[int, typer.Option(help="n-gram: shortest match.")] = 1,
    prompt_lookup_max: Annotated[int, typer.Option(help="n-gram: longest match.")] = 3,
    engine: Annotated[
        str, typer.Option(help="vllm (its spec-decode counters) or transformers (exact replay).")
    ] = "vllm",
    threads: Annotated[int, typer.Option(help="CPU threads (transformers).")] = 1,
    calibration: CalibrationOpt = None,
    preset: PresetOpt = None,
) -> None:
    """Measure n-gram speculation (α2, by position, effective c2) into a calibration."""
    import json

    from profiler.packs import resolve_model
    from profiler.problems import format_prompt, load_problems
    from profiler.token_profile import measure_token_speculation
    from specmodel.calibration import Calibration, resolve_calibration, save_calibration

    base = resolve_calibration(calibration, preset)
    prompts = [format_prompt(p) for p in load_problems(problems, seed)]
    if engine == "vllm":
        summary, record = measure_token_speculation(
            str(resolve_model(model)), prompts, gamma=num_speculative_tokens,
            prompt_lookup_min=prompt_lookup_min, prompt_lookup_max=prompt_lookup_max,
            max_tokens=max_tokens)
    elif engine == "transformers":
        from profiler.engines import HFEngine
        from profiler.ngram_replay import measure_hf_token_speculation

        summary, record = measure_hf_token_speculation(
            HFEngine(resolve_model(model), threads=threads), prompts,
            gamma=num_speculative_tokens, prompt_lookup_max=prompt_lookup_max,
            max_tokens=max_tokens)
    else:
        raise ValueError(f"engine must be vllm or transformers, got {engine!r}")
    if not all(record["outputs_identical"]):
        raise ValueError("speculative and plain greedy outputs differ: the engine is not lossless")
    data = base.model_dump(exclude_none=True)
    data["name"] = f"{base.name}+tokens-{Path(model).name}"
    data["token"] = summary.token_section(prompt_lookup_min, prompt_lookup_max)
    prov = data["provenance"]
    prov["description"] = (
        f"token: measured by `specmodel profile tokens` on {model} with {engine} n-gram "
        f"speculation (γ = {num_speculative_tokens}, lookup {prompt_lookup_min}-"
        f"{prompt_lookup_max}) over {len(prompts)} gsm_symbolic prompts x {max_tokens} tokens: "
        f"{summary.accepted_tokens}/{summary.draft_tokens} draft tokens accepted in "
        f"{summary.drafts} drafts; alpha2 = {summary.alpha2:.4f} (i.i.d. fit), per position "
        f"{[round(r, 3) for r in summary.conditional_acceptance]}; measured speedup "
        f"{summary.speedup:.3f}x gives the effective c2 = {summary.c2:.4f}. " + prov["description"]
    )
    prov["date"] = datetime.now(UTC).date().isoformat()
    prov.setdefault("settings", {})["tokens"] = json.loads(json.dumps(record))
    save_calibration(Calibration.model_validate(data), output)
    _console().print(f"α2 = {summary.alpha2:.3f}, speedup {summary.speedup:.3f}x, "
                     f"c2 = {summary.c2:.3f}; wrote {output}")


def register(app: typer.Typer) -> None:
    """Add ``profile`` to the app."""
    app.add_typer(profile_app, name="profile")
