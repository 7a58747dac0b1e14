"""DecoderConfig: validation, labels, and reading the file `specmodel export` writes."""

from __future__ import annotations

import json

import pytest

from profiler.decoder import DecoderConfig
from profiler.engines import TokenSpeculation


def test_export_file_drives_the_decoder(tmp_path) -> None:
    from cli.main import main

    out = tmp_path / "export.json"
    assert main(["export", "--budget", "16", "-o", str(out)]) == 0
    data = json.loads(out.read_text())
    cfg = DecoderConfig.from_export(data)
    lr = data["lookahead_reasoning"]
    assert (cfg.mode, cfg.k1, cfg.k2) == (lr["mode"], lr["k1"], lr["k2"])
    assert cfg.delimiter == lr["step_delimiter"]
    spec = cfg.token_speculation()
    assert spec == TokenSpeculation(
        "ngram", lr["k2"] - 1, prompt_lookup_max=data["speculative_config"]["prompt_lookup_max"]
    )
    assert DecoderConfig.from_export(data, k2=1).token_speculation() is None
    assert DecoderConfig.from_export(data, mode="sync").mode == "sync"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"mode": "batch"}, "mode"),
        ({"k1": 0}, "k1"),
        ({"k2": 1.5}, "k2"),
        ({"max_steps": 0}, "max_steps"),
        ({"max_step_tokens": True}, "max_step_tokens"),
        ({"delimiter": ""}, "delimiter"),
        ({"token_method": "eagle"}, "token_method"),
        ({"token_method": "draft_model", "k2": 3}, "token_draft_model"),
        ({"width": 0}, "width"),
        ({"mode": "async", "k1": 3, "width": 2}, "width"),
        ({"width": 2, "branch_temperature": 0.0}, "branch_temperature"),
    ],
)
def test_bad_settings_name_the_parameter(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        DecoderConfig(**kwargs)


def test_export_files_the_decoder_cannot_run_are_rejected() -> None:
    base = {"lookahead_reasoning": {"mode": "sync", "k1": 2, "k2": 3, "width": 1},
            "speculative_config": {"method": "ngram", "num_speculative_tokens": 2}}
    assert DecoderConfig.from_export(base).k2 == 3
    wide = {**base, "lookahead_reasoning": {**base["lookahead_reasoning"], "width": 2}}
    assert DecoderConfig.from_export(wide).width == 2
    with pytest.raises(ValueError, match="width"):  # multi-branch is sync only
        DecoderConfig.from_export(wide, mode="async")
    with pytest.raises(ValueError, match="method"):
        DecoderConfig.from_export({**base, "speculative_config": {"method": "eagle"}})
    with pytest.raises(ValueError, match="export"):
        DecoderConfig.from_export({"speculative_config": {}})


def test_labels_name_the_regime() -> None:
    assert DecoderConfig().label == "target"
    assert DecoderConfig(k2=4).label == "token k2=4"
    assert DecoderConfig("async", k1=3, k2=2).label == "async k1=3 k2=2"
    assert DecoderConfig("sync", k1=3, width=2).label == "sync k1=3 k2=1 W=2"
