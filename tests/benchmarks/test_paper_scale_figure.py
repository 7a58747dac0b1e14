"""``bench_paper_scale --figure``: the committed paper-scale results drawn, nothing
recomputed."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.bench_paper_scale import FIXED, REPORTED, figure
from benchmarks.harness import RESULTS


def test_the_figure_draws_every_decoder_row_beside_the_reported(tmp_path: Path,
                                                                monkeypatch) -> None:
    from specmodel import figures

    monkeypatch.setattr(figures, "png_unavailable", lambda: "not in this test")
    results = json.loads((RESULTS / "paper_scale.json").read_text(encoding="utf-8"))
    assert {"LR cont.", "LR+SD cont."} <= set(FIXED) <= set(results["decoder_model"][0])
    written = figure(results, str(tmp_path / "paper"))
    assert [p.name for p in written] == ["paper.html"]
    html = written[0].read_text(encoding="utf-8")
    assert "continuous batching, constant steps" in html and "one call at a time" in html
    assert all(f"reported LR {r['LR']}" in html for r in REPORTED.values())
    # each (task, device) panel draws its three contexts for every line
    lr = next(r for r in results["decoder_model"] if r["task"] == "gsm8k"
              and r["context"] == 1024 and r["step_lengths"] == "constant")
    assert f"{lr['LR cont.']['speedup']}" in html
