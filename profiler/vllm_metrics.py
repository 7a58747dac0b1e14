"""Token-level calibration from a running vLLM server's Prometheus metrics.

``vllm serve`` (or ``python -m vllm.entrypoints.openai.api_server``) with a
``speculative_config`` exposes cumulative spec-decode counters at ``/metrics``:

* ``vllm:spec_decode_num_drafts_total`` — iterations that proposed a draft;
* ``vllm:spec_decode_num_draft_tokens_total`` — draft tokens proposed;
* ``vllm:spec_decode_num_accepted_tokens_total`` — draft tokens accepted;
* ``vllm:spec_decode_num_accepted_tokens_per_pos_total{position="i"}`` — marginal
  counts: position i is counted when positions 0..i were all accepted, so the
  conditional acceptance at i is ``count[i] / count[i − 1]`` (``count[−1]`` = drafts).

The exposition text is parsed by ``prometheus_client``'s parser
(:func:`prometheus_client.parser.text_string_to_metric_families`; a dependency of
vLLM, imported inside :func:`parse_scrape`), series of several engines (data
parallel) are summed, and the ``model_name`` label is kept.  Two scrapes give the
traffic between them (:func:`counter_delta`); one scrape gives everything since the
server started.  The numbers come from :mod:`specmodel.stats`
(:func:`~specmodel.stats.summarize_counters`, :func:`~specmodel.stats.wilson`) and
become a calibration's ``token`` section (:func:`metrics_calibration`).  Counters
measure acceptance only: c2 (draft cost) needs timings, so it is kept from the base
calibration (or given), and the provenance says so.

The I/O (:func:`read_scrape`: a URL with a timeout, or a saved file) is apart from
the pure parts (:func:`parse_scrape`, :func:`counter_delta`, :func:`metrics_calibration`).
"""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from specmodel.errors import SpecmodelError

__all__ = [
    "METRIC_PREFIX",
    "MetricsProfile",
    "SpecDecodeScrape",
    "counter_delta",
    "is_url",
    "metrics_calibration",
    "metrics_url",
    "parse_scrape",
    "profile_vllm_metrics",
    "read_scrape",
    "save_scrape",
]

METRIC_PREFIX = "vllm:spec_decode_"
"""Prefix of vLLM's spec-decode metric families."""
_DRAFTS = "vllm:spec_decode_num_drafts"
_DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens"
_ACCEPTED = "vllm:spec_decode_num_accepted_tokens"
_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos"
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


@dataclass(frozen=True)
class SpecDecodeScrape:
    """vLLM's cumulative spec-decode counters in one scrape (or the difference of two)."""

    num_drafts: int
    """Iterations that proposed a draft."""
    num_draft_tokens: int
    """Draft tokens proposed."""
    num_accepted_tokens: int
    """Draft tokens accepted."""
    num_accepted_tokens_per_pos: list[int]
    """Marginal accepted counts at draft positions 0, 1, … (one per position the server
    reports, i.e. its num_speculative_tokens)."""
    model_name: str | None
    """The ``model_name`` label of the series (None when the server sets none)."""
    origin: str
    """Where the counters were read: the URL or the file (for a delta: 'BEFORE → AFTER')."""

    def counters(self) -> dict[str, Any]:
        """The counters under vLLM's names, as :func:`specmodel.stats.summarize_counters` and
        :class:`specmodel.formats.calibration.SpecDecodeCounters` take them."""
        return {"num_drafts": self.num_drafts, "num_draft_tokens": self.num_draft_tokens,
                "num_accepted_tokens": self.num_accepted_tokens,
                "num_accepted_tokens_per_pos": list(self.num_accepted_tokens_per_pos)}


def is_url(source: str) -> bool:
    """Whether ``source`` is an http(s) URL (else it names a saved scrape file)."""
    return source.startswith(("http://", "https://"))


def metrics_url(url: str) -> str:
    """The metrics URL of a server: ``url`` itself when it has a path, else ``url/metrics``."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"url must be an http(s) URL such as http://127.0.0.1:8000, got {url!r}")
    if parts.path in ("", "/"):
        return urllib.parse.urlunsplit(parts._replace(path="/metrics"))
    return url


def read_scrape(source: str | Path, *, timeout: float = 10.0) -> str:
    """The exposition text of a server's ``/metrics`` (``source`` an http(s) URL, read with
    ``timeout`` seconds) or of a saved scrape file.  Failures are one-line
    :class:`~specmodel.errors.SpecmodelError`."""
    text_source = str(source)
    if is_url(text_source):
        url = metrics_url(text_source)
        if timeout <= 0:
            raise ValueError(f"timeout must be > 0, got {timeout}")
        try:
            with urllib.request.urlopen(url, timeout=timeout) as r:
                return str(r.read().decode("utf-8", errors="replace"))
        except urllib.error.HTTPError as e:
            raise SpecmodelError(f"cannot read {url}: HTTP {e.code} {e.reason}") from e
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise SpecmodelError(f"cannot read {url}: {reason} (is the vLLM server running "
                                 "there?)") from e
    path = Path(text_source)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError as e:
        raise SpecmodelError(f"scrape file {path} does not exist (give a saved /metrics "
                             "scrape or an http:// URL)") from e
    except (OSError, UnicodeDecodeError) as e:
        raise SpecmodelError(f"cannot read scrape file {path}: {e}") from e


def _count(value: float, what: str, origin: str) -> int:
    if not value >= 0 or value != value or value == float("inf"):
        raise SpecmodelError(f"{origin}: {what} must be a finite count >= 0, got {value}")
    return round(value)


def parse_scrape(text: str, origin: str = "scrape", *,
                 model_name: str | None = None) -> SpecDecodeScrape:
    """The spec-decode counters in Prometheus exposition ``text`` (parsed by
    ``prometheus_client``).  Series of several engines are summed; ``model_name`` keeps
    only that model's series (needed when the server reports several).  Raises a
    one-line :class:`~specmodel.errors.SpecmodelError` for text that is not an exposition,
    has no vLLM metrics, or has no spec-decode counters (a server without speculation)."""
    from prometheus_client.parser import text_string_to_metric_families

    totals: dict[str, float] = {}
    per_pos: dict[int, float] = {}
    models: set[str] = set()
    seen_vllm = False
    try:
        families = list(text_string_to_metric_families(text))
    except (ValueError, TypeError, IndexError) as e:
        raise SpecmodelError(f"{origin}: not Prometheus exposition text ({e})") from e
    for fam in families:
        seen_vllm = seen_vllm or fam.name.startswith("vllm:")
        if fam.name not in (_DRAFTS, _DRAFT_TOKENS, _ACCEPTED, _PER_POS):
            continue
        for s in fam.samples:
            if not s.name.endswith("_total"):
                continue  # the _created samples of a counter
            label = s.labels.get("model_name")
            if model_name is not None and label != model_name:
                continue
            if label is not None:
                models.add(label)
            if fam.name == _PER_POS:
                try:
                    pos = int(s.labels["position"])
                except (KeyError, ValueError) as e:
                    raise SpecmodelError(f"{origin}: {s.name} without an integer position "
                                         f"label: {s.labels}") from e
                per_pos[pos] = per_pos.get(pos, 0.0) + s.value
            else:
                totals[fam.name] = totals.get(fam.name, 0.0) + s.value
    if not seen_vllm:
        raise SpecmodelError(f"{origin}: no vllm: metrics (is this a vLLM server's /metrics?)")
    if model_name is not None and not models:
        raise SpecmodelError(f"{origin}: no spec-decode series for model_name {model_name!r}")
    missing = [n for n in (_DRAFTS, _DRAFT_TOKENS, _ACCEPTED) if n not in totals]
    if missing:
        raise SpecmodelError(f"{origin}: no {missing[0]}_total: the server runs without "
                             "speculative decoding (start it with --speculative-config)")
    if len(models) > 1:
        raise SpecmodelError(f"{origin}: spec-decode counters of several models "
                             f"({', '.join(sorted(models))}); choose one with model_name")
    if per_pos and sorted(per_pos) != list(range(len(per_pos))):
        raise SpecmodelError(f"{origin}: per-position counts must cover positions 0.."
                             f"{len(per_pos) - 1}, got {sorted(per_pos)}")
    return SpecDecodeScrape(
        num_drafts=_count(totals[_DRAFTS], "num_drafts", origin),
        num_draft_tokens=_count(totals[_DRAFT_TOKENS], "num_draft_tokens", origin),
        num_accepted_tokens=_count(totals[_ACCEPTED], "num_accepted_tokens", origin),
        num_accepted_tokens_per_pos=[_count(per_pos[i], f"position {i}", origin)
                                     for i in range(len(per_pos))],
        model_name=next(iter(models)) if models else None,
        origin=origin,
    )


def counter_delta(after: SpecDecodeScrape, before: SpecDecodeScrape) -> SpecDecodeScrape:
    """What the counters grew by from ``before`` to ``after`` (the traffic between two
    scrapes of one server).  A counter that decreased means the server restarted between
    them, and a different model or number of positions means another server: both are
    one-line :class:`~specmodel.errors.SpecmodelError`."""
    where = f"{before.origin} → {after.origin}"
    if before.model_name != after.model_name:
        raise SpecmodelError(f"{where}: the scrapes are of different models "
                             f"({before.model_name!r}, then {after.model_name!r})")
    if len(before.num_accepted_tokens_per_pos) != len(after.num_accepted_tokens_per_pos):
        raise SpecmodelError(
            f"{where}: the scrapes report {len(before.num_accepted_tokens_per_pos)} and "
            f"{len(after.num_accepted_tokens_per_pos)} draft positions (another server?)")
    pairs = [("num_drafts", after.num_drafts, before.num_drafts),
             ("num_draft_tokens", after.num_draft_tokens, before.num_draft_tokens),
             ("num_accepted_tokens", after.num_accepted_tokens, before.num_accepted_tokens)]
    pairs += [(f"position {i}", a, b) for i, (a, b) in enumerate(
        zip(after.num_accepted_tokens_per_pos, before.num_accepted_tokens_per_pos, strict=True))]
    for name, a, b in pairs:
        if a < b:
            raise SpecmodelError(f"{where}: {name} fell from {b} to {a}: the server restarted "
                                 "between the scrapes (or they are in the wrong order)")
    return SpecDecodeScrape(
        num_drafts=after.num_drafts - before.num_drafts,
        num_draft_tokens=after.num_draft_tokens - before.num_draft_tokens,
        num_accepted_tokens=after.num_accepted_tokens - before.num_accepted_tokens,
        num_accepted_tokens_per_pos=[a - b for a, b in zip(
            after.num_accepted_tokens_per_pos, before.num_accepted_tokens_per_pos, strict=True)],
        model_name=after.model_name,
        origin=where,
    )


@dataclass(frozen=True)
class MetricsProfile:
    """A calibration profiled from a vLLM server's counters, with what it rests on."""

    calibration: Any
    """The :class:`specmodel.formats.calibration.Calibration` written."""
    counters: SpecDecodeScrape
    """The counters it was computed from (a delta, or since the server started)."""
    summary: Any
    """The :class:`specmodel.stats.TokenSummary` of those counters."""
    position_ci95: list[tuple[float, float] | None]
    """Wilson 95 % interval of the conditional acceptance at each position (None where
    the previous position was never accepted)."""

    @property
    def line(self) -> str:
        """One line for the terminal."""
        s = self.summary
        return (f"α2 = {s.alpha2:.3f} (i.i.d. fit, γ = {s.gamma}) from {s.accepted_tokens}/"
                f"{s.draft_tokens} draft tokens accepted in {s.drafts} drafts; by position "
                f"{[round(r, 3) for r in s.conditional_acceptance]}")


def _base_parts(base: Any) -> tuple[Any, Any]:
    """The phases of ``base`` that stay (its measured phases except the token phase, whose
    section is replaced; None when none stay) and the reference to ``base``."""
    from specmodel.formats.calibration import (
        BaseCalibrationRef,
        MeasurementSettings,
        PhaseSettings,
    )

    prov = base.provenance
    phases = None
    if isinstance(prov.settings, MeasurementSettings) and prov.settings.phases is not None:
        kept = {k: v for k, v in prov.settings.phases.finished().items() if k != "tokens"}
        phases = PhaseSettings(**kept) if kept else None
    return phases, BaseCalibrationRef(name=base.name, source=prov.source,
                                      description=prov.description)


def metrics_calibration(
    counters: SpecDecodeScrape,
    base: Any,
    *,
    server: str,
    how: str,
    c2: float | None = None,
    speculative_config: dict[str, Any] | None = None,
    name: str | None = None,
) -> MetricsProfile:
    """A copy of the calibration ``base`` whose ``token`` section is measured from
    ``counters`` (vLLM spec-decode counters of real traffic).

    ``server``: the URL or file the counters were read from (into the provenance);
    ``how``: how the window was taken (e.g. 'delta of two scrapes 30 s apart').  γ is the
    number of positions the server reports (or ``speculative_config``'s
    ``num_speculative_tokens``).  The drafter (method, n-gram lookup sizes, draft model)
    comes from ``speculative_config`` (the export the server ran) when given, else the
    base's.  c2 is ``c2`` when given, else the base's: counters hold no timings.  The step
    section, T(b) and the base's other measured phases are kept, and the provenance
    says so.  Raises a one-line ValueError when there were no drafts.
    """
    from profiler.environment import machine_description, package_versions
    from specmodel.formats.calibration import (
        MachineDetails,
        MeasurementSettings,
        TokenLevel,
    )
    from specmodel.stats import summarize_counters, wilson

    spec = dict(speculative_config or {})
    per_pos = counters.num_accepted_tokens_per_pos
    gamma = len(per_pos) or int(spec.get("num_speculative_tokens") or 0)
    if counters.num_drafts < 1 or counters.num_draft_tokens < 1:
        raise SpecmodelError(f"{counters.origin}: no drafts ({counters.num_drafts} drafts, "
                             f"{counters.num_draft_tokens} draft tokens): send requests to the "
                             "server between the scrapes (n-gram lookup drafts only when the "
                             "text repeats)")
    if gamma < 1:
        gamma = max(1, -(-counters.num_draft_tokens // counters.num_drafts))
    if c2 is not None and not c2 >= 0:
        raise ValueError(f"c2 must be >= 0, got {c2}")
    summary = summarize_counters(counters.counters(), gamma)
    cis: list[tuple[float, float] | None] = []
    prev = counters.num_drafts
    for count in summary.accepted_per_position:
        cis.append(wilson(count, prev) if prev > 0 else None)
        prev = count
    old = base.token
    method = spec.get("method", old.method)
    lookup = {k: spec.get(k, getattr(old, k) if method == old.method else None)
              for k in ("prompt_lookup_min", "prompt_lookup_max")}
    draft_model = spec.get("model", old.draft_model if method == old.method else None)
    rates = [min(max(r, 1e-6), 1 - 1e-6) for r in summary.conditional_acceptance]
    c2_value = old.c2 if c2 is None else float(c2)
    token = TokenLevel(
        alpha2=summary.alpha2, c2=c2_value, method=method,
        acceptance_by_position=rates or None,
        prompt_lookup_min=lookup["prompt_lookup_min"] if method == "ngram" else None,
        prompt_lookup_max=lookup["prompt_lookup_max"] if method == "ngram" else None,
        draft_model=draft_model if method != "ngram" else None,
        num_speculative_tokens=gamma, samples=summary.draft_tokens,
    )
    model = counters.model_name
    phases, base_ref = _base_parts(base)
    ci_text = ", ".join("-" if ci is None else f"{ci[0]:.3f}-{ci[1]:.3f}" for ci in cis)
    c2_text = (f"c2 = {c2_value:g} was given (counters hold no timings)" if c2 is not None
               else f"c2 = {c2_value:g} is the base's ({base.name}): spec-decode counters hold "
                    "no timings, so they cannot measure c2")
    kept = ["step", *(["batch_cost"] if base.batch_cost is not None else [])]
    desc = (f"token: vLLM spec-decode counters from the Prometheus metrics of {server}"
            f"{f' (model {model})' if model else ''}, {how}: {summary.accepted_tokens}/"
            f"{summary.draft_tokens} draft tokens accepted in {summary.drafts} drafts "
            f"(gamma = {gamma}, {method}); alpha2 = {summary.alpha2:.4f} (i.i.d. fit of the "
            f"mean accepted length {summary.accepted_tokens / summary.drafts:.3f}), "
            f"conditional acceptance by position "
            f"{[round(r, 3) for r in summary.conditional_acceptance]} (marginal counts "
            f"{summary.accepted_per_position}; Wilson 95% intervals {ci_text}); {c2_text}. "
            f"{' and '.join(kept)}: copied from {base.name} ({base.provenance.source}), not "
            "measured here.")
    local = is_url(server) and urllib.parse.urlsplit(metrics_url(server)).hostname in _LOOPBACK
    machine = MachineDetails.model_validate(machine_description()) if local else None
    settings = MeasurementSettings(base=base_ref, phases=phases, versions=package_versions(),
                                   machine_details=machine)
    prov = base.provenance.model_validate({
        **dict(base.provenance),
        "description": desc,
        "models": {**({k: v for k, v in base.provenance.models.items()
                       if k != "token_target"} if phases else {}),
                   **({"token_target": model} if model else {})},
        "engine": (f"vllm server at {server}" if is_url(server)
                   else f"vllm server (scrape {server})"),
        "machine": machine.line if machine else None,
        "date": datetime.now(UTC).date().isoformat(),
        "settings": settings,
    })
    label = Path(model).name if model else "vllm"
    cal = type(base).model_validate({
        **dict(base), "token": token, "provenance": prov,
        "name": name or f"measured-vllm-metrics-{label}",
    })
    return MetricsProfile(calibration=cal, counters=counters, summary=summary, position_ci95=cis)


def save_scrape(text: str, path: str | Path) -> Path:
    """Write a scrape's exposition ``text`` to ``path`` atomically (a later ``--before``)."""
    from specmodel.formats.jsonio import write_text_atomic

    return write_text_atomic(text, path)


def profile_vllm_metrics(
    source: str,
    base: Any,
    *,
    before: str | Path | None = None,
    interval: float | None = None,
    c2: float | None = None,
    export: str | Path | None = None,
    model_name: str | None = None,
    timeout: float = 10.0,
    save: str | Path | None = None,
    note: Callable[[str], None] | None = None,
) -> MetricsProfile:
    """Read ``source`` (a server URL or a saved scrape) and profile its spec-decode counters
    into a copy of ``base`` (:func:`metrics_calibration`).

    ``before``: a scrape saved before the traffic (the counters' growth since it is used);
    ``interval``: scrape the URL ``source`` twice, that many seconds apart (send traffic
    meanwhile); neither: the counters since the server started.  ``export``: the export
    file the server runs (its drafter settings go into the token section).  ``save``: write
    the (last) scrape's text there.  ``note(message)`` hears what is being done.
    """
    import time

    say = note or (lambda _m: None)
    if before is not None and interval is not None:
        raise ValueError("before and interval are exclusive: give one")
    if interval is not None:
        if not is_url(source):
            raise ValueError(f"interval needs a server URL to scrape twice, got the file "
                             f"{source}; give --before for saved scrapes")
        if not 0 < interval <= 86400:
            raise ValueError(f"interval must lie in (0, 86400] seconds, got {interval}")
    spec = None
    if export is not None:
        from profiler.vllm_server import speculative_config_from_export

        spec = speculative_config_from_export(export)
    first = None
    if interval is not None:
        first = parse_scrape(read_scrape(source, timeout=timeout), source,
                             model_name=model_name)
        say(f"scraped {metrics_url(source)}; scraping again in {interval:g} s")
        time.sleep(interval)
    elif before is not None:
        first = parse_scrape(read_scrape(before), str(before), model_name=model_name)
    text = read_scrape(source, timeout=timeout)
    last = parse_scrape(text, source, model_name=model_name)
    if save is not None:
        save_scrape(text, save)
    if first is None:
        counters, how = last, "counters since the server started (one scrape)"
    elif interval is not None:
        counters = counter_delta(last, first)
        how = f"delta of two scrapes {interval:g} s apart"
    else:
        counters = counter_delta(last, first)
        how = f"delta of two scrapes (before: {before})"
    return metrics_calibration(counters, base, server=source, how=how, c2=c2,
                               speculative_config=spec)
