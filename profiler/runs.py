"""Run the decoder over configurations and write a run record as it goes.

Shared by ``specmodel decode`` and ``benchmarks/bench_decoder.py``.  The record
(:class:`specmodel.formats.run_record.RunRecord`) is rewritten atomically after every
configuration, so an interrupted run keeps what it measured and ``resume=True``
skips the configurations already in the file.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from profiler.decoder import DecoderConfig, LookaheadDecoder, totals
from profiler.engines import Engine
from profiler.environment import machine_description, package_versions
from profiler.problems import Problem
from profiler.verifiers import Verifier
from specmodel.formats.calibration import Calibration
from specmodel.formats.run_record import RUN_SCHEMA_VERSION, RunRecord, load_run_record

__all__ = ["BASELINE", "run_configurations", "save_run_record"]

BASELINE = DecoderConfig(k1=1, k2=1)
"""Target-only step-by-step greedy decoding: speedup 1 by definition."""


def save_run_record(record: dict[str, Any], path: str | Path) -> Path:
    """Write ``record`` as JSON atomically (temp file in the same folder, then rename)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=p.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(record, indent=1) + "\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return p


def run_configurations(
    target: Engine,
    draft: Engine | None,
    verifier: Verifier | None,
    configs: Sequence[DecoderConfig],
    problems: Sequence[Problem],
    record_path: str | Path,
    *,
    models: dict[str, str],
    settings: dict[str, Any],
    calibration: Calibration | None = None,
    optimizer: dict[str, Any] | None = None,
    include_baseline: bool = True,
    resume: bool = False,
    progress: Callable[[int, int, str], None] | None = None,
) -> RunRecord:
    """Decode ``problems`` with every configuration (the target-only baseline first).

    ``progress(done, total, message)`` is called after every problem, counting
    over all configurations.
    """
    if not configs and not include_baseline:
        raise ValueError("configs must not be empty")
    if not problems:
        raise ValueError("problems must not be empty")
    todo = list(configs)
    if include_baseline and all(c.label != BASELINE.label for c in todo):
        base = configs[0] if configs else BASELINE
        todo.insert(0, DecoderConfig(k1=1, k2=1, max_step_tokens=base.max_step_tokens,
                                     max_steps=base.max_steps, delimiter=base.delimiter))
    labels = [c.label for c in todo]
    if len(set(labels)) != len(labels):
        raise ValueError(f"configs must be distinct, got {labels}")
    done: list[dict[str, Any]] = []
    path = Path(record_path)
    if resume and path.is_file():
        old = load_run_record(path)
        done = [c.model_dump() for c in old.configs if c.label in labels]
    finished = {c["label"] for c in done}
    record: dict[str, Any] = {
        "schema_version": RUN_SCHEMA_VERSION,
        "kind": "specmodel-run",
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine_description(),
        "versions": package_versions(),
        "models": models,
        "engine": f"{target.name}",
        "settings": settings,
        "calibration": calibration.model_dump(exclude_none=True) if calibration else None,
        "baseline": BASELINE.label,
        "configs": done,
        "optimizer": optimizer,
    }
    total = len(todo) * len(problems)
    count = len(finished) * len(problems)
    for cfg in todo:
        if cfg.label in finished:
            continue
        dec = LookaheadDecoder.for_config(target, draft if cfg.k1 > 1 else None,
                                          verifier if cfg.k1 > 1 else None, cfg)
        runs = []
        for p in problems:
            runs.append(dec.decode(p))
            count += 1
            if progress is not None:
                r = runs[-1]
                progress(count, total, f"{cfg.label}: problem {p.index}, {r.output_tokens} "
                         f"tokens in {r.seconds:.1f} s")
        record["configs"].append({
            "label": cfg.label,
            "config": asdict(cfg),
            "totals": asdict(totals(runs)),
            "problems": [asdict(r) for r in runs],
        })
        record["configs"].sort(key=lambda c: labels.index(c["label"]))
        save_run_record(record, path)
    return RunRecord.model_validate(record)
